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

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from optmem import clock, fsio, view
from optmem import text as textmod
from optmem.errors import Unwritable
from optmem.ingest import (
    NEWEST_FIRST,
    OLDEST_FIRST,
    LogState,
    NeedsRebuild,
    Progress,
    access_in_step,
    consume,
    consume_access,
    count_terms,
    known_segments,
    link,
    matching_ids,
    read_meta,
    segments_in_step,
    tokens_for,
)
from optmem.record import (
    BOOKKEEPING,
    HANDOFF,
    LINE_OF_SQL,
    MEMORY,
    MERGED,
    NEVER_COOL,
    READ_BYTES,
    SEEN,
    Record,
    Tier,
    gate_finding,
    line_of,
    parse_line,
    second_of,
    seconds_places,
)
from optmem.schema import (
    DDL,
    ID_TIME_SQL,
    POST_DDL,
    ROW_SELECT,
    SCHEMA,
    SPLIT_FILL,
    SPLIT_TRIGGERS,
    USED_SQL,
    WRITTEN_SQL,
    Row,
)
from optmem.stdlib import sqlite3
from optmem.value import Value
from optmem.vault import Vault, validate_name

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any, BinaryIO

__all__ = [
    "Census",
    "Filters",
    "Index",
    "Row",
    "SCHEMA",
    "build",
    "catch_up",
    "in_step",
    "make_filters",
    "match_all",
    "match_any",
    "open_index",
    "prepare",
]

# the orders candidates are read in (`top_lines`), and how records equal in them are ordered — the
# same on every clone (the newer first: `view.tie_key`), never by the index key alone (two files'
# records that share a place take it in the order a clone indexed them: `record.place`)
BEST = "ORDER BY bm25(fts)"
TIES = f"r.ts DESC, {ID_TIME_SQL.replace('id', 'r.id')} DESC, {LINE_OF_SQL} DESC, r.id DESC"  # `view.tie_key`
NEWEST = f"ORDER BY {TIES}"


