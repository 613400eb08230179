"""The vault: resolution order, init, layout, permissions, names, settings, the lock."""

from __future__ import annotations

import stat
from datetime import UTC, datetime

import pytest
from conftest import run_optmem
from hypothesis import example, given
from hypothesis import strategies as st

from optmem import fsio, settings
from optmem.errors import InvalidName, Locked, Unreadable, Unwritable, UsageError
from optmem.vault import resolve, validate_name


def test_resolution_order(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".optmem").mkdir(parents=True)
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    home = tmp_path / "h"
    env = {"OPTMEM_VAULT": str(tmp_path / "envvault")}
    assert resolve(str(tmp_path / "x"), env, deep, home) == tmp_path / "x"
    assert resolve(None, env, deep, home) == tmp_path / "envvault"
    assert resolve(None, {}, deep, home) == repo / ".optmem"
    assert resolve(None, {}, tmp_path, home) == home / ".optmem"


def test_cli_resolves_vault_option_env_and_repo_local(cli, tmp_path, monkeypatch):
    cli.json("append", "in env vault")
    assert (tmp_path / "vault" / "LOG.jsonl").exists()
    res = cli("--vault", str(tmp_path / "other"), "append", "in explicit vault")
    assert res.exit_code == 0 and (tmp_path / "other" / "LOG.jsonl").exists()
    monkeypatch.delenv("OPTMEM_VAULT")
    proj = tmp_path / "proj"
    (proj / ".optmem").mkdir(parents=True)
    (proj / "sub").mkdir()
    monkeypatch.chdir(proj / "sub")
    cli.json("append", "repo local")
    assert (proj / ".optmem" / "LOG.jsonl").exists()
    monkeypatch.chdir(tmp_path)
    cli.json("append", "home vault")
    assert (tmp_path / "home" / ".optmem" / "LOG.jsonl").exists()


def test_init_creates_layout_with_private_permissions(cli, tmp_path):
    out = cli.json("init", str(tmp_path / "v"))
    root = tmp_path / "v"
    assert out["vault"] == str(root)
    assert (root / ".gitattributes").read_text() == (
        "LOG.jsonl merge=union\nACCESS.jsonl merge=union\nlog/*/*.jsonl merge=union\n"
    )
    assert ".cache/" in (root / ".gitignore").read_text()
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE((root / ".gitattributes").stat().st_mode) == 0o600
    assert cli("--vault", str(root), "append", "note").exit_code == 0
    assert stat.S_IMODE((root / "LOG.jsonl").stat().st_mode) == 0o600
    assert stat.S_IMODE((root / ".cache").stat().st_mode) == 0o700
    assert cli.json("init", str(root))["created"] == []


def test_init_on_a_hermes_folder_adds_only_what_is_missing(cli, tmp_path):
    hermes = tmp_path / "memories"
    hermes.mkdir()
    (hermes / "MEMORY.md").write_text("a\n§\nb", "utf-8")
    (hermes / ".gitignore").write_text("secret.txt\n", "utf-8")
    out = cli.json("init", str(hermes))
    assert set(out["created"]) == {".gitattributes", ".gitignore"}
    assert (hermes / "MEMORY.md").read_text("utf-8") == "a\n§\nb"
    assert (hermes / ".gitignore").read_text() == "secret.txt\n.cache/\n*.tmp\n*.md.lock\n*.md.bak.*\n"
    (hermes / ".gitignore").write_text("secret.txt\n.cache/\n*.tmp\n", "utf-8")  # an older vault
    assert cli.json("init", str(hermes))["created"] == [".gitignore"]
    assert (hermes / ".gitignore").read_text().count(".cache/") == 1  # only the lines it lacked


def test_write_creates_a_missing_vault_and_read_requires_one(cli, tmp_path):
    res = cli("append", "first memory")
    assert res.exit_code == 0 and "created a new vault" in res.stderr
    missing = cli.json("--vault", str(tmp_path / "nope"), "show", code=3)
    assert missing["error"]["code"] == "vault_missing" and "optmem init" in missing["error"]["message"]
    # --vault given the log file instead of its folder: no impossible "optmem init <file>" advice
    log = tmp_path / "v" / "LOG.jsonl"
    log.parent.mkdir()
    log.write_text("", "utf-8")
    err = cli.json("--vault", str(log), "search", "port", code=3)["error"]
    assert "is a file, not a vault folder" in err["message"] and str(log.parent) in err["message"]
    assert "optmem init" not in err["message"]
    other = tmp_path / "notes.txt"  # a file beside no log: no folder to suggest
    other.write_text("x", "utf-8")
    assert "optmem init DIR" in cli.json("--vault", str(other), "search", "port", code=3)["error"]["message"]
    # … and a write, which reads the settings first (it said only "cannot read …/optmem.toml")
    for path, says in ((log, "is a file"), (other / "sub", "lies under a file")):
        err = cli.json("--vault", str(path), "append", "a note", code=3)["error"]
        assert err["code"] == "vault_missing" and says in err["message"] and "point --vault" in err["message"]


