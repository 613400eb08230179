"""Candidates: the records a query re-scores, chosen from the FTS5 index.

The best by FTS5's own BM25 order and the newest matches, with the filters (domain, project,
kind, tag, time, status) applied exactly, in SQL; past a budget of term postings, a few cheap
queries that hold BM25's best (`wide_queries`). Also how many records match in all, and how
many the filters hide (`hidden_matches`: cold, forgotten) — what a search's footer counts.
"""

from optmem import view
from optmem.index import BEST, NEWEST, Filters, Index, Row, match_all, match_any
from optmem.record import BOOKKEEPING
from optmem.settings import Ranking

__all__ = ["COUNT_BUDGET", "choose", "count_any", "hidden_matches", "related", "wide_queries"]

REPLACED_WINDOW = 2000  # the newest matches a filtered search looks through for replaced records
# a filtered total is counted exactly up to this many term matches (a join per match: ~11 ms at
# 30,000); past it, the matches before the filters are counted — an upper bound
COUNT_BUDGET = 30000


def choose(
    idx: Index,
    found: list[str],
    df: dict[str, int],
    settings: Ranking,
    *,
    filters: Filters,
    now: float,
    limit: int,
    cold_best: bool,
    match: str | None = None,
) -> tuple[dict[int, Row], int, list[Row]]:
    """The rows worth scoring, how many records match in all, and the superseded matches the
    filters hide (whose current versions `search` brings in). Candidates are the best by FTS5's
    BM25 and the newest matches (BM25 cannot tell equal matches apart, and recency can lift one)
    — and, for a plain search (`cold_best`) in a vault with cold records, the cold ones among
    BM25's best. The pool is the same for every `limit` up to its size, so a shorter --limit
    lists the start of a longer one. `match`: the FTS5 query, when not any of the terms found."""
    pool = max(settings.candidates, limit)
    where, params = filters.sql(now)
    postings = sum(df[t] for t in found)
    # a given FTS5 query (every character of a Chinese query) is ranked whole: the chosen
    # candidates are made of the terms, and would match records it does not
    exact = match is not None or postings <= settings.postings_budget
    counted = match is None  # the FTS5 query is any of the terms: `count_any` counts it
    match = match or match_any(found)
    if exact:
        queries = [(match, BEST, pool, False)]  # exact: rank every match
    else:
        queries = wide_queries(found, df, settings.postings_budget, pool)  # bounded work at any size
    if settings.newest:
        queries.append((match, NEWEST, settings.newest, False))  # by time (`Index.newest_lines`)
    rows: dict[int, Row] = {}
    replaced: list[Row] = []  # superseded matches the filters hid (cold, forgotten): for `_successors`
    cold: dict[int, Row] = {}  # the cold matches a plain search weighs (`_best_cold`), kept apart
    #                            until the warm candidates are chosen: they never take their place
    plain = filters.plain()
    complete = False  # the first query returned every match: the total is counted from the hits
    lines: set[int] = set()  # the matching lines the queries returned (before the view's filter)
    counts: dict[str, int] = {}  # FTS5 query → how many records match it, as ranking counted them (`Index.top_rows`)
    for i, (fts_query, order, limit, optional) in enumerate(queries):
        if optional and len(rows) >= pool // 2:
            continue  # enough records hold every term: no need to relax the query
        if plain:
            # no filter to speak of: rank in FTS5 alone (a join per match costs more than the
            # ranking), then drop the few forgotten, cold or bookkeeping rows among the winners —
            # unless they are many (a vault gone mostly cold): then rank with the filter after all
            if order == BEST:  # (its matches are counted in passing: the total may be one of them)
                best, counts[fts_query] = idx.top_rows(fts_query, limit)
                top = [r.n for r in best]
                got = [r for r in best if r.n not in rows]
            else:
                top = idx.top_lines(fts_query, order, limit)
                got = idx.rows_in([n for n in top if n not in rows])
            lines.update(top)
            complete = complete or (i == 0 and exact and len(top) < limit)
            dropped = 0
            for r in got:
                status = view.status(r, now)
                if r.kind in BOOKKEEPING or filters.hidden(status):
                    dropped += 1
                    if r.superseded_by and r.kind not in BOOKKEEPING:
                        replaced.append(r)
                    if cold_best and status == view.Status.COLD and r.kind not in BOOKKEEPING:
                        cold[r.n] = r  # among the best matches of all: one `_best_cold` may keep
                else:
                    rows[r.n] = r
            if dropped > len(top) // 4:
                for r in _matches(idx, fts_query, where, params, order, limit):
                    rows.setdefault(r.n, r)
        else:
            got = _matches(idx, fts_query, where, params, order, limit)
            complete = complete or (i == 0 and exact and len(got) < limit)
            for r in got:
                rows.setdefault(r.n, r)
    if cold_best and not plain:
        # with filters the warm candidates came through them: the cold ones the filters pass, the
        # best by BM25 (a cold record can be kept only if it matches as well as the best warm
        # one; the newest-first queries are left out: recency gives a cold record nothing). A
        # plain search took them from its FTS5 winners above, for free.
        is_cold, more = view.is_sql(view.Status.COLD, now)
        within, given = filters._replace(include_cold=True).sql(now)
        for fts_query, order, limit, optional in queries:
            if order == BEST and not optional:
                for r in idx.matches(fts_query, f"{within} AND {is_cold}", [*given, *more], order, limit):
                    cold.setdefault(r.n, r)
    for n, r in cold.items():
        rows.setdefault(n, r)
    if complete:
        total = -1  # every match is a candidate: the hits themselves are counted (`ranked`)
    elif plain:
        total = count_any(idx, found, df, counts) if counted else counts.get(match, -1)  # FTS5 alone: cheap
        total = idx.count_matches(match) if total < 0 else total
        if total <= len(lines):
            total = -1  # the chosen candidates were every match: so are the hits
    elif exact or postings <= COUNT_BUDGET:
        total = idx.count_matches(match, where, params)
    else:
        # (past the count budget a filtered count would join too many matches: the matches before
        # the filters are counted instead — an upper bound)
        total = count_any(idx, found, df, counts) if counted else counts.get(match, -1)
        total = idx.count_matches(match) if total < 0 else total
    for r in idx.matches(match, where, params, NEWEST, 200, redlines=True):  # every matching redline
        rows.setdefault(r.n, r)
    if not plain:
        # the filters may hide replaced records whose current version passes them (cold, older
        # than --since, another kind, any with --current): the superseded among the newest
        # matches, whatever the filters — a bounded read from the end of the index
        replaced = idx.replaced_matches(match, REPLACED_WINDOW, settings.candidates)
    return rows, total, replaced


