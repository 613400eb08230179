"""The lifecycle commands: touch, sweep, pending, confirm, reject, verify, quarantine, release."""

from __future__ import annotations

from optmem.cli.common import emit, get_vault, origin_of, short, stored_line, warn_all
from optmem.cli.spec import PERSON, SHOW_UNSAFE, UNSAFE, arg, command, flag, opt

SOURCE = opt("source", help="Who did it (agent, tool, person).")
QUEUE_LIMIT = opt("limit", "--limit", "-n", type=int, default=50, help="How many (oldest first).")


def _queue_limit(limit: int) -> int:
    """A review queue's --limit (pending, quarantine): at least one."""
    if limit < 1:
        from optmem.errors import UsageError

        raise UsageError("--limit must be at least 1")
    return limit


@command("touch", arg("ids", "Records that were used (ids, or ≥ 6 of their characters).", metavar="ID", multiple=True))
def touch(ids: list[str], json_out: bool) -> None:
    """Say records were used: they stay warm, and a cold one is warm again (ACCESS.jsonl).

    \b
    Example:
      optmem touch 7QMZMMFT 9XKD2P1A
    """
    from optmem import review

    res = review.touch(get_vault(), list(ids or []))  # records that exist: a vault that does
    emit(
        json_out,
        res._asdict(),
        lambda: (
            f"touched {len(res.ids)} record(s)"
            + (f"; warm again: {', '.join(short(i) for i in res.warmed)}" if res.warmed else "")
        ),
    )


@command(
    "sweep",
    flag("dry_run", help="Only print what would cool; write nothing."),
    flag("if_due", help="Only if no sweep ran in the last day (for cron)."),
    opt("show", type=int, default=20, help="How many of the cooled records to list."),
)
def sweep(dry_run: bool, if_due: bool, show: int, json_out: bool) -> None:
    """Cool what nobody used for long: out of normal search and context, never deleted.

    \b
    Idempotent; a write runs it at most once a day unless [lifecycle] auto_sweep = "off".
    Example:
      optmem sweep --dry-run
    """
    from optmem import lifecycle
    from optmem.errors import UsageError
    from optmem.view import STATUS_LABEL, bracket, labels

    if show < 0:
        raise UsageError("--show must be 0 or more")
    res = lifecycle.sweep(get_vault(), dry_run=dry_run, show=show, if_due=if_due)

    def human() -> str:
        if not res.ran:
            return "not due: a sweep ran within the last day"
        verb = "would cool" if dry_run else "cooled"
        reasons = ", ".join(f"{n} by {why.replace('_', ' ')}" for why, n in sorted(res.by_reason.items()))
        lines = [f"{verb} {res.cooled} of {res.checked} record(s)" + (f" ({reasons})" if reasons else "")]
        lines += [
            f"  {short(r['id'])}  heat {r['heat']:.3f}  {r['reason']:<11} {r['text']}"
            + (f"  {bracket(said)}" if (said := labels(r, omit=(STATUS_LABEL,))) else "")
            for r in res.records
        ]
        if res.cooled > len(res.records):
            lines.append(f"  … and {res.cooled - len(res.records)} more")
        return "\n".join(lines)

    emit(json_out, res._asdict(), human)


@command(
    "pending",
    flag("include_cold", help="Also list guesses that went cold unconfirmed."),
    QUEUE_LIMIT,
)
def pending(include_cold: bool, limit: int, json_out: bool) -> None:
    """The review queue: guesses waiting to be confirmed, oldest first.

    \b
    A pending record is current once stated (said again by a write that is no guess), or
    confirmed; other guesses of it are counted ("said again Nx"), never enough.
    Example:
      optmem pending
      optmem confirm 7QMZMMFT    |    optmem reject 7QMZMMFT --reason "wrong"
    """
    from optmem import lifecycle
    from optmem.view import PENDING_LABEL, bracket, labels

    waiting = lifecycle.queue(get_vault(), include_cold=include_cold, limit=_queue_limit(limit))

    def human() -> str:
        if not waiting:
            return "nothing pending"
        return "\n".join(
            f"{short(w.id)}  {w.age_days:>4}d  said again {w.restated}x"
            + (f"  confidence {w.confidence:g}" if w.confidence is not None else "")
            + f"  {stored_line(w.text)}"
            + (f"  {bracket(said)}" if (said := labels(w._asdict(), omit=(PENDING_LABEL,))) else "")
            + (f"  corrects {', '.join(short(c) for c in w.corrects)}" if w.corrects else "")
            for w in waiting
        )

    emit(json_out, {"pending": [w._asdict() for w in waiting], "count": len(waiting)}, human)


@command("confirm", arg("record_id", "The pending record.", metavar="ID"), SOURCE)
def confirm(record_id: str, source: str | None, json_out: bool) -> None:
    """Confirm a pending record: it becomes current.

    A guess confirmed before says so (nothing written). A record that was never a guess, a
    forgotten one (`optmem get` says by what) or a bookkeeping line is refused (exit 1).

    \b
    Example:
      optmem confirm 7QMZMMFT
    """
    from optmem import review

    res = review.confirm(get_vault(), record_id, source=source, origin=origin_of(None))  # (who runs it)
    emit(json_out, res._asdict(), lambda: f"{res.status.replace('_', ' ')}: {res.id}")


