"""Text: normalising, fingerprints, near-duplicate similarity and tokenising (Chinese + English).

One tokeniser serves the index, the query and the write gate, so they always agree:
* NFKC, then case folding;
* CJK runs (Han, kana, hangul) become overlapping bigrams plus single characters, so a query of
  one character still matches while longer queries match by bigram;
* other letters and digits form words, reduced to their English Snowball stem ("deployments"
  and "deploying" → "deploy"), in the index, the query and the fingerprint alike.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Any

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff"
# Runs of letters and digits; inside a run that is not ASCII, CJK runs and the rest are told
# apart (a negated class: no look-ahead per character, which made this the costliest step of
# indexing). That second pattern takes ~4 ms to compile, so it is compiled only when a text that
# may hold CJK turns up (`has_cjk`) — an English-only command never pays for it.
_WORD_RE = re.compile(r"[^\W_]+")
_FOLDED_ASCII_WORD_RE = re.compile(r"[a-z0-9]+")  # what _WORD_RE finds in a folded ASCII text, faster
_SPLIT_RE: re.Pattern[str] | None = None


_CJK_PATTERNS: dict[str, re.Pattern[str]] = {}


def _cjk_pattern(source: str) -> re.Pattern[str]:
    """A pattern only Chinese text needs, compiled the first time some turns up (an English-only
    command never pays for it; kept apart, so a test can tell it was not compiled)."""
    return _pattern(source, _CJK_PATTERNS)


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(source: str, kept: dict[str, re.Pattern[str]] = _PATTERNS) -> re.Pattern[str]:
    """A pattern compiled the first time it is needed (not at import: most commands never need
    it), and kept."""
    pattern = kept.get(source)
    if pattern is None:
        pattern = kept[source] = re.compile(source)
    return pattern


def _split_cjk() -> re.Pattern[str]:
    global _SPLIT_RE
    if _SPLIT_RE is None:
        _SPLIT_RE = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+)")
    return _SPLIT_RE


_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")
# Dropped by `normalize`: spacing and punctuation, and words that intensify without changing
# the fact ("很喜欢" and "非常喜欢", "really like" and "like" say the same thing).
_EN_INTENSIFIERS = frozenset("very really extremely quite truly super so totally".split())
_CJK_INTENSIFIERS = "非常|特别|十分|极其|超级|相当|真的|很"


_blake2b: Any = None


def digest(data: bytes, size: int = 10) -> str:
    """A short stable hex digest (BLAKE2b; its C module loads faster than all of hashlib)."""
    global _blake2b
    if _blake2b is None:
        try:
            from _blake2 import blake2b
        except ImportError:  # pragma: no cover - CPython always has it
            from hashlib import blake2b
        _blake2b = blake2b
    return _blake2b(data, digest_size=size).hexdigest()


# Full-width punctuation Chinese text is written with: NFKC maps each to its ASCII form (and no
# ASCII punctuation composes with a neighbour), so replacing them first changes nothing but the
# cost — a text NFKC leaves unchanged passes its quick check, where one "，" made it normalise the
# whole text (a tenth of indexing a Chinese record)
_WIDE_PUNCTUATION = tuple((chr(0xFEE0 + ord(c)), c) for c in ",.:;!?()")


# Latin letters with a diacritic (the Latin-1 supplement, Latin Extended-A/B and Additional): "café"
# and "cafe", "José" and "Jose", "naïve" and "naive" are one word to search for, as a search
# engine's ASCII folding makes them. Only Latin: kana's voicing marks (が) and hangul are letters of
# their own, not accents to drop. A mark no letter composes with goes too (é + ́ stays two
# characters after NFKC), so folding twice changes nothing.
_ACCENTED_RE = re.compile("[\u00c0-\u024f\u1e00-\u1eff][\u0300-\u036f]*|(?<=[a-z])[\u0300-\u036f]+")
_MAY_BE_ACCENTED_RE = re.compile("[\u00c0-\u024f\u1e00-\u1eff\u0300-\u036f]")  # one class: a fast first look
_UNACCENTED: dict[str, str] = {}


def _unaccent(match: re.Match[str]) -> str:
    letter = match.group()  # a letter and the marks after it, or marks after an ASCII letter
    plain = _UNACCENTED.get(letter)
    if plain is None:
        # the base letter(s) without the combining marks; a letter of its own (æ, ø, ł, đ) stays
        plain = "".join(c for c in unicodedata.normalize("NFD", letter) if not unicodedata.combining(c))
        if len(letter) == 1:  # kept: at most the ~1,000 letters of the ranges
            _UNACCENTED[letter] = plain
    return plain


def fold(text: str) -> str:
    """NFKC + case folding + Latin diacritics dropped: the common first step of every comparison."""
    if text.isascii():
        return text.casefold()
    folded = fold_case(text)
    return _ACCENTED_RE.sub(_unaccent, folded) if _MAY_BE_ACCENTED_RE.search(folded) else folded


def fold_case(text: str) -> str:
    """NFKC + case folding, the letters as written ("José" is not "Jose"): `fold` for a
    comparison where an accent is a change."""
    if text.isascii():
        return text.casefold()
    for wide, narrow in _WIDE_PUNCTUATION:
        if wide in text:
            text = text.replace(wide, narrow)
    return unicodedata.normalize("NFKC", text).casefold()


_stem_word: Any = None
# word → stem: a dict look-up is a fifth of a call into Snowball, and a log's words repeat (an
# index build stems millions of them); emptied when full, and only words of up to 32 characters
# (a hash-like token never repeats), so its memory stays bounded: ~25 MB at most
_STEMS: dict[str, str] = {}
_STEMS_MAX = 100_000
_STEMMED_LEN = 32


def stem_words(words: list[str]) -> list[str]:
    """English Snowball stems (PyStemmer, loaded on first use); digits and other scripts pass."""
    global _stem_word
    if not words:
        return words
    if _stem_word is None:
        import Stemmer

        _stem_word = Stemmer.Stemmer("english").stemWord
    stems = _STEMS
    out: list[Any] = list(map(stems.get, words))  # in C: most words were stemmed before
    if None in out:
        for i, stem in enumerate(out):
            if stem is None:
                word = words[i]
                if word.isdigit():  # a number: no stemming rule applies, and caching each one
                    out[i] = word   # would push the words out
                    continue
                out[i] = stem = _stem_word(word)
                if len(word) <= _STEMMED_LEN:
                    if len(stems) >= _STEMS_MAX:
                        stems.clear()
                    stems[word] = stem
    return out


_FIRST_CJK = "\u3040"  # below every range of _CJK


def has_cjk(folded: str) -> bool:
    """Whether a folded text may hold CJK: most texts that are not ASCII hold none (a dash, a
    curly quote, an accent) and need no CJK pattern — which takes ~4 ms to compile."""
    return not folded.isascii() and max(folded) >= _FIRST_CJK


def _runs(folded: str) -> list[tuple[str, str]]:
    """(CJK run, other word) pairs of a folded text, in order — the base of tokens and fingerprints."""
    if not has_cjk(folded):
        return [("", word) for word in _WORD_RE.findall(folded)]
    return _split_cjk().findall(folded)


Runs = list[tuple[str, str]] | None  # a text's (CJK run, other word) pairs; None: no CJK, words only


def _split(folded: str) -> tuple[Runs, list[str]]:
    """(runs, words) of a folded text: a text without CJK is its words alone — no pairs to build,
    which were a third of tokenising an English record."""
    if folded.isascii():
        return None, _FOLDED_ASCII_WORD_RE.findall(folded)
    if max(folded) < _FIRST_CJK:
        return None, _WORD_RE.findall(folded)
    runs = _split_cjk().findall(folded)
    return runs, [w for c, w in runs if w]


def _normal(runs: Runs, stems: list[str], words: list[str]) -> str:
    """The fingerprinted form: CJK runs and word stems, intensifiers dropped, joined."""
    if runs is None:
        if _EN_INTENSIFIERS.isdisjoint(words):
            return "".join(stems)
        return "".join(p for p, w in zip(stems, words) if w not in _EN_INTENSIFIERS)
    it = iter(stems)
    pieces = [c or next(it) for c, _ in runs]  # each run's piece: CJK as is, a word's stem
    if not _EN_INTENSIFIERS.isdisjoint(words):
        pieces = [p for p, (c, w) in zip(pieces, runs) if c or w not in _EN_INTENSIFIERS]
    joined = "".join(pieces)
    return joined if joined.isascii() else _cjk_pattern(_CJK_INTENSIFIERS).sub("", joined)


# A word of letters and digits ("python3", "iphone15", "win10") is found by its parts too
# ("python", "iphone 15", "windows 10"), as a search engine's word-delimiter filter keeps the whole
# word and adds its parts — not a part of one character (the 3 of python3 would match every "3",
# the k of 5k every "k"), nor the parts of a hash or an id (more than three runs: 3f9a0c…).
_RUN_RE = re.compile(r"[^\W\d_]+|\d+")


def _parts(words: list[str], stem: bool = True) -> list[str]:
    """The parts of the words that mix letters and digits (stemmed, unless `stem` is False)."""
    # (a word neither all letters nor all digits is rare: two C calls a word find them, ten times
    # faster than a pattern over the text)
    mixed = [w for w in words if not w.isalpha() and not w.isdigit()]
    if not mixed:
        return mixed
    parts = []
    for word in mixed:
        runs = _RUN_RE.findall(word)
        if 1 < len(runs) <= 3:
            parts += [run for run in runs if len(run) > 1]
    return stem_words(parts) if stem and parts else parts


def _tokens(runs: Runs, shown: list[str], words: list[str], stem: bool = True) -> list[str]:
    """Index tokens: the words as given (`shown`: stemmed, or as written when `stem` is False),
    then each CJK run's characters and bigrams, then the parts of `words` mixing letters and
    digits."""
    out = list(shown)
    for cjk, _ in runs or ():
        if cjk:
            out += cjk
            out += [cjk[i : i + 2] for i in range(len(cjk) - 1)]  # (a generator costs more)
    return out + _parts(words, stem)


def normalize(text: str, *, folded: bool = False, stem: bool = True) -> str:
    """Fold case, width, spacing, punctuation and intensifiers: what a fingerprint compares
    (`stem=False`: words as written, so "wants" and "wanted" stay apart)."""
    runs, words = _split(text if folded else fold(text))
    return _normal(runs, stem_words(words) if stem else words, words)


def fingerprint(text: str, *, folded: bool = False) -> str | None:
    """A short stable hash of `normalize(text)`; equal fingerprints mean the same statement.

    None for a text with no letters or digits: "！！！" and "???" are not the same fact.
    """
    normal = normalize(text, folded=folded)
    return digest(normal.encode("utf-8")) if normal else None


def numbers(text: str) -> list[str]:
    """The numbers in a text, in order ("端口是8080" → ["8080"]). In Chinese text the numerals
    written as words count too, by their value: after 第, before a measure word or a unit, or two
    and more of them (第二季度 → "2", 三号 → "3", 二十三 → "23", 十万 → "100000"), and a numeral
    after digits is their magnitude (10万 → "100000") — not a lone 一 before a measure word, which
    says "a" (一个, 一条; but 一号 and 一月 name number one), nor one inside a word (一起, 统一, 三亚)
    or the 十分 that says "very"."""
    s = unicodedata.normalize("NFKC", text)
    if not has_cjk(s):
        return _NUMBER_RE.findall(s)
    return [value for value, _ in _numbers_in(s)]


def _numbers_in(s: str) -> Iterator[tuple[str, tuple[int, int]]]:
    """Each number of an NFKC text with CJK in it (`numbers`): its value, and where the Chinese
    numerals that write it are (those of 10万: 万; nothing for digits alone)."""
    after = _cjk_pattern(_AFTER_CJK_NUMERAL)
    for m in _cjk_pattern(_CJK_NUMBER_OR_DIGITS).finditer(s):
        digits, magnitude, run = m.groups()
        if digits:
            yield (_times(digits, magnitude), m.span(2)) if magnitude else (digits, (m.end(), m.end()))
            continue
        start, end = m.span()
        ordinal = start > 0 and s[start - 1] == "第"
        unit = after.match(s, end)
        if len(run) == 1 and not ordinal:
            if not unit or (run == "一" and unit.group() not in "号號月日"):
                continue  # 一起, 三亚; 一个, 一条 say "a"
            if run == "十" and s[end] == "分" and s[end + 1 : end + 2] not in ("钟", "鐘"):
                continue  # 十分 says "very" (十分钟 are ten minutes)
        yield _cjk_value(run), (start, end)


_CJK_DIGIT_VALUES = {c: i for i, cs in enumerate(("〇零", "一", "二两兩", "三", "四", "五", "六", "七", "八", "九"))
                     for c in cs}
_CJK_TENS = {"十": 10, "百": 100, "千": 1000}
_CJK_MYRIADS = {"万": 10**4, "萬": 10**4, "亿": 10**8, "億": 10**8}


def _cjk_value(run: str) -> str:
    """The value of a run of Chinese numerals as digits ("二十三" → "23", "二〇二四" → "2024",
    "半" → "0.5"); the run as written when it is none (一半)."""
    if run == "半":
        return "0.5"
    if all(c in _CJK_DIGIT_VALUES for c in run):  # digit by digit: 二〇二四
        return str(int("".join(str(_CJK_DIGIT_VALUES[c]) for c in run)))
    total = section = digit = 0
    for c in run:
        if c in _CJK_DIGIT_VALUES:
            digit = _CJK_DIGIT_VALUES[c]
        elif c in _CJK_TENS:
            section, digit = section + (digit or 1) * _CJK_TENS[c], 0
        elif c in _CJK_MYRIADS:  # 亿 multiplies all before it, 万 the group since the last 亿
            if _CJK_MYRIADS[c] > 10**4:
                total = (total + section + digit or 1) * _CJK_MYRIADS[c]
            else:
                total += (section + digit or 1) * _CJK_MYRIADS[c]
            section = digit = 0
        else:
            return run
    return str(total + section + digit)


def _times(digits: str, magnitude: str) -> str:
    """Digits with the Chinese magnitude after them, as one value ("10", "万" → "100000";
    "1.5", "亿" → "150000000")."""
    from decimal import Decimal

    return format((Decimal(digits) * int(_cjk_value(magnitude))).normalize(), "f")


def similarity(a: str, b: str, *, least: float = 0.0) -> float:
    """Normalised similarity in [0, 1]. Texts whose numbers differ (`numbers`, as an ordered
    sequence) are never similar (0.0), nor texts where what changed holds a label
    (`identifiers.labels_differ`: server A / server B, 服务器甲 / 服务器乙, api.example.com /
    cdn.example.com): each names another thing. `least`: the caller's threshold — a value below
    it is returned without the label check (which reads both texts word by word, ten times the
    cost of the rest, and can only make a value 0.0)."""
    if numbers(a) != numbers(b):
        return 0.0
    na, nb = normalize(a), normalize(b)
    if not na or not nb:
        return 0.0  # nothing but punctuation or symbols: nothing to compare
    if na == nb:
        return 1.0
    ratio = _ratio(na, nb)
    if ratio >= least:
        from optmem.identifiers import labels_differ

        if labels_differ(a, b):
            return 0.0
    return ratio


def _ratio(a: str, b: str) -> float:
    """The edit-distance ratio of two texts in [0, 1] (rapidfuzz: heavy-ish, loaded by the
    commands that compare texts)."""
    from rapidfuzz import fuzz

    return fuzz.ratio(a, b) / 100.0


_RESEMBLANCE_READS = 2000  # characters of each text `resemblance` compares


def resemblance(a: str, b: str) -> float:
    """How alike two texts are in [0, 1], numbers and all: the edit-distance ratio of their
    normalised openings (`similarity` without its rule that texts with other numbers are unlike;
    the first 2,000 characters of each: the ratio's cost grows with the product of the lengths,
    and a long text's opening says what it is about)."""
    return _ratio(normalize(a[:_RESEMBLANCE_READS]), normalize(b[:_RESEMBLANCE_READS]))


# A particle that ends a Chinese sentence (现在有五盆花了, 好啦, 是吧): how it is said, not what
_FINAL_PARTICLE = rf"(?<=[{_CJK}])[了啦呢吧啊呀嘛哦](?=\s*(?:[,.!?;:。！？；：]|$))"


def _units(text: str, ignore: frozenset[str]) -> list[str]:
    """A text as a sequence of comparable units: (stemmed) words and single CJK characters, in
    order, numbers in digits, the `ignore` words/phrases and the particles ending a Chinese
    sentence left out. A number in Chinese numerals (as `numbers` reads them) is one unit of its
    value ("#2": 两只猫 → "#2", 只, 猫; 十万 and 10万 → "#100000"), so 十万 → 二十万 is one change."""
    folded = fold(text)
    for phrase in ignore:
        if not phrase.isascii():
            folded = folded.replace(phrase, " ")
    pieces: list[tuple[str, str | None]] = [(folded, None)]  # (text, the number written after it)
    if has_cjk(folded):
        folded = _cjk_pattern(_FINAL_PARTICLE).sub("", folded)
        pieces, last = [], 0
        for value, (start, end) in _numbers_in(folded):
            if start < end:
                pieces.append((folded[last:start], value))
                last = end
        pieces.append((folded[last:], None))
    units: list[tuple[str, bool]] = []  # (unit, a word to stem)
    for piece, number in pieces:
        for cjk, word in _runs(piece):
            if cjk:
                units += [(c, False) for c in cjk]
            elif word and not word.isdigit() and word not in ignore:
                units.append((word, True))
        if number is not None:
            units.append(("#" + number, False))
    stems = iter(stem_words([u for u, word in units if word]))
    return [next(stems) if word else u for u, word in units]


def looks_like_update(old: str, new: str, ignore: frozenset[str] = frozenset()) -> bool:
    """Whether `new` reads as a changed value of `old` rather than a different statement: the
    same words with other numbers ("端口是 8080" → "端口改成 9090"), or the same numbers and one
    changed span in an otherwise equal text ("住在杭州" → "住在上海", "prefers tabs" → "prefers
    spaces"). `ignore`: words that only say *when* ("now", "现在", "改成"). Short texts (under
    three units) never count: too little is shared to tell."""
    a, b = _units(old, ignore), _units(new, ignore)
    na, nb = numbers(old), numbers(new)
    if min(len(a), len(b)) < 3 or (a == b and na == nb):
        return False
    if na != nb:  # a changed number, the words the same or nearly ("是" → "改成 … 了")
        if not (na and nb):
            return False
        if a != b:
            span = _one_span(a, b)
            # … but not when the words that changed name someone or something else (capitalised
            # words, not function words): "Alice's phone number" → "Bob's phone number" changed
            # two things, whose number and the number
            if span is None or (_all_names(span[0], old) and _all_names(span[1], new)):
                return False
    elif _one_span(a, b) is None:
        return False
    # … nor when what changed is an identifier naming what the statement is about: "Ticket 17
    # is about the login page" → "Ticket 18 …" is another ticket, not a new value of one
    from optmem.identifiers import names_another_thing

    return not names_another_thing(old, new, ignore)


def same_words(old: str, new: str, ignore: frozenset[str] = frozenset()) -> bool:
    """Whether two texts say the same in the same words, numbers and the `ignore` words aside
    ("I have 3 plants" and "I now have 5 plants")."""
    return _units(old, ignore) == _units(new, ignore)


def _one_span(a: list[str], b: list[str]) -> tuple[list[str], list[str]] | None:
    """The one replaced span (its units in a, in b), the rest (at least 60 % of the longer, and
    two units) equal; None when the texts differ otherwise."""
    import difflib

    ops = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    changed = [op for op in ops if op[0] != "equal"]
    same = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag == "equal")
    if len(changed) == 1 and changed[0][0] == "replace" and same >= 2 and same >= 0.6 * max(len(a), len(b)):
        _, i1, i2, j1, j2 = changed[0]
        return a[i1:i2], b[j1:j2]
    return None


