"""What a keyed write records as seen (`after`): on one clone a writer holds the vault's lock and
has seen every value of its key already in the log, so values of one clone never read as
concurrent — only values written on two clones before a sync do (s7 findings F10, F5)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import HANG, log_lines, optmem_cmd


def quiet(vault_path) -> None:
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")


def values(cli, query: str) -> list[tuple[str, str]]:
    return sorted((h["text"], h["status"]) for h in cli.json("search", query, "--limit", "20")["hits"])


@pytest.mark.long
def test_a_value_dated_before_one_already_written_is_no_conflict(cli, vault, vault_path, monkeypatch):
    # a writer takes its time before it waits for the lock: written after 8082, dated before it
    quiet(vault_path)
    for when, port in (("00", "8000"), ("02", "8082"), ("01", "8081"), ("03", "8083")):
        monkeypatch.setenv("OPTMEM_NOW", f"2026-12-01T10:00:{when}Z")
        out = cli.json("append", f"端口改成 {port}", "--key", "port")
        assert not out.get("conflict_with"), out
    assert cli.json("conflicts")["conflicts"] == []
    assert values(cli, "端口") == [
        ("端口改成 8000", "superseded"),
        ("端口改成 8081", "superseded"),
        ("端口改成 8082", "superseded"),
        ("端口改成 8083", "current"),
    ]
    # the last writer saw every value before it: 8081 (which no value after it had listed) too
    lines = log_lines(vault_path)
    assert lines[-1]["after"] == [lines[-2]["id"]]


@pytest.mark.long
def test_confirming_an_older_guess_after_a_newer_statement_is_no_conflict(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-01T10:00:00Z")
    guess = cli.json("append", "小明可能喜欢深色主题", "--confidence", "0.4", "--key", "user.theme")["id"]
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-02T10:00:00Z")
    said = cli.json("append", "小明喜欢浅色主题", "--key", "user.theme")["id"]
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-03T10:00:00Z")
    assert cli("confirm", guess).exit_code == 0
    assert cli.json("conflicts")["conflicts"] == []
    hits = {h["id"]: h for h in cli.json("search", "主题")["hits"]}
    assert (hits[said]["status"], hits[guess]["status"]) == ("current", "superseded")


def test_values_written_on_two_clones_before_a_sync_are_still_a_conflict(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-01T10:00:00Z")
    base = cli.json("append", "the deploy day is Friday", "--key", "deploy_day")["id"]
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-02T10:00:00Z")
    here = cli.json("append", "the deploy day is Tuesday", "--key", "deploy_day")["id"]
    # the other clone's value, as git's union merge appends it: its writer had seen `base` only
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        line = {"ts": "2026-12-03T10:00:00Z", "domain": "default", "kind": "note", "key": "deploy_day"}
        fh.write(json.dumps({**line, "text": "the deploy day is Monday", "after": [base]}) + "\n")
    [c] = cli.json("conflicts")["conflicts"]
    assert sorted(v["text"] for v in c["values"]) == ["the deploy day is Monday", "the deploy day is Tuesday"]
    # a value written after the sync has seen both: it settles the key
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-04T10:00:00Z")
    last = cli.json("append", "the deploy day is Thursday", "--key", "deploy_day")
    assert not last.get("conflict_with") and cli.json("conflicts")["conflicts"] == []
    assert here in log_lines(vault_path)[-1]["after"]


def test_a_state_between_two_habits_of_a_key_hides_neither(cli, vault, vault_path, monkeypatch):
    # states and habits of one key are decided apart: a habit's writer lists the habit it saw even
    # when a state written after it saw that habit too
    quiet(vault_path)
    for when, text, more in (
        ("01", "小明通常十一点睡觉", ()),
        ("02", "小明昨晚三点才睡", ("--state",)),
        ("03", "小明通常十二点睡觉", ()),
    ):
        monkeypatch.setenv("OPTMEM_NOW", f"2026-12-{when}T10:00:00Z")
        cli.json("append", text, "--key", "user.bedtime", *more)
    assert cli.json("conflicts")["conflicts"] == []
    assert ("小明通常十二点睡觉", "current") in values(cli, "睡觉")
    assert ("小明通常十一点睡觉", "superseded") in values(cli, "睡觉")


@pytest.mark.long
def test_writers_racing_on_one_key_make_no_conflict(tmp_path):
    # real processes, all at once (s7 F10): whatever order they take the lock in, one value stands
    vault = tmp_path / "v"
    env = {**os.environ, "OPTMEM_VAULT": str(vault)}
    subprocess.run([*optmem_cmd(), "init"], env=env, check=True, capture_output=True, timeout=HANG)
    quiet(vault)
    subprocess.run(
        [*optmem_cmd(), "append", "端口是 8000", "--key", "port"],
        env=env,
        check=True,
        capture_output=True,
        timeout=HANG,
    )
    procs = [
        subprocess.Popen(
            [*optmem_cmd(), "append", f"端口改成 808{i}", "--key", "port"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for i in range(4)
    ]
    assert [p.wait(timeout=HANG) for p in procs] == [0, 0, 0, 0]
    out = subprocess.run(
        [*optmem_cmd(), "conflicts", "--json"], env=env, check=True, capture_output=True, text=True, timeout=HANG
    )
    assert json.loads(out.stdout)["conflicts"] == []
    # every writer but the first listed what it saw, and every value is reachable from the last
    lines = log_lines(vault)
    seen = {rid for line in lines for rid in line.get("after", [])}
    assert {line["id"] for line in lines} - seen == {lines[-1]["id"]}


def _other_clone(vault_path, text: str, key: str, ts: str, after: list[str]) -> None:
    """A value written on another clone, as git's union merge appends it."""
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        line = {"ts": ts, "domain": "default", "kind": "note", "key": key, "text": text, "after": after}
        fh.write(json.dumps(line) + "\n")


def test_values_replaced_on_their_own_clone_are_in_no_conflict_after_a_sync(cli, vault, vault_path, monkeypatch):
    # tester 10, fix-m 1: db1 → db2 → db3 on one clone, dbX on the other — only db3 and dbX are heads
    quiet(vault_path)
    ids = []
    for day, n in ((1, 1), (2, 2), (3, 3)):
        monkeypatch.setenv("OPTMEM_NOW", f"2026-12-0{day}T10:00:00Z")
        ids.append(cli.json("append", f"db host is db{n}.internal", "--key", "db.host")["id"])
    _other_clone(vault_path, "db host is dbX.internal", "db.host", "2026-12-04T10:00:00Z", [])
    [c] = cli.json("conflicts")["conflicts"]
    assert sorted(v["text"] for v in c["values"]) == ["db host is db3.internal", "db host is dbX.internal"]
    assert values(cli, "db host") == [
        ("db host is db1.internal", "superseded"),
        ("db host is db2.internal", "superseded"),
        ("db host is db3.internal", "current"),
        ("db host is dbX.internal", "current"),
    ]
    old = cli.json("get", ids[0])["record"]
    assert not old.get("conflict") and old["status"] == "superseded"
    assert old["superseded_by"] == ids[2]  # what replaced it on its clone, not the other clone's value
    asked = cli("context").stdout
    assert "db2.internal" not in asked and "db1.internal" not in asked and "(and 1 more" not in asked
    assert "db3.internal" in asked and "dbX.internal" in asked


def test_an_imported_chain_of_values_brings_one_value_into_conflict(cli, vault, vault_path, tmp_path, monkeypatch):
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2026-01-01T10:00:00Z")
    other = tmp_path / "other"
    assert cli("--vault", str(other), "init").exit_code == 0
    for n in range(1, 15):
        monkeypatch.setenv("OPTMEM_NOW", f"2026-01-{n:02}T10:00:00Z")
        assert cli("--vault", str(other), "append", f"queue size is {n}", "--key", "q.size").exit_code == 0
    export = tmp_path / "out.jsonl"
    export.write_text(cli("--vault", str(other), "export").stdout, "utf-8")
    monkeypatch.setenv("OPTMEM_NOW", "2026-01-20T10:00:00Z")
    cli.json("append", "queue size is 99", "--key", "q.size")
    cli.json("import", str(export))
    [c] = cli.json("conflicts")["conflicts"]
    assert sorted(v["text"] for v in c["values"]) == ["queue size is 14", "queue size is 99"]
    statuses = dict(values(cli, "queue size"))
    assert statuses["queue size is 1"] == statuses["queue size is 13"] == "superseded"
    monkeypatch.setenv("OPTMEM_NOW", "2026-09-01T10:00:00Z")  # long unchecked: only the two heads matter
    unchecked = {u["text"] for u in cli.json("doctor")["unchecked"]}
    assert unchecked == {"queue size is 14", "queue size is 99"}


