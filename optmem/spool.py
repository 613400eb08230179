"""A spool: the writes a vault could not take yet (locked past the wait, read-only, a vault folder
that is missing — an unmounted disk), kept in order in a JSONL file outside the vault until a
later write succeeds, which stores them first.

One mechanism for every caller that must never lose a write nor hold up its host: the Hermes
provider (`$HERMES_HOME/optmem-spool.jsonl`) and the git hooks (`optmem-spool.jsonl` in the
repository's git folder). What a caller spools is its own entry (a JSON object); `drain` hands
each one back to the caller's `store` in the order they were said. An entry the vault refuses for
what it says (a secret) is reported and dropped; a line that cannot be read (not UTF-8, not a
JSON object, without what its caller needs) is reported and moved to `<spool>.rejected`, kept
for a person; one the vault cannot take now stops the drain, and it and every later entry stay
spooled, in order. One process holds a spool at a time (its lock): a write that finds a drain
holding it waits in a file of its own beside it (`<spool>.w<time>-<pid>`), and whoever holds the
lock next moves the waiting files into the spool, in their order, before anything else — so the
spool's lines are always in the order they were said. The spool is rewritten after each entry
stored: a drain killed midway stores again at most the entry it was on (the log reports an exact
repeat as a duplicate).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optmem import fsio
from optmem.errors import OptmemError, VaultError

SPOOL_BYTES = 64 << 20  # read of a spool at most (each entry is one record: ≤ [limits] record_bytes)
LOCK_WAIT = 0.5  # seconds a drain waits for another process draining the same spool
PUT_WAIT = 0.2  # seconds a write waits for the spool's lock (then it waits in a file of its own beside it)


def transient(err: BaseException) -> bool:
    """Whether a write failed for the vault's state (locked, read-only, missing) or its tools' (a
    git that timed out), not for what it says: such a write is spooled and tried again."""
    import subprocess

    from optmem.stdlib import sqlite3

    return isinstance(err, (VaultError, OSError, sqlite3.Error, subprocess.SubprocessError))


def put(path: Path, entry: dict[str, Any], *, within: Path | None = None) -> None:
    """Append `entry` to the spool at `path` (stamped `at`, when it was said, unless it is), under
    the spool's lock; while a drain holds it, the entry waits in a file of its own beside it."""
    import os
    import time

    from optmem import clock
    from optmem.errors import Locked

    entry.setdefault("at", clock.format_ts(clock.now()))  # (as every time in the log)
    line = json.dumps(entry, ensure_ascii=False)
    try:
        with fsio.exclusive_lock(_lock(path), PUT_WAIT, within=within, what=f"the spool {path.name}", setting=False):
            _take_waiting(path, within)  # (they were said before this one)
            fsio.append_lines(path, [line.encode("utf-8")], within=within)
    except Locked:  # (a drain that takes long: never hold up the host behind it)
        waiting = path.with_name(f"{path.name}.w{time.time_ns():020d}-{os.getpid()}")
        fsio.atomic_write(waiting, line + "\n", within=within)


