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


import json
import os
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO, NamedTuple

from optmem import fsio
from optmem import text as textmod
from optmem.clock import to_epoch
from optmem.record import TIER_RANK, BadLine, Record, parse_fields, parse_line
from optmem.vault import Vault

SCHEMA = "optmem-index-4"
BATCH = 4000
Progress = Callable[[int, int], None]

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


def tokens_for(text: str, key: str | None, tags: tuple[str, ...] | list[str], *,
               folded: bool = False) -> list[str]:
    """What FTS indexes for a record: the tokens of its text, key and tags."""
    toks = textmod.tokens(text, folded=folded)
    if key or tags:
        toks += textmod.tokens(" ".join((key or "", *tags)))
    return toks


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
        return self.rows_in(list(_matching(self.conn, ref, 50).values()))

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
        meta = _meta(self.conn)
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
        state = _LogState.read(self.vault.log_path)
        meta = _meta(self.conn)
        if state.same_as(meta):
            return
        if not _appended_only(self.vault.log_path, state, meta):
            raise _NeedsRebuild()
        _consume(self.conn, self.vault.log_path, state, meta, progress)


class _NeedsRebuild(Exception):
    pass


class _LogState(NamedTuple):
    size: int
    ino: int
    mtime_ns: int

    @classmethod
    def read(cls, path: Path) -> "_LogState":
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return cls(0, 0, 0)
        return cls(st.st_size, st.st_ino, st.st_mtime_ns)

    def same_as(self, meta: dict[str, str]) -> bool:
        return (meta.get("schema") == SCHEMA and meta.get("size") == str(self.size)
                and meta.get("ino") == str(self.ino) and meta.get("mtime") == str(self.mtime_ns))


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT k, v FROM meta"))


