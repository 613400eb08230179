"""The write gate's verdict, kept so that a read need not scan again (the read side's cost).

Every line optmem appends has passed the write gate: each string its record carries was scanned
(`log.check_record`), unless `--allow-unsafe` let it through. The digest of such a line is kept
here with the scanner's version (`scanner_version`), in `.cache/scanned.sqlite3`. A surface that
shows a record whose line is found here, under the current version, shows it as stored, without
scanning it again; every other line is scanned on read, as before: a line typed by hand, brought
by sync, written with --allow-unsafe, written under an older scanner, or changed since it was
written (its bytes have another digest). The file is a cache of what the gate found — outside the
index, so a rebuild keeps it; deleting it only costs the reads a scan.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from optmem.text import digest
from optmem.vault import Vault

__all__ = ["clean", "key", "remember", "scanner_version"]

FILE = "scanned.sqlite3"
# the scanner's source files (its tables, readings, rules and engine), in optmem/
SCANNER = tuple(f"safety/{name}.py" for name in ("chars", "languages", "readings", "rules", "scan"))


@functools.cache
def scanner_version() -> str:
    """The scanner's version: a digest of its source files, read without importing it (a read
    whose records all passed the gate never loads the scanner). Any change to them makes every
    stored verdict stale: those lines are scanned on read again."""
    here = Path(__file__).parent
    return digest(b"".join((here / name).read_bytes() for name in SCANNER), 8)


_DDL = "CREATE TABLE IF NOT EXISTS verdict (d TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID"


def key(line: bytes) -> str:
    """What identifies a line's bytes (its newline aside)."""
    return digest(line.rstrip(b"\r\n"), 16)


def remember(vault: Vault, lines: Iterable[bytes], wait: float = 30) -> None:
    """The gate passed these lines (each scanned whole, just now, by this scanner): keep that. A
    failure to keep it is no error — those lines are scanned on read (a read that renews them
    waits `wait` seconds at most for another writer of the store)."""
    version = scanner_version()
    rows = [(key(line), version) for line in lines]
    if not rows:
        return
    try:
        path = vault.cache(FILE)
        if not path.exists():  # private, as the rest of the cache
            from optmem import fsio

            fsio.atomic_write(path, "", within=vault.root)
        conn = sqlite3.connect(path, timeout=wait)
        try:
            conn.execute("PRAGMA synchronous=OFF")  # a cache: a crash costs scans on read
            with conn:
                conn.execute(_DDL)
                conn.executemany("INSERT OR REPLACE INTO verdict VALUES (?, ?)", rows)
        finally:
            conn.close()
    except (sqlite3.Error, OSError):
        pass


def clean(vault: Vault, lines: list[bytes], conn: sqlite3.Connection | None = None) -> set[int]:
    """The positions in `lines` of the lines the gate passed under the current scanner (one
    query for all of them); the others must be scanned on read. With `conn` (an open index's
    connection) the verdicts are read through it, attached once: a warm handle's kept connection
    opens nothing more."""
    path = vault.cache_dir / FILE
    if not lines or not path.exists():
        return set()
    keys = [key(line) for line in lines]
    marks = ", ".join("?" * len(keys))
    try:
        if conn is not None:
            if not any(row[1] == "verdicts" for row in conn.execute("PRAGMA database_list")):
                conn.execute("ATTACH DATABASE ? AS verdicts", (str(path),))
            reader, table, own = conn, "verdicts.verdict", False
        else:
            reader, table, own = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30), "verdict", True
        try:
            query = f"SELECT d FROM {table} WHERE v = ? AND d IN ({marks})"
            found = {d for (d,) in reader.execute(query, [scanner_version(), *keys])}
        finally:
            if own:
                reader.close()
    except sqlite3.Error:
        return set()  # (a store that cannot be read, an attach mid-transaction: scanned on read)
    return {i for i, k in enumerate(keys) if k in found}
