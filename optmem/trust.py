"""Which vaults the user trusts: a vault that arrived in a git clone is not trusted until the
user says so (`optmem trust`), as direnv does with `.envrc`.

Anyone who can push to a repository can put a `.optmem/` vault in it — with hand-typed locked
rules. Until the user trusts such a vault, its redlines are shown as unverified notes: not first
in search, not "Redlines — locked rules" in `context`. A vault outside any git work tree is the
user's own; one that optmem creates on this machine (`init`, a first write) is trusted at once.
The list is the user's, never the vault's: one real path a line in
`$XDG_DATA_HOME/optmem/trusted-vaults` (else `~/.local/share/optmem/trusted-vaults`).
"""

from __future__ import annotations

import os
from pathlib import Path

from optmem import fsio, gitstate
from optmem.errors import OptmemError


def trust_file() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "optmem" / "trusted-vaults"


def in_git_work_tree(root: Path) -> bool:
    """Whether the vault's folder lies inside a git work tree (a `.git` in it or above it)."""
    return gitstate.work_tree(root) is not None


def _listed() -> list[str]:
    try:
        text = fsio.read_text(trust_file()) or ""
    except OptmemError:  # a list that cannot be read trusts nothing more than git's absence does
        return []
    return [line for line in text.splitlines() if line.strip()]


def trusted(root: Path) -> bool:
    """Whether the user trusts the vault at `root`: outside git, or on the user's list."""
    return not in_git_work_tree(root) or os.path.realpath(root) in _listed()


def allow(root: Path) -> bool:
    """Put the vault on the user's list; True when it was not there."""
    real = os.path.realpath(root)
    listed = _listed()
    if real in listed:
        return False
    path = trust_file()
    fsio.ensure_dir(path.parent)
    fsio.atomic_write(path, "".join(f"{line}\n" for line in [*listed, real]))
    return True


def withdraw(root: Path) -> bool:
    """Take the vault off the user's list; True when it was there."""
    real = os.path.realpath(root)
    listed = _listed()
    if real not in listed:
        return False
    fsio.atomic_write(trust_file(), "".join(f"{line}\n" for line in listed if line != real))
    return True


def decide(root: Path, *, revoke: bool = False) -> tuple[bool, bool, bool]:
    """`optmem trust [--revoke]`: (trusted now, changed, inside a git work tree). A vault outside
    git is the user's own: trusted whatever the list says (withdrawing it changes nothing)."""
    inside = in_git_work_tree(root)
    if revoke:
        changed = withdraw(root)
    else:
        changed = allow(root) if inside else False
    return trusted(root), changed, inside
