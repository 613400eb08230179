"""Running a command the user configured (a summariser, a model): stdin in, stdout out, with a
timeout, and a clear reason when it fails — callers fall back and say why.
"""

import subprocess
from typing import NamedTuple


class Ran(NamedTuple):
    """What a command gave: its output when it succeeded, else why it did not."""

    output: str | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.output is not None


def run_command(cmd: str, stdin: str, timeout: float) -> Ran:
    """Run `cmd` with /bin/sh, feeding `stdin`; success means exit 0 and non-empty stdout.

    The command runs in a process group of its own: on a timeout the whole group is killed —
    a pipeline's or a script's children too, which would otherwise live on and hold the output
    pipe open (so the timeout would not even end the wait)."""
    import os
    import signal

    try:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", cmd],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return Ran(None, f"could not start: {exc.strerror or exc}")

    def stop() -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:  # a child that left the group may still hold the pipes: do not wait for it
            proc.communicate(timeout=1)
        except subprocess.TimeoutExpired:
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            proc.wait()

    try:
        raw_out, raw_err = proc.communicate(stdin.encode("utf-8"), timeout=timeout)
    except subprocess.TimeoutExpired:
        stop()
        return Ran(None, f"timed out after {timeout:g}s")
    except BaseException:  # interrupted (Ctrl-C): the command must not run on without us
        stop()
        raise
    try:  # newlines read as text mode would: \r\n and \r become \n
        stdout = raw_out.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        return Ran(None, "printed output that is not UTF-8")
    stderr = raw_err.decode("utf-8", errors="replace")
    out = stdout.strip()
    if proc.returncode != 0:
        err = stderr.strip().splitlines()
        return Ran(None, f"exited with {proc.returncode}" + (f": {err[-1][:200]}" if err else ""))
    if not out:
        return Ran(None, "printed nothing")
    return Ran(out + "\n")


def detach(argv: list[str]) -> bool:
    """Start a process that outlives this one (its own session, no terminal, output dropped);
    False when it could not be started."""
    try:
        subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return False
    return True
