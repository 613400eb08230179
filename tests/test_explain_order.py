"""`search --explain` accounts for the order (tester 18 #2): each hit shows the score the order
comes from, and a hit a re-ordering rule moved says which rule and past whom — the parts the
ranking functions return, never a second reckoning."""

from __future__ import annotations

from conftest import put


def at(monkeypatch, when: str) -> None:
    monkeypatch.setenv("OPTMEM_NOW", when)


def test_explain_shows_the_score_and_the_newer_first_rule_that_put_a_lower_score_first(vault, cli, monkeypatch):
    at(monkeypatch, "2023-01-10T10:00:00Z")
    old = put(vault, "I have 3 plants on the balcony, all of them basil plants").id
    at(monkeypatch, "2023-06-01T10:00:00Z")
    new = put(vault, "Bought two more, so there are 5 plants").id
    at(monkeypatch, "2023-06-05T10:00:00Z")
    query = "How many plants do I have now?"
    hits = cli.json("search", query, "--explain")["hits"]
    assert [h["id"] for h in hits] == [new, old]
    first, second = (h["explain"] for h in hits)
    # the score is the one the order is sorted on, and each hit's own
    assert [e["score"] for e in (first, second)] == [h["score"] for h in hits]
    assert first["score"] < second["score"] and first["updates"] == old
    out = cli("search", query, "--explain").stdout.splitlines()
    lines = [line for line in out if "relevance=" in line]
    assert f"score={first['score']}" in lines[0] and f"score={second['score']}" in lines[1]
    # the rule is named on the line of the hit it moved, with the record it went above
    assert f"updates {old[-8:]}: placed above it" in lines[0] and "newer-first" in lines[0]
    assert "placed above" not in lines[1] and "placed after" not in lines[0] + lines[1]


def test_explain_names_the_later_version_a_superseded_hit_was_placed_after(vault, cli, monkeypatch):
    at(monkeypatch, "2023-01-10T10:00:00Z")
    # an old version not lowered (superseded_factor 1), asked about the past (no recency bonus,
    # ties go to the older, the newer-first rule is off): only `successors_first` puts it second
    old = put(vault, "The staging backup runs at 02:00", key="backup").id
    at(monkeypatch, "2023-01-10T11:00:00Z")
    new = put(vault, "The staging backup runs at 04:00", key="backup").id
    at(monkeypatch, "2023-01-12T10:00:00Z")
    query = "when did the staging backup run before"
    equal = "--set=ranking.superseded_factor=1"
    hits = cli.json(equal, "search", query, "--explain")["hits"]
    assert [h["id"] for h in hits] == [new, old]
    assert hits[1]["score"] >= hits[0]["score"]
    assert hits[1]["explain"]["after"] == [new] and hits[0]["explain"]["after"] == []
    assert hits[0]["explain"]["updates"] is None
    lines = [line for line in cli(equal, "search", query, "--explain").stdout.splitlines() if "relevance=" in line]
    assert f"placed after {new[-8:]}" in lines[1] and "placed after" not in lines[0]
