"""Every state × every surface (issue 30): one vault holds a record in each state the effective
view knows, and one table says what each surface shows of it. `get`, `search`, `context`,
`show`, `handoff read`, the summary tree, the MCP tools, `pending`, `conflicts`, `stats` and
`doctor` must agree on what a record *is*; the table in docs/effective-view.md is this one, short."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from conftest import Cli, fenced_json

# the vault's clock: everything is written between T0 and NOW
T0, LATER, NOW = "2026-03-01T09:00:00Z", "2026-03-02T09:00:00Z", "2026-03-12T09:00:00Z"
LONG_AGO = "2025-08-01T09:00:00Z"  # a record nobody used since: the sweep cools it


class Row(NamedTuple):
    """What each surface shows of one state's record (None: the surface does not show it)."""

    state: str
    marker: str  # a word only this state's records hold: what the surfaces are searched for
    get: str | None  # `get`'s status (None: no record — purged)
    badge: str | None  # what human `search` / `get` print beside it
    search: str | None  # its status in a plain `search` (None: not a hit)
    current: bool  # a hit of `search --current`
    context: str | None  # how `context` shows it (None: not shown)
    tree: str | None  # how the summary tree quotes it (None: not quoted)


TABLE = [
    Row("current", "mxcurrent", "current", None, "current", True, "record", "quoted"),
    Row("superseded by a correction", "mxcorrected", "superseded", "SUPERSEDED by", "superseded", False, None, None),
    Row("superseded by a newer key value", "mxkeyed", "superseded", "SUPERSEDED by", "superseded", False, None, None),
    Row("replaced hot entry", "mxhotold", "superseded", "SUPERSEDED by", "superseded", False, None, None),
    Row("removed hot entry", "mxhotgone", "removed", "REMOVED by", "removed", False, None, None),
    Row("forgotten", "mxforgotten", "forgotten", None, None, False, None, None),
    Row("purged", "mxpurged", None, None, None, False, None, None),
    Row("expired", "mxexpired", "expired", "EXPIRED", "expired", False, None, None),
    Row("pending", "mxpending", "pending", "PENDING", "pending", False, None, "pending"),
    Row("confirmed", "mxconfirmed", "current", None, "current", True, "record", "quoted"),
    Row("rejected", "mxrejected", "forgotten", None, None, False, None, None),
    Row("cold", "mxcold", "cold", "COLD", "cold", False, None, "quoted"),
    Row("in conflict, keyed", "mxkeyconflict", "current", "CONFLICT", "current", True, "asked", "conflict"),
    Row("in conflict, corrected two ways", "mxfork", "current", "CONFLICT", "current", True, "asked", "conflict"),
    Row(
        "possibly updated (a guess)",
        "mxplants",
        "current",
        "may have been updated by",
        "current",
        True,
        "question",
        "question",
    ),
    Row("redline", "mxredline", "current", "REDLINE", "current", True, "redline", "quoted"),
]


class Built(NamedTuple):
    vault: Path
    ids: dict[str, str]  # state → the id of the record in that state
    cli: Cli


def run(cli: Cli, vault: Path, *args: str, when: str = NOW, code: int = 0) -> Any:
    out = cli("--vault", str(vault), *args, "--json", env={"OPTMEM_NOW": when})
    assert out.exit_code == code, (args, out.stdout, out.stderr)
    return json.loads(out.stdout)


