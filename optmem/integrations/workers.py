"""The HTTP hub's worker processes: reads in parallel across processes (issue 43, item 4).

One Python process answers one call at a time (its interpreter lock), however many threads it
runs. With `[mcp] workers` above one, `optmem mcp --http` binds its socket, then forks that many
workers that each accept on it and answer calls with a warm handle of their own
(`optmem.warm`): reads run side by side in different processes, and a write takes the vault lock
as every write does, in whichever worker it arrives. The hub's first process only supervises:

* a worker that ends while the hub serves is reported on stderr and replaced (one that keeps
  ending — more than `RESTARTS` times a minute — stops the hub: it would only end again);
* SIGTERM or SIGINT stops every worker (SIGTERM, then SIGKILL after `GRACE` seconds) and waits
  for each before the hub exits;
* a worker whose supervisor is gone — even killed, with no chance to stop anything — stops
  itself: it holds the read end of a pipe only the supervisor writes to, and its end of file
  means the supervisor is gone (no polling, no orphan serving on).

Fork is POSIX's: where there is none (Windows) the hub serves in one process, as with
`workers = 1`.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

GRACE = 30.0  # seconds a worker has to finish what it answers once told to stop, before SIGKILL
RESTARTS = 5  # workers that may end within a minute (plus one for each worker) before the hub gives up
STOPS = (signal.SIGTERM, signal.SIGINT)


def can_fork() -> bool:
    """Whether this platform starts workers by forking (POSIX)."""
    return hasattr(os, "fork")


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity where the platform tells it)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def say(text: str) -> None:
    """One line on stderr, written only when it can be without waiting: the supervisor must not
    block on a pipe nobody reads (the line is dropped then)."""
    import select

    data = (text.rstrip("\n") + "\n").encode("utf-8", "replace")[:4096]
    try:
        if select.select([], [2], [], 0)[1]:
            os.write(2, data)
    except (OSError, ValueError):
        pass


def described(status: int | None) -> str:
    """How a process ended, from its wait status (None: not known — another waited for it)."""
    if status is None:
        return "ended (how is not known: another waited for it)"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"killed by {name}"
    return f"exited with code {os.WEXITSTATUS(status)}"


def _stop(sig: int, frame: object) -> None:
    """The supervisor's handler for STOPS and SIGCHLD: nothing to do here. The interpreter writes
    the signal's number to the supervisor's wakeup pipe from its C-level handler, in whichever
    thread the signal reaches, and that byte wakes the supervisor (a handler that raised, waking a
    blocking `os.wait`, lost a signal that came just before the wait began or reached another
    thread: the hub served on until a worker happened to end)."""


def _watch_parent(life: int) -> None:
    """In a worker: SIGTERM to itself once the supervisor is gone (its end of `life` closed)."""
    import threading

    def wait() -> None:
        while True:
            try:
                if not os.read(life, 1):
                    break
            except InterruptedError:
                continue
            except OSError:
                break
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=wait, name="optmem-supervisor-watch", daemon=True).start()


def supervise(count: int, work: Callable[[int], None], ended: Callable[[int], None] | None = None) -> int:
    """Fork `count` workers, worker i running `work(i)`; replace one that ends (`ended(i)` is
    called first, to clear what it left); on SIGTERM or SIGINT stop them all. Returns the exit
    code for the hub: 0 when stopped by a signal, 1 when workers kept ending. Call it from the
    main thread (signal handlers are set there only).

    It waits on one thing: its wakeup pipe, where each signal it handles (STOPS, and SIGCHLD when
    a worker ends) leaves its number as it arrives — a signal that comes before the wait begins, or
    reaches another thread of this process, is read there all the same (no lost wakeup)."""
    life_r, life_w = os.pipe()
    wake_r, wake_w = os.pipe()
    for fd in (life_r, life_w, wake_r, wake_w):
        os.set_inheritable(fd, False)
    os.set_blocking(wake_w, False)  # (the interpreter's handler must never block on it)
    pids: dict[int, int] = {}  # worker's pid → its index
    ends: list[float] = []  # when workers ended, this last minute
    old_wake = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)  # (before the handlers: none unheard)
    handled = (*STOPS, signal.SIGCHLD)
    old = {sig: signal.signal(sig, _stop) for sig in handled}

    def spawn(index: int) -> None:
        _flush()  # (what is buffered is written once, not by each worker)
        # (a stop sent to the new worker waits, blocked, until it has its own handlers back: with
        # this process's it would be dropped)
        signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
        try:
            pid = os.fork()
            if pid == 0:  # the worker
                code = 1
                try:
                    signal.set_wakeup_fd(-1)
                    for fd in (life_w, wake_r, wake_w):
                        os.close(fd)
                    for sig in handled:
                        signal.signal(sig, signal.SIG_DFL)
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
                    _watch_parent(life_r)
                    work(index)
                    code = 0
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
                except BaseException:  # (what went wrong, on stderr, as an uncaught exception prints it)
                    import traceback

                    traceback.print_exc()
                finally:
                    _flush()
                    os._exit(code)
            pids[pid] = index
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)

    code = 0
    try:
        for i in range(count):
            spawn(i)
        while pids:
            heard = os.read(wake_r, 512)  # (blocks until a signal leaves its number)
            if any(sig in heard for sig in STOPS):
                break
            for pid, status in _ended(pids):
                index = pids.pop(pid)
                now = time.monotonic()
                ends[:] = [t for t in ends if now - t < 60] + [now]
                if len(ends) > RESTARTS + count:
                    say(
                        f"optmem hub: worker {pid} {described(status)}; {len(ends)} workers ended within a minute — "
                        "the hub stops (see the lines above for why)"
                    )
                    code = 1
                    break
                say(f"optmem hub: worker {pid} {described(status)}; starting another in its place")
                if ended is not None:
                    ended(index)
                spawn(index)
            if code:
                break
    finally:
        for sig in STOPS:  # (a second signal while stopping changes nothing)
            signal.signal(sig, signal.SIG_IGN)
        _stop_all(pids)
        signal.signal(signal.SIGCHLD, old[signal.SIGCHLD])
        signal.set_wakeup_fd(old_wake)
        for fd in (life_w, life_r, wake_w, wake_r):
            os.close(fd)
        for sig in STOPS:
            signal.signal(sig, old[sig])
    return code


def _ended(pids: dict[int, int]) -> list[tuple[int, int | None]]:
    """The workers among `pids` that have ended, each with its wait status (reaped; only ours,
    never another child of this process)."""
    found: list[tuple[int, int | None]] = []
    for pid in list(pids):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # (reaped by someone else: ended, how is not known)
            found.append((pid, None))
            continue
        if done:
            found.append((pid, status))
    return found


def _flush() -> None:
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


def _stop_all(pids: dict[int, int]) -> None:
    """SIGTERM to every worker, SIGKILL to those still running `GRACE` seconds later; every one
    waited for (no zombie, no orphan)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    end = time.monotonic() + GRACE
    left = set(pids)
    while left and time.monotonic() < end:
        for pid in list(left):
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    left.discard(pid)
            except ChildProcessError:
                left.discard(pid)
        if left:
            time.sleep(0.02)
    for pid in left:  # (past the grace: killed, then waited for)
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    pids.clear()
