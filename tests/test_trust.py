"""A vault that arrived in a git clone is not trusted until the user says so (optmem/trust.py):
its hand-typed redlines read as unverified notes on every surface, and `optmem trust` makes
them rules."""

from __future__ import annotations

import json
import os
from pathlib import Path

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


def test_an_unverified_redline_ranks_as_a_note(tmp_path):
    """Trusted, a redline outranks everything; unverified, it competes on its words."""
    made, cloned = _cloned(tmp_path)
    query = "deploy script deploy.sh weekdays"
    assert _json(made, "search", query)["hits"][0]["tier"] == "redline"
    assert _json(cloned, "search", query)["hits"][0]["tier"] == "normal"


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


def test_a_vault_outside_git_is_the_users_own(tmp_path):
    vault = tmp_path / "mine"
    run_optmem("--vault", str(vault), "append", RULE, "--redline")
    assert "Redlines — locked rules" in _json(vault, "context")["text"]
    out = _json(vault, "trust")
    assert out["trusted"] and not out["in_git"] and not out["changed"]
    assert not (Path(os.environ["HOME"]) / ".local" / "share" / "optmem" / "trusted-vaults").exists()