def match_any(terms: list[str]) -> str:
    """An FTS5 query matching records that hold any of `terms` (each quoted: taken literally)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def match_all(terms: list[str]) -> str:
    """An FTS5 query matching records that hold every one of `terms`."""
    return " AND ".join('"' + t.replace('"', '""') + '"' for t in terms)


def is_guess(row: Row, now: float) -> bool:
    """Whether a record is an unconfirmed guess, whatever else it is now (a cold guess is still one)."""
    return bool(row.pending) and view.status(row, now, warm=True) == view.Status.PENDING


# what a sweep may cool (`Index.coolable`); when a record was last accessed (`Row.accessed`)
_COOLABLE = f"r.kind NOT IN ({','.join('?' * len(NEVER_COOL))}) AND r.tier != {int(Tier.REDLINE)} AND r.forgotten = 0"
_TIMES = (WRITTEN_SQL, "r.seen", "r.touched", "r.shown")
_ACCESSED_SQL = (
    f"(CASE WHEN coalesce({', '.join(_TIMES)}) IS NULL THEN NULL "
    f"ELSE max({', '.join(f'coalesce({t}, -1e308)' for t in _TIMES)}) END)"
)


def _marks(values: Iterable[object]) -> str:
    return ",".join("?" for _ in values)


class Filters(Value):
    """What a search is restricted to; every filter is exact (applied in SQL)."""

    domains: tuple[str, ...] = ()
    project: str | None = None
    kind: str | None = None
    tag: str | None = None
    since: float | None = None
    until: float | None = None
    current: bool = False
    include_forgotten: bool = False
    include_cold: bool = False
    include_held: bool = False  # records held in quarantine (`optmem quarantine`): out unless asked for

    def plain(self) -> bool:
        """No filter beyond the defaults (forgotten, cold, held and bookkeeping records left out)."""
        return self == Filters()

    def hidden(self, status: view.Status) -> bool:
        """Whether a record of this status is left out (the filters' status rule in Python)."""
        if self.current:
            return status != view.Status.CURRENT
        return (
            (status == view.Status.FORGOTTEN and not self.include_forgotten)
            or (status == view.Status.COLD and not self.include_cold)
            or (status == view.Status.HELD and not self.include_held)
        )

    def sql(self, now: float) -> tuple[str, list[Any]]:
        """The WHERE clause (on `rec r`) that makes every filter exact."""
        where = [f"r.kind NOT IN ({_marks(BOOKKEEPING)})"]
        params: list[Any] = list(BOOKKEEPING)
        if self.domains:
            where.append(f"r.domain IN ({_marks(self.domains)})")
            params += self.domains
        for value, clause in (
            (self.project, "r.project = ?"),
            (self.kind, "r.kind = ?"),
            (self.tag, "r.n IN (SELECT n FROM tag WHERE tag = ?)"),
            (self.since, "r.ts >= ?"),
            (self.until, "r.ts <= ?"),
        ):
            if value is not None:
                where.append(clause)
                params.append(value)
        if self.current:
            clause, more = view.is_sql(view.Status.CURRENT, now)
            where.append(clause)
            params += more
        for hide, status in (
            (not self.include_forgotten, view.Status.FORGOTTEN),
            (not self.include_cold, view.Status.COLD),
            (not self.include_held, view.Status.HELD),
        ):
            if hide and not self.current:
                clause, more = view.is_sql(status, now)
                where.append(f"NOT {clause}")
                params += more
        return " AND ".join(where), params


def make_filters(
    *,
    domains: list[str] | None = None,
    project: str | None = None,
    kind: str | None = None,
    tag: str | None = None,
    since: str | None = None,
    until: str | None = None,
    current: bool = False,
    include_forgotten: bool = False,
    include_cold: bool = False,
    include_held: bool = False,
) -> Filters:
    """Validated filters from command-line values."""
    for d in domains or []:
        validate_name(d, "domain")
    if project is not None:
        validate_name(project, "project")
    lo = clock.parse_bound(since, end=False) if since else None
    hi = clock.parse_bound(until, end=True) if until else None
    if lo is not None and hi is not None and lo > hi:
        from optmem.errors import UsageError

        raise UsageError(f"--since {since} is after --until {until}: nothing could match; swap them")
    return Filters(
        domains=tuple(dict.fromkeys(domains or [])),
        project=project,
        kind=kind,
        tag=tag,
        since=lo,
        until=hi,
        current=current,
        include_forgotten=include_forgotten,
        include_cold=include_cold,
        include_held=include_held,
    )


class Census(Value):
    """What `stats` counts, all from the index."""

    records: int
    by_domain: dict[str, int]
    by_kind: dict[str, int]
    by_status: dict[str, int]
    key_groups: int
    corrected: dict[str, int]  # id → current records correcting it
    warmth: list[tuple[str, str, int, float | None, int]]  # records a sweep may cool: (status, kind, tier, imp, count)


class Index:
    """An open, up-to-date index of one vault. Use `open_index`.

    Every question other modules ask of `rec` is a method here, so the SQL lives in one place.
    """

    def __init__(self, vault: Vault, conn: sqlite3.Connection) -> None:
        self.vault = vault
        self.conn = conn
        self._fh: dict[int, BinaryIO] = {}  # the log's files, by segment number, opened as read
        self._names: dict[int, str] | None = None  # segment number → file name (`file_of`)
        self._closed = False
        self._renewed: list[bytes] = []  # lines scanned clean on read, their verdicts not kept yet (`passed`)
        self._parsed: dict[int, Record] | None = None  # records read back, by line, while kept (`keep_records`)
        self._tokens: dict[int, list[str]] = {}  # each row's tokens, by line, as read (`tokens_of`)
        self.memo: dict[str, Any] = {}  # what a core module reads once per handle (`memory.hot_rivals`)

    # -- rows ----------------------------------------------------------------------------------
    def rows(self, where: str, params: Iterable[object] = ()) -> list[Row]:
        sql = f"SELECT {ROW_SELECT} FROM rec r WHERE {where}"
        return [Row(*t) for t in self.conn.execute(sql, tuple(params))]

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads that must agree with each other (pages of one list and its count): one read
        transaction, which a process catching the index up cannot change midway."""
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.commit()
            self._keep_verdicts()

    def rows_in(self, ns: list[int]) -> list[Row]:
        """The rows with these line numbers (any order)."""
        out: list[Row] = []
        for i in range(0, len(ns), 500):
            chunk = ns[i : i + 500]
            out += self.rows(f"r.n IN ({_marks(chunk)})", chunk)
        return out

    def by_id(self, rid: str) -> Row | None:
        found = self.rows("r.id = ? ORDER BY r.n LIMIT 1", (rid,))
        return found[0] if found else None

    def current_version(self, row: Row, known: dict[str, Row] | None = None) -> Row:
        """The end of the chain of records that supersede `row` (the current version of its fact).
        `known` remembers the end for every record walked through, so many records of one long
        chain walk it once."""
        known = {} if known is None else known
        path, seen = [], {row.id}
        while row.superseded_by and row.id not in known and row.superseded_by not in seen:
            newer = self.by_id(row.superseded_by)
            if newer is None:
                break
            path.append(row.id)
            seen.add(newer.id)
            row = newer
        end = known.get(row.id, row)
        for rid in path:
            known[rid] = end
        return end

    def resolve(self, ref: str) -> list[Row]:
        """Rows whose id equals `ref`, else starts or ends with it (≥ 6 chars); case-insensitive."""
        return self.rows_in(list(matching_ids(self.conn, ref, 50).values()))

    def record(self, row: Row) -> Record:
        """The full record of a row, read from its log file at its offset (once, while `keep_records`)."""
        if self._parsed is None:
            return parse_line(self.line(row), row.n, None)  # (its bounds were kept when it was indexed)
        rec = self._parsed.get(row.n)
        if rec is None:
            rec = self._parsed[row.n] = parse_line(self.line(row), row.n, None)
        return rec

    def keep_records(self) -> None:
        """Keep each record `record` reads from now on, for this index's life (a search reads its
        candidates' texts several times; a command that reads every record keeps none)."""
        if self._parsed is None:
            self._parsed = {}

    def line(self, row: Row) -> bytes:
        """A row's line in its log file, as stored."""
        fh = self._fh.get(row.seg)
        if fh is None:  # (unbuffered: a buffered read of one line read 8 KiB around it)
            fh = self._fh[row.seg] = open(self.vault.root / self.file_of(row), "rb", buffering=0)
        return os.pread(fh.fileno(), row.len, row.off)  # (no seek: threads may share the index)

    def passed(self, rows: list[Row]) -> set[int]:
        """The line numbers of those rows whose lines the write gate passed whole under the
        current scanner and are unchanged since (`optmem.verdicts`): a surface shows them as
        stored, without scanning them again. A line without that verdict (written under an older
        scanner, typed by hand, brought by sync) is scanned whole as the gate scans, now, and
        keeps the verdict when it passes: the next read shows it without a scan."""
        from optmem import verdicts

        lines = [self.line(r) for r in rows]
        ok = verdicts.clean(self.vault, lines, self.conn)
        if len(ok) < len(rows):
            renewed = [
                i
                for i in range(len(rows))
                if i not in ok and gate_finding(parse_line(lines[i], rows[i].n, None)) is None
            ]
            self._renewed += [lines[i] for i in renewed]
            self._keep_verdicts()
            ok.update(renewed)
        return {rows[i].n for i in ok}

    def _keep_verdicts(self) -> None:
        """Keep the verdicts `passed` renewed — once this connection is in no transaction: inside
        one (a `snapshot`) it holds the verdict store it attached, and the write, through another
        connection, would wait on that lock until it gave up, and keep nothing. The rest are kept
        when the transaction ends, or when the index is closed."""
        if self._renewed and (self._closed or not self.conn.in_transaction):  # (closed: it holds nothing)
            from optmem import verdicts

            lines, self._renewed = self._renewed, []
            verdicts.remember(self.vault, lines, wait=0.5)

    def as_stored(self, rows: list[Row]) -> set[int]:
        """The line numbers of those rows whose words every surface shows as stored, without a
        scan on read (`view.as_stored`: released by a person, or passed by the gate and
        unchanged); the others are scanned. The verdicts are looked up 500 rows at a time."""
        ask = [r for r in rows if not r.held and not r.released]  # (a held record's verdict is its release)
        ok = {n for at in range(0, len(ask), 500) for n in self.passed(ask[at : at + 500])}
        return {r.n for r in rows if view.as_stored(passed=r.n in ok, held=r.held, released=r.released)}

    def tokenised(self, row: Row) -> tuple[Record, str, list[str], list[str]]:
        """A record read back with what the text index holds of it: (the record, its text folded,
        its tokens — `ingest.tokens_for` — and the words of its text). The lists are the caller's
        to read, never to change (a warm handle keeps them: `optmem.warm`)."""
        rec = self.record(row)
        folded = textmod.fold(rec.text)
        toks, words = tokens_for(folded, rec.key, rec.tags, row.ts, row.dates)
        return rec, folded, toks, words

    def tokens_of(self, rows: Iterable[Row]) -> dict[int, list[str]]:
        """Each row's tokens as the text index holds them (`ingest.tokens_for`, in order), by line:
        read from the index (`tok`: one statement for 500 rows), not from the log re-tokenised — a
        record without text, whose tokens the index does not keep, is read and re-tokenised
        (`tokenised`). The lists are the caller's to read, never to change."""
        got = self._tokens
        want = [r for r in rows if r.n not in got]
        for i in range(0, len(want), 500):
            chunk = [r.n for r in want[i : i + 500]]
            for n, body in self.conn.execute(f"SELECT n, body FROM tok WHERE n IN ({_marks(chunk)})", chunk):
                got[n] = body.split(" ") if body else []
        for r in want:
            if r.n not in got:
                got[r.n] = self.tokenised(r)[2]
        return got

    def tokens(self, row: Row) -> list[str]:
        """One row's tokens (`tokens_of`)."""
        known = self._tokens.get(row.n)
        return known if known is not None else self.tokens_of((row,))[row.n]

    def file_of(self, row: Row) -> str:
        """The log file a record is in, as the vault names it (LOG.jsonl, log/<writer>/<month>.jsonl)."""
        if self._names is None:
            self._names = {known["sid"]: name for name, known in known_segments(read_meta(self.conn)).items()}
        return self._names.get(row.seg, "LOG.jsonl")

    def view_of(
        self,
        row: Row,
        now: float,
        record: Record | None = None,
        *,
        passed: bool | None = None,
        guessed: Mapping[str, Any] | None = None,
        across: Mapping[int, tuple[tuple[str, str], ...]] | None = None,
        rivals: Sequence[Row] = (),
    ) -> view.RecordView:
        """The record as callers see it: stored fields plus its effective status, its words shown
        as every surface shows them (`view.as_stored`). `passed`: whether the gate passed its line
        (`passed`), `guessed`: the guesses standing about it (`guesses_of`), and `across`: another
        domain's values of its key (`across_domains`, by line number), when the caller looked them
        up for many rows at once; else each is looked up for this row alone. `rivals`: the other
        versions of a hot entry edited two ways that it is one of (`memory.hot_rivals`)."""
        st = view.status(row, now)
        if passed is None:
            passed = not row.held and bool(self.passed([row]))
        if guessed is None:
            guessed = self.guesses({row.id: row.upd}, now).get(row.id, {}) if st in view.LIVE else {}
        rec = record or self.record(row)
        return view.RecordView(
            rec,
            st,
            row.superseded_by,
            row.n,
            cold_since=row.cold if st == view.Status.COLD else None,
            conflict=(row.disputed or bool(rivals)) and st in view.LIVE,
            guess=is_guess(row, now),
            expired=view.is_expired(row, now),
            unverified=row.tier == Tier.REDLINE and not self.vault.trusted,
            checked=row.checked,
            passed=passed,
            released=bool(row.released),  # (held, or blocked on read: `review.blocked`)
            written=row.wrote,
            outdated=self.outdated_facts(row, rec) if rec.kind == MERGED else None,
            across_domains=(self.across_domains([row], now) if across is None else across).get(row.n, ()),
            **(guessed if st in view.LIVE else {}),
        )

    def guesses_of(self, rows: Iterable[Row], now: float) -> dict[int, dict[str, Any]]:
        """`guesses` about each live row of `rows` (by line number), asked for all of them at once
        (two statements) — what a caller showing many records (`history`, `conflicts`) passes to
        `view_of` for each, which would otherwise ask them again for every record. (Two lines of
        one id that name different records they may update are asked about apart.)"""
        live = [r for r in rows if view.status(r, now) in view.LIVE]
        first: dict[str, str | None] = {}
        for r in live:
            first.setdefault(r.id, r.upd)
        got = self.guesses(first, now)
        return {
            r.n: (got.get(r.id, {}) if first[r.id] == r.upd else self.guesses({r.id: r.upd}, now).get(r.id, {}))
            for r in live
        }

    def guesses(self, live: Mapping[str, str | None], now: float) -> dict[str, dict[str, Any]]:
        """The write gate's guesses that stand about live records (`live`: each one's id and the
        record its line says it may update): the record it may be a new value of while that one is
        live too (`may_update`), and the live records that may be new values of it (`updated_by`)
        — settled (one side corrected, forgotten, expired), a guess no longer stands. The one
        reading every surface takes (`view_of`: get, history, conflicts; search; context), so none
        shows a guess another has settled. Two statements, whatever the number of records."""
        if not live:
            return {}
        ids = list(live)
        by: dict[str, list[str]] = {}
        for at in range(0, len(ids), 500):
            chunk = ids[at : at + 500]
            for r in self.rows(f"r.upd IN ({_marks(chunk)}) ORDER BY r.n", chunk):
                if r.upd is not None and view.status(r, now) in view.LIVE:
                    by.setdefault(r.upd, []).append(r.id)
        olds = sorted({o for o in live.values() if o})
        first: dict[str, Row] = {}  # (an id's first line, as `by_id` reads it)
        for at in range(0, len(olds), 500):
            chunk = olds[at : at + 500]
            for r in self.rows(f"r.id IN ({_marks(chunk)}) ORDER BY r.n", chunk):
                first.setdefault(r.id, r)
        standing = {rid for rid, r in first.items() if view.status(r, now) in view.LIVE}
        out: dict[str, dict[str, Any]] = {}
        for rid, old in live.items():
            got: dict[str, Any] = {}
            if old in standing:
                got["may_update"] = old
            if by.get(rid):
                got["updated_by"] = tuple(by[rid])
            if got:
                out[rid] = got
        return out

    # -- questions about records ---------------------------------------------------------------
    def with_fingerprint(self, fp: str, domain: str | None, project: str | None) -> list[Row]:
        """Records stating the same thing in one domain and project (in any, when `domain` is
        None), newest line first."""
        if domain is None:
            return self.rows("r.fp = ? ORDER BY r.n DESC", (fp,))
        return self.rows("r.fp = ? AND r.domain = ? AND r.project IS ? ORDER BY r.n DESC", (fp, domain, project))

    def has_pending(self) -> bool:
        """Whether any record waits as pending (a cheap partial-index probe)."""
        return (
            self.conn.execute(
                f"SELECT 1 FROM rec WHERE pending != 0 AND confirmed = 0 AND kind NOT IN "
                f"({_marks(BOOKKEEPING)}) LIMIT 1",
                BOOKKEEPING,
            ).fetchone()
            is not None
        )

    def key_group(
        self, key: str, domain: str | None = None, project: str | None = None, *, exact: bool = True
    ) -> list[Row]:
        """Records with `key`; `exact` scopes to one domain and project (a missing project is one
        scope), else `domain`/`project` only narrow when given."""
        if exact:
            return self.rows("r.key = ? AND r.domain = ? AND r.project IS ?", (key, domain, project))
        where, params = "r.key = ?", [key]
        for value, clause in ((domain, " AND r.domain = ?"), (project, " AND r.project = ?")):
            if value:
                where, params = where + clause, params + [value]
        return self.rows(where, params)

    def split_rows(self, key: str, project: str | None, now: float) -> list[Row]:
        """The current values of `key` in `project`, one domain's beside another's, when they differ
        between domains (`facts.SplitKey`), else none."""
        rows = [r for r in self.key_group(key, project=project, exact=False) if r.project == project]
        rows = [r for r in rows if view.KEYED_FACT.test(r) and view.status(r, now) == view.Status.CURRENT]
        if len({r.domain for r in rows}) < 2 or len({self.said_as(r) for r in rows}) < 2:
            return []
        return rows

    def said_as(self, row: Row) -> str:
        """What a keyed value says, a correction's prefix aside (correcting the stale value to the
        other's words agrees): its text's fingerprint, else its id — kept in the index as the
        line was indexed (`said`, `ingest.said_of`; else its `fp`): no line is read back."""
        return row.said or row.fp or row.id

    def across_domains(self, rows: Iterable[Row], now: float) -> dict[int, tuple[tuple[str, str], ...]]:
        """For each of `rows` that is a current value of a key another domain of its project holds a
        different current value of (`split_rows`): those values, (id, domain), oldest first — the
        one reading `view_of` (get, history, conflicts, MCP) and search take. A key no other domain
        holds a live value of costs one look-up."""
        out: dict[int, tuple[tuple[str, str], ...]] = {}
        split: dict[tuple[str, str | None], list[Row]] = {}
        for r in rows:
            if r.key is None or not view.KEYED_FACT.test(r) or view.status(r, now) != view.Status.CURRENT:
                continue
            if (r.key, r.project) not in split:
                other = self.conn.execute(
                    "SELECT 1 FROM rec WHERE key = ? AND domain != ? AND project IS ? AND sup IS NULL LIMIT 1",
                    (r.key, r.domain, r.project),
                ).fetchone()
                split[r.key, r.project] = self.split_rows(r.key, r.project, now) if other else []
            others = split[r.key, r.project]
            if any(o.n == r.n for o in others):
                others = sorted(others, key=lambda o: view.newer_key(o.ts, o.id, o.n))
                out[r.n] = tuple((o.id, o.domain) for o in others if o.domain != r.domain)
        return out

    def key_heads(self, key: str, domain: str, project: str | None) -> list[str]:
        """What a new value of a key is written after (`view.concurrent`): every value of it that
        no other value of it lists as seen, whatever it is now (current, superseded, a guess not
        yet confirmed). Its writer holds the vault's lock, so it has seen every line of the log —
        not only the values that hold the key now: a value written after a newer-dated one (its
        writer dated it, then waited for the lock) or a guess confirmed later was seen too, and on
        one clone no two values read as concurrent; values written on two clones before a sync
        do. Habits and states of a key are decided apart (`view.key_winner`): a value listed by
        a member of the other part only is listed again. A value written before optmem recorded
        what was seen is listed while it holds the key."""
        group = self.key_group(key, domain, project)
        listed = {(r.state, rid) for r in group if r.after for rid in json.loads(r.after)}
        holding = {r.id for r in self._heads(key, domain, project)} if any(r.after is None for r in group) else set()
        return [r.id for r in group if (r.state, r.id) not in listed and (r.after is not None or r.id in holding)]

    def _heads(self, key: str, domain: str, project: str | None) -> list[Row]:
        return [
            r
            for r in self.key_group(key, domain, project)
            if r.ksup is None and not r.forgotten and not (r.pending and not r.confirmed)
        ]

    def outdated_facts(self, row: Row, rec: Record) -> dict[str, str] | None:
        """The facts of a merged record that a value of their key written after the merge has
        replaced — {key: the newer value's id} — or None (not merged, or nothing newer). The merge
        superseded the fragments; a later value of one of its keys outdates that fact alone — a
        value that says the fact again (the same fingerprint) does not."""
        facts = rec.extra.get("facts") if rec.kind == MERGED else None
        if not isinstance(facts, dict):
            return None
        mine = view.newer_key(row.ts, row.id, row.n)
        out = {}
        for key, value in facts.items():
            # the same value said again ("Backend port is 8080." after it was merged) replaces nothing
            same = textmod.fingerprint(value) if isinstance(value, str) else None
            newer = [
                r
                for r in self._heads(str(key), row.domain, row.project)
                if view.newer_key(r.ts, r.id, r.n) > mine and (same is None or r.fp != same)
            ]
            if newer:
                out[str(key)] = max(newer, key=lambda r: view.newer_key(r.ts, r.id, r.n)).id
        return out or None

    def merged_holding(self, key: str, domain: str | None, project: str | None) -> list[Row]:
        """Merged records (in the scope `key_group(exact=False)` reads) whose facts hold `key`."""
        where, params = "r.kind = ?", [MERGED]
        for value, clause in ((domain, " AND r.domain = ?"), (project, " AND r.project = ?")):
            if value:
                where, params = where + clause, params + [value]
        return [r for r in self.rows(where, params) if key in (self.record(r).extra.get("facts") or {})]

    def journal(self, file: str) -> list[Row]:
        """The hot-memory journal of one file (`hot:<file>:<entry>` keys), oldest first (by time,
        then id: the order every clone agrees on, whichever log file an operation is in)."""
        prefix = f"hot:{file}:"
        return self.rows(
            f"r.key >= ? AND r.key < ? AND r.kind = ? ORDER BY {OLDEST_FIRST}", (prefix, prefix + "\U0010ffff", MEMORY)
        )

    def journal_newest(self, file: str) -> Row | None:
        """The newest record of one hot file's journal (`journal`'s last)."""
        prefix = f"hot:{file}:"
        rows = self.rows(
            f"r.key >= ? AND r.key < ? AND r.kind = ? ORDER BY {NEWEST_FIRST} LIMIT 1",
            (prefix, prefix + "\U0010ffff", MEMORY),
        )
        return rows[0] if rows else None

    def superseded_by_id(self, rid: str) -> list[Row]:
        """Records that `rid` supersedes (by correction or by key)."""
        return self.rows("r.sup = ? OR r.ksup = ?", (rid, rid))

    def correcting(self, row: Row) -> list[Row]:
        """Every record that corrects `row` (the links the view applied) — more than one when it
        was corrected on two clones and git merged both."""
        return self.rows("r.n IN (SELECT s FROM cor WHERE t = ?) ORDER BY r.n", (row.n,))

    def corrected(self, row: Row) -> list[Row]:
        """Every record `row` corrects (the links the view applied)."""
        return self.rows("r.n IN (SELECT t FROM cor WHERE s = ?) ORDER BY r.n", (row.n,))

    def versions(self, row: Row) -> list[Row]:
        """Every later version of `row`: the records correcting it, those correcting them, …"""
        return self.rows(
            "r.n IN (WITH RECURSIVE d(n) AS (SELECT s FROM cor WHERE t = ? UNION "
            "SELECT c.s FROM cor c JOIN d ON c.t = d.n) SELECT n FROM d) ORDER BY r.n",
            (row.n,),
        )

    def first_versions(self, row: Row) -> list[Row]:
        """The first versions of the facts `row` belongs to: what it corrects, followed back to
        records that correct nothing (the record itself when it corrects nothing)."""
        from optmem.ingest import roots

        return self.rows_in(sorted(roots(self.conn, row.n)))

    def conflict_with(self, row: Row, now: float, hot: Sequence[Row] = ()) -> list[str]:
        """The other values a record is in conflict with (their ids, oldest first): of its key, of
        the fact it is a version of, and (`hot`: `memory.hot_rivals`, which core reads) of the hot
        entry it is a version of; [] when it is in none."""
        if not (row.disputed or hot) or view.status(row, now) not in view.LIVE:
            return []
        rivals = list(hot)
        if row.conflict and row.key:
            rivals += [
                r for r in self.key_group(row.key, row.domain, row.project) if r.state == row.state and r.conflict
            ]
        if row.fork:
            for first in self.first_versions(row):
                rivals += [r for r in self.versions(first) if r.fork]
        return [
            r.id
            for r in sorted({r.n: r for r in rivals}.values(), key=lambda r: view.newer_key(r.ts, r.id, r.n))
            if r.n != row.n and view.status(r, now) in view.LIVE
        ]

    def tombstones(self, rid: str) -> list[Row]:
        """The `forget` records of a record, oldest first."""
        return self.rows("r.kind = ? AND r.ref = ? ORDER BY r.n", ("forget", rid.upper()))

    def forgetting(self, row: Row) -> dict[str, Any]:
        """What forgot a forgotten record — {"forgotten_by": the last tombstone's id,
        "forget_reason": its reason} — whatever else superseded it; {} for any other record."""
        tombs = self.tombstones(row.id) if row.forgotten else []
        if not tombs:
            return {}
        tomb = self.record(tombs[-1])
        return {"forgotten_by": tomb.id, "forget_reason": tomb.extra.get("reason")}

    def current_redlines(
        self, now: float, domain: str | None = None, *, limit: int | None = None, offset: int = 0
    ) -> list[Row]:
        """Current redlines (of one domain, or all), newest first: all of them, or `limit` of
        them after the first `offset` (a page: what `context` can show is read, not every one)."""
        where, params = self._redlines_sql(now, domain)
        page: list[object] = [] if limit is None else [limit, offset]
        return self.rows(where + f" ORDER BY {NEWEST_FIRST}" + (" LIMIT ? OFFSET ?" if page else ""), params + page)

    def count_redlines(self, now: float, domain: str | None = None, *, held: bool = False) -> int:
        """How many current redlines there are (of one domain, or all) — those `context` shows —
        or, `held`, how many more wait in quarantine: counted, not read."""
        where, params = self._redlines_sql(now, domain, view.Status.HELD if held else view.Status.CURRENT)
        n: int = self.conn.execute(f"SELECT count(*) FROM rec r WHERE {where}", params).fetchone()[0]
        return n

    def _redlines_sql(
        self, now: float, domain: str | None, status: view.Status = view.Status.CURRENT
    ) -> tuple[str, list[object]]:
        current, params = view.is_sql(status, now)
        where = f"r.tier = {int(Tier.REDLINE)} AND r.kind NOT IN ({_marks(BOOKKEEPING)}) AND {current}"
        if domain:
            return where + " AND r.domain = ?", [*BOOKKEEPING, *params, domain]
        return where, [*BOOKKEEPING, *params]

    def unchecked_candidates(self, before: float, check_importance: float, unwritten: bool) -> list[Row]:
        """Records written before `before` and not verified since that may be facts that matter
        (keyed, redlines, written at least `check_importance` important — or, `unwritten`, of no
        written importance): `lifecycle.unchecked` decides."""
        either = " OR r.imp IS NULL" if unwritten else ""
        return self.rows(
            f"r.kind NOT IN ({_marks(NEVER_COOL)}) AND (r.key IS NOT NULL OR r.tier = ? OR r.imp >= ?{either})"
            " AND (r.ts < ? OR r.ts IS NULL) AND coalesce(r.verified, 0) < ?",
            [*NEVER_COOL, int(Tier.REDLINE), check_importance, before, before],
        )

    def recent(
        self,
        now: float,
        *,
        project: str | None = None,
        domain: str | None = None,
        exclude_kinds: tuple[str, ...] = (),
        limit: int = 20,
    ) -> list[Row]:
        """The current records that are not redlines, last used (written, said again or recalled
        — not shown by context) first, optionally of one project/domain."""
        kinds = (*BOOKKEEPING, *exclude_kinds)
        current, params = view.is_sql(view.Status.CURRENT, now)
        where = f"r.kind NOT IN ({_marks(kinds)}) AND r.tier != {int(Tier.REDLINE)} AND {current}"
        params = [*kinds, *params]
        for value, clause in ((project, " AND r.project = ?"), (domain, " AND r.domain = ?")):
            if value:
                where, params = where + clause, params + [value]
        got = self.rows(where + f" ORDER BY {USED_SQL} DESC, r.n DESC LIMIT ?", params + [limit + 1])
        if len(got) > limit and got[limit].used == (cut := got[limit - 1].used) and cut is not None:
            # the cut falls among records used at one time: those are chosen as every clone would
            # (`TIES`), not by index key (read through `rec_used` too)
            above = [r for r in got if r.used != cut]
            got = above + self.rows(
                where + f" AND {USED_SQL} = ? ORDER BY {TIES} LIMIT ?", params + [cut, limit - len(above)]
            )
        # (records used at one time: newer first, as `view.tie_key` decides)
        return sorted(got[:limit], key=lambda r: (r.used or 0.0, r.ts or 0.0, view.tie_key(r.id, r.n)), reverse=True)

    def keyed_current(
        self, now: float, project: str, domain: str | None, exclude_kinds: tuple[str, ...], limit: int
    ) -> list[Row]:
        """The project's current keyed facts (of `domain`, if given), newest first: each a value
        that holds its key now (two that stand together both) — not a redline, a commit or other
        bookkeeping, nor a key naming a source (`commit:…`, `claude-code:…`)."""
        kinds = (*BOOKKEEPING, *exclude_kinds)
        current, params = view.is_sql(view.Status.CURRENT, now)
        where = (
            f"r.key IS NOT NULL AND instr(r.key, ':') = 0 AND r.project = ? AND r.kind NOT IN ({_marks(kinds)})"
            f" AND r.tier != {int(Tier.REDLINE)} AND {current}"
        )
        params = [project, *kinds, *params]
        if domain:
            where, params = where + " AND r.domain = ?", params + [domain]
        return self.rows(where + f" ORDER BY {NEWEST_FIRST} LIMIT ?", params + [limit])

    def handoffs(
        self, project: str | None, limit: int | None, domain: str | None = None, *, forgotten: bool = False
    ) -> list[Row]:
        """Handoff records that are not forgotten (of `domain`, if given), newest first; with
        `forgotten`, the forgotten ones too (what their writers had seen still counts: `handoff._heads`)."""
        # literals: the partial index applies
        where = f"r.kind = '{HANDOFF}'" + ("" if forgotten else " AND r.forgotten = 0")
        params: list[Any] = []
        if project is not None:
            where, params = where + " AND r.project = ?", params + [project]
        if domain is not None:
            where, params = where + " AND r.domain = ?", params + [domain]
        where += f" ORDER BY {NEWEST_FIRST}"
        if limit:
            where, params = where + " LIMIT ?", params + [limit]
        return self.rows(where, params)

    def handoff_domains(self, project: str) -> list[str]:
        """The domains of the project's handoff records that are not forgotten (each agent writes
        under its own: `hermes`, `code` …)."""
        got = self.conn.execute(
            f"SELECT DISTINCT r.domain FROM rec r WHERE r.kind = '{HANDOFF}' AND r.forgotten = 0 AND r.project = ?",
            [project],
        )
        return sorted(d for (d,) in got if isinstance(d, str))

    def coolable(self) -> Iterator[Row]:
        """Every record a sweep may cool (not a redline, bookkeeping, hot-memory journal or
        forgotten), streamed."""
        for t in self.conn.execute(f"SELECT {ROW_SELECT} FROM rec r WHERE {_COOLABLE}", NEVER_COOL):
            yield Row(*t)

    def warm_counts(
        self, now: float, statuses: tuple[str, ...], since: dict[tuple[str, int, float | None], list[float | None]]
    ) -> list[int]:
        """How many records a sweep may cool, of `statuses`, were last accessed (`Row.accessed`;
        never: now) at or after each of their group's times: `since` maps (kind, tier, importance
        as written) to times (None: never counts) — `stats`' heat bands, counted by SQLite however
        large the log (a million rows read into Python took seconds)."""
        width = max((len(t) for t in since.values()), default=0)
        if not width:
            return []
        self.conn.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS cut(kind, tier, imp, {', '.join(f'c{i}' for i in range(width))})"
        )
        self.conn.execute("DELETE FROM temp.cut")
        self.conn.executemany(
            f"INSERT INTO temp.cut VALUES (?, ?, ?{', ?' * width})",
            [(*group, *times) for group, times in since.items()],
        )
        status, params = view.status_sql(now)
        accessed = f"coalesce({_ACCESSED_SQL}, ?)"
        sums = ", ".join(f"coalesce(sum(a >= c.c{i}), 0)" for i in range(width))
        sql = (
            f"SELECT {sums} FROM (SELECT r.kind, r.tier, r.imp, {accessed} AS a FROM rec r "
            f"WHERE {_COOLABLE} AND {status} IN ({_marks(statuses)})) r "
            f"JOIN temp.cut c ON c.kind = r.kind AND c.tier = r.tier AND c.imp IS r.imp"
        )
        return list(self.conn.execute(sql, (now, *NEVER_COOL, *params, *statuses)).fetchone())

    def pending_ages(self, now: float, days: tuple[int, ...]) -> list[int]:
        """How many pending records a sweep may cool were written less than each of `days` ago
        (no time: now), and how many there are."""
        pending, params = view.is_sql(view.Status.PENDING, now)
        sums = ", ".join("coalesce(sum(? - coalesce(nullif(r.ts, 0), ?) < ?), 0)" for _ in days)
        args = [a for d in days for a in (now, now, d * 86400.0)]
        sql = f"SELECT {sums}, count(*) FROM rec r WHERE {_COOLABLE} AND {pending}"
        return list(self.conn.execute(sql, (*args, *NEVER_COOL, *params)).fetchone())

    def in_conflict(self) -> list[Row]:
        """Records marked as one of the values of a key in conflict. (Through the two partial
        indexes: SQLite reads `conflict != 0 OR fork != 0` as a scan of every record — 170 ms at
        100,000 — where the indexes hold the few marked ones.)"""
        return self.rows(
            "r.n IN (SELECT n FROM rec WHERE conflict != 0 UNION SELECT n FROM rec WHERE fork != 0) "
            "ORDER BY r.key, r.ts, r.n"
        )

    def pending_rows(self) -> list[Row]:
        """Records stored as pending and not confirmed, oldest first."""
        return self.rows(
            f"r.pending != 0 AND r.confirmed = 0 AND r.kind NOT IN ({_marks(BOOKKEEPING)}) ORDER BY r.ts, r.n",
            BOOKKEEPING,
        )

    def restatements(self, row: Row) -> int:
        """How many other conversations (or sessionless records) said this record again."""
        said: int = self.conn.execute(
            "SELECT count(DISTINCT coalesce(r.session, r.id)) FROM rec r WHERE r.ref = ? AND r.kind = ? "
            "AND (r.session IS NULL OR r.session IS NOT ?)",
            (row.id.upper(), SEEN, row.session),
        ).fetchone()[0]
        return said

    def hot_noted(self) -> str | None:
        """The hot files' state (`hot_state`) when their edits were last journalled."""
        return read_meta(self.conn).get("hot")

    def has_journal(self) -> bool:
        """Whether any hot-memory journal record exists."""
        return self.conn.execute("SELECT 1 FROM rec WHERE kind = ? LIMIT 1", (MEMORY,)).fetchone() is not None

    def note_hot(self, state: str) -> None:
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('hot', ?)", (state,))

    def lines(self) -> int:
        """How many log lines the index has read (from its meta: no count of the table)."""
        return int(read_meta(self.conn).get("lines", "0"))

    def has_cold(self) -> bool:
        """Whether any record carries a sweep's cold mark (warm again since, or not): a vault
        never swept has no cold records for a search to weigh (one look-up in `rec_cold`)."""
        return self.conn.execute("SELECT 1 FROM rec WHERE cold IS NOT NULL LIMIT 1").fetchone() is not None

    def last_sweep(self) -> float | None:
        """When the last sweep ran (from ACCESS.jsonl), or None."""
        value = read_meta(self.conn).get("last_sweep")
        return float(value) if value else None

    def domain_records(self, domain: str) -> list[Row]:
        """A domain's records (bookkeeping left out) in time order: what the tree rolls up."""
        return self.rows(
            f"r.domain = ? AND r.kind NOT IN ({_marks(BOOKKEEPING)}) ORDER BY r.ts, r.id, r.n", (domain, *BOOKKEEPING)
        )

    def kinds_by_id(self, domain: str) -> dict[str, str]:
        """The kind of each record of a domain, by id (the first line of an id, as `by_id`): what
        a summary node counts, without reading whole rows."""
        sql = "SELECT id, kind FROM rec WHERE domain = ? ORDER BY n DESC"
        return dict(self.conn.execute(sql, (domain,)).fetchall())

    def domains(self) -> list[str]:
        """Every domain that has a record (bookkeeping left out)."""
        return [
            d
            for (d,) in self.conn.execute(
                f"SELECT DISTINCT domain FROM rec WHERE kind NOT IN ({_marks(BOOKKEEPING)}) ORDER BY domain",
                BOOKKEEPING,
            )
        ]

    def ids(self, domain: str | None = None) -> set[str]:
        """Every record id (of one domain)."""
        if domain is None:
            return {r for (r,) in self.conn.execute("SELECT id FROM rec")}
        return {r for (r,) in self.conn.execute("SELECT id FROM rec WHERE domain = ?", (domain,))}

    def census(self, now: float, *, fact_exclude: tuple[str, ...] = ()) -> Census:
        """Counts for `stats`. `fact_exclude`: kinds whose keys are bookkeeping, not facts."""
        q = self.conn.execute
        case, cp = view.status_sql(now)
        by_domain: dict[str, int] = {}
        by_kind: dict[str, int] = {}
        by_status = {s.value: 0 for s in view.Status}
        warmth: dict[tuple[str, str, int, float | None], int] = {}
        # one pass over the records for every count (each a pass of its own took a second at 1M)
        for domain, kind, status, tier, imp, coolable, n in q(
            f"SELECT r.domain, r.kind, {case}, r.tier, r.imp, {_COOLABLE}, count(*) FROM rec r "
            "GROUP BY 1, 2, 3, 4, 5, 6",
            [*cp, *NEVER_COOL],
        ):
            if coolable:
                warmth[(status, kind, tier, imp)] = warmth.get((status, kind, tier, imp), 0) + n
            if kind in BOOKKEEPING:
                continue
            by_domain[domain] = by_domain.get(domain, 0) + n
            by_kind[kind] = by_kind.get(kind, 0) + n
            by_status[status] += n
        current, curp = view.is_sql(view.Status.CURRENT, now)
        keyed = "r.key IS NOT NULL" + (f" AND r.kind NOT IN ({_marks(fact_exclude)})" if fact_exclude else "")
        key_groups = q(
            f"SELECT count(*) FROM (SELECT 1 FROM rec r WHERE {keyed} GROUP BY r.domain, r.project, r.key)",
            fact_exclude,
        ).fetchone()[0]
        corrected: dict[str, int] = {}
        for (corrects,) in q(f"SELECT r.corrects FROM rec r WHERE r.corrects IS NOT NULL AND {current}", curp):
            for target in json.loads(corrects):
                corrected[target] = corrected.get(target, 0) + 1
        return Census(
            sum(by_kind.values()),
            dict(sorted(by_domain.items())),
            dict(sorted(by_kind.items())),
            by_status,
            key_groups,
            corrected,
            [(*group, n) for group, n in warmth.items()],
        )

    # -- the text index ------------------------------------------------------------------------
    def doc_freq(self, terms: list[str]) -> dict[str, int]:
        """How many records hold each term (0 when none): read from `df`, by the term."""
        return dict.fromkeys(terms, 0) | self.term_counts(terms)

    def term_counts(self, terms: list[str]) -> dict[str, int]:
        """How many records hold each term that some record holds (`df`: read by the term, in
        one statement — a query's terms are few; however many records hold a word)."""
        out: dict[str, int] = {}
        unique = list(dict.fromkeys(terms))
        for i in range(0, len(unique), 500):
            chunk = unique[i : i + 500]
            out.update(self.conn.execute(f"SELECT term, doc FROM df WHERE term IN ({_marks(chunk)})", chunk))
        return out

    def lengths(self) -> tuple[int, float, float, float]:
        """(documents in the text index, their mean length in tokens, the spread of lengths as
        std / mean, the share of them that are turns of a conversation) — for BM25."""
        meta = read_meta(self.conn)
        docs = int(meta.get("docs", "0"))
        if not docs:
            return 0, 1.0, 0.0, 0.0
        mean = int(meta.get("tokens", "0")) / docs
        variance = max(0.0, int(meta.get("squares", "0")) / docs - mean * mean)
        return docs, mean, (variance**0.5) / mean if mean else 0.0, int(meta.get("turns", "0")) / docs

    def in_sessions(self, spans: list[tuple[str, str, int, int]], where: str, params: list[Any]) -> list[Row]:
        """The records at places first..last of a session of a domain that pass a WHERE clause on
        `rec r`, for each (session, domain, first, last) span, in one statement: the spans are one
        JSON parameter, each an indexed range read (a row in two spans comes twice; span by span,
        each in the index's order). Its text is the same for any number of spans, so SQLite plans
        it once a connection — not a UNION ALL of one SELECT a span, a new statement to prepare
        for every search (~1 ms for ten spans). A SQLite without its JSON functions gets the UNION."""
        if not spans:
            return []
        if any("\x00" in session or "\x00" in domain for session, domain, _, _ in spans):
            return self.in_sessions_united(spans, where, params)  # (JSON's strings end at a NUL)
        sql = (
            f"SELECT {ROW_SELECT} FROM json_each(?) s JOIN rec r ON r.session = json_extract(s.value, '$[0]') "
            "AND r.domain = json_extract(s.value, '$[1]') "
            "AND r.spos BETWEEN json_extract(s.value, '$[2]') AND json_extract(s.value, '$[3]') "
            f"WHERE {where} ORDER BY s.key, r.spos, r.n"
        )
        try:
            return [Row(*t) for t in self.conn.execute(sql, [json.dumps(spans), *params])]
        except sqlite3.OperationalError:  # (no JSON functions: a SQLite built without them)
            return self.in_sessions_united(spans, where, params)

    def in_sessions_united(self, spans: list[tuple[str, str, int, int]], where: str, params: list[Any]) -> list[Row]:
        """`in_sessions` without SQLite's JSON functions: one SELECT a span, joined by UNION ALL."""
        one = (
            f"SELECT {ROW_SELECT} FROM rec r WHERE r.session = ? AND r.domain = ? AND r.spos BETWEEN ? AND ? "
            f"AND {where}"
        )
        out: list[Row] = []
        for i in range(0, len(spans), 100):  # (SQLite joins at most 500 SELECTs in one)
            chunk = spans[i : i + 100]
            values = [v for span in chunk for v in (*span, *params)]
            out += [Row(*t) for t in self.conn.execute(" UNION ALL ".join([one] * len(chunk)), values)]
        return out

    def top_lines(self, match: str, order: str, limit: int) -> list[int]:
        """Line numbers of the records matching an FTS5 query, in FTS5 alone (no filter): the
        best by BM25 (`BEST`) or the newest (`NEWEST`). Equal scores at the cut are decided as
        `TIES` decides them, never by the order the index holds the records in (which can differ
        between clones of one vault). One statement scores each match once: the `limit`-th best
        score is the cut, and only the records scoring at least as well are read from `rec` (the
        tied ones ordered by `TIES`) — a corpus of equal-length records ties at the cut often, and
        a second pass to find the tied records scored every match again."""
        if order == NEWEST:
            return self.newest_lines(match, limit)
        # (`f` is named twice: SQLite keeps its rows rather than running the match again)
        got = self.conn.execute(
            "WITH f AS (SELECT rowid AS n, bm25(fts) AS s FROM fts WHERE fts MATCH ?) "
            "SELECT f.n FROM f JOIN rec r ON r.n = f.n "
            "WHERE f.s <= coalesce((SELECT s FROM f ORDER BY s LIMIT 1 OFFSET ?), f.s) "
            f"ORDER BY f.s, {TIES} LIMIT ?",
            (match, limit - 1, limit),
        )
        return [n for (n,) in got]

    def top_rows(self, match: str, limit: int) -> tuple[list[Row], int]:
        """The rows of `top_lines(match, BEST, limit)` (in the order `rows_in` gives them: by line),
        and how many records match in all (`count_matches(match)`) — from the same statement: the
        matches it scores are counted as they stand, not matched a second time (a common word's
        count read its postings again, ~0.8 ms at 100k), nor are the rows looked up again by line."""
        best, count = self.best_rows(match, limit)
        return sorted(best, key=lambda r: r.n), count

    def best_rows(self, match: str, limit: int) -> tuple[list[Row], int]:
        """`top_rows` in BM25's order (`BEST`, ties as `TIES` breaks them), as `matches(match,
        where, params, BEST, limit)` lists them without a filter: FTS5 ranks its matches alone and
        only the winners are joined with their rows (a join per match cost more than the ranking)."""
        got = self.conn.execute(
            "WITH f AS (SELECT rowid AS n, bm25(fts) AS s FROM fts WHERE fts MATCH ?) "
            f"SELECT {ROW_SELECT}, (SELECT count(*) FROM f) FROM f JOIN rec r ON r.n = f.n "
            "WHERE f.s <= coalesce((SELECT s FROM f ORDER BY s LIMIT 1 OFFSET ?), f.s) "
            f"ORDER BY f.s, {TIES} LIMIT ?",
            (match, limit - 1, limit),
        ).fetchall()
        return [Row(*t[:-1]) for t in got], got[0][-1] if got else 0

    def newest_lines(self, match: str, limit: int, where: str | None = None, params: Sequence[Any] = ()) -> list[int]:
        """Line numbers of the newest records (`TIES`) that match an FTS5 query (and a WHERE clause
        on `rec r`) — the same records on every clone, newest second first. A record's index key
        begins with the second of its time (`record.place`), so the matches are read from the end
        of the index, as many as asked for; only when the cut falls inside a second are that
        second's other matches read, and chosen as `TIES` orders them (within a second the keys
        follow lines and file hashes, and a key two files' records share goes to the one a clone
        indexed first)."""
        sql, args = "SELECT fts.rowid FROM fts WHERE fts MATCH ?", [match]
        if where is not None:
            sql = f"SELECT fts.rowid FROM fts JOIN rec r ON r.n = fts.rowid WHERE fts MATCH ? AND {where}"
            args = [match, *params]
        got = [n for (n,) in self.conn.execute(f"{sql} ORDER BY fts.rowid DESC LIMIT ?", (*args, limit + 1))]
        if len(got) <= limit or second_of(got[limit]) != (cut := second_of(got[limit - 1])):
            return got[:limit]
        done = [n for n in got if second_of(n) > cut]
        lo, hi = seconds_places(cut)
        tied = self.conn.execute(
            f"SELECT r.n FROM fts JOIN rec r ON r.n = fts.rowid WHERE fts MATCH ? AND {where or '1'} "
            f"AND fts.rowid BETWEEN ? AND ? ORDER BY {TIES} LIMIT ?",
            (match, *params, lo, hi, limit - len(done)),
        )
        return done + [n for (n,) in tied]

    def replaced_matches(self, match: str, window: int, limit: int) -> list[Row]:
        """Superseded records (not bookkeeping) among the newest `window` matches of an FTS5 query
        (`newest_lines`), newest first: bounded work however many records match and however few
        are superseded."""
        lines = self.newest_lines(match, window)
        out: list[Row] = []
        for i in range(0, len(lines), 500):
            chunk = lines[i : i + 500]
            out += self.rows(
                f"r.n IN ({_marks(chunk)}) AND (r.sup IS NOT NULL OR r.ksup IS NOT NULL) "
                f"AND r.kind NOT IN ({_marks(BOOKKEEPING)})",
                [*chunk, *BOOKKEEPING],
            )
        return sorted(out, key=lambda r: (r.ts or 0.0, view.tie_key(r.id, r.n)), reverse=True)[:limit]

    def matches(
        self, match: str, where: str, params: list[Any], order: str, limit: int, *, redlines: bool = False
    ) -> Iterator[Row]:
        """Rows matching an FTS5 query and a WHERE clause on `rec r` (`order` over `fts`);
        `redlines` searches the redline-only text index instead."""
        table = "fts_red" if redlines else "fts"
        ties = f", {TIES}" if order and not order.endswith(TIES) else ""  # equals: the newer first, on every clone
        sql = (
            f"SELECT {ROW_SELECT} FROM {table} JOIN rec r ON r.n = {table}.rowid "
            f"WHERE {table} MATCH ? AND {where} {order.replace('fts', table)}{ties} LIMIT ?"
        )
        for t in self.conn.execute(sql, (match, *params, limit)):
            yield Row(*t)

    def count_matches(self, match: str, where: str | None = None, params: list[Any] | None = None) -> int:
        """How many records match an FTS5 query (and a WHERE clause on `rec r`)."""
        if where is None:
            sql, args = "SELECT count(*) FROM fts WHERE fts MATCH ?", (match,)
        else:
            sql = f"SELECT count(*) FROM fts JOIN rec r ON r.n = fts.rowid WHERE fts MATCH ? AND {where}"
            args = (match, *(params or []))
        n: int = self.conn.execute(sql, args).fetchone()[0]
        return n

    # -- health --------------------------------------------------------------------------------
    def bad_lines(self) -> list[tuple[int, str, str]]:
        """(line in its file, code, message) of each line the index skipped."""
        return [
            (line_of(n), code, msg) for n, code, msg in self.conn.execute("SELECT n, code, message FROM bad ORDER BY n")
        ]

    def warnings(self) -> list[str]:
        """What a reader should be told about the log: lines it had to skip."""
        bad = [line_of(n) for n, _, _ in self.conn.execute("SELECT n, code, message FROM bad ORDER BY n LIMIT 6")]
        if not bad:
            return []
        total = self.conn.execute("SELECT count(*) FROM bad").fetchone()[0]
        shown = ", ".join(map(str, bad[:5])) + (", …" if total > 5 else "")
        where = "the log" if self.vault.segmented else "LOG.jsonl"
        return [
            f"{where}: skipped {total} unparseable line(s) (line {shown}); they stay in the "
            "file — run `optmem doctor` to see them"
        ]

    def count(self) -> int:
        n: int = self.conn.execute("SELECT count(*) FROM rec").fetchone()[0]
        return n

    def has_tag(self, tag: str) -> bool:
        """Whether any record has this tag."""
        return self.conn.execute("SELECT 1 FROM tag WHERE tag = ? LIMIT 1", (tag,)).fetchone() is not None

    def tags(self, limit: int) -> list[str]:
        """The most used tags, most used first."""
        return [
            t
            for (t,) in self.conn.execute(
                "SELECT tag FROM tag GROUP BY tag ORDER BY count(*) DESC, tag LIMIT ?", (limit,)
            )
        ]

    def values(self, column: str) -> list[str]:
        """Every value a record has in `column` (`kind`, `domain` or `project`; bookkeeping left out)."""
        assert column in ("kind", "domain", "project"), column
        return [
            v
            for (v,) in self.conn.execute(
                f"SELECT DISTINCT {column} FROM rec WHERE kind NOT IN ({_marks(BOOKKEEPING)}) "
                f"AND {column} IS NOT NULL ORDER BY {column}",
                BOOKKEEPING,
            )
        ]

    def close(self) -> None:
        """Close the log's files and the connection — or, for a warm handle's vault
        (`optmem.warm`), give the connection back to it for the next call."""
        for fh in self._fh.values():
            fh.close()
        self._fh.clear()
        if self._closed:
            return
        self._closed = True
        if self.vault.warm is not None:
            self.vault.warm.give(self.conn, self.vault)  # (kept only out of a transaction: `warm`)
        else:
            self.conn.close()
        self._keep_verdicts()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- keeping up with the log -------------------------------------------------------------
    def sync(self, progress: Progress | None = None) -> None:
        """Catch up with lines appended since the last sync (the caller holds the vault lock)."""
        meta = read_meta(self.conn)
        if not _view_ok(self.vault, meta) or meta.get("schema") != SCHEMA:
            raise NeedsRebuild()
        # (nothing to do: returns at once)
        from optmem import lost

        # (what the log holds, for this clone's `held` note: kept in the index's meta, in the same
        # transaction, until a lock holder appends it — `catch_up`, `_caught_up`)
        consume(self.conn, self.vault.segments(), meta, progress, released=self.vault.own_releases, hold=lost.to_hold)
        self._names = None
        files, own = self.vault.access_files(), self.vault.own_access()
        if not access_in_step(files, read_meta(self.conn), own):
            consume_access(self.conn, files, own)


