"""Surfaces an adversarial run found rough: echoes of huge arguments, merge's text and
suggestions, confirm/reject refusals, help texts, doctor on a hand-typed line without `ts`."""

from __future__ import annotations

import json
from datetime import UTC

import pytest
from conftest import log_lines, put

from optmem.errors import ECHO_CHARS

HUGE = "x" * 100_000


def quiet(vault_path):
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")


# -- 1. a user's argument is echoed cut, in one place ------------------------------------------------
def test_a_huge_query_is_echoed_cut_and_kept_whole_as_data(cli, vault):
    put(vault, "the staging port is 5433")
    out = cli("search", HUGE)
    assert out.exit_code == 0 and "no matches for" in out.stdout
    assert len(out.stdout) < 300 and "x" * ECHO_CHARS + "…" in out.stdout
    assert cli.json("search", HUGE)["query"] == HUGE  # the JSON field is data: as given


@pytest.mark.parametrize(
    "args",
    [
        ["search", "!" * 100_000],  # "… has nothing to search for"
        ["search", "port", "--kind", HUGE],  # "no record has kind …"
        ["search", "port", "--tag", HUGE],
        ["correct", HUGE, "the port is 5434"],  # "no current or pending record matches …"
        ["get", HUGE],  # "no record has id …"
        ["remove", HUGE],  # "no entry in MEMORY.md contains …"
        ["history", "--key", HUGE],
        ["append", "a note", "--ttl", HUGE],
        ["search", "port", "--since", HUGE],
        ["append", "a note", "--domain", HUGE],  # "domain … is not allowed"
    ],
)
def test_messages_quote_a_huge_argument_cut(cli, vault, args):
    put(vault, "the staging port is 5433")
    cli("add", "the deploy runs on Fridays")
    human = cli(*args)
    assert len(human.stderr) + len(human.stdout) < 2000, (args[0], human.stderr[:200])
    err = cli(*args, "--json")
    messages = [err.stderr] + ([json.loads(err.stdout)["error"]["message"]] if err.exit_code else [])
    assert all(len(m) < 1000 for m in messages), args[0]
    assert any("…" in m for m in messages + [human.stderr, human.stdout]), args[0]


def test_context_titles_a_huge_query_cut(cli, vault):
    put(vault, "the staging port is 5433")
    title = cli.json("context", "--query", "port " + HUGE)["text"]
    assert ("port " + HUGE)[:ECHO_CHARS] + "…" in title and HUGE not in title


# -- 4. confirm / reject: a refusal, never a usage error or a silent success ----------------------
def test_confirm_of_a_forgotten_record_is_refused_and_writes_nothing(cli, vault, vault_path):
    quiet(vault_path)
    plain = cli.json("append", "the repo uses pnpm")["id"]
    tomb = cli.json("forget", plain)["tombstone"]
    guess = cli.json("append", "staging runs on port 8443", "--confidence", "0.3")["id"]
    cli.json("forget", guess)
    before = vault.log_path.read_bytes()
    for rid in (plain, guess):
        err = cli.json("confirm", rid, code=1)["error"]
        assert err["code"] == "forgotten" and "optmem get" in err["message"]
        assert "nothing was written" in err["message"]
    assert cli.json("confirm", plain, code=1)["error"]["forgotten_by"] == tomb
    human = cli("confirm", plain)
    assert human.exit_code == 1 and "forgotten" in human.stderr
    assert vault.log_path.read_bytes() == before


def test_confirm_and_reject_of_the_wrong_kind_of_record_are_refusals(cli, vault, vault_path):
    quiet(vault_path)
    plain = cli.json("append", "the repo uses pnpm")["id"]
    assert cli.json("append", "the repo uses pnpm")["status"] == "duplicate"  # a `seen` line
    [seen] = [r["id"] for r in log_lines(vault_path) if r.get("kind") == "seen"]
    cli.json("add", "the deploy runs on Fridays")
    [journal] = [r["id"] for r in log_lines(vault_path) if r.get("kind") == "memory"]
    guess = cli.json("append", "staging runs on port 8443", "--confidence", "0.3")["id"]
    cli.json("confirm", guess)
    before = vault.log_path.read_bytes()
    cases = [(plain, "not_pending"), (seen, "bookkeeping_line"), (journal, "hot_memory_journal")]
    for command in ("confirm", "reject"):
        for rid, code in cases:
            err = cli.json(command, rid, code=1)["error"]
            assert err["code"] == code, (command, code)
    err = cli.json("reject", guess, code=1)["error"]  # confirmed: no longer a guess to reject
    assert err["code"] == "not_pending" and "confirmed" in err["message"]
    assert cli.json("confirm", guess)["status"] == "already_confirmed"  # idempotent, exit 0
    assert vault.log_path.read_bytes() == before


