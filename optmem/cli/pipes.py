"""The pipes between sessions: handoff write/read/list, context, compact, tree."""

from __future__ import annotations

from optmem.cli.common import (
    emit,
    env_domain,
    get_vault,
    note,
    origin_of,
    progress_callback,
    read_arg,
    short,
    summarizer_command,
    warn_all,
)
from optmem.cli.spec import SHOW_UNSAFE, UNSAFE, CommandExit, arg, command, flag, opt
from optmem.errors import VAULT

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any

PROJECT = opt("project", "--project", "-p", help="The project.")


# a handoff of the same project and domain the latest's writer had not seen, as `handoff read` labels it
BESIDE_SAID = (
    "(written beside the latest, {id} — on another machine, before a sync —, not before it: its open items still stand)"
)

# one written before the latest, here, that nobody had read when the latest was written (`Handoff.unread`)
UNREAD_SAID = (
    "(written before the latest, {id}, and not read before the latest was written: its open items still stand)"
)


def _render_handoff(h: Any) -> list[str]:
    """A handoff for a prompt, as parts of a fenced body: the headings ours, every item and the
    note as `handoff.read` gives them (re-scanned, as `show` and `context` do: `[BLOCKED: rule]`,
    unless --allow-unsafe asked for them as stored), and marked as stored text."""
    from optmem.safety.fence import Body, line, quote

    parts: list[str] = [
        Body(
            f"# Handoff — {line(h.project)}  ({line(h.time)}"
            + (f", stamped after the latest: the clock said {line(h.clock_said)}" if h.clock_said else "")
            + (f", domain {line(h.domain)}" if h.domain else "")
            + f"{', edited by hand' if h.edited else ''}"
            + (", the agent's own report: its “done” items are its claims" if h.origin == "agent" else "")
            + ")"
        )
    ]
    if h.beside:  # (`handoff.beside`: its open items are as current as the latest's)
        parts.append(Body((UNREAD_SAID if h.unread else BESIDE_SAID).format(id=h.beside[-8:])))
    for title, items in (("Done", h.done), ("Blocked", h.blocked), ("Next", h.next)):
        parts.append(Body(f"## {title}"))
        parts += [quote(i, "- ") for i in items] or [Body("- (none)")]
    if h.note:
        parts += [Body("## Notes"), quote(h.note)]
    return parts


@command(
    "handoff write",
    PROJECT,
    opt("done", multiple=True, help="What was finished (repeatable)."),
    opt("blocked", multiple=True, help="What is stuck, and why (repeatable)."),
    opt("next", multiple=True, help="What the next session should do (repeatable)."),
    opt("note", help="Free text."),
    opt("file", help="Read the note from a Markdown file (## Done / ## Blocked / ## Next), or - for stdin."),
    opt("domain", "--domain", "-d", help="Domain of the log record (else OPTMEM_DOMAIN, config)."),
    opt("source", help="Who wrote it (agent, session)."),
    UNSAFE,
)
def handoff_write(
    project: str | None,
    done: list[str] | None,
    blocked: list[str] | None,
    next: list[str] | None,
    note: str | None,
    file: str | None,
    domain: str | None,
    source: str | None,
    allow_unsafe: bool,
    json_out: bool,
) -> None:
    """Write the project's HANDOFF.md for the next session (and keep it in the log).

    \b
    Example:
      optmem handoff write -p webapp --done "port moved to 9090" --next "update the nginx docs"
    """
    from pathlib import Path

    from optmem import fsio, handoff
    from optmem.errors import UsageError

    if not project:
        raise UsageError("handoff write needs --project NAME")
    text = None
    vault = get_vault(write=True)
    if file:  # read up to 4x the handoff's own bound: a larger file is refused unread
        bound = 4 * vault.settings.limits.record_bytes
        text = read_arg(file, "--file", bound) if file == "-" else fsio.read_text(Path(file), limit=bound)
        if text is None:
            raise UsageError(f"no such file: {file}")
    h = handoff.write(
        vault,
        project,
        done=done,
        blocked=blocked,
        next=next,
        note=note,
        file_text=text,
        domain=env_domain(domain),
        source=source,
        allow_unsafe=allow_unsafe,
        origin=origin_of(None),  # who runs it: a person at a terminal, else an agent (as `append`)
    )
    where = f"projects/{project}/HANDOFF.md"
    if h.stamped_after:  # the clock stood behind the latest: stamped after it (`handoff.write`)
        warn_all(
            [
                f"the clock says {h.clock_said}, before the project's latest handoff ({short(h.stamped_after)}): "
                f"this one, written after it, is stamped just after it ({h.time}), so that it is the latest — "
                f"in {where}, `handoff read` and `context`"
            ]
        )
    emit(
        json_out,
        {"handoff": h.to_dict(), "file": where} | ({"stamped_after": h.stamped_after} if h.stamped_after else {}),
        lambda: f"handoff for {project} written ({h.id})",
    )


