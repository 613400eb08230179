"""One truth on every surface (issue 30): what a record *is* — its effective state — is what
`get`, `search`, `context`, `conflicts` and `stats` say; what the write gate only guessed reads as
a question. Each test here failed on the code before it."""

from __future__ import annotations

import json

import pytest
from conftest import log_lines, run_optmem


def quiet(vault_path, *more: str) -> None:
    vault_path.mkdir(parents=True, exist_ok=True)
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n' + "".join(more), "utf-8")


# -- get: the effective state, what it was written as under `written` --------------------------
def test_a_confirmed_guess_reads_as_current_not_pending(cli, vault_path):
    quiet(vault_path)
    guess = cli.json("append", "小明可能喜欢深色主题", "--confidence", "0.4")["id"]
    assert cli.json("get", guess)["record"]["pending"] is True
    confirmation = cli.json("confirm", guess)
    got = cli.json("get", guess)["record"]
    assert (got["status"], got["pending"]) == ("current", False)
    assert got["written"] == {"pending": True, "confidence": 0.4}  # what it said when written
    assert [e["event"] for e in got["events"]] == ["confirmed"]
    assert got["events"][0]["id"] == confirmation["confirmation"]  # the confirmation line
    assert "written as a guess" in cli("get", guess).stdout


def test_a_guess_said_again_by_another_voice_reads_as_current(cli, vault_path):
    quiet(vault_path)
    first = cli.json("append", "Maybe the user prefers tabs", "--confidence", "0.4", "--session", "s1")["id"]
    again = cli.json("append", "Maybe the user prefers tabs", "--session", "s2")  # stated, not guessed
    assert again["confirmed"] == [first]
    got = cli.json("get", first)["record"]
    assert (got["status"], got["pending"], got["written"]["pending"]) == ("current", False, True)
    assert [e["event"] for e in got["events"]] == ["said_again"]
    # … and as a near duplicate
    near = cli.json(
        "append", "Maybe the user prefers dark mode in the editor", "--confidence", "0.4", "--session", "s1"
    )["id"]
    again = cli.json("append", "Maybe the user really prefers dark mode in the editor", "--session", "s2")
    assert near in again["confirmed"]
    assert cli.json("get", near)["record"]["pending"] is False


# -- keyed facts: the newer value supersedes, as `append --help` says --------------------------
def test_a_keyed_value_changed_the_same_day_supersedes_the_older_one(cli, vault_path):
    quiet(vault_path)
    old = cli.json("append", "backend port is 8080", "--key", "backend.port")["id"]
    new = cli.json("append", "backend port is 9090", "--key", "backend.port")
    assert new["conflict_with"] == [] and new["record"]["conflict"] is False
    assert cli.json("get", old)["record"]["superseded_by"] == new["id"]
    assert cli.json("conflicts")["count"] == 0
    assert "Ask the user" not in cli.json("context")["text"]
    assert "a newer record with the same key supersedes it" in cli("append", "--help").stdout


def test_a_write_that_makes_a_conflict_says_so_and_get_names_the_other_value(cli, vault_path):
    quiet(vault_path, "[consolidation]\nconflict_window_days = 1\n")  # the article's rule, opted into
    win = cli.json("append", "prefers Windows", "--key", "user.os")["id"]
    out = cli("append", "prefers Mac", "--key", "user.os")
    mac = out.stdout.strip()
    assert f"is in conflict with {win}" in out.stderr and "optmem resolve user.os" in out.stderr
    assert cli.json("get", win)["record"]["conflict_with"] == [mac]
    assert cli.json("get", mac)["record"]["conflict_with"] == [win]
    assert f"in CONFLICT with {win[-8:]}" in cli("get", mac).stdout
    said = cli.json("append", "prefers Linux", "--key", "user.os")
    assert said["conflict_with"] == [win, mac]


def test_an_inference_against_a_statement_is_a_conflict_get_names(cli, vault_path):
    quiet(vault_path)
    said = cli.json("append", "likes to hike on weekends", "--key", "user.outdoors")["id"]
    guessed = cli.json("append", "is an outdoors person", "--key", "user.outdoors", "--basis", "inferred")
    assert guessed["conflict_with"] == [said]
    assert cli.json("get", said)["record"]["conflict_with"] == [guessed["id"]]


