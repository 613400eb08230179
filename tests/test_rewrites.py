"""Durability of the rewrites and the locks (review 17: #3, #4, #6, #7, #8, #9, #10): a line typed
into the log while optmem rewrites it is carried over; an unfinished purge is said; an own note
that cannot be written is named; a lock is held only on the file at its path, and names its holder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import put

from optmem import fsio
from optmem.errors import Locked, Unwritable

HAND = '{"text":"typed by hand while optmem rewrote the log"}'


def appended_at_the_first_sync(monkeypatch: pytest.MonkeyPatch, path: Path, line: str) -> list[int]:
    """Append `line` to `path` (a real append, as a person's editor or script makes one) the first
    time a rewrite of `path` syncs its new version — after its copy of the file, before its
    rename: the moment a line typed by hand went into the old file and was lost. The count of
    appends made, for the test to check the moment came."""
    real = fsio.Replacement.sync
    made: list[int] = []

    def sync_then_a_person_appends(self: fsio.Replacement) -> None:
        real(self)
        if self.path == path and not made:
            with open(path, "ab") as fh:
                fh.write(line.encode("utf-8") + b"\n")
            made.append(1)

    monkeypatch.setattr(fsio.Replacement, "sync", sync_then_a_person_appends)
    return made


def test_a_line_typed_into_the_log_while_purge_rewrites_it_is_kept(vault, cli, monkeypatch):
    """#3: purge copied LOG.jsonl to its end, then renamed the copy over it: a line appended
    between the two stayed in the old file, never indexed, and nothing said so."""
    gone = put(vault, "the old staging host was zebra-4711").id
    put(vault, "the staging db is db-stage-2")
    made = appended_at_the_first_sync(monkeypatch, vault.log_path, HAND)
    out = cli.json("purge", "--origin", "user", gone, "--yes")
    assert made and out["records"] == 1
    assert HAND in vault.log_path.read_text("utf-8").splitlines()
    assert "zebra-4711" not in vault.log_path.read_text("utf-8")
    assert cli.json("search", "typed by hand")["total"] == 1


def test_a_line_typed_into_the_log_while_doctor_fix_moves_a_bad_line_is_kept(vault, cli, monkeypatch):
    """#3: doctor --fix rewrites the log without its unparseable lines (and stamps lines without
    ts): a line appended meanwhile is carried over."""
    put(vault, "the staging db is db-stage-2")
    with open(vault.log_path, "ab") as fh:
        fh.write(b"{not json\n")
    made = appended_at_the_first_sync(monkeypatch, vault.log_path, HAND)
    cli.json("doctor", "--fix")
    assert made
    kept = vault.log_path.read_text("utf-8").splitlines()
    assert "{not json" not in kept
    assert any("typed by hand while optmem rewrote the log" in line for line in kept), kept
    assert cli.json("search", "typed by hand")["total"] == 1


def test_a_recall_time_appended_while_purge_rewrites_access_is_kept(vault, cli, monkeypatch):
    """#3: ACCESS.jsonl is appended to without the vault's lock (a recall): a purge's rewrite of
    it carries over what was appended meanwhile."""
    gone = put(vault, "the old staging host was zebra-4711").id
    kept = put(vault, "the staging db is db-stage-2").id
    cli.json("search", "staging")  # recall lines
    access = vault.root / "ACCESS.jsonl"
    assert access.is_file()
    line = json.dumps({"ts": "2026-12-07T12:00:00Z", "touch": [kept]})
    made = appended_at_the_first_sync(monkeypatch, access, line)
    cli.json("purge", "--origin", "user", gone, "--yes")
    assert made and line in access.read_text("utf-8").splitlines()
    assert gone not in access.read_text("utf-8")


def test_a_rewrite_refuses_when_another_program_replaced_the_file_meanwhile(tmp_path):
    """#3: a file renamed into the place of the one being rewritten (an editor's save) is not
    renamed over: that would lose it. Refused; the other program's file stays."""
    (tmp_path / "v").mkdir()
    path = tmp_path / "v" / "LOG.jsonl"
    path.write_bytes(b'{"text":"a"}\n')
    with pytest.raises(Unwritable, match="replaced"):
        with fsio.rewriting(path) as (out, src):
            out.write(src.read())
            saved = tmp_path / "v" / "saved-by-an-editor"
            saved.write_bytes(b'{"text":"the editor\'s"}\n')
            os.replace(saved, path)
    assert path.read_bytes() == b'{"text":"the editor\'s"}\n'
    assert [p.name for p in path.parent.iterdir()] == ["LOG.jsonl"]


