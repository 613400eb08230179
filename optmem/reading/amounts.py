"""Amounts: the numbers a statement states beside a topic, and in which unit.

A question that asks for an amount (`questions.asks_amount`: "how many plants", 养了几盆花) is
answered by a sentence that states a number beside the topic ("I have 5 plants", "养了三盆花",
"for about 6 months"): `states_amount` tells whether a record holds one (its relevance gains
`ranking.amount_share`).
"""

import re
from collections.abc import Iterator

from optmem.reading.lexicon import CJK_NUMERALS, CJK_UNITS, MEASURES
from optmem.text import cjk_compiled, compiled, has_cjk, plain_words

__all__ = ["states_amount"]

# A number: digits not inside a word or a version (GT350R, python3.11), nor in a date or a time of
# day (2024-03-01, 6/10, 5:30, 5pm, 5月6日) — a year alone counts ("since 2019" answers "how
# long"); a number word ("one" is none: "one of them", as "a" is none); in Chinese text a
# numeral before a measure word or a unit, 多, 来 or 余 between them (五盆, 两年, 三小时, 三十多天 —
# not the 一 of 一起, nor a lone 一 before one: 一条帖子 is "a post", as 一个 says "a").
_DIGITS = r"(?<![a-z0-9.:/])(?<!\d-)\d+(?:[.,]\d+)*(?!\d|[:/-]\d|\s?[ap]m\b|[月日号號])"
_NUMBER_WORDS = frozenset(
    """two three four five six seven eight nine ten eleven twelve thirteen fourteen
fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred
hundreds thousand thousands million millions billion dozen dozens half couple few several once twice
thrice double doubled triple tripled quadruple quadrupled
""".split()
)
_NUMERALS = "0-9" + CJK_NUMERALS
_CJK_NUMBER = rf"(?<![{_NUMERALS}])(?!一[{MEASURES}])[{_NUMERALS}]+[多来來余餘]?(?={CJK_UNITS})"
# Sentences end at . ! ? ; (not the point of 1.5, nor the dots of a common abbreviation: "e.g. 5
# of them", "approx. 3 kg"), their CJK forms, and a blank line (a single line break goes on: a
# list under its heading, a hard-wrapped line).
_STATEMENT_ENDS = "!?;。！？；"
_ABBREVIATIONS = ("e.g", "i.e", "vs", "mr", "mrs", "ms", "dr", "approx", "cf")
# (the dot first, then the lookbehinds: tried at every position, they made the pattern 4x slower)
_SENTENCE_END = (
    "["
    + _STATEMENT_ENDS
    + "]|"
    + r"\."
    + "".join(rf"(?<!\b{re.escape(a)}\.)" for a in _ABBREVIATIONS)
    + r"(?!\d|[a-z]\.)|\n\s*\n"
)
_REACH = 300  # characters read either side of a word for its sentence


def states_amount(folded: str, said: frozenset[str], named: frozenset[str] = frozenset()) -> bool:
    """Whether a folded text states a number in a sentence that holds one of these words (as
    `text.words` gives them) or Chinese terms (bigrams and characters: pieces of its text) — not
    one of the `named` words, numbers the query itself holds ("how many 5K runs": 5k). The
    sentence around each of them is found from its place, up to 300 characters either side (a
    long text is neither split into words again nor into all its sentences, and a text without
    stops is no single sentence: it is read in stretches); each sentence is read once."""
    return any(_has_number(sentence) for sentence in _sentences_around(folded, said, named))


def _sentences_around(folded: str, said: frozenset[str], named: frozenset[str]) -> Iterator[str]:
    """The sentences of a folded text that hold one of the `said` words (`states_amount`), the
    `named` numbers taken out of them, each once."""
    end = compiled(_SENTENCE_END)
    read: set[int] = set()  # where the sentences read end
    for word in sorted(said):  # (in one order, whatever the process's hash seed)
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
