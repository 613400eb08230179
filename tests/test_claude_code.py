"""`optmem hook claude-code` driven as Claude Code drives it: a real subprocess, the hook payloads
Claude Code sends, and transcripts in its JSONL format (tests/data/claude_code, whose README says
where the format comes from). Each test reads the handoff back through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import log_lines, run_optmem

DATA = Path(__file__).parent / "data" / "claude_code"
SESSION = "5b2e8f41-9c3d-4a7e-b1f6-0d8c2a4e6f13"  # the sessionId inside session.jsonl

FIRST = "The login endpoint times out after 30s on staging. Find out why and fix it; keep the API unchanged."
WAITING = "The migration can't run until ops rotate the staging DB password — I'm waiting for them."
STUCK = "前端那边卡在设计稿上，等设计确认之后再改登录页。"
ALEMBIC = (
    "sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection to server at "
    '"staging-db.internal" (10.0.3.7), port 5432 failed: FATAL: password authentication failed '
    'for user "webapp"'
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository named like the project, where the session runs."""
    path = tmp_path / "src" / "webapp"
    path.mkdir(parents=True)
    subprocess.run(
        ["git", "init", "-q", str(path)],
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"},
    )
    return path


def transcript(tmp_path: Path, *parts: str) -> Path:
    """The session's transcript file as it stands after these fixture parts were written."""
    path = tmp_path / "projects" / "-src-webapp" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as fh:
        for part in parts:
            fh.write((DATA / part).read_bytes())
    return path


def hook(name: str, repo: Path, path: Path | None = None, session: str = SESSION) -> dict[str, Any]:
    """Send one hook event, built from the real payload; returns what the hook reported."""
    event = json.loads((DATA / "hook_events.json").read_text("utf-8"))[name]
    event.update(session_id=session, cwd=str(repo), transcript_path=str(path or repo / "none.jsonl"))
    res = run_optmem("hook", "claude-code", "--json", input=json.dumps(event))
    assert res.returncode == 0 and res.stdout, (res.stdout, res.stderr)
    return dict(json.loads(res.stdout))


def handoffs(project: str = "webapp", history: int = 10) -> list[dict[str, Any]]:
    res = run_optmem("handoff", "read", "--project", project, "--history", str(history), "--json")
    assert res.returncode == 0, res.stderr
    return list(json.loads(res.stdout)["handoffs"])


# -- requests -------------------------------------------------------------------------------------
@pytest.mark.long
def test_requests_are_the_users_own_prompts_first_and_latest(tmp_path, repo, vault_path):
    path = transcript(tmp_path, "session.jsonl", "after_compact.jsonl")
    assert hook("SessionEnd", repo, path)["handoff"]
    note = handoffs()[0]["note"]
    first, _, latest = note.partition(" Latest requests: ")
    assert first.endswith(f"First request: {FIRST}")  # the goal is kept
    assert latest == f"{STUCK}先把后端的超时配置做完。 / Make LOGIN_TIMEOUT default to 30 and document it in README.md."
    for leaked in (
        "This session is being continued",
        "[Request interrupted",
        "<command-name>",
        "/compact",
        "<local-command",
        "Caveat:",
        "<task-notification>",
        "doesn't want to proceed",
        "Update docs/api.md",
    ):  # the sub-agent's prompt
        assert leaked not in note, leaked


@pytest.mark.long
def test_a_sub_agents_prompt_written_inline_is_not_a_request(tmp_path, repo, vault_path):
    legacy = tmp_path / "legacy.jsonl"
    legacy.write_bytes((DATA / "legacy_inline_subagent.jsonl").read_bytes())
    hook("PreCompact", repo, legacy, session="c4d19a7e-0b52-4f3e-9a86-71e2d5b0c3f8")
    note = handoffs()[0]["note"]
    assert note.endswith(
        "First request: Sync docs/payments.md with the current payments API and fix any "
        "drift. Latest requests: thanks, that's all"
    )
    assert "Compare docs/payments.md" not in note


