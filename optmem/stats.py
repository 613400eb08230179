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
COMMON_ANCHOR = 50  # a number held by more records than this narrows the candidates too little alone
ANCHOR_CANDIDATES = 200  # at most this many records holding a record's numbers are compared with it


def _anchors(text: str) -> list[str]:
    """The numbers of a text that every near duplicate of it holds as index terms: those written
    in digits as a word of their own, two digits or more (`compare.similarity` is 0 for texts
    whose numbers differ; "3.11" and 10万 are no such terms, nor the 3 of python3)."""
    from optmem import text as textmod

    values = set(textmod.numbers(text))
    return [t for t in textmod.query_terms(text) if len(t) > 1 and t.isdigit() and t in values]


def has_near_duplicate(idx: Any, row: Any, text: str, threshold: float, now: float, df: dict[str, int]) -> bool:
    """Whether another current record of the row's domain and project is a near duplicate of
    `text` (similarity ≥ `threshold`). A text holding a number is compared with the records that
    hold the same numbers (and, when a number is common, one of its three rarest other terms):
    one cheap look-up in the text index, however large the log. A text without one is compared
    with the write gate's candidates (`gate.find_similar`: its rarest terms, ranked)."""
    from optmem import gate
    from optmem import text as textmod
    from optmem.index import match_all, match_any

    anchors = _anchors(text)
    if anchors:
        missing = [t for t in anchors if t not in df]
        if missing:
            df.update(idx.doc_freq(missing))
        match = match_all(anchors)
        if min(df[t] for t in anchors) > COMMON_ANCHOR:
            others = [t for t in textmod.query_terms(text) if t not in anchors]
            unknown = [t for t in others if t not in df]
            if unknown:
                df.update(idx.doc_freq(unknown))
            rare = sorted((t for t in others if df[t]), key=lambda t: df[t])[:3]
            if rare:
                match = f"{match} AND ({match_any(rare)})"
        rows = list(
            idx.matches(
                match,
                "r.domain = ? AND r.project IS ? AND r.n != ?",
                [row.domain, row.project, row.n],
                "ORDER BY bm25(fts)",
                ANCHOR_CANDIDATES,
            )
        )
    else:
        rows = None  # the gate's own probe
    similar = gate.find_similar(idx, text, row.domain, row.project, threshold, now, rows=rows)
    return any(s["id"] != row.id for s in similar)


def hygiene(idx: Any, now: float, c: Any = None) -> dict[str, Any]:
    """The article's hygiene figures. Duplicate rate: the share of (a sample of) current records
    with a near duplicate among the other current records (similarity ≥ the threshold,
    `has_near_duplicate`). Contradiction rate: the open conflicts (`optmem conflicts`: keys in
    conflict, facts corrected two ways) over the facts that can contradict (key groups, corrected
    records). The write gate's possible updates are guesses: counted apart (`open_updates`),
    never as contradictions."""
    from optmem import view
    from optmem.facts import open_conflicts

    c = c or idx.census(now, fact_exclude=(MEMORY,))
    threshold = idx.vault.settings.dedup.threshold
    current, params = view.is_sql(view.Status.CURRENT, now)
    skip = (MEMORY, HANDOFF, *BOOKKEEPING)
    marks = ",".join("?" * len(skip))
    # the line numbers alone (a row each would cost seconds at 1M), then the rows of the sample:
    # evenly spread over the current records, in log order
    ns = [
        n
        for (n,) in idx.conn.execute(
            f"SELECT r.n FROM rec r WHERE r.kind NOT IN ({marks}) AND r.fp IS NOT NULL AND {current} ORDER BY r.n",
            [*skip, *params],
        )
    ]
    sample = idx.rows_in(ns[:: max(1, len(ns) // DUPLICATE_SAMPLE)][:DUPLICATE_SAMPLE])
    df: dict[str, int] = {}  # terms' document frequencies, looked up once for the whole sample
    dups = sum(has_near_duplicate(idx, row, idx.record(row).text, threshold, now, df) for row in sample)
    checked = len(sample)
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
    contradictions = len(open_conflicts(idx, now, values=False))  # what `optmem conflicts` lists
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
        # the hot-memory journal's keys are bookkeeping, not facts
        c = idx.census(now, fact_exclude=(MEMORY,))
        life = lifecycle.census(vault.settings.lifecycle, idx, now, c, idx.last_sweep())
        rates = hygiene(idx, now, c)
        redlines, held = idx.count_redlines(now), idx.count_redlines(now, held=True)
        index_bytes = _size(vault.cache_dir)
    hot: list[dict[str, Any]] = []
    for target, project in memory.targets(vault):
        try:
            h = memory.load(vault, target, project)
        except Unreadable:  # counted on its own: the other files and the log are still described
            bad = memory.show(vault, [(target, project)], marks=False)[0]
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
        "redlines": redlines,  # the current redlines, as `context` shows them
        "redlines_held": held,  # and those held in quarantine (out of context until released)
        # a vault from a git clone not trusted: its redlines read as unverified notes (`context`, `optmem trust`);
        # false when it holds none (nothing reads as unverified)
        "redlines_unverified": bool(redlines) and not vault.trusted,
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
