"""The Typer app, built from the command declarations: help, usage errors, the slow path."""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Sequence
from types import GenericAlias
from typing import Any

import typer
from typer.core import TyperArgument, TyperGroup

from optmem import __version__
from optmem.cli.common import STATE, echo
from optmem.cli.spec import COMMANDS, REGISTRY, Command, Param


def _typer_param(p: Param) -> tuple[Any, Any]:
    """(annotation, default) for one declared parameter, in Typer's terms."""
    if p.multiple:
        annotation: Any = GenericAlias(list, (p.type,)) | None
    elif p.type is bool:
        annotation = bool
    else:
        annotation = p.type if p.required else p.type | None
    if p.is_argument:
        default = typer.Argument(
            ... if p.required else (None if p.multiple else p.default),
            help=p.help,
            metavar=p.metavar,
            show_default=False,
        )
    else:
        default = typer.Option(
            p.default,
            *p.decls,
            help=p.help,
            metavar=p.metavar,
            show_default=p.type is not bool and p.default is not None,
        )
    return annotation, default


def to_click(cmd: Command) -> Any:
    """A click command for a declared command (its callback is the declared function)."""

    def callback(**kwargs: Any) -> None:
        cmd.fn(**kwargs)

    params, annotations = [], {}
    for p in cmd.params:
        annotation, default = _typer_param(p)
        annotations[p.name] = annotation
        params.append(inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    callback.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    callback.__annotations__ = annotations
    callback.__doc__ = cmd.help
    sub = typer.Typer(rich_markup_mode=None, add_completion=False, pretty_exceptions_enable=False)
    sub.command(cmd.name.split(" ")[-1])(callback)
    click_cmd = typer.main.get_command_from_info(
        sub.registered_commands[0], pretty_exceptions_short=True, rich_markup_mode=None
    )
    for param in click_cmd.params:
        if isinstance(param, TyperArgument):
            param.__class__ = PlainArgument
    return click_cmd


class PlainArgument(TyperArgument):
    """A positional argument as Click's usage line writes it — `optmem add [OPTIONS] TEXT` —
    where Typer (0.28) writes a required one in braces, `{TEXT}`, which reads as a placeholder
    for a literal brace."""

    def make_metavar(self, ctx: Any, *, usage: bool = False) -> str:
        var: str = super().make_metavar(ctx, usage=usage)
        if usage and self.required and var.startswith("{") and var.endswith("}"):
            var = var[1:-1]
            return var + "..." if self.nargs != 1 and not var.endswith("...") else var  # touch ID...
        return var


class OptmemGroup(TyperGroup):
    """The root command: lazy subcommands, and the exit-code contract (usage 2, vault trouble 3)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """Build only the command asked for; a group gets its subcommands."""
        if cmd_name not in COMMANDS:
            return None
        module, short = COMMANDS[cmd_name]
        importlib.import_module(f"optmem.cli.{module.lstrip('@')}")
        if not module.startswith("@"):
            return to_click(REGISTRY[cmd_name])
        group = TyperGroup(name=cmd_name, help=short, no_args_is_help=True, rich_markup_mode=None)
        for name, cmd in REGISTRY.items():
            if name.startswith(cmd_name + " "):
                group.add_command(to_click(cmd), name.split(" ", 1)[1])
        return group

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, short) in COMMANDS.items()])

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run without Click's own exit handling: errors reach `optmem.cli.errors.handle`."""
        argv = list(sys.argv[1:] if args is None else args)
        rv = super().main(
            args=argv,
            prog_name=prog_name or "optmem",
            complete_var=complete_var,
            standalone_mode=False,
            windows_expand_args=windows_expand_args,
            **extra,
        )
        # without standalone mode, Click returns an Exit's code instead of raising it
        return rv if isinstance(rv, int) else 0


app = typer.Typer(
    cls=OptmemGroup,
    name="optmem",
    help="Memory for AI agents in plain files: bounded hot memory, an append-only log with "
    "corrections, ranked Chinese/English search.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        echo(f"optmem {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    vault: str | None = typer.Option(
        None, "--vault", metavar="PATH", help="Vault folder (else OPTMEM_VAULT, the nearest .optmem/, ~/.optmem)."
    ),
    settings: list[str] = typer.Option(
        [],
        "--set",
        metavar="SECTION.NAME=VALUE",
        help="A setting for this command only, as in optmem.toml (repeatable), e.g. --set ranking.reorder_top=0.",
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """OptMem: memory for AI agents that lives in plain, human-editable files.

    \b
    Example:
      optmem --vault sample_vault search 端口 --explain
    """
    STATE.vault_opt, STATE.set_opt = vault, list(settings or [])
