"""A spool: the writes a vault could not take yet (locked past the wait, read-only, a vault folder
that is missing — an unmounted disk), kept in order in a JSONL file outside the vault until a
later write succeeds, which stores them first.

One mechanism for every caller that must never lose a write nor hold up its host: the Hermes
provider (`$HERMES_HOME/optmem-spool.jsonl`) and the git hooks (`optmem-spool.jsonl` in the
repository's git folder). What a caller spools is its own entry (a JSON object); `drain` hands
each one back to the caller's `store` in order. An entry the vault refuses for what it says (a
secret) is reported and dropped; one it cannot take now stops the drain, and it and every later
entry stay spooled, in order. One process drains a spool at a time (the others find it busy and
spool behind it), so an entry is stored once.
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
PUT_WAIT = 2.0  # seconds a write waits for a drain to let it append (then it appends anyway: `drain` keeps it)


def transient(err: BaseException) -> bool:
    """Whether a write failed for the vault's state (locked, read-only, missing), not for what it
    says: such a write is spooled and tried again."""
    import sqlite3

    return isinstance(err, (VaultError, OSError, sqlite3.Error))


def put(path: Path, entry: dict[str, Any], *, within: Path | None = None) -> None:
    """Append `entry` to the spool at `path` (stamped `at`, when it was said, unless it is) —
    under the spool's lock, so a drain that is ending does not remove it unread."""
    from optmem import clock
    from optmem.errors import Locked

    entry.setdefault("at", clock.format_ts(clock.now()))  # (as every time in the log)
    line = [json.dumps(entry, ensure_ascii=False).encode("utf-8")]
    try:
        with fsio.exclusive_lock(_lock(path), PUT_WAIT, within=within):
            fsio.append_lines(path, line, within=within)
    except Locked:  # (a drain that takes long: appended anyway — it keeps what came in meanwhile)
        fsio.append_lines(path, line, within=within)


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
    """Store what the spool at `path` holds, in order, through `store`; whether it is empty now.
    An entry `store` refuses for what it says is handed to `dropped` and not kept; one the vault
    cannot take now (`transient`) stops the drain — it and what follows stay spooled. A spool
    another process drains now, or one that cannot be had now, is left (False). A spool that
    holds a line that is not JSON raises `ValueError` (move it aside to go on)."""
    if not path.exists():
        return True
    try:
        with fsio.exclusive_lock(_lock(path), LOCK_WAIT, within=within):
            raw = fsio.read_text(path, within=within, limit=SPOOL_BYTES) or ""
            entries = [json.loads(line) for line in raw.splitlines() if line.strip()]
            rest = ""
            for i, entry in enumerate(entries):
                try:
                    store(entry)
                except (OptmemError, UnicodeError, OSError) as err:
                    if transient(err):
                        rest = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries[i:])
                        break
                    dropped(entry, err)
            # what a write appended meanwhile (one that could not wait for the lock) stays, after the rest
            now = fsio.read_text(path, within=within, limit=SPOOL_BYTES) or ""
            rest += now[len(raw) :] if now.startswith(raw) else now
            if rest.strip():
                fsio.atomic_write(path, rest, within=within)
            else:
                fsio.remove_file(path)
            return not rest.strip()
    except OptmemError as err:
        if transient(err):
            return False  # (another process drains it now, or its folder cannot be had now)
        raise
