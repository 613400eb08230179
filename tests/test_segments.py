"""One log file per writer (issue 34, part 1): `optmem segment`, writers, and an index that
catches up per file — never rebuilt because another writer's file grew or arrived."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import put

from optmem import index, layout
from optmem.vault import Vault

VIEW = "id, sup, ksup, forgotten, conflict, fork, confirmed, seen, retired, pending"


def view_by_id(vault: Vault) -> list[tuple]:
    conn = sqlite3.connect(vault.index_path)
    try:
        return conn.execute(f"SELECT {VIEW} FROM rec ORDER BY id").fetchall()
    finally:
        conn.close()


def index_inode(vault: Vault) -> int:
    return os.stat(vault.index_path).st_ino


def log_lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]


@pytest.mark.long
def test_segment_keeps_log_jsonl_as_it_is_and_appends_go_to_the_writers_file(cli, vault, monkeypatch):
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-05T10:00:00Z")
    old = cli.json("append", "the port is 8080", "--key", "port")["id"]
    before = vault.log_path.read_bytes()
    index.open_index(vault).close()
    inode = index_inode(vault)
    done = cli.json("segment", "--writer", "laptop")
    assert done["status"] == "segmented" and done["writer"] == "laptop" and done["legacy"] == 1
    assert (vault.root / "log" / "README.md").is_file()
    monkeypatch.setenv("OPTMEM_NOW", "2026-04-01T09:00:00Z")
    new = cli.json("append", "the port is 9090", "--key", "port")["id"]
    assert vault.log_path.read_bytes() == before  # not a byte of LOG.jsonl changed
    assert [r["id"] for r in log_lines(vault.root / "log" / "laptop" / "2026-04.jsonl")] == [new]
    assert cli.json("get", old)["record"]["status"] == "superseded"
    assert cli.json("get", new)["record"]["status"] == "current"
    assert index_inode(vault) == inode  # caught up, never rebuilt
    assert "log/*/*.jsonl merge=union" in (vault.root / ".gitattributes").read_text("utf-8")
    again = cli.json("segment")
    assert again["status"] == "already_segmented" and again["writer"] == "laptop" and again["created"] == []
    assert cli.json("doctor")["ok"] is True


def test_a_writer_id_is_per_folder_and_machine_and_never_travels_with_the_folder(tmp_path, cli, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    for v in (a, b):
        cli("--vault", str(v), "init")
        cli.json("--vault", str(v), "segment")
    wa, wb = layout.writer(a), layout.writer(b)
    assert wa != wb and layout.writer(a) == wa  # recorded once, the same ever after
    assert layout.WRITER_RE.fullmatch(wa)
    # none of the vault's files holds it — but its local cache (never committed: `.cache/writer`,
    # which tells a moved folder from a new clone; it names a writer only for this host's list)
    shared = [p for p in a.rglob("*") if p.is_file() and ".cache" not in p.relative_to(a).parts]
    assert not any(wa in p.read_text("utf-8", errors="replace") for p in shared)
    monkeypatch.setenv("OPTMEM_WRITER", "agent-7")
    assert layout.writer(a) == "agent-7"
    err = cli.json("--vault", str(a), "segment", "--writer", "Bad Name", code=2)["error"]
    assert err["code"] == "usage" and "writer id" in err["message"]


def deliver(src: Path, dst: Path) -> None:
    """What a file sync does: the new version written beside, then renamed over the old one."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst.with_name(dst.name + ".part"))
    os.replace(dst.with_name(dst.name + ".part"), dst)


@pytest.mark.long
def test_another_writers_lines_and_files_are_caught_up_per_file(tmp_path, vault, monkeypatch):
    """A synced folder: the other writer's month arrives whole, then grows, then a new month comes."""
    from optmem.share import segment

    monkeypatch.setenv("OPTMEM_NOW", "2026-05-01T00:00:00Z")
    segment(vault, "me")
    put(vault, "mine: the build uses pnpm")
    other = tmp_path / "other"
    shutil.copytree(vault.root, other, ignore=shutil.ignore_patterns(".cache"))
    theirs = Vault(other)
    monkeypatch.setenv("OPTMEM_WRITER", "them")
    a = put(theirs, "theirs: the port is 8080", key="port")
    index.open_index(vault).close()
    inode = index_inode(vault)
    deliver(other / "log" / "them" / "2026-05.jsonl", vault.root / "log" / "them" / "2026-05.jsonl")
    with index.open_index(vault) as idx:
        assert idx.by_id(a.id) is not None
    c = put(theirs, "theirs: deploys go out on Fridays")
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-01T00:00:00Z")
    b = put(theirs, "theirs: the port is 9090", key="port")
    monkeypatch.delenv("OPTMEM_WRITER")
    for name in ("2026-05.jsonl", "2026-06.jsonl"):
        deliver(other / "log" / "them" / name, vault.root / "log" / "them" / name)
    with index.open_index(vault) as idx:
        now = 1.9e9
        assert idx.view_of(idx.by_id(a.id), now).status == "superseded"
        assert idx.view_of(idx.by_id(b.id), now).status == "current"
        assert idx.record(idx.by_id(c.id)).text == "theirs: deploys go out on Fridays"
        assert idx.record(idx.by_id(b.id)).text == "theirs: the port is 9090"
        assert idx.file_of(idx.by_id(b.id)) == "log/them/2026-06.jsonl"
    assert index_inode(vault) == inode  # never a rebuild
    incremental = view_by_id(vault)
    index.build(vault)
    assert view_by_id(vault) == incremental  # the same view as a build from the files


