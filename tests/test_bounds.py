"""Nothing a vault carries runs or exhausts the machine: git runs with its code-running settings
off, every file and pipe is read with a size bound, links out of the vault are refused on every
read, the summariser's output is bounded, and a full stdout is a clear error."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from conftest import optmem_cmd


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, timeout=60)


def _booby_trapped_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A folder that carries its own .git/config, whose fsmonitor and hooks write a marker."""
    repo = tmp_path / "carried"
    repo.mkdir()
    _git(repo, "init", "-q")
    marker = tmp_path / "ran"
    script = tmp_path / "trap.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\nexit 0\n')
    script.chmod(0o755)
    hooks = repo / ".git" / "hooks"
    for name in ("post-index-change", "reference-transaction", "pre-commit", "post-commit"):
        (hooks / name).write_text(f"#!/bin/sh\necho hook {name} >> {marker}\n")
        (hooks / name).chmod(0o755)
    _git(repo, "config", "core.fsmonitor", str(script))
    _git(repo, "config", "core.pager", str(script))
    _git(repo, "config", "log.showSignature", "true")
    _git(repo, "config", "gpg.program", str(script))
    _git(repo, "config", "filter.trap.clean", str(script))
    _git(repo, "config", "filter.trap.smudge", str(script))
    (repo / ".gitattributes").write_text("* filter=trap\n")
    return repo, marker


def test_reads_never_run_what_a_carried_git_config_names(tmp_path, cli):
    repo, marker = _booby_trapped_repo(tmp_path)
    vault = repo / "mem"
    env = {"OPTMEM_VAULT": str(vault)}
    assert cli("--vault", str(vault), "init").exit_code == 0
    assert cli("--vault", str(vault), "add", "the deploy port is 8080").exit_code == 0
    # git sees a file (so its index is read), and the vault was handed over as it is
    _git(repo, "add", "-A")
    marker.unlink(missing_ok=True)
    hot = vault / "MEMORY.md"
    hot.write_text(hot.read_text() + "\n§\nthe staging host is blue\n")  # a hot file changed by hand
    (vault / "USER.md").write_text("likes short answers\n")  # stat-dirty for git, too
    event = json.dumps({"hook_event_name": "SessionStart", "cwd": str(repo), "source": "startup"})
    for args, feed in (
        (["context"], None),
        (["search", "staging"], None),
        (["show"], None),
        (["doctor"], None),
        (["hook", "claude-code"], event),
    ):
        res = subprocess.run(
            [*optmem_cmd(), *args],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            cwd=repo,
            input=feed,
            timeout=120,
        )
        assert res.returncode in (0, 1), (args, res.stderr)
        assert not marker.exists(), (args, marker.read_text())
    assert (
        "blue"
        in subprocess.run(
            [*optmem_cmd(), "context"], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
        ).stdout
    )


def test_a_commit_is_recorded_without_running_what_the_repository_config_names(tmp_path, cli, vault_path):
    repo, marker = _booby_trapped_repo(tmp_path)
    (repo / "a.txt").write_text("one\n")
    _git(repo, "-c", "core.hooksPath=/dev/null", "add", "a.txt")
    _git(repo, "-c", "core.hooksPath=/dev/null", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "first")
    marker.unlink(missing_ok=True)
    out = cli.json("hook", "git-commit", "--repo", str(repo))
    assert out["status"] == "recorded" and out["subject"] == "first"
    assert not marker.exists(), marker.read_text()
