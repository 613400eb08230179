"""`optmem mcp --http` (issue 35, part 3): one vault served to agents on many hosts over the SDK's
streamable HTTP transport, behind a bearer token. A real server process, real HTTP clients."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HANG, fenced_json, log_lines, wait_until

from optmem.errors import CODES

TOKEN = secrets.token_urlsafe(32)


def asgi(web, scope: dict, chunks: list[bytes]) -> list[dict]:
    """What an ASGI app sends for one request whose body arrives in `chunks` (in this process)."""
    sent: list[dict] = []
    queue = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

    async def receive():
        return queue.pop(0)

    async def send(msg):
        sent.append(msg)

    asyncio.run(web(scope, receive, send))
    return sent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_hub(
    vault_path: Path, address: str, env: dict[str, str], *args: str, fds: int | None = None, stderr=subprocess.PIPE
) -> subprocess.Popen[bytes]:
    """`optmem mcp --http ADDRESS` as its own process, once it accepts connections (its stderr a
    pipe nobody reads, unless told; `fds`: its file descriptor limit, as a login shell sets it)."""

    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (fds, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    proc = subprocess.Popen(
        [sys.executable, "-m", "optmem", "--vault", str(vault_path), "mcp", "--http", address, *args],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        preexec_fn=limit if fds else None,
    )
    host, _, port_text = address.rpartition(":")
    port = int(port_text)
    deadline = time.monotonic() + HANG  # a hang detector: a busy machine starts it late
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        try:
            socket.create_connection(
                (host or "127.0.0.1", port), timeout=HANG
            ).close()  # refused at once until it listens
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("the hub did not start listening")


def post(
    port: int, headers: dict[str, str], body: bytes | None = None, host: str = "127.0.0.1"
) -> tuple[int, dict[str, str], dict]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode() if body is None else body
    req = urllib.request.Request(
        f"http://{host}:{port}/mcp",
        data=body,
        headers={"content-type": "application/json", "accept": "application/json, text/event-stream", **headers},
    )
    try:
        with urllib.request.urlopen(req, timeout=HANG) as res:
            return res.status, dict(res.headers), {}
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read() or b"{}")


async def client_session(port: int, script, token: str = TOKEN, host: str = "127.0.0.1", **headers: str):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}", **headers})
    async with http:
        async with streamable_http_client(f"http://{host}:{port}/mcp", http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as s:
                await s.initialize()
                return await script(s)


@pytest.mark.long
def test_the_hub_needs_the_token_and_several_clients_write_at_once_with_nothing_lost(vault_path):
    port = free_port()
    hub = start_hub(vault_path, str(port), {"OPTMEM_MCP_TOKEN": TOKEN})  # PORT alone: localhost
    try:
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": TOKEN}):
            status, got_headers, body = post(port, headers)
            assert status == 401, headers
            assert {k.lower(): v for k, v in got_headers.items()}["www-authenticate"].startswith("Bearer")
            assert body["ok"] is False and body["error"]["code"] == "unauthorized"
        assert not (vault_path / "LOG.jsonl").exists()  # nothing reached the vault
        # over HTTP too, what cannot be read is answered as over stdio, with the usual error object
        auth = {"Authorization": f"Bearer {TOKEN}"}
        call = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "append", "arguments": {}}}
        for body, rid, code in (
            (b"garbage", None, -32700),
            (json.dumps(call).replace("{}", '{"text": "a \\ud800"}').encode(), 4, -32602),
            (json.dumps({"jsonrpc": "2.0", "id": True, "method": "tools/list"}).encode(), None, -32600),
        ):
            status, _, answer = post(port, auth, body)
            assert status == 400 and answer["id"] == rid and answer["error"]["code"] == code, answer
            assert answer["error"]["data"]["ok"] is False, answer

        def writer(i: int):
            async def script(s):
                for j in range(10):
                    res = await s.call_tool("append", {"text": f"client {i} wrote note {j}"})
                    assert not res.is_error, res
                found = await s.call_tool("search", {"query": f"client {i} wrote", "limit": 50})
                return fenced_json(found.content[0].text)

            return client_session(port, script)

        async def all_at_once():
            return await asyncio.gather(*(writer(i) for i in range(4)))

        results = asyncio.run(asyncio.wait_for(all_at_once(), 240))
    finally:
        hub.kill()
        hub.wait()
    texts = [x["text"] for x in log_lines(vault_path)]
    assert sorted(texts) == sorted(f"client {i} wrote note {j}" for i in range(4) for j in range(10))
    assert all(len(r["hits"]) >= 10 for r in results)


@pytest.mark.long
@pytest.mark.xdist_group("hub")
def test_the_token_comes_from_the_environment_or_the_users_own_configuration_never_the_vault(
    cli, tmp_path, vault_path, monkeypatch, shared_hub
):
    from optmem.integrations.mcp import parse_address

    assert parse_address("8765") == ("127.0.0.1", 8765)  # localhost unless told otherwise
    assert parse_address("0.0.0.0:8765") == ("0.0.0.0", 8765)
    assert parse_address("[::1]:8765") == ("::1", 8765)
    monkeypatch.delenv("OPTMEM_MCP_TOKEN", raising=False)
    monkeypatch.setenv("OPTMEM_CONFIG", str(tmp_path / "no-config.toml"))

    # no token: refused before anything is made or served
    def refusal(address: str = "8765") -> str:
        message: str = cli.json("--vault", str(vault_path), "mcp", "--http", address, code=2)["error"]["message"]
        return message

    refused = refusal()
    assert "OPTMEM_MCP_TOKEN" in refused and "nothing was served" in refused
    assert not vault_path.exists()
    monkeypatch.setenv("OPTMEM_MCP_TOKEN", "short")
    assert (
        "shorter than 16" in cli.json("--vault", str(vault_path), "mcp", "--http", "8765", code=2)["error"]["message"]
    )
    monkeypatch.delenv("OPTMEM_MCP_TOKEN")
    # a vault cannot choose the token's file (it may come through git): ignored, still refused
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n", "utf-8")
    vault_path.mkdir()
    (vault_path / "optmem.toml").write_text(f'[mcp]\ntoken_file = "{secret}"\n', "utf-8")
    assert (
        "no token is set" in cli.json("--vault", str(vault_path), "mcp", "--http", "8765", code=2)["error"]["message"]
    )
    assert "HOST:PORT" in cli.json("--vault", str(vault_path), "mcp", "--http", "no-port", code=2)["error"]["message"]
    missing = tmp_path / "missing.toml"
    missing.write_text(f'[mcp]\ntoken_file = "{tmp_path / "nope"}"\n', "utf-8")
    monkeypatch.setenv("OPTMEM_CONFIG", str(missing))
    assert "cannot be read" in refusal()
    missing.write_text('[mcp]\ntoken_file = "/dev/zero"\n', "utf-8")  # read with a bound, refused
    assert "more than the 64 KiB" in refusal()
    # … the user's own configuration can: the shared hub's token is only in the file it names
    assert "search" in answers(shared_hub)
    assert post(shared_hub, {})[0] == 401


def test_the_token_check_is_constant_in_what_it_reveals():
    """The door itself, in process: a request without the token, or with a wrong one, is answered
    401 and never reaches the app behind; one with it does; other ASGI events pass."""
    from optmem.integrations.mcp import _Bearer

    reached: list[str] = []

    async def app(scope, receive, send):
        reached.append(scope["type"])
        await send({"type": "http.response.start", "status": 200, "headers": []})

    def call(scope) -> list[dict]:
        sent: list[dict] = []

        async def send(msg):
            sent.append(msg)

        async def receive():
            return {"type": "http.request"}

        asyncio.run(_Bearer(app, TOKEN)(scope, receive, send))
        return sent

    for headers in ([], [(b"authorization", b"Bearer nope")], [(b"authorization", TOKEN.encode())]):
        sent = call({"type": "http", "headers": headers})
        assert sent[0]["status"] == 401 and json.loads(sent[1]["body"])["error"]["code"] == "unauthorized"
    assert reached == []
    assert call({"type": "http", "headers": [(b"authorization", f"Bearer {TOKEN}".encode())]})[0]["status"] == 200
    assert call({"type": "http", "headers": [(b"authorization", f"bearer {TOKEN}".encode())]})[0]["status"] == 200
    call({"type": "lifespan"})
    assert reached == ["http", "http", "lifespan"]  # (the scheme's case does not matter, RFC 7235)


def test_what_cannot_be_read_is_answered_before_the_sdk_and_the_rest_goes_on_whole():
    """`_AnsweringHTTP` in process: an unreadable body is answered 400 with the error object; a
    readable one reaches the app behind byte for byte, in the chunks it came in."""
    from optmem.integrations.mcp import _AnsweringHTTP

    got: list[bytes] = []

    async def app(scope, receive, send):
        body, more = b"", True
        while more:
            msg = await receive()
            body, more = body + msg.get("body", b""), msg.get("more_body", False)
        got.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})

    def call(chunks: list[bytes], method: str = "POST") -> list[dict]:
        return asgi(_AnsweringHTTP(app), {"type": "http", "method": method}, chunks)

    good = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    assert call([good[:10], good[10:]])[0]["status"] == 200 and got == [good]
    for bad in (b"{not json", b'{"jsonrpc": "2.0", "id": null, "method": "x"}', b'{"id": 2, "t": "\\udc00"}'):
        sent = call([bad])
        assert sent[0]["status"] == 400 and json.loads(sent[1]["body"])["error"]["data"]["ok"] is False, bad
    assert got == [good]  # none of them reached the app
    assert call([b"garbage"], method="GET")[0]["status"] == 200  # only posted messages are looked at


@pytest.mark.long
def test_the_memory_tool_keeps_text_shaped_like_json_as_text(vault_path):
    """Issue 48: the SDK read any string argument that parses as JSON as that JSON (`{"a": 1}` a
    dict, `[1, 2]` a list) when the argument's type is not plain `str`, so the `memory` tool
    refused such text; the same text through `append`'s options too. The server's tools, through
    the SDK's client and server (in process: the wire has its own tests)."""
    from conftest import mcp_session

    shaped = ['{"a": 1}', "[1, 2]", '["port", "9090"]', "null", "true"]

    async def script(s):
        results = []
        for text in shaped:
            results.append(await s.call_tool("memory", {"action": "add", "content": text}))
        results.append(await s.call_tool("memory", {"action": "replace", "old_text": "[1, 2]", "new_text": "[3]"}))
        results.append(await s.call_tool("append", {"text": "shaped like json", "evidence": '{"seen": 1}'}))
        shown = await s.call_tool("memory", {"action": "read"})
        return results, fenced_json(shown.content[0].text)

    results, shown = mcp_session(vault_path, script)
    assert [r.is_error for r in results] == [False] * len(results), [r.content[0].text for r in results]
    hot = (vault_path / "MEMORY.md").read_text("utf-8")
    for text in ('{"a": 1}', "[3]", '["port", "9090"]', "null", "true"):
        assert text in hot, hot
    assert [x["evidence"] for x in log_lines(vault_path) if x["text"] == "shaped like json"] == ['{"seen": 1}']
    assert shown["ok"] is not False


