"""Ranked lexical search over the log, with the effective view applied.

How a query is answered:

1. The query's terms (words, CJK bigrams, a lone CJK character) select candidates from the FTS5
   index — the best by FTS5's own BM25 order, plus every matching redline — with the filters
   (domain, project, kind, tag, time, status) applied exactly, in SQL (`_candidates`).
2. Each candidate is re-tokenised and scored by `ranking.score` (BM25 relevance × tier ×
   recency bonus, in bands by status) — `_score`.
3. Hits are sorted by band, score, tier, newer, id; then `ranking.promote_newer` puts a newer
   same-topic record above an older near-equal — `_order`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, NamedTuple

from optmem import clock, ranking, view
from optmem import text as textmod
from optmem.errors import UsageError
from optmem.index import Filters, Index, Row, make_filters, match_all, match_any, open_index
from optmem.ingest import tokens_for
from optmem.record import BOOKKEEPING, Record
from optmem.settings import Ranking
from optmem.vault import Vault

__all__ = ["Filters", "Query", "SearchResult", "make_filters", "ranked", "search"]


class Query(NamedTuple):
    """One search: the words, their terms, how many hits, the filters, now."""

    text: str
    terms: list[str]
    limit: int = 10
    filters: Filters = Filters()
    explain: bool = False
    now: float = 0.0


class SearchResult(NamedTuple):
    query: str
    hits: list[view.RecordView]
    total: int
    warnings: list[str] = []

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "hits": [h.hit() for h in self.hits], "total": self.total}


class _Scored(NamedTuple):
    row: Row
    record: Record
    parts: ranking.Parts
    topic: ranking.Topic


def search(vault: Vault, query: str, *, limit: int = 10, filters: Filters | None = None,
           explain: bool = False, progress: Any = None) -> SearchResult:
    """Ranked hits for `query` (see the module docstring for how they are ordered)."""
    if query is None or not query.strip():
        raise UsageError("QUERY is empty; give words to search for (Chinese or English)")
    if limit < 1:
        raise UsageError("--limit must be at least 1")
    q = Query(query, textmod.search_terms(query), limit, filters or Filters(), explain,
              clock.now().timestamp())
    with open_index(vault, progress) as idx:
        warnings = idx.warnings()
        return ranked(idx, q)._replace(warnings=warnings)


def ranked(idx: Index, q: Query) -> SearchResult:
    """The ranked hits for a query on an open index (what `search` runs)."""
    settings = idx.vault.settings.ranking
    df = idx.doc_freq(q.terms) if q.terms else {}
    found = [t for t in q.terms if df[t]]
    if not found:
        return SearchResult(q.text, [], 0)
    rows, total = _candidates(idx, q, found, df, settings)
    if not rows:
        return SearchResult(q.text, [], 0)
    scored = _score(idx, q, rows, df, settings)
    hits = _order(scored, q, settings)
    return SearchResult(q.text, hits, max(total, len(hits)))


def _candidates(idx: Index, q: Query, found: list[str], df: dict[str, int],
                settings: Ranking) -> tuple[dict[int, Row], int]:
    """The rows worth scoring, and how many records match in all."""
    pool = max(settings.candidates, q.limit * 5)
    where, params = q.filters.sql(q.now)
    match = match_any(found)
    if sum(df[t] for t in found) <= settings.postings_budget:
        queries = [(match, "ORDER BY bm25(fts)", pool, False)]  # exact: rank every match
    else:
        queries = wide_queries(found, df, settings.postings_budget, pool)  # bounded work at any size
    rows: dict[int, Row] = {}
    plain = q.filters.plain()
    for fts_query, order, limit, optional in queries:
        if optional and len(rows) >= pool // 2:
            continue  # enough records hold every term: no need to relax the query
        if plain:
            # no filter to speak of: rank in FTS5 alone (a join per match costs more than the
            # ranking), then drop the few forgotten or bookkeeping rows among the winners
            top = idx.top_lines(fts_query, order, limit)
            for r in idx.rows_in([n for n in top if n not in rows]):
                if not r.forgotten and r.kind not in BOOKKEEPING:
                    rows[r.n] = r
        else:
            for r in idx.matches(fts_query, where, params, order, limit):
                rows.setdefault(r.n, r)
    if plain:
        total = idx.count_matches(match)
    elif len(queries) == 1 and len(rows) < pool:
        total = len(rows)
    else:
        total = idx.count_matches(match, where, params)
    for r in idx.matches(match, where, params, "", 200, redlines=True):  # every matching redline
        rows.setdefault(r.n, r)
    return rows, total


def wide_queries(terms: list[str], df: dict[str, int], budget: int,
                 pool: int) -> list[tuple[str, str, int, bool]]:
    """Candidate queries for terms too common to rank every match (a big log, common words).

    BM25's best documents hold all (or all but one) of the query's terms, or its rare terms;
    recency favours the newest. So: records holding every term, then every term but the most
    common one, the rare terms' own matches, and the newest matches — each cheap in FTS5
    whatever the log's size — all re-scored exactly afterwards.
    Each is (FTS5 query, order, limit, only when short of candidates).
    """
    by_rarity = sorted(terms, key=lambda t: df[t])
    out: list[tuple[str, str, int, bool]] = []
    if len(terms) > 1:
        out.append((match_all(terms), "ORDER BY bm25(fts)", pool, False))
    if len(terms) > 2:
        out.append((match_all(by_rarity[:-1]), "ORDER BY bm25(fts)", pool // 2, True))
    rare, spent = [], 0
    for t in by_rarity:
        if spent + df[t] > budget:
            break
        rare.append(t)
        spent += df[t]
    if rare:
        out.append((match_any(rare), "ORDER BY bm25(fts)", pool // 2, False))
    out.append((match_any(terms), "ORDER BY fts.rowid DESC", pool // 2, False))
    return out


def _score(idx: Index, q: Query, rows: dict[int, Row], df: dict[str, int],
           settings: Ranking) -> list[_Scored]:
    """Every candidate re-tokenised and scored (relevance is BM25 over the whole index)."""
    docs, avgdl = idx.totals()
    idfs = {t: ranking.idf(docs, df[t]) for t in q.terms}
    out = []
    for row in rows.values():
        rec = idx.record(row)
        toks = tokens_for(rec.text, rec.key, rec.tags)
        relevance = ranking.bm25(Counter(toks), len(toks), q.terms, idfs, avgdl)
        parts = ranking.score(ranking.Candidate(relevance, row.tier, row.kind, view.status(row, q.now),
                                                row.recency), q.now, settings)
        topic = ranking.Topic(row.id, row.key, (row.domain, row.project), row.superseded_by,
                              rec.corrects, frozenset(toks))
        out.append(_Scored(row, rec, parts, topic))
    return out


def _order(scored: list[_Scored], q: Query, settings: Ranking) -> list[view.RecordView]:
    """Band, score, then ties (higher tier, newer — a later ts, then the larger id, as in the
    log); then the newer-first rule among the top hits."""
    scored.sort(key=lambda s: (s.row.id, s.row.n), reverse=True)
    scored.sort(key=lambda s: (s.parts.band, -round(s.parts.score, 9), -s.row.tier, -(s.row.ts or 0)))
    head = scored[: q.limit * 3]
    order = ranking.promote_newer([(s.parts, s.topic) for s in head], settings.same_topic_window)
    hits = []
    for placed in order[: q.limit]:
        s = head[placed.at]
        hits.append(view.RecordView(
            s.record, s.parts.status, s.row.superseded_by, s.row.n, round(s.parts.score, 4),
            s.parts.explain(placed.promoted_over) if q.explain else None))
    return hits
