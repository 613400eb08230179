"""What git is in the middle of, read without changing anything: a file git holds unmerged (a
merge, rebase or cherry-pick stopped on it) is not what either side meant, and nothing may be
journalled from it until the user settles the merge.
"""

from __future__ import annotations

import os
from pathlib import Path


def work_tree(path: Path) -> Path | None:
    """The top of the git work tree `path` lies in (a `.git` folder or file in it or above it)."""
    here = Path(os.path.realpath(path))
    return next((p for p in (here, *here.parents) if (p / ".git").exists()), None)


def unmerged(path: Path) -> bool:
    """Whether git's index holds `path` unmerged (stages 1–3: a merge stopped on it). Git is run
    only inside a work tree; no git, or a git that fails, reads as not unmerged."""
    top = work_tree(path.parent)
    if top is None:
        return False
    import subprocess  # (only here: a module every command imports must not pay for it)

    try:
        res = subprocess.run(
            ["git", "-C", str(top), "ls-files", "--unmerged", "--", os.path.realpath(path)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return res.returncode == 0 and bool(res.stdout.strip())
