"""Hermes Agent compatibility: the same files, edited by both tools (issue 11, items 2–5).

Hermes Agent's memory tool (NousResearch hermes-agent, tools/memory_tool.py) reads a file by
splitting it on "\\n§\\n" and stripping each entry, drops duplicate entries on load, and holds
an exclusive flock on `<file>.lock` while it re-reads and rewrites the file (temp file + rename).
`HERMES_WRITER` below does exactly those steps, in a separate process, so the tests exercise the
interleavings a real Hermes session causes.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import HANG, PATIENT, fenced_json, run_optmem

from optmem import memory

HERMES_WRITER = r"""
import fcntl, os, sys, tempfile, time
path, op, arg, pause = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
lock = open(path + ".lock", "a+")
fcntl.flock(lock, fcntl.LOCK_EX)
raw = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
entries = list(dict.fromkeys(e.strip() for e in raw.split("\n§\n") if e.strip()))
print("locked", flush=True)
time.sleep(pause)                               # another writer may try to get in here
if op == "add":
    entries.append(arg)
elif op == "replace":
    old, new = arg.split("=>")
    entries = [new if old in e else e for e in entries]
fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".mem_", suffix=".tmp")
with os.fdopen(fd, "w", encoding="utf-8") as f:
    f.write("\n§\n".join(entries))
os.replace(tmp, path)
fcntl.flock(lock, fcntl.LOCK_UN)
"""


def hermes(path, op, arg, pause=0.0, wait=True):
    proc = subprocess.Popen(
        [sys.executable, "-c", HERMES_WRITER, str(path), op, arg, str(pause)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    if wait:
        proc.wait(timeout=HANG)
    return proc


@pytest.mark.long
def test_optmem_waits_for_hermes_lock_and_loses_nothing(vault, vault_path):
    memory.add(vault, "Project uses Python 3.11")
    slow = hermes(vault_path / "MEMORY.md", "add", "Hermes learned: deploys on Fridays", pause=1.5, wait=False)
    # it must wait for Hermes' lock, however long a busy machine makes Hermes hold it
    ours = run_optmem("--set", PATIENT, "add", "OptMem learned: the port is 9090")
    slow.wait(timeout=HANG)
    assert ours.returncode == 0, ours.stderr
    entries = memory.load(vault).entries
    assert "Hermes learned: deploys on Fridays" in entries
    assert "OptMem learned: the port is 9090" in entries and "Project uses Python 3.11" in entries


def test_entries_are_read_as_hermes_reads_them(vault, vault_path):
    (vault_path / "MEMORY.md").write_text("keep § inline\n § \nstill the same entry\n§\nsecond\n§\nsecond\n", "utf-8")
    hot = memory.load(vault)
    assert hot.entries == ["keep § inline\n § \nstill the same entry", "second"]  # one separator, a duplicate


@pytest.mark.long
def test_drift_from_hermes_is_seen_by_search_and_journalled_on_the_next_write(cli, vault, vault_path):
    memory.add(vault, "Package manager: npm 9")
    memory.add(vault, "Editor: vim")
    hermes(vault_path / "MEMORY.md", "replace", "npm 9=>Package manager: pnpm 8")
    hits = cli.json("search", "package manager")["hits"]
    old = next(h for h in hits if "npm 9" in h["text"] and "pnpm" not in h["text"])
    assert old["status"] == "removed"  # the file no longer holds it: never current
    assert old["removed"]["by"] == "an edit outside optmem" and old["superseded_by"] is None
    assert all("npm 9" not in h["text"] for h in cli.json("search", "package manager", "--current")["hits"])
    assert "npm 9" not in cli.json("context")["text"].replace("pnpm 8", "")
    cli.json("add", "Shell: zsh")  # the next write journals what changed outside optmem
    records = [json.loads(x) for x in (vault_path / "LOG.jsonl").read_text("utf-8").splitlines()]
    drift = [r for r in records if r.get("source") == "drift"]
    assert {(r["op"], r["text"]) for r in drift} == {
        ("add", "Package manager: pnpm 8"),
        ("remove", "Package manager: npm 9"),
    }
    assert cli.json("doctor")["ok"] is True


def test_merge_conflict_markers_are_flagged_refused_and_never_printed(cli, vault, vault_path):
    (vault_path / "MEMORY.md").write_text(
        "shared\n§\n<<<<<<< HEAD\nmine: port 8080\n=======\ntheirs: port 9090\n>>>>>>> origin/main\n", "utf-8"
    )
    report = cli.json("doctor", code=1)
    assert [p["code"] for p in report["problems"]] == ["merge_conflict"]
    out = cli.json("add", "anything", code=3)
    assert out["error"]["code"] == "merge_conflict"
    assert "<<<<<<<" in (vault_path / "MEMORY.md").read_text("utf-8")  # nothing written on top
    for text in (cli("show").stdout, cli.json("context")["text"]):
        assert "<<<<<<<" not in text and ">>>>>>>" not in text and "=======" not in text
        assert "mine: port 8080" in text and "theirs: port 9090" in text
    assert "unresolved git merge" in cli("show").stdout


MID_MERGE = "alpha entry\n§\n<<<<<<< HEAD\n部署在周六\n=======\n部署在周日\n>>>>>>> origin/main\n"


@pytest.mark.long
def test_a_file_mid_merge_reads_as_both_sides_apart_with_a_warning_on_every_surface(cli, vault, vault_path):
    from conftest import mcp_session

    (vault_path / "MEMORY.md").write_text(MID_MERGE, "utf-8")
    sides = ["alpha entry", "部署在周六", "部署在周日"]  # each side its own entry, never one joined fact
    assert memory.load(vault, "memory").entries == sides
    shown = cli.json("show")
    assert [e["text"] for e in shown["files"][0]["entries"]] == sides
    assert any("MEMORY.md" in w and "merge" in w for w in shown["warnings"]), shown["warnings"]
    block = cli.json("context")
    assert any("MEMORY.md" in w and "merge" in w for w in block["warnings"]), block["warnings"]
    lines = block["text"].splitlines()
    assert "- 部署在周六" in lines and "- 部署在周日" in lines, block["text"]
    assert any("MEMORY.md" in x and "merge" in x for x in lines if x.startswith("- [")), block["text"]

    async def read(s):  # the MCP memory tool, action read: what `show --json` says
        return (await s.call_tool("memory", {"action": "read"})).content[0].text

    read_out = fenced_json(mcp_session(vault_path, read))
    assert [e["text"] for e in read_out["files"][0]["entries"]] == sides
    assert read_out["warnings"] == shown["warnings"]
    # a file that is mid-merge is read, not unreadable: `show` of it alone still succeeds
    assert cli("show", "--target", "memory").exit_code == 0


def test_a_refused_write_journals_nothing_not_even_the_drift_it_saw(cli, vault, vault_path):
    memory.add(vault, "Editor: vim")
    log = vault_path / "LOG.jsonl"
    (vault_path / "MEMORY.md").write_text("Editor: vim\n§\nEdited by hand: deploys on Fridays", "utf-8")
    before = log.read_bytes()
    out = cli.json("remove", "not there at all", code=1)
    assert out["error"]["code"] == "no_match"
    assert log.read_bytes() == before  # a failing command leaves the log exactly as it was
    cli.json("add", "Shell: zsh")  # the next successful write journals the hand edit once
    drift = [json.loads(x) for x in log.read_text("utf-8").splitlines() if '"drift"' in x]
    assert [(r["op"], r["text"]) for r in drift] == [("add", "Edited by hand: deploys on Fridays")]
