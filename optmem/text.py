"""Text: normalising, fingerprints and tokenising (Chinese + English).

One tokeniser serves the index, the query and the write gate, so they always agree:
* NFKC, then case folding;
* CJK runs (Han, kana, hangul) become overlapping bigrams plus single characters, so a query of
  one character still matches while longer queries match by bigram;
* other letters and digits form words, reduced to their English Snowball stem ("deployments"
  and "deploying" → "deploy"), in the index, the query and the fingerprint alike.

The tokeniser reads no question: which words a query drops, what it asks, the cue words and the
amounts are the readers' (`optmem.reading`), and the few word lists fingerprints and similarity
need (intensifiers, particles, Chinese numerals and measure words) come from `reading.lexicon`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from optmem.reading.lexicon import (
    CJK_DIGIT_VALUES,
    CJK_INTENSIFIERS,
    CJK_MYRIADS,
    CJK_NUMERALS,
    CJK_TENS,
    EN_INTENSIFIERS,
    FINAL_PARTICLES,
    MEASURES,
    NUMERAL_CHARS,
    UNIT_CHARS,
    UNIT_WORDS,
)

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any

# kana, CJK ideographs (extension A, unified, compatibility, extensions B and after), hangul
_CJK_RANGES = (
    ("\u3040", "\u30ff"),
    ("\u3400", "\u4dbf"),
    ("\u4e00", "\u9fff"),
    ("\uf900", "\ufaff"),
    ("\uac00", "\ud7af"),
    ("\U00020000", "\U0002ffff"),
)
_CJK = "".join(f"{low}-{high}" for low, high in _CJK_RANGES)  # (a pattern's class)
# Runs of letters and digits; inside a run that is not ASCII, CJK runs and the rest are told
# apart (a negated class: no look-ahead per character, which made this the costliest step of
# indexing). That second pattern takes ~7 ms to compile, so it is compiled only when a command
# has many texts that may hold CJK (`has_cjk`) to split: `_CjkRuns`.
_WORD_RE = re.compile(r"[^\W_]+")
_FOLDED_ASCII_WORD_RE = re.compile(r"[a-z0-9]+")  # what _WORD_RE finds in a folded ASCII text, faster
_SPLIT_RE: re.Pattern[str] | None = None


_CJK_PATTERNS: dict[str, re.Pattern[str]] = {}


def cjk_compiled(source: str) -> re.Pattern[str]:
    """A pattern only Chinese text needs, compiled the first time some turns up (an English-only
    command never pays for it; kept apart, so a test can tell it was not compiled)."""
    return compiled(source, _CJK_PATTERNS)


_PATTERNS: dict[str, re.Pattern[str]] = {}


def compiled(source: str, kept: dict[str, re.Pattern[str]] = _PATTERNS) -> re.Pattern[str]:
    """A pattern compiled the first time it is needed (not at import: most commands never need
    it), and kept."""
    pattern = kept.get(source)
    if pattern is None:
        pattern = kept[source] = re.compile(source)
    return pattern


def cjk_runs() -> _CjkRuns:
    """The CJK runs of a text (the pattern `([CJK]+)`, one class): `split` and `finditer` as a
    compiled pattern's."""
    return _CJK_RUNS


def _cjk_class() -> re.Pattern[str]:
    """The pattern of CJK runs (one class), compiled once a command has many texts to split."""
    global _SPLIT_RE
    if _SPLIT_RE is None:
        _SPLIT_RE = re.compile(f"([{_CJK}]+)")
    return _SPLIT_RE


def _split_cjk(folded: str) -> list[tuple[str, str]]:
    """(CJK run, other word) pairs of a text that may hold CJK — what `([CJK]+)|([^\\W_CJK]+)`
    finds, from one CJK class: the CJK runs, and the words between them. (A pattern with a
    CJK class and a class of the other letters took ~3 ms to compile; one class, half that.)"""
    out: list[tuple[str, str]] = []
    between = True  # the pieces alternate: the text between two runs, a run, …
    for piece in _CJK_RUNS.split(folded):
        if not between:
            out.append((piece, ""))
        elif piece:
            out.extend([("", w) for w in _WORD_RE.findall(piece)])
        between = not between
    return out


# How many characters of a command's texts are split into CJK runs without the class's pattern:
# compiling its ~40,000 code points takes 23M instructions (~7 ms), more than a search spends
# finding the runs of the few dozen texts it reads back character by character; an index build,
# which splits many, compiles it once past this (the same runs)
_FEW_CJK = 100_000