# -- bounded by default (issue 48) --------------------------------------------------------------
async def tool_names(s) -> list[str]:
    return [t.name for t in (await s.list_tools()).tools]


def rpc(port: int, message: dict, host: str = "127.0.0.1", **headers: str) -> tuple[dict, str]:
    """One authenticated JSON-RPC request over plain HTTP (a socket timeout bounds every wait):
    its answer, and the session id the hub gave."""
    req = urllib.request.Request(
        f"http://{host}:{port}/mcp",
        data=json.dumps(message).encode(),
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {TOKEN}",
            **headers,
        },
    )
    with urllib.request.urlopen(req, timeout=HANG) as res:
        text = res.read().decode()
        session = res.headers.get("mcp-session-id", "")
    data = [line[5:] for line in text.splitlines() if line.startswith("data:")] or [text]
    return json.loads(data[-1]), session


def answers(port: int, deadline: float = 300, host: str = "127.0.0.1", **headers: str) -> list[str]:
    """The tools an authenticated session lists, retried (bounded) while the hub is busy — it
    must answer before `deadline` seconds; how fast is not asserted."""
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    until = time.monotonic() + deadline
    while True:
        try:
            _, session = rpc(port, hello, host, **headers)
            listed, _ = rpc(
                port,
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                host,
                **headers,
                **{"mcp-session-id": session},
            )
            return [t["name"] for t in listed["result"]["tools"]]
        except (OSError, KeyError, ValueError):
            if time.monotonic() > until:
                raise
            time.sleep(0.2)


