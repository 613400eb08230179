"""The curator (issue 14, item 5): a model command proposes, validation filters, the evaluation
gate decides, and a regressing run is undone by appending inverses."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

MODEL = f"{shlex.quote(sys.executable)} {shlex.quote(str(Path(__file__).parent / 'data' / 'curator_model.py'))}"


def at(monkeypatch, when: str) -> None:
    monkeypatch.setenv("OPTMEM_NOW", when)


def vault_with_a_month(cli, vault_path, monkeypatch) -> dict[str, str]:
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    at(monkeypatch, "2026-04-01T09:00:00Z")
    ids = {
        "rule": cli.json("append", "never deploy on Fridays", "--redline", "--origin", "user")["id"],
        "report": cli.json("append", "the weekly report goes out on Friday 17:00")["id"],
        "f1": cli.json("append", "fragment: the trip is in June")["id"],
        "f2": cli.json("append", "fragment: we fly to Tokyo first")["id"],
        "f3": cli.json("append", "fragment: then Kyoto by train")["id"],
        "old": cli.json("append", "the build uses OLD VALUE flags")["id"],
        "gone": cli.json("append", "an obsolete note about the old office")["id"],
    }
    (vault_path / "queries.jsonl").write_text(
        json.dumps({"query": "weekly report", "expect_text": "Friday 17:00"}) + "\n", "utf-8"
    )
    return ids


@pytest.mark.long
def test_a_run_is_a_dry_run_until_applied_and_every_operation_is_checked(cli, vault, vault_path, monkeypatch):
    ids = vault_with_a_month(cli, vault_path, monkeypatch)
    before = (vault_path / "LOG.jsonl").read_bytes()
    plan = cli.json("curate", "--command", MODEL)
    assert plan["applied"] is False and plan["records"] == 7
    assert (vault_path / "LOG.jsonl").read_bytes() == before  # a dry run writes nothing
    by_op = {(op["op"], op.get("id") or tuple(op.get("ids") or ())): op for op in plan["plan"]}
    assert by_op[("merge", (ids["f1"], ids["f2"], ids["f3"]))]["valid"] is True
    assert by_op[("update", ids["old"])]["valid"] and by_op[("delete", ids["gone"])]["valid"]
    assert by_op[("no-change", ids["report"])]["valid"]
    assert by_op[("no-change", ids["rule"])]["valid"]  # saying nothing about a redline is fine
    assert by_op[("delete", "NOT-AN-ID")]["valid"] is False
    assert "not a record of this batch" in by_op[("delete", "NOT-AN-ID")]["reason"]


@pytest.mark.long
def test_applied_a_run_merges_updates_forgets_and_says_no_change(cli, vault, vault_path, monkeypatch):
    ids = vault_with_a_month(cli, vault_path, monkeypatch)
    at(monkeypatch, "2026-04-02T09:00:00Z")
    run = cli.json("curate", "--command", MODEL, "--apply")
    assert run["applied"] is True and run["undone"] is False and len(run["written"]) == 3
    assert run["eval_before"]["recall"] == run["eval_after"]["recall"] == 1.0
    assert {cli.json("get", ids[f])["record"]["status"] for f in ("f1", "f2", "f3")} == {"superseded"}
    assert cli.json("search", "Kyoto", "--current")["hits"][0]["kind"] == "merged"
    assert cli.json("search", "build flags", "--current")["hits"][0]["text"].endswith("NEW VALUE flags")
    got = cli.json("get", ids["gone"])["record"]
    assert got["status"] == "forgotten" and got["forget_reason"] == "curator: obsolete"
    lines = [json.loads(x) for x in (vault_path / "LOG.jsonl").read_text("utf-8").splitlines()]
    [curation] = [r for r in lines if r.get("kind") == "curation"]
    assert curation["id"] == run["record"] and curation["command"] == f"{Path(sys.executable).name} curator_model.py"
    assert curation["eval_before"]["recall"] == 1.0 and curation["undone"] is False
    # the next run sees only what came after this one
    assert cli.json("curate", "--command", MODEL)["records"] == 0


@pytest.mark.long
def test_a_run_that_regresses_the_gate_is_undone_by_appending_inverses(cli, vault, vault_path, monkeypatch):
    ids = vault_with_a_month(cli, vault_path, monkeypatch)
    at(monkeypatch, "2026-04-02T09:00:00Z")
    size = (vault_path / "LOG.jsonl").stat().st_size
    run = cli.json("curate", "--command", f"{MODEL} regress", "--apply")
    assert run["applied"] is False and run["undone"] is True
    assert any(r["metric"] == "recall" for r in run["regressions"])
    log = (vault_path / "LOG.jsonl").read_bytes()
    assert len(log) > size  # undone by appending, never by rewriting
    assert cli.json("get", ids["report"])["record"]["status"] == "current"  # restored
    assert cli.json("get", ids["gone"])["record"]["status"] == "current"
    assert {cli.json("get", ids[f])["record"]["status"] for f in ("f1", "f2", "f3")} == {"current"}
    assert cli.json("get", ids["old"])["record"]["status"] == "current"
    lines = [json.loads(x) for x in log.decode("utf-8").splitlines()]
    [curation] = [r for r in lines if r.get("kind") == "curation"]
    assert curation["undone"] is True and "undone (the gate regressed)" in curation["text"]


@pytest.mark.long
def test_the_command_is_the_users_never_the_vaults_and_bad_output_writes_nothing(cli, vault, vault_path, monkeypatch):
    vault_with_a_month(cli, vault_path, monkeypatch)
    with open(vault_path / "optmem.toml", "a", encoding="utf-8") as fh:
        fh.write(f'[curator]\ncommand = "{MODEL}"\n')  # a vault that arrived through git
    out = cli("curate", "--json")
    assert out.exit_code == 2 and "no curator command" in out.stdout
    assert "curator.command was ignored" in out.stderr
    before = (vault_path / "LOG.jsonl").read_bytes()
    err = cli.json("curate", "--command", f"{MODEL} junk", "--apply", code=1)["error"]
    assert err["code"] == "curation_failed" and "did not print JSON" in err["message"]
    assert (vault_path / "LOG.jsonl").read_bytes() == before
    monkeypatch.setenv("OPTMEM_CURATOR", MODEL)
    assert cli.json("curate")["records"] == 7  # the user's environment names it


@pytest.mark.long
def test_hostile_model_output_is_contained(cli, vault, vault_path, monkeypatch, tmp_path):
    ids = vault_with_a_month(cli, vault_path, monkeypatch)
    fake = tmp_path / "fake.py"
    fake.write_text(
        "import json, sys\n"
        "mode = sys.argv[1]\n"
        "if mode == 'bytes':\n"
        "    sys.stdout.buffer.write(b'\\xff\\xfe{}'); sys.exit(0)\n"
        "if mode == 'nan':\n"
        '    print(\'{"operations": [{"op": "no-change", "n": NaN}]}\'); sys.exit(0)\n'
        "if mode == 'deep':\n"
        "    print('{\"operations\": ' + '[' * 100000 + ']' * 100000 + '}'); sys.exit(0)\n"
        f"ids = {json.dumps(ids)}\n"
        "if mode == 'surrogate':\n"
        '    print(\'{"operations": [{"op": "update", "id": "\' + ids[\'old\'] + \'", "text": "a\\\\ud800b"}]}\')\n'
        "    sys.exit(0)\n"
        "secret = 'ghp_' + 'a' * 36\n"
        "print(json.dumps({'operations': [\n"
        "    {'op': 'delete', 'id': ids['gone'], 'reason': 'obsolete'},\n"
        "    {'op': 'update', 'id': ids['gone'], 'text': 'brought back'},\n"
        "    {'op': 'update', 'id': ids['old'], 'text': 'token ' + secret},\n"
        "    {'op': 'no-change', 'id': ids['report'], 'note': secret}, 7]}))\n",
        "utf-8",
    )
    model = f"{shlex.quote(sys.executable)} {shlex.quote(str(fake))}"
    before = (vault_path / "LOG.jsonl").read_bytes()
    for mode, words in (
        ("bytes", "not UTF-8"),
        ("nan", "not a JSON number"),
        ("deep", "nested too deeply"),
        ("surrogate", "lone surrogate"),
    ):
        err = cli.json("curate", "--command", f"{model} {mode}", "--apply", code=1)["error"]
        assert err["code"] == "curation_failed" and words in err["message"]
    assert (vault_path / "LOG.jsonl").read_bytes() == before
    plan = {(op.get("op"), op.get("id")): op for op in cli.json("curate", "--command", f"{model} x")["plan"]}
    assert plan[("update", ids["gone"])]["valid"] is False  # the plan already deleted it
    assert "already acts on" in plan[("update", ids["gone"])]["reason"]
    run = cli.json("curate", "--command", f"{model} x", "--apply")
    assert run["applied"] and cli.json("get", ids["gone"])["record"]["status"] == "forgotten"
    log = (vault_path / "LOG.jsonl").read_text("utf-8")
    assert "ghp_" not in log  # the model's free text never reaches the log unchecked
    curation = json.loads(log.splitlines()[-1])
    assert curation["kind"] == "curation" and curation["command"] == f"{Path(sys.executable).name} fake.py"


@pytest.mark.long
def test_apply_needs_a_query_set_and_an_undone_batch_comes_back(cli, vault, vault_path, monkeypatch):
    vault_with_a_month(cli, vault_path, monkeypatch)
    (vault_path / "queries.jsonl").rename(vault_path / "q.jsonl")
    before = (vault_path / "LOG.jsonl").read_bytes()
    err = cli.json("curate", "--command", MODEL, "--apply", code=2)["error"]
    assert "needs the evaluation gate's query set" in err["message"]
    assert (vault_path / "LOG.jsonl").read_bytes() == before
    (vault_path / "q.jsonl").rename(vault_path / "queries.jsonl")
    at(monkeypatch, "2026-04-02T09:00:00Z")
    assert cli.json("curate", "--command", f"{MODEL} regress", "--apply")["undone"] is True
    assert cli.json("curate", "--command", MODEL)["records"] == 7  # the undone batch is offered again


@pytest.mark.long
def test_a_command_that_times_out_is_stopped_with_everything_it_started(tmp_path):
    """A command that never ends is stopped at its timeout, with what it started. How far the
    shell got by then depends on the machine's speed: each case is run with a timeout doubled
    until the shell had started what is checked (every run is stopped all the same)."""
    import os

    from conftest import HANG, wait_until

    from optmem.runner import run_command

    def stopped_after(cmd: str, started: Path) -> float:
        timeout = 0.5
        while True:
            ran = run_command(cmd, "", timeout=timeout)
            assert not ran.ok and ran.error == f"timed out after {timeout:g}s"
            if started.exists() and started.read_text().strip():
                return timeout
            timeout *= 2
            assert timeout < HANG, f"{cmd} never got going"

    def gone(pid: int) -> bool:
        try:
            os.kill(pid, 0)  # the kill is delivered at once; reaping may take a moment
        except ProcessLookupError:
            return True
        return False

    pidfile = tmp_path / "child.pid"
    # a background grandchild that would outlive /bin/sh and hold the output pipe open
    stopped_after(f"sleep 60 & echo $! > {shlex.quote(str(pidfile))}; wait", pidfile)
    child = int(pidfile.read_text())
    wait_until(lambda: gone(child), f"the command's child {child} still running")
    assert run_command("echo fine", "", timeout=HANG).output == "fine\n"
    # a child that left the group and holds the pipe does not keep the wait going past the kill
    escaped, forked = tmp_path / "escaped.pid", tmp_path / "forked"
    stopped_after(
        f"setsid sh -c 'echo $$ > {shlex.quote(str(escaped))}; exec sleep 30' & "
        f"echo yes > {shlex.quote(str(forked))}; sleep 30",
        forked,
    )
    wait_until(lambda: escaped.exists() and escaped.read_text().strip(), "the escaped child's pid")
    os.kill(int(escaped.read_text()), 9)  # it left the group on purpose: the test cleans up after it
    # only stdout must be UTF-8: a stray byte on stderr does not fail a good answer
    assert run_command("printf good; printf '\\377' >&2", "", timeout=HANG).output == "good\n"


@pytest.mark.long
def test_the_query_set_a_vault_names_stays_inside_the_vault(cli, vault, vault_path, monkeypatch, tmp_path):
    """A vault's optmem.toml arrives through git: its `[curator] queries` cannot make curate
    read a file elsewhere — an absolute path, a path up and out, or a link out are refused."""
    vault_with_a_month(cli, vault_path, monkeypatch)
    secret = tmp_path / "elsewhere.jsonl"
    secret.write_text(json.dumps({"query": "private-token-5521", "expect_text": "x"}) + "\n", "utf-8")
    (vault_path / "queries-link.jsonl").symlink_to(secret)
    before = (vault_path / "LOG.jsonl").read_bytes()
    for value, code, words in (
        (str(secret), 2, "inside the vault"),
        (f"../{secret.name}", 2, "inside the vault"),
        ("queries-link.jsonl", 3, "leads outside the vault"),
    ):
        (vault_path / "optmem.toml").write_text(f'[lifecycle]\nauto_sweep = "off"\n[curator]\nqueries = "{value}"\n')
        res = cli("curate", "--command", MODEL, "--apply", "--json")
        assert res.exit_code == code, (value, res.stdout)
        assert words in json.loads(res.stdout)["error"]["message"] and "private-token" not in res.stdout + res.stderr
    assert (vault_path / "LOG.jsonl").read_bytes() == before
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n[curator]\nqueries = "queries.jsonl"\n')
    assert cli.json("curate", "--command", MODEL, "--apply")["applied"] is True  # inside: read as before