def _all_names(units: list[str], text: str) -> bool:
    """Whether every unit is a word the text writes with a capital letter (a name), none of them a
    function word ("The", "Our" beginning a sentence name nothing)."""
    capitalised = [w for w in _WORD_RE.findall(text) if w[0].isupper()]
    names = set(stem_words([fold(w) for w in capitalised if fold(w) not in STOPWORDS])) if capitalised else set()
    return bool(units) and all(u in names for u in units)


def tokens(text: str, *, folded: bool = False, stem: bool = True) -> list[str]:
    """Index tokens: (stemmed) words, then CJK bigrams and single characters. `stem=False` keeps
    words as written (for showing key terms to people)."""
    runs, words = _split(text if folded else fold(text))
    return _tokens(runs, stem_words(words) if stem else words, words, stem)


# A sentence that asks: from a sentence start to a question mark that ends it (not one inside a
# URL or code: "soup?topic=spices"), or to a 吗 / 嗎 that ends it (Chinese often leaves the mark out:
# 你去过上海吗，…). Anchored at a sentence start, so a long text without stops is read once.
_ENDS = ".!?。！？\n"
_QUESTION = rf"(?<![^{_ENDS}])[^{_ENDS}]*?(?:[?？](?![a-z0-9_=&/%])|[吗嗎](?=\s*(?:[{_ENDS},，;；]|$)))"
_QUESTION_RE: re.Pattern[str] | None = None  # compiled on first use (~1 ms): most commands ask nothing
_ASK_MARKS = ("?", "？", "吗", "嗎")


