"""`stats` on a clone not trusted that holds no redline (review 13, finding 10): nothing reads
as an unverified rule, so `redlines_unverified` is false — it said true."""

from __future__ import annotations

import json

import pytest
from test_git import git
from test_trust import om


@pytest.mark.long
def test_a_clone_without_redlines_has_none_unverified(tmp_path):
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    om("--vault", str(origin / ".optmem"), "append", "deploy notes: the deploy script is deploy.sh")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "a vault")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    stats = json.loads(om("--vault", str(clone / ".optmem"), "stats", "--json").stdout)
    assert stats["redlines"] == 0 and stats["redlines_unverified"] is False, stats
    om("--vault", str(clone / ".optmem"), "append", "always run the tests first", "--redline", "--origin", "user")
    stats = json.loads(om("--vault", str(clone / ".optmem"), "stats", "--json").stdout)
    assert stats["redlines"] == 1 and stats["redlines_unverified"] is True, stats
