"""The one error tree: every expected failure is an OptmemError with a stable code.

Each class carries its exit code; the CLI's one handler (`optmem.cli.errors.handle`) turns an
error into the JSON error shape (`{"ok": false, "error": {"code", "message", ...context}}`) or a
human message, and into that exit code:

* 0 success, 1 refused (no match, ambiguous, over limit, redline locked, …), 2 usage,
  3 the vault is missing, unreadable or locked, 4 an internal error (a bug: the traceback goes
  to `.cache/optmem.log`), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

from optmem.value import Value

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
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


class Code(Value):
    """One error code as a caller meets it: the exit code the CLI ends with (None for a code
    only a server answers with) and what it means."""

    exit_code: int | None
    meaning: str


# Every error code optmem answers with, on every surface (CLI, MCP, the hub, Hermes) — the one
# list: each error class's `code` and each `code=` a refusal names is one of these, with this
# exit code (tests/test_error_codes.py reads the source to check), and docs/files.md shows this
# table as `scripts/error_codes.py` prints it.
CODES: dict[str, Code] = {
    # the command or call itself (exit 2)
    "usage": Code(
        USAGE,
        "the command line or a call is malformed: an unknown option, a missing or extra argument, "
        "a value of the wrong type or out of range",
    ),
    "wrong_format": Code(
        USAGE,
        "`import --from`: a file is not in the named tool's format; `expected` says what that tool writes, "
        "`looks_like` the tool it seems to come from",
    ),
    "invalid_name": Code(
        USAGE,
        "a project, domain or node name that is not 1-64 letters (any script), digits, '.', '_' or '-' in composed "
        "form, at most 200 bytes in UTF-8 (it names a folder of the vault: no `..`, slash, space, emoji or "
        "invisible character)",
    ),
    # refusals and nothing to act on (exit 1)
    "no_match": Code(REFUSED, "no hot-memory entry holds the substring given"),
    "ambiguous": Code(
        REFUSED,
        "the substring or id prefix names several entries or records, or the id is on several lines of the log "
        "(doctor's `duplicate_id`); `candidates` lists them",
    ),
    "not_found": Code(REFUSED, "no record, node, conflict or value has the id or key given"),
    "over_limit": Code(REFUSED, "the hot-memory file would pass its character limit; `usage` says how full it is"),
    "near_duplicate": Code(REFUSED, "an entry of the hot-memory file says nearly the same already"),
    "possible_update": Code(REFUSED, "the text may update a stored record: correct that record, or store it as new"),
    "separator_in_text": Code(REFUSED, "the text holds the hot-memory entry separator `§` on a line of its own"),
    "unsafe_content": Code(
        REFUSED,
        "the scanner flagged the text (an injection phrase, a secret, an invisible character); "
        "`--allow-unsafe` overrides it for one write",
    ),
    "too_large": Code(
        REFUSED, "a text, field or request is over its size bound (`[limits] record_bytes`; the hub's `max_body`)"
    ),
    "redline_locked": Code(REFUSED, "a redline (a locked rule) is replaced only by another redline"),
    "confirmation_required": Code(REFUSED, "`purge` deletes for good: it needs `--yes`"),
    "regression": Code(REFUSED, "`eval`: a measure got worse than the baseline"),
    "not_applicable": Code(REFUSED, "the command cannot act on the record it names (the codes below say why)"),
    "bookkeeping_line": Code(
        REFUSED,
        "the id names a bookkeeping line (a `seen`, `verify`, `forget` … line), not a memory: "
        "act on the record it is about",
    ),
    "hot_memory_journal": Code(
        REFUSED, "the id names a hot-memory journal record: edit the entry with `replace` or `remove`"
    ),
    "not_pending": Code(REFUSED, "`confirm` or `reject` of a record that is no guess waiting"),
    "forgotten": Code(REFUSED, "`confirm` or `reject` of a forgotten record"),
    "not_current": Code(REFUSED, "`verify` of a record that is not current (superseded, forgotten, expired, pending)"),
    "superseded": Code(REFUSED, "`correct` of an old version: correct the current one (`current` names it)"),
    "no_change": Code(REFUSED, "`correct` with the text the record already has"),
    "not_mergeable": Code(
        REFUSED,
        "`merge` of a record it does not take (not current, a value in conflict, a redline, another domain or "
        "project, an inference among stated records)",
    ),
    "not_held": Code(REFUSED, "`release` of a record that is not held in quarantine"),
    "needs_person": Code(
        REFUSED,
        "only a person (at a terminal) purges, makes, drops or trusts a locked rule, releases a held record, "
        "or makes a tool's output, an import or a synced record hot memory or a redline",
    ),
    "still_held": Code(REFUSED, "`purge` of a hot entry still in its file: remove it there first"),
    "nothing_imported": Code(
        REFUSED,
        "`import`: every line that had something to import was refused, so nothing was; `bad` lists each "
        "(its line, code and why)",
    ),
    "curation_failed": Code(REFUSED, "`curate`: the curator command failed or answered something that is not a plan"),
    # the vault (exit 3)
    "vault_missing": Code(VAULT, "no vault where the command looked: `optmem init` makes one"),
    "unreadable": Code(
        VAULT,
        "a file of the vault, or your own config.toml, cannot be read (not UTF-8, a settings file that is not "
        "valid TOML, an I/O error, a folder where a file belongs); `file` names it",
    ),
    "unwritable": Code(
        VAULT,
        "a file of the vault cannot be written (read-only — for root too —, a full disk, a link leading out)",
    ),
    "locked": Code(
        VAULT,
        "another writer held the vault's lock past the timeout; `holder` names it (`pid`, `command`, `since`, "
        "`state`: `stopped` when Ctrl-Z or SIGSTOP holds it)",
    ),
    "file_changed": Code(
        VAULT,
        "a hot-memory file kept changing while optmem wrote it (a program writing it without its `.lock`): "
        "what that program wrote is kept; try again",
    ),
    "merge_conflict": Code(VAULT, "a hot-memory file still holds git's conflict markers: resolve them first"),
    "bad_front_matter": Code(VAULT, "a handoff or tree node's front matter cannot be read: fix or remove the file"),
    "sync_failed": Code(VAULT, "`sync`: git could not fetch, merge or push; nothing stored was changed by it"),
    # a bug (exit 4)
    "internal": Code(INTERNAL, "a bug in optmem: the traceback is in the vault's `.cache/optmem.log`"),
    # Ctrl-C (exit 130)
    "interrupted": Code(
        INTERRUPTED,
        "the command was interrupted (Ctrl-C) before it finished; no file is left half-written: run it again",
    ),
    # answered by the MCP server over stdio (in a JSON-RPC error's `data`) or by the HTTP hub
    "unparseable_request": Code(None, "MCP: a line of the stream is not JSON"),
    "invalid_request": Code(None, "MCP: a message that is no JSON-RPC 2.0 request"),
    "invalid_text": Code(None, "MCP: a string holds a lone surrogate, which no text can carry"),
    "invalid_params": Code(None, "MCP: a request's params are not what its method takes (arguments not an object …)"),
    "unknown_method": Code(
        None, "MCP: a request names a method the server does not have (tools are called with tools/call)"
    ),
    "unauthorized": Code(None, "the hub: the request lacks the hub's bearer token (HTTP 401)"),
    "unknown_host": Code(None, "the hub: a Host header the hub is not served under (HTTP 421)"),
    "forbidden_origin": Code(None, "the hub: a request from a web origin not allowed (HTTP 403)"),
    "busy": Code(None, "the hub: all its connections are taken; try again shortly (HTTP 503)"),
    "timeout": Code(None, "the hub: a request's headers did not arrive in time (HTTP 408)"),
    "bad_request": Code(None, "the hub: a request MCP over HTTP does not take (its content type, method, accept)"),
    "unknown_path": Code(None, "the hub: a path it does not serve — MCP is at /mcp (HTTP 404)"),
    "unknown_session": Code(
        None, "the hub: a call naming no MCP session, or one it does not know (it restarted): `initialize` again"
    ),
}


class OptmemError(Exception):
    """An expected failure. `code` is stable snake_case (one of `CODES`, whose exit code its
    class carries); `context` helps the caller retry."""

    code = "error"
    exit_code = REFUSED

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "code" in cls.__dict__ and (cls.code not in CODES or CODES[cls.code].exit_code != cls.exit_code):
            raise TypeError(f"{cls.__name__}: its code {cls.code!r} and exit code are not as errors.CODES says")

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
    exit_code = USAGE
    code = "usage"


class WrongFormat(UsageError):
    """`import --from TOOL` of files TOOL does not write: refused before anything is written."""

    code = "wrong_format"


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


class NeedsPerson(OptmemError):
    code = "needs_person"


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


class FileChanged(VaultError):
    """Another program changed a file between optmem's reading it and putting its new version in
    place (`fsio.staged` with `expect`): what that program wrote is kept, optmem's write is not made."""

    code = "file_changed"


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
