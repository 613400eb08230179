"""Hot-memory commands: init, add, replace, remove, show, apply."""

from __future__ import annotations

from typing import Any

from optmem.cli.common import emit, env_domain, get_vault, note, origin_of, read_arg, resolve_vault, warn_all
from optmem.cli.spec import ORIGIN, UNSAFE, arg, command, flag, opt

TARGET = opt(
    "target",
    "--target",
    "-t",
    default="memory",
    help="memory (MEMORY.md) or user (USER.md).",
    choices=("memory", "user"),
)
PROJECT = opt("project", "--project", "-p", help="Use projects/NAME/MEMORY.md.")
FIRST = flag("first", help="If several entries match, edit the first.")
ENTRY = opt("entry", "--id", help="Pick the entry by id (see `show --ids`) instead of OLD.", metavar="ID")


@command("init", arg("path", "Folder for the vault (default: the resolved vault).", required=False))
def init(path: str | None, json_out: bool) -> None:
    """Create a vault, or add only what is missing to an existing folder.

    \b
    Example:
      optmem init ~/.hermes/memories
    """
    from optmem.integrations.git import install_merge_driver
    from optmem.vault import init as do_init

    vault = resolve_vault(path)
    result = do_init(vault)
    result = result._replace(created=list(dict.fromkeys(result.created + install_merge_driver(vault))))
    emit(
        json_out,
        {"vault": result.vault, "created": result.created},
        lambda: (
            f"vault ready at {result.vault}"
            + (f" (added: {', '.join(result.created)})" if result.created else " (nothing to add)")
        ),
    )


def _render(result: Any, changes: list[dict[str, Any]]) -> str:
    u = result.usage
    lines = []
    for c in changes:
        if c["status"] == "duplicate":
            lines.append(f"duplicate: already in {result.file} [{c['entry']['id']}] — nothing written")
        elif c["status"] == "unchanged":
            lines.append(f"unchanged: [{c['entry']['id']}] already reads {c['entry']['text']!r} — nothing written")
        elif c["op"] == "replace":
            lines.append(f"replaced [{c['old']['id']}] → [{c['entry']['id']}] {c['entry']['text']}")
        elif c["op"] == "remove":
            lines.append(f"removed [{c['entry']['id']}] {c['entry']['text']}")
        else:
            lines.append(f"added [{c['entry']['id']}] {c['entry']['text']}")
    lines.append(f"{result.file}: {u.percent}% — {u.chars:,}/{u.limit:,} chars")
    return "\n".join(lines)


def _finish(json_out: bool, result: Any) -> None:
    from optmem import view

    if result.warning:
        note(f"warning: {result.warning}")
    # the entries an edit names — an old or removed one may have been typed into the file by
    # hand — as every surface shows stored text (`view.shown`: `[BLOCKED: rule]` when flagged)
    changes = view.shown(result.changes)
    payload = {
        "success": True,
        "status": result.status,
        "file": result.file,
        "target": result.target,
        "usage": result.usage,
        "changes": changes,
        "journal": result.journal,
        "warning": result.warning,
        # entries an added one may be a new value of (the write gate's guess, as `append` gives it)
        "possible_update": view.shown(result.possible_update),
    }
    if result.entry is not None:
        payload["entry"] = view.shown(result.entry._asdict())
    # Hermes Agent's memory tool names what an edit took out
    for c in changes:
        if c["status"] == "replaced" and "replaced_entry" not in payload:
            payload["replaced_entry"] = c["old"]["text"]
        elif c["op"] == "remove" and "removed_entry" not in payload:
            payload["removed_entry"] = c["entry"]["text"]
    emit(json_out, payload, lambda: _render(result, changes))


