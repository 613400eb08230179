"""MCP: the vault's operations as tools over stdio (the optional `optmem[mcp]` extra).

The tools are generated from the CLI's own command declarations — names, types, defaults and
help — so a tool and its command can never drift apart; each tool runs its command and returns
exactly what that command prints with `--json` (one behaviour, two doors). Only `memory` is
written by hand: it takes Hermes Agent's memory-tool arguments (`action`, `target`, `content`,
`old_text`, `new_text`), not a CLI command's.

The caller (`optmem.cli.mcpserve`) passes the declarations and a function that runs a command
line and returns its JSON output, so this module does not depend on the CLI.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from types import GenericAlias
from typing import Annotated, Any

from optmem.errors import OptmemError, UsageError

# tool name → the CLI command it runs, and the command's parameters it does not expose
TOOLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "search": ("search", ()),
    "append": ("append", ()),
    "correct": ("correct", ()),
    "forget": ("forget", ()),
    "handoff_read": ("handoff read", ()),
    "handoff_write": ("handoff write", ("file",)),  # a path on the server's disk: not for agents
    "context": ("context", ()),
}
NEVER = ("json_out", "allow_unsafe")  # the result is always JSON; agents cannot bypass the scanner
INSTRUCTIONS = ("OptMem: memory in plain files. Call `context` at the start of a session, `search` "
                "before answering from memory, `correct` when a stored fact changed, and "
                "`handoff_write` at the end.")
Call = Callable[[list[str]], str]


def _server_class() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer  # mcp 2.x
        return MCPServer
    except ImportError:
        pass
    try:
        import importlib

        return importlib.import_module("mcp.server.fastmcp").FastMCP  # mcp 1.x
    except ImportError as exc:
        raise UsageError("the MCP server needs the optional extra: pip install 'optmem[mcp]'") from exc


def _arg_name(p: Any) -> str:
    """A tool argument's name: the CLI's option name, or a positional argument's metavar."""
    return (p.metavar or p.name).lower() if p.is_argument else p.name


def _annotation(p: Any) -> tuple[Any, Any]:
    """(type, default) of one declared parameter as a tool argument, described by its help."""
    from pydantic import Field

    if p.multiple:
        kind: Any = GenericAlias(list, (p.type,)) | None
        default: Any = None
    elif p.type is bool:
        kind, default = bool, False
    elif p.is_argument and p.required:
        kind, default = p.type, inspect.Parameter.empty
    else:
        kind, default = (p.type if p.default is not None else p.type | None), p.default
    # over MCP, "-" is plain text: the server's stdin is the protocol stream
    return Annotated[kind, Field(description=p.help.replace(" (- reads stdin)", ""))], default


def argv(command: str, params: list[Any], values: dict[str, Any]) -> list[str]:
    """The command line for a tool call: options first, positional arguments after `--`."""
    opts: list[str] = []
    args: list[str] = []
    for p in params:
        value = values.get(_arg_name(p))
        if value is None or value is False:
            continue
        if p.is_argument:
            args += [str(v) for v in value] if p.multiple else [str(value)]
        elif value is True:
            opts.append(p.decls[0])
        else:
            for v in value if p.multiple else [value]:
                opts += [p.decls[0], str(v)]
    return [*command.split(" "), *opts, "--", *args]


def agent_refusal(values: dict[str, Any]) -> OptmemError | None:
    """What an agent may not do through MCP: write a redline. A redline is a locked rule at the
    top of every future context; an injected agent must not be able to plant one, so redlines
    come from people, through the CLI."""
    if values.get("redline") or values.get("tier") == "redline":
        return UsageError("redlines come from people: over MCP an agent cannot write one — ask the "
                          "user to run `optmem append --redline …` (or `optmem correct … --redline`)")
    return None


def _tool(command: str, params: list[Any], summary: str, call: Call,
          refuse: Callable[[OptmemError], str]) -> Callable[..., str]:
    """A function with the command's parameters as its signature, for the MCP SDK to describe."""

    def tool(**values: Any) -> str:
        refusal = agent_refusal(values)
        if refusal is not None:
            return refuse(refusal)
        return call(argv(command, params, values))

    sig = []
    for p in params:
        annotation, default = _annotation(p)
        sig.append(inspect.Parameter(_arg_name(p), inspect.Parameter.KEYWORD_ONLY, default=default,
                                     annotation=annotation))
    tool.__signature__ = inspect.Signature(sig, return_annotation=str)  # type: ignore[attr-defined]
    tool.__doc__ = summary
    return tool


def summary(help_text: str) -> str:
    """A command's help without its example: what a tool description needs."""
    return help_text.split("\b")[0].strip()


def build_server(commands: Mapping[str, Any], call: Call, refuse: Callable[[OptmemError], str]) -> Any:
    """The MCP server: `memory` plus one tool per entry of TOOLS, from `commands` (the CLI's
    declarations by name), `call` (runs a command line, returns its --json output) and `refuse`
    (an error as the CLI's --json prints it)."""
    app = _server_class()("optmem", instructions=INSTRUCTIONS)

    @app.tool()
    def memory(action: str, target: str = "memory", content: str | None = None,
               old_text: str | None = None, new_text: str | None = None,
               project: str | None = None) -> str:
        """Edit bounded hot memory (MEMORY.md / USER.md): action add (content), replace
        (old_text → new_text, only the matched span changes) or remove (old_text)."""
        where = ["--target", target] + (["--project", project] if project else [])
        if action == "add":
            return call(["add", *where, "--", content or ""])
        if action == "replace":
            return call(["replace", *where, "--", old_text or "", new_text or ""])
        if action == "remove":
            return call(["remove", *where, "--", old_text or ""])
        if action in ("read", "show"):
            return call(["show", *where])
        return refuse(UsageError(f"action must be add, replace, remove or read, not {action!r}"))

    for name, (command, hidden) in TOOLS.items():
        cmd = commands[command]
        params = [p for p in cmd.params if p.name not in (*NEVER, *hidden)]
        app.tool(name=name)(_tool(command, params, summary(cmd.help), call, refuse))
    return app
