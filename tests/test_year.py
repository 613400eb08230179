"""A simulated year of use through the CLI (issue 13's acceptance test).

Every other day (a session is what costs the test its CPU; the lifecycle counts days, and the
notes still come at one a day) an agent writes one-off notes nobody recalls again, a session
starts with `context` (which touches what it shows), and now and then: preferences are restated,
a keyed fact moves, the agent records a guess, and guesses are confirmed — by a person or by
being said again in another conversation. The clock is `OPTMEM_NOW`; the daily sweep runs on the
first write of each day, as it does for a user.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest

START = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
DAYS = 365
EVERY = 2  # a session every other day, on the even days (day 364 the last)
NOTES_PER_DAY = 1  # the one-off notes: most of the records; the assertions scale with it
PREFS = 10  # preferences 0–4 are restated every month; 5–9 only said once


def stamp(day: int, minute: int = 0) -> str:
    return (START + timedelta(days=day, minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.long
@pytest.mark.usefixtures("uncovered")
def test_a_year_of_use_keeps_the_active_memory_small_and_right_and_loses_nothing(cli, vault, vault_path, monkeypatch):
    rnd = random.Random(13)
    written: list[str] = []
    notes: dict[str, int] = {}  # one-off note id → the day it was written
    prefs: dict[int, str] = {}
    guesses: dict[str, str] = {}  # id → what happened to it: confirmed | restated | left
    port_ids: list[str] = []

    def append(*args: str) -> dict:
        out = cli.json("append", *args)
        if out["status"] != "duplicate":
            written.append(out["id"])
        return out

    for day in range(0, DAYS, EVERY):
        monkeypatch.setenv("OPTMEM_NOW", stamp(day))
        if day == 0 or (day % 30 == 0):
            for k in range(PREFS):
                if day == 0 or k < 5:  # restating an exact preference refreshes it
                    out = append(f"User preference {k}: likes flavour{k} in every answer", "--importance", "0.9")
                    prefs.setdefault(k, out["id"])
        if day % 60 == 0:
            port_ids.append(append(f"The backend listens on port {8000 + day}", "--key", "backend.port")["id"])
        for i in range(NOTES_PER_DAY * EVERY):  # a session writes the notes of its days
            monkeypatch.setenv("OPTMEM_NOW", stamp(day, 10 + i))
            out = append(
                f"Ticket d{day}n{i} closed: fixed module m{rnd.randrange(10**6)} in the billing code",
                "--session",
                f"s{day}",
            )
            notes[out["id"]] = day
        if day % 10 == 4:  # the agent guesses something about the user (36 guesses, 12 of each fate)
            monkeypatch.setenv("OPTMEM_NOW", stamp(day, 30))
            n = day // 10
            gid = append(f"Guess {n}: the user may prefer colour{n} themes", "--agent", "--session", f"s{day}")["id"]
            fate = ("confirmed", "restated", "left")[n % 3]
            guesses[gid] = fate
            if fate == "confirmed":
                cli.json("confirm", gid)
            elif fate == "restated":  # the user says it in the next day's conversation
                monkeypatch.setenv("OPTMEM_NOW", stamp(day + 1, 1))
                append(f"Guess {n}: the user may prefer colour{n} themes", "--session", f"s{day + 1}")
        monkeypatch.setenv("OPTMEM_NOW", stamp(day, 60))
        cli.json("context")  # a session starts: what it shows is touched

    monkeypatch.setenv("OPTMEM_NOW", stamp(DAYS, 0))
    cli.json("sweep")
    end = stamp(DAYS, 0)

    # nothing is missing from LOG.jsonl: every record ever written is still there
    in_log = {json.loads(line)["id"] for line in (vault_path / "LOG.jsonl").read_text("utf-8").splitlines()}
    assert set(written) <= in_log and len(written) > DAYS * NOTES_PER_DAY

    # the active part is small: what was unused for ~4 months (0.5·e^(−0.02·115) < 0.05) is cold
    found = cli.json("search", "billing code ticket", "--include-cold", "--limit", "4000")["hits"]
    by_id = {h["id"]: h["status"] for h in found}
    cold_notes = sum(by_id.get(i) == "cold" for i in notes)
    assert (
        cold_notes > (DAYS - 130) * NOTES_PER_DAY
        and sum(by_id.get(i) == "current" for i in notes) < 130 * NOTES_PER_DAY
    )
    stats = cli.json("stats")
    assert stats["status"]["cold"] >= cold_notes and stats["lifecycle"]["active_share"] < 0.35

    # everyday queries: only warm, current, confirmed records — and a cold one only where it
    # matches as well as the best warm hit, labelled, after the warm ones that match as well
    for query in ("user preference likes flavour", "billing code ticket", "backend port", "colour themes"):
        hits = cli.json("search", query, "--current", "--limit", "20")["hits"]
        assert hits and all(h["status"] == "current" for h in hits), query
        normal = cli.json("search", query, "--limit", "20", "--explain")["hits"]
        assert all(h["status"] != "forgotten" for h in normal), query
        best = max(h["explain"]["relevance"] + h["explain"]["context"] for h in normal if h["status"] != "cold")
        assert all(h["explain"]["relevance"] + h["explain"]["context"] >= best for h in normal if h["status"] == "cold")
    assert all(h["status"] != "cold" for h in cli.json("search", "backend port", "--limit", "20")["hits"])
    prefs_found = [
        (h["id"], h["status"]) for h in cli.json("search", "user preference likes flavour", "--limit", "20")["hits"]
    ]
    assert prefs_found[:5] == [(prefs[k], "current") for k in (4, 3, 2, 1, 0)]  # restated: warm
    assert prefs_found[5:10] == [(prefs[k], "cold") for k in (9, 8, 7, 6, 5)]  # said once, a year ago: cold
    port = cli.json("search", "backend port", "--current")["hits"]
    assert [h["id"] for h in port] == [port_ids[-1]]
    ctx = cli.json("context")["text"]
    assert "flavour0" in ctx and "flavour7" not in ctx
    assert "Ticket d364" in ctx and "Ticket d100" not in ctx
    for gid, fate in guesses.items():
        got = cli.json("get", gid)["record"]
        if fate == "left":
            assert got["status"] in ("pending", "cold")
            if got["status"] == "pending":  # only the recent ones still wait
                assert (
                    datetime.fromisoformat(end.replace("Z", "+00:00"))
                    - datetime.fromisoformat(got["ts"].replace("Z", "+00:00"))
                ).days < 30
        else:
            assert got["status"] in ("current", "cold"), (fate, got["status"])
    waiting = cli.json("pending")["pending"]
    assert waiting and all(guesses[w["id"]] == "left" for w in waiting)
    assert "colour" not in ctx or all(f"Guess {w['text'].split()[1]}" not in ctx for w in waiting)

    # every cold record is still found: with --include-cold, and by history
    cold = {i for i, day in notes.items() if day < DAYS - 200}
    assert cold <= set(by_id) and all(by_id[i] == "cold" for i in cold)
    assert all(h["status"] != "cold" for h in cli.json("search", "billing code ticket", "--limit", "50")["hits"])
    history = cli.json("history", port_ids[0])["versions"]
    assert [v["id"] for v in history] == port_ids and history[0]["status"] == "cold"

    # a cold record recalled again comes back
    old_pref = prefs[7]
    assert cli.json("get", old_pref)["record"]["status"] == "cold"
    cli.json("touch", old_pref)
    assert old_pref in {h["id"] for h in cli.json("search", "user preference likes flavour7")["hits"]}
    assert cli.json("get", old_pref)["record"]["status"] == "current"
