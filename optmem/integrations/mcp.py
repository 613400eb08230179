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
from typing import Annotated, Any, Literal

from optmem.errors import OptmemError, UsageError, quote

# tool name → the CLI command it runs, and the command's parameters it does not expose
TOOLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "search": ("search", ()),
    "append": ("append", ("agent",)),  # a guess is marked by its confidence (below)
    "touch": ("touch", ()),
    "conflicts": ("conflicts", ()),
    "resolve": ("resolve", ()),  # after asking the user, as `context` says
    "correct": ("correct", ()),
    "forget": ("forget", ()),
    "handoff_read": ("handoff read", ()),
    "handoff_write": ("handoff write", ("file",)),  # a path on the server's disk: not for agents
    "context": ("context", ()),
}
HAND_WRITTEN = ("memory",)  # Hermes Agent's memory tool: its own arguments, not a command's
TOOL_NAMES = (*HAND_WRITTEN, *TOOLS)  # every tool the server registers, in order (help and docs list these)
NEVER = ("json_out", "allow_unsafe")  # the result is always JSON; agents cannot bypass the scanner
# An agent's plain `append` is stored as any write is — it comes back at the next session's
# `context`; only what the agent marks as a guess (a `confidence` below [lifecycle]
# pending_threshold) waits in the review queue (`optmem pending`)
INSTRUCTIONS = (
    "OptMem: memory in plain files. Call `context` at the start of a session, `search` "
    "before answering from memory, `touch` with the ids of the records you used, "
    "`correct` when a stored fact changed, and `handoff_write` at the end. What you "
    "`append` is kept as said; when it is only your guess, give a `confidence` below 0.7 "
    "and it waits for the user to confirm it."
)
Call = Callable[[list[str]], str]


def server_class() -> Any:
    """The SDK's server class; a usage error saying how to install it when the extra is missing."""
    try:
        from mcp.server.mcpserver import MCPServer  # mcp 2.x

        return MCPServer
    except ImportError:
        pass
    try:
        import importlib

        return importlib.import_module("mcp.server.fastmcp").FastMCP  # mcp 1.x
    except ImportError as exc:
        raise UsageError(
            "the MCP server needs the optional extra: pip install 'optmem[mcp]' (in a clone "
            "of the repository: pip install -e '.[mcp]')"
        ) from exc


def _one_op(op: dict[str, Any]) -> str:
    import json

    return json.dumps([op], ensure_ascii=False)


def _arg_name(p: Any) -> str:
    """A tool argument's name: the CLI's option name, or a positional argument's metavar."""
    name: str = (p.metavar or p.name).lower() if p.is_argument else p.name
    return name


# a domain and a tag take one type in every tool: a name, or a list of names
LISTY = ("domain", "tag")


def _annotation(p: Any) -> tuple[Any, Any]:
    """(type, default) of one declared parameter as a tool argument, described by its help."""
    from typing import Literal

    from pydantic import Field

    base: Any = Literal[p.choices] if getattr(p, "choices", None) else p.type
    if p.name in LISTY:
        kind: Any = str | GenericAlias(list, (str,)) | None
        default: Any = None
    elif p.multiple:  # one item alone is a list of one (agents often send "next": "…")
        kind, default = base | GenericAlias(list, (base,)) | None, None
    elif p.type is bool:
        kind, default = bool, False
    elif p.is_argument and p.required:
        kind, default = base, inspect.Parameter.empty
    else:
        kind, default = (base if p.default is not None else base | None), p.default
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
        if p.name in LISTY:
            given = value if isinstance(value, list) else [value]
            if not p.multiple and len(given) > 1:
                raise UsageError(f"{p.name} takes one name in this tool, not {len(given)}")
            value = given if p.multiple else given[0]
        elif p.multiple and not isinstance(value, list):
            value = [value]
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
        return UsageError(
            "redlines come from people: over MCP an agent cannot write one — ask the "
            "user to run `optmem append --redline …` (or `optmem correct … --redline`)"
        )
    return None


