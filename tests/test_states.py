"""What a record is, at the edges of the state machine (issue 44, part 2): agreement between
guesses is still a guess, a settled value is in conflict nowhere, a removed hot entry reads
`removed` (when, by what) — never `superseded` by nobody —, and doctor advises what works on a
hot file git left mid-merge. Each test here failed on the code before it."""

from __future__ import annotations

import json


def quiet(vault_path, *more: str) -> None:
    vault_path.mkdir(parents=True, exist_ok=True)
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n' + "".join(more), "utf-8")


# -- two guesses do not make a fact ---------------------------------------------------------------
GUESS = "The user probably prefers dark mode in the editor"


def test_two_agents_guessing_the_same_leave_it_a_guess(cli, vault, vault_path):
    quiet(vault_path)
    first = cli.json("append", GUESS, "--confidence", "0.3", "-d", "hermes", "--session", "h1")
    assert first["record"]["status"] == "pending"
    gid = first["id"]
    # another agent, another conversation, the same words, as unsure: a second guess, not a fact
    again = cli.json("append", GUESS, "--confidence", "0.3", "-d", "openclaw", "--session", "o1")
    assert again["confirmed"] == [] and again["duplicate_of"] == gid
    # … nor a near duplicate of it, nor an inference however sure
    near = cli.json("append", GUESS + " at night", "--confidence", "0.3", "-d", "claude", "--session", "c1")
    assert near["confirmed"] == []
    got = cli.json("get", gid)["record"]
    assert (got["status"], got["pending"]) == ("pending", True)
    assert "dark mode" not in cli.json("context")["text"]
    [waiting] = [w for w in cli.json("pending")["pending"] if w["id"] == gid]
    assert waiting["restated"] >= 1  # counted, still waiting: the review queue shows the agreement
    hit = next(h for h in cli.json("search", "dark mode editor")["hits"] if h["id"] == gid)
    assert hit["status"] == "pending"
    inferred = cli.json("append", GUESS, "--basis", "inferred", "-d", "cursor", "--session", "x1")
    assert inferred["confirmed"] == [] and cli.json("get", gid)["record"]["status"] == "pending"
    # the user says it: a statement confirms it
    said = cli.json("append", GUESS, "--session", "u1")
    assert gid in said["confirmed"]
    assert cli.json("get", gid)["record"]["status"] == "current"
    assert "dark mode" in cli.json("context")["text"]


def test_a_guess_agreed_on_by_agents_is_made_a_fact_by_confirm(cli, vault, vault_path):
    quiet(vault_path)
    gid = cli.json("append", GUESS, "--agent", "-d", "hermes", "--session", "h1")["id"]
    cli.json("append", GUESS, "--agent", "-d", "openclaw", "--session", "o1")
    assert cli.json("get", gid)["record"]["status"] == "pending"
    assert cli.json("confirm", gid)["status"] == "confirmed"
    assert cli.json("get", gid)["record"]["status"] == "current"


def test_the_policy_only_a_statement_confirms_a_guess():
    from optmem import view

    assert view.confirms(restater_sure=True, inferred=False)
    assert not view.confirms(restater_sure=False, inferred=False)  # a guess, in any conversation or domain
    assert not view.confirms(restater_sure=True, inferred=True)  # an agent's conclusion


# -- a settled value is in conflict nowhere -------------------------------------------------------
def test_a_resolution_is_in_conflict_on_no_surface(cli, vault, vault_path, monkeypatch):
    quiet(vault_path, "[consolidation]\nconflict_window_days = 1\n")
    monkeypatch.setenv("OPTMEM_NOW", "2026-05-10T09:00:00Z")
    win = cli.json("append", "the user prefers Windows", "--key", "user.os")["id"]
    monkeypatch.setenv("OPTMEM_NOW", "2026-05-10T15:00:00Z")
    mac = cli.json("append", "the user prefers Mac", "--key", "user.os")["id"]
    assert cli.json("get", win)["record"]["conflict"] is True  # the conflict before
    monkeypatch.setenv("OPTMEM_NOW", "2026-05-10T16:00:00Z")
    out = cli("resolve", "user.os", "--keep", mac, "--json")
    assert out.exit_code == 0 and "conflict" not in out.stderr
    done = json.loads(out.stdout)
    assert done["record"]["conflict"] is False
    got = cli.json("get", done["id"])
    assert got["record"]["status"] == "current" and got["record"]["conflict"] is False
    assert got["record"]["conflict_with"] == []
    assert "CONFLICT" not in cli("get", done["id"]).stdout
    hits = cli.json("search", "user prefers")["hits"]
    assert [h["id"] for h in hits if h.get("conflict")] == []
    assert "CONFLICT" not in cli("search", "user prefers").stdout
    history = cli.json("history", "--key", "user.os")["versions"]
    assert [v["conflict"] for v in history] == [False, False, False]
    assert cli.json("conflicts")["count"] == 0
    ctx = cli.json("context")["text"]
    assert "Mac" in ctx and "conflict" not in ctx.lower() and "Ask the user" not in ctx
    assert cli.json("stats")["contradictions"] == 0


