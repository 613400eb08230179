"""The derived index: SQLite with FTS5, kept in the vault's ignored `.cache/` folder.

It holds, per log line, where the record is in `LOG.jsonl`, the fields that filter and rank, the
text's tokens (FTS5, contentless: the text itself is read back from the log by offset), and the
effective view — which records are superseded (by a correction or a newer same-key record),
forgotten, retired or restated — maintained incrementally as lines are indexed.

Files are the truth: the index is rebuilt from the log whenever it is missing, corrupt, from
another schema, or the log changed other than by appending (hand edit, git merge, purge). A
quick check (size, inode, mtime, plus sampled windows of the already-indexed bytes) tells an
append from a rewrite without reading the whole log.
"""


import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO, NamedTuple

from optmem import fsio
from optmem.ingest import (SCHEMA, LogState, NeedsRebuild, Progress, appended_only, consume, link,
                           matching_ids, read_meta)
from optmem.record import Record, parse_line
from optmem.vault import Vault


_DDL = """
CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT);
CREATE TABLE rec(
  n INTEGER PRIMARY KEY,      -- 1-based line number in LOG.jsonl
  id TEXT NOT NULL,
  rid TEXT NOT NULL,          -- id reversed, for suffix look-ups
  off INTEGER NOT NULL,
  len INTEGER NOT NULL,
  ts REAL,
  domain TEXT NOT NULL,
  project TEXT,
  kind TEXT NOT NULL,
  tier INTEGER NOT NULL,
  key TEXT,
  fp TEXT,
  expires REAL,
  ref TEXT,
  corrects TEXT,
  sup TEXT,                   -- superseded by this correction's id
  ksup TEXT,                  -- superseded by this newer same-key record's id
  retired INTEGER NOT NULL DEFAULT 0,   -- hot-memory entry that was removed or replaced
  forgotten INTEGER NOT NULL DEFAULT 0,
  seen REAL                   -- latest restatement (write-gate duplicate)
);
CREATE TABLE tag(tag TEXT NOT NULL, n INTEGER NOT NULL);
CREATE TABLE pend(ref TEXT NOT NULL, src INTEGER NOT NULL, what TEXT NOT NULL);
CREATE TABLE bad(n INTEGER PRIMARY KEY, code TEXT NOT NULL, message TEXT NOT NULL);
CREATE VIRTUAL TABLE fts USING fts5(body, content='', tokenize='unicode61 remove_diacritics 0');
-- the redlines again, so "every matching redline" costs nothing however large the log grows
CREATE VIRTUAL TABLE fts_red USING fts5(body, content='', tokenize='unicode61 remove_diacritics 0');
"""
_POST_DDL = """
CREATE INDEX rec_id ON rec(id);
CREATE INDEX rec_rid ON rec(rid);
CREATE INDEX rec_fp ON rec(fp);
CREATE INDEX rec_key ON rec(key, domain, project) WHERE key IS NOT NULL;
CREATE INDEX rec_tier ON rec(tier) WHERE tier = 3;
CREATE INDEX tag_tag ON tag(tag, n);
CREATE INDEX pend_ref ON pend(ref);
"""
ROW_COLUMNS = ("n", "id", "off", "len", "ts", "domain", "project", "kind", "tier", "key", "fp",
               "expires", "ref", "corrects", "sup", "ksup", "retired", "forgotten", "seen")
ROW_SELECT = ", ".join(f"r.{c}" for c in ROW_COLUMNS)


class Row(NamedTuple):
    """What the index knows of one record, without its text."""

    n: int
    id: str
    off: int
    len: int
    ts: float | None
    domain: str
    project: str | None
    kind: str
    tier: int
    key: str | None
    fp: str | None
    expires: float | None
    ref: str | None
    corrects: str | None
    sup: str | None
    ksup: str | None
    retired: int
    forgotten: int
    seen: float | None

    @property
    def superseded_by(self) -> str | None:
        return self.sup or self.ksup

    def status(self, now: float) -> str:
        """current | superseded | expired | forgotten — the effective view of this record."""
        if self.forgotten:
            return "forgotten"
        if self.sup or self.ksup or self.retired:
            return "superseded"
        if self.expires is not None and self.expires <= now:
            return "expired"
        return "current"

    @property
    def recency(self) -> float | None:
        """When the record was last said: its time, or a later restatement's."""
        if self.seen is not None and (self.ts is None or self.seen > self.ts):
            return self.seen
        return self.ts


