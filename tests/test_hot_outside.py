"""A hot file another program writes without its lock (a person's editor, a script): what it wrote
is never lost to optmem's write — the file is replaced only while it holds what optmem read, and an
edit made meanwhile is made again on the file as that program left it (tester 16 #1)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import HANG, PATIENT, log_lines

from optmem import fsio, log, memory
from optmem.errors import FileChanged
from optmem.vault import Vault

# a person's script: appends an entry to MEMORY.md, as `printf '\n§\n…' >> MEMORY.md` does, without
# the lock, until it has written them all
APPENDER = textwrap.dedent("""
    import os, sys, time
    path, count = sys.argv[1], int(sys.argv[2])
    for i in range(count):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(fd, f"\\n§\\nperson wrote entry {i}".encode())
        os.close(fd)
        time.sleep(0.003)
""")
# a person's editor: reads the file, and saves it whole (a new file renamed over it), without the lock
REWRITER = textwrap.dedent("""
    import os, sys, time
    path, count = sys.argv[1], int(sys.argv[2])
    for i in range(count):
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        tmp = f"{path}.{os.getpid()}.edit"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text.rstrip("\\n") + f"\\n§\\neditor wrote entry {i}\\n")
        os.replace(tmp, path)
        time.sleep(0.003)
""")
ADDER = textwrap.dedent("""
    import sys
    from optmem import memory
    from optmem.vault import Vault
    v = Vault(sys.argv[1], [sys.argv[4]])
    for i in range(int(sys.argv[3])):
        memory.add(v, f"optmem wrote entry {i} of adder {sys.argv[2]}")
