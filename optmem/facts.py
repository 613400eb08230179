"""Facts and their versions: `correct` a record, a record's `history`, and the `conflicts` of
keyed facts that time cannot settle, which a person `resolve`s (merging fragments: `merging`).

The effective view (`view`) decides what supersedes what; this module writes corrections through
the log's append path and reads the chains of versions back.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from optmem import clock, log, view
from optmem import text as textmod
from optmem.errors import Ambiguous, NeedsPerson, NotApplicable, NotFound, UsageError, quote
from optmem.index import Filters, Index, Row, match_any, open_index, prepare
from optmem.record import CORRECTION, CORRECTION_MARK, ID_RE, MEMORY, RESOLUTION, names
from optmem.value import Value
from optmem.vault import Vault, hot_target, validate_name

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing)
if TYPE_CHECKING:
    from typing import Any

CORRECTION_PREFIX = "〔更正〕"
_ALREADY = CORRECTION_MARK


class Corrected(Value):
    id: str
    corrects: str
    record: dict[str, Any]
    warnings: list[str]
    conflict_with: list[str]  # it made a conflict with these
    held: str | None = None  # held in quarantine: the scanner's rule (`optmem.quarantine`)
    quoted: str | None = None  # TARGET's words matched this old version best; its current one was corrected


def _target(
    idx: Index, target: str, now: float, domain: str | None = None, project: str | None = None
) -> tuple[Row, str | None]:
    """The one record TARGET names: an id (or unique prefix/suffix), else an unambiguous query
    (within `domain` and `project` when given) — and, when the words match an old version of it
    better than it, that old version's id (the words quote it; its current version is named)."""
    if not target.strip():
        raise UsageError("TARGET is empty; a record id, or words that name one current record, is required")
    if ID_RE.match(target.strip().lstrip("#")):
        rows = idx.resolve(target)
        if len(rows) == 1:
            log.refuse_copies(idx, rows[0])  # (an id two lines carry: which is the record is no guess)
            return rows[0], None
        if len(rows) > 1:
            raise Ambiguous(
                f"{quote(target)} names {len(rows)} records; give more of the id",
                candidates=[{"id": r.id, "text": idx.record(r).text} for r in rows[:10]],
            )
    from optmem.reading.query import read, search_terms
    from optmem.search import Query, ranked
    from optmem.view import Status

    terms = search_terms(target)
    # current records and pending guesses (an agent's append waits as one: its correction names
    # it by words like any other)
    where = Filters(domains=(domain,) if domain else (), project=project)
    # (the words name the record that holds them: not one holding another word of their attribute)
    settings = idx.vault.settings.ranking._replace(attribute_share=0.0)
    hits = ranked(idx, Query(read(target, now, settings, terms=terms), 10, where, False, now)).hits if terms else []
    # by score: the band that ranks a guess below every current record says nothing of which
    # record the words name
    found = sorted((h for h in hits if h.status in (Status.CURRENT, Status.PENDING)), key=lambda h: -(h.score or 0.0))
    if not found:
        raise NotFound(f"no current or pending record matches {quote(target)}; give an id, or other words", ref=target)

    def said(text: str) -> int:
        """How many of the words' terms a text holds: a word as a whole token of it, as the index
        reads it ("port" is not in "reporting"); a Han or kana term within its text (no spaces
        there to split words by)."""
        folded = textmod.fold(text)
        tokens = set(textmod.tokens(folded, folded=True))
        return sum((t in folded) if any(cjk for cjk, _ in textmod.script_runs(t)) else (t in tokens) for t in terms)

    best = found[0].score or 0.0
    strong = [h for h in found if (h.score or 0.0) >= 0.5 * best]
    # the one record holding every word names itself, whatever the others' scores
    whole = [h for h in strong if said(h.record.text) == len(terms)]
    if len(strong) > 1 and len(whole) == 1:
        found, strong = whole, whole
    if len(strong) > 1:
        raise Ambiguous(
            f"{quote(target)} matches {len(strong)} current or pending records; nothing was written — pass one "
            "of their ids as TARGET",
            candidates=[
                {"id": h.record.id, "text": h.record.text, "domain": h.record.domain, "project": h.record.project}
                for h in strong
            ],
        )
    row = idx.rows_in([found[0].line])[0]

    own = said(found[0].record.text)
    old = [h for h in hits if h.status == Status.SUPERSEDED and said(h.record.text) > own]
    quoted = next((h.record.id for h in old if idx.current_version(idx.rows_in([h.line])[0]).id == row.id), None)
    return row, quoted


def _plain(text: str) -> str:
    """A text as a correction compares it: its words as written — case, width and spacing
    folded, a correction's prefix and closing punctuation aside ("1.5" and "15", "wants" and
    "wanted", "Jose" and "José" differ, unlike in a fingerprint)."""
    return " ".join(textmod.fold_case(_ALREADY.sub("", text)).split()).rstrip(".!?。！？ ")


