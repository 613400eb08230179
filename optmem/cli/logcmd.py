"""Cold-memory commands: append, get, forget."""

from __future__ import annotations

from typing import Any

from optmem.cli.common import emit, env_domain, get_vault, note, origin_of, read_arg, short, warn_all
from optmem.cli.spec import ORIGIN, SHOW_UNSAFE, UNSAFE, WHO, arg, command, flag, opt

DOMAIN = opt("domain", "--domain", "-d", help="Agent or area (else OPTMEM_DOMAIN, config, `default`).")
PROJECT = opt("project", "--project", "-p", help="Project name.")
TIER = opt("tier", help="chat | normal | evidence | redline.", choices=("chat", "normal", "evidence", "redline"))
REDLINE = flag("redline", help="A locked rule: tier redline.")
EVIDENCE = opt("evidence", help="Where it came from (URL, file, commit).")
SOURCE = opt("source", help="Who wrote it (agent, tool).")
SESSION = opt(
    "session", help="The conversation it came from; records of one session lend each other context in search."
)


def render_record(rec: dict[str, Any]) -> str:
    """A record for a reader, person or agent: our lines, and its stored strings defused and
    indented (`fence.line`, `fence.defuse`), so no stored line can pass for one of ours or for
    the fence an agent's context is read in."""
    from optmem.safety.fence import defuse, line
    from optmem.view import (
        CONFLICT_LABEL,
        GUESS_LABEL,
        PENDING_LABEL,
        STATUS_LABEL,
        bracket,
        guess_notes,
        labels,
    )

    # the status word as search's labels say it (`SUPERSEDED by …`), with the details only `get`
    # and `history` give; "current" is no label search prints
    status = rec["status"] if rec["status"] == "current" else str(rec["status"]).upper()
    if rec.get("forgotten_by"):
        status += f" by {short(rec['forgotten_by'])}" + (
            f": {line(rec['forget_reason'])}" if rec.get("forget_reason") else ""
        )
    elif rec.get("cold_since"):
        status += f" since {rec['cold_since']}" + (
            f"; superseded by {short(rec['superseded_by'])}" if rec.get("superseded_by") else ""
        )
        status += f"; expired {rec['expires']}" if rec.get("expired") else ""
    elif rec.get("superseded_by"):
        status += f" by {short(rec['superseded_by'])}"
        if rec.get("latest_version"):  # (the next link of a chain of corrections is not its end)
            status += f", now {short(rec['latest_version'])}"
    elif isinstance(gone := rec.get("removed"), dict):  # when, by what, from which file
        status += (f" {gone['at']}" if gone.get("at") else "") + f" from {gone.get('file')} by {gone.get('by')}"
    if rec.get("pending") and rec["status"] != "pending":
        status += ", still a guess (pending)"
    if rec.get("held_because"):
        status += f": {rec['held_because']}"
    elif rec.get("blocked_because"):
        status += f", {rec['blocked_because']}"
    elif rec.get("held"):
        status += f", released from quarantine (held by {rec['held']})"
    if rec.get("conflict"):
        rivals = rec.get("conflict_with") or []
        status += (
            ", in CONFLICT" + (" with " + ", ".join(short(r) for r in rivals) if rivals else "") + " (optmem conflicts)"
        )
    # what else it is, as every surface labels it (`view.labels`); the status, a guess and a
    # conflict are said above, with their details, and the write gate's guesses below
    marks = labels(rec, omit=(STATUS_LABEL, PENDING_LABEL, CONFLICT_LABEL, GUESS_LABEL))
    lines = [
        f"{rec['id']}  {bracket([status, *marks])}",
        f"  {rec['ts']}  {rec['domain']}"
        + (f"/{rec['project']}" if rec.get("project") else "")
        + f"  kind={rec['kind']}  tier={rec['tier']}"
        + ("  (unverified: this vault is not trusted — `optmem trust`)" if rec.get("unverified") else ""),
    ]
    for name in ("key", "expires", "evidence", "source", "origin", "session"):
        if rec.get(name):
            lines.append(f"  {name}: {line(str(rec[name]))}")
    if rec.get("corrects"):
        lines.append("  corrects: " + ", ".join(short(c) for c in rec["corrects"]))
    if rec.get("tags"):
        lines.append("  tags: " + ", ".join(line(str(t)) for t in rec["tags"]))
    if rec.get("kind") == "merged":  # (fields a hand-typed line may hold in any shape)
        facts, fragments, details = rec.get("facts"), rec.get("fragments"), rec.get("details")
        lines.append(
            f"  topic: {line(str(rec.get('topic')))}; facts: "
            + (", ".join(line(f"{k}={v}") for k, v in facts.items()) if isinstance(facts, dict) and facts else "—")
            + "; fragments: "
            + ", ".join(short(str(f)) for f in (fragments if isinstance(fragments, list) else []))
        )
        lines += [f"    - {line(str(d))}" for d in (details if isinstance(details, list) else [])]
    life = rec.get("life")
    if life:
        lines.append(
            f"  importance {life['importance']:g}  heat {life['heat']:.3f}  last access "
            f"{life['last_access'] or '?'}"
            + (f"  confidence {rec['confidence']:g}" if rec.get("confidence") is not None else "")
            + (f"  said again {life['restated']}x" if "restated" in life else "")
        )
    written = rec.get("written") or {}
    if written.get("pending") and not rec.get("pending"):
        lines.append("  written as a guess (pending); no longer one")
    for guess in guess_notes(rec.get("may_update"), rec.get("may_be_updated_by") or (), short):
        lines.append(f"  {guess} (the write gate's guess)")
    if rec.get("dated_before"):  # (`history`: listed after them, the order it replaced them in)
        them = "them" if len(rec["dated_before"]) > 1 else "it"
        lines.append(
            f"  dated before {', '.join(short(r) for r in rec['dated_before'])}, which its writer saw: it replaces "
            f"{them} all the same (its clock was behind, or OPTMEM_NOW set) — listed after {them}, as written"
        )
    for ev in rec.get("events") or []:
        what = ev["event"].replace("_", " ")
        if ev["event"] == "confirmed" and ev.get("origin") not in (None, "user"):
            what += f" by the {ev['origin']} (its own statement, not the user's)"
        lines.append(f"  {ev['ts'] or '?'}  {what} ({short(ev['id'])})")
    lines += [f"  {x}" for x in defuse(rec["text"]).split("\n")]
    return "\n".join(lines)


