"""What changes for outside reasons: git, Claude Code, MCP.

These modules speak other programs' formats (git hooks, Claude Code hook events and
transcripts, the MCP protocol) and call the core to do the work; the core knows nothing of
them. Every entry point another program runs follows one rule, `fail_open`: the other program
(a commit, an agent's session) is never blocked by OptMem's trouble — the error is reported and
the caller goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def fail_open(action: Callable[[], T], report: Callable[[str], None], what: str) -> T | None:
    """Run `action`; on any error report `optmem: <what>: <reason>` and return None."""
    try:
        return action()
    except Exception as exc:  # noqa: BLE001 - failing open is the point
        report(f"optmem: {what}: {getattr(exc, 'message', None) or exc}")
        return None
