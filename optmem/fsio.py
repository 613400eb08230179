"""The only code that writes files: the vault lock, atomic replaces and whole-line appends.

Durability is reasoned about here once:
* a log append is a single `write()` of whole lines on an O_APPEND descriptor; if the file ends
  in a torn line (a crash mid-write), the append first ends it so its own record stays whole;
* every other file is written to a temporary file in the same folder, fsynced, renamed over the
  old one, and the folder fsynced — readers see the old file or the new one, never half of one;
* a file that cannot be read is never overwritten (callers read through `read_text`, which
  raises `Unreadable`).
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from optmem.errors import Locked, Unreadable

DIR_MODE = 0o700
FILE_MODE = 0o600


def ensure_dir(path: Path) -> bool:
    """Create `path` (and parents) with mode 0700; True when something was created."""
    if path.is_dir():
        return False
    if path.exists():
        raise Unreadable(f"{path} exists but is not a folder; move it aside or choose another path",
                         file=str(path))
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
    return True


def read_text(path: Path) -> str | None:
    """The file's text (UTF-8, BOM dropped), or None when it does not exist.

    Invalid UTF-8 or an I/O error raises `Unreadable` naming the file, so nothing ever
    overwrites what it could not read.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise Unreadable(f"{path} is a folder, expected a file", file=str(path)) from exc
    except OSError as exc:
        raise Unreadable(f"cannot read {path}: {exc.strerror}", file=str(path)) from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(
            f"{path} is not valid UTF-8 (byte {exc.start}); fix or move it, nothing was changed",
            file=str(path),
        ) from exc
    return text[1:] if text.startswith("\ufeff") else text


def atomic_write(path: Path, text: str, *, mode: int = FILE_MODE) -> None:
    """Replace `path` with `text` atomically (temp file + fsync + rename + folder fsync)."""
    with atomic_stream(path, mode=mode) as fh:
        fh.write(text.encode("utf-8"))


def _fsync_dir(folder: Path) -> None:
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def append_lines(path: Path, lines: list[bytes]) -> int:
    """Append whole lines (each without its newline) in one write; returns the offset written at.

    If the file ends in a torn line (no final newline), a newline is written first, in the same
    write, so the torn line stays as it was and the new records are whole.
    """
    ensure_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    try:
        size = os.fstat(fd).st_size
        prefix = b""
        if size > 0 and not _ends_with_newline(path, size):
            prefix = b"\n"
        _write_all(fd, prefix + b"".join(line + b"\n" for line in lines))
        return size + len(prefix)
    finally:
        os.close(fd)


def _ends_with_newline(path: Path, size: int) -> bool:
    with open(path, "rb") as fh:
        fh.seek(size - 1)
        return fh.read(1) == b"\n"


@contextmanager
def atomic_stream(path: Path, *, mode: int = FILE_MODE) -> Iterator[Any]:
    """Write a replacement of `path` through a binary handle; it takes the old file's place
    (fsynced, renamed, folder fsynced) only if the block finishes without an exception."""
    import tempfile

    ensure_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)


def move(src: Path, dst: Path, *, mode: int | None = None) -> None:
    """Rename `src` over `dst` atomically (same folder tree), then fsync the folder."""
    if mode is not None:
        os.chmod(src, mode)
    os.replace(src, dst)
    _fsync_dir(dst.parent)


def remove_tree(path: Path) -> None:
    """Delete a folder and everything in it (purge --all's tree/)."""
    import shutil

    shutil.rmtree(path, ignore_errors=False)


def append_bytes(path: Path, data: bytes) -> None:
    """Append raw bytes in one write (used for files that keep what was moved out of the log)."""
    ensure_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """One write of the whole buffer (looping only if the kernel takes less), then fsync."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def remove_file(path: Path) -> None:
    """Delete a derived file if present."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass


@contextmanager
def exclusive_lock(lock_path: Path, timeout: float) -> Iterator[None]:
    """Hold an exclusive advisory lock on `lock_path`, waiting at most `timeout` seconds.

    Raises `Locked` (exit 3) when another process keeps it longer than that.
    """
    ensure_dir(lock_path.parent)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise Locked(
                        f"the vault is locked by another optmem process (waited {timeout:g}s); "
                        "try again, or raise [lock] timeout in optmem.toml",
                        file=str(lock_path),
                    ) from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock
