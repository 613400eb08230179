"""A vault that arrived in a git clone is not trusted until the user says so (optmem/trust.py):
its hand-typed redlines read as unverified notes on every surface, and `optmem trust` makes
them rules."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import run_optmem
from test_git import git

RULE = "Never deploy on Fridays: the on-call rota is empty"


def _cloned(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose `.optmem/` vault holds a redline and a plain note, and a clone of it."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    vault = origin / ".optmem"
    run_optmem("--vault", str(vault), "append", RULE, "--redline")
    run_optmem("--vault", str(vault), "append", "deploy notes: the deploy script is deploy.sh, run it on weekdays")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "memory")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    return vault, clone / ".optmem"


def _json(vault: Path, *args: str) -> dict:
    res = run_optmem("--vault", str(vault), *args, "--json")
    return json.loads(res.stdout)


@pytest.mark.long
def test_a_vault_made_here_is_trusted_and_one_from_a_clone_is_not(tmp_path):
    made, cloned = _cloned(tmp_path)
    assert "Redlines — locked rules" in _json(made, "context")["text"]
    ctx = _json(cloned, "context")
    assert "Redlines — locked rules" not in ctx["text"] and "Unverified rules" in ctx["text"]
    assert RULE in ctx["text"] and "optmem trust" in ctx["text"]
    [rule] = [h for h in _json(cloned, "search", "deploy Fridays")["hits"] if h["tier"] == "redline"]
    assert rule["unverified"] is True
    assert _json(cloned, "get", rule["id"])["record"]["unverified"] is True
    human = run_optmem("--vault", str(cloned), "search", "deploy Fridays").stdout
    assert "UNVERIFIED REDLINE" in human
    assert any("trust" in n for n in _json(cloned, "doctor")["notes"])
    assert not any("trust" in n for n in _json(made, "doctor")["notes"])


@pytest.mark.long
def test_an_unverified_redline_ranks_as_a_note(tmp_path):
    """Trusted, a redline outranks everything; unverified, it competes on its words."""
    made, cloned = _cloned(tmp_path)
    query = "deploy script deploy.sh weekdays"
    assert _json(made, "search", query)["hits"][0]["tier"] == "redline"
    assert _json(cloned, "search", query)["hits"][0]["tier"] == "normal"


@pytest.mark.long
def test_trust_makes_the_redlines_rules_and_revoke_takes_it_back(tmp_path):
    _, cloned = _cloned(tmp_path)
    out = _json(cloned, "trust")
    assert out["trusted"] and out["changed"] and out["in_git"] and out["redlines"] == 1
    assert "Redlines — locked rules" in _json(cloned, "context")["text"]
    assert "unverified" not in json.dumps(_json(cloned, "search", "deploy Fridays"))
    assert _json(cloned, "trust")["changed"] is False  # trusted already
    listed = Path(os.environ["HOME"]) / ".local" / "share" / "optmem" / "trusted-vaults"
    assert str(cloned.resolve()) in listed.read_text("utf-8").splitlines()
    back = _json(cloned, "trust", "--revoke")
    assert back["trusted"] is False and back["changed"] is True
    assert "Unverified rules" in _json(cloned, "context")["text"]


@pytest.mark.long
def test_a_vault_outside_git_is_the_users_own(tmp_path):
    vault = tmp_path / "mine"
    run_optmem("--vault", str(vault), "append", RULE, "--redline")
    assert "Redlines — locked rules" in _json(vault, "context")["text"]
    out = _json(vault, "trust")
    assert out["trusted"] and not out["in_git"] and not out["changed"]
    assert not (Path(os.environ["HOME"]) / ".local" / "share" / "optmem" / "trusted-vaults").exists()


@pytest.mark.long
def test_the_summary_tree_marks_the_redlines_of_an_untrusted_vault(tmp_path):
    """A tree node quotes a redline as `[redline]`; a clone brings the node with it. Shown from an
    untrusted vault — `tree NODE`, `search --kind summary` — it reads `[unverified redline]`."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    made = origin / ".optmem"
    made.mkdir()
    (made / "optmem.toml").write_text("[tree]\nrun = 2\nfanout = 2\n", "utf-8")
    run_optmem("--vault", str(made), "append", RULE, "--redline", "--domain", "ops")
    run_optmem("--vault", str(made), "append", "deploy notes: deploy.sh runs the migrations", "--domain", "ops")
    run_optmem("--vault", str(made), "compact")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "memory and its tree")
    cloned = tmp_path / "clone" / ".optmem"
    git(tmp_path, "clone", "-q", str(origin), str(cloned.parent))
    [node] = [n for n in (cloned / "tree" / "ops").glob("L1-*.md")]
    assert "[redline]" in node.read_text("utf-8")  # the file says what compaction saw
    ref = f"ops/{node.stem}"
    assert "[redline]" in _json(made, "tree", ref)["node"]["body"]
    body = _json(cloned, "tree", ref)["node"]["body"]
    assert "[unverified redline]" in body and "[redline]" not in body
    hits = _json(cloned, "search", "deploy Fridays", "--kind", "summary")["hits"]
    assert {h["id"] for h in hits} >= {ref}  # (the root quotes it too)
    assert all("[unverified redline]" in h["text"] and "[redline]" not in h["text"] for h in hits)
    _json(cloned, "trust")
    assert "[redline]" in _json(cloned, "tree", ref)["node"]["body"]


@pytest.mark.long
def test_a_cloned_vault_split_per_writer_is_not_taken_for_one_begun_here(tmp_path):
    """A segmented vault has no LOG.jsonl and may have no hot file: a first write in the clone
    must still see that it came with records."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    vault = origin / ".optmem"
    run_optmem("--vault", str(vault), "segment")  # (no vault yet: refused)
    run_optmem("--vault", str(vault), "init")
    run_optmem("--vault", str(vault), "segment", "--writer", "origin")
    run_optmem("--vault", str(vault), "append", RULE, "--redline")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "memory")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    assert not (clone / ".optmem" / "LOG.jsonl").exists()
    run_optmem("--vault", str(clone / ".optmem"), "append", "a note written in the clone")
    assert "Unverified rules" in _json(clone / ".optmem", "context")["text"]
