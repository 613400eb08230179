"""The content scanner: invisible characters, prompt-injection phrasing and secrets.

Every write to hot memory or the log is scanned; reads re-scan and print `[BLOCKED: rule]` instead of a flagged field.
`find` names the first rule that fires, `kind_of` says what kind of finding it is: `secret` (refused: the stored
secret is the harm) or `injection`.

The rules are data (`optmem.safety.rules`); a text is read several ways (`optmem.safety.readings`) so that
obfuscation does not hide a rule. Each rule lists the needle words a hit must hold: one pass of an Aho–Corasick
automaton (`pyahocorasick`) over a reading finds every needle in it, and only the rules whose needles are all there
run. The table of languages (`optmem.safety.languages`) weighs the concepts an injection needs where they meet."""

from __future__ import annotations

import functools
import re

from optmem.errors import TooLarge, UnsafeContent
from optmem.safety import chars, readings

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing)
if TYPE_CHECKING:
    from typing import Literal

    import ahocorasick

    from optmem.safety.rules import Rule

    Kind = Literal["secret", "injection"]
VERSION = 26  # bumped whenever findings change: a verdict stored with an older version is re-scanned
DEPTH = 2  # decoding inside decoding (base64 of base64) at most this deep
_PREFIXES = ("base64_", "base32_", "hex_", "escaped_", "rot13_", "reversed_", "joined_", "morse_")


# a quotation: what a note says someone else wrote (straight, curly, angled, corner quotes, backticks)
_QUOTED = (
    r"\"[^\"\n]{3,300}\"|“[^”\n]{3,300}”|„[^“”\"\n]{3,300}[“”\"]|«[^»\n]{3,300}»|「[^」\n]{3,300}」|`[^`\n]{3,300}`"
    r"|(?<!\w)'(?:[^'\n]|(?<=\w)'(?=\w)){3,300}'(?!\w)"
)
_OWN_PROMPT = r"(?is)^(?=.*(?:prompt|提示)).*(?:\b(?:my|our|mon|mi|i|we|draft|(?:mein|unser|nuestr)\w*)\b|我|草稿)"
_SPEECH = _QUOTED.replace(r"|`[^`\n]{3,300}`", "")  # (the table's findings: code in backticks is run, not said)


def find(text: str, *, tool: bool = False, mine: bool = False) -> str | None:
    """The name of the first rule that fires on `text`, or None. `tool`: the text is a tool's or web page's output or an
    import, where an AI spoken to at all and an order alone are findings too (`languages.ORIGIN`); `mine`: the user's
    own words, where the table weighs no act unless they quote someone (`languages.FIRST_HAND`).

    A note that quotes an injection to speak about it (an incident, a test, a detection rule) is not one: when the
    hit lies only inside quotation marks and what the note says around them — a dozen distinct words at least —
    holds none, nothing is found. That holds for phrasing (`rules.SAID`) and the table's findings of words
    (`languages.SAID`); secrets, characters, markup and what an act needs (a URL, a command) count wherever they
    stand, unless the note says it speaks of an attack (a fake mail …)."""
    from optmem.safety import languages, rules

    rule = _find(text, 0, tool, mine and not re.search(_SPEECH, text))  # (mine: nothing quoted from someone else)
    phrasing = rule in rules.SAID
    quotes = _QUOTED if phrasing else _SPEECH
    if phrasing or rule in languages.SAID:
        outside = re.sub(quotes, " … ", text)
        said = (
            len(set(re.findall(r"[^\W\d_\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]{3,}", outside.lower())))
            + len(set(re.findall("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]", outside))) // 2
        )  # (distinct words of three letters or more; two Chinese, Japanese or Korean syllables a word)
        around = {h.concept for h in languages.words(" ".join(outside.casefold().split()))}  # (decode: it uses them)
        reported = not around.isdisjoint({"meta", "reported"})  # (a note about an attack: eight words will do)
        own = (m := re.search(quotes, text)) and re.search(_OWN_PROMPT, text[: m.start()][-120:])  # (four will do)
        spoken_of = phrasing or reported or own or not languages.shaped(" ".join(re.findall(quotes, text)))
        if outside != text and said >= 12 - 4 * reported - 8 * bool(own) and spoken_of and "decode" not in around:
            return None if _find(outside, 0, tool) is None else rule
    return rule


def kind_of(rule: str) -> Kind:
    """What a finding is: `secret` for the secret rules (as written or decoded), else `injection`."""
    from optmem.safety.rules import SECRETS

    return "secret" if re.sub(f"^(?:{'|'.join(_PREFIXES)})+", "", rule) in SECRETS else "injection"