class _CjkKinds(dict[int, int]):
    """A code point → "c" for a CJK character, " " for any other: what `str.translate` maps a text
    to, to find its CJK runs with a pattern that compiles at once. Filled as characters turn up."""

    def __missing__(self, point: int) -> int:
        kind = self[point] = 0x63 if _is_cjk_char(chr(point)) else 0x20
        return kind


_KINDS = _CjkKinds.fromkeys(range(128), 0x20)  # (ASCII holds no CJK)
_KIND_RUN_RE = re.compile("c+")


class _Run:
    """A CJK run found character by character: where it is, as a match's `start`, `end`, `group`."""

    __slots__ = ("string", "_start", "_end")

    def __init__(self, string: str, start: int, end: int) -> None:
        self.string, self._start, self._end = string, start, end

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end

    def span(self) -> tuple[int, int]:
        return self._start, self._end

    def group(self) -> str:
        return self.string[self._start : self._end]


class _CjkRuns:
    """`cjk_runs()`: the CJK runs of a text, found character by character (`_KINDS`) for a
    command's first `_FEW_CJK` characters, then by the compiled class (`_cjk_class`)."""

    def _few(self, s: str) -> bool:
        global _FEW_CJK
        if _SPLIT_RE is not None or _FEW_CJK <= 0:
            return False
        _FEW_CJK -= len(s)
        return True

    def finditer(self, s: str) -> Iterator[_Run | re.Match[str]]:
        if not self._few(s):
            return _cjk_class().finditer(s)
        return (_Run(s, *m.span()) for m in _KIND_RUN_RE.finditer(s.translate(_KINDS)))

    def findall(self, s: str) -> list[str]:
        """The runs, in order (`re.findall`'s list)."""
        if not self._few(s):
            return _cjk_class().findall(s)
        return [s[start:end] for start, end in (m.span() for m in _KIND_RUN_RE.finditer(s.translate(_KINDS)))]

    def split(self, s: str) -> list[str]:
        """The text before each run, the run, …, the text after the last (`re.split`'s list)."""
        if not self._few(s):
            return _cjk_class().split(s)
        out: list[str] = []
        at = 0
        for m in _KIND_RUN_RE.finditer(s.translate(_KINDS)):
            start, end = m.span()
            out += [s[at:start], s[start:end]]
            at = end
        out.append(s[at:])
        return out


_CJK_RUNS = _CjkRuns()


_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")
# `numbers` in Chinese text: digits (and the magnitude after them: 10万), or a run of numerals …
_CJK_NUMBER_OR_DIGITS = r"(\d+(?:\.\d+)?)([十百千万萬亿億]+)?|([〇" + CJK_NUMERALS + "]+)"
_ANY_NUMERAL = "〇" + CJK_NUMERALS  # (a text without one holds digits alone: `_NUMBER_RE`'s)
# … which make a number alone when a measure word (dates and labels too: 五月, 三号) or a unit
# follows (`lexicon.MEASURES`, `lexicon.UNIT_WORDS`)
_AFTER_CJK_NUMERAL = "(?:" + UNIT_WORDS + "|[" + MEASURES + UNIT_CHARS + "])"
# … both read without compiling them (their classes of Chinese characters compiled to big
# character sets, ~0.9 ms of a search whose hits hold a Chinese numeral): the number pattern as
# one of ASCII classes over the text with its numerals made control characters, a character for
# a character (a magnitude \x10, another numeral \x11; a \x10 or \x11 of its own \x12); what
# follows a numeral by looking up its words, in the pattern's order (`_unit_after`)
_NUMBER_OR_NUMERALS = r"(\d+(?:\.\d+)?)(\x10+)?|([\x10\x11]+)"
_MAGNITUDES = "十百千万萬亿億"
_AS_NUMERAL_KINDS = str.maketrans(
    {c: "\x10" if c in _MAGNITUDES else "\x11" for c in "〇" + CJK_NUMERALS} | {"\x10": "\x12", "\x11": "\x12"}
)
_UNITS_AFTER = tuple(UNIT_WORDS.split("|"))
_UNIT_CHARS_AFTER = frozenset(MEASURES + UNIT_CHARS)
# (`normalize` drops spacing and punctuation, and the words that intensify without changing the
# fact: `lexicon.EN_INTENSIFIERS`, `lexicon.CJK_INTENSIFIERS`)


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
    digest: str = _blake2b(data, digest_size=size).hexdigest()
    return digest


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
# Compiled when first needed, not at import (an English-only command never needs them): the
# first look when a text that is not ASCII is folded, the replacing pattern when the first look
# finds a letter to fold. The first look is one class of two ranges — the Latin letters and the
# combining marks with the IPA and modifier letters between them (a false alarm changes nothing):
# a class of three ranges took ~1 ms to compile, twice what these two take.
_ACCENTED = "[\u00c0-\u024f\u1e00-\u1eff][\u0300-\u036f]*|(?<=[a-z])[\u0300-\u036f]+"
_MAY_BE_ACCENTED = "[\u00c0-\u036f\u1e00-\u1eff]"  # one class: a fast first look
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
    return compiled(_ACCENTED).sub(_unaccent, folded) if compiled(_MAY_BE_ACCENTED).search(folded) else folded


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
                    out[i] = word  # would push the words out
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