# -- done -----------------------------------------------------------------------------------------
@pytest.mark.long
def test_done_is_the_main_threads_work_and_never_a_null_report(tmp_path, repo, vault_path):
    legacy = tmp_path / "legacy.jsonl"
    legacy.write_bytes((DATA / "legacy_inline_subagent.jsonl").read_bytes())
    hook("SessionEnd", repo, legacy, session="c4d19a7e-0b52-4f3e-9a86-71e2d5b0c3f8")
    h = handoffs()[0]
    assert h["done"] == ["Added a docs check to CI in .github/workflows/docs.yml."]
    assert h["blocked"] == []  # the sub-agent's failed grep is its own business

    run_optmem("forget", h["id"])
    hook("SessionEnd", repo, transcript(tmp_path, "session.jsonl"))
    assert handoffs()[0]["done"] == [
        "Fixed the login timeout: src/app/db.py now shares one pool (POOL) instead of opening one per request.",
        "Added LOGIN_TIMEOUT (default 30 s) to src/app/config.py and documented it in README.md.",
    ]


@pytest.mark.long
def test_a_line_that_reports_work_and_names_the_next_step_is_split(tmp_path, repo, vault_path):
    # "Done: …. Next step: …" on one line is both: the done part is not filed under next
    path = tmp_path / "one-line.jsonl"
    base = {
        "isSidechain": False,
        "userType": "external",
        "cwd": str(repo),
        "sessionId": SESSION,
        "version": "2.1.144",
        "timestamp": "2026-05-18T09:00:07.259Z",
    }
    entries = [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"role": "user", "content": "Move the backend to port 9090."},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "model": "claude-opus-4-6",
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": "Done: changed the port to 9090 in config.py. Next step: update the nginx config.",
                    }
                ],
            },
        },
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), "utf-8")
    hook("SessionEnd", repo, path)
    h = handoffs()[0]
    assert h["done"] == ["changed the port to 9090 in config.py."]
    assert h["next"] == ["update the nginx config."]
    # a label after another sentence starts the item: the words before it are no part of it (tester 14 #12)
    entries[1]["message"]["content"][0]["text"] = "I won't do that. TODO: fix the nginx typo proxy_pas."
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), "utf-8")
    hook("SessionEnd", repo, path)
    assert handoffs()[0]["next"] == ["fix the nginx typo proxy_pas."]


@pytest.mark.long
def test_next_after_a_colon_is_open_and_a_later_report_of_it_done_closes_it(tmp_path, repo, vault_path):
    # "Done: …. Next: …" is two items; "下一步：导入新库" reported done later ("已完成：导入新库…") is not next
    path = tmp_path / "later.jsonl"
    said = [
        ("user", "Deploy v3 to staging, then migrate the database to Postgres 16."),
        ("assistant", "Done: deployed v3 to staging. Next: run smoke tests."),
        ("assistant", "已完成：导出了旧库的数据。下一步：导入新库。"),
        ("assistant", "已完成：导入新库并验证了行数。"),
    ]
    hook("SessionEnd", repo, _session(repo, path, said))
    h = handoffs()[0]
    # each under its heading without its own label (not "Done: Done: …", "Next: Next: …")
    assert h["done"] == ["deployed v3 to staging.", "导出了旧库的数据。", "导入新库并验证了行数。"]
    assert h["next"] == ["run smoke tests."]


# -- blocked --------------------------------------------------------------------------------------
@pytest.mark.long
def test_blocked_is_what_stayed_broken_and_what_the_user_said_blocks_the_work(tmp_path, repo, vault_path):
    hook("PreCompact", repo, transcript(tmp_path, "session.jsonl"))
    h = handoffs()[0]
    # the pytest and Edit failures were fixed by later calls of the same command / file; the
    # rejected Edit was the user's choice; the alembic failure stands, with its informative line
    assert h["blocked"] == [WAITING, STUCK, ALEMBIC]
    assert h["next"] == ["run the pool-size migration on staging once the DB credentials work."]
    assert not any("Exit code" in b or "ReadTimeout" in b or "String to replace" in b for b in h["blocked"])


