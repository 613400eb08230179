"""Nothing a vault carries runs or exhausts the machine: git runs with its code-running settings
off, every file and pipe is read with a size bound, links out of the vault are refused on every
read, the summariser's output is bounded, and a full stdout is a clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG, optmem_cmd, put


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, timeout=HANG)


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


@pytest.mark.long
def test_reads_never_run_what_a_carried_git_config_names(tmp_path, cli, monkeypatch):
    """The reads run in this process (git, which they run, is the process that matters), from
    inside the carried repository."""
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
    monkeypatch.chdir(repo)
    for args, feed in (
        (["context"], None),
        (["search", "staging"], None),
        (["show"], None),
        (["doctor"], None),
        (["hook", "claude-code"], event),
    ):
        res = cli(*args, env=env, input=feed)
        assert res.exit_code in (0, 1), (args, res.stderr)
        assert not marker.exists(), (args, marker.read_text())
    assert "blue" in cli("context", env=env).stdout


def test_a_commit_is_recorded_without_running_what_the_repository_config_names(tmp_path, cli, vault_path):
    repo, marker = _booby_trapped_repo(tmp_path)
    (repo / "a.txt").write_text("one\n")
    _git(repo, "-c", "core.hooksPath=/dev/null", "add", "a.txt")
    _git(repo, "-c", "core.hooksPath=/dev/null", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "first")
    cli("init", str(vault_path))  # (a hook never makes its vault: `hooks install` did)
    marker.unlink(missing_ok=True)
    out = cli.json("hook", "git-commit", "--repo", str(repo))
    assert out["status"] == "recorded" and out["subject"] == "first"
    assert not marker.exists(), marker.read_text()


# -- every file and pipe read with a bound; links out refused --------------------------------
GIB = 1 << 30


def _bounded(
    args: list[str], vault: Path, *, input: str | None = None, stdin: int | None = None
) -> subprocess.CompletedProcess[str]:
    """optmem in a real process that may use at most 1 GiB of address space: a read without a
    bound fails the test (MemoryError, or killed) instead of eating the machine."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (GIB, GIB))

    return subprocess.run(
        [*optmem_cmd(), "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        input=input,
        stdin=stdin,
        env={**os.environ, "OPTMEM_VAULT": str(vault)},
        preexec_fn=limit,
        timeout=300,
    )


def _clean_refusal(res: subprocess.CompletedProcess[str], *names: str) -> None:
    assert res.returncode in (1, 3), (res.returncode, res.stderr[-2000:])
    assert "internal error" not in res.stderr and "MemoryError" not in res.stderr, res.stderr[-2000:]
    for name in names:
        assert name in res.stderr, res.stderr[-2000:]


READS = (["search", "port"], ["context"], ["show"], ["get", "x"], ["stats"], ["add", "a new fact"])


@pytest.mark.long
def test_a_settings_file_linked_to_dev_zero_is_refused_in_bounded_memory(tmp_path, vault):
    (vault.root / "optmem.toml").symlink_to("/dev/zero")
    for args in READS:
        _clean_refusal(_bounded(args, vault.root), "optmem.toml")
    doctor = _bounded(["doctor", "--json"], vault.root)
    assert doctor.returncode == 1, doctor.stderr
    assert "link_outside" in {p["code"] for p in json.loads(doctor.stdout)["problems"]}
    event = json.dumps({"hook_event_name": "SessionStart", "cwd": str(tmp_path)})
    hook = _bounded(["hook", "claude-code"], vault.root, input=event)
    assert hook.returncode == 0 and "optmem.toml" in hook.stderr, hook.stderr  # fails open, says why


def test_a_settings_file_linked_outside_the_vault_is_not_read(tmp_path, vault, cli):
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text("[limits]\nmemory = 10\n")
    (vault.root / "optmem.toml").symlink_to(elsewhere)
    res = cli("add", "a fact longer than ten characters")
    assert res.exit_code == 3 and "optmem.toml" in res.stderr and "outside the vault" in res.stderr, res.stderr
    assert not (vault.root / "MEMORY.md").exists() or "longer" not in (vault.root / "MEMORY.md").read_text()


def test_a_settings_file_that_is_a_fifo_is_refused_without_waiting(tmp_path, vault):
    os.mkfifo(vault.root / "optmem.toml")
    _clean_refusal(_bounded(["search", "port"], vault.root), "optmem.toml", "not a regular file")


def test_a_huge_settings_file_is_refused_by_its_size(tmp_path, vault, cli):
    (vault.root / "optmem.toml").write_text("# " + "x" * (2 << 20) + "\n")
    res = cli("search", "port")
    assert res.exit_code == 3 and "optmem.toml" in res.stderr and "1 MiB" in res.stderr, res.stderr


@pytest.mark.long
def test_a_handoff_from_dev_zero_or_an_endless_pipe_is_refused_in_bounded_memory(tmp_path, vault):
    res = _bounded(["handoff", "write", "-p", "webapp", "--file", "/dev/zero"], vault.root)
    _clean_refusal(res, "/dev/zero", "too_large")
    with open("/dev/zero", "rb") as zero:
        res = _bounded(["handoff", "write", "-p", "webapp", "--file", "-"], vault.root, stdin=zero.fileno())
        _clean_refusal(res, "stdin", "too_large")
        res = _bounded(["append", "-"], vault.root, stdin=zero.fileno())
        _clean_refusal(res, "stdin", "too_large")
    assert not (vault.root / "projects").exists()


@pytest.mark.long
def test_a_summariser_printing_without_end_is_stopped_and_nothing_of_it_is_kept(tmp_path, vault, cli):

    for i in range(6):
        put(vault, f"note {i} about the deploy pipeline and its port", gate=False)
    loud = tmp_path / "loud.py"
    loud.write_text(
        "import sys\nsys.stdin.read()\nchunk = 'A' * (1 << 20)\n"
        "for _ in range(50):\n    sys.stdout.write(chunk)\n    sys.stderr.write(chunk)\n"
    )
    cmd = f"{sys.executable} {loud}"
    (vault.root / "optmem.toml").write_text("[tree]\nrun = 2\nfanout = 2\n")
    res = _bounded(["compact", "--summarizer", cmd, "--json"], vault.root)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout)
    assert any("printed more than" in w for w in out["warnings"]), out["warnings"]
    tree = vault.root / "tree"
    written = [p for p in tree.rglob("*") if p.is_file()]
    assert written and all("AAAA" not in p.read_text() for p in written)
    assert sum(p.stat().st_size for p in written) < 1 << 20


