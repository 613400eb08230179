"""Where a clone keeps its own notes (review 15): the ids it purged, the releases it made, the ids
the log held. In a vault that lies in a git work tree they live in its git directory, where no
pull, merge or checkout writes; a vault outside git keeps them in `.clone/`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_git import git
from test_release_lines import INJECTION
from test_sync import CLI, ENV, om, pair, sync

from optmem.lost import purged_hashes
from optmem.vault import Vault

NOTES = ("purged", "releases", "held")


def _crafted(two: Path, names: tuple[str, ...] = NOTES, text: str = "") -> None:
    """What a crafted commit does, made on `two` by hand: `.clone/` files tracked, with `text`."""
    (two / ".clone").mkdir(exist_ok=True)
    for name in names:
        (two / ".clone" / name).write_text(text)
        git(two, "add", "-f", f".clone/{name}")
    git(two, "commit", "-qm", "by hand: notes tracked")
    git(two, "push", "-q")


def _purged_and_released(tmp_path: Path) -> tuple[Path, Path, str, str]:
    """Two synced clones; one purged a record and released a held one."""
    one, two = pair(tmp_path)
    om(one, "append", "one: a record")
    sync(one), sync(two), sync(one)
    gone = om(one, "append", "my phone is 138-0000-1111")["id"]
    held = om(one, "append", INJECTION)["id"]
    assert om(one, "release", held, "--origin", "user")["status"] == "released"
    om(one, "purge", "--origin", "user", gone, "--yes")
    sync(one), sync(two)
    return one, two, gone, held


@pytest.mark.long
def test_a_hand_pull_that_tracks_clone_notes_leaves_this_clones_own_lists(tmp_path):
    """Finding 1: `.clone/` lies in the work tree, so a hand `git pull` of a crafted commit that
    tracks `.clone/purged` and `.clone/releases` wrote over this clone's purge and release lists
    (git writes over an ignored file). They live in the git directory now: the pull leaves them."""
    one, two, gone, held = _purged_and_released(tmp_path)
    vault = Vault(one)
    purged, released = purged_hashes(vault), vault.own_releases()
    assert purged and released
    _crafted(two)
    git(one, "pull", "-q", "--no-rebase")
    assert (one / ".clone" / "purged").read_text() == ""  # (what git wrote: no one's note)
    vault = Vault(one)
    assert purged_hashes(vault) == purged and vault.own_releases() == released
    om(one, "reindex")
    assert om(one, "get", held)["record"]["status"] == "current"
    assert not any(h["id"] == gone for h in om(one, "search", "phone")["hits"])
    report = sync(one)
    assert report["untracked_local"] == [f".clone/{n}" for n in sorted(NOTES)], report
    assert purged_hashes(Vault(one)) == purged


def _as_an_older_optmem_left_it(vault_path: Path) -> dict[str, str]:
    """Put the own notes back in `.clone/`, where the twelfth stop's optmem kept them (and no
    mark that they were moved): what each held."""
    import shutil

    own = Vault(vault_path).own_dir
    held = {p.name: p.read_text() for p in own.iterdir() if p.name != "clone-moved"}
    (vault_path / ".clone").mkdir(exist_ok=True)
    (vault_path / ".clone" / ".gitignore").write_text("*\n")
    for name, text in held.items():
        (vault_path / ".clone" / name).write_text(text)
    shutil.rmtree(own)
    return held


def test_notes_an_older_optmem_kept_in_clone_move_into_the_git_directory_once(tmp_path):
    """A vault in git whose notes an older optmem kept in `.clone/`: read from there until the
    first lock moves them (nothing lost); a move cut short is finished by the next lock; once
    moved, a file that appears in `.clone/` again is no note of this clone's."""
    from optmem.lost import id_hash

    vault_path = tmp_path / "vault"
    vault_path.mkdir()
    git(vault_path, "init", "-q")
    gone = om(vault_path, "append", "my phone is 138-0000-1111")["id"]
    held = om(vault_path, "append", INJECTION)["id"]
    om(vault_path, "release", held, "--origin", "user")
    om(vault_path, "purge", "--origin", "user", gone, "--yes")
    own = vault_path / ".git" / "optmem" / "top"
    assert {p.name for p in own.iterdir()} >= {"purged", "releases", "held", "clone-moved"}
    assert not (vault_path / ".clone").exists()
    purged, released = purged_hashes(Vault(vault_path)), Vault(vault_path).own_releases()
    kept = _as_an_older_optmem_left_it(vault_path)
    assert purged_hashes(Vault(vault_path)) == purged and Vault(vault_path).own_releases() == released
    # a move cut short: the purge list appended in the git directory, `.clone/purged` not yet removed
    own.mkdir(parents=True)
    (own / "purged").write_text(kept["purged"])
    om(vault_path, "append", "a write takes the lock")
    assert not (vault_path / ".clone").exists() and (own / "clone-moved").is_file()
    assert set((own / "purged").read_text().split()) == set(kept["purged"].split())
    assert set((own / "releases").read_text().split()) == set(kept["releases"].split())
    assert purged_hashes(Vault(vault_path)) == purged and Vault(vault_path).own_releases() == released
    assert om(vault_path, "get", held)["record"]["status"] == "current"
    # moved once: what appears in `.clone/` later (a `git reset` that left a pulled file) is no note
    (vault_path / ".clone").mkdir()
    (vault_path / ".clone" / "purged").write_text(id_hash(held) + "\n")
    om(vault_path, "append", "another write")
    assert purged_hashes(Vault(vault_path)) == purged
    assert (vault_path / ".clone" / "purged").is_file()


