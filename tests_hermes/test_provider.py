"""OptMem's memory provider against the real Hermes Agent package (`.ci/hermes` runs this in a venv
of its own with hermes-agent installed; optmem never depends on it). Hermes' own loader finds the
provider that `optmem hermes install` wrote, and Hermes' MemoryManager drives every hook, as a
session does; Hermes' own memory tool writes the files a shared vault reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "hermes"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.delenv("OPTMEM_VAULT", raising=False)
    for name in [m for m in sys.modules if m.startswith("_hermes_user_memory") or m.endswith(".optmem")]:
        del sys.modules[name]  # each test loads the plugin its own install wrote
    return home


def _tool_result(text: str) -> Any:
    """A tool's result: its JSON inside optmem's fence (stored text is data, never instructions);
    a refusal alone stands outside it."""
    from optmem.safety.fence import CLOSE, OPEN

    if not text.startswith(OPEN):
        return json.loads(text)
    assert text.startswith(OPEN + "\n") and text.endswith("\n" + CLOSE), text[:200]
    return json.loads(text[len(OPEN) : -len(CLOSE)])


def install(home: Path, *more: str) -> dict:
    res = subprocess.run(
        [sys.executable, "-m", "optmem", "hermes", "install", "--hermes-home", str(home), "--json", *more],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def loaded(home: Path):
    from agent.memory_provider import MemoryProvider
    from plugins.memory import discover_memory_providers, load_memory_provider

    assert "optmem" in [name for name, _, _ in discover_memory_providers()]
    provider = load_memory_provider("optmem")
    assert isinstance(provider, MemoryProvider) and provider.name == "optmem" and provider.is_available()
    return provider


def test_hermes_loader_finds_the_provider_and_a_session_drives_every_hook(hermes_home, monkeypatch):
    from agent.memory_manager import MemoryManager

    (hermes_home.parent / "webapp").mkdir()
    monkeypatch.chdir(hermes_home.parent / "webapp")  # the terminal session's folder: its project

    install(hermes_home)
    manager = MemoryManager()
    manager.add_provider(loaded(hermes_home))
    manager.initialize_all("session-1", platform="cli", agent_context="primary")
    vault = hermes_home / "optmem"
    assert "optmem_search" in manager.build_system_prompt()
    assert {"optmem_search", "optmem_correct", "optmem_forget"} <= manager.get_all_tool_names()
    # a turn: kept in the log (the manager syncs in the background)
    manager.sync_all(
        "Which port does the backend use now?", "It listens on port 9090 since the migration.", session_id="session-1"
    )
    assert manager.flush_pending(timeout=300)
    [turn] = [json.loads(x) for x in (vault / "LOG.jsonl").read_text("utf-8").splitlines()]
    assert turn["session"] == "session-1" and "9090" in turn["text"]
    # the built-in memory tool's writes, mirrored
    manager.on_memory_write("add", "memory", "Deploys go out on Thursdays", metadata={"write_origin": "tool"})
    manager.on_memory_write("replace", "memory", "Deploys go out on Fridays", metadata={"old_text": "Thursdays"})
    assert (vault / "MEMORY.md").read_text("utf-8").strip() == "Deploys go out on Fridays"
    # recall before a turn, and for the next one
    assert "Deploys go out on Fridays" in manager.prefetch_all("when do deploys go out?", session_id="session-1")
    manager.queue_prefetch_all("backend port", session_id="session-1")
    # tools
    found = _tool_result(manager.handle_tool_call("optmem_search", {"query": "backend port"}))
    assert found["hits"][0]["id"] == turn["id"]
    fixed = _tool_result(
        manager.handle_tool_call("optmem_correct", {"target": turn["id"], "text": "The port is 9191."})
    )
    assert fixed["corrects"] == turn["id"]
    gone = _tool_result(manager.handle_tool_call("optmem_forget", {"id": fixed["id"], "reason": "wrong"}))
    assert gone["status"] == "forgotten"
    # compression and the end of the session
    kept = manager.on_pre_compress([{"role": "user", "content": "when do deploys go out?"}])
    assert "Fridays" in kept
    manager.on_session_end(
        [
            {"role": "user", "content": "Move the backend to port 9191"},
            {"role": "assistant", "content": "Done: updated the compose file.\nNext step: update nginx."},
        ]
    )
    handoff = (vault / "projects" / "webapp" / "HANDOFF.md").read_text("utf-8")
    assert "compose file" in handoff and "update nginx" in handoff
    manager.shutdown_all()


def test_a_subagent_session_writes_nothing(hermes_home):
    from agent.memory_manager import MemoryManager

    install(hermes_home)
    manager = MemoryManager()
    manager.add_provider(loaded(hermes_home))
    manager.initialize_all("session-2", platform="cli", agent_context="subagent")
    manager.sync_all("Which port does the backend use now?", "It listens on port 9090.", session_id="session-2")
    assert manager.flush_pending(timeout=300)
    manager.on_session_end([{"role": "assistant", "content": "Done: everything. Next step: more."}])
    manager.shutdown_all()
    assert not (hermes_home / "optmem" / "LOG.jsonl").exists()


def test_shared_install_makes_hermes_memory_files_the_vaults_hot_files(hermes_home):
    """`--shared`: Hermes' built-in memory tool writes its MEMORY.md; the provider journals the
    edit and OptMem's search reads the entry as current — one truth."""
    from agent.memory_manager import MemoryManager
    from tools.memory_tool import MemoryStore

    assert install(hermes_home, "--shared")["vault"] == str(hermes_home / "memories")
    manager = MemoryManager()
    manager.add_provider(loaded(hermes_home))
    manager.initialize_all("session-3", platform="cli", agent_context="primary")
    store = MemoryStore()
    store.load_from_disk()
    assert store.add("memory", "Staging DB is pg-staging-2")["success"]
    manager.on_memory_write("add", "memory", "Staging DB is pg-staging-2")
    found = _tool_result(manager.handle_tool_call("optmem_search", {"query": "staging DB"}))
    assert found["hits"][0]["text"] == "Staging DB is pg-staging-2" and found["hits"][0]["status"] == "current"
    assert (hermes_home / "memories" / "MEMORY.md").read_text("utf-8").strip() == "Staging DB is pg-staging-2"
    manager.shutdown_all()