def view_meta(vault: Vault) -> dict[str, str]:
    """The settings the effective view depends on, as the index's meta records them: an index
    built with others is rebuilt (a changed conflict window re-decides every key group)."""
    return {
        "conflict_window": repr(vault.settings.consolidation.conflict_window_days * 86400.0),
        # which lines are records (`parse_line`): an index an older optmem built with the vault's
        # `[limits] record_bytes` as its read bound (a lowered one hid lines) is built again
        "read_bytes": str(READ_BYTES),
    }


def _view_ok(vault: Vault, meta: dict[str, str]) -> bool:
    return all(meta.get(k) == v for k, v in view_meta(vault).items())


def _connect(path: Path) -> sqlite3.Connection:
    # `with conn:` commits the transaction an insert or update opened
    conn = sqlite3.connect(path, timeout=30, isolation_level="DEFERRED", check_same_thread=False)
    conn.execute("PRAGMA synchronous=OFF")  # derived data: a crash only costs a rebuild
    conn.execute("PRAGMA temp_store=MEMORY")
    return conn


def in_step(vault: Vault) -> bool:
    """Whether the index exists and already reflects the log and ACCESS.jsonl (nothing to catch
    up); changes nothing."""
    conn = _fresh(vault, apply_access=False)
    if conn is None:
        return False
    conn.close()
    return True


