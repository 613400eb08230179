"""Cold-memory commands: append, get, forget."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from optmem.cli.common import (JsonOpt, command, emit, env_domain, get_vault, note, read_arg,
                               sub_app, warn_all)

app = sub_app()

DomainOpt = Annotated[str | None, typer.Option("--domain", "-d", help="Agent or area (else OPTMEM_DOMAIN, config, `default`).")]
ProjectOpt = Annotated[str | None, typer.Option("--project", "-p", help="Project name.")]
TierOpt = Annotated[str | None, typer.Option("--tier", help="chat | normal | evidence | redline.")]
RedlineOpt = Annotated[bool, typer.Option("--redline", help="A locked rule: tier redline.")]
EvidenceOpt = Annotated[str | None, typer.Option("--evidence", help="Where it came from (URL, file, commit).")]
SourceOpt = Annotated[str | None, typer.Option("--source", help="Who wrote it (agent, session).")]
UnsafeOpt = Annotated[bool, typer.Option("--allow-unsafe", help="Store even if the security scan flags the text.")]


def short(rid: str | None) -> str:
    """Human output shows the last 8 characters of an id (ids of one second share the first 8)."""
    return rid[-8:] if rid else "-"


def render_record(rec: dict[str, Any]) -> str:
    status = rec["status"]
    if rec.get("superseded_by"):
        status += f" by {short(rec['superseded_by'])}"
    lines = [f"{rec['id']}  [{status}]", f"  {rec['ts']}  {rec['domain']}"
             + (f"/{rec['project']}" if rec.get("project") else "")
             + f"  kind={rec['kind']}  tier={rec['tier']}"]
    for name in ("key", "expires", "evidence", "source"):
        if rec.get(name):
            lines.append(f"  {name}: {rec[name]}")
    if rec.get("corrects"):
        lines.append("  corrects: " + ", ".join(short(c) for c in rec["corrects"]))
    if rec.get("tags"):
        lines.append("  tags: " + ", ".join(rec["tags"]))
    lines.append(f"  {rec['text']}")
    return "\n".join(lines)


@app.command()
@command
def append(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The memory (- reads stdin).")],
    domain: DomainOpt = None,
    project: ProjectOpt = None,
    kind: Annotated[str, typer.Option("--kind", help="note, decision, commit, …")] = "note",
    tier: TierOpt = None,
    redline: RedlineOpt = False,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable).")] = None,
    key: Annotated[str | None, typer.Option("--key", help="Fact key: a newer record with it supersedes this one.")] = None,
    ttl: Annotated[str | None, typer.Option("--ttl", help="Expire after 30m, 12h, 7d, 2w …")] = None,
    evidence: EvidenceOpt = None,
    source: SourceOpt = None,
    on_similar: Annotated[str | None, typer.Option("--on-similar", help="skip | store | supersede a near duplicate.")] = None,
    allow_unsafe: UnsafeOpt = False,
    json_out: JsonOpt = False,
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
    res = log.append(vault, read_arg(text), domain=env_domain(domain), project=project, kind=kind,
                     tier="redline" if redline else (tier or "normal"), tags=tag, key=key, ttl=ttl,
                     evidence=evidence, source=source, on_similar=on_similar,
                     allow_unsafe=allow_unsafe)
    if res.warning:
        note(f"warning: {res.warning}")

    def human() -> str:
        if res.status == "duplicate":
            return f"duplicate of {res.id} — nothing new stored (recency refreshed)"
        if res.status == "skipped":
            return "skipped: near duplicate of " + ", ".join(s["id"] for s in res.similar)
        return res.id or ""

    emit(json_out, {"status": res.status, "id": res.id, "record": res.record,
                    "similar": res.similar, "duplicate_of": res.duplicate_of}, human)


@app.command()
@command
def get(
    record_id: Annotated[str, typer.Argument(metavar="ID", help="Full id, or ≥ 6 of its first or last characters.")],
    json_out: JsonOpt = False,
) -> None:
    """Show one record with its status (current / superseded by … / expired / forgotten).

    \b
    Example:
      optmem get 7QMZMMFT
    """
    from optmem import log

    got = log.get(get_vault(), record_id)
    warn_all(got.warnings)
    emit(json_out, {"record": got.record, "warnings": got.warnings}, lambda: render_record(got.record))


@app.command()
@command
def forget(
    record_id: Annotated[str, typer.Argument(metavar="ID", help="The record to forget.")],
    reason: Annotated[str | None, typer.Option("--reason", help="Why (kept in the tombstone).")] = None,
    source: SourceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Hide a record from search and context; it stays in LOG.jsonl.

    \b
    Example:
      optmem forget 7QMZMMFT --reason "wrong project"
    """
    from optmem import log

    res = log.forget(get_vault(write=True), record_id, reason=reason, source=source)
    emit(json_out, {"status": res.status, "id": res.id, "tombstone": res.tombstone},
         lambda: f"{res.status.replace('_', ' ')}: {res.id}")