""")


def _roomy(vault_path: Path) -> None:
    (vault_path / "optmem.toml").write_text("[limits]\nmemory = 200000\n", encoding="utf-8")


@pytest.mark.long
def test_a_script_appending_without_the_lock_loses_nothing_to_adds(vault: Vault, vault_path: Path) -> None:
    """Real processes: a script appends entries to MEMORY.md without the lock while two processes
    add entries through optmem. Every entry of each is in the file at the end (on main before
    this fix, 15 of 60 appended entries were gone, with no journal line and no warning)."""
    _roomy(vault_path)
    memory.add(Vault(vault_path), "the first entry")  # (the file exists: the script appends to it)
    path = vault_path / "MEMORY.md"
    script = subprocess.Popen([sys.executable, "-c", APPENDER, str(path), "150"])
    adders = [subprocess.Popen([sys.executable, "-c", ADDER, str(vault_path), str(a), "25", PATIENT]) for a in range(2)]
    for p in [script, *adders]:
        assert p.wait(timeout=HANG) == 0
    entries = memory.load(Vault(vault_path)).entries
    person = [e for e in entries if e.startswith("person wrote")]
    ours = [e for e in entries if e.startswith("optmem wrote")]
    assert sorted(person) == sorted(f"person wrote entry {i}" for i in range(150))
    assert sorted(ours) == sorted(f"optmem wrote entry {i} of adder {a}" for a in range(2) for i in range(25))


@pytest.mark.long
def test_an_editor_saving_without_the_lock_loses_nothing_to_adds(vault: Vault, vault_path: Path) -> None:
    """An editor that reads the file and saves it whole: optmem never writes over what it saved.
    (The other way round — the editor's save writing over an entry optmem added after it read the
    file — is the editor's doing: that entry stays in the log, and the next read says so.)"""
    _roomy(vault_path)
    memory.add(Vault(vault_path), "the first entry")
    path = vault_path / "MEMORY.md"
    editor = subprocess.Popen([sys.executable, "-c", REWRITER, str(path), "80"])
    adder = subprocess.Popen([sys.executable, "-c", ADDER, str(vault_path), "0", "25", PATIENT])
    for p in (editor, adder):
        assert p.wait(timeout=HANG) == 0
    entries = memory.load(Vault(vault_path)).entries
    assert sorted(e for e in entries if e.startswith("editor wrote")) == sorted(
        f"editor wrote entry {i}" for i in range(80)
    )
    # every entry optmem added is in the file or, written over by the editor, journalled in the log
    journalled = {r["text"] for r in log_lines(vault_path) if r["kind"] == "memory"}
    assert {f"optmem wrote entry {i} of adder 0" for i in range(25)} <= journalled


def _append(path: Path, text: str) -> None:
    """A person's script: one entry appended to the file, without the lock."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(f"\n§\n{text}")


def test_an_entry_appended_after_optmem_read_the_file_is_kept_and_journalled(
    vault: Vault, vault_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Any
) -> None:
    """The script appends after `add` read the file and before its journal: the add is made again
    on the file as it is now — both entries are in the file, the script's journalled as an edit
    outside optmem."""
    memory.add(vault, "the first entry")
    path = vault_path / "MEMORY.md"
    edit, done = memory._edit, []

    def meanwhile(hot: memory.HotFile, *args: Any, **kw: Any) -> Any:
        if not done:
            done.append(1)
            _append(path, "a person's entry")
        return edit(hot, *args, **kw)

    monkeypatch.setattr(memory, "_edit", meanwhile)
    out = cli.json("add", "optmem's entry")
    assert out["status"] == "added"
    assert memory.load(vault).entries == ["the first entry", "a person's entry", "optmem's entry"]
    journal = [(r["op"], r["text"]) for r in log_lines(vault_path) if r["kind"] == "memory"]
    assert journal == [("add", "the first entry"), ("add", "a person's entry"), ("add", "optmem's entry")]
    assert cli.json("doctor")["problems"] == []


def test_an_entry_appended_while_the_edit_is_journalled_is_kept(
    vault: Vault, vault_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Any
) -> None:
    """The script appends after the edit's journal, before the rename: the journalled edit is made
    again on the file the script left — both are in the file, the edit journalled once."""
    memory.add(vault, "the first entry")
    memory.add(vault, "the port is 8080 on staging")
    path = vault_path / "MEMORY.md"
    journal_hot, done = log.journal_hot, []

    def meanwhile(*args: Any, **kw: Any) -> Any:
        out = journal_hot(*args, **kw)
        if not done:
            done.append(1)
            _append(path, "a person's entry")
        return out

    monkeypatch.setattr(log, "journal_hot", meanwhile)
    out = cli.json("replace", "8080", "9090")
    assert out["status"] == "replaced"
    assert memory.load(vault).entries == ["the first entry", "the port is 9090 on staging", "a person's entry"]
    cli.json("show")  # a read journals the person's entry
    journal = [(r["op"], r["text"]) for r in log_lines(vault_path) if r["kind"] == "memory"]
    assert journal[-2:] == [("replace", "the port is 9090 on staging"), ("add", "a person's entry")]
    assert cli.json("doctor")["problems"] == []


def test_a_write_that_lands_as_the_file_is_replaced_is_put_back(
    vault: Vault, vault_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Any
) -> None:
    """The script's append lands in the rename itself (through a descriptor it opened on the old
    file): optmem sees it there, puts that file back, and makes its edit again on it."""
    memory.add(vault, "the first entry")
    path = vault_path / "MEMORY.md"
    rename, done = fsio.Replacement._rename, []

    def meanwhile(self: fsio.Replacement) -> None:
        if not done and self.path == path:
            done.append(1)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            rename(self)  # optmem's file takes the name; the script, holding the old one, writes on
            os.write(fd, "\n§\na person's entry".encode())
            os.close(fd)
            return
        rename(self)

    monkeypatch.setattr(fsio.Replacement, "_rename", meanwhile)
    out = cli.json("add", "optmem's entry")
    assert out["status"] == "added" and done
    assert memory.load(vault).entries == ["the first entry", "a person's entry", "optmem's entry"]
    assert not list(vault_path.glob("*.kept"))


def test_a_file_that_keeps_changing_is_refused_with_nothing_lost(
    vault: Vault, vault_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Any
) -> None:
    """A file that changes every time optmem reads it: after a few tries (for the lock's timeout) the add is refused
    (`file_changed`, exit 3, the stable error shape) — nothing of it written or journalled, every
    entry the script wrote in the file."""
    (vault_path / "optmem.toml").write_text("[lock]\ntimeout = 0.2\n", encoding="utf-8")  # timeout under test
    memory.add(vault, "the first entry")
    path = vault_path / "MEMORY.md"
    edit, n = memory._edit, []

    def meanwhile(hot: memory.HotFile, *args: Any, **kw: Any) -> Any:
        n.append(1)
        _append(path, f"a person's entry {len(n)}")
        return edit(hot, *args, **kw)

    monkeypatch.setattr(memory, "_edit", meanwhile)
    out = cli.json("add", "optmem's entry", code=3)
    assert out["ok"] is False and out["error"]["code"] == "file_changed", out
    assert "MEMORY.md.lock" in out["error"]["message"] and "nothing was written" in out["error"]["message"]
    monkeypatch.setattr(memory, "_edit", edit)
    assert memory.load(vault).entries == ["the first entry", *(f"a person's entry {i}" for i in range(1, len(n) + 1))]
    assert "optmem's entry" not in {r["text"] for r in log_lines(vault_path)}


def test_staged_refuses_a_file_changed_since_it_was_read(tmp_path: Path) -> None:
    """`fsio.staged` with `expect`: a file that no longer holds what was read is not replaced."""
    path = tmp_path / "MEMORY.md"
    path.write_bytes(b"one")
    with pytest.raises(FileChanged):
        with fsio.staged(path, b"two", expect=b"on"):
            pytest.fail("the block runs only while the file holds what was read")
    assert path.read_bytes() == b"one"
    with fsio.staged(path, b"two", expect=b"one"):
        pass
    assert path.read_bytes() == b"two"
    with pytest.raises(FileChanged):
        with fsio.staged(tmp_path / "new.md", b"x", expect=b"something"):
            pass
    assert not (tmp_path / "new.md").exists() and not list(tmp_path.glob("*.tmp"))  # (no temporary left)


def test_a_file_made_while_optmem_makes_it_is_kept(
    vault: Vault, vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MEMORY.md did not exist when `add` read it, and a script makes it before optmem's new file
    takes the name — before optmem makes the empty file its first write starts from, or after,
    right before the rename: optmem does not write over it, and makes its edit again on the
    script's file."""
    path, block = vault_path / "MEMORY.md", vault_path / "projects" / "webapp" / "MEMORY.md"
    create, commit, done = fsio.create_empty, fsio.Replacement.commit, []

    def before(file: Path, **kw: Any) -> Path | None:
        if not done and file == path:
            done.append(1)
            path.write_text("a person's entry\n", encoding="utf-8")
        return create(file, **kw)

    def after(self: fsio.Replacement, *args: Any) -> bytes | None:
        if len(done) == 1 and self.path == block:
            done.append(2)
            block.write_text("a person's entry\n§\nanother person's entry\n", encoding="utf-8")
        return commit(self, *args)

    monkeypatch.setattr(fsio, "create_empty", before)
    res = memory.add(vault, "optmem's entry")
    assert res.status == "added" and done == [1]
    assert memory.load(vault).entries == ["a person's entry", "optmem's entry"]
    monkeypatch.setattr(fsio.Replacement, "commit", after)
    res = memory.add(vault, "optmem's entry", project="webapp")
    assert res.status == "added" and done == [1, 2]
    assert memory.load(vault, "memory", "webapp").entries == [
        "a person's entry",
        "another person's entry",
        "optmem's entry",
    ]
