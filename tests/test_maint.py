"""Keeping a vault healthy: doctor, stats, purge, and the evaluation gate."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path

import pytest
from conftest import put

from optmem import facts, handoff, log, memory, tree
from optmem.vault import Vault


def all_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def damage(vault: Vault) -> dict[str, str]:
    """A garbage line, a dangling correction, a torn tail, an over-limit MEMORY.md typed by hand."""
    good = {put(vault, f"good record {i} 完好的记录 {i}").id: f"good record {i}" for i in range(3)}
    with open(vault.log_path, "a", encoding="utf-8") as fh:
        fh.write("this is not json\n")  # line 4
        fh.write(
            json.dumps(
                {
                    "id": "01KBADREF000000000000000AA",
                    "ts": "2026-01-01T00:00:00Z",
                    "text": "〔更正〕 fixes a record that is not there",
                    "corrects": ["01KNOSUCHRECORD00000000000"],
                }
            )
            + "\n"
        )  # line 5
        fh.write('{"v":1,"id":"01KTORN","ts":"2026-01-01T00:0')  # line 6, torn
    (vault.root / "MEMORY.md").write_text("x" * 2000 + "\n§\n" + "y" * 400 + "\n", "utf-8")
    return good


@pytest.mark.long
def test_doctor_reports_changes_nothing_then_repairs_safely(vault, cli):
    good = damage(vault)
    before = all_files(vault.root)
    out = cli.json("doctor", code=1)
    assert out["ok"] is False and out["fixed"] == []
    found = {(p["code"], p.get("line")) for p in out["problems"]}
    assert {("unparseable_line", 4), ("dangling_ref", 5), ("torn_last_line", 6), ("over_limit", None)} <= found
    assert next(p for p in out["problems"] if p["code"] == "dangling_ref")["id"] == "01KBADREF000000000000000AA"
    assert all_files(vault.root) == before  # nothing changed without --fix

    fixed = cli.json("doctor", "--fix", code=1)
    assert any("ended the torn last line" in f for f in fixed["fixed"])
    assert any("moved 2 unparseable line(s) (4, 6)" in f for f in fixed["fixed"])
    assert {p["code"] for p in fixed["problems"]} == {"dangling_ref", "over_limit"}
    quarantine = [json.loads(line) for line in (vault.root / "LOG.quarantine.jsonl").read_text("utf-8").splitlines()]
    assert [(q["line"], q["raw"]) for q in quarantine] == [
        (4, "this is not json"),
        (6, '{"v":1,"id":"01KTORN","ts":"2026-01-01T00:0'),
    ]
    for rid, text in good.items():
        assert cli.json("get", rid)["record"]["text"].startswith(text)
    # search keeps working on the damaged log meanwhile
    assert len(cli.json("search", "完好的记录")["hits"]) == 3

    # what needs a person's judgement, a person does — then doctor passes
    cli.json("remove", "yyyy")
    cli.json("purge", "--origin", "user", "01KBADREF000000000000000AA", "--yes")
    assert cli.json("doctor")["ok"] is True
    assert cli("doctor").exit_code == 0
    for rid in good:
        assert cli.json("get", rid)["record"]["status"] == "current"


def test_doctor_finds_an_index_that_lacks_records_of_the_log(vault, cli):
    """Tester18 #6: an index in step with the log's position but missing rows (a damaged or
    hand-edited file) made every search miss those records while doctor said "no problems".
    Doctor compares the records it read with the rows the index holds; a line that is no record
    (unparseable) is no row either, and is no index problem."""
    for i in range(6):
        cli.json("append", f"record {i} of the log, 日志第{i}条")
    with open(vault.log_path, "a", encoding="utf-8") as fh:
        fh.write("this is not json\n")
    assert len(cli.json("search", "record of the log")["hits"]) == 6  # (the index catches up)
    assert {p["code"] for p in cli.json("doctor", code=1)["problems"]} == {"unparseable_line"}
    with sqlite3.connect(vault.index_path) as conn:
        conn.execute("DELETE FROM rec WHERE rowid IN (SELECT rowid FROM rec ORDER BY n LIMIT 2)")
    conn.close()
    assert len(cli.json("search", "record of the log")["hits"]) == 4  # the damage: two records unfound
    before = all_files(vault.root)
    out = cli.json("doctor", code=1)
    assert all_files(vault.root) == before  # (doctor changes nothing)
    found = [p for p in out["problems"] if p["code"] == "index_inconsistent"]
    assert found == [
        {
            "code": "index_inconsistent",
            "file": ".cache/index.sqlite3",
            "message": "the search index holds 4 record(s), the log 6 (it lacks 2), so search, `get` and "
            "`stats` answer without them; run `optmem doctor --fix` (or `optmem reindex`) to rebuild it from the log",
        }
    ]
    human = cli("doctor")
    assert human.exit_code == 1 and "index_inconsistent .cache/index.sqlite3" in human.stdout
    fixed = cli.json("doctor", "--fix")
    assert "rebuilt the search index" in fixed["fixed"] and fixed["ok"] is True
    assert len(cli.json("search", "record of the log")["hits"]) == 6
    assert cli.json("stats")["records"] == 6


def test_doctor_other_checks(vault, cli):
    rid = put(vault, "first").id
    with open(vault.log_path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": rid, "ts": "2026-01-01T00:00:00Z", "text": "same id again"}) + "\n")
        fh.write(json.dumps({"id": "01KNOTEXT00000000000000000", "ts": "2026-01-01T00:00:00Z"}) + "\n")
        fh.write(
            json.dumps({"kind": "forget", "ref": "01KMISSING0000000000000000", "ts": "2026-01-01T00:00:00Z"}) + "\n"
        )
    (vault.root / "USER.md").write_bytes(b"bad \xff utf-8")
    proj = vault.root / "projects" / "webapp"
    proj.mkdir(parents=True)
    (proj / "HANDOFF.md").write_text("---\nproject: [unclosed\n---\n## Next\n- x\n", "utf-8")
    (vault.root / "tree" / "code").mkdir(parents=True)
    (vault.root / "tree" / "code" / "L1-0001.md").write_text("no front matter here\n", "utf-8")
    codes = {(p["code"], p["file"]) for p in cli.json("doctor", code=1)["problems"]}
    assert {
        ("duplicate_id", "LOG.jsonl"),
        ("missing_field", "LOG.jsonl"),
        ("dangling_ref", "LOG.jsonl"),
        ("bad_hot_file", "USER.md"),
        ("bad_front_matter", "projects/webapp/HANDOFF.md"),
        ("bad_front_matter", "tree/code/L1-0001.md"),
    } <= codes
    assert (vault.root / "USER.md").read_bytes() == b"bad \xff utf-8"


def test_quarantine_keeps_exact_bytes_of_lines_that_are_not_utf8(vault, cli):
    put(vault, "fine")
    with open(vault.log_path, "ab") as fh:
        fh.write(b"\xff\xfe not utf-8 \x00\n")
    cli.json("doctor", "--fix")
    q = json.loads((vault.root / "LOG.quarantine.jsonl").read_text("utf-8").splitlines()[0])
    assert q["line"] == 2 and base64.b64decode(q["raw_base64"]) == b"\xff\xfe not utf-8 \x00"
    assert b"\xff" not in vault.log_path.read_bytes()


@pytest.mark.long
def test_stats(vault, cli, monkeypatch):
    monkeypatch.setenv("OPTMEM_NOW", "2026-01-01T00:00:00Z")
    a = put(vault, "端口是 8080", domain="code").id
    facts.correct(vault, a, "端口是 9090")
    # a second correction of `a`, merged from another clone (`correct` refuses a superseded
    # target): two current values, a contradiction
    with open(vault.log_path, "a", encoding="utf-8") as fh:
        fh.write(
            json.dumps(
                {
                    "ts": "2026-01-01T00:00:00Z",
                    "domain": "code",
                    "kind": "correction",
                    "corrects": [a],
                    "text": "〔更正〕端口是 9091",
                },
                ensure_ascii=False,
            )
            + "\n"
        )
    monkeypatch.setenv("OPTMEM_NOW", "2025-12-20T00:00:00Z")  # time orders the two values of a key
    put(vault, "city is Hangzhou", domain="hermes", key="city")
    monkeypatch.setenv("OPTMEM_NOW", "2026-01-01T00:00:00Z")
    put(vault, "city is Shanghai", domain="hermes", key="city")
    put(vault, "temporary", domain="hermes", ttl="1h")
    gone = put(vault, "forget me", domain="hermes").id
    log.forget(vault, gone)
    put(vault, "a rule", tier="redline", domain="code")
    with open(vault.log_path, "a", encoding="utf-8") as fh:  # the same statement typed twice by hand
        fh.write(json.dumps({"ts": "2026-01-01T00:00:00Z", "text": "[code] dup fact"}) + "\n")
        fh.write(json.dumps({"ts": "2026-01-01T00:00:01Z", "text": "[code] dup fact!"}) + "\n")
    memory.add(vault, "x" * 1100)
    monkeypatch.setenv("OPTMEM_NOW", "2026-01-02T00:00:00Z")
    s = cli.json("stats")
    assert s["by_domain"] == {"code": 6, "default": 1, "hermes": 4}
    assert s["by_kind"]["correction"] == 2 and s["by_kind"]["memory"] == 1
    assert s["status"] == {
        "current": 7,
        "superseded": 2,
        "expired": 1,
        "forgotten": 1,
        "cold": 0,
        "pending": 0,
        "removed": 0,
        "held": 0,  # in quarantine (issue 46)
    }
    assert s["redlines"] == 1
    assert s["contradictions"] == 1 and s["contradiction_rate"] == 0.5  # 1 of 2 facts (a key, a chain)
    assert s["duplicate_rate"] == 0.3333  # of the 6 current records, the two "dup fact" lines have a near duplicate
    assert s["hot"][0] == {"file": "MEMORY.md", "entries": 1, "chars": 1100, "limit": 2200, "percent": 50}
    assert s["sizes"]["log"] == vault.log_path.stat().st_size and s["sizes"]["index"] > 0
    assert "contradiction rate 50.0%" in cli("stats").stdout


@pytest.mark.long
def test_purge_refuses_without_yes_and_leaves_no_copy_anywhere(vault, cli):
    (vault.root / "optmem.toml").write_text("[tree]\nrun = 2\nfanout = 2\n", "utf-8")
    v = Vault(vault.root)
    secret = put(v, "ZEBRA-SECRET-4711 斑马密码", domain="code", project="webapp").id
    put(v, "keep this one", domain="code", project="webapp")
    put(v, "keep that one too", domain="code", project="webapp")
    put(v, "and a fourth", domain="code", project="webapp")
    put(v, "ZEBRA-SECRET-4711 斑马密码", domain="code", project="webapp")  # restated: a seen line
    handoff.write(v, "webapp", done=["ZEBRA-SECRET-4711 shipped"])
    tree.compact(v)
    cli.json("search", "ZEBRA")
    before = all_files(v.root)
    refused = cli.json("purge", "--origin", "user", secret, code=1)
    assert refused["error"]["code"] == "confirmation_required" and refused["error"]["records"] == 1
    assert all_files(v.root) == before
    h = handoff.read(v, "webapp")[0].id
    out = cli.json("purge", "--origin", "user", secret, h, "--yes")
    assert out["records"] == 2 and "projects/webapp/HANDOFF.md" in out["files"]
    for name, data in all_files(v.root).items():
        assert b"ZEBRA-SECRET" not in data, name
        assert "斑马密码".encode() not in data, name
    assert cli.json("search", "keep")["total"] == 2
    assert cli.json("get", secret, code=1)["error"]["code"] == "not_found"
    tree.compact(v)  # the dropped nodes are rebuilt from what is left
    assert (v.root / "tree" / "code" / "root.md").exists()


@pytest.mark.long
def test_purge_takes_the_copies_of_the_text_with_it_and_leaves_doctor_clean(vault, cli):
    a, b, c = (
        put(vault, t).id
        for t in (
            "Japan trip: fly to Tokyo",
            "Japan trip plans OSAKA-4711 and Kyoto",
            "Japan trip budget is 3000 dollars",
        )
    )
    merged = cli.json("merge", a, b, c, "--topic", "Japan trip")["id"]
    cat = put(vault, "the cat is called Momo").id
    fixed = cli.json("correct", cat, "the cat is called Mochi")["id"]
    out = cli.json("purge", "--origin", "user", b, cat, "--yes")
    assert out["records"] == 3  # b, the merge that quotes it, the cat; the correction stays
    assert b"OSAKA-4711" not in vault.log_path.read_bytes() and b"Momo" not in vault.log_path.read_bytes()
    assert cli.json("search", "OSAKA")["hits"] == [] and cli.json("get", merged, code=1)
    assert {h["id"] for h in cli.json("search", "Japan trip")["hits"]} == {a, c}  # current again
    assert cli.json("get", fixed)["record"]["status"] == "current"
    assert cli.json("doctor")["problems"] == []


@pytest.mark.long
def test_purge_of_a_hot_memory_entry_takes_every_journal_line_and_refuses_a_held_one(vault, cli):
    cli.json("add", "prefers TABS-4711 over spaces")
    cli.json("replace", "TABS-4711 over spaces", "spaces over tabs")
    cli.json("add", "codename BLUEBIRD-4711")
    cli.json("remove", "BLUEBIRD-4711")
    gone = cli.json("search", "BLUEBIRD")["hits"][0]["id"]
    old = next(h["id"] for h in cli.json("search", "TABS")["hits"] if "TABS-4711" in h["text"])
    assert cli.json("purge", "--origin", "user", gone, old, "--yes")["records"] == 4
    log = vault.log_path.read_bytes()
    assert b"BLUEBIRD-4711" not in log and b"TABS-4711" not in log  # a replacement's `old` too
    assert cli.json("doctor")["problems"] == []
    held = cli.json("search", "spaces over tabs")["hits"][0]["id"]
    before = vault.log_path.read_bytes()
    err = cli.json("purge", "--origin", "user", held, "--yes", code=1)["error"]
    assert err["code"] == "still_held" and "optmem remove --id" in err["message"]
    assert vault.log_path.read_bytes() == before
    cli.json("add", "likes green tea", "--target", "user")
    user = next(h["id"] for h in cli.json("search", "green tea")["hits"])
    assert "--target user" in cli.json("purge", "--origin", "user", user, "--yes", code=1)["error"]["message"]


def test_purge_keeps_a_hand_typed_correction_and_its_id(vault, cli):
    old = put(vault, "the cat is called Momo").id
    with open(vault.log_path, "a", encoding="utf-8") as fh:  # one id as a string, no id of its own
        fh.write(json.dumps({"ts": "2026-01-01T00:00:00Z", "text": "the cat is called Mochi", "corrects": old}) + "\n")
    hand = cli.json("search", "Mochi")["hits"][0]["id"]
    cli.json("purge", "--origin", "user", old, "--yes")
    line = json.loads(vault.log_path.read_text("utf-8").splitlines()[-1])
    assert line == {"id": hand, "ts": "2026-01-01T00:00:00Z", "text": "the cat is called Mochi"}
    assert cli.json("get", hand)["record"]["status"] == "current" and cli.json("doctor")["problems"] == []


def test_purge_takes_a_resolution_that_kept_the_purged_value(vault, cli):
    (vault.root / "optmem.toml").write_text("[consolidation]\nconflict_window_days = 1\n", "utf-8")
    k1 = cli.json("append", "user uses Linux PURGEOS-4711", "--key", "user.os")["id"]
    other = cli.json("append", "user uses Mac", "--key", "user.os")["id"]
    cli.json("resolve", "user.os", "--keep", k1)
    assert cli.json("purge", "--origin", "user", k1, "--yes")["records"] == 2
    assert b"PURGEOS-4711" not in vault.log_path.read_bytes()
    assert cli.json("get", other)["record"]["status"] == "current" and cli.json("doctor")["problems"] == []


@pytest.mark.long
def test_purge_leaves_no_trace_of_the_ids_in_the_recall_lines(vault, cli):
    gone, kept = put(vault, "the vendor contract is secret").id, put(vault, "the vendor is Acme").id
    cli.json("touch", gone, kept)
    cli.json("search", "vendor", "--touch")
    assert gone.encode() in vault.access_path.read_bytes()
    cli.json("purge", "--origin", "user", gone, "--yes")
    assert gone.encode() not in vault.access_path.read_bytes()
    lines = [json.loads(x) for x in vault.access_path.read_text("utf-8").splitlines()]
    touches = [x["touch"] for x in lines if "touch" in x]
    assert touches and all(t == [kept] for t in touches)  # the other recalls are untouched
    assert any("sweep" in x for x in lines)
    assert cli.json("get", kept)["record"]["id"] == kept and cli.json("doctor")["problems"] == []
    cli.json("purge", "--origin", "user", "--all", "--yes")
    assert kept.encode() not in vault.access_path.read_bytes()


def test_purge_domain_and_all(vault, cli):
    put(vault, "hermes note", domain="hermes")
    put(vault, "code note", domain="code")
    assert cli.json("purge", "--origin", "user", "--domain", "hermes", "--yes")["records"] == 1
    assert [h["domain"] for h in cli.json("search", "note")["hits"]] == ["code"]
    assert cli.json("purge", "--origin", "user", code=2)["error"]["code"] == "usage"
    assert cli.json("purge", "--origin", "user", "--all", "--yes")["records"] == 1
    assert vault.log_path.read_bytes() == b""
    assert cli.json("search", "note")["hits"] == []


def make_eval_vault(vault: Vault, monkeypatch) -> Path:
    monkeypatch.setenv("OPTMEM_NOW", "2026-01-01T00:00:00Z")
    old = put(vault, "the backend port is 8080").id
    monkeypatch.setenv("OPTMEM_NOW", "2026-02-01T00:00:00Z")
    fix = facts.correct(vault, old, "the backend port is 9090").id
    put(vault, "小明住在上海", key="city")
    put(vault, "weekly report on Friday 17:00")
    queries = vault.root.parent / "queries.jsonl"
    queries.write_text(
        "\n".join(
            json.dumps(q, ensure_ascii=False)
            for q in [
                {"query": "backend port", "expect": [fix[-8:]], "forbid": [old]},
                {"query": "小明住在哪里", "expect_text": "上海"},
                {"query": "weekly report", "expect_text": "Friday"},
            ]
        )
        + "\n",
        "utf-8",
    )
    return queries


@pytest.mark.long
def test_eval_passes_against_its_own_baseline_and_fails_after_a_regression(vault, cli, monkeypatch, tmp_path):
    queries = make_eval_vault(vault, monkeypatch)
    cli.json("search", "warm the index")
    before = all_files(vault.root)
    base = tmp_path / "base.json"
    first = cli.json("eval", str(queries), "--save", str(base))
    assert first["overall"] == {
        "recall": 1.0,
        "mrr": 1.0,
        "stale_rate": 0.0,
        "n": 3,
        "duplicate_rate": 0.0,
        "contradiction_rate": 0.0,
        "duplicates": 0,
        "contradictions": 0,
    }
    assert [q["rank"] for q in first["queries"]] == [1, 1, 1]
    assert all_files(vault.root) == before
    again = cli.json("eval", str(queries), "--baseline", str(base))
    assert again["ok"] is True and again["regressions"] == []
    # a change that makes an expected record lose its place
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-01T00:00:00Z")
    put(vault, "weekly report report report: weekly sync notes, weekly report draft")
    put(vault, "weekly report template lives in docs/report.md — weekly report")
    worse = cli.json("eval", str(queries), "--baseline", str(base), code=1)
    assert worse["ok"] is False and worse["error"]["code"] == "regression"
    assert {"query": "weekly report", "metric": "rank", "before": 1, "after": worse["queries"][2]["rank"]} in worse[
        "regressions"
    ]
    assert "REGRESSION" in cli("eval", str(queries), "--baseline", str(base)).stdout


@pytest.mark.long
def test_eval_set_tries_a_setting_without_adopting_it_and_k_must_match(vault, cli, monkeypatch, tmp_path):
    queries = make_eval_vault(vault, monkeypatch)
    base = tmp_path / "base.json"
    cli.json("eval", str(queries), "--save", str(base))
    before = all_files(vault.root)
    tried = cli.json("eval", str(queries), "--set", "ranking.candidates=5", "--baseline", str(base))
    assert tried["ok"] is True
    assert all_files(vault.root) == before and not (vault.root / "optmem.toml").exists()
    assert cli.json("eval", str(queries), "--k", "3", "--baseline", str(base), code=2)["error"]["code"] == "usage"
    assert cli.json("eval", str(queries), "--set", "nonsense", code=2)["error"]["code"] == "usage"
    typo = cli.json("eval", str(queries), "--set", "ranking.candidats=3", code=2)["error"]
    assert "unknown setting ranking.candidats (did you mean candidates?)" in typo["message"]
    wrong = cli.json("eval", str(queries), "--set", "ranking.recency_window=abc", code=2)["error"]
    assert wrong["key"] == "ranking.recency_window" and wrong["expected"] == "a number"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x"}\n', "utf-8")
    assert "expect" in cli.json("eval", str(bad), code=2)["error"]["message"]


def test_eval_counts_a_superseded_record_above_the_expected_one_as_stale(vault, cli, monkeypatch, tmp_path):
    monkeypatch.setenv("OPTMEM_NOW", "2026-01-01T00:00:00Z")
    old = put(vault, "deploy with docker compose v1 using the compose file").id
    facts.correct(vault, old, "deploy with kubernetes")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "deploy docker compose", "expect_text": "kubernetes"}) + "\n", "utf-8")
    out = cli.json("eval", str(queries))
    assert out["queries"][0]["rank"] == 1 and out["queries"][0]["stale"] is False
    queries.write_text(
        json.dumps({"query": "deploy docker compose", "expect_text": "nothing like this"}) + "\n", "utf-8"
    )
    assert cli.json("eval", str(queries))["queries"][0]["stale"] is True


def test_eval_gate_fails_when_the_store_gets_dirtier(vault, cli, monkeypatch, tmp_path):
    queries = make_eval_vault(vault, monkeypatch)
    base = tmp_path / "base.json"
    cli.json("eval", str(queries), "--save", str(base))
    monkeypatch.setenv("OPTMEM_NOW", "2026-02-01T00:00:00Z")
    put(vault, "小明住在杭州", key="city", basis="inferred")  # an inference against what was said: a conflict
    put(vault, "Weekly report on Friday, 17:00 ok", on_similar="store")  # a near duplicate
    out = cli.json("eval", str(queries), "--baseline", str(base), code=1)
    assert out["error"]["code"] == "regression"
    assert {"contradictions", "duplicates"} <= {w["metric"] for w in out["regressions"]}


def test_doctor_names_a_hand_typed_correction_circle_once(cli, vault, vault_path):
    a = cli.json("append", "the cache lives in redis")["id"]
    fine = cli.json("correct", a, "the cache lives in memcached")["id"]  # a chain, not a circle
    assert cli.json("doctor")["ok"] is True
    c, d = "01KCYCLE00000000000000000C", "01KCYCLE00000000000000000D"
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:  # typed by hand, or merged from two clones
        fh.write(json.dumps({"id": c, "ts": "2026-01-01T00:00:00Z", "text": "port 1", "corrects": [d[-8:]]}) + "\n")
        fh.write(json.dumps({"id": d, "ts": "2026-01-02T00:00:00Z", "text": "port 2", "corrects": [c]}) + "\n")
    problems = cli.json("doctor", code=1)["problems"]
    [circle] = [p for p in problems if p["code"] == "correction_cycle"]
    assert circle["id"] == c and c[-8:] in circle["message"] and d[-8:] in circle["message"]
    assert "optmem forget" in circle["message"] and fine not in json.dumps(problems)


def test_doctor_names_recalls_dated_in_the_future(cli, vault, vault_path, monkeypatch):
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-01T00:00:00Z")
    rid = cli.json("append", "the deploy runbook is in docs/deploy.md")["id"]
    with open(vault_path / "ACCESS.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"ts": "2026-06-01T12:00:00Z", "touch": [rid]}) + "\n")  # within a day: clock skew
        fh.write(json.dumps({"ts": "2031-01-01T00:00:00Z", "touch": [rid]}) + "\n")
    lines = (vault_path / "ACCESS.jsonl").read_text("utf-8").splitlines()
    [future] = [p for p in cli.json("doctor", code=1)["problems"] if p["code"] == "future_time"]
    assert future["file"] == "ACCESS.jsonl" and "2031-01-01" in future["message"]
    assert lines[future["line"] - 1].startswith('{"ts": "2031')


def test_the_quarantine_numbers_every_line_as_doctor_found_the_log(vault, cli):
    """Moved lines and stamped lines carry one numbering in LOG.quarantine.jsonl, and what --fix
    says uses it too: the log's as doctor found it (before a line was moved out of it)."""
    put(vault, "one")
    with open(vault.log_path, "a", encoding="utf-8") as fh:
        fh.write("garbage at 2\n")
        fh.write("more garbage at 3\n")
        fh.write(json.dumps({"text": "typed by hand at 4, no ts"}) + "\n")
        fh.write(json.dumps({"text": "typed by hand at 5, no ts"}) + "\n")
    fixed = cli.json("doctor", "--fix")["fixed"]
    q = [json.loads(x) for x in (vault.root / "LOG.quarantine.jsonl").read_text("utf-8").splitlines()]
    assert [(x["line"], x["raw"]) for x in q] == [
        (2, "garbage at 2"),
        (3, "more garbage at 3"),
        (4, '{"text": "typed by hand at 4, no ts"}'),
        (5, '{"text": "typed by hand at 5, no ts"}'),
    ]
    assert any("moved 2 unparseable line(s) (2, 3)" in f for f in fixed)
    assert any("stamped 2 line(s) without ts (4, 5)" in f for f in fixed)


def test_purge_splices_after_of_ids_typed_in_lower_case(vault, cli):
    # review fix-m2 2: hand-typed ids in lower case were compared as written against upper case
    with open(vault.log_path, "a", encoding="utf-8") as fh:
        for n, after in ((1, []), (2, ["handid01"])):
            line = {"id": f"handid0{n}", "ts": f"2026-11-0{n}T00:00:00Z", "text": f"cache host is cache{n}"}
            fh.write(json.dumps({**line, "key": "cache.host", "after": after}) + "\n")
    three = cli.json("append", "cache host is cache3", "--key", "cache.host")["id"]
    assert cli.json("purge", "--origin", "user", "handid02", "--yes")["records"] == 1
    lines = [json.loads(x) for x in vault.log_path.read_text("utf-8").splitlines()]
    assert [x["after"] for x in lines if x["id"] == three] == [["handid01"]]
    assert "handid02" not in vault.log_path.read_text("utf-8").lower()
    assert cli.json("conflicts")["conflicts"] == []
    assert {h["text"]: h["status"] for h in cli.json("search", "cache host")["hits"]} == {
        "cache host is cache3": "current",
        "cache host is cache1": "superseded",
    }


def test_eval_warns_of_an_expected_id_no_record_has(vault, cli, tmp_path):
    """tester19's F11: a typo in an `expect` id scored recall 0 without a word."""
    rid = cli.json("append", "the backend listens on port 9090")["id"]
    queries = tmp_path / "q.jsonl"
    lines = [{"query": "backend port", "expect": [rid[-8:]]}, {"query": "backend port", "expect": ["ZZZZZZZZ"]}]
    queries.write_text("\n".join(json.dumps(x) for x in lines) + "\n", "utf-8")
    res = cli("eval", str(queries), "--json")
    out = json.loads(res.stdout)
    assert [q["recall"] for q in out["queries"]] == [1.0, 0.0]
    (said,) = out["warnings"]
    assert "1 expected id(s) name no record of the vault (ZZZZZZZZ)" in said and rid[-8:] not in said