def hub_config(tmp_path: Path, **mcp: object) -> dict[str, str]:
    """The environment of a hub whose user configuration holds the token's file and `mcp`."""
    secret = tmp_path / "hub-token"
    secret.write_text(TOKEN, "utf-8")
    lines = [f'token_file = "{secret}"'] + [f"{k} = {json.dumps(v)}" for k, v in mcp.items()]
    config = tmp_path / "hub-config.toml"
    config.write_text("[mcp]\n" + "\n".join(lines) + "\n", "utf-8")
    env = {k: v for k, v in os.environ.items() if k != "OPTMEM_MCP_TOKEN"}
    return {**env, "OPTMEM_CONFIG": str(config), "OPTMEM_MCP_TOKEN": ""}


def closed_by_server(sock: socket.socket, trickle: bytes = b"") -> bool:
    """Whether the server closes `sock` (waiting generously), while one byte of `trickle` is sent
    every half second — a client that sends a request byte by byte."""
    sock.settimeout(0.5)
    for i in range(480):  # at most four minutes
        try:
            if sock.recv(65536) == b"":
                return True
        except TimeoutError:
            pass
        except OSError:  # reset: closed too
            return True
        if trickle:
            try:
                sock.sendall(trickle[i % len(trickle) : i % len(trickle) + 1])
            except OSError:
                return True
    return False