def may_ask(text: str) -> bool:
    """Whether a text may hold a question (`questions`): the cheap test before folding it."""
    return any(mark in text for mark in _ASK_MARKS)


def questions(folded: str) -> str:
    """The sentences of a folded text that ask (end in a question mark, or a Chinese 吗), joined —
    what a turn asks, without what it states ("I got a dog. What did you name yours?" asks about
    a name)."""
    global _QUESTION_RE
    if not may_ask(folded):
        return ""
    if _QUESTION_RE is None:
        _QUESTION_RE = re.compile(_QUESTION)
    return " ".join(_QUESTION_RE.findall(folded))


def words(folded: str) -> list[str]:
    """The words of a folded text as the tokeniser splits them, unstemmed (no CJK)."""
    return _split(folded)[1]


def tokens_and_words(folded: str) -> tuple[list[str], list[str]]:
    """(index tokens, words) of a folded text: the words as `words` gives them."""
    runs, words = _split(folded)
    return _tokens(runs, stem_words(words), words), words


def analyze(folded: str) -> tuple[list[str], str | None, list[str]]:
    """(tokens, fingerprint, words) of a folded text in one pass — what indexing needs of every
    record (the words as `words` gives them).

    A text with no letters or digits has no fingerprint: "！！！" and "???" are not the same fact.
    """
    runs, words = _split(folded)
    stems = stem_words(words)  # once, for the tokens and the fingerprint
    normal = _normal(runs, stems, words)
    return _tokens(runs, stems, words), digest(normal.encode("utf-8")) if normal else None, words


