"""A vault or a repository moved or renamed by its owner (tenth stop, item 4): what names "this
clone" is not its path alone — trust, the writer's folder and the project of a repository's
commits survive `mv`, while a copy or a new clone is still a clone of its own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import run_optmem
from test_git import commits, git
from test_trust import RULE, _cloned, _json, _unverified, om

from optmem.trust import trust_file


@pytest.mark.long
def test_a_trusted_clone_moved_or_renamed_stays_trusted(tmp_path):
    _, cloned = _cloned(tmp_path)
    _json(cloned, "trust", "--origin", "user")
    assert not _unverified(cloned)
    moved = tmp_path / "elsewhere" / "renamed"
    moved.parent.mkdir()
    cloned.parent.rename(moved)
    assert not _unverified(moved / ".optmem")
    listed = trust_file().read_text("utf-8")  # the list now names the new path, not the old
    assert str((moved / ".optmem").resolve()) in listed and str(cloned.resolve()) not in listed
    assert _json(moved / ".optmem", "trust", "--origin", "user")["changed"] is False
    assert _json(moved / ".optmem", "trust", "--revoke")["changed"] is True
    assert _unverified(moved / ".optmem")


@pytest.mark.long
def test_a_vault_begun_in_a_repository_stays_trusted_when_the_repository_is_renamed(tmp_path):
    repo = tmp_path / "coderepo"
    repo.mkdir()
    git(repo, "init", "-q")
    om("--vault", str(repo / ".optmem"), "append", RULE, "--redline", "--origin", "user")
    om("--vault", str(repo / ".optmem"), "append", "the deploy port is 8276")
    assert "Redlines — locked rules" in _json(repo / ".optmem", "context")["text"]
    repo.rename(tmp_path / "coderepo2")
    text = _json(tmp_path / "coderepo2" / ".optmem", "context")["text"]
    assert "Redlines — locked rules" in text and "Unverified rules" not in text


@pytest.mark.long
def test_a_new_clone_at_a_moved_clones_old_path_is_not_trusted(tmp_path):
    origin, cloned = _cloned(tmp_path)
    _json(cloned, "trust", "--origin", "user")
    old = cloned.parent
    old.rename(tmp_path / "moved")
    assert not _unverified(tmp_path / "moved" / ".optmem")  # read once moved: the list follows it
    git(tmp_path, "clone", "-q", str(origin.parent), str(old))
    assert _unverified(old / ".optmem")
    assert not _unverified(tmp_path / "moved" / ".optmem")


@pytest.mark.long
def test_a_clone_moved_and_its_old_path_taken_before_it_is_read_asks_for_trust_again(tmp_path):
    origin, cloned = _cloned(tmp_path)
    _json(cloned, "trust", "--origin", "user")
    old = cloned.parent
    old.rename(tmp_path / "moved")
    git(tmp_path, "clone", "-q", str(origin.parent), str(old))
    # the listed path is there again: no sign tells a move from a copy, so neither is trusted
    assert _unverified(old / ".optmem") and _unverified(tmp_path / "moved" / ".optmem")
    _json(tmp_path / "moved" / ".optmem", "trust", "--origin", "user")
    assert not _unverified(tmp_path / "moved" / ".optmem")


@pytest.mark.long
def test_a_copied_clone_is_not_trusted_while_the_original_is_there(tmp_path):
    _, cloned = _cloned(tmp_path)
    _json(cloned, "trust", "--origin", "user")
    copy = tmp_path / "app2"
    shutil.copytree(cloned.parent, copy, symlinks=True)  # cp -r app app2: the clone's mark comes too
    assert _unverified(copy / ".optmem")
    assert not _unverified(cloned)
    assert str(cloned.resolve()) in trust_file().read_text("utf-8")


def _segmented(vault: Path) -> str:
    assert om("--vault", str(vault), "append", "the deploy port is 8276").returncode == 0
    writer = str(_json(vault, "segment")["writer"])
    assert om("--vault", str(vault), "append", "the deploy host is db1").returncode == 0
    assert (vault / "log" / writer).is_dir()
    return writer


def test_a_moved_vault_keeps_its_writer(tmp_path):
    vault = tmp_path / "vm"
    writer = _segmented(vault)
    vault.rename(tmp_path / "vm-moved")
    assert om("--vault", str(tmp_path / "vm-moved"), "append", "the deploy port is 8277").returncode == 0
    assert [p.name for p in (tmp_path / "vm-moved" / "log").iterdir() if p.is_dir()] == [writer]


def test_a_new_clone_while_the_old_folders_disk_is_away_takes_no_writer_id(tmp_path):
    vault = tmp_path / "vm"
    writer = _segmented(vault)
    away = tmp_path / "unmounted"
    vault.rename(away)  # the disk holding the vault is not mounted now
    clone = tmp_path / "reclone"
    shutil.copytree(away, clone, ignore=shutil.ignore_patterns(".cache"))  # what a git clone brings
    assert om("--vault", str(clone), "append", "the deploy port is 8277").returncode == 0
    assert len([p for p in (clone / "log").iterdir() if p.is_dir()]) == 2  # a writer of its own
    away.rename(vault)  # the disk is back: its folder keeps its writer, shared with no one
    assert om("--vault", str(vault), "append", "the deploy port is 8278").returncode == 0
    assert [p.name for p in (vault / "log").iterdir() if p.is_dir()] == [writer]


def test_an_older_vault_moved_before_it_had_a_writer_mark_is_told_how_to_keep_its_one_writer(tmp_path):
    """A vault an older optmem wrote has no `.cache/writer`; moved before this optmem wrote to
    it, nothing tells the move from a new clone made while the old folder's disk is away (the
    test above), so it gets a writer of its own — never a writer id another live folder may
    hold. `doctor` says the vault may be the one moved from the listed path and how to keep its
    one writer (`segment --writer W`); once done, new records go to W's folder and the note goes."""
    vault = tmp_path / "vm"
    writer = _segmented(vault)
    (vault / ".cache" / "writer").unlink()  # (what an older optmem left: no mark)
    moved = tmp_path / "vm-moved"
    vault.rename(moved)
    assert om("--vault", str(moved), "append", "the deploy port is 8277").returncode == 0
    folders = sorted(p.name for p in (moved / "log").iterdir() if p.is_dir())
    assert len(folders) == 2 and writer in folders  # (a second writer: no guess that it is the first)
    [note] = [n for n in _json(moved, "doctor")["notes"] if "segment --writer" in n]
    assert str(vault) in note and f"`optmem segment --writer {writer}`" in note and "not a copy or a clone" in note
    assert _json(moved, "segment", "--writer", writer)["writer"] == writer
    assert om("--vault", str(moved), "append", "the deploy port is 8278").returncode == 0
    newest = max(
        (p for p in (moved / "log").glob("*/*.jsonl") if p.name != "ACCESS.jsonl"), key=lambda p: p.stat().st_mtime_ns
    )
    assert newest.parent.name == writer and "8278" in newest.read_text("utf-8")
    assert not [n for n in _json(moved, "doctor")["notes"] if "segment --writer" in n]


