"""`optmem mcp`: serve the vault's operations as MCP tools over stdio (the `optmem[mcp]` extra).

The server itself is `optmem.integrations.mcp`; this command gives it the CLI's declarations and
a way to run a command in-process and capture its `--json` output.
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from optmem.cli.common import CAPTURE, STATE, dumps, own_state
from optmem.cli.spec import COMMANDS, REGISTRY, CommandExit, command, opt
from optmem.errors import OptmemError
from optmem.integrations.mcp import LOG_LEVELS, TOOL_NAMES

TOKEN_FILE_BYTES = 64 << 10  # what is read of [mcp] token_file: a token is a line

# the commands behind the tools that only read (`search --touch` and `context` add a recall to
# ACCESS.jsonl, which takes no lock): they run side by side; a write runs alone in this process
# (and takes the vault lock as every write does)
READS = frozenset({"search", "get", "history", "conflicts", "handoff read", "context", "show"})
_WRITES = threading.Lock()


def call(args: list[str], warm: Any = None) -> str:
    """Run one CLI command with --json and return its JSON output. The SDK runs tools in
    threads: each call has a state of its own (`own_state`), reads run at once, writes one at a
    time; `warm` (`optmem.warm.Warm`) keeps the vault's settings and open index between calls."""
    from optmem.cli import run

    lines: list[str] = []
    name = " ".join(args[:2]) if args[:1] == ["handoff"] else (args[0] if args else "")
    alone: AbstractContextManager[Any] = nullcontext() if name in READS else _WRITES
    with alone, own_state(warm):
        token = CAPTURE.set(lines)
        try:
            prefix = (["--vault", STATE.vault_opt] if STATE.vault_opt else []) + [
                f"--set={pair}" for pair in STATE.set_opt
            ]
            cut = args.index("--") if "--" in args else len(args)  # options before "--", text after
            run([*prefix, *args[:cut], "--json", *args[cut:]])
        finally:
            CAPTURE.reset(token)
    return "\n".join(lines)


def hub_token() -> str:
    """The HTTP hub's bearer token: OPTMEM_MCP_TOKEN, else the file [mcp] token_file names in
    the user's own configuration — never a flag (a command line is visible to every user)."""
    import os
    from pathlib import Path

    from optmem import fsio
    from optmem.cli.common import user_settings
    from optmem.errors import UsageError
    from optmem.integrations.mcp import weak_token

    token = os.environ.get("OPTMEM_MCP_TOKEN", "").strip()
    where = "OPTMEM_MCP_TOKEN"
    if not token and (path := user_settings().mcp.token_file):
        where = path
        try:
            held = fsio.read_text(Path(path).expanduser(), limit=TOKEN_FILE_BYTES)
        except OptmemError as exc:
            raise UsageError(f"[mcp] token_file {path} cannot be read ({exc.message}); nothing was served") from exc
        if held is None:
            raise UsageError(f"[mcp] token_file {path} cannot be read (no such file); nothing was served")
        token = held.strip()
    if (why := weak_token(token, f"the token in {where}")) is not None:
        raise UsageError(f"{why}; nothing was served")
    return token


def refuse(err: OptmemError) -> str:
    return dumps(err.envelope())


@contextmanager
def server(log_level: str = "warning") -> Iterator[Any]:
    """The MCP server application on the vault this invocation names (--vault, --set): the tools,
    their guards and their error shapes, the same whichever transport serves it — stdio, the HTTP
    hub (`mcp` below), or a test's in-process client. The vault stays open (`optmem.warm`)
    between calls while the server is in use."""
    from optmem.cli.common import get_vault
    from optmem.integrations.mcp import build_server, server_class
    from optmem.warm import Warm

    server_class()  # the extra is there — before anything is made
    vault = get_vault(write=True)
    vault.lay_out()  # an agent's memory that is still empty is a vault, not an error
    vault_opt, set_opt = STATE.vault_opt, STATE.set_opt
    for module, _ in set(COMMANDS.values()):
        importlib.import_module(f"optmem.cli.{module.lstrip('@')}")
    STATE.vault_opt, STATE.set_opt = vault_opt, set_opt
    with Warm(vault.root, list(set_opt)) as warm:  # open between calls, checked at each
        warm.laid_out = True
        # (the guesses that wait for the user, as this vault's settings say when the server starts)
        threshold = vault.settings.lifecycle.pending_threshold
        yield build_server(REGISTRY, functools.partial(call, warm=warm), refuse, threshold, log_level)


def mcp(http: str | None, log_level: str, json_out: bool) -> None:
    from optmem.cli.common import user_settings
    from optmem.integrations.mcp import parse_address, serve_http, serve_stdio, server_class

    server_class()  # the extra is there — before the address and the token are checked
    address = parse_address(http) if http is not None else None
    token = hub_token() if address else ""
    with server(log_level) as app:
        if address is None:
            serve_stdio(app)
        elif code := serve_http(app, *address, token, user_settings().mcp, log_level):
            raise CommandExit(code)  # (its workers kept ending: why is on stderr)


# the help lists the tools from the server's own table, so it names every one the server has
mcp.__doc__ = f"""Serve the vault to agents over MCP (stdio, or HTTP with --http); needs the optmem[mcp] extra.

    Tools: {", ".join(TOOL_NAMES)} — each returns the same JSON as the CLI's --json.
    With --http, one vault serves agents on many hosts (streamable HTTP at /mcp), each request
    with `Authorization: Bearer <token>` (OPTMEM_MCP_TOKEN, or [mcp] token_file in your own
    configuration); it listens on localhost unless HOST says otherwise. Its connections, read
    times and body size are bounded ([mcp] in your own configuration); it answers from one worker
    process per CPU ([mcp] workers); it logs at --log-level.

    \b
    Example:
      claude mcp add optmem -- optmem --vault ~/.optmem mcp
      OPTMEM_MCP_TOKEN=… optmem --vault ~/.optmem mcp --http 8765
    """
command(
    "mcp",
    opt(
        "http",
        metavar="HOST:PORT",
        help="Serve over streamable HTTP at /mcp instead of stdio (PORT alone: localhost).",
    ),
    opt(
        "log_level",
        help="What the server logs on stderr: warning and worse by default; info logs every request.",
        default="warning",
        choices=LOG_LEVELS,
    ),
)(mcp)
