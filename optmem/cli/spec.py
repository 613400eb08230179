"""Command declarations, free of Typer: one source for the fast parser and for the Typer app.

Each command is a plain function registered with `@command(name, *params)`. The fast path
(`optmem.cli.fast`) parses ordinary invocations straight from these declarations without
importing Typer; the Typer app (`optmem.cli.app`) is built from the same declarations for
`--help`, usage errors and everything the fast path declines.
"""


from collections.abc import Callable
from typing import Any, NamedTuple



class CommandExit(Exception):
    """A command finished with this exit code (raised instead of calling sys.exit)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Param(NamedTuple):
    """One argument or option. `decls` are option names; none means a positional argument."""

    name: str
    decls: tuple[str, ...] = ()
    type: type = str
    default: Any = None
    help: str = ""
    multiple: bool = False
    metavar: str | None = None
    required: bool = False
    choices: tuple[str, ...] | None = None   # the values it takes (for MCP schemas; the core checks)

    @property
    def is_argument(self) -> bool:
        return not self.decls

    @property
    def is_flag(self) -> bool:
        return bool(self.decls) and self.type is bool


class Command(NamedTuple):
    name: str                      # "search", or "handoff write" for a group's subcommand
    fn: Callable[..., Any]
    params: tuple[Param, ...]
    help: str


REGISTRY: dict[str, Command] = {}


def refuse_empty(params: tuple[Param, ...], values: dict[str, Any]) -> None:
    """An option given an empty value (`--ttl ""`) is a mistake, never a silent default."""
    from optmem.errors import UsageError

    for p in params:
        if p.is_argument or p.type is not str:
            continue
        value = values.get(p.name)
        given = value if isinstance(value, list) else [value]
        if any(v is not None and not v.strip() for v in given):
            raise UsageError(f"{p.decls[0]} is empty; give it a value, or leave the option out")
JSON = Param("json_out", ("--json",), bool, False, "Print one JSON document on stdout.")
UNSAFE = Param("allow_unsafe", ("--allow-unsafe",), bool, False,
               "Store even if the security scan flags the text or another field.")
SHOW_UNSAFE = Param("allow_unsafe", ("--allow-unsafe",), bool, False,
                    "Show text the security scan flags (else it reads [BLOCKED: rule]).")


def arg(name: str, help: str, *, metavar: str | None = None, required: bool = True,
        default: Any = None, multiple: bool = False) -> Param:
    """A positional argument; `multiple` takes all the remaining ones (it must come last)."""
    return Param(name, (), str, default, help, multiple, metavar or name.upper(), required)


def opt(name: str, *decls: str, help: str, type: type = str, default: Any = None,
        multiple: bool = False, metavar: str | None = None,
        choices: tuple[str, ...] | None = None) -> Param:
    return Param(name, decls or ("--" + name.replace("_", "-"),), type, default, help, multiple, metavar,
                 False, choices)


def flag(name: str, *decls: str, help: str) -> Param:
    return Param(name, decls or ("--" + name.replace("_", "-"),), bool, False, help)


def command(name: str, *params: Param) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a command; its docstring is its --help. Errors propagate to the one handler
    (`optmem.cli.errors.handle`)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        declared = (*params, JSON)

        def checked(**kwargs: Any) -> Any:
            refuse_empty(declared, kwargs)
            return fn(**kwargs)

        REGISTRY[name] = Command(name, checked, declared, fn.__doc__ or "")
        return fn

    return deco