ATTRIBUTE_SHARE_OF_BUDGET = 5  # the other words of attributes read a fifth of the postings a query may


def related(
    idx: Index, phrases: list[tuple[str, ...]], df: dict[str, int], settings: Ranking, *, filters: Filters, now: float
) -> dict[int, Row]:
    """A few records (`attribute_candidates`) holding the other words of the attributes a query
    names (`reading.attributes`: "teeth" → dentist, 牙医; "laptop" → MacBook), the best by FTS5's
    BM25 — its terms held by fewest records first, up to a fifth of `postings_budget` postings (a
    term held by more brings none), so the work stays small in a store where they are common. A
    term of several tokens is a record holding all of them."""
    held = sorted((p for p in dict.fromkeys(phrases) if all(df.get(t) for t in p)), key=lambda p: min(df[t] for t in p))
    chosen: list[tuple[str, ...]] = []
    spent, budget = 0, settings.postings_budget // ATTRIBUTE_SHARE_OF_BUDGET
    for p in held:
        spent += min(df[t] for t in p)
        if spent > budget:  # (a word held by many records brings none: FTS5 would rank them all)
            break
        chosen.append(p)
    if not chosen:
        return {}
    match = " OR ".join(f"({match_all(list(p))})" for p in chosen)
    if filters.plain():
        # ranked in FTS5 alone, the winners' rows read after (a join per match cost ~3 ms): the
        # same records in the same order when none of the winners is one the filters leave out
        best, _ = idx.best_rows(match, settings.attribute_candidates)
        if not any(r.kind in BOOKKEEPING or filters.hidden(view.status(r, now)) for r in best):
            return {r.n: r for r in best}
    where, params = filters.sql(now)
    return {r.n: r for r in idx.matches(match, where, params, BEST, settings.attribute_candidates)}