def test_the_policy_a_value_that_names_another_in_corrects_is_ordered_after_it():
    from optmem import view
    from optmem.record import Tier

    day = 86400.0
    a = view.Member(1, "01AAAAAAAAAAAAAAAAAAAAAAAA", 0.0, Tier.NORMAL, fp="a")
    b = view.Member(2, "01BBBBBBBBBBBBBBBBBBBBBBBB", 0.1 * day, Tier.NORMAL, fp="b")
    settled = view.Member(3, "01CCCCCCCCCCCCCCCCCCCCCCCC", 0.2 * day, Tier.NORMAL, fp="b", corrects=(a.id, b.id))
    assert view.key_winner([a, b], day) == view.Conflict((a, b))  # within the window: asked
    assert view.key_winner([a, b, settled], day) == view.Winner(settled)  # its writer settled both
    by_suffix = settled._replace(fp="c", corrects=(a.id[-8:], b.id[-8:]))  # a hand-typed reference
    assert view.key_winner([a, b, by_suffix], day) == view.Winner(by_suffix)


# -- a removed hot entry reads removed, with when and by what -------------------------------------
def test_a_removed_hot_entry_reads_removed_on_every_surface(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2026-04-01T10:00:00Z")
    cli.json("add", "the build uses gradle 8")
    monkeypatch.setenv("OPTMEM_NOW", "2026-04-02T10:00:00Z")
    cli.json("remove", "gradle")
    monkeypatch.setenv("OPTMEM_NOW", "2026-04-03T10:00:00Z")
    [hit] = cli.json("search", "gradle")["hits"]
    assert hit["status"] == "removed" and hit["superseded_by"] is None
    assert hit["removed"] == {"at": "2026-04-02T10:00:00Z", "file": "MEMORY.md", "by": "optmem remove"}
    line = cli("search", "gradle").stdout
    assert "REMOVED" in line and "SUPERSEDED" not in line
    got = cli.json("get", hit["id"])["record"]
    assert (got["status"], got["superseded_by"], got["removed"]) == ("removed", None, hit["removed"])
    text = cli("get", hit["id"]).stdout
    assert "[REMOVED 2026-04-02T10:00:00Z from MEMORY.md by optmem remove]" in text
    versions = cli.json("history", hit["id"])["versions"]
    assert [(v["status"], v["superseded_by"]) for v in versions] == [("superseded", hit["id"]), ("removed", None)]
    assert "[REMOVED 2026-04-02T10:00:00Z from MEMORY.md by optmem remove]" in cli("history", hit["id"]).stdout
    assert cli.json("search", "gradle", "--current")["hits"] == []
    assert "gradle" not in cli.json("context")["text"]
    stats = cli.json("stats")["status"]
    assert stats["removed"] == 1 and stats["superseded"] == 1  # the add line, superseded by the removal


def test_a_replaced_hot_entry_is_superseded_by_its_new_text_not_removed(cli, vault, vault_path):
    quiet(vault_path)
    cli.json("add", "the deploy target is fly.io")
    cli.json("replace", "fly.io", "render.com")
    hits = {h["text"]: h for h in cli.json("search", "deploy target")["hits"]}
    new, old = hits["the deploy target is render.com"], hits["the deploy target is fly.io"]
    assert new["status"] == "current"
    assert (old["status"], old["superseded_by"]) == ("superseded", new["id"]) and "removed" not in old


def test_an_entry_removed_outside_optmem_says_so(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    monkeypatch.setenv("OPTMEM_NOW", "2026-04-01T10:00:00Z")
    cli.json("add", "the build uses gradle 8")
    cli.json("add", "the linter is ruff")
    (vault_path / "MEMORY.md").write_text("the linter is ruff\n", "utf-8")  # a person edits the file
    monkeypatch.setenv("OPTMEM_NOW", "2026-04-02T10:00:00Z")
    [hit] = cli.json("search", "gradle")["hits"]  # (a read journals the edit first: a removal line)
    assert hit["status"] == "removed" and hit["superseded_by"] is None
    assert hit["removed"] == {"at": "2026-04-02T10:00:00Z", "file": "MEMORY.md", "by": "an edit outside optmem"}
    assert "[REMOVED 2026-04-02T10:00:00Z from MEMORY.md by an edit outside optmem]" in cli("get", hit["id"]).stdout


# -- doctor on a hot file git left mid-merge ------------------------------------------------------
def test_doctor_advises_resolving_the_merge_not_fix_for_entries_between_markers(cli, vault, vault_path):
    quiet(vault_path)
    for text in ("entry one", "entry two", "entry three"):
        cli.json("add", text)
    (vault_path / "MEMORY.md").write_text(
        "entry one\n§\n<<<<<<< ours\nentry two\n=======\nentry three\n>>>>>>> theirs\n", "utf-8"
    )
    report = cli.json("doctor", code=1)
    assert [p["code"] for p in report["problems"]] == ["merge_conflict"]
    [problem] = report["problems"]
    assert "delete the marker lines" in problem["message"] and "--fix" in problem["message"]
    assert "journals" not in " ".join(report["notes"])  # no --fix advice that --fix would not follow
    before = (vault_path / "LOG.jsonl").read_bytes()
    fixed = cli.json("doctor", "--fix", code=1)
    assert [p["code"] for p in fixed["problems"]] == ["merge_conflict"]
    assert (vault_path / "LOG.jsonl").read_bytes() == before  # --fix rightly does nothing to it
    # the merge resolved by hand: doctor compares the file with its journal again
    (vault_path / "MEMORY.md").write_text("entry one\n§\nentry three\n", "utf-8")
    report = cli.json("doctor", code=1)
    [drift] = [p for p in report["problems"] if p["code"] == "hot_drift"]
    assert "journals its removal" in drift["message"]
    assert cli.json("doctor", "--fix")["ok"] is True
