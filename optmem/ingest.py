"""Ingest: turning LOG.jsonl lines into index rows, and keeping the effective view.

`consume` reads lines from where the index stopped (a torn tail left for later, a hand-typed
last line without its newline taken when it is whole JSON), `prepare_rows` parses, folds, tokenises
and fingerprints a batch (pure: it can run in worker processes), `_store` inserts the rows, and
`link` updates who supersedes whom, what is forgotten and what was restated. `LogState` and
`appended_only` tell an append from a rewrite without reading the whole log.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from optmem import dates, fsio, view
from optmem import text as textmod
from optmem.clock import to_epoch
from optmem.quarantine import may_replace, release_honoured, secondhand
from optmem.reading.cues import says_change
from optmem.record import (
    BOOKKEEPING,
    CORRECTION_MARK,
    HOT_KEY,
    READ_BYTES,
    TIER_RANK,
    BadLine,
    Record,
    clean_ref,
    file_hash,
    parse_line,
    place,
)
from optmem.schema import (
    ID_TIME_SQL,
    INSERT_REC,
    LINE_FIELDS,
    SCHEMA,
    SPLIT_DIRTY,
    SPLIT_DONE,
    SPLIT_SAY,
    Row,
    line_values,
)
from optmem.stdlib import sqlite3
from optmem.value import NamedTuple, Value

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from multiprocessing.pool import Pool
    from typing import Any

# `view.newer_key` in SQL, newest first (over `rec r`): the later ts, the later millisecond of
# the id, the later line
NEWEST_FIRST = f"r.ts DESC, {ID_TIME_SQL.replace('id', 'r.id')} DESC, r.n DESC"
OLDEST_FIRST = f"r.ts, {ID_TIME_SQL.replace('id', 'r.id')}, r.n"

BATCH = 4000
Progress = Callable[[int, int], None]


def tokens_for(
    folded: str, key: str | None, tags: tuple[str, ...] | list[str], ts: float | None, dated: str | None
) -> tuple[list[str], list[str]]:
    """What FTS indexes for a record: the tokens of its (folded) text, key and tags, and its date
    terms — with the words of its text (as `text.words` gives them: the first tokens are their
    stems). The date terms are read from what the index stored of the record (`dated`: its
    `Row.dates`), not found in its text again: resolving the dates a text names runs its date
    patterns (a few milliseconds a search, over its ~200 candidates)."""
    toks, words = textmod.tokens_and_words(folded)
    return toks + _label_tokens(key, tags) + (dated.split(" ") if dated else dates.day_terms(ts)), words


def _dated(ts: float | None, terms: list[str]) -> str | None:
    """What `Row.dates` stores of a record's date terms: None when they are its own day's alone."""
    return None if terms == dates.day_terms(ts) else " ".join(terms)


def _label_tokens(key: str | None, tags: tuple[str, ...] | list[str]) -> list[str]:
    """A record's key and tags are searchable too — not a hot-memory entry's key (`HOT_KEY`), which
    names its file and entry id: every entry would match "md" or "MEMORY.md", by no word of its."""
    if key and key.startswith(HOT_KEY):
        key = None
    return textmod.tokens(" ".join((key or "", *tags))) if key or tags else []


class NeedsRebuild(Exception):
    pass


class LogState(Value):
    size: int
    ino: int
    mtime_ns: int

    @classmethod
    def read(cls, path: Path) -> LogState:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return cls(0, 0, 0)
        return cls(st.st_size, st.st_ino, st.st_mtime_ns)

    def same_as(self, known: dict[str, Any]) -> bool:
        """Whether a segment's file is as the index last left it (`known`: its entry in `segs`)."""
        return known.get("size") == self.size and known.get("ino") == self.ino and known.get("mtime") == self.mtime_ns


Segment = tuple[str, Path]  # (its name relative to the vault, its path): `layout.segments`


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT k, v FROM meta"))


def known_segments(meta: dict[str, str]) -> dict[str, dict[str, Any]]:
    """name → what the index knows of each log segment: its number (`sid`), the state it was
    read at, where reading stopped (`done`, `open_end`) and the hashes of sampled windows."""
    known: dict[str, dict[str, Any]] = json.loads(meta.get("segs", "{}"))
    return known


def segments_in_step(segments: list[Segment], meta: dict[str, str]) -> bool:
    """Whether every log segment is as the index last read it, and no segment came or went."""
    if meta.get("schema") != SCHEMA:
        return False
    known = known_segments(meta)
    if len(known) != len(segments):
        return False
    return all(name in known and LogState.read(path).same_as(known[name]) for name, path in segments)