def test_doctor_names_every_link_out_of_the_vault_a_walk_finds(tmp_path, vault, cli):

    cli("segment", "--writer", "here")
    for i in range(4):
        put(vault, f"note {i} about the deploy pipeline", gate=False)
    (vault.root / "optmem.toml").write_text("[tree]\nrun = 2\nfanout = 2\n")
    assert cli("compact").exit_code == 0
    outside = tmp_path / "outside"
    (outside / "writer").mkdir(parents=True)
    (outside / "writer" / "2026-01.jsonl").write_text('{"text": "outside-secret", "ts": "2026-01-01T00:00:00Z"}\n')
    (outside / "node.md").write_text("---\nid: x\n---\noutside-secret\n")
    node = sorted((vault.root / "tree" / "default").glob("*.md"))[0]
    node.unlink()
    node.symlink_to(outside / "node.md")
    (vault.root / "log" / "there").symlink_to(outside / "writer")
    month = vault.root / "log" / "here" / "2020-01.jsonl"
    month.symlink_to(outside / "writer" / "2026-01.jsonl")
    report = cli.json("doctor", code=1)
    linked = {p["file"] for p in report["problems"] if p["code"] == "link_outside"}
    assert linked == {f"tree/default/{node.name}", "log/there", "log/here/2020-01.jsonl"}, report["problems"]
    assert "outside-secret" not in json.dumps(report)
    res = cli("search", "outside-secret", "--json")  # the linked month stops reads; the folder is not read
    assert res.exit_code == 3 and "leads outside the vault" in res.stdout and "outside-secret" not in res.stderr


