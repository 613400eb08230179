"""A vault that arrived in a git clone is not trusted until the user says so (optmem/trust.py):
its hand-typed redlines read as unverified notes on every surface, and `optmem trust` makes
them rules."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import Cli
from test_git import git

RULE = "Never deploy on Fridays: the on-call rota is empty"
CLI = Cli()  # in this process (git itself runs as a process): nothing of trust is cached between calls


def om(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`optmem ARGS` with these environment variables set for the call."""
    res = CLI(*args, env=env)
    return subprocess.CompletedProcess(["optmem", *args], res.exit_code, res.stdout, res.stderr)


def _cloned(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose `.optmem/` vault holds a redline and a plain note, and a clone of it."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    vault = origin / ".optmem"
    om("--vault", str(vault), "append", RULE, "--redline", "--origin", "user")
    om("--vault", str(vault), "append", "deploy notes: the deploy script is deploy.sh, run it on weekdays")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "memory")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    return vault, clone / ".optmem"


def _json(vault: Path, *args: str) -> dict:
    res = om("--vault", str(vault), *args, "--json")
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
    human = om("--vault", str(cloned), "search", "deploy Fridays").stdout
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
    out = _json(cloned, "trust", "--origin", "user")
    assert out["trusted"] and out["changed"] and out["in_git"] and out["redlines"] == 1
    assert "Redlines — locked rules" in _json(cloned, "context")["text"]
    assert "unverified" not in json.dumps(_json(cloned, "search", "deploy Fridays"))
    assert _json(cloned, "trust", "--origin", "user")["changed"] is False  # trusted already
    listed = Path(os.environ["HOME"]) / ".local" / "share" / "optmem" / "trusted-vaults"
    mark = (cloned.parent / ".git" / "optmem-clone-id").read_text("utf-8").strip()
    assert f"{cloned.resolve()}\t{mark}" in listed.read_text("utf-8").splitlines()  # its clone's mark
    back = _json(cloned, "trust", "--revoke")
    assert back["trusted"] is False and back["changed"] is True
    assert "Unverified rules" in _json(cloned, "context")["text"]


@pytest.mark.long
def test_a_vault_outside_git_is_the_users_own(tmp_path):
    vault = tmp_path / "mine"
    om("--vault", str(vault), "append", RULE, "--redline", "--origin", "user")
    assert "Redlines — locked rules" in _json(vault, "context")["text"]
    out = _json(vault, "trust", "--origin", "user")
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
    om("--vault", str(made), "append", RULE, "--redline", "--origin", "user", "--domain", "ops")
    om("--vault", str(made), "append", "deploy notes: deploy.sh runs the migrations", "--domain", "ops")
    om("--vault", str(made), "compact")
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
    _json(cloned, "trust", "--origin", "user")
    assert "[redline]" in _json(cloned, "tree", ref)["node"]["body"]


@pytest.mark.long
def test_a_cloned_vault_split_per_writer_is_not_taken_for_one_begun_here(tmp_path):
    """A segmented vault has no LOG.jsonl and may have no hot file: a first write in the clone
    must still see that it came with records."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    vault = origin / ".optmem"
    om("--vault", str(vault), "segment")  # (no vault yet: refused)
    om("--vault", str(vault), "init")
    om("--vault", str(vault), "segment", "--writer", "origin")
    om("--vault", str(vault), "append", RULE, "--redline", "--origin", "user")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "memory")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    assert not (clone / ".optmem" / "LOG.jsonl").exists()
    om("--vault", str(clone / ".optmem"), "append", "a note written in the clone")
    assert "Unverified rules" in _json(clone / ".optmem", "context")["text"]


def _origin(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    """A repository whose `.optmem/` holds these files, committed."""
    origin = tmp_path / name
    (origin / ".optmem").mkdir(parents=True)
    git(origin, "init", "-q")
    for rel, text in files.items():
        (origin / ".optmem" / rel).write_text(text, "utf-8")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "a vault")
    return origin


def _push_redline(origin: Path) -> None:
    """Someone who can push adds a hand-typed redline to the vault's log."""
    log = origin / ".optmem" / "LOG.jsonl"
    old = log.read_text("utf-8") if log.exists() else ""
    log.write_text(old + json.dumps({"text": RULE, "tier": "redline"}) + "\n", "utf-8")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "a rule")


def _unverified(vault: Path) -> bool:
    """The vault's redline reads as someone's note: not a locked rule in context, not a rule in search."""
    text = _json(vault, "context")["text"]
    [hit] = [h for h in _json(vault, "search", "deploy Fridays")["hits"] if RULE in h["text"]]
    if "Redlines — locked rules" in text:
        assert not hit.get("unverified")
        return False
    assert "Unverified rules" in text and RULE in text and hit["unverified"] is True
    assert "[REDLINE]" not in om("--vault", str(vault), "search", "deploy Fridays").stdout
    return True