# -- a fact corrected two ways is a conflict, whatever its kind --------------------------------
def two_clones_corrected(vault_path, base: str) -> None:
    """What git's union merge leaves when two clones corrected one record."""
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        for day, text in (("2026-03-02", "the release branch is rel-2"), ("2026-03-09", "the release branch is rel-3")):
            fh.write(
                json.dumps(
                    {
                        "ts": f"{day}T00:00:00Z",
                        "domain": "default",
                        "kind": "correction",
                        "corrects": [base],
                        "text": text,
                    }
                )
                + "\n"
            )


def forked(cli, vault_path, monkeypatch) -> str:
    """A record two clones corrected (git merged both corrections); its id."""
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-01T00:00:00Z")
    base = cli.json("append", "the release branch is rel-1")["id"]
    two_clones_corrected(vault_path, base)
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-10T00:00:00Z")
    return base


def test_two_corrections_of_one_unkeyed_record_are_a_conflict_asked_and_resolved(cli, vault_path, monkeypatch):
    base = forked(cli, vault_path, monkeypatch)
    [c] = cli.json("conflicts")["conflicts"]
    assert (c["key"], c["fact"]) == (None, base)
    two, three = [v["id"] for v in c["values"]]
    assert [v["text"] for v in c["values"]] == ["the release branch is rel-2", "the release branch is rel-3"]
    assert cli.json("get", two)["record"]["conflict_with"] == [three]
    hits = cli.json("search", "release branch")["hits"]
    assert {h["id"]: h.get("conflict") for h in hits if h["status"] == "current"} == {two: True, three: True}
    ctx = cli.json("context")["text"]
    assert f"id {base[-8:]} was corrected two ways" in ctx and f"optmem resolve {base[-8:]} --keep ID" in ctx
    assert cli.json("stats")["contradictions"] == 1
    done = cli.json("resolve", base[-8:], "--keep", three)
    assert done["kept"] == three and sorted(done["superseded"]) == sorted([two, three])
    assert cli.json("conflicts")["count"] == 0 and cli.json("stats")["contradictions"] == 0
    assert [h["text"] for h in cli.json("search", "release branch", "--current")["hits"]] == [
        "the release branch is rel-3"
    ]


def test_forgetting_one_of_two_corrections_leaves_the_record_corrected_by_the_other(cli, vault_path, monkeypatch):
    base = forked(cli, vault_path, monkeypatch)
    three = cli.json("search", "rel-3")["hits"][0]["id"]
    cli.json("forget", three)
    got = cli.json("get", base)["record"]
    assert got["status"] == "superseded" and got["superseded_by"] != three  # rel-2 still corrects it
    assert cli.json("conflicts")["count"] == 0  # one current version left
    assert [h["text"] for h in cli.json("search", "release branch", "--current")["hits"]] == [
        "the release branch is rel-2"
    ]


# -- hot memory: the journal follows the files; replacements name their successor -------------
def test_an_outside_edit_of_memory_md_is_what_search_sees(cli, vault_path):
    quiet(vault_path)
    cli.json("add", "Python version is 3.13")
    (vault_path / "MEMORY.md").write_text("Python version is 3.12\n§\npnpm 9 is the package manager\n", "utf-8")
    hits = cli.json("search", "pnpm")["hits"]
    assert [(h["text"], h["status"]) for h in hits] == [("pnpm 9 is the package manager", "current")]
    ranked = [(h["text"], h["status"]) for h in cli.json("search", "python version")["hits"]]
    assert ranked[0] == ("Python version is 3.12", "current")
    assert ("Python version is 3.13", "removed") in ranked  # edited out: removed (no journal says by what)
    journal = [r for r in log_lines(vault_path) if r.get("source") == "drift"]
    assert {(r["op"], r["text"]) for r in journal} == {
        ("add", "Python version is 3.12"),
        ("add", "pnpm 9 is the package manager"),
        ("remove", "Python version is 3.13"),
    }
    assert cli.json("search", "pnpm")["hits"][0]["id"] == hits[0]["id"]  # journalled once