def _fresh(vault: Vault, *, apply_access: bool = True) -> sqlite3.Connection | None:
    """The index connection when it is usable and already in step with the log (recalls and
    sweeps applied, unless `apply_access` is off: then they must be in step too), else None."""
    path = vault.index_path
    if not path.exists():
        return None
    conn = None
    try:
        conn = _connect(path)
        if usable(vault, conn, apply_access=apply_access):
            return conn
        conn.close()
    except sqlite3.DatabaseError:
        if conn is not None:
            conn.close()
    return None


def usable(vault: Vault, conn: sqlite3.Connection, *, apply_access: bool = True) -> bool:
    """Whether an open index connection reflects the log as it is now and the settings the view
    depends on — ACCESS.jsonl's recalls and sweeps applied first, unless `apply_access` is off
    (then they must be in step too). A new connection is checked so, and a warm handle's kept
    one at every call (`optmem.warm`)."""
    meta = read_meta(conn)
    if not (segments_in_step(vault.segments(), meta) and _view_ok(vault, meta)):
        return False
    files, own = vault.access_files(), vault.own_access()
    if access_in_step(files, meta, own):
        return True
    if apply_access:
        # recalls and sweeps need no vault lock: applying them twice changes nothing
        consume_access(conn, files, own)
        return True
    return False