def correct(
    vault: Vault,
    target: str,
    text: str | None,
    *,
    tier: str | None = None,
    domain: str | None = None,
    project: str | None = None,
    key: str | None = None,
    evidence: str | None = None,
    source: str | None = None,
    allow_unsafe: bool = False,
    origin: str | None = None,
) -> Corrected:
    """Append a correction of TARGET (`kind: correction`, `corrects: [id]`, text prefixed 〔更正〕).

    It inherits domain, project and key from its target unless given. A redline can only be
    corrected by a redline (`redline_locked` otherwise). A target already superseded is refused
    (`superseded`, naming the current version — or, when the fact was corrected two ways, how to
    settle it), and so are a TEXT that says what the target says (`no_change`) and a hot-memory
    journal record.
    """
    if not text or not text.strip():
        raise UsageError("TEXT is empty; give the corrected fact")
    for what, name in (("domain", domain), ("project", project)):
        if name is not None:
            validate_name(name, what)  # (a bad name is refused, not a false "no record matches")
    key = log.check_key(key)
    body = text.strip() if _ALREADY.match(text) else f"{CORRECTION_PREFIX}{text.strip()}"
    now = clock.now().timestamp()
    prepare(vault)
    with vault.lock():
        with open_index(vault) as idx:
            row, quoted = _target(idx, target, now, domain, project)
            log.refuse_bookkeeping(idx, row, "correct")
            log.refuse_superseded(idx, row, now)  # correcting an old version would make a second current one
            rec = idx.record(row)
            if tier is None and key is None and _plain(body) == _plain(rec.text):
                raise NotApplicable(
                    f"{row.id} already says that; nothing was written — give the corrected "
                    "fact (a correction that says the same changes nothing)",
                    code="no_change",
                    id=row.id,
                )
            warnings = idx.warnings()
            seen = log.decided(idx, row)  # a forget on another clone it had not seen is a conflict
            if row.pending and not row.confirmed:
                warnings.append(f"{row.id} was a pending guess (domain {row.domain}); the correction replaces it")
        res = log.append(  # refuses (redline_locked) to correct a redline unless this is one
            vault,
            log.Draft(
                body,
                domain=domain or rec.domain,
                project=project or rec.project,
                kind=CORRECTION,
                tier=tier or "normal",
                key=key or rec.key,
                evidence=evidence,
                source=source,
                corrects=[row.id],
                extra={"decided_after": seen},
                origin=origin,
            ),
            allow_unsafe=allow_unsafe,
            gate=False,
        )
    return Corrected(
        res.id or "",
        row.id,
        res.record or {},
        warnings + ([res.warning] if res.warning else []),
        res.conflict_with,
        res.held,
        quoted,
    )


def history(
    vault: Vault,
    ref: str | None = None,
    *,
    key: str | None = None,
    domain: str | None = None,
    project: str | None = None,
    show_unsafe: bool = False,
) -> list[dict[str, Any]]:
    """Every version of a fact, oldest first: the correction chain and key group of a record,
    or all records with `key`."""
    if not ref and not key:
        raise UsageError("give an ID, or --key KEY")
    key = log.check_key(key)
    for what, name in (("domain", domain), ("project", project)):
        if name is not None:
            validate_name(name, what)  # (a bad name is refused, not a false "no record has key")
    from optmem.follow import open_followed

    now = clock.now().timestamp()
    with open_followed(vault) as idx:  # hot files edited outside optmem: journalled before the view is read
        if key:
            # … and the merged records that hold a value of it among their facts
            rows = idx.key_group(key, domain, project, exact=False)
            rows += [r for r in idx.merged_holding(key, domain, project) if r.id not in {x.id for x in rows}]
            if not rows:
                raise NotFound(f"no record has key {quote(key)}", key=key)
        else:
            try:
                start = log.resolve_one(idx, ref or "")
            except NotFound as exc:
                raise _key_for_id(idx, ref or "", domain, project) or exc from None
            rows = view.connected(start, lambda r: _linked(idx, r), key=lambda r: r.n)
        rows.sort(key=lambda r: view.newer_key(r.ts, r.id, r.n))
        saw = {r.id: json.loads(r.after) if r.after else [] for r in rows}
        rows = view.written_order(rows, lambda r: r.id, lambda r: saw[r.id])  # (a backdated value after what it saw)
        dated = {r.id: r.ts for r in rows}
        ok = set() if show_unsafe else idx.passed(rows)  # (the gate's verdicts, in one look-up)
        # a current value beside another domain's different one says so (`view_of`), as `conflicts` does
        guessed = idx.guesses_of(rows, now)  # (… and the guesses standing, in two statements)
        across = idx.across_domains(rows, now)  # (… and another domain's values: one look-up a key)
        out = []
        from optmem import memory

        for r in rows:  # a forgotten version says what forgot it, as `get` does
            rivals = memory.hot_rivals(idx, r)  # (a hot entry edited two ways, as `conflicts` reads it)
            seen = idx.view_of(r, now, passed=r.n in ok, guessed=guessed.get(r.n, {}), across=across, rivals=rivals)
            got = seen.full(show_unsafe=show_unsafe)
            gone = idx.forgetting(r)
            # values its writer saw that are dated after it: it replaced them all the same (tester 14 #7)
            later = [rid for rid in saw[r.id] if (dated.get(rid) or 0) > (r.ts or 0)]
            if got.get("conflict"):  # the values it is in conflict with, named as `get` names them
                gone = {**gone, "conflict_with": idx.conflict_with(r, now, rivals)}
            shown = {**got, **(gone if show_unsafe else view.shown(gone))}
            out.append(shown | ({"dated_before": later} if later else {}))
        return out