@pytest.fixture(scope="module")
def shared_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """One hub (its port) for the tests that need no fresh one — they change nothing in it, and
    `xdist_group("hub")` keeps them on one worker: its token is read from the file the user's own
    configuration names (OPTMEM_MCP_TOKEN empty), its bounds are tight (a connection idle or
    trickling for 2 s is cut off, a body over 4,096 bytes refused) and it has the usual limit of
    1,024 file descriptors."""
    where = tmp_path_factory.mktemp("hub")
    (where / "home").mkdir()
    env = hub_config(where, header_timeout=2, body_timeout=2, keep_alive=1, max_body=4096)
    env |= {"HOME": str(where / "home")}  # (made before the test's own isolation)
    port = free_port()
    with (where / "hub.log").open("wb") as log:
        hub = start_hub(where / "vault", f"127.0.0.1:{port}", env, fds=1024, stderr=log)
    try:
        yield port
    finally:
        hub.kill()
        hub.wait()


@pytest.mark.long
@pytest.mark.xdist_group("hub")
def test_the_hub_survives_two_thousand_idle_connections_and_still_answers(shared_hub):
    """The adversarial run: ~1,100 idle unauthenticated connections took every file descriptor
    of a hub started with the usual limit of 1,024, and it crashed. Connections are bounded and
    an idle one is cut off, so 2,000 of them cost it nothing it does not get back."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2500:  # (this test's own 2,000 sockets)
        resource.setrlimit(resource.RLIMIT_NOFILE, (2500 if hard == resource.RLIM_INFINITY else min(hard, 2500), hard))
    port = shared_hub  # (idle connections are cut off after its header deadline: 2 s, not the default 10 s)
    idle: list[socket.socket] = []
    try:
        for _ in range(2000):
            try:
                idle.append(socket.create_connection(("127.0.0.1", port), timeout=HANG))
            except OSError:
                pass
        assert len(idle) > 1024  # (the client held more than the hub could have)
        assert "search" in answers(port, deadline=180)
    finally:
        for sock in idle:
            sock.close()


@pytest.mark.long
@pytest.mark.xdist_group("hub")
def test_a_request_sent_byte_by_byte_or_left_half_way_is_cut_off(shared_hub):
    port = shared_hub  # (header and body deadlines 2 s, keep-alive 1 s)
    auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
    from concurrent.futures import ThreadPoolExecutor

    head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    clients = [  # (what is sent first, then what is trickled a byte at a time) — all four at once
        (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth, b""),  # headers, then nothing
        (b"", b"POST /mcp HTTP/1.1\r\nX-Slow: " + b"a" * 1000),  # headers byte by byte
        (head + auth + b"Content-Length: 100000\r\n\r\n", b"[" * 1000),  # the body byte by byte
        (b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", b""),  # idle after an answer (401, kept alive)
    ]

    def cut_off(first: bytes, trickle: bytes) -> bool:
        with socket.create_connection(("127.0.0.1", port), timeout=HANG) as sock:
            sock.sendall(first)
            return closed_by_server(sock, trickle)

    with ThreadPoolExecutor(len(clients)) as pool:
        assert list(pool.map(lambda c: cut_off(*c), clients)) == [True] * len(clients)
    assert "search" in answers(port)


@pytest.mark.long
@pytest.mark.xdist_group("hub")
def test_a_body_over_the_limit_is_refused_with_413_and_the_error_object(shared_hub):
    port = shared_hub  # (max_body 4096)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "pad": "x" * 5000}).encode()
    status, _, body = post(port, auth, big)
    assert status == 413 and body["ok"] is False and body["error"]["code"] == "too_large", body
    assert "4096" in body["error"]["message"]
    with socket.create_connection(("127.0.0.1", port), timeout=HANG) as sock:  # chunked: no length said
        head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        sock.sendall(head.encode() + f"Authorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
        for _ in range(10):
            try:
                sock.sendall(b"400\r\n" + b"x" * 1024 + b"\r\n")
            except OSError:
                break
        got = b""
        while not got.endswith(b"}") and (more := sock.recv(65536)):
            got += more
    assert got.startswith(b"HTTP/1.1 413"), got[:200]
    assert json.loads(got.partition(b"\r\n\r\n")[2])["error"]["code"] == "too_large"
    assert "search" in answers(port)


@pytest.mark.long
def test_beyond_localhost_origin_and_host_are_checked_against_what_the_user_allowed(vault_path, tmp_path):
    """DNS rebinding (the MCP specification's transport security): a hub bound beyond localhost
    refuses a request from a web page's Origin with 403, and a Host it was not named by with 421,
    in the usual error shape; the user's own configuration names the ones it takes."""
    port = free_port()
    env = hub_config(tmp_path, allowed_origins="https://app.example", allowed_hosts="hub.example")
    hub = start_hub(vault_path, f"127.0.0.2:{port}", env)  # (127.0.0.2: beyond localhost, yet this machine)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        for headers, status, code in (
            ({"Origin": "http://evil.example"}, 403, "forbidden_origin"),
            ({"Origin": "http://evil.example", **auth}, 403, "forbidden_origin"),
            ({"Host": f"evil.example:{port}", **auth}, 421, "unknown_host"),
        ):
            got, _, body = post(port, headers, host="127.0.0.2")
            assert got == status and body["ok"] is False and body["error"]["code"] == code, (headers, body)
        assert (
            "allowed_origins" in post(port, {"Origin": "http://evil.example"}, host="127.0.0.2")[2]["error"]["message"]
        )
        assert "search" in answers(port, host="127.0.0.2")  # no Origin (an agent, not a page): taken
        assert "search" in answers(port, host="127.0.0.2", Origin="https://app.example")
        assert "search" in answers(port, host="127.0.0.2", Host=f"hub.example:{port}")
    finally:
        hub.kill()
        hub.wait()