@command(
    "handoff read",
    PROJECT,
    opt("history", type=int, default=None, help="Show the N latest handoffs, newest first."),
    opt("domain", "--domain", "-d", help="Only this domain's (agent's) handoffs."),
    SHOW_UNSAFE,
)
def handoff_read(
    project: str | None, history: int | None, domain: str | None, allow_unsafe: bool, json_out: bool
) -> None:
    """Print the project's latest handoff (a hand-edited HANDOFF.md wins) and the latest of each
    other domain (agent) that wrote one; or the N latest.

    \b
    Example:
      optmem handoff read -p webapp --history 2
      optmem handoff read -p webapp --domain hermes
    """
    from optmem import handoff
    from optmem.errors import UsageError
    from optmem.safety.fence import Body, wrap

    if not project:
        raise UsageError("handoff read needs --project NAME")
    vault = get_vault()
    _follow(vault)
    if history is None and domain is None:
        found = handoff.latest_per_domain(vault, project, show_unsafe=allow_unsafe)
    else:
        bad: list[Any] = []  # (--history reads the log: a HANDOFF.md that cannot be read is said, not fatal)
        found = handoff.read(
            vault,
            project,
            1 if history is None else history,
            domain=domain,
            show_unsafe=allow_unsafe,
            set_aside=None if history is None else bad,
        )
        for exc in bad:
            note(f"optmem: warning: {exc.message.split(' — ', 1)[0]}; --history lists the log's handoffs")
        if history is None:  # (that domain's latest, and any of its handoffs written beside it)
            found += handoff.beside(vault, found[0], show_unsafe=allow_unsafe)

    def human() -> str:  # stored text, fenced: the handoffs one after the other, a blank line between
        parts: list[str] = []
        for h in found:
            parts += ([Body("")] if parts else []) + _render_handoff(h)
        return wrap(*parts)

    handoff.seen(vault, found)  # (a handoff written after this follows them: `handoff._seen_by`)
    emit(json_out, {"project": project, "handoffs": [h.to_dict() for h in found]}, human)


def _follow(vault: Any) -> None:
    """A person's edit of a HANDOFF.md (and of a hot file) journalled before a handoff is shown,
    as every read of the view does (`follow.follow_hot`): what is shown is what the log holds."""
    if vault.exists():
        from optmem.follow import follow_hot

        follow_hot(vault)


@command("handoff list")
def handoff_list(json_out: bool) -> None:
    """List projects and their latest handoff.

    \b
    Example:
      optmem handoff list
    """
    from optmem import handoff

    vault = get_vault()
    _follow(vault)
    found = handoff.list_all(vault)

    def row(name: str, h: dict[str, Any]) -> str:
        who = f" ({h['domain']})" if h["domain"] else ""
        side = f"  written beside the latest ({h['beside'][-8:]}), not before it:" if h.get("beside") else ""
        return f"{name:<20} {h['time']}{who}{side}  done {h['done']}, blocked {h['blocked']}" + (
            f"; next: {h['next'][0]}" if h["next"] else ""
        )

    def human() -> str:  # each project's latest, then each other agent's latest on it, indented
        out: list[str] = []
        for p in found:
            if "unreadable" in p:
                why = p["unreadable"]
                out.append(f"{p['project']:<20} could not be read: {why} (`optmem doctor` names the problem)")
                continue
            out += [row(p["project"], p)] + [row("", a) for a in p["agents"]]
        return "\n".join(out) or "no handoffs yet"

    emit(json_out, {"projects": found}, human)


@command(
    "context",
    PROJECT,
    opt(
        "domain",
        "--domain",
        "-d",
        help="Only this domain's redlines and records; its handoff first (every agent's latest still shows).",
    ),
    opt("query", "--query", "-q", help="Records relevant to this (else the project's latest)."),
    opt("budget", type=int, default=4000, help="Most characters to print, fences included."),
)
def context(project: str | None, domain: str | None, query: str | None, budget: int, json_out: bool) -> None:
    """Print the prompt-ready memory block for the start of a session.

    Redlines, hot memory, the project block, the latest handoff, then relevant current records,
    fenced as recalled reference data and never over --budget characters.

    \b
    Example:
      optmem context --project webapp --query "deploy" --budget 3000
    """
    from optmem import context as core

    ctx = core.build(get_vault(), project=project, domain=domain, query=query, budget=budget)
    warn_all(ctx.warnings)  # (the block itself says so too: the agent reads it)
    emit(
        json_out,
        {
            "text": ctx.text,
            "chars": ctx.chars,
            "budget": ctx.budget,
            "sections": ctx.sections,
            "omitted": ctx.omitted,
            "warnings": ctx.warnings,
        },
        lambda: ctx.text,
    )


