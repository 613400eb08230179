"""The best matches by BM25 (`Index.top_lines`, what a search's candidates start from) are scored
once per match, and records tied at the cut are chosen as `TIES` orders them (issue 43, item 4:
a warm search at a million records; a corpus of equal-length records ties at the cut often)."""

from __future__ import annotations

import json

from optmem import index
from optmem.record import new_id
from optmem.vault import Vault, init

START = 1796563320.0  # 2026-12-06T13:22:00Z


def _vault(tmp_path) -> Vault:
    """40 records holding "alpha" once in texts of one length (one BM25 score), 5 holding it twice
    (better), 5 without it; several in each second, in an order that is not their time's."""
    lines = []
    for i in range(50):
        t = START + (i * 7 % 50) // 4
        text = "alpha beta gamma" if i < 40 else ("alpha alpha beta" if i < 45 else "beta gamma delta")
        rec = {
            "v": 1,
            "id": new_id(t),
            "kind": "note",
            "text": text,
            "ts": f"2026-12-06T13:{22 + int(t - START) // 60:02d}:{int(t - START) % 60:02d}Z",
        }
        lines.append(json.dumps(rec))
    root = tmp_path / "v"
    init(Vault(root))
    (root / "LOG.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    return Vault(root)


def test_the_best_matches_are_scored_once_and_a_tie_at_the_cut_is_decided_by_time(tmp_path):
    with index.open_index(_vault(tmp_path)) as idx:
        # every match ranked by score, then as `TIES` orders equal ones: the whole order
        every = [
            n
            for (n,) in idx.conn.execute(
                "SELECT f.n FROM (SELECT rowid AS n, bm25(fts) AS s FROM fts WHERE fts MATCH ?) f "
                f"JOIN rec r ON r.n = f.n ORDER BY f.s, {index.TIES}",
                ('"alpha"',),
            )
        ]
        assert len(every) == 45
        scored: list[str] = []
        idx.conn.set_trace_callback(lambda sql: scored.append(sql) if "bm25(" in sql else None)
        for limit in (1, 4, 5, 6, 12, 44, 45, 60):
            scored.clear()
            got = idx.top_lines('"alpha"', index.BEST, limit)
            assert sorted(got) == sorted(every[:limit]), limit  # the five better ones, then the newest tied
            assert len(scored) == 1, (limit, scored)  # one pass scores every match, tie or none
        idx.conn.set_trace_callback(None)


def test_the_best_rows_come_with_the_count_of_every_match_from_one_statement(tmp_path):
    """`Index.top_rows`: the rows `top_lines` chooses (by line) and how many records match in all
    (`count_matches`), in one statement — the count a search's total is made of (`candidates.choose`)."""
    with index.open_index(_vault(tmp_path)) as idx:
        asked: list[str] = []
        for match in ('"alpha"', '"alpha" AND "gamma"', '"beta" OR "delta"', '"nothing"'):
            for limit in (1, 5, 6, 44, 60):
                asked.clear()
                idx.conn.set_trace_callback(lambda sql: asked.append(sql) if "MATCH" in sql else None)
                rows, count = idx.top_rows(match, limit)
                idx.conn.set_trace_callback(None)
                assert len(asked) == 1, asked
                assert rows == idx.rows_in(idx.top_lines(match, index.BEST, limit)), (match, limit)
                assert count == idx.count_matches(match), (match, limit)
        assert idx.top_rows('"alpha" AND "gamma"', 60)[1] == 40


def test_the_best_rows_in_bm25_order_are_what_the_filtered_query_lists_when_none_is_left_out(tmp_path, cli):
    """`Index.best_rows` (FTS5 ranks alone, the winners' rows read after): the rows and the order
    of `matches(…, BEST, limit)` under the default filters when the filters leave none of them
    out — how `candidates.related` reads the other words of an attribute; a record the filters
    leave out (a bookkeeping line among the winners) sends it to the filtered query."""
    from optmem import candidates
    from optmem.settings import Ranking

    vault = _vault(tmp_path)
    with index.open_index(vault) as idx:
        filters = index.make_filters()
        where, params = filters.sql(START + 3600)
        for match in ('"alpha"', '"alpha" AND "gamma"', '"beta" OR "delta"', '"nothing"'):
            for limit in (1, 5, 6, 44, 60):
                best, _ = idx.best_rows(match, limit)
                assert best == list(idx.matches(match, where, params, index.BEST, limit)), (match, limit)
        settings = Ranking(attribute_candidates=6)
        df = dict(idx.conn.execute("SELECT term, doc FROM df"))
        got = candidates.related(idx, [("alpha",)], df, settings, filters=filters, now=START + 3600)
        assert list(got) == [r.n for r in idx.matches('("alpha")', where, params, index.BEST, 6)]
        best = idx.best_rows('("alpha")', 6)[0]
    forgotten = best[0].id  # (one of the five better matches)
    assert cli("--vault", str(vault.root), "forget", forgotten).exit_code == 0
    with index.open_index(Vault(vault.root)) as idx:
        df = dict(idx.conn.execute("SELECT term, doc FROM df"))
        got = candidates.related(idx, [("alpha",)], df, settings, filters=filters, now=START + 3600)
        assert forgotten not in {r.id for r in got.values()}
        assert list(got) == [r.n for r in idx.matches('("alpha")', where, params, index.BEST, 6)]
        assert len(got) == 6
