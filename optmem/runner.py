"""Running a command the user configured (a summariser, a model): stdin in, stdout out, with a
timeout, and a clear reason when it fails — callers fall back and say why.
"""

from __future__ import annotations

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
    """Run `cmd` with /bin/sh, feeding `stdin`; success means exit 0 and non-empty stdout."""
    try:
        res = subprocess.run(["/bin/sh", "-c", cmd], input=stdin, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return Ran(None, f"timed out after {timeout:g}s")
    except OSError as exc:
        return Ran(None, f"could not start: {exc.strerror or exc}")
    except UnicodeDecodeError:
        return Ran(None, "printed output that is not UTF-8")
    out = res.stdout.strip()
    if res.returncode != 0:
        err = res.stderr.strip().splitlines()
        return Ran(None, f"exited with {res.returncode}" + (f": {err[-1][:200]}" if err else ""))
    if not out:
        return Ran(None, "printed nothing")
    return Ran(out + "\n")


def detach(argv: list[str]) -> bool:
    """Start a process that outlives this one (its own session, no terminal, output dropped);
    False when it could not be started."""
    try:
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    except OSError:
        return False
    return True