def _key_for_id(idx: Index, ref: str, domain: str | None, project: str | None) -> NotFound | None:
    """The error for a fact key given where `history` takes an id (`history backend.port`): the
    key's records are there — `history --key` shows them — or, when it cannot be an id (a
    character no id holds: `.`, `_`, `-`, a space), it names neither; None for what looks like an
    id (its own error stands)."""
    try:
        key = log.check_key(ref, "ID") or ""
    except UsageError:
        return None  # (no key: the id's own error stands)
    if idx.key_group(key, domain, project, exact=False):
        return NotFound(
            f"no record has id {quote(ref)}, but it is a fact key that has records: `optmem history --key "
            f"{key}` shows every version of it",
            ref=ref,
            key=key,
        )
    if any(not c.isalnum() for c in key):
        return NotFound(f"no record has id {quote(ref)}, and no record has key {quote(ref)}", ref=ref, key=key)
    return None


def _linked(idx: Index, row: Row) -> list[Row]:
    """The records directly linked to `row`: what supersedes it, what it supersedes or corrects,
    its key group, and a possible update the write gate kept beside it (either way)."""
    linked: list[Row] = []
    by = idx.by_id(row.superseded_by) if row.superseded_by else None
    if by is not None:
        linked.append(by)
    linked += idx.superseded_by_id(row.id)
    linked += idx.correcting(row)
    linked += idx.corrected(row)
    if row.key:
        linked += idx.key_group(row.key, row.domain, row.project)
    if row.upd:
        linked += idx.resolve(row.upd)[:1]
    linked += idx.rows("r.upd = ?", (row.id,))
    return linked


# -- conflicts: values of a key that time cannot order, facts corrected twice ----------------------
class OpenConflict(Value):
    key: str | None  # the key in conflict; None for a fact corrected two ways
    domain: str
    project: str | None
    values: list[dict[str, Any]]  # the records in conflict, oldest first (get's shape)
    fact: str | None = None  # without a key: the id of the record corrected two ways
    file: str | None = None  # a hot-memory entry edited two ways: its file (key `hot:<file>:<entry>`)
    decision: bool = False  # a record kept on one clone (confirm, correct) and forgotten on another
    passed: bool = False  # every line it shows is shown as stored (`view.as_stored`): nothing to scan again

    @property
    def removal(self) -> bool:
        """A hot entry removed on one machine and edited on another (one of its values is the removal)."""
        return self.file is not None and any(v.get("op") == "remove" for v in self.values)

    @property
    def name(self) -> str:
        """What `optmem resolve` takes to settle it: the key, else the corrected record's id."""
        return self.key if self.key is not None else (self.fact or "")[-8:]


def conflicts(vault: Vault, *, show_unsafe: bool = False, values: bool = True) -> list[OpenConflict]:
    """Every open conflict, oldest first: keys whose current values time cannot order
    (`view.key_winner`), facts with more than one current version (a record corrected on two
    clones, both corrections merged by git), and hot-memory entries edited two ways (`hot_forks`)
    — one fact, two truths, whatever its kind."""
    now = clock.now().timestamp()
    with open_index(vault) as idx:
        return open_conflicts(idx, now, show_unsafe=show_unsafe, values=values)


