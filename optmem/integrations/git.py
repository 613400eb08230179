"""Git: the post-commit hook that records every commit in the log.

`install_git_hook` puts a `post-commit` hook in a repository that records each commit in the
log (domain `code`, project = the repository folder, kind `commit`, the sha as evidence, the
subject as text, the changed paths as detail). An existing hook is kept and still runs first;
`uninstall_git_hook` restores exactly what was there. The hook never blocks a commit.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optmem import fsio
from optmem.errors import UsageError
from optmem.record import COMMIT
from optmem.vault import NAME_RE, Vault

BEGIN = "# >>> optmem post-commit hook"
END = "# <<< optmem"
CHAINED = "post-commit.optmem-chained"


def _git(repo: Path, *args: str) -> str:
    res = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        raise UsageError(f"git {' '.join(args)} failed in {repo}: {res.stderr.strip() or res.stdout.strip()}")
    return res.stdout


def repo_root(path: Path) -> Path:
    """The top-level folder of the git repository holding `path`."""
    return Path(_git(path, "rev-parse", "--show-toplevel").strip())


def project_name(folder: str, mapping: dict[str, Any] | None = None) -> str:
    """A project name for a folder: a mapping from optmem.toml [projects], else the folder name
    made safe (characters a name may not hold become '-')."""
    if mapping and isinstance(mapping.get(folder), str):
        return mapping[folder]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", folder).strip("-._") or "project"
    if not name[0].isalnum():
        name = "p" + name
    name = name[:64]
    return name if NAME_RE.fullmatch(name) else "project"


def _hooks_dir(repo: Path) -> Path:
    path = Path(_git(repo, "rev-parse", "--git-path", "hooks").strip())
    return path if path.is_absolute() else repo / path


def optmem_command() -> str:
    """This optmem, by absolute path, so the hook works from any shell or GUI client."""
    return f"{shlex.quote(sys.executable)} -m optmem"


@dataclass(frozen=True)
class HookResult:
    status: str          # installed | already_installed | uninstalled | not_installed
    hook: str
    chained: str | None
    vault: str | None = None


def install_git_hook(vault: Vault, repo: Path) -> HookResult:
    """Install the post-commit hook in `repo`, keeping (and still running) any existing hook."""
    root = repo_root(repo)
    hooks = _hooks_dir(root)
    hook = hooks / "post-commit"
    existing = fsio.read_text(hook) if hook.exists() else None
    if existing is not None and BEGIN in existing:
        return HookResult("already_installed", str(hook), str(hooks / CHAINED) if (hooks / CHAINED).exists() else None,
                          str(vault.root))
    chained = None
    if hook.exists():
        fsio.move(hook, hooks / CHAINED)  # kept byte for byte, mode included; runs first
        chained = str(hooks / CHAINED)
    script = "\n".join([
        "#!/bin/sh",
        f"{BEGIN} (remove it with `optmem hooks uninstall`)",
        f'if [ -x "$(dirname "$0")/{CHAINED}" ]; then "$(dirname "$0")/{CHAINED}" "$@"; fi',
        "status=$?",
        # the commit is already made: record it, never fail it; errors go to stderr
        f"{optmem_command()} --vault {shlex.quote(str(vault.root))} hook git-commit "
        f'--repo "$(git rev-parse --show-toplevel)" || echo "optmem: this commit was not recorded" >&2',
        "exit $status",
        END, ""])
    fsio.atomic_write(hook, script, mode=0o755)  # git runs hooks: executable
    return HookResult("installed", str(hook), chained, str(vault.root))


def uninstall_git_hook(repo: Path) -> HookResult:
    """Remove our hook and put back exactly what was there before."""
    root = repo_root(repo)
    hooks = _hooks_dir(root)
    hook = hooks / "post-commit"
    current = fsio.read_text(hook) if hook.exists() else None
    if current is None or BEGIN not in current:
        return HookResult("not_installed", str(hook), None)
    chained = hooks / CHAINED
    if chained.exists():
        fsio.move(chained, hook)
        return HookResult("uninstalled", str(hook), str(hook))
    fsio.remove_file(hook)
    return HookResult("uninstalled", str(hook), None)


def record_commit(vault: Vault, repo: Path, domain: str = "code") -> dict[str, Any]:
    """Append the repository's HEAD commit to the log (what the post-commit hook runs)."""
    from optmem import log

    root = repo_root(repo)
    sha, subject, author = _git(root, "log", "-1", "--format=%H%x00%s%x00%an").rstrip("\n").split("\x00")
    paths = [p for p in _git(root, "diff-tree", "--no-commit-id", "--name-only", "-r", "--root", "HEAD").splitlines() if p]
    res = log.append(vault, log.Draft(subject or f"commit {sha[:12]}", domain=domain,
                                      project=project_name(root.name, vault.settings.projects),
                                      kind=COMMIT, evidence=sha, source=f"git:{author}",
                                      extra={"paths": paths[:200], "files": len(paths)}), gate=False)
    return {"id": res.id, "sha": sha, "subject": subject, "files": len(paths)}