# English function words: they match nearly every record, so a search drops them when the
# query has other terms (they still count for the write gate and in the index).
STOPWORDS = frozenset("""a about an and are as at be been but by can could did do does for from had
has have how i if in into is it its me my of on or our so that the their them then there these
they this to was we were what when where which who whom why will with would you your""".split())


# … and the word after "how" that asks for an amount: "how many", "how much", "how long" are the
# question's form as 多少 and 多久 are (a record saying "many" or "long" is no answer to "how many
# plants", "how long have I had Luna"; the answer states a number). Not "how often" ("I often go"
# answers it), "how old", "how far" (the answer says "years old", "far away").
_HOW = frozenset(("many", "much", "long"))
# … and the measures a "what" question asks the number of: "what was my personal best time",
# "what's the price of …" are answered by a number as "how long" is
_MEASURE_WORDS = frozenset("""time price cost score weight distance age total budget salary rent
height pace speed temperature balance mileage duration length""".split())
_BE = frozenset(("is", "was", "are", "were", "s"))
# the words before "time" that make it a duration: "my personal best time", "my time in the 5K"
_TIME_OF = frozenset("""best finish finishing race total average record lap fastest slowest winning running
target my your his her our their""".split())


# The Chinese counterpart for queries: the words that make a sentence a question are its form,
# not its topic ("小明住在哪里" asks about 小明住在, not 哪里; "搬家了吗" about 搬家). They are cut
# out of a query's CJK runs before the bigrams are formed, so their neighbours pair with each
# other and no bigram straddles them; 哪 but in 哪吒; 几 only before a measure word (below); the
# particles 吗 呢 吧 only ending a run (not 吗啡), and 吧 呢 not where they end a noun (酒吧, 网吧,
# 贴吧, 氧吧, 毛呢 — not 花呢: "什么花呢" asks about 花); 啊 呀 ending a run
# too. The copula beside a question word is part of its form (端口是多少, 什么是向量 — not the 是
# that ends 但是, 于是, 还是, 就是 …), and so is the existential 有 before one (书有哪些, 有什么 —
# not the 有 that ends 没有, 所有, 现有, 患有 …). Simplified and traditional forms.
#
# The measure words a count is asked in (几盆, 几期, 几家): after 几 they make it a question word
# (几 in other words is no question: 几乎, 几率, 茶几, nor 好几 / 十几, "several") — the measure
# word stays with what follows (几年级, 几号线, 几分钟: the noun may begin with it)
_MEASURES = ("个個点點号號月天日次年岁歲位件楼樓层層本只隻条條张張盆口台臺辆輛种種期集家双雙趟遍回场場幅篇首部"
             "门門份杯瓶块塊斤周週颗顆把支根片袋包盒箱顿頓餐项項款座栋棟间間套架艘名届屆季章页頁课課节節所圈局"
             "盘盤轮輪封句段枚头頭匹株棵朵笔筆顶頂分秒")