@command(
    "add",
    arg("text", "The entry to add (- reads stdin)."),
    TARGET,
    PROJECT,
    flag("force", help="Add even if a near-duplicate entry exists."),
    ORIGIN,
    UNSAFE,
)
def add(
    text: str, target: str, project: str | None, force: bool, origin: str | None, allow_unsafe: bool, json_out: bool
) -> None:
    """Add an entry to hot memory (an exact duplicate is a no-op).

    \b
    Example:
      optmem add "用户的名字叫小明。" --target user
    """
    from optmem import memory

    vault = get_vault(write=True)
    _finish(
        json_out,
        memory.add(
            vault,
            read_arg(text),
            force=force,
            target=target,
            project=project,
            domain=env_domain(None),
            allow_unsafe=allow_unsafe,
            origin=origin_of(origin),
        ),
    )


@command(
    "replace",
    arg("old", "A substring of the entry to change (- reads stdin).", required=False),
    arg("new", "What the matched span becomes (- reads stdin).", required=False),
    ENTRY,
    TARGET,
    PROJECT,
    FIRST,
    ORIGIN,
    UNSAFE,
)
def replace(
    old: str | None,
    new: str | None,
    entry: str | None,
    target: str,
    project: str | None,
    first: bool,
    origin: str | None,
    allow_unsafe: bool,
    json_out: bool,
) -> None:
    """Replace the matched span inside the one entry containing OLD.

    With --id, give only NEW: the whole entry is replaced.

    \b
    Example:
      optmem replace 喜欢喝咖啡 喜欢喝拿铁
      optmem replace --id 3fa2c1 "Prefers tea"
    """
    from optmem import memory
    from optmem.errors import UsageError

    if entry and new is None:
        old, new = None, old
    _no_old_beside_id(entry, old, "replace takes only NEW")
    if new is None:
        raise UsageError("replace needs OLD and NEW (or --id ID NEW); to delete use `optmem remove`")
    vault = get_vault(write=True, create=False)  # nothing to replace in a vault that is not there
    _finish(
        json_out,
        memory.replace(
            vault,
            read_arg(old, "OLD"),
            read_arg(new, "NEW"),
            entry=entry,
            first=first,
            target=target,
            project=project,
            domain=env_domain(None),
            allow_unsafe=allow_unsafe,
            origin=origin_of(origin),
        ),
    )


@command(
    "remove",
    arg("old", "A substring of the entry to remove (- reads stdin).", required=False),
    ENTRY,
    TARGET,
    PROJECT,
    FIRST,
    ORIGIN,
)
def remove(
    old: str | None,
    entry: str | None,
    target: str,
    project: str | None,
    first: bool,
    origin: str | None,
    json_out: bool,
) -> None:
    """Remove the whole entry containing OLD (it stays in LOG.jsonl).

    \b
    Example:
      optmem remove 本周末计划去爬山
    """
    from optmem import memory

    _no_old_beside_id(entry, old, "remove takes no OLD")
    vault = get_vault(write=True, create=False)
    _finish(
        json_out,
        memory.remove(
            vault,
            read_arg(old, "OLD"),
            entry=entry,
            first=first,
            target=target,
            project=project,
            domain=env_domain(None),
            origin=origin_of(origin),
        ),
    )


def _no_old_beside_id(entry: str | None, old: str | None, takes: str) -> None:
    """--id names the entry: OLD given too is refused, not ignored (an entry that does not hold
    it would be changed)."""
    from optmem.errors import UsageError

    if entry and old is not None:
        raise UsageError(
            f"--id {entry} names the entry, so {takes}; OLD ({old!r}) was given too — drop it, or drop --id "
            "to find the entry by OLD (nothing was changed)"
        )


