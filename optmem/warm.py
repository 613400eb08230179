"""A warm handle on one vault, for a process that answers many calls: the MCP server (stdio and
the HTTP hub) and the Hermes provider.

A command run as its own process opens the search index, reads the settings and checks the log
once, and exits. A server that did the same for every call would pay it every call. `Warm`
keeps, between calls:

* open connections to the search index (a small pool: one per call running at once, so reads
  run side by side; SQLite's page cache stays warm in each);
* the settings read from optmem.toml;
* what a search asks the index again and again: how many records hold a term (counted over the
  term's whole list of records: milliseconds for a common word at 1M records), the records read
  back from the log and parsed (`Index.record`), and their tokens (`Index.tokens_of`).

Nothing is trusted for longer than it is true. Each call gets a `Vault` of its own (`vault()`:
its own lock, its own warnings), and every time it opens the index (`index.open_index`) a kept
connection is checked exactly as a new one would be (`index.usable`: the log files as the index
last read them, ACCESS.jsonl applied, the settings the view depends on) — so a record another
process appended is indexed and found by the next read; when the check fails the index is opened
the usual way (caught up, or rebuilt). Term counts are kept for one state of the index (its
file, and the log lines it has read); parsed records for one index file (the log only grows:
a record's bytes never change while its index file stands; a rewritten log is a rebuilt index,
a new file). The settings are kept while optmem.toml holds the same text, read again each call.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

from optmem import fsio
from optmem.index import Index, Row, usable
from optmem.ingest import read_meta
from optmem.record import Record
from optmem.settings import FILE_BYTES, Settings
from optmem.stdlib import sqlite3
from optmem.vault import Vault

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing)
if TYPE_CHECKING:
    from typing import Any

POOL = 8  # idle connections kept at most (a server's calls at once rarely pass it; more are closed)
RECORDS = 20_000  # records (and tokens) kept at most (~60 MB); past it the oldest half goes
TERMS = 20_000  # term counts kept at most, for one state of the index


class Warm:
    """One vault's warm state, shared by the calls of a long-lived process (thread-safe)."""

    def __init__(self, root: Path | str, overrides: list[str] | None = None, *, pool: int = POOL) -> None:
        self.root = Path(root)
        self.overrides = list(overrides or [])
        self.pool = pool
        self._guard = threading.Lock()  # the idle list, the file they read and the caches of it
        self._idle: list[sqlite3.Connection] = []
        self._file: tuple[int, int] | None = None  # (device, inode) of the index file the idle ones read
        self._settings: tuple[str | None, Settings] | None = None  # (optmem.toml's text, what it says)
        # (segment, offset, length, line) → the record (`Index.record`), its tokens (`Index.tokens_of`)
        self.records: dict[tuple[int, int, int, int], Record] = {}
        self.tokens: dict[tuple[int, int, int, int], list[str]] = {}
        self.terms: dict[str, int] = {}  # term → records holding it, at `self._state`
        self._state: tuple[str | None, str | None] = (None, None)  # the index's meta: lines read, docs
        # a server laid the vault out when it started (`mcpserve.server`): from then on its calls
        # find it there, or are refused — never make a new one in its place (`common.get_vault`)
        self.laid_out = False

    def vault(self) -> Vault:
        """A Vault for one call: its own lock and warnings, the settings and index of this handle."""
        vault = Vault(self.root, self.overrides)
        vault.warm = self
        return vault

    # -- settings --------------------------------------------------------------------------------
    def settings(self, vault: Vault) -> Settings:
        """The vault's settings: the kept ones while optmem.toml holds the same text (read again
        each time: an edit is seen by the next call), else read from it as a cold process does."""
        text = fsio.read_text(self.root / "optmem.toml", within=self.root, limit=FILE_BYTES)
        kept = self._settings
        if kept is not None and kept[0] == text:
            return kept[1]
        loaded = vault.settings_from(text)  # an invalid file raises, here and on every later call
        self._settings = (text, loaded)
        return loaded

    # -- the index -------------------------------------------------------------------------------
    def take(self, vault: Vault) -> Index | None:
        """A kept connection to the index in place, in step with the log (`index.usable`), as an
        index of `vault`; or None (then the caller opens one the usual way, and `Index.close`
        gives it back: `give`)."""
        here = _identity(vault.index_path)
        with self._guard:
            if here != self._file:
                self._switch(here)
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            return None
        try:
            if usable(vault, conn):
                return _Kept(vault, conn, self, here)
        except sqlite3.Error:
            pass
        conn.close()
        return None

    def give(self, conn: sqlite3.Connection, vault: Vault) -> None:
        """Take back a connection a call is done with (`Index.close`): kept when nothing is left
        open on it, it reads the index file in place and the pool has room; else closed."""
        here = _identity(vault.index_path)
        try:  # (not a build's temporary file, nor a copy of the log in memory)
            file = conn.execute("PRAGMA database_list").fetchone()[2]
            reads = bool(file) and _identity(Path(file)) == here
        except sqlite3.Error:
            reads = False
        with self._guard:
            if reads and not conn.in_transaction and len(self._idle) < self.pool:
                if here != self._file:
                    self._switch(here)
                self._idle.append(conn)
                return
        conn.close()

    def _switch(self, file: tuple[int, int] | None) -> None:
        """Another index file is in place (rebuilt, or gone): what was kept of the old one goes."""
        for conn in self._idle:
            conn.close()
        self._idle.clear()
        self.records.clear()
        self.tokens.clear()
        self.terms.clear()
        self._file = file

    def close(self) -> None:
        """Close every kept connection (the process is done with the vault)."""
        with self._guard:
            self._switch(None)

    def __enter__(self) -> Warm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Kept(Index):
    """An index opened on a warm handle's kept connection: term counts and parsed records come
    from the handle when it has them (see the module's doc for how long they hold)."""

    def __init__(self, vault: Vault, conn: sqlite3.Connection, warm: Warm, file: tuple[int, int] | None) -> None:
        super().__init__(vault, conn)
        self.warm, self.file = warm, file  # (the index file the handle's caches were of at `take`)

    def doc_freq(self, terms: list[str]) -> dict[str, int]:
        meta = read_meta(self.conn)
        state = (meta.get("lines"), meta.get("docs"))
        warm = self.warm
        with warm._guard:
            if warm._file != self.file:  # another file came in place meanwhile: count afresh
                return super().doc_freq(terms)
            if state != warm._state:
                warm.terms.clear()
                warm._state = state
            known = {t: warm.terms[t] for t in terms if t in warm.terms}
        missing = [t for t in dict.fromkeys(terms) if t not in known]
        if missing:
            counted = super().doc_freq(missing)
            with warm._guard:
                if warm._state == state and warm._file == self.file:
                    if len(warm.terms) + len(counted) > TERMS:
                        warm.terms.clear()
                    warm.terms.update(counted)
            known.update(counted)
        return {t: known[t] for t in terms}

    def tokens_of(self, rows: Iterable[Row]) -> dict[int, list[str]]:
        warm, asked = self.warm, list(rows)
        with warm._guard:  # (a switch to another file clears and refills it meanwhile)
            if warm._file == self.file:
                for row in asked:
                    kept = warm.tokens.get((row.seg, row.off, row.len, row.n))
                    if kept is not None:
                        self._tokens[row.n] = kept
        missing = [row for row in asked if row.n not in self._tokens]
        got = super().tokens_of(missing)
        if missing:
            self._keep(warm.tokens, {(r.seg, r.off, r.len, r.n): got[r.n] for r in missing})
        return got

    def record(self, row: Row) -> Record:
        key = (row.seg, row.off, row.len, row.n)
        with self.warm._guard:
            kept = self.warm.records.get(key) if self.warm._file == self.file else None
        if kept is not None:
            return kept
        got = super().record(row)
        self._keep(self.warm.records, {key: got})
        return got

    def _keep(self, into: dict[tuple[int, int, int, int], Any], new: dict[tuple[int, int, int, int], Any]) -> None:
        """Keep what this call read in the handle (while it reads the same file), the oldest half
        dropped past `RECORDS`."""
        with self.warm._guard:
            if self.warm._file == self.file:
                if len(into) + len(new) > RECORDS:
                    for old in list(into)[: RECORDS // 2]:
                        del into[old]
                into.update(new)


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of a file, None when it is not there: a rebuilt index is a new file."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
