"""`optmem mcp`: serve the vault's operations as MCP tools over stdio (the `optmem[mcp]` extra).

The server itself is `optmem.integrations.mcp`; this command gives it the CLI's declarations and
a way to run a command in-process and capture its `--json` output.
"""

from __future__ import annotations

import importlib

from optmem.cli.common import CAPTURE, STATE, dumps
from optmem.cli.spec import COMMANDS, REGISTRY, command
from optmem.errors import OptmemError
from optmem.integrations.mcp import TOOL_NAMES


def call(args: list[str]) -> str:
    """Run one CLI command with --json and return its JSON output."""
    from optmem.cli import run

    lines: list[str] = []
    token = CAPTURE.set(lines)
    try:
        prefix = (["--vault", STATE.vault_opt] if STATE.vault_opt else []) + [f"--set={pair}" for pair in STATE.set_opt]
        cut = args.index("--") if "--" in args else len(args)  # options before "--", text after
        run([*prefix, *args[:cut], "--json", *args[cut:]])
    finally:
        CAPTURE.reset(token)
    return "\n".join(lines)


def refuse(err: OptmemError) -> str:
    return dumps({"ok": False, "error": err.to_dict()})


def mcp(json_out: bool) -> None:
    from optmem.cli.common import get_vault
    from optmem.integrations.mcp import build_server, serve_stdio, server_class

    server_class()  # the extra is there — before anything is made
    get_vault(write=True).lay_out()  # an agent's memory that is still empty is a vault, not an error
    vault_opt, set_opt = STATE.vault_opt, STATE.set_opt
    for module, _ in set(COMMANDS.values()):
        importlib.import_module(f"optmem.cli.{module.lstrip('@')}")
    STATE.vault_opt, STATE.set_opt = vault_opt, set_opt
    serve_stdio(build_server(REGISTRY, call, refuse))


# the help lists the tools from the server's own table, so it names every one the server has
mcp.__doc__ = f"""Serve the vault to agents over MCP (stdio); needs the optmem[mcp] extra.

    Tools: {", ".join(TOOL_NAMES)} — each returns the same JSON as the CLI's --json.

    \b
    Example:
      claude mcp add optmem -- optmem --vault ~/.optmem mcp
    """
command("mcp")(mcp)
