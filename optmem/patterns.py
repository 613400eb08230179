"""optmem's own regular expressions, compiled once per installation instead of once per process.

Python compiles a pattern in two steps: parsing and optimising it into a program (pure Python,
0.1–1.7 ms a pattern here: a search compiled 40–70 of them, 5–15 ms of its CPU), then loading
that program into the C matcher (microseconds). `compile` keeps the programs of the patterns it
compiled in a file beside the package's bytecode — `optmem/__pycache__/`, as Python keeps its
`.pyc` files, and only where Python writes those — so that the next process loads them and skips
the first step. A kept program is used only when it was made by this very Python (its version
and the matcher's), and a program is kept only when loading it gives back, instruction for
instruction, the pattern `re.compile` makes: a pattern compiled here behaves exactly as
`re.compile`'s. Anything unexpected (no file, a damaged one, a folder that cannot be written, a
Python whose compiler differs) falls back to `re.compile`.

Only patterns the code defines come here — never one built from stored text or a query (the file
lies outside any vault).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, cast

__all__ = ["compile"]

FORMAT = 1
_MAX = 600  # programs kept at most (optmem's own patterns number a few hundred)

# source, flags → (the flags re gives the pattern, its program — 4-byte words —, groups, group
# index, index group)
Entry = tuple[int, bytes, int, dict[str, int], tuple[str | None, ...]]
_kept: dict[tuple[str, int], Entry] | None = None  # read from the file on the first compile
_new: dict[tuple[str, int], re.Pattern[str]] = {}  # compiled by this process, to keep at its exit
_loaded: dict[tuple[str, int], re.Pattern[str]] = {}  # every pattern this process asked for


def compile(source: str, flags: int = 0) -> re.Pattern[str]:  # noqa: A001 - re.compile's name
    """`re.compile(source, flags)`, with the program kept between processes (see the module)."""
    key = (source, int(flags))  # (a re.RegexFlag is kept as the number it is)
    pattern = _loaded.get(key)
    if pattern is not None:
        return pattern
    kept = _kept if _kept is not None else _read()
    entry = kept.get(key)
    if entry is not None:
        try:
            import _sre

            final, code, groups, groupindex, indexgroup = entry
            program = memoryview(code).cast("I").tolist()  # (kept as bytes: a list of ints loads slowly)
            made: re.Pattern[str] = _sre.compile(source, final, program, groups, groupindex, indexgroup)
            _loaded[key] = made
            return made
        except Exception:  # noqa: BLE001 - a program this Python does not take: compile it anew
            kept.pop(key, None)
    pattern = _loaded[key] = re.compile(source, flags)
    if not _new and _writable():
        import atexit

        atexit.register(save)
    _new[key] = pattern
    return pattern


FILE: str | None = None  # where the programs are kept, when not beside the bytecode (a test's folder)


def path() -> str:
    """The file of kept programs: beside optmem's bytecode, one per Python version."""
    name = f"patterns.{sys.implementation.cache_tag}.bin"
    return FILE or os.path.join(os.path.dirname(__file__), "__pycache__", name)


def _stamp() -> tuple[object, ...]:
    """What the kept programs must have been made by: this file format, this exact Python, its
    matcher's version and code size."""
    import _sre

    return (FORMAT, sys.version, getattr(_sre, "MAGIC", None), getattr(_sre, "CODESIZE", None))


def _read() -> dict[tuple[str, int], Entry]:
    global _kept
    _kept = {}
    try:
        import marshal

        with open(path(), "rb") as fh:
            stamp, entries = marshal.load(fh)
        if stamp == _stamp():
            _kept = entries
    except Exception:  # noqa: BLE001 - no file, a damaged one, another Python's: nothing kept
        pass
    return _kept


def _writable() -> bool:
    """Programs are kept where Python keeps bytecode (not with PYTHONDONTWRITEBYTECODE), by the
    Python whose compiler this module knows (3.11's `re._compiler`, 4-byte words)."""
    import _sre

    return not sys.dont_write_bytecode and sys.version_info[:2] == (3, 11) and _sre.CODESIZE == 4


def _entry(source: str, flags: int, pattern: re.Pattern[str]) -> Entry | None:
    """The program of a compiled pattern, made again by re's own two steps (`re._compiler.compile`),
    or None when loading it does not give back the very same pattern."""
    try:
        import _sre
        from re import _compiler, _parser  # type: ignore[attr-defined]

        parsed = _parser.parse(source, flags)
        code = [int(c) for c in _compiler._code(parsed, flags)]  # (its opcodes are named ints)
        from array import array

        words = array("I", code)
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, i in groupindex.items():
            indexgroup[i] = name
        final = int(flags | parsed.state.flags)
        again = _sre.compile(source, final, code, parsed.state.groups - 1, groupindex, tuple(indexgroup))
        entry: Entry = (final, words.tobytes(), parsed.state.groups - 1, groupindex, tuple(indexgroup))
        if again == pattern and again.groupindex == pattern.groupindex and again.groups == pattern.groups:
            return entry
    except Exception:  # noqa: BLE001 - a compiler of another shape: keep nothing
        pass
    return None


def save() -> None:
    """Keep the programs of the patterns this process compiled (at its exit): merged with what
    the file holds now (another process may have written it meanwhile), written whole and
    atomically. A failure keeps nothing — the next process compiles them again."""
    if not _new or not _writable():
        return
    try:
        import marshal
        from pathlib import Path

        from optmem import fsio

        fresh: dict[tuple[str, int], Entry] = {}
        for (source, flags), pattern in _new.items():
            entry = _entry(source, flags, pattern)
            if entry is not None:
                fresh[source, flags] = entry
        if not fresh:
            return
        global _kept
        _kept = None
        merged = {**_read(), **fresh}
        if len(merged) > _MAX:  # the newest kept: a changed pattern leaves its old program behind
            merged = dict(list(merged.items())[-_MAX:])
        target = Path(path())
        target.parent.mkdir(exist_ok=True)
        with fsio.atomic_stream(target, mode=0o644) as fh:
            fh.write(marshal.dumps(cast(Any, (_stamp(), merged))))
        _new.clear()
    except Exception:  # noqa: BLE001 - a cache: a folder that cannot be written keeps nothing
        pass
