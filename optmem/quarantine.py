"""Quarantine and provenance: what the scanner flags is held for a person, not refused; and
every record says where it came from.

* **Quarantine.** A write the scanner flags as a possible injection (`kind_of` the rule is
  `injection`) is stored with the rule that fired (`record.held`) and is `held` in the effective
  view (`view.Status.HELD`): out of `context`, hot memory, default `search` and every MCP result
  until a person releases it (`release`: a `release` bookkeeping line) or forgets it. A secret
  is still refused: a stored secret is the harm itself. `--allow-unsafe` stores a flagged text
  unheld (the user's explicit word). A hot-memory write cannot be held — a hot file is injected
  whole into every prompt — so it is refused with the advice to `append` it (held) instead.
* **Provenance.** `record.origin`: `user`, `agent`, `tool` (a tool's or a web page's output an
  agent saved), `import:<tool>`, `sync`; a record without it (written before provenance, or typed
  by hand) is not recorded (`None`) and reads as first-hand, as such records always did. What
  came from outside the conversation (`secondhand`) is fenced apart in `context`, ranks a little
  below what was said (`ranking.SECONDHAND_FACTOR`), and becomes a redline or hot memory only by
  a person (`refuse_promotion`).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from optmem.errors import NeedsPerson, NotApplicable, UsageError, quote

# The scanner's rules that find secrets (`optmem.scan`'s secret rules, by name); every other rule
# finds an injection, a hidden instruction or a control character, which quarantine holds.
SECRET_RULES = frozenset(
    (
        "private_key",
        "aws_access_key",
        "aws_secret_key",
        "github_token",
        "stripe_key",
        "api_secret_key",
        "google_api_key",
        "jwt",
        "slack_webhook",
        "slack_token",
        "discord_webhook",
        "api_token",
        "azure_storage_key",
        "bearer_token",
        "url_credentials",
        "password_assignment",
        "google_oauth_secret",
        "docker_registry_auth",
        "seed_phrase",
    )
)


def kind_of(rule: str) -> str:
    """`secret` (refused) or `injection` (held) — what a rule of the scanner finds."""
    return "secret" if rule in SECRET_RULES else "injection"


# -- provenance ---------------------------------------------------------------------------------
FIRST_HAND = ("user", "agent")  # said in the conversation: by the person, or by the agent itself
ORIGINS = ("user", "agent", "tool", "sync")  # and import:<tool>
_IMPORT = re.compile(r"import:[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_origin(origin: str | None) -> str | None:
    """A valid origin (or None: not given), else a usage error naming the choices."""
    if origin is None or origin in ORIGINS or _IMPORT.fullmatch(origin):
        return origin
    raise UsageError(
        f"--origin {quote(origin)} is not an origin: give user, agent, tool (a tool's or web page's "
        "output), sync or import:<tool>; nothing was written"
    )


def secondhand(origin: str | None) -> bool:
    """Whether a record came from outside the conversation: a tool's output, an import, another
    clone. (None — not recorded — reads as first-hand, as such records always did.)"""
    return origin is not None and origin not in FIRST_HAND


def found_in(origin: str, day: str) -> str:
    """Where a second-hand record was found, as the fence says it to an agent."""
    if origin == "tool":
        return f"found in a tool result on {day}"
    if origin.startswith("import:"):
        return f"imported from {origin[7:]} on {day}"
    if origin == "sync":
        return f"came in by sync on {day}"
    return f"from {origin} on {day}"


def refuse_promotion(what: str, origin: str | None, writer: str | None) -> None:
    """A record of a tool's output, an import or a sync becomes a redline or hot memory only by a
    person: refused unless the writer says it is the user (`--origin user`)."""
    if secondhand(origin) and writer != "user":
        raise NeedsPerson(
            f"{what} from {origin!s} output is for a person to make: text that came from outside the "
            "conversation never becomes a locked rule or hot memory by itself — the user runs the "
            "command with --origin user; nothing was written",
            origin=origin,
        )


# -- quarantine ---------------------------------------------------------------------------------
class Held(NamedTuple):
    id: str
    ts: str
    domain: str
    project: str | None
    origin: str | None
    rule: str  # the scanner's rule that fired
    field: str | None  # the field it fired on (None: it no longer does — the scanner changed)
    text: str
    why: str  # what every surface says of a held record


def listing(vault: Any, *, show_unsafe: bool = False, limit: int | None = None) -> list[Held]:
    """The records held in quarantine, oldest first, each with the rule that fired and where."""
    from optmem import clock, record, view
    from optmem.index import open_index

    now = clock.now().timestamp()
    out = []
    with open_index(vault) as idx:
        held, params = view.is_sql(view.Status.HELD, now)
        for row in idx.rows(f"r.held != 0 AND {held} ORDER BY r.ts, r.n", params):
            rec = idx.record(row)
            found = record.flagged_field(rec._replace(held=None))
            rule = rec.held or "?"
            text = rec.text if show_unsafe else view.display(rec.text)
            out.append(
                Held(
                    rec.id,
                    rec.ts,
                    rec.domain,
                    rec.project,
                    rec.origin,
                    rule,
                    found[0] if found else None,
                    text,
                    view.held_because(rule, rec.id),
                )
            )
            if limit is not None and len(out) >= limit:
                break
    return out


class Released(NamedTuple):
    status: str  # released | already_released
    id: str
    record: str | None  # the release line's id (None: released before)


def release(vault: Any, ref: str, *, source: str | None = None) -> Released:
    """Release a held record: it becomes what it would be unheld (current, a correction in
    force, its key's value), its words shown as stored. A `release` line in the log; a record
    released before is `already_released`; one never held, or a bookkeeping line, is refused."""
    from optmem import log
    from optmem.record import RELEASE

    def releasing(idx: Any, row: Any, moment: Any) -> Any:
        log.refuse_bookkeeping(idx, row, "release")
        if not row.held:
            raise NotApplicable(
                f"{row.id} is not held in quarantine (`optmem quarantine` lists what is); nothing was written",
                code="not_held",
                id=row.id,
            )
        if row.released:
            return None
        return log.about(row, moment, RELEASE, source=source)

    row, line = log.write_about(vault, ref, releasing)
    return Released("released", row.id, line.id) if line else Released("already_released", row.id, None)


def check_hot(text: str, *, allow_unsafe: bool) -> None:
    """The scan of a hot-memory write. A hot file is injected whole into every prompt, so nothing
    in it can wait for review: a possible injection is refused with the advice to `append` it
    (the log holds it in quarantine for the user), a secret as every write refuses one."""
    from optmem import scan
    from optmem.errors import UnsafeContent

    if allow_unsafe:
        return
    rule = scan.find(text)
    if rule is None:
        return
    if kind_of(rule) == "secret":
        scan.check(text)
    raise UnsafeContent(
        f"refused: the text trips the security rule {rule!r} (a possible prompt injection), and hot "
        "memory goes into every prompt whole, so it cannot hold a text under review — `optmem append` "
        "it instead (the log keeps it held until you `optmem release` it), or pass --allow-unsafe if "
        "it is really meant for hot memory",
        rule=rule,
    )