@pytest.mark.long
def test_a_pull_that_wrote_over_notes_not_yet_moved_is_said_by_sync_and_doctor(tmp_path):
    """Finding 6: a hand `git pull` wrote git's `.clone/purged` over this clone's, which an older
    optmem kept there: the sync that takes it out of git says what this clone kept there is gone
    (not "this clone's own kept"), and doctor notes it. Once the notes are in the git directory, a
    pull writes over nothing of theirs, and the sync says this clone's own were kept."""
    one, two, gone, _ = _purged_and_released(tmp_path)
    _as_an_older_optmem_left_it(one)
    _crafted(two, ("purged",))
    git(one, "pull", "-q", "--no-rebase")
    res = CLI("--vault", str(one), "sync", "--json", env=ENV)
    assert res.exit_code == 0, res
    assert "had already written over .clone/purged" in res.stderr, res.stderr
    assert "is gone" in res.stderr and "this clone's own kept" not in res.stderr
    assert json.loads(res.stdout)["untracked_local"] == [".clone/purged"]
    doctor = json.loads(CLI("--vault", str(one), "doctor", "--json", env=ENV).stdout)
    assert any("git tracks .clone/purged" in n for n in doctor["notes"]), doctor["notes"]
    assert Vault(one).own_releases()  # (the notes git did not write over were moved)
    # the notes in the git directory now: another such commit writes over nothing of this clone's
    sync(two)
    _crafted(two, ("purged", "releases"))
    git(one, "pull", "-q", "--no-rebase")
    res = CLI("--vault", str(one), "sync", "--json", env=ENV)
    assert "this clone's own kept" in res.stderr and "written over" not in res.stderr, res.stderr


@pytest.mark.long
def test_a_pull_that_wrote_over_notes_an_earlier_command_moved_is_said_as_gone_by_sync(tmp_path):
    """Review 16, finding 6: when an earlier command (an `append`) did the move and found
    `.clone/purged` written over by a hand pull, the sync that took it out of git said "this
    clone's own kept" — the move's finding lived only in that process. The sync reads it from the
    move's note (`lost.jsonl`, what "own") and says what this clone kept there is gone."""
    one, two, _, _ = _purged_and_released(tmp_path)
    _as_an_older_optmem_left_it(one)
    _crafted(two, ("purged",))
    git(one, "pull", "-q", "--no-rebase")
    res = CLI("--vault", str(one), "append", "a write moves the notes first", "--json", env=ENV)
    assert res.exit_code == 0 and "git tracks .clone/purged" in res.stderr, res.stderr
    res = CLI("--vault", str(one), "sync", "--json", env=ENV)
    assert res.exit_code == 0, res
    assert "had already written over .clone/purged" in res.stderr, res.stderr
    assert "is gone" in res.stderr and "this clone's own kept" not in res.stderr


def test_files_md_names_each_mark_a_clone_keeps_once_and_where_its_notes_live():
    """Finding 5: `.cache/releases-started` went unnamed in docs/files.md (so did `sync-head`)."""
    from optmem.integrations.sync import SYNCED
    from optmem.lost import HELD
    from optmem.vault import CLONE_MOVED, OWN_FILES, OWN_MOVED, RELEASES, RELEASES_STARTED

    text = (Path(__file__).parent.parent / "docs" / "files.md").read_text("utf-8")
    for name in (OWN_MOVED, RELEASES_STARTED, SYNCED, CLONE_MOVED, RELEASES, HELD, *OWN_FILES):
        assert f"`{name}`" in text or f"/{name}`" in text, name
    assert ".git/optmem/top/" in text


def _unwritable_git_dir(git_dir: Path) -> None:
    """Make the git directory one this process cannot write its notes in: `chmod -R a-w` (an agent
    sandbox keeps `.git` read-only and the work tree writable) — and, as root ignores modes, a FILE
    where the notes' folder goes, so it cannot be a folder either way."""
    import os

    (git_dir / "optmem").write_text("not a folder\n")
    for folder, _, files in os.walk(git_dir):
        for name in [*files, "."]:
            p = Path(folder) / name
            p.chmod(p.stat().st_mode & ~0o222)