def _tool(
    command: str, params: list[Any], summary: str, call: Call, refuse: Callable[[OptmemError], str]
) -> Callable[..., str]:
    """A function with the command's parameters as its signature, for the MCP SDK to describe."""

    def tool(**values: Any) -> Any:
        refusal = agent_refusal(values)
        if refusal is not None:
            return as_result(refuse(refusal))
        try:
            line = argv(command, params, values)
        except OptmemError as err:
            return as_result(refuse(err))
        return as_result(call(line))

    sig = []
    for p in params:
        annotation, default = _annotation(p)
        sig.append(
            inspect.Parameter(_arg_name(p), inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        )
    tool.__signature__ = inspect.Signature(sig)  # type: ignore[attr-defined]
    tool.__doc__ = summary
    return tool


def as_result(text: str) -> Any:
    """A tool's result: the command's JSON as text and as structured content, with isError set
    when the command refused (its JSON says "ok": false). Stored text goes to a model here, so the
    text is fenced and every string defused (`optmem.fence`), the structured content too."""
    import json

    from optmem.fence import defuse_all, wrap

    try:
        obj = defuse_all(json.loads(text))
        text = json.dumps(obj, ensure_ascii=False, indent=2)
    except ValueError:
        obj = None
    text = wrap(text)
    try:
        from mcp.types import CallToolResult
    except ImportError:  # an SDK without it: the fenced text alone
        return text
    return CallToolResult.model_validate(
        {  # by the protocol's own field names, in any SDK version
            "content": [{"type": "text", "text": text}],
            "structuredContent": obj if isinstance(obj, dict) else None,
            "isError": isinstance(obj, dict) and obj.get("ok") is False,
        }
    )


def _register(app: Any, fn: Any, name: str | None = None) -> None:
    """Add a tool whose result is built here (not wrapped into {"result": …} by the SDK)."""
    try:
        app.tool(name=name, structured_output=False)(fn)
    except TypeError:  # an SDK that does not know structured_output
        app.tool(name=name)(fn)


def summary(help_text: str) -> str:
    """A command's help without its example: what a tool description needs."""
    return help_text.split("\b")[0].strip()


def build_server(commands: Mapping[str, Any], call: Call, refuse: Callable[[OptmemError], str]) -> Any:
    """The MCP server: `memory` plus one tool per entry of TOOLS, from `commands` (the CLI's
    declarations by name), `call` (runs a command line, returns its --json output) and `refuse`
    (an error as the CLI's --json prints it)."""
    app = server_class()("optmem", instructions=INSTRUCTIONS)

    def memory(
        action: Literal["add", "replace", "remove", "read"] | None = None,
        target: Literal["memory", "user"] = "memory",
        content: str | None = None,
        old_text: str | None = None,
        new_text: str | None = None,
        operations: list[dict[str, Any]] | None = None,
        project: str | None = None,
    ) -> Any:
        """Edit bounded hot memory (MEMORY.md / USER.md, or a project's MEMORY.md) — Hermes Agent's
        memory tool arguments. action add: `content` is the new entry. replace: the entry holding
        `old_text` becomes `content` (the whole entry), or only the matched span becomes `new_text`.
        remove: the entry holding `old_text`. read: the file with entry ids. `operations`: a list
        of {action, content?, old_text?, new_text?} applied all-or-nothing, the limit checked on
        the final state. Results carry success, and replaced_entry / removed_entry."""
        where = ["--target", target] + (["--project", project] if project else [])
        if operations:
            import json

            return as_result(call(["apply", *where, "--ops", json.dumps(operations, ensure_ascii=False)]))
        if action == "add":
            return as_result(call(["add", *where, "--", content or ""]))
        if action == "replace":
            if content is not None and new_text is None:  # Hermes: the whole entry becomes content
                return as_result(
                    call(
                        [
                            "apply",
                            *where,
                            "--ops",
                            _one_op({"action": "replace", "old_text": old_text, "content": content}),
                        ]
                    )
                )
            return as_result(call(["replace", *where, "--", old_text or "", new_text or ""]))
        if action == "remove":
            return as_result(call(["remove", *where, "--", old_text or ""]))
        if action in ("read", "show"):
            return as_result(call(["show", *where]))
        return as_result(refuse(UsageError(f"action must be add, replace, remove or read, not {quote(action)}")))

    _register(app, memory)
    for name, (command, hidden) in TOOLS.items():
        cmd = commands[command]
        params = [p for p in cmd.params if p.name not in (*NEVER, *hidden)]
        _register(app, _tool(command, params, summary(cmd.help), call, refuse), name)
    return app
