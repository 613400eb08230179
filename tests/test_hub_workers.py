"""The hub's worker processes (issue 43, item 4): `optmem mcp --http` with `[mcp] workers` above
one answers from several processes on one socket — reads in parallel, writes under the vault
lock — and its supervisor replaces a worker that dies and leaves none behind when stopped.
Real processes; every wait an event with a hang detector (`HANG`), never a clock."""

from __future__ import annotations

import os
import signal
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import HANG, fenced_json, log_lines, wait_until
from test_hub import TOKEN, answers, free_port, hub_config, rpc, start_hub


def children(pid: int) -> set[int]:
    """The live processes whose parent is `pid` (Linux's /proc; zombies not counted)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not: it has ended, only its parent has not read it)."""
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
    except OSError:
        return False


def call(port: int, tool: str, arguments: dict) -> dict:
    """One tool call as its own HTTP request (stateless: no session), its structured result."""
    answer, _ = rpc(
        port, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    )
    result = answer["result"]
    assert not result["isError"], result
    return fenced_json(result["content"][0]["text"])


@pytest.mark.long
def test_workers_answer_together_and_writes_from_many_clients_lose_nothing(vault_path, tmp_path):
    """Three workers on one socket, four clients writing and searching at once: every write is
    in the log once (each worker takes the vault lock to write), every worker sees every other's
    writes, and the token is checked by every worker."""
    port = free_port()
    hub = start_hub(vault_path, str(port), hub_config(tmp_path, workers=3))
    try:
        wait_until(lambda: len(children(hub.pid)) == 3, "three workers")
        for _ in range(4):  # (whichever worker takes the connection)
            req = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=b"{}", method="POST")
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(req, timeout=HANG)
            assert refused.value.code == 401

        def client(i: int) -> None:
            for j in range(8):
                call(port, "append", {"text": f"worker test client {i} note {j}"})
                call(port, "search", {"query": f"client {i} note"})

        threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(HANG)
        assert not any(t.is_alive() for t in threads)
        texts = [x["text"] for x in log_lines(vault_path)]
        expected = {f"worker test client {i} note {j}" for i in range(4) for j in range(8)}
        assert sorted(texts) == sorted(expected)  # each once: nothing lost, nothing twice
        for _ in range(6):  # every worker finds every write, whoever made it
            found = call(port, "search", {"query": "worker test client note", "limit": 50})
            assert {h["text"] for h in found["hits"]} == expected
        assert "search" in answers(port)  # an SDK-style session (initialize, then a call) too
    finally:
        hub.send_signal(signal.SIGTERM)
        hub.wait(HANG)


@pytest.mark.long
def test_a_worker_that_dies_is_replaced_and_sigterm_leaves_no_worker_behind(vault_path, tmp_path):
    port = free_port()
    log = tmp_path / "hub.log"
    with log.open("wb") as err:
        hub = start_hub(vault_path, str(port), hub_config(tmp_path, workers=2), stderr=err)
    try:
        wait_until(lambda: len(children(hub.pid)) == 2, "two workers")
        first = children(hub.pid)
        dead = min(first)
        os.kill(dead, signal.SIGKILL)
        wait_until(lambda: len(children(hub.pid)) == 2 and dead not in children(hub.pid), "a worker in its place")
        wait_until(lambda: f"worker {dead} killed by SIGKILL" in log.read_text("utf-8", "replace"), "the report")
        assert "search" in answers(port)
        workers = children(hub.pid)
        hub.send_signal(signal.SIGTERM)
        assert hub.wait(HANG) == 0
        assert not any(alive(pid) for pid in workers)  # each waited for by the hub before it ended
    finally:
        if hub.poll() is None:
            hub.kill()
            hub.wait()


@pytest.mark.long
def test_workers_stop_when_their_supervisor_is_killed(vault_path, tmp_path):
    """SIGKILL gives the supervisor no chance to stop anything: its workers see it gone and stop."""
    port = free_port()
    hub = start_hub(vault_path, str(port), hub_config(tmp_path, workers=2))
    try:
        wait_until(lambda: len(children(hub.pid)) == 2, "two workers")
        workers = children(hub.pid)
    finally:
        hub.kill()
        hub.wait()
    wait_until(lambda: not any(alive(pid) for pid in workers), "the workers to stop")


