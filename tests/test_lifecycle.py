"""The lifecycle (issue 13): importance, heat, touch, the cold tier, pending memories."""

from __future__ import annotations

import json
import math
import subprocess
from datetime import UTC, datetime

import pytest
from conftest import HANG, PATIENT_TOML, log_lines, optmem_cmd, run_optmem, wait_until

from optmem import lifecycle, view
from optmem.record import Tier
from optmem.schema import Row
from optmem.settings import Lifecycle

DAY = 86400.0
S = Lifecycle()


def at(monkeypatch, when: str) -> None:
    monkeypatch.setenv("OPTMEM_NOW", when)


def epoch(when: str) -> float:
    return datetime.fromisoformat(when.replace("Z", "+00:00")).astimezone(UTC).timestamp()


def row(**kw) -> Row:
    base = dict(
        n=1,
        id="A" * 26,
        rid="A" * 26,
        off=0,
        len=1,
        ts=0.0,
        domain="default",
        project=None,
        kind="note",
        tier=int(Tier.NORMAL),
        key=None,
        fp=None,
        expires=None,
        ref=None,
        corrects=None,
        session=None,
        spos=None,
    )
    return Row(**{**base, **kw})


def access(vault_path) -> list[dict]:
    path = vault_path / "ACCESS.jsonl"
    return [json.loads(x) for x in path.read_text("utf-8").splitlines()] if path.exists() else []


# -- policy, as pure functions -------------------------------------------------------------------
def test_heat_is_importance_decaying_from_the_last_access():
    assert lifecycle.heat(0.5, 0.02, 0.0, 0.0) == 0.5
    assert lifecycle.heat(0.5, 0.02, 0.0, 100 * DAY) == pytest.approx(0.5 * math.exp(-2))
    assert lifecycle.heat(0.5, 0.02, 50 * DAY, 100 * DAY) == pytest.approx(0.5 * math.exp(-1))  # touched at day 50
    assert lifecycle.decay_rate(S, "handoff", Tier.NORMAL) == S.decay_session  # session notes cool faster
    assert lifecycle.decay_rate(S, "note", Tier.CHAT) == S.decay_session
    assert lifecycle.decay_rate(S, "decision", Tier.NORMAL) == S.decay
    assert lifecycle.importance(S, "note", Tier.REDLINE, 0.1) == 1.0  # redlines are always maximal
    assert lifecycle.importance(S, "correction", Tier.NORMAL, None) == S.importance_correction
    assert lifecycle.importance(S, "note", Tier.NORMAL, 0.9) == 0.9


def test_what_a_sweep_cools_and_what_it_never_does():
    now = 400 * DAY
    old = row(ts=0.0)
    assert lifecycle.cools(S, old, now) == "heat"
    assert lifecycle.cools(S, old._replace(touched=390 * DAY), now) is None  # recalled lately
    assert lifecycle.cools(S, old._replace(seen=390 * DAY), now) is None  # said again lately
    assert lifecycle.cools(S, old._replace(tier=int(Tier.REDLINE)), now) is None  # redlines never cool
    assert lifecycle.cools(S, old._replace(kind="memory"), now) is None  # its file decides
    assert lifecycle.cools(S, old._replace(forgotten=1), now) is None
    fresh_guess = row(ts=now - 31 * DAY, pending=1, imp=1.0)
    assert lifecycle.cools(S, fresh_guess, now) == "pending_ttl"
    assert lifecycle.cools(S, fresh_guess._replace(confirmed=1), now) is None
    expired = row(ts=now - 40 * DAY, imp=1.0, expires=now - 31 * DAY)
    assert lifecycle.cools(S, expired, now) == "expired"
    assert lifecycle.cools(S, expired._replace(expires=now - 5 * DAY), now) is None  # within the grace


def test_cold_ends_when_the_record_is_accessed_after_the_sweep():
    cooled = row(ts=0.0, cold=100 * DAY)
    assert view.status(cooled, 200 * DAY) == view.Status.COLD
    assert view.status(cooled._replace(touched=150 * DAY), 200 * DAY) == view.Status.CURRENT
    assert view.status(cooled._replace(seen=150 * DAY), 200 * DAY) == view.Status.CURRENT
    assert view.status(cooled._replace(sup="B" * 26), 200 * DAY) == view.Status.COLD  # cold first
    assert view.status(cooled._replace(sup="B" * 26), 200 * DAY, warm=True) == view.Status.SUPERSEDED
    assert view.status(row(pending=1), 0.0) == view.Status.PENDING
    assert view.status(row(pending=1, confirmed=1), 0.0) == view.Status.CURRENT


