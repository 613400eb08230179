"""`stats`: what a vault holds — counts, the effective view, hot-memory usage, health rates, sizes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from optmem import clock, memory
from optmem.vault import Vault

TEXT_KINDS = "r.kind NOT IN ('seen', 'forget')"
SUPERSEDED = "(r.sup IS NOT NULL OR r.ksup IS NOT NULL OR r.retired = 1)"


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
        q = idx.conn.execute
        total = q(f"SELECT count(*) FROM rec r WHERE {TEXT_KINDS}").fetchone()[0]
        by_domain = dict(q(f"SELECT domain, count(*) FROM rec r WHERE {TEXT_KINDS} GROUP BY domain ORDER BY domain"))
        by_kind = dict(q(f"SELECT kind, count(*) FROM rec r WHERE {TEXT_KINDS} GROUP BY kind ORDER BY kind"))
        forgotten = q(f"SELECT count(*) FROM rec r WHERE {TEXT_KINDS} AND r.forgotten = 1").fetchone()[0]
        superseded = q(f"SELECT count(*) FROM rec r WHERE {TEXT_KINDS} AND r.forgotten = 0 AND {SUPERSEDED}").fetchone()[0]
        expired = q(f"SELECT count(*) FROM rec r WHERE {TEXT_KINDS} AND r.forgotten = 0 AND NOT {SUPERSEDED} "
                    "AND r.expires IS NOT NULL AND r.expires <= ?", (now,)).fetchone()[0]
        current_sql = (f"r.forgotten = 0 AND NOT {SUPERSEDED} AND (r.expires IS NULL OR r.expires > {now!r})")
        redlines = q(f"SELECT count(*) FROM rec r WHERE r.tier = 3 AND {current_sql}").fetchone()[0]
        # the same statement stored twice (journal and handoff records repeat text by design)
        plain = f"{TEXT_KINDS} AND r.kind NOT IN ('memory', 'handoff') AND r.fp IS NOT NULL"
        n_plain, distinct = q(f"SELECT count(*), count(DISTINCT r.domain || '|' || coalesce(r.project, '') "
                              f"|| '|' || r.fp) FROM rec r WHERE {plain}").fetchone()
        # facts with more than one current value: key groups, and records corrected twice over
        # (the hot-memory journal's keys are bookkeeping, not facts)
        keyed = "r.key IS NOT NULL AND r.kind != 'memory'"
        key_groups = q(f"SELECT count(*) FROM (SELECT 1 FROM rec r WHERE {keyed} "
                       "GROUP BY r.domain, r.project, r.key)").fetchone()[0]
        key_conflicts = q(f"SELECT count(*) FROM (SELECT 1 FROM rec r WHERE {keyed} AND {current_sql} "
                          "GROUP BY r.domain, r.project, r.key HAVING count(*) > 1)").fetchone()[0]
        correctors: dict[str, int] = {}
        for corrects, in q(f"SELECT r.corrects FROM rec r WHERE r.corrects IS NOT NULL AND {current_sql}"):
            for target in json.loads(corrects):
                correctors[target] = correctors.get(target, 0) + 1
        chains = len(correctors)
        chain_conflicts = sum(1 for n in correctors.values() if n > 1)
        index_bytes = _size(vault.cache_dir)
    hot = []
    targets: list[tuple[str, str | None]] = [("memory", None), ("user", None)]
    pdir = vault.root / "projects"
    if pdir.is_dir():
        targets += [("memory", p.name) for p in sorted(pdir.iterdir()) if (p / "MEMORY.md").is_file()]
    for target, project in targets:
        h = memory.load(vault, target, project)
        u = h.usage()
        hot.append({"file": h.name, "entries": len(h.entries), "chars": u.chars, "limit": u.limit,
                    "percent": u.percent})
    facts = key_groups + chains
    return {
        "records": total, "by_domain": by_domain, "by_kind": by_kind,
        "status": {"current": total - forgotten - superseded - expired, "superseded": superseded,
                   "expired": expired, "forgotten": forgotten},
        "redlines": redlines, "hot": hot,
        "duplicate_rate": round((n_plain - distinct) / n_plain, 4) if n_plain else 0.0,
        "contradiction_rate": round((key_conflicts + chain_conflicts) / facts, 4) if facts else 0.0,
        "contradictions": key_conflicts + chain_conflicts,
        "sizes": {"log": _size(vault.log_path), "tree": _size(vault.root / "tree"), "index": index_bytes},
    }