def open_conflicts(idx: Index, now: float, *, show_unsafe: bool = False, values: bool = True) -> list[OpenConflict]:
    """`conflicts` on an open index (what `stats` counts as contradictions too). Without
    `values`, each conflict's `values` list is left empty (its records are not read back): for a
    caller that only counts the conflicts."""
    keyed: dict[tuple[Any, ...], list[Row]] = {}
    forks: dict[str, tuple[Row, dict[int, Row]]] = {}
    for row in idx.in_conflict():  # habits and states of a key are apart (as the view keeps them)
        if view.status(row, now) not in view.LIVE:
            continue
        if row.conflict and row.key:
            keyed.setdefault((row.key, row.domain, row.project, row.state), []).append(row)
        if row.fork:
            for first in idx.first_versions(row):
                forks.setdefault(first.id, (first, {}))[1][row.n] = row
    found = [(rows, OpenConflict(k[0], k[1], k[2], [])) for k, rows in keyed.items()]
    found += [
        (list(rows.values()), OpenConflict(None, first.domain, first.project, [], fact=first.id))
        for first, rows in forks.values()
    ]
    found += hot_forks(idx) + decision_forks(idx)
    out = []
    shown = [(rows, c) for rows, c in found if len(rows) > 1]
    # what is shown as stored is not scanned again (`view.as_stored`): the values' and the
    # conflict's own strings (its key, domain, project: fields of its values; a fork's id: its
    # first version's)
    firsts = {first.id: first for first, _ in forks.values()}
    ok = idx.as_stored([r for rows, _ in shown for r in rows] + list(firsts.values())) if shown else set()
    guessed = idx.guesses_of([r for rows, _ in shown for r in rows], now) if values else {}  # (two statements)
    across = idx.across_domains([r for rows, _ in shown for r in rows], now) if values else {}  # (one a key)
    for rows, c in sorted(shown, key=lambda f: min(r.ts or 0 for r in f[0])):
        said = [
            idx.view_of(r, now, passed=r.n in ok, guessed=guessed.get(r.n, {}), across=across).full(
                show_unsafe=show_unsafe
            )
            for r in (sorted(rows, key=lambda r: view.newer_key(r.ts, r.id, r.n)) if values else ())
        ]
        if c.decision:
            said = [_decision_value(idx, v) for v in said]
        elif c.file is not None:  # a removal, as a value in conflict: what was removed, in words
            said = [{**v, "text": f"removed ({v['text']})"} if v.get("op") == "remove" else v for v in said]
        head = firsts.get(c.fact) if c.fact is not None else None
        own = c.fact is None or (head is not None and head.n in ok)  # (a decision's id: scanned)
        passed = all(r.n in ok for r in rows) and own and c.file is None
        if show_unsafe or passed:
            out.append(OpenConflict(c.key, c.domain, c.project, said, c.fact, c.file, c.decision, passed))
        else:  # the key, the names and the id as surfaces show them (`view.shown`), as the values are
            key, domain, project, fact = view.shown([c.key, c.domain, c.project, c.fact])
            out.append(OpenConflict(key, domain, project, said, fact, c.file, c.decision))
    return out


# -- one key, a different value in each of two domains ---------------------------------------------
class SplitKey(Value):
    """A key whose current values differ between domains of one project ("小明住在杭州" written by
    hermes, "小明搬到上海了" by code). Keys are scoped to their domain (each agent keeps its own
    facts: SPEC), so neither supersedes the other and this is no conflict to `resolve` — but it
    may be one fact told two ways, so the surfaces that put conflicts to the user say so too."""

    key: str
    project: str | None
    values: list[dict[str, Any]]  # one current value per domain and value, oldest first (get's shape)


def _current_values(
    idx: Index, pairs: list[tuple[str, str | None]], now: float
) -> dict[tuple[str, str | None], list[Row]]:
    """The current values of each of `pairs` (key, project), oldest first, read a page of keys a query
    (`Index.split_rows`'s filter, in SQL)."""
    wanted = set(pairs)
    current, params = view.is_sql(view.Status.CURRENT, now)
    groups: dict[tuple[str, str | None], list[Row]] = {}
    keys = sorted({key for key, _ in pairs})
    for i in range(0, len(keys), 500):  # (a page of keys a query: SQLite's bound on parameters)
        page = keys[i : i + 500]
        for r in idx.rows(
            f"r.key IN ({','.join('?' * len(page))}) AND {view.KEYED_FACT.sql} AND {current}",
            [*page, *params],
        ):
            if (pair := (r.key or "", r.project)) in wanted:  # (its key is one of the page's)
                groups.setdefault(pair, []).append(r)
    for rows in groups.values():
        rows.sort(key=lambda r: view.newer_key(r.ts, r.id, r.n))
    return groups


def split_names(idx: Index, now: float) -> list[tuple[str, str | None, frozenset[str]]]:
    """The keys whose current values differ between domains, oldest first, each as (key, project,
    the domains holding its current values) — without reading their values: the index keeps them
    as it takes records in (`schema.SPLIT_GROUP`, the `split` table). A key one of whose values has
    stopped being current since (it expired, it went cold: the row's `until`) is read again."""
    out: list[tuple[float, str, str | None, frozenset[str]]] = []
    again: list[tuple[str, str | None]] = []
    for key, project, since, until, domains in idx.conn.execute(
        "SELECT key, project, since, until, domains FROM split"
    ).fetchall():
        if until is not None and until <= now:
            again.append((key, project))
        else:
            out.append((since, key, project, frozenset(d for d in json.loads(domains) if d is not None)))
    for (key, project), rows in _still_split(idx, again, now):
        out.append((min(r.ts or 0 for r in rows), key, project, frozenset(r.domain for r in rows)))
    # (oldest first; of one time, by key, then project — no project first, as SQLite orders them)
    out.sort(key=lambda x: (x[0], x[1], x[2] is not None, x[2] or ""))
    return [(key, project, domains) for _, key, project, domains in out]