def test_status_sql_agrees_with_status_for_the_new_statuses(vault):
    """The SQL twin of the cold and pending rules, checked on a real index."""
    from optmem.index import open_index

    rows = [
        row(n=i + 1, id=f"{i:026d}", rid=f"{i:026d}"[::-1], ts=t, cold=c, touched=tt, pending=p, confirmed=cf, sup=sp)
        for i, (t, c, tt, p, cf, sp) in enumerate(
            [
                (0.0, 10.0, None, 0, 0, None),
                (0.0, 10.0, 20.0, 0, 0, None),
                (30.0, 10.0, None, 0, 0, None),
                (0.0, None, None, 1, 0, None),
                (0.0, None, None, 1, 1, None),
                (0.0, 10.0, None, 1, 0, "X"),
                (0.0, 10.0, 10.0, 0, 0, None),
            ]
        )
    ]
    with open_index(vault) as idx:
        from optmem.schema import INSERT_ROW

        idx.conn.executemany(INSERT_ROW, [list(r) for r in rows])
        case, params = view.status_sql(100.0)
        got = dict(idx.conn.execute(f"SELECT r.n, {case} FROM rec r", params))
    assert [got[r.n] for r in rows] == [view.status(r, 100.0).value for r in rows]
    # the last: recalled in the sweep's own second — after it, so warm
    assert [got[r.n] for r in rows] == ["cold", "current", "current", "pending", "current", "cold", "current"]


# -- pending memories ------------------------------------------------------------------------------
@pytest.mark.long
def test_a_guess_waits_until_said_again_in_another_conversation(cli, vault, vault_path, monkeypatch):
    at(monkeypatch, "2026-03-01T00:00:00Z")
    guess = cli.json("append", "The user prefers tabs over spaces", "--confidence", "0.4", "--session", "chat-1")
    assert guess["record"]["status"] == "pending" and guess["record"]["pending"] is True
    gid = guess["id"]
    cli.json("append", "Tabs are used in the Makefile", "--session", "chat-1")
    hits = cli.json("search", "tabs")["hits"]
    assert [h["status"] for h in hits] == ["current", "pending"]  # ranked below current records
    assert "[PENDING]" in cli("search", "tabs").stdout
    assert "prefers tabs" not in cli.json("context")["text"]  # kept out of context
    # the same agent repeating its guess in the same conversation is not a second voice
    same = cli.json("append", "the user prefers tabs over spaces", "--confidence", "0.4", "--session", "chat-1")
    assert same["status"] == "duplicate" and same["confirmed"] == []
    assert cli.json("get", gid)["record"]["status"] == "pending"
    queue = cli.json("pending")["pending"]
    assert [(w["id"], w["restated"]) for w in queue] == [(gid, 0)]  # its own conversation: not counted
    # said again elsewhere — another domain, another conversation: confirmed
    at(monkeypatch, "2026-03-02T00:00:00Z")
    again = cli("append", "User prefers tabs over spaces!", "--domain", "hermes", "--session", "chat-2", "--json")
    assert json.loads(again.stdout)["status"] == "stored"  # a record of its own in its domain
    assert json.loads(again.stdout)["confirmed"] == [gid] and f"confirmed: {gid[-8:]}" in again.stderr
    assert cli.json("get", gid)["record"]["status"] == "current"
    assert cli.json("pending")["pending"] == []
    assert "prefers tabs" in cli.json("context")["text"]


@pytest.mark.long
def test_a_pending_guess_is_corrected_by_its_words(cli, vault, monkeypatch):
    # an agent's append waits as pending; its next correction names the guess by words, as it
    # would any record — "no current record matches" sent it looking for an id
    at(monkeypatch, "2026-03-01T00:00:00Z")
    guess = cli.json("append", "The staging DB is on port 5433", "--agent")["id"]
    cli.json("append", "The production DB is on port 5432")
    fix = cli.json("correct", "staging DB", "The staging DB moved to port 5434")
    assert fix["corrects"] == guess and cli.json("get", guess)["record"]["status"] == "superseded"
    err = cli.json("correct", "billing cron", "It runs at noon", code=1)["error"]
    assert err["code"] == "not_found" and "current or pending" in err["message"]
    # --domain (and -p) narrow a query TARGET: the long runbook in code, not a guess in scratch;
    # a pending guess corrected is said so
    runbook = cli.json(
        "append",
        "Runbook for the webapp release: build, tag, push, then deploy; the whole "
        "deploy script has a timeout of 60 seconds before it rolls back",
        "--domain",
        "code",
    )["id"]
    scratch = cli.json("append", "deploy script timeout maybe 30s", "--domain", "scratch", "--agent")["id"]
    fixed = cli.json("correct", "deploy script timeout", "The deploy script timeout is 90 seconds", "--domain", "code")
    assert fixed["corrects"] == runbook and cli.json("get", scratch)["record"]["status"] == "pending"
    res = cli("correct", "timeout maybe 30s", "It is 45 seconds")
    assert res.exit_code == 0 and "pending guess" in res.stderr and scratch[-8:] in res.stderr


