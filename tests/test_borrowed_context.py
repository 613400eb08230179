"""What a conversation turn borrows from its session (issue 47 item 3): a turn that holds its own
answer lends the next turn nothing as "its answer"; a hit that matches only through its session
never ranks above the turn it borrowed from, nor — a neighbour's share — above a hit that
matches the words; the footer counts those hits apart. Real vaults, through the CLI and through
the Hermes provider."""

from __future__ import annotations

import json

import pytest

from optmem.integrations import hermes
from optmem.reading.questions import answered, open_questions

pytestmark = pytest.mark.usefixtures("no_sweep")


def append(cli, monkeypatch, when: str, text: str, *more: str) -> str:
    monkeypatch.setenv("OPTMEM_NOW", when)
    return cli.json("append", text, *more)["id"]


def explained(cli, query: str) -> list[dict]:
    return cli.json("search", query, "--explain")["hits"]


def test_a_turn_holding_its_answer_lends_the_next_turn_nothing_as_its_answer(vault, cli, monkeypatch):
    """The tester's vault (finding #1), in the shape the Hermes provider writes a turn: the next
    turn of the session (about a dentist) is no answer to the port question, and matches none of
    its words: it ranks below the turn that does, with a neighbour's share only."""
    port = append(
        cli,
        monkeypatch,
        "2026-12-01T09:00:00Z",
        "Asked: What port does the api use? — Answered: The api listens on port 8080.",
        "--session",
        "s1",
    )
    dentist_turn = "Asked: My dentist is Dr. Smith. — Answered: Noted."
    dentist = append(cli, monkeypatch, "2026-12-01T09:01:00Z", dentist_turn, "--session", "s1")
    moved = append(
        cli,
        monkeypatch,
        "2026-12-02T09:00:00Z",
        "Asked: The api port changed to 9090 last night. — Answered: Noted, 9090.",
        "--session",
        "s2",
    )
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-03T09:00:00Z")
    hits = explained(cli, "what port does the api use")
    ids = [h["id"] for h in hits]
    by_id = {h["id"]: h["explain"] for h in hits}
    assert ids.index(moved) < ids.index(dentist) and ids.index(port) < ids.index(dentist)
    assert by_id[dentist]["answers"] is None and by_id[dentist]["relevance"] == 0
    # a neighbour's share, no more (it was the port turn's whole question before: +1.87 against 0.93)
    assert 0 < by_id[dentist]["context"] < by_id[moved]["relevance"]
    # … and a correction of that turn inherits nothing it did not have
    fixed = cli.json("correct", dentist, "User's dentist is Dr. Jones")["id"]
    ids = [h["id"] for h in cli.json("search", "what port does the api use")["hits"]]
    assert fixed not in ids[: ids.index(moved) + 1]


@pytest.mark.parametrize(
    "lender",
    [
        "Asked: What port does the api use? — Answered: Port 8080, as configured.",  # labelled as the answer
        "Q: What port does the api use? A: 8080.",
        "What port does the api use? The api listens on 8080.",  # it speaks of what its question matched
    ],
)
def test_a_statement_after_the_question_that_answers_it_keeps_the_next_turn_from_its_score(
    vault, cli, monkeypatch, lender
):
    append(cli, monkeypatch, "2026-12-01T09:00:00Z", lender, "--session", "s1")
    nxt = append(cli, monkeypatch, "2026-12-01T09:01:00Z", "Dr. Smith is my dentist.", "--session", "s1")
    hit = {h["id"]: h["explain"] for h in explained(cli, "what port does the api use")}[nxt]
    assert hit["answers"] is None


def test_a_turn_that_ends_asking_still_lends_its_reply(vault, cli, monkeypatch):
    """What a turn leaves open is answered by the next one: an assistant's answer that ends with a
    question ("Which port should it listen on?") makes the user's reply its answer, in a Hermes
    turn as in a chat; a statement after the question that neither is labelled as the answer nor
    speaks of what it asked ("Tell me all about it!") leaves it open too."""
    question = append(
        cli,
        monkeypatch,
        "2026-12-01T09:00:00Z",
        "Asked: Set up the staging database. — Answered: Created it. Which port should it listen on?",
        "--session",
        "s1",
    )
    reply = append(cli, monkeypatch, "2026-12-01T09:01:00Z", "Asked: 5433. — Answered: Done.", "--session", "s1")
    hits = explained(cli, "which port does the staging database listen on")
    assert {h["id"]: h["explain"] for h in hits}[reply]["answers"] == question
    asking = "Jo: What made you choose that hair colour? Tell me!"
    asked = append(cli, monkeypatch, "2026-12-02T09:00:00Z", asking, "--session", "s2")
    why = append(cli, monkeypatch, "2026-12-02T09:01:00Z", "Nate: It is bright and bold, like me.", "--session", "s2")
    found = {h["id"]: h["explain"] for h in explained(cli, "why did Nate choose his hair colour")}
    assert found[why]["answers"] == asked


