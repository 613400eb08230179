"""The write gate's look-ups: the current records a new statement may repeat (a near duplicate)
or give a new value of (a possible update), found through its rarest terms."""

from __future__ import annotations

from optmem import compare, view
from optmem import text as textmod
from optmem.index import Index, Row, match_any
from optmem.record import BOOKKEEPING, MEMORY, TIER_RANK, Record

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["find_similar", "find_updates", "is_update", "probe"]


def is_update(old: str, new: str) -> bool:
    """Whether `new` reads as a new value of `old` — the gate's possible update (the words that
    only say *when*, "now", "现在", left out), for a record of the log (`find_updates`) and for a
    hot entry (`memory.add`) alike."""
    from optmem.reading.cues import time_words

    return compare.looks_like_update(old, new, time_words())


def find_similar(
    idx: Index,
    text: str,
    domain: str | None,
    project: str | None,
    threshold: float,
    now: float,
    limit: int = 20,
    *,
    statuses: tuple[view.Status, ...] = (view.Status.CURRENT,),
    rows: list[Row] | None = None,
) -> list[dict[str, Any]]:
    """Current records (or of `statuses`) in the same domain and project (any, when `domain` is
    None) whose text is a near duplicate of `text`.

    Candidates come from the text's rarest terms only: a text ≥ 90 % similar shares nearly all
    of its terms, and rare terms have short posting lists, so the probe stays cheap at a million
    records (a query over every term would rank tens of thousands of common-term matches).
    """
    out: list[dict[str, Any]] = []
    for row in probe(idx, text, domain, project, limit) if rows is None else rows:
        if view.status(row, now, warm=True) not in statuses or row.kind in (MEMORY, *BOOKKEEPING):
            continue
        rec = idx.record(row)
        sim = compare.similarity(text, rec.text, least=threshold)
        if sim >= threshold:
            out.append({"id": rec.id, "text": rec.text, "similarity": round(sim, 3), "tier": rec.tier})
    out.sort(key=lambda s: -s["similarity"])
    return out


def probe(idx: Index, text: str, domain: str | None, project: str | None, limit: int) -> list[Row]:
    """Records sharing the text's rarest terms (in one domain and project, or any): cheap at any
    size, and a near duplicate or a changed value of the text is among them. Two probes: one by
    the rarest of all its terms (a near duplicate shares its numbers too: "8135 steps" among forty
    daily counts), one by the rarest of those that are no digits, no Chinese numeral and no cue
    word — a changed value differs from what it changes in just those ("我现在有三只猫" → 我有, 只猫,
    not 有三, 三只 or 现在, which an earlier "我有两只猫" cannot hold, however rare they are)."""
    from optmem.reading import cues

    terms = textmod.query_terms(text)
    if not terms:
        return []
    folded = textmod.fold(text)
    if textmod.has_cjk(folded):
        folded = cues.without_cues(folded)  # the words around a cue pair again (我现在有 → 我有)
    when = cues.time_terms()
    steady = [t for t in textmod.query_terms(folded) if t not in when and not textmod.holds_number(t)]
    df = idx.doc_freq(list(dict.fromkeys([*terms, *steady])))

    def rarest(of: list[str]) -> list[str]:
        return sorted((t for t in of if df[t]), key=lambda t: df[t])[:4]

    where, params = ("r.domain = ? AND r.project IS ?", [domain, project]) if domain else ("1", [])
    found: dict[int, Row] = {}
    for rare in dict.fromkeys(tuple(rarest(of)) for of in (terms, steady)):
        if rare:
            found.update(
                (row.n, row) for row in idx.matches(match_any(list(rare)), where, params, "ORDER BY bm25(fts)", limit)
            )
    return list(found.values())


def find_updates(
    idx: Index, rec: Record, now: float, limit: int = 20, *, rows: list[Row] | None = None
) -> list[dict[str, Any]]:
    """Current unkeyed records of the same domain and project that `rec` may update: the same
    statement with another value (`compare.looks_like_update`), newest first."""
    if rec.key:
        return []  # a key versions it already
    out = []
    for row in probe(idx, rec.text, rec.domain, rec.project, limit) if rows is None else rows:
        if (
            row.key
            or row.kind in (MEMORY, *BOOKKEEPING)
            or row.tier == TIER_RANK["redline"]
            or view.status(row, now) != view.Status.CURRENT
        ):
            continue
        old = idx.record(row)
        if is_update(old.text, rec.text):
            out.append({"id": row.id, "text": old.text, "ts": old.ts})
    return sorted(out, key=lambda u: (u["ts"], u["id"]), reverse=True)