def test_init_on_a_file_answers_as_every_command_does(cli, tmp_path):
    """Tester 16 item 10c: `--vault FILE init` answered `unreadable` ("exists but is not a
    folder"); every other command answers `vault_missing`, with advice. init does too, and makes
    nothing."""
    (tmp_path / "in").mkdir()
    afile = tmp_path / "in" / "afile"
    afile.write_text("x", "utf-8")
    for args in (["--vault", str(afile), "init"], ["init", str(afile)], ["--vault", str(afile / "sub"), "init"]):
        err = cli.json(*args, "--json", code=3)["error"]
        assert err["code"] == "vault_missing", err
        assert "not a vault folder" in err["message"] and "move the file aside" in err["message"], err
        assert "nothing was made" in err["message"], err
    assert afile.read_text("utf-8") == "x" and sorted(p.name for p in afile.parent.iterdir()) == ["afile"]


@pytest.mark.parametrize("name", ["LOG.jsonl", "MEMORY.md", "optmem.toml"])
def test_a_write_into_a_vault_whose_file_is_a_folder_makes_and_says_nothing_else(cli, tmp_path, name):
    """Tester 16 item 10d: `append` into a vault whose LOG.jsonl is a folder said "made … a vault
    (added .gitattributes, .gitignore and the log)", failed exit 3, and left those files (and
    `.cache/`) behind. It fails before it makes anything, and says only that."""
    v = tmp_path / "v"
    (v / name).mkdir(parents=True)
    res = cli("--vault", str(v), "append", "the backend listens on 9090")
    assert res.exit_code == 3, res.output
    assert f"{v / name} is a folder, expected a file" in res.stderr, res.stderr
    assert f"made {v}" not in res.stderr and "created" not in res.stderr, res.stderr
    assert sorted(p.name for p in v.iterdir()) == [name]  # nothing left behind


def test_times_are_written_with_four_digit_years():
    from datetime import datetime

    from optmem import clock

    early = datetime(4, 3, 1, 10, 0, 0, tzinfo=UTC)
    assert clock.format_ts(early) == "0004-03-01T10:00:00Z"
    assert clock.parse_time(clock.format_ts(early)) == early
    assert clock.format_ts(datetime(2026, 11, 29, 18, 55, 30, tzinfo=UTC)) == "2026-11-29T18:55:30Z"


@pytest.mark.long
@given(
    moment=st.datetimes(),
    offset=st.integers(-23 * 60, 23 * 60),
    form=st.sampled_from(["Z", "+00:00", "offset", "naive", "date", "space"]),
)
@example(moment=datetime(1, 1, 1, 0, 30), offset=60, form="offset")  # before year 1 in UTC: None
def test_an_epoch_is_the_parsed_times_whatever_the_written_form(moment, offset, form):
    # to_epoch reads the canonical form by a shortcut: it must agree with parse_time on every form
    from optmem import clock

    iso = moment.isoformat()
    text = {
        "Z": iso + "Z",
        "+00:00": iso + "+00:00",
        "naive": iso,
        "date": iso[:10],
        "space": iso.replace("T", " ") + "Z",
        "offset": iso + f"{'+' if offset >= 0 else '-'}{abs(offset) // 60:02d}:{abs(offset) % 60:02d}",
    }[form]
    try:
        expected: float | None = clock.parse_time(text).timestamp()
    except ValueError:
        expected = None
    assert clock.to_epoch(text) == expected


@pytest.mark.long
def test_only_the_write_that_made_the_vault_says_it_created_it(tmp_path, monkeypatch, capsys):
    # two agents' first writes to a vault not there yet: the second finds the folder made when its
    # write lays it out — it must not also say "created"
    from optmem.cli import common

    target = tmp_path / "fresh"
    monkeypatch.setattr(common.STATE, "vault_opt", None)  # no --vault of an earlier invocation
    monkeypatch.setenv("OPTMEM_VAULT", str(target))
    mark = len(common.STATE.created)
    first = common.get_vault(write=True)
    assert not target.exists()
    other = run_optmem("--vault", str(target), "append", "the other agent was first")
    assert other.returncode == 0 and "created a new vault" in other.stderr
    with first.lock():
        pass
    common.finish(mark)
    assert "created a new vault" not in capsys.readouterr().err
    # … and the write that does make it says so
    monkeypatch.setenv("OPTMEM_VAULT", str(tmp_path / "second"))
    mark = len(common.STATE.created)
    with common.get_vault(write=True).lock():
        pass
    common.finish(mark)
    assert "created a new vault" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["../x", "a/b", "a b", "..", ".hidden", "", "x" * 65, "名字 ", "名" * 65, "🚀"])
