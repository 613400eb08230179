"""Ranked lexical search over the log, with the effective view applied.

How a query is answered:

1. The query's terms (words, CJK bigrams, a lone CJK character) select candidates from the FTS5
   index — the best by FTS5's own BM25 order, plus every matching redline — with the filters
   (domain, project, kind, tag, time, status) applied exactly, in SQL.
2. Each candidate's relevance is BM25 computed here (k1 1.2, b 0.75, an IDF that stays positive
   in small vaults), from its re-tokenised text.
3. Hits are ordered in bands: current redlines, then other current records, then expired,
   superseded and (on request) forgotten ones — so a correction always outranks what it
   corrects, and a redline every non-redline hit. Within a band the score is
   relevance × tier × (1 + recency bonus), where the bonus is at most 10 % and judged by whole
   days: recency re-orders near-equals but never buries an old record that is the only strong
   match (a global half-life would). Then records about the same thing (same key, a correction
   link, or mostly the same terms) are put newest first when their relevance is close.
4. Ties fall to tier, then the newer record, then the id.
"""


import math
from collections import Counter
from typing import Any, NamedTuple

from optmem import clock
from optmem import text as textmod
from optmem.errors import UsageError
from optmem.index import ROW_SELECT, Index, Row, match_all, match_any, open_index
from optmem.ingest import tokens_for
from optmem.vault import Vault, validate_name

K1, B = 1.2, 0.75
DAY = 86400.0
TIER_FACTOR = {0: 0.97, 1: 1.0, 2: 1.03, 3: 1.03}   # chat < normal < evidence (= correction)
BANDS = ("redline", "current", "expired", "superseded", "forgotten")
BOOKKEEPING = ("seen", "forget")


class Filters(NamedTuple):
    domains: tuple[str, ...] = ()
    project: str | None = None
    kind: str | None = None
    tag: str | None = None
    since: float | None = None
    until: float | None = None
    current: bool = False
    include_forgotten: bool = False

    def plain(self) -> bool:
        """No filter beyond the defaults (forgotten and bookkeeping records left out)."""
        return (not self.domains and self.project is None and self.kind is None
                and self.tag is None and self.since is None and self.until is None
                and not self.current and not self.include_forgotten)

    def sql(self, now: float) -> tuple[str, list[Any]]:
        """The WHERE clause (on `rec r`) that makes every filter exact."""
        where = [f"r.kind NOT IN ({','.join('?' * len(BOOKKEEPING))})"]
        params: list[Any] = list(BOOKKEEPING)
        if self.domains:
            where.append(f"r.domain IN ({','.join('?' * len(self.domains))})")
            params += self.domains
        for value, clause in ((self.project, "r.project = ?"), (self.kind, "r.kind = ?"),
                              (self.tag, "r.n IN (SELECT n FROM tag WHERE tag = ?)"),
                              (self.since, "r.ts >= ?"), (self.until, "r.ts <= ?")):
            if value is not None:
                where.append(clause)
                params.append(value)
        if self.current:
            where.append("r.sup IS NULL AND r.ksup IS NULL AND r.retired = 0 AND r.forgotten = 0 "
                         "AND (r.expires IS NULL OR r.expires > ?)")
            params.append(now)
        elif not self.include_forgotten:
            where.append("r.forgotten = 0")
        return " AND ".join(where), params


def make_filters(*, domains: list[str] | None = None, project: str | None = None,
                 kind: str | None = None, tag: str | None = None, since: str | None = None,
                 until: str | None = None, current: bool = False,
                 include_forgotten: bool = False) -> Filters:
    """Validated filters from command-line values."""
    for d in domains or []:
        validate_name(d, "domain")
    if project is not None:
        validate_name(project, "project")
    return Filters(
        domains=tuple(dict.fromkeys(domains or [])), project=project, kind=kind, tag=tag,
        since=clock.parse_bound(since, end=False) if since else None,
        until=clock.parse_bound(until, end=True) if until else None,
        current=current, include_forgotten=include_forgotten)


