"""The effective view: what each record *is* now — current, superseded, expired, forgotten — and
the policy that decides it, as plain functions over plain values.

The log is never changed to apply the view. The index stores the few facts the view needs per
record (superseded by whom, forgotten, retired, expiry, last restatement) and asks this module
what they mean:

* `STATUS_RULES` is the one definition of a status: a Python test and its SQL twin, in priority
  order (the first that holds wins; none means current). `status()`, `status_sql()` and
  `is_sql()` are all derived from it, so Python and SQL can never disagree.
* `links()` says which earlier records a record acts on (corrects, forgets, restates);
  `may_supersede()` is the redline lock; `key_winner()` decides a key group (a winner, or a
  conflict); `retired_at_birth()` marks hot-memory journal removals.
* `RecordView` is the one frozen view of a record that search, get, history, tree and MCP
  render their JSON from.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from enum import StrEnum
from functools import lru_cache

from optmem import record
from optmem.patterns import lazy
from optmem.record import (
    BOOKKEEPING,
    CONFIRM,
    FORGET,
    MEMORY,
    RELEASE,
    RESTORE,
    SEEN,
    STORED,
    VERIFY,
    Record,
    Tier,
    line_of,
    names,
)
from optmem.stdlib import UTC
from optmem.value import NamedTuple, Value

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any, Protocol


class Status(StrEnum):
    """What a record is in the effective view."""

    CURRENT = "current"
    SUPERSEDED = "superseded"
    EXPIRED = "expired"
    FORGOTTEN = "forgotten"
    COLD = "cold"  # a sweep found it unused for long: out of normal recall, never deleted
    PENDING = "pending"  # a guess waiting to be stated or confirmed
    REMOVED = "removed"  # a hot-memory entry taken out of its file: no successor (`removal`)
    HELD = "held"  # flagged by the scanner as a possible injection: out of recall until released


if TYPE_CHECKING:  # (a type for mypy alone: a Protocol class is made by typing)

    class ViewRow(Protocol):
        """What the view needs to know of a record (the index's row has it)."""

        @property
        def forgotten(self) -> int: ...
        @property
        def sup(self) -> str | None: ...
        @property
        def ksup(self) -> str | None: ...
        @property
        def retired(self) -> int: ...
        @property
        def expires(self) -> float | None: ...
        @property
        def pending(self) -> int: ...
        @property
        def confirmed(self) -> int: ...
        @property
        def cold(self) -> float | None: ...
        @property
        def accessed(self) -> float | None: ...
        @property
        def held(self) -> int: ...
        @property
        def released(self) -> int: ...


class _Rule(Value):
    status: Status
    test: Callable[[ViewRow, float], bool]
    sql: str  # over the index's `rec r`; `?` is "now" where it appears
    # a rule time brings about: the time from which it holds (SQL over `rec r`, NULL: never), which
    # its `sql` compares with now; None: a rule time alone never changes (its `sql` has no `?`)
    since: str | None = None

    @property
    def uses_now(self) -> bool:
        return self.since is not None


_R_DOT = lazy(r"\br\.(?=(\w+))")  # a column of `rec r` in a rule's SQL (its name: group 1)


def _timed(status: Status, test: Callable[[ViewRow, float], bool], since: str) -> _Rule:
    """A rule that holds from a time on: its SQL is made from that time (`_Rule.since`)."""
    return _Rule(status, test, f"({since} IS NOT NULL AND {since} <= ?)", since)


def rule_columns() -> list[str]:
    """The columns of `rec` the status rules read, each once (what changes a record's status)."""
    return list(
        dict.fromkeys(m.group(1) for rule in STATUS_RULES for m in _R_DOT.finditer(rule.sql + (rule.since or "")))
    )


def over(sql: str, row: str) -> str:
    """A rule's SQL (over `rec r`) over another row: "" (the table unnamed), "NEW." or "OLD." in a
    trigger (`schema`'s SQL of the split keys)."""
    return _R_DOT.sub(row, sql)


def is_expired(row: ViewRow, now: float) -> bool:
    """Past its `expires` at `now`, whatever else it is (cold, superseded)."""
    return row.expires is not None and row.expires <= now


def is_cold(row: ViewRow, now: float) -> bool:
    """Cooled by a sweep and not written, said again or recalled since (an access in the sweep's
    own second counts as after it: a sweep never cools what was just used); a mark dated after
    `now` (a clone with a fast clock) is not in effect yet."""
    return row.cold is not None and row.cold <= now and (row.accessed is None or row.cold > row.accessed)


# Priority order: a forgotten record is forgotten even if it was also corrected; a cold one is
# cold whatever it was when it cooled (`superseded_by` still says by whom); a superseded one is
# superseded even if it has also expired; a pending one that expired is expired. A removed hot
# entry's journal line is `removed` only while nothing supersedes it (added again, replaced).
STATUS_RULES: tuple[_Rule, ...] = (
    _Rule(Status.FORGOTTEN, lambda r, now: bool(r.forgotten), "r.forgotten != 0"),
    # held in quarantine until a person releases it, whatever else it would be (`optmem.quarantine`)
    _Rule(Status.HELD, lambda r, now: bool(r.held) and not r.released, "(r.held != 0 AND r.released = 0)"),
    _timed(
        Status.COLD,
        lambda r, now: is_cold(r, now),
        "(CASE WHEN r.cold IS NOT NULL AND r.cold > max(coalesce(r.wrote, r.ts, 0), coalesce(r.seen, 0), "
        "coalesce(r.touched, 0), coalesce(r.shown, 0)) THEN r.cold END)",
    ),
    _Rule(Status.SUPERSEDED, lambda r, now: bool(r.sup or r.ksup), "(r.sup IS NOT NULL OR r.ksup IS NOT NULL)"),
    # a removal with nothing after it (a replaced entry's removal is superseded by its new text)
    _Rule(Status.REMOVED, lambda r, now: bool(r.retired), "r.retired != 0"),
    _timed(Status.EXPIRED, lambda r, now: is_expired(r, now), "r.expires"),
    _Rule(Status.PENDING, lambda r, now: bool(r.pending) and not r.confirmed, "(r.pending != 0 AND r.confirmed = 0)"),
)

LIVE = (Status.CURRENT, Status.PENDING)  # what a conflict is between


class _Test(Value):
    """A test of a record in Python and its SQL twin over `rec r` (made together: they cannot disagree)."""

    test: Callable[[Any], bool]
    sql: str


# A keyed fact: a value of a key that is no temporary state (states and habits apart) and no hot-memory
# journal line (its `hot:FILE:ENTRY` key names an entry, not a fact) — what a key's values across
# domains are made of (`schema.SPLIT_GROUP` in SQL; `Index.split_rows`, `Index.across_domains` and
# `facts._current_values`). ("hot;" is the first string after every one starting "hot:".)
KEYED_FACT = _Test(
    lambda r: r.key is not None and not ("hot:" <= r.key < "hot;") and not r.state and r.kind != MEMORY,
    f"(r.key IS NOT NULL AND NOT (r.key >= 'hot:' AND r.key < 'hot;') AND r.state = 0 AND r.kind != '{MEMORY}')",
)

# Search lists hits in bands, best first: current redlines, other current records, then by status.
# A superseded record has no band of its own: an old version ranks among the current records by its
# own relevance, lowered (`ranking.score`), below the records that replaced it
# (`ranking.successors_first`). A cold record ranks in the band of what it was when it cooled.
BANDS = ("redline", Status.CURRENT, Status.PENDING, Status.EXPIRED, Status.FORGOTTEN, Status.HELD)


# Each rule holds only while one of the columns it tests as `r.X != 0` or `r.X IS NOT NULL` is so (its
# gate: every rule's SQL says it so — `test_view` checks each rule against each gate unset): a record
# whose gate columns all hold their unset value (0, NULL) is current without asking a rule.


def gate_columns() -> dict[str, object]:
    """The columns some status rule needs set to hold (its gate), each with its unset value: 0 for
    one a rule tests `!= 0`, None for one it tests `IS NOT NULL` — what `status` asks first
    (`test_view` holds the two together)."""
    out: dict[str, object] = {}
    for rule in STATUS_RULES:
        words = rule.sql.replace("(", " ").replace(")", " ").split()
        for column, test, value in zip(words, words[1:], words[2:], strict=False):
            if column[:2] == "r." and (test, value) in (("!=", "0"), ("IS", "NOT")):
                out.setdefault(column[2:], 0 if test == "!=" else None)
    return out


def status(row: ViewRow, now: float, *, warm: bool = False) -> Status:
    """The record's status at `now` (epoch seconds); `warm`: what it would be were it not cold
    (what saying it again brings back)."""
    # no rule can hold while every gate column is unset (`gate_columns`; the usual record: a search
    # asks ~200 a query). Written out: made from the gates, the test costs ~10% more a call (a tuple of
    # getattrs compared) or a compile in every process (`test_import_floor`); `test_view` fails
    # until a new rule's gate is here
    if not (
        row.forgotten
        or row.held
        or row.cold is not None
        or row.sup
        or row.ksup
        or row.retired
        or row.expires is not None
        or row.pending
    ):
        return Status.CURRENT
    for rule in STATUS_RULES:
        if rule.test(row, now) and not (warm and rule.status == Status.COLD):
            return rule.status
    return Status.CURRENT


def status_sql(now: float) -> tuple[str, list[Any]]:
    """`status()` as an SQL CASE expression over `rec r`, with its parameters."""
    parts, params = [], []
    for rule in STATUS_RULES:
        parts.append(f"WHEN {rule.sql} THEN '{rule.status.value}'")
        params += [now] if rule.uses_now else []
    return f"(CASE {' '.join(parts)} ELSE '{Status.CURRENT.value}' END)", params


def is_sql(wanted: Status, now: float) -> tuple[str, list[Any]]:
    """An SQL predicate over `rec r` that holds exactly when `status(r, now) == wanted`."""
    clauses, params = [], []
    for rule in STATUS_RULES:
        if rule.status == wanted:
            clauses.append(rule.sql)
            params += [now] if rule.uses_now else []
            break
        clauses.append(f"NOT {rule.sql}")
        params += [now] if rule.uses_now else []
    return "(" + " AND ".join(clauses) + ")", params


def band(st: Status, tier: int, was: Status | None = None) -> int:
    """A hit's band (0 is best): current redlines, current records, then by status — a superseded
    record, a redline too, in the band of the current records (its score is lowered instead:
    `ranking.score`). A cold record ranks in the band of what it was when it cooled (`was`: its
    status were it warm; current when not given) — a cold fact is one nobody used lately, not
    one known to be wrong: it stays above guesses and expired records."""
    if st == Status.COLD:
        st = was if was is not None and was != Status.COLD else Status.CURRENT
    if st in (Status.SUPERSEDED, Status.REMOVED):  # (a removed entry: no longer held, as a superseded one)
        return 1
    if st == Status.CURRENT:
        return 0 if tier == Tier.REDLINE else 1
    return BANDS.index(st)


# -- policy: what a record does to earlier ones ----------------------------------------------
SUPERSEDES = "corrects"
FORGETS = FORGET
RESTATES = SEEN
CONFIRMS = CONFIRM
VERIFIES = VERIFY
RESTORES = RESTORE
RELEASES = RELEASE


class Link(NamedTuple):
    what: str  # corrects | forget | seen
    ref: str  # the id (or id prefix/suffix) it names


def links(kind: str, corrects: Iterable[str], ref: str | None) -> list[Link]:
    """The earlier records this record acts on: those it corrects, forgets or restates. (Forgetting
    the newest version of a fact — a correction, a merge — gives the fact back to the version it
    superseded; forgetting an older one changes nothing else.)"""
    out = [Link(SUPERSEDES, r) for r in corrects]
    if ref and kind in BOOKKEEPING:
        out.append(Link(kind, ref))
    return out


def may_supersede(writer_tier: int, target_tier: int) -> bool:
    """The redline lock: a redline is a locked rule that only a (newer) redline supersedes."""
    return target_tier != Tier.REDLINE or writer_tier == Tier.REDLINE


def may_overrule(writer_inferred: bool, target_inferred: bool) -> bool:
    """An inference replaces only an inference: what was stated (or read from a tool or an
    import) stands beside it, as a key's stated value stands against a newer inference."""
    return not writer_inferred or target_inferred


def retired_at_birth(kind: str, extra: dict[str, Any]) -> bool:
    """A hot-memory journal record of a removed entry is no longer current when it is written."""
    return kind == MEMORY and extra.get("op") == "remove"


def removal(r: Record) -> dict[str, Any]:
    """When and by what a hot-memory entry was removed (`status` removed), as every surface says
    it: `at` the removal's time (None while an edit outside optmem is not journalled yet), the
    `file`, and `by` — `optmem remove` (the CLI, `apply`, the MCP `memory` tool), an edit of the
    file outside optmem (journalled when optmem next read it), or the integration that removed it."""
    file, outside = r.extra.get("file"), "an edit outside optmem"
    if r.extra.get("op") != "remove":  # the file lacks it and no journal line says so yet
        return {"at": None, "file": file, "by": outside}
    by = outside if r.source == "drift" else "optmem remove" + (f" ({r.source})" if r.source else "")
    return {"at": r.ts, "file": file, "by": by}


def entry_written(removal: Member, writes: Iterable[Member]) -> float | None:
    """When the hot entry a removal line removes was written: the newest write of its key before
    the removal (None: none is known). A removal says nothing new — the entry keeps this age in
    search (`Row.written`), the removal's own time is `removal()`'s `at`."""
    before = [
        w
        for w in writes
        if w.kind == removal.kind and newer_key(w.ts, w.id, w.n) < newer_key(removal.ts, removal.id, removal.n)
    ]
    return newest(before).ts if before else None


def confirms(restater_sure: bool, inferred: bool) -> bool:
    """Whether a restatement confirms a pending record: only a statement does — written by
    someone sure of it (not below the pending threshold) and stated, not concluded (`--basis
    inferred`). Agreement between guesses is still a guess, however many agents, domains or
    conversations repeat it: it is counted (`optmem pending` shows how often) and waits for a
    statement or `confirm`."""
    return restater_sure and not inferred


def restated(previous: float | None, at: float) -> float:
    """The latest restatement time after one more restatement at `at`."""
    return at if previous is None else max(previous, at)


class Member(NamedTuple):
    """A record of a key group (same key, domain and project)."""

    n: int
    id: str
    ts: float | None
    tier: int
    fp: str | None = None  # what it says (two members with one fingerprint agree)
    out: int = 0  # forgotten: not a candidate (a corrected value still holds its
    #                                  key against older ones: its correction stands for it)
    corrects: tuple[str, ...] = ()
    kind: str = "note"
    guess: int = 0  # pending and unconfirmed: never wins its key before it is
    inferred: int = 0  # concluded by an agent, not stated: never overrules a statement
    state: int = 0  # a temporary state (key groups: states and habits apart)
    change: int = 0  # says it replaces an earlier value ("搬到", "now")
    after: tuple[str, ...] | None = None  # the key's values its writer saw (None: not recorded)
    secondhand: int = 0  # a tool's output, an import, another store's (`quarantine.secondhand`)


def said(m: Member) -> bool:
    """Whether a value was stated in the conversation: not an agent's inference, not text found
    outside it (a tool's output, an import) — neither overrules a statement by itself."""
    return not m.inferred and not m.secondhand


class Winner(Value):
    """The one current record of a key group; every other member is superseded by it."""

    member: Member


class Conflict(Value):
    """Values of one key that time cannot order: all stay current (each marked as in conflict),
    the rest are superseded by the newest of them, until someone resolves it."""

    members: tuple[Member, ...]


def id_time(rid: str) -> str:
    """The part of an id that says when it was made: the millisecond of an optmem id (its first
    10 characters), the whole of any other id. Its random part says nothing of order: records
    made in one millisecond — or under one fixed OPTMEM_NOW, by several processes — are ordered
    by their line in the log instead."""
    return rid[:10] if len(rid) == 26 and rid.isalnum() else rid


def newer_key(ts: float | None, rid: str, n: int) -> tuple[float, str, int]:
    """What "newer" means everywhere: the later ts (a missing one is oldest), then the later
    millisecond of the id, then the later line."""
    return (ts if ts is not None else -1e18, id_time(rid), n)


def tie_key(rid: str, n: int) -> tuple[str, int, str, int]:
    """What decides between records of one time, the same on every clone holding the same files:
    the later millisecond of the id, then the later line in its file (records made in one
    millisecond by several processes, as under a fixed OPTMEM_NOW: the log's order, as
    `newer_key`), then the id — never the index key alone, which moves when records of two files
    share a place (`record.place`: the clone that indexed the other file first gave it the place)."""
    return (id_time(rid), record.line_of(n), rid, n)


def waits(m: Member) -> bool:
    """A guess (pending, unconfirmed) takes no part in its key until it is confirmed: it neither
    supersedes nor is superseded; a hot-memory journal line always takes part."""
    return bool(m.guess) and m.kind != MEMORY


def written_order(items: list[Any], ident: Callable[[Any], str], saw: Callable[[Any], Iterable[str]]) -> list[Any]:
    """`items` (a key's values, oldest first by `newer_key`) with each moved after every value its
    writer saw (`saw`: its `after`) — the order the values replaced each other in, which `_heads`
    follows whatever the clocks say: a value written knowing a later-dated one (a clock behind,
    OPTMEM_NOW) comes after it. Otherwise the order is kept; a hand-made cycle is broken by it."""
    at = {ident(x): i for i, x in enumerate(items)}
    needs = [{at[rid] for rid in saw(x) if at.get(rid, i) != i} for i, x in enumerate(items)]
    out: list[Any] = []
    done: set[int] = set()
    while len(out) < len(items):
        left = [i for i in range(len(items)) if i not in done]
        i = next((i for i in left if needs[i] <= done), left[0])
        done.add(i)
        out.append(items[i])
    return out


def newest(members: Iterable[Member]) -> Member:
    """The newest member (`newer_key`)."""
    return max(members, key=lambda m: newer_key(m.ts, m.id, m.n))


def _saw(m: Member, other: str, by_id: dict[str, Member]) -> bool:
    """Whether the writer of `m` had seen the value `other` (directly, or through the values it
    saw), by the `after` lists of the key group."""
    todo, seen = list(m.after or ()), set()
    while todo:
        rid = todo.pop()
        if rid == other:
            return True
        if rid not in seen and rid in by_id:
            seen.add(rid)
            todo += by_id[rid].after or ()
    return False


def concurrent(a: Member, b: Member, by_id: dict[str, Member]) -> bool:
    """Two values of a key written where neither writer had seen the other's (on two clones,
    before a sync): time cannot order them. Known only for values that recorded what they saw."""
    if a.after is None or b.after is None:
        return False
    return not _saw(a, b.id, by_id) and not _saw(b, a.id, by_id)


def replaces(newer: Member, older: Member, among: Iterable[str] = ()) -> bool:
    """Whether `newer` names `older` in its `corrects` (its id, or ≥ 6 of its first or last
    characters): written knowing that value, to replace it — time orders the two. A reference
    that also names another id `among` the key's values names neither (`record.Ids`: which one
    was meant is not the reader's guess; `doctor` reports it, `ambiguous_ref`). The index gives
    each member's `corrects` as the ids they name among the whole vault (`ingest._named`)."""
    return any(
        names(ref, older.id) and not any(rid != older.id and names(ref, rid) for rid in among) for ref in newer.corrects
    )


def _unordered(
    a: Member, b: Member, window: float, by_id: dict[str, Member] | None = None, *, head: bool = True
) -> bool:
    """Whether time cannot decide between two values of a key: corrections of one record, or
    values whose writers had not seen each other's (made on two clones, merged by a sync) — `b`
    only while it is a head (`_heads`: no value of the key was written after it); or, with a
    conflict window set (`[consolidation] conflict_window_days`, 0 by default), values written
    within it of each other — unless the newer one says it is a change ("moved to", "改成",
    "now")."""
    if a.fp is not None and a.fp == b.fp:
        return False  # the same value said twice is agreement, not a conflict
    if MEMORY in (a.kind, b.kind):
        return False  # a hot-memory entry's journal: the log's order is the file's
    among = by_id or ()
    if replaces(a, b, among) or replaces(b, a, among):
        return False  # its writer named the other value and replaced it (a correction, a resolution)
    if head and set(a.corrects) & set(b.corrects):
        return True
    if head and by_id is not None and concurrent(a, b, by_id):
        return True
    if window > 0 and a.ts is not None and b.ts is not None and abs(a.ts - b.ts) < window:
        newer = a if newer_key(a.ts, a.id, a.n) > newer_key(b.ts, b.id, b.n) else b
        return not newer.change  # "小明搬到上海了" says it replaces: time orders it
    return False


def _heads(pool: list[Member], by_id: dict[str, Member]) -> list[Member]:
    """The values of a key group no other value of the pool was written after (`after`, through
    the chain): a value another writer had seen when it wrote the key replaced it knowingly,
    whatever the clocks say — it can be in conflict with nothing, and it never wins."""
    todo, seen = [rid for m in pool for rid in m.after or ()], set()
    while todo:  # every value written after, directly or through the values those writers saw
        rid = todo.pop()
        if rid not in seen:
            seen.add(rid)
            todo += by_id[rid].after or () if rid in by_id else ()
    return [m for m in pool if m.id not in seen] or pool  # (a hand-made cycle: time decides)


def key_winner(members: list[Member], window: float = 0.0) -> Winner | Conflict:
    """Which record of a key group is current: the newest — unless time cannot order it against
    another value (`_unordered`), then those values are in conflict; so is a newer inference
    against what was stated or read from a tool or an import (it never overrules either by
    itself). A redline holds its key against newer non-redlines. A forgotten record never wins
    (a forgotten newest value gives its key back to the one before); a corrected one still holds
    its key against older values (its correction stands for it, whatever key the correction
    has); a guess waits (`waits`)."""
    # a hot-memory entry's journal is ordered by the log alone (its last line is the entry's state)
    live = [m for m in members if (not m.out and not waits(m)) or m.kind == MEMORY]
    if not live:  # nothing said for sure: the newest wins (guesses are never put to the user)
        return Winner(newest([m for m in members if not m.out] or members))
    redlines = [m for m in live if m.tier == Tier.REDLINE]
    pool = redlines or live
    by_id = {m.id: m for m in members}
    heads = _heads(pool, by_id)
    top = newest(heads)
    # a value another one was written after is no rival by its clone's history (`_heads`); the
    # conflict window, which opts in to asking about values written knowingly, still reaches it
    rivals = [m for m in pool if m is not top and _unordered(top, m, window, by_id, head=m in heads)]
    stated = [m for m in pool if said(m)]
    # an inference, or a tool's output, never overrules what was said, however new: the user is
    # asked; nor does an inference overrule a value read from a tool or brought by an import — a
    # guess against evidence is put to the user too, never a quiet supersession
    if not said(top) and stated:
        grounded = stated
    else:
        grounded = [m for m in pool if not m.inferred] if top.inferred else []
    if grounded and top.kind != MEMORY:  # (a hot entry's journal: the log's order)
        last = newest(_heads(grounded, by_id))  # what was last said: not a value replaced through `after`
        if last.fp is None or last.fp != top.fp:
            rivals = [last] + [m for m in rivals if m is not last]
    if not rivals:
        return Winner(top)
    # one member per value: a restated rival counts once (its newest statement)
    by_value: dict[str | None, Member] = {top.fp: top}
    for m in sorted(rivals, key=lambda m: newer_key(m.ts, m.id, m.n)):
        by_value[m.fp if m.fp is not None else m.id] = m
    return Conflict(tuple(sorted(by_value.values(), key=lambda m: newer_key(m.ts, m.id, m.n))))


def replaced_by(members: list[Member], current: list[Member]) -> dict[int, str]:
    """For the members of a key in conflict that are not in it, the value that replaced each when
    one did by its `after` chain (db1 → db2 → db3 on one clone, dbX on the other: db1 and db2 are
    superseded by db3, not dbX): the newest value in conflict written after it. (The others are
    superseded by the newest value in conflict.)"""
    by_id = {m.id: m for m in members}
    out: dict[int, str] = {}
    for head in sorted(current, key=lambda m: newer_key(m.ts, m.id, m.n)):  # the newest last: it wins
        todo, seen = list(head.after or ()), set()
        while todo:
            rid = todo.pop()
            if rid in seen or rid not in by_id:
                continue
            seen.add(rid)
            out[by_id[rid].n] = head.id
            todo += by_id[rid].after or ()
    return out


def connected(start: Any, neighbours: Callable[[Any], list[Any]], key: Callable[[Any], Any]) -> list[Any]:
    """Every record linked to `start` (corrections both ways, key groups), by graph walk."""
    seen: dict[Any, Any] = {}
    todo = [start]
    while todo:
        item = todo.pop()
        if key(item) in seen:
            continue
        seen[key(item)] = item
        todo += [n for n in neighbours(item) if key(n) not in seen]
    return list(seen.values())


def iso(epoch: float) -> str:
    from optmem.clock import format_ts
    from optmem.stdlib import datetime

    return format_ts(datetime.fromtimestamp(epoch, UTC))


# -- what a surface shows of a stored value ----------------------------------------------------
_REMEMBERED = 256  # strings up to this long are scanned once per process (ids, keys, tags, names)


# optmem's own words (a tier, a kind, a status, a basis) are no stored text: nothing to scan. (A
# tier such as "normal" sends the scanner to its language stage, whose patterns every search
# would otherwise compile for the fields of its first hit.)
_OURS = frozenset(
    (*record.TIERS, *record.BOOKKEEPING, *(s.value for s in Status), "stated", "inferred")
    + (record.NOTE, record.CORRECTION, record.MEMORY, record.HANDOFF, record.COMMIT, record.RESOLUTION)
    + (record.MERGED, record.CURATION)
)


@lru_cache(maxsize=8192)
def _display_short(text: str) -> str:
    said: str = _scan().redact(text)
    return said


def _scan() -> Any:
    """The scanner, imported when a string must be scanned (a search whose hits the write gate
    passed needs none: `RecordView.stored`)."""
    from optmem.safety import scan

    return scan


def display(text: str) -> str:
    """A stored string as every surface shows it: `[BLOCKED: rule]` when the read-side scan flags
    it (an injection, a secret, a control character or escape code), else as stored."""
    if text in _OURS:
        return text
    if len(text) <= _REMEMBERED:
        return _display_short(text)
    said: str = _scan().redact(text)
    return said


def shown(value: Any, stored: bool = False) -> Any:
    """A stored value as every surface shows it: as it is when its record's words are shown as
    `stored` (`as_stored`), else each string `display`ed — in lists and objects too, object keys
    included (a hand-typed line may carry any field) — the rest as it is."""
    if stored:
        return value
    if isinstance(value, str):
        return display(value)
    if isinstance(value, (list, tuple)):
        return [shown(v) for v in value]
    if isinstance(value, dict):
        return {display(k) if isinstance(k, str) else k: shown(v) for k, v in value.items()}
    return value


_MARK = lazy(r"^\s*(?:[-*•]\s+)?")


def display_lines(text: str, stored: Collection[str] = ()) -> str:
    """A stored body of many lines (a tree node) as surfaces show it: each line the scan flags
    reads `[BLOCKED: rule]` (after its bullet), the others stay; when the body is flagged but no
    line alone is (a phrase split over lines), all of it reads `[BLOCKED: rule]`. The `stored`
    lines (a node's quote of a record shown as stored: `summary.Shown.as_stored`) are shown as
    they are, and take no part in the scan."""

    def scanned(lines: list[str]) -> str:
        return "\n".join(x for x in lines if x not in stored)

    lines = text.split("\n")
    rest = scanned(lines)
    if display(rest) == rest:
        return text
    out = []
    for line in lines:
        said = line if line in stored else display(line)
        lead = m.group() if (m := _MARK.match(line)) else ""
        out.append(line if said == line else lead + said)
    rest = scanned(out)
    return "\n".join(out) if display(rest) == rest else display(text)


_RULE_NAME = lazy(r"[a-z][a-z0-9_]{0,63}")  # the shape of a scanner rule's name


def as_stored(*, passed: bool, held: object, released: object) -> bool:
    """Whether a surface shows a record's words as stored, or scans them on read (`display`:
    `[BLOCKED: rule]` when flagged) — the one decision every surface takes (get, history,
    search, context, conflicts, sweep, pending, a write's answer, the MCP tools):

    * released by a person — from quarantine, or a line blocked on read (`review.blocked`): as
      stored (its words were reviewed);
    * held in quarantine: scanned (and out of recall until a person decides);
    * any other record: as stored when the write gate passed its line and the line is unchanged
      since (`passed`: `optmem.verdicts`, `Index.passed`), else scanned — a line typed by hand,
      brought by sync, written with --allow-unsafe or under another scanner."""
    if held or released:
        return bool(released)
    return passed


# -- how surfaces label a record for a person --------------------------------------------------
# what `labels(omit=…)` leaves to a surface that says it its own way: the status, a guess, a conflict
STATUS_LABEL, PENDING_LABEL, CONFLICT_LABEL, GUESS_LABEL = "status", "PENDING", "CONFLICT", "guess"


def bracket(parts: Collection[str]) -> str:
    """The labels beside a record, as every human surface prints them: one bracket, each label
    apart (`[SUPERSEDED by ABRM9RYY; FROM TOOL]`: the record came from a tool, not its
    successor); "" for none."""
    return f"[{'; '.join(parts)}]" if parts else ""


def guess_notes(
    may_update: Any, updated_by: Collection[str] = (), name: Callable[[str], str] | None = None
) -> list[str]:
    """The write gate's guesses about a record (a possible update it kept beside the older value:
    both stand), worded alike on every surface — as questions, never as facts: "may be a new value
    of X?", "may have been updated by Y?". `name`: how the surface names a record (its last 8
    characters)."""
    name = name or short_id
    out = [f"may be a new value of {name(may_update)}?"] if isinstance(may_update, str) and may_update else []
    if updated_by:
        out.append(f"may have been updated by {', '.join(map(name, updated_by))}?")
    return out


AGENT_CLAIMS = "AGENT'S CLAIMS"  # an agent's handoff: its "done" items are its own report


def labels(shape: Mapping[str, Any], *, omit: Collection[str] = ()) -> list[str]:
    """The words every human surface puts beside a record — search's badges, `get` and `history`,
    `conflicts`, `pending`, `sweep` — from its JSON shape (`RecordView.hit`/`full`, or a row that
    carries the same fields): its status, then what else it is (a redline, a guess, a value in
    conflict, an agent's inference, a state, a correction, where it came from; a summary node,
    who wrote it). A guess, an inference or a summariser's words never read as a plain fact on
    any of them. `omit`: what a surface already says
    its own way (`STATUS_LABEL`, `PENDING`, `CONFLICT`, the write gate's guesses)."""
    out = []
    st, by = shape.get("status"), shape.get("superseded_by")
    if shape.get("kind") == "summary" and shape.get("summarizer"):  # a tree node: whose words they are
        who = str(shape["summarizer"])
        out.append("SUMMARY (extractive)" if who == "extractive" else f"SUMMARY (by {who}: a model's words)")
    if shape.get("tier") == "redline":
        out.append("UNVERIFIED REDLINE (optmem trust)" if shape.get("unverified") else "REDLINE")
    if STATUS_LABEL in omit:
        pass
    elif st == Status.REMOVED:  # a hot-memory entry taken out of its file: no successor
        gone = shape.get("removed")
        out.append(f"REMOVED by {gone['by']}" if isinstance(gone, dict) else "REMOVED")
    elif st == Status.SUPERSEDED:
        out.append(f"SUPERSEDED by {short_id(by)}" if by else "SUPERSEDED")
    elif st == Status.COLD and by:
        out.append(f"COLD, SUPERSEDED by {short_id(by)}")
    elif st == Status.COLD and shape.get("expired"):
        out.append("COLD, EXPIRED")  # swept after it expired: it still says it did
    elif st == Status.HELD:
        out.append(f"HELD: {shape.get('held') or '?'} (optmem release {short_id(shape['id'])})")
    elif st in (Status.EXPIRED, Status.FORGOTTEN, Status.COLD) or (st == Status.PENDING and PENDING_LABEL not in omit):
        out.append(str(st).upper())
    if shape.get("pending") and st != Status.PENDING and PENDING_LABEL not in omit:
        out.append(PENDING_LABEL)  # a guess gone cold is still a guess
    if shape.get("conflict") and CONFLICT_LABEL not in omit:
        out.append(CONFLICT_LABEL)
    for other in shape.get("across_domains") or ():  # a key's current value in another domain (`Index.across_domains`)
        out.append(f"ANOTHER VALUE IN {other['domain']} ({short_id(other['id'])})")
    if GUESS_LABEL not in omit:
        out += guess_notes(shape.get("may_update"), shape.get("may_be_updated_by") or ())
    outdated = shape.get("outdated_facts")
    for key, by in outdated.items() if isinstance(outdated, dict) else ():
        out.append(f"FACT {key} SUPERSEDED by {short_id(str(by))}")
    if shape.get("basis") == "inferred" and not (shape.get("kind") == "summary" and shape.get("summarizer")):
        out.append("INFERRED")  # (a model's node says so in its SUMMARY label)
    if shape.get("state"):
        out.append("STATE")
    if shape.get("kind") == record.CORRECTION:
        out.append("CORRECTION")
    if shape.get("kind") == record.HANDOFF and shape.get("origin") == "agent":
        out.append(AGENT_CLAIMS)  # what an agent says it did: its account, not a checked fact
    if shape.get("origin") not in (None, "user", "agent"):
        out.append(f"FROM {' AND '.join(record.origin_parts(str(shape['origin']))).upper()}")
    return out


def short_id(rid: str | None) -> str:
    """An id as people read it: its last 8 characters (ids of one second share the first 8)."""
    return rid[-8:] if rid else "-"


def short_ids(ids: list[str], shown: int = 5) -> str:
    """Ids as a message names them: the first `shown`, short (`short_id`), then "…" for more."""
    return ", ".join(short_id(rid) for rid in ids[:shown]) + (", …" if len(ids) > shown else "")


# -- the one view of a record that callers see ------------------------------------------------
class RecordView(NamedTuple):
    """A record as shown to callers: its stored fields, its effective status and, for a search
    hit, its score. `hit()` is the search shape, `full()` the get/history shape."""

    record: Record
    status: Status
    superseded_by: str | None = None
    line: int = 0
    score: float | None = None
    explain: dict[str, Any] | None = None
    annex: dict[str, Any] | None = None  # kind-specific extras (tree nodes)
    cold_since: float | None = None  # when a sweep cooled it (status cold)
    conflict: bool = False  # one of the values that stand together (`Row.disputed`)
    guess: bool = False  # an unconfirmed guess, whatever else it is now (cold)
    expired: bool = False  # past its `expires`, whatever else it is now (cold): it still says so
    unverified: bool = False  # a redline of a vault the user has not trusted (`optmem.trust`)
    checked: float | None = None  # when someone last checked it holds (`Row.checked`)
    passed: bool = False  # the write gate passed its line, unchanged since (`optmem.verdicts`): no scan on read
    released: bool = False  # held in quarantine once, released by a person: its words are shown as stored
    written: float | None = None  # a hot entry's removal line: when the entry was written (`Row.written`)
    outdated: Mapping[str, str] | None = None  # a merged record's facts a newer value replaced (`Index.outdated_facts`)
    # the write gate's guesses that stand (both records live): the record it may update, those that may update it
    may_update: str | None = None
    updated_by: tuple[str, ...] = ()
    # the current values of its key another domain holds that differ from it, (id, domain) (`Index.across_domains`)
    across_domains: tuple[tuple[str, str], ...] = ()

    def _across(self, show_unsafe: bool) -> list[dict[str, str]]:
        return [{"id": rid, "domain": d if show_unsafe else display(d)} for rid, d in self.across_domains]

    def _base(self) -> dict[str, Any]:
        r = self.record
        return {
            "id": r.id,
            "ts": iso(self.written) if self.written is not None else r.ts,  # (a removal's own time: `removed`)
            "domain": r.domain,
            "project": r.project,
            "kind": r.kind,
            "tier": r.tier,
            "text": r.text,
            "origin": r.origin,
            **({"unverified": True} if self.unverified else {}),
        }

    def stored(self) -> bool:
        """Whether its words are shown as stored, without a scan on read (`as_stored`)."""
        return as_stored(passed=self.passed, held=self.record.held is not None, released=self.released)

    def _said(self, out: dict[str, Any], show_unsafe: bool) -> dict[str, Any]:
        """`out` as surfaces show it: as stored with `show_unsafe` or when `stored`, else
        scanned (`shown`); the rule that held it as our own word."""
        out = out if show_unsafe or self.stored() else shown(out)
        held = self.record.held
        if held is not None:
            out["held"] = held if _RULE_NAME.fullmatch(held) else display(held)
            if self.released:  # the rule it was held by, and that a person let it out since
                out["released"] = True
            if self.status == Status.HELD:
                from optmem.quarantine import held_because

                out["held_because"] = held_because(out["held"], self.record.id, self.record.origin)
        return out

    def blocked(self) -> str | None:
        """The security rule the text trips, if any (output then shows `[BLOCKED: rule]`)."""
        return None if self.stored() else _scan().find(self.record.text)

    def hit(self, *, show_unsafe: bool = False) -> dict[str, Any]:
        """The search result shape (SPEC §5). Every string the scanner flags — the text, the key,
        a tag, the source, any field — reads `[BLOCKED: rule]` unless `show_unsafe` (`shown`):
        everything that reaches an agent is scanned, not only writes."""
        r = self.record
        out = self._base()
        out.update(
            {
                "score": self.score,
                "status": self.status.value,
                "superseded_by": self.superseded_by,
                "corrects": list(r.corrects),
                "key": r.key,
                "verified_at": iso(self.checked) if self.checked is not None else None,
            }
        )
        if r.expires:
            out["expires"] = r.expires
        if self.expired and self.status != Status.EXPIRED:
            out["expired"] = True  # a swept expired record is cold, and still expired
        if self.cold_since is not None:
            out["cold_since"] = iso(self.cold_since)
        if self.status == Status.REMOVED:
            out["removed"] = removal(r)
        if self.conflict:
            out["conflict"] = True
        if self.guess and self.status != Status.PENDING:
            out["pending"] = True  # a cold guess is still a guess
        if r.basis:
            out["basis"] = r.basis
        if r.state:
            out["state"] = True
        if self.outdated:
            out["outdated_facts"] = dict(self.outdated)
        out.update(self._beside(show_unsafe))
        if show_unsafe:
            whole = {**out, **(self.annex or {}), **({} if self.explain is None else {"explain": self.explain})}
            return self._said(whole, True)
        # what its line holds is scanned unless it is shown as stored (`stored`); what comes from
        # elsewhere — a tree node's extras, the query's words in `explain` — always
        out = self._said(out, False)
        out.update(shown(self.annex or {}))
        if self.explain is not None:
            out["explain"] = shown(self.explain)
        return out

    def _beside(self, show_unsafe: bool) -> dict[str, Any]:
        """What stands beside the record, in `hit` and `full` alike: the write gate's guesses while
        they stand (`may_update`, `may_be_updated_by`) and another domain's different value."""
        out: dict[str, Any] = {}
        if self.may_update:
            out["may_update"] = self.may_update
        if self.updated_by:
            out["may_be_updated_by"] = list(self.updated_by)
        if self.across_domains:
            out["across_domains"] = self._across(show_unsafe)
        return out

    def full(self, *, show_unsafe: bool = False) -> dict[str, Any]:
        """Every stored field (in schema order), the status, and where the record is in the log
        (every flagged string as in `hit`). What the record *is* wins over what it said when written:
        `pending` is whether it is an unconfirmed guess now (one confirmed since is not; one gone
        cold still is); what it was written as is under `written`."""
        r = self.record
        out: dict[str, Any] = {}
        for name in STORED:
            value = getattr(r, name)
            out[name] = list(value) if type(value) is tuple else value
        out["pending"] = self.guess or self.status == Status.PENDING
        out["written"] = {"pending": r.pending, "confidence": r.confidence}
        out.update({"status": self.status.value, "superseded_by": self.superseded_by, "line": line_of(self.line)})
        if self.expired and self.status != Status.EXPIRED:
            out["expired"] = True
        if self.cold_since is not None:
            out["cold_since"] = iso(self.cold_since)
        if self.status == Status.REMOVED:
            out["removed"] = removal(r)
        out["conflict"] = self.conflict
        out["verified_at"] = iso(self.checked) if self.checked is not None else None
        if self.outdated:
            out["outdated_facts"] = dict(self.outdated)
        if self.unverified:
            out["unverified"] = True
        for k, v in r.extra.items():
            if k != "may_update":  # (its line's guess: shown while it stands, below)
                out.setdefault(k, v)
        out.update(self._beside(show_unsafe))
        return self._said(out, show_unsafe)
