"""A vault inside the code repository it records (tenth stop, item 6): committing the vault does
not record another commit (the work tree comes clean), `hooks install` says how it goes, and a
Claude Code hook run from a subfolder finds the repository's vault or refuses — it never makes a
stray vault there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_optmem
from test_git import commits, git


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "app"
    (repo / "src" / "sub").mkdir(parents=True)
    git(repo, "init", "-q")
    return repo, repo / ".optmem"


@pytest.mark.long
def test_a_commit_of_the_vault_alone_is_not_recorded_and_the_tree_comes_clean(tmp_path):
    repo, vault = _repo(tmp_path)
    res = run_optmem("--vault", str(vault), "hooks", "install", "--repo", str(repo), "--json")
    got = json.loads(res.stdout)
    assert ".git/info/exclude" in got["note"] and "not recorded" in res.stderr
    (repo / "a.txt").write_text("a")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-qm", "add a")
    assert [c["text"] for c in commits(vault)] == ["add a"]
    assert git(repo, "status", "--porcelain").stdout.strip()  # the record changed the vault
    git(repo, "add", ".optmem")
    git(repo, "commit", "-qm", "memory")
    assert [c["text"] for c in commits(vault)] == ["add a"]  # not recorded: nothing changed the vault
    assert git(repo, "status", "--porcelain").stdout.strip() == ""
    # a change committed with the vault is recorded as ever
    (repo / "b.txt").write_text("b")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "add b")
    assert [c["text"] for c in commits(vault)] == ["add a", "add b"]


@pytest.mark.long
def test_install_says_nothing_of_a_vault_git_ignores(tmp_path):
    repo, vault = _repo(tmp_path)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text(".optmem/\n")
    got = json.loads(run_optmem("--vault", str(vault), "hooks", "install", "--repo", str(repo), "--json").stdout)
    assert "note" not in got


def _session_end(cwd: Path, vault_arg: str) -> tuple[dict, str]:
    event = {"hook_event_name": "SessionEnd", "session_id": "s", "cwd": str(cwd), "transcript_path": str(cwd / "none")}
    res = run_optmem("--vault", vault_arg, "hook", "claude-code", "--json", input=json.dumps(event), cwd=cwd)
    assert res.returncode == 0
    return (json.loads(res.stdout) if res.stdout else {}), res.stderr


@pytest.mark.long
def test_a_hook_in_a_subfolder_finds_the_repositorys_vault(tmp_path, monkeypatch):
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    repo, vault = _repo(tmp_path)
    assert run_optmem("--vault", str(vault), "init").returncode == 0
    _session_end(repo / "src" / "sub", "./.optmem")
    assert not (repo / "src" / "sub" / ".optmem").exists()
    start = {"hook_event_name": "SessionStart", "session_id": "s", "cwd": str(repo / "src" / "sub")}
    assert run_optmem("--vault", str(vault), "handoff", "write", "-p", "app", "--next", "ship it").returncode == 0
    res = run_optmem("--vault", "./.optmem", "hook", "claude-code", input=json.dumps(start), cwd=repo / "src" / "sub")
    assert "ship it" in res.stdout


@pytest.mark.long
def test_a_hook_in_a_subfolder_with_no_vault_above_refuses_and_makes_none(tmp_path, monkeypatch):
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    repo, _ = _repo(tmp_path)
    _, err = _session_end(repo / "src" / "sub", "./.optmem")
    assert "nothing was written" in err and str(repo) in err
    assert not (repo / "src" / "sub" / ".optmem").exists() and not (repo / ".optmem").exists()
    # at the repository's top, a project's first session may make its vault, as before
    _, err = _session_end(repo, "./.optmem")
    assert "nothing was written" not in err and "transcript" in err