def test_purging_a_middle_value_brings_back_nothing_it_had_replaced(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    ids = []
    for day in (1, 2, 3):
        monkeypatch.setenv("OPTMEM_NOW", f"2026-12-0{day}T10:00:00Z")
        ids.append(cli.json("append", f"cache is cache{day}", "--key", "cache.host")["id"])
    assert cli("purge", "--origin", "user", ids[1], "--yes").exit_code == 0
    assert cli.json("conflicts")["conflicts"] == []
    assert values(cli, "cache") == [("cache is cache1", "superseded"), ("cache is cache3", "current")]
    # the kept value now names what the purged one had been written after
    assert log_lines(vault_path)[-1]["after"] == [ids[0]]
    assert ids[1] not in (vault_path / "LOG.jsonl").read_text("utf-8")


def test_a_value_written_after_a_fast_clock_one_replaces_it(cli, vault, vault_path, monkeypatch):
    # tester 10, fix-m 2: a record that names another in `after` wins whatever the clocks say
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2027-12-01T00:00:00Z")  # a clock a year ahead
    fast = cli.json("append", "api port is 1111", "--key", "api.port")["id"]
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-07T00:00:00Z")
    later = cli.json("append", "api port is 2222", "--key", "api.port")["id"]
    assert log_lines(vault_path)[-1]["after"] == [fast]
    assert cli.json("get", later)["record"]["status"] == "current"
    old = cli.json("get", fast)["record"]
    assert (old["status"], old["superseded_by"]) == ("superseded", later)
    # replaced, its date decides nothing: a note naming what takes it out, not a problem
    report = cli.json("doctor")
    assert not [p for p in report["problems"] if p["code"] == "future_time"]
    [note] = [n for n in report["notes"] if fast in n]
    assert "LOG.jsonl:1" in note and "superseded" in note and "optmem purge" in note


def test_doctor_lists_a_live_future_record_as_a_problem_until_it_is_corrected(cli, vault, vault_path, monkeypatch):
    # review fix-m2 3: every future row was a problem, and `correct` of a replaced one is refused
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2027-12-01T00:00:00Z")
    fast = cli.json("append", "the build cache lives on nas2")["id"]
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-07T00:00:00Z")
    [p] = [p for p in cli.json("doctor", code=1)["problems"] if p["code"] == "future_time"]
    assert p["id"] == fast and "optmem correct ID TEXT" in p["message"] and "current" in p["message"]
    assert cli.json("correct", fast, "the build cache lives on nas3")["corrects"] == fast
    report = cli.json("doctor")  # the advice cleared it
    assert not [p for p in report["problems"] if p["code"] == "future_time"]
    assert any(fast in n and "superseded" in n for n in report["notes"])


def test_an_index_built_before_heads_decided_a_key_is_rebuilt(cli, vault, vault_path, monkeypatch):
    # an index built by a version that let the newer clock win keeps that answer unless its schema says rebuild
    import sqlite3

    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2027-12-01T10:00:00Z")
    fast = cli.json("append", "api port is 1111", "--key", "api.port")["id"]
    monkeypatch.delenv("OPTMEM_NOW")
    new = cli.json("append", "api port is 2222", "--key", "api.port")["id"]
    assert dict(values(cli, "api port"))["api port is 2222"] == "current"
    conn = sqlite3.connect(vault_path / ".cache" / "index.sqlite3")
    with conn:  # what the index of schema 31 held: the fast clock won
        conn.execute("UPDATE rec SET ksup = NULL WHERE id = ?", (fast,))
        conn.execute("UPDATE rec SET ksup = ? WHERE id = ?", (fast, new))
        conn.execute("UPDATE meta SET v = 'optmem-index-31' WHERE k = 'schema'")
    conn.close()
    assert values(cli, "api port") == [("api port is 1111", "superseded"), ("api port is 2222", "current")]


def test_an_inference_is_put_against_what_was_last_said_not_a_fast_clock_value_replaced_since(
    cli, vault, vault_path, monkeypatch
):
    # review fix-m2 7: the statement put against an inference was the newest by clock, one replaced since
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2027-12-01T00:00:00Z")  # a clock a year ahead
    cli.json("append", "the user theme is dark", "--key", "user.theme")
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-07T00:00:00Z")
    cli.json("append", "the user theme is light", "--key", "user.theme")
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-08T00:00:00Z")
    cli.json("append", "the user theme is blue", "--key", "user.theme", "--basis", "inferred")
    [c] = cli.json("conflicts")["conflicts"]
    assert sorted(v["text"] for v in c["values"]) == ["the user theme is blue", "the user theme is light"]


def test_history_lists_a_backdated_value_after_the_values_it_replaced_and_says_so(cli, vault, vault_path, monkeypatch):
    """Tester 14 #7: 7070, written after 8080 and 9090 but dated before both (a clock behind, a
    backdated OPTMEM_NOW), replaces them — its writer saw them — yet `history` ("oldest first")
    listed it first, by its time, with no word why it was current."""
    quiet(vault_path)
    ids = {}
    for when, port in (("2026-12-01", "8080"), ("2026-12-02", "9090"), ("2026-11-29", "7070")):
        monkeypatch.setenv("OPTMEM_NOW", f"{when}T09:00:00Z")
        ids[port] = cli.json("append", f"api port is {port}", "--key", "api.port")["id"]
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-03T09:00:00Z")
    versions = cli.json("history", "--key", "api.port")["versions"]
    assert [v["text"] for v in versions] == ["api port is 8080", "api port is 9090", "api port is 7070"]
    assert [v["status"] for v in versions] == ["superseded", "superseded", "current"]
    assert versions[2]["dated_before"] == [ids["9090"]] and "dated_before" not in versions[1]
    printed = cli("history", "--key", "api.port").stdout
    assert printed.index("api port is 9090") < printed.index("api port is 7070")
    assert f"dated before {ids['9090'][-8:]}, which its writer saw" in printed
