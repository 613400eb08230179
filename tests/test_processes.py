"""Real processes: several writers at once, a crash-torn log tail."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import HANG, PATIENT, PATIENT_TOML, lock_held, wait_until

from optmem import memory
from optmem.vault import Vault

APPENDER = textwrap.dedent("""
    import sys
    from optmem import log
    from optmem.vault import Vault
    v = Vault(sys.argv[1], [sys.argv[4]])
    me = sys.argv[2]
    for i in range(int(sys.argv[3])):
        res = log.append(v, log.Draft(f"worker {me} record {i} 进程{me}第{i}条", domain="w" + me))
        assert res.status == "stored", res
""")
ADDER = textwrap.dedent("""
    import sys
    from optmem import memory
    from optmem.vault import Vault
    v = Vault(sys.argv[1], [sys.argv[4]])
    me = sys.argv[2]
    for i in range(int(sys.argv[3])):
        memory.add(v, f"fact {i} from adder {me}")
""")


@pytest.mark.long
def test_six_appenders_and_four_adders_lose_nothing(vault, vault_path):
    """Twelve writers take turns at the vault lock: on a busy machine a turn can come late, so
    they wait for it as long as a hang would take (what is tested is that nothing is lost)."""
    per_appender, per_adder = 20, 8  # (each writer's turns interleave with the others' all along)
    procs = [
        subprocess.Popen([sys.executable, "-c", APPENDER, str(vault_path), str(i), str(per_appender), PATIENT])
        for i in range(6)
    ]
    procs += [
        subprocess.Popen([sys.executable, "-c", ADDER, str(vault_path), str(i), str(per_adder), PATIENT])
        for i in range(4)
    ]
    # two more through the real CLI, to include process start-up in the race
    procs += [
        subprocess.Popen(
            [sys.executable, "-m", "optmem", "--vault", str(vault_path), "--set", PATIENT, "append", f"cli append {i}"],
            stdout=subprocess.DEVNULL,
        )
        for i in range(2)
    ]
    for p in procs:
        assert p.wait(timeout=HANG) == 0
    raw = (vault_path / "LOG.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    lines = [json.loads(line) for line in raw.decode("utf-8").splitlines()]  # no torn line
    notes = [r for r in lines if r["kind"] == "note"]
    journal = [r for r in lines if r["kind"] == "memory"]
    assert len(notes) == 6 * per_appender + 2
    assert len(journal) == 4 * per_adder
    assert len({r["id"] for r in lines}) == len(lines)
    for i in range(6):
        assert {r["text"] for r in notes if r["domain"] == f"w{i}"} == {
            f"worker {i} record {n} 进程{i}第{n}条" for n in range(per_appender)
        }
    entries = memory.load(Vault(vault_path)).entries
    assert sorted(entries) == sorted(f"fact {i} from adder {a}" for a in range(4) for i in range(per_adder))


CRASHER = textwrap.dedent("""
    import os, signal, sys
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
    os.write(fd, b'{"v":1,"id":"01KCRASHED00000000000000","ts":"2026-11-29T00:00:00Z","text":"half a rec')
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.long
def test_crash_torn_tail_is_tolerated_and_ended_by_the_next_append(vault_path, cli):
    """The writer that crashes is a process (killed mid-line); the commands before and after it
    run in this process, each reading the files afresh."""
    first = cli.json("append", "before the crash")["id"]
    crashed = subprocess.run([sys.executable, "-c", CRASHER, str(vault_path / "LOG.jsonl")])
    assert crashed.returncode == -signal.SIGKILL
    got = cli("get", first, "--json")
    assert got.exit_code == 0 and json.loads(got.stdout)["record"]["text"] == "before the crash"
    after = cli("append", "after the crash", "--json")
    assert after.exit_code == 0
    new_id = json.loads(after.stdout)["id"]
    lines = (vault_path / "LOG.jsonl").read_bytes().split(b"\n")
    assert lines[1].endswith(b'"text":"half a rec')  # the torn bytes are kept as they were
    assert json.loads(lines[2])["id"] == new_id  # and the new record is whole
    assert cli.json("get", new_id)["record"]["status"] == "current"
    assert os.path.getsize(vault_path / "LOG.jsonl") == len(b"\n".join(lines))