@command(
    "reject",
    arg("record_id", "The pending record.", metavar="ID"),
    opt("reason", help="Why it is wrong (kept in the tombstone)."),
    SOURCE,
)
def reject(record_id: str, reason: str | None, source: str | None, json_out: bool) -> None:
    """Reject a pending record: it is forgotten, with your reason (it stays in LOG.jsonl).

    Rejecting it again keeps the first reason. A record that is not a guess waiting — stored
    as a fact, confirmed, or a bookkeeping line — is refused (exit 1): `optmem forget` hides a
    fact, `optmem correct` replaces it.

    \b
    Example:
      optmem reject 7QMZMMFT --reason "the user never said that"
    """
    from optmem import review

    res = review.reject(get_vault(), record_id, reason=reason, source=source)
    status = "rejected" if res.status == "forgotten" else "already_rejected"  # idempotent: reason kept
    warn_all(list(res.warnings))
    emit(
        json_out,
        {"status": status, "id": res.id, "tombstone": res.tombstone, "warnings": list(res.warnings)},
        lambda: (
            f"rejected: {res.id}"
            if res.tombstone
            else f"already rejected: {res.id} (its first reason stands; nothing written)"
        ),
    )


@command(
    "verify",
    arg("ids", "The facts checked (ids, or ≥ 6 of their characters).", metavar="ID", multiple=True),
    opt("note", help="How it was checked (kept with the verification)."),
    SOURCE,
    UNSAFE,
)
def verify(ids: list[str], note: str | None, source: str | None, allow_unsafe: bool, json_out: bool) -> None:
    """Say facts were checked and still hold (when, by whom, a note).

    Each gets a `verify` line in the log; `get` and `search --json` show `verified_at`, and
    `context` marks facts that matter and went unchecked for long ("unchecked since …"). Only
    current facts: a superseded, forgotten, expired or pending record is refused (exit 1), and
    nothing is written. `optmem correct` counts as a check of the new value.

    \b
    Example:
      optmem verify 7QMZMMFT 9XKD2P1A --note "checked the staging config"
    """
    from optmem import review

    res = review.verify(get_vault(), list(ids or []), note=note, source=source, allow_unsafe=allow_unsafe)
    emit(
        json_out,
        {"status": "verified", **res._asdict()},
        lambda: "\n".join(f"verified {short(v['id'])} at {v['verified_at']}" for v in res.verified),
    )


@command(
    "quarantine",
    QUEUE_LIMIT,
    SHOW_UNSAFE,
)
def quarantine(limit: int, allow_unsafe: bool, json_out: bool) -> None:
    """Records held in quarantine (a possible injection), each with the rule that fired.

    Writes the scanner flagged as a possible injection are kept out of context, hot memory,
    search and MCP until you review them; listed oldest first.

    \b
    Example:
      optmem quarantine --allow-unsafe
      optmem release 7QMZMMFT    |    optmem forget 7QMZMMFT --reason "an injection"
    """
    from optmem import review
    from optmem.quarantine import ORIGIN_RULES
    from optmem.safety.fence import line

    held, blocked, more = review.review_queue(get_vault(), show_unsafe=allow_unsafe, limit=_queue_limit(limit))

    def listed(items: list[review.Held]) -> list[str]:
        return [
            f"{short(h.id)}  {h.ts[:10]}  {h.rule}"
            + (" (an origin rule: held for where it came from)" if h.rule.endswith(tuple(ORIGIN_RULES)) else "")
            + (f" (in its {h.field})" if h.field and h.field != "text" else "")
            + (f"  from {h.origin}" if h.origin else "")
            + f"  {line(h.text)}"
            for h in items
        ]

    def human() -> str:
        if not held and not blocked:
            return "nothing held"
        out = listed(held)
        if blocked:
            out.append(
                "blocked on read, never held (typed into the log, brought by sync, or written with --allow-unsafe):"
            )
            out += ["  " + said for said in listed(blocked)]
        return (
            "\n".join(out)
            + ("" if allow_unsafe else "\n(what each one says, as stored: optmem quarantine --allow-unsafe)")
            + "\n(optmem release ID: it is fine — optmem forget ID: it is not)"
        )

    emit(
        json_out,
        {
            "held": [h._asdict() for h in held],
            "count": len(held),
            "blocked": [h._asdict() for h in blocked],
            **({"blocked_scan_partial": True} if more else {}),
        },
        human,
    )


@command("release", arg("record_id", "The held record.", metavar="ID"), SOURCE, PERSON)
def release(record_id: str, source: str | None, origin: str | None, json_out: bool) -> None:
    """Release a record held in quarantine: you reviewed it, it is fine.

    Only a person releases: run at a terminal (or with --origin user); an agent's release of a
    held record is refused (exit 1, needs_person). The release line records who released it. A
    record released before says so (nothing written); an unknown id (not_found) or a record that
    was never held (not_held) is refused (exit 1), to an agent as to a person.
    To drop a held record instead: `optmem forget ID`.

    \b
    Example:
      optmem release 7QMZMMFT
    """
    from optmem import review
    from optmem.quarantine import check_origin

    res = review.release(get_vault(), record_id, source=source, origin=origin_of(check_origin(origin)))
    emit(json_out, res._asdict(), lambda: f"{res.status.replace('_', ' ')}: {res.id}")
