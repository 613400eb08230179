"""The fast path: run an ordinary invocation straight from the declarations, without Typer.

Importing Typer costs more than the rest of a search, so the common case — a known command with
well-formed arguments — is parsed here. Anything else (help, an unknown or malformed option, a
missing argument) returns None and Typer handles it, with its usual messages. A test checks that
both parsers read the same arguments the same way.
"""

from __future__ import annotations

from optmem.cli.spec import REGISTRY, Command, Param
from optmem.value import Value

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any


class Found(Value):
    """What comes before a command (--vault, --set pairs), the command, and its arguments."""

    vault: str | None
    sets: list[str]
    command: Command | None
    rest: list[str]


GLOBAL = ("--vault", "--set")


def find(argv: list[str], table: dict[str, tuple[str, str]]) -> Found:
    """The global options, the command and its arguments — or a None command when this is not
    ours (Typer then reads the same global options)."""
    given: dict[str, list[str]] = {name: [] for name in GLOBAL}
    i = 0
    while i < len(argv):
        a = argv[i]
        name, eq, inline = a.partition("=")
        if name in GLOBAL and eq:
            given[name].append(inline)
            i += 1
        elif a in GLOBAL and i + 1 < len(argv):
            given[a].append(argv[i + 1])
            i += 2
        else:
            break
    vault = given["--vault"][-1] if given["--vault"] else None
    sets = given["--set"]
    if i >= len(argv):
        return Found(vault, sets, None, [])
    name = argv[i]
    if name not in table:
        return Found(vault, sets, None, [])
    rest = argv[i + 1 :]
    if table[name][0].startswith("@"):  # a group: the subcommand is the next word
        if not rest:
            return Found(vault, sets, None, [])
        name, rest = f"{name} {rest[0]}", rest[1:]
    module = table[name.split(" ")[0]][0].lstrip("@")
    __import__(f"optmem.cli.{module}")  # (importlib.import_module's: importing importlib costs ~0.5 ms)
    return Found(vault, sets, REGISTRY.get(name), rest)


def _convert(p: Param, raw: str) -> Any:
    if p.type is int:
        return int(raw)
    if p.type is float:
        return float(raw)
    return raw


def parse(params: tuple[Param, ...], args: list[str]) -> dict[str, Any] | None:
    """Keyword arguments for the command, or None to let Typer handle (and explain) the input."""
    by_decl = {d: p for p in params for d in p.decls}
    positional = [p for p in params if p.is_argument]
    values: dict[str, Any] = {p.name: ([] if p.multiple else p.default) for p in params}
    seen_args: list[str] = []
    only_args = False
    i = 0
    try:
        while i < len(args):
            a = args[i]
            if only_args or a == "-" or not a.startswith("-"):
                seen_args.append(a)
                i += 1
                continue
            if a == "--":
                only_args = True
                i += 1
                continue
            if a in ("--help", "-h"):
                return None
            name, eq, inline = a.partition("=")
            p = by_decl.get(name if a.startswith("--") else a)
            if p is None:
                return None
            if p.is_flag:
                if eq:
                    return None
                values[p.name] = True
                i += 1
                continue
            if eq and a.startswith("--"):
                raw, i = inline, i + 1
            elif i + 1 < len(args):
                raw, i = args[i + 1], i + 2
            else:
                return None
            if p.multiple:
                values[p.name].append(_convert(p, raw))
            else:
                values[p.name] = _convert(p, raw)
    except ValueError:
        return None
    if positional and positional[-1].multiple:
        values[positional[-1].name] = seen_args[len(positional) - 1 :]
        seen_args = seen_args[: len(positional) - 1]
        positional = positional[:-1]
    if len(seen_args) > len(positional):
        return None
    for p, raw in zip(positional, seen_args):
        values[p.name] = raw
    if any(p.required for p in positional[len(seen_args) :]):
        return None
    for p in params:
        if p.multiple and not values[p.name]:
            values[p.name] = None
    return values