@pytest.mark.long
def test_appends_go_on_while_the_summary_tree_is_being_compacted(vault, vault_path, cli):
    """Compaction holds the tree's lock, not the vault's: an agent's append does not wait on it.
    (The commands run in this process: a lock on a file descriptor of its own is another holder.)"""
    # the timeout under test: compaction's (the test holds the tree lock); the vault lock stays free
    (vault_path / "optmem.toml").write_text("[lock]\ntimeout = 0.3\n", "utf-8")  # timeout under test
    from optmem import fsio

    with fsio.exclusive_lock(vault_path / ".cache" / "tree.lock", 1):
        res = cli("append", "written during a compaction", "--json")
        assert res.exit_code == 0, res.stdout + res.stderr
        blocked = cli("compact", "--json")
        assert blocked.exit_code == 3 and json.loads(blocked.stdout)["error"]["code"] == "locked"


def test_a_lock_other_than_the_vaults_is_named_with_what_to_do(vault, vault_path, cli):
    """The `locked` error names the lock that is held: the summary tree's (a `compact` runs: appends
    go on) or a sync's (a wait of optmem's own: no setting to raise) — not "the vault is locked"
    while the vault's lock is free (tester18)."""
    from optmem import fsio
    from optmem.errors import Locked
    from optmem.integrations.sync import sync_lock

    (vault_path / "optmem.toml").write_text("[lock]\ntimeout = 0.3\n", "utf-8")  # timeout under test
    assert cli.json("append", "written before the holder")["status"] == "stored"
    with fsio.exclusive_lock(vault_path / ".cache" / "tree.lock", 1):
        said = cli.json("compact", code=3)["error"]["message"]
    assert said.startswith("the summary tree (held while `compact` or `purge` runs; appends and searches go on")
    assert "the vault is locked" not in said and "raise [lock] timeout" in said
    with sync_lock(vault), pytest.raises(Locked) as got:
        with sync_lock(vault, timeout=0.2):  # timeout under test: held here
            pass
    said = got.value.message
    assert said.startswith("this clone's sync (held while `optmem sync` runs") and "process " in said, said
    assert (
        "the vault is locked" not in said and "[lock] timeout" not in said and "try again when it has finished" in said
    )


BIG_LOG = textwrap.dedent("""
    import json, sys
    with open(sys.argv[1], "w", encoding="utf-8") as fh:
        for i in range(int(sys.argv[2])):
            fh.write(json.dumps({"id": f"01K{i:023d}", "ts": "2026-01-01T00:00:00Z", "domain": "d",
                                 "text": f"record {i} 记录 部署 端口 deploy port {i % 977}"}) + "\\n")
""")


