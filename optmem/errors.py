"""The one error tree: every expected failure is an OptmemError with a stable code.

The CLI turns these into the JSON error shape (`{"ok": false, "error": {"code", "message",
...context}}`) or a human message, and into the exit code: 1 refused, 2 usage, 3 vault trouble.
"""

from __future__ import annotations

from typing import Any

REFUSED = 1
USAGE = 2
VAULT = 3

_EXIT = {
    "usage": USAGE,
    "invalid_name": USAGE,
    "vault_missing": VAULT,
    "unreadable": VAULT,
    "locked": VAULT,
}


class OptmemError(Exception):
    """An expected failure. `code` is stable snake_case; `context` helps the caller retry."""

    code = "error"

    def __init__(self, message: str, *, code: str | None = None, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.context = context

    @property
    def exit_code(self) -> int:
        return _EXIT.get(self.code, REFUSED)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.context}


class UsageError(OptmemError):
    code = "usage"


class InvalidName(OptmemError):
    code = "invalid_name"


class NotFound(OptmemError):
    code = "not_found"


class NoMatch(OptmemError):
    code = "no_match"


class Ambiguous(OptmemError):
    code = "ambiguous"


class OverLimit(OptmemError):
    code = "over_limit"


class NearDuplicate(OptmemError):
    code = "near_duplicate"


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


class VaultMissing(OptmemError):
    code = "vault_missing"


class Unreadable(OptmemError):
    code = "unreadable"


class Locked(OptmemError):
    code = "locked"
