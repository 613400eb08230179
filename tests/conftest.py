"""Isolation for every test: the vault lives in tmp_path, HOME too, and no clock/domain leaks in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from typer.testing import CliRunner

from optmem.cli import run
from optmem.vault import Vault

# No test depends on the speed of the machine (a laptop or CI runner at load 10 is slower by many
# times): a timeout is a hang detector, as generous as one needs, or the test waits on an event.
HANG = 300.0  # seconds a test waits for a process, a server or an answer before it calls it a hang
PATIENT = "lock.timeout=600"  # `--set` / Vault override for writers that share a vault's lock
PATIENT_TOML = "[lock]\ntimeout = 600\n"  # the same, in a test vault's optmem.toml


GIT_ENV = {  # git run by a test: a fixed author, no system configuration
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """`git -C cwd ARGS` under `GIT_ENV`; its exit status checked unless not `check`."""
    res = subprocess.run(
        ["git", "-C", str(cwd), *args],
        capture_output=True,
        text=True,
        input=input,
        env={**os.environ, **GIT_ENV},
        timeout=HANG,
    )
    assert not check or res.returncode == 0, res.stderr
    return res


# Hypothesis: generating inputs and running an example take what they take on a busy machine, so
# no per-example deadline and no health check that times generation; the others stay on.
hypothesis_settings.register_profile("optmem", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("optmem")


_HOLDER = """
import sys
from optmem.vault import Vault
vault = Vault(sys.argv[1])
if sys.argv[2] == "tree":
    held = vault.tree_lock(make=True)  # (as compaction takes it)
elif sys.argv[2] == "sync":
    from optmem.integrations.sync import sync_lock
    held = sync_lock(vault)
else:
    held = vault.lock()
with held:
    print("held", flush=True)
    sys.stdin.read()
"""


@contextmanager
def lock_held(vault: Path, which: str = "vault") -> Iterator[None]:
    """Another process holds `vault`'s lock (`which`: "vault", or the "tree" or "sync" job's) while
    the block runs; it lets go, and exits cleanly, after."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(vault), which], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield
    finally:
        holder.communicate("", timeout=HANG)
    assert holder.returncode == 0