def test_the_hermes_provider_s_turns_lend_no_answer_to_the_next_message(tmp_path, monkeypatch, cli):
    """Through the real provider: the turn after "What port does the api use?" — answered in the
    same record — is a new message and does not rank above the newer port."""
    monkeypatch.delenv("OPTMEM_VAULT", raising=False)
    monkeypatch.chdir(tmp_path)
    home = tmp_path / "hermes"
    p = hermes.provider()
    p.initialize("s-1", hermes_home=str(home), platform="cli", agent_context="primary")
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-01T09:00:00Z")
    p.sync_turn("What port does the api use?", "The api listens on port 8080.", session_id="s-1")
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-01T09:01:00Z")
    p.sync_turn("My dentist is Dr. Smith.", "Noted.", session_id="s-1")
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-02T09:00:00Z")
    p.sync_turn("The api port changed to 9090 last night.", "Noted, 9090.", session_id="s-2")
    p.shutdown()
    vault = home / "optmem"
    lines = [json.loads(x) for x in (vault / "LOG.jsonl").read_text("utf-8").splitlines()]
    assert len(lines) == 3 and lines[0]["text"].startswith("Asked: What port") and "— Answered:" in lines[0]["text"]
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-03T09:00:00Z")
    hits = cli.json("--vault", str(vault), "search", "what port does the api use", "--explain")["hits"]
    texts = [h["text"] for h in hits]
    dentist = next(i for i, t in enumerate(texts) if "dentist" in t)
    assert dentist > next(i for i, t in enumerate(texts) if "9090" in t)
    assert hits[dentist]["explain"]["answers"] is None


def _backup_store(cli, monkeypatch) -> tuple[str, str, str]:
    strong = append(
        cli,
        monkeypatch,
        "2026-12-01T09:00:00Z",
        "Tim: The nightly backup job on the storage box runs at 2am; the backup job copies the database to the NAS.",
        "--session",
        "s1",
    )
    beside = append(cli, monkeypatch, "2026-12-01T09:01:00Z", "John: Sounds good to me.", "--session", "s1")
    weak = append(
        cli,
        monkeypatch,
        "2026-12-02T09:00:00Z",
        "The office kitchen was cleaned on Friday, the fridge emptied, the coffee machine descaled and the job "
        "board by the door updated with new notices for everyone.",
    )
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-03T09:00:00Z")
    return strong, beside, weak


def test_a_neighbour_that_matches_only_through_its_session_ranks_below_every_match(vault, cli, monkeypatch):
    """ "Sounds good to me." gains a share of the backup turn beside it — more than the kitchen
    note, which matches one word of the query, is worth; it still goes below that note: a record
    that matches the query itself comes first, and --explain says which record it is kept below."""
    strong, beside, weak = _backup_store(cli, monkeypatch)
    hits = explained(cli, "when does the backup job run")
    assert [h["id"] for h in hits] == [strong, weak, beside]
    ex = hits[2]["explain"]
    assert ex["relevance"] == 0 and ex["context"] > hits[1]["explain"]["relevance"] and ex["below"] == weak
    assert hits[1]["explain"]["below"] is None and hits[0]["explain"]["below"] is None
    out = cli("search", "when does the backup job run", "--explain").stdout
    assert f"(matches only through its session: kept below {weak[-8:]})" in out
    # the footer counts it apart from the records that match the words
    assert out.rstrip().endswith("2 of 2 matching, 1 more as context (turns beside a match in its session)")
    found = cli.json("search", "when does the backup job run")
    assert (found["total"], found["matching"], found["context_hits"]) == (3, 2, 1)
    plain = cli.json("search", "kitchen fridge")
    assert (plain["matching"], plain["context_hits"]) == (plain["total"], 0)
    assert cli("search", "kitchen fridge").stdout.rstrip().endswith("1 of 1 matching")


def test_an_answer_ranks_above_other_matches_but_never_above_its_question(vault, cli, monkeypatch):
    """The turn after a question is read as its answer: it may go above records that match the
    words (that is what the answer share is for), but not above the question it borrows from —
    not even when it was said a day later and is the warmer of the two."""
    question = append(
        cli, monkeypatch, "2026-11-02T10:00:00Z", "Tim: Which spices did you put in the soup?", "--session", "c"
    )
    answer = append(cli, monkeypatch, "2026-11-20T10:00:00Z", "John: Some sage, for flavour.", "--session", "c")
    market = append(
        cli,
        monkeypatch,
        "2026-11-01T10:00:00Z",
        "The market stall sells spices and dried herbs in big jars, the soup kitchen next door buys from it",
    )
    monkeypatch.setenv("OPTMEM_NOW", "2026-11-21T10:00:00Z")
    hits = explained(cli, "spices soup")
    assert [h["id"] for h in hits] == [question, answer, market]
    ex = hits[1]["explain"]
    assert ex["answers"] == question and ex["below"] == question and ex["relevance"] == 0
    # without the cap it would have gone first: its borrowed score, with its warmer recency, is more
    assert (ex["context"] * ex["heat_factor"]) > hits[0]["explain"]["relevance"] * hits[0]["explain"]["heat_factor"]


def test_what_a_turn_leaves_open_and_what_it_states_after_its_question():
    assert open_questions("i got a dog. what did you name yours?") == (" what did you name yours?", "")
    assert open_questions("q1? ok. q2? q3?") == (" q2?  q3?", "")  # the questions it ends with
    assert open_questions("what port? — answered: 8080.") == ("", " — answered: 8080.")
    assert open_questions("你去过上海吗？") == ("你去过上海吗", "")
    assert open_questions("你去过上海吗，我很喜欢") == ("", "，我很喜欢")
    assert open_questions("no question here.") == ("", "")
    assert open_questions("what? :)") == ("what?", "")  # no word after it
    assert answered(" — answered: 8080.") and answered(" a: here") and answered("答：上海")
    assert not answered(" and more") and not answered(" a lot of it")