def _windows(size: int) -> list[tuple[int, int]]:
    """Byte windows of the indexed region whose hashes detect a rewrite: head, tail and 6 between."""
    if size <= 0:
        return []
    spots = {0, max(0, size - 4096)}
    spots.update(size * i // 7 for i in range(1, 7))
    return [(off, min(4096 if off in (0, max(0, size - 4096)) else 512, size - off)) for off in sorted(spots)]


def hash_windows(path: Path, size: int) -> list[list[object]]:
    out: list[list[object]] = []
    with open(path, "rb") as fh:
        for off, ln in _windows(size):
            fh.seek(off)
            out.append([off, ln, textmod.digest(fh.read(ln), 8)])
    return out


def appended_only(path: Path, state: LogState, known: dict[str, Any]) -> bool:
    """True when a segment only grew since the index read it (its indexed bytes are unchanged)."""
    done = int(known.get("done", 0))
    if state.size < int(known.get("size", 0)) or state.size < done:
        return False
    if state.size == known.get("size", -1) and known.get("ino") == state.ino:
        return False  # same size, new mtime: edited in place
    moved: bool = known.get("samples", []) == hash_windows(path, done)
    return moved


def to_read(segments: list[Segment], meta: dict[str, str]) -> list[tuple[str, Path, LogState]]:
    """The segments with lines the index has not read, each with its state now; NeedsRebuild when
    one was rewritten rather than appended to, or is gone."""
    known = known_segments(meta)
    names = {name for name, _ in segments}
    if any(name not in names for name in known):
        raise NeedsRebuild()  # a segment was removed (a purge, a hand edit): rebuild from the files
    out = []
    for name, path in segments:
        state = LogState.read(path)
        seen = known.get(name)
        if seen is not None and state.same_as(seen):
            continue
        if seen is not None and not appended_only(path, state, seen):
            raise NeedsRebuild()
        out.append((name, path, state))
    return out


Line = tuple[bytes, int, int, int]  # (the line without its newline, line number, offset, length)


class _Prepared(NamedTuple):
    """A batch of lines turned into rows — the CPU-heavy half of indexing, done anywhere."""

    rec_rows: list[tuple[object, ...]]  # a Row's line values (`line_values`), as plain tuples:
    # they cross process boundaries, and NamedTuples pickle ~5x slower
    fts_rows: list[tuple[int, str]]
    red_rows: list[tuple[int, str]]
    tag_rows: list[tuple[str, int]]
    linked: list[Record]  # records that affect the effective view
    bad: list[tuple[int, str, str]]
    ids: list[str]
    docs: int
    tokens: int
    squares: int  # sum of squared document lengths (their spread: `Index.lengths`)
    turns: int  # documents that are turns of a conversation (a `session`): BM25's b follows


def prepare_rows(
    batch: list[Line],
    seg: int = 0,
    hashed: int = 0,
    limit: int = READ_BYTES,
    released: frozenset[str] = frozenset(),
) -> _Prepared:
    """Parse, fold, tokenise and fingerprint a batch of lines of segment `seg` (whose name hashes
    to `hashed`: `file_hash`) (pure: no I/O, no database). `limit`: the read bound (`READ_BYTES`: a
    line over a record's bounds is a bad line, as one that does not parse). `released`: the
    ids (upper case) of the release lines this clone wrote — a `release` line acts only if it is
    one of them, and a person's (`quarantine.release_honoured`)."""
    out = _Prepared([], [], [], [], [], [], [], 0, 0, 0, 0)
    docs = tokens = squares = turns = 0
    fold = textmod.fold
    used: set[int] = set()  # keys given in this batch (two records of one place: the next free one)
    for body, line, off, ln in batch:
        try:
            rec = parse_line(body, line, limit)
        except BadLine as exc:
            out.bad.append((place(None, line, hashed), exc.code, str(exc)))
            continue
        fp = None
        dated: list[str] | None = None
        ts = to_epoch(rec.ts)
        n = place(ts, line, hashed)
        while n in used:
            n += 1
        used.add(n)
        text, key, tags, extra = rec.text, rec.key, rec.tags, rec.extra
        if text:
            folded = fold(text)
            toks, fp, words = textmod.analyze(folded)
            dated = dates.record_terms(ts, folded, words)
            toks += _label_tokens(key, tags) + dated
            docs += 1
            tokens += len(toks)
            squares += len(toks) ** 2
            turns += rec.session is not None
            out.fts_rows.append((n, " ".join(toks)))
            if rec.tier == "redline":
                out.red_rows.append(out.fts_rows[-1])
        upd = extra.get("may_update") if extra else None
        expires = to_epoch(rec.expires) if rec.expires else None
        row = Row(  # what a log line says; the effective view's columns keep their defaults
            n=n,
            id=rec.id,
            rid=rec.id[::-1],
            off=off,
            len=ln,
            ts=ts,
            domain=rec.domain,
            project=rec.project,
            kind=rec.kind,
            tier=TIER_RANK[rec.tier],
            key=key,
            fp=fp,
            expires=expires,
            ref=rec.ref.upper() if rec.ref else None,
            corrects=json.dumps(list(rec.corrects)) if rec.corrects else None,
            session=rec.session,
            spos=None,  # (`_Places`, as the rows are stored in log order)
            retired=int(view.retired_at_birth(rec.kind, extra)),
            imp=rec.importance,
            pending=int(rec.pending),
            conf=rec.confidence,
            source=rec.source,
            inferred=int(rec.basis == "inferred"),
            state=int(rec.state),
            upd=upd if isinstance(upd, str) and upd else None,
            change=int(bool(key) and says_change(text)),
            seg=seg,
            after=_after(extra) if key and extra else None,
            origin=rec.origin,
            held=int(rec.held is not None),
            dates=_dated(ts, dated) if dated is not None else None,
            said=said_of(body, text, rec.id) if key else None,
        )
        out.rec_rows.append(line_values(row))
        if tags:
            out.tag_rows.extend((t, n) for t in tags)
        if rec.kind == view.RELEASES and not release_honoured(rec.origin, rec.id.upper() in released):
            pass  # (stored, read, listed; it lets nothing out of quarantine here)
        elif key or ((rec.corrects or rec.ref) and view.links(rec.kind, rec.corrects, rec.ref)):
            out.linked.append(rec._replace(line=n))  # (`link` knows a record by its index key)
        out.ids.append(rec.id)
    return out._replace(docs=docs, tokens=tokens, squares=squares, turns=turns)


_CORRECTION_MARKS = (b"[corr", "〔更正〕".encode(), b"\\u")  # (in a line whose text opens with `CORRECTION_MARK`)


def said_of(raw: bytes, text: str, rid: str) -> str | None:
    """What a keyed value says, a correction's prefix aside (correcting the stale value to the
    other's words agrees: `Index.said_as`): its text's fingerprint without the prefix, else its id —
    None for a line that cannot hold that prefix (no "[corr" in any case, no "〔更正〕", no escape
    that could spell either): its `fp` says it, its text need not be folded again."""
    if not any(m in raw.lower() for m in _CORRECTION_MARKS):
        return None
    return textmod.fingerprint(CORRECTION_MARK.sub("", text)) or rid


_SESSION, _SPOS, _DOMAIN, _ID, _KIND = (LINE_FIELDS.index(name) for name in ("session", "spos", "domain", "id", "kind"))


class _Places:
    """Where each record stands in its session (log order), counting on from what the index
    already holds — or from 0 when this pass started on an empty index (a build, which has no
    look-up index yet). Places are counted per domain: a session name reused in another domain
    is another conversation, and the turn before a record is the one before it in its own."""

    def __init__(self, conn: sqlite3.Connection, empty: bool) -> None:
        self.conn, self.empty = conn, empty
        self.next: dict[tuple[object, str], int] = {}

    def place(self, rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
        """The rows with each one's place in its session filled in."""
        out = []
        for r in rows:
            session = r[_SESSION]
            if session:
                assert isinstance(session, str)
                conversation = (r[_DOMAIN], session)
                at = self.next.get(conversation)
                if at is None:
                    at = 0 if self.empty else self._after_last(conversation)
                r = (*r[:_SPOS], at, *r[_SPOS + 1 :])
                self.next[conversation] = at + 1
            out.append(r)
        return out

    def _after_last(self, conversation: tuple[object, str]) -> int:
        domain, session = conversation
        (top,) = self.conn.execute(
            "SELECT max(spos) FROM rec WHERE session = ? AND domain = ?", (session, domain)
        ).fetchone()
        return 0 if top is None else top + 1


def _store(
    conn: sqlite3.Connection, prep: _Prepared, totals: list[int], deferred: list[Record] | None, places: _Places
) -> None:
    """Insert prepared rows; link the effective view now, or collect into `deferred`."""
    prep = _unique(conn, prep)
    conn.executemany(INSERT_REC, places.place(prep.rec_rows))
    conn.executemany("INSERT INTO fts (rowid, body) VALUES (?, ?)", prep.fts_rows)
    conn.executemany("INSERT INTO tok (n, body) VALUES (?, ?)", prep.fts_rows)
    if deferred is None:  # (a build counts them all at its end: `count_terms`)
        held = Counter(t for _, body in prep.fts_rows for t in set(body.split(" ")))
        conn.executemany(
            "INSERT INTO df VALUES (?, ?) ON CONFLICT(term) DO UPDATE SET doc = doc + excluded.doc", held.items()
        )
    if prep.red_rows:
        conn.executemany("INSERT INTO fts_red (rowid, body) VALUES (?, ?)", prep.red_rows)
    if prep.tag_rows:
        conn.executemany("INSERT INTO tag VALUES (?, ?)", prep.tag_rows)
    if prep.bad:
        conn.executemany("INSERT OR REPLACE INTO bad VALUES (?, ?, ?)", prep.bad)
    totals[0] += prep.docs
    totals[1] += prep.tokens
    totals[2] += prep.squares
    totals[3] += prep.turns
    if deferred is not None:
        deferred.extend(prep.linked)
    else:
        link(conn, prep.linked, prep.ids)


def count_terms(conn: sqlite3.Connection) -> None:
    """Fill `df` (how many records hold each term) from the text index whole: once, at the end
    of a build (each batch's upsert is what an append pays)."""
    conn.execute("CREATE VIRTUAL TABLE temp.built USING fts5vocab(main, fts, row)")
    conn.execute("INSERT INTO df SELECT term, doc FROM temp.built")
    conn.execute("DROP TABLE temp.built")


def _after(extra: dict[str, Any]) -> str | None:
    """The `after` of a keyed record (the key's values its writer saw), as the index keeps it."""
    after = extra.get("after")
    if isinstance(after, list) and all(isinstance(a, str) for a in after):
        return json.dumps(after)
    return None


def _unique(conn: sqlite3.Connection, prep: _Prepared) -> _Prepared:
    """The batch with every key free in the index (`place`): a key another file's record holds
    already moves to the next free one (rare: the same second, line and file hash)."""
    keys = [r[0] for r in prep.rec_rows]
    taken: set[int] = set()
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        taken.update(n for (n,) in conn.execute(f"SELECT n FROM rec WHERE n IN ({','.join('?' * len(chunk))})", chunk))
    if not taken:
        return prep
    mine = set(keys)
    moved: dict[int, int] = {}
    for key in keys:
        if key in taken:
            assert isinstance(key, int)
            n = key + 1
            while n in mine or n in moved.values() or conn.execute("SELECT 1 FROM rec WHERE n = ?", (n,)).fetchone():
                n += 1
            moved[key] = n
    return _rekeyed(prep, lambda n: moved.get(n, n))


def _rekeyed(prep: _Prepared, key: Callable[[int], int]) -> _Prepared:
    """The batch with every index key `n` made `key(n)`."""
    return prep._replace(
        rec_rows=[(key(r[0]), *r[1:]) for r in prep.rec_rows],  # type: ignore[arg-type]
        fts_rows=[(key(n), body) for n, body in prep.fts_rows],
        red_rows=[(key(n), body) for n, body in prep.red_rows],
        tag_rows=[(tag, key(n)) for tag, n in prep.tag_rows],
        linked=[r._replace(line=key(r.line)) for r in prep.linked],
        bad=[(key(n), code, why) for n, code, why in prep.bad],
    )


class _Reader:
    """Reads whole lines from an offset up to a size; an unterminated last line is taken only
    when it is complete JSON (a hand-typed line without its newline), else left as a torn tail."""

    def __init__(self, path: Path, off: int, size: int, n: int, open_end: bool) -> None:
        self.path, self.off, self.size, self.n, self.open_end = path, off, size, n, open_end

    def batches(self, size: int = BATCH) -> Iterator[list[Line]]:
        batch: list[Line] = []
        if self.size <= self.off:
            return
        with open(self.path, "rb") as fh:
            fh.seek(self.off)
            if self.open_end:
                if fh.read(1) != b"\n":
                    raise NeedsRebuild()  # the unterminated last line was continued by hand
                self.off += 1
                self.open_end = False
            for raw, length in fsio.lines(fh):  # (a line past the bound: a bad line, never read whole)
                end = self.off + length
                if end > self.size or not raw.endswith(b"\n"):
                    raw = raw[: self.size - self.off]
                    body = raw.strip()
                    if body:
                        try:
                            parse_line(body, limit=None)  # (whole, or torn: its bounds are the index's)
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


@contextmanager
def worker_pool(workers: int) -> Iterator[Pool | None]:
    """`workers` forked processes that prepare batches for this one (None when `workers` is 0).

    Ctrl-C is this process's alone: a terminal sends SIGINT to the whole process group, and a
    worker that took it would die with a traceback, its task lost, the pool waiting for it
    forever — so the workers ignore it (they are born with it blocked, then ignore it). Any way
    out but the normal one (Ctrl-C, an error) stops the workers and reaps them before the
    exception goes on: none is left running or waiting.
    """
    if not workers:
        yield None
        return
    import multiprocessing
    import signal

    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # (a Ctrl-C now comes after)
    try:
        pool = multiprocessing.get_context("fork").Pool(workers, initializer=_ignore_interrupts)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    ended = False
    try:
        yield pool
        pool.close()
        pool.join()
        ended = True
    finally:
        if not ended:
            pool.terminate()
            pool.join()


def _ignore_interrupts() -> None:
    """A pool worker's start: Ctrl-C is for the process that started it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def consume(
    conn: sqlite3.Connection,
    segments: list[Segment],
    meta: dict[str, str],
    progress: Progress | None,
    deferred: list[Record] | None = None,
    workers: int = 0,
    limit: int = READ_BYTES,
    released: Callable[[], frozenset[str]] | None = None,
    hold: Callable[[sqlite3.Connection, list[str]], None] | None = None,
) -> list[str]:
    """Index the lines every segment gained since the index read it, then store the new sync
    state (`to_read` says which; NeedsRebuild when one was rewritten). Returns the ids of the
    records it indexed, bookkeeping lines aside (what `lost.note_held` keeps) — none for a build
    (`deferred`), which `lost.left_the_log` compares as a whole.

    With `deferred`, records that affect the effective view are collected there instead of being
    linked at once (a from-scratch build links them after its look-up indexes exist). With
    `workers`, batches are prepared in that many forked processes while this one inserts.
    `limit`: the size bound a line must keep to be a record (`READ_BYTES`, whatever the vault's
    `[limits] record_bytes`: that setting bounds writes, never which stored lines are read). `released`: the
    ids of the release lines this clone wrote (`Vault.own_releases`, read when there are lines to
    index; None: none) — only those let a record out of quarantine, whatever file they are in.
    `hold`: called with the ids it returns inside the transaction that stores them
    (`lost.to_hold`), so a crash keeps both or neither.
    """
    todo = to_read(segments, meta)
    if not todo:
        return []
    known = known_segments(meta)
    kept: list[str] = []
    listed = released() if released is not None else frozenset()
    count = int(meta.get("lines", "0"))
    totals = [int(meta.get(k, "0")) for k in ("docs", "tokens", "squares", "turns")]
    places = _Places(conn, empty=count == 0)
    total = sum(state.size - int(known.get(name, {}).get("done", 0)) for name, _, state in todo)
    read = 0
    with conn, worker_pool(workers) as pool:
        # the split keys the lines touch are said once, at the end (`schema.SPLIT_SAY`), not once a row
        conn.execute("INSERT OR IGNORE INTO split_hold VALUES (1)")
        for name, path, state in todo:
            seen = known.get(name) or {"sid": 1 + max((k["sid"] for k in known.values()), default=-1)}
            sid = seen["sid"]
            start = int(seen.get("done", 0))
            lines = int(seen.get("lines", 0))
            reader = _Reader(path, start, state.size, lines, bool(seen.get("open_end")))
            prepare = partial(prepare_rows, seg=sid, hashed=file_hash(name), limit=limit, released=listed)
            batches = pool.imap(prepare, reader.batches()) if pool else map(prepare, reader.batches())
            for prep in batches:
                _store(conn, prep, totals, deferred, places)
                if deferred is None:  # (an incremental catch-up: a build is compared as a whole)
                    kept += (str(r[_ID]) for r in prep.rec_rows if r[_KIND] not in BOOKKEEPING)
                if progress:
                    progress(read + reader.off - start, total)
            read += state.size - start
            count += reader.n - lines
            known[name] = {
                "sid": sid,
                "lines": reader.n,
                "size": state.size,
                "ino": state.ino,
                "mtime": state.mtime_ns,
                "done": reader.off,
                "open_end": reader.open_end,
                "samples": hash_windows(path, reader.off) if reader.off else [],
            }
        new_meta = {
            "schema": SCHEMA,
            "segs": json.dumps(known, sort_keys=True),
            "lines": str(count),
            "docs": str(totals[0]),
            "tokens": str(totals[1]),
            "squares": str(totals[2]),
            "turns": str(totals[3]),
        }
        say_split(conn)
        conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", new_meta.items())
        if hold is not None and kept:
            hold(conn, kept)
    if progress:
        progress(total, total)
    return kept


def say_split(conn: sqlite3.Connection) -> None:
    """Say again, once each, the split keys (`split`) the rows changed while `split_hold` held the
    triggers touched, and let the triggers say each change as it comes again."""
    drop, group = SPLIT_SAY
    for key, project in conn.execute(SPLIT_DIRTY).fetchall():
        conn.execute(drop, (key, project))
        conn.execute(group, (key, project))
    conn.execute(SPLIT_DONE[0])
    conn.execute(SPLIT_DONE[1])


_LOWER = "id != upper(id)"  # (the WHERE of the indexes on ids written in lower case: a literal, so they apply)


def matching_ids(conn: sqlite3.Connection, ref: str, limit: int) -> dict[str, int]:
    """id → line number of the records `ref` names: the exact id (as typed, else in upper case),
    else ids that start or end with it (≥ 6 characters, any case). Several entries mean an
    ambiguous reference."""
    typed, ref = ref.strip().lstrip("#"), clean_ref(ref)  # (the rule `record.Ids` applies in memory)
    if not ref:
        return {}
    if typed != ref:  # the id as typed first: `mynote000001` is that line's, not MYNOTE000001's
        hit = conn.execute("SELECT id, n FROM rec WHERE id = ? ORDER BY n LIMIT 1", (typed,)).fetchone()
        if hit:
            return {hit[0]: hit[1]}
    # ids as optmem makes them are upper case, as `clean_ref` makes the reference; an id a line
    # typed in lower case keeps it (what the line says, which its writer may look for) and is
    # looked up in upper case, through its own small indexes (`schema`: rec_uid, rec_urid)
    for sql in (
        "SELECT id, n FROM rec WHERE id = ? ORDER BY n LIMIT 1",
        f"SELECT id, n FROM rec WHERE {_LOWER} AND upper(id) = ? ORDER BY n LIMIT 1",
    ):
        hit = conn.execute(sql, (ref,)).fetchone()
        if hit:
            return {hit[0]: hit[1]}
    if len(ref) < 6:  # a whole id of any length; a part of one of 6 characters or more
        return {}
    found: dict[str, int] = {}
    rev = ref[::-1]
    for sql, key in (
        ("SELECT id, n FROM rec WHERE id >= ? AND id < ? ORDER BY n LIMIT ?", ref),
        ("SELECT id, n FROM rec WHERE rid >= ? AND rid < ? ORDER BY n LIMIT ?", rev),
        (f"SELECT id, n FROM rec WHERE {_LOWER} AND upper(id) >= ? AND upper(id) < ? ORDER BY n LIMIT ?", ref),
        (f"SELECT id, n FROM rec WHERE {_LOWER} AND upper(rid) >= ? AND upper(rid) < ? ORDER BY n LIMIT ?", rev),
    ):
        for i, n in conn.execute(sql, (key, key + "\x7f", limit)):
            found.setdefault(i, n)
    return found


def _resolve_n(conn: sqlite3.Connection, ref: str) -> int | None:
    """The line of the one record `ref` names, or None (missing or ambiguous)."""
    found = matching_ids(conn, ref, 3)
    return next(iter(found.values())) if len(found) == 1 else None


def link(conn: sqlite3.Connection, recs: list[Record], new_ids: list[str] | None) -> None:
    """Apply the effective view's verdicts for newly indexed records (and records waiting for
    them): what each record corrects, forgets or restates, and the winner of each key group.

    `new_ids` are the ids indexed just now, which records indexed earlier may be waiting for;
    None means every pending reference is retried.
    """
    groups: set[tuple[str, str, str | None]] = set()
    touched: list[int] = []  # records a link acted on: their key groups are settled again
    for rec in recs:
        for what, ref in view.links(rec.kind, rec.corrects, rec.ref):
            touched.append(_apply(conn, ref, rec.line, what))
        if rec.key:
            groups.add((rec.key, rec.domain, rec.project))
    if conn.execute("SELECT 1 FROM pend LIMIT 1").fetchone():
        if new_ids is None:
            waiting = conn.execute(
                "SELECT p.rowid, p.ref, p.src, p.what FROM pend p WHERE EXISTS (SELECT 1 FROM rec r WHERE r.id = p.ref)"
                " OR EXISTS (SELECT 1 FROM rec r WHERE r.id != upper(r.id) AND upper(r.id) = p.ref)"
            ).fetchall()
        else:
            waiting = []
            for i in range(0, len(new_ids), 500):
                chunk = [rid.upper() for rid in new_ids[i : i + 500]]  # (a waiting ref is upper case: `_apply`)
                marks = ",".join("?" * len(chunk))
                waiting += conn.execute(
                    f"SELECT rowid, ref, src, what FROM pend WHERE ref IN ({marks})", chunk
                ).fetchall()
            if conn.execute("SELECT 1 FROM pend WHERE what = ? LIMIT 1", (_NAMED,)).fetchone():
                waiting += _named_anew(conn, new_ids)
        for rowid, ref, src, what in dict.fromkeys(waiting):
            conn.execute("DELETE FROM pend WHERE rowid = ?", (rowid,))
            if what == _NAMED:  # the part of an id it named one record by names another too now
                touched += _unlink(conn, ref, src)
                what = view.SUPERSEDES
            touched.append(_apply(conn, ref, src, what))
    for i in range(0, len(touched), 500):
        lines = [n for n in touched[i : i + 500] if n]
        if lines:
            groups.update(
                conn.execute(
                    f"SELECT key, domain, project FROM rec WHERE key IS NOT NULL "
                    f"AND n IN ({','.join('?' * len(lines))})",
                    lines,
                ).fetchall()
            )
    window = view_params(conn)
    for key, domain, project in groups:
        _settle_key(conn, key, domain, project, window)
    firsts: set[int] = set()
    for n in touched:
        if n and conn.execute("SELECT 1 FROM cor WHERE t = ? OR s = ? LIMIT 1", (n, n)).fetchone():
            firsts |= roots(conn, n)
    for first in firsts:
        _settle_fork(conn, first)


# a `pend` row of a correction that names its record by a part of its id: another id with that
# part, indexed later (a sync, a later segment), makes it name none (`_named_anew`, `_unlink`)
_NAMED = "named"


def _named_anew(conn: sqlite3.Connection, new_ids: list[str]) -> list[tuple[int, str, int, str]]:
    """The `_NAMED` rows whose part of an id one of `new_ids` starts or ends with."""
    rows: list[tuple[int, str, int, str]] = []
    for i in range(0, len(new_ids), 20):
        parts = list(
            {p for rid in new_ids[i : i + 20] for k in range(6, len(rid)) for p in (rid.upper()[:k], rid.upper()[-k:])}
        )
        if parts:
            rows += conn.execute(
                f"SELECT rowid, ref, src, what FROM pend WHERE what = ? AND ref IN ({','.join('?' * len(parts))})",
                [_NAMED, *parts],
            ).fetchall()
    return rows


def _unlink(conn: sqlite3.Connection, ref: str, src: int) -> list[int]:
    """Undo what `src` corrected through `ref` (kept where another of its references names the
    same record); the lines it touched."""
    (corrects,) = conn.execute("SELECT corrects FROM rec WHERE n = ?", (src,)).fetchone()
    kept = {_resolve_n(conn, r) for r in json.loads(corrects or "[]") if clean_ref(r) != ref}
    gone = [t for t in matching_ids(conn, ref, 50).values() if t not in kept]
    for t in gone:
        conn.execute("DELETE FROM cor WHERE t = ? AND s = ?", (t, src))
        _resupersede(conn, t)
    return gone


def _apply(conn: sqlite3.Connection, ref: str, src: int, what: str) -> int:
    """Record `src` acts on the record `ref` names (or waits in `pend` until it arrives); the
    target's line, 0 while it waits. A correction that names it by a part of its id is kept in
    `pend` too (`_NAMED`): an id with that part, indexed later, makes it name none."""
    found = matching_ids(conn, ref, 3)
    if len(found) != 1:
        conn.execute("INSERT INTO pend VALUES (?, ?, ?)", (clean_ref(ref), src, what))
        return 0
    [(rid, target)] = found.items()
    if what == view.SUPERSEDES and clean_ref(ref) != rid.upper():
        conn.execute("INSERT INTO pend VALUES (?, ?, ?)", (clean_ref(ref), src, _NAMED))
    s_tier, s_ts, s_pending, s_inferred, s_origin = conn.execute(
        "SELECT tier, ts, pending, inferred, origin FROM rec WHERE n = ?", (src,)
    ).fetchone()
    if what == view.SUPERSEDES:
        t_tier, t_origin, t_inferred = conn.execute(
            "SELECT tier, origin, inferred FROM rec WHERE n = ?", (target,)
        ).fetchone()
        # the redline lock, provenance (a second-hand text never replaces what was said), and an
        # inference replaces only an inference; a guess's link is kept but stands once it is
        # confirmed (`_resupersede`; CONFIRMS and a stating RESTATES apply it then)
        if (
            target != src
            and view.may_supersede(s_tier, t_tier)
            and may_replace(s_origin, t_origin)
            and view.may_overrule(bool(s_inferred), bool(t_inferred))
        ):
            conn.execute("INSERT INTO cor VALUES (?, ?)", (target, src))
            _resupersede(conn, target)
            _resupersede_below(conn, target)  # a forgotten version superseded now leads on again
    elif what in (view.FORGETS, view.RESTORES):
        conn.execute("UPDATE rec SET forgotten = ? WHERE n = ?", (int(what == view.FORGETS), target))
        _resupersede_below(conn, target)  # what it corrected: given back, or superseded by it again
    elif what == view.CONFIRMS:  # a person vouched for it: current, and used now (warm again)
        (seen,) = conn.execute("SELECT seen FROM rec WHERE n = ?", (target,)).fetchone()
        conn.execute(
            "UPDATE rec SET confirmed = 1, seen = ? WHERE n = ?",
            (view.restated(seen, s_ts) if s_ts is not None else seen, target),
        )
        _resupersede_below(conn, target)  # what the guess corrects is corrected now
    elif what == view.RELEASES:  # a person released it from quarantine: what it corrects is corrected now
        conn.execute("UPDATE rec SET released = 1 WHERE n = ?", (target,))
        _resupersede_below(conn, target)
    elif what == view.VERIFIES and s_ts is not None:  # checked at that time: the latest check counts
        conn.execute("UPDATE rec SET verified = max(coalesce(verified, 0), ?) WHERE n = ?", (s_ts, target))
    elif what == view.RESTATES:
        (seen,) = conn.execute("SELECT seen FROM rec WHERE n = ?", (target,)).fetchone()
        if view.confirms(not s_pending, bool(s_inferred)):
            conn.execute("UPDATE rec SET confirmed = 1 WHERE n = ? AND pending != 0", (target,))
            _resupersede_below(conn, target)  # a guess stated: what it corrects is corrected now
        if s_ts is not None:
            conn.execute("UPDATE rec SET seen = ? WHERE n = ?", (view.restated(seen, s_ts), target))
    return target


VIEW_PARAMS = ("conflict_window",)  # index meta: the settings the view was built with


def view_params(conn: sqlite3.Connection) -> float:
    """The conflict window (seconds) the index was built with."""
    return float(read_meta(conn).get("conflict_window", "0"))


def _named(conn: sqlite3.Connection, refs: list[str]) -> tuple[str, ...]:
    """What each of a record's `corrects` names among every id of the vault (`matching_ids`, the
    rule `doctor` applies): the one id it names; a part several ids share names none, whichever
    key they hold; a reference that names no record yet stays as written (its record may come)."""
    out: list[str] = []
    for ref in refs:
        found = matching_ids(conn, ref, 2)
        out += list(found) if len(found) == 1 else [] if found else [ref]
    return tuple(out)


def _settle_key(conn: sqlite3.Connection, key: str, domain: str, project: str | None, window: float) -> None:
    """Mark every member of a key group but the view's winner superseded — or, when time cannot
    order its values, every member but those in conflict (which stay current, marked)."""
    rows = conn.execute(
        # a guess (pending, unconfirmed) waits, and so does a value held in quarantine (until released)
        "SELECT n, id, ts, tier, fp, forgotten, corrects, kind, "
        "(pending != 0 AND confirmed = 0) OR (held != 0 AND released = 0), "
        "inferred, state, change, after, origin, retired FROM rec "
        "WHERE key = ? AND domain = ? AND project IS ?",
        (key, domain, project),
    ).fetchall()
    members = [
        view.Member(
            n,
            i,
            ts,
            tier,
            fp,
            int(bool(forgotten)),
            _named(conn, json.loads(corrects)) if corrects else (),
            kind,
            waiting,
            inferred,
            state,
            change,
            tuple(json.loads(after)) if after else None,
            int(secondhand(origin)),
        )
        for n, i, ts, tier, fp, forgotten, corrects, kind, waiting, inferred, state, change, after, origin, _ in rows
    ]
    # a hot entry's removal line is dated by the entry it removes (`Row.written`)
    gone = {row[0] for row in rows if row[-1]}
    for m in (m for m in members if m.n in gone):
        written = view.entry_written(m, [w for w in members if w.n not in gone])
        conn.execute("UPDATE rec SET wrote = ? WHERE n = ?", (written, m.n))
    # habits and states of one key never meet: a night up late does not replace a bedtime
    for part in (p for p in ([m for m in members if not m.state], [m for m in members if m.state]) if p):
        # states pass on their own: two of one key are never put to the user
        verdict = view.key_winner(part, window if not part[0].state else 0.0)
        if isinstance(verdict, view.Winner):
            current, by, fork = [verdict.member], verdict.member.id, []
        else:
            current, by = list(verdict.members), view.newest(verdict.members).id
            fork = [m.n for m in current]
        # a guess takes no part in its key until it is confirmed (`view.waits`): pending, listed for
        # review, neither superseding nor superseded
        waiting = [m.n for m in part if view.waits(m)]
        settled = [m.n for m in part if not view.waits(m)]
        if waiting:
            conn.execute(
                f"UPDATE rec SET ksup = NULL, conflict = 0 WHERE n IN ({','.join('?' * len(waiting))})", waiting
            )
        if settled:
            marks, everyone = ",".join("?" * len(current)), ",".join("?" * len(settled))
            forks = ",".join("?" * len(fork)) or "NULL"
            conn.execute(
                f"UPDATE rec SET ksup = CASE WHEN n IN ({marks}) THEN NULL ELSE ? END, "
                f"conflict = CASE WHEN n IN ({forks}) THEN 1 ELSE 0 END WHERE n IN ({everyone})",
                (*(m.n for m in current), by, *fork, *settled),
            )
            # a forgotten value newer than the one that stands was superseded by nothing: forgetting
            # the newest gives the fact back, and the older value replaces no newer one
            if fork:  # a value its own clone replaced names what replaced it, not the other clone's value
                for n, head in view.replaced_by(part, current).items():
                    if n in settled and n not in fork:
                        conn.execute("UPDATE rec SET ksup = ? WHERE n = ?", (head, n))
            lead = view.newest(current)
            later = [m.n for m in part if m.out and m not in current and view.newest([m, lead]) is m]
            if later:
                conn.execute(f"UPDATE rec SET ksup = NULL WHERE n IN ({','.join('?' * len(later))})", later)


# -- corrections: who supersedes whom, and facts with two current versions ----------------------
# `cor` holds every applied correction link (target line, correcting line): what corrects a
# record, and what a record corrects, are indexed look-ups both ways.
_GUESS = "{0}.pending != 0 AND {0}.confirmed = 0"  # a guess not yet confirmed (`view.waits`)


def _resupersede(conn: sqlite3.Connection, target: int) -> None:
    """Set what supersedes `target`: the latest of the records correcting it that still stand (a
    forgotten correction that nothing superseded does not: forgetting the newest version gives
    the fact back; a forgotten older version still leads on to its successor; a correction held
    in quarantine does not until it is released, nor a guess until it is confirmed)."""
    conn.execute(
        "UPDATE rec SET sup = (SELECT r.id FROM cor c JOIN rec r ON r.n = c.s WHERE c.t = ?1 "
        f"AND NOT (r.forgotten != 0 AND r.sup IS NULL) AND NOT (r.held != 0 AND r.released = 0) "
        f"AND NOT ({_GUESS.format('r')}) "
        f"ORDER BY {NEWEST_FIRST} LIMIT 1) WHERE n = ?1",
        (target,),
    )


def _resupersede_below(conn: sqlite3.Connection, n: int) -> None:
    """`_resupersede` every record that `n` corrects (its standing changed)."""
    for (t,) in conn.execute(_CORRECTED, (n,)).fetchall():
        _resupersede(conn, t)


def _reach(conn: sqlite3.Connection, start: int, step: str) -> dict[int, list[int]]:
    """Every line reachable from `start` by one way of the correction links (`step`: the SQL that
    gives a line's next ones), each with its next ones."""
    found: dict[int, list[int]] = {}
    todo = [start]
    while todo:
        n = todo.pop()
        if n not in found:
            found[n] = [m for (m,) in conn.execute(step, (n,))]
            todo += found[n]
    return found


_CORRECTED = "SELECT t FROM cor WHERE s = ?"  # what a line corrects
_CORRECTING = "SELECT s FROM cor WHERE t = ?"  # what corrects a line


def roots(conn: sqlite3.Connection, start: int) -> set[int]:
    """The first versions of the facts a record belongs to: follow what it corrects back to
    records that correct nothing."""
    return {n for n, up in _reach(conn, start, _CORRECTED).items() if not up}


def _settle_fork(conn: sqlite3.Connection, root: int) -> None:
    """A fact with more than one current version — a record corrected twice, on two clones that
    git merged, and each correction standing — is in conflict, whatever its kind, key, domain or
    project: its current versions are marked `fork`, the others are not. (Versions that are all
    values of one key are its key group's conflict already: `view.key_winner`.)"""
    visited = set(_reach(conn, root, _CORRECTING)) - {root}
    heads = [
        (n, key, domain, project)
        for n in visited
        for key, domain, project in conn.execute(
            "SELECT key, domain, project FROM rec WHERE n = ? AND forgotten = 0 AND sup IS NULL AND ksup IS NULL "
            f"AND retired = 0 AND NOT ({_GUESS.format('rec')})",  # (a guess waits: no version yet)
            (n,),
        )
    ]
    one_key = len({h[1:] for h in heads}) == 1 and heads[0][1] is not None if heads else False
    forked = [h[0] for h in heads] if len(heads) > 1 and not one_key else []
    if visited:
        marks = ",".join("?" * len(visited))
        conn.execute(
            f"UPDATE rec SET fork = coalesce(n IN ({','.join('?' * len(forked)) or 'NULL'}), 0) WHERE n IN ({marks})",
            (*forked, *visited),
        )


# -- ACCESS.jsonl: recalls and sweeps ------------------------------------------------------------
# Lines `{"ts": …, "touch": [ids], "via": …}` (a recall), `{"ts": …, "cold": [ids]}` (a sweep
# cooled them) and `{"ts": …, "sweep": {…}}` (a sweep ran). Applying them is order-free (latest
# time wins) and idempotent, so two processes catching up at once, or a union merge by git,
# give the same view.
ACCESS_BATCH = 2000


def access_state(path: Path) -> tuple[int, int, int]:
    """(size, inode, mtime) of a recall file; anything but a regular file counts as absent
    (doctor reports it), so recalls are lost, never every command."""
    if path.exists() and not path.is_file():
        return 0, 0, 0
    st = LogState.read(path)
    return st.size, st.ino, st.mtime_ns


def _access_states(files: list[Segment]) -> dict[str, list[int]]:
    return {name: list(access_state(path)) for name, path in files}


def access_in_step(files: list[Segment], meta: dict[str, str], own: str | None) -> bool:
    """Whether every recall file is as the index last applied it, none came or went, and this
    clone's own file (`own`: `layout.own_access`) is the one it was applied as."""
    known: dict[str, list[int]] = json.loads(meta.get("acc", "{}"))
    return {k: v[:3] for k, v in known.items()} == _access_states(files) and meta.get("acc_own", "") == (own or "")


def consume_access(conn: sqlite3.Connection, files: list[Segment], own: str | None) -> None:
    """Apply the recall files' lines from where the index stopped in each; all of them from the
    start (after clearing what they set) when one was rewritten rather than appended to, or is
    gone, or this clone's own file (`own`, whose recalls also set `here`) is another than it was
    (a writer id set anew). Applying is order-free and idempotent, so files from several writers
    simply add up."""
    with conn:
        conn.execute("BEGIN IMMEDIATE")  # one process at a time; a second finds it done
        meta = read_meta(conn)
        if access_in_step(files, meta, own):
            return
        known: dict[str, list[int]] = json.loads(meta.get("acc", "{}"))
        states = _access_states(files)
        last_sweep = meta.get("last_sweep", "")

        def rewritten(name: str) -> bool:
            old = known[name]
            size, ino, mtime = states.get(name, [0, 0, 0])
            return size < old[3] or bool(old[3] and (ino != old[1] or (size == old[0] and mtime != old[2])))

        if meta.get("acc_own", "") != (own or "") or any(name not in states or rewritten(name) for name in known):
            conn.execute(
                "UPDATE rec SET touched = NULL, shown = NULL, here = NULL, cold = NULL "
                "WHERE touched IS NOT NULL OR shown IS NOT NULL OR here IS NOT NULL OR cold IS NOT NULL"
            )
            known, last_sweep = {}, ""
        for name, path in files:
            size, ino, mtime = states[name]
            done = known[name][3] if name in known else 0
            if size > done:
                done, swept = _apply_access(conn, path, done, size, own=name == own)
                if swept is not None and (not last_sweep or swept > float(last_sweep)):
                    last_sweep = repr(swept)
            known[name] = [size, ino, mtime, done]
        conn.executemany(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)",
            [("acc", json.dumps(known, sort_keys=True)), ("last_sweep", last_sweep), ("acc_own", own or "")],
        )