def test_an_entry_put_back_by_hand_is_no_longer_shown_as_removed(cli, vault_path):
    quiet(vault_path)
    cli.json("add", "下周末计划去爬山。")
    cli.json("remove", "爬山")
    (vault_path / "MEMORY.md").write_text("下周末计划去爬山。\n", "utf-8")
    hits = cli.json("search", "爬山")["hits"]
    assert [(h["text"], h["status"]) for h in hits] == [("下周末计划去爬山。", "current")]
    assert "REMOVED" not in cli("search", "爬山").stdout


@pytest.mark.long
def test_a_replaced_entry_names_its_successor_under_a_fixed_clock(vault_path):
    # separate processes under one fixed OPTMEM_NOW make ids whose random part says nothing of
    # their order: the log's order decides
    env = {"OPTMEM_NOW": "2026-05-01T10:00:00Z"}
    quiet(vault_path)
    for i in range(6):
        assert run_optmem("add", f"第{i}个周末计划去爬山。", env=env).returncode == 0
        assert run_optmem("replace", f"第{i}个周末", f"第{i}个周日", env=env).returncode == 0
    hits = json.loads(run_optmem("search", "爬山", "--limit", "20", "--json", env=env).stdout)["hits"]
    by_text = {h["text"]: h for h in hits}
    for i in range(6):
        old, new = by_text[f"第{i}个周末计划去爬山。"], by_text[f"第{i}个周日计划去爬山。"]
        assert (new["status"], old["status"], old["superseded_by"]) == ("current", "superseded", new["id"])


# -- guesses stay guesses --------------------------------------------------------------------
def test_a_possible_update_is_no_contradiction(cli, vault_path, monkeypatch):
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-01T10:00:00Z")
    cli.json("append", "I have 3 monstera plants at home")
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-03T10:00:00Z")
    assert cli.json("append", "I now have 5 monstera plants at home")["possible_update"]
    stats = cli.json("stats")
    assert (stats["contradictions"], stats["contradiction_rate"], stats["open_updates"]) == (0, 0.0, 1)


# -- found by an independent review ----------------------------------------------------------
def clone_corrects(vault_path, base: str, text: str, day: str, **fields) -> None:
    """A correction made on another clone, as git's union merge appends it."""
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write(
            json.dumps(
                {
                    "ts": f"{day}T10:00:00Z",
                    "domain": "default",
                    "kind": "correction",
                    "corrects": [base],
                    "text": text,
                    **fields,
                }
            )
            + "\n"
        )


@pytest.mark.long
def test_a_fact_corrected_two_ways_is_one_conflict_whatever_the_domain_or_key(cli, vault_path, monkeypatch):
    for extra in ({"domain": "ops"}, {"key": "staging.ip"}):
        quiet(vault_path)
        monkeypatch.setenv("OPTMEM_NOW", "2026-03-01T10:00:00Z")
        base = cli.json("append", f"the staging server is at 10.0.0.5 {extra}")["id"]
        here = cli.json("correct", base, f"the staging server is at 10.0.0.6 {extra}")["id"]
        clone_corrects(vault_path, base, f"〔更正〕the staging server is at 10.0.0.7 {extra}", "2026-03-02", **extra)
        monkeypatch.setenv("OPTMEM_NOW", "2026-03-03T10:00:00Z")
        [c] = cli.json("conflicts")["conflicts"]
        there = next(v["id"] for v in c["values"] if v["id"] != here)
        assert (c["fact"], {v["id"] for v in c["values"]}) == (base, {here, there})
        assert cli.json("get", here)["record"]["conflict_with"] == [there]
        assert cli.json("get", there)["record"]["conflict_with"] == [here]
        assert cli.json("stats")["contradictions"] == 1
        assert f"optmem resolve {base[-8:]}" in cli.json("context")["text"]
        err = cli.json("correct", base, "the staging server is at 10.0.0.9", code=1)["error"]
        assert err["code"] == "superseded" and f"optmem resolve {base[-8:]}" in err["message"]
        cli.json("resolve", base, "--keep", there)
        assert cli.json("conflicts")["count"] == 0
        import shutil

        shutil.rmtree(vault_path)


