"""The derived index: incremental catch-up, rebuild detection, the parallel build."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from conftest import put
from hypothesis import given
from hypothesis import strategies as st

from optmem import facts, index, ingest, log, lookup, record
from optmem.vault import Vault


def snapshot(vault: Vault) -> dict:
    conn = sqlite3.connect(vault.index_path)
    try:
        return {
            "rec": conn.execute("SELECT * FROM rec ORDER BY n").fetchall(),
            "tag": sorted(conn.execute("SELECT * FROM tag").fetchall()),
            "bad": conn.execute("SELECT * FROM bad ORDER BY n").fetchall(),
            "pend": sorted(conn.execute("SELECT ref, src, what FROM pend").fetchall()),
            "meta": {k: v for k, v in conn.execute("SELECT k, v FROM meta")},
            "match": conn.execute("SELECT rowid FROM fts WHERE fts MATCH '\"端口\"' ORDER BY rowid").fetchall(),
            "red": conn.execute("SELECT rowid FROM fts_red WHERE fts_red MATCH '\"rule\"'").fetchall(),
            "df": conn.execute("SELECT term, doc FROM df ORDER BY term").fetchall(),
            "vocab": _vocab(conn),
        }
    finally:
        conn.close()


def _vocab(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    """How many records hold each term, as FTS5 itself counts them (every posting read)."""
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.v USING fts5vocab(main, fts, row)")
    return conn.execute("SELECT term, doc FROM temp.v ORDER BY term").fetchall()


def busy_vault(vault: Vault, monkeypatch) -> None:
    monkeypatch.setenv("OPTMEM_NOW", "2026-01-01T00:00:00Z")
    ids = []
    for i in range(300):
        ids.append(
            put(
                vault,
                f"记录 {i}：端口 {8000 + i} note number {i}",
                domain=("a", "b", "c")[i % 3],
                key=f"k{i % 7}" if i % 5 == 0 else None,
                tags=["t"] if i % 4 == 0 else None,
                gate=False,
            ).id
        )
    first = ids[0]
    facts.correct(vault, ids[1], "端口 fixed")  # a current record: an old version is not corrected
    put(vault, "a redline rule about ports 端口", tier="redline")
    log.forget(vault, first)
    with open(vault.log_path, "a", encoding="utf-8") as fh:
        fh.write("not json at all\n")
        fh.write(json.dumps({"ts": "2026-01-02T00:00:00Z", "text": "[a] hand typed 端口 line"}) + "\n")
        fh.write(json.dumps({"ts": "2026-01-03T00:00:00Z", "text": "〔更正〕 later fix #ZZZZZZZZ"}) + "\n")


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Vault:
    """`busy_vault`, written once for the module (300 appends): its index caught up append by
    append, as the incremental test needs it; a test that rebuilds works on a copy."""
    from optmem.vault import init

    root = tmp_path_factory.mktemp("busy")
    with pytest.MonkeyPatch.context() as mp:
        (root / "home").mkdir()
        mp.setenv("HOME", str(root / "home"))
        mp.delenv("OPTMEM_DOMAIN", raising=False)
        v = Vault(root / "vault")
        init(v)
        busy_vault(v, mp)
    return v


@pytest.mark.long
@pytest.mark.xdist_group("busy")  # (one worker builds the module's busy vault once)
def test_parallel_build_equals_serial_build(busy, vault_path):
    shutil.copytree(busy.root, vault_path)
    vault = Vault(vault_path)
    index.build(vault, parallel_min_bytes=1 << 60)
    serial = snapshot(vault)
    index.build(vault, parallel_min_bytes=0)
    parallel = snapshot(vault)
    assert parallel == serial
    assert len(serial["rec"]) == 300 + 3 + 2  # notes, correction, redline, tombstone, 2 hand lines
    assert [(record.line_of(n), code) for n, code, _ in serial["bad"]] == [(304, "unparseable_line")]


def test_a_missing_field_is_null_in_the_index_and_a_given_one_keeps_its_value(vault, vault_path):
    # rows are inserted with a stand-in for None (binding None is slow): what lands must be NULL
    # for a missing field and the value itself — 0.0 and 0 included — for a given one
    nullable = ["ts", "project", "key", "expires", "ref", "corrects", "session", "spos", "imp", "conf", "source", "upd"]
    lines = [
        {"id": "01KZZZZZZZ0000000000000001", "ts": "no time", "text": "bare"},
        {
            "id": "01KZZZZZZZ0000000000000002",
            "ts": "1970-01-01T00:00:00Z",
            "text": "full",
            "project": "p",
            "key": "k",
            "expires": "1970-01-01T00:00:00Z",
            "ref": "01kzzzzzzz0000000000000001",
            "corrects": ["01KZZZZZZZ0000000000000001"],
            "session": "s",
            "importance": 0.0,
            "confidence": 0,
            "source": "me",
            "may_update": "01KZZZZZZZ0000000000000001",
        },
    ]
    vault_path.joinpath("LOG.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    for parallel_min_bytes in (1 << 60, 0):
        index.build(vault, parallel_min_bytes=parallel_min_bytes)
        conn = sqlite3.connect(vault.index_path)
        bare, full = conn.execute(f"SELECT {', '.join(nullable)} FROM rec ORDER BY n").fetchall()
        conn.close()
        assert bare == (None,) * len(nullable)
        assert full == (
            0.0,
            "p",
            "k",
            0.0,
            "01KZZZZZZZ0000000000000001",
            '["01KZZZZZZZ0000000000000001"]',
            "s",
            0,
            0.0,
            0.0,
            "me",
            "01KZZZZZZZ0000000000000001",
        )


@pytest.mark.long
@pytest.mark.xdist_group("busy")
def test_incremental_catch_up_equals_a_fresh_build(busy):
    vault = busy  # (the module's: a copy would move the log to another inode, and the index rebuild)
    # the index has been caught up step by step by every append of busy_vault; compare with a rebuild
    index.open_index(vault).close()
    incremental = snapshot(vault)
    index.build(vault)
    rebuilt = snapshot(vault)
    assert incremental["rec"] == rebuilt["rec"]
    assert incremental["match"] == rebuilt["match"] and incremental["tag"] == rebuilt["tag"]
    # the term counts a search reads, kept append by append, are FTS5's own
    assert incremental["df"] == rebuilt["df"] == rebuilt["vocab"] and len(rebuilt["df"]) > 300
    assert {k: incremental["meta"][k] for k in ("docs", "tokens", "lines", "segs")} == {
        k: rebuilt["meta"][k] for k in ("docs", "tokens", "lines", "segs")
    }


def test_correction_typed_before_its_target_is_linked_when_the_target_arrives(vault, vault_path):
    target = "01KZZZZZZZ0000000000000042"
    with open(vault_path / "LOG.jsonl", "w", encoding="utf-8") as fh:
        fh.write(
            json.dumps(
                {
                    "id": "01KZZZZZZZ0000000000000043",
                    "ts": "2026-01-02T00:00:00Z",
                    "text": "〔更正〕 port is 9090",
                    "corrects": [target],
                }
            )
            + "\n"
        )
    index.open_index(vault).close()
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:  # a git merge brings it later
        fh.write(json.dumps({"id": target, "ts": "2026-01-01T00:00:00Z", "text": "port is 8080"}) + "\n")
    assert lookup.get(vault, target).record["status"] == "superseded"


@pytest.mark.long
def test_a_build_merges_once_and_leaves_appends_merging_as_they_go(vault, cli):
    for i in range(30):
        put(vault, f"note number {i} about the staging database")
    assert cli("reindex").exit_code == 0
    conn = sqlite3.connect(vault.index_path)
    config = dict(conn.execute("SELECT k, v FROM fts_config").fetchall())
    assert config.get("automerge") == 4 and config.get("crisismerge") == 16  # SQLite's defaults again
    (segments,) = conn.execute("SELECT count(*) FROM fts_data WHERE id > 10").fetchone()
    conn.close()
    assert segments >= 1 and cli.json("search", "staging database")["total"] == 30


def _plan_of(idx, call) -> str:
    """The query plan of the one SELECT on `rec` that `call` runs (its result is returned too)."""
    statements: list[str] = []
    idx.conn.set_trace_callback(statements.append)
    try:
        result = call()
    finally:
        idx.conn.set_trace_callback(None)
    sql = next(s for s in statements if "FROM rec" in s)
    return result, " ".join(str(row[-1]) for row in idx.conn.execute("EXPLAIN QUERY PLAN " + sql))


@pytest.mark.long
def test_a_session_start_reads_through_indexes_not_the_whole_log(vault, monkeypatch):
    # context runs at every session start: its recent records and the project's handoff must
    # not scan (and sort) every record
    from optmem import handoff

    for day in range(1, 21):
        monkeypatch.setenv("OPTMEM_NOW", f"2026-01-{day:02d}T00:00:00Z")
        put(vault, f"note of day {day} about the deploy", gate=False, project="webapp")
    first = put(vault, "the port is 8080").id
    fixed = facts.correct(vault, first, "the port is 9090").id
    handoff.write(vault, "webapp", done=["deploy fixed"])
    with index.open_index(vault) as idx:
        now = 1_800_000_000.0
        recent, plan = _plan_of(idx, lambda: idx.recent(now, exclude_kinds=("handoff",), limit=3))
        assert "rec_used" in plan and "TEMP B-TREE" not in plan, plan
        assert [r.ts for r in recent] == sorted((r.ts for r in recent), reverse=True)
        assert recent[0].id == fixed and "port is 9090" in idx.record(recent[0]).text
        notes, plan = _plan_of(idx, lambda: idx.handoffs("webapp", 1))
        assert "rec_handoff" in plan and "TEMP B-TREE" not in plan and notes, plan


def test_a_build_keeps_every_field_a_line_sets_beside_lines_that_set_none(vault, vault_path):
    """Most lines leave the defaulted fields alone and are stored with a shorter row; a line that
    sets any one of them is stored whole — each field below, set alone, reaches the index."""
    base = {"ts": "2026-01-01T00:00:00Z", "domain": "d"}
    setters = {
        "retired": {"kind": "memory", "op": "remove", "file": "MEMORY.md"},
        "imp": {"importance": 0.25},
        "pending": {"pending": True},
        "conf": {"confidence": 0.5},
        "source": {"source": "agent-x"},
        "inferred": {"basis": "inferred"},
        "state": {"state": True},
        "upd": {"may_update": "01OLDRECORD00000000000000"},
        "change": {"key": "port", "text": "now 9090"},
    }
    expected = {
        "retired": 1,
        "imp": 0.25,
        "pending": 1,
        "conf": 0.5,
        "source": "agent-x",
        "inferred": 1,
        "state": 1,
        "upd": "01OLDRECORD00000000000000",
        "change": 1,
    }
    defaults = {
        "retired": 0,
        "imp": None,
        "pending": 0,
        "conf": None,
        "source": None,
        "inferred": 0,
        "state": 0,
        "upd": None,
        "change": 0,
    }
    lines = [{**base, "id": "PLAIN0000000000000000000001", "text": "a plain note", "session": "s1"}]
    lines += [
        {**base, "id": f"SET{column.upper():0<23}", "text": f"sets {column}", **fields}
        for column, fields in setters.items()
    ]
    vault_path.joinpath("LOG.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    index.build(vault)
    conn = sqlite3.connect(vault.index_path)
    try:
        cols = ", ".join(defaults)
        got = {rid: dict(zip(defaults, values)) for rid, *values in conn.execute(f"SELECT id, {cols} FROM rec")}
        plain = conn.execute(
            "SELECT session, spos, domain FROM rec WHERE id = 'PLAIN0000000000000000000001'"
        ).fetchone()
    finally:
        conn.close()
    assert got["PLAIN0000000000000000000001"] == defaults
    assert plain == ("s1", 0, "d")
    for column in setters:
        assert got[f"SET{column.upper():0<23}"] == {**defaults, column: expected[column]}, column


def test_a_worker_pool_leaves_ctrl_c_to_its_process_and_ends_with_it():
    # a terminal's Ctrl-C reaches the workers too: they ignore it; the process that started them
    # stops and reaps them on its way out (here, an interrupt inside the pool's block)
    import multiprocessing
    import signal

    from optmem.ingest import worker_pool

    others = set(multiprocessing.active_children())
    # (what this process does with Ctrl-C is its own: a job started in the background by a
    # non-interactive shell begins with it ignored; the pool leaves it as it found it)
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), worker_pool(2) as pool:
        assert pool is not None
        assert set(pool.map(signal.getsignal, [signal.SIGINT] * 4, chunksize=1)) == {signal.SIG_IGN}
        workers = set(multiprocessing.active_children()) - others
        assert len(workers) == 2
        raise KeyboardInterrupt
    assert not any(p.is_alive() for p in workers)
    assert signal.getsignal(signal.SIGINT) == before  # this process answers it as it did
    with worker_pool(0) as none:
        assert none is None


@pytest.mark.long
@given(st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=6))
def test_the_term_counts_are_fts5s_own_for_any_text(tmp_path_factory, texts):
    """Whatever a line's text (any script, symbols, marks), the counts kept as lines are indexed
    (`df`, what a search reads for a term's rarity) equal FTS5's own count of its postings —
    appended one by one and built from scratch."""
    root = tmp_path_factory.mktemp("df")
    vault = Vault(root)
    vault.root.mkdir(exist_ok=True)
    for i, text in enumerate(texts):
        with open(vault.log_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"ts": f"2026-01-0{1 + i % 9}T00:00:00Z", "text": text, "key": f"k{i}"}) + "\n")
        index.open_index(vault).close()
    conn = sqlite3.connect(vault.index_path)
    try:
        kept = conn.execute("SELECT term, doc FROM df ORDER BY term").fetchall()
        assert kept == _vocab(conn)
    finally:
        conn.close()
    index.build(vault)
    conn = sqlite3.connect(vault.index_path)
    try:
        assert conn.execute("SELECT term, doc FROM df ORDER BY term").fetchall() == kept
    finally:
        conn.close()


DATED = [
    "we shipped the release yesterday",
    "上周五我们迁移了数据库",
    "the audit is due on 2025-05-03, two weeks ago it was moved",
    "a plain note without a date",
    "3月20日 开会, last month we met in May 2024",
    "",  # (a record without text: nothing indexed)
]


@pytest.mark.parametrize("how", ["appended", "built"])
def test_a_record_is_re_tokenised_as_it_was_indexed(tmp_path, how):
    """A search re-scores a candidate with the tokens its line was indexed with (`Index.tokens_of`,
    kept by the index; `Index.tokenised`, its line read back and re-tokenised):
    the date terms its text names are read from the index (`Row.dates`), not resolved again —
    the same terms, in the same order, as the build put into FTS, for texts naming dates
    (relative, explicit, Chinese) and texts naming none, indexed line by line or built at once."""
    vault = Vault(tmp_path / "v")
    vault.root.mkdir()
    for i, text in enumerate(DATED):
        line = {"ts": f"2026-03-{10 + i}T08:00:00Z", "text": text, "key": "k" if i == 2 else None, "tags": ["t1"]}
        with open(vault.log_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({k: v for k, v in line.items() if v is not None}) + "\n")
        if how == "appended":
            index.open_index(vault).close()
    raw = vault.log_path.read_bytes()
    lines, off = [], 0
    for n, body in enumerate(raw.split(b"\n")[:-1], 1):
        lines.append((body, n, off, len(body)))
        off += len(body) + 1
    indexed = sorted(body.split(" ") for _, body in ingest.prepare_rows(lines).fts_rows)
    assert len(indexed) == len(DATED) - 1
    idx = index.open_index(vault, rebuild=how == "built")
    try:
        rows = idx.rows("1")
        assert sorted(idx.tokenised(r)[2] for r in rows if idx.record(r).text) == indexed
        kept = idx.tokens_of(rows)  # (what a search scores: the tokens the index keeps, the line not read)
        assert sorted(kept[r.n] for r in rows if idx.record(r).text) == indexed
        assert all(kept[r.n] == idx.tokenised(r)[2] for r in rows)  # (one without text: re-tokenised)
        stored = [r.dates for r in rows]
        assert stored.count(None) == 2  # the plain note and the empty one: their own day's terms alone
        assert any("__d2025_05_03" in d.split(" ") for d in stored if d)
    finally:
        idx.close()


def test_the_records_holding_any_of_the_terms_are_counted_as_fts5_counts_them(tmp_path):
    """A search's total (`candidates.count_any`): one term's count is its `df`, two terms' their
    counts less the records holding both — for every one, two and three terms of the index
    (a term twice too), the number FTS5's own OR query counts."""
    import itertools

    from optmem.candidates import count_any

    vault = Vault(tmp_path / "v")
    vault.root.mkdir()
    texts = ["deploy the api", "api gateway down", "deploy gateway", "lunch menu", "部署 网关", "api api api", "x"]
    with open(vault.log_path, "a", encoding="utf-8") as fh:
        for i, text in enumerate(texts):
            fh.write(json.dumps({"ts": f"2026-01-0{1 + i}T00:00:00Z", "text": text}) + "\n")
    idx = index.open_index(vault)
    try:
        terms = [t for (t,) in idx.conn.execute("SELECT term FROM df")]
        df = idx.doc_freq(terms)
        assert len(terms) > 10 and all(df.values())
        for k in (1, 2, 3):
            for chosen in itertools.product(terms[:9], repeat=k) if k < 3 else itertools.combinations(terms, 3):
                asked = list(chosen)
                assert count_any(idx, asked, df) == idx.count_matches(index.match_any(asked)), asked
    finally:
        idx.close()


def test_session_spans_read_in_one_statement_as_their_union_reads_them(vault):
    # `in_sessions` passes the spans as one JSON parameter (one statement text for any number
    # of spans); without SQLite's JSON functions it joins one SELECT a span: the same rows, in
    # the same order — span by span, a row in two spans twice
    for session, domain in (("s1", "code"), ("s2", "code"), ("s1", "hermes")):
        for i in range(5):
            put(vault, f"turn {i} of {session} in {domain} about the staging deploy", session=session, domain=domain)
    with index.open_index(vault) as idx:
        spos = {(r.session, r.domain, r.spos) for r in idx.rows("r.session IS NOT NULL")}
        assert len(spos) == 15
        spans = [
            ("s1", "code", 1, 3),
            ("s1", "hermes", 0, 9),
            ("s2", "code", 2, 2),
            ("s1", "code", 3, 4),
            ("s9", "code", 0, 1),
        ]
        for where, params in (("1", []), ("r.domain = ? AND r.spos != ?", ["code", 3])):
            got = idx.in_sessions(spans, where, params)
            assert got == idx.in_sessions_united(spans, where, params)
            one_by_one = [
                r
                for session, domain, first, last in spans
                for r in idx.rows(
                    f"r.session = ? AND r.domain = ? AND r.spos BETWEEN ? AND ? AND {where} ORDER BY r.spos, r.n",
                    [session, domain, first, last, *params],
                )
            ]
            assert got == one_by_one
        assert len(idx.in_sessions(spans, "1", [])) == 3 + 5 + 1 + 2
        # (a name holding a NUL, which SQLite's JSON strings end at, is read through the UNION)
        assert idx.in_sessions([("s1\x00", "code", 0, 9), *spans], "1", []) == idx.in_sessions(spans, "1", [])
        assert idx.in_sessions([], "1", []) == []