def _find(
    text: str, depth: int, tool: bool = False, mine: bool = False, only: frozenset[str] = frozenset()
) -> str | None:
    from optmem.safety import languages

    if not only and any(not chars.allowed_invisible(text, m.start()) for m in chars.INVISIBLE_CHAR.finditer(text)):
        return "invisible_character"
    found = _Found()
    decomposed, wide = (text, text) if text.isascii() else readings.forms(text)
    for reading in dict.fromkeys((text, wide)):  # keys and passwords in full-width characters read as ASCII too
        if hit := found.first("written", reading, readings.case_blind(reading.lower()), only):
            return hit
    spoken = readings.spoken(text, wide)
    words = languages.words(spoken)  # (the table's words in it, for both of its readings)
    if hit := languages.credential(spoken, wide, text, words):
        return hit
    if only:  # (the secret rules alone: `secret` — decoded too, strings joined make no secret)
        decoded = readings.decoded(text) if depth < DEPTH else []
        return next((f"{e}_{i}" for e, p in decoded if e != "joined" and (i := _find(p, depth + 1, only=only))), None)
    folded = readings.fold(text, decomposed)
    for variant in dict.fromkeys((folded, readings.leet(folded))):  # 1gn0re → ignore
        if hit := found.first("phrases", variant):
            return hit
    named = bool(re.search(r"(?<![A-Za-z0-9_-])(?:AI|LLM)s?(?![A-Za-z0-9_-])", wide))  # (not Italian "ai")
    hit = languages.find(spoken, words, named, tool, mine)  # (an order to decode and act needs something encoded)
    hit = (hit if hit != "hidden_instruction" or readings.decoded(text) else None) or found.first("mixed", folded)
    if not hit and folded.isascii() and (candidates := found.candidates("pinyin", folded)):
        hit = _first(candidates, re.sub("[^a-z]", "", folded))  # pinyin: "hū lüè" and "hulue" read alike
    if hit:
        return hit
    told = any(h.concept == "decode" for h in words)  # (the table's words too, where the text says to decode)
    for encoding, un in readings.CIPHERS:  # ROT13, backwards
        if hit := found.first("phrases", un(folded)) or languages.find(un(spoken) if told else "", None, named, tool):
            return encoding + hit
    joined, spans = readings.collapsed(folded)
    if spans:  # letter-spaced words joined: a hit counts only where it overlaps a joined run
        for rule in found.candidates("phrases", joined):
            for m in re.finditer(rule.bare, joined):
                if any(a < m.end() and m.start() < b for a, b in spans):
                    return rule.name
        spaced, runs = readings.collapsed(wide.casefold())  # (the table's words: word gaps kept, i t  i s → i t is)
        if runs and (hit := languages.find(" ".join(spaced.split()), None, named, tool)):
            return hit
    if depth < DEPTH:
        for encoding, plain in readings.decoded(text):  # (strings joined make no secret: ids side by side)
            if (inner := _find(plain, depth + 1, tool)) and (encoding != "joined" or kind_of(inner) == "injection"):
                return f"{encoding}_{inner}"
    return None


def secret(text: str) -> str | None:
    """The first secret rule that fires on `text`, whatever else fires first (a hidden comment, an invisible character,
    an order): what the gate refuses in a text it would hold, so that no record is held with a live secret in it."""
    from optmem.safety.rules import SECRETS

    return _find(text, 0, only=SECRETS)


class _Found(dict[str, set[str]]):
    """The needle words each distinct reading of one text holds, by one pass of the automaton each."""

    def __missing__(self, lowered: str) -> set[str]:
        self[lowered] = {word for _, word in _index()[0].iter(lowered)}
        return self[lowered]

    def candidates(self, group: str, lowered: str) -> list[Rule]:
        """The rules of `group` each of whose needle groups `lowered` meets, in order."""
        present = self[lowered]
        rules, first = _index()[1][group]
        chosen = sorted({i for word in present & first.keys() for i in first[word]}.union(first.get("", ())))
        return [rules[i] for i in chosen if all(not present.isdisjoint(g) for g in rules[i].needles[1:])]

    def first(self, group: str, text: str, lowered: str = "", only: frozenset[str] = frozenset()) -> str | None:
        """The first rule of `group` (of those `only` names, if any) that matches `text` and its second look takes."""
        return _first([r for r in self.candidates(group, lowered or text) if not only or r.name in only], text)


def _first(rules: list[Rule], text: str) -> str | None:
    for rule in rules:
        for m in rule.finditer(text):
            if rule.accept is None or rule.accept(m):
                return rule.name
    return None


@functools.cache
def _index() -> tuple[ahocorasick.Automaton, dict[str, tuple[tuple[Rule, ...], dict[str, list[int]]]]]:
    """One automaton of every needle word, and for each group of rules the rules each word of a first needle group
    starts ("" starts those without needles, as every text holds it); built on the first scan of a process."""
    import ahocorasick

    from optmem.safety.rules import GROUPS

    groups = {}
    for name, rules in GROUPS.items():
        first: dict[str, list[int]] = {}
        for i, rule in enumerate(rules):
            for word in rule.needles[0] if rule.needles else ("",):
                first.setdefault(word, []).append(i)
        groups[name] = (rules, first)
    automaton = ahocorasick.Automaton()
    for w in {w for rules in GROUPS.values() for rule in rules for group in rule.needles for w in group}:
        automaton.add_word(w, w)
    automaton.make_automaton()
    return automaton, groups


def check(text: str, *, allow_unsafe: bool = False) -> None:
    """Refuse `text` with `unsafe_content` naming the rule, unless `allow_unsafe`."""
    if not allow_unsafe:
        _refuse("the text", find(text))


def check_field(name: str, value: str, *, limit: int, allow_unsafe: bool) -> None:
    """Refuse a field larger than `limit` UTF-8 bytes (`too_large`, always), then one that trips a
    rule (`unsafe_content`, unless `allow_unsafe`); both errors name the field."""
    size = len(value.encode("utf-8"))
    if size > limit:
        what = f"the {name} is {size:,} bytes; it may hold at most {limit:,} — shorten it (nothing was stored)"
        raise TooLarge(what, field=name, bytes=size, limit=limit)
    if not allow_unsafe:
        _refuse(f"the {name}", find(value), field=name)


def _refuse(what: str, rule: str | None, **context: str) -> None:
    if rule:
        advice = "remove that part, or pass --allow-unsafe if it is really meant to be stored"
        raise UnsafeContent(
            f"refused: {what} trips the security rule {rule!r}; {advice}", rule=rule, kind=kind_of(rule), **context
        )


def redact(text: str) -> str:
    """`text`, or `[BLOCKED: rule]` when the scanner flags it (for prompt-bound output)."""
    return f"[BLOCKED: {rule}]" if (rule := find(text)) else text
