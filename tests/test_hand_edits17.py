"""Hand edits `doctor` tells (tester17, findings 5 and 6): a record's text changed in place in the
log (its earlier words gone), a field a record reads only as a string holding a number, and a
line in a hot file that looks like a separator and is none."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Cli

from optmem.vault import Vault


def _doctor(cli: Cli) -> tuple[int, dict]:
    res = cli("doctor", "--json")
    return res.exit_code, json.loads(res.stdout)


def test_a_record_changed_in_place_is_told_until_doctor_fix_clears_it(cli: Cli, vault: Vault) -> None:
    rid = cli.json("append", "the backend listens on port 8080")["id"]
    cli.json("append", "deploys go through staging")
    cli.json("search", "backend")  # (the index reads the log as it is)
    log = vault.root / "LOG.jsonl"
    log.write_text(log.read_text("utf-8").replace("8080", "8081"), "utf-8")  # sed 's/8080/8081/'

    res = cli("search", "backend", "--json")
    assert res.exit_code == 0 and rid[-8:] in res.stderr and "edited outside optmem" in res.stderr
    code, report = _doctor(cli)
    (problem,) = [p for p in report["problems"] if p["code"] == "records_changed"]
    assert code == 1 and rid in problem["message"] and "optmem correct" in problem["message"]
    cli.json("doctor", "--fix", code=None)
    code, report = _doctor(cli)
    assert code == 0 and not report["problems"], report


def test_appending_and_correcting_change_no_record(cli: Cli, vault: Vault) -> None:
    """What optmem itself writes never reads as a record changed in place: appends, corrections,
    forgets, hot-memory edits, a rebuild of the index."""
    rid = cli.json("append", "the backend listens on port 8080")["id"]
    cli.json("correct", rid, "the backend listens on port 9090")
    cli.json("add", "uses pnpm")
    cli.json("replace", "pnpm", "pnpm 9")
    cli.json("forget", rid)
    cli.json("reindex")
    log = vault.root / "LOG.jsonl"
    with log.open("a", encoding="utf-8") as f:  # a line typed by hand at the end: an append
        f.write(json.dumps({"ts": "2026-11-29T18:55:30Z", "text": "typed by hand"}) + "\n")
    cli.json("search", "hand")
    code, report = _doctor(cli)
    assert code == 0 and not [p for p in report["problems"] if p["code"] == "records_changed"], report


def test_a_kind_that_is_a_number_is_told(cli: Cli, vault: Vault) -> None:
    cli.json("append", "a note")
    with (vault.root / "LOG.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"ts": "2026-11-29T18:55:30Z", "text": "kind by hand", "kind": 5, "tier": True}) + "\n")
    code, report = _doctor(cli)
    said = {p["message"].split(" ")[0]: p["message"] for p in report["problems"] if p["code"] == "bad_value"}
    assert code == 1 and "reads as having kind `note`" in said["kind"] and "tier `normal`" in said["tier"]


def test_a_line_that_looks_like_a_separator_is_noted(cli: Cli, vault: Vault, tmp_path: Path) -> None:
    (vault.root / "MEMORY.md").write_text("uses pnpm\n  §  \nprefers tabs\n§§\nships on Friday\n§\nlast\n", "utf-8")
    assert len(cli.json("show")["files"][0]["entries"]) == 2  # (read as Hermes reads it: one line § parts)
    code, report = _doctor(cli)
    noted = [n for n in report["notes"] if "looks like a separator" in n]
    assert len(noted) == 2 and "line 2 ('  §  ')" in noted[0] and "line 4 ('§§')" in noted[1]
    (vault.root / "MEMORY.md").write_text("uses pnpm\n§\nprefers tabs\r\n§\r\nlast\n", "utf-8")
    assert not [n for n in _doctor(cli)[1]["notes"] if "looks like a separator" in n]


def test_a_node_of_a_domain_with_no_tree_says_so(cli: Cli, vault: Vault) -> None:
    """`tree no/such`: the domain has no tree — said beside the bad node id, or alone."""
    err = cli.json("tree", "no/such", code=2)["error"]
    assert "'such' is not a node id" in err["message"] and "domain 'no' has no tree" in err["message"]
    err = cli.json("tree", "no/root", code=1)["error"]
    assert err["code"] == "not_found" and "domain 'no' has no tree" in err["message"]
    assert "`optmem compact` makes them" in err["message"]
