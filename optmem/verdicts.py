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
import os
import time
from collections.abc import Iterable
from pathlib import Path

from optmem.stdlib import sqlite3
from optmem.text import digest
from optmem.vault import Vault

__all__ = ["clean", "key", "remember", "scanner_version"]

FILE = "scanned.sqlite3"
# the scanner's source files (its tables, readings, rules and engine), in optmem/
SCANNER = tuple(f"safety/{name}.py" for name in ("chars", "languages", "readings", "rules", "scan"))


def scanner_version() -> str:
    """The scanner's version: a digest of its source files, read without importing it (a read
    whose records all passed the gate never loads the scanner). Any change to them makes every
    stored verdict stale: those lines are scanned on read again."""
    return _files_version()


@functools.cache
def _files_version() -> str:
    here = Path(__file__).parent
    return digest(b"".join((here / name).read_bytes() for name in SCANNER), 8)


def signature(here: str = os.path.dirname(__file__)) -> str:
    """What the file system says of the scanner's files (in `here`) — each one's inode, size and
    modification and change times (ns): a file written anew, edited or replaced has another. The
    store keeps the version (`scanner_version`) read for each signature, so a read asks it by five
    `stat`s instead of reading and hashing the files (163 KB) in every process that shows a hit."""
    files = [os.stat(os.path.join(here, name)) for name in SCANNER]
    return " ".join(f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}" for st in files)


def settled(here: str = os.path.dirname(__file__)) -> bool:
    """Whether no scanner file changed in the last two seconds: only then is a version kept under
    their signature. A change stamps the file's change time with the clock's tick (milliseconds),
    so a file written twice within one tick could keep its signature — not two seconds apart."""
    newest = max(os.stat(os.path.join(here, name)).st_ctime_ns for name in SCANNER)
    return time.time_ns() - newest > 2_000_000_000


_DDL = "CREATE TABLE IF NOT EXISTS verdict (d TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID"
_VERSIONS = "CREATE TABLE IF NOT EXISTS scanner (sig TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID"


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
    opens nothing more. The scanner's version is read by its files' `signature` when the store
    knows it; else it is computed, and kept for the next read (when no transaction of `conn`
    holds the store)."""
    path = vault.cache_dir / FILE
    if not lines or not path.exists():
        return set()
    keys = [key(line) for line in lines]
    marks = ", ".join("?" * len(keys))
    try:
        if conn is not None:
            if not any(row[1] == "verdicts" for row in conn.execute("PRAGMA database_list")):
                conn.execute("ATTACH DATABASE ? AS verdicts", (str(path),))
            reader, schema, own = conn, "verdicts.", False
        else:
            reader, schema, own = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30), "", True
        try:
            sig = signature()
            try:
                known = reader.execute(f"SELECT v FROM {schema}scanner WHERE sig = ?", (sig,)).fetchone()
            except sqlite3.OperationalError:  # (a store an earlier optmem made: no such table yet)
                known = None
            version = known[0] if known else scanner_version()
            query = f"SELECT d FROM {schema}verdict WHERE v = ? AND d IN ({marks})"
            found = {d for (d,) in reader.execute(query, [version, *keys])}
        finally:
            if own:
                reader.close()
    except sqlite3.Error:
        return set()  # (a store that cannot be read, an attach mid-transaction: scanned on read)
    if not known and (conn is None or not conn.in_transaction):
        _keep_version(path, sig)
    return {i for i, k in enumerate(keys) if k in found}


def _keep_version(path: Path, sig: str) -> None:
    """Keep the version of the scanner's files under their signature (computed from the files
    themselves, once they are `settled`); a store that is busy keeps nothing: the next read
    computes it again."""
    if not settled():
        return
    try:
        conn = sqlite3.connect(path, timeout=0.5)
        try:
            with conn:
                conn.execute(_VERSIONS)
                conn.execute("INSERT OR REPLACE INTO scanner VALUES (?, ?)", (sig, _files_version()))
        finally:
            conn.close()
    except sqlite3.Error:
        pass