@pytest.mark.long
def test_a_first_write_in_a_cloned_vault_that_holds_no_records_does_not_trust_it(tmp_path):
    """Issue 48: a clone whose `.optmem/` held only its settings was taken for a vault begun
    here on its first write — and a redline pulled later became a locked rule."""
    origin = _origin(tmp_path, "origin", {"optmem.toml": "# the team's settings\n"})
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    vault = clone / ".optmem"
    om("--vault", str(vault), "append", "a note written in the clone")
    assert any("trust" in n for n in _json(vault, "doctor")["notes"])
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", "my note")
    _push_redline(origin)
    git(clone, "pull", "-q", "--no-rebase", "--no-edit")
    assert _unverified(vault)
    _json(vault, "trust", "--origin", "user")
    assert not _unverified(vault)


@pytest.mark.long
def test_init_in_a_cloned_vault_that_holds_no_records_does_not_trust_it(tmp_path):
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    om("--vault", str(origin / ".optmem"), "init")  # begun there: trusted there
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "an empty vault")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    (clone / ".optmem" / ".gitignore").unlink()  # (a vault that lacks a file `init` adds)
    git(clone, "commit", "-qam", "no .gitignore")
    assert om("--vault", str(clone / ".optmem"), "init").returncode == 0
    _push_redline(origin)
    git(clone, "pull", "-q", "--no-rebase", "--no-edit")
    assert _unverified(clone / ".optmem")
    assert not _unverified(origin / ".optmem")


@pytest.mark.long
def test_a_re_clone_into_a_trusted_folder_is_not_trusted(tmp_path):
    """Trust belongs to one clone: a folder deleted and cloned again — another vault or the same
    one — waits for `optmem trust` again."""
    import shutil

    first = _origin(tmp_path, "first", {"optmem.toml": ""})
    _push_redline(first)
    other = _origin(tmp_path, "other", {"optmem.toml": ""})
    _push_redline(other)
    place = tmp_path / "work" / "app"
    git(tmp_path, "clone", "-q", str(first), str(place))
    assert _unverified(place / ".optmem")
    _json(place / ".optmem", "trust", "--origin", "user")
    assert not _unverified(place / ".optmem")
    for source in (other, first):
        shutil.rmtree(place)
        git(tmp_path, "clone", "-q", str(source), str(place))
        assert _unverified(place / ".optmem")
        assert any("trust" in n for n in _json(place / ".optmem", "doctor")["notes"])


@pytest.mark.long
def test_a_vault_begun_in_a_repository_is_trusted_without_ceremony(tmp_path):
    """`init` in a fresh repository folder, a first write at the top of a clone of an empty
    repository (the recipe of docs/agents.md), a folder made by hand that git tracks nothing
    of, a vault an import makes: each is begun here."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    bare = tmp_path / "vault.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    top = tmp_path / "laptop"
    git(tmp_path, "clone", "-q", str(bare), str(top))
    hand = repo / "hand"
    hand.mkdir()
    (hand / "optmem.toml").write_text("# mine\n", "utf-8")
    export = tmp_path / "export.jsonl"
    export.write_text(om("--vault", str(tmp_path / "outside"), "export").stdout, "utf-8")
    assert om("--vault", str(repo / ".optmem"), "init").returncode == 0
    om("--vault", str(top), "append", RULE, "--redline", "--origin", "user")
    om("--vault", str(hand), "append", RULE, "--redline", "--origin", "user")
    om("--vault", str(repo / "imported"), "import", str(export))
    for vault in (repo / ".optmem", top, hand, repo / "imported"):
        om("--vault", str(vault), "append", RULE, "--redline", "--origin", "user")
        assert not _unverified(vault), vault
        assert _json(vault, "trust", "--origin", "user")["changed"] is False


@pytest.mark.long
def test_trust_adds_nothing_to_the_vault_and_nothing_git_would_carry(tmp_path):
    """The clone's mark lives in its git directory, which no push and no pull writes."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    om("--vault", str(repo / ".optmem"), "append", RULE, "--redline", "--origin", "user")
    om("--vault", str(tmp_path / "plain"), "append", RULE, "--redline", "--origin", "user")
    names = [sorted(p.name for p in folder.iterdir()) for folder in (repo / ".optmem", tmp_path / "plain")]
    assert names[0] == [n for n in names[1] if n != ".clone"]  # (in git, the clone's own notes are in .git/)
    assert (repo / ".git" / "optmem" / "in-.optmem" / "held").is_file()
    before = git(repo, "status", "--porcelain", "--ignored").stdout
    _json(repo / ".optmem", "trust", "--revoke")
    _json(repo / ".optmem", "trust", "--origin", "user")
    assert git(repo, "status", "--porcelain", "--ignored").stdout == before
    assert not _unverified(repo / ".optmem")


