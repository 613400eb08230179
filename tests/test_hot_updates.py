"""A hot entry added as a new value of another (tester 16 #3): `add` keeps both — the file is the
user's — and says so as `append` does (the write gate's guess, `gate.is_update`), and search and
context read the newer first, the older labelled as perhaps outdated, a guess."""

from __future__ import annotations

from typing import Any

import pytest

from optmem import memory
from optmem.vault import Vault

PAIRS = [
    ("Team standup is at 9:30", "Team standup is at 10:00 now", "standup"),
    ("The backend port is 8080", "The backend port is now 9090", "backend port"),
    ("后端端口是 8080", "后端端口改成 9090 了", "后端端口"),
    ("小明住在杭州", "小明住在上海", "小明"),
]


@pytest.mark.parametrize(("old", "new", "query"), PAIRS)
def test_add_says_an_entry_may_be_a_new_value_and_keeps_both(
    vault: Vault, cli: Any, old: str, new: str, query: str
) -> None:
    first = cli.json("add", old)
    assert first["possible_update"] == [] and first["warning"] is None
    out = cli.json("add", new)
    older = memory.entry_id(old)
    assert out["status"] == "added"
    assert out["possible_update"] == [{"id": older, "text": old}]
    assert out["changes"][0]["may_update"] == {"id": older, "text": old}
    assert f"may be a new value of [{older}]" in out["warning"] and f"optmem remove --id {older}" in out["warning"]
    assert memory.load(vault).entries == [old, new]  # both kept: nothing replaced without being asked
    plain = cli("add", new + " ")  # (the same text: a duplicate, nothing said)
    assert plain.exit_code == 0 and "may be a new value" not in plain.stderr

    # search: the newer first, each labelled with the guess
    hits = cli.json("search", query)["hits"]
    assert [h["text"] for h in hits[:2]] == [new, old]
    assert hits[0]["may_update"] == hits[1]["id"] and hits[1]["may_be_updated_by"] == [hits[0]["id"]]
    human = cli("search", query).stdout
    assert human.index(new) < human.index(old) and "may have been updated by" in human

    # context: the newer entry first, the older said to be perhaps outdated — a guess
    items = next(s for s in cli.json("context")["sections"] if s["name"] == "memory")["items"]
    assert items[0] == f"- {new}"
    assert items[1].startswith(f"- {old} (may be outdated: the entry “{new}” may be a newer value of it — a guess)")


def test_an_entry_about_something_else_is_no_new_value(vault: Vault, cli: Any) -> None:
    cli.json("add", "Team standup is at 9:30")
    out = cli.json("add", "Deploys happen on Fridays after lunch")
    assert out["possible_update"] == [] and out["warning"] is None
    items = next(s for s in cli.json("context")["sections"] if s["name"] == "memory")["items"]
    assert items == ["- Team standup is at 9:30", "- Deploys happen on Fridays after lunch"]


def test_once_the_older_is_removed_the_guess_no_longer_stands(vault: Vault, cli: Any) -> None:
    cli.json("add", "The backend port is 8080")
    cli.json("add", "The backend port is now 9090")
    cli.json("remove", "--id", memory.entry_id("The backend port is 8080"))
    items = next(s for s in cli.json("context")["sections"] if s["name"] == "memory")["items"]
    assert items == ["- The backend port is now 9090"]
    [hit] = [h for h in cli.json("search", "backend port")["hits"] if h["status"] == "current"]
    assert hit["text"] == "The backend port is now 9090" and "may_update" not in hit


def test_an_agent_that_shows_the_file_itself_gets_the_older_entry_labelled(vault: Vault, cli: Any) -> None:
    """Context without the hot files (Hermes' provider in a shared vault: Hermes shows MEMORY.md
    itself): only the entries that may be outdated, each with its note."""
    from optmem import context

    cli.json("add", "Team standup is at 9:30")
    cli.json("add", "Team standup is at 10:00 now")
    built = context.build(vault, hot=False)
    items = next(s for s in built.sections if s["name"] == "memory")["items"]
    assert items == [
        "- Team standup is at 9:30 (may be outdated: the entry “Team standup is at 10:00 now” may be a newer "
        "value of it — a guess)"
    ]
