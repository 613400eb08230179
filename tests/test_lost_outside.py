"""Nothing lost silently (tester 11 item 10): an outside program that read a file, then wrote its
older copy back over what optmem wrote meanwhile, is told — by the command that notices and by
`doctor` — whether the file is LOG.jsonl (records the index held are gone from it) or a hot file
(entries optmem added since are gone from it)."""

from __future__ import annotations

import os
from pathlib import Path


def write_back(path: Path, data: bytes, *, in_place: bool) -> None:
    """What an editor or script does: its copy written back — by a temporary file and a rename,
    or over the file in place."""
    if in_place:
        with open(path, "wb") as fh:
            fh.write(data)
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def test_records_an_outside_rewrite_drops_from_the_log_are_reported(cli, vault_path):
    for text in ("deploys run from the ci box", "the staging db is db-stage-2"):
        cli.json("append", text)
    cli.json("search", "staging")  # the index holds them
    log = vault_path / "LOG.jsonl"
    copy = log.read_bytes()  # a script reads the log …
    added = [cli.json("append", f"agent record {w} while the script ran")["id"] for w in ("alpha", "beta", "gamma")]
    write_back(log, copy.replace(b"db-stage-2", b"db-stage-3"), in_place=False)  # … and writes its copy back

    res = cli("search", "staging", "--json")
    assert res.exit_code == 0
    assert "3 record(s)" in res.stderr and "left the log" in res.stderr, res.stderr
    assert added[0][-8:] in res.stderr
    report = cli.json("doctor", code=1)
    gone = [p for p in report["problems"] if p["code"] == "records_gone"]
    assert gone and all(rid in gone[0]["message"] for rid in added), report
    # said once by the command that noticed; doctor keeps saying it until --fix clears the note
    assert "left the log" not in cli("search", "staging").stderr
    fixed = cli.json("doctor", "--fix", code=None)
    assert any("left the log" in f for f in fixed["fixed"]), fixed
    assert not [p for p in cli.json("doctor", code=None)["problems"] if p["code"] == "records_gone"]


def test_a_purge_is_no_loss_to_report(cli, vault_path):
    rid = cli.json("append", "my phone is 138-0000-1111")["id"]
    cli.json("append", "another note")
    cli.json("purge", rid, "--yes")
    res = cli("search", "note")
    assert "left the log" not in res.stderr
    assert not [p for p in cli.json("doctor", code=None)["problems"] if p["code"] == "records_gone"]


def test_entries_added_since_an_outside_copy_was_read_and_written_back_are_reported(cli, vault_path):
    cli.json("add", "the user prefers tabs")
    hot = vault_path / "MEMORY.md"
    copy = hot.read_bytes()  # an editor opens MEMORY.md …
    for n in (1, 2, 3):
        cli.json("add", f"entry {n} added while the editor was open")
    write_back(hot, copy.replace(b"tabs", b"spaces"), in_place=True)  # … and saves its copy

    res = cli("search", "entry", "--json")
    assert "3 entr" in res.stderr and "MEMORY.md" in res.stderr, res.stderr
    assert "entry 1 added while the editor was open" in res.stderr
    report = cli.json("doctor", code=1)
    assert [p for p in report["problems"] if p["code"] == "entries_gone"], report
    # the entries are still findable in the log, as removed
    assert cli.json("search", "editor was open")["hits"]


def test_a_person_removing_an_older_entry_is_not_a_loss(cli, vault_path):
    for text in ("the user prefers tabs", "the user's editor is vim", "the user lives in Lyon"):
        cli.json("add", text)
    hot = vault_path / "MEMORY.md"
    hot.write_text(hot.read_text("utf-8").replace("the user prefers tabs\n§\n", ""), "utf-8")
    res = cli("search", "user")
    assert "entr" not in res.stderr or "removed" not in res.stderr, res.stderr
    assert not [p for p in cli.json("doctor", code=None)["problems"] if p["code"] == "entries_gone"]


def test_the_notes_of_what_went_survive_deleting_the_cache(cli, vault_path):
    """Review 11 finding 11: `.cache/` holds only what can be rebuilt; the notes of what went (and
    the purged ids' hashes) live in `.clone/`, never committed — deleting the cache keeps them."""
    import shutil

    for text in ("deploys run from the ci box", "the staging db is db-stage-2"):
        cli.json("append", text)
    cli.json("search", "staging")
    log = vault_path / "LOG.jsonl"
    copy = log.read_bytes()
    cli.json("append", "an agent record while the script ran")
    write_back(log, copy, in_place=False)
    assert "left the log" in cli("search", "staging").stderr
    shutil.rmtree(vault_path / ".cache")
    report = cli.json("doctor", code=1)
    assert [p for p in report["problems"] if p["code"] == "records_gone"], report
    assert (vault_path / ".clone" / ".gitignore").read_text("utf-8") == "*\n"


