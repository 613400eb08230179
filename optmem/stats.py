"""`stats`: what a vault holds — counts, the effective view, hot-memory usage, health rates, sizes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optmem import clock, lifecycle, memory
from optmem.record import HANDOFF, MEMORY
from optmem.vault import Vault


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def stats(vault: Vault) -> dict[str, Any]:
    """Counts by domain and kind; current / superseded / expired / forgotten; redlines; hot-memory
    usage; duplicate and contradiction rates; sizes. All from the index, never a full log read."""
    from optmem.index import open_index

    vault.require()
    now = clock.now().timestamp()
    with open_index(vault) as idx:
        # journal and handoff records repeat text by design; the journal's keys are bookkeeping
        c = idx.census(now, plain_exclude=(MEMORY, HANDOFF), fact_exclude=(MEMORY,))
        life = lifecycle.census(vault.settings.lifecycle, idx.coolable(), now, c.by_status,
                                idx.last_sweep())
        index_bytes = _size(vault.cache_dir)
    hot = []
    for target, project in memory.targets(vault):
        h = memory.load(vault, target, project)
        u = h.usage()
        hot.append({"file": h.name, "entries": len(h.entries), "chars": u.chars, "limit": u.limit,
                    "percent": u.percent})
    # facts with more than one current value: key groups, and records corrected twice over
    chain_conflicts = sum(1 for n in c.corrected.values() if n > 1)
    facts = c.key_groups + len(c.corrected)
    contradictions = c.key_conflicts + chain_conflicts
    return {
        "records": c.records, "by_domain": c.by_domain, "by_kind": c.by_kind,
        "status": c.by_status, "redlines": c.redlines, "lifecycle": life, "hot": hot,
        "duplicate_rate": round((c.statements - c.distinct) / c.statements, 4) if c.statements else 0.0,
        "contradiction_rate": round(contradictions / facts, 4) if facts else 0.0,
        "contradictions": contradictions,
        "sizes": {"log": _size(vault.log_path), "access": _size(vault.access_path),
                  "tree": _size(vault.root / "tree"), "index": index_bytes},
    }
