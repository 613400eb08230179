"""tester18 #7: two agents on one project in the same domain (a CLI agent and an MCP client, or
four `handoff write` one after the other). A handoff nobody had read when a later one of its
project and domain was written is not hidden by it: its open items stand, in `context` and
`handoff read`, labelled with where they come from, until a handoff written after it was read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import fenced_json, log_lines, mcp_session


def _handoff_items(block: dict[str, Any]) -> list[str]:
    return [i for s in block["sections"] if s["name"] == "handoff" for i in s["items"]]


def test_an_mcp_agents_handoff_does_not_hide_the_cli_agents_open_items(cli: Any, vault_path: Path) -> None:
    cli_id = cli.json("handoff", "write", "-p", "web", "--done", "migrated the db", "--next", "drop the old column")[
        "handoff"
    ]["id"]

    async def script(s: Any) -> Any:
        return await s.call_tool(
            "handoff_write", {"project": "web", "done": ["wrote the docs"], "next": ["publish the docs"]}
        )

    result = mcp_session(vault_path, script)
    got = getattr(result, "structured_content", None) or result.structuredContent or {}
    got = got if "handoff" in got else fenced_json(result.content[0].text)
    mcp_id = got["handoff"]["id"]
    [rec] = [r for r in log_lines(vault_path) if r.get("id") == mcp_id]
    assert rec["after"] == [] and rec["unread"] == [cli_id]  # (its writer never read the CLI agent's)

    items = _handoff_items(cli.json("context", "-p", "web"))
    assert items[:2] == ["- next: publish the docs", "- done: wrote the docs"], items
    assert items[2].startswith(f"- still open in the handoff {cli_id[-8:]}")
    assert "not read before it was written" in items[2]
    assert items[3:] == ["- next: drop the old column"], items
    read = cli.json("handoff", "read", "-p", "web")["handoffs"]
    assert [(h["id"], h.get("beside"), h.get("unread")) for h in read] == [
        (mcp_id, None, None),
        (cli_id, mcp_id, True),
    ]
    told = cli("handoff", "read", "-p", "web").stdout
    assert f"written before the latest, {mcp_id[-8:]}, and not read before" in told and "on another machine" not in told

    # the next session read both (the context above): its handoff follows both, and nothing stands beside it
    third = cli.json("handoff", "write", "-p", "web", "--done", "dropped the old column")["handoff"]["id"]
    [rec] = [r for r in log_lines(vault_path) if r.get("id") == third]
    assert sorted(rec["after"]) == sorted([cli_id, mcp_id]) and "unread" not in rec
    items = _handoff_items(cli.json("context", "-p", "web"))
    assert items == ["- done: dropped the old column"], items


def test_four_handoffs_written_unread_keep_every_open_item(cli: Any, vault_path: Path) -> None:
    for n in range(4):
        cli.json("handoff", "write", "-p", "web", "--next", f"step {n}")
    text = cli("context", "-p", "web").stdout
    assert all(f"next: step {n}" in text for n in range(4)), text
    assert len(cli.json("handoff", "read", "-p", "web")["handoffs"]) == 4
    cli.json("handoff", "write", "-p", "web", "--next", "step 4")  # written having read them all
    text = cli("context", "-p", "web").stdout
    assert "next: step 4" in text and "step 0" not in text and "still open" not in text, text


def test_a_read_only_listing_is_no_read(cli: Any, vault_path: Path) -> None:
    """`handoff list` names next items but is an overview, not a session's start: a handoff
    written after it still leaves the earlier one's open items standing."""
    cli.json("handoff", "write", "-p", "web", "--next", "rotate the key")
    cli.json("handoff", "list")
    cli.json("handoff", "write", "-p", "web", "--next", "ship it")
    assert "rotate the key" in cli("context", "-p", "web").stdout


def test_a_handoff_whose_open_items_the_budget_cut_was_not_read(cli: Any, vault_path: Path) -> None:
    """review21 #1: a block with room for the "still open in …" line but not for the items under it
    did not read that handoff — the next handoff must not follow it, or its items vanish unseen."""
    long = "migrate cron: every job of the billing and reporting hosts moves to the scheduler service, one by one"
    first = cli.json("handoff", "write", "-p", "api", "--next", "rotate TLS certificates", "--next", long)
    first_id = first["handoff"]["id"]
    cli.json("handoff", "write", "-p", "api", "--next", "write release notes")
    cut = None
    for budget in range(300, 1500, 10):
        items = _handoff_items(cli.json("context", "-p", "api", "--budget", str(budget)))
        heading = any(i.startswith(f"- still open in the handoff {first_id[-8:]}") for i in items)
        if heading and f"- next: {long}" not in items:
            cut = budget
            break
    assert cut is not None
    cli.json("handoff", "write", "-p", "api", "--next", "ship 2.1")
    text = cli("context", "-p", "api").stdout
    assert "rotate TLS certificates" in text and long in text, text
