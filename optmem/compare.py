"""How two statements compare: near-duplicate similarity (the write gate, `add`) and whether a new
text reads as a changed value of an old one (`looks_like_update`, the gate's possible updates).

Built on the tokeniser (`optmem.text`) and the reading of identifiers (`optmem.identifiers`):
"server A" and "server B", "Ticket 17" and "Ticket 18" name two things, not one thing twice.
"""

from __future__ import annotations

from optmem import text as textmod
from optmem.reading.lexicon import STOPWORDS


def similarity(a: str, b: str, *, least: float = 0.0) -> float:
    """Normalised similarity in [0, 1]. Texts whose numbers differ (`numbers`, as an ordered
    sequence) are never similar (0.0), nor texts where what changed holds a label
    (`identifiers.labels_differ`: server A / server B, 服务器甲 / 服务器乙, api.example.com /
    cdn.example.com): each names another thing. `least`: the caller's threshold — a value below
    it is returned without the label check (which reads both texts word by word, ten times the
    cost of the rest, and can only make a value 0.0)."""
    if textmod.numbers(a) != textmod.numbers(b):
        return 0.0
    na, nb = textmod.normalize(a), textmod.normalize(b)
    if not na or not nb:
        return 0.0  # nothing but punctuation or symbols: nothing to compare
    if na == nb:
        return 1.0
    ratio = _ratio(na, nb)
    if ratio >= least:
        from optmem.identifiers import labels_differ  # (read word by word: loaded when a value may count)

        if labels_differ(a, b) or says_otherwise(a, b):
            return 0.0
    return ratio


def says_otherwise(a: str, b: str) -> bool:
    """Whether two alike texts say different things: a negation one has and the other has not
    ("小明不喜欢喝咖啡" / "小明喜欢喝咖啡", "is allowed" / "is not allowed"), or a word that names
    something replaced by another (深色主题 / 浅色主题, "dark theme" / "light theme") — not a
    function word ("是" / "在"), nor a word spelled another way ("colour" / "color"). Spacing,
    punctuation, case, width and intensifiers (很, 非常, very, really) are no change: they are
    left out before the texts are compared."""
    from optmem.identifiers import opcodes

    ua, ub = _units(a, _how_said()), _units(b, _how_said())
    ops = opcodes(ua, ub)
    if ops is None:  # too long to compare within the bound: the ratio decides
        return False
    negations = _negations()
    if sum(u in negations for u in ua) != sum(u in negations for u in ub):
        return True  # (one says "not" once more; "don't" and "do not" say it once each)
    for tag, i1, i2, j1, j2 in ops:
        gone, came = [u for u in ua[i1:i2] if u not in negations], [u for u in ub[j1:j2] if u not in negations]
        if tag == "replace" and _names_something(gone) and _names_something(came) and not _respelt(gone, came):
            return True
    return False


def _respelt(gone: list[str], came: list[str]) -> bool:
    """Whether a replaced span is one word spelled another way ("colour" → "color", a typo): one
    word of letters each side, nearly the same letters. A CJK character is a word of its own."""
    if len(gone) != 1 or len(came) != 1 or textmod.has_cjk(gone[0] + came[0]):
        return False
    return _ratio(gone[0], came[0]) >= RESPELT


RESPELT = 0.8  # how alike two spellings of one word are (edit ratio): colour/color 0.91, dark/light 0.44

# Words that negate what they stand in: one text with one, the other without, say the opposite.
# ("t" is the end of a contraction: isn't, don't, can't are read as "isn", "t")
EN_NEGATIONS = (
    "not",
    "no",
    "never",
    "none",
    "nobody",
    "nothing",
    "nowhere",
    "neither",
    "nor",
    "cannot",
    "without",
    "t",
)
CJK_NEGATIONS = "不没沒别別未无無勿莫非"

_NEGATIONS: frozenset[str] | None = None
_HOW_SAID: frozenset[str] | None = None


def _negations() -> frozenset[str]:
    global _NEGATIONS
    if _NEGATIONS is None:
        _NEGATIONS = frozenset([*EN_NEGATIONS, *textmod.stem_words(list(EN_NEGATIONS)), *CJK_NEGATIONS])
    return _NEGATIONS


def _how_said() -> frozenset[str]:
    """The intensifiers `text.normalize` leaves out (very, really, 很, 非常 …): how strongly a
    thing is said, not what."""
    global _HOW_SAID
    if _HOW_SAID is None:
        from optmem.reading.lexicon import CJK_INTENSIFIERS, EN_INTENSIFIERS

        _HOW_SAID = frozenset([*EN_INTENSIFIERS, *CJK_INTENSIFIERS.split("|")])
    return _HOW_SAID


def _ratio(a: str, b: str) -> float:
    """The edit-distance ratio of two texts in [0, 1] (rapidfuzz: heavy-ish, loaded by the
    commands that compare texts)."""
    from rapidfuzz import fuzz

    return fuzz.ratio(a, b) / 100.0


