"""The one grammar of project, domain and kind names (SPEC §2), for every module that reads a
name: `vault.validate_name` refuses a name outside it, a hand-typed line's `[domain]` prefix
and an `import:<tool>` origin follow it."""

from __future__ import annotations

from optmem.patterns import lazy

ASCII_NAME = lazy(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
NAME_MAX = 64
# a name is a folder name, and a file system allows 255 bytes: 64 characters outside the Basic
# Multilingual Plane (U+20000 …) are 256. 200 bytes leaves room for what optmem adds to a name.
NAME_BYTES = 200
# letters and marks Unicode draws as nothing (variation selectors, the grapheme joiner, Hangul
# fillers, Mongolian and Khmer free variation signs): "前端" and "前端" + U+FE0F would read as one
# name and be two folders
INVISIBLE = lazy("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef]")


def too_long(name: str) -> bool:
    """Whether `name` is over `NAME_BYTES` in UTF-8."""
    return len(name.encode("utf-8", "surrogatepass")) > NAME_BYTES


class _NameGrammar:
    """The grammar of project, domain and kind names (SPEC §2): 1-64 characters and at most
    `NAME_BYTES` bytes in UTF-8 (a folder name's limit), the first a
    letter or digit of any script, the rest letters, digits, combining marks (Devanagari's vowel
    signs, an accent written apart), '.', '_' or '-'; in Unicode's composed form (NFC), so that
    "café" typed on one machine and read from a folder name on another is one name. Nothing that
    could make a path (a '/', a '..', a space, a control or a direction mark) is a name. An ASCII
    name is checked by the old pattern alone (every name valid before stays valid).
    `fullmatch(s)` answers as a compiled pattern would: the name, or None."""

    @staticmethod
    def fullmatch(name: str) -> str | None:
        if ASCII_NAME.fullmatch(name):
            return name
        if not name or len(name) > NAME_MAX or name.isascii() or too_long(name):
            return None
        import unicodedata

        if unicodedata.category(name[0])[0] not in "LN" or unicodedata.normalize("NFC", name) != name:
            return None
        for ch in name[1:]:
            if ch not in "._-" and (unicodedata.category(ch)[0] not in "LNM" or INVISIBLE.match(ch)):
                return None
        return name


NAME_RE = _NameGrammar()