def test_the_newest_entry_removed_by_hand_is_told_as_what_may_have_happened(cli, vault_path):
    """Review 11 finding 12: an entry removed outside optmem may be a person's edit or an older copy
    saved over it — the note says what is known (optmem's entry is gone from the file, removed
    outside optmem) and offers the cause as a possibility, not a fact."""
    for text in ("the user prefers tabs", "the user's editor is vim", "the user lives in Lyon"):
        cli.json("add", text)
    hot = vault_path / "MEMORY.md"
    hot.write_text(hot.read_text("utf-8").replace("\n§\nthe user lives in Lyon", ""), "utf-8")
    assert "Lyon" not in hot.read_text("utf-8")
    res = cli("search", "user")
    assert "removed outside optmem" in res.stderr and "may have" in res.stderr, res.stderr
    assert "were removed by an edit outside optmem that saved an older copy" not in res.stderr
    gone = [p for p in cli.json("doctor", code=None)["problems"] if p["code"] == "entries_gone"]
    assert gone and "may have" in gone[0]["message"], gone


def test_what_an_older_optmem_kept_in_the_cache_moves_to_the_clone_folder(cli, vault_path):
    """Review 12 finding 1: a vault that purged, and noted a loss, under an optmem that kept both in
    `.cache/` moves them into `.clone/` at its next write — so deleting the cache afterwards keeps
    them (it did not: new hashes went to `.clone/`, the old ones stayed in `.cache/`, and went
    with it)."""
    import shutil

    from optmem import lost
    from optmem.vault import Vault

    purged = cli.json("append", "my phone is 138-0000-1111")["id"]
    cli.json("append", "the staging db is db-stage-2")
    cli.json("purge", purged, "--yes")
    cli.json("search", "staging")
    log = vault_path / "LOG.jsonl"
    copy = log.read_bytes()
    cli.json("append", "an agent record while the script ran")
    write_back(log, copy, in_place=False)
    assert "left the log" in cli("search", "staging").stderr
    own, cache = vault_path / ".clone", vault_path / ".cache"
    for name in ("purged", "lost.jsonl"):  # the layout of the older optmem
        (own / name).replace(cache / name)
    shutil.rmtree(own)
    (cache / "own-moved").unlink()  # (which never moved them: the move runs once, review 13 finding 2)
    notes_before = lost.notes(Vault(vault_path))
    assert len(lost.purged_hashes(Vault(vault_path))) == 1 and len(notes_before) == 1

    # the next write (an append) moves them; a purge after it adds its hash beside the old one
    later = cli.json("append", "my other phone is 138-0000-2222")["id"]
    cli.json("purge", later, "--yes")
    assert not (cache / "purged").exists() and not (cache / "lost.jsonl").exists()
    assert (own / "purged").is_file() and (own / "lost.jsonl").is_file()
    shutil.rmtree(cache)
    vault = Vault(vault_path)
    assert lost.purged_hashes(vault) == {lost.id_hash(purged), lost.id_hash(later)}
    assert lost.notes(vault) == notes_before
    report = cli.json("doctor", code=1)
    assert [p for p in report["problems"] if p["code"] == "records_gone"], report


def test_a_move_from_the_cache_cut_short_leaves_no_note_twice(cli, vault_path):
    """The move appends the old lines to `.clone/`, then removes the old file: cut short between
    the two, the next write appends them again — a note read twice is still one note."""
    from optmem import lost
    from optmem.vault import Vault

    cli.json("append", "the staging db is db-stage-2")
    cli.json("search", "staging")
    log = vault_path / "LOG.jsonl"
    copy = log.read_bytes()
    cli.json("append", "an agent record while the script ran")
    write_back(log, copy, in_place=False)
    cli("search", "staging")
    note = vault_path / ".clone" / "lost.jsonl"
    (vault_path / ".cache" / "lost.jsonl").write_bytes(note.read_bytes())  # (moved, not yet removed)
    (vault_path / ".cache" / "own-moved").unlink()  # (the move, cut short, never noted it ran)
    cli.json("append", "one more")
    assert not (vault_path / ".cache" / "lost.jsonl").exists()
    assert len(lost.notes(Vault(vault_path))) == 1