def test_a_guess_repeated_in_another_domain_is_counted_not_a_second_guess(cli, vault, vault_path):
    quiet(vault_path)
    text = "The staging database listens on port 5433"
    first = cli.json("append", text, "--domain", "a", "--confidence", "0.4", "--session", "s1")["id"]
    again = cli.json("append", text, "--domain", "b", "--agent", "--session", "s2")
    assert again["status"] == "duplicate" and again["duplicate_of"] == first and again["id"] == first
    assert again["confirmed"] == []  # agreement between guesses is still a guess (issue 44)
    [waiting] = cli.json("pending")["pending"]
    assert (waiting["id"], waiting["restated"]) == (first, 1)
    lines = [r for r in log_lines(vault_path) if r.get("text") == text]
    assert [r["id"] for r in lines] == [first]  # no second guess stored in domain b
    [seen] = [r for r in log_lines(vault_path) if r.get("kind") == "seen"]
    assert seen["ref"] == first and seen["domain"] == "b" and seen["session"] == "s2"
    assert cli.json("get", first)["record"]["status"] == "pending"


# -- 2. merge: a fragment that begins with the topic does not repeat it -------------------------------
def test_merge_does_not_repeat_a_topic_the_fragment_already_begins_with(cli, vault, vault_path):
    quiet(vault_path)
    a = cli.json("append", "Japan trip: going next month")["id"]
    b = cli.json("append", "booked a ryokan in Kyoto")["id"]
    c = cli.json("append", "JAPAN TRIP — flights on June 3")["id"]
    d = cli.json("append", "Japanese food every night")["id"]
    rec = cli.json("merge", a, b, c, d, "--topic", "Japan trip")["record"]
    assert rec["text"] == (
        "Japan trip: going next month / booked a ryokan in Kyoto / flights on June 3 / Japanese food every night"
    )
    assert rec["details"] == [
        "Japan trip: going next month",
        "booked a ryokan in Kyoto",
        "JAPAN TRIP — flights on June 3",
        "Japanese food every night",
    ]  # verbatim


def test_merge_says_its_topic_once_however_the_fragments_and_the_topic_write_it(cli, vault, vault_path):
    quiet(vault_path)
    a = cli.json("append", "Japan trip. Flights on JAL, June 3")["id"]
    b = cli.json("append", "Japan trip | ryokan in Kyoto")["id"]
    c = cli.json("append", "Japan trip = two weeks")["id"]
    rec = cli.json("merge", a, b, c, "--topic", "Japan trip:")["record"]  # the topic typed with its colon
    assert rec["text"] == "Japan trip: Flights on JAL, June 3 / ryokan in Kyoto / two weeks"
    assert rec["details"] == [
        "Japan trip. Flights on JAL, June 3",
        "Japan trip | ryokan in Kyoto",
        "Japan trip = two weeks",
    ]
    d = cli.json("append", "Kyoto trip: temples first")["id"]
    e = cli.json("append", "Kyoto trip: a day in Nara")["id"]
    rec = cli.json("merge", d, e, "--topic", "Kyoto trip", "--text", "Kyoto trip in July")["record"]
    assert rec["text"] == "Kyoto trip in July — temples first / a day in Nara"  # with --text, too
    f = cli.json("append", "Python 3.11 on staging")["id"]
    g = cli.json("append", "Python 3 everywhere else")["id"]
    rec = cli.json("merge", f, g, "--topic", "Python 3")["record"]
    assert rec["text"] == "Python 3: Python 3.11 on staging / everywhere else"  # "3.11" is no "3" then "11"