@pytest.mark.long
def test_a_path_on_a_list_from_an_older_optmem_trusts_nothing(tmp_path):
    """An older optmem kept one path a line: it cannot tell a re-clone from the clone it
    trusted, so the line no longer trusts; `optmem trust` replaces it."""
    _, cloned = _cloned(tmp_path)
    listed = Path(os.environ["HOME"]) / ".local" / "share" / "optmem" / "trusted-vaults"
    listed.write_text(f"{cloned.resolve()}\n/somewhere/else\n", "utf-8")
    assert _unverified(cloned)
    assert _json(cloned, "trust", "--origin", "user")["changed"] is True
    assert not _unverified(cloned)
    lines = listed.read_text("utf-8").splitlines()
    assert str(cloned.resolve()) not in lines and "/somewhere/else" in lines
    assert _json(cloned, "trust", "--revoke")["changed"] is True
    assert _unverified(cloned)


@pytest.mark.long
def test_a_vault_in_a_worktree_is_trusted_in_that_worktree_only(tmp_path):
    """A worktree's `.git` is a file naming its own git directory: trust made in the main
    checkout does not reach the worktree, and the other way round."""
    made, cloned = _cloned(tmp_path)
    clone = cloned.parent
    tree = tmp_path / "tree"
    git(clone, "worktree", "add", "-q", str(tree))
    assert (tree / ".git").is_file()
    _json(tree / ".optmem", "trust", "--origin", "user")
    assert not _unverified(tree / ".optmem")
    assert _unverified(cloned)


def _init_in_a_clone_then_pull_a_redline(tmp_path, env_of) -> bool:
    """`optmem init` in a clone of a vault holding only optmem.toml, run with `env_of(clone)`,
    then a redline pushed elsewhere and pulled: whether it reads as an unverified note."""
    origin = _origin(tmp_path, "origin", {"optmem.toml": ""})
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    assert om("--vault", str(clone / ".optmem"), "init", env=env_of(clone)).returncode == 0
    _push_redline(origin)
    git(clone, "pull", "-q", "--no-rebase", "--no-edit")
    return _unverified(clone / ".optmem")


@pytest.mark.long
def test_without_git_a_folder_git_may_have_brought_is_not_taken_for_begun_here(tmp_path):
    """Whether git tracks a file of the folder is asked of git; a git that cannot answer trusts
    nothing."""
    assert _init_in_a_clone_then_pull_a_redline(tmp_path, lambda clone: {"PATH": str(tmp_path / "nowhere")})


@pytest.mark.long
def test_a_git_hooks_environment_does_not_steer_the_question(tmp_path):
    """Git runs a hook (optmem's post-commit one) with GIT_INDEX_FILE=.git/index, relative: asked
    from inside a cloned vault, that index is missing — empty — and the vault looked untracked."""
    hooked = _init_in_a_clone_then_pull_a_redline(
        tmp_path, lambda clone: {"GIT_INDEX_FILE": ".git/index", "GIT_DIR": str(clone / ".git")}
    )
    assert hooked


@pytest.mark.long
def test_trust_survives_sync_and_doctor_and_a_new_clone_waits(tmp_path):
    """The shared-vault recipe of docs/agents.md: the clone that began the vault keeps its trust
    through `sync` and `doctor --fix`; the other clone waits for `optmem trust`, then keeps it."""
    bare = tmp_path / "vault.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    laptop, desktop = tmp_path / "laptop", tmp_path / "desktop"
    git(tmp_path, "clone", "-q", str(bare), str(laptop))
    om("--vault", str(laptop), "append", RULE, "--redline", "--origin", "user")
    for args in (("sync",), ("doctor", "--fix")):
        assert om("--vault", str(laptop), *args).returncode == 0
        assert not _unverified(laptop)
    git(tmp_path, "clone", "-q", str(bare), str(desktop))
    assert _unverified(desktop)
    _json(desktop, "trust", "--origin", "user")
    assert om("--vault", str(desktop), "sync").returncode == 0
    assert not _unverified(desktop) and not _unverified(laptop)