def test_confirm_and_reject(cli, vault, vault_path, monkeypatch):
    at(monkeypatch, "2026-03-01T00:00:00Z")
    a = cli.json("append", "Staging runs on port 8443", "--confidence", "0.3")["id"]
    b = cli.json("append", "The CI runner is named ci-7", "--agent")["id"]  # the agents' default confidence
    plain = cli.json("append", "The repo uses pnpm")["id"]
    assert [w["id"] for w in cli.json("pending")["pending"]] == [a, b]  # oldest first
    assert cli.json("confirm", a)["status"] == "confirmed"
    assert cli.json("get", a)["record"]["status"] == "current"
    assert cli.json("confirm", a)["status"] == "already_confirmed"  # idempotent
    rejected = cli.json("reject", b, "--reason", "the user never said that")
    assert rejected["status"] == "rejected"
    got = cli.json("get", b)["record"]
    assert got["status"] == "forgotten" and got["forget_reason"] == "rejected: the user never said that"
    again = cli.json("reject", b, "--reason", "a second reason")
    assert again["status"] == "already_rejected" and again["tombstone"] is None
    assert cli.json("get", b)["record"]["forget_reason"] == "rejected: the user never said that"
    gone = cli.json("confirm", b, code=1)["error"]  # rejected above: confirming it is refused
    assert gone["code"] == "forgotten" and "append it again" in gone["message"]
    err = cli.json("reject", plain, code=1)["error"]  # well-formed, refused: exit 1
    assert err["code"] == "not_pending" and "not pending" in err["message"] and "optmem forget" in err["message"]
    assert any(r.get("kind") == "confirm" and r["ref"] == a for r in log_lines(vault_path))


@pytest.mark.parametrize(
    "args,word",
    [
        (["--confidence", "1.5"], "confidence"),
        (["--importance", "-0.1"], "importance"),
        (["--importance", "nan"], "importance"),
    ],
)
def test_out_of_range_lifecycle_values_are_refused_and_store_nothing(cli, vault, vault_path, args, word):
    before = (vault_path / "LOG.jsonl").read_bytes() if (vault_path / "LOG.jsonl").exists() else b""
    err = cli.json("append", "anything", *args, code=2)["error"]
    assert err["code"] == "usage" and f"--{word} must be a number from 0 to 1" in err["message"]
    after = (vault_path / "LOG.jsonl").read_bytes() if (vault_path / "LOG.jsonl").exists() else b""
    assert after == before


def test_a_redline_cannot_be_a_guess(cli, vault):
    err = cli.json("append", "never push to main", "--redline", "--confidence", "0.2", code=2)["error"]
    assert "a redline is a rule a person sets" in err["message"]


def test_lifecycle_settings_are_typed_and_bounded(cli, vault, vault_path):
    (vault_path / "optmem.toml").write_text("[lifecycle]\npending_threshold = 2\n", "utf-8")
    err = cli.json("stats", code=2)["error"]
    assert err["key"] == "lifecycle.pending_threshold" and "at most 1" in err["message"]
    # a similarity above 1 would turn the near-duplicate check off without a word
    (vault_path / "optmem.toml").write_text("", "utf-8")
    err = cli.json("--set", "dedup.threshold=5", "add", "小明非常喜欢喝咖啡！", code=2)["error"]
    assert "dedup.threshold" in err["message"] and "at most 1" in err["message"]


# -- the cold tier ---------------------------------------------------------------------------------
@pytest.mark.long
def test_sweep_cools_the_unused_and_nothing_is_lost(cli, vault, vault_path, monkeypatch):
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    at(monkeypatch, "2026-01-01T00:00:00Z")
    old = cli.json("append", "The staging database is on host quokka")["id"]
    rule = cli.json("append", "Never force-push to main", "--redline", "--origin", "user")["id"]
    keep = cli.json("append", "The staging cache is redis-stage", "--importance", "1")["id"]
    at(monkeypatch, "2026-05-01T00:00:00Z")  # 120 days: 0.5·e^(−2.4) ≈ 0.045 < 0.05 ≤ 1·e^(−2.4)
    log_before = (vault_path / "LOG.jsonl").read_bytes()
    dry = cli.json("sweep", "--dry-run")
    assert dry["cooled"] == 1 and [r["id"] for r in dry["records"]] == [old] and dry["by_reason"] == {"heat": 1}
    assert not (vault_path / "ACCESS.jsonl").exists()  # a dry run writes nothing
    done = cli.json("sweep")
    assert done["cooled"] == 1 and not done["dry_run"]
    assert cli.json("sweep")["cooled"] == 0  # idempotent
    assert (vault_path / "LOG.jsonl").read_bytes() == log_before  # the log is never touched
    assert [h["id"] for h in cli.json("search", "staging")["hits"]] == [keep]
    assert cli.json("search", "staging")["cold_matches"] == 1
    assert "(1 cold: add --include-cold)" in cli("search", "staging").stdout
    # nothing warm matches "quokka" ("database" would: the lexicon reads Redis as a database's
    # value): the cold record is the answer, labelled
    assert [(h["id"], h["status"]) for h in cli.json("search", "quokka")["hits"]] == [(old, "cold")]
    found = cli.json("search", "staging", "--include-cold")["hits"]
    assert {h["id"]: h["status"] for h in found} == {keep: "current", old: "cold"}
    assert next(h for h in found if h["id"] == old)["cold_since"] == "2026-05-01T00:00:00Z"
    got = cli.json("get", old)["record"]
    assert got["status"] == "cold" and got["cold_since"] == "2026-05-01T00:00:00Z"
    assert "COLD since 2026-05-01T00:00:00Z" in cli("get", old).stdout
    assert cli.json("get", rule)["record"]["status"] == "current"  # redlines never cool
    assert "quokka" not in cli.json("context")["text"]
    # recalled again: warm again
    at(monkeypatch, "2026-05-02T00:00:00Z")
    assert cli.json("touch", old[-8:])["warmed"] == [old]
    assert cli.json("get", old)["record"]["status"] == "current"
    assert old in [h["id"] for h in cli.json("search", "staging")["hits"]]


