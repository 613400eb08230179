"""The hot-memory journal keeps no secret, and finishes the first write of a file cut short
(tester 19 F8, F12)."""

from __future__ import annotations

import json
import signal
from typing import Any

import pytest
from conftest import killed_before_rename, mcp_session

from optmem import memory

KEY = "sk-proj-Ab3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7bC9dE1fG3"
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"


def _pasted(vault_path: Any, cli: Any, text: str) -> str:
    """A secret pasted into MEMORY.md by hand (or brought by git): its entry id, shown blocked."""
    cli.json("add", "deploy notes live in docs/deploy.md")
    with (vault_path / "MEMORY.md").open("a", encoding="utf-8") as fh:
        fh.write(f"\n§\n{text}\n")
    shown = cli.json("show", "--target", "memory")["files"][0]["entries"]
    assert shown[1]["text"].startswith("[BLOCKED: ") and shown[1]["blocked"]
    return str(shown[1]["id"])


@pytest.mark.parametrize(
    "how",
    [
        lambda cli, eid: cli.json("remove", "--id", eid),
        lambda cli, eid: cli.json("replace", KEY, "(moved to the password manager)"),
        lambda cli, eid: cli.json("apply", "-", input=json.dumps([{"op": "remove", "old": "openai key"}])),
    ],
    ids=["remove", "replace", "apply"],
)
def test_taking_a_secret_out_of_hot_memory_never_writes_it_to_the_log(cli, vault_path, how):
    """A secret is never stored: the journal of its removal or replacement carries the scanner's
    placeholder, as the journal of the hand edit that brought it did — the raw key in neither the
    record's text nor the replace's `old`."""
    eid = _pasted(vault_path, cli, f"openai key {KEY}")
    how(cli, eid)
    assert KEY not in (vault_path / "MEMORY.md").read_text("utf-8")
    log = (vault_path / "LOG.jsonl").read_text("utf-8")
    assert KEY not in log and "sk-proj" not in log
    gone = [json.loads(line) for line in log.splitlines() if f'"entry":"{eid}"' in line.replace(" ", "")]
    assert gone and all(r["text"] == "[BLOCKED: api_secret_key]" for r in gone)
    assert all(r.get("old", "[BLOCKED: api_secret_key]") == "[BLOCKED: api_secret_key]" for r in gone)
    assert cli.json("doctor")["problems"] == []


def test_the_mcp_memory_tool_removing_a_secret_keeps_it_out_of_the_log(vault, vault_path, cli):
    _pasted(vault_path, cli, f"slack bot token {SLACK}")

    async def script(s: Any) -> Any:
        return await s.call_tool("memory", {"action": "remove", "old_text": "slack bot token"})

    out = mcp_session(vault_path, script)
    assert not out.is_error, out
    assert SLACK not in (vault_path / "MEMORY.md").read_text("utf-8")
    assert "xoxb-" not in (vault_path / "LOG.jsonl").read_text("utf-8")


def test_a_replace_of_a_secret_cut_short_is_still_finished(vault, vault_path, cli):
    """The placeholder in the journal does not stop an edit cut short from being finished: the
    replaced entry is found by its id."""
    _pasted(vault_path, cli, f"openai key {KEY}")
    logged = len((vault_path / "LOG.jsonl").read_bytes())  # (the hand edit is journalled: an edit outside optmem)
    res = killed_before_rename(vault_path, "replace", KEY, "(moved to the password manager)")
    assert res.returncode == -signal.SIGKILL, res.stderr
    assert KEY in (vault_path / "MEMORY.md").read_text("utf-8")  # (the kill came before the rename)
    shown = [e["text"] for e in cli.json("show", "--target", "memory")["files"][0]["entries"]]
    assert shown == ["deploy notes live in docs/deploy.md", "openai key (moved to the password manager)"]
    assert KEY not in (vault_path / "MEMORY.md").read_text("utf-8")
    assert b'"source":"drift"' not in (vault_path / "LOG.jsonl").read_bytes()[logged:].replace(b" ", b"")


def test_doctor_names_a_raw_secret_in_the_log(vault, vault_path, cli):
    """A log line that holds a secret (typed into the log, or journalled by an older optmem) is
    named by doctor as a secret, with the command that deletes it."""
    cli.json("add", "deploy notes live in docs/deploy.md")
    line = {"v": 1, "id": "01M99DDDDDDDDDDDDDDDDDDDDD", "ts": "2026-12-03T00:00:00Z", "text": f"key {KEY}"}
    with (vault_path / "LOG.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")
    cli.json("search", "deploy")  # (the index catches up)
    notes = " ".join(cli.json("doctor")["notes"])
    assert "secret" in notes and "optmem purge" in notes


@pytest.mark.parametrize(
    ("args", "file", "shown"),
    [
        (["add", "the staging host is stg-2"], "MEMORY.md", ("memory", None)),
        (["add", "--target", "user", "prefers tabs"], "USER.md", ("user", None)),
        (["add", "--project", "webapp", "webapp uses FastAPI"], "projects/webapp/MEMORY.md", ("memory", "webapp")),
    ],
    ids=["memory", "user", "new-project"],
)
def test_the_first_write_of_a_hot_file_cut_short_is_finished(vault, vault_path, cli, args, file, shown):
    """A kill between the journal and the rename on the first write of a hot file (no file yet:
    a fresh vault, a first USER.md entry, a new project block) is finished by the next command
    that reads hot memory, as it is for a file that exists: no edit "outside optmem" is journalled,
    and the killed writer's temporary file is removed."""
    path = vault_path / file
    assert not path.exists()
    res = killed_before_rename(vault_path, *args, file=path.name)
    assert res.returncode == -signal.SIGKILL, res.stderr
    assert list(path.parent.glob(f".{path.name}.*.tmp"))  # (the kill came between the journal and the rename)
    cli.json("show")
    assert memory.load(vault, *shown).entries == [args[-1]]
    log = (vault_path / "LOG.jsonl").read_text("utf-8").replace(" ", "")
    assert '"source":"drift"' not in log
    assert not list(path.parent.glob(f".{path.name}.*.tmp"))
    hit = cli.json("search", args[-1])["hits"][0]
    assert hit["status"] == "current", hit
    assert cli.json("doctor")["problems"] == []


def test_a_first_write_refused_leaves_no_file_and_no_folder(vault, vault_path, cli):
    """The empty file a first write starts from goes with the write when the journal refuses it."""
    cli.json("add", "a first entry, so the vault has its log")
    (vault_path / "LOG.jsonl").chmod(0o444)
    try:
        err = cli.json("add", "--project", "webapp", "webapp uses FastAPI", code=3)["error"]
        assert err["code"] == "unwritable"
        err = cli.json("add", "--target", "user", "prefers tabs", code=3)["error"]
        assert err["code"] == "unwritable"
    finally:
        (vault_path / "LOG.jsonl").chmod(0o644)
    assert not (vault_path / "projects" / "webapp").exists() and not (vault_path / "USER.md").exists()
