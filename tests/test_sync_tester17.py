"""Two clones as tester17 used them (findings 2, 3 and 4): a hot file git's own line merge left
with conflict markers, two machines' handoffs for one project, and a sync that resumes a merge a
person finished — each with real git, a bare origin and two clones."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import pull_with_driver
from test_git import git
from test_sync import CLI, ENV, om, pair, sync


def _entries(vault: Path, name: str = "MEMORY.md") -> list[str]:
    return [e.strip() for e in (vault / name).read_text("utf-8").split("\n§\n") if e.strip()]


def _problems(vault: Path) -> list[dict[str, str]]:
    """`doctor`'s problems (exit 0 or 1)."""
    res = CLI("--vault", str(vault), "doctor", "--json", env=ENV)
    assert res.exit_code in (0, 1), res.stderr
    problems: list[dict[str, str]] = json.loads(res.stdout)["problems"]
    return problems


def _pull_by_hand(clone: Path, style: str = "") -> subprocess.CompletedProcess[str]:
    """`git pull` in `clone`, its merge driver git's own line merge (what the driver falls back to
    when the venv it names is gone and no optmem is on PATH). `style`: "--diff3" or "--zdiff3"
    (merge.conflictStyle), the base's lines between `|||||||` and `=======`."""
    return pull_with_driver(clone, f"git merge-file {style} -L ours -L base -L theirs %A %O %B".replace("  ", " "))


def _one_entry_replaced_on_both(tmp_path: Path) -> tuple[Path, Path]:
    """Two clones that each replaced the same hot entry; the first has synced its own."""
    one, two = pair(tmp_path)
    om(one, "add", "prefers very short answers")
    sync(one), sync(two)
    om(one, "replace", "very short answers", "very short answers, 不要客套")
    om(two, "replace", "very short answers", "very short answers, bullet points")
    sync(one)
    return one, two


@pytest.mark.long
def test_sync_merges_again_entry_by_entry_a_hot_file_git_left_with_markers(tmp_path: Path) -> None:
    one, two = _one_entry_replaced_on_both(tmp_path)
    assert _pull_by_hand(two).returncode != 0
    assert "<<<<<<<" in (two / "MEMORY.md").read_text("utf-8")
    advice = next(p for p in _problems(two) if p["code"] == "merge_conflict")["message"]
    assert "`optmem sync` merges it again" in advice and "a line holding only `§` between each two" in advice

    report = sync(two)
    assert report["hot_merged"] == ["MEMORY.md"], report
    both = ["prefers very short answers, bullet points", "prefers very short answers, 不要客套"]
    assert sorted(_entries(two)) == both
    sync(one)
    for clone in (one, two):
        assert sorted(_entries(clone)) == sorted(_entries(two))
        (conflict,) = om(clone, "conflicts")["conflicts"]
        assert conflict["file"] == "MEMORY.md"
        assert not [p for p in _problems(clone) if "markers" in p["message"] or p["code"] == "merge_unresolved"]


@pytest.mark.long
def test_an_entry_typed_between_the_markers_is_left_for_the_person(tmp_path: Path) -> None:
    """A file mid-merge a person has begun to edit (an entry neither side wrote) is theirs: sync
    does not merge it again over their words; it stops, as before, naming the file."""
    one, two = _one_entry_replaced_on_both(tmp_path)
    _pull_by_hand(two)
    path = two / "MEMORY.md"
    path.write_text(path.read_text("utf-8").replace("=======", "=======\nmy own words"), "utf-8")
    res = CLI("--vault", str(two), "sync", "--json", env=ENV)
    assert res.exit_code == 3 and "MEMORY.md" in res.stdout
    assert "my own words" in path.read_text("utf-8")


@pytest.mark.long
def test_a_merge_a_person_finished_without_git_add_is_left_as_they_made_it(tmp_path: Path) -> None:
    """Review19 finding 5: the markers and one side's version deleted, `git add` not yet run: every
    entry is one git knows, yet sync does not merge the file again (both versions back) — it stops."""
    one, two = _one_entry_replaced_on_both(tmp_path)
    _pull_by_hand(two)
    path = two / "MEMORY.md"
    path.write_text("prefers very short answers, 不要客套\n", "utf-8")
    res = CLI("--vault", str(two), "sync", "--json", env=ENV)
    assert res.exit_code == 3 and json.loads(res.stdout)["error"]["files"] == ["MEMORY.md"], res.stdout
    assert _entries(two) == ["prefers very short answers, 不要客套"]
    git(two, "add", "MEMORY.md"), git(two, "commit", "-q", "--no-edit")
    sync(two)
    assert _entries(two) == ["prefers very short answers, 不要客套"]