def _windows(size: int) -> list[tuple[int, int]]:
    """Byte windows of the indexed region whose hashes detect a rewrite: head, tail and 6 between."""
    if size <= 0:
        return []
    spots = {0, max(0, size - 4096)}
    spots.update(size * i // 7 for i in range(1, 7))
    return [(off, min(4096 if off in (0, max(0, size - 4096)) else 512, size - off))
            for off in sorted(spots)]


def _hash_windows(path: Path, size: int) -> list[list[object]]:
    out: list[list[object]] = []
    with open(path, "rb") as fh:
        for off, ln in _windows(size):
            fh.seek(off)
            out.append([off, ln, textmod.digest(fh.read(ln), 8)])
    return out


def _appended_only(path: Path, state: _LogState, meta: dict[str, str]) -> bool:
    """True when the log only grew since the last sync (its indexed bytes are unchanged)."""
    if meta.get("schema") != SCHEMA:
        return False
    done = int(meta.get("done", "0"))
    if state.size < int(meta.get("size", "0")) or state.size < done:
        return False
    if state.size == int(meta.get("size", "-1")) and meta.get("ino") == str(state.ino):
        return False  # same size, new mtime: edited in place
    return json.loads(meta.get("samples", "[]")) == _hash_windows(path, done)


Line = tuple[bytes, int, int, int]  # (the line without its newline, line number, offset, length)


class _Prepared(NamedTuple):
    """A batch of lines turned into rows — the CPU-heavy half of indexing, done anywhere."""

    rec_rows: list[tuple]
    fts_rows: list[tuple[int, str]]
    red_rows: list[tuple[int, str]]
    tag_rows: list[tuple[str, int]]
    linked: list[tuple[dict, int]]     # records that affect the effective view
    bad: list[tuple[int, str, str]]
    ids: list[str]
    docs: int
    tokens: int


def _prepare(batch: list[Line]) -> _Prepared:
    """Parse, fold, tokenise and fingerprint a batch of lines (pure: no I/O, no database)."""
    out = _Prepared([], [], [], [], [], [], [], 0, 0)
    docs = tokens = 0
    fold = textmod.fold
    for body, n, off, ln in batch:
        try:
            f = parse_fields(body)
        except BadLine as exc:
            out.bad.append((n, exc.code, str(exc)))
            continue
        text, kind, key, tags, corrects = f["text"], f["kind"], f["key"], f["tags"], f["corrects"]
        fp = None
        if text:
            toks, fp = textmod.analyze(fold(text))
            if key or tags:
                toks += textmod.tokens(" ".join((key or "", *tags)))
            docs += 1
            tokens += len(toks)
            out.fts_rows.append((n, " ".join(toks)))
            if f["tier"] == "redline":
                out.red_rows.append(out.fts_rows[-1])
        retired = 1 if kind == "memory" and f["extra"].get("op") == "remove" else 0
        out.rec_rows.append((
            n, f["id"], f["id"][::-1], off, ln, to_epoch(f["ts"]), f["domain"], f["project"],
            kind, TIER_RANK[f["tier"]], key, fp, to_epoch(f["expires"]) if f["expires"] else None,
            f["ref"].upper() if f["ref"] else None,
            json.dumps(list(corrects)) if corrects else None, retired,
        ))
        if tags:
            out.tag_rows.extend((t, n) for t in tags)
        if corrects or key or (f["ref"] and kind in ("forget", "seen")):
            out.linked.append((f, n))
        out.ids.append(f["id"])
    return out._replace(docs=docs, tokens=tokens)


def _store(conn: sqlite3.Connection, prep: _Prepared, totals: list[int],
           deferred: list[Record] | None) -> None:
    """Insert prepared rows; link the effective view now, or collect into `deferred`."""
    conn.executemany(
        "INSERT INTO rec (n, id, rid, off, len, ts, domain, project, kind, tier, key, "
        "fp, expires, ref, corrects, retired) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", prep.rec_rows)
    conn.executemany("INSERT INTO fts (rowid, body) VALUES (?, ?)", prep.fts_rows)
    if prep.red_rows:
        conn.executemany("INSERT INTO fts_red (rowid, body) VALUES (?, ?)", prep.red_rows)
    if prep.tag_rows:
        conn.executemany("INSERT INTO tag VALUES (?, ?)", prep.tag_rows)
    if prep.bad:
        conn.executemany("INSERT OR REPLACE INTO bad VALUES (?, ?, ?)", prep.bad)
    totals[0] += prep.docs
    totals[1] += prep.tokens
    linked = [Record(line=n, **f) for f, n in prep.linked]
    if deferred is not None:
        deferred.extend(linked)
    else:
        _link(conn, linked, prep.ids)


class _Reader:
    """Reads whole lines from an offset up to a size; an unterminated last line is taken only
    when it is complete JSON (a hand-typed line without its newline), else left as a torn tail."""

    def __init__(self, path: Path, off: int, size: int, n: int, open_end: bool) -> None:
        self.path, self.off, self.size, self.n, self.open_end = path, off, size, n, open_end

    def batches(self, size: int = BATCH):
        batch: list[Line] = []
        if self.size <= self.off:
            return
        with open(self.path, "rb") as fh:
            fh.seek(self.off)
            if self.open_end:
                if fh.read(1) != b"\n":
                    raise _NeedsRebuild()  # the unterminated last line was continued by hand
                self.off += 1
                self.open_end = False
            for raw in fh:
                end = self.off + len(raw)
                if end > self.size or not raw.endswith(b"\n"):
                    raw = raw[: self.size - self.off]
                    body = raw.strip()
                    if body:
                        try:
                            parse_fields(body)
                        except BadLine:
                            break  # a torn tail: left for the next append to end
                        self.n += 1
                        batch.append((body, self.n, self.off, len(raw)))
                        self.off += len(raw)
                        self.open_end = True
                    break
                self.n += 1
                body = raw.rstrip(b"\r\n")
                if body.strip():
                    batch.append((body, self.n, self.off, len(body)))
                self.off = end
                if len(batch) >= size:
                    yield batch
                    batch = []
        if batch:
            yield batch


def _consume(conn: sqlite3.Connection, path: Path, state: _LogState, meta: dict[str, str],
             progress: Progress | None, deferred: list[Record] | None = None,
             workers: int = 0) -> None:
    """Index the lines from meta['done'] up to `state.size`, then store the new sync state.

    With `deferred`, records that affect the effective view are collected there instead of being
    linked at once (a from-scratch build links them after its look-up indexes exist). With
    `workers`, batches are prepared in that many forked processes while this one inserts.
    """
    reader = _Reader(path, int(meta.get("done", "0")), state.size, int(meta.get("lines", "0")),
                     meta.get("open_end") == "1")
    totals = [int(meta.get("docs", "0")), int(meta.get("tokens", "0"))]
    with conn:
        if workers:
            import multiprocessing

            with multiprocessing.get_context("fork").Pool(workers) as pool:
                for prep in pool.imap(_prepare, reader.batches()):
                    _store(conn, prep, totals, deferred)
                    if progress:
                        progress(reader.off, state.size)
        else:
            for batch in reader.batches():
                _store(conn, _prepare(batch), totals, deferred)
                if progress:
                    progress(reader.off, state.size)
        new_meta = {
            "schema": SCHEMA, "size": str(state.size), "ino": str(state.ino),
            "mtime": str(state.mtime_ns), "done": str(reader.off), "lines": str(reader.n),
            "open_end": "1" if reader.open_end else "0",
            "docs": str(totals[0]), "tokens": str(totals[1]),
            "samples": json.dumps(_hash_windows(path, reader.off) if reader.off else []),
        }
        conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", new_meta.items())
    if progress:
        progress(state.size, state.size)


def _matching(conn: sqlite3.Connection, ref: str, limit: int) -> dict[str, int]:
    """id → line number of the records `ref` names: the exact id, else ids that start or end
    with it (≥ 6 characters, any case). Several entries mean an ambiguous reference."""
    ref = ref.strip().lstrip("#").upper()
    if len(ref) < 6:
        return {}
    hit = conn.execute("SELECT id, n FROM rec WHERE id = ? ORDER BY n LIMIT 1", (ref,)).fetchone()
    if hit:
        return {hit[0]: hit[1]}
    found: dict[str, int] = {}
    rev = ref[::-1]
    for sql, key in (("SELECT id, n FROM rec WHERE id >= ? AND id < ? ORDER BY n LIMIT ?", ref),
                     ("SELECT id, n FROM rec WHERE rid >= ? AND rid < ? ORDER BY n LIMIT ?", rev)):
        for i, n in conn.execute(sql, (key, key + "\x7f", limit)):
            found.setdefault(i, n)
    return found


def _resolve_n(conn: sqlite3.Connection, ref: str) -> int | None:
    """The line of the one record `ref` names, or None (missing or ambiguous)."""
    found = _matching(conn, ref, 3)
    return next(iter(found.values())) if len(found) == 1 else None


def _link(conn: sqlite3.Connection, recs: list[Record], new_ids: list[str] | None) -> None:
    """Update the effective view for newly indexed records (and records waiting for them).

    `new_ids` are the ids indexed just now, which records indexed earlier may be waiting for;
    None means every pending reference is retried.
    """
    groups: set[tuple[str, str, str | None]] = set()
    for rec in recs:
        if rec.corrects:
            for ref in rec.corrects:
                _apply(conn, ref, rec.line, "corrects")
        if rec.ref and rec.kind in ("forget", "seen"):
            _apply(conn, rec.ref, rec.line, rec.kind)
        if rec.key:
            groups.add((rec.key, rec.domain, rec.project))
    if conn.execute("SELECT 1 FROM pend LIMIT 1").fetchone():
        if new_ids is None:
            waiting = conn.execute("SELECT p.rowid, p.ref, p.src, p.what FROM pend p "
                                   "JOIN rec r ON r.id = p.ref").fetchall()
        else:
            waiting = []
            for i in range(0, len(new_ids), 500):
                chunk = new_ids[i : i + 500]
                marks = ",".join("?" * len(chunk))
                waiting += conn.execute(
                    f"SELECT rowid, ref, src, what FROM pend WHERE ref IN ({marks})", chunk).fetchall()
        for rowid, ref, src, what in waiting:
            conn.execute("DELETE FROM pend WHERE rowid = ?", (rowid,))
            _apply(conn, ref, src, what)
    for key, domain, project in groups:
        _recompute_key(conn, key, domain, project)


def _apply(conn: sqlite3.Connection, ref: str, src: int, what: str) -> None:
    target = _resolve_n(conn, ref)
    if target is None:
        conn.execute("INSERT INTO pend VALUES (?, ?, ?)", (ref.strip().lstrip("#").upper(), src, what))
        return
    s_id, s_tier, s_ts = conn.execute("SELECT id, tier, ts FROM rec WHERE n = ?", (src,)).fetchone()
    if what == "corrects":
        t_tier = conn.execute("SELECT tier FROM rec WHERE n = ?", (target,)).fetchone()[0]
        if t_tier == TIER_RANK["redline"] and s_tier != TIER_RANK["redline"]:
            return  # a redline is locked: only a newer redline supersedes it
        conn.execute("UPDATE rec SET sup = ? WHERE n = ? AND n != ?", (s_id, target, src))
    elif what == "forget":
        conn.execute("UPDATE rec SET forgotten = 1 WHERE n = ?", (target,))
    elif what == "seen" and s_ts is not None:
        conn.execute("UPDATE rec SET seen = max(coalesce(seen, ?), ?) WHERE n = ?", (s_ts, s_ts, target))


def _recompute_key(conn: sqlite3.Connection, key: str, domain: str, project: str | None) -> None:
    members = conn.execute(
        "SELECT n, id, coalesce(ts, -1e18), tier FROM rec WHERE key = ? AND domain = ? AND project IS ?",
        (key, domain, project)).fetchall()
    redlines = [m for m in members if m[3] == TIER_RANK["redline"]]
    winner = max(redlines or members, key=lambda m: (m[2], m[1], m[0]))
    conn.execute(
        "UPDATE rec SET ksup = CASE WHEN n = ? THEN NULL ELSE ? END "
        "WHERE key = ? AND domain = ? AND project IS ?",
        (winner[0], winner[1], key, domain, project))


# -- opening ---------------------------------------------------------------------------------
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
        if _LogState.read(vault.log_path).same_as(_meta(conn)):
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
        state = _LogState.read(vault.log_path)
        deferred: list[Record] = []
        workers = max(2, os.cpu_count() or 1) if state.size >= parallel_min_bytes else 0
        _consume(conn, vault.log_path, state, {"schema": SCHEMA}, progress, deferred, workers)
        conn.executescript(_POST_DDL)
        with conn:
            _link(conn, deferred, None)
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
        conn = _fresh(vault)
        if conn is not None:
            return Index(vault, conn)
        if vault.index_path.exists():
            try:
                idx = Index(vault, _connect(vault.index_path))
                try:
                    idx.sync(progress)
                    return idx
                except (_NeedsRebuild, sqlite3.DatabaseError):
                    idx.close()
            except sqlite3.DatabaseError:
                pass
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
            except (_NeedsRebuild, sqlite3.DatabaseError):  # rewritten again meanwhile: redo it
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
    except (_NeedsRebuild, sqlite3.DatabaseError):
        idx.close()
        build(idx.vault)
        return Index(idx.vault, _connect(idx.vault.index_path))
