"""Amounts: the numbers a statement states beside a topic, and in which unit.

A question that asks for an amount (`questions.asks_amount`: "how many plants", 养了几盆花) is
answered by a sentence that states a number beside the topic ("I have 5 plants", "养了三盆花",
"for about 6 months"): `states_amount` tells whether a record holds one (its relevance gains
`ranking.amount_share`), `stated_amounts` reads which unit each is in (an earlier statement of the
same amount stays in the top: `ranking.earlier_heads`).
"""

import re
from collections.abc import Iterator

from optmem.dates import MONTHS
from optmem.reading.lexicon import CJK_NUMERALS, CJK_UNITS, CURRENCY, MEASURES, STOPWORDS, YEAR
from optmem.text import cjk_compiled, compiled, has_cjk, plain_words, stem_words, word_matches

__all__ = ["stated_amounts", "states_amount", "term_places", "time_span_terms"]

# A number: digits not inside a word or a version (GT350R, python3.11), nor in a date or a time of
# day (2024-03-01, 6/10, 5:30, 5pm, 5月6日) — a year alone counts ("since 2019" answers "how
# long"); a number word ("one" is none: "one of them", as "a" is none); in Chinese text a
# numeral before a measure word or a unit, 多, 来 or 余 between them (五盆, 两年, 三小时, 三十多天 —
# not the 一 of 一起, nor a lone 一 before one: 一条帖子 is "a post", as 一个 says "a").
_DIGITS = r"(?<![a-z0-9.:/])(?<!\d-)\d+(?:[.,]\d+)*(?!\d|[:/-]\d|\s?[ap]m\b|[月日号號])"
_NUMBER_WORDS = frozenset("""two three four five six seven eight nine ten eleven twelve thirteen fourteen
fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred
hundreds thousand thousands million millions billion dozen dozens half couple few several once twice
thrice double doubled triple tripled quadruple quadrupled
""".split())
_NUMERALS = "0-9" + CJK_NUMERALS
_CJK_NUMBER = rf"(?<![{_NUMERALS}])(?!一[{MEASURES}])[{_NUMERALS}]+[多来來余餘]?(?={CJK_UNITS})"
# Sentences end at . ! ? ; (not the point of 1.5, nor the dots of a common abbreviation: "e.g. 5
# of them", "approx. 3 kg"), their CJK forms, and a blank line (a single line break goes on: a
# list under its heading, a hard-wrapped line).
_STATEMENT_ENDS = "!?;。！？；"
_ABBREVIATIONS = ("e.g", "i.e", "vs", "mr", "mrs", "ms", "dr", "approx", "cf")
# (the dot first, then the lookbehinds: tried at every position, they made the pattern 4x slower)
_SENTENCE_END = ("[" + _STATEMENT_ENDS + "]|" + r"\." + "".join(rf"(?<!\b{re.escape(a)}\.)" for a in _ABBREVIATIONS)
                 + r"(?!\d|[a-z]\.)|\n\s*\n")
_REACH = 300  # characters read either side of a word for its sentence

# Words that say how long or how long ago, not what: two amounts in weeks about "the past few
# weeks" are no statements of one thing (`time_span_terms`)
_TIME_SPAN_WORDS = """second seconds minute minutes hour hours day days week weeks weekend month months year years
decade decades ago past last few recent recently earlier later since before after until previous
previously 天 周 週 月 年 小时 小時 分钟 分鐘 星期 礼拜 禮拜 个月 個月 年前 天前 以前""".split()
_TIME_SPAN_TERMS: frozenset[str] | None = None

# (sources: compiled on first use, by `text.compiled`)
_ORDINAL = r"(?:st|nd|rd|th|s)\b"
_NEXT_WORDS = r"[\s-]*([a-z]+)(?:\s+([a-z]+))?"
# the words that place a year in time ("since 2019", "in 2020"): the number is no count of a unit
_BEFORE_YEAR = frozenset("since in from by of until till before after during around circa year".split())
_NUMBER_WORDS_AFTER = r"\b(" + "|".join(sorted(_NUMBER_WORDS)) + r")\b\W+([^\W_]+)(?:\s+([^\W_]+))?"


def states_amount(folded: str, said: frozenset[str], named: frozenset[str] = frozenset()) -> bool:
    """Whether a folded text states a number in a sentence that holds one of these words (as
    `text.words` gives them) or Chinese terms (bigrams and characters: pieces of its text) — not
    one of the `named` words, numbers the query itself holds ("how many 5K runs": 5k). The
    sentence around each of them is found from its place, up to 300 characters either side (a
    long text is neither split into words again nor into all its sentences, and a text without
    stops is no single sentence: it is read in stretches); each sentence is read once."""
    return any(_has_number(sentence) for sentence in _sentences_around(folded, said, named))


def stated_amounts(folded: str, said: frozenset[str], named: frozenset[str] = frozenset(),
                   prefer: frozenset[str] = frozenset(), most: int = 64) -> list[tuple[str, str, int]]:
    """The amounts a folded text states where `states_amount` looks for one: (the unit, the
    sentence that states it, where the number is in it). The unit is the stemmed word after the
    number ("6 months" → month, "500 followers" → follow, "3-year" → year, "10km" → km) — or the
    one after that when it is one of the `prefer` terms ("3 new plants", "5 balcony plants" →
    plant when the query asks about plants) —, a currency sign before it ("$300" → $), or the
    Chinese measure word or unit (五盆花, 3 盆花 → 盆; 八十公斤 → 公斤). A number followed by a
    function word or by nothing says no unit ("5 of them", "I have 5"), nor do a year after a
    word that places it ("since 2019 …", "in 2020 …") and a day of a month ("March 3 …"): none is
    given for them ("2000 followers" is a count). A number word after the number is part of it
    ("twenty-five plants", "5 thousand dollars": the unit is the word after it). The first `most`
    of them, about: a text that states thousands is read no further (a sentence is read whole)."""
    out: list[tuple[str, str, int]] = []
    for sentence in _sentences_around(folded, said, named):
        if len(out) >= most:
            break
        out += _amounts_in(sentence, prefer)
    return list(dict.fromkeys(out))  # (3盆 is read as digits and as a Chinese numeral)


def _amounts_in(sentence: str, prefer: frozenset[str]) -> list[tuple[str, str, int]]:
    """The amounts one folded sentence states (`stated_amounts`)."""
    out: list[tuple[str, str, int]] = []
    after: list[tuple[list[str], int]] = []  # (the words after a number, where the number is)
    for m in compiled(_DIGITS).finditer(sentence):
        if m.start() and sentence[m.start() - 1] in CURRENCY:
            out.append((sentence[m.start() - 1], sentence, m.start()))
            continue
        before = sentence[max(0, m.start() - 12) : m.start()].split()
        last = before[-1] if before else ""
        if last in MONTHS or (last in _BEFORE_YEAR and compiled(YEAR).fullmatch(m.group())):
            continue
        # the unit of "10km" is km; "5th" and "1920s" have none of their own: the words after them
        suffix = compiled(_ORDINAL).match(sentence, m.end())
        at = suffix.end() if suffix else m.end()
        if following := compiled(_NEXT_WORDS).match(sentence, at):
            after.append(([w for w in following.groups() if w], m.start()))
        elif has_cjk(sentence) and (unit := cjk_compiled(r"\s*" + CJK_UNITS).match(sentence, at)):
            out.append((unit.group().strip(), sentence, m.start()))
    # a number word and the one or two words after it ("three new plants")
    after += [([w for w in m.groups()[1:] if w], m.start())
              for m in compiled(_NUMBER_WORDS_AFTER).finditer(sentence)]
    after = [(words[1:] if words[0] in _NUMBER_WORDS else words, at) for words, at in after]
    after = [(words, at) for words, at in after
             if words and words[0] not in STOPWORDS and not words[0].isdigit() and words[0] not in _NUMBER_WORDS]
    stems = iter(stem_words([w for words, _ in after for w in words]) if after else [])
    for words, at in after:
        first, second = next(stems), next(stems) if len(words) > 1 else None
        # "5 balcony plants", "600 Instagram followers": the second word counts, if the query's
        out.append((second if second in prefer else first, sentence, at))
    if has_cjk(sentence):
        unit_re = cjk_compiled(CJK_UNITS)
        out += [(u.group(), sentence, m.start()) for m in cjk_compiled(_CJK_NUMBER).finditer(sentence)
                if (u := unit_re.match(sentence, m.end()))]
    return out


def term_places(folded: str, terms: frozenset[str]) -> list[tuple[int, str]]:
    """Where a folded text holds these search terms: (position, term), in text order — its
    words stemmed, Chinese terms found as written."""
    places: list[tuple[int, str]] = []
    # the index's words: a CJK run is no part of one ("我的iphone手机": iphone)
    words = [m for m in word_matches(folded) if m.group().isascii()]
    if words:
        places += [(m.start(), stem) for m, stem in zip(words, stem_words([m.group() for m in words]))
                   if stem in terms]
    for term in terms:
        if not term.isascii():
            i = folded.find(term)
            while i >= 0:
                places.append((i, term))
                i = folded.find(term, i + 1)
    return sorted(places)


def time_span_terms() -> frozenset[str]:
    """The search terms of words that measure or place a span of time ("months", "ago", 个月)."""
    global _TIME_SPAN_TERMS
    if _TIME_SPAN_TERMS is None:
        _TIME_SPAN_TERMS = frozenset(stem_words(_TIME_SPAN_WORDS))
    return _TIME_SPAN_TERMS


def _sentences_around(folded: str, said: frozenset[str], named: frozenset[str]) -> Iterator[str]:
    """The sentences of a folded text that hold one of the `said` words (`states_amount`), the
    `named` numbers taken out of them, each once."""
    end = compiled(_SENTENCE_END)
    read: set[int] = set()  # where the sentences read end
    for word in sorted(said):  # (in one order, whatever the process's hash seed: `stated_amounts` stops early)
        whole = word.isascii()  # a word must stand alone ("cat" in "category" is none); a CJK term need not
        at = folded.find(word)
        while at >= 0:
            past = at + len(word)
            if not whole or (_apart(folded, at - 1) and _apart(folded, past)):
                stop = end.search(folded, past, past + _REACH)
                until = stop.start() if stop else min(len(folded), past + _REACH)
                if until not in read:
                    read.add(until)
                    sentence = folded[_sentence_start(folded, at) : until]
                    for number in named:
                        sentence = re.sub(rf"(?<![a-z0-9]){re.escape(number)}(?![a-z0-9])", " ", sentence)
                    yield sentence
                past = max(past, until)  # the rest of this sentence (or stretch) is read: on from its end
            at = folded.find(word, past)


def _sentence_start(folded: str, at: int) -> int:
    """Where the sentence holding position `at` starts (looking back `_REACH` characters at most)."""
    start = max(0, at - _REACH)
    for m in compiled(_SENTENCE_END).finditer(folded, start, at):
        start = m.end()
    return start


def _apart(folded: str, i: int) -> bool:
    """Whether position i is outside the text or holds no ASCII letter or digit: a word's edge."""
    return not (0 <= i < len(folded) and folded[i].isascii() and folded[i].isalnum())


def _has_number(sentence: str) -> bool:
    """Whether a folded sentence states a number (see `_DIGITS`, `_NUMBER_WORDS`, `_CJK_NUMBER`)."""
    if compiled(_DIGITS).search(sentence) or not _NUMBER_WORDS.isdisjoint(plain_words(sentence)):
        return True
    return has_cjk(sentence) and bool(cjk_compiled(_CJK_NUMBER).search(sentence))