@pytest.mark.long
def test_one_worker_is_this_process_alone(vault_path, tmp_path):
    """`workers = 1`: the hub serves in its own process, no worker under it."""
    port = free_port()
    hub = start_hub(vault_path, str(port), hub_config(tmp_path, workers=1))
    try:
        assert "search" in answers(port)
        assert children(hub.pid) == set()
    finally:
        hub.kill()
        hub.wait()


def _workers_that_wait(tmp_path):
    """A folder each worker writes `<pid>.<index>` into as it starts, and the worker: it writes,
    then waits for signals until it is ended."""
    where = tmp_path / "started"
    where.mkdir()

    def work(index: int) -> None:
        (where / f"{os.getpid()}.{index}").write_text("", "utf-8")
        while True:
            signal.pause()

    return where, work


def test_the_supervisor_in_process_replaces_ends_and_stops_on_a_signal(tmp_path):
    """`supervise` in this process: its workers (forks of it) write their pids and wait; one is
    killed and another takes its index (`ended` told first); SIGTERM to this process stops the
    rest and `supervise` returns 0, every worker waited for."""
    from optmem.integrations.workers import _stop, supervise

    where, work = _workers_that_wait(tmp_path)

    def started() -> dict[int, int]:
        return {int(p.stem): int(p.suffix[1:]) for p in where.iterdir()}

    ended: list[int] = []
    seen: list[dict[int, int]] = []
    returned = threading.Event()

    def drive() -> None:
        try:
            wait_until(lambda: len(started()) == 2, "two workers")
            os.kill(next(iter(started())), signal.SIGKILL)
            wait_until(lambda: len(started()) == 3, "one in its place")
            seen.append(started())
        finally:  # (to the thread in `supervise`, whatever happened here, once it listens — and
            # never once it has returned: a later test's supervisor is not this one's to stop)
            wait_until(
                lambda: returned.is_set() or signal.getsignal(signal.SIGTERM) is _stop, "the supervisor's handler"
            )
            if not returned.is_set():
                signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)

    driver = threading.Thread(target=drive)
    driver.start()
    try:
        assert supervise(2, work, ended.append) == 0
    finally:
        returned.set()
        driver.join(HANG)
    assert sorted(seen[0].values()) in ([0, 0, 1], [0, 1, 1]) and len(ended) == 1
    assert sorted(seen[0].values()).count(ended[0]) == 2  # the new one took the dead one's index
    assert not any(alive(pid) for pid in seen[0])


def test_the_supervisor_stops_on_a_signal_that_reaches_another_thread(tmp_path):
    """A stop signal is handled in whichever thread of the supervisor's process receives it — here
    the driver thread signals itself, so the main thread, waiting for a worker to end, is never
    interrupted. The supervisor still stops at once: it wakes on the signal's number written to its
    wakeup pipe, never on an interrupted wait (which lost a SIGTERM that came just before the wait
    began, or reached another thread: the hub served on and this test's sibling hung). A watchdog
    ends the workers if `supervise` has not returned after `HANG`, so a regression fails here."""
    from optmem.integrations.workers import _stop, supervise

    where, work = _workers_that_wait(tmp_path)

    def started() -> set[int]:
        return {int(p.stem) for p in where.iterdir()}

    returned = threading.Event()
    late: list[int] = []

    def drive() -> None:
        wait_until(lambda: len(started()) == 2, "two workers")
        wait_until(lambda: signal.getsignal(signal.SIGTERM) is _stop, "the supervisor's handler")
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)  # (this thread, not the main one)
        if not returned.wait(HANG):  # (a hang: the workers ended, so `supervise` returns and we fail)
            late.extend(started())
            for pid in late:
                os.kill(pid, signal.SIGKILL)

    driver = threading.Thread(target=drive)
    driver.start()
    try:
        assert supervise(2, work) == 0
    finally:
        returned.set()
        driver.join(HANG)
    assert late == [], "supervise did not stop on the signal: its workers were killed to end the wait"
    assert not any(alive(pid) for pid in started())