# -- 3. merge --suggest: only what merge accepts, about one subject -----------------------------------
@pytest.mark.long
def test_suggestions_are_only_groups_merge_accepts(cli, vault, vault_path):
    quiet(vault_path)
    ids = {}
    for name, text, args in [
        ("flight", "Japan trip: flights booked for June 3", ["--key", "trip.flight"]),
        ("hotel", "Japan trip: ryokan in Kyoto for two nights", ["--key", "trip.hotel"]),
        ("rail", "Japan trip: JR pass ordered", ["--key", "trip.rail"]),
        ("win", "Japan trip: laptop runs Windows", ["--key", "trip.laptop"]),  # two values of one key,
        ("mac", "Japan trip: laptop runs macOS", ["--key", "trip.laptop", "--basis", "inferred"]),  # one
        # inferred against what was said: a conflict
        ("guess", "Japan trip: maybe a day in Nara", ["--key", "trip.nara", "--confidence", "0.3"]),
        ("other", "Japan trip: the visa is not needed", ["--key", "trip.visa", "--domain", "elsewhere"]),
        ("rule", "Japan trip: never book without asking", ["--redline", "--origin", "user", "--tag", "japan"]),
        (
            "secret",
            "Japan trip: token ghp_abcdefghijklmnopqrstuvwxyz0123456789 for the booking site",
            ["--key", "trip.token", "--allow-unsafe"],
        ),
        ("a", "renovation: the kitchen starts Monday", ["--tag", "home"]),
        ("b", "renovation budget is 50k for the kitchen", ["--tag", "home"]),
        ("c", "renovation company is Red Star, kitchen first", ["--tag", "home"]),
    ]:
        ids[name] = cli.json("append", text, *args, "--on-similar", "store", "--on-update", "keep")["id"]
    assert cli.json("conflicts")["count"] == 1
    found = cli.json("merge", "--suggest")["suggestions"]
    groups = [set(s["ids"]) for s in found]
    assert {ids["flight"], ids["hotel"], ids["rail"]} in groups
    assert {ids["a"], ids["b"], ids["c"]} in groups
    traps = {ids[n] for n in ("win", "mac", "guess", "other", "rule", "secret")}
    assert not traps & set().union(*groups)
    for s in found:  # every suggestion is one merge accepts, with the topic it proposes
        merged = cli.json("merge", *s["ids"], "--topic", s["topic"])
        assert merged["fragments"] == s["ids"]
    assert [s["topic"] for s in found if ids["flight"] in s["ids"]] == ["Japan trip"]


@pytest.mark.long
def test_a_key_prefix_or_a_tag_alone_is_no_subject(cli, vault, vault_path):
    quiet(vault_path)
    for text, key in [
        ("Alice", "user.name"),
        ("Bob lives in Paris", "user.city"),
        ("Chen speaks Mandarin", "user.lang"),
    ]:
        cli.json("append", text, "--key", key)
    for text in ("renew the passport", "call the plumber", "pay the electricity bill"):
        cli.json("append", text, "--tag", "todo")
    assert cli.json("merge", "--suggest")["suggestions"] == []
    # a deeper prefix names the subject itself
    for text, key in [
        ("deadline is March 3", "proj.apollo.deadline"),
        ("owner is Li Wei", "proj.apollo.owner"),
        ("written in Rust", "proj.apollo.stack"),
    ]:
        cli.json("append", text, "--key", key)
    [s] = cli.json("merge", "--suggest")["suggestions"]
    assert "proj.apollo.*" in s["reason"] and len(s["ids"]) == 3


def test_suggestion_reasons_show_words_as_written(cli, vault, vault_path):
    quiet(vault_path)
    for text in (
        "Redis caching for the sessions service",
        "the sessions service drops Redis caching at night",
        "Redis caching TTL for sessions is 5 minutes",
    ):
        cli.json("append", text, "--on-similar", "store")
    for text in ("数据库迁移周一开始", "数据库要每天备份", "数据库密码每月轮换"):
        cli.json("append", text, "--tag", "db", "-d", "zh", "--on-similar", "store")
    for text in ("服务器重启", "服务器变慢", "服务器宕机"):  # one word, no label: no subject told apart
        cli.json("append", text, "-d", "ops", "--on-similar", "store")
    found = {s["reason"] for s in cli.json("merge", "--suggest")["suggestions"]}
    assert found == {
        "they share the words Redis, caching, sessions",  # not stems: cach, redi, session
        "they share the tag db and the word 数据库",
    }  # the run as written, not 数据, 据库


