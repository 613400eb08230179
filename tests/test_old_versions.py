"""Old versions stay findable at scale: a superseded record ranks by its own relevance, lowered
by `ranking.superseded_factor`, never below every current hit as a tier of its own — and the
record that replaced it ranks above it whenever both are hits (SPEC §5, property 1)."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import put

from optmem import facts
from optmem.record import new_id
from optmem.settings import Ranking

pytestmark = pytest.mark.usefixtures("no_sweep")

NOW = "2026-06-01T12:00:00Z"
OLD = "The staging server runs Python 3.11"
NEW = "The staging server runs Python 3.12"

# the notes of a team and its agents over three months: infrastructure (environments, machines,
# what runs where), people, meetings, the product, preferences — many share a word or two with
# the old version (staging, server, runs, Python, 3.11), few all of them
ENVS = ("staging", "production", "dev", "qa", "preview", "sandbox", "demo", "canary", "uat", "eu-west", "ci", "lab")
HOSTS = (
    "server",
    "database",
    "cluster",
    "worker",
    "gateway",
    "cache",
    "queue",
    "build agent",
    "cron host",
    "load balancer",
    "bastion",
    "runner",
    "VM",
    "container",
)
SOFTWARE = tuple(
    [f"Python 3.{n}" for n in range(8, 14)]
    + [f"Node {n}" for n in (16, 18, 20, 22)]
    + [f"Postgres {n}" for n in (13, 14, 15, 16)]
    + ["Redis 6.2", "Redis 7.2", "nginx 1.25", "Java 11", "Java 17", "Java 21", "Go 1.21", "Go 1.22"]
    + ["Ubuntu 20.04", "Ubuntu 22.04", "Ubuntu 24.04", "Debian 12", "Ruby 3.2", "PHP 8.2"]
)
VERBS = ("runs", "uses", "hosts", "pins", "was upgraded to", "still needs", "ships with", "moved to")
PEOPLE = ("Alice", "Bob", "Chen", "Dana", "Elif", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kofi", "Lena")
TOPICS = (
    "the deploy pipeline",
    "log rotation",
    "the on-call rota",
    "disk usage alerts",
    "the release checklist",
    "TLS certificates",
    "the backup job",
    "flaky integration tests",
    "the migration plan",
    "API rate limits",
    "the onboarding flow",
    "the billing export",
    "search latency",
    "the mobile app",
    "the design system",
    "quarterly planning",
)
FOODS = ("oat milk lattes", "green tea", "spicy ramen", "no meetings before ten", "dark mode", "tabs over spaces")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


def note(rng: random.Random) -> str:
    """One note of many forms; about a third are about infrastructure."""
    env, host, sw = rng.choice(ENVS), rng.choice(HOSTS), rng.choice(SOFTWARE)
    who, other, topic = rng.choice(PEOPLE), rng.choice(PEOPLE), rng.choice(TOPICS)
    n, day = rng.randint(2, 999), rng.choice(DAYS)
    forms = (
        f"The {env} {host} {rng.choice(VERBS)} {sw}",
        f"{who} restarted the {env} {host} after {topic} failed (ticket OPS-{n})",
        f"Upgrade {sw} on the {env} {host} next sprint; {who} owns it",
        f"Reminder from {who}: the {env} {host} reboots every night at {n % 24}:00",
        f"{topic.capitalize()} on {env} takes {n} ms since the {sw} upgrade",
        f"Meeting on {day}: {who} and {other} went through {topic}, {n} open items",
        f"{who} prefers {rng.choice(FOODS)}",
        f"{who} is out on {day}; {other} covers {topic}",
        f"Decision: {topic} moves to the next quarter, {who} to write it up",
        f"Bug {n} in {topic}: the page shows a blank state after login",
        f"{who} asked for a review of {topic} before {day}",
        f"The budget for {topic} is {n} thousand euros this year",
        f"{other} shared slides about {topic} with the team",
        f"Customer call on {day}: they want {topic} to be faster",
        f"{who} paired with {other} on {topic} for {n % 8 + 1} hours",
    )
    text = rng.choice(forms)
    return text if text != OLD else f"{text} as well"  # only the record under test says exactly this


def write_vault(vault_path: Path, count: int, seed: int = 44) -> None:
    """`count` notes over the last 90 days, written as log lines (what `import` or a hand-copied
    log gives); the index is built from them by the first command that reads the vault."""
    rng = random.Random(seed)
    end = datetime.fromisoformat(NOW).timestamp() - 3 * 86400
    start = end - 90 * 86400
    lines = []
    for i in range(count):
        ts = start + (end - start) * i / count
        lines.append(
            json.dumps(
                {
                    "v": 1,
                    "id": new_id(ts),
                    "ts": datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "domain": rng.choice(("code", "ops", "default")),
                    "kind": "note",
                    "tier": "normal",
                    "text": note(rng),
                },
                separators=(",", ":"),
            )
        )
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


@pytest.mark.long
@pytest.mark.usefixtures("uncovered")
def test_an_old_version_is_found_by_its_own_words_in_a_50k_vault(vault, vault_path, cli, monkeypatch):
    write_vault(vault_path, 50_000)
    monkeypatch.setenv("OPTMEM_NOW", "2026-05-20T09:00:00Z")
    old = cli.json("append", OLD, "--domain", "ops")["id"]
    monkeypatch.setenv("OPTMEM_NOW", NOW)
    new = cli.json("correct", old, NEW)["id"]

    out = cli.json("search", "staging server runs Python 3.11")
    hits = [h["id"] for h in out["hits"]]
    assert out["total"] > 1000  # thousands of current notes match some of its words
    assert old in hits, f"the old version is not in the top 10 for its own words: {hits}"
    got = out["hits"][hits.index(old)]
    assert (got["status"], got["superseded_by"]) == ("superseded", new)  # marked, naming its successor
    assert new in hits and hits.index(new) < hits.index(old)  # the successor above it
    assert "SUPERSEDED by" in cli("search", "staging server runs Python 3.11").stdout
    # the current value answers a question about the current value first
    assert cli.json("search", "which Python does the staging server run")["hits"][0]["id"] == new
    # and --current still leaves the old version out
    assert old not in [h["id"] for h in cli.json("search", "staging server runs Python 3.11", "--current")["hits"]]


def test_a_strong_old_version_ranks_above_a_weak_current_hit(vault, cli, monkeypatch):
    """In a small vault: the old version matches its own words best; a current record that matches
    one of them weakly does not bury it (the penalty lowers it, no tier puts it below everything)."""
    monkeypatch.setenv("OPTMEM_NOW", "2026-05-01T09:00:00Z")
    weak = put(vault, "Python packaging notes: use uv for new projects, pip for old ones").id
    old = put(vault, OLD).id
    for i in range(5):
        put(vault, f"Note {i} about the frontend bundle size and the design review")
    monkeypatch.setenv("OPTMEM_NOW", "2026-05-20T09:00:00Z")
    new = facts.correct(vault, old, "The staging server was moved to another Python release").id
    hits = cli.json("search", "staging server runs Python 3.11", "--explain")["hits"]
    order = [h["id"] for h in hits]
    assert order.index(new) < order.index(old) < order.index(weak)
    assert hits[order.index(old)]["explain"]["status_factor"] == Ranking().superseded_factor