def test_the_supervisor_in_process_gives_up_on_workers_that_keep_ending(tmp_path, capfd):
    from optmem.integrations.workers import RESTARTS, supervise

    def work(index: int) -> None:
        raise RuntimeError("cannot start")

    start = time.monotonic()
    assert supervise(2, work) == 1
    assert time.monotonic() - start < HANG  # (bounded: it gave up)
    err = capfd.readouterr().err
    assert err.count("starting another in its place") == RESTARTS + 2  # (then one more ended)
    assert "the hub stops" in err and "RuntimeError: cannot start" in err


def test_max_connections_is_the_sum_over_the_workers():
    """`guarded_protocol` with the workers' shared counts: this worker's slot is written, and the
    bound compares the sum (another worker's open connections count)."""
    import mmap

    from optmem.integrations.mcp import guarded_protocol
    from optmem.settings import McpSettings

    slots = memoryview(mmap.mmap(-1, 16)).cast("q")
    slots[1] = 7  # (the other worker's)
    protocol = guarded_protocol(McpSettings(max_connections=8), (slots, 0))

    class Seen(protocol):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            self.connections = {object()}  # (this worker's one, as uvicorn keeps it)

    assert Seen().open() == 8 and slots[0] == 1
    slots[1] = 0
    assert Seen().open() == 1


def test_the_workers_socket_says_tcp_so_answers_are_not_held_back_and_a_taken_port_is_refused():
    """The socket the workers share is made here (`listening`): asyncio turns Nagle's algorithm
    off on a connection only when its socket says it is TCP — with protocol 0 (socket.
    create_server's) every answer waited for the client's delayed acknowledgement (~40 ms a
    call, p50 52 ms against 13). A port already held is refused in words, nothing served."""
    import asyncio
    import socket

    from optmem.errors import UsageError
    from optmem.integrations.mcp import listening

    sock = listening("127.0.0.1", 0)
    port = sock.getsockname()[1]
    with pytest.raises(UsageError, match=f"cannot listen on 127.0.0.1:{port}.*another process holds the port"):
        listening("127.0.0.1", port)
    # a host that is no address here is said as such, not as a port held (tester19 F11)
    with pytest.raises(UsageError, match="'host:80' is no address of this machine") as bad:
        listening("host:80", 90)
    assert "another process" not in str(bad.value)

    async def nodelay() -> int:
        got: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Seen(asyncio.Protocol):
            def connection_made(self, transport) -> None:
                conn = transport.get_extra_info("socket")
                got.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

        server = await asyncio.get_running_loop().create_server(Seen, sock=sock)
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            return await asyncio.wait_for(got, HANG)
        finally:
            writer.close()
            server.close()

    assert asyncio.run(nodelay()) != 0


