"""tester17 #3 at read time: two machines each wrote a handoff for one project (same domain)
before syncing. The later is the latest; the other — written beside it, not before it — is shown
with it, labelled, by `handoff read`, `handoff list`, `context` and MCP `handoff_read`, on both
machines, until a handoff written having seen both follows them. Real git, a bare origin, two
clones (`test_sync.pair`), every command through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import fenced_json, mcp_session
from test_sync import om, pair, printed, sync

LAPTOP = ("--done", "端口改到 9090", "--next", "更新 nginx")
DESKTOP = ("--done", "staging DNS switched", "--next", "announce in #dev")


def _write(vault: Path, *items: str) -> str:
    said: str = om(vault, "handoff", "write", "-p", "webapp", *items)["handoff"]["id"]
    return said


def _read(vault: Path) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = om(vault, "handoff", "read", "-p", "webapp")["handoffs"]
    return got


def _after(vault: Path, rid: str, field: str = "after") -> Any:
    """The `after` (or `field`) the handoff record `rid` keeps in the log, as written."""
    for f in [vault / "LOG.jsonl", *sorted((vault / "log").glob("*/*.jsonl"))]:
        for line in f.read_text("utf-8").splitlines() if f.exists() else []:
            rec = json.loads(line)
            if rec.get("id") == rid:
                return rec.get(field, "absent")
    raise AssertionError(rid)


def _two_machines(tmp_path: Path) -> tuple[Path, Path, str, str]:
    one, two = pair(tmp_path)
    om(one, "add", "uses pnpm")
    sync(one), sync(two)
    laptop = _write(one, *LAPTOP)
    desktop = _write(two, *DESKTOP)
    sync(one), sync(two), sync(one)
    return one, two, laptop, desktop


@pytest.mark.long
def test_the_handoff_written_beside_the_latest_is_shown_with_it_on_both_machines(tmp_path: Path) -> None:
    one, two, laptop, desktop = _two_machines(tmp_path)
    assert _after(one, laptop) == [] and _after(two, desktop) == []  # (each the first its writer saw)
    for clone in (one, two):
        latest, beside = _read(clone)
        assert (latest["id"], latest["next"], "beside" not in latest) == (desktop, ["announce in #dev"], True)
        assert (beside["id"], beside["next"], beside["beside"]) == (laptop, ["更新 nginx"], desktop)
        mine = om(clone, "handoff", "read", "-p", "webapp", "-d", "default")["handoffs"]
        assert [(h["id"], h.get("beside")) for h in mine] == [(desktop, None), (laptop, desktop)]
        assert len(om(clone, "handoff", "read", "-p", "webapp", "--history", "5")["handoffs"]) == 2
        told = printed(clone, "handoff", "read", "-p", "webapp")
        assert "更新 nginx" in told and f"written beside the latest, {desktop[-8:]}" in told, told
        (project,) = om(clone, "handoff", "list")["projects"]
        assert project["next"] == ["announce in #dev"]
        assert [(a["id"], a["beside"], a["next"]) for a in project["agents"]] == [(laptop, desktop, ["更新 nginx"])]
        listed = printed(clone, "handoff", "list")
        assert f"written beside the latest ({desktop[-8:]})" in listed and "next: 更新 nginx" in listed, listed
        block = om(clone, "context", "-p", "webapp")
        shown = [s for s in block["sections"] if s["name"] == "handoff"]
        assert [s["items"] for s in shown] == [
            ["- next: announce in #dev", "- done: staging DNS switched"],
            ["- next: 更新 nginx"],  # (its open items: what it did is the past)
        ], shown
        assert shown[1]["title"].startswith(f"Handoff written beside the latest ({desktop[-8:]}) on another machine")
    # a budget too small for both: the one beside is cut first, and the cut is said
    full = om(one, "context", "-p", "webapp")["chars"]
    small = om(one, "context", "-p", "webapp", "--budget", str(full - 1))
    assert "announce in #dev" in small["text"] and "更新 nginx" not in small["text"], small["text"]
    assert small["omitted"].get("handoff") == 1, small

    # MCP `handoff_read` as `handoff read`
    async def script(s: Any) -> Any:
        return await s.call_tool("handoff_read", {"project": "webapp"})

    result = mcp_session(two, script)
    got = getattr(result, "structured_content", None) or result.structuredContent or {}
    got = got if "handoffs" in got else fenced_json(result.content[0].text)
    assert [(h["id"], h.get("beside")) for h in got["handoffs"]] == [(desktop, None), (laptop, desktop)]


@pytest.mark.long
def test_a_handoff_written_having_seen_both_leaves_none_beside(tmp_path: Path) -> None:
    one, two, laptop, desktop = _two_machines(tmp_path)
    _read(one)  # (the session that writes the third read both)
    third = _write(one, "--next", "更新 nginx", "--next", "announce in #dev")
    assert sorted(_after(one, third)) == sorted([laptop, desktop])
    assert [h["id"] for h in _read(one)] == [third]
    sync(one), sync(two)
    for clone in (one, two):
        assert [(h["id"], h.get("beside")) for h in _read(clone)] == [(third, None)]
        (project,) = om(clone, "handoff", "list")["projects"]
        assert project["agents"] == []
        text = om(clone, "context", "-p", "webapp")["text"]
        assert "beside" not in text and "staging DNS switched" not in text, text


def test_one_machine_shows_nothing_beside_a_handoff_written_after_the_latest_was_read(
    cli: Any, vault_path: Path
) -> None:
    first = cli.json("handoff", "write", "-p", "webapp", "--next", "更新 nginx")["handoff"]["id"]
    cli("context", "-p", "webapp")  # (the next session starts with it)
    second = cli.json("handoff", "write", "-p", "webapp", "--next", "announce in #dev")["handoff"]["id"]
    assert _after(vault_path, second) == [first]
    got = cli.json("handoff", "read", "-p", "webapp")["handoffs"]
    assert [(h["id"], h.get("beside")) for h in got] == [(second, None)]
    assert cli.json("handoff", "list")["projects"][0]["agents"] == []
    text = cli("context", "-p", "webapp").stdout
    assert "announce in #dev" in text and "更新 nginx" not in text and "beside" not in text


def test_handoffs_written_before_after_was_kept_read_as_before(cli: Any, vault_path: Path) -> None:
    """A log from before handoffs kept `after`: each follows every handoff before it."""
    cli.json("handoff", "write", "-p", "webapp", "--next", "old one")
    cli.json("handoff", "write", "-p", "webapp", "--next", "old two")
    log = vault_path / "LOG.jsonl"
    lines = [json.loads(x) for x in log.read_text("utf-8").splitlines()]
    for rec in lines:
        rec.pop("after", None)
    log.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines), "utf-8")
    cli.json("reindex")
    got = cli.json("handoff", "read", "-p", "webapp")["handoffs"]
    assert [(h["next"], h.get("beside")) for h in got] == [(["old two"], None)]
    newer = cli.json("handoff", "write", "-p", "webapp", "--next", "new")["handoff"]["id"]
    assert len(_after(vault_path, newer)) == 1
    assert [h["next"] for h in cli.json("handoff", "read", "-p", "webapp")["handoffs"]] == [["new"]]


def test_forgetting_a_handoff_brings_none_it_followed_back_beside(cli: Any, vault_path: Path) -> None:
    """review19 #3: a forgotten handoff still says what its writer had seen — the handoff it
    followed is not 'written beside the latest' because it is gone. Forgetting the newest one
    makes the one before it the latest, with nothing beside it."""
    first = cli.json("handoff", "write", "-p", "web", "--next", "P next")["handoff"]["id"]
    cli("handoff", "read", "-p", "web")  # (each writer read the one before)
    middle = cli.json("handoff", "write", "-p", "web", "--next", "L next")["handoff"]["id"]
    cli("handoff", "read", "-p", "web")
    last = cli.json("handoff", "write", "-p", "web", "--next", "H2 next")["handoff"]["id"]
    cli.json("forget", middle)
    got = cli.json("handoff", "read", "-p", "web")["handoffs"]
    assert [(h["id"], h.get("beside")) for h in got] == [(last, None)], got
    assert "P next" not in cli("handoff", "read", "-p", "web").stdout
    assert cli.json("handoff", "list")["projects"][0]["agents"] == []
    text = cli("context", "-p", "web").stdout
    assert "H2 next" in text and "P next" not in text and "beside" not in text, text
    cli.json("forget", last)  # the newest forgotten: the first is the latest, alone
    got = cli.json("handoff", "read", "-p", "web")["handoffs"]
    assert [(h["id"], h.get("beside")) for h in got] == [(first, None)], got


@pytest.mark.long
def test_a_read_on_one_clone_is_no_read_on_the_other(tmp_path: Path) -> None:
    """A handoff read on one clone only (its recall line comes to the other clone with `optmem
    sync`) was not read by a writer on the other: that writer's handoff keeps its open items
    beside it there — and a writer on the clone that read it follows it (tidy18 #1)."""
    one, two = pair(tmp_path)
    first = _write(one, "--next", "更新 nginx")
    sync(one), sync(two)
    _read(one)  # (read on one, never on two)
    sync(one), sync(two)
    on_two = _write(two, "--next", "announce in #dev")
    assert _after(two, on_two) == []  # (its writer never read the first)
    assert _after(two, on_two, "unread") == [first]
    got = _read(two)
    assert [(h["id"], h.get("beside"), h.get("unread")) for h in got] == [(on_two, None, None), (first, on_two, True)]
    # on the clone that read it, a writer follows it
    on_one = _write(one, "--next", "remove the 8080 rule")
    assert _after(one, on_one) == [first]


def test_a_read_is_the_writer_ids_that_made_it(cli: Any, vault_path: Path) -> None:
    """The index marks what this clone read from its own recall file (`log/<writer>/ACCESS.jsonl`):
    the same folder under another writer id (`OPTMEM_WRITER`) is another clone, whose writer never
    read what the first read — the marks are made again for it, not kept from the first."""
    one, two = {"OPTMEM_WRITER": "one"}, {"OPTMEM_WRITER": "two"}
    cli.json("init")
    cli.json("segment", env=one)
    first = cli.json("handoff", "write", "-p", "webapp", "--next", "更新 nginx", env=one)["handoff"]["id"]
    cli.json("handoff", "read", "-p", "webapp", env=one)
    cli.json("handoff", "list", env=one)  # (the index applies that read as one's)
    assert (vault_path / "log" / "one" / "ACCESS.jsonl").is_file()
    second = cli.json("handoff", "write", "-p", "webapp", "--next", "announce in #dev", env=two)["handoff"]["id"]
    assert (_after(vault_path, second), _after(vault_path, second, "unread")) == ([], [first])
    cli.json("handoff", "read", "-p", "webapp", env=one)  # (one reads both: its next handoff follows both)
    third = cli.json("handoff", "write", "-p", "webapp", "--next", "remove the 8080 rule", env=one)["handoff"]["id"]
    assert sorted(_after(vault_path, third)) == sorted([first, second])
