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


def _an_older_copy_saved_over_the_log(cli, vault_path) -> None:
    """An editor saves an older copy of LOG.jsonl over a record an agent appended meanwhile; the
    next search says a record left the log."""
    cli.json("search", "staging")
    log = vault_path / "LOG.jsonl"
    copy = log.read_bytes()
    cli.json("append", "an agent record while the script ran")
    write_back(log, copy, in_place=False)
    assert "left the log" in cli("search", "staging").stderr


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
    cli.json("purge", "--origin", "user", rid, "--yes")
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
    _an_older_copy_saved_over_the_log(cli, vault_path)
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
    cli.json("purge", "--origin", "user", purged, "--yes")
    _an_older_copy_saved_over_the_log(cli, vault_path)
    own, cache = vault_path / ".clone", vault_path / ".cache"
    for name in ("purged", "lost.jsonl"):  # the layout of the older optmem
        (own / name).replace(cache / name)
    shutil.rmtree(own)
    (cache / "own-moved").unlink()  # (which never moved them: the move runs once, review 13 finding 2)
    notes_before = lost.notes(Vault(vault_path))
    assert len(lost.purged_hashes(Vault(vault_path))) == 1 and len(notes_before) == 1

    # the next write (an append) moves them; a purge after it adds its hash beside the old one
    later = cli.json("append", "my other phone is 138-0000-2222")["id"]
    cli.json("purge", "--origin", "user", later, "--yes")
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


def test_a_vault_only_read_keeps_the_older_layout_reads_it_whole_and_doctor_says_so(cli, vault_path):
    """Fix-u finding 5: reads never write, so a vault an older optmem wrote and this one only reads
    keeps its purged ids' hashes in `.cache/` — every read takes them from there together with
    `.clone/` (never one copy alone), `doctor` says where they are and that deleting `.cache/` would
    take them, and `doctor --fix` (a write: it takes the lock) moves them."""
    from optmem import lost
    from optmem.vault import Vault

    old = cli.json("append", "my phone is 138-0000-1111")["id"]
    new = cli.json("append", "my other phone is 138-0000-2222")["id"]
    cli.json("purge", "--origin", "user", old, new, "--yes")
    own, cache = vault_path / ".clone", vault_path / ".cache"
    # an older optmem purged `old` (its hash in .cache/), this one `new` (in .clone/)
    (own / "purged").write_text(f"{lost.id_hash(new)}\n", "utf-8")
    (cache / "purged").write_text(f"{lost.id_hash(old)}\n", "utf-8")
    (cache / "own-moved").unlink()  # (an older optmem's vault: no move has run yet)
    before = (own / "purged").read_bytes()
    cli.json("search", "phone")
    report = cli.json("doctor", code=None)
    assert (cache / "purged").is_file() and (own / "purged").read_bytes() == before  # reads wrote nothing
    assert lost.purged_hashes(Vault(vault_path)) == {lost.id_hash(old), lost.id_hash(new)}  # both copies read
    said = [n for n in report["notes"] if ".cache/purged" in n]
    assert said and "do not delete .cache/" in said[0] and "doctor --fix" in said[0], report["notes"]
    cli.json("doctor", "--fix", code=None)
    assert not (cache / "purged").exists()
    assert lost.purged_hashes(Vault(vault_path)) == {lost.id_hash(old), lost.id_hash(new)}
    assert not [n for n in cli.json("doctor", code=None)["notes"] if ".cache/purged" in n]


def test_records_dropped_from_the_log_while_the_cache_is_deleted_are_reported(cli, vault_path):
    import shutil

    cli.json("append", "the staging db is db-stage-2")
    log = vault_path / "LOG.jsonl"
    copy = log.read_bytes()
    added = [cli.json("append", f"agent record {w} while the script ran")["id"] for w in ("alpha", "beta")]
    shutil.rmtree(vault_path / ".cache")  # the index is gone …
    write_back(log, copy, in_place=False)  # … when an older copy of the log is written back

    res = cli("search", "staging", "--json")
    assert res.exit_code == 0
    assert "2 record(s)" in res.stderr and "left the log" in res.stderr, res.stderr
    assert added[0][-8:] in res.stderr and added[1][-8:] in res.stderr
    gone = [p for p in cli.json("doctor", code=1)["problems"] if p["code"] == "records_gone"]
    assert gone and all(rid in gone[0]["message"] for rid in added)


def test_entries_dropped_from_a_hot_file_while_the_cache_is_deleted_are_reported(cli, vault_path):
    import shutil

    cli.json("add", "the user prefers tabs")
    hot = vault_path / "MEMORY.md"
    copy = hot.read_bytes()
    for n in (1, 2):
        cli.json("add", f"entry {n} added while the editor was open")
    shutil.rmtree(vault_path / ".cache")
    write_back(hot, copy, in_place=True)

    res = cli("search", "entry", "--json")
    assert "2 entr" in res.stderr and "MEMORY.md" in res.stderr, res.stderr
    assert [p for p in cli.json("doctor", code=1)["problems"] if p["code"] == "entries_gone"]