@command(
    "show",
    opt("target", "--target", "-t", help="Only memory or user.", choices=("memory", "user")),
    PROJECT,
    flag("ids", help="Prefix each entry with its id."),
)
def show(target: str | None, project: str | None, ids: bool, json_out: bool) -> None:
    """Print hot memory ready to paste into a prompt, with usage headers, fenced as stored notes.

    \b
    Example:
      optmem show --ids --project webapp
    """
    from optmem import memory
    from optmem.safety.fence import Body, quote, wrap

    vault = get_vault()
    targets: list[tuple[str, str | None]]
    if target:
        targets = [(target, project)]  # (--target user with --project is refused, as `add` refuses it)
    else:
        targets = [("memory", None), ("user", None)] + ([("memory", project)] if project else [])
    if vault.exists():  # what Hermes or a person changed is journalled, an edit cut short finished
        from optmem.follow import follow_hot

        follow_hot(vault)
    shown = memory.show(vault, targets)
    # a file that cannot be read is left out with a warning, the others are shown; when none of
    # them could be read there is nothing to show: that is the error
    warnings = [w for s in shown if (w := s.warning())]
    if all(s.unreadable for s in shown):
        from optmem.errors import Unreadable

        raise Unreadable(
            "; ".join(f"{s.file} {s.unreadable}" for s in shown) + ": fix or remove it "
            "(`optmem doctor` names the problem)",
            files=[s.file for s in shown],
        )
    warn_all(warnings)

    def human() -> str:
        # stored text, fenced: data for a prompt, not instructions. The headers and the § between
        # entries are ours; every line of an entry is marked as stored (`fence.quote`)
        parts: list[str] = []
        for s in shown:
            parts += [Body("")] if parts else []
            parts.append(Body(s.header()))
            if not s.unreadable and not s.entries:
                parts.append(Body("(empty)"))
            for i, e in enumerate([] if s.unreadable else s.entries):
                parts += [Body(memory.SEPARATOR.strip())] if i else []
                mark = (f"[{e['id']}] " if ids else "") + ("[CONFLICT] " if e.get("conflict") else "")
                parts.append(quote(e["text"], mark))
        return wrap(*parts)

    emit(
        json_out,
        {
            "files": [
                {
                    "target": s.label,
                    "file": s.file,
                    "usage": s.usage,
                    "entries": s.entries,
                    **({"unreadable": s.unreadable} if s.unreadable else {}),
                }
                for s in shown
            ],
            "warnings": warnings,
        },
        human,
    )


@command(
    "apply",
    arg("file", "A JSON list of operations, or - for stdin.", required=False),
    TARGET,
    PROJECT,
    opt("ops", help="The operations as JSON text, instead of FILE."),
    ORIGIN,
    UNSAFE,
)
def apply_cmd(
    file: str | None,
    target: str,
    project: str | None,
    ops: str | None,
    origin: str | None,
    allow_unsafe: bool,
    json_out: bool,
) -> None:
    """Apply a batch of add/replace/remove operations all-or-nothing.

    The limit is checked on the final state only, so one batch can free room and add.

    \b
    Example:
      echo '[{"op":"remove","old":"爬山","first":true},{"op":"add","text":"周日去游泳"}]' | optmem apply -
    """
    import json
    from pathlib import Path

    from optmem import fsio, memory
    from optmem.errors import UsageError

    if (file is None) == (ops is None):
        raise UsageError("give the operations as FILE (or - for stdin), or as --ops JSON — one of them")
    raw = ops if ops is not None else (read_arg(file, "FILE") if file == "-" else fsio.read_text(Path(file or "")))
    if raw is None:
        raise UsageError(f"no such file: {file}")
    source = "--ops" if ops is not None else "stdin" if file == "-" else file
    example = 'pass a JSON list of operations, e.g. [{"op": "add", "text": "…"}]'
    try:
        batch = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"{source} is not JSON: {exc}; {example}") from exc
    except RecursionError as exc:
        raise UsageError(f"{source} is nested too deeply to be a list of operations; {example}") from exc
    if not isinstance(batch, list):
        kind = {dict: "object", str: "string", bool: "boolean", type(None): "null"}.get(type(batch), "number")
        raise UsageError(
            f"{source} is a JSON {kind}, not a list; {example}"
            + (" (one operation too: wrap it in [ ])" if isinstance(batch, dict) else "")
        )
    vault = get_vault(write=True)
    _finish(
        json_out,
        memory.apply(
            vault,
            batch,
            target=target,
            project=project,
            domain=env_domain(None),
            allow_unsafe=allow_unsafe,
            origin=origin_of(origin),
            batch=True,
        ),
    )