def test_invalid_names_are_refused(name):
    with pytest.raises(InvalidName):
        validate_name(name, "project")


def test_valid_names(vault):
    for name in ("webapp", "my_proj-2.0", "A" * 64, "名字", "名" * 64, "café"):
        assert validate_name(name) == name
    assert vault.project_dir("webapp") == vault.root / "projects" / "webapp"


def test_settings_defaults_toml_and_overrides():
    s = settings.load("[limits]\nmemory = 3000\n", ["dedup.threshold=0.8", "tree.summarizer=cat"])
    assert s.limits.memory == 3000 and s.limits.user == 1375
    assert s.dedup.threshold == 0.8 and s.tree.summarizer == "cat" and s.warnings == ()
    with pytest.raises(Unreadable, match="optmem.toml is not valid TOML"):  # (a file, as one not UTF-8)
        settings.load("[limits\n")
    with pytest.raises(UsageError):
        settings.load(None, ["nodot=1"])


@pytest.mark.long
def test_lock_times_out_with_exit_3(cli, vault, vault_path):
    (vault_path / "optmem.toml").write_text("[lock]\ntimeout = 0.2\n", "utf-8")  # timeout under test: held here
    with fsio.exclusive_lock(vault.lock_path, 1):
        out = cli.json("append", "blocked", code=3)
        assert out["error"]["code"] == "locked"
        with pytest.raises(Locked):
            with fsio.exclusive_lock(vault.lock_path, 0.05):
                pass
    assert cli.json("append", "now free")["status"] == "stored"


def test_atomic_write_replaces_whole_files(tmp_path):
    path = tmp_path / "d" / "f.md"
    fsio.atomic_write(path, "one")
    fsio.atomic_write(path, "two")
    assert path.read_text() == "two"
    assert [p.name for p in path.parent.iterdir()] == ["f.md"]


def test_append_lines_ends_a_torn_line_first(tmp_path):
    path = tmp_path / "LOG.jsonl"
    path.write_bytes(b'{"a":1}\n{"torn')
    fsio.append_lines(path, [b'{"b":2}', b'{"c":3}'])
    assert path.read_bytes() == b'{"a":1}\n{"torn\n{"b":2}\n{"c":3}\n'


def test_settings_unknown_names_warn_with_the_nearest_and_wrong_types_are_usage_errors():
    s = settings.load("[ranking]\ncandidats = 300\n[rankng]\nx = 1\n")
    assert s.ranking.candidates == settings.Ranking().candidates  # the typo changed nothing …
    assert any("ranking.candidats (did you mean candidates?)" in w for w in s.warnings)  # … and says so
    assert any("[rankng] (did you mean ranking?)" in w for w in s.warnings)
    # a setting of a removed rule is named as such, not as a typo
    gone = settings.load("[ranking]\nearlier_heads = 3\nsame_topic_window = 0.2\n").warnings
    assert len(gone) == 2 and all("is no longer read" in w and "remove it" in w for w in gone)
    for toml, key in (
        ('[ranking]\ncandidates = "lots"\n', "ranking.candidates"),
        ('[dedup]\non_similar = "maybe"\n', "dedup.on_similar"),
        ("[tree]\nrun = 1\n", "tree.run"),
        ("[lock]\ntimeout = true\n", "lock.timeout"),
        ("[projects]\nrepo = 3\n", "projects.repo"),
    ):
        with pytest.raises(UsageError) as err:
            settings.load(toml)
        assert err.value.context["key"] == key and err.value.exit_code == 2, toml
    assert settings.load(None, ["ranking.recency_window=1"]).ranking.recency_window == 1.0  # int → float
    with pytest.raises(UsageError) as err:
        settings.load(None, ["ranking.recency_window=abc"])
    assert "ranking.recency_window = 'abc'" in err.value.message and "a number" in err.value.message


def test_cli_reports_settings_problems(cli, vault, vault_path):
    (vault_path / "optmem.toml").write_text("[ranking]\ncandidats = 300\n", "utf-8")
    res = cli("append", "a note", "--json")
    assert res.exit_code == 0 and "did you mean candidates?" in res.stderr
    (vault_path / "optmem.toml").write_text('[ranking]\ncandidates = "lots"\n', "utf-8")
    out = cli.json("search", "note", code=2)
    assert out["error"]["code"] == "usage" and out["error"]["key"] == "ranking.candidates"
    assert out["error"]["expected"] == "an integer" and out["error"]["value"] == "lots"