def test_a_copied_vault_gets_a_writer_of_its_own(tmp_path):
    vault = tmp_path / "vm"
    writer = _segmented(vault)
    shutil.copytree(vault, tmp_path / "copy")
    assert om("--vault", str(tmp_path / "copy"), "append", "the deploy port is 8277").returncode == 0
    folders = sorted(p.name for p in (tmp_path / "copy" / "log").iterdir() if p.is_dir())
    assert len(folders) == 2 and writer in folders
    assert om("--vault", str(vault), "append", "the deploy port is 8278").returncode == 0
    assert [p.name for p in (vault / "log").iterdir() if p.is_dir()] == [writer]


@pytest.mark.long
def test_a_renamed_repository_keeps_its_project(tmp_path, vault_path):
    repo = tmp_path / "coderepo"
    repo.mkdir()
    git(repo, "init", "-q")
    assert om("hooks", "install", "--repo", str(repo)).returncode == 0
    (repo / "a.txt").write_text("a")
    git(repo, "add", "."), git(repo, "commit", "-qm", "first")
    renamed = tmp_path / "coderepo2"
    repo.rename(renamed)
    (renamed / "b.txt").write_text("b")
    git(renamed, "add", "."), git(renamed, "commit", "-qm", "second")
    assert [c["project"] for c in commits(vault_path)] == ["coderepo", "coderepo"]
    start = {"hook_event_name": "SessionStart", "session_id": "s", "cwd": str(renamed), "source": "startup"}
    res = run_optmem("hook", "claude-code", "--json", input=json.dumps(start))
    assert json.loads(res.stdout)["project"] == "coderepo"  # the session's project is the commits'
    assert git(renamed, "config", "--get", "optmem.project").stdout.strip() == "coderepo"


def _earlier_commit(vault_path: Path, repo: Path, project: str) -> None:
    """A commit of `repo` recorded by an earlier optmem under `project` (its line in the log)."""
    sha = git(repo, "rev-parse", "HEAD").stdout.strip()
    rec = {"ts": "2026-11-01T10:00:00Z", "domain": "code", "project": project, "kind": "commit"}
    rec |= {"key": f"commit:{sha}", "text": "first", "evidence": sha}
    vault_path.mkdir(parents=True, exist_ok=True)
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(rec) + "\n")


@pytest.mark.long
@pytest.mark.parametrize(("folder", "earlier"), [("café", "caf"), ("naïve-ui", "na-ve-ui")])
def test_an_upgraded_vault_keeps_a_repositorys_earlier_project_name(tmp_path, vault_path, folder, earlier):
    repo = tmp_path / folder
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("a")
    git(repo, "add", "."), git(repo, "commit", "-qm", "first")
    _earlier_commit(vault_path, repo, earlier)
    assert om("hooks", "install", "--repo", str(repo)).returncode == 0
    (repo / "b.txt").write_text("b")
    git(repo, "add", "."), git(repo, "commit", "-qm", "second")
    assert [c["project"] for c in commits(vault_path)] == [earlier, earlier]
    assert git(repo, "config", "--get", "optmem.project").stdout.strip() == earlier


@pytest.mark.long
def test_a_repository_the_vault_knows_nothing_of_gets_its_name_as_written(tmp_path, vault_path):
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    (other / "a.txt").write_text("a")
    git(other, "add", "."), git(other, "commit", "-qm", "first")
    _earlier_commit(vault_path, other, "caf")  # another repository's commit under 'caf'
    repo = tmp_path / "café"
    repo.mkdir()
    git(repo, "init", "-q")
    assert om("hooks", "install", "--repo", str(repo)).returncode == 0
    (repo / "a.txt").write_text("a")
    git(repo, "add", "."), git(repo, "commit", "-qm", "first")
    assert commits(vault_path)[-1]["project"] == "café"