PARALLEL_MIN_BYTES = 1 << 20  # below this a worker pool costs more than it saves


def build(
    vault: Vault,
    progress: Progress | None = None,
    *,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
) -> None:
    """Build the index from scratch and move it into place (the caller holds the vault lock).

    Readers keep the old file until the rename. A log that cannot be read stops with
    `unreadable` (exit 3) and leaves no half-built index behind.
    """
    with _vault_errors(vault):
        tmp = _build_file(vault, progress, parallel_min_bytes)
        _compare(vault, tmp)
        fsio.move(
            tmp,
            vault.index_path,
            mode=fsio.FILE_MODE,
            within=vault.root,
        )


def _compare(vault: Vault, tmp: Path) -> None:
    """Before a rebuilt index replaces the old one: records the old one held that the log lost
    (an outside rewrite) are told (`optmem.lost`)."""
    from optmem import lost

    lost.left_the_log(vault, tmp)


def _build_file(
    vault: Vault,
    progress: Progress | None = None,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
) -> Path:
    """A complete index of the log as it is now, in a temporary file of this process; returns it.

    Needs no lock: it reads a snapshot (the log only grows, or the result is caught up or
    redone under the lock). A big log is parsed and tokenised by worker processes (one per
    core) while this one inserts.
    """
    tmp = vault.cache(f"index.{os.getpid()}.tmp", check_ignore=True)
    fsio.remove_file(tmp)
    conn = _connect(tmp)
    done = False
    try:
        _fill(conn, vault, progress, parallel_min_bytes)
        done = True
    finally:
        conn.close()
        if not done:  # a build that failed leaves nothing behind
            fsio.remove_file(tmp)
    return tmp


