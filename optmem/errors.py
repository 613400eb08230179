"""The one error tree: every expected failure is an OptmemError with a stable code.

Each class carries its exit code; the CLI's one handler (`optmem.cli.errors.handle`) turns an
error into the JSON error shape (`{"ok": false, "error": {"code", "message", ...context}}`) or a
human message, and into that exit code:

* 0 success, 1 refused (no match, ambiguous, over limit, redline locked, …), 2 usage,
  3 the vault is missing, unreadable or locked, 4 an internal error (a bug: the traceback goes
  to `.cache/optmem.log`), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

from typing import Any

OK = 0
REFUSED = 1
USAGE = 2
VAULT = 3
INTERNAL = 4
INTERRUPTED = 130

ECHO_CHARS = 80  # of a user's argument, what a message quotes back


def clip(value: object, limit: int = ECHO_CHARS) -> str:
    """A user's argument as a message shows it: cut to `limit` characters and "…" when longer
    (a 100 KB query is the caller's data — the JSON `query` field keeps it whole — but a message
    that repeats it is unreadable)."""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[:limit] + "…"


def quote(value: object, limit: int = ECHO_CHARS) -> str:
    """`clip`, quoted as `repr` quotes (control characters escaped): how a message names what
    the user typed, e.g. f"no record has id {quote(ref)}"."""
    return repr(clip(value, limit))


class OptmemError(Exception):
    """An expected failure. `code` is stable snake_case; `context` helps the caller retry."""

    code = "error"
    exit_code = REFUSED

    def __init__(self, message: str, *, code: str | None = None, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.context = context

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.context}

    def envelope(self) -> dict[str, Any]:
        """The refusal as `--json` prints it (`envelope`)."""
        return envelope(self.code, self.message, **self.context)


def envelope(code: str, message: str, **context: Any) -> dict[str, Any]:
    """The stable JSON error shape every surface answers a refusal in (CLI, MCP, the hub, Hermes)."""
    return {"ok": False, "error": {"code": code, "message": message, **context}}


class UsageError(OptmemError):
    code = "usage"
    exit_code = USAGE


class InvalidName(UsageError):
    code = "invalid_name"


class NotFound(OptmemError):
    code = "not_found"


class NoMatch(OptmemError):
    code = "no_match"


class Ambiguous(OptmemError):
    code = "ambiguous"


class NotApplicable(OptmemError):
    """A well-formed command that cannot be carried out on the record it names — a bookkeeping
    line, a hot-memory journal record, a record that is not pending or is forgotten, one already
    superseded, a correction that changes nothing: refused (exit 1), as a query that matches
    nothing is; the `code` says which (`bookkeeping_line`, `hot_memory_journal`, `not_pending`,
    `forgotten`, `not_mergeable`, `superseded`, `no_change`)."""

    code = "not_applicable"


class OverLimit(OptmemError):
    code = "over_limit"


class NearDuplicate(OptmemError):
    code = "near_duplicate"


class PossibleUpdate(OptmemError):
    code = "possible_update"


class SeparatorInText(OptmemError):
    code = "separator_in_text"


class UnsafeContent(OptmemError):
    code = "unsafe_content"


class TooLarge(OptmemError):
    code = "too_large"


class RedlineLocked(OptmemError):
    code = "redline_locked"


class ConfirmationRequired(OptmemError):
    code = "confirmation_required"


class Regression(OptmemError):
    code = "regression"


class VaultError(OptmemError):
    """The vault cannot be used as it is: missing, unreadable or locked (exit 3)."""

    exit_code = VAULT


class VaultMissing(VaultError):
    code = "vault_missing"


class Unreadable(VaultError):
    code = "unreadable"


class Locked(VaultError):
    code = "locked"


class MergeConflict(VaultError):
    """A hot file still holds git's conflict markers: a person (or the merge driver) resolves it."""

    code = "merge_conflict"


class Unwritable(VaultError):
    """A file of the vault cannot be written: read-only, full disk, or a link leading out."""

    code = "unwritable"


class BadFrontMatter(VaultError):
    """A Markdown file of the vault (handoff, tree node) has front matter that cannot be read."""

    code = "bad_front_matter"


class SyncFailed(VaultError):
    """git could not fetch, merge or push (a remote that cannot be reached, a push refused
    again and again): nothing stored was changed by the failure; run sync again."""

    code = "sync_failed"