def stopped(pid: int) -> bool:
    """Whether process `pid` is stopped (SIGSTOP took effect: Linux's /proc/PID/stat says T)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True  # it has exited: it runs no more either
    return stat[stat.rindex(")") + 2] in "Tt"


REBUILT = 6000  # records (~0.9 MB, under index.PARALLEL_MIN_BYTES): a build of about half a second, by one process


def stop_mid_build(proc: subprocess.Popen[str], vault: Vault) -> bool:
    """Stop `proc` (SIGSTOP) in the middle of writing a rebuilt index (its temporary file exists)
    with the vault lock free — which this test proves by taking it once, without waiting — and
    leave it stopped (the caller lets it go on: SIGCONT): True. Stopped in the build's own short
    hold, at its start or end, it goes on and is stopped again later; False when it finished first."""
    from optmem import fsio
    from optmem.errors import Locked

    def building() -> bool:
        return any(p.name.endswith(".tmp") for p in vault.cache_dir.glob("index.*"))

    while proc.poll() is None:
        if building():
            proc.send_signal(signal.SIGSTOP)  # frozen where it is: the window cannot close now
            try:
                wait_until(lambda: stopped(proc.pid), "the build to stop")
                with fsio.exclusive_lock(vault.lock_path, 0):
                    if building():  # (not at its end: that holds the lock): it is writing its file
                        return True
            except Locked:
                pass
            proc.send_signal(signal.SIGCONT)
        time.sleep(0.002)
    return False


@pytest.mark.long
def test_a_rebuild_happens_outside_the_vault_lock(vault, vault_path, cli):
    """After the log changed under the index (a git merge), the rebuild does not hold the vault
    lock: once its temporary index exists, this test stops the building process (SIGSTOP) in the
    middle of writing it and takes the lock itself (one try, no wait) — which it could never do if
    the build held it — then lets it go on; and an agent's append gets through."""
    subprocess.run([sys.executable, "-c", BIG_LOG, str(vault_path / "LOG.jsonl"), str(REBUILT)], check=True)
    builder = subprocess.Popen(
        [sys.executable, "-m", "optmem", "--vault", str(vault_path), "--set", PATIENT, "search", "部署"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    taken_while_building = stop_mid_build(builder, vault)
    if taken_while_building:
        builder.send_signal(signal.SIGCONT)
        res = cli("append", "an agent writes while the index is rebuilt", "--json")  # (the builder is the process)
        assert res.exit_code == 0, res.stdout + res.stderr
    assert builder.wait(timeout=HANG) == 0, builder.stderr.read() if builder.stderr else ""
    assert taken_while_building  # the vault lock was free in the middle of the build
    hits = cli.json("search", "rebuilt")["hits"]
    assert [h["text"] for h in hits] == ["an agent writes while the index is rebuilt"]


def _doctor_fix(vault_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "optmem", "--vault", str(vault_path), "--set", PATIENT, "doctor", "--fix", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _records(vault_path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (vault_path / "LOG.jsonl").read_text("utf-8").splitlines()]


@pytest.mark.long
def test_doctor_fix_rebuilds_the_index_outside_the_vault_lock(vault, vault_path, cli):
    """Tester18 #5: `doctor --fix` rebuilt the index holding the vault lock, so every agent's
    write failed `locked` for as long as the rebuild took. It rebuilds as `reindex` does: stopped
    in the middle of its build, it holds no vault lock, and an agent's append — a process of its
    own, which may wait 2 s for the lock at most — is stored while doctor is still stopped; doctor
    then goes on, catches its index up with that line and swaps it in: nothing lost."""
    subprocess.run([sys.executable, "-c", BIG_LOG, str(vault_path / "LOG.jsonl"), str(REBUILT)], check=True)
    assert cli.json("search", "部署")["hits"]  # the index exists and is in step
    doctor = _doctor_fix(vault_path)
    held = stop_mid_build(doctor, vault)
    try:
        if held:  # the timeout under test: nothing may hold the lock while doctor is stopped
            wrote = subprocess.run(
                [sys.executable, "-m", "optmem", "--vault", str(vault_path), "--set", "lock.timeout=2"]
                + ["append", "stored while doctor was rebuilding", "--json"],
                capture_output=True,
                text=True,
                timeout=HANG,
            )
            assert wrote.returncode == 0, wrote.stdout + wrote.stderr
            assert stopped(doctor.pid) and doctor.poll() is None  # (doctor was stopped all along)
    finally:
        doctor.send_signal(signal.SIGCONT)
    out, err = doctor.communicate(timeout=HANG)
    assert held  # the vault lock was free in the middle of doctor's rebuild
    assert doctor.returncode == 0, out + err
    assert json.loads(out)["fixed"] == ["rebuilt the search index"]
    assert len(_records(vault_path)) == REBUILT + 1
    assert cli.json("stats")["records"] == REBUILT + 1  # the swapped-in index holds the append too
    hits = cli.json("search", "stored while doctor was rebuilding")["hits"]
    assert hits[0]["text"] == "stored while doctor was rebuilding"
    assert cli.json("doctor")["ok"] is True


@pytest.mark.long
def test_doctor_fix_mends_the_log_under_the_lock_then_lets_writers_wait_for_the_rebuild(vault, vault_path, cli):
    """Tester18 #5, with a line to move out: the log is rewritten under the vault lock, then the
    index is rebuilt outside it. While doctor is stopped in the middle of that build (the
    quarantine already written), the vault lock is free; an append started then waits for the
    rebuild on the build lock — not the vault lock, where it would fail `locked` — and is stored
    once doctor goes on: the log keeps every record, the bad line is in the quarantine."""
    subprocess.run([sys.executable, "-c", BIG_LOG, str(vault_path / "LOG.jsonl"), str(REBUILT)], check=True)
    with open(vault_path / "LOG.jsonl", "ab") as fh:
        fh.write(b'{"text": not json}\n')
    assert cli.json("search", "部署")["hits"]  # the index exists and is in step
    doctor = _doctor_fix(vault_path)
    writer = None
    held = stop_mid_build(doctor, vault)
    try:
        if held:
            assert b"not json" in (vault_path / "LOG.quarantine.jsonl").read_bytes()  # mended before the build
            assert b"not json" not in (vault_path / "LOG.jsonl").read_bytes()
            writer = subprocess.Popen(
                [sys.executable, "-m", "optmem", "--vault", str(vault_path), "--set", PATIENT]
                + ["append", "stored after doctor's rebuild", "--json"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            build_lock = vault.cache("build.lock")
            wait_until(lambda: has_open(writer.pid, build_lock), "the append waiting for doctor's rebuild")
            assert writer.poll() is None and stopped(doctor.pid)
    finally:
        doctor.send_signal(signal.SIGCONT)
    out, err = doctor.communicate(timeout=HANG)
    assert held  # the vault lock was free in the middle of doctor's rebuild
    assert doctor.returncode == 0, out + err
    assert json.loads(out)["fixed"] == [
        "moved 1 unparseable line(s) (6001) of LOG.jsonl to LOG.quarantine.jsonl",
        "rebuilt the search index",
    ]
    assert writer is not None
    wrote, why = writer.communicate(timeout=HANG)
    assert writer.returncode == 0, wrote + why
    records = _records(vault_path)  # (every line parses)
    assert len(records) == REBUILT + 1 and len({r["id"] for r in records}) == REBUILT + 1
    assert records[-1]["text"] == "stored after doctor's rebuild"
    assert cli.json("stats")["records"] == REBUILT + 1
    assert cli.json("doctor")["ok"] is True


SEARCHER = textwrap.dedent("""
    import sys
    from optmem import search
    from optmem.vault import Vault
    v = Vault(sys.argv[1], [sys.argv[3]])
    for i in range(int(sys.argv[2])):
        search.search(v, "worker record 进程")
""")
COMPACTOR = textwrap.dedent("""
    import sys
    from optmem import tree
    from optmem.vault import Vault
    v = Vault(sys.argv[1], [sys.argv[3]])
    for i in range(int(sys.argv[2])):
        tree.compact(v)
""")


@pytest.mark.long
def test_readers_writers_and_a_compactor_at_once(vault, vault_path, cli):
    (vault_path / "optmem.toml").write_text("[tree]\nrun = 16\nfanout = 4\n", "utf-8")
    procs = [
        subprocess.Popen([sys.executable, "-c", APPENDER, str(vault_path), str(i), "30", PATIENT]) for i in range(3)
    ]
    procs += [subprocess.Popen([sys.executable, "-c", SEARCHER, str(vault_path), "25", PATIENT]) for _ in range(2)]
    procs += [subprocess.Popen([sys.executable, "-c", COMPACTOR, str(vault_path), "5", PATIENT])]
    for p in procs:
        assert p.wait(timeout=HANG) == 0
    lines = [json.loads(line) for line in (vault_path / "LOG.jsonl").read_text("utf-8").splitlines()]
    assert len([r for r in lines if r["kind"] == "note"]) == 90
    # what they left, read afterwards (in this process: the race is over)
    assert cli.json("search", "worker record", "--limit", "100")["total"] == 90
    assert cli.json("doctor")["ok"] is True
    cli.json("compact")
    covered = set()
    from optmem import tree as treemod

    for node_file in (vault_path / "tree").glob("*/L1-*.md"):
        node = treemod.parse(node_file.read_text("utf-8"))
        assert not covered & set(node.children)  # no record sealed twice
        covered |= set(node.children)


@pytest.mark.long
def test_concurrent_readers_share_one_rebuild(vault, vault_path):
    """Three searches arrive at a log whose index must be rebuilt: one builds, the others wait
    for it (on the build lock) instead of building copies of their own. The test holds the build
    lock until all three are waiting for it (each has the lock file open), so they arrive together
    however late the machine starts them; then it lets go and counts the builds."""
    from optmem import fsio

    subprocess.run([sys.executable, "-c", BIG_LOG, str(vault_path / "LOG.jsonl"), str(REBUILT)], check=True)
    build_lock = vault_path / ".cache" / "build.lock"
    builders: set[str] = set()

    def seen(procs: list[subprocess.Popen[str]], waiting: bool) -> bool:
        builders.update(p.name for p in (vault_path / ".cache").glob("index.*.tmp"))
        if waiting:  # each one either waits for the build lock or (were there none) is done
            return all(has_open(p.pid, build_lock) or p.poll() is not None for p in procs)
        return all(p.poll() is not None for p in procs)

    search = [sys.executable, "-m", "optmem", "--vault", str(vault_path), "--set", PATIENT, "search", "部署", "--json"]
    with fsio.exclusive_lock(build_lock, 1):
        procs = [
            subprocess.Popen(
                search,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        wait_until(lambda: seen(procs, waiting=True), "three searches at the build lock")
    wait_until(lambda: seen(procs, waiting=False), "three searches")
    outs = [p.communicate(timeout=HANG)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert len({json.dumps(json.loads(o)["hits"]) for o in outs}) == 1  # the same answer
    assert len(builders) == 1, builders


def has_open(pid: int, path: Path) -> bool:
    """Whether process `pid` has `path` open (Linux: its descriptors in /proc)."""
    fds = Path(f"/proc/{pid}/fd")
    want = os.path.realpath(path)
    try:
        names = list(fds.iterdir())
    except FileNotFoundError:
        return False  # it has exited
    for fd in names:
        try:
            if os.readlink(fd) == want:
                return True
        except OSError:
            pass  # closed meanwhile
    return False


@pytest.mark.long
@pytest.mark.parametrize("json_out", [False, True])
def test_ctrl_c_while_waiting_for_the_lock_exits_130_and_writes_nothing(vault, vault_path, json_out, cli):
    from optmem import fsio

    (vault_path / "optmem.toml").write_text(PATIENT_TOML, "utf-8")  # it waits until interrupted
    assert cli("append", "already here").exit_code == 0  # the index exists and is in step
    before = (vault_path / "LOG.jsonl").read_bytes()
    with fsio.exclusive_lock(vault.lock_path, 1):
        # a runner started in the background (`cmd &`) ignores SIGINT, and children inherit that:
        # give this one the default disposition, as a process started from a terminal has
        proc = subprocess.Popen(
            [sys.executable, "-m", "optmem", "append", "never stored", *(["--json"] if json_out else [])],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        # interrupted once it waits for the lock this test holds (it has the lock file open), not
        # after a pause a busy machine may not have started it in
        wait_until(lambda: has_open(proc.pid, vault.lock_path), "the append waiting for the lock")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err and "Traceback" not in err
    if json_out:  # an agent reading --json gets the error shape, not an empty stdout
        got = json.loads(out)
        assert got["ok"] is False and got["error"]["code"] == "interrupted", out
        assert "run it again" in got["error"]["message"]
    else:
        assert out == ""
    assert (vault_path / "LOG.jsonl").read_bytes() == before


def test_a_folder_lock_refused_as_some_fuse_and_cifs_mounts_refuse_it_leaves_the_file_as_the_lock():
    """Review19 finding 8: ENOSYS and EPERM are what some FUSE and CIFS mounts answer for a folder's
    flock — read as "this file system does not lock folders", not raised as a bare OSError."""
    import errno

    from optmem import fsio

    assert {errno.ENOSYS, errno.EPERM} <= fsio._NO_FOLDER_LOCKS


@pytest.mark.long
def test_a_lock_file_deleted_while_held_lets_no_second_writer_in(vault, vault_path, cli):
    """`rm -r .cache` (or `git clean -fdX`) while a command holds the vault lock: the next command
    made a new lock file and locked it beside the holder. The vault's folder is locked too, and no
    cleaning of caches deletes it."""
    import shutil

    (vault_path / "optmem.toml").write_text("[lock]\ntimeout = 0.3\n", "utf-8")  # timeout under test: held here
    assert cli.json("append", "written before the holder")["status"] == "stored"
    with lock_held(vault_path):
        shutil.rmtree(vault_path / ".cache")
        out = cli.json("append", "written beside the holder", code=3)
        assert out["error"]["code"] == "locked"
        # review19 finding 8: the new lock file names no one; the error says why it cannot
        assert "its lock file was deleted while it held the lock" in out["error"]["message"], out
        assert cli.json("add", "added beside the holder", code=3)["error"]["code"] == "locked"
        assert b"beside the holder" not in (vault_path / "LOG.jsonl").read_bytes()
    assert cli.json("append", "written after the holder")["status"] == "stored"


@pytest.mark.long
def test_a_job_lock_file_deleted_while_held_lets_no_second_compaction_in(vault, vault_path, cli):
    """`rm -r .cache` while `compact` holds the tree's lock: a second `compact` made a new
    `tree.lock` and ran beside the first. The tree's folder is locked too, as the vault lock locks
    the vault's folder, and no cleaning of caches deletes it."""
    import shutil

    (vault_path / "optmem.toml").write_text("[lock]\ntimeout = 0.3\n", "utf-8")  # timeout under test: held here
    assert cli.json("append", "written before the holder")["status"] == "stored"
    with lock_held(vault_path, "tree"):
        shutil.rmtree(vault_path / ".cache")
        out = cli.json("compact", code=3)
        assert out["error"]["code"] == "locked", out
        assert "its lock file was deleted while it held the lock" in out["error"]["message"], out
        assert cli.json("append", "appends go on meanwhile")["status"] == "stored"  # (not the vault lock)
    assert cli.json("compact")["ok"] is True


@pytest.mark.long
def test_a_sync_lock_file_deleted_while_held_lets_no_second_sync_in(tmp_path):
    """The same for `optmem sync`'s lock: the git directory is locked too (two syncs of one
    repository would run two merges in it)."""
    import shutil

    from test_git import git

    from optmem.errors import Locked
    from optmem.integrations.sync import sync_lock
    from optmem.vault import Vault

    clone = tmp_path / "clone"
    git(tmp_path, "init", "-q", "-b", "main", str(clone))
    (clone / "LOG.jsonl").write_text("", "utf-8")
    git(clone, "add", "LOG.jsonl"), git(clone, "commit", "-qm", "a vault")
    worktree = tmp_path / "memory"  # (a worktree's .git is a file naming its git directory)
    git(clone, "worktree", "add", "-q", "--detach", str(worktree))
    for top in (clone, worktree):
        vault = Vault(top)
        with lock_held(top, "sync"):
            shutil.rmtree(top / ".cache")
            with pytest.raises(Locked, match="deleted while it held the lock"):
                with sync_lock(vault, timeout=0.3):  # timeout under test: held here
                    pass
        with sync_lock(vault, timeout=HANG):  # let go: the next one takes it
            pass
