"""Claude Code: its session hooks.

`claude_code_event` handles a Claude Code hook event: `SessionStart` returns the project's
context; `PreCompact` and `SessionEnd` write a handoff drawn from the transcript (JSONL).
`claude_code_settings` is the `hooks` block for Claude Code's settings.json.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

from optmem.errors import UsageError
from optmem.integrations.git import optmem_command, project_name, repo_root
from optmem.vault import Vault

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
    project = project_name(folder, vault.settings.projects)
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
                          note=note, source="claude-code", domain="code",
                          session=event.get("session_id") if isinstance(event.get("session_id"), str) else None,
                          allow_unsafe=False)
        return {"event": name, "project": project, "handoff": h.id}
    return {"event": name, "project": project, "ignored": True}


def install_settings(vault: Vault, path: Path) -> list[str]:
    """Add the hooks to a Claude Code settings file, keeping everything in it; returns the events
    it added (none when they were there). A file that is not a JSON object is not touched."""
    from optmem import fsio

    raw = fsio.read_text(path)
    try:
        current = json.loads(raw) if raw and raw.strip() else {}
    except ValueError as exc:
        raise UsageError(f"{path} is not JSON ({exc}); fix it, or add the snippet of "
                         "`optmem hooks claude-code --print` by hand") from exc
    if not isinstance(current, dict):
        raise UsageError(f"{path} is not a JSON object; add the snippet of `--print` by hand")
    hooks = current.setdefault("hooks", {})
    added = []
    for event, entries in claude_code_settings(vault)["hooks"].items():
        have = hooks.setdefault(event, [])
        commands = {h.get("command") for e in have if isinstance(e, dict) for h in e.get("hooks", [])
                    if isinstance(h, dict)}
        if entries[0]["hooks"][0]["command"] not in commands:
            have.extend(entries)
            added.append(event)
    if added:
        fsio.atomic_write(path, json.dumps(current, ensure_ascii=False, indent=2) + "\n", mode=0o644)
    return added


def claude_code_settings(vault: Vault) -> dict[str, Any]:
    """The `hooks` block for Claude Code's settings.json."""
    cmd = f"{optmem_command()} --vault {shlex.quote(str(vault.root))} hook claude-code"
    entry = [{"hooks": [{"type": "command", "command": cmd, "timeout": 30}]}]
    return {"hooks": {"SessionStart": entry, "PreCompact": entry, "SessionEnd": entry}}