# … and the units a count or a sum is asked in beside them (几小时, 几公里, 几元, 几人, 几倍)
_UNIT_CHARS = "元人亿億倍"
_UNIT_WORDS = "小时|小時|公里|公斤|千克|厘米|公分|英里|美元|星期|礼拜|禮拜|分钟|分鐘"
_CJK_QUESTION = (
    "(?:(?<![但于於还還就可不])是|(?<![没沒还還所只已拥擁具持含占佔现現原享富患唯固特专專])有)?(?:为什么|為什麼|什么时候|什麼時候|什么样|什麼樣|什么|什麼|怎么样|怎麼樣|怎么|怎麼|怎样|怎樣|哪里|哪裡|哪儿|哪兒|哪个|哪個|"
    "哪些|哪天|哪位|哪家|哪种|哪種|谁|誰|啥|如何|为何|為何|是否|多少|多久|多长时间|多長時間|多长|多長|请问|請問|"
    "是不是|有没有|有沒有|干嘛|幹嘛|干吗|幹嗎|咋|(?<![茶庶好十])[几幾](?=[" + _MEASURES + _UNIT_CHARS + "]|" + _UNIT_WORDS + ")"
    "|哪(?!吒))是?|(?:[吗嗎啊呀]|(?<![酒网網贴貼氧])吧|(?<!毛)呢)+$")