@pytest.mark.long
def test_people_who_like_different_things_are_no_subject_and_one_trip_is(cli, vault, vault_path):
    quiet(vault_path)
    for text, key in [
        ("Alice likes tea", "user.alice.drink"),
        ("Bob likes coffee", "user.bob.drink"),
        ("Carol likes mate", "user.carol.drink"),
    ]:
        cli.json("append", text, "--key", key)
    for text, key in [
        ("小明喜欢茶", "user.xiaoming.drink"),
        ("小红喜欢咖啡", "user.xiaohong.drink"),
        ("小刚喜欢马黛茶", "user.xiaogang.drink"),
    ]:  # the same in Chinese
        cli.json("append", text, "--key", key, "-d", "zh")
    # "drink" is only the keys' word (a label, not content), "likes" and 喜欢 only a verb they share
    assert cli.json("merge", "--suggest")["suggestions"] == []
    trip = [
        cli.json("append", text, "--key", key)["id"]
        for text, key in [
            ("Japan trip: flights booked for June 3", "trip.flight"),
            ("Japan trip: ryokan in Kyoto for two nights", "trip.hotel"),
            ("Japan trip: JR pass ordered", "trip.rail"),
        ]
    ]
    [s] = cli.json("merge", "--suggest")["suggestions"]
    assert s["ids"] == trip and s["reason"] == "they share the key prefix trip.* and the word Japan"


def test_a_suggestion_names_only_words_of_the_texts(cli, vault, vault_path):
    quiet(vault_path)
    for text, key in [
        ("Luna eats salmon kibble", "pet.food"),
        ("Luna's vet is Dr. Park", "pet.vet"),
        ("Luna gets her food warmed", "pet.habit"),
    ]:
        cli.json("append", text, "--key", key)
    [s] = cli.json("merge", "--suggest")["suggestions"]
    assert s["reason"] == "they share the key prefix pet.* and the word Luna"  # not "food": a key's word


# -- 5. help texts and the docs derived from the code -------------------------------------------------
def _registered() -> list[str]:
    """Every command and subcommand the CLI registers (each module imported, as --help does)."""
    import importlib

    from optmem.cli.spec import COMMANDS, REGISTRY

    for module, _ in COMMANDS.values():
        importlib.import_module(f"optmem.cli.{module.lstrip('@')}")
    return list(REGISTRY)


def commands_table() -> str:
    """The README's "All commands" table as the CLI's declarations give it."""
    from optmem.cli.spec import COMMANDS

    names = _registered()
    rows = ["| command | what it does |", "| --- | --- |"]
    for name, (module, short) in COMMANDS.items():
        subs = [n.split(" ", 1)[1] for n in names if n.startswith(name + " ")]
        shown = f"{name} {' | '.join(subs)}" if module.startswith("@") else name
        rows.append(f"| `optmem {shown.replace('|', chr(92) + '|')}` | {short} |")
    return "\n".join(rows)


def test_every_command_and_subcommand_is_in_the_readme_table():
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    section = readme.split("## All commands", 1)[1]
    table = "\n".join(line for line in section.split("\n\n", 2)[1].splitlines() if line.startswith("|"))
    assert table == commands_table(), "README's table should read:\n" + commands_table()
    for name in _registered():  # (the table is derived; this says which command a mismatch misses)
        head, _, sub = name.partition(" ")
        assert f"`optmem {head}" in table and sub in table, name


@pytest.mark.long
def test_help_texts_have_no_stray_markup(cli):
    from optmem.cli.spec import COMMANDS

    names = sorted(set(_registered()) | {n for n, (m, _) in COMMANDS.items() if m.startswith("@")})
    for name in names:
        out = cli(*name.split(), "--help")
        assert out.exit_code == 0, name
        usage = next(line for line in out.stdout.splitlines() if line.startswith("Usage:"))
        assert "{" not in usage and "}" not in usage, usage
        assert "\\b" not in out.stdout, name
        if " " not in name and not COMMANDS[name][0].startswith("@"):
            assert "Example:" in out.stdout, name  # every command's help shows one


@pytest.mark.long
def test_the_mcp_help_and_docs_list_every_tool_the_server_registers(cli):
    import asyncio
    import re
    from pathlib import Path

    from optmem.cli.mcpserve import server
    from optmem.integrations.mcp import TOOL_NAMES

    with server() as app:  # (what `optmem mcp` serves)
        assert [t.name for t in asyncio.run(app.list_tools())] == list(TOOL_NAMES)
    help_text = " ".join(cli("mcp", "--help").stdout.split())
    assert f"Tools: {', '.join(TOOL_NAMES)} —" in help_text
    page = (Path(__file__).resolve().parent.parent / "docs" / "agents.md").read_text("utf-8")
    sentence = page.split("The MCP server (`optmem mcp`", 1)[1].split(" exposes ", 1)[1].split(", and creates", 1)[0]
    assert re.findall(r"`([a-z_]+)`", sentence) == list(TOOL_NAMES), sentence