@command(
    "append",
    arg("text", "The memory (- reads stdin)."),
    DOMAIN,
    PROJECT,
    opt("kind", default="note", help="note, decision, commit, …"),
    TIER,
    REDLINE,
    opt("tag", multiple=True, help="A tag (repeatable)."),
    opt(
        "key",
        help="Fact key: a newer record with the same key supersedes it — unless it is an "
        "inference against a stated value, or was written within [consolidation] "
        "conflict_window_days (0: off) of it: then both stay, in conflict (`optmem conflicts`).",
    ),
    opt("ttl", help="Expire after a duration: a number with s, m, h, d or w (30m, 12h, 7d, 2w)."),
    EVIDENCE,
    SOURCE,
    ORIGIN,
    SESSION,
    opt("on_similar", help="skip | store | supersede a near duplicate.", choices=("skip", "store", "supersede")),
    opt(
        "on_update",
        help="keep | supersede | ask, when it looks like a new value of a record (端口 8080 → 9090).",
        choices=("keep", "supersede", "ask"),
    ),
    opt("importance", type=float, help="0..1: how much it matters (default by kind and tier; redlines 1)."),
    opt(
        "confidence",
        type=float,
        help="0..1: how sure the writer is; below [lifecycle] pending_threshold it waits as pending.",
    ),
    flag("agent", help="Written by an agent on its own: confidence defaults to [lifecycle] agent_confidence."),
    opt(
        "basis",
        help="stated (what was said; the default) or inferred (what an agent concluded).",
        choices=("stated", "inferred"),
    ),
    flag(
        "state", help='A temporary state ("worked until 3 am"), not a habit: expires after [consolidation] state_ttl.'
    ),
    UNSAFE,
)
def append(
    text: str,
    domain: str | None,
    project: str | None,
    kind: str,
    tier: str | None,
    redline: bool,
    tag: list[str] | None,
    key: str | None,
    ttl: str | None,
    evidence: str | None,
    source: str | None,
    origin: str | None,
    session: str | None,
    on_similar: str | None,
    on_update: str | None,
    importance: float | None,
    confidence: float | None,
    agent: bool,
    basis: str | None,
    state: bool,
    allow_unsafe: bool,
    json_out: bool,
) -> None:
    """Append a record to LOG.jsonl (through the duplicate write gate) and print its id.

    \b
    Example:
      optmem append "后端端口是 9090" --domain code --project webapp --key backend.port
    """
    from optmem import log
    from optmem.errors import UsageError

    if redline and tier not in (None, "redline"):
        raise UsageError("--redline and --tier disagree; give one of them")
    vault = get_vault(write=True)
    draft = log.Draft(
        read_arg(text) or "",
        domain=env_domain(domain),
        project=project,
        kind=kind,
        tier="redline" if redline else (tier or "normal"),
        tags=tag,
        key=key,
        ttl=ttl,
        evidence=evidence,
        source=source,
        session=session,
        importance=importance,
        confidence=vault.settings.lifecycle.agent_confidence if agent and confidence is None else confidence,
        basis=basis,
        state=state,
        origin=origin_of(origin, agent),
    )
    res = log.append(vault, draft, on_similar=on_similar, on_update=on_update, allow_unsafe=allow_unsafe)
    from optmem import view

    if res.warning:
        note(f"warning: {res.warning}")
    for rid in res.confirmed:
        note(f"confirmed: {short(rid)} — a guess stated as a fact is current now")

    def human() -> str | None:
        # stdout holds only an id (scripts read it: `id=$(optmem append …)`); what happened is
        # said on stderr
        if res.status == "duplicate":
            note(f"duplicate of {res.id} — nothing new stored (recency refreshed)")
            return res.id or ""
        if res.status == "skipped":
            note("skipped: near duplicate of " + ", ".join(s["id"] for s in res.similar) + " — nothing stored")
            return None
        if res.status == "held":
            return res.id or ""  # (why, and what to do: the warning above)
        if res.record and res.record.get("status") == "pending":
            note(f"pending: {res.id} waits to be said again or confirmed (`optmem confirm {short(res.id or '')}`)")
        return res.id or ""

    emit(
        json_out,
        {
            "status": res.status,
            "id": res.id,
            "record": res.record,
            # the stored records it resembles, as every surface shows them (the record itself is
            # shown so by `log.append`)
            "similar": view.shown(res.similar),
            "duplicate_of": res.duplicate_of,
            "possible_update": view.shown(res.possible_update),
            "confirmed": res.confirmed,
            "conflict_with": res.conflict_with,
            **({"held": res.held} if res.held else {}),
            # what stderr says (an MCP caller reads no stderr): kept beside, replaced once confirmed …
            # — scanned as every stored string a surface shows is (it may quote a record's words)
            **({"warning": view.display(res.warning)} if res.warning else {}),
        },
        human,
    )


