"""`lazy`: a regular expression compiled the first time it is used, not when its module loads.

Compiling a pattern runs Python's regular-expression parser and compiler: ~0.3M instructions for
a short one (an id's shape, a file name's), millions for an alternation of words — in every
process that imports the module, whether or not it uses the pattern. A search imports a dozen
modules whose validation patterns (names, ids, temporary files, durations …) it never runs:
~6M instructions, ~4 % of a search that matches nothing.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing)
if TYPE_CHECKING:
    from typing import AnyStr

# what a compiled pattern offers that optmem calls
_METHODS = ("match", "fullmatch", "search", "sub", "subn", "findall", "finditer", "split")


class _Lazy:
    """Stands for `re.compile(pattern, flags)`: the first use compiles it and keeps its methods
    as this object's own attributes, so later calls go straight to the compiled pattern (two
    threads using it first at once both compile it; either result serves)."""

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags

    def __getattr__(self, name: str) -> object:  # (only for names not set yet: the first use)
        compiled = re.compile(self.pattern, self.flags)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r})"


def lazy(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, compiled when first used."""
    return _Lazy(pattern, flags)  # type: ignore[return-value]  # (it answers as one)
