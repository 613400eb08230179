"""The one error handler: every way a command can end, turned into output and an exit code.

* an `OptmemError` → its JSON error shape (with --json) or a message on stderr, and the exit code
  its class carries (1 refused, 2 usage, 3 vault trouble);
* a malformed command line (Typer's usage errors) → exit 2;
* Ctrl-C → exit 130;
* anything else is a bug → exit 4, a short message, and the traceback in the vault's
  `.cache/optmem.log` (and on stderr under `OPTMEM_DEBUG=1`).
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from optmem.cli.common import STDOUT, echo, error_payload, note, render_error_human, report_error, resolve_vault
from optmem.cli.spec import CommandExit
from optmem.errors import INTERNAL, INTERRUPTED, USAGE, OptmemError

LOG_NAME = "optmem.log"


def handle(exc: BaseException, argv: list[str]) -> int:
    """Report `exc` the way the invocation asked (JSON or human) and return the exit code."""
    json_out = "--json" in (argv[: argv.index("--")] if "--" in argv else argv)
    if isinstance(exc, CommandExit):
        return exc.code
    if isinstance(exc, KeyboardInterrupt):
        return _interrupted(json_out)
    if isinstance(exc, OptmemError):
        if exc.context.get("file") == STDOUT:
            return _output_failed(exc, json_out, quiet=_reader_gone(exc))
        try:
            report_error(exc, json_out)
        except OptmemError as failed:  # the JSON error cannot reach stdout either: stderr has it
            if failed.context.get("file") != STDOUT:
                raise
            _output_failed(exc, json_out)
        return exc.exit_code
    typer = sys.modules.get("typer")  # only the Typer path raises these (its vendored Click's)
    if typer is not None:
        if isinstance(exc, typer.Abort):
            return _interrupted(json_out)
        if isinstance(exc, typer.Exit):
            return int(exc.exit_code)
        if isinstance(exc, typer.TyperException) and type(exc).__name__ == "NoArgsIsHelpError":
            exc.show()  # a group named alone (`optmem handoff`): its help, as Click prints it
            return int(getattr(exc, "exit_code", USAGE) or USAGE)
        if isinstance(exc, typer.TyperException):  # a malformed command line
            if "--vault" in argv[1:] and "--vault" in exc.format_message():
                exc.message = (
                    exc.format_message() + " — --vault is a global option: put it before "
                    "the command (optmem --vault PATH search …), or set OPTMEM_VAULT"
                )
            elif exc.format_message().startswith("No such option: --json") and _before_the_command(exc):
                exc.possibilities = None  # (the global options Click lists: not what was meant)
                exc.message = (
                    "No such option: --json before the command — --json belongs to each command: put it "
                    "after the command (optmem search … --json)"
                )
            elif exc.format_message().startswith("No such command"):
                exc.message = exc.format_message() + _nearest_command(exc.format_message())
            elif exc.format_message().startswith("Got unexpected extra argument"):
                exc.message = _quote_it(exc) or exc.format_message()
            dashed = _dashed_text(exc, argv)
            # one message either way, as every refusal's: what was wrong, and where the options are
            message = exc.format_message().rstrip(".") + (
                f" — {dashed!r} starts with '-', so it reads as options: put `--` before the text "
                f"({_command_of(argv) or 'optmem search'} -- {dashed})"
                if dashed is not None
                else _help_for(argv)
            )
            if json_out:
                echo(error_payload("usage", message))
            else:
                note(f"error (usage): {message}")
            return int(getattr(exc, "exit_code", USAGE) or USAGE)
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return _internal(exc, json_out)


def _interrupted(json_out: bool) -> int:
    """Ctrl-C: a note on stderr, and with --json the error shape on stdout, so an agent reading
    it learns what happened and that running it again is safe."""
    note("optmem: interrupted")
    if json_out:
        try:
            echo(
                error_payload(
                    "interrupted",
                    "interrupted (Ctrl-C) before the command finished; no file is left half-written: "
                    "run it again (a record that was already stored is reported as a duplicate)",
                )
            )
        except OptmemError:  # stdout is gone too: stderr said it
            pass
    return INTERRUPTED


def _reader_gone(exc: BaseException) -> bool:
    """Whether the output failed because its reader stopped reading (a closed pipe: `| head`)."""
    cause = exc.__cause__
    return isinstance(cause, OSError) and cause.errno == errno.EPIPE


def _output_failed(exc: OptmemError, json_out: bool, *, quiet: bool = False) -> int:
    """stdout would not take the output (or the report of `exc`): report `exc` on stderr (the
    JSON error shape with --json — stdout cannot carry it), and point stdout at /dev/null so the
    interpreter's last flush of what is still buffered does not fail again on the way out.
    `quiet`: the reader stopped reading (`export | head -3`), as a pipe's reader may — the output
    ends there and nothing is said (the exit code still says it was cut short); any other refusal
    (a full disk behind `>`) is reported."""
    if not quiet:
        echo(
            error_payload(exc.code, exc.message, **exc.context) if json_out else render_error_human(exc, exc.context),
            err=True,
        )
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # (a test's stdout has no descriptor)
        pass
    return exc.exit_code


def _dashed_text(exc: Any, argv: list[str]) -> str | None:
    """The word of the command line that was text starting with '-' (`optmem search -port`),
    when Click's refusal comes from reading it as options: a missing argument (-p took "ort"), or
    an option no command has that the word starts with (`-x` of `-xyz`). None otherwise."""
    said = exc.format_message()
    words = argv[: argv.index("--")] if "--" in argv else argv
    dashed = [w for w in words if w.startswith("-") and not w.startswith("--") and len(w) > 2]
    if said.startswith("Missing argument"):
        return dashed[0] if dashed else None
    if said.startswith("No such option: -") and not said.startswith("No such option: --"):
        name = said.removeprefix("No such option: ").split()[0].rstrip(".")
        return next((w for w in dashed if w.startswith(name)), None)
    return None


def _command_of(argv: list[str]) -> str | None:
    """ "optmem search" for the command the line names (`_help_for`), else None."""
    said = _help_for(argv)
    return said.removeprefix(" — `").removesuffix(" --help` lists its options") if said else None


def _help_for(argv: list[str]) -> str:
    """ " — `optmem search --help` lists its options", for the command the line names (after the
    global --vault; with its subcommand when it is a group) — nothing when it names none."""
    from optmem.cli.spec import COMMANDS

    i = 0
    while i < len(argv) and (argv[i] == "--vault" or argv[i].startswith("--vault=")):
        i += 2 if argv[i] == "--vault" else 1
    if i >= len(argv) or argv[i] not in COMMANDS:
        return ""
    command = argv[i]
    if COMMANDS[command][0].startswith("@") and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
        command += " " + argv[i + 1]
    return f" — `optmem {command} --help` lists its options"


def _nearest_command(message: str) -> str:
    """ " Did you mean search?" for a mistyped command name (as options already get)."""
    import difflib

    from optmem.cli.spec import COMMANDS

    typed = message.split("'")[1] if message.count("'") >= 2 else ""
    near = difflib.get_close_matches(typed, list(COMMANDS), n=1)
    return f" Did you mean {near[0]}?" if near else " `optmem --help` lists the commands."


def _before_the_command(exc: Any) -> bool:
    """Whether Click refused an option among the global ones (`optmem --vault V --json get …`)."""
    ctx = getattr(exc, "ctx", None)
    return ctx is not None and ctx.parent is None


# The arguments that take free text: words past them were meant as one, and only quotes say so
_TEXT_ARGUMENTS = ("query", "text", "new")


def _quote_it(exc: Any) -> str | None:
    """For words past a command's last argument when it takes free text (`optmem search deploy
    staging`): the command as it was meant, quoted — None for any other command."""
    import shlex

    from optmem.memory import TARGETS

    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return None
    positional = [p for p in ctx.command.params if p.param_type_name == "argument"]
    if not positional or positional[-1].name not in _TEXT_ARGUMENTS or positional[-1].nargs != 1:
        return None
    import re

    said = re.fullmatch(r"Got unexpected extra arguments?(?:\(s\))? \((.*)\)", exc.format_message(), re.S)
    if said is None:
        return None
    extra = said.group(1)  # (the words past the argument, as Click joined them)
    values = [str(ctx.params.get(p.name) or "") for p in positional]
    meant = f"{values[-1]} {extra}"

    def quoted(words: str) -> str:
        return f'"{words}"' if not any(c in words for c in '"$`\\!') else shlex.quote(words)

    last = (positional[-1].metavar or positional[-1].name.upper()).rstrip(".")
    example = " ".join([ctx.command_path, *(shlex.quote(v) for v in values[:-1]), quoted(meant)])
    said_target = ""
    if values[-1] in TARGETS and any(p.name == "target" for p in ctx.command.params):
        # `optmem add memory "…"`: the first word names the file, which is an option
        said_target = (
            f"; or, if {values[-1]!r} names the file: {ctx.command_path} --target {values[-1]} {quoted(extra)}"
        )
    return (
        f"{ctx.command.name} takes one {last}, and got more words ({extra}): quote {last} when it "
        f"has several words, e.g. {example}{said_target}"
    )