def match_any(terms: list[str]) -> str:
    """An FTS5 query matching records that hold any of `terms` (each quoted: taken literally)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def match_all(terms: list[str]) -> str:
    """An FTS5 query matching records that hold every one of `terms`."""
    return " AND ".join('"' + t.replace('"', '""') + '"' for t in terms)


class Index:
    """An open, up-to-date index of one vault. Use `open_index`."""

    def __init__(self, vault: Vault, conn: sqlite3.Connection) -> None:
        self.vault = vault
        self.conn = conn
        self._fh: BinaryIO | None = None
        self._vocab = False

    # -- reading ---------------------------------------------------------------------------
    def rows(self, where: str, params: Iterable[object] = ()) -> list[Row]:
        sql = f"SELECT {ROW_SELECT} FROM rec r WHERE {where}"
        return [Row(*t) for t in self.conn.execute(sql, tuple(params))]

    def rows_in(self, ns: list[int]) -> list[Row]:
        """The rows with these line numbers (any order)."""
        out: list[Row] = []
        for i in range(0, len(ns), 500):
            chunk = ns[i : i + 500]
            out += self.rows(f"r.n IN ({','.join('?' * len(chunk))})", chunk)
        return out

    def row(self, n: int) -> Row | None:
        found = self.rows("r.n = ?", (n,))
        return found[0] if found else None

    def by_id(self, rid: str) -> Row | None:
        found = self.rows("r.id = ? ORDER BY r.n LIMIT 1", (rid,))
        return found[0] if found else None

    def resolve(self, ref: str) -> list[Row]:
        """Rows whose id equals `ref`, else starts or ends with it (≥ 6 chars); case-insensitive."""
        return self.rows_in(list(matching_ids(self.conn, ref, 50).values()))

    def record(self, row: Row) -> Record:
        """The full record of a row, read from LOG.jsonl at its offset."""
        if self._fh is None:
            self._fh = open(self.vault.log_path, "rb")
        self._fh.seek(row.off)
        return parse_line(self._fh.read(row.len), row.n)

    def doc_freq(self, terms: list[str]) -> dict[str, int]:
        """How many records hold each term (0 when none)."""
        if not self._vocab:
            self.conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, fts, row)")
            self._vocab = True
        out = {}
        for term in terms:
            hit = self.conn.execute("SELECT doc FROM temp.vocab WHERE term = ?", (term,)).fetchone()
            out[term] = hit[0] if hit else 0
        return out

    def totals(self) -> tuple[int, float]:
        """(documents in the text index, their average length in tokens) — for BM25."""
        meta = read_meta(self.conn)
        docs = int(meta.get("docs", "0"))
        return docs, (int(meta.get("tokens", "0")) / docs if docs else 1.0)

    def bad_lines(self) -> list[tuple[int, str, str]]:
        return list(self.conn.execute("SELECT n, code, message FROM bad ORDER BY n"))

    def warnings(self) -> list[str]:
        """What a reader should be told about the log: lines it had to skip."""
        bad = [n for n, _, _ in self.conn.execute("SELECT n, code, message FROM bad ORDER BY n LIMIT 6")]
        if not bad:
            return []
        total = self.conn.execute("SELECT count(*) FROM bad").fetchone()[0]
        shown = ", ".join(map(str, bad[:5])) + (", …" if total > 5 else "")
        return [f"LOG.jsonl: skipped {total} unparseable line(s) (line {shown}); they stay in the "
                "file — run `optmem doctor` to see them"]

    def count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM rec").fetchone()[0]

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self.conn.close()

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- keeping up with the log -------------------------------------------------------------
    def sync(self, progress: Progress | None = None) -> None:
        """Catch up with lines appended since the last sync (the caller holds the vault lock)."""
        state = LogState.read(self.vault.log_path)
        meta = read_meta(self.conn)
        if state.same_as(meta):
            return
        if not appended_only(self.vault.log_path, state, meta):
            raise NeedsRebuild()
        consume(self.conn, self.vault.log_path, state, meta, progress)


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    conn.isolation_level = ""  # `with conn:` opens and commits transactions
    conn.execute("PRAGMA synchronous=OFF")  # derived data: a crash only costs a rebuild
    conn.execute("PRAGMA temp_store=MEMORY")
    return conn


def in_step(vault: Vault) -> bool:
    """Whether the index exists and already reflects the log (nothing to catch up)."""
    conn = _fresh(vault)
    if conn is None:
        return False
    conn.close()
    return True


def _fresh(vault: Vault) -> sqlite3.Connection | None:
    """The index connection when it is usable and already in step with the log, else None."""
    path = vault.index_path
    if not path.exists():
        return None
    try:
        conn = _connect(path)
        if LogState.read(vault.log_path).same_as(read_meta(conn)):
            return conn
        conn.close()
    except sqlite3.DatabaseError:
        pass
    return None


PARALLEL_MIN_BYTES = 1 << 20  # below this a worker pool costs more than it saves


def build(vault: Vault, progress: Progress | None = None, *,
          parallel_min_bytes: int = PARALLEL_MIN_BYTES) -> None:
    """Build the index from scratch and move it into place (the caller holds the vault lock).

    Readers keep the old file until the rename.
    """
    fsio.move(_build_file(vault, progress, parallel_min_bytes), vault.index_path, mode=fsio.FILE_MODE)


def _build_file(vault: Vault, progress: Progress | None = None,
                parallel_min_bytes: int = PARALLEL_MIN_BYTES) -> Path:
    """A complete index of the log as it is now, in a temporary file of this process; returns it.

    Needs no lock: it reads a snapshot (the log only grows, or the result is caught up or
    redone under the lock). A big log is parsed and tokenised by worker processes (one per
    core) while this one inserts.
    """
    fsio.ensure_dir(vault.cache_dir)
    tmp = vault.cache_dir / f"index.{os.getpid()}.tmp"
    fsio.remove_file(tmp)
    conn = _connect(tmp)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.executescript(_DDL)
        state = LogState.read(vault.log_path)
        deferred: list[Record] = []
        workers = max(2, os.cpu_count() or 1) if state.size >= parallel_min_bytes else 0
        consume(conn, vault.log_path, state, {"schema": SCHEMA}, progress, deferred, workers)
        conn.executescript(_POST_DDL)
        with conn:
            link(conn, deferred, None)
        conn.execute("INSERT INTO fts(fts) VALUES ('optimize')")
        conn.commit()
    finally:
        conn.close()
    return tmp


def open_index(vault: Vault, progress: Progress | None = None, *, rebuild: bool = False) -> Index:
    """An index in step with the log: caught up incrementally, or rebuilt when it must be.

    Takes the vault lock only when there is work to do (re-entrant for a caller that holds it).
    A log that cannot be read stops with `unreadable` (exit 3).
    """
    try:
        return _open_index(vault, progress, rebuild)
    except OSError as exc:
        from optmem.errors import Unreadable

        raise Unreadable(f"cannot read {vault.log_path}: {exc.strerror or exc}; nothing was "
                         "changed", file=str(vault.log_path)) from exc


BUILD_WAIT = 900.0  # seconds a process waits for another one's rebuild (1M records: ~25 s)


def _caught_up(vault: Vault, progress: Progress | None) -> Index | None:
    """The index brought in step under the vault lock, or None when only a rebuild will do."""
    with vault.lock():
        if not vault.index_path.exists():
            return None
        try:
            idx = Index(vault, _connect(vault.index_path))
        except sqlite3.DatabaseError:
            return None
        try:
            idx.sync(progress)  # returns at once when nothing changed since
            return idx
        except (NeedsRebuild, sqlite3.DatabaseError):
            idx.close()
    return None


def _open_index(vault: Vault, progress: Progress | None, rebuild: bool) -> Index:
    vault.require()
    if not rebuild:
        conn = _fresh(vault)
        if conn is not None:
            return Index(vault, conn)
        idx = _caught_up(vault, progress)
        if idx is not None:
            return idx
    if vault.locked:  # a caller inside the vault lock cannot let go of it for a long build
        with vault.lock():
            build(vault, progress)
            return Index(vault, _connect(vault.index_path))
    # A rebuild (after a git merge, a hand edit, a purge elsewhere) takes a while on a big log.
    # One process builds — others wait for it on the build lock rather than build again — and
    # it builds outside the vault lock, so agents keep appending; then it catches up and swaps.
    with fsio.exclusive_lock(vault.cache_dir / "build.lock", BUILD_WAIT):
        if not rebuild:
            idx = _caught_up(vault, progress)  # another process may have just rebuilt it
            if idx is not None:
                return idx
        tmp = _build_file(vault, progress)
        with vault.lock():
            idx = Index(vault, _connect(tmp))
            try:
                idx.sync()  # what was appended while we built
            except (NeedsRebuild, sqlite3.DatabaseError):  # rewritten again meanwhile: redo it
                idx.close()
                fsio.remove_file(tmp)
                build(vault, progress)
                return Index(vault, _connect(vault.index_path))
            idx.close()
            fsio.move(tmp, vault.index_path, mode=fsio.FILE_MODE)
            return Index(vault, _connect(vault.index_path))


def prepare(vault: Vault) -> None:
    """Bring the index in step before taking the vault lock, so a rebuild, if one is due,
    happens outside the lock (writers call this first)."""
    if vault.exists() and not vault.locked:
        open_index(vault).close()


def catch_up(idx: Index) -> Index:
    """After this process appended (lock held): index the new lines, rebuilding if needed."""
    try:
        idx.sync()
        return idx
    except (NeedsRebuild, sqlite3.DatabaseError):
        idx.close()
        build(idx.vault)
        return Index(idx.vault, _connect(idx.vault.index_path))
