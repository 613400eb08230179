"""What a record is, said the same way on every surface a person reads: an agent's inference is
labelled wherever it is shown (one labelling function, `view.labels`); a removed hot entry keeps
the age of when it was written. (A reader that stops early: tests/test_bounds.py.)"""

from __future__ import annotations

FAR = "2027-12-06T00:00:00Z"  # a year on: the sweep cools what nobody used


def test_an_inference_reads_as_one_on_every_human_surface(cli, vault):
    guess = cli.json("append", "Alice works at Acme Corp", "--basis", "inferred")["id"]
    said = cli.json("append", "Carol lives in Paris", "--key", "carol.city")["id"]
    rival = cli.json("append", "Carol lives in Rome", "--key", "carol.city", "--basis", "inferred")["id"]
    unsure = cli.json("append", "Bob likes tea", "--basis", "inferred", "--confidence", "0.3")["id"]

    assert "INFERRED" in cli("search", "Alice").stdout  # (as it was)
    got = cli("get", guess).stdout
    assert got.splitlines()[0] == f"{guess}  [current; INFERRED]", got
    assert "[current; INFERRED]" in cli("history", guess).stdout
    assert "INFERRED" not in cli("get", said).stdout  # what was said is no inference

    lines = cli("conflicts").stdout.splitlines()
    assert [line for line in lines if rival[-8:] in line][0].endswith("[INFERRED]"), lines
    assert [line for line in lines if said[-8:] in line][0].endswith("Carol lives in Paris"), lines

    queue = cli("pending").stdout
    assert unsure[-8:] in queue and queue.rstrip().endswith("[INFERRED]"), queue
    assert cli.json("pending")["pending"][0]["basis"] == "inferred"  # (the MCP tool's text is this JSON)

    swept = cli("sweep", "--dry-run", env={"OPTMEM_NOW": FAR}).stdout
    assert [line for line in swept.splitlines() if guess[-8:] in line][0].endswith("[INFERRED]"), swept
    rows = cli.json("sweep", "--dry-run", env={"OPTMEM_NOW": FAR})["records"]
    assert {r["id"]: r.get("basis") for r in rows}[guess] == "inferred"


def test_the_labels_of_a_record_are_one_function_of_its_shape():
    from optmem.view import CONFLICT_LABEL, PENDING_LABEL, STATUS_LABEL, labels

    hit = {"id": "01ABCDEFGH", "status": "cold", "tier": "redline", "pending": True, "conflict": True}
    hit |= {"basis": "inferred", "state": True, "kind": "correction", "origin": "web", "superseded_by": None}
    assert labels(hit) == ["REDLINE", "COLD", "PENDING", "CONFLICT", "INFERRED", "STATE", "CORRECTION", "FROM WEB"]
    assert labels(hit, omit=(STATUS_LABEL, PENDING_LABEL, CONFLICT_LABEL)) == [
        "REDLINE",
        "INFERRED",
        "STATE",
        "CORRECTION",
        "FROM WEB",
    ]
    assert labels({"status": "superseded", "superseded_by": "01ABCDEFGHJKMNPQ"}) == ["SUPERSEDED by GHJKMNPQ"]


def test_a_removal_does_not_make_the_removed_entry_look_recent(cli, vault):
    written = "2026-06-01T00:00:00Z"
    cli("add", "后端端口是 8080。", env={"OPTMEM_NOW": written})
    for text in ("前端的端口是 3000。", "后端服务用 Go 写的。"):
        cli("append", text, env={"OPTMEM_NOW": written})
    assert cli("remove", "后端端口", env={"OPTMEM_NOW": "2026-12-06T09:00:00Z"}).exit_code == 0

    now = {"OPTMEM_NOW": "2026-12-06T09:02:00Z"}
    hits = cli.json("search", "后端的端口是多少？", "--explain", env=now)["hits"]
    gone = next(h for h in hits if h["status"] == "removed")
    assert gone["ts"] == written and gone["removed"]["at"] == "2026-12-06T09:00:00Z"
    others = [h for h in hits if h["status"] == "current"]
    # no recency bonus for the removal's time: its age is its entry's, as old as the others'
    assert gone["explain"]["age_days"] == others[0]["explain"]["age_days"] > 100, hits
    assert gone["explain"]["recency_bonus"] == others[0]["explain"]["recency_bonus"]
    shown = cli("search", "后端的端口是多少？", env=now).stdout
    assert [line for line in shown.splitlines() if "8080" in line][0].lstrip().startswith("6mo ago"), shown


def test_an_entry_added_again_and_removed_again_is_dated_by_its_second_writing(cli, vault):
    times = ["2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"]
    for verb, at in zip(("add", "remove", "add", "remove"), times, strict=True):
        assert cli(verb, "the staging port is 5433", env={"OPTMEM_NOW": at}).exit_code == 0
    hits = cli.json("search", "staging port", env={"OPTMEM_NOW": "2026-05-01T00:00:00Z"})["hits"]
    assert [(h["status"], h["ts"], h["removed"]["at"]) for h in hits if h["status"] == "removed"] == [
        ("removed", times[2], times[3])
    ], hits


