"""What changes for outside reasons: git, Claude Code, MCP.

These modules speak other programs' formats (git hooks, Claude Code hook events and
transcripts, the MCP protocol) and call the core to do the work; the core knows nothing of
them. Every entry point another program runs follows one rule, `fail_open`: the other program
(a commit, an agent's session) is never blocked by OptMem's trouble — the error is reported and
the caller goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def fail_open(action: Callable[[], T], report: Callable[[str], None], what: str) -> T | None:
    """Run `action`; on any error report `optmem: <what>: <reason>` and return None."""
    try:
        return action()
    except Exception as exc:  # noqa: BLE001 - failing open is the point
        report(f"optmem: {what}: {getattr(exc, 'message', None) or exc}")
        return None


def tool_result(value: Any) -> tuple[str, Any]:
    """A tool's JSON result as a model reads it, and the object defused (`fence.defuse_all`):
    every tool that hands stored text to a model (the MCP tools, the Hermes provider's tools)
    builds its text here. A refusal (`"ok": false`) is the tool's own error, not recalled memory:
    its JSON alone, unfenced (its strings defused all the same — a message may quote a stored
    line); any other result is its JSON inside the fence, where every stored string stands inside
    quotes on a line of its own key, so none can print a line of the fence."""
    import json

    from optmem.safety.fence import Body, defuse_all, wrap

    obj = defuse_all(value)
    text = json.dumps(obj, ensure_ascii=False, indent=2)
    if isinstance(obj, dict) and obj.get("ok") is False:
        return text, obj
    return wrap(Body(text)), obj
