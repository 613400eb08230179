"""The effective view from the caller's side: `correct` a record, and a record's `history`.

The view itself (who supersedes whom, what is forgotten or expired) is kept incrementally by
the index; this module writes corrections through the log's append path and reads chains.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from optmem import clock, log
from optmem.errors import Ambiguous, NotFound, UsageError
from optmem.index import Index, Row, open_index, prepare
from optmem.record import ID_RE

CORRECTION_PREFIX = "〔更正〕"
_ALREADY = re.compile(r"^\s*(?:〔更正〕|\[correction\])", re.IGNORECASE)


@dataclass(frozen=True)
class Corrected:
    id: str
    corrects: str
    record: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def _target(idx: Index, target: str, now: float) -> Row:
    """The one record TARGET names: an id (or unique prefix/suffix), else an unambiguous query."""
    if ID_RE.match(target.strip().lstrip("#")):
        rows = idx.resolve(target)
        if len(rows) == 1:
            return rows[0]
        if len(rows) > 1:
            raise Ambiguous(f"{target!r} names {len(rows)} records; give more of the id",
                            candidates=[{"id": r.id, "text": idx.record(r).text} for r in rows[:10]])
    from optmem import text as textmod
    from optmem.search import Filters, ranked

    terms = textmod.search_terms(target)
    found = ranked(idx, target, terms, 10, Filters(current=True), False, now, []).hits if terms else []
    if not found:
        raise NotFound(f"no current record matches {target!r}; give an id, or other words",
                       ref=target)
    strong = [h for h in found if h["score"] >= 0.5 * found[0]["score"]]
    if len(strong) > 1:
        raise Ambiguous(
            f"{target!r} matches {len(strong)} current records; nothing was written — pass one "
            "of their ids as TARGET",
            candidates=[{"id": h["id"], "text": h["text"], "domain": h["domain"]} for h in strong])
    return idx.by_id(found[0]["id"])


def correct(vault, target: str, text: str, *, tier: str | None = None, domain: str | None = None,
            project: str | None = None, key: str | None = None, evidence: str | None = None,
            source: str | None = None, allow_unsafe: bool = False) -> Corrected:
    """Append a correction of TARGET (`kind: correction`, `corrects: [id]`, text prefixed 〔更正〕).

    It inherits domain, project and key from its target unless given. A redline can only be
    corrected by a redline (`redline_locked` otherwise).
    """
    if not text or not text.strip():
        raise UsageError("TEXT is empty; give the corrected fact")
    body = text.strip() if _ALREADY.match(text) else f"{CORRECTION_PREFIX}{text.strip()}"
    now = clock.now().timestamp()
    prepare(vault)
    with vault.lock():
        with open_index(vault) as idx:
            row = _target(idx, target, now)
            rec = idx.record(row)
            warnings = idx.warnings()
        res = log.append(  # refuses (redline_locked) to correct a redline unless this is one
            vault, body, domain=domain or rec.domain, project=project if project else rec.project,
            kind="correction", tier=tier or "normal", key=key or rec.key, evidence=evidence,
            source=source, corrects=[row.id], allow_unsafe=allow_unsafe, gate=False)
    return Corrected(res.id or "", row.id, res.record or {}, warnings)


def history(vault, ref: str | None = None, *, key: str | None = None, domain: str | None = None,
            project: str | None = None) -> list[dict[str, Any]]:
    """Every version of a fact, oldest first: the correction chain and key group of a record,
    or all records with `key`."""
    if not ref and not key:
        raise UsageError("give an ID, or --key KEY")
    now = clock.now().timestamp()
    with open_index(vault) as idx:
        if key:
            where, params = "r.key = ?", [key]
            if domain:
                where, params = where + " AND r.domain = ?", params + [domain]
            if project:
                where, params = where + " AND r.project = ?", params + [project]
            rows = idx.rows(where, params)
            if not rows:
                raise NotFound(f"no record has key {key!r}", key=key)
        else:
            rows = _chain(idx, log.resolve_one(idx, ref))
        rows.sort(key=lambda r: (r.ts or 0, r.id, r.n))
        return [log.describe(r, idx.record(r), now) for r in rows]


def _chain(idx: Index, start: Row) -> list[Row]:
    """The connected versions of `start`: corrections in both directions and its key group."""
    seen: dict[int, Row] = {}
    todo = [start]
    while todo:
        row = todo.pop()
        if row.n in seen:
            continue
        seen[row.n] = row
        linked: list[Row] = []
        if row.superseded_by:
            linked += idx.rows("r.id = ?", (row.superseded_by,))
        linked += idx.rows("r.sup = ? OR r.ksup = ?", (row.id, row.id))
        if row.corrects:
            import json

            for ref in json.loads(row.corrects):
                linked += idx.resolve(ref)[:1]
        if row.key:
            linked += idx.rows("r.key = ? AND r.domain = ? AND r.project IS ?",
                               (row.key, row.domain, row.project))
        todo += [r for r in linked if r.n not in seen]
    return list(seen.values())