def test_a_keyed_guess_waits_for_review_and_supersedes_nothing(cli, vault_path, monkeypatch):
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-01T10:00:00Z")
    said = cli.json("append", "backend port is 8080", "--key", "backend.port")["id"]
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-02T10:00:00Z")
    guess = cli.json("append", "backend port is 9090", "--key", "backend.port", "--confidence", "0.3")["id"]
    got = cli.json("get", guess)["record"]
    assert (got["status"], got["pending"], got["superseded_by"]) == ("pending", True, None)
    assert cli.json("get", said)["record"]["status"] == "current"
    assert [w["id"] for w in cli.json("pending")["pending"]] == [guess]
    cli.json("confirm", guess)  # now it is said for sure: the newer value of its key
    assert cli.json("get", said)["record"]["superseded_by"] == guess


def test_a_guess_gone_cold_is_still_a_guess_on_every_surface(cli, vault_path, monkeypatch):
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2025-01-02T10:00:00Z")
    guess = cli.json("append", "postgres backups may run nightly", "--confidence", "0.3")["id"]
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-01T10:00:00Z")
    cli.json("sweep")
    got = cli.json("get", guess)["record"]
    assert (got["status"], got["pending"]) == ("cold", True)
    assert "still a guess" in cli("get", guess).stdout and "no longer one" not in cli("get", guess).stdout
    [hit] = cli.json("search", "backups nightly")["hits"]
    assert (hit["status"], hit.get("pending")) == ("cold", True)
    assert "[COLD; PENDING]" in cli("search", "backups nightly").stdout


def test_merging_a_keys_current_value_never_brings_its_older_value_back(cli, vault_path, monkeypatch):
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-01T10:00:00Z")
    may = cli.json("append", "trip month is May", "--key", "trip.month")["id"]
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-02T10:00:00Z")
    june = cli.json("append", "trip month is June", "--key", "trip.month")["id"]
    notes = [cli.json("append", text)["id"] for text in ("Japan trip: ryokan in Kyoto", "Japan trip: JR pass")]
    merged = cli.json("merge", june, *notes, "--topic", "Japan trip")["id"]
    assert cli.json("get", may)["record"]["status"] == "superseded"
    assert [h["id"] for h in cli.json("search", "trip month", "--current")["hits"]] == [merged]
    assert "trip month is May" not in cli.json("context")["text"]


def test_get_of_a_hand_typed_line_with_odd_field_types_never_crashes(cli, vault_path):
    quiet(vault_path)
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"id":"01KJMDEB80AAAAAAAAAAAAAAA7","ts":"2026-03-01T09:00:00Z","text":"x","may_update":5}\n')
        fh.write(
            '{"id":"01KJMDEB80AAAAAAAAAAAAAAA8","ts":"2026-03-01T09:00:00Z","text":"y","kind":"merged",'
            '"facts":[1,2],"fragments":"abc","details":7}\n'
        )
    for rid in ("AAAAAAA7", "AAAAAAA8"):
        out = cli("get", rid)
        assert out.exit_code == 0 and "internal error" not in out.stderr, out.stderr


def test_a_guess_repeated_by_another_agent_is_counted_and_stated_it_is_a_fact(cli, vault_path):
    quiet(vault_path)
    first = cli.json("append", "the user may prefer dark mode", "--confidence", "0.4", "-d", "hermes")["id"]
    again = cli.json("append", "the user may prefer dark mode", "--confidence", "0.4", "-d", "openclaw")
    assert again["confirmed"] == [] and cli.json("get", first)["record"]["status"] == "pending"  # issue 44
    said = cli.json("append", "the user may prefer dark mode", "-d", "openclaw")
    assert said["confirmed"] == [first] and cli.json("get", first)["record"]["status"] == "current"


def test_human_stats_say_what_the_contradiction_rate_counts(cli, vault_path, monkeypatch):
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-01T10:00:00Z")
    cli.json("append", "I have 3 monstera plants at home")
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-03T10:00:00Z")
    cli.json("append", "I now have 5 monstera plants at home")
    assert "0 open conflict(s); 1 possible update(s)" in cli("stats").stdout