def _fill(conn: sqlite3.Connection, vault: Vault, progress: Progress | None, parallel_min_bytes: int) -> None:
    """Index the whole log (and ACCESS.jsonl) into an empty database, and commit."""
    conn.execute("PRAGMA journal_mode=OFF")
    conn.executescript(DDL)
    # a build merges the text index once, at the end ('optimize'): merging along the way
    # as well costs the inserting process a tenth of its time
    conn.execute("INSERT INTO fts(fts, rank) VALUES ('automerge', 0)")
    conn.execute("INSERT INTO fts(fts, rank) VALUES ('crisismerge', 64)")
    segments = vault.segments()
    size = sum(LogState.read(path).size for _, path in segments)
    deferred: list[Record] = []
    workers = max(2, os.cpu_count() or 1) if size >= parallel_min_bytes else 0
    consume(conn, segments, {"schema": SCHEMA}, progress, deferred, workers, released=vault.own_releases)
    count_terms(conn)
    conn.executescript(POST_DDL)
    with conn:
        conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", view_meta(vault).items())
        link(conn, deferred, None)
    consume_access(conn, vault.access_files(), vault.own_access())
    with conn:  # the split keys in one pass; from now on each change says its key again
        conn.execute(SPLIT_FILL)
        conn.executescript(SPLIT_TRIGGERS)
    # later appends merge as they go again (SQLite's defaults), then one full merge now
    conn.execute("INSERT INTO fts(fts, rank) VALUES ('automerge', 4)")
    conn.execute("INSERT INTO fts(fts, rank) VALUES ('crisismerge', 16)")
    conn.execute("INSERT INTO fts(fts) VALUES ('optimize')")
    conn.commit()


