"""`stats`: what a vault holds — counts, the effective view, hot-memory usage, health rates, sizes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optmem import clock, lifecycle, memory
from optmem.errors import Unreadable
from optmem.record import BOOKKEEPING, HANDOFF, MEMORY
from optmem.vault import Vault


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


DUPLICATE_SAMPLE = 400  # current records checked for a near duplicate (evenly spread over the log)


def hygiene(idx: Any, now: float, c: Any = None) -> dict[str, Any]:
    """The article's hygiene figures. Duplicate rate: the share of (a sample of) current records
    with a near duplicate among the other current records (similarity ≥ the threshold).
    Contradiction rate: the open conflicts (`optmem conflicts`: keys in conflict, facts corrected
    two ways) over the facts that can contradict (key groups, corrected records). The write
    gate's possible updates are guesses: counted apart (`open_updates`), never as contradictions."""
    from optmem import gate, view
    from optmem.facts import open_conflicts

    c = c or idx.census(now, plain_exclude=(MEMORY, HANDOFF), fact_exclude=(MEMORY,))
    threshold = idx.vault.settings.dedup.threshold
    current, params = view.is_sql(view.Status.CURRENT, now)
    skip = (MEMORY, HANDOFF, *BOOKKEEPING)
    marks = ",".join("?" * len(skip))
    total = idx.conn.execute(
        f"SELECT count(*) FROM rec r WHERE r.kind NOT IN ({marks}) AND r.fp IS NOT NULL AND {current}", [*skip, *params]
    ).fetchone()[0]
    step = max(1, total // DUPLICATE_SAMPLE)
    sample = idx.rows(f"r.kind NOT IN ({marks}) AND r.fp IS NOT NULL AND {current} ORDER BY r.n", [*skip, *params])[
        ::step
    ]
    dups = 0
    for row in sample[:DUPLICATE_SAMPLE]:
        rec = idx.record(row)
        if any(s["id"] != row.id for s in gate.find_similar(idx, rec.text, row.domain, row.project, threshold, now)):
            dups += 1
    checked = min(len(sample), DUPLICATE_SAMPLE)
    open_updates = 0  # the write gate's guesses left standing: reported, never counted as contradictions
    for row in idx.rows("r.upd IS NOT NULL"):
        old = idx.by_id(row.upd or "")
        if (
            old is not None
            and view.status(row, now) == view.Status.CURRENT
            and view.status(old, now) == view.Status.CURRENT
        ):
            open_updates += 1
    facts = c.key_groups + len(c.corrected)
    contradictions = len(open_conflicts(idx, now))  # what `optmem conflicts` lists
    return {
        "duplicate_rate": round(dups / checked, 4) if checked else 0.0,
        "contradiction_rate": round(contradictions / facts, 4) if facts else 0.0,
        "duplicates": dups,
        "contradictions": contradictions,
        "open_updates": open_updates,
    }


def stats(vault: Vault) -> dict[str, Any]:
    """Counts by domain and kind; current / superseded / expired / forgotten; redlines; hot-memory
    usage; duplicate and contradiction rates; sizes. All from the index, never a full log read."""
    from optmem.follow import open_followed

    vault.require()
    now = clock.now().timestamp()
    with open_followed(vault) as idx:  # hot files edited outside optmem: journalled before the view is read
        # journal and handoff records repeat text by design; the journal's keys are bookkeeping
        c = idx.census(now, plain_exclude=(MEMORY, HANDOFF), fact_exclude=(MEMORY,))
        life = lifecycle.census(vault.settings.lifecycle, idx.coolable(), now, c.by_status, idx.last_sweep())
        rates = hygiene(idx, now, c)
        index_bytes = _size(vault.cache_dir)
    hot: list[dict[str, Any]] = []
    for target, project in memory.targets(vault):
        try:
            h = memory.load(vault, target, project)
        except Unreadable:  # counted on its own: the other files and the log are still described
            bad = memory.show(vault, [(target, project)])[0]
            hot.append({"file": bad.file, "unreadable": bad.unreadable})
            continue
        u = h.usage()
        hot.append(
            {"file": h.name, "entries": len(h.entries), "chars": u.chars, "limit": u.limit, "percent": u.percent}
        )
    return {
        "records": c.records,
        "by_domain": c.by_domain,
        "by_kind": c.by_kind,
        "status": c.by_status,
        "redlines": c.redlines,
        "lifecycle": life,
        "hot": hot,
        **rates,
        "sizes": {
            "log": sum(_size(path) for _, path in vault.segments()),
            "access": sum(_size(path) for _, path in vault.access_files()),
            "tree": _size(vault.root / "tree"),
            "index": index_bytes,
        },
    }