# a piece of one of these characters left between question words is no topic (部署步骤是怎样的: 的)
_CJK_PARTICLES = frozenset("的了啊呀吗嗎呢吧是在着著得地")


# … and the possessive 的, a function word as "of" and "my" are in English: "小明的手机号" asks
# about 小明 and 手机号, and no bigram may straddle it (明的, 的手 match 我的手表) — not the 的 of
# 目的, 别的, 有的, 真的, 打的, 的确, 的士, 的话, 的哥 (no lone 别, 真, 话 left to match)
_CJK_SPLIT = _CJK_QUESTION + "|(?<![目别有真打])的(?![确士话哥])"


def _topic_runs(cjk: str) -> list[str]:
    """A query's CJK run without its question words and its 的: the pieces left, in order (a lone
    particle left over dropped)."""
    return [piece for piece in _cjk_pattern(_CJK_SPLIT).split(cjk)
            if piece and not (len(piece) == 1 and piece in _CJK_PARTICLES)]


def search_terms(text: str, *, more: bool = False) -> list[str]:
    """`query_terms` without English function words, unless nothing else is left (`more`: the
    query has other terms still, its dates — "what did I do in May 2023")."""
    return _query_terms(text, drop_stopwords=True, more=more)


def query_terms(text: str) -> list[str]:
    """Query terms, deduplicated in order: stemmed words; CJK bigrams (a lone CJK character as
    itself)."""
    return _query_terms(text, drop_stopwords=False)


def _query_terms(text: str, drop_stopwords: bool, more: bool = False) -> list[str]:
    words: list[str] = []
    runs: list[str] = []
    for cjk, word in _runs(fold(text)):
        if word:
            words.append(word)
        else:
            runs.append(cjk)
    if drop_stopwords:
        content = [w for w, how in zip(words, _asks_how(words)) if w not in STOPWORDS and not how]
        topical = [piece for cjk in runs for piece in _topic_runs(cjk)]
        if content or topical or more:  # the stop lists apply while something else is left
            words, runs = content, topical
    return list(dict.fromkeys(stem_words(words) + [t for cjk in runs for t in cjk_query_terms(cjk)]
                              + _parts(words)))


# A question that asks for an amount — "how many", "how much", "how long" (the words `_HOW`
# drops, read the same way: `_asks_how`), 多少, 多久, 多长, 几 before a measure word or unit — is
# answered by a number: a sentence that states one beside the topic ("I have 5 plants", "养了三盆
# 花", "for about 6 months"). Not 几 that says "several" after 这, 那, 前, 过, 近, 后 (这几年, 前几天,
# 最近几个月), nor 多少 in 多多少少 / 很多少年, nor 多长 in 很多长辈.
# (a numeral before 月, 日, 号 names a month or a day: 五月, 6号 — "几号" asks a date, not an amount)
# what makes a lone Chinese numeral a number (`numbers`): a measure word (dates and labels too:
# 五月, 三号) or a unit after it
_AFTER_CJK_NUMERAL = "(?:" + _UNIT_WORDS + "|[" + _MEASURES + _UNIT_CHARS + "])"
_UNITS = ("(?:[" + "".join(c for c in _MEASURES if c not in "月日号號") + _UNIT_CHARS + "]|"
          + _UNIT_WORDS + "|个月|個月)")