def test_doctor_names_init_for_the_merge_driver(cli, vault, vault_path):
    (vault_path / "MEMORY.md").write_text("one\n§\n<<<<<<< ours\ntwo\n=======\nthree\n>>>>>>> theirs\n", "utf-8")
    [problem] = [p for p in cli.json("doctor", code=1)["problems"] if p["code"] == "merge_conflict"]
    assert "optmem init" in problem["message"] and "hooks install" not in problem["message"]


# -- 6. doctor: a hand-typed line without ts -----------------------------------------------------------
@pytest.mark.long
def test_doctor_fix_stamps_a_hand_line_without_ts_and_keeps_its_id(cli, vault, vault_path, monkeypatch):
    import os
    from datetime import datetime

    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2026-04-01T00:00:00Z")
    cli.json("append", "the backend port is 8080")
    hand = b'{"text": "[hermes] the deploy window is Tuesday 10:00", "tags": ["ops"]}\n'
    with open(vault.log_path, "ab") as fh:
        fh.write(hand)
    [hit] = cli.json("search", "deploy window")["hits"]
    rid = hit["id"]
    fix = cli.json("correct", rid, "the deploy window is Wednesday 10:00")["id"]  # a reference to it
    problems = cli.json("doctor", code=1)["problems"]
    assert [p["code"] for p in problems] == ["missing_field"] and problems[0]["id"] == rid
    assert 'add "ts"' in problems[0]["message"] and "optmem doctor --fix" in problems[0]["message"]
    written = datetime(2026, 3, 1, 12, 0, tzinfo=UTC).timestamp()
    os.utime(vault.log_path, (written, written))  # when the log was last written
    before = vault.log_path.read_bytes().splitlines(keepends=True)
    out = cli.json("doctor", "--fix")
    assert out["ok"] and any("2026-03-01T12:00:00Z" in f and "ts" in f for f in out["fixed"])
    after = vault.log_path.read_bytes().splitlines(keepends=True)
    assert [a for a, b in zip(after, before) if a != b] == [after[1]]  # only that line changed
    assert json.loads(after[1]) == {
        "id": rid,
        "ts": "2026-03-01T12:00:00Z",
        "text": "[hermes] the deploy window is Tuesday 10:00",
        "tags": ["ops"],
    }
    [kept] = [json.loads(line) for line in (vault_path / "LOG.quarantine.jsonl").read_text("utf-8").splitlines()]
    assert kept["line"] == 2 and kept["raw"].encode("utf-8") + b"\n" == hand  # the exact bytes
    assert cli.json("doctor")["ok"]
    got = cli.json("get", rid)["record"]
    assert got["ts"] == "2026-03-01T12:00:00Z" and got["domain"] == "hermes" and got["superseded_by"] == fix
    assert cli.json("search", "deploy window")["hits"][0]["id"] == fix


def test_doctor_fix_stamps_now_when_the_log_was_written_later(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2001-01-01T00:00:00Z")  # before the file's own time
    with open(vault.log_path, "ab") as fh:
        fh.write(b'{"id": "01HAND0000000000000000000A", "text": "typed with an id, without a time"}\n')
    cli.json("doctor", "--fix")
    assert cli.json("get", "01HAND0000000000000000000A")["record"]["ts"] == "2001-01-01T00:00:00Z"
    assert cli.json("doctor")["ok"]


def test_touch_of_a_bookkeeping_line_is_a_refusal(cli, vault, vault_path):
    quiet(vault_path)
    first = cli.json("append", "the repo uses pnpm")["id"]
    cli.json("append", "the repo uses pnpm")
    [seen] = [r["id"] for r in log_lines(vault_path) if r.get("kind") == "seen"]
    err = cli.json("touch", seen, code=1)["error"]
    assert err["code"] == "bookkeeping_line" and err["ref"] == first


def test_doctor_tells_a_text_of_the_wrong_type_from_a_missing_one(cli, vault, vault_path):
    """A hand-typed `"text": 42` is there — as a number: doctor says so and how to write it,
    rather than calling the record textless."""
    quiet(vault_path)
    with open(vault.log_path, "ab") as fh:
        fh.write(b'{"ts": "2026-01-02T00:00:00Z", "text": 42}\n{"ts": "2026-01-02T00:00:01Z"}\n')
    first, second = cli.json("doctor", code=1)["problems"]
    assert first["code"] == second["code"] == "missing_field"
    assert "a text that is a number (42), not a string" in first["message"]
    assert 'write its "text" as a string ("42")' in first["message"] and "no text" not in first["message"]
    assert "has no text" in second["message"]