class _Cand:
    """A candidate hit while it is being scored."""

    __slots__ = ("row", "record", "tokens", "relevance", "score", "band", "age_days", "bonus",
                 "tier_factor", "promoted_over")

    def __init__(self, row: Row, record: Any, tokens: set[str]) -> None:
        self.row, self.record, self.tokens = row, record, tokens
        self.relevance = self.score = self.bonus = 0.0
        # trust breaks near-ties; a correction counts like evidence
        self.tier_factor = max(TIER_FACTOR[row.tier], TIER_FACTOR[2]) if row.kind == "correction" \
            else TIER_FACTOR[row.tier]
        self.band = 1
        self.age_days = 0
        self.promoted_over: str | None = None


class SearchResult(NamedTuple):
    query: str
    hits: list[dict[str, Any]]
    total: int
    warnings: list[str] = []


def bm25(tf: Counter[str], dl: int, terms: list[str], idf: dict[str, float], avgdl: float) -> float:
    score = 0.0
    norm = K1 * (1 - B + B * dl / avgdl)
    for t in terms:
        f = tf.get(t, 0)
        if f:
            score += idf[t] * f * (K1 + 1) / (f + norm)
    return score


def _wide_queries(terms: list[str], df: dict[str, int], budget: int,
                  pool: int) -> list[tuple[str, str, int, bool]]:
    """Candidate queries for terms too common to rank every match (a big log, common words).

    BM25's best documents hold all (or all but one) of the query's terms, or its rare terms;
    recency favours the newest. So: records holding every term, then every term but the most
    common one, the rare terms' own matches, and the newest matches — each cheap in FTS5
    whatever the log's size — all re-scored exactly afterwards.
    """
    by_rarity = sorted(terms, key=lambda t: df[t])
    out: list[tuple[str, str, int, bool]] = []  # (query, order, limit, only when short of candidates)
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
    out.append((match_any(terms), "ORDER BY rowid DESC", pool // 2, False))
    return out


def _band(row: Row, status: str) -> int:
    if status == "current":
        return 0 if row.tier == 3 else 1
    return BANDS.index(status)


def _same_topic(a: _Cand, b: _Cand) -> bool:
    """About the same thing: a shared key, a correction link, or mostly the same terms."""
    ra, rb = a.row, b.row
    if ra.key and ra.key == rb.key and ra.domain == rb.domain and ra.project == rb.project:
        return True
    if ra.superseded_by == rb.id or rb.superseded_by == ra.id:
        return True
    if a.record.id in b.record.corrects or b.record.id in a.record.corrects:
        return True
    if not a.tokens or not b.tokens:
        return False
    return len(a.tokens & b.tokens) / len(a.tokens | b.tokens) >= 0.5


def _promote_newer(cands: list[_Cand], window: float) -> list[_Cand]:
    """Within a band, put a newer same-topic record (by whole days) above an older one whose
    relevance it nearly matches."""
    out: list[_Cand] = []
    for c in cands:
        pos = len(out)
        for i, o in enumerate(out):
            if (o.band == c.band and c.age_days < o.age_days and _same_topic(c, o)
                    and c.relevance >= window * o.relevance):
                pos = i
                c.promoted_over = o.row.id
                break
        out.insert(pos, c)
    return out


def search(vault: Vault, query: str, *, limit: int = 10, filters: Filters | None = None,
           explain: bool = False, progress: Any = None) -> SearchResult:
    """Ranked hits for `query` (see the module docstring for how they are ordered)."""
    if query is None or not query.strip():
        raise UsageError("QUERY is empty; give words to search for (Chinese or English)")
    if limit < 1:
        raise UsageError("--limit must be at least 1")
    filters = filters or Filters()
    now = clock.now().timestamp()
    terms = textmod.search_terms(query)
    with open_index(vault, progress) as idx:
        warnings = idx.warnings()
        if not terms:
            return SearchResult(query, [], 0, warnings)
        return ranked(idx, query, terms, limit, filters, explain, now, warnings)


def ranked(idx: Index, query: str, terms: list[str], limit: int, filters: Filters, explain: bool,
           now: float, warnings: list[str]) -> SearchResult:
    """The ranked hits for a query's terms on an open index (what `search` runs)."""
    settings = idx.vault.settings.get("ranking", {})
    pool = max(int(settings.get("candidates", 100)), limit * 5)
    window = float(settings.get("recency_window", 0.10))
    where, params = filters.sql(now)
    df = idx.doc_freq(terms)
    found = [t for t in terms if df[t]]
    if not found:
        return SearchResult(query, [], 0, warnings)
    match = match_any(found)
    joined = (f"SELECT {ROW_SELECT} FROM fts JOIN rec r ON r.n = fts.rowid "
              f"WHERE fts MATCH ? AND {where}")
    budget = int(settings.get("postings_budget", 30000))
    if sum(df[t] for t in found) <= budget:
        queries = [(match, "ORDER BY bm25(fts)", pool, False)]  # exact: rank every match
    else:
        queries = _wide_queries(found, df, budget, pool)      # bounded work at any log size
    rows: dict[int, Row] = {}
    plain = filters.plain()
    for q, order, limit_, optional in queries:
        if optional and len(rows) >= pool // 2:
            continue  # enough records hold every term: no need to relax the query
        if plain:
            # no filter to speak of: rank in FTS5 alone (a join per match costs more than the
            # ranking), then drop the few forgotten or bookkeeping rows among the winners
            top = [n for (n,) in idx.conn.execute(
                f"SELECT rowid FROM fts WHERE fts MATCH ? {order} LIMIT ?", (q, limit_))]
            for r in idx.rows_in([n for n in top if n not in rows]):
                if not r.forgotten and r.kind not in BOOKKEEPING:
                    rows[r.n] = r
        else:
            for t in idx.conn.execute(f"{joined} {order.replace('rowid', 'fts.rowid')} LIMIT ?",
                                      (q, *params, limit_)):
                rows.setdefault(t[0], Row(*t))
    if plain:
        total = idx.conn.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (match,)).fetchone()[0]
    else:
        total = len(rows) if len(queries) == 1 and len(rows) < pool else idx.conn.execute(
            f"SELECT count(*) FROM fts JOIN rec r ON r.n = fts.rowid WHERE fts MATCH ? AND {where}",
            (match, *params)).fetchone()[0]
    for t in idx.conn.execute(
            f"SELECT {ROW_SELECT} FROM fts_red JOIN rec r ON r.n = fts_red.rowid "
            f"WHERE fts_red MATCH ? AND {where} LIMIT 200", (match, *params)):
        rows.setdefault(t[0], Row(*t))
    if not rows:
        return SearchResult(query, [], 0, warnings)

    docs, avgdl = idx.totals()
    idf = {t: math.log(1 + (docs - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    cands: list[_Cand] = []
    for row in rows.values():
        rec = idx.record(row)
        toks = tokens_for(rec.text, rec.key, rec.tags)
        c = _Cand(row, rec, set(toks))
        c.relevance = bm25(Counter(toks), len(toks), terms, idf, avgdl)
        status = row.status(now)
        c.band = _band(row, status)
        recency = row.recency if row.recency is not None else 0.0
        c.age_days = max(0, int((now - recency) // DAY))
        # redlines never decay; everything else gets at most +10 %, shrinking with whole days
        c.bonus = window if c.band == 0 else window / (1 + c.age_days / 30)
        c.score = c.relevance * c.tier_factor * (1 + c.bonus)
        cands.append(c)
    # ties: higher tier, then newer (a later ts; for equal ts the larger id, as in the log)
    cands.sort(key=lambda c: (c.row.id, c.row.n), reverse=True)
    cands.sort(key=lambda c: (c.band, -round(c.score, 9), -c.row.tier, -(c.row.ts or 0)))
    head = _promote_newer(cands[: limit * 3], 1 - float(settings.get("same_topic_window", 0.15)))
    hits = [_hit(c, now, explain) for c in head[:limit]]
    return SearchResult(query, hits, max(total, len(hits)), warnings)


def _hit(c: _Cand, now: float, explain: bool) -> dict[str, Any]:
    rec, row = c.record, c.row
    hit: dict[str, Any] = {
        "id": rec.id, "ts": rec.ts, "domain": rec.domain, "project": rec.project,
        "kind": rec.kind, "tier": rec.tier, "text": rec.text, "score": round(c.score, 4),
        "status": row.status(now), "superseded_by": row.superseded_by,
        "corrects": list(rec.corrects), "key": rec.key,
    }
    if rec.expires:
        hit["expires"] = rec.expires
    if explain:
        hit["explain"] = {
            "relevance": round(c.relevance, 4),
            "recency_bonus": round(c.bonus, 4),
            "age_days": c.age_days,
            "tier_factor": c.tier_factor,
            "band": BANDS[c.band],
            "status": hit["status"],
            "promoted_over": c.promoted_over,
        }
    return hit