def test_a_lock_whose_file_was_deleted_while_waiting_is_not_held_beside_the_new_one(tmp_path, monkeypatch):
    """#7: flock locked whatever file the waiter had opened. The lock file deleted (`git clean
    -fdX`, a deleted .cache/) while one process held it and another waited: the waiter got the
    old, unlinked file's lock while a third held the new file at the path — two writers at once.
    The waiter now locks only the file at the path: here a third process holds that, so it waits
    (and, past its timeout, says it is locked)."""
    from contextlib import ExitStack

    import optmem.fsio as fsio_module

    lock = tmp_path / "lock"
    first, third = ExitStack(), ExitStack()
    first.enter_context(fsio.exclusive_lock(lock, 1))
    real_sleep = fsio_module.time.sleep
    moments: list[str] = []

    def while_it_waits(seconds: float) -> None:
        if not moments:  # the waiter has opened the file and found it locked: now the first lets
            first.close()  # go, the file is deleted, and a third process locks the new one
            lock.unlink()
            third.enter_context(fsio.exclusive_lock(lock, 1))
            moments.append("third holds the file at the path")
        real_sleep(seconds)

    monkeypatch.setattr(fsio_module.time, "sleep", while_it_waits)
    try:
        with pytest.raises(Locked):
            with fsio.exclusive_lock(lock, 0.3):
                pytest.fail("held the deleted file's lock while another process held the lock at the path")
    finally:
        monkeypatch.setattr(fsio_module.time, "sleep", real_sleep)
        third.close()
    assert moments
    with fsio.exclusive_lock(lock, 1):  # let go: the next one takes it
        pass


HOLD = """
import sys, time
from pathlib import Path
from optmem import fsio
with fsio.exclusive_lock(Path(sys.argv[1]), 60):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_locked_error_names_the_holder_and_says_it_is_stopped(vault, cli):
    """#8: a holder stopped with Ctrl-Z (SIGSTOP) blocked every writer, and the error said only
    "locked by another optmem process". The holder writes its pid, command and start into the
    lock file; the error names them, and says it is stopped and how to go on."""
    import signal
    import subprocess
    import sys

    from conftest import HANG

    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(vault.lock_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        said = json.loads(vault.lock_path.read_text("utf-8"))
        assert said["pid"] == proc.pid and "-c" in said["command"] and said["since"]
        running = cli.json("--set", "lock.timeout=0.1", "append", "the staging db is db-stage-2", code=3)["error"]
        assert running["code"] == "locked" and running["holder"]["pid"] == proc.pid
        assert running["holder"]["state"] == "running" and f"process {proc.pid}" in running["message"]
        os.kill(proc.pid, signal.SIGSTOP)
        stopped = cli.json("--set", "lock.timeout=0.1", "append", "the staging db is db-stage-2", code=3)["error"]
        assert stopped["holder"]["state"] == "stopped"
        assert "stopped" in stopped["message"] and f"kill -CONT {proc.pid}" in stopped["message"]
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.communicate("\n", timeout=HANG)
    assert vault.lock_path.read_bytes() == b""  # let go: no holder named
    assert cli.json("append", "the staging db is db-stage-2")["ok"]


def test_a_purge_cut_short_is_found_by_doctor_and_finished_by_running_it_again(vault, cli):
    """#4: a purge notes the ids it deletes first and rewrites the log last: killed between, the
    record stayed current and doctor said "no problems". Doctor now names it."""
    from optmem import lost

    gone = put(vault, "the old staging host was zebra-4711").id
    put(vault, "the staging db is db-stage-2")
    lost.note_purged(vault, {gone})  # what a purge killed just after its first step leaves
    report = cli.json("doctor", code=1)
    (left,) = [p for p in report["problems"] if p["code"] == "purge_unfinished"]
    assert left["id"] == gone and f"optmem purge {gone} --yes" in left["message"]
    assert "purge unfinished" in left["message"]
    cli.json("purge", "--origin", "user", gone, "--yes")
    assert cli.json("doctor")["ok"]


def test_a_purge_stopped_part_way_says_what_it_had_done_not_that_nothing_changed(vault, cli):
    """#4: a purge stopped by a write refused after it had deleted a handoff said "…; nothing was
    changed" — false. It says the purge is unfinished, what it deleted, and how to finish it."""
    import stat

    from optmem import handoff

    handoff.write(vault, "webapp", done=["zebra-4711 shipped"])
    hid = handoff.read(vault, "webapp")[0].id
    put(vault, "the staging db is db-stage-2")
    vault.log_path.chmod(stat.S_IRUSR)
    try:
        err = cli.json("purge", "--origin", "user", hid, "--yes", code=3)["error"]
    finally:
        vault.log_path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert err["code"] == "unwritable" and "nothing was changed" not in err["message"]
    assert "the purge is unfinished" in err["message"] and "projects/webapp/HANDOFF.md" in err["message"]
    assert f"optmem purge {hid} --yes" in err["message"]
    assert [p["code"] for p in cli.json("doctor", code=1)["problems"]] == ["purge_unfinished"]
    cli.json("purge", "--origin", "user", hid, "--yes")
    assert cli.json("doctor")["ok"]
    assert "zebra-4711" not in vault.log_path.read_text("utf-8")


