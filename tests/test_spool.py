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


def test_a_write_while_a_drain_holds_the_spool_waits_beside_it_and_keeps_its_place(tmp_path):
    """A write that finds a drain holding the spool never appends to the file the drain rewrites:
    it waits in a file of its own beside it (review finding 5), which the drain takes after what
    it held; when the drain stops (the vault locked), the waiting write is moved into the spool
    before any later one, so the spool stays in the order the writes were said (review 2, 4)."""
    path = tmp_path / "spool.jsonl"
    spool.put(path, {"n": 0})
    stored, vault = [], {"locked": False}

    def store(entry):
        if entry["n"] == 0:
            spool.put(path, {"n": 1})  # (another writer, meanwhile: it waits beside the spool)
            assert any(p.name.startswith("spool.jsonl.w") for p in tmp_path.iterdir())
        if vault["locked"]:
            raise Locked("the vault is locked")
        stored.append(entry["n"])

    assert spool.drain(path, store, dropped=lambda e, err: None) is True  # (what waited, taken too)
    assert stored == [0, 1] and not path.exists()
    assert not any(p.name.startswith("spool.jsonl.w") for p in tmp_path.iterdir())
    # A is spooled; B waits while a drain that cannot store stops; C comes after: A, B, C
    spool.put(path, {"n": "A"})
    vault["locked"] = True

    def blocked(entry):
        spool.put(path, {"n": "B"})
        raise Locked("the vault is locked")

    assert spool.drain(path, blocked, dropped=lambda e, err: None) is False
    spool.put(path, {"n": "C"})
    vault["locked"] = False
    assert spool.drain(path, store, dropped=lambda e, err: None) is True
    assert stored[2:] == ["A", "B", "C"]


def test_what_store_cannot_read_is_set_aside_said_and_blocks_nothing(tmp_path):
    """A line that is no JSON object, or an entry `store` cannot read (a commit without its sha),
    goes to `<spool>.rejected` and is reported; the entries after it are stored (review finding 4:
    one bad entry kept every later commit from being recorded)."""
    path = tmp_path / "spool.jsonl"
    fsio.append_lines(path, [b"not json", b"[1, 2]", b'{"commit": "caf\xc3"}'])  # (the last: cut in a character)
    spool.put(path, {"at": "2026-12-01T00:00:00Z"})
    spool.put(path, {"commit": "abc", "at": "2026-12-01T00:00:01Z"})
    stored, dropped = [], []
    assert spool.drain(path, lambda e: stored.append(e["commit"]), dropped=lambda e, err: dropped.append(e)) is True
    assert stored == ["abc"] and len(dropped) == 4 and not path.exists()
    rejected = (tmp_path / "spool.jsonl.rejected").read_bytes().splitlines()
    assert rejected[:3] == [b"not json", b"[1, 2]", b'{"commit": "caf\xc3"}']
    assert json.loads(rejected[3]) == {"at": "2026-12-01T00:00:00Z"}


def test_a_drain_killed_midway_leaves_only_what_it_had_not_stored(tmp_path):
    """The spool is rewritten after each entry stored: a drain killed on its third entry leaves
    the third and the fourth, so the first two are not stored again (review finding 6)."""
    path = tmp_path / "spool.jsonl"
    for n in range(4):
        spool.put(path, {"n": n})

    def store(entry):
        if entry["n"] == 2:
            raise SystemExit("killed")  # (no handler of the drain's runs: as a kill)

    try:
        spool.drain(path, store, dropped=lambda e, err: None)
    except SystemExit:
        pass
    assert [json.loads(x)["n"] for x in path.read_text().splitlines()] == [2, 3]