@pytest.mark.long
@pytest.mark.parametrize("style", ["--diff3", "--zdiff3"])
def test_a_hot_file_left_in_diff3_style_reads_without_the_base_and_merges_again(tmp_path: Path, style: str) -> None:
    """Review19 finding 6: merge.conflictStyle diff3/zdiff3 adds `||||||| base` and the base's lines;
    neither reads as an entry (show, context), and sync merges the file again entry by entry."""
    one, two = _one_entry_replaced_on_both(tmp_path)
    assert _pull_by_hand(two, style).returncode != 0
    raw = (two / "MEMORY.md").read_text("utf-8")
    assert "||||||| base\nprefers very short answers\n=======" in raw, raw
    both = ["prefers very short answers, bullet points", "prefers very short answers, 不要客套"]
    shown = om(two, "show", "--target", "memory")["files"][0]["entries"]
    assert sorted(e["text"] for e in shown) == both
    context = CLI("--vault", str(two), "context", env=ENV).stdout
    assert "|||||||" not in context and "bullet points" in context
    assert not [line for line in context.splitlines() if line.rstrip().endswith("prefers very short answers")]

    report = sync(two)
    assert report["hot_merged"] == ["MEMORY.md"], report
    assert sorted(_entries(two)) == both


@pytest.mark.long
def test_a_sync_that_finishes_a_stopped_merge_names_the_hot_entries_it_brought(tmp_path: Path) -> None:
    """Finding 4: the merge stopped on optmem.toml (changed on both sides); a person merged it and
    committed; the next sync reports the entry the other machine typed into MEMORY.md (`hot_in`),
    as a sync that merged at once does — with the journal record that machine wrote of it."""
    one, two = pair(tmp_path)
    om(one, "add", "uses pnpm")
    sync(one), sync(two)
    (one / "optmem.toml").write_text("[limits]\nmemory = 3000\n", "utf-8")
    (two / "optmem.toml").write_text("[limits]\nmemory = 2500\n", "utf-8")
    with (one / "MEMORY.md").open("a", encoding="utf-8") as f:
        f.write("§\n桌面上手工加的一条：构建用 make\n")
    sync(one)
    typed = [r for r in om(one, "search", "构建用 make")["hits"] if r["kind"] == "memory"]
    assert len(typed) == 1  # journalled there, as that machine's edit
    stopped = CLI("--vault", str(two), "sync", "--json", env=ENV)
    assert stopped.exit_code == 3 and json.loads(stopped.stdout)["error"]["files"] == ["optmem.toml"]
    (two / "optmem.toml").write_text("[limits]\nmemory = 3000\n", "utf-8")
    git(two, "add", "optmem.toml"), git(two, "commit", "-q", "--no-edit")

    report = sync(two)
    assert [(h["file"], h["text"], h["journal"]) for h in report["hot_in"]] == [
        ("MEMORY.md", "桌面上手工加的一条：构建用 make", typed[0]["id"])
    ], report


@pytest.mark.long
def test_hot_in_names_the_journal_record_the_other_clone_wrote(tmp_path: Path) -> None:
    one, two = pair(tmp_path)
    sync(one), sync(two)
    added = om(one, "add", "prefers tabs")
    sync(one)
    (came,) = sync(two)["hot_in"]
    assert came["text"] == "prefers tabs" and came["journal"] in added["journal"], (came, added)


@pytest.mark.long
def test_two_machines_handoffs_for_one_project_the_hidden_ones_next_is_named(tmp_path: Path) -> None:
    """Finding 3: each machine wrote a handoff for webapp before syncing; the later is the one
    `handoff read` and `context` show. Each sync that brings the two together names the other,
    with its open items — on the machine whose handoff is shown and on the one whose is hidden."""
    one, two = pair(tmp_path)
    om(one, "add", "uses pnpm")
    sync(one), sync(two)
    om(one, "handoff", "write", "-p", "webapp", "--done", "端口改到 9090", "--next", "更新 nginx")
    om(two, "handoff", "write", "-p", "webapp", "--done", "staging DNS switched", "--next", "announce in #dev")
    laptop = om(one, "handoff", "read", "-p", "webapp")["handoffs"][0]["id"]
    sync(one)
    desktop_report = sync(two)
    (beside,) = desktop_report["handoffs_beside"]
    assert (beside["project"], beside["id"], beside["next"]) == ("webapp", laptop, ["更新 nginx"]), desktop_report
    told = CLI("--vault", str(one), "sync", env=ENV)  # (what a person reads)
    assert told.exit_code == 0 and f"id {laptop[-8:]}" in told.stdout and "its next: 更新 nginx" in told.stdout
    assert "handoff read -p webapp --history 2" in told.stdout
    assert sync(two)["handoffs_beside"] == []  # said once, by the syncs that brought them together
    # later: a handoff written after seeing the other's hides nothing unsaid
    om(one, "handoff", "read", "-p", "webapp")  # (the session on the laptop reads both)
    om(one, "handoff", "write", "-p", "webapp", "--next", "更新 nginx", "--next", "announce in #dev")
    sync(one)
    assert sync(two)["handoffs_beside"] == []
