"""What is said about a stored record after it was written, through the log: it was used
(`touch`), a guess is confirmed (`confirm`) or rejected (`reject`), a fact was checked and still
holds (`verify`), a record held in quarantine is released (`release`; `held` lists them). The policy these follow is
`optmem.lifecycle`'s; the lines go through `optmem.log`'s single append path.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from optmem import clock, lifecycle, log, view
from optmem.errors import NotApplicable, UsageError
from optmem.index import open_index
from optmem.index import prepare as prepare_index
from optmem.record import BOOKKEEPING, CONFIRM, RELEASE, VERIFY, Record
from optmem.vault import Vault


class Touched(NamedTuple):
    ids: list[str]
    warmed: list[str]  # of them, the ones that were cold


def touch(vault: Vault, refs: list[str], *, via: str = "touch") -> Touched:
    """Say these records were used: they stay warm (a cold one is warm again) — and so does the
    current version of a superseded one (its fact is in use again: search must not show the old
    value alone, superseded by a record it no longer finds)."""
    if not refs:
        raise UsageError("give at least one record id to touch")
    now = clock.now().timestamp()
    with open_index(vault) as idx:
        found = [log.resolve_one(idx, ref) for ref in refs]  # every id checked before anything is written
        for r in found:
            if r.kind in BOOKKEEPING:  # a refusal, as log.refuse_bookkeeping's: the record is the wrong one
                raise NotApplicable(
                    f"{r.id} is a `{r.kind}` line, not a memory; touch the record it is about "
                    f"({r.ref or '?'}); nothing was written",
                    code="bookkeeping_line",
                    id=r.id,
                    ref=r.ref,
                )
        found += [idx.current_version(r) for r in found if r.superseded_by]
    rows = list({r.id: r for r in found}.values())
    lifecycle.touch_ids(vault, [r.id for r in rows], via)
    return Touched([r.id for r in rows], [r.id for r in rows if view.status(r, now) == view.Status.COLD])


class Confirmed(NamedTuple):
    status: str  # confirmed | already_confirmed
    id: str
    confirmation: str | None  # the confirm line's id (None: it was confirmed before)


def refuse_unless_pending(idx: Any, row: Any, command: str) -> None:
    """What `confirm` and `reject` refuse (exit 1, nothing written): a bookkeeping line or a
    hot-memory journal record (`log.refuse_bookkeeping`), a forgotten record (`get` says by what),
    and a record that was never a guess. A guess confirmed before passes: each command says
    what that means for it."""
    log.refuse_bookkeeping(idx, row, command)
    short = row.id[-8:]
    if row.forgotten and not (command == "reject" and row.pending):  # a rejected guess: reject is idempotent
        tombs = idx.tombstones(row.id)
        by = f" by {tombs[-1].id}" if tombs else ""
        then = (
            "a forgotten record is not confirmed — append it again if it is true"
            if command == "confirm"
            else "it is out of search and context already"
        )
        raise NotApplicable(
            f"{row.id} is forgotten{by} (`optmem get {short}` shows " + ("why" if by else "by what") + f"); {then}; "
            "nothing was written",
            code="forgotten",
            id=row.id,
            forgotten_by=tombs[-1].id if tombs else None,
        )
    if not row.pending:
        stored = (
            "stored as an inference in normal recall (labelled inferred), not as a guess waiting"
            if row.inferred
            else "stored as a fact, not a guess"
        )
        raise NotApplicable(
            f"{row.id} is not pending: it was {stored}, so there is nothing to {command}"
            + (
                f" — `optmem forget {short}` hides it, `optmem correct {short} TEXT` replaces it"
                if command == "reject"
                else " (the user states it by appending its text without --basis inferred)"
                if row.inferred
                else " (it is in normal recall already)"
            )
            + "; nothing was written",
            code="not_pending",
            id=row.id,
        )


def confirm(vault: Vault, ref: str, *, source: str | None = None, origin: str | None = None) -> Confirmed:
    """Confirm a pending record: it becomes current (a `confirm` line in the log, with who wrote
    it: `origin` — an agent confirming a guess states it, as writing it without a confidence would,
    and `get` says whose confirmation it was). A guess confirmed before is `already_confirmed`
    (nothing written); anything else is refused (`refuse_unless_pending`)."""

    def confirmation(idx: Any, row: Any, moment: Any) -> Record | None:
        refuse_unless_pending(idx, row, "confirm")
        if row.confirmed:
            return None
        return log.about(row, moment, CONFIRM, source=source, origin=origin)

    row, rec = log.write_about(vault, ref, confirmation)
    return Confirmed("confirmed", row.id, rec.id) if rec else Confirmed("already_confirmed", row.id, None)


def reject(vault: Vault, ref: str, *, reason: str | None = None, source: str | None = None) -> log.Forgotten:
    """Reject a pending record: it is forgotten, with the reason (it stays in the log). A guess
    rejected before is `already_forgotten` (its first reason stands); a confirmed one, or one
    `refuse_unless_pending` refuses, is refused."""
    with open_index(vault) as idx:
        row = log.resolve_one(idx, ref)
        refuse_unless_pending(idx, row, "reject")
        if row.confirmed and not row.forgotten:
            raise NotApplicable(
                f"{row.id} is not pending: it was confirmed; `optmem forget {row.id[-8:]}` "
                "hides it, `optmem correct` replaces it; nothing was written",
                code="not_pending",
                id=row.id,
            )
    return log.forget(vault, row.id, reason=f"rejected: {reason}" if reason else "rejected", source=source)


class Verified(NamedTuple):
    verified: list[dict[str, Any]]  # {"id", "verification", "verified_at"} a record


def verify(
    vault: Vault, refs: list[str], *, note: str | None = None, source: str | None = None, allow_unsafe: bool = False
) -> Verified:
    """Say that someone checked these facts and they hold: a `verify` line about each, in the
    log (append-only: when it was written stays, when it was last checked is the latest such
    line). Every id is checked first, all lines are written together, or none: a record that is
    not a current fact (superseded, forgotten, expired, a pending guess, a bookkeeping line) is
    refused, with what to do instead."""
    from optmem.safety import scan

    if not refs:
        raise UsageError("give at least one record id to verify")
    for name, value in (("note", note), ("source", source)):
        if value is not None:  # bookkeeping, but a person or an agent reads the note in `get`
            scan.check_field(name, value, limit=log.FIELD_BYTES["reason"], allow_unsafe=allow_unsafe)

    def verifications(idx: Any, rows: list[Any], moment: Any) -> list[Record]:
        for row in rows:
            _refuse_unless_current(idx, row, moment.timestamp())
        return [log.about(row, moment, VERIFY, source=source, extra={"note": note} if note else None) for row in rows]

    prepare_index(vault)
    rows, lines = log.write_about_all(vault, list(refs), verifications, allow_unsafe=allow_unsafe)
    return Verified(
        [{"id": row.id, "verification": rec.id, "verified_at": rec.ts} for row, rec in zip(rows, lines, strict=True)]
    )


def _refuse_unless_current(idx: Any, row: Any, now: float) -> None:
    """Only a current fact is verified (a cold one too: it is current, only unused)."""
    log.refuse_bookkeeping(idx, row, "verify")
    status = view.status(row, now, warm=True)
    if status == view.Status.CURRENT:
        return
    short = row.id[-8:]
    then = {
        view.Status.SUPERSEDED: f"superseded by {row.superseded_by}: verify the value that stands",
        view.Status.FORGOTTEN: "forgotten: append it again if it holds",
        view.Status.EXPIRED: "expired: append it again if it holds",
        view.Status.PENDING: f"a guess waiting: `optmem confirm {short}` makes it a fact",
    }.get(status, status.value)
    raise NotApplicable(f"{row.id} is {then}; nothing was written", code="not_current", id=row.id, status=status.value)


# -- quarantine (`optmem.quarantine`) ----------------------------------------------------------
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


def held(vault: Vault, *, show_unsafe: bool = False, limit: int | None = None) -> list[Held]:
    """The records held in quarantine, oldest first, each with the rule that fired and where."""
    from optmem import record
    from optmem.quarantine import held_because

    now = clock.now().timestamp()
    out = []
    with open_index(vault) as idx:
        status, params = view.is_sql(view.Status.HELD, now)
        for row in idx.rows(f"r.held != 0 AND {status} ORDER BY r.ts, r.n", params):
            rec = idx.record(row)
            found = record.gate_finding(rec)  # (an origin rule's: in its text)
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
                    held_because(rule, rec.id, rec.origin),
                )
            )
            if limit is not None and len(out) >= limit:
                break
    return out


BLOCKED_SCANNED = 2000  # the newest unreviewed lines `blocked` looks at (each unchecked one costs a scan)


def blocked_because(rule: str, rid: str) -> str:
    """Why a line nobody held reads `[BLOCKED: rule]`, and what to do (`blocked`)."""
    from optmem.quarantine import kind_of

    said = (
        f"blocked on read: the line did not pass optmem's write gate (typed into the log, brought by sync, "
        f"or written with --allow-unsafe) and the scanner's rule {rule!r} flags it"
    )
    if kind_of(rule) == "secret":
        return f"{said} as a secret — every surface shows it blocked; `optmem purge {rid[-8:]} --yes` deletes it"
    return (
        f"{said} as a possible prompt injection — every surface shows it blocked; `optmem release {rid[-8:]}` "
        f"if it is fine, `optmem forget {rid[-8:]}` if not"
    )


def blocked(idx: Any, now: float, *, show_unsafe: bool = False) -> tuple[list[Held], bool]:
    """Lines no write gate held that the read-side scanner flags — typed into the log, brought by
    sync, written with --allow-unsafe —, reviewable as held records are (`release`, `forget`);
    newest first, among the newest `BLOCKED_SCANNED` lines not yet reviewed (True: more were not
    looked at). A line the gate passed is known clean (`Index.passed`) and not scanned again."""
    from optmem import record

    rows = idx.rows(
        f"r.held = 0 AND r.released = 0 AND r.forgotten = 0 AND r.kind NOT IN ({','.join('?' * len(BOOKKEEPING))}) "
        "ORDER BY r.n DESC LIMIT ?",
        (*BOOKKEEPING, BLOCKED_SCANNED + 1),
    )
    more, rows = len(rows) > BLOCKED_SCANNED, rows[:BLOCKED_SCANNED]
    clean = idx.passed(rows) if rows else set()
    out = []
    for row in (r for r in rows if r.n not in clean):
        rec = idx.record(row)
        found = record.flagged_field(rec)
        if found is None:
            continue
        text = rec.text if show_unsafe else view.display(rec.text)
        why = blocked_because(found[1], rec.id)
        out.append(Held(rec.id, rec.ts, rec.domain, rec.project, rec.origin, found[1], found[0], text, why))
    return out, more


def review_queue(
    vault: Vault, *, show_unsafe: bool = False, limit: int | None = None
) -> tuple[list[Held], list[Held], bool]:
    """What waits for a person's review: the records held in quarantine (`held`), and the lines
    blocked on read that nobody held (`blocked`, with whether more lines were not looked at)."""
    now = clock.now().timestamp()
    with open_index(vault) as idx:
        lines, more = blocked(idx, now, show_unsafe=show_unsafe)
    return held(vault, show_unsafe=show_unsafe, limit=limit), lines[:limit] if limit is not None else lines, more


class Released(NamedTuple):
    status: str  # released | already_released
    id: str
    release: str | None  # the release line's id (None: released before)


def _releasable_unheld(idx: Any, row: Any) -> None:
    """A line no gate held may be released when the read-side scanner flags it as a possible
    injection (`blocked`): one model for both. Refused otherwise — nothing to release, or a secret,
    which a release would show (`optmem purge` deletes it)."""
    from optmem import record
    from optmem.quarantine import kind_of

    found = record.flagged_field(idx.record(row)) if not idx.passed([row]) else None
    if found is not None and kind_of(found[1]) == "secret":
        raise NotApplicable(
            f"{row.id} holds what the scanner reads as a secret ({found[1]}): releasing it would show it — "
            f"`optmem purge {row.id[-8:]} --yes` deletes it; nothing was written",
            code="not_held",
            id=row.id,
        )
    if found is None:
        raise NotApplicable(
            f"{row.id} is not held in quarantine, nor blocked on read (`optmem quarantine` lists both); "
            "nothing was written",
            code="not_held",
            id=row.id,
        )


def _releasable(idx: Any, row: Any) -> bool:
    """Whether `row` is a held record a release would free: False when it was released before;
    refused when it is a bookkeeping line, was never held (nor blocked on read), or was forgotten."""
    log.refuse_bookkeeping(idx, row, "release")
    if not row.held:
        _releasable_unheld(idx, row)
    if row.released:
        return False
    if row.forgotten:  # (dropped already: releasing it would show its words to no purpose)
        raise NotApplicable(
            f"{row.id} was forgotten while it was held; nothing to release — `optmem restore "
            f"{row.id[-8:]}` first if it was forgotten by mistake; nothing was written",
            code="not_held",
            id=row.id,
        )
    return True


def refuse_agent_release(ref: str, origin: str | None) -> None:
    """A release by anyone but a person (`origin` user) is refused, `needs_person`
    (`quarantine.refuse_unless_person`, the one person check)."""
    from optmem.quarantine import refuse_unless_person

    refuse_unless_person(
        f"releasing {ref} from quarantine (a held record waits until a person reviews it)",
        f"optmem release {ref}",
        origin,
        ref,
    )


def release(vault: Vault, ref: str, *, source: str | None = None, origin: str | None = None) -> Released:
    """Release a held record: it becomes what it would be unheld (current, a correction in
    force, its key's value), its words shown as stored. A `release` line in the log, recording
    who released it (`origin`); a record released before is `already_released`; one never held,
    or a bookkeeping line, is refused. Only a person releases (`origin` user): a record is held
    until a person reviews it, and an agent that could release what it was told would let any
    injection in (a held redline into context as a locked rule) — refused, `needs_person`."""
    if origin != "user":  # (what is no release to make says so first: an agent is not sent to the user for nothing)
        with open_index(vault) as idx:
            row = log.resolve_one(idx, ref)
            if _releasable(idx, row):
                refuse_agent_release(ref, origin)
        return Released("already_released", row.id, None)

    def releasing(idx: Any, row: Any, moment: Any) -> Any:
        if not _releasable(idx, row):
            return None
        line = log.about(row, moment, RELEASE, source=source, origin=origin)
        vault.list_releases([line.id])  # (under the lock, before the line: `Vault.own_releases`)
        return line

    row, line = log.write_about(vault, ref, releasing)
    return Released("released", row.id, line.id) if line else Released("already_released", row.id, None)