def test_an_inference_the_user_then_states_word_for_word_becomes_a_statement(cli, vault):
    """The same words said as a statement after an agent inferred them are new evidence, not a
    duplicate of the guess: stored, as the inference's correction (history leads from one to the
    other), so no surface keeps showing the fact as [INFERRED]. An inference repeating a
    statement adds nothing: it is a duplicate of the statement."""
    guess = cli.json("append", "The user prefers tabs over spaces", "--basis", "inferred")["id"]
    err = cli.json("confirm", guess, code=1)["error"]  # in recall already: `confirm` is for guesses waiting
    assert err["code"] == "not_pending" and "inference" in err["message"] and "as a fact" not in err["message"], err
    said = cli.json("append", "The user prefers tabs over spaces")
    assert said["status"] == "stored" and said["id"] != guess, said
    first, old = cli.json("search", "tabs spaces")["hits"]
    assert first["id"] == said["id"] and "basis" not in first and first["status"] == "current", first
    assert old["id"] == guess and old["status"] == "superseded" and old["basis"] == "inferred", old
    assert cli.json("get", guess)["record"]["superseded_by"] == said["id"]
    assert "[INFERRED]" not in cli("search", "tabs spaces", "--current").stdout
    again = cli.json("append", "The user prefers tabs over spaces", "--basis", "inferred")
    assert again["status"] == "duplicate" and again["duplicate_of"] == said["id"], again
    # a keyed inference stated without the key: the statement keeps the fact's key (as `correct`
    # does), and says it is a correction as `get` will; a guess repeating an inference states nothing
    keyed = cli.json("append", "User lives in Berlin", "--basis", "inferred", "--key", "user.city")["id"]
    guess = cli.json("append", "User lives in Berlin", "--confidence", "0.3")
    assert guess["status"] == "duplicate" and guess["duplicate_of"] == keyed, guess
    stated = cli.json("append", "User lives in Berlin")
    assert stated["record"]["key"] == "user.city" and stated["record"]["kind"] == "correction", stated
    [head] = [v for v in cli.json("history", "--key", "user.city")["versions"] if v["status"] == "current"]
    assert head["id"] == stated["id"], head


# -- review 15: labels on every surface ------------------------------------------------------------
DAY1, DAY2 = {"OPTMEM_NOW": "2026-12-01T10:00:00Z"}, {"OPTMEM_NOW": "2026-12-02T10:00:00Z"}


def test_context_never_says_you_were_told_of_an_inference(cli, vault):
    """Finding 5: a conflict between what the user said and an agent's inference read "you were
    told … or …", as if both had been said."""
    cli.json("append", "backend port is 8080", "--key", "backend.port", "--origin", "user", env=DAY1)
    cli.json(
        "append", "backend port is 7070", "--key", "backend.port", "--origin", "agent", "--basis", "inferred", env=DAY2
    )
    [line] = [x for x in cli("context").stdout.splitlines() if x.startswith("- backend.port:")]
    assert "you were told" not in line and line.startswith("- backend.port: the values are “backend port is 8080”")
    assert "inferred)" in line


def test_an_inference_never_quietly_supersedes_a_tools_value(cli, vault):
    """Finding 6: between a value read from a tool and a newer inference, the newest won — the
    tool's value read SUPERSEDED, `conflicts` said none, `context` showed only the guess."""
    tool = cli.json(
        "append", "db port is 5432 (from postgresql.conf)", "--key", "db.port", "--origin", "tool", env=DAY1
    )
    guess = cli.json(
        "append", "db port is probably 6543", "--key", "db.port", "--origin", "agent", "--basis", "inferred", env=DAY2
    )
    assert cli.json("get", tool["id"])["record"]["status"] == "current"
    assert [c["key"] for c in cli.json("conflicts")["conflicts"]] == ["db.port"]
    ctx = cli("context").stdout
    assert "5432" in ctx and "6543" in ctx and "which is right now?" in ctx
    shown = cli("search", "db port").stdout
    assert f"{guess['id'][-8:]}  db port is probably 6543  [CONFLICT; INFERRED]" in shown, shown
    # a statement after both settles it as ever: the newest said value wins
    cli.json("append", "db port is 5432", "--key", "db.port", "--origin", "user")
    assert cli.json("conflicts")["conflicts"] == []


def test_search_labels_stand_apart(cli, vault):
    """Finding 7: "[SUPERSEDED by X FROM TOOL]" read as if the successor came from a tool."""
    tool = cli.json(
        "append", "cache ttl is 10 minutes (from config.yaml)", "--key", "cache.ttl", "--origin", "tool", env=DAY1
    )
    user = cli.json("append", "cache ttl is 5 minutes", "--key", "cache.ttl", "--origin", "user", env=DAY2)
    shown = cli("search", "cache ttl").stdout
    assert f"[SUPERSEDED by {user['id'][-8:]}; FROM TOOL]" in shown, shown
    assert tool["id"][-8:] in shown
    # tester 15 item 7: get and history printed "[superseded by X]  [FROM TOOL]"; one helper now
    for command in ("get", "history"):
        got = cli(command, tool["id"]).stdout
        assert f"{tool['id']}  [SUPERSEDED by {user['id'][-8:]}; FROM TOOL]" in got, (command, got)


def test_get_and_history_word_a_conflict_alike(cli, vault):
    """Tester 15 item 7: get said "in CONFLICT with ZCXG5D9Y", history only "in CONFLICT"."""
    said = cli.json("append", "Carol lives in Paris", "--key", "carol.city")["id"]
    rival = cli.json("append", "Carol lives in Rome", "--key", "carol.city", "--basis", "inferred")["id"]
    first = cli("get", rival).stdout.splitlines()[0]
    assert f"in CONFLICT with {said[-8:]}" in first, first
    assert first in cli("history", rival).stdout.splitlines(), cli("history", rival).stdout


def test_context_labels_a_state_as_search_and_get_do(cli, vault):
    """Finding 8: a state read [STATE] in search and get, plain in context."""
    rid = cli.json("append", "Bob worked until 3am on the release", "--state")["id"]
    assert "STATE" in cli("search", "Bob worked").stdout and "[current; STATE]" in cli("get", rid).stdout
    [line] = [x for x in cli("context").stdout.splitlines() if "Bob worked until 3am" in x]
    assert line.endswith("(state)"), line