# -- one handoff per session ----------------------------------------------------------------------
@pytest.mark.long
def test_precompact_then_session_end_leave_one_handoff_updated_in_place(tmp_path, repo, vault_path):
    path = transcript(tmp_path, "session.jsonl")
    wrote = hook("PreCompact", repo, path)
    transcript(tmp_path, "after_compact.jsonl")  # compaction appends to the same file
    again = hook("SessionEnd", repo, path)
    assert [r["id"] for r in log_lines(vault_path) if r["kind"] == "handoff"] == [wrote["handoff"]]
    assert (again["status"], again["handoff"]) == ("unchanged", wrote["handoff"])
    start = run_optmem(
        "hook",
        "claude-code",
        input=json.dumps(
            {
                **json.loads((DATA / "hook_events.json").read_text("utf-8"))["SessionStart"],
                "session_id": SESSION,
                "cwd": str(repo),
                "source": "compact",
            }
        ),
    )
    assert ALEMBIC in start.stdout  # the compacted session starts with its handoff

    transcript(tmp_path, "after_more_work.jsonl")  # the session goes on, then ends
    updated = hook("SessionEnd", repo, path)
    shown = handoffs()
    assert [h["id"] for h in shown] == [updated["handoff"]]
    assert shown[0]["origin"] == "agent"  # what the assistant said it did: its claims
    said = run_optmem("context", "-p", "webapp").stdout
    assert "Latest handoff — webapp" in said and "the agent's own report" in said
    assert updated["status"] == "updated" and updated["replaced"] == [wrote["handoff"]]
    assert shown[0]["done"][-1] == "Added tests/test_config.py::test_login_timeout_default; the suite passes (5 tests)."
    assert "Add a test for the LOGIN_TIMEOUT default." in shown[0]["note"]
    old = json.loads(run_optmem("get", wrote["handoff"], "--json").stdout)["record"]
    assert old["status"] == "forgotten"  # still in the log, out of view
    assert f'record: "{updated["handoff"]}"' in (vault_path / "projects" / "webapp" / "HANDOFF.md").read_text("utf-8")

    other = hook(
        "SessionEnd",
        repo,
        transcript(tmp_path / "other", "session.jsonl"),
        session="0e6d1f2a-3b4c-4d5e-8f60-718293a4b5c6",
    )
    assert other["status"] == "written"  # another session keeps its own handoff
    assert [h["id"] for h in handoffs()] == [other["handoff"], updated["handoff"]]


# -- SessionStart ---------------------------------------------------------------------------------
@pytest.mark.long
def test_session_start_prints_nothing_when_the_vault_has_nothing_for_the_project(tmp_path, repo, vault_path):
    event = {**json.loads((DATA / "hook_events.json").read_text("utf-8"))["SessionStart"], "cwd": str(repo)}

    def start() -> subprocess.CompletedProcess[str]:
        res = run_optmem("hook", "claude-code", input=json.dumps(event))
        assert res.returncode == 0, res.stderr
        return res

    assert start().stdout == ""  # no vault at all
    assert run_optmem("init").returncode == 0
    assert start().stdout == ""  # an empty vault: no empty fenced block
    for args in (
        ("handoff", "write", "--project", "billing", "--done", "invoices export"),
        ("append", "billing runs on cron", "--project", "billing"),
    ):
        assert run_optmem(*args).returncode == 0
    assert start().stdout == ""  # only another project's memory
    assert run_optmem("append", "webapp deploys from main", "--project", "webapp").returncode == 0
    shown = start().stdout
    assert "OPTMEM RECALLED MEMORY" in shown and "webapp deploys from main" in shown
    assert "billing" not in shown


@pytest.mark.long
def test_a_hook_fed_something_else_says_what_it_expects_and_never_fails(vault_path):
    for junk in ("garbage", "[1, 2]"):
        res = run_optmem("hook", "claude-code", input=junk)
        assert res.returncode == 0 and res.stdout == ""  # never breaks the agent's session
        assert "hook skipped" in res.stderr and "JSON event Claude Code sends" in res.stderr
    assert not vault_path.exists()  # and writes nothing
    # a field of the wrong type is named, with what it got
    res = run_optmem("hook", "claude-code", input=json.dumps({"session_id": 5, "transcript_path": 7, "cwd": 9}))
    assert res.returncode == 0 and res.stdout == "" and not vault_path.exists()
    for field in ("session_id", "transcript_path", "cwd"):
        assert f"`{field}`" in res.stderr, res.stderr
    assert "a number" in res.stderr and "a string" in res.stderr
    # with --json it still answers JSON, with the reason (tester 15 item 1: stdout was empty)
    res = run_optmem("hook", "claude-code", "--json", input="garbage")
    assert res.returncode == 0 and not vault_path.exists()
    got = json.loads(res.stdout)
    assert got["ok"] is True and got["handoff"] is None and got["reason"] == "skipped", got
    assert any("JSON event Claude Code sends" in w for w in got["warnings"]), got


@pytest.mark.long
def test_session_end_with_no_transcript_says_which_file_is_missing(tmp_path, repo, vault_path):
    gone = tmp_path / "gone.jsonl"
    event = {"hook_event_name": "SessionEnd", "session_id": SESSION, "cwd": str(repo), "transcript_path": str(gone)}
    res = run_optmem("hook", "claude-code", input=json.dumps(event))
    assert res.returncode == 0 and res.stdout == ""
    assert str(gone) in res.stderr and "no handoff" in res.stderr, res.stderr
    got = run_optmem("hook", "claude-code", "--json", input=json.dumps(event))
    assert json.loads(got.stdout)["handoff"] is None and str(gone) in json.loads(got.stdout)["warnings"][0]