def _still_split(
    idx: Index, again: list[tuple[str, str | None]], now: float
) -> list[tuple[tuple[str, str | None], list[Row]]]:
    """Of the kept keys read again (`split_names`), those whose current values still differ between domains."""
    return [
        (pair, rows)
        for pair, rows in _current_values(idx, again, now).items()
        if len({r.domain for r in rows}) >= 2 and len({idx.said_as(r) for r in rows}) >= 2
    ]


def split_count(idx: Index, now: float, project: str | None = None) -> int:
    """How many `split_names` there are (with `project`, those of that project and of none): counted in SQL, the
    keys whose row says time has left them (`until`) read again — a session start whose block has no room for
    them says only how many there are, and a large log holds thousands (a row each, read and sorted, to count)."""
    mine, given = (" AND (project IS NULL OR project = ?)", [project]) if project else ("", [])
    sql = "SELECT count(*) FROM split WHERE (until IS NULL OR until > ?)"
    kept: int = idx.conn.execute(sql + mine, [now, *given]).fetchone()[0]
    again = idx.conn.execute(f"SELECT key, project FROM split WHERE until <= ?{mine}", [now, *given]).fetchall()
    return kept + len(_still_split(idx, [(key, p) for key, p in again], now))


def split_values(idx: Index, key: str, project: str | None, now: float) -> list[Row]:
    """The current values of one of `split_names`, oldest first."""
    return _current_values(idx, [(key, project)], now).get((key, project), [])


def split_heads(idx: Index, now: float) -> list[tuple[str, str | None, list[Row]]]:
    """`split_names` with each key's current values, oldest first — what `split_keys` says of
    each, without reading back the values' verdicts, guesses and views."""
    names = split_names(idx, now)
    values = _current_values(idx, [(key, project) for key, project, _ in names], now)
    return [(key, project, values.get((key, project), [])) for key, project, _ in names]


def split_key(
    idx: Index, key: str, project: str | None, rows: list[Row], now: float, *, show_unsafe: bool = False
) -> SplitKey:
    """One of `split_heads` said: its values read back as `get` shows them (`SplitKey`)."""
    ok = idx.passed([r for r in rows if not r.held])  # (the gate's verdicts and the guesses: one
    guessed = idx.guesses_of(rows, now)  # #                 look-up for the key's values, not one a value)
    across = idx.across_domains(rows, now)
    said = [
        idx.view_of(r, now, passed=r.n in ok, guessed=guessed.get(r.n, {}), across=across).full(show_unsafe=show_unsafe)
        for r in rows
    ]
    return SplitKey(key if show_unsafe else view.shown(key), project, said)


def split_keys(idx: Index, now: float, *, show_unsafe: bool = False) -> list[SplitKey]:
    """Keys whose current values differ between domains (`SplitKey`), oldest first."""
    return [split_key(idx, k, p, rows, now, show_unsafe=show_unsafe) for k, p, rows in split_heads(idx, now)]


def splits(vault: Vault, *, show_unsafe: bool = False) -> list[SplitKey]:
    """`split_keys` of a vault."""
    with open_index(vault) as idx:
        return split_keys(idx, clock.now().timestamp(), show_unsafe=show_unsafe)


def hot_forks(idx: Index) -> list[tuple[list[Row], OpenConflict]]:
    """Hot-memory entries edited two ways (`memory.forks`, read from the journal), as open
    conflicts keyed on the entry edited: `hot:<file>:<entry id>`."""
    from optmem import memory

    return [
        (rows, OpenConflict(key, rows[-1].domain, project, [], file=file))
        for rows, key, file, project in memory.forks(idx)
    ]


OUTDATED_RARE = 200  # a hot entry's value word more records hold than this names no one fact