@pytest.mark.long
def test_the_hub_says_on_stderr_where_it_listens_and_that_it_is_ready(vault_path, tmp_path):
    """Tester 16 #10b: `mcp --http` printed nothing when it started. Alone or with workers, its first
    line on stderr names the address a client uses and says it is ready — and it is: a request
    sent right after that line is answered."""
    import queue
    import threading

    for count in (1, 2):
        port = free_port()
        folder = tmp_path / f"w{count}"
        folder.mkdir()
        env = hub_config(folder, workers=count)
        hub = subprocess.Popen(
            [sys.executable, "-m", "optmem", "--vault", str(vault_path), "mcp", "--http", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=lambda h=hub, q=lines: [q.put(x) for x in h.stderr], daemon=True).start()
        try:
            first = lines.get(timeout=HANG).decode()
            assert first.startswith(f"optmem mcp: serving at http://127.0.0.1:{port}/mcp ("), first
            assert f"({count} worker" in first and first.rstrip().endswith("; ready"), first
            hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}).encode()
            status, _, _ = post(port, {"Authorization": f"Bearer {TOKEN}"}, body)
            assert status == 200, (count, status)
        finally:
            hub.kill()
            hub.wait()


def test_a_token_with_too_little_entropy_is_refused_and_a_random_one_is_taken():
    from optmem.integrations.mcp import weak_token

    weak = [
        "a" * 40,
        "passwordpasswordpassword",
        "abcabcabcabcabcabcabcabc",
        "0123456789012345678901234",
        "abcdefghijklmnopqrstuvwxyz",
        "1111222233334444",
        "ababababababababababab",
        "hello-hello-hello-hello",
        "0000000000000001",
    ]
    for token in weak:
        assert weak_token(token), token
        assert "secrets.token_urlsafe(32)" in weak_token(token), token
        assert "about -" not in weak_token(token), token  # (tester 16 #10a: "about -0 bits of entropy")
    assert "about 0 bits" in str(weak_token("a" * 40))
    for _ in range(200):
        for token in (secrets.token_urlsafe(32), secrets.token_hex(32), secrets.token_urlsafe(24)):
            assert weak_token(token) is None, token