@pytest.mark.long
def test_a_clone_whose_git_directory_cannot_be_found_or_whose_mark_is_a_link_is_not_trusted(tmp_path):
    """No git directory to keep a mark in: nothing is trusted, the write still happens and
    `optmem trust` says what is wrong. A mark that is a link (no git writes one) is not read."""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text("not a gitdir line\n", "utf-8")
    assert om("--vault", str(broken / ".optmem"), "append", RULE, "--redline", "--origin", "user").returncode == 0
    assert _unverified(broken / ".optmem")
    res = om("--vault", str(broken / ".optmem"), "trust", "--origin", "user", "--json")
    assert res.returncode != 0 and "git directory" in json.loads(res.stdout)["error"]["message"]

    made, _ = _cloned(tmp_path)
    assert not _unverified(made)
    mark = made.parent / ".git" / "optmem-clone-id"
    (tmp_path / "elsewhere").write_text(mark.read_text("utf-8"), "utf-8")
    mark.unlink()
    mark.symlink_to(tmp_path / "elsewhere")
    assert _unverified(made)


def test_the_list_and_the_mark_in_process(tmp_path):
    """The core functions, on a real repository (the CLI tests above run optmem as a process)."""
    import pytest

    from optmem import trust
    from optmem.errors import UsageError
    from optmem.vault import Vault, init

    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    root = repo / ".optmem"
    assert not trust.trusted(root) and trust.clone_mark(repo) is None
    root.mkdir()
    (root / "optmem.toml").write_text("", "utf-8")
    assert trust.begun_here(root)  # nothing in it is git's
    git(repo, "add", "-A")
    assert not trust.begun_here(root)  # now git tracks a file of it
    assert trust.allow(root) and trust.trusted(root) and not trust.allow(root)
    mark = trust.clone_mark(repo)
    assert mark and trust.trust_file().read_text("utf-8") == f"{root.resolve()}\t{mark}\n"
    assert trust.decide(root, revoke=True) == (False, True, True)
    assert not trust.withdraw(root) and trust.decide(root) == (True, True, True)
    assert trust.clone_mark(repo) == mark  # (one mark a clone, made once)

    mine = tmp_path / "plain"
    assert trust.decide(mine) == (True, False, False) and not trust.allow(mine)

    fresh = Vault(repo / "fresh")
    init(fresh)
    assert fresh.trusted and trust.trusted(fresh.root)

    git(repo, "commit", "-qm", "x")
    git(repo, "worktree", "add", "-q", str(tmp_path / "tree"))
    assert trust.git_dir(tmp_path / "tree") == repo / ".git" / "worktrees" / "tree"
    odd = repo / "line\nbreak"
    with pytest.raises(UsageError):
        trust.allow(odd)


def test_what_cannot_be_read_trusts_nothing_in_process(tmp_path, monkeypatch):
    import pytest

    from optmem import trust
    from optmem.errors import UsageError
    from optmem.vault import Vault, init

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text("not a gitdir line\n", "utf-8")
    vault = Vault(broken / ".optmem")
    init(vault)  # laid out all the same
    assert (vault.root / ".gitignore").exists() and not vault.trusted
    with pytest.raises(UsageError):
        trust.allow(vault.root)

    repo = tmp_path / "repo"
    (repo / ".optmem").mkdir(parents=True)
    git(repo, "init", "-q")
    assert trust.allow(repo / ".optmem")
    listed = trust.trust_file()
    listed.unlink()
    listed.mkdir()  # a list that cannot be read
    assert not trust.trusted(repo / ".optmem")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert not trust.begun_here(repo / ".optmem")  # no git to ask: not begun here


@pytest.mark.long
def test_a_cloned_vault_deleted_from_the_work_tree_is_not_begun_again_by_a_write(tmp_path):
    """The folder is gone, but git's index still holds its files: a first write that makes the
    folder again does not make it the user's, and what `git restore` brings back stays a note."""
    import shutil

    origin = _origin(tmp_path, "origin", {"optmem.toml": ""})
    _push_redline(origin)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    shutil.rmtree(clone / ".optmem")
    om("--vault", str(clone / ".optmem"), "append", "a note")
    (clone / ".optmem" / "LOG.jsonl").unlink()
    git(clone, "restore", ".optmem")
    assert _unverified(clone / ".optmem")


@pytest.mark.long
def test_stats_says_a_clones_redlines_are_unverified_as_context_does(tmp_path):
    """Tester 12, finding 9: in a clone not trusted, `stats` said "redlines 1" while `context`
    showed the rule under "Unverified rules … treat them as notes"."""
    made, cloned = _cloned(tmp_path)
    own, theirs = _json(made, "stats"), _json(cloned, "stats")
    assert own["redlines"] == 1 and own["redlines_unverified"] is False
    assert theirs["redlines"] == 1 and theirs["redlines_unverified"] is True
    human = om("--vault", str(cloned), "stats").stdout
    assert "redlines 1 (unverified" in human and "optmem trust" in human, human
    assert "unverified" not in om("--vault", str(made), "stats").stdout
    _json(cloned, "trust", "--origin", "user")
    assert _json(cloned, "stats")["redlines_unverified"] is False