def open_index(vault: Vault, progress: Progress | None = None, *, rebuild: bool = False) -> Index:
    """An index in step with the log: caught up incrementally, or rebuilt when it must be.

    Takes the vault lock only when there is work to do (re-entrant for a caller that holds it).
    A log that cannot be read stops with `unreadable` (exit 3). When the index cannot be written
    (a full disk, a read-only vault), a reader gets the log indexed in memory (`_from_log`).
    """
    try:
        with _vault_errors(vault):
            return _open_index(vault, progress, rebuild)
    except Unwritable as exc:  # a full disk, a read-only vault: a reader still gets its answer
        if rebuild or vault.locked:  # (a writer is refused: it could not write anyway)
            raise
        return _from_log(vault, exc)


def _from_log(vault: Vault, exc: Unwritable) -> Index:
    """The whole log indexed in memory, when the index on disk cannot be brought in step: the
    answer is complete, only slower; `vault.degraded` says so (the CLI warns, JSON says
    `degraded`, doctor reports it). Nothing is written."""
    idx = in_memory(vault)
    vault.degraded = (
        f"the search index could not be updated ({exc.message.removesuffix('; nothing was changed')}); "
        "this answer was read from LOG.jsonl directly, which is slower — free some disk space or make "
        ".cache/ writable (`optmem doctor` says what is wrong)"
    )
    return idx