@command("get", arg("record_id", "Full id, or ≥ 6 of its first or last characters.", metavar="ID"), SHOW_UNSAFE)
def get(record_id: str, allow_unsafe: bool, json_out: bool) -> None:
    """Show one record with its status (current / superseded by … / expired / forgotten).

    \b
    Example:
      optmem get 7QMZMMFT
    """
    from optmem import lookup

    got = lookup.get(get_vault(), record_id, show_unsafe=allow_unsafe)
    warn_all(got.warnings)
    emit(json_out, {"record": got.record, "warnings": got.warnings}, lambda: render_record(got.record))


@command(
    "forget",
    arg("record_id", "The record to forget.", metavar="ID"),
    opt("reason", help="Why (kept in the tombstone)."),
    flag("redline", help="Forget a redline too: it is a locked rule, dropped only by a person (at a terminal)."),
    SOURCE,
    UNSAFE,
    opt(
        "origin", help=f"{WHO} Anyone may forget a record; a redline (--redline) only a person: an agent's is refused."
    ),
)
def forget(
    record_id: str,
    reason: str | None,
    redline: bool,
    source: str | None,
    allow_unsafe: bool,
    origin: str | None,
    json_out: bool,
) -> None:
    """Hide a record from search and context; it stays in LOG.jsonl.

    \b
    Example:
      optmem forget 7QMZMMFT --reason "wrong project"
    """
    from optmem import log
    from optmem.quarantine import check_origin

    res = log.forget(
        get_vault(write=True, create=False),
        record_id,
        reason=reason,
        source=source,
        allow_unsafe=allow_unsafe,
        redline=redline,
        origin=origin_of(check_origin(origin)),
    )
    warn_all(list(res.warnings))
    emit(
        json_out,
        {"status": res.status, "id": res.id, "tombstone": res.tombstone, "warnings": list(res.warnings)},
        lambda: f"{res.status.replace('_', ' ')}: {res.id}",
    )