def outdated_hot(
    idx: Index,
    entries: list[str],
    written: Callable[[str], float | None],
    now: float,
    project: str | None = None,
    domain: str | None = None,
) -> dict[str, Row]:
    """Hot entries (`written`: when one was last written, if known — asked only of an entry that
    states a replaced value) that state a value a newer value
    of a key has replaced — entry text → the key's current record: "用户的名字叫小明，在杭州做后端
    开发" after user.city "小明住在杭州" became "小明搬到上海了"; "Backend runs on port 8080" after
    backend.port became 9090. A guess, shown as one ("may be outdated"): the entry holds a value
    of the older record (a number, a name, an identifier; in Chinese two value characters in a
    row) that the current one no longer states, and every subject word both records state; the entry
    states none of the current record's new values, and was written before it. The current
    record is a statement of the user's or an agent's that stands (not pending, held, forgotten,
    nor a tool's or another source's words: those do not outdate what a person put in hot memory).

    Found from the entries' own rare value words (at most `OUTDATED_RARE` records hold each: read
    by the word, bounded, whatever the log's size), among the keyed records of the scope read: no
    project's or of `project`, of `domain` when one is given (another project's port outdates
    nothing of this one)."""
    from optmem.identifiers import values
    from optmem.quarantine import secondhand
    from optmem.reading.lexicon import STOPWORDS

    if not entries:
        return {}
    toks = {text: set(textmod.tokens(text)) for text in entries}
    vals = {text: values(text) for text in entries}
    wanted = {t for text in entries for t in toks[text] if _is_value_term(t, vals[text])}
    df = idx.doc_freq(sorted(wanted))
    rare = [t for t, n in df.items() if 0 < n <= OUTDATED_RARE]
    if not rare:
        return {}
    out: dict[str, Row] = {}
    known: dict[str, Row] = {}
    where, params = f"r.ksup IS NOT NULL AND r.key IS NOT NULL AND r.kind != '{MEMORY}'", []
    where += " AND (r.project IS NULL" + (" OR r.project = ?)" if project else ")")
    params += [project] if project else []
    if domain:
        where, params = where + " AND r.domain = ?", [*params, domain]
    olds = idx.matches(match_any(rare), where, params, "", 100)
    for old in olds:
        head = idx.current_version(old, known)
        if head.id == old.id or view.status(head, now, warm=True) != view.Status.CURRENT or head.held:
            continue
        if secondhand(head.origin):
            continue
        old_text, new_text = idx.record(old).text, idx.record(head).text
        old_vals, new_vals = values(old_text), values(new_text)
        gone, came = old_vals - new_vals, new_vals - old_vals
        old_toks, new_toks = set(textmod.tokens(old_text)), set(textmod.tokens(new_text))
        subject = {t for t in old_toks & new_toks if t not in STOPWORDS and not _is_value_term(t, gone)}
        for text in entries:
            said = {t for t in toks[text] & old_toks if _is_value_term(t, gone)}
            if text in out or not (said and subject and subject <= toks[text] and not came & vals[text]):
                continue
            when = written(text)
            if when is None or head.ts is None or when < head.ts:
                out[text] = head
    return out


def _is_value_term(term: str, vals: frozenset[str]) -> bool:
    """Whether an index term is one of `vals` (`identifiers.values`): a number ("8080" of
    "#8080"), a word value, or a Chinese pair both of whose characters are values (杭州)."""
    if term.isdigit():
        return "#" + term in vals
    if len(term) == 2 and all(textmod.has_cjk(c) for c in term):
        return term[0] in vals and term[1] in vals
    return term in vals


_DECIDED = (
    "SELECT DISTINCT f.ref FROM rec f WHERE f.ref IS NOT NULL AND f.kind = ? AND ("
    " EXISTS (SELECT 1 FROM rec k WHERE k.ref = f.ref AND k.kind IN (?, ?))"
    " OR EXISTS (SELECT 1 FROM rec t JOIN cor c ON c.t = t.n WHERE t.id = f.ref))"
)


def decision_forks(idx: Index) -> list[tuple[list[Row], OpenConflict]]:
    """Records kept on one clone and forgotten on another, neither knowing of the other's
    decision: a `forget` (or `reject`) against a `confirm`, a `restore` or a correction, each
    made without having seen the other (`decided_after`, which every decision records; one
    written before it was, knew of every decision older than itself). A decision made after
    seeing the other is a change of mind, not a conflict; `resolve` settles one with a decision
    made after both."""
    from optmem.record import CONFIRM, FORGET, RESTORE

    out: list[tuple[list[Row], OpenConflict]] = []
    for (ref,) in idx.conn.execute(_DECIDED, (FORGET, CONFIRM, RESTORE)).fetchall():
        target = idx.by_id(ref)
        if target is None:
            continue
        heads = decision_heads(idx, target)
        dropped = [r for r in heads if r.kind == FORGET]
        if dropped and len(dropped) < len(heads):
            out.append((heads, OpenConflict(None, target.domain, target.project, [], fact=target.id, decision=True)))
    return out