_CJK_ASKS_AMOUNT = (r"(?<![多很许許好])多少(?!少)|多久|(?<![很许許好太])多[长長]"
                    r"|(?<![茶庶好十这這那前过過近后後])[几幾](?=" + _UNITS + ")")
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
_NUMERALS = "0-9零一二两兩三四五六七八九十百千万萬亿億半"
_CJK_NUMERALS = frozenset(_NUMERALS[3:])
# `numbers` in Chinese text: digits (and the magnitude after them: 10万), or a run of numerals
_CJK_NUMBER_OR_DIGITS = r"(\d+(?:\.\d+)?)([十百千万萬亿億]+)?|([〇" + _NUMERALS[3:] + "]+)"


def holds_number(term: str) -> bool:
    """Whether a search term is a number or holds a Chinese numeral ("8080", "有三", "三只"): the
    part of a statement that changes when its value does."""
    return term.isdigit() or (not term.isascii() and not _CJK_NUMERALS.isdisjoint(term))


_CJK_NUMBER = rf"(?<![{_NUMERALS}])(?!一[{_MEASURES}])[{_NUMERALS}]+[多来來余餘]?(?={_UNITS})"
# Sentences end at . ! ? ; (not the point of 1.5, nor the dots of a common abbreviation: "e.g. 5
# of them", "approx. 3 kg"), their CJK forms, and a blank line (a single line break goes on: a
# list under its heading, a hard-wrapped line).
_STATEMENT_ENDS = "!?;。！？；"
_ABBREVIATIONS = ("e.g", "i.e", "vs", "mr", "mrs", "ms", "dr", "approx", "cf")
# (the dot first, then the lookbehinds: tried at every position, they made the pattern 4x slower)
_SENTENCE_END = ("[" + _STATEMENT_ENDS + "]|" + r"\." + "".join(rf"(?<!\b{re.escape(a)}\.)" for a in _ABBREVIATIONS)
                 + r"(?!\d|[a-z]\.)|\n\s*\n")
_REACH = 300  # characters read either side of a word for its sentence


def _asks_how(words: list[str]) -> list[bool]:
    """For each word, whether it is the amount word of "how many / much / long"."""
    return [w in _HOW and i > 0 and words[i - 1] == "how" for i, w in enumerate(words)]


def _asks_measure(words: list[str]) -> bool:
    """Whether the words ask "what is" of a measure: "what was my personal best time", "what's
    the price of …", "what were the costs" — a measure word among the five after "what" and a
    form of "be". Not "what did I do the last time" or "what did the doctor say about my weight"
    (no "what is"). "Time" asks a duration only after a word that makes it one (`_TIME_OF`: "my
    best time for the 5K", "my time in the 5K") and not before to / of ("the best time to call",
    "what is my time of arrival"): a time of day is no amount `_DIGITS` counts."""
    for i, w in enumerate(words[:-2]):
        if w == "what" and words[i + 1] in _BE:
            after = words[i + 2 : i + 7]
            measures = _measure_stems()
            for j, stem in enumerate(stem_words(after)):
                if stem == "time":
                    if (j and after[j - 1] in _TIME_OF
                            and words[i + 3 + j : i + 4 + j] not in (["to"], ["of"])):
                        return True
                elif stem in measures:
                    return True
    return False


_MEASURE_STEMS: frozenset[str] | None = None


def _measure_stems() -> frozenset[str]:
    """`_MEASURE_WORDS` stemmed (on first use: the stemmer loads then)."""
    global _MEASURE_STEMS
    if _MEASURE_STEMS is None:
        _MEASURE_STEMS = frozenset(stem_words(list(_MEASURE_WORDS)))
    return _MEASURE_STEMS


def asks_amount(folded: str) -> bool:
    """Whether a folded query asks for an amount (a count, a sum, a length of time, a measure).
    (The Chinese pattern is compiled only for a query with Chinese in it.)"""
    if "how" in folded or "what" in folded:
        words = _split(folded)[1]
        if any(_asks_how(words)) or _asks_measure(words):
            return True
    return has_cjk(folded) and bool(_cjk_pattern(_CJK_ASKS_AMOUNT).search(folded))