def test_a_shared_vault_journals_hermes_replace_as_a_replace_linked_in_history(hermes_home):
    """Hermes' memory tool replaces and removes entries of its own MEMORY.md (a batch of
    operations, then each named to the provider, as its agent loop does): each is journalled as
    the edit it is — the replaced entry superseded by its new text, linked — never as a removal by
    an edit outside optmem."""
    from agent.memory_manager import MemoryManager
    from tools.memory_tool import MemoryStore, memory_tool

    install(hermes_home, "--shared")
    manager = MemoryManager()
    manager.add_provider(loaded(hermes_home))
    manager.initialize_all("session-5", platform="cli", agent_context="primary")
    store = MemoryStore()
    store.load_from_disk()
    for text in ("Staging DB is pg-staging-2", "Deploys go out on Thursdays"):
        args = {"action": "add", "target": "memory", "content": text}
        manager.notify_memory_tool_write(memory_tool(**args, store=store), args)
    batch = {
        "target": "memory",
        "operations": [
            {"action": "remove", "old_text": "Thursdays"},
            {"action": "replace", "old_text": "pg-staging-2", "content": "Staging DB is pg-staging-3"},
        ],
    }
    manager.notify_memory_tool_write(memory_tool(action=None, **batch, store=store), batch)
    vault = hermes_home / "memories"
    lines = [json.loads(x) for x in (vault / "LOG.jsonl").read_text("utf-8").splitlines()]
    new = next(x for x in lines if x.get("op") == "replace")
    old = next(x for x in lines if x["id"] == new["corrects"][0])
    assert (old["text"], new["text"], new["source"]) == (
        "Staging DB is pg-staging-2",
        "Staging DB is pg-staging-3",
        "hermes",
    )
    gone = next(x for x in lines if x.get("op") == "remove" and "Thursdays" in x["text"])
    assert gone["source"] == "hermes"  # removed by Hermes' memory tool, not by "an edit outside optmem"
    manager.shutdown_all()


HOLD = """
import sys
from optmem.vault import Vault
with Vault(sys.argv[1]).lock():
    print("held", flush=True)
    sys.stdin.read()
"""


def test_nothing_is_lost_when_the_vault_is_locked_the_turn_is_long_or_the_vault_is_missing(
    hermes_home, monkeypatch, caplog
):
    """Through Hermes' MemoryManager: a vault locked past [lock] timeout spools the turn (Hermes'
    log says so) and the next turn brings it in; a 381 KB pasted turn keeps its answer; a
    configured vault folder that is missing is not made, and its turns wait for it."""
    from agent.memory_manager import MemoryManager

    install(hermes_home)
    vault = hermes_home / "optmem"
    manager = MemoryManager()
    manager.add_provider(loaded(hermes_home))
    manager.initialize_all("session-4", platform="cli", agent_context="primary")
    (vault / "optmem.toml").write_text("[lock]\ntimeout = 0.2\n", "utf-8")
    manager.providers[-1].vault = type(manager.providers[-1].vault)(vault)  # (the setting, as read anew)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(vault)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with caplog.at_level("WARNING"):
            manager.sync_all(
                "Which port does the backend use now?", "Port 9090 since the migration.", session_id="session-4"
            )
            assert manager.flush_pending(timeout=300)
        assert "waits in" in caplog.text
    finally:
        holder.communicate("", timeout=300)
    pasted = "Why does this fail? " + "".join(f"10:{i % 60:02d} worker-{i} ERROR timeout\n" for i in range(10_000))
    manager.sync_all(pasted, "Raise WORKERS to 16 and redeploy.", session_id="session-4")
    assert manager.flush_pending(timeout=300)
    texts = [json.loads(x)["text"] for x in (vault / "LOG.jsonl").read_text("utf-8").splitlines()]
    assert "9090" in texts[0] and texts[1].endswith("Raise WORKERS to 16 and redeploy.") and "worker-0 " in texts[1]
    manager.shutdown_all()

    disk = hermes_home.parent / "disk" / "vault"
    monkeypatch.setenv("OPTMEM_VAULT", str(disk))
    manager = MemoryManager()
    manager.add_provider(loaded(hermes_home))
    manager.initialize_all("session-5", platform="cli", agent_context="primary")
    manager.sync_all("Which port does the backend use now?", "Port 9191 now.", session_id="session-5")
    assert manager.flush_pending(timeout=300)
    assert not disk.exists() and (hermes_home / "optmem-spool.jsonl").exists()
    disk.mkdir(parents=True)
    manager.sync_all("And the frontend?", "Port 3000, the dev server.", session_id="session-5")
    assert manager.flush_pending(timeout=300)
    texts = [json.loads(x)["text"] for x in (disk / "LOG.jsonl").read_text("utf-8").splitlines()]
    assert "9191" in texts[0] and "3000" in texts[1]
    manager.shutdown_all()
