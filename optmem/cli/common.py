"""What every command shares: the vault at the edge, output, the one error handler."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from optmem.errors import OptmemError, UsageError

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]


class _State:
    vault_opt: str | None = None


STATE = _State()


def sub_app() -> typer.Typer:
    """The Typer app a command module registers its commands on (loaded lazily by the root)."""
    return typer.Typer(rich_markup_mode=None, add_completion=False, pretty_exceptions_enable=False)


def resolve_vault(explicit: str | None = None, overrides: list[str] | None = None):
    """The vault, resolved once, here at the edge: --vault > OPTMEM_VAULT > .optmem/ > ~/.optmem."""
    from optmem.vault import Vault, resolve

    root = resolve(explicit or STATE.vault_opt, dict(os.environ), Path.cwd(), Path.home())
    return Vault(root, overrides=list(overrides or []))


def get_vault(*, write: bool = False, overrides: list[str] | None = None):
    """The resolved vault. A write to a missing vault creates it (noted on stderr); a read
    requires it to exist.
    """
    from optmem.vault import ensure_layout

    vault = resolve_vault(None, overrides)
    if write and not vault.exists():
        ensure_layout(vault)
        note(f"created a new vault at {vault.root}")
    elif not write:
        vault.require()
    return vault


def env_domain(domain: str | None) -> str | None:
    """--domain, else OPTMEM_DOMAIN (the core falls back to config, then `default`)."""
    return domain or os.environ.get("OPTMEM_DOMAIN") or None


def read_arg(value: str | None, what: str = "TEXT") -> str | None:
    """A TEXT argument, where `-` means: read it from stdin."""
    if value == "-":
        data = sys.stdin.read()
        if not data.strip():
            raise UsageError(f"{what} was '-' but stdin was empty")
        return data
    return value


def note(message: str) -> None:
    """Talk goes to stderr; stdout is data."""
    typer.echo(message, err=True)


def warn_all(warnings: list[str]) -> None:
    for w in warnings:
        note(f"warning: {w}")


def dumps(payload: Any) -> str:
    import json

    return json.dumps(payload, ensure_ascii=False, indent=2, default=_default)


def _default(obj: Any) -> Any:
    from dataclasses import asdict, is_dataclass

    if is_dataclass(obj):
        return asdict(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def emit(json_out: bool, payload: dict[str, Any], human: Callable[[], str | None]) -> None:
    """Print the result: `{"ok": true, ...}` with --json, else the human rendering."""
    if json_out:
        typer.echo(dumps({"ok": True, **payload}))
    else:
        text = human()
        if text:
            typer.echo(text)


def error_payload(code: str, message: str, **context: Any) -> str:
    return dumps({"ok": False, "error": {"code": code, "message": message, **context}})


def render_error_human(err: OptmemError) -> str:
    lines = [f"error ({err.code}): {err.message}"]
    ctx = err.context
    for item in ctx.get("entries", []):
        lines.append(f"  [{item['id']}] {item['text']}")
    for item in ctx.get("candidates", []):
        label = item.get("preview") or item.get("text") or ""
        lines.append(f"  candidate {item['id']}" + (f": {label}" if label else ""))
    if "similar" in ctx and isinstance(ctx["similar"], dict):
        lines.append(f"  similar [{ctx['similar']['id']}] {ctx['similar']['text']}")
    if "usage" in ctx and isinstance(ctx["usage"], dict) and "chars" in ctx["usage"]:
        u = ctx["usage"]
        lines.append(f"  usage: {u['chars']:,}/{u['limit']:,} chars")
    return "\n".join(lines)


def command(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The one error handler around every command: OptmemError → JSON/human error + exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except OptmemError as err:
            if kwargs.get("json_out"):
                typer.echo(error_payload(err.code, err.message, **err.context))
            else:
                typer.echo(render_error_human(err), err=True)
            raise typer.Exit(err.exit_code) from None

    return wrapper


def usage_payload(args: list[str], message: str) -> bool:
    """With --json anywhere in `args`, print a usage error as JSON; True when printed."""
    if "--json" in args:
        typer.echo(error_payload("usage", message))
        return True
    return False
