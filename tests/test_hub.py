"""`optmem mcp --http` (issue 35, part 3): one vault served to agents on many hosts over the SDK's
streamable HTTP transport, behind a bearer token. A real server process, real HTTP clients."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from conftest import fenced_json, log_lines

TOKEN = "hub-token-for-tests-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_hub(vault_path: Path, address: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`optmem mcp --http ADDRESS` as its own process, once it accepts connections."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "optmem", "--vault", str(vault_path), "mcp", "--http", address],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    port = int(address.rpartition(":")[2])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("the hub did not start listening")


def post(port: int, headers: dict[str, str], body: bytes | None = None) -> tuple[int, dict[str, str], dict]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode() if body is None else body
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp",
        data=body,
        headers={"content-type": "application/json", "accept": "application/json, text/event-stream", **headers},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, dict(res.headers), {}
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read())


async def client_session(port: int, script, token: str = TOKEN):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http:
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as s:
                await s.initialize()
                return await script(s)


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


def test_the_token_comes_from_the_environment_or_the_users_own_configuration_never_the_vault(
    cli, tmp_path, vault_path, monkeypatch
):
    from optmem.integrations.mcp import parse_address

    assert parse_address("8765") == ("127.0.0.1", 8765)  # localhost unless told otherwise
    assert parse_address("0.0.0.0:8765") == ("0.0.0.0", 8765)
    assert parse_address("[::1]:8765") == ("::1", 8765)
    monkeypatch.delenv("OPTMEM_MCP_TOKEN", raising=False)
    monkeypatch.setenv("OPTMEM_CONFIG", str(tmp_path / "no-config.toml"))
    env = {k: v for k, v in os.environ.items() if k != "OPTMEM_MCP_TOKEN"}

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
    # … the user's own configuration can
    config = tmp_path / "config.toml"
    config.write_text(f'[mcp]\ntoken_file = "{secret}"\n', "utf-8")
    port = free_port()
    hub = start_hub(vault_path, f"127.0.0.1:{port}", {**env, "OPTMEM_CONFIG": str(config)})
    try:

        async def script(s):
            return [t.name for t in (await s.list_tools()).tools]

        assert "search" in asyncio.run(asyncio.wait_for(client_session(port, script), 120))
        assert post(port, {})[0] == 401
    finally:
        hub.kill()
        hub.wait()


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
        sent: list[dict] = []
        queue = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

        async def receive():
            return queue.pop(0)

        async def send(msg):
            sent.append(msg)

        asyncio.run(_AnsweringHTTP(app)({"type": "http", "method": method}, receive, send))
        return sent

    good = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    assert call([good[:10], good[10:]])[0]["status"] == 200 and got == [good]
    for bad in (b"{not json", b'{"jsonrpc": "2.0", "id": null, "method": "x"}', b'{"id": 2, "t": "\\udc00"}'):
        sent = call([bad])
        assert sent[0]["status"] == 400 and json.loads(sent[1]["body"])["error"]["data"]["ok"] is False, bad
    assert got == [good]  # none of them reached the app
    assert call([b"garbage"], method="GET")[0]["status"] == 200  # only posted messages are looked at


def test_the_memory_tool_keeps_text_shaped_like_json_as_text(vault_path):
    """Issue 48: the SDK read any string argument that parses as JSON as that JSON (`{"a": 1}` a
    dict, `[1, 2]` a list) when the argument's type is not plain `str`, so the `memory` tool
    refused such text; the same text through `append`'s options too. Over stdio, a real client."""
    from test_agents import mcp_session

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