def _apply_access(
    conn: sqlite3.Connection, path: Path, start: int, size: int, *, own: bool
) -> tuple[int, float | None]:
    """Apply the whole lines between `start` and `size`; (where the next read starts, the latest
    sweep seen). A recall in this clone's own file (`own`) also sets `here`: a read made here.
    A torn or unreadable line is skipped (doctor reports it)."""
    touched: list[tuple[float, str]] = []
    shown: list[tuple[float, str]] = []
    here: list[tuple[float, str]] = []
    cold: list[tuple[float, str]] = []
    swept: float | None = None

    def flush() -> None:
        for column, pairs in (("touched", touched), ("shown", shown), ("here", here), ("cold", cold)):
            conn.executemany(f"UPDATE rec SET {column} = max(coalesce({column}, 0), ?) WHERE id = ?", pairs)
            pairs.clear()

    end = start
    with open(path, "rb") as fh:  # streamed: the file grows by a line per recall
        fh.seek(start)
        for raw, length in fsio.lines(fh):
            if end + length > size or not raw.endswith(b"\n"):
                break  # a line still being written is read next time
            end += length
            obj = parse_access(raw)
            if obj is None:
                continue
            at, fields = obj
            # what context showed, and what an import brought in: warm, not recently used
            seen_only = fields.get("via") in ("context", "import")
            for field, into in (("touch", shown if seen_only else touched), ("cold", cold)):
                ids = fields.get(field)
                if isinstance(ids, list):
                    into.extend((at, i) for i in ids if isinstance(i, str))
            if own and fields.get("via") != "import" and isinstance(fields.get("touch"), list):
                here.extend((at, i) for i in fields["touch"] if isinstance(i, str))  # (an import reads nothing)
            if "sweep" in fields:
                swept = at if swept is None else max(swept, at)
            if len(touched) + len(shown) + len(here) + len(cold) >= ACCESS_BATCH:
                flush()
    flush()
    return end, swept


def parse_access(raw: bytes) -> tuple[float, dict[str, Any]] | None:
    """(its time, its fields) of an ACCESS.jsonl line, or None when it cannot be used."""
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if type(obj) is not dict or not isinstance(obj.get("ts"), str):
        return None
    at = to_epoch(obj["ts"])
    return None if at is None else (at, obj)
