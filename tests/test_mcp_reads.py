"""Where a tool call runs (issue 43, item 4): a hub's worker process runs the read-only tools in
its event loop's thread (`optmem.integrations.mcp.Reads`), every other process in a worker
thread as the SDK runs a tool; a write always runs in a thread. Either way a client gets the
same answer."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from conftest import Cli, fenced_json, mcp_session

from optmem.cli import mcpserve
from optmem.integrations.mcp import READ_ONLY, TOOLS, Reads


def _in_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _calls(vault_path: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[tuple[str, bool]]]:
    """Each tool's answers, and for each command it ran: whether it ran in the event loop's thread."""
    ran: list[tuple[str, bool]] = []
    real = mcpserve.call

    def call(args: list[str], warm: Any = None) -> str:
        ran.append((" ".join(args[:2]) if args[0] == "handoff" else args[0], _in_loop()))
        return real(args, warm)

    monkeypatch.setattr(mcpserve, "call", call)

    async def script(session: Any) -> list[Any]:
        got = []
        for tool, arguments in (
            ("search", {"query": "port"}),
            ("append", {"text": "lunch is at noon on Fridays"}),
            ("search", {"query": "database port"}),
            ("conflicts", {}),
            ("handoff_read", {}),
        ):
            result = await session.call_tool(tool, arguments)
            got.append((tool, result.is_error, fenced_json(result.content[0].text)))
        return got

    answers = mcp_session(vault_path, script)
    return answers, ran


@pytest.mark.long
def test_a_worker_runs_reads_in_its_loop_and_writes_in_a_thread_with_the_same_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-07T12:00:00Z")  # (both vaults at one time)
    cli = Cli()
    twins = [tmp_path / "threaded", tmp_path / "in-loop"]
    for vault in twins:
        for text in ("the API listens on port 8080", "the database listens on port 5432"):
            cli.json("--vault", str(vault), "append", text)

    threaded, ran = _calls(twins[0], monkeypatch)  # (a process of its own, stdio, one hub process)
    assert ran and not any(in_loop for _, in_loop in ran), ran

    monkeypatch.setattr(Reads, "in_loop", True)  # (what a hub's worker process sets)
    in_worker, ran = _calls(twins[1], monkeypatch)
    reads = {command for command, _ in TOOLS.values() if command in READ_ONLY}
    assert {"search", "conflicts", "handoff read"} <= reads
    assert ran == [
        (command, command in reads) for command in ("search", "append", "search", "conflicts", "handoff read")
    ]

    def same(answers: list[Any]) -> str:  # (each vault's records have ids of their own)
        text = json.dumps(answers, sort_keys=True)
        for rid in {h["id"] for _, _, got in answers for h in got.get("hits", [])} | {answers[1][2]["id"]}:
            text = text.replace(rid, "ID")
        return text

    assert same(in_worker) == same(threaded)
    assert [h["text"] for h in threaded[2][2]["hits"]][0] == "the database listens on port 5432"
    assert threaded[1][2]["record"]["text"] == "lunch is at noon on Fridays" and not threaded[1][1]