def decision_heads(idx: Index, target: Row) -> list[Row]:
    """The decisions about `target` no other decision about it was made after."""
    marks = ", ".join("?" * len(log.DECISIONS))
    about = idx.rows(f"r.ref = ? AND r.kind IN ({marks})", (target.id.upper(), *log.DECISIONS)) + idx.correcting(target)
    about.sort(key=lambda r: view.newer_key(r.ts, r.id, r.n))
    seen: set[str] = set()
    for i, row in enumerate(about):
        after = idx.record(row).extra.get("decided_after")
        seen.update(after if isinstance(after, list) else (r.id for r in about[:i]))
    return [r for r in about if r.id not in seen]


def _decision_value(idx: Index, value: dict[str, Any]) -> dict[str, Any]:
    """A decision as a value in conflict: what it decided, in words (a correction says its text)."""
    from optmem.record import CONFIRM, FORGET, RESTORE

    kind = value.get("kind")
    if kind not in (FORGET, CONFIRM, RESTORE):
        return value
    reason = value.get("reason")
    said = {FORGET: "forgotten", CONFIRM: "confirmed", RESTORE: "kept"}[kind]
    return {**value, "text": said + (f" ({reason})" if isinstance(reason, str) and reason else "")}


class Resolved(Value):
    id: str
    key: str
    kept: str | None
    superseded: list[str]
    record: dict[str, Any]


def resolve(
    vault: Vault,
    key: str,
    *,
    keep: str | None = None,
    value: str | None = None,
    domain: str | None = None,
    project: str | None = None,
    source: str | None = None,
    allow_unsafe: bool = False,
    origin: str | None = None,
) -> Resolved:
    """Settle a conflict on `key`: a `resolution` record with the kept value (`keep`: one of the
    values' ids) or a new one (`value`), correcting every value in conflict — a new record,
    never a rewrite."""
    if (keep is None) == (value is None):
        raise UsageError("give --keep ID (one of the values in conflict) or --value TEXT (a new one)")
    prepare(vault)
    with vault.lock():  # decided and written under one lock: two resolutions never race
        return _resolve(vault, key, keep, value, domain, project, source, allow_unsafe, origin)


def _resolve(
    vault: Vault,
    key: str,
    keep: str | None,
    value: str | None,
    domain: str | None,
    project: str | None,
    source: str | None,
    allow_unsafe: bool,
    origin: str | None = None,
) -> Resolved:
    if not key.strip():
        raise UsageError("KEY is empty; `optmem conflicts` lists the keys (and the facts) in conflict")
    key = log.check_key(key, "KEY") or ""
    found = [
        c
        for c in conflicts(vault, show_unsafe=True)
        if _names_conflict(c, key)
        and (domain is None or c.domain == domain)
        and (project is None or c.project == project)
    ]
    if len(found) > 1 and keep is not None:  # the kept value names its conflict
        found = [c for c in found if any(names(keep, v["id"]) for v in c.values)] or found
    if not found:
        raise NotFound(
            f"no open conflict on key {quote(key)}"
            + (f" in {domain}" if domain else "")
            + "; `optmem conflicts` lists them (a fact without a key is named by the id of "
            "the record corrected two ways)",
            key=key,
        )
    if len(found) > 1:
        raise Ambiguous(
            f"key {quote(key)} is in conflict in {len(found)} places; give --domain and --project",
            candidates=[{"domain": c.domain, "project": c.project} for c in found],
        )
    c = found[0]
    ids = [v["id"] for v in c.values]
    kept = None
    if keep is not None:
        matches = [v for v in c.values if names(keep, v["id"]) or (c.file is not None and v.get("entry") == keep)]
        if len(matches) != 1:  # a well-formed --keep naming none (or several): refused, exit 1
            raise (NotFound if not matches else Ambiguous)(
                f"--keep {quote(keep)} is "
                + ("not one of the values" if not matches else "more than one of the values")
                + f" in conflict on {quote(c.name)}: "
                + ", ".join(f"{v['id'][-8:]} ({v['text'][:40]})" for v in c.values),
                key=key,
                values=ids,
            )
        kept, text = matches[0]["id"], matches[0]["text"]
    else:
        text = value or ""
    if c.file is not None:
        return _resolve_hot(vault, c, kept, text, source, allow_unsafe)
    if c.decision:
        return _resolve_decision(vault, c, kept, source)
    basis = _kept_basis(c, kept, origin)
    tier = "redline" if any(v["tier"] == "redline" for v in c.values) else "normal"
    res = log.append(
        vault,
        log.Draft(
            text,
            domain=c.domain,
            project=c.project,
            kind=RESOLUTION,
            tier=tier,
            key=c.key,
            corrects=ids,
            source=source,
            extra={"resolves": ids, **({"kept": kept} if kept else {})},
            origin=origin,  # the writer's: a kept value's too (`quarantine.derived_origin`)
            basis=basis,
        ),
        gate=False,
        allow_unsafe=allow_unsafe,
    )
    return Resolved(res.id or "", c.name, kept, ids, res.record or {})