def test_superseded_by_names_the_newer_correction_whatever_the_line_order(cli, vault_path, monkeypatch):
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-01T10:00:00Z")
    base = cli.json("append", "the staging server is at 10.0.0.5")["id"]
    # git's union merge may put the other clone's later correction before this clone's earlier one
    clone_corrects(vault_path, base, "the staging server is at 10.0.0.7", "2026-03-05", id="01KJZZZZZZ7777777777777777")
    clone_corrects(vault_path, base, "the staging server is at 10.0.0.6", "2026-03-02", id="01KJAAAAAA6666666666666666")
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-06T10:00:00Z")
    assert cli.json("get", base)["record"]["superseded_by"] == "01KJZZZZZZ7777777777777777"


def test_a_secret_typed_into_memory_md_is_not_copied_into_the_log_when_followed(cli, vault_path):
    quiet(vault_path)
    cli.json("add", "deploys go out on Fridays")
    token = "ghp_" + "a1b2c3d4e5" * 4
    (vault_path / "MEMORY.md").write_text(f"deploys go out on Fridays\n§\nthe CI token is {token}\n", "utf-8")
    cli.json("search", "deploys")  # the read follows the file: the new entry is journalled …
    assert token not in (vault_path / "LOG.jsonl").read_text("utf-8")  # … as its placeholder
    assert any(r.get("op") == "add" and r["text"].startswith("[BLOCKED:") for r in log_lines(vault_path))
    assert token in (vault_path / "MEMORY.md").read_text("utf-8")  # the file keeps it, to be removed there


def test_correct_by_words_takes_the_one_record_holding_every_word_and_lists_projects(cli, vault, vault_path):
    # tester 10, fix-m 7: refused as ambiguous with four candidates, though one held every word
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    zeta = cli.json("append", "zeta service deploy port is 7001", "-p", "zeta")["id"]
    cli.json("append", "zeta service owner is Alice", "-p", "zeta")
    cli.json("append", "eta service deploy port is 7002", "-p", "eta")
    cli.json("append", "zeta deploy runs on fridays", "-p", "zeta")
    cli.json("append", "theta service deploy port is 7003", "-p", "theta")
    assert cli.json("correct", "zeta service deploy port", "zeta service deploy port is 7005")["corrects"] == zeta
    # words several records hold are still ambiguous: each candidate says where it is
    out = cli("correct", "service deploy port", "some service deploy port is 1")
    assert out.exit_code == 1 and "(default/eta)" in out.stderr and "(default/theta)" in out.stderr
    err = cli.json("correct", "service deploy port", "some service deploy port is 1", code=1)["error"]
    assert {c["project"] for c in err["candidates"]} >= {"eta", "theta"}


def test_correct_by_words_reads_a_word_whole_not_inside_another(cli, vault, vault_path):
    # review fix-m2 6: "port" was found inside "reporting", so that note held "every word" and was corrected
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    cli.json("append", "redis listens on 6379 on the cache host")
    report = cli.json("append", "the reporting job reads the redis cluster")["id"]
    err = cli.json("correct", "redis port", "redis listens on 6380 on the cache host", code=1)["error"]
    assert err["code"] == "ambiguous"
    assert cli.json("get", report)["record"]["status"] == "current"
    # Chinese has no spaces: a term is looked for within the text
    port = cli.json("append", "缓存服务的端口是 6379")["id"]
    cli.json("append", "缓存服务的负责人是小王")
    assert cli.json("correct", "缓存服务的端口", "缓存服务的端口是 6380")["corrects"] == port


ODD_IDS = ["note1", "mynote000001", "MYNOTE000001", "01KJMDEB80AAAAAAAAAAAAAAA7", "01KJMDEB80BBBBBBBBBBBBBBB7", "ab"]
REFS = ["note1", "NOTE1", "#note1", "mynote000001", "MYNOTE000001", "myNote", "01KJMDEB80", "AAAAAAA7",
        "aaaaaaa7", "BBBBBBB7", "ab", "AB", "note", "ZZZZZZZZ", "01KJMD", "000001", "myNote000001"]  # fmt: skip


