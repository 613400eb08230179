"""The `optmem` command line: parses, calls one core function, renders. Nothing more.

`run` tries the fast path (no Typer import) and falls back to the Typer app for help, usage
errors and anything unusual. Commands load lazily: a command imports only its own module.
"""

from __future__ import annotations

import sys


def run(argv: list[str]) -> int:
    """Run one invocation and return its exit code (`optmem.cli.errors.handle` maps every way
    it can end)."""
    from optmem.cli import fast
    from optmem.cli.common import STATE, finish
    from optmem.cli.spec import COMMANDS

    mark = len(STATE.created)
    try:
        refuse_bad_bytes(argv)
        found = fast.find(argv, COMMANDS)
        cmd = found.command
        kwargs = fast.parse(cmd.params, found.rest) if cmd else None
        if cmd is None or kwargs is None:
            from optmem.cli.app import app

            code: int = app(args=argv, prog_name="optmem")
            return code
        STATE.vault_opt, STATE.set_opt = found.vault, found.sets
        cmd.fn(**kwargs)
        return 0
    except BaseException as exc:  # noqa: BLE001 - one handler for every ending
        from optmem.cli.errors import handle

        return handle(exc, argv)
    finally:
        finish(mark)


def refuse_bad_bytes(argv: list[str]) -> None:
    """Arguments that are not UTF-8 (Python keeps their bytes as lone surrogates) are refused."""
    for i, arg in enumerate(argv, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as exc:
            from optmem.errors import UsageError

            raise UsageError(
                f"argument {i} is not valid UTF-8 (at character {exc.start}); pass "
                "text as UTF-8, or through stdin with -"
            ) from None


# Allocations between two runs of the cycle collector in an optmem process (Python's default is
# 700). A command is one short process that allocates much — modules, classes, records read back
# — and frees little: at 700 a search ran it ~25 times, 3–8 ms of its CPU, for no garbage. A
# long-running server (`optmem mcp`) still collects, every COLLECT_AFTER allocations.
COLLECT_AFTER = 20_000


def main() -> None:
    """Console entry point."""
    import gc

    gc.set_threshold(COLLECT_AFTER, *gc.get_threshold()[1:])
    code = run(sys.argv[1:])
    # At exit the interpreter collects cycles once more over every object still alive — the
    # modules, classes and functions the command loaded, ~8 % of a search's instructions — and
    # a finished command has nothing there to free: what is alive now is frozen, so that last
    # collection has nothing to traverse. (Exit handlers still run, and files are closed as before.)
    gc.freeze()
    leave(code)


def leave(code: int) -> None:
    """End the process with `code`, as `sys.exit` would, without the interpreter's teardown.

    After the exit handlers, `sys.exit` tears the interpreter down: it empties every module,
    frees every object the command made and closes what is still open — ~6M instructions (~3 %
    of a search) that change nothing on disk once a command is done: optmem's writes are
    committed (`fsio`) before it returns, SQLite keeps its files consistent however a process
    ends, and the kernel releases the vault's locks and closes the files. So: the exit handlers
    run (`atexit`: what a library registered, `weakref.finalize`), the standard streams are
    flushed, and the process ends (`os._exit`). Not when a thread was started (`threading` is
    loaded: `sys.exit` waits for threads that are not daemons), nor when a stream cannot be
    flushed (a reader that closed the pipe): then `sys.exit` ends it, and says so, as before."""
    import atexit
    import os

    if "threading" not in sys.modules:
        atexit._run_exitfuncs()
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except (OSError, ValueError):
            pass  # (sys.exit flushes them again and reports it, as it always did)
        else:
            os._exit(code)
    sys.exit(code)