def test_partly_done_says_what_the_caller_did_instead_of_nothing_was_changed(tmp_path):
    from optmem.errors import Unwritable

    err = fsio.partly_done(Unwritable("cannot write X: the disk is full; nothing was changed"), "3 of 5 chunks kept")
    assert err.message == "cannot write X: the disk is full; 3 of 5 chunks kept" and str(err) == err.message
    said = fsio.partly_done(Unwritable("cannot write X"), "the purge is unfinished")
    assert said.message == "cannot write X; the purge is unfinished"


def test_a_read_only_own_note_does_not_break_the_index_and_doctor_names_it(vault, cli):
    """#6: lost.jsonl read-only: noting a record that left the log raised `Unwritable` (not the
    OSError caught), the index update stopped, every search warned "index could not be updated …
    free some disk space" (wrong advice), and doctor said "no problems"."""
    import stat

    gone = put(vault, "the old staging host was zebra-4711").id
    put(vault, "the staging db is db-stage-2")
    cli.json("search", "staging")
    note = vault.own_path("lost.jsonl")
    note.parent.mkdir(exist_ok=True)
    note.touch()
    note.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    log = vault.log_path
    log.write_text("".join(x for x in log.read_text("utf-8").splitlines(keepends=True) if gone not in x), "utf-8")
    first = cli("search", "staging")
    assert first.exit_code == 0 and "could not be updated" not in first.stderr, first.stderr
    assert "1 record(s) left the log" in first.stderr  # told all the same
    again = cli("search", "staging")
    assert "could not be updated" not in again.stderr and "left the log" not in again.stderr, again.stderr
    (named,) = [p for p in cli.json("doctor", code=1)["problems"] if p["code"] == "own_note_unwritable"]
    assert named["file"] == str(note) and "chmod u+w" in named["message"]
    note.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert not [p for p in cli.json("doctor", code=None)["problems"] if p["code"] == "own_note_unwritable"]


@pytest.mark.parametrize("bad", [b"{not json", b'{"text":"a line without ts"}'])
def test_doctor_fix_cut_short_after_the_quarantine_does_not_keep_a_line_twice(vault, cli, bad):
    """#9: `doctor --fix` writes the quarantine first and rewrites the log second: stopped between
    (here the log is read-only; a kill does the same), the next `--fix` found the same lines and
    added them to the quarantine again. Each is kept once."""
    import stat

    put(vault, "the staging db is db-stage-2")
    with open(vault.log_path, "ab") as fh:
        fh.write(bad + b"\n")
    vault.log_path.chmod(stat.S_IRUSR)
    try:
        assert cli.json("doctor", "--fix", code=3)["error"]["code"] == "unwritable"
    finally:
        vault.log_path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    quarantine = vault.root / "LOG.quarantine.jsonl"
    assert len(quarantine.read_text("utf-8").splitlines()) == 1
    cli.json("doctor", "--fix", code=None)
    kept = [json.loads(line) for line in quarantine.read_text("utf-8").splitlines()]
    assert [q["raw"] for q in kept] == [bad.decode()]
    assert bad.decode() not in vault.log_path.read_text("utf-8")


def test_an_import_stopped_after_some_chunks_says_how_many_went_in(vault, cli, tmp_path, monkeypatch):
    """#4 (last clause): an import whose write is refused after some chunks were appended said
    "nothing was changed" — false: those records are in the log. It says how many, and that the
    same import run again finishes (what is there already is skipped)."""
    import stat

    from optmem import transfer

    records = [{"id": f"01KB{i:022d}", "ts": "2026-12-01T10:00:00Z", "text": f"imported note {i}"} for i in range(5)]
    lines = [{"format": "optmem-export", "version": 1}] + [{"record": r} for r in records]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    monkeypatch.setattr(transfer, "CHUNK", 2)
    real = fsio.append_lines
    calls: list[int] = []

    def the_log_turns_read_only_after_the_first_chunk(target, chunk, **kw):
        if target == vault.log_path and calls:
            vault.log_path.chmod(stat.S_IRUSR)  # (a real refusal, as a full disk makes one)
        calls.append(len(chunk))
        return real(target, chunk, **kw)

    monkeypatch.setattr(fsio, "append_lines", the_log_turns_read_only_after_the_first_chunk)
    try:
        err = cli.json("import", str(path), code=3)["error"]
    finally:
        vault.log_path.chmod(stat.S_IRUSR | stat.S_IWUSR)
        monkeypatch.setattr(fsio, "append_lines", real)
    assert err["code"] == "unwritable" and "nothing was changed" not in err["message"]
    assert "the first 2 of the 5 records were imported" in err["message"], err["message"]
    done = cli.json("import", str(path))
    assert done["records"] == 3 and cli.json("search", "imported note")["total"] == 5