def _kept_basis(c: OpenConflict, kept: str | None, origin: str | None) -> str | None:
    """The basis of a resolution keeping the value `kept`: a person keeping it vouches for it (a
    statement); an agent keeping an inference keeps an inference ("inferred") — and is refused
    (`needs_person`) when it would replace a value that is no inference with it: an inference
    never overrules what was said, or read from a tool or an import (`view.may_overrule`): the
    user settles that, or the agent keeps the other value."""
    chosen = next((v for v in c.values if v["id"] == kept), None)
    if chosen is None or chosen.get("basis") != "inferred" or origin == "user":
        return None
    grounded = [v["id"] for v in c.values if v["id"] != kept and v.get("basis") != "inferred"]
    if grounded:
        raise NeedsPerson(
            f"{kept} is an inference, and {', '.join(grounded)} {'was' if len(grounded) == 1 else 'were'} not "
            f"inferred: an inference never overrules what was said or found — the user settles {quote(c.name)} "
            "(ask which is right; they run `optmem resolve` themselves, at their own terminal), or keep "
            f"a value that was not inferred (--keep {grounded[0][-8:]}); nothing was written",
            key=c.name,
            id=kept,
        )
    return "inferred"


def _resolve_hot(
    vault: Vault, c: OpenConflict, kept: str | None, text: str, source: str | None, allow_unsafe: bool
) -> Resolved:
    """A hot entry edited two ways, settled in its file (journalled as every hot edit is): the
    kept version stays and the others are removed; with a new value, the first version becomes
    it and the others are removed. Git's next merges carry the removals to every clone."""
    from optmem import memory

    where = hot_target(c.file or "")
    if where is None:  # (a conflict names only hot files)
        raise NotFound(f"{quote(c.file or '')} is not a hot-memory file", key=c.name)
    target, project = where
    held = [v["entry"] for v in c.values if v.get("op") != "remove"]  # (a removal's entry is gone from the file)
    chosen = next((v for v in c.values if v["id"] == kept), None)
    stays = (None if chosen.get("op") == "remove" else chosen["entry"]) if chosen is not None else held[0]
    ops: list[dict[str, Any]] = [{"op": "remove", "id": e} for e in held if e != stays]
    if kept is None:
        ops.append({"op": "replace", "id": stays, "new": text})
    rid = ""
    if ops:
        res = memory.apply(
            vault, ops, target=target, project=project, source=source or "resolve", allow_unsafe=allow_unsafe
        )
        rid = res.journal[-1] if res.journal else ""
        stays = res.changes[-1]["entry"]["id"] if kept is None else stays
    if stays is not None and len(held) < len(c.values):  # a removal is overruled: the journal says so
        ids = [v["id"] for v in c.values]
        rid = memory.settle(vault, target, project, stays, ids, source=source or "resolve") or rid
    return Resolved(rid, c.name, kept, [v["id"] for v in c.values if v["id"] != kept], {"id": rid, "text": text})


def _resolve_decision(vault: Vault, c: OpenConflict, kept: str | None, source: str | None) -> Resolved:
    """A record kept on one clone and forgotten on another, settled by a decision made after
    both: keeping a forget forgets the record and the corrections kept against it; keeping the
    other side restores the record (its correction, if that was kept, stays its current version)."""
    from optmem.record import FORGET, RESTORE

    if kept is None:
        raise UsageError(
            f"{c.name} was kept on one clone and forgotten on another: give --keep ID, one of the "
            f"decisions ({', '.join(v['id'][-8:] for v in c.values)}); --value does not apply"
        )
    chosen = next(v for v in c.values if v["id"] == kept)
    drop = chosen["kind"] == FORGET
    corrections = [v["id"] for v in c.values if v["kind"] not in log.DECISIONS]
    refs = [c.fact or ""] + (corrections if drop else [])

    def decide(idx: Index, rows: list[Row], moment: Any) -> list[Any]:
        after = log.decided(idx, rows[0])
        extra = {"decided_after": after, "resolves": [v["id"] for v in c.values], "kept": kept}
        if drop:
            return [log.about(r, moment, FORGET, source=source, extra={**extra, "reason": "resolved"}) for r in rows]
        return [log.about(rows[0], moment, RESTORE, source=source, extra=extra)]

    _, lines = log.write_about_all(vault, refs, decide)
    return Resolved(lines[0].id, c.name, kept, [v["id"] for v in c.values if v["id"] != kept], lines[0].to_json())


def _names_conflict(c: OpenConflict, ref: str) -> bool:
    """Whether `ref` names this conflict: its key; for a fact without a key, the id of the record
    corrected two ways or of one of its values (≥ 6 characters)."""
    if c.key is not None:
        return c.key == ref
    return names(ref, c.fact or "") or any(names(ref, v["id"]) for v in c.values)