@pytest.mark.long
def test_the_cli_refuses_a_weak_token_saying_how_to_make_one(vault_path, tmp_path):
    """A real process (a token taken would serve until stopped: bounded by a timeout)."""
    env = {k: v for k, v in os.environ.items() if k != "OPTMEM_MCP_TOKEN"}
    env |= {"OPTMEM_CONFIG": str(tmp_path / "no-config.toml"), "OPTMEM_MCP_TOKEN": "passwordpasswordpassword"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "optmem", "--vault", str(vault_path), "mcp", "--http", str(free_port()), "--json"],
            env=env,
            capture_output=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError("a guessable token was taken: the hub served") from exc
    assert done.returncode == 2, done.stderr
    message = json.loads(done.stdout)["error"]["message"]
    assert "too easy to guess" in message and "secrets.token_urlsafe(32)" in message and "nothing was served" in message
    assert not vault_path.exists()


def small_pipe() -> tuple[int, int, int]:
    """A pipe (read end, write end) shrunk to one page where the system allows (Linux), and what
    it holds: a hub's stderr fills it after a few dozen lines, not thousands."""
    r, w = os.pipe()
    try:
        import fcntl

        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 4096)
        size = fcntl.fcntl(w, fcntl.F_GETPIPE_SZ)
    except (ImportError, AttributeError, OSError):
        size = 65536  # the usual default elsewhere
    return r, w, size


def waiting_in(fd: int) -> int:
    """How many bytes a pipe holds, read or not (FIONREAD)."""
    import fcntl
    import struct
    import termios

    return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])