def test_doctor_repairs_only_this_writers_files(tmp_path, cli, vault, monkeypatch):
    cli.json("segment", "--writer", "me")
    cli.json("append", "mine")
    mine = next((vault.root / "log" / "me").glob("????-??.jsonl"))
    theirs = vault.root / "log" / "them" / mine.name
    theirs.parent.mkdir()
    theirs.write_bytes(b'{"v":1,"id":"01KTHEIRS0000000000000000A","ts":"2026-01-01T00:00:00Z","text":"half')
    with open(mine, "ab") as fh:
        fh.write(b"not json\n")
    report = cli.json("doctor", "--fix", code=1)
    assert any("of log/me/" in f for f in report["fixed"])  # my bad line, quarantined
    left = {(p["code"], p["file"]) for p in report["problems"]}
    assert left == {("torn_last_line", f"log/them/{mine.name}"), ("unparseable_line", f"log/them/{mine.name}")}
    assert all("on that clone" in p["message"] for p in report["problems"])
    assert theirs.read_bytes().endswith(b'"half')  # a sync under way is not "repaired"
    quarantine = log_lines(vault.root / "LOG.quarantine.jsonl")
    assert [(q["file"], q["raw"]) for q in quarantine] == [(f"log/me/{mine.name}", "not json")]


def test_purge_removes_a_record_from_every_writers_file(cli, vault, monkeypatch):
    cli.json("segment", "--writer", "me")
    gone = cli.json("append", "the secret plan is plan-b")["id"]
    monkeypatch.setenv("OPTMEM_WRITER", "them")
    cli.json("correct", gone, "the secret plan is plan-c")
    monkeypatch.delenv("OPTMEM_WRITER")
    cli.json("purge", "--origin", "user", gone, "--yes")
    for path in (vault.root / "log").glob("*/*.jsonl"):
        assert "plan-b" not in path.read_text("utf-8") and gone not in path.read_text("utf-8")
    assert [h["text"].endswith("the secret plan is plan-c") for h in cli.json("search", "secret plan")["hits"]] == [
        True
    ]


@pytest.mark.long
def test_a_segmented_vault_reads_the_same_as_the_log_it_came_from(tmp_path, cli, monkeypatch):
    """The same appends into one LOG.jsonl, and into a vault split mid-way with two writers:
    every search answers the same."""
    answers = []
    for split in (False, True):
        where = str(tmp_path / f"v{split}")
        monkeypatch.setenv("OPTMEM_NOW", "2026-02-01T00:00:00Z")
        monkeypatch.delenv("OPTMEM_WRITER", raising=False)
        cli("--vault", where, "init")
        for i in range(30):
            monkeypatch.setenv("OPTMEM_NOW", f"2026-02-01T00:{i:02d}:00Z")
            if i == 10 and split:
                cli.json("--vault", where, "segment", "--writer", "w1")
            if i == 20 and split:
                monkeypatch.setenv("OPTMEM_WRITER", "w2")
            args = (f"note {i}: the service listens on port {8000 + i}", "--key", f"svc{i % 4}")
            cli.json("--vault", where, "append", *args)
        hits = [cli.json("--vault", where, "search", q)["hits"] for q in ("port", "service 8005", "listens")]
        answers.append([[(h["text"], h["status"], h["score"]) for h in r] for r in hits])
    assert answers[0] == answers[1] and all(answers[0])


class Killed(Exception):
    pass