def states_amount(folded: str, said: frozenset[str], named: frozenset[str] = frozenset()) -> bool:
    """Whether a folded text states a number in a sentence that holds one of these words (as
    `words` gives them) or Chinese terms (bigrams and characters: pieces of its text) — not one
    of the `named` words, numbers the query itself holds ("how many 5K runs": 5k). The
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
    from optmem.dates import MONTHS

    out: list[tuple[str, str, int]] = []
    for sentence in _sentences_around(folded, said, named):
        if len(out) >= most:
            break
        after: list[tuple[list[str], int]] = []  # (the words after a number, where the number is)
        for m in _pattern(_DIGITS).finditer(sentence):
            if m.start() and sentence[m.start() - 1] in _CURRENCY:
                out.append((sentence[m.start() - 1], sentence, m.start()))
                continue
            before = sentence[max(0, m.start() - 12) : m.start()].split()
            last = before[-1] if before else ""
            if last in MONTHS or (last in _BEFORE_YEAR and _pattern(_YEAR).fullmatch(m.group())):
                continue
            # the unit of "10km" is km; "5th" and "1920s" have none of their own: the words after them
            suffix = _pattern(_ORDINAL).match(sentence, m.end())
            at = suffix.end() if suffix else m.end()
            if following := _pattern(_NEXT_WORDS).match(sentence, at):
                after.append(([w for w in following.groups() if w], m.start()))
            elif has_cjk(sentence) and (unit := _cjk_pattern(r"\s*" + _UNITS).match(sentence, at)):
                out.append((unit.group().strip(), sentence, m.start()))
        # a number word and the one or two words after it ("three new plants")
        after += [([w for w in m.groups()[1:] if w], m.start())
                  for m in _pattern(_NUMBER_WORDS_AFTER).finditer(sentence)]
        after = [(words[1:] if words[0] in _NUMBER_WORDS else words, at) for words, at in after]
        after = [(words, at) for words, at in after
                 if words and words[0] not in STOPWORDS and not words[0].isdigit() and words[0] not in _NUMBER_WORDS]
        stems = iter(stem_words([w for words, _ in after for w in words]) if after else [])
        for words, at in after:
            first, second = next(stems), next(stems) if len(words) > 1 else None
            # "5 balcony plants", "600 Instagram followers": the second word counts, if the query's
            out.append((second if second in prefer else first, sentence, at))
        if has_cjk(sentence):
            unit_re = _cjk_pattern(_UNITS)
            out += [(u.group(), sentence, m.start()) for m in _cjk_pattern(_CJK_NUMBER).finditer(sentence)
                    if (u := unit_re.match(sentence, m.end()))]
    return list(dict.fromkeys(out))  # (3盆 is read as digits and as a Chinese numeral)


def term_places(folded: str, terms: frozenset[str]) -> list[tuple[int, str]]:
    """Where a folded text holds these search terms: (position, term), in text order — its
    words stemmed, Chinese terms found as written."""
    places: list[tuple[int, str]] = []
    # the index's words: a CJK run is no part of one ("我的iphone手机": iphone)
    words = [m for m in (_split_cjk() if has_cjk(folded) else _WORD_RE).finditer(folded) if m.group().isascii()]
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


# Words that say how long or how long ago, not what: two amounts in weeks about "the past few
# weeks" are no statements of one thing (`time_span_terms`)
_TIME_SPAN_WORDS = """second seconds minute minutes hour hours day days week weeks weekend month months year years
decade decades ago past last few recent recently earlier later since before after until previous
previously 天 周 週 月 年 小时 小時 分钟 分鐘 星期 礼拜 禮拜 个月 個月 年前 天前 以前""".split()
_TIME_SPAN_TERMS: frozenset[str] | None = None


def time_span_terms() -> frozenset[str]:
    """The search terms of words that measure or place a span of time ("months", "ago", 个月)."""
    global _TIME_SPAN_TERMS
    if _TIME_SPAN_TERMS is None:
        _TIME_SPAN_TERMS = frozenset(stem_words(_TIME_SPAN_WORDS))
    return _TIME_SPAN_TERMS


# (sources: compiled on first use, by `_pattern`)
_ORDINAL = r"(?:st|nd|rd|th|s)\b"
_NEXT_WORDS = r"[\s-]*([a-z]+)(?:\s+([a-z]+))?"
_YEAR = r"1[89]\d\d|20\d\d"
_BEFORE_YEAR = frozenset("since in from by of until till before after during around circa year".split())
_NUMBER_WORDS_AFTER = r"\b(" + "|".join(sorted(_NUMBER_WORDS)) + r")\b\W+([^\W_]+)(?:\s+([^\W_]+))?"
_CURRENCY = "$€£¥₹"


def _sentences_around(folded: str, said: frozenset[str], named: frozenset[str]) -> Iterator[str]:
    """The sentences of a folded text that hold one of the `said` words (`states_amount`), the
    `named` numbers taken out of them, each once."""
    end = _pattern(_SENTENCE_END)
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
    for m in _pattern(_SENTENCE_END).finditer(folded, start, at):
        start = m.end()
    return start


def _apart(folded: str, i: int) -> bool:
    """Whether position i is outside the text or holds no ASCII letter or digit: a word's edge."""
    return not (0 <= i < len(folded) and folded[i].isascii() and folded[i].isalnum())


def _has_number(sentence: str) -> bool:
    """Whether a folded sentence states a number (see `_DIGITS`, `_NUMBER_WORDS`, `_CJK_NUMBER`)."""
    if _pattern(_DIGITS).search(sentence) or not _NUMBER_WORDS.isdisjoint(_WORD_RE.findall(sentence)):
        return True
    return has_cjk(sentence) and bool(_cjk_pattern(_CJK_NUMBER).search(sentence))


def cjk_query_terms(cjk: str) -> list[str]:
    """A CJK run's query terms: its bigrams, or the lone character itself."""
    return [cjk] if len(cjk) == 1 else [cjk[i : i + 2] for i in range(len(cjk) - 1)]