@pytest.mark.long
def test_the_hub_logs_at_its_level_and_never_waits_on_a_stderr_nobody_reads(vault_path, tmp_path):
    """It froze after ~140 sessions when its parent did not read its stderr: it logged every
    request into a full pipe. At the default level (warning) a request logs nothing, and what it
    does log (a malformed request is a warning) never blocks it."""
    port = free_port()
    r, w, size = small_pipe()
    hub = start_hub(vault_path, str(port), {"OPTMEM_MCP_TOKEN": TOKEN}, stderr=w)  # a pipe never read
    os.close(w)
    try:
        assert "search" in answers(port)
        os.set_blocking(r, False)
        said = os.read(r, 4096).decode()  # its one line on starting: where it listens, that it is ready
        assert said.startswith("optmem mcp: serving at ") and said.endswith("; ready\n") and said.count("\n") == 1
        with pytest.raises(BlockingIOError):  # a request logs nothing at warning
            os.read(r, 1)
        for _ in range(3 * size // 60):  # malformed requests: a warning line each (60+ bytes), 3 pipes full
            with socket.create_connection(("127.0.0.1", port), timeout=HANG) as sock:
                sock.sendall(b"NOT HTTP AT ALL " + b"x" * 40 + b"\r\n\r\n")
                while sock.recv(65536):
                    pass
        wait_until(lambda: waiting_in(r) > size // 2, "the warnings in the hub's stderr")  # (written, unread)
        for _ in range(3 * size // 400):  # sessions: at info the SDK would log 400+ bytes each, 3 pipes
            assert "search" in answers(port, deadline=0)
    finally:
        hub.kill()
        hub.wait()
        os.close(r)
    loud = tmp_path / "loud.log"
    port = free_port()
    with loud.open("wb") as out:
        hub = start_hub(vault_path, str(port), {"OPTMEM_MCP_TOKEN": TOKEN}, "--log-level", "info", stderr=out)
        try:
            assert "search" in answers(port)
        finally:
            hub.kill()
            hub.wait()
    assert loud.read_text("utf-8", "replace") != ""  # … and something at info


@pytest.mark.long
def test_the_guarded_protocol_in_process_answers_one_too_many_and_cuts_off_the_slow():
    """`guarded_protocol` on real sockets in this process: the connection over the limit is
    answered 503 (`busy`) and closed; headers that never end get 408 (`timeout`) and a close; a
    body that stops half way is cut off; a whole request is answered."""
    import uvicorn
    from uvicorn.server import ServerState

    from optmem.integrations.mcp import guarded_protocol
    from optmem.settings import McpSettings

    async def app(scope, receive, send):
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    async def serve(limits, script):
        config = uvicorn.Config(app, log_config=None, lifespan="off")
        config.load()
        state, protocol = ServerState(), guarded_protocol(limits)
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: protocol(config=config, server_state=state, app_state={}), "127.0.0.1", 0
        )
        try:
            return await script(server.sockets[0].getsockname()[1])
        finally:
            server.close()

    async def crowd(port):
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        busy = await asyncio.wait_for(reader.read(), 120)
        for _, w in [*held, (reader, writer)]:
            w.close()
        return busy

    busy = asyncio.run(serve(McpSettings(max_connections=2, header_timeout=600), crowd))
    assert busy.startswith(b"HTTP/1.1 503") and json.loads(busy.partition(b"\r\n\r\n")[2])["error"]["code"] == "busy"

    async def slow(port):
        got = []
        for sent in (b"GET / HTTP/1.1\r\nHost: x\r\n", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab"):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(sent)
            got.append(await asyncio.wait_for(reader.read(), 120))  # (read() ends when the server closes)
            writer.close()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab")
        got.append(await asyncio.wait_for(reader.readuntil(b"ok"), 120))
        writer.close()
        return got

    late, cut, whole = asyncio.run(serve(McpSettings(header_timeout=0.5, body_timeout=0.5), slow))
    assert late.startswith(b"HTTP/1.1 408") and json.loads(late.partition(b"\r\n\r\n")[2])["error"]["code"] == "timeout"
    assert b"200" not in cut  # (closed: nothing answered)
    assert whole.startswith(b"HTTP/1.1 200")


def test_the_doors_in_process_host_origin_and_size():
    """`_Door` and `_AnsweringHTTP` as ASGI in this process, with `transport_security`'s lists."""
    from optmem.integrations.mcp import _AnsweringHTTP, _Door, transport_security

    reached: list[str] = []

    async def app(scope, receive, send):
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})

    def call(web, headers, method="GET", chunks=(b"",)) -> list[dict]:
        scope = {"type": "http", "method": method, "path": "/mcp", "query_string": b"", "headers": headers}
        return asgi(web, scope, list(chunks))

    door = _Door(app, transport_security("10.1.2.3", "hub.example, other.example:9000", "https://app.example"))
    for headers, status, code in (
        ([(b"host", b"evil.example:8765")], 421, "unknown_host"),
        ([(b"host", b"other.example:9001")], 421, "unknown_host"),  # (a port named is that port only)
        ([(b"host", b"10.1.2.3:8765"), (b"origin", b"http://evil.example")], 403, "forbidden_origin"),
    ):
        sent = call(door, headers)
        assert sent[0]["status"] == status and json.loads(sent[1]["body"])["error"]["code"] == code, headers
    for headers in (
        [(b"host", b"10.1.2.3:8765")],
        [(b"host", b"hub.example")],
        [(b"host", b"other.example:9000"), (b"origin", b"https://app.example")],
        [(b"host", b"localhost:1"), (b"origin", b"http://127.0.0.1:5173")],
    ):
        assert call(door, headers)[0]["status"] == 200, headers
    assert socket.gethostname() + ":*" in transport_security("0.0.0.0").allowed_hosts
    assert "[::2]:*" in transport_security("::2").allowed_hosts
    sized = _AnsweringHTTP(app, limit=10)
    good = b'{"jsonrpc": "2.0", "id": 1, "method": "x"}'
    big = call(sized, [(b"content-length", b"11")], "POST", (b"x" * 11,))
    assert big[0]["status"] == 413 and json.loads(big[1]["body"])["error"]["code"] == "too_large"
    assert call(sized, [], "POST", (b"x" * 6, b"x" * 6))[0]["status"] == 413  # (no length said: counted)
    assert call(_AnsweringHTTP(app, limit=100), [], "POST", (good,))[0]["status"] == 200


@pytest.mark.long
def test_stderr_that_nobody_reads_never_blocks_the_hub(monkeypatch):
    """`log_to_stderr` in this process, on a pipe nobody reads: far more than a pipe holds is
    logged and written, and every call returns; what fits reaches the pipe."""
    import logging

    from optmem.integrations.mcp import log_to_stderr

    r, w = os.pipe()
    out = os.fdopen(w, "w")
    monkeypatch.setattr(sys, "stderr", out)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        log_to_stderr("info")
        for i in range(20000):  # ~2 MB: thirty times a pipe's buffer
            logging.getLogger("uvicorn.error").info("request %d %s", i, "x" * 60)
            sys.stderr.write(f"warning: a note {i}\n")
        logging.getLogger("mcp").debug("below the level")
        first = os.read(r, 100)
        assert b"request 0" in first or b"a note 0" in first
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        os.close(r)


def _raw_request(port: int, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> tuple[int, bytes]:
    """One HTTP request as any client may send it (urllib would add what it likes): status, body."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG)
    try:
        conn.request(method, path, body=body or None, headers=headers)
        res = conn.getresponse()
        return res.status, res.read()
    finally:
        conn.close()


@pytest.mark.long
@pytest.mark.parametrize("workers", [1, 2])
def test_every_refusal_of_the_hub_is_in_the_error_shape(vault_path, tmp_path, workers):
    """What the SDK or the web framework under the hub refuses — a call without a session or with
    one the hub does not know (a client after a restart), a body that is not said to be JSON, a
    path the hub does not serve, a method it does not take — is answered in the same error shape
    as the hub's own refusals: the usual error object (in a JSON-RPC error's `data` when the
    answer is a JSON-RPC error), its status kept."""
    port = free_port()
    hub = start_hub(vault_path, f"127.0.0.1:{port}", hub_config(tmp_path, workers=workers))
    auth = {"Authorization": f"Bearer {TOKEN}", "Host": f"127.0.0.1:{port}"}
    json_headers = {**auth, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    asks = [
        ("POST", "/mcp", {**auth, "Content-Type": "text/plain", "Accept": "application/json"}, call),
        ("GET", "/other", auth, b""),
        ("DELETE", "/other", auth, b""),
    ]
    if workers == 1:  # (sessions live in one process only)
        asks += [
            ("POST", "/mcp", json_headers, call),  # no session named
            ("POST", "/mcp", {**json_headers, "mcp-session-id": "nosuch"}, call),  # one the hub does not know
        ]
    try:
        if workers > 1:  # no session lives in a worker: a stream to open or a session to end is refused
            stream = {**auth, "Accept": "text/event-stream"}
            for method in ("GET", "DELETE"):
                status, raw = _raw_request(port, method, "/mcp", stream)
                refusal = json.loads(raw)
                assert status == 405 and refusal["error"]["code"] == "bad_request", (method, raw)
                assert "POST" in refusal["error"]["message"]
        for method, path, headers, body in asks:
            status, raw = _raw_request(port, method, path, headers, body)
            got = json.loads(raw)
            shaped = got if "ok" in got else (got.get("error") or {}).get("data") or {}
            assert status >= 400 and shaped.get("ok") is False, (method, path, status, raw)
            assert shaped["error"]["code"] in CODES and shaped["error"]["message"], (method, path, raw)
            if "jsonrpc" in got:  # a JSON-RPC error keeps its own code and message
                assert isinstance(got["error"]["code"], int) and got["error"]["message"]
        assert "search" in answers(port)
    finally:
        hub.kill()
        hub.wait()


@pytest.mark.long
def test_a_write_logs_nothing_at_the_default_level_and_no_stored_text_ever(tmp_path):
    """Tester 14 #11: each append whose text may update another record wrote "warning: this may
    update … (“<the other record's words>”)" to the hub's stderr — a line per request at the
    default level, and another agent's stored text copied into the hub's log. The warning is the
    tool's answer (its JSON), and the log holds nothing of it, at any level."""
    import asyncio

    async def script(s) -> list[dict]:
        out = []
        for i in range(3):  # (each a possible update of the one before, as the write gate reads it)
            result = await s.call_tool("append", {"text": f"http agent 0 note {i} about the queue"})
            out.append(result.structured_content)
        return out

    for level in ("warning", "debug"):
        port, log = free_port(), tmp_path / f"hub-{level}.err"
        with log.open("wb") as err:
            hub = start_hub(tmp_path / level, str(port), {"OPTMEM_MCP_TOKEN": TOKEN}, "--log-level", level, stderr=err)
            try:
                said = asyncio.run(asyncio.wait_for(client_session(port, script), HANG))
            finally:
                hub.kill()
                hub.wait()
        assert any(got.get("possible_update") for got in said), said  # (the tool's answer says it)
        logged = log.read_text("utf-8", "replace")
        assert "may update" not in logged and "about the queue" not in logged, logged
        if level == "warning":  # its one line on starting, and nothing else
            assert len(logged.splitlines()) == 1 and logged.startswith("optmem mcp: serving at "), logged