def test_atomic_stream_leaves_the_old_file_and_no_temporary_when_the_write_fails(tmp_path):
    path = tmp_path / "d" / "f.md"
    fsio.atomic_write(path, "old")
    with pytest.raises(RuntimeError):
        with fsio.atomic_stream(path) as fh:
            fh.write(b"half of the new")
            raise RuntimeError("the writer failed")
    assert path.read_text() == "old"
    assert [p.name for p in path.parent.iterdir()] == ["f.md"]


def test_a_read_only_file_is_neither_replaced_nor_appended_to(tmp_path):
    """Whoever runs optmem — root too, whom the system would let write it — a file whose mode lets
    no one write it stays as it is: every rewrite by rename (a hot file, HANDOFF.md, a summary
    node) and every append goes through fsio, which refuses it, leaving no temporary file."""
    path = tmp_path / "d" / "f.md"
    fsio.atomic_write(path, "old")
    path.chmod(0o444)
    for write in (
        lambda: fsio.atomic_write(path, "new"),
        lambda: fsio.append_lines(path, [b"a line"]),
        lambda: fsio.append_bytes(path, b"bytes"),
    ):
        with pytest.raises(Unwritable, match="the file is read-only"):
            write()
    assert path.read_text() == "old" and [p.name for p in path.parent.iterdir()] == ["f.md"]
    path.chmod(0o600)
    fsio.atomic_write(path, "new")
    assert path.read_text() == "new"


def test_a_refused_replacement_leaves_no_folder_it_made(tmp_path):
    """A new file's folders are made for it, and go with it when the write is dropped."""
    (tmp_path / "v").mkdir()
    target = tmp_path / "v" / "projects" / "web" / "HANDOFF.md"
    with pytest.raises(RuntimeError):
        with fsio.atomic_stream(target) as new:
            assert target.parent.is_dir()
            new.write(b"never in place")
            raise RuntimeError("the log refused its record")
    assert list((tmp_path / "v").iterdir()) == []


def test_the_vault_lock_holds_against_another_thread_of_the_same_process(tmp_path):
    """The lock is re-entrant for the thread that holds it, not for every thread sharing the Vault
    object: a Hermes provider's background prefetch and its memory-write hook share one, and each
    journalled the same Hermes edit when both were let in."""
    import threading

    from optmem.errors import Locked
    from optmem.vault import Vault

    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "optmem.toml").write_text("[lock]\ntimeout = 0.05\n", "utf-8")  # timeout under test: held
    vault = Vault(tmp_path / "v")
    seen: list[object] = []

    def other() -> None:
        try:
            with vault.lock():
                seen.append(("entered", vault.locked))
        except Locked as err:
            seen.append(err)

    with vault.lock():
        with vault.lock():  # the holder itself re-enters
            assert vault.locked
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert vault.locked
    assert len(seen) == 1 and isinstance(seen[0], Locked), seen
    other()  # let go: the other thread's turn
    assert seen[1] == ("entered", True) and not vault.locked


def test_a_folder_another_process_makes_meanwhile_is_no_file_in_the_way(tmp_path):
    """Two processes making one folder at once (a vault's .cache, the writer's folder on first
    use): the one that looked first and found nothing, then found something, took the other's
    new folder for a file in the way — a write failed with "exists but is not a folder" (the
    suite's concurrent-writer tests, at random). The other process's mkdir is made here, real,
    right after the first look."""
    import os
    from pathlib import Path

    from optmem import fsio
    from optmem.errors import Unreadable

    class MadeMeanwhile(type(Path())):  # type: ignore[misc]
        looked = False

        def is_dir(self) -> bool:
            seen = super().is_dir()
            if not MadeMeanwhile.looked:
                MadeMeanwhile.looked = True
                os.mkdir(self, 0o700)  # the other process, between the two looks
            return seen

    target = MadeMeanwhile(tmp_path / "cache")
    assert fsio.ensure_dir(target) is False and (tmp_path / "cache").is_dir()
    (tmp_path / "file").write_text("x", "utf-8")
    with pytest.raises(Unreadable, match="exists but is not a folder"):
        fsio.ensure_dir(tmp_path / "file")