def script_runs(folded: str) -> list[tuple[str, str]]:
    """(CJK run, other word) pairs of a folded text, in order — the base of tokens and fingerprints."""
    if not has_cjk(folded):
        return [("", word) for word in _WORD_RE.findall(folded)]
    return _split_cjk(folded)


Runs = list[tuple[str, str]] | None  # a text's (CJK run, other word) pairs; None: no CJK, words only


def _split(folded: str) -> tuple[Runs, list[str]]:
    """(runs, words) of a folded text: a text without CJK is its words alone — no pairs to build,
    which were a third of tokenising an English record."""
    if folded.isascii():
        return None, _FOLDED_ASCII_WORD_RE.findall(folded)
    if max(folded) < _FIRST_CJK:
        return None, _WORD_RE.findall(folded)
    runs = _split_cjk(folded)
    return runs, [w for c, w in runs if w]


def _normal(runs: Runs, stems: list[str], words: list[str]) -> str:
    """The fingerprinted form: CJK runs and word stems, intensifiers dropped, joined."""
    if runs is None:
        if EN_INTENSIFIERS.isdisjoint(words):
            return "".join(stems)
        return "".join(p for p, w in zip(stems, words) if w not in EN_INTENSIFIERS)
    it = iter(stems)
    pieces = [c or next(it) for c, _ in runs]  # each run's piece: CJK as is, a word's stem
    if not EN_INTENSIFIERS.isdisjoint(words):
        pieces = [p for p, (c, w) in zip(pieces, runs) if c or w not in EN_INTENSIFIERS]
    joined = "".join(pieces)
    return joined if joined.isascii() else cjk_compiled(CJK_INTENSIFIERS).sub("", joined)


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
    return [value for value, _ in number_spans(s)]


def number_spans(s: str) -> Iterator[tuple[str, tuple[int, int]]]:
    """Each number of an NFKC text with CJK in it (`numbers`): its value, and where the Chinese
    numerals that write it are (those of 10万: 万; nothing for digits alone)."""
    if not any(c in s for c in _ANY_NUMERAL):  # digits alone: no Chinese pattern (~0.7 ms to compile)
        for m in _NUMBER_RE.finditer(s):
            yield m.group(), (m.end(), m.end())
        return
    for m in compiled(_NUMBER_OR_NUMERALS).finditer(s.translate(_AS_NUMERAL_KINDS)):
        digits = m.group(1)  # (digits are not translated: the text's own)
        if digits:
            magnitude = s[m.start(2) : m.end(2)]
            yield (_times(digits, magnitude), m.span(2)) if magnitude else (digits, (m.end(), m.end()))
            continue
        start, end = m.span()
        run = s[start:end]
        ordinal = start > 0 and s[start - 1] == "第"
        unit = _unit_after(s, end)
        if len(run) == 1 and not ordinal:
            if not unit or (run == "一" and unit not in "号號月日"):
                continue  # 一起, 三亚; 一个, 一条 say "a"
            if run == "十" and s[end] == "分" and s[end + 1 : end + 2] not in ("钟", "鐘"):
                continue  # 十分 says "very" (十分钟 are ten minutes)
        yield _cjk_value(run), (start, end)


def _unit_after(s: str, at: int) -> str | None:
    """What `_AFTER_CJK_NUMERAL` matches at `at` in `s` (a unit word, else a measure word or a
    unit character), None when it matches nothing."""
    for word in _UNITS_AFTER:
        if s.startswith(word, at):
            return word
    c = s[at : at + 1]
    return c if c in _UNIT_CHARS_AFTER else None


def _cjk_value(run: str) -> str:
    """The value of a run of Chinese numerals as digits ("二十三" → "23", "二〇二四" → "2024",
    "半" → "0.5"); the run as written when it is none (一半)."""
    if run == "半":
        return "0.5"
    if all(c in CJK_DIGIT_VALUES for c in run):  # digit by digit: 二〇二四
        return str(int("".join(str(CJK_DIGIT_VALUES[c]) for c in run)))
    total = section = digit = 0
    for c in run:
        if c in CJK_DIGIT_VALUES:
            digit = CJK_DIGIT_VALUES[c]
        elif c in CJK_TENS:
            section, digit = section + (digit or 1) * CJK_TENS[c], 0
        elif c in CJK_MYRIADS:  # 亿 multiplies all before it, 万 the group since the last 亿
            if CJK_MYRIADS[c] > 10**4:
                total = (total + section + digit or 1) * CJK_MYRIADS[c]
            else:
                total += (section + digit or 1) * CJK_MYRIADS[c]
            section = digit = 0
        else:
            return run
    return str(total + section + digit)