def test_a_typed_id_names_one_record_wherever_it_is_looked_up(vault_path):
    """One rule turns a typed id into a record (`record.Ids`): the index's (`get`, a correction's
    link), `doctor`'s and an import's find the same record for every reference — a whole id of
    any length (an id shorter than 6 characters was found by `doctor` and never by the index), the
    id as typed before its upper case, ≥ 6 characters of its start or end."""
    from optmem.index import open_index
    from optmem.ingest import matching_ids
    from optmem.record import Ids
    from optmem.vault import Vault

    quiet(vault_path)
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        for rid in ODD_IDS:
            fh.write(json.dumps({"id": rid, "ts": "2026-03-01T09:00:00Z", "text": f"x {rid}"}) + "\n")
    ids = Ids(ODD_IDS)
    with open_index(Vault(vault_path)) as idx:
        for ref in REFS:
            assert sorted(ids.named(ref)) == sorted(matching_ids(idx.conn, ref, 50)), ref
    assert ids.named("note1") == ["note1"] and ids.named("MYNOTE000001") == ["MYNOTE000001"]
    assert ids.named("myNote000001") == ["MYNOTE000001"] and ids.named("note") == []
    assert ids.named("01KJMDEB80") == ["01KJMDEB80AAAAAAAAAAAAAAA7", "01KJMDEB80BBBBBBBBBBBBBBB7"]


def test_a_reference_naming_several_records_names_none_on_every_surface(cli, tmp_path, vault_path):
    """What each surface does with a reference: one record named → the index links it, `doctor`
    and an import accept it; none → `dangling_ref`; several (two ids sharing their first 10
    characters: written in one millisecond) → nothing is linked, `doctor` reports
    `ambiguous_ref` naming the candidates, an import refuses the line for that reason. The index
    took the one an ambiguous ref listed first, or none; `doctor` and an import the first."""
    from optmem.index import open_index
    from optmem.record import Ids
    from optmem.vault import Vault

    quiet(vault_path)
    fixes = {ref: f"01KJNCQQQQQQQQQQQQQQQQQQ{chr(66 + i // 20)}{chr(66 + i % 20)}" for i, ref in enumerate(REFS)}
    lines = [{"id": rid, "ts": "2026-03-01T09:00:00Z", "text": f"x {rid}"} for rid in ODD_IDS]
    lines += [
        {"id": fid, "ts": "2026-03-02T09:00:00Z", "text": f"y {ref}", "kind": "correction", "corrects": [ref]}
        for ref, fid in fixes.items()
    ]
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(x) + "\n" for x in lines)
    named = {ref: Ids([*ODD_IDS, *fixes.values()]).named(ref) for ref in REFS}
    assert {len(n) for n in named.values()} == {0, 1, 2}  # each case is met
    problems = {p["id"]: p for p in cli.json("doctor", code=None)["problems"]}
    with open_index(Vault(vault_path)) as idx:
        linked = dict(
            idx.conn.execute("SELECT s.id, t.id FROM cor JOIN rec s ON s.n = cor.s JOIN rec t ON t.n = cor.t")
        )
    export = tmp_path / "dump.jsonl"
    export.write_text(cli("export").stdout, "utf-8")
    refused = {b["line"]: b for b in cli.json("--vault", str(tmp_path / "other"), "import", str(export))["bad"]}
    for i, (ref, fid) in enumerate(fixes.items()):
        there = named[ref]
        assert linked.get(fid) == (there[0] if len(there) == 1 else None), ref
        code = {0: "dangling_ref", 1: None, 2: "ambiguous_ref"}[len(there)]
        assert (problems[fid]["code"] if fid in problems else None) == code, ref
        assert (refused[i + len(ODD_IDS) + 2]["code"] if i + len(ODD_IDS) + 2 in refused else None) == code, ref
        if len(there) > 1:
            for message in (problems[fid]["message"], refused[i + len(ODD_IDS) + 2]["message"]):
                assert all(rid in message for rid in there) and "whole id" in message, message


