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

        if labels_differ(a, b):
            return 0.0
    return ratio


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
        folded = textmod.cjk_compiled(textmod.FINAL_PARTICLE).sub("", folded)
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
    capitalised = [w for w in textmod.plain_words(text) if w[0].isupper()]
    names = (
        set(textmod.stem_words([textmod.fold(w) for w in capitalised if textmod.fold(w) not in STOPWORDS]))
        if capitalised
        else set()
    )
    return bool(units) and all(u in names for u in units)
