"""`optmem mcp`: the vault's operations as MCP tools over stdio (the optional `optmem[mcp]` extra).

Every tool runs the same command as the CLI, in-process, and returns exactly what that command
prints with `--json` — one behaviour, two doors. Arguments mirror the CLI's names; `memory` also
takes Hermes Agent's memory-tool arguments (`action`, `target`, `content`, `old_text`,
`new_text`).
"""

from typing import Any

from optmem.cli.common import CAPTURE, STATE
from optmem.cli.spec import command
from optmem.errors import UsageError


def call(args: list[str]) -> str:
    """Run one CLI command with --json and return its JSON output."""
    from optmem.cli import run

    lines: list[str] = []
    token = CAPTURE.set(lines)
    try:
        prefix = ["--vault", STATE.vault_opt] if STATE.vault_opt else []
        cut = args.index("--") if "--" in args else len(args)  # options before "--", text after
        run([*prefix, *args[:cut], "--json", *args[cut:]])
    finally:
        CAPTURE.reset(token)
    return "\n".join(lines)


def _opts(**values: Any) -> list[str]:
    """CLI options from keyword values: None and False are left out, lists repeat the option."""
    out: list[str] = []
    for name, value in values.items():
        flag_ = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag_)
        elif isinstance(value, list):
            for v in value:
                out += [flag_, str(v)]
        else:
            out += [flag_, str(value)]
    return out


def _bad_action(action: str) -> str:
    from optmem.cli.common import error_payload

    return error_payload("usage", f"action must be add, replace, remove or read, not {action!r}")


def build_server() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer as Server  # mcp 2.x
    except ImportError:
        try:
            from mcp.server.fastmcp import FastMCP as Server  # mcp 1.x
        except ImportError as exc:
            raise UsageError("the MCP server needs the optional extra: pip install 'optmem[mcp]'") from exc

    app = Server("optmem", instructions=(
        "OptMem: memory in plain files. Call `context` at the start of a session, `search` before "
        "answering from memory, `correct` when a stored fact changed, and `handoff_write` at the end."))

    @app.tool()
    def memory(action: str, target: str = "memory", content: str | None = None,
               old_text: str | None = None, new_text: str | None = None,
               project: str | None = None) -> str:
        """Edit bounded hot memory (MEMORY.md / USER.md): action add (content), replace
        (old_text → new_text, only the matched span changes) or remove (old_text)."""
        where = _opts(target=target, project=project)
        if action == "add":
            return call(["add", *where, "--", content or ""])
        if action == "replace":
            return call(["replace", *where, "--", old_text or "", new_text or ""])
        if action == "remove":
            return call(["remove", *where, "--", old_text or ""])
        if action in ("read", "show"):
            return call(["show", *where])
        return _bad_action(action)

    @app.tool()
    def search(query: str, limit: int = 10, domain: list[str] | None = None, project: str | None = None,
               kind: str | None = None, tag: str | None = None, since: str | None = None,
               until: str | None = None, current: bool = False, include_forgotten: bool = False,
               explain: bool = False) -> str:
        """Ranked search of the log (Chinese or English): corrections outrank what they correct,
        redlines outrank everything; filters are exact."""
        return call(["search", *_opts(limit=limit, domain=domain, project=project, kind=kind, tag=tag,
                                      since=since, until=until, current=current,
                                      include_forgotten=include_forgotten, explain=explain), "--", query])

    @app.tool()
    def append(text: str, domain: str | None = None, project: str | None = None, kind: str = "note",
               tier: str | None = None, redline: bool = False, tag: list[str] | None = None,
               key: str | None = None, ttl: str | None = None, evidence: str | None = None,
               source: str | None = None, on_similar: str | None = None) -> str:
        """Append a memory to the log (duplicates are caught by the write gate)."""
        return call(["append", *_opts(domain=domain, project=project, kind=kind, tier=tier, redline=redline,
                                      tag=tag, key=key, ttl=ttl, evidence=evidence, source=source,
                                      on_similar=on_similar), "--", text])

    @app.tool()
    def correct(target: str, text: str, redline: bool = False, tier: str | None = None,
                domain: str | None = None, project: str | None = None, key: str | None = None,
                evidence: str | None = None, source: str | None = None) -> str:
        """Correct a stored fact (TARGET: an id or an unambiguous query); the old record stays,
        marked superseded."""
        return call(["correct", *_opts(redline=redline, tier=tier, domain=domain, project=project, key=key,
                                       evidence=evidence, source=source), "--", target, text])

    @app.tool()
    def forget(id: str, reason: str | None = None) -> str:
        """Hide a record from search and context (it stays in the file)."""
        return call(["forget", *_opts(reason=reason), "--", id])

    @app.tool()
    def handoff_read(project: str, history: int = 1) -> str:
        """The project's latest handoff note (or the N latest)."""
        return call(["handoff", "read", *_opts(project=project, history=history)])

    @app.tool()
    def handoff_write(project: str, done: list[str] | None = None, blocked: list[str] | None = None,
                      next: list[str] | None = None, note: str | None = None,
                      source: str | None = None) -> str:
        """Leave a handoff note for the next session: what was done, what is blocked, what is next."""
        return call(["handoff", "write", *_opts(project=project, done=done, blocked=blocked, next=next,
                                                note=note, source=source)])

    @app.tool()
    def context(project: str | None = None, domain: str | None = None, query: str | None = None,
                budget: int = 4000) -> str:
        """The prompt-ready memory block for the start of a session (redlines, hot memory, the
        latest handoff, relevant records), within `budget` characters."""
        return call(["context", *_opts(project=project, domain=domain, query=query, budget=budget)])

    return app


@command("mcp")
def mcp(json_out: bool) -> None:
    """Serve the vault to agents over MCP (stdio); needs the optmem[mcp] extra.

    Tools: memory, search, append, correct, forget, handoff_read, handoff_write, context — each
    returns the same JSON as the CLI's --json.

    \b
    Example:
      claude mcp add optmem -- optmem --vault ~/.optmem mcp
    """
    build_server().run()
