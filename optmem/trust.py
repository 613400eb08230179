"""Which vaults the user trusts: a vault that arrived in a git clone is not trusted until the
user says so (`optmem trust`), as direnv does with `.envrc`.

Anyone who can push to a repository can put a `.optmem/` vault in it — with hand-typed locked
rules. Until the user trusts such a vault, its redlines are shown as unverified notes: not first
in search, not "Redlines — locked rules" in `context`. A vault outside any git work tree is the
user's own.

Trust belongs to one clone, never to a path alone nor to anything a push can bring:
* the clone's mark is a random id kept in its git directory (`<git dir>/optmem-clone-id`):
  no push, pull or merge writes there, and a new clone — even into the same folder — has
  none until trust makes one; a clone moved or renamed keeps it, and its vault stays trusted
  (the line names the vault's old path: the mark and the vault's place inside the clone match);
* the list is the user's: one `real path<TAB>clone id` a line in
  `$XDG_DATA_HOME/optmem/trusted-vaults` (else `~/.local/share/optmem/trusted-vaults`). A
  vault is trusted when the list holds its real path with the mark of the clone it lies in.
  A line that holds a path alone (an older optmem's) trusts nothing: it cannot tell a re-clone.
* optmem trusts a vault it begins here (`init`, a first write): one in whose folder git tracks
  no file — nothing in it came in a clone or a pull. It never infers that from what the folder
  lacks (no log, no hot file), which a push controls.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from optmem import fsio, gitstate
from optmem.errors import OptmemError, UsageError, quote
from optmem.patterns import lazy

MARK = "optmem-clone-id"
MARK_RE = lazy(r"[0-9a-f]{32}")
LIST_LOCK_TIMEOUT = 30.0  # seconds: a hang detector; the list is held for a few file writes


def trust_file() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "optmem" / "trusted-vaults"


def in_git_work_tree(root: Path) -> bool:
    """Whether the vault's folder lies inside a git work tree (a `.git` in it or above it)."""
    return gitstate.work_tree(root) is not None


def git_dir(top: Path) -> Path | None:
    """The git directory of the work tree at `top`: its `.git` folder, or the one its `.git`
    file names (a worktree, a submodule); None when neither leads to a folder."""
    dot = top / ".git"
    if dot.is_dir():
        return dot
    head = _read_small(dot, 4096)
    if head is None or not head.startswith("gitdir:"):
        return None
    named = Path(head[len("gitdir:") :].strip())
    where = named if named.is_absolute() else top / named
    return where if where.is_dir() else None