def test_a_lock_that_fails_to_start_leaves_the_vault_unlocked(vault, vault_path, cli):
    """Review 13, finding 6: the lock's first steps (an older optmem's notes moved into `.clone/`)
    ran after the vault noted it held the lock, outside the try: one that failed left it believing
    so — a long-lived holder (the Hermes provider) then wrote without the OS lock. And the move
    read the old file with a bare open(): its error escaped as a traceback."""
    import shutil

    from optmem.errors import OptmemError
    from optmem.vault import OWN_MOVED

    (vault_path / ".cache").mkdir(exist_ok=True)
    (vault_path / ".cache" / OWN_MOVED).unlink(missing_ok=True)
    (vault_path / ".cache" / "purged").write_text("0" * 32 + "\n")
    shutil.rmtree(vault_path / ".clone", ignore_errors=True)
    (vault_path / ".clone").write_text("a file where the folder goes\n")
    with pytest.raises(OptmemError):
        with vault.lock():
            pass
    assert not vault.locked
    res = cli("append", "a record")
    assert res.exit_code == 3 and "Traceback" not in res.stderr and ".clone" in res.stderr, res
    (vault_path / ".clone").unlink()
    with vault.lock():  # (the folder free again: moved now)
        assert vault.locked
    assert not vault.locked and (vault_path / ".clone" / "purged").read_text() == "0" * 32 + "\n"


@pytest.mark.parametrize(
    "args",
    [("search", "x"), ("context",), ("show",), ("stats",), ("quarantine",), ("conflicts",), ("get", "ABCDEFGH")],
)
def test_a_read_of_a_folder_holding_no_vault_file_writes_nothing_and_says_so(cli, tmp_path, args):
    """Tester 18 #1: `--vault ~/Documents search x` (a typo) planted `.cache/` (a 170 KB index,
    locks, marks) in a folder holding none of the vault's files. The folder is a vault (SPEC §2:
    its missing files read as empty), so the read answers — and writes nothing, and says on stderr
    that the folder is not a vault yet."""
    plain = tmp_path / "Documents"
    plain.mkdir()
    (plain / "letter.txt").write_text("dear …", "utf-8")
    res = cli("--vault", str(plain), *args, "--json")
    assert res.exit_code in (0, 1), (res.stdout, res.stderr)
    assert sorted(p.name for p in plain.iterdir()) == ["letter.txt"]
    assert "holds none of a vault's files" in res.stderr and f"optmem init {plain}" in res.stderr
    # a folder that does hold a vault's file gets its index as before, and no such note
    (plain / "MEMORY.md").write_text("a note\n", "utf-8")
    res = cli("--vault", str(plain), *args, "--json")
    assert (plain / ".cache" / "index.sqlite3").exists() and "holds none" not in res.stderr


def test_a_write_into_a_plain_folder_still_makes_it_a_vault(cli, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert cli.json("--vault", str(plain), "append", "first note")["ok"]
    assert (plain / "LOG.jsonl").exists() and (plain / ".cache" / "index.sqlite3").exists()
    assert cli.json("--vault", str(plain), "search", "first")["hits"]


def test_a_vault_just_initialised_is_a_vault(cli, tmp_path):
    """Review20 F6: `optmem init DIR` writes only .gitattributes and .gitignore; a read right after
    it must not say DIR is no vault and to run `optmem init DIR`. A git work tree's own
    .gitattributes (without optmem's line) still marks no vault."""
    fresh = tmp_path / "fresh"
    assert cli("init", str(fresh)).exit_code == 0
    for args in (("search", "foo"), ("context",)):
        res = cli("--vault", str(fresh), *args)
        assert res.exit_code in (0, 1) and "holds none" not in res.stderr, res.stderr
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".gitattributes").write_text("*.png binary\n", "utf-8")
    res = cli("--vault", str(repo), "search", "foo")
    assert "holds none of a vault's files" in res.stderr
    assert sorted(p.name for p in repo.iterdir()) == [".gitattributes"]


@pytest.mark.parametrize("args", [("compact", "--dry-run"), ("compact",), ("doctor",), ("doctor", "--fix")])
def test_compact_and_doctor_of_a_folder_holding_no_vault_file_write_nothing(cli, tmp_path, args):
    """Review20 F3: `compact --dry-run` made .cache/tree.lock, `doctor --fix` a whole .cache/, and
    `doctor` said the index was not built yet — in a folder that holds none of a vault's files."""
    plain = tmp_path / "Documents"
    plain.mkdir()
    (plain / "letter.txt").write_text("dear …", "utf-8")
    res = cli("--vault", str(plain), *args)
    assert res.exit_code == 0, (res.stdout, res.stderr)
    assert sorted(p.name for p in plain.iterdir()) == ["letter.txt"]
    assert "holds none of a vault's files" in res.stderr and "index does not exist" not in res.stdout