def _times(digits: str, magnitude: str) -> str:
    """Digits with the Chinese magnitude after them, as one value ("10", "万" → "100000";
    "1.5", "亿" → "150000000")."""
    from decimal import Decimal

    return format((Decimal(digits) * int(_cjk_value(magnitude))).normalize(), "f")


# A particle that ends a Chinese sentence (现在有五盆花了, 好啦, 是吧: `lexicon.FINAL_PARTICLES`): how
# it is said, not what — after a CJK character, before punctuation or the end
_FINAL_PARTICLE = rf"[{FINAL_PARTICLES}](?=\s*(?:[,.!?;:。！？；：]|$))"
# … read as a pattern of ASCII classes over the text with its particles made \x01 and its Chinese
# stops ASCII, a character for a character (a \x01 of its own \x02): ~0.1 ms to compile, not ~0.4
_FINAL_PARTICLE_ASCII = r"\x01(?=\s*(?:[,.!?;:]|$))"
_AS_PARTICLES = str.maketrans(
    dict.fromkeys(FINAL_PARTICLES, "\x01") | {"。": ".", "！": "!", "？": "?", "；": ";", "：": ":", "\x01": "\x02"}
)


def _is_cjk_char(c: str) -> bool:
    """Whether a character is in one of the CJK ranges (`_CJK`)."""
    return any(low <= c <= high for low, high in _CJK_RANGES)


def without_final_particles(s: str) -> str:
    """`s` without the particles that end its Chinese sentences. That a CJK character comes
    before one is checked here, not by a look-behind of the CJK class: that pattern took ~1.5 ms
    to compile in each process that read a Chinese statement (`_FINAL_PARTICLE_ASCII`: ~0.1 ms)."""

    if not any(c in s for c in FINAL_PARTICLES):
        return s  # (most texts: nothing to drop, no pattern compiled)
    out, last = [], 0
    for m in compiled(_FINAL_PARTICLE_ASCII).finditer(s.translate(_AS_PARTICLES)):
        at = m.start()
        if at and _is_cjk_char(s[at - 1]):
            out.append(s[last:at])
            last = m.end()
    return "".join(out) + s[last:] if out else s


def tokens(text: str, *, folded: bool = False, stem: bool = True) -> list[str]:
    """Index tokens: (stemmed) words, then CJK bigrams and single characters. `stem=False` keeps
    words as written (for showing key terms to people)."""
    runs, words = _split(text if folded else fold(text))
    return _tokens(runs, stem_words(words) if stem else words, words, stem)


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


def plain_words(folded: str) -> list[str]:
    """The runs of letters and digits of a folded text, CJK ones too ("养了3盆花" is one): what a
    sentence says in words, without the tokeniser's CJK split."""
    return _WORD_RE.findall(folded)


def words_and_runs(text: str) -> tuple[list[str], list[str]]:
    """(words, CJK runs) of a text, each in order: what a query's terms are made of."""
    words: list[str] = []
    runs: list[str] = []
    for cjk, word in script_runs(fold(text)):
        if word:
            words.append(word)
        else:
            runs.append(cjk)
    return words, runs


def query_terms_of(words: list[str], runs: list[str]) -> list[str]:
    """The query terms of these words and CJK runs, deduplicated in order: the words stemmed, each
    run's bigrams (a lone character as itself), then the parts of the words mixing letters and
    digits."""
    return list(dict.fromkeys(stem_words(words) + [t for cjk in runs for t in cjk_query_terms(cjk)] + _parts(words)))


def query_terms(text: str) -> list[str]:
    """Query terms, deduplicated in order: stemmed words; CJK bigrams (a lone CJK character as
    itself). (A search drops function words and a question's form: `reading.query.search_terms`.)"""
    return query_terms_of(*words_and_runs(text))


def holds_number(term: str) -> bool:
    """Whether a search term is a number or holds a Chinese numeral ("8080", "有三", "三只"): the
    part of a statement that changes when its value does."""
    return term.isdigit() or (not term.isascii() and not NUMERAL_CHARS.isdisjoint(term))


def cjk_query_terms(cjk: str) -> list[str]:
    """A CJK run's query terms: its bigrams, or the lone character itself."""
    return [cjk] if len(cjk) == 1 else [cjk[i : i + 2] for i in range(len(cjk) - 1)]