def _writable_again(git_dir: Path) -> None:
    import os

    for folder, _, files in os.walk(git_dir):
        for name in [*files, "."]:
            p = Path(folder) / name
            p.chmod(p.stat().st_mode | 0o200)
    (git_dir / "optmem").unlink()


def test_a_git_directory_that_cannot_be_written_keeps_the_own_notes_in_clone(tmp_path):
    """Review 16, finding 2: with a read-only git directory every write failed (`unwritable …
    .git/optmem`). The own notes are then kept in `.clone/`, as before the move — said once, and by
    doctor — and the first lock that can write the git directory moves them there."""
    proj = tmp_path / "proj"
    git(tmp_path, "init", "-q", "-b", "main", str(proj))
    vault = proj / ".optmem"
    om(vault, "init")
    _unwritable_git_dir(proj / ".git")
    try:
        res = CLI("--vault", str(vault), "append", "kept while .git is read-only", "--json", env=ENV)
        assert res.exit_code == 0, (res.stdout, res.stderr)
        first = json.loads(res.stdout)["id"]
        assert "git directory cannot be written" in res.stderr, res.stderr
        gone = om(vault, "append", "my phone is 138-0000-1111")["id"]
        res = CLI("--vault", str(vault), "purge", "--origin", "user", gone, "--yes", "--json", env=ENV)
        assert res.exit_code == 0, (res.stdout, res.stderr)
        assert "git directory cannot be written" not in res.stderr  # (said once)
        assert (vault / ".clone" / "purged").read_text().strip()
        purged = purged_hashes(Vault(vault))
        assert purged
        notes = om(vault, "doctor")
        assert any("git directory cannot be written" in n for n in json.dumps(notes).split('"')), notes
        assert om(vault, "get", first)["record"]["id"] == first
    finally:
        _writable_again(proj / ".git")
    om(vault, "append", "and once .git can be written again")
    assert not (vault / ".clone").exists()
    assert (proj / ".git" / "optmem" / "in-.optmem" / "purged").read_text().strip()
    assert purged_hashes(Vault(vault)) == purged
    assert not any(h["id"] == gone for h in om(vault, "search", "phone")["hits"])


def test_doctor_names_the_notes_a_vault_moved_in_its_work_tree_left_behind(tmp_path):
    """Review 16, finding 5: `mv .optmem memory` inside a repository left the own notes under
    `.git/optmem/in-.optmem`; the vault at its new place read an empty purge list, and nothing said
    so. Doctor names the folder no vault claims while this vault has none."""
    proj = tmp_path / "proj"
    git(tmp_path, "init", "-q", "-b", "main", str(proj))
    om(proj / ".optmem", "init")
    gone = om(proj / ".optmem", "append", "my phone is 138-0000-1111")["id"]
    om(proj / ".optmem", "purge", "--origin", "user", gone, "--yes")
    assert (proj / ".git" / "optmem" / "in-.optmem" / "purged").is_file()
    (proj / ".optmem").rename(proj / "memory")
    notes = om(proj / "memory", "doctor")["notes"]
    said = [n for n in notes if "in-.optmem" in n]
    assert said and "rename that folder to in-memory" in said[0], notes
    (proj / ".git" / "optmem" / "in-.optmem").rename(proj / ".git" / "optmem" / "in-memory")
    assert purged_hashes(Vault(proj / "memory"))
    assert not [n for n in om(proj / "memory", "doctor")["notes"] if "rename that folder" in n]


def test_a_move_of_the_own_notes_that_fails_never_fails_the_write(tmp_path):
    """Review 16, finding 2 (the migration step must never make the lock fail): a note in the git
    directory that cannot be written (a folder where the file goes) failed every write while an
    older optmem's `.clone/` waited to move. The write goes on, says so, and `.clone/` stays read."""
    proj = tmp_path / "proj"
    git(tmp_path, "init", "-q", "-b", "main", str(proj))
    vault = proj / ".optmem"
    om(vault, "init")
    gone = om(vault, "append", "my phone is 138-0000-1111")["id"]
    om(vault, "purge", "--origin", "user", gone, "--yes")
    held = _as_an_older_optmem_left_it(vault)
    assert "purged" in held
    (proj / ".git" / "optmem" / "in-.optmem").mkdir(parents=True, exist_ok=True)
    (proj / ".git" / "optmem" / "in-.optmem" / "purged").mkdir()  # (a folder: no note can be appended)
    res = CLI("--vault", str(vault), "append", "a write goes on", "--json", env=ENV)
    assert res.exit_code == 0, (res.stdout, res.stderr)
    assert "could not be moved" in res.stderr, res.stderr
    assert (vault / ".clone" / "purged").read_text() == held["purged"]
    assert purged_hashes(Vault(vault))  # (read from .clone/, not yet moved)
    (proj / ".git" / "optmem" / "in-.optmem" / "purged").rmdir()
    om(vault, "append", "the next write moves them")
    assert not (vault / ".clone" / "purged").exists()
    assert (proj / ".git" / "optmem" / "in-.optmem" / "purged").read_text().strip()
