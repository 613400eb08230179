"""What a sync sends (tester19's F1): a line typed by hand that holds a secret — in a log file or
a hot file — is not committed nor pushed; the sync stops and names the file, the line and the
rule, and says how to take it out. Nothing is lost (the line stays in the file) and nothing leaks
(the remote never holds it)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_sync import CLI, ENV, om, pair, sync

TOKEN = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def _remote_holds(tmp_path: Path, needle: str) -> bool:
    out = subprocess.run(
        ["git", "--git-dir", str(tmp_path / "origin.git"), "log", "--all", "-p"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return needle in out


def _own_segment(vault: Path) -> Path:
    (path,) = sorted((vault / "log").glob("*/????-??.jsonl"))
    return path


@pytest.mark.long
def test_a_secret_typed_into_a_log_file_is_not_pushed(tmp_path: Path) -> None:
    one, _ = pair(tmp_path)
    om(one, "append", "one: the backend listens on port 8080")
    sync(one)
    om(one, "append", "one: the frontend listens on port 3000")
    seg = _own_segment(one)
    with seg.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"text": f"listens token {TOKEN}", "domain": "default"}) + "\n")
    lines = seg.read_text("utf-8").splitlines()
    res = CLI("--vault", str(one), "sync", "--json", env=ENV)
    assert res.exit_code == 1, res.stdout
    error = json.loads(res.stdout)["error"]
    assert error["code"] == "unsafe_content" and error["rule"] == "github_token" and error["kind"] == "secret"
    name = seg.relative_to(one).as_posix()
    assert error["file"] == name and error["line"] == len(lines)
    assert f"{name} line {len(lines)}" in error["message"] and "nothing was committed or pushed" in error["message"]
    assert TOKEN not in error["message"]  # (the refusal never quotes the secret)
    assert not _remote_holds(tmp_path, TOKEN)
    assert seg.read_text("utf-8").splitlines() == lines  # nothing lost: the line is where it was
    assert not subprocess.run(["git", "-C", str(one), "diff", "--cached", "--quiet"], check=False).returncode == 1

    # taken out by hand (it has no id to purge by): the next sync sends the rest
    om(one, "append", "one: a record written meanwhile")
    kept = [x for x in seg.read_text("utf-8").splitlines() if TOKEN not in x]
    seg.write_text("\n".join(kept) + "\n", "utf-8")
    report = sync(one)
    assert report["pushed"] and not _remote_holds(tmp_path, TOKEN)
    assert _remote_holds(tmp_path, "a record written meanwhile")


@pytest.mark.long
def test_a_secret_typed_into_a_hot_file_is_not_pushed_and_a_record_is_named_by_id(tmp_path: Path) -> None:
    one, _ = pair(tmp_path)
    om(one, "add", "deploy notes live in docs/deploy.md")
    sync(one)
    memory = one / "MEMORY.md"
    memory.write_text(memory.read_text("utf-8") + f"\n§\nthe ci token is {TOKEN}\n", "utf-8")
    res = CLI("--vault", str(one), "sync", "--json", env=ENV)
    assert res.exit_code == 1, res.stdout
    error = json.loads(res.stdout)["error"]
    assert error["file"] == "MEMORY.md" and error["rule"] == "github_token"
    assert "MEMORY.md line" in error["message"] and "optmem remove" in error["message"]
    assert not _remote_holds(tmp_path, TOKEN)
    assert TOKEN in memory.read_text("utf-8")

    # a record line with an id (written with --allow-unsafe): purge is named, with its id
    memory.write_text(memory.read_text("utf-8").replace(f"\n§\nthe ci token is {TOKEN}\n", "\n"), "utf-8")
    rec = om(one, "append", f"ci token {TOKEN}", "--allow-unsafe")
    res = CLI("--vault", str(one), "sync", "--json", env=ENV)
    assert res.exit_code == 1, res.stdout
    error = json.loads(res.stdout)["error"]
    assert error["id"] == rec["id"] and f"optmem purge {rec['id']}" in error["message"]
    assert not _remote_holds(tmp_path, TOKEN)
    om(one, "purge", "--origin", "user", rec["id"], "--yes")
    assert sync(one)["pushed"] and not _remote_holds(tmp_path, TOKEN)