def _internal(exc: BaseException, json_out: bool) -> int:
    """A bug: say so briefly, keep the traceback where it can be found."""
    text = "".join(traceback.format_exception(exc))
    where = _log(text)
    if os.environ.get("OPTMEM_DEBUG") == "1":
        echo(text.rstrip(), err=True)
    hint = f"the traceback is in {where}" if where else "run with OPTMEM_DEBUG=1 to see the traceback"
    message = f"internal error: {type(exc).__name__}: {exc} — this is a bug in optmem; {hint}"
    if json_out:
        payload = error_payload("internal", message, **({"log": str(where)} if where else {}))
        try:
            echo(payload)
        except OptmemError:  # stdout is gone: stderr still takes it
            echo(payload, err=True)
    else:
        echo(f"optmem: {message}", err=True)
    return INTERNAL


def _log(text: str) -> Path | None:
    """Append a traceback to the vault's .cache/optmem.log; None when there is no vault to hold it."""
    try:
        from optmem import clock, fsio

        vault = resolve_vault()
        if not vault.exists():
            return None
        path = vault.cache(LOG_NAME)
        try:
            stamp = clock.format_ts(clock.now())
        except OptmemError:  # a bad OPTMEM_NOW
            stamp = "?"
        fsio.append_bytes(path, f"--- {stamp} optmem internal error\n{text}\n".encode(), within=vault.root)
        return path
    except Exception:  # noqa: BLE001 - the original error is what matters; never fail here
        return None
