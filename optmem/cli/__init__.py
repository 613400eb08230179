"""The `optmem` command line: parses, calls one core function, renders. Nothing more."""

from __future__ import annotations

import importlib
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from optmem import __version__
from optmem.cli import common


# name → (module under optmem.cli, one-line help). Commands load lazily: `optmem --help` and
# `optmem --version` import no command module, and running a command imports only its own.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("hot", "Create a vault, or add only what is missing to an existing folder."),
    "add": ("hot", "Add an entry to hot memory (an exact duplicate is a no-op)."),
    "replace": ("hot", "Replace the matched span inside the one entry containing OLD."),
    "remove": ("hot", "Remove the whole entry containing OLD (it stays in LOG.jsonl)."),
    "show": ("hot", "Print hot memory ready to paste into a prompt, with usage headers."),
    "apply": ("hot", "Apply a batch of add/replace/remove operations all-or-nothing."),
    "append": ("logcmd", "Append a record to LOG.jsonl (through the duplicate write gate) and print its id."),
    "get": ("logcmd", "Show one record with its status (current / superseded by … / expired / forgotten)."),
    "forget": ("logcmd", "Hide a record from search and context; it stays in LOG.jsonl."),
}


class OptmemGroup(TyperGroup):
    """The root command: lazy subcommands, and the exit-code contract (usage 2, vault trouble 3)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """Build only the command asked for (its module's other commands stay unbuilt)."""
        if cmd_name not in COMMANDS:
            return None
        sub = importlib.import_module(f"optmem.cli.{COMMANDS[cmd_name][0]}").app
        for info in sub.registered_commands:
            if (info.name or typer.main.get_command_name(info.callback.__name__)) == cmd_name:
                return typer.main.get_command_from_info(
                    info, pretty_exceptions_short=True, rich_markup_mode=None)
        for group in sub.registered_groups:
            if group.name == cmd_name:
                return typer.main.get_group_from_info(
                    group, pretty_exceptions_short=True, suggest_commands=True, rich_markup_mode=None)
        return None

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, short) in COMMANDS.items()])

    def main(self, args: Any = None, prog_name: Any = None, complete_var: Any = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        try:
            rv = super().main(args=argv, prog_name=prog_name or "optmem",
                              complete_var=complete_var, standalone_mode=False, **extra)
            # without standalone mode, typer returns an Exit's code instead of raising it
            sys.exit(rv if isinstance(rv, int) else 0)
        except typer.Exit as exc:
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("aborted", err=True)
            sys.exit(130)
        except typer.TyperException as exc:  # click's usage errors (bad option, missing argument)
            code = getattr(exc, "exit_code", 2) or 2
            if not common.usage_payload(argv, exc.format_message()):
                show = getattr(exc, "show", None)
                if show:
                    show()
                else:
                    typer.echo(f"error: {exc.format_message()}", err=True)
            sys.exit(code)
        except KeyboardInterrupt:
            sys.exit(130)
        except SystemExit:
            raise
        except Exception as exc:  # anything unexpected: say so, exit 3, never a silent 0
            if "--json" in argv:
                typer.echo(common.error_payload("internal", f"{type(exc).__name__}: {exc}"))
            else:
                typer.echo(f"optmem: internal error: {type(exc).__name__}: {exc}", err=True)
            sys.exit(3)


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
        typer.echo(f"optmem {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    vault: Annotated[str | None, typer.Option("--vault", metavar="PATH",
                                              help="Vault folder (else OPTMEM_VAULT, the nearest .optmem/, ~/.optmem).")] = None,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """OptMem: memory for AI agents that lives in plain, human-editable files.

    \b
    Example:
      optmem --vault sample_vault search 端口 --explain
    """
    common.STATE.vault_opt = vault


def main() -> None:
    """Console entry point."""
    app()
