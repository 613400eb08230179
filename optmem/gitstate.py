"""Running git, and what git is in the middle of.

Every git process optmem starts goes through `run`, with git's code-running settings off: a
folder can carry its own `.git/config` (a copied or unpacked vault, a repository an agent works
in), and reading memory must never execute what that file names. On every call:

* `core.fsmonitor=false` — the file-system monitor is a command (or a daemon) git starts before
  it reads the index;
* `core.hooksPath=/dev/null` — no hook runs (`reference-transaction`, `post-index-change`,
  `post-commit`, …) — except in `optmem sync` (below);
* `core.pager=cat`, `GIT_PAGER=cat`, `--no-pager` — no pager, even on a terminal;
* `GIT_EDITOR=:` — no editor (every commit and merge gives its message);
* `log.showSignature=false` — `git log` runs no `gpg.program` to check signatures;
* `GIT_TERMINAL_PROMPT=0` — git never waits for a password on the terminal;
* `LC_ALL=C` (and no `LANGUAGE`) — messages and dates in one locale, whatever the user's is
  (git's words are still never what optmem decides by: exit codes and plumbing output are);
* `GIT_OPTIONAL_LOCKS=0` on reads — a read never takes (or refreshes) the index lock;
* git's repository variables (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`, …) are dropped:
  every call names its repository with `-C`, and optmem run from another repository's hook must
  not read that one instead.

The commands optmem runs for reads (`rev-parse`, `ls-files --unmerged`, `log -1 --format`,
`diff-tree --name-only`, `reflog`) run no filter, textconv or external diff driver either:
those run only on content git hashes or shows as a patch. `optmem sync` (`add`, `merge`,
`fetch`, `push`) is the one place git does more, in the vault's own repository, which the user
syncs on purpose: it runs that repository's hooks and uses the user's credentials, ssh command
and signing as `git pull`/`git push` would (its commits and merges skip the pre-commit checks,
`--no-verify`), and the merge driver optmem itself writes into that repository's config on
every sync; fsmonitor, pager and editor stay off there too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    import subprocess
    from typing import Any

# -c settings on every call: what git would otherwise run on its own
SAFE_CONFIG = ("core.fsmonitor=false", "core.hooksPath=/dev/null", "core.pager=cat", "log.showSignature=false")
# variables that point git at a repository other than the one named with -C
REPOSITORY_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_PREFIX",
    "GIT_NAMESPACE",
)
TIMEOUT = 30.0


def environment(extra: Mapping[str, str] | None = None, *, reading: bool = True) -> dict[str, str]:
    """The environment git runs in (see the module's doc); `extra` on top (sync's author)."""
    env = {k: v for k, v in os.environ.items() if k not in REPOSITORY_VARIABLES and k != "LANGUAGE"}
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_EDITOR": ":",
            "GIT_MERGE_AUTOEDIT": "no",
            "LC_ALL": "C",
        }
    )
    if reading:
        env["GIT_OPTIONAL_LOCKS"] = "0"
    env.update(extra or {})
    return env


def command(repo: Path, *args: str, hooks: bool = False) -> list[str]:
    """The argv of `git -C repo args…` with git's code-running settings off (`hooks`: but the
    repository's hooks as configured)."""
    settings = [s for s in SAFE_CONFIG if hooks is False or not s.startswith("core.hooksPath=")]
    safe = [part for setting in settings for part in ("-c", setting)]
    return ["git", "--no-pager", *safe, "-C", str(repo), *args]


def run(
    repo: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    reading: bool = True,
    timeout: float = TIMEOUT,
    text: bool = True,
    own_session: bool = False,
    hooks: bool = False,
    started: Callable[[int], None] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[Any]:
    """Run `git -C repo args…` safely (see the module's doc); the `subprocess.CompletedProcess`.
    `reading` (the default) also keeps git from taking optional locks; `own_session` lets the
    git step finish when optmem is killed (sync); `hooks` leaves the repository's hooks on
    (sync, in the vault's own repository, as `git push` would; `hooks install`, to find them);
    `started` is told git's process id once it runs (sync notes the merge's, so the next sync
    knows whether it still runs); `stdin`, text given to git on its standard input (None:
    nothing). Raises OSError or subprocess.SubprocessError when git cannot run or times out."""
    import subprocess  # (only here: a module every command imports must not pay for it)

    with subprocess.Popen(
        command(repo, *args, hooks=hooks),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        text=text,
        env=environment(env, reading=reading),
        start_new_session=own_session,
    ) as proc:
        if started is not None:
            started(proc.pid)
        try:
            out, err = proc.communicate(stdin if stdin is None or text else stdin.encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def running(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie no one reaped has ended: it is not running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, another user's
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return True  # no /proc (macOS): it answered the signal


def work_tree(path: Path) -> Path | None:
    """The top of the git work tree `path` lies in (a `.git` folder or file in it or above it)."""
    here = Path(os.path.realpath(path))
    return next((p for p in (here, *here.parents) if (p / ".git").exists()), None)


def unmerged(path: Path) -> bool:
    """Whether git's index holds `path` unmerged (stages 1–3: a merge stopped on it). Git is run
    only inside a work tree; no git, or a git that fails, reads as not unmerged."""
    return _listed(path, "--unmerged")


def tracked(path: Path) -> bool:
    """Whether git tracks `path` (its index holds it). Git is run only inside a work tree; no
    git, or a git that fails, reads as not tracked."""
    return _listed(path)


def _listed(path: Path, *options: str) -> bool:
    """Whether `git ls-files OPTIONS -- path` lists it (False outside a work tree or when git fails)."""
    top = work_tree(path.parent)
    if top is None:
        return False
    import subprocess

    try:
        res = run(top, "ls-files", "-z", *options, "--", os.path.realpath(path))
    except (OSError, subprocess.SubprocessError):
        return False
    return res.returncode == 0 and bool(res.stdout.strip("\0"))