def in_memory(vault: Vault) -> Index:
    """The whole log indexed in memory, the index on disk left as it is (`doctor` reads the
    files so, changing nothing). Nothing is written."""
    states = [LogState.read(path) for _, path in (*vault.segments(), *vault.access_files())]
    if vault.from_log is None or vault.from_log[0] != states:  # read the log once, not once a reader
        whole = sqlite3.connect(":memory:", check_same_thread=False)
        with _vault_errors(vault):
            _fill(whole, vault, None, parallel_min_bytes=1 << 62)  # no worker pool for a fallback
        vault.from_log = (states, whole)
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    vault.from_log[1].backup(conn)  # each reader closes its own copy
    return Index(vault, conn)


def hot_state(vault: Vault) -> str:
    """The hot files and the HANDOFF.md files as they stand (name, size, mtime, inode): a change
    since the index last noted it (`Index.hot_noted`) may be an edit to journal — by Hermes, a
    person or git."""
    out = []
    for name, path in vault.hot_paths() + vault.handoff_paths():
        try:
            st = os.stat(path)
        except OSError:
            continue
        out.append([name, st.st_size, st.st_mtime_ns, st.st_ino])
    return json.dumps(out)


@contextmanager
def _vault_errors(vault: Vault) -> Iterator[None]:
    """The system's errors while reading the log or writing the index, as vault errors (exit 3)
    that name the file: every way into a build goes through here, `doctor --fix` and `purge` too."""
    try:
        yield
    except IsADirectoryError as exc:
        from optmem.errors import Unreadable

        name = exc.filename or vault.log_path
        raise Unreadable(
            f"{name} is a folder, expected a file; move it aside (and put the file back); nothing was changed",
            file=str(name),
        ) from exc
    except OSError as exc:
        from optmem.errors import Unreadable

        name = exc.filename or vault.log_path
        raise Unreadable(f"cannot read {name}: {exc.strerror or exc}; nothing was changed", file=str(name)) from exc
    except sqlite3.Error as exc:
        from optmem.errors import Unwritable

        raise Unwritable(
            f"cannot build or update the search index in {vault.cache_dir}: {exc} "
            "(a read-only vault, or a full disk?); nothing was changed",
            file=str(vault.index_path),
        ) from exc


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
        except (NeedsRebuild, sqlite3.DatabaseError):
            idx.close()
            return None
        from optmem import lost

        # (the lock is held: the ids taken in go to `held` now — left in the index's meta, deleting
        # `.cache/` would lose a record's later departure untold)
        lost.note_held(vault, idx.conn)
        return idx
    return None


def _open_index(vault: Vault, progress: Progress | None, rebuild: bool) -> Index:
    vault.lay_out()  # a write that creates the vault is past its checks when it needs the index
    vault.require()
    if not vault.reads_checked:  # a linked log must not pull an outside file in (once a process)
        for _, path in (*vault.segments(), *vault.access_files()):
            fsio.check_within(path, vault.root, reading=True)
        vault.reads_checked = True
    if not rebuild and not vault.locked and vault.bare():  # a plain folder: nothing to index, nothing written
        vault.read_bare = True
        return in_memory(vault)
    if not rebuild:
        # a warm handle's kept connection, checked as a new one is (`optmem.warm`)
        kept: Index | None = vault.warm.take(vault) if vault.warm is not None else None
        if kept is not None:
            return kept
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
    with fsio.exclusive_lock(
        vault.cache("build.lock"),
        BUILD_WAIT,
        within=vault.root,
        what="the search index's rebuild (held while another process rebuilds it; appends go on meanwhile)",
        setting=False,
    ):
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
            _compare(vault, tmp)
            fsio.move(tmp, vault.index_path, mode=fsio.FILE_MODE, within=vault.root)
            return Index(vault, _connect(vault.index_path))


def prepare(vault: Vault) -> None:
    """Bring the index in step before taking the vault lock, so a rebuild, if one is due,
    happens outside the lock (writers call this first)."""
    if vault.exists() and not vault.locked:
        open_index(vault).close()


def catch_up(idx: Index) -> Index:
    """Before or after this process appends (lock held): index the new lines, rebuilding if
    needed — and, a writer, keep the ids of the records the index took in since the last writer in
    this clone's `held` note (`lost.note_held`; a catch-up without the lock leaves them in the index)."""
    from optmem import lost

    try:
        idx.sync()
    except (NeedsRebuild, sqlite3.DatabaseError):
        idx.close()
        build(idx.vault)
        idx = Index(idx.vault, _connect(idx.vault.index_path))
    lost.note_held(idx.vault, idx.conn)
    return idx