@pytest.mark.long
def test_the_users_last_request_left_unanswered_is_next_and_the_note_keeps_requests_apart(tmp_path, repo, vault_path):
    """Tester 11 item 12: a session that ends on a user turn nothing answered left it out of
    Next, and the note ran the requests together ("…然后更新 nginx Latest requests: …")."""
    path = tmp_path / "unanswered.jsonl"
    said = [
        ("user", "把端口改成 9090，然后更新 nginx"),
        ("assistant", "Done: changed the port to 9090 in config.py."),
        ("user", "还有：记得验证 TLS 证书"),
    ]
    hook("SessionEnd", repo, _session(repo, path, said))
    h = handoffs()[0]
    assert h["next"] == ["还有：记得验证 TLS 证书"]
    assert "然后更新 nginx — Latest requests: 还有：记得验证 TLS 证书" in h["note"]
    # answered, it is no longer next
    hook("SessionEnd", repo, _session(repo, path, [*said, ("assistant", "证书已验证。")]))
    assert "还有：记得验证 TLS 证书" not in handoffs()[0]["next"]


def test_a_line_holding_two_labelled_items_is_two_items(tmp_path, repo, vault_path):
    """Tester 15 item 4: "TODO: fix X. Next: update Y." on one line was one item keeping the
    inner "Next:"; a sentence with no label stays with the item before it."""
    path = tmp_path / "two-items.jsonl"
    said = (
        "TODO: fix tests/test_api.py port assertion. Next: update nginx reverse proxy config. "
        "It lives in deploy/. 待办：更新文档。"
    )
    entries = [
        {"type": "user", "isSidechain": False, "cwd": str(repo), "sessionId": SESSION,
         "message": {"role": "user", "content": "Fix the port test."}},
        {"type": "assistant", "isSidechain": False, "cwd": str(repo), "sessionId": SESSION,
         "message": {"role": "assistant", "content": [{"type": "text", "text": said}]}},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), "utf-8")
    hook("SessionEnd", repo, path)
    assert handoffs()[0]["next"] == [
        "fix tests/test_api.py port assertion.",
        "update nginx reverse proxy config. It lives in deploy/.",
        "更新文档。",
    ]


def _session(repo: Path, path: Path, said: list[tuple[str, str]]) -> Path:
    entries = [
        {
            "type": role,
            "isSidechain": False,
            "cwd": str(repo),
            "sessionId": SESSION,
            "message": {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]},
        }
        for role, text in said
    ]
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), "utf-8")
    return path


def test_a_last_request_that_says_what_blocks_the_work_is_blocked_not_also_next(tmp_path, repo, vault_path):
    """Tester 16 item 7: the session's last user line "also we're waiting for the DNS change from
    ops", unanswered, was under Blocked and under Next. A line is in one part: what blocks the work
    is Blocked; the rest of such a request (something it asks) is still Next."""
    said = [
        ("user", "Move the backend to port 9090 and update compose"),
        ("assistant", "Done: changed the port to 9090 in compose.yaml. Next: update the nginx config."),
        ("user", "also we're waiting for the DNS change from ops"),
    ]
    hook("SessionEnd", repo, _session(repo, tmp_path / "waiting.jsonl", said))
    h = handoffs()[0]
    assert h["blocked"] == ["also we're waiting for the DNS change from ops"]
    assert h["next"] == ["update the nginx config."]
    # a request that asks something besides: what it asks is Next, what blocks is Blocked
    said[-1] = ("user", "Please bump the chart version. We're still waiting for the DNS change from ops.")
    hook("SessionEnd", repo, _session(repo, tmp_path / "waiting.jsonl", said))
    h = handoffs()[0]
    assert h["blocked"] == ["We're still waiting for the DNS change from ops."]
    assert h["next"] == ["update the nginx config.", "Please bump the chart version."]
    said[-1] = ("user", "还需要改 nginx。在等运维切 DNS 之后再上线。")
    hook("SessionEnd", repo, _session(repo, tmp_path / "waiting.jsonl", said))
    h = handoffs()[0]
    assert h["blocked"] == ["在等运维切 DNS 之后再上线。"] and h["next"][-1] == "还需要改 nginx。", h
