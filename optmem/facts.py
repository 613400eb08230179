"""Facts and their versions: `correct` a record, a record's `history`, and the `conflicts` of
keyed facts that time cannot settle, which a person `resolve`s.

The effective view (`view`) decides what supersedes what; this module writes corrections through
the log's append path and reads the chains of versions back.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from optmem import clock, log, view
from optmem import text as textmod
from optmem.errors import Ambiguous, NotFound, TooLarge, UsageError, quote
from optmem.index import Filters, Index, Row, open_index, prepare
from optmem.record import CORRECTION, ID_RE, MERGED, RESOLUTION, Tier, names
from optmem.vault import Vault

CORRECTION_PREFIX = "〔更正〕"
_ALREADY = re.compile(r"^\s*(?:〔更正〕|\[correction\])", re.IGNORECASE)


@dataclass(frozen=True)
class Corrected:
    id: str
    corrects: str
    record: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def _target(idx: Index, target: str, now: float, domain: str | None = None, project: str | None = None) -> Row:
    """The one record TARGET names: an id (or unique prefix/suffix), else an unambiguous query
    (within `domain` and `project` when given)."""
    if not target.strip():
        raise UsageError("TARGET is empty; a record id, or words that name one current record, is "
                         "required")
    if ID_RE.match(target.strip().lstrip("#")):
        rows = idx.resolve(target)
        if len(rows) == 1:
            return rows[0]
        if len(rows) > 1:
            raise Ambiguous(f"{quote(target)} names {len(rows)} records; give more of the id",
                            candidates=[{"id": r.id, "text": idx.record(r).text} for r in rows[:10]])
    from optmem.search import Query, ranked
    from optmem.view import Status

    terms = textmod.search_terms(target)
    # current records and pending guesses (an agent's append waits as one: its correction names
    # it by words like any other)
    where = Filters(domains=(domain,) if domain else (), project=project)
    hits = ranked(idx, Query(target, terms, 10, where, False, now)).hits if terms else []
    # by score: the band that ranks a guess below every current record says nothing of which
    # record the words name
    found = sorted((h for h in hits if h.status in (Status.CURRENT, Status.PENDING)), key=lambda h: -(h.score or 0.0))
    if not found:
        raise NotFound(f"no current or pending record matches {quote(target)}; give an id, or other words",
                       ref=target)
    best = found[0].score or 0.0
    strong = [h for h in found if (h.score or 0.0) >= 0.5 * best]
    if len(strong) > 1:
        raise Ambiguous(
            f"{quote(target)} matches {len(strong)} current or pending records; nothing was written — pass one "
            "of their ids as TARGET",
            candidates=[{"id": h.record.id, "text": h.record.text, "domain": h.record.domain}
                        for h in strong])
    return idx.rows_in([found[0].line])[0]


def _plain(text: str) -> str:
    """A text as a correction compares it: its words as written — case, width and spacing
    folded, a correction's prefix and closing punctuation aside ("1.5" and "15", "wants" and
    "wanted", "Jose" and "José" differ, unlike in a fingerprint)."""
    return " ".join(textmod.fold_case(_ALREADY.sub("", text)).split()).rstrip(".!?。！？ ")


def correct(vault: Vault, target: str, text: str | None, *, tier: str | None = None,
            domain: str | None = None, project: str | None = None, key: str | None = None,
            evidence: str | None = None, source: str | None = None,
            allow_unsafe: bool = False) -> Corrected:
    """Append a correction of TARGET (`kind: correction`, `corrects: [id]`, text prefixed 〔更正〕).

    It inherits domain, project and key from its target unless given. A redline can only be
    corrected by a redline (`redline_locked` otherwise). A target already superseded is refused
    (usage error naming the current version), and so is a hot-memory journal record.
    """
    if not text or not text.strip():
        raise UsageError("TEXT is empty; give the corrected fact")
    body = text.strip() if _ALREADY.match(text) else f"{CORRECTION_PREFIX}{text.strip()}"
    now = clock.now().timestamp()
    prepare(vault)
    with vault.lock():
        with open_index(vault) as idx:
            row = _target(idx, target, now, domain, project)
            log.refuse_bookkeeping(idx, row, "correct")
            if row.superseded_by:  # correcting an old version would make a second current one
                head = idx.current_version(row)
                raise UsageError(
                    f"{row.id} is already superseded by {row.superseded_by}; the current version is "
                    f"{head.id} — correct that one (`optmem correct {head.id} TEXT`), so one fact never "
                    "has two current versions; nothing was written",
                    id=row.id, superseded_by=row.superseded_by, current=head.id)
            rec = idx.record(row)
            if tier is None and key is None and _plain(body) == _plain(rec.text):
                raise UsageError(f"{row.id} already says that; nothing was written — give the corrected "
                                 "fact (a correction that says the same changes nothing)", id=row.id)
            warnings = idx.warnings()
            if row.pending and not row.confirmed:
                warnings.append(f"{row.id} was a pending guess (domain {row.domain}); the correction "
                                "replaces it")
        res = log.append(  # refuses (redline_locked) to correct a redline unless this is one
            vault, log.Draft(body, domain=domain or rec.domain, project=project or rec.project,
                             kind=CORRECTION, tier=tier or "normal", key=key or rec.key,
                             evidence=evidence, source=source, corrects=[row.id]),
            allow_unsafe=allow_unsafe, gate=False)
    return Corrected(res.id or "", row.id, res.record or {}, warnings)


def history(vault: Vault, ref: str | None = None, *, key: str | None = None,
            domain: str | None = None, project: str | None = None,
            show_unsafe: bool = False) -> list[dict[str, Any]]:
    """Every version of a fact, oldest first: the correction chain and key group of a record,
    or all records with `key`."""
    if not ref and not key:
        raise UsageError("give an ID, or --key KEY")
    now = clock.now().timestamp()
    with open_index(vault) as idx:
        if key:
            rows = idx.key_group(key, domain, project, exact=False)
            if not rows:
                raise NotFound(f"no record has key {quote(key)}", key=key)
        else:
            start = log.resolve_one(idx, ref or "")
            rows = view.connected(start, lambda r: _linked(idx, r), key=lambda r: r.n)
        rows.sort(key=lambda r: (r.ts or 0, r.id, r.n))
        return [idx.view_of(r, now).full(show_unsafe=show_unsafe) for r in rows]


def _linked(idx: Index, row: Row) -> list[Row]:
    """The records directly linked to `row`: what supersedes it, what it supersedes or corrects,
    its key group, and a possible update the write gate kept beside it (either way)."""
    linked: list[Row] = []
    by = idx.by_id(row.superseded_by) if row.superseded_by else None
    if by is not None:
        linked.append(by)
    linked += idx.superseded_by_id(row.id)
    linked += idx.correcting(row.id)
    for ref in json.loads(row.corrects) if row.corrects else []:
        linked += idx.resolve(ref)[:1]
    if row.key:
        linked += idx.key_group(row.key, row.domain, row.project)
    if row.upd:
        linked += idx.resolve(row.upd)[:1]
    linked += idx.rows("r.upd = ?", (row.id,))
    return linked


# -- conflicts: values of a key that time cannot order --------------------------------------------
@dataclass(frozen=True)
class OpenConflict:
    key: str
    domain: str
    project: str | None
    values: list[dict[str, Any]]     # the records in conflict, oldest first (get's shape)


def conflicts(vault: Vault, *, show_unsafe: bool = False) -> list[OpenConflict]:
    """Every key whose current values time cannot order (`view.key_winner`), oldest first."""
    now = clock.now().timestamp()
    with open_index(vault) as idx:
        groups: dict[tuple[str, str, str | None, int], list[Row]] = {}
        for row in idx.in_conflict():  # habits and states of a key are apart (as the view keeps them)
            if view.status(row, now) in view.LIVE and row.key:
                groups.setdefault((row.key, row.domain, row.project, row.state), []).append(row)
        return [OpenConflict(k, d, p, [idx.view_of(r, now).full(show_unsafe=show_unsafe)
                                      for r in sorted(rows, key=lambda r: (r.ts or 0, r.id))])
                for (k, d, p, _), rows in sorted(groups.items(), key=lambda g: min(r.ts or 0 for r in g[1]))
                if len(rows) > 1]


@dataclass(frozen=True)
class Resolved:
    id: str
    key: str
    kept: str | None
    superseded: list[str]
    record: dict[str, Any]


def resolve(vault: Vault, key: str, *, keep: str | None = None, value: str | None = None,
            domain: str | None = None, project: str | None = None, source: str | None = None,
            allow_unsafe: bool = False) -> Resolved:
    """Settle a conflict on `key`: a `resolution` record with the kept value (`keep`: one of the
    values' ids) or a new one (`value`), correcting every value in conflict — a new record,
    never a rewrite."""
    if (keep is None) == (value is None):
        raise UsageError("give --keep ID (one of the values in conflict) or --value TEXT (a new one)")
    prepare(vault)
    with vault.lock():  # decided and written under one lock: two resolutions never race
        return _resolve(vault, key, keep, value, domain, project, source, allow_unsafe)


def _resolve(vault: Vault, key: str, keep: str | None, value: str | None, domain: str | None,
             project: str | None, source: str | None, allow_unsafe: bool) -> Resolved:
    if not key.strip():
        raise UsageError("KEY is empty; `optmem conflicts` lists the keys in conflict")
    found = [c for c in conflicts(vault, show_unsafe=True) if c.key == key
             and (domain is None or c.domain == domain) and (project is None or c.project == project)]
    if len(found) > 1 and keep is not None:  # the kept value names its conflict
        found = [c for c in found if any(names(keep, v["id"]) for v in c.values)] or found
    if not found:
        raise NotFound(f"no open conflict on key {quote(key)}" + (f" in {domain}" if domain else "")
                       + "; `optmem conflicts` lists them", key=key)
    if len(found) > 1:
        raise Ambiguous(f"key {quote(key)} is in conflict in {len(found)} places; give --domain and --project",
                        candidates=[{"domain": c.domain, "project": c.project} for c in found])
    c = found[0]
    ids = [v["id"] for v in c.values]
    kept = None
    if keep is not None:
        matches = [v for v in c.values if names(keep, v["id"])]
        if len(matches) != 1:
            raise UsageError(f"--keep {quote(keep)} is not one of the values in conflict on {quote(key)}: "
                             + ", ".join(f"{v['id'][-8:]} ({v['text'][:40]})" for v in c.values),
                             key=key, values=ids)
        kept, text = matches[0]["id"], matches[0]["text"]
    else:
        text = value or ""
    tier = "redline" if any(v["tier"] == "redline" for v in c.values) else "normal"
    res = log.append(vault, log.Draft(text, domain=c.domain, project=c.project, kind=RESOLUTION,
                                      tier=tier, key=key, corrects=ids, source=source,
                                      extra={"resolves": ids, **({"kept": kept} if kept else {})}),
                     gate=False, allow_unsafe=allow_unsafe)
    return Resolved(res.id or "", key, kept, ids, res.record or {})




# -- merging fragments: one structured record, every detail kept -------------------------------
@dataclass(frozen=True)
class Merged:
    id: str
    topic: str
    fragments: list[str]
    record: dict[str, Any]


def merge(vault: Vault, refs: list[str], topic: str, *, text: str | None = None,
          fields: dict[str, str] | None = None, key: str | None = None, source: str | None = None,
          allow_unsafe: bool = False) -> Merged:
    """One structured record for fragments about one topic: a main text, `facts` (field → value:
    the fragments' keyed values, then `fields`), and `details` — every fragment's text verbatim,
    so nothing is lost ("structured fields only grow"). It supersedes the fragments (a
    correction of each); `history` leads from it to them."""
    if len(refs) < 2:
        raise UsageError("give the ids of at least two records to merge, or --suggest to find some")
    if not topic or not topic.strip():
        raise UsageError("--topic is required: what the merged record is about")
    from optmem import scan

    now = clock.now().timestamp()
    limit = vault.settings.limits.record_bytes
    scan.check_field("topic", topic, limit=log.FIELD_BYTES["key"], allow_unsafe=allow_unsafe)
    for name, value in (fields or {}).items():
        scan.check_field("fact", f"{name}={value}", limit=log.FIELD_BYTES["reason"], allow_unsafe=allow_unsafe)
    with open_index(vault) as idx:
        rows = list({r.id: r for r in (log.resolve_one(idx, ref) for ref in refs)}.values())
        if len(rows) < 2:
            raise UsageError("give at least two different records to merge (see `optmem merge --suggest`)")
        for row in rows:
            if row.conflict:
                raise UsageError(f"{row.id} is one of the values of key {row.key!r} in conflict: settle it "
                                 f"first (`optmem resolve {row.key} --keep ID`)", id=row.id, key=row.key)
            log.refuse_bookkeeping(idx, row, "merge")
            st = view.status(row, now)
            if st != view.Status.CURRENT:
                raise UsageError(f"{row.id} is {st.value}, not current: merge current records only",
                                 id=row.id, status=st.value)
            if row.tier == Tier.REDLINE:
                raise UsageError(f"{row.id} is a redline (a locked rule); it is not merged", id=row.id)
        scopes = {(r.domain, r.project) for r in rows}
        if len(scopes) > 1:
            raise UsageError("the records are in different domains or projects: " + ", ".join(
                f"{d}/{p or '-'}" for d, p in sorted(scopes, key=str)) + "; merge within one", ids=[r.id for r in rows])
        records = sorted((idx.record(r) for r in rows), key=lambda r: (r.ts, r.id))
    for rec in records:  # a fragment the scanner flags is not carried into a new record's details
        scan.check_field("fragment", rec.text, limit=limit, allow_unsafe=allow_unsafe)
    facts_obj: dict[str, Any] = {}
    for rec in records:
        if rec.key and rec.key in facts_obj:  # two values of one key: both kept, never one over the other
            prev = facts_obj[rec.key]
            facts_obj[rec.key] = (prev if isinstance(prev, list) else [prev]) + [rec.text]
        elif rec.key:
            facts_obj[rec.key] = rec.text
        for k, v in (rec.extra.get("facts") or {}).items() if rec.kind == MERGED else ():
            facts_obj.setdefault(k, v)  # a merged fragment's own facts carry over
    facts_obj.update(fields or {})
    details = [d for rec in records for d in ((rec.extra.get("details") or [rec.text]) if rec.kind == MERGED
                                              else [rec.text])]
    joined = " / ".join(" ".join(d.split()) for d in details)
    main = (f"{text.strip()} — " if text and text.strip() else f"{topic.strip()}: ") + joined  # every detail found
    size = len(main.encode("utf-8")) + len(json.dumps(details, ensure_ascii=False).encode("utf-8"))
    if size > 2 * limit:
        raise TooLarge(f"the merged record would be {size:,} bytes (its text and details); merge fewer or "
                       f"shorter records (at most about {limit:,} bytes of fragments); nothing was written",
                       bytes=size, limit=limit)
    shared_keys = {r.key for r in records}
    key = key or (next(iter(shared_keys)) if len(shared_keys) == 1 and None not in shared_keys else None)
    domain, project = next(iter(scopes))
    res = log.append(vault, log.Draft(main, domain=domain, project=project, kind=MERGED, key=key,
                                      corrects=[r.id for r in records], source=source,
                                      tags=sorted({t for r in records for t in r.tags}),
                                      extra={"topic": topic.strip(), "facts": facts_obj, "details": details,
                                             "fragments": [r.id for r in records]}),
                     gate=False, allow_unsafe=allow_unsafe)
    return Merged(res.id or "", topic.strip(), [r.id for r in records], res.record or {})


@dataclass(frozen=True)
class Suggestion:
    reason: str
    ids: list[str]
    texts: list[str]


SUGGEST_POOL = 2000     # the most recent current records looked at
SUGGEST_MIN = 3         # records a group needs


def suggest_merges(vault: Vault, *, limit: int = 20) -> list[Suggestion]:
    """Groups of ≥ 3 current records that look like one topic: a shared key prefix (`trip.*`), a
    shared tag, or strong term overlap — each with its reason. Nothing is written."""
    from optmem.record import BOOKKEEPING, MEMORY

    now = clock.now().timestamp()
    with open_index(vault) as idx:
        rows = [r for r in idx.recent(now, exclude_kinds=(MEMORY, *BOOKKEEPING), limit=SUGGEST_POOL)]
        recs = {r.id: idx.record(r) for r in rows}
    scope = {r.id: (r.domain, r.project) for r in rows}
    groups: dict[tuple[str, Any], set[str]] = {}
    for rid, rec in recs.items():
        if rec.key and "." in rec.key:
            groups.setdefault((f"they share the key prefix {rec.key.split('.')[0]}.*", scope[rid]), set()).add(rid)
        for tag in rec.tags:
            groups.setdefault((f"they share the tag {tag}", scope[rid]), set()).add(rid)
    for members in _overlapping(recs, scope):
        terms = set.intersection(*(set(textmod.query_terms(recs[i].text)) for i in members))
        groups.setdefault((f"they share the terms {', '.join(sorted(terms)[:5])}", scope[next(iter(members))]),
                          set()).update(members)
    out, seen = [], set()
    for (reason, _), ids in sorted(groups.items(), key=lambda g: -len(g[1])):
        key = frozenset(ids)
        if len(ids) < SUGGEST_MIN or key in seen:
            continue
        seen.add(key)
        ordered = sorted(ids, key=lambda i: (recs[i].ts, i))
        out.append(Suggestion(reason, ordered, [recs[i].text for i in ordered]))
    return out[:limit]


def _overlapping(recs: dict[str, Any], scope: dict[str, Any]) -> list[set[str]]:
    """Clusters of records (one scope) whose terms overlap strongly (Jaccard ≥ 0.4 on terms that
    are neither unique nor everywhere), by union of linked pairs."""
    terms = {i: set(textmod.query_terms(r.text)) for i, r in recs.items()}
    holders: dict[str, list[str]] = {}
    for i, ts in terms.items():
        for t in ts:
            holders.setdefault(t, []).append(i)
    parent = {i: i for i in recs}

    def root(i: str) -> str:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for t, ids in holders.items():
        if not 2 <= len(ids) <= 20:
            continue  # a term of one record links nothing; one in many says little
        for a_i, a in enumerate(ids):
            for b in ids[a_i + 1:]:
                if scope[a] != scope[b] or root(a) == root(b):
                    continue
                union, both = terms[a] | terms[b], terms[a] & terms[b]
                if len(both) >= 2 and len(both) / len(union) >= 0.4:
                    parent[root(a)] = root(b)
    clusters: dict[str, set[str]] = {}
    for i in recs:
        clusters.setdefault(root(i), set()).add(i)
    return [c for c in clusters.values() if len(c) >= SUGGEST_MIN]