def _lock(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def said_at(entry: dict[str, Any]) -> str | None:
    """When a spooled entry was said, as the log writes times (an older spool holds Unix seconds)."""
    from optmem import clock

    at = entry.get("at")
    if isinstance(at, (int, float)) and not isinstance(at, bool):
        from optmem.stdlib import UTC, datetime

        return clock.format_ts(datetime.fromtimestamp(at, UTC))
    return at if isinstance(at, str) and at else None


def drain(
    path: Path,
    store: Callable[[dict[str, Any]], None],
    *,
    within: Path | None = None,
    dropped: Callable[[dict[str, Any], BaseException], None],
) -> bool:
    """Store what the spool at `path` holds (and the writes waiting beside it), in the order they
    were said, through `store`; whether it is empty now. An entry `store` refuses for what it says
    is handed to `dropped` and not kept; one it cannot read is handed to `dropped` and moved to
    `<spool>.rejected`; one the vault cannot take now (`transient`) stops the drain — it and what
    follows stay. A spool another process drains now, or one that cannot be had now, is left
    (False)."""
    if not path.exists() and not _waiting(path):
        return True
    too_big(path)  # (said, never read as "another process drains it": it stays until a person splits it)
    try:
        with fsio.exclusive_lock(_lock(path), LOCK_WAIT, within=within, what=f"the spool {path.name}", setting=False):
            return _drain(path, store, within, dropped)
    except OptmemError as err:
        if transient(err):
            return False  # (another process drains it now, or its folder cannot be had now)
        raise


def too_big(path: Path) -> None:
    """Refuse (`TooLarge`, naming the file and what to do) a spool larger than a drain reads at
    once (`SPOOL_BYTES`): nothing in it can be stored until it is split — never a silent wait."""
    from optmem.errors import TooLarge

    try:
        size = path.stat().st_size
    except OSError:
        return
    if size > SPOOL_BYTES:
        raise TooLarge(
            f"the spool {path} holds {size / (1 << 20):.0f} MiB, more than optmem reads at once "
            f"({fsio.size_words(SPOOL_BYTES)}): nothing in it is stored, and what comes next waits behind it "
            f"— split it in order: `mv {path} {path}.big && split -l 1000 {path}.big {path}.part-`, then "
            f"move each part back to {path} in turn and store it",
            file=str(path),
        )


def pending(path: Path) -> int:
    """How many entries wait in the spool at `path` and beside it, counted without reading it whole."""
    n = 0
    for file in [path, *_waiting(path)]:
        try:
            with open(file, "rb") as fh:
                last = b"\n"
                while chunk := fh.read(1 << 20):
                    n += chunk.count(b"\n")
                    last = chunk[-1:]
                n += last != b"\n"  # (a last line without its newline)
        except OSError:
            continue
    return n


def _waiting(path: Path) -> list[Path]:
    """The writes that waited beside the spool while a drain held it, oldest first."""
    return sorted(path.parent.glob(f"{path.name}.w*")) if path.parent.is_dir() else []


def _take_waiting(path: Path, within: Path | None) -> None:
    """Move the waiting writes into the spool, in their order (its lock held)."""
    for file in _waiting(path):
        lines = [x for x in (fsio.read_bytes(file, within=within, limit=SPOOL_BYTES) or b"").split(b"\n") if x.strip()]
        if lines:
            fsio.append_lines(path, lines, within=within)
        fsio.remove_file(file)


ROUNDS = 3  # a drain also takes what waited meanwhile, this many times at most


def _drain(
    path: Path,
    store: Callable[[dict[str, Any]], None],
    within: Path | None,
    dropped: Callable[[dict[str, Any], BaseException], None],
) -> bool:
    """`drain`, its lock held."""
    for _ in range(ROUNDS):
        _take_waiting(path, within)
        lines = [x for x in (fsio.read_bytes(path, within=within, limit=SPOOL_BYTES) or b"").split(b"\n") if x.strip()]
        if not lines:
            break
        for i, line in enumerate(lines):
            try:
                entry = json.loads(line.decode("utf-8"))
                if not isinstance(entry, dict):
                    raise ValueError(f"a spooled write is a JSON object, not {type(entry).__name__}")
                store(entry)
            except (OptmemError, OSError, ImportError) as err:
                if transient(err):
                    return False  # (it and what follows stay, in order)
                dropped(entry, err)
            except (ValueError, KeyError, TypeError, AttributeError) as err:  # (not UTF-8 or JSON, a field missing)
                fsio.append_lines(path.with_name(path.name + ".rejected"), [line], within=within)
                dropped({"line": line[:200].decode("utf-8", "replace")}, err)
            except BaseException as err:
                if not transient(err):
                    raise  # (the entry stays spooled: nothing is lost)
                return False
            _keep(path, lines[i + 1 :], within)
    return not path.exists() and not _waiting(path)


def _keep(path: Path, lines: list[bytes], within: Path | None) -> None:
    """The spool holds `lines` (none: it is gone)."""
    if lines:
        with fsio.atomic_stream(path, within=within) as new:
            new.write(b"".join(line + b"\n" for line in lines))
    elif path.exists():
        fsio.remove_file(path)


KNOWN = "git-spools.jsonl"  # in the vault's cache (this machine's paths): the spools of repositories hooked to it


def register(known_file: Path, within: Path, repo: str, path: Path, kind: str = "git") -> None:
    """Remember a spool in `known_file` (the vault's cache: this machine's paths), once, so
    `doctor` can say when entries wait in it (`known`): a hooked repository's (`kind` git, `repo`
    its root) or an agent's (`kind` claude-code, `repo` its project). Best effort: a hook never
    fails for it."""
    entry = {"repo": repo, "spool": str(path)} | ({} if kind == "git" else {"kind": kind})
    line = json.dumps(entry, ensure_ascii=False)
    try:
        held = fsio.read_text(known_file, within=within, limit=1 << 20) or ""
        if line not in held.splitlines():
            fsio.append_lines(known_file, [line.encode("utf-8")], within=within)
    except (OptmemError, OSError):
        pass


def known(known_file: Path, within: Path, kind: str = "git") -> list[tuple[str, Path]]:
    """The spools of `kind` that `known_file` names, each with its repository or project (`register`)."""
    out: dict[str, tuple[str, Path]] = {}
    try:
        held = fsio.read_text(known_file, within=within, limit=1 << 20) or ""
    except OptmemError:
        return []
    for raw in held.splitlines():
        try:
            obj = json.loads(raw)
            if obj.get("kind", "git") == kind:
                out.setdefault(str(obj["spool"]), (str(obj["repo"]), Path(obj["spool"])))
        except (ValueError, KeyError, TypeError):
            continue
    return list(out.values())