def test_a_vault_without_the_kept_ids_gets_them_at_its_next_write(cli, vault_path):
    """An older optmem's vault has no `.clone/held`: the next write keeps every id the index holds,
    so what leaves the log while the cache is deleted afterwards is told."""
    import shutil

    first = cli.json("append", "the staging db is db-stage-2")["id"]
    log = vault_path / "LOG.jsonl"
    copy = log.read_bytes()
    (vault_path / ".clone" / "held").unlink()
    second = cli.json("append", "an agent record while the script ran")["id"]
    assert set((vault_path / ".clone" / "held").read_text("utf-8").split()) == {first, second}
    shutil.rmtree(vault_path / ".cache")
    write_back(log, copy, in_place=False)
    res = cli("search", "staging")
    assert "1 record(s) left the log" in res.stderr and second[-8:] in res.stderr, res.stderr


def test_a_purged_id_is_not_kept_among_what_the_log_held(cli, vault_path):
    import shutil

    rid = cli.json("append", "my phone is 138-0000-1111")["id"]
    cli.json("append", "another note")
    assert rid in (vault_path / ".clone" / "held").read_text("utf-8")
    cli.json("purge", "--origin", "user", rid, "--yes")
    assert rid not in (vault_path / ".clone" / "held").read_text("utf-8")
    shutil.rmtree(vault_path / ".cache")
    assert "left the log" not in cli("search", "note").stderr


def test_a_read_that_catches_the_index_up_notes_what_it_took_in_under_the_lock(cli, vault_path):
    """Review 15, finding 4, then review 16, finding 3 (b): a search that caught the index up with
    lines typed into the log appended their ids to `held` outside the lock; kept in the index's meta
    instead, deleting `.cache/` before a writer came lost a record's later departure untold (a clone
    that only reads never noted them). The read's catch-up, which holds the vault lock, appends
    them to `held` once; what it noted is told when it leaves the log with the cache gone."""
    import shutil

    cli.json("append", "the staging db is db-stage-2")
    held = vault_path / ".clone" / "held"
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"text": "typed by hand: the port is 8080"}\n')
    (typed,) = [h["id"] for h in cli.json("search", "typed")["hits"]]
    assert held.read_text("utf-8").split().count(typed) == 1  # (noted by the read, lock held)
    assert cli.json("get", typed)["record"]["text"].startswith("typed by hand")
    cli.json("append", "a write takes the lock")
    cli.json("append", "another write")
    assert held.read_text("utf-8").split().count(typed) == 1  # (noted once)
    shutil.rmtree(vault_path / ".cache")
    log = vault_path / "LOG.jsonl"
    log.write_text("".join(x for x in log.read_text("utf-8").splitlines(keepends=True) if "typed by hand" not in x))
    res = cli("search", "staging")
    assert "1 record(s) left the log" in res.stderr and typed[-8:] in res.stderr, res.stderr


def test_a_writer_clears_only_the_ids_it_noted_from_the_index(cli, vault_path, monkeypatch):
    """Review 16, finding 3 (a): `note_held` read the ids waiting in the index's meta, appended
    them to `held`, then deleted them all — ids another process's catch-up added between the read
    and the delete were lost. Only what was read is cleared; the rest waits for the next writer."""
    import sqlite3

    from optmem import fsio, lost
    from optmem.index import open_index
    from optmem.vault import Vault

    cli.json("append", "the staging db is db-stage-2")
    vault = Vault(vault_path)
    with open_index(vault) as idx:
        lost.to_hold(idx.conn, ["FIRST-WAITING"])
        idx.conn.commit()
        real = fsio.append_lines
        other = sqlite3.connect(vault.index_path)

        def append_then_a_reader_adds(path, lines, **kw):
            real(path, lines, **kw)  # (the real append; then, before the delete, another catch-up)
            with other:
                lost.to_hold(other, ["ADDED-MEANWHILE"])

        monkeypatch.setattr(fsio, "append_lines", append_then_a_reader_adds)
        with vault.lock():
            lost.note_held(vault, idx.conn)
        monkeypatch.setattr(fsio, "append_lines", real)
        other.close()
        assert "FIRST-WAITING" in (vault_path / ".clone" / "held").read_text("utf-8").split()
        (waiting,) = idx.conn.execute("SELECT v FROM meta WHERE k = ?", (lost.UNHELD,)).fetchone()
        assert waiting.split() == ["ADDED-MEANWHILE"]
        with vault.lock():
            lost.note_held(vault, idx.conn)
        assert "ADDED-MEANWHILE" in (vault_path / ".clone" / "held").read_text("utf-8").split()
        assert idx.conn.execute("SELECT v FROM meta WHERE k = ?", (lost.UNHELD,)).fetchone() is None