def _read_small(path: Path, limit: int) -> str | None:
    """At most `limit` bytes of a regular file, not through a link; None when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        data = os.read(fd, limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        data = None
    finally:
        os.close(fd)
    return None if data is None else data.decode("utf-8", "replace").strip()


def clone_mark(top: Path) -> str | None:
    """The mark of the clone whose work tree is `top`, or None when it has none (yet)."""
    folder = git_dir(top)
    text = _read_small(folder / MARK, 64) if folder is not None else None
    return text if text is not None and MARK_RE.fullmatch(text) else None


def _make_mark(top: Path) -> str:
    folder = git_dir(top)
    if folder is None:
        raise UsageError(
            f"cannot find the git directory of the work tree at {top} (its .git names none); "
            "nothing was trusted — repair the clone (`git status` says what is wrong)",
            work_tree=str(top),
        )
    mark = os.urandom(16).hex()
    fsio.atomic_write(folder / MARK, mark + "\n")
    return mark


def _lines() -> list[str]:
    try:
        text = fsio.read_text(trust_file()) or ""
    except OptmemError:  # a list that cannot be read trusts nothing more than git's absence does
        return []
    return [line for line in text.splitlines() if line.strip()]


def _path_of(line: str) -> str:
    """The real path a line of the list names (the whole line, in an older optmem's list)."""
    return line.rpartition("\t")[0] or line


@contextmanager
def _list_locked() -> Iterator[None]:
    """One change to the list at a time (two first writes may begin vaults at once)."""
    path = trust_file()
    with fsio.exclusive_lock(
        path.with_name(path.name + ".lock"), LIST_LOCK_TIMEOUT, what=f"the list of vaults {path}", setting=False
    ):
        yield


def _write(lines: list[str]) -> None:
    fsio.atomic_write(trust_file(), "".join(f"{line}\n" for line in lines))


def _same_clone(line: str, real: str, top: Path, mark: str | None) -> bool:
    """Whether a line of the list names the vault at `real` in the clone marked `mark` whose work
    tree is `top`: its path and mark — or, the clone moved or renamed since (`mv ~/src/app
    ~/work/app`), its mark and the vault's place inside the clone (`.optmem`, the top itself),
    the listed path gone. The mark is what names the clone; its path alone never does — and a
    copy (`cp -r app app2`) carries the mark while the listed clone is still there: not moved."""
    path, _, said = line.rpartition("\t")
    if mark is None or said != mark:
        return False
    if path == real:
        return True
    inside = Path(os.path.relpath(real, os.path.realpath(top))).parts
    inside = () if inside == (".",) else inside
    if Path(path).parts[len(Path(path).parts) - len(inside) :] != inside:
        return False
    return not os.path.lexists(path)


def _moved(line: str, real: str, mark: str) -> None:
    """The list's `line` for a clone moved since, made to name the vault's new path `real` (a copy
    made later at the old path is then no longer taken for it). A list that cannot be written
    keeps the old line: the clone is still trusted, as the mark says."""
    try:
        with _list_locked():
            lines = _lines()
            if line in lines:
                _write([f"{real}\t{mark}" if x == line else x for x in lines if x != f"{real}\t{mark}"])
    except OptmemError:
        pass


def trusted(root: Path) -> bool:
    """Whether the user trusts the vault at `root`: outside git, or listed with its clone's mark
    (at this path, or at the same place inside the clone before the clone was moved)."""
    top = gitstate.work_tree(root)
    if top is None:
        return True
    lines = _lines()
    if not lines:
        return False  # (the common untrusted case reads no more)
    real = os.path.realpath(root)
    mark = clone_mark(top)
    for line in lines:
        if _same_clone(line, real, top, mark):
            if mark is not None and _path_of(line) != real:
                _moved(line, real, mark)
            return True
    return False


def allow(root: Path) -> bool:
    """Put the vault on the user's list with its clone's mark (made first when the clone has
    none); True when it was not there. A vault outside git is not listed (False)."""
    top = gitstate.work_tree(root)
    if top is None:
        return False
    real = os.path.realpath(root)
    if "\n" in real or "\r" in real:
        raise UsageError(
            f"the vault's path {quote(real)} holds a line break, which the trust list cannot hold; "
            "nothing was trusted — move the vault to a plainer path",
            vault=real,
        )
    with _list_locked():
        mark = clone_mark(top) or _make_mark(top)
        entry = f"{real}\t{mark}"
        lines = _lines()
        if entry in lines:
            return False
        # a line for the same path with another mark (a clone deleted since) or none (an older
        # optmem's) is replaced: only this clone can be at that path now; so is this vault's line
        # from before its clone moved
        _write([line for line in lines if _path_of(line) != real and not _same_clone(line, real, top, mark)] + [entry])
    return True


def withdraw(root: Path) -> bool:
    """Take the vault's path off the user's list (whatever clone it named), and its clone's line
    from before the clone moved; True when it was there."""
    real = os.path.realpath(root)
    top = gitstate.work_tree(root)
    mark = clone_mark(top) if top is not None else None

    def mine(line: str) -> bool:
        return _path_of(line) == real or (top is not None and _same_clone(line, real, top, mark))

    if not any(mine(line) for line in _lines()):
        return False
    with _list_locked():
        lines = _lines()
        kept = [line for line in lines if not mine(line)]
        if kept == lines:
            return False
        _write(kept)
    return True


def begun_here(root: Path) -> bool:
    """Whether optmem begins the vault at `root` on this machine: git tracks no file under its
    folder — none came in a clone or a pull, none waits in the index to be checked out again
    (git delivers no empty folder). A git that cannot answer begins nothing: the user trusts
    the vault with `optmem trust`."""
    return _tracks_nothing(root)


def _tracks_nothing(folder: Path) -> bool:
    """Whether git's index holds no file under `folder` (git run safely, `gitstate.run`: the
    folder's own repository answers, whatever a git hook's GIT_DIR or GIT_INDEX_FILE says)."""
    import subprocess  # (only here: a module every command imports must not pay for it)

    try:
        res = gitstate.run(folder, "ls-files", "--error-unmatch", "--", ".", text=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return res.returncode == 1 and b"did not match any file" in res.stderr


def decide(root: Path, *, revoke: bool = False) -> tuple[bool, bool, bool]:
    """`optmem trust [--revoke]`: (trusted now, changed, inside a git work tree). A vault outside
    git is the user's own: trusted whatever the list says (withdrawing it changes nothing)."""
    inside = in_git_work_tree(root)
    changed = withdraw(root) if revoke else allow(root)
    return trusted(root), changed, inside