@pytest.mark.parametrize("kill_at", [1, 2, 3, 4, 5])
def test_purge_killed_between_two_files_can_be_run_again(cli, vault, monkeypatch, kill_at):
    # review fix-m2 2: the purged line's file rewritten first left the other file's `after` naming a
    # gone id, and `purge ID` could no longer find it; now kept lines stop naming it first, everywhere
    from optmem import purge

    cli.json("segment", "--writer", "me")
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-01T10:00:00Z")
    one = cli.json("append", "cache host is cache1", "--key", "cache.host")["id"]
    two = cli.json("append", "cache host is cache2", "--key", "cache.host")["id"]
    monkeypatch.setenv("OPTMEM_WRITER", "them")
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-02T10:00:00Z")
    three = cli.json("append", "cache host is cache3", "--key", "cache.host")["id"]
    monkeypatch.delenv("OPTMEM_WRITER")
    real, calls = purge._rewrite_file, []

    def killed(*args, **kw):
        calls.append(1)
        if len(calls) == kill_at:
            raise Killed  # the process ends here: the files rewritten so far stay rewritten
        return real(*args, **kw)

    monkeypatch.setattr(purge, "_rewrite_file", killed)
    cli("purge", "--origin", "user", two, "--yes")
    monkeypatch.setattr(purge, "_rewrite_file", real)
    if len(calls) >= kill_at:  # (else it finished before that call)
        assert cli.json("purge", "--origin", "user", two, "--yes")["records"] == 1
    lines = [x for p in sorted((vault.root / "log").glob("*/*.jsonl")) for x in log_lines(p)]
    assert two not in json.dumps(lines)
    assert {x["id"]: x.get("after") for x in lines if x.get("key")}[three] == [one]
    assert cli.json("conflicts")["conflicts"] == []


# `optmem ARGV…` as its own process, killed (SIGKILL: no cleanup, no lock let go by Python) right
# after the K-th log file a purge rewrote without a purged record
_PURGE_KILLED_AFTER = (
    "import os, signal, sys\n"
    "from optmem import purge\n"
    "real, after, dropped = purge._rewrite_file, int(sys.argv[1]), []\n"
    "def killed(*args, **kw):\n"
    "    n = real(*args, **kw)\n"
    "    dropped.extend([1] if kw['drop'] and n else [])\n"
    "    if len(dropped) == after:\n"
    "        os.kill(os.getpid(), signal.SIGKILL)\n"
    "    return n\n"
    "purge._rewrite_file = killed\n"
    "from optmem.cli import main\n"
    "sys.argv = ['optmem', *sys.argv[2:]]\n"
    "main()\n"
)


@pytest.mark.parametrize("killed_after", [1, 2, 3])
def test_purge_of_several_ids_killed_partway_finishes_when_run_again_with_the_same_ids(
    cli, vault, monkeypatch, killed_after
):
    """A purge of three records in three writers' files, its process killed (SIGKILL) after one,
    two or all three of those files were rewritten without them: run again with the same ids it
    purges what is left and says which ids name no record now (purged already, or never there) —
    no error that stops it. Ids that all name nothing are still an error: a typo never reads as
    done. Each case checks that the kill came after some of the purge (`gone`)."""
    import subprocess
    import sys

    from conftest import HANG

    cli.json("segment", "--writer", "me")
    ids = []
    for writer, text in (("me", "the old deploy key lives in vault/ops"), ("them", "the old staging hint is blue")):
        monkeypatch.setenv("OPTMEM_WRITER", writer)
        ids.append(cli.json("append", text)["id"])
    monkeypatch.setenv("OPTMEM_WRITER", "third")
    ids.append(cli.json("append", "the old build box was ci-7")["id"])
    kept = cli.json("append", "the office is on floor 3")["id"]
    monkeypatch.delenv("OPTMEM_WRITER")
    files = lambda: sorted((vault.root / "log").glob("*/*.jsonl"))  # noqa: E731
    assert {p.parent.name for p in files()} >= {"me", "them", "third"}
    lines = lambda: json.dumps([x for p in files() for x in log_lines(p)])  # noqa: E731
    run = [
        sys.executable,
        "-c",
        _PURGE_KILLED_AFTER,
        str(killed_after),
        "--vault",
        str(vault.root),
        "purge",
        "--origin",
        "user",
        *ids,
    ]
    died = subprocess.run([*run, "--yes"], capture_output=True, timeout=HANG)
    assert died.returncode == -9, died.stderr
    gone = [rid for rid in ids if rid not in lines()]
    assert len(gone) == killed_after, (gone, died.stderr)  # (killed partway: some purged, not all)
    left = [rid for rid in ids if rid not in gone]
    if left:
        again = cli.json("purge", "--origin", "user", *ids, "--yes")
        assert again["not_found"] == gone and again["records"] == len(left), (again, gone)
    said = cli("purge", "--origin", "user", *ids, "--yes")  # (nothing left: the error a typo gets)
    assert said.exit_code == 1 and "purged already, or never there" in said.stderr
    assert not any(rid in lines() for rid in ids) and kept in lines()
    assert cli.json("search", "old")["hits"] == []  # (the index is made again, without them)
    out = cli("purge", "--origin", "user", ids[0], kept[-8:], "--yes")
    assert out.exit_code == 0 and f"1 id(s) name no record (purged already, or never there): {ids[0]}" in out.stderr
    assert cli.json("search", "office floor")["hits"] == []