def human(cli: Cli, vault: Path, *args: str) -> str:
    return cli("--vault", str(vault), *args, env={"OPTMEM_NOW": NOW}).stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    vault = tmp_path_factory.mktemp("matrix") / "vault"
    cli = Cli()
    run(cli, vault, "init")
    # small tree runs, so a handful of records make nodes; no sweep but the one we ask for
    (vault / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n[tree]\nrun = 4\nfanout = 2\n', "utf-8")
    ids: dict[str, str] = {}

    def put(state: str, text: str, *more: str, when: str = T0) -> str:
        ids[state] = run(cli, vault, "append", text, *more, when=when)["id"]
        return ids[state]

    put("cold", "mxcold the old jenkins server ran the nightly build", when=LONG_AGO)
    put("current", "mxcurrent the orchid shelf gets light in the morning")
    old = put("superseded by a correction", "mxcorrected the api listens on port 8080")
    ids["correction"] = run(cli, vault, "correct", old, "mxcorrected the api listens on port 9090", when=LATER)["id"]
    put("superseded by a newer key value", "mxkeyed the region is eu-west", "--key", "mx.region")
    ids["key value"] = run(cli, vault, "append", "mxkeyed the region is us-east", "--key", "mx.region", when=LATER)[
        "id"
    ]
    put("forgotten", "mxforgotten the wifi password hint is the cat")
    run(cli, vault, "forget", ids["forgotten"], "--reason", "not for memory", when=LATER)
    put("purged", "mxpurged my health insurance number")
    put("expired", "mxexpired the staging freeze holds this week", "--ttl", "3d")
    put("pending", "mxpending the user may like green tea", "--confidence", "0.4")
    put("confirmed", "mxconfirmed the user may prefer vim", "--confidence", "0.4")
    run(cli, vault, "confirm", ids["confirmed"], when=LATER)
    put("rejected", "mxrejected the user may use emacs", "--confidence", "0.4")
    run(cli, vault, "reject", ids["rejected"], "--reason", "wrong guess", when=LATER)
    put("in conflict, keyed", "mxkeyconflict the editor is vim", "--key", "mx.editor")
    ids["keyed rival"] = run(
        cli,
        vault,
        "append",
        "mxkeyconflict the editor is emacs",
        "--key",
        "mx.editor",
        "--basis",
        "inferred",
        when=LATER,
    )["id"]
    base = run(cli, vault, "append", "mxfork the release branch is rel-1")["id"]
    with open(vault / "LOG.jsonl", "a", encoding="utf-8") as fh:  # two clones corrected it; git merged
        for day, text in (("2026-03-02", "rel-2"), ("2026-03-03", "rel-3")):
            fh.write(
                json.dumps(
                    {
                        "ts": f"{day}T00:00:00Z",
                        "domain": "default",
                        "kind": "correction",
                        "corrects": [base],
                        "text": f"mxfork the release branch is {text}",
                    }
                )
                + "\n"
            )
    ids["fork base"] = base
    ids["in conflict, corrected two ways"] = next(
        h["id"] for h in run(cli, vault, "search", "mxfork rel-3")["hits"] if h["text"].endswith("rel-3")
    )
    put("possibly updated (a guess)", "mxplants I have 3 monstera plants at home")
    ids["update guess"] = run(cli, vault, "append", "mxplants I now have 5 monstera plants at home", when=LATER)["id"]
    put("redline", "mxredline never deploy on a friday", "--redline", "--origin", "user")
    run(cli, vault, "add", "mxhotold the retro is on monday", when=T0)
    run(cli, vault, "replace", "on monday", "on tuesday", when=LATER)
    run(cli, vault, "add", "mxhotgone the printer is on floor 2", when=T0)
    run(cli, vault, "remove", "mxhotgone", when=LATER)
    run(cli, vault, "handoff", "write", "-p", "mxproj", "--done", "mxhandoff the port moved", when=LATER)
    ids["fork rel-2"] = next(
        h["id"] for h in run(cli, vault, "search", "mxfork rel-2")["hits"] if h["text"].endswith("rel-2")
    )
    journal = [json.loads(x) for x in (vault / "LOG.jsonl").read_text("utf-8").splitlines()]
    ids["replaced hot entry"] = next(r["id"] for r in journal if r.get("op") == "remove" and "monday" in r["text"])
    ids["removed hot entry"] = next(r["id"] for r in journal if r.get("op") == "remove" and "mxhotgone" in r["text"])
    for i in range(3):  # the raw tail of the tree (under one run) is these, not a state's record
        run(cli, vault, "append", f"filler note {i} about nothing in particular", when=NOW)
    run(cli, vault, "sweep")  # the old jenkins note goes cold
    run(cli, vault, "compact")  # the tree over all of it
    run(cli, vault, "purge", "--origin", "user", ids["purged"], "--yes")  # its nodes go with it …
    run(cli, vault, "compact")  # … and are made again without it
    return Built(vault, ids, cli)


def hits(b: Built, marker: str, *more: str) -> dict[str, dict[str, Any]]:
    return {h["id"]: h for h in run(b.cli, b.vault, "search", marker, "--limit", "50", *more)["hits"]}


@pytest.mark.long
@pytest.mark.parametrize("row", TABLE, ids=[r.state for r in TABLE])
def test_each_state_on_each_surface(built: Built, row: Row) -> None:
    b, rid = built, built.ids[row.state]
    vault = b.vault
    # get, JSON and human
    if row.get is None:
        assert run(b.cli, vault, "get", rid, code=1)["error"]["code"] == "not_found"
    else:
        got = run(b.cli, vault, "get", rid)["record"]
        assert got["status"] == row.get
        assert got["pending"] is (row.get == "pending")
        assert got["conflict"] is (row.badge == "CONFLICT")
        assert bool(got["conflict_with"]) is (row.badge == "CONFLICT")
        assert (got["superseded_by"] is not None) is (row.badge == "SUPERSEDED by")
        text = human(b.cli, vault, "get", rid)
        word = row.get if row.get == "current" else row.get.upper()  # (as search's labels say it)
        assert text.splitlines()[0].startswith(rid) and f"[{word}" in text.splitlines()[0]
    # search, JSON and human
    found = hits(b, row.marker)
    if row.search is None:
        assert rid not in found
    else:
        assert found[rid]["status"] == row.search
        said = human(b.cli, vault, "search", row.marker, "--limit", "50").splitlines()
        line = next(x for x in said if f" {rid[-8:]}  " in x)  # (its own line: a guess names the other's id)
        if row.badge:
            assert f"[{row.badge}" in line or f" {row.badge}" in line, line
        else:
            assert "[" not in line.split(rid[-8:], 1)[1] or "CORRECTION" in line, line
    assert (rid in hits(b, row.marker, "--current")) is row.current
    # context: shown as a record, as a redline, asked as a conflict, as a question — or not at all
    ctx = run(b.cli, vault, "context", "--budget", "20000")["text"]
    lines = [x for x in ctx.splitlines() if rid[-8:] in x]
    if row.context is None:
        assert not lines, lines
    elif row.context == "record":
        assert any(x.startswith("- [") and f"id {rid[-8:]}]" in x for x in lines), lines
    elif row.context == "redline":
        assert any(x.startswith("- [default]") for x in lines), lines
    elif row.context == "asked":
        assert any("which is right now? Ask the user" in x for x in lines), lines
        # listed among the records too, it is marked as search marks it
        assert all("CONFLICT" in x for x in lines if x.startswith("- [") and f"id {rid[-8:]}]" in x), lines
        assert any(x.startswith("- [") and f"id {rid[-8:]}]" in x for x in lines), lines
    elif row.context == "question":
        assert any(x.endswith(f"(may have been updated by id {b.ids['update guess'][-8:]}?)") for x in lines), lines
        assert "outdated" not in ctx
    # the summary tree: files and what `tree NODE` and `search --kind summary` show
    files = "\n".join(p.read_text("utf-8") for p in sorted((vault / "tree").rglob("*.md")))
    shown = "\n".join(
        run(b.cli, vault, "tree", f"default/{p.stem}")["node"]["body"]
        for p in sorted((vault / "tree" / "default").glob("*.md"))
    )
    summary = "\n".join(h["text"] for h in run(b.cli, vault, "search", row.marker, "--kind", "summary")["hits"])
    if row.tree is None:
        assert rid not in shown and rid not in summary
        if row.get in (None, "forgotten"):  # its text left the tree's files too
            assert row.marker not in files and row.marker not in summary
    else:
        quoted = next(x for x in shown.splitlines() if rid in x)
        if row.tree == "quoted":
            assert quoted.endswith(f"(`{rid}`)") or quoted.endswith("[redline]") or quoted.endswith("[correction]"), (
                quoted
            )
        elif row.tree == "superseded":
            assert "[superseded by" in quoted, quoted
        elif row.tree == "question":  # the write gate's guess, asked as `search` asks it
            assert quoted.endswith(f"[may have been updated by {b.ids['update guess'][-8:]}?]"), quoted
        else:
            assert f"[{row.tree}]" in quoted, quoted


@pytest.mark.long
def test_the_lists_and_counts_agree_with_the_table(built: Built) -> None:
    b, ids = built, built.ids
    pending = run(b.cli, b.vault, "pending")["pending"]
    assert [w["id"] for w in pending] == [ids["pending"]]
    conflicts = run(b.cli, b.vault, "conflicts")["conflicts"]
    assert sorted((c["key"] or c["fact"], sorted(v["id"] for v in c["values"])) for c in conflicts) == sorted(
        [
            ("mx.editor", sorted([ids["in conflict, keyed"], ids["keyed rival"]])),
            (ids["fork base"], sorted([ids["fork rel-2"], ids["in conflict, corrected two ways"]])),
        ]
    )
    stats = run(b.cli, b.vault, "stats")
    assert stats["contradictions"] == 2 and stats["open_updates"] == 1
    assert stats["status"]["pending"] == 1 and stats["status"]["cold"] == 1 and stats["status"]["expired"] == 1
    assert stats["status"]["forgotten"] == 2  # the forgotten and the rejected guess (a purge leaves nothing)
    assert stats["status"]["removed"] == 1  # the removed hot entry's journal line (its add: superseded by it)
    doctor = run(b.cli, b.vault, "doctor")
    assert doctor["ok"] is True and doctor["problems"] == []
    handoff = run(b.cli, b.vault, "handoff", "read", "-p", "mxproj")["handoffs"][0]
    assert handoff["done"] == ["mxhandoff the port moved"]
    show = run(b.cli, b.vault, "show")
    entries = [e["text"] for f in show["files"] for e in f["entries"]]
    assert "mxhotold the retro is on tuesday" in entries
    assert not any("monday" in e or "mxhotgone" in e for e in entries)


@pytest.mark.long
def test_every_mcp_tool_agrees_with_the_cli(built: Built) -> None:
    from conftest import mcp_session

    b = built
    markers = [r.marker for r in TABLE]

    async def script(s) -> dict:
        async def call(tool: str, args: dict) -> Any:
            return fenced_json((await s.call_tool(tool, args)).content[0].text)

        out = {m: await call("search", {"query": m, "limit": 50}) for m in markers}
        out["__conflicts"] = await call("conflicts", {})
        out["__handoff"] = await call("handoff_read", {"project": "mxproj"})
        out["__memory"] = await call("memory", {"action": "read", "target": "memory"})
        block = (await s.call_tool("context", {"budget": 20000})).content[0].text  # the block itself
        out["__context"] = {"text": block}
        return out

    import os

    os.environ["OPTMEM_NOW"] = NOW
    try:
        got = mcp_session(b.vault, script)
    finally:
        del os.environ["OPTMEM_NOW"]
    for m in markers:
        cli_hits = [(h["id"], h["status"]) for h in run(b.cli, b.vault, "search", m, "--limit", "50")["hits"]]
        assert [(h["id"], h["status"]) for h in got[m]["hits"]] == cli_hits, m
    assert got["__conflicts"]["conflicts"] == run(b.cli, b.vault, "conflicts")["conflicts"]
    assert got["__handoff"]["handoffs"] == run(b.cli, b.vault, "handoff", "read", "-p", "mxproj")["handoffs"]
    assert "mxhotold the retro is on tuesday" in json.dumps(got["__memory"], ensure_ascii=False)
    ctx = got["__context"]["text"]
    for row in TABLE:
        assert (f"id {b.ids[row.state][-8:]}" in ctx) is (row.context is not None), row.state


def readme_table() -> str:
    """The docs' state × surface table (docs/effective-view.md), made from `TABLE`."""
    context = {
        "record": "listed",
        "asked": "listed, and asked which is right",
        "redline": "redlines",
        "question": 'listed: "may have been updated by …?"',
    }
    out = ["| state | `get` | `search` | `--current` | `context` | tree |", "| --- | --- | --- | --- | --- | --- |"]
    for r in TABLE:
        search = (
            "—"
            if r.search is None
            else r.search + (f" `{r.badge}{' …' if r.badge.endswith('by') else ''}`" if r.badge else "")
        )
        tree = {None: "—", "quoted": "quoted", "question": "quoted `[may have been updated by …?]`"}.get(
            r.tree, f"quoted `[{r.tree}]`"
        )
        out.append(
            f"| {r.state} | {r.get or 'not found'} | {search} | {'yes' if r.current else '—'} | "
            f"{context.get(r.context or '', '—')} | {tree} |"
        )
    return "\n".join(out)


def test_the_docs_show_this_table() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "effective-view.md").read_text("utf-8")
    assert readme_table() in page, "docs/effective-view.md's state table should read:\n" + readme_table()
