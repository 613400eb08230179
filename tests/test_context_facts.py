"""A busy project's context keeps its keyed facts (tenth stop, item 7): the value each key holds
now comes before the project's recent notes, however many notes came after it."""

from __future__ import annotations

import json

from conftest import log_lines


def busy(vault_path, notes: int = 40) -> None:
    """A keyed fact a month old, an older value of it, then `notes` recent notes of the project."""
    lines = [
        {
            "ts": "2026-04-01T10:00:00Z",
            "domain": "code",
            "project": "proj7",
            "text": "proj7 port is 8350",
            "key": "proj7.port",
        },
        {
            "ts": "2026-05-01T10:00:00Z",
            "domain": "code",
            "project": "proj7",
            "text": "proj7 port is 8450",
            "key": "proj7.port",
        },
        {
            "ts": "2026-05-02T10:00:00Z",
            "domain": "code",
            "project": "other",
            "text": "other port is 9999",
            "key": "other.port",
        },
    ]
    lines += [
        {
            "ts": f"2026-05-{20 + i // 10:02d}T{10 + i % 10:02d}:00:00Z",
            "domain": "code",
            "project": "proj7",
            "text": f"release note {i}",
        }
        for i in range(notes)
    ]
    vault_path.mkdir(parents=True, exist_ok=True)
    (vault_path / "LOG.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")


def test_the_projects_current_facts_come_before_its_recent_notes(cli, vault_path, monkeypatch):
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-01T00:00:00Z")
    busy(vault_path)
    out = cli.json("context", "-p", "proj7", "--budget", "8000")
    text = out["text"]
    assert "proj7.port" in text and "proj7 port is 8450" in text
    assert "8350" not in text and "9999" not in text  # an older value, another project's key
    assert text.index("Keyed facts — proj7") < text.index("Recent records — proj7")
    assert text.count("proj7 port is 8450") == 1  # not listed again among the records
    [facts] = [s for s in out["sections"] if s["name"] == "facts"]
    assert len(facts["items"]) == 1


def test_a_tight_budget_cuts_recent_notes_before_the_facts(cli, vault_path, monkeypatch):
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-01T00:00:00Z")
    busy(vault_path)
    out = cli.json("context", "-p", "proj7", "--budget", "400")
    assert "proj7 port is 8450" in out["text"] and out["omitted"]["records"] >= 15, out["omitted"]


def test_facts_follow_the_domain_and_no_project_lists_none(cli, vault_path, monkeypatch):
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-01T00:00:00Z")
    busy(vault_path)
    assert "proj7 port is 8450" not in cli.json("context", "-p", "proj7", "-d", "hermes")["text"]
    assert "Keyed facts" not in cli.json("context")["text"]


def test_commits_are_not_facts(cli, vault_path):
    cli.json("append", "the deploy port is 8276", "-p", "zeta", "--key", "deploy.port")
    lines = log_lines(vault_path)
    assert lines
    rec = {
        "ts": "2026-12-01T10:00:00Z",
        "domain": "code",
        "project": "zeta",
        "kind": "commit",
        "text": "fix the build",
        "key": "commit:0123abcd",
    }
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(rec) + "\n")
    out = cli.json("context", "-p", "zeta")
    [facts] = [s for s in out["sections"] if s["name"] == "facts"]
    assert len(facts["items"]) == 1 and "deploy.port" in facts["items"][0]


def test_a_newer_unkeyed_note_that_may_change_a_keyed_value_follows_it_as_a_guess(cli, vault_path):
    old = cli.json("append", "staging db port is 5432", "-p", "webapp", "--key", "staging.db.port")["id"]
    new = cli.json("append", "staging db port is 6543", "-p", "webapp")["id"]
    out = cli.json("context", "-p", "webapp")
    [facts] = [s for s in out["sections"] if s["name"] == "facts"]
    assert "each key's latest keyed value" in facts["title"] and "holds now" not in facts["title"]
    first, second = facts["items"]
    assert "5432" in first and f"may have been updated by id {new[-8:]}?" in first, facts
    assert "6543" in second and f"may be a new value of id {old[-8:]}?" in second, facts
    assert out["text"].count("staging db port is 6543") == 1  # not listed again among the records


def test_context_does_not_list_a_hot_entry_again_among_the_relevant_records(cli, vault_path):
    """Each hot entry the block shows (MEMORY.md, USER.md, the project's block) is listed once:
    its journal record is not repeated under "Relevant records" (tester 19 F9); a record of the
    log that matches still is, and so is an entry of another project's block."""
    cli.json("add", "The dev server runs on port 8080.")
    cli.json("add", "The dev server runs on port 9090.", "--force")
    cli.json("add", "--target", "user", "prefers the dev server on a high port")
    cli.json("add", "--project", "api", "the api dev server runs on port 7070")
    cli.json("add", "--project", "web", "the web dev server runs on port 3000")
    cli.json("append", "the dev server logs go to /var/log/dev")
    block, _, found = cli("context", "--query", "dev server").stdout.partition("## Relevant records")
    for said in ("port 8080.", "port 9090.", "high port"):
        assert said in block and said not in found, (block, found)
    assert "/var/log/dev" in found and "port 3000" in found and "port 7070" in found, found
    block, _, found = cli("context", "--query", "dev server", "-p", "api").stdout.partition("## Relevant records")
    assert "port 7070" in block and "port 7070" not in found, (block, found)