def pull_with_driver(clone: Path, driver: str) -> subprocess.CompletedProcess[str]:
    """`git pull` into `clone` from its origin's main, its hot files' merge driver set to `driver` and
    optmem on no PATH (a venv moved, a driver gone); its own changes committed first."""
    git(clone, "config", "--local", "merge.optmem-hot.driver", driver)
    git(clone, "add", "-A"), git(clone, "commit", "-qm", "local changes")
    return subprocess.run(
        ["git", "-C", str(clone), "pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV, "PATH": "/usr/bin:/bin"},
        timeout=HANG,
    )


def wait_until(done: Callable[[], object], what: str, limit: float = HANG) -> None:
    """Poll `done` until it is true — an event, not a clock: `limit` only stops a hang."""
    import time

    end = time.monotonic() + limit
    while not done():
        assert time.monotonic() < end, f"{what}: not after {limit:g}s"
        time.sleep(0.01)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPTMEM_VAULT", str(tmp_path / "vault"))
    # a process the test starts (optmem, a git hook) runs this checkout's optmem, not the one the
    # venv's editable install names (another worktree's)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parent.parent))
    from optmem.quarantine import AGENT_HOSTS

    # (and none of an agent host's marks: a suite run by an agent reads as one run by a person)
    for name in ("OPTMEM_NOW", "OPTMEM_DOMAIN", *AGENT_HOSTS):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    # each test starts as a new process would: no --vault or --set left by the last in-process
    # run (an MCP call made without a server of its own reads the process's: it found the vault
    # an earlier test named)
    from optmem.cli import common

    monkeypatch.setattr(common, "_PROCESS", common._State())
    return tmp_path


@pytest.fixture
def uncovered() -> Iterator[None]:
    """Coverage's line tracer off for the test (a scale test: thousands of records through code the
    rest of the suite covers, at twice the CPU traced). pytest-cov's own `no_cover` mark fails
    under `--no-cov`."""
    from coverage import Coverage

    cov = Coverage.current()
    if cov is not None:
        cov.stop()
    try:
        yield
    finally:
        if cov is not None:
            cov.start()


@pytest.fixture
def vault_path(tmp_path: Path) -> Path:
    return tmp_path / "vault"


@pytest.fixture
def vault(vault_path: Path) -> Vault:
    from optmem.vault import init

    v = Vault(vault_path)
    init(v)
    return v


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


class Cli:
    """Runs the real dispatcher (fast path, else Typer) in-process, capturing its output."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
        with self.runner.isolation(input=input, env=env) as (out, err, _):
            code = run(list(args))
            sys.stdout.flush()
            sys.stderr.flush()
            return Result(code, out.getvalue().decode("utf-8"), err.getvalue().decode("utf-8"))

    def json(
        self, *args: str, input: str | None = None, code: int | None = 0, env: dict[str, str] | None = None
    ) -> dict[str, Any]:
        result = self(*args, "--json", input=input, env=env)
        if code is not None:
            assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
        return json.loads(result.stdout)


def pytest_configure(config: pytest.Config) -> None:
    """`pytest -m "not long"` (the fast tier) runs a part of the suite: the coverage floor is the
    whole suite's (`--cov-fail-under` in pyproject.toml), so a run that picks tests by mark is
    not held to it — the full `pytest` is.

    Test vaults live in memory where the system has room for them (/dev/shm, a tmpfs, with 1 GiB
    free: a container's default 64 MB is not enough): real files, but a vault's fsyncs —
    thousands in the suite, a millisecond or more each on a disk — cost nothing there
    (`--basetemp` or PYTEST_DEBUG_TEMPROOT chooses another place).

    The optmem processes the tests start cache their bytecode, as a user's installation does:
    with PYTHONDONTWRITEBYTECODE set (some shells set it), each of the suite's ~1,000 processes
    compiled optmem's modules again. Before the workers start, optmem's and the tests' modules are
    compiled once, as `pip install` compiles an installed package (an editable install is not):
    else the two workers and the first processes they start all compile them side by side."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    if not hasattr(config, "workerinput"):  # (the controller, or a run without workers)
        import compileall

        here = Path(__file__).resolve().parent
        for folder in (here.parent / "optmem", here):
            compileall.compile_dir(folder, quiet=1)
    cov = config.pluginmanager.getplugin("_cov")
    if config.option.markexpr and cov is not None:
        cov.options.cov_fail_under = None
    shm = Path("/dev/shm")
    if not config.option.basetemp and "PYTEST_DEBUG_TEMPROOT" not in os.environ:
        if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
            room = os.statvfs(shm)
            if room.f_bavail * room.f_frsize >= 1 << 30:
                os.environ["PYTEST_DEBUG_TEMPROOT"] = str(shm)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `long` (seconds each) start first, so the workers that share the rest finish
    together: started last, the simulated year alone kept one worker busy after the other was done."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
    _xdist_groups(config, items)


def _xdist_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--dist loadgroup` sends the tests of one `xdist_group` to one worker by a suffix of their
    node ids ("…::test@group"), which pytest-xdist 3.8 writes into a field pytest 9.2 no longer
    reads (pytest-xdist issue 1386): each group was split across the workers, and the data its
    module fixture shares (a built vault, a hub) made on both, again after every change of module.
    Here the suffix is set where pytest 9.2 reads it, unless the node id has it already."""
    if not getattr(config.option, "loadgroup", False):  # (set on the workers of a loadgroup run)
        return
    for item in items:
        marks = item.iter_markers("xdist_group")
        names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in marks}
        suffix = "@" + "_".join(sorted(names))
        if names and not item.nodeid.endswith(suffix) and hasattr(item, "_id"):
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(item.nodeid + suffix)


@pytest.fixture
def cli() -> Cli:
    return Cli()


def optmem_cmd() -> list[str]:
    return [sys.executable, "-m", "optmem"]


def docs_text() -> str:
    """README.md and every docs/*.md page, one after the other."""
    repo = Path(__file__).resolve().parent.parent
    return "\n".join(p.read_text("utf-8") for p in [repo / "README.md", *sorted((repo / "docs").glob("*.md"))])


def run_readme_block(marker: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the ```sh block of the README or a docs page holding `marker`, as printed, with bash
    -euo pipefail and the `optmem` installed beside this interpreter on PATH (whether or not its
    venv is activated), stdin a terminal: the reader's shell (what they type is theirs — `optmem
    trust` is a person's)."""
    import re
    import textwrap

    blocks = [textwrap.dedent(b) for b in re.findall(r"```sh(?: runnable)?\n(.*?)```", docs_text(), re.S)]
    block = next(b for b in blocks if marker in b)
    env = {**env, "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])}
    return in_terminal(block, env, cwd)


def in_terminal(script: str, env: dict[str, str], cwd: Path, merged: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `script` with bash -euo pipefail, stdin a pseudo-terminal: a reader's shell, where what
    they type is theirs — a redline, a purge, `optmem trust` — as it is for a person (`origin_of`);
    stderr into stdout when `merged`."""
    import pty

    main, reader = pty.openpty()
    try:
        return subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            stdin=reader,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merged else subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(cwd),
            timeout=HANG,
        )
    finally:
        os.close(reader)
        os.close(main)


def run_optmem(
    *args: str, env: dict[str, str] | None = None, input: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """A real subprocess, with the test's environment (its vault and HOME)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [*optmem_cmd(), *args], capture_output=True, text=True, env=full_env, input=input, cwd=cwd, timeout=HANG
    )


def at_terminal(*args: str) -> subprocess.CompletedProcess[str]:
    """optmem run by a person: a real subprocess whose stdin is a terminal (a pseudo-terminal),
    so it writes as the user (`origin_of`); its output is captured as `run_optmem`'s."""
    import pty

    main, person = pty.openpty()
    try:
        return subprocess.run(
            [*optmem_cmd(), *args], stdin=person, capture_output=True, text=True, env=dict(os.environ), timeout=HANG
        )
    finally:
        os.close(person)
        os.close(main)


def put(
    vault: Vault,
    text: str,
    *,
    gate: bool = True,
    on_similar: str | None = None,
    allow_unsafe: bool = False,
    **fields: Any,
) -> Any:
    """`log.append` of a draft with these fields (what most tests need in one line)."""
    from optmem import log

    return log.append(vault, log.Draft(text, **fields), gate=gate, on_similar=on_similar, allow_unsafe=allow_unsafe)


def log_lines(vault_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (vault_path / "LOG.jsonl").read_text("utf-8").splitlines() if line.strip()]


@pytest.fixture
def no_sweep(vault_path: Path) -> None:
    """Ranking tests move the clock by months: without this, the daily sweep on a write would
    (rightly) cool the records they rank. The lifecycle has its own tests."""
    vault_path.mkdir(parents=True, exist_ok=True)
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")


def fenced_json(text: str) -> Any:
    """An MCP tool result's JSON, after checking where it stands: a result inside the fence for
    stored text, a refusal (`"ok": false`, the tool's error) outside it."""
    from optmem.safety.fence import CLOSE, OPEN

    if not text.startswith(OPEN):
        got = json.loads(text)
        assert got.get("ok") is False and CLOSE not in text, text[:200]  # (only an error stands unfenced)
        return got
    assert text.startswith(OPEN + "\n") and text.endswith("\n" + CLOSE), text[:200]
    return json.loads(text[len(OPEN) : -len(CLOSE)])


def mcp_session(vault_path: Path, script: Callable[[Any], Any], *sets: str) -> Any:
    """Run `await script(session)` against the MCP server of `optmem --vault VAULT_PATH mcp`, as a
    client would, and return what the script returns. The server is the application that command
    serves (`optmem.cli.mcpserve.server`: the same tools, guards and error shapes), driven here in
    this process over the SDK's in-memory transport — JSON-RPC messages after the initialize
    handshake — so a test of what a tool returns, refuses or stores starts no process (each one
    imported the SDK again). `sets`: --set pairs, as the command takes them. What is about the wire
    and the process (framing, bytes that are not UTF-8, the HTTP hub) is tested against a real
    `optmem mcp` (test_agents.py, test_hub.py)."""
    import asyncio

    from mcp import Client

    from optmem.cli.common import STATE, own_state
    from optmem.cli.mcpserve import server

    async def session(app: Any) -> Any:
        async with Client(app, mode="legacy") as client:  # (legacy: the initialize handshake, as over stdio)
            return await script(client.session)

    with own_state():  # this session's --vault and --set, gone with it
        STATE.vault_opt, STATE.set_opt = str(vault_path), list(sets)
        with server() as app:
            return asyncio.run(asyncio.wait_for(session(app), HANG))


_KILLED_BEFORE_RENAME = (
    "import os, signal, sys\n"
    "from optmem import fsio\n"
    "real, file = fsio.Replacement.commit, sys.argv[1]\n"
    "def die(self, *args):\n"
    "    if self.path.name == file:\n"
    "        os.kill(os.getpid(), signal.SIGKILL)\n"
    "    return real(self, *args)\n"
    "fsio.Replacement.commit = die\n"
    "from optmem.cli import main\n"
    "sys.argv = ['optmem', '--vault', *sys.argv[2:]]\n"
    "main()\n"
)


def as_user() -> list[str]:
    """What runs a command without root's power to write any file (run as root, the tests
    would see no read-only folder refuse a write): `setpriv` dropping every capability, or nothing
    for a user who is not root. Never a skip: root without setpriv fails the test that needs it."""
    import shutil

    if os.geteuid() != 0:
        return []
    assert shutil.which("setpriv"), "root needs setpriv (util-linux) to run without its write capabilities"
    return ["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"]


def killed_before_rename(
    vault_path: Path, *args: str, file: str = "MEMORY.md", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """`optmem ARGS` as its own process, killed (SIGKILL) after what it writes to the log and
    before its new `file` (MEMORY.md: an edit's journal records; HANDOFF.md: a handoff's record)
    was renamed into place."""
    return subprocess.run(
        [sys.executable, "-c", _KILLED_BEFORE_RENAME, file, str(vault_path), *args],
        capture_output=True,
        timeout=HANG,
        env=env,
    )
