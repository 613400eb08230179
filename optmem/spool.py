"""A spool: the writes a vault could not take yet (locked past the wait, read-only, a vault folder
that is missing — an unmounted disk), kept in order in a JSONL file outside the vault until a
later write succeeds, which stores them first.

One mechanism for every caller that must never lose a write nor hold up its host: the Hermes
provider (`$HERMES_HOME/optmem-spool.jsonl`) and the git hooks (`optmem-spool.jsonl` in the
repository's git folder). What a caller spools is its own entry (a JSON object); `drain` hands
each one back to the caller's `store` in the order they were said. An entry the vault refuses for
what it says (a secret) is reported and dropped; one `store` cannot read (a line that is no JSON
object, an entry without what its caller needs) is reported and moved to `<spool>.rejected`,
kept for a person; one the vault cannot take now stops the drain, and it and every later entry
stay spooled, in order. One process drains a spool at a time, holding its lock; a write that
finds it held appends nothing to the spool but waits in a file of its own beside it
(`<spool>.w<time>-<pid>`), which a drain takes with the rest: no write lands in a file a drain
is rewriting. The spool is rewritten after each entry stored, so a drain killed midway stores at
most the entry it was on again (the log reports an exact repeat as a duplicate).
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
    """Whether a write failed for the vault's state (locked, read-only, missing), not for what it
    says: such a write is spooled and tried again."""
    import sqlite3

    return isinstance(err, (VaultError, OSError, sqlite3.Error))


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
        with fsio.exclusive_lock(_lock(path), PUT_WAIT, within=within):
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
        from datetime import UTC, datetime

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
    try:
        with fsio.exclusive_lock(_lock(path), LOCK_WAIT, within=within):
            return _drain(path, store, within, dropped)
    except OptmemError as err:
        if transient(err):
            return False  # (another process drains it now, or its folder cannot be had now)
        raise


def _waiting(path: Path) -> list[Path]:
    """The writes that waited beside the spool while a drain held it, oldest first."""
    return sorted(path.parent.glob(f"{path.name}.w*")) if path.parent.is_dir() else []


def _drain(
    path: Path,
    store: Callable[[dict[str, Any]], None],
    within: Path | None,
    dropped: Callable[[dict[str, Any], BaseException], None],
) -> bool:
    """`drain`, its lock held."""
    said: list[tuple[str, int, str, Path | None]] = []  # (when said, place, the line, its own file)
    for file in (path, *_waiting(path)):
        raw = (fsio.read_text(file, within=within, limit=SPOOL_BYTES) or "") if file.exists() else ""
        for line in raw.splitlines():
            if line.strip():
                said.append((_when(line), len(said), line, None if file == path else file))
    said.sort(key=lambda x: (x[0], x[1]))  # (a write that waited beside the spool, in its place)
    pending = {place for _, place, _, own in said if own is None}  # (the spool's lines not stored yet)

    def rest() -> list[str]:
        return [line for _, place, line, _ in sorted(said, key=lambda x: x[1]) if place in pending]

    for _, place, line, own in said:
        try:
            entry = json.loads(line)
            if not isinstance(entry, dict):
                raise ValueError(f"a spooled write is a JSON object, not {type(entry).__name__}")
            store(entry)
        except (OptmemError, UnicodeError, OSError) as err:
            if transient(err):
                return False  # (it and what follows stay: the spool as it is, the waiting files)
            dropped(entry, err)
        except Exception as err:  # (what `store` cannot read: kept aside for a person, and said)
            fsio.append_lines(path.with_name(path.name + ".rejected"), [line.encode("utf-8")], within=within)
            dropped({"line": line[:200]}, err)
        if own is None:
            pending.discard(place)
            _keep(path, rest(), within)
        else:
            fsio.remove_file(own)
    return not path.exists() and not _waiting(path)  # (a write that waited meanwhile: the next drain's)


def _keep(path: Path, lines: list[str], within: Path | None) -> None:
    """The spool holds `lines` (none: it is gone)."""
    if lines:
        fsio.atomic_write(path, "".join(line + "\n" for line in lines), within=within)
    elif path.exists():
        fsio.remove_file(path)


def _when(line: str) -> str:
    """When a spooled line was said, for its order ('' first: an older spool's, or one unread)."""
    try:
        entry = json.loads(line)
    except ValueError:
        return ""
    return (said_at(entry) or "") if isinstance(entry, dict) else ""
