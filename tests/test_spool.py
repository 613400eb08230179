"""The spool (`optmem.spool`): what the Hermes provider and the git hooks keep when the vault
cannot take a write, stored in order by the next drain — on real files."""

from __future__ import annotations

import json

from optmem import fsio, spool
from optmem.errors import Locked, UnsafeContent


def test_a_drain_stores_in_order_stops_at_what_cannot_be_taken_and_drops_what_is_refused(tmp_path):
    path = tmp_path / "spool.jsonl"
    for n in range(4):
        spool.put(path, {"n": n})
    assert all(json.loads(x)["at"] for x in path.read_text().splitlines())  # each says when it was said
    stored, dropped, vault = [], [], {"locked": True}

    def store(entry):
        if entry["n"] == 1:
            raise UnsafeContent("a secret")  # refused for what it says: reported, not kept
        if entry["n"] == 2 and vault["locked"]:
            raise Locked("the vault is locked")  # cannot be taken now: it and what follows stay
        stored.append(entry["n"])

    assert spool.drain(path, store, dropped=lambda e, err: dropped.append((e["n"], str(err)))) is False
    assert stored == [0] and dropped == [(1, "a secret")]
    assert [json.loads(x)["n"] for x in path.read_text().splitlines()] == [2, 3]
    vault["locked"] = False
    assert spool.drain(path, store, dropped=lambda e, err: None) is True
    assert stored == [0, 2, 3] and not path.exists()


def test_what_is_appended_while_a_drain_runs_is_kept(tmp_path):
    """A write that could not wait for the drain's lock appends anyway; the drain keeps it."""
    path = tmp_path / "spool.jsonl"
    spool.put(path, {"n": 0})

    def store(entry):
        fsio.append_lines(path, [json.dumps({"n": 1}).encode()])  # (another process, meanwhile)

    assert spool.drain(path, store, dropped=lambda e, err: None) is False
    assert [json.loads(x)["n"] for x in path.read_text().splitlines()] == [1]