def test_a_hand_typed_correction_of_an_ambiguous_prefix_replaces_nothing_and_doctor_says_so(cli, vault_path):
    """Two appends in one millisecond share their first 10 characters; a correction typed by
    hand naming the first 8: nothing is replaced (both values stand), and `doctor` says why
    (it said "no problems") and how to fix it."""
    quiet(vault_path)
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"id":"01KJMDEB80AAAAAAAAAAAAAAA7","ts":"2026-03-01T09:00:00Z","text":"the port is 1"}\n')
        fh.write('{"id":"01KJMDEB80BBBBBBBBBBBBBBB7","ts":"2026-03-01T09:00:00Z","text":"the host is h"}\n')
        fh.write(
            '{"id":"01KJMF00000000000000000000","ts":"2026-03-02T09:00:00Z","text":"the port is 2",'
            '"kind":"correction","corrects":["01KJMDEB"]}\n'
        )
    report = cli.json("doctor", code=1)
    assert [p["code"] for p in report["problems"]] == ["ambiguous_ref"]
    said = report["problems"][0]["message"]
    assert "01KJMDEB80AAAAAAAAAAAAAAA7" in said and "01KJMDEB80BBBBBBBBBBBBBBB7" in said and "whole id" in said
    assert cli.json("get", "01KJMDEB80AAAAAAAAAAAAAAA7")["record"]["status"] == "current"
    assert "ambiguous_ref" in cli("doctor").stdout


def test_a_short_hand_typed_id_is_found_and_corrected_as_doctor_finds_it(cli, vault_path):
    """A line typed by hand with an id of 5 characters: `doctor` found the record its correction
    names, the index did not (the correction replaced nothing, `get note1` found nothing)."""
    quiet(vault_path)
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"id":"note1","ts":"2026-03-01T09:00:00Z","text":"the port is 80"}\n')
        fh.write(
            '{"id":"01KJMDEB80AAAAAAAAAAAAAAA7","ts":"2026-03-02T09:00:00Z","text":"the port is 81",'
            '"kind":"correction","corrects":["note1"]}\n'
        )
    assert cli.json("doctor")["ok"]
    got = cli.json("get", "note1")["record"]
    assert got["status"] == "superseded" and got["superseded_by"] == "01KJMDEB80AAAAAAAAAAAAAAA7"


def test_a_vault_doctor_accepts_exports_a_dump_that_imports_whole(cli, tmp_path, vault_path):
    """Export → import round-trips any vault `doctor` passes: a hand-typed id of 2 or 5
    characters was refused by the import (`bad_value`: 6 to 64), though the log, `doctor` and
    every reference take it. An id no reference can name (a space in it) is reported by `doctor`
    as the import refuses it."""
    quiet(vault_path)
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"id":"ab","ts":"2026-03-01T09:00:00Z","text":"the host is h"}\n')
        fh.write('{"id":"note1","ts":"2026-03-01T09:00:00Z","text":"the port is 80"}\n')
        fh.write(
            '{"id":"fix.1","ts":"2026-03-02T09:00:00Z","text":"the port is 81",'
            '"kind":"correction","corrects":["note1"]}\n'
        )
    assert cli.json("doctor")["ok"]
    dump = tmp_path / "dump.jsonl"
    dump.write_text(cli("export").stdout, "utf-8")
    other = ("--vault", str(tmp_path / "other"))
    done = cli.json(*other, "import", str(dump))
    assert (done["records"], done.get("bad", [])) == (3, []), done
    assert cli.json(*other, "get", "note1")["record"]["superseded_by"] == "fix.1"
    assert cli.json(*other, "doctor")["ok"]

    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"id":"my note","ts":"2026-03-03T09:00:00Z","text":"the user is u"}\n')
    problems = cli.json("doctor", code=1)["problems"]
    assert [(p["code"], p["id"]) for p in problems] == [("bad_value", "my note")], problems
    dump.write_text(cli("export").stdout, "utf-8")
    done = cli.json("--vault", str(tmp_path / "third"), "import", str(dump))
    assert [(b["code"], b["field"]) for b in done["bad"]] == [("bad_value", "id")]