@command(
    "compact",
    opt("domain", "--domain", "-d", help="Only this domain (default: every domain)."),
    flag("dry_run", help="Show what would be created; write nothing."),
    opt(
        "summarizer",
        help="A shell command that reads a node's input on stdin and prints its "
        "summary (else OPTMEM_SUMMARIZER, else [tree] summarizer in ~/.config/optmem/config.toml).",
    ),
)
def compact(domain: str | None, dry_run: bool, summarizer: str | None, json_out: bool) -> None:
    """Roll the log up into the summary tree (tree/<domain>/); the log is never changed.

    \b
    Example:
      optmem compact --domain hermes --dry-run
    """
    from optmem import tree

    res = tree.compact(
        get_vault(),
        domain=domain,
        dry_run=dry_run,
        summarizer=summarizer_command(summarizer),
        progress=progress_callback("compacting"),
    )
    for w in res.warnings:
        note(f"warning: {w}")

    def human() -> str:
        verb = "would create" if dry_run else "created"
        return (
            "\n".join(
                f"{d['domain']}: not compacted — a node of it cannot be read (the warning above names it); "
                "fix or remove that file, then compact again"
                if d["not_compacted"]
                else f"{d['domain']}: {verb} {len(d['created'])} node(s)"
                + (f" ({', '.join(d['created'][:6])}{', …' if len(d['created']) > 6 else ''})" if d["created"] else "")
                + (
                    f"; {'would make' if dry_run else 'made'} {len(d['refreshed']) - len(d['joined'])} node(s) "
                    "again (their records changed status)"
                    if len(d["refreshed"]) > len(d["joined"])
                    else ""
                )
                + (
                    f"; {'would make' if dry_run else 'made'} {len(d['joined'])} node(s) again (late records "
                    "joined them)"
                    if d["joined"]
                    else ""
                )
                + ("; root refreshed" if d["root_updated"] else "")
                + f"; {d['raw_tail']} record(s) not yet in a full run"
                for d in res.domains
            )
            or "nothing to compact"
        )

    emit(json_out, {"dry_run": res.dry_run, "domains": res.domains, "warnings": res.warnings}, human, ok=res.ok)
    if not res.ok:  # a domain left as it is: not a success, though the others were compacted
        raise CommandExit(VAULT)


def _written_by(node: dict[str, Any]) -> str:
    """Who wrote a node's body, as its header says it (`view.labels` badges its search hit alike)."""
    who = str(node.get("summarizer") or "extractive")
    if who == "extractive":
        return "summarised by: optmem's extractive summariser (the records' own words)"
    return f"summarised by: {who} — a model's words, not checked facts; `optmem get ID` shows each record"


@command(
    "tree",
    arg("node", "A node to show, as DOMAIN/NODE (e.g. hermes/root).", required=False),
    opt("domain", "--domain", "-d", help="Only this domain's outline."),
)
def tree_cmd(node: str | None, domain: str | None, json_out: bool) -> None:
    """Print the summary tree's outline, or one node with its children.

    \b
    Example:
      optmem tree hermes/root
    """
    from optmem import tree
    from optmem.safety.fence import wrap

    vault = get_vault()
    if node is not None:  # an empty NODE is refused, not taken for "no node"
        found = tree.get_node(vault, node)
        emit(
            json_out,
            {"node": found},
            lambda: wrap(  # stored text, scanned (`tree.get_node`) and fenced
                f"{found['id']}  level {found['level']}  {found['count']:,} records  "
                f"{found['from']} → {found['to']}\n{_written_by(found)}\n"
                f"children: {', '.join(found['children'])}\n\n{found['body']}"
            ),
        )
        return
    roots, warnings = tree.outline(vault, domain)
    warn_all(warnings)  # (a node left out of the outline is named)

    def lines(n: dict[str, Any], depth: int) -> list[str]:
        out = [
            f"{'  ' * depth}{n['id']}  L{n['level']}  {n['count']:,} records  "
            f"{n['from'][:10]} → {n['to'][:10]}" + ("  (edited)" if n["edited"] else "")
        ]
        for c in n["children"]:
            out += lines(c, depth + 1)
        return out

    run = vault.settings.tree.run
    emit(
        json_out,
        {"roots": roots, "warnings": warnings},
        lambda: (
            "\n".join(line for r in roots for line in lines(r, 0))
            or (
                f"no summary tree yet: `optmem compact` rolls up each full run of {run} records of a domain "
                f"(`[tree] run`); until a domain has that many, search and context read the log itself"
            )
        ),
    )