def test_said_again_warms_a_cold_record_instead_of_storing_a_copy(cli, vault, vault_path, monkeypatch):
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    at(monkeypatch, "2026-01-01T00:00:00Z")
    rid = cli.json("append", "The on-call rota lives in the wiki")["id"]
    at(monkeypatch, "2026-06-01T00:00:00Z")
    cli.json("sweep")
    assert cli.json("get", rid)["record"]["status"] == "cold"
    again = cli.json("append", "The on-call rota lives in the wiki")
    assert again["status"] == "duplicate" and again["id"] == rid
    assert cli.json("get", rid)["record"]["status"] == "current"


@pytest.mark.long
def test_expired_and_unconfirmed_records_cool_after_their_grace(cli, vault, vault_path, monkeypatch):
    at(monkeypatch, "2026-01-01T00:00:00Z")
    temp = cli.json("append", "Deploy freeze this week", "--ttl", "7d", "--importance", "1")["id"]
    guess = cli.json("append", "The user may be moving to Berlin", "--confidence", "0.3", "--importance", "1")["id"]
    at(monkeypatch, "2026-01-20T00:00:00Z")
    assert cli.json("sweep")["cooled"] == 0  # expired 12 days ago; pending 19 days: within grace
    at(monkeypatch, "2026-02-15T00:00:00Z")
    report = cli.json("doctor", code=1)
    assert [(p["code"], p["id"]) for p in report["problems"]] == [("stale_pending", guess)]
    said = report["problems"][0]["message"]  # (a sweep ran, before it went stale: "never swept" was wrong)
    assert "not cooled by a sweep yet (last sweep: 2026-01-20T00:00:00Z)" in said and "never" not in said
    lines = (vault_path / "LOG.jsonl").read_text("utf-8").splitlines()
    assert guess in lines[report["problems"][0]["line"] - 1]  # its line in the file, as every problem's
    fixed = cli.json("doctor", "--fix")
    assert fixed["ok"] is True and any("swept" in f for f in fixed["fixed"])
    assert cli.json("get", temp)["record"]["status"] == "cold"
    assert cli.json("get", guess)["record"]["status"] == "cold"
    assert cli.json("pending")["pending"] == []
    assert [w["id"] for w in cli.json("pending", "--include-cold")["pending"]] == [guess]


def test_doctor_fix_does_not_sweep_by_settings_it_could_not_read(cli, vault, vault_path, monkeypatch):
    # the user keeps guesses for a year; a typo in the file must not make --fix cool them by the
    # built-in 30 days
    settings = '[lifecycle]\nauto_sweep = "off"\npending_ttl_days = 365\n'
    (vault_path / "optmem.toml").write_text(settings, "utf-8")
    at(monkeypatch, "2026-04-01T10:00:00Z")
    guess = cli.json("append", "maybe the user likes jazz", "--agent", "--confidence", "0.3")["id"]
    at(monkeypatch, "2026-06-05T10:00:00Z")
    (vault_path / "optmem.toml").write_text(settings + "[oops\n", "utf-8")
    fixed = cli.json("doctor", "--fix", code=1)
    assert not any("swept" in f for f in fixed["fixed"]) and any("no sweep was run" in n for n in fixed["notes"])
    (vault_path / "optmem.toml").write_text(settings, "utf-8")
    assert cli.json("get", guess)["record"]["status"] == "pending"


def test_a_write_sweeps_at_most_once_a_day_unless_turned_off(cli, vault, vault_path, monkeypatch):
    at(monkeypatch, "2026-01-01T00:00:00Z")
    old = cli.json("append", "The old build server was jenkins-1")["id"]
    at(monkeypatch, "2026-06-01T09:00:00Z")
    cli.json("append", "The build server is buildkite")
    assert cli.json("get", old)["record"]["status"] == "cold"  # the first write of the day swept
    sweeps = [a for a in access(vault_path) if "sweep" in a]
    at(monkeypatch, "2026-06-01T18:00:00Z")
    cli.json("append", "Lunch is at noon")
    assert [a for a in access(vault_path) if "sweep" in a] == sweeps  # not twice a day
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    at(monkeypatch, "2026-12-01T00:00:00Z")
    cli.json("append", "Another day")
    assert [a for a in access(vault_path) if "sweep" in a] == sweeps


