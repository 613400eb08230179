"""A warm server (issue 43, items 4 and 5): the MCP server and the Hermes provider keep the index
open and the settings read between calls (`optmem.warm`), and see at once what another process
wrote; the hub runs reads side by side. What is observed here is what happened — the records
found, and the connections and processes a call opened (Python's audit events) — never a clock."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import HANG, fenced_json, log_lines, put, run_optmem

from optmem import search
from optmem.errors import UsageError
from optmem.vault import Vault
from optmem.warm import Warm

# -- what a call opens, seen through audit events (a hook cannot be removed: one, switched on) --
_SEEN: list[tuple[str, tuple[Any, ...]]] | None = None
_AT_CONNECT: Any = None  # called at each sqlite3.connect while set (in the connecting thread)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event in ("sqlite3.connect", "subprocess.Popen", "os.posix_spawn", "os.fork"):
        if _SEEN is not None:
            _SEEN.append((event, args))
        if event == "sqlite3.connect" and _AT_CONNECT is not None:
            _AT_CONNECT(args)


sys.addaudithook(_audit)


@contextmanager
def watched() -> Iterator[list[tuple[str, tuple[Any, ...]]]]:
    """The connections opened and processes started while inside."""
    global _SEEN
    _SEEN = seen = []
    try:
        yield seen
    finally:
        _SEEN = None


def connects(seen: list[tuple[str, tuple[Any, ...]]]) -> int:
    return sum(event == "sqlite3.connect" for event, _ in seen)


def ids(result: search.SearchResult) -> list[str]:
    return [h.record.id for h in result.hits]


@pytest.mark.long
def test_a_record_another_process_appends_between_two_warm_searches_is_found_by_the_second(vault_path, no_sweep):
    vault = Vault(vault_path)
    first = put(vault, "The kiwi harvest starts in May").id
    with Warm(vault_path) as warm:
        assert ids(search.search(warm.vault(), "kiwi harvest")) == [first]
        with watched() as seen:  # nothing changed: the kept connection, checked, answers
            assert ids(search.search(warm.vault(), "kiwi harvest")) == [first]
        assert connects(seen) == 0
        done = run_optmem("append", "The kiwi harvest moved to June", env={"OPTMEM_VAULT": str(vault_path)})
        assert done.returncode == 0, done.stderr
        second = log_lines(vault_path)[-1]["id"]
        found = ids(search.search(warm.vault(), "kiwi harvest"))
        assert sorted(found) == sorted([first, second])
        # … and a rebuilt index (another process's `reindex`: a new file) is read at once
        assert run_optmem("reindex", env={"OPTMEM_VAULT": str(vault_path)}).returncode == 0
        put(Vault(vault_path), "A kiwi crate weighs ten kilos")
        assert len(search.search(warm.vault(), "kiwi").hits) == 3


@pytest.mark.long
def test_a_log_rewritten_in_place_is_read_again_not_taken_from_what_was_kept(vault_path, no_sweep):
    """Kept records are kept for one index file: a hand edit that keeps every offset (same
    length) rebuilds the index, and the next search reads the new text."""
    vault = Vault(vault_path)
    put(vault, "The backend listens on port 8080")
    with Warm(vault_path) as warm:
        [hit] = search.search(warm.vault(), "backend port").hits
        assert "8080" in hit.record.text
        log = vault_path / "LOG.jsonl"
        before = os.stat(log)
        log.write_bytes(log.read_bytes().replace(b"8080", b"9090"))  # (an editor writing in place)
        os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))  # (a second later)
        [hit] = search.search(warm.vault(), "backend port").hits
        assert "9090" in hit.record.text and "8080" not in hit.record.text


@pytest.mark.long
def test_an_edit_of_optmem_toml_is_honoured_by_the_next_call(vault_path, no_sweep):
    put(Vault(vault_path), "The kiwi harvest starts in May")
    toml = vault_path / "optmem.toml"
    with Warm(vault_path) as warm:
        assert warm.vault().settings.ranking.k1 == Vault(vault_path).settings.ranking.k1
        assert warm.vault().settings is warm.vault().settings  # kept while the text is the same
        toml.write_text(toml.read_text("utf-8") + "[ranking]\nk1 = 0.5\n", "utf-8")
        assert warm.vault().settings.ranking.k1 == 0.5
        toml.write_text("[ranking]\nk1 = 'many'\n", "utf-8")  # refused on every call, as in a new process
        for _ in range(2):
            with pytest.raises(UsageError):
                search.search(warm.vault(), "kiwi")
        toml.write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
        assert len(search.search(warm.vault(), "kiwi").hits) == 1


QUERIES = ["kiwi harvest", "backend port", "deploy friday", "港口 部署", "nothing like it"]


def corpus(vault: Vault) -> None:
    for i in range(6):
        put(vault, f"The kiwi harvest {i} starts in week {i} of the season", domain="farm")
        put(vault, f"The backend port {8000 + i} is used by service {i}; deploy on friday")
        put(vault, f"港口 {i} 号 部署 完成，编号 {i}")


@pytest.mark.long
def test_reads_from_several_threads_answer_as_serial_ones_and_writes_meanwhile_are_all_kept(vault_path, no_sweep):
    corpus(Vault(vault_path))
    with Warm(vault_path) as warm:
        serial = {q: search.search(warm.vault(), q, limit=20).to_json() for q in QUERIES}
        failed: list[BaseException] = []
        answers: list[tuple[str, dict[str, Any]]] = []
        start = threading.Barrier(4, timeout=HANG)

        def reader() -> None:
            try:
                start.wait()
                for _ in range(3):
                    for q in QUERIES:
                        answers.append((q, search.search(warm.vault(), q, limit=20).to_json()))
            except BaseException as exc:  # noqa: BLE001 - reported below
                failed.append(exc)

        threads = [threading.Thread(target=reader) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(HANG)
        assert not failed and len(answers) == 4 * 3 * len(QUERIES)
        assert all(got == serial[q] for q, got in answers)

        # now with writes meanwhile, through the same handle (each its own vault, the vault lock)
        def writer(w: int) -> None:
            try:
                start.wait()
                for j in range(5):
                    put(warm.vault(), f"zebra{w}x{j} crossed the road")
            except BaseException as exc:  # noqa: BLE001 - reported below
                failed.append(exc)

        start = threading.Barrier(4, timeout=HANG)
        threads = [threading.Thread(target=reader) for _ in range(2)]
        threads += [threading.Thread(target=writer, args=(w,)) for w in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(HANG)
        assert not failed
        for w in range(2):
            for j in range(5):
                assert len(search.search(warm.vault(), f"zebra{w}x{j}").hits) == 1, (w, j)
        assert sum(1 for r in log_lines(vault_path) if r["text"].startswith("zebra")) == 10


@pytest.mark.long
def test_the_hub_runs_reads_side_by_side(vault_path, no_sweep):
    """Two searches over MCP at once are both inside the vault at the same time: each opens the
    index while the other has it open (a lock around every call would hold the second back)."""
    global _AT_CONNECT
    from optmem.cli.mcpserve import call

    corpus(Vault(vault_path))
    both = threading.Barrier(2, timeout=HANG)
    index = str(vault_path / ".cache" / "index.sqlite3")

    def meet(args: tuple[Any, ...]) -> None:
        if str(args[0]) == index and threading.current_thread().name.startswith("reader"):
            both.wait()

    out: dict[str, Any] = {}

    def read(q: str) -> None:
        out[q] = json.loads(call(["search", "--", q]))

    threads = [threading.Thread(target=read, args=(q,), name=f"reader-{q}") for q in ("kiwi", "backend")]
    _AT_CONNECT = meet
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(HANG)
    finally:
        _AT_CONNECT = None
    assert not both.broken
    assert out["kiwi"]["ok"] and len(out["kiwi"]["hits"]) == 6
    assert out["backend"]["ok"] and len(out["backend"]["hits"]) == 6


@pytest.mark.long
def test_a_server_call_reuses_the_open_index_and_sees_a_write(vault_path, no_sweep):
    """The MCP server's calls (stdio and HTTP run the same `call`) go through the warm handle:
    the second search opens no connection; a write through the server is found by the next."""
    from optmem.cli.mcpserve import call

    corpus(Vault(vault_path))
    with Warm(vault_path) as warm:
        assert json.loads(call(["search", "--", "kiwi"], warm))["ok"]
        with watched() as seen:
            again = json.loads(call(["search", "--", "kiwi harvest"], warm))
        assert connects(seen) == 0 and again["hits"][0]["text"].startswith("The kiwi harvest")
        assert json.loads(call(["append", "--", "a quokka was seen"], warm))["ok"]
        assert len(json.loads(call(["search", "--", "quokka"], warm))["hits"]) == 1
        assert json.loads(call(["context", "--query", "quokka"], warm))["ok"]


@pytest.mark.long
def test_hermes_prefetch_starts_no_process_and_reopens_no_index(tmp_path, monkeypatch):
    from optmem.integrations import hermes

    monkeypatch.delenv("OPTMEM_VAULT", raising=False)
    home = tmp_path / "hermes"
    p = hermes.provider()
    p.initialize("s-1", hermes_home=str(home), platform="cli", agent_context="primary")
    p.sync_turn("Which port does the backend use now?", "The backend listens on port 9090 since the migration.")
    p.on_memory_write("add", "memory", "Deploys go out on Fridays")
    assert "9090" in p.prefetch("backend port")
    with watched() as seen:
        assert "9090" in p.prefetch("which backend port")
        assert "Fridays" in p.prefetch("deploys")
        found = fenced_json(p.handle_tool_call("optmem_search", {"query": "backend port"}))
    assert found["ok"] and "9090" in found["hits"][0]["text"]
    assert seen == []  # no process started, no index opened again
    p.sync_turn("And the frontend port?", "The frontend is served on port 3000 by vite.")
    assert "3000" in p.prefetch("frontend port")  # a write since: seen by the next recall
    p.shutdown()


def test_a_warm_handle_gives_back_only_connections_to_the_index_in_place(vault_path, no_sweep):
    import sqlite3

    put(Vault(vault_path), "The kiwi harvest starts in May")
    with Warm(vault_path, pool=1) as warm:
        vault = warm.vault()
        stray = sqlite3.connect(":memory:")
        warm.give(stray, vault)  # a copy of the log in memory (a read-only vault): not kept
        assert warm.take(vault) is None
        with pytest.raises(sqlite3.ProgrammingError):
            stray.execute("SELECT 1")  # (closed)
        search.search(vault, "kiwi")
        kept = warm.take(warm.vault())
        assert kept is not None and warm.take(warm.vault()) is None  # one kept, lent out
        kept.close()
        kept.close()  # (twice: given back once)
        (vault_path / ".cache" / "index.sqlite3").unlink()  # gone: rebuilt by the next read
        assert warm.take(warm.vault()) is None
        assert len(search.search(warm.vault(), "kiwi").hits) == 1
    assert Path(vault_path / ".cache" / "index.sqlite3").exists()


@pytest.mark.long
def test_the_server_finds_what_another_process_wrote_and_honours_an_edited_optmem_toml(vault_path, no_sweep):
    """The MCP server every transport serves (stdio, the hub: `mcpserve.server`), its index kept
    open between calls: a record another process appended is found by the next call, and an
    optmem.toml edited meanwhile is read again (a wrong value refused, the fixed one taken)."""
    from conftest import fenced_json, mcp_session

    put(Vault(vault_path), "The kiwi harvest starts in May")

    async def script(s: Any) -> list[Any]:
        async def searched(query: str) -> Any:
            return fenced_json((await s.call_tool("search", {"query": query})).content[0].text)

        seen = [await searched("kiwi")]
        done = run_optmem("append", "The kiwi harvest moved to June", env={"OPTMEM_VAULT": str(vault_path)})
        assert done.returncode == 0, done.stderr
        seen.append(await searched("kiwi"))  # the server's open index caught up
        (vault_path / "optmem.toml").write_text("[ranking]\nk1 = 'many'\n", "utf-8")
        seen.append(await searched("kiwi"))
        (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
        seen.append(await searched("kiwi"))
        return seen

    first, after_write, refused, fixed = mcp_session(vault_path, script)
    assert len(first["hits"]) == 1 and len(after_write["hits"]) == 2
    assert refused["ok"] is False and "k1" in refused["error"]["message"]
    assert len(fixed["hits"]) == 2


@pytest.mark.long
def test_the_servers_searches_start_no_process_and_reopen_no_index_in_a_thread_or_in_the_loop(vault_path, no_sweep):
    """The MCP server's application (what stdio and every hub worker serve): after its first
    search, a search opens no connection to the index and starts no process — whether the tool
    runs in a thread of its own (stdio, one process) or in the event loop's thread (a hub's
    worker: `app.inline`) — and a record appended through it meanwhile is found."""
    import asyncio

    from conftest import fenced_json

    from optmem.cli.common import STATE, own_state
    from optmem.cli.mcpserve import server

    corpus(Vault(vault_path))

    async def search_for(app: Any, query: str) -> dict[str, Any]:
        result = await app.call_tool("search", {"query": query})
        return fenced_json(result.content[0].text)

    found: dict[bool, list[int]] = {}
    with own_state():
        STATE.vault_opt = str(vault_path)
        with server() as app:
            for inline in (False, True):
                app.inline = inline
                asyncio.run(search_for(app, "kiwi"))
                with watched() as seen:
                    hits = [len(asyncio.run(search_for(app, q))["hits"]) for q in ("kiwi harvest", "backend")]
                assert seen == [], inline  # no process, no connection opened again
                asyncio.run(app.call_tool("append", {"text": f"a quokka was seen ({inline})"}))
                hits.append(len(asyncio.run(search_for(app, "quokka"))["hits"]))
                found[inline] = hits
    assert found == {False: [6, 6, 1], True: [6, 6, 2]}
