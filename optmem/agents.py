"""Agents and git: the git post-commit hook, and Claude Code's session hooks.

* `install_git_hook` puts a `post-commit` hook in a repository that records each commit in the
  log (domain `code`, project = the repository folder, kind `commit`, the sha as evidence, the
  subject as text, the changed paths as detail). An existing hook is kept and still runs first;
  `uninstall_git_hook` restores exactly what was there. The hook never blocks a commit.
* `claude_code_event` handles a Claude Code hook event: `SessionStart` returns the project's
  context; `PreCompact` and `SessionEnd` write a handoff drawn from the transcript.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optmem import fsio
from optmem.errors import UsageError
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
    return name if NAME_RE.match(name) else "project"


def _hooks_dir(repo: Path) -> Path:
    path = Path(_git(repo, "rev-parse", "--git-path", "hooks").strip())
    return path if path.is_absolute() else repo / path


def _command() -> str:
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
        f"{_command()} --vault {shlex.quote(str(vault.root))} hook git-commit "
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
    mapping = vault.settings.get("projects", {})
    res = log.append(vault, subject or f"commit {sha[:12]}", domain=domain,
                     project=project_name(root.name, mapping), kind="commit", evidence=sha,
                     source=f"git:{author}", gate=False, extra={"paths": paths[:200], "files": len(paths)})
    return {"id": res.id, "sha": sha, "subject": subject, "files": len(paths)}


# -- Claude Code ------------------------------------------------------------------------------
_DONE = re.compile(r"\b(done|fixed|added|implemented|created|updated|removed|refactored|completed|"
                   r"passing|passes|works)\b|已完成|完成了|已修复|修好|已添加|已实现|搞定", re.I)
_OPEN = re.compile(r"\b(todo|next step|next:|remaining|still need|not yet|follow[- ]up|left to)\b|"
                   r"- \[ \]|待办|下一步|还需要|尚未|未完成", re.I)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                out.append(block["text"])
    return out


def _short(text: str, limit: int = 240) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def read_transcript(path: Path, *, keep: int = 3) -> dict[str, list[str]]:
    """What a handoff needs from a Claude Code transcript (JSONL): the last user requests, what
    the assistant reported done, open items, and errors. Extractive; bad lines are skipped."""
    requests: list[str] = []
    done: list[str] = []
    open_items: list[str] = []
    errors: list[str] = []
    with open(path, "rb") as fh:
        for raw in fh:
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(entry, dict) or not isinstance(entry.get("message"), dict):
                continue
            content = entry["message"].get("content")
            if entry.get("type") == "user":
                if isinstance(content, list):
                    for block in content:
                        if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("is_error"):
                            text = "\n".join(_texts(block.get("content"))) or str(block.get("content"))
                            errors.append(_short(text.strip().splitlines()[0] if text.strip() else "tool error"))
                for text in _texts(content):
                    if text.strip() and not text.lstrip().startswith("<"):  # skip injected markup
                        requests.append(_short(text))
            elif entry.get("type") == "assistant":
                for text in _texts(content):
                    for line in text.splitlines():
                        line = line.strip(" -*•\t")
                        if len(line) < 4:
                            continue
                        if _OPEN.search(line):
                            open_items.append(_short(line))
                        elif _DONE.search(line):
                            done.append(_short(line))
    dedup = lambda items: list(dict.fromkeys(items))[-keep:]  # noqa: E731
    return {"requests": dedup(requests), "done": dedup(done), "open": dedup(open_items),
            "errors": dedup(errors)}


def claude_code_event(vault: Vault, event: dict[str, Any], *, budget: int = 4000) -> dict[str, Any]:
    """Handle one Claude Code hook event; returns what was done (and the context to print)."""
    from optmem import context, handoff

    name = event.get("hook_event_name")
    cwd = Path(event.get("cwd") or os.getcwd())
    try:
        folder = repo_root(cwd).name
    except (UsageError, OSError, subprocess.SubprocessError):
        folder = cwd.name
    project = project_name(folder, vault.settings.get("projects", {}))
    if name == "SessionStart":
        if not vault.exists():
            return {"event": name, "project": project, "context": None}
        ctx = context.build(vault, project=project, budget=budget)
        return {"event": name, "project": project, "context": ctx.text}
    if name in ("PreCompact", "SessionEnd"):
        path = event.get("transcript_path")
        if not path or not Path(path).is_file():
            return {"event": name, "project": project, "handoff": None, "reason": "no transcript"}
        got = read_transcript(Path(path))
        if not any(got.values()):
            return {"event": name, "project": project, "handoff": None, "reason": "empty transcript"}
        from optmem import scan

        flagged = sum(1 for items in got.values() for i in items if scan.find(i))
        got = {k: [i for i in items if not scan.find(i)] for k, items in got.items()}
        why = event.get("trigger") or event.get("reason") or event.get("source") or ""
        note = f"Written by the Claude Code {name} hook" + (f" ({why})" if why else "") + "."
        if got["requests"]:
            note += " Last requests: " + " / ".join(got["requests"])
        if flagged:
            note += f" ({flagged} line(s) the security scan flagged were left out.)"
        h = handoff.write(vault, project, done=got["done"], blocked=got["errors"], next=got["open"],
                          note=note, source="claude-code", domain="code", allow_unsafe=False)
        return {"event": name, "project": project, "handoff": h.id}
    return {"event": name, "project": project, "ignored": True}


def claude_code_settings(vault: Vault) -> dict[str, Any]:
    """The `hooks` block for Claude Code's settings.json."""
    cmd = f"{_command()} --vault {shlex.quote(str(vault.root))} hook claude-code"
    entry = [{"hooks": [{"type": "command", "command": cmd, "timeout": 30}]}]
    return {"hooks": {"SessionStart": entry, "PreCompact": entry, "SessionEnd": entry}}