# -- a full or closed stdout ------------------------------------------------------------------
@pytest.mark.long
def test_a_full_stdout_is_a_clear_unwritable_error_for_every_command(vault):

    for i in range(3):
        put(vault, f"note {i} about the deploy pipeline", gate=False)
    env = {**os.environ, "OPTMEM_VAULT": str(vault.root)}
    for args in (["export"], ["search", "deploy"], ["search", "deploy", "--json"], ["stats"]):
        with open("/dev/full", "wb") as full:
            res = subprocess.run(
                [*optmem_cmd(), *args], stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=120
            )
        assert res.returncode == 3, (args, res.returncode, res.stderr)
        assert "internal error" not in res.stderr and "Traceback" not in res.stderr, (args, res.stderr)
        assert "stdout" in res.stderr and "disk is full" in res.stderr, (args, res.stderr)
        if "--json" in args:  # the stable error shape, on the stream that still works
            err = json.loads(res.stderr)
            assert err["ok"] is False and err["error"]["code"] == "unwritable", err
    with open("/dev/full", "wb") as full:  # a refusal whose JSON cannot reach stdout: stderr has it
        argv = [*optmem_cmd(), "get", "nosuchid", "--json"]
        res = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    assert res.returncode == 1 and json.loads(res.stderr)["error"]["code"] == "not_found", res.stderr


@pytest.mark.long
def test_a_reader_that_stops_early_ends_the_output_without_a_traceback(vault):

    for i in range(40):  # ~160 kB to export: more than a pipe holds, so the export is cut short
        put(vault, f"note {i} about the deploy pipeline " + "x" * 4000, gate=False)
    env = {**os.environ, "OPTMEM_VAULT": str(vault.root)}
    proc = subprocess.Popen([*optmem_cmd(), "export"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10)  # the first bytes, then the reader goes away
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 3, err  # the output was cut short
    assert err == "", err  # a reader may stop early (`| head`): nothing to report (a full disk is: above)


def test_a_log_line_past_the_bound_is_a_bad_line_never_read_whole(vault, cli):
    from optmem import fsio

    put(vault, "the deploy port is 8080", gate=False)
    huge = json.dumps({"ts": "2026-01-01T00:00:00Z", "text": "swordfish " + "y" * (fsio.LINE_BYTES + 10)})
    with open(vault.root / "LOG.jsonl", "a") as fh:
        fh.write(huge + "\n")
    put(vault, "the staging port is 9090", gate=False)
    res = cli("search", "port", "--json")
    assert res.exit_code == 0, res.stderr
    assert {h["text"] for h in json.loads(res.stdout)["hits"]} == {
        "the deploy port is 8080",
        "the staging port is 9090",
    }
    assert cli.json("search", "swordfish")["hits"] == []
    report = cli.json("doctor", code=1)
    [bad] = [p for p in report["problems"] if p["code"] == "unparseable_line"]
    assert bad["line"] == 2 and "longer than any line is read" in bad["message"], bad


def test_a_log_that_is_a_fifo_refuses_the_append_instead_of_waiting(vault):
    os.mkfifo(vault.root / "LOG.jsonl")
    res = _bounded(["append", "a note"], vault.root)  # (a hang fails it: the timeout)
    assert res.returncode == 3 and "LOG.jsonl" in res.stderr and "not a regular file" in res.stderr, res.stderr


@pytest.mark.long
def test_an_import_from_dev_zero_or_an_endless_file_is_refused_in_bounded_memory(tmp_path, vault):
    """`import FILE`, `import -` and `import --from TOOL` read what they are given with a bound:
    an export line without end, or a neighbour's memory file linked to /dev/zero, is refused
    (or reported line by line), never read whole."""
    for args, stdin in ((["import", "/dev/zero"], None), (["import", "-"], "zero")):
        if stdin:
            with open("/dev/zero", "rb") as zero:
                res = _bounded(args, vault.root, stdin=zero.fileno())
        else:
            res = _bounded(args, vault.root)
        assert res.returncode in (1, 2, 3), (args, res.returncode, res.stderr[-2000:])
        assert "internal error" not in res.stderr and "MemoryError" not in res.stderr, res.stderr[-2000:]
    codex = tmp_path / "codex"
    codex.mkdir()
    with open(codex / "MEMORY.md", "wb") as big:  # 32 MiB of NULs, no line break (sparse: no disk used)
        big.truncate(32 << 20)
    mem0 = tmp_path / "mem0.json"
    mem0.symlink_to("/dev/zero")
    for args in (["import", "--from", "codex", str(codex)], ["import", "--from", "mem0", str(mem0)]):
        _clean_refusal(_bounded(args, vault.root), "too_large")
    assert not (vault.root / "LOG.jsonl").exists() or not (vault.root / "LOG.jsonl").read_text().strip()