def held_connections(pid: int, port: int) -> int:
    """How many established TCP connections to local `port` the process `pid` holds (Linux's
    /proc: its descriptors' socket inodes, against /proc/net/tcp's connections)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":  # (01: established)
                inodes.add(fields[9])
    held = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        held += target.startswith("socket:[") and target[8:-1] in inodes
    return held


@pytest.mark.long
def test_clients_connections_are_shared_out_between_the_workers(vault_path, tmp_path):
    """Four clients connect at once and each keeps its connection open (keep-alive, as an MCP
    client does) and calls over it: the two workers hold two each. asyncio accepts every waiting connection in whichever
    worker wakes first, and four clients were often all served by one worker while the other
    idled; a worker now leaves a new connection to one holding fewer."""
    import http.client
    import json

    port = free_port()
    hub = start_hub(vault_path, str(port), hub_config(tmp_path, workers=2))
    conns = []
    try:
        wait_until(lambda: len(children(hub.pid)) == 2, "two workers")
        call(port, "append", {"text": "the staging server runs the deploy"})
        conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=HANG) for _ in range(4)]
        for conn in conns:  # all four waiting to be accepted at once, as clients starting together
            conn.connect()
        for i, conn in enumerate(conns):
            message = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "staging deploy"}},
            }
            headers = {
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "Authorization": f"Bearer {TOKEN}",
            }
            conn.request("POST", "/mcp", json.dumps(message), headers)
            answer = json.loads(conn.getresponse().read())
            hits = fenced_json(answer["result"]["content"][0]["text"])["hits"]
            assert [h["text"] for h in hits] == ["the staging server runs the deploy"]
        workers = children(hub.pid)
        assert sorted(held_connections(pid, port) for pid in workers) == [2, 2]
    finally:
        for conn in conns:
            conn.close()
        hub.send_signal(signal.SIGTERM)
        hub.wait(HANG)


def test_in_a_worker_a_search_runs_in_the_event_loops_thread_and_a_write_in_a_thread_of_its_own():
    """`app.inline` (a hub's worker sets it): the tools that only read and answer quickly
    (`INLINE`) run in the event loop's thread — handing each call to a thread and back cost CPU
    and time — while a write (it may wait for the vault lock) and `context` (long at a million
    records) still run in a thread of their own, as every tool does where `inline` is not set
    (one process answering every client: its threads overlap SQLite's work)."""
    import asyncio
    import importlib

    from optmem.cli.mcpserve import refuse
    from optmem.cli.spec import COMMANDS, REGISTRY
    from optmem.integrations.mcp import INLINE, build_server

    for module, _ in set(COMMANDS.values()):
        importlib.import_module(f"optmem.cli.{module.lstrip('@')}")
    ran: dict[str, bool] = {}  # command → whether it ran in the event loop's thread

    def run(args: list[str]) -> str:
        ran[args[0]] = threading.current_thread() is threading.main_thread()
        return '{"ok": true}'

    app = build_server(REGISTRY, run, refuse, 0.7)  # (the pending threshold its instructions state)

    async def calls() -> None:
        await app.call_tool("search", {"query": "deploy"})
        await app.call_tool("conflicts", {})
        await app.call_tool("handoff_read", {})
        await app.call_tool("context", {})
        await app.call_tool("append", {"text": "a note"})

    asyncio.run(calls())
    assert ran == {"search": False, "conflicts": False, "handoff": False, "context": False, "append": False}
    app.inline = True
    asyncio.run(calls())
    assert ran == {"search": True, "conflicts": True, "handoff": True, "context": False, "append": False}
    assert INLINE == {"search", "conflicts", "handoff_read"}


FIRST_CALLS = """
import json, sys
from optmem.cli import mcpserve
from optmem.cli.common import STATE
from optmem.integrations.mcp import preload

STATE.vault_opt = sys.argv[1]
with mcpserve.server():
    preload()
    before = set(sys.modules)
    found = [json.loads(mcpserve.call(args)) for args in (["search", "deploy"], ["search", "部署"], ["context"])]
    print(json.dumps({"new": sorted(set(sys.modules) - before), "found": [len(f.get("hits", [])) for f in found]}))
"""


@pytest.mark.long
def test_a_servers_first_search_and_context_import_nothing_after_the_preload(cli, vault_path):
    """The hub imports what a first search and `context` use (`mcp.FIRST_USE`) before its
    workers fork: a worker's first call then loads no module while a client waits (~50 ms that
    blocked its loop). Its own process: another test's imports cannot stand in for the preload."""
    import json
    import subprocess
    import sys

    for text in ("We deploy the staging server on Fridays", "部署 时间改到周五了", "Bob's laptop is a MacBook"):
        assert cli("--vault", str(vault_path), "append", text).exit_code == 0
    done = subprocess.run(
        [sys.executable, "-c", FIRST_CALLS, str(vault_path)], capture_output=True, text=True, timeout=HANG
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[-1])
    assert all(answer["found"][:2])  # (each search found its record: the search path ran)
    assert answer["new"] == []
