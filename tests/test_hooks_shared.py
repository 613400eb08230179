"""`optmem hooks claude-code` writes into the team-shared `.claude/settings.json` what works on
every clone (issue 45 §3): `optmem` from PATH, the vault named by `$CLAUDE_PROJECT_DIR` or
`$HOME` — never this machine's interpreter or folders — and says so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG, Cli

EVENTS = {"SessionStart", "PreCompact", "SessionEnd"}


def _commands(project: Path) -> dict[str, list[str]]:
    wired = json.loads((project / ".claude" / "settings.json").read_text("utf-8"))["hooks"]
    return {e: [h["command"] for entry in wired[e] for h in entry["hooks"]] for e in wired}


def _session_start(command: str, project: Path, home: Path, *, told: bool = True) -> subprocess.CompletedProcess[str]:
    """The hook as Claude Code runs it: a shell command, `optmem` on PATH (this interpreter's
    folder), the event on stdin; `CLAUDE_PROJECT_DIR` set (from another folder), or — as some
    Claude Code versions do — not set (in the project's folder)."""
    event = {"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(project)}
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin",
        "HOME": str(home),
    }
    if told:
        env["CLAUDE_PROJECT_DIR"] = str(project)
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env=env,
        cwd="/" if told else project,
        timeout=HANG,
        check=False,
    )


@pytest.mark.long
def test_a_vault_inside_the_project_is_named_by_claude_project_dir_and_works_in_every_clone(tmp_path):
    cli = Cli()
    project = tmp_path / "webapp"
    project.mkdir()
    vault = project / ".optmem"
    cli.json("--vault", str(vault), "add", "webapp: FastAPI backend", "--project", "webapp")
    os.chdir(project)
    said = cli.json("--vault", str(vault), "hooks", "claude-code")
    assert set(said["added"]) == EVENTS and said["portable"] is True
    commands = _commands(project)
    (command,) = set(c for cs in commands.values() for c in cs)
    assert command.startswith("optmem ") and "${CLAUDE_PROJECT_DIR" in command
    assert str(tmp_path) not in command and sys.executable not in command  # nothing of this machine
    clone = tmp_path / "elsewhere" / "webapp"  # another clone of the project
    shutil.copytree(project, clone)
    for where, told in ((project, True), (clone, True), (clone, False)):
        res = _session_start(command, where, tmp_path / "home", told=told)
        assert res.returncode == 0 and "webapp: FastAPI backend" in res.stdout, (where, told, res.stderr)


@pytest.mark.long
def test_a_vault_in_the_home_folder_is_named_by_home_and_an_old_absolute_hook_is_replaced(tmp_path):
    cli = Cli()
    home = tmp_path / "home"  # (the test's HOME)
    vault = home / ".optmem"
    project = tmp_path / "api"
    (project / ".claude").mkdir(parents=True)
    old = f"{sys.executable} -m optmem --vault {vault} hook claude-code"  # what an older optmem wrote
    mine = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}}
    mine["hooks"]["SessionStart"].append({"hooks": [{"type": "command", "command": old, "timeout": 30}]})
    (project / ".claude" / "settings.json").write_text(json.dumps(mine), "utf-8")
    cli.json("--vault", str(vault), "add", "api: uses pnpm", "--project", "api")
    os.chdir(project)
    said = cli.json("--vault", str(vault), "hooks", "claude-code")
    assert said["portable"] is True and "$HOME" in said["command"]
    commands = _commands(project)
    assert commands["SessionStart"] == ["echo hi", said["command"]]  # theirs kept, ours once
    assert all(str(tmp_path) not in c for cs in commands.values() for c in cs)
    res = _session_start(said["command"], project, home)
    assert res.returncode == 0 and "api: uses pnpm" in res.stdout, res.stderr
    human = cli("--vault", str(vault), "hooks", "claude-code")
    assert "already wired" in human.stdout and "every clone" in human.stdout


def test_a_vault_outside_home_and_project_is_named_by_its_path_and_the_answer_says_so(tmp_path):
    cli = Cli()
    project = tmp_path / "api"
    project.mkdir()
    os.chdir(project)
    vault = tmp_path / "srv" / "memory"
    said = cli.json("--vault", str(vault), "hooks", "claude-code")
    assert said["portable"] is False and str(vault) in said["command"]
    assert any("this machine" in n and str(vault) in n for n in said["notes"]), said
    assert said["command"].startswith("optmem ")
