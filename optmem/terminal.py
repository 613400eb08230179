"""What may reach a terminal: stored text without control characters or escape sequences.

A terminal acts on what it is sent: an escape sequence stored in a record could recolour,
retitle or clear the screen, write a hyperlink over other text, or move the cursor to overwrite
what a person reads. Everything optmem prints for people passes through `printable` first
(`optmem.cli.common.echo`, the search table); JSON output escapes these characters instead
(`optmem.cli.common.dumps`), so a program still reads the stored text exactly.
"""

from __future__ import annotations

import re
import unicodedata

from optmem.patterns import lazy

# ECMA-48: a control string (OSC, DCS, SOS, PM, APC) runs to its terminator (BEL or ST); a control
# sequence (CSI) is parameters, intermediates and a final byte; any other escape sequence is
# intermediates and a final byte; then every C0 control but \t and \n, DEL and every C1 control
# (compiled the first time a text holds a control character: ~0.3 ms most processes never need)
_SEQUENCES_SOURCE = (
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)
_SEQUENCES: re.Pattern[str] | None = None
_CONTROL = lazy(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # (looked for in a text not all printable)


def printable(text: str) -> str:
    """`text` with every escape sequence and control character taken out (\\n and \\t kept);
    text without them comes back unchanged."""
    global _SEQUENCES
    if text.isprintable() or not _CONTROL.search(text):  # (a control character is not printable)
        return text
    if _SEQUENCES is None:
        _SEQUENCES = re.compile(_SEQUENCES_SOURCE)
    return _SEQUENCES.sub("", text)


def width(text: str) -> int:
    """Columns `text` takes on a terminal: a wide or fullwidth character (East Asian width W or
    F: Chinese, Japanese, Korean, fullwidth forms) two, a mark drawn on the one before it (a
    nonspacing or enclosing mark: Mn, Me) or an invisible format character (Cf) none, any other one."""
    if text.isascii():
        return len(text)
    return sum(
        0
        if unicodedata.category(c) in ("Mn", "Me", "Cf")
        else 2
        if unicodedata.east_asian_width(c) in ("W", "F")
        else 1
        for c in text
    )


def pad(text: str, columns: int) -> str:
    """`text` followed by spaces up to `columns` on screen (`width`); as it is when it is wider."""
    return text + " " * max(0, columns - width(text))