@pytest.mark.long
def test_in_a_big_vault_the_daily_sweep_runs_detached_and_only_once(vault, vault_path):
    # three writers and a sweep take turns at the vault's locks: a turn may come late on a busy machine
    (vault_path / "optmem.toml").write_text("[lifecycle]\nbackground_above = 3\n" + PATIENT_TOML, "utf-8")
    env = {"OPTMEM_NOW": "2026-01-01T00:00:00Z"}
    for i in range(4):
        assert run_optmem("append", f"old fact {i} about the deploy", env=env).returncode == 0
    first = [a for a in access(vault_path) if "sweep" in a]
    assert len(first) == 1  # the first write of the day, with 1 record: in process
    later = {"OPTMEM_NOW": "2026-06-01T00:00:00Z"}
    procs = [
        subprocess.Popen([*optmem_cmd(), "append", f"new fact {i}"], env={**__import__("os").environ, **later})
        for i in range(3)
    ]  # three writes at once, each finding the sweep due
    assert all(p.wait(timeout=HANG) == 0 for p in procs)
    # the detached sweep finishes on its own; the others find it done
    wait_until(lambda: len([a for a in access(vault_path) if "sweep" in a]) >= 2, "the detached sweep")
    # a sweep started after it (cron, or one of those writes) finds it done and writes nothing
    assert json.loads(run_optmem("sweep", "--if-due", "--json", env=later).stdout)["ran"] is False
    sweeps = [a for a in access(vault_path) if "sweep" in a]
    assert len(sweeps) == 2 and sweeps[1]["sweep"]["cooled"] == 4
    oldest = log_lines(vault_path)[0]["id"]
    assert json.loads(run_optmem("get", oldest, "--json", env=later).stdout)["record"]["status"] == "cold"


def test_cold_marks_survive_a_rebuild_and_leave_with_their_file(cli, vault, vault_path, monkeypatch):
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    at(monkeypatch, "2026-01-01T00:00:00Z")
    rid = cli.json("append", "The VPN endpoint is vpn.example.org")["id"]
    at(monkeypatch, "2026-07-01T00:00:00Z")
    cli.json("sweep")
    cli.json("reindex")
    assert cli.json("get", rid)["record"]["status"] == "cold"  # derived from ACCESS.jsonl again
    (vault_path / "ACCESS.jsonl").unlink()  # e.g. a person deleting it, or a checkout without it
    assert cli.json("get", rid)["record"]["status"] == "current"
    (vault_path / "ACCESS.jsonl").write_text(
        json.dumps({"v": 1, "ts": "2026-07-01T00:00:00Z", "cold": [rid]}) + "\n", "utf-8"
    )
    assert cli.json("get", rid)["record"]["status"] == "cold"  # a hand-written mark counts too