def _units(text: str, ignore: frozenset[str]) -> list[str]:
    """A text as a sequence of comparable units: (stemmed) words and single CJK characters, in
    order, numbers in digits, the `ignore` words/phrases and the particles ending a Chinese
    sentence left out. A number in Chinese numerals (as `numbers` reads them) is one unit of its
    value ("#2": 两只猫 → "#2", 只, 猫; 十万 and 10万 → "#100000"), so 十万 → 二十万 is one change."""
    folded = textmod.fold(text)
    for phrase in ignore:
        if not phrase.isascii():
            folded = folded.replace(phrase, " ")
    pieces: list[tuple[str, str | None]] = [(folded, None)]  # (text, the number written after it)
    if textmod.has_cjk(folded):
        folded = textmod.without_final_particles(folded)
        pieces, last = [], 0
        for value, (start, end) in textmod.number_spans(folded):
            if start < end:
                pieces.append((folded[last:start], value))
                last = end
        pieces.append((folded[last:], None))
    units: list[tuple[str, bool]] = []  # (unit, a word to stem)
    for piece, number in pieces:
        for cjk, word in textmod.script_runs(piece):
            if cjk:
                units += [(c, False) for c in cjk]
            elif word and not word.isdigit() and word not in ignore:
                units.append((word, True))
        if number is not None:
            units.append(("#" + number, False))
    stems = iter(textmod.stem_words([u for u, word in units if word]))
    return [next(stems) if word else u for u, word in units]


def looks_like_update(old: str, new: str, ignore: frozenset[str] = frozenset()) -> bool:
    """Whether `new` reads as a changed value of `old` rather than a different statement: the
    same words with other numbers ("端口是 8080" → "端口改成 9090"), or the same numbers and one
    changed span in an otherwise equal text ("住在杭州" → "住在上海", "prefers tabs" → "prefers
    spaces"). `ignore`: words that only say *when* ("now", "现在", "改成"). Short texts (under
    three units) never count: too little is shared to tell."""
    a, b = _units(old, ignore), _units(new, ignore)
    na, nb = textmod.numbers(old), textmod.numbers(new)
    if min(len(a), len(b)) < 3 or (a == b and na == nb):
        return False
    if na != nb:  # a changed number, the words the same or nearly ("是" → "改成 … 了")
        if not (na and nb):
            return False
        if a != b:
            span = _one_span(a, b)
            # … but not when words that name something changed beside the number, on both sides
            # (`_names_something`), in the statement's subject (`changes_subject`: before its
            # predicate): they say what the number is of, so it is another subject or attribute —
            # "numpy pinned to 1.26" / "pandas pinned to 2.1", "订单服务监听 8085" / "用户服务监听
            # 8086", "网关读超时 60 秒" / "网关连接超时 5 秒" are two facts of one shape, not one
            # fact twice ("Alice's phone number" → "Bob's …" too). In the predicate they are the
            # value's own words: "restarts at 4am on sundays" → "at 3am every night"
            if span is None:
                return False
            if _names_something(span[0]) and _names_something(span[1]):
                from optmem.identifiers import changes_subject

                if changes_subject(old, new, ignore):
                    return False
    elif _one_span(a, b) is None and not _negated(a, b):
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
    two units) equal; None when the texts differ otherwise, or are too long to compare
    (`identifiers.opcodes`)."""
    from optmem.identifiers import opcodes

    ops = opcodes(a, b)
    if ops is None:
        return None
    changed = [op for op in ops if op[0] != "equal"]
    same = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag == "equal")
    if len(changed) == 1 and changed[0][0] == "replace" and same >= 2 and same >= 0.6 * max(len(a), len(b)):
        _, i1, i2, j1, j2 = changed[0]
        return a[i1:i2], b[j1:j2]
    return None


def _negated(a: list[str], b: list[str]) -> bool:
    """Whether one text is the other negated: one span put in or taken out, a negation with
    function words at most ("小明不喜欢喝咖啡" → "小明喜欢喝咖啡", "is allowed" → "is not allowed",
    "I like it" → "I do not like it"), the rest (at least 60 % of the longer) equal — the
    statement's value turned round, as a replaced span changes it."""
    from optmem.identifiers import opcodes

    ops = opcodes(a, b)
    if ops is None:
        return False
    changed = [op for op in ops if op[0] != "equal"]
    if len(changed) != 1 or changed[0][0] not in ("insert", "delete"):
        return False
    _, i1, i2, j1, j2 = changed[0]
    span = a[i1:i2] or b[j1:j2]
    same = min(len(a), len(b))
    return (
        any(u in _negations() for u in span)
        and all(u in _negations() or _function_unit(u) for u in span)
        and same >= 2
        and same >= 0.6 * max(len(a), len(b))
    )


def _names_something(units: list[str]) -> bool:
    """Whether a changed span holds a word that names something: neither a function word nor a
    number (a unit holding a digit is the value itself: "app1" → "app2", "#2" → "#3"). Both sides
    naming something is another subject or attribute; one side alone is the same fact reworded
    ("跑步五公里" → "跑十公里")."""
    return any(not _function_unit(u) and not any(c.isdigit() for c in u) for u in units)


# Chinese characters that carry no subject of their own: the copula and prepositions a value is
# given with, and the verbs that say it changed (改成, 换到, 调为, 升到 …)
_CJK_FUNCTION = frozenset("是在为為到至于於成了的已经經都还還也就被把从從由有改变變换換调調升降")


def _function_unit(unit: str) -> bool:
    """Whether a unit of `_units` is a function word (an English stop word, stemmed or not) or
    one of `_CJK_FUNCTION`: a word that says how a value is given, not what it is of."""
    return unit in _CJK_FUNCTION or unit in STOPWORDS or unit in _stemmed_stopwords()


_STEMMED: frozenset[str] | None = None


def _stemmed_stopwords() -> frozenset[str]:
    global _STEMMED
    if _STEMMED is None:
        _STEMMED = frozenset(textmod.stem_words(sorted(STOPWORDS)))
    return _STEMMED
