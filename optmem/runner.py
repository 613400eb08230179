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


OUTPUT_BYTES = 1 << 20  # what a command may print on stdout when its caller names no bound
STDERR_KEPT = 4096  # the end of its stderr, kept to say why it failed (the rest is read and dropped)


def run_command(cmd: str, stdin: str, timeout: float, *, limit: int = OUTPUT_BYTES) -> Ran:
    """Run `cmd` with /bin/sh, feeding `stdin`; success means exit 0 and non-empty stdout.

    Its output is read with a bound: more than `limit` bytes on stdout stops the command (and
    fails it); of stderr only the last few KiB are kept. The command runs in a process group
    of its own: on a timeout, or output past the bound, the whole group is killed — a
    pipeline's or a script's children too, which would otherwise live on and hold the output
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
        for pipe in (proc.stdin, proc.stdout, proc.stderr):  # a child that left the group may
            if pipe is not None:  # still hold them: do not wait for it
                try:
                    pipe.close()
                except OSError:
                    pass
        proc.wait()

    try:
        got = _exchange(proc, stdin.encode("utf-8"), timeout, limit)
    except BaseException:  # interrupted (Ctrl-C): the command must not run on without us
        stop()
        raise
    if isinstance(got, str):
        stop()
        return Ran(None, got)
    raw_out, raw_err = got
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


def _exchange(proc: "subprocess.Popen[bytes]", data: bytes, timeout: float, limit: int) -> tuple[bytes, bytes] | str:
    """Feed `data` to the process and read its stdout (at most `limit` bytes) and the end of its
    stderr until both close and it exits: (stdout, stderr), or why it was stopped."""
    import os
    import selectors
    import time

    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + timeout
    out, err = bytearray(), bytearray()
    sel = selectors.DefaultSelector()
    pending = memoryview(data)
    if pending:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin, selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
    sel.register(proc.stdout, selectors.EVENT_READ)
    sel.register(proc.stderr, selectors.EVENT_READ)
    try:
        while len(sel.get_map()):
            left = deadline - time.monotonic()
            if left <= 0:
                return f"timed out after {timeout:g}s"
            for key, _ in sel.select(left):
                fh = key.fileobj
                if fh is proc.stdin:
                    try:
                        pending = pending[os.write(proc.stdin.fileno(), pending[: 1 << 16]) :]
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:  # it stopped reading: what it printed still counts
                        pending = pending[:0]
                    if not pending:
                        sel.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(fh)
                    continue
                if fh is proc.stdout:
                    out += chunk
                    if len(out) > limit:
                        return f"printed more than {limit:,} bytes (the bound for its output); stopped"
                else:
                    err += chunk
                    del err[:-STDERR_KEPT]
    finally:
        sel.close()
    try:
        proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:g}s"
    return bytes(out), bytes(err)


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