@pytest.mark.long
def test_touches_from_many_processes_at_once_all_land_without_the_log_lock(cli, vault, vault_path, monkeypatch):
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    ids = [cli.json("append", f"fact number {i} about the deploy")["id"] for i in range(8)]
    log_before = (vault_path / "LOG.jsonl").read_bytes()
    procs = [
        subprocess.Popen([*optmem_cmd(), "touch", rid, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for rid in ids
    ]
    procs += [
        subprocess.Popen(
            [*optmem_cmd(), "search", "deploy", "--touch", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(4)
    ]
    assert all(p.wait(timeout=HANG) == 0 for p in procs)
    lines = access(vault_path)
    assert len(lines) == 12 and sum(1 for a in lines if a.get("via") == "search") == 4
    assert {i for a in lines for i in a["touch"]} == set(ids)
    assert (vault_path / "LOG.jsonl").read_bytes() == log_before  # no line in the log per recall
    assert run_optmem("doctor", "--json").returncode == 0


@pytest.mark.long
def test_context_prefers_important_and_recalled_records_and_touches_what_it_shows(cli, vault, vault_path, monkeypatch):
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    at(monkeypatch, "2026-01-01T00:00:00Z")
    key = cli.json("append", "The release checklist is in docs/release.md", "--importance", "1")["id"]
    for i in range(30):
        cli.json("append", f"Routine note {i}: the nightly job ran", "--importance", "0.1")
    at(monkeypatch, "2026-01-10T00:00:00Z")
    out = cli.json("context", "--budget", "600")
    assert "docs/release.md" in out["text"]  # the warmest first, though 30 records are newer
    touched = [a for a in access(vault_path) if a.get("via") == "context"]
    assert touched and key in touched[-1]["touch"]


def test_importance_reorders_near_equals_and_explain_names_the_heat(cli, vault, vault_path, monkeypatch):
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    at(monkeypatch, "2026-01-01T00:00:00Z")
    low = cli.json("append", "The metrics dashboard is grafana", "--importance", "0.1")["id"]
    high = cli.json("append", "The metrics dashboard is grafana.internal", "--importance", "1")["id"]
    hits = cli.json("search", "metrics dashboard", "--explain")["hits"]
    assert [h["id"] for h in hits] == [high, low]
    ex = {h["id"]: h["explain"] for h in hits}
    assert ex[high]["relative_importance"] == 2.0 and ex[low]["relative_importance"] == 0.2
    assert ex[high]["heat_factor"] > ex[low]["heat_factor"] > 1.0
    assert "heat×" in cli("search", "metrics dashboard", "--explain").stdout


def test_stats_show_the_lifecycle(cli, vault, vault_path, monkeypatch):
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    at(monkeypatch, "2026-01-01T00:00:00Z")
    cli.json("append", "an old note nobody reads")
    at(monkeypatch, "2026-08-01T00:00:00Z")
    cli.json("sweep")
    cli.json("append", "a fresh fact", "--importance", "0.9")
    cli.json("append", "a guess", "--confidence", "0.2")
    s = cli.json("stats")
    assert s["status"]["cold"] == 1 and s["status"]["pending"] == 1 and s["status"]["current"] == 1
    life = s["lifecycle"]
    assert life["active"] == 1 and life["active_share"] == pytest.approx(1 / 3, abs=1e-3)
    assert life["heat"][">=0.5"] == 2 and life["pending_by_age"]["<1d"] == 1
    assert life["importance"] == {"mean": 0.7, "given": 1}  # 0.9 given, 0.5 by default
    assert life["last_sweep"] == "2026-08-01T00:00:00Z"
    assert s["sizes"]["access"] == (vault_path / "ACCESS.jsonl").stat().st_size
    assert "active set: 1 (33.3% of the log)" in cli("stats").stdout
    # the heat bands count the current and pending records that can go cold, and say so
    assert life["heat_of"] == sum(life["heat"].values()) == 2
    assert "heat of the 2 current or pending records that can go cold:" in cli("stats").stdout


# -- found by an adversarial run: each at its mechanism -----------------------------------------------
def no_sweep(vault_path) -> None:
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")


def test_a_guessed_value_of_a_key_supersedes_nothing_until_confirmed(cli, vault, vault_path, monkeypatch):
    no_sweep(vault_path)
    at(monkeypatch, "2026-01-01T00:00:00Z")
    sure = cli.json("append", "backend port is 8080", "--key", "backend.port")["id"]
    at(monkeypatch, "2026-01-05T00:00:00Z")
    guess = cli.json("append", "backend port is 9090", "--key", "backend.port", "--agent")["id"]
    assert cli.json("get", sure)["record"]["status"] == "current"
    assert "8080" in cli.json("context")["text"]
    cli.json("confirm", guess)
    assert cli.json("get", sure)["record"]["status"] == "superseded"
    assert cli.json("get", sure)["record"]["superseded_by"] == guess


def test_confirming_a_guess_that_went_cold_warms_it(cli, vault, vault_path, monkeypatch):
    no_sweep(vault_path)
    at(monkeypatch, "2026-01-01T00:00:00Z")
    guess = cli.json("append", "guess: the cdn is cloudfront", "--confidence", "0.3")["id"]
    at(monkeypatch, "2026-02-20T00:00:00Z")
    cli.json("sweep")
    assert cli.json("get", guess)["record"]["status"] == "cold"
    at(monkeypatch, "2026-03-01T00:00:00Z")
    assert cli.json("confirm", guess)["status"] == "confirmed"
    assert cli.json("get", guess)["record"]["status"] == "current"


def test_an_old_value_goes_cold_with_the_record_that_replaced_it(cli, vault, vault_path, monkeypatch):
    no_sweep(vault_path)
    at(monkeypatch, "2026-01-01T00:00:00Z")
    old = cli.json("append", "the api rate limit is 100 per minute", "--importance", "0.9")["id"]
    new = cli.json("correct", old, "the api rate limit is 500 per minute")["id"]
    at(monkeypatch, "2026-05-16T00:00:00Z")  # the correction (0.7) cools; the old value (0.9) would not
    swept = cli.json("sweep")
    assert swept["by_reason"] == {"heat": 1, "superseder_cold": 1}
    # nothing warm matches: both come back, labelled — the cold fact in the current band, its
    # old value among the superseded
    plain = cli.json("search", "api rate limit")["hits"]
    assert [(h["id"], h["status"], h["superseded_by"]) for h in plain] == [(new, "cold", None), (old, "cold", new)]
    hits = cli.json("search", "api rate limit", "--include-cold")["hits"]
    assert {h["id"]: h["status"] for h in hits} == {new: "cold", old: "cold"}
    assert "COLD, SUPERSEDED by" in cli("search", "api rate limit 100", "--include-cold").stdout


def test_recalling_an_old_value_warms_the_record_that_replaced_it(cli, vault, vault_path, monkeypatch):
    # the fact is in use again: its current version comes back with it, or search would show the
    # old value alone, superseded by something no longer found
    no_sweep(vault_path)
    at(monkeypatch, "2025-06-01T10:00:00Z")
    old = cli.json("append", "The staging database host is db-old.internal")["id"]
    at(monkeypatch, "2025-06-02T10:00:00Z")
    new = cli.json("correct", old, "The staging database host is db-new.internal")["id"]
    at(monkeypatch, "2025-12-01T10:00:00Z")
    cli.json("sweep")
    at(monkeypatch, "2025-12-02T10:00:00Z")
    assert cli.json("touch", old)["warmed"] == [old, new]
    at(monkeypatch, "2025-12-03T10:00:00Z")
    assert cli.json("search", "staging database host", "--current")["hits"][0]["id"] == new


@pytest.mark.long
def test_context_does_not_keep_an_unused_note_warm_by_showing_it(cli, vault, vault_path, monkeypatch):
    no_sweep(vault_path)
    at(monkeypatch, "2026-01-01T00:00:00Z")
    ids = [cli.json("append", f"one-off note {i} about lunch")["id"] for i in range(5)]
    for month in range(2, 13):
        at(monkeypatch, f"2026-{month:02d}-01T00:00:00Z")
        cli.json("context")
        cli.json("sweep")
    assert {cli.json("get", i)["record"]["status"] for i in ids} == {"cold"}
    assert "one-off note" not in cli.json("context")["text"]


def test_an_agent_repeating_its_own_guess_is_not_a_second_voice(cli, vault, vault_path):
    no_sweep(vault_path)
    guess = cli.json("append", "the user likes dark mode", "--agent")["id"]
    assert cli.json("append", "the user likes dark mode", "--agent")["status"] == "duplicate"
    assert [w["id"] for w in cli.json("pending")["pending"]] == [guess]  # no session to tell them apart
    cli.json("append", "the user likes dark mode")  # someone sure of it says it
    assert cli.json("pending")["pending"] == []
    assert cli.json("get", guess)["record"]["status"] == "current"


def test_marks_and_sweeps_dated_ahead_of_the_clock_do_not_stick(cli, vault, vault_path, monkeypatch):
    no_sweep(vault_path)
    at(monkeypatch, "2026-01-01T00:00:00Z")
    rid = cli.json("append", "skewed clock note gamma")["id"]
    at(monkeypatch, "2027-01-01T00:00:00Z")  # a clone whose clock ran a year ahead swept
    cli.json("sweep")
    at(monkeypatch, "2026-01-10T00:00:00Z")
    assert cli.json("get", rid)["record"]["status"] == "current"  # that mark is not in effect yet
    assert lifecycle.sweep_due(epoch("2027-01-01T00:00:00Z"), epoch("2026-01-10T00:00:00Z"), "daily")
    assert cli.json("sweep", "--if-due")["ran"] is True


def test_sweeping_twice_in_one_second_cools_nothing_twice(cli, vault, vault_path, monkeypatch):
    no_sweep(vault_path)
    at(monkeypatch, "2026-01-01T00:00:00Z")
    cli.json("append", "tiny note", "--importance", "0.01")
    assert cli.json("sweep")["cooled"] == 0  # written this very second: not cold
    at(monkeypatch, "2026-01-02T00:00:00Z")
    assert cli.json("sweep")["cooled"] == 1 and cli.json("sweep")["cooled"] == 0


def test_lifecycle_commands_need_an_existing_vault_and_create_nothing(cli, tmp_path):
    missing = tmp_path / "typo"
    for args in (["touch", "ABCDEF"], ["confirm", "ABCDEF"], ["reject", "ABCDEF"], ["sweep", "--if-due"]):
        err = cli.json("--vault", str(missing), *args, code=3)["error"]
        assert err["code"] == "vault_missing", args
    assert not missing.exists()


def test_a_bad_access_file_is_reported_by_doctor_and_breaks_nothing_else(cli, vault, vault_path):
    rid = cli.json("append", "the deploy key lives in vault")["id"]
    (vault_path / "ACCESS.jsonl").write_text(
        '{"v":1,"ts":"2026-01-01T00:00:00Z","touch":["X"]}\nnot json\n[1]\n', "utf-8"
    )
    report = cli.json("doctor", code=1)
    assert [(p["code"], p["file"], p["line"]) for p in report["problems"]] == [
        ("unparseable_line", "ACCESS.jsonl", 2),
        ("unparseable_line", "ACCESS.jsonl", 3),
    ]
    (vault_path / "ACCESS.jsonl").unlink()
    (vault_path / "ACCESS.jsonl").mkdir()
    assert cli.json("get", rid)["record"]["status"] == "current"
    assert cli.json("search", "deploy key")["hits"][0]["id"] == rid
    assert cli.json("append", "another fact")["status"] == "stored"
    assert [p["code"] for p in cli.json("doctor", code=1)["problems"]] == ["unreadable"]


@pytest.mark.long
def test_search_touch_keeps_its_hits_when_the_recall_cannot_be_written(vault, vault_path):
    import resource

    rid = json.loads(run_optmem("append", "the staging host is stage-7", "--json").stdout)["id"]
    run_optmem("search", "staging")  # the index is in step: a search writes nothing else

    def no_growth() -> None:
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # like a read-only or full disk

    res = subprocess.run(
        [*optmem_cmd(), "search", "staging", "--touch", "--json"],
        capture_output=True,
        text=True,
        timeout=HANG,
        preexec_fn=no_growth,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert [h["id"] for h in json.loads(res.stdout)["hits"]] == [rid]
    assert "not recorded as recalled" in res.stderr


def test_get_never_shows_a_heat_that_stats_counts_in_a_lower_band(cli, vault):
    """A record of importance 0.5 seconds after it was written is a hair below 0.5 hot: `stats`
    counts it under 0.5, so `get` must not round its heat up to 0.500 (a band edge crossed by
    rounding) — shown heat is cut, never rounded up, in `get` and in a sweep's list alike."""
    env = {"OPTMEM_NOW": "2026-06-01T00:00:00Z"}
    rid = cli.json("append", "port is 8080", "--importance", "0.5", env=env)["record"]["id"]
    later = {"OPTMEM_NOW": "2026-06-01T00:00:05Z"}
    shown = cli.json("get", rid, env=later)["record"]["life"]["heat"]
    bands = cli.json("stats", env=later)["lifecycle"]["heat"]
    assert bands[">=0.5"] == 0 and bands[">=0.2"] == 1
    assert shown == 0.499
    assert "heat 0.499" in cli("get", rid, env=later).stdout


@pytest.mark.long
def test_with_the_sweep_off_a_guess_past_its_ttl_is_a_note_and_the_sample_vault_ages_well(cli, tmp_path, monkeypatch):
    """`auto_sweep = "off"` leaves sweeping to the person (the sample vault, frozen in June 2026,
    says so): a guess left pending past `pending_ttl_days` is what they chose, a note `doctor`
    shows — not a problem of the files, and `doctor --fix` leaves it pending. The sample vault's
    doctor is clean whatever the date (brief fix-i, item 6)."""
    import shutil
    from pathlib import Path

    sample = tmp_path / "sample_vault"
    repo = Path(__file__).resolve().parent.parent
    shutil.copytree(repo / "sample_vault", sample, ignore=shutil.ignore_patterns(".cache"))
    for when in ("2026-06-21T00:00:00Z", "2026-12-06T00:00:00Z", "2031-01-01T00:00:00Z"):
        at(monkeypatch, when)
        cli.json("--vault", str(sample), "search", "端口")  # (the index catches up: doctor checks pending)
        report = cli.json("--vault", str(sample), "doctor")
        assert report["ok"] is True and report["problems"] == [], (when, report["problems"])
    assert any("pending for more than 30 days" in n and "optmem sweep" in n for n in report["notes"])
    fixed = cli.json("--vault", str(sample), "doctor", "--fix")
    assert not any("swept" in f for f in fixed["fixed"])
    assert len(cli.json("--vault", str(sample), "pending")["pending"]) == 1  # still the guess the README shows


def test_an_expired_record_swept_cold_still_says_it_expired(cli, vault, vault_path, monkeypatch):
    # tester 10, fix-m 5: once swept, an expired record read [COLD] only
    at(monkeypatch, "2026-01-01T09:00:00Z")
    rid = cli.json("append", "the staging freeze lasts until friday", "--ttl", "2d")["id"]
    at(monkeypatch, "2026-03-01T09:00:00Z")  # expired for two months: past expired_grace_days
    assert cli("sweep").exit_code == 0
    got = cli.json("get", rid)["record"]
    assert (got["status"], got["expired"]) == ("cold", True)
    assert "expired 2026-01-03" in cli("get", rid).stdout
    [hit] = cli.json("search", "staging freeze", "--include-cold")["hits"]
    assert hit["status"] == "cold" and hit["expired"] is True
    assert "[COLD, EXPIRED]" in cli("search", "staging freeze", "--include-cold").stdout


def test_a_clock_set_far_ahead_never_sweeps_the_vault_on_a_write(cli, vault, vault_path, monkeypatch):
    """OPTMEM_NOW a year past the machine's clock (a query tried "a year on") made a write's daily
    sweep cool the vault as if that year had passed: the automatic sweep runs on the real clock
    only, and says so; `optmem sweep`, asked for, still sweeps as of OPTMEM_NOW."""
    from datetime import UTC, datetime, timedelta

    rid = cli.json("append", "a tiny note nobody reads", "--importance", "0.01")["id"]
    far = (datetime.now(UTC) + timedelta(days=400)).strftime("%Y-%m-%dT%H:%M:%SZ")
    access = vault_path / "ACCESS.jsonl"
    sweeps = access.read_text("utf-8").count('"sweep"') if access.exists() else 0
    at(monkeypatch, far)
    out = cli("append", "written with the clock a year ahead", "--json")
    assert out.exit_code == 0 and "daily sweep did not run: OPTMEM_NOW is" in out.stderr, out.stderr
    assert (access.read_text("utf-8").count('"sweep"') if access.exists() else 0) == sweeps
    monkeypatch.delenv("OPTMEM_NOW")
    assert cli.json("get", rid)["record"]["status"] == "current"
    at(monkeypatch, far)
    assert cli.json("sweep")["cooled"] >= 1  # asked for: as of that time


def test_the_daily_sweep_never_cools_what_was_used_in_the_hour_before(cli, vault, vault_path, monkeypatch):
    """A write stores its record, then runs the daily sweep: on a busy machine the sweep's clock
    reads a second later than the record's, and a record of low importance went cold in the very
    command that wrote it (`cools` spared only what was used in the sweep's own second). The daily
    sweep (`--if-due`) spares what was used in the hour before it; `optmem sweep`, asked for, does not."""
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    at(monkeypatch, "2026-03-01T10:00:00Z")
    rid = cli.json("append", "a tiny note nobody reads", "--importance", "0.01")["id"]
    at(monkeypatch, "2026-03-01T10:00:02Z")  # the write's own sweep, two seconds on
    assert cli.json("sweep", "--if-due")["cooled"] == 0
    assert cli.json("get", rid)["record"]["status"] == "current"
    assert cli.json("sweep")["cooled"] == 1  # asked for, it cools what is cold now
    assert cli.json("get", rid)["record"]["status"] == "cold"