def count_any(idx: Index, terms: list[str], df: dict[str, int], counts: dict[str, int] | None = None) -> int:
    """How many records hold any of `terms` (each one a term of the text index: `df` counts the
    records holding it, as FTS5 does), as `idx.count_matches(match_any(terms))` counts them — with
    less of FTS5's work: counting an OR reads every posting of every term. One term: its count.
    Two: both counts less the records holding both (an AND reads the shorter list, skipping
    through the longer: about half the time). Three or more: the OR (inclusion–exclusion would
    take four or more counts). `counts`: the FTS5 queries whose matches were counted already (the
    candidates' own: `Index.top_rows`) — a count found there is not asked again."""
    known = counts or {}
    if len(terms) == 1:
        return df[terms[0]]
    if len(terms) == 2:
        a, b = terms
        both = known.get(match_all(terms))
        return df[a] if a == b else df[a] + df[b] - (idx.count_matches(match_all(terms)) if both is None else both)
    anyof = known.get(match_any(terms))
    return idx.count_matches(match_any(terms)) if anyof is None else anyof


def _matches(idx: Index, fts_query: str, where: str, params: list[object], order: str, limit: int) -> list[Row]:
    """The candidates of one query with the filters applied: the best by BM25 (ties: the newer)
    or the newest by time — each the same records on every clone."""
    if order == NEWEST:
        return idx.rows_in(idx.newest_lines(fts_query, limit, where, params))
    return list(idx.matches(fts_query, where, params, order, limit))


def wide_queries(terms: list[str], df: dict[str, int], budget: int, pool: int) -> list[tuple[str, str, int, bool]]:
    """Candidate queries for terms too common to rank every match (a big log, common words).

    BM25's best documents hold all (or all but one) of the query's terms, or its rare terms;
    recency favours the newest. So: records holding every term, then every term but the most
    common one, the rare terms' own matches (a whole pool: FTS5 ranks them by the rare terms
    alone, and what the commoner terms add decides among them), and the newest matches — each
    cheap in FTS5 whatever the log's size — all re-scored exactly afterwards. Against our own
    ranking of every match, on 150 three-word queries of 20,000 generated notes, this choice
    holds more of the top ten (97.3 %) than FTS5's 60 best of every match do (96.5 %).
    Each is (FTS5 query, order, limit, only when short of candidates).
    """
    by_rarity = sorted(terms, key=lambda t: df[t])
    out: list[tuple[str, str, int, bool]] = []
    if len(terms) > 1:
        out.append((match_all(terms), BEST, pool, False))
    if len(terms) > 2:
        out.append((match_all(by_rarity[:-1]), BEST, pool // 2, True))
    rare, spent = [], 0
    for t in by_rarity:
        if spent + df[t] > budget:
            break
        rare.append(t)
        spent += df[t]
    if rare:
        out.append((match_any(rare), BEST, pool, False))
    out.append((match_any(terms), NEWEST, pool // 2, False))
    return out


def hidden_matches(idx: Index, filters: Filters, now: float, match: str | None, status: view.Status) -> int:
    """How many records of a status the filters hide (cold, forgotten, held) match an FTS5 query
    of the query's terms too."""
    if not match:
        return 0
    where, params = filters._replace(include_cold=True, include_forgotten=True, include_held=True).sql(now)
    hidden, more = view.is_sql(status, now)
    return idx.count_matches(match, f"{where} AND {hidden}", [*params, *more])
