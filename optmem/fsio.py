"""The only code that writes files: the vault lock, atomic replaces and whole-line appends.

Durability is reasoned about here once:
* a log append is a single `write()` of whole lines on an O_APPEND descriptor; if the file ends
  in a torn line (a crash mid-write), the append first ends it so its own record stays whole;
* every other file is written to a temporary file in the same folder, fsynced, renamed over the
  old one, and the folder fsynced — readers see the old file or the new one, never half of one;
* a file that cannot be read is never overwritten (callers read through `read_text`, which
  raises `Unreadable`);
* a read-only file (no write permission in its mode, or none for this user) is neither replaced
  nor appended to — by root either: `Unwritable`;
* a file whose change is recorded first (a hot file's journal, a handoff's log record) is
  written beside the old one before the record (`staged`): one that cannot be written is
  refused with nothing recorded;
* a file another program may write without taking a lock (a hot file a person edits) is replaced
  only while it still holds what was read of it (`staged` with `expect`): checked before the
  record and again just before the rename, and a write that lands while the new file is put in
  place is put back — what the other program wrote is never overwritten unseen.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from optmem.errors import FileChanged, Locked, OptmemError, TooLarge, Unreadable, Unwritable
from optmem.patterns import lazy

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any

DIR_MODE = 0o700
FILE_MODE = 0o600
ANY = object()  # `expect` not given (`staged`): the file is replaced whatever it holds


def outside(path: Path, root: Path) -> str | None:
    """Where `path` really leads when, links followed, that is outside `root`; else None."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        return real
    return None


def check_within(path: Path, root: Path | None, *, reading: bool = False) -> None:
    """Refuse to write — or, `reading`, to read — `path` when, links followed, it lies outside
    `root` (a vault): a link inside a vault, which git can carry, must never send a write
    elsewhere, nor pull an outside file into what an agent reads."""
    if root is None:
        return
    real = outside(path, root)
    if real is None:
        return
    if reading:
        raise Unreadable(
            f"{path} leads outside the vault (to {real}, through a symbolic link); it is not read — replace "
            "the link with a real file or folder (`optmem doctor` lists such links)",
            file=str(path),
            reason="leads outside the vault through a symbolic link",
        )
    raise Unwritable(
        f"{path} leads outside the vault (to {real}, through a symbolic link); "
        "nothing was written — replace the link with a real file or folder",
        file=str(path),
    )


def unwritable(path: Path, exc: OSError) -> Unwritable:
    """The error for a write the system refused, naming the file and the likely cause."""
    return Unwritable(f"cannot write {path}: {why_unwritable(exc)}; nothing was changed", file=str(path))


NOTHING_CHANGED = "nothing was changed"


def partly_done(exc: OptmemError, done: str) -> OptmemError:
    """`exc` as a caller that had already changed something says it: the "nothing was changed"
    a refused write says by default (`unwritable`, `read_only`) becomes `done` — what the caller
    knows it did, and what to do about it."""
    if NOTHING_CHANGED in exc.message:
        exc.message = exc.message.replace(NOTHING_CHANGED, done, 1)
    else:
        exc.message = f"{exc.message}; {done}"
    exc.args = (exc.message,)
    return exc


def why_unwritable(exc: OSError) -> str:
    """The likely cause of a refused write, in a few words."""
    return {
        errno.ENOSPC: "the disk is full",
        errno.EDQUOT: "the disk quota is used up",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied (a read-only vault?)",
        errno.EPERM: "permission denied (a read-only vault?)",
        errno.EFBIG: "the file is too large",
        errno.EPIPE: "the program reading it stopped reading (a closed pipe)",
        errno.ENXIO: "it is a FIFO or a device, not a regular file",
    }.get(exc.errno or 0, exc.strerror or str(exc))


def ensure_dir(path: Path, *, within: Path | None = None) -> bool:
    """Create `path` (and parents) with mode 0700; True when this call made `path` itself (not
    when another process made it first)."""
    check_within(path, within)
    if path.is_dir():
        return False
    if path.exists() and not path.is_dir():  # (made a folder meanwhile by another process: fine)
        raise Unreadable(f"{path} exists but is not a folder; move it aside or choose another path", file=str(path))
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    made = False
    for d in reversed(missing):
        try:
            d.mkdir(mode=DIR_MODE)
            made = d == path
        except FileExistsError:
            pass
        except OSError as exc:
            raise unwritable(d, exc) from exc
    return made


READ_BYTES = 16 << 20  # what a read takes when its caller names no smaller bound
NOTE_BYTES = 1 << 20  # a Markdown file of the vault optmem writes bounded (a handoff, a tree node)


def size_words(n: int) -> str:
    """A byte count as a person reads it: "1 MiB", "64 KiB", "300 bytes"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n:,} bytes"


def _too_large(name: str, limit: int, vault_file: bool) -> OptmemError:
    if vault_file:  # the vault's own file: vault trouble, as an unreadable one is
        return Unreadable(
            f"{name} is larger than the {size_words(limit)} optmem reads of it; it was not read — "
            "move it aside or cut it down",
            file=name,
            reason=f"is larger than {size_words(limit)}",
            limit=limit,
        )
    return TooLarge(
        f"{name} holds more than the {size_words(limit)} optmem reads from it; nothing was read or "
        "written — give a smaller file",
        file=name,
        limit=limit,
    )


def read_bytes(path: Path, *, within: Path | None = None, limit: int = READ_BYTES) -> bytes | None:
    """The file's bytes, or None when it does not exist — at most `limit` of them.

    Every file optmem reads whole comes through here (or `read_text`). A file larger than
    `limit` is refused, never read in full: `Unreadable` for a file of the vault (`within`
    given), `TooLarge` for one a user named. With `within`, a path that leads outside the vault
    is refused, and so is anything but a regular file (a FIFO would wait for a writer forever,
    /dev/zero never ends); a file a user named may be a pipe (`--file <(…)`), read up to the
    bound. An I/O error raises `Unreadable` naming the file.
    """
    import stat

    check_within(path, within, reading=True)
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer before it can be refused
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise Unreadable(folder_said(path), file=str(path), reason="is a folder, not a file") from exc
    except OSError as exc:
        raise Unreadable(
            f"cannot read {path}: {exc.strerror}", file=str(path), reason=f"cannot be read ({exc.strerror})"
        ) from exc
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise Unreadable(folder_said(path), file=str(path), reason="is a folder, not a file")
        if not stat.S_ISREG(mode):
            if within is not None:
                raise Unreadable(
                    f"{path} is not a regular file (a FIFO, a socket or a device); it was not read — "
                    "replace it with a real file",
                    file=str(path),
                    reason="is not a regular file",
                )
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return read_stream(fh, limit, str(path), vault_file=within is not None)
    except OSError as exc:
        raise Unreadable(
            f"cannot read {path}: {exc.strerror}", file=str(path), reason=f"cannot be read ({exc.strerror})"
        ) from exc
    finally:
        os.close(fd)


def folder_said(path: Path) -> str:
    """What a command says of a file it needs that is a folder: what is wrong, and what to do."""
    return (
        f"{path} is a folder, expected a file: move that folder aside (rename it) and put the file back, "
        "then run the command again (`optmem doctor` checks the vault's files)"
    )


LINE_BYTES = 8 << 20  # a line of a file read line by line (the log, ACCESS.jsonl, a transcript)


def too_long(limit: int) -> bytes:
    """What `lines` gives for a line longer than `limit`: a JSON string, which no reader takes
    for a record (so the line is reported as unparseable, as any bad line is)."""
    return f'"a line longer than {size_words(limit)}: not read"'.encode()


def lines(fh: Any, limit: int = LINE_BYTES) -> Iterator[tuple[bytes, int]]:
    """The lines of a binary handle from where it stands, as (line, its length in bytes): each
    line with its newline (the last may lack one), as iterating the file gives it — except that a
    line longer than `limit` is never held whole: it is read past in pieces and given as
    `too_long(limit)` (with a newline when it had one) and its real length, so offsets stay
    right."""
    while True:
        raw = fh.readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield raw, len(raw)
            continue
        size = len(raw)
        ended = False
        while not ended:
            piece = fh.readline(1 << 20)
            if not piece:
                break
            size += len(piece)
            ended = piece.endswith(b"\n")
        yield too_long(limit) + (b"\n" if ended else b""), size


def read_stream(fh: Any, limit: int, name: str, *, vault_file: bool = False) -> bytes:
    """At most `limit` bytes from a binary handle (a file, a pipe, stdin), read to its end;
    more than that is refused (`TooLarge`, or `Unreadable` for a `vault_file`) after reading
    only one byte past the bound."""
    chunks, got = [], 0
    while got <= limit:
        chunk = fh.read(min(1 << 20, limit + 1 - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    if got > limit:
        raise _too_large(name, limit, vault_file)
    return b"".join(chunks)


def decode(data: bytes, name: str) -> str:
    """UTF-8 text (BOM dropped); invalid UTF-8 raises `Unreadable` naming the file."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(
            f"{name} is not valid UTF-8 (byte {exc.start}); fix or move it, nothing was changed",
            file=name,
            reason=f"is not valid UTF-8 (at byte {exc.start})",
        ) from exc
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: Path, *, within: Path | None = None, limit: int = READ_BYTES) -> str | None:
    """The file's text (UTF-8, BOM dropped), or None when it does not exist.

    Invalid UTF-8 or an I/O error raises `Unreadable` naming the file, so nothing ever
    overwrites what it could not read; so does a path that leads outside `within` (a vault).
    The bounds and refusals of `read_bytes` apply (`reason` says what is wrong in a few words,
    for a reader that goes on without the file).
    """
    data = read_bytes(path, within=within, limit=limit)
    return None if data is None else decode(data, str(path))


def atomic_write(path: Path, text: str, *, mode: int = FILE_MODE, within: Path | None = None) -> None:
    """Replace `path` with `text` atomically (temp file + fsync + rename + folder fsync)."""
    with atomic_stream(path, mode=mode, within=within) as fh:
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


def append_lines(path: Path, lines: list[bytes], *, within: Path | None = None) -> int:
    """Append whole lines (each without its newline) in one write; returns the offset written at.

    If the file ends in a torn line (no final newline), a newline is written first, in the same
    write, so the torn line stays as it was and the new records are whole. A write that cannot
    complete (a full disk) is cut back to where it began: no partial line is left.
    """
    ensure_dir(path.parent, within=within)
    check_within(path, within)
    try:
        fd = _open_append(path)
    except IsADirectoryError as exc:
        raise Unreadable(folder_said(path), file=str(path)) from exc
    except OSError as exc:
        raise unwritable(path, exc) from exc
    try:
        st = os.fstat(fd)
        size = st.st_size
        prefix = b""
        if size > 0 and not _ends_with_newline(path, size):
            prefix = b"\n"
        try:
            _write_all(fd, prefix + b"".join(line + b"\n" for line in lines))
        except OSError as exc:
            try:  # leave the file as it was — no torn line, and the same mtime (the index's check)
                os.ftruncate(fd, size)
                os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))
            except OSError:
                pass
            raise unwritable(path, exc) from exc
        return size + len(prefix)
    finally:
        os.close(fd)


def _open_append(path: Path) -> int:
    """A descriptor appending to the regular file `path` (made if missing). O_NONBLOCK: a FIFO
    in its place must not hold the write until someone reads it; it is refused."""
    import stat

    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, FILE_MODE)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise OSError(errno.ENXIO, "not a regular file")
    if not mode & 0o222:  # (root may open it all the same: the mark is respected, as `check_replaceable` does)
        os.close(fd)
        raise read_only(path, mode)
    os.set_blocking(fd, True)
    return fd


def _ends_with_newline(path: Path, size: int) -> bool:
    with open(path, "rb") as fh:
        fh.seek(size - 1)
        return fh.read(1) == b"\n"


def check_replaceable(path: Path) -> None:
    """Refuse to replace `path` when it is read-only: its mode lets no one write it (a mark root
    respects too, though the system would let it write), or this process may not write it
    (another user's file, an immutable one). A rename needs only the folder's permission, so it
    would replace such a file all the same: this is asked first. A missing file passes."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing (or not reachable: the write that follows says why)
    if not stat.S_ISREG(mode):
        return
    if not mode & 0o222 or not os.access(path, os.W_OK):
        raise read_only(path, mode)


def read_only(path: Path, mode: int) -> Unwritable:
    """The error for a file of the vault that is read-only: optmem leaves it as it is."""
    import stat

    why = (
        f"the file is read-only (mode {stat.filemode(mode)})"
        if not mode & 0o222
        else f"this user may not write the file (mode {stat.filemode(mode)}: another user's, or made immutable)"
    )
    return Unwritable(
        f"cannot write {path}: {why}; nothing was changed — make it writable (`chmod u+w`) if optmem is to change it",
        file=str(path),
    )


FOLLOW_ROUNDS = 20  # a rewrite's fsynced catch-ups with its source (`Replacement.follow`) before it renames anyway


class Replacement:
    """A new version of `path`, written to a temporary file beside it (`.<name>.<pid>.<random>.tmp`,
    so one left by a killed process can be told from one being written: `clean_temporaries`).
    `commit` makes it the file (fsynced, renamed, folder fsynced); `discard` drops it, and the
    folders it made for it. Made only when `path` can be replaced: a read-only file, a folder
    that takes no file, a full disk refuse here (`Unwritable`), before anything else is done.

    A rewrite of a file others append to (the log, ACCESS.jsonl: a line typed by hand, a recall
    time) follows its source (`follow`, `rewriting`): what the source grew by after it was read
    is copied after what was written, before the rename."""

    def __init__(self, path: Path, *, mode: int = FILE_MODE, within: Path | None = None) -> None:
        import tempfile

        check_within(path, within)
        top = path.parent  # the highest folder this write makes, if any
        while not top.parent.exists() and top.parent != top:
            top = top.parent
        self._made = top if not top.exists() else None
        ensure_dir(path.parent, within=within)
        self.path, self._mode, self._synced = path, mode, False
        self.late: bytes | None = None  # what `commit` found written into the replaced file in its rename
        self._source: Any = None
        try:
            fd, self._tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp")
        except OSError as exc:
            self._remove_folders()
            raise unwritable(path, exc) from exc
        self._fh: Any = os.fdopen(fd, "wb")
        try:
            check_replaceable(path)
        except BaseException:
            self.discard()
            raise

    def write(self, data: bytes) -> int:
        self._synced = False
        try:
            return int(self._fh.write(data))
        except OSError as exc:
            raise unwritable(self.path, exc) from exc

    def sync(self) -> None:
        """What was written, on disk: a full disk or a quota refuses here at the latest."""
        try:
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as exc:
            raise unwritable(self.path, exc) from exc
        self._synced = True

    def follow(self, source: Any) -> None:
        """This is a rewrite of `source` (a binary handle on `path`, read to its end by the caller):
        at `commit`, the bytes appended to it since — by a person, a script, a writer that takes no
        lock — are copied as they are after what was written (`_catch_up`)."""
        self._source = source

    def _catch_up(self) -> bool:
        """Copy what the source grew by since it was last read; whether it had grown. A source
        that is no longer the file at `path` (something renamed another file there meanwhile)
        is refused: renaming over that file would lose it."""
        if self._source is None:
            return False
        try:
            here = os.stat(self.path)
            src = os.fstat(self._source.fileno())
        except FileNotFoundError:
            here = None
        except OSError as exc:
            raise unwritable(self.path, exc) from exc
        if here is None or (here.st_dev, here.st_ino) != (src.st_dev, src.st_ino):
            raise Unwritable(
                f"{self.path} was replaced (or removed) by another program while optmem rewrote it; nothing was "
                "changed — run the command again",
                file=str(self.path),
            )
        grew = False
        while True:
            try:
                more = self._source.read(1 << 20)
            except OSError as exc:
                raise Unreadable(
                    f"cannot read {self.path}: {exc.strerror}",
                    file=str(self.path),
                    reason=f"cannot be read ({exc.strerror})",
                ) from exc
            if not more:
                return grew
            self.write(more)
            grew = True

    def commit(self, expect: bytes | None | object = ANY) -> bytes | None:
        """Put the new version in `path`'s place (atomically: readers see the old file or this one).

        With `expect` (the bytes the file held when it was read; None: it did not exist), only while
        the file still holds them: checked through a descriptor held across the rename, right before
        it (`FileChanged` otherwise, nothing replaced) — the window in which another program's write
        can still land is the rename itself. Returns what the replaced file holds *after* the rename
        when that is not `expect` (a write landed in that window, through a descriptor the other
        program opened before: the caller puts it back), else None.

        Following a source (`follow`), it first copies what the source grew by, fsyncs, and looks
        again, until a look right after an fsync finds nothing new (at most `FOLLOW_ROUNDS` times:
        a source still growing then is copied once more) — an append can still land in the old
        file only between that last look and the rename, a few system calls."""
        for _ in range(FOLLOW_ROUNDS):
            if not self._synced:
                self.sync()
            if not self._catch_up():
                break
        else:
            self._catch_up()
        if not self._synced:
            self.sync()
        try:
            self._fh.close()
            os.chmod(self._tmp, self._mode)
        except OSError as exc:
            raise unwritable(self.path, exc) from exc
        if expect is ANY:
            self._rename()
            return None
        if expect is None and self._create():
            return None
        fd = _open_current(self.path)
        try:
            if _held(fd) != expect:
                raise FileChanged(
                    f"{self.path} changed while optmem wrote it (another program wrote it meanwhile); "
                    "what that program wrote is kept, nothing of this write was put in its place",
                    file=str(self.path),
                )
            self._rename()
            late = _held(fd)
        finally:
            if fd is not None:
                os.close(fd)
        return late if late != expect else None

    def _create(self) -> bool:
        """Make the new version `path` only if no file is there (a hard link, which the system
        refuses over an existing file: no window at all), then drop its temporary name; False on a
        file system without hard links (the caller checks, then renames)."""
        try:
            os.link(self._tmp, self.path)
        except FileExistsError:
            raise FileChanged(
                f"{self.path} was made while optmem wrote it (another program wrote it meanwhile); "
                "what that program wrote is kept, nothing of this write was put in its place",
                file=str(self.path),
            ) from None
        except OSError:
            return False
        try:
            os.unlink(self._tmp)
        except OSError:
            pass  # (left as a temporary of this process: `clean_temporaries` removes it)
        _fsync_dir(self.path.parent)
        return True

    def _rename(self) -> None:
        try:
            os.replace(self._tmp, self.path)
        except OSError as exc:
            raise unwritable(self.path, exc) from exc
        _fsync_dir(self.path.parent)

    def discard(self) -> None:
        """Drop the new version: `path` stays as it was, and so does its folder tree."""
        try:
            self._fh.close()
        except OSError:
            pass
        try:
            os.unlink(self._tmp)
        except OSError:
            pass  # (gone; or its folder turned read-only: the next write removes it, `clean_temporaries`)
        self._remove_folders()

    def _remove_folders(self) -> None:
        if self._made is None:
            return
        folder = self.path.parent
        while True:  # the folders made for this file, deepest first, while they are empty
            try:
                folder.rmdir()
            except OSError:
                return
            if folder == self._made:
                return
            folder = folder.parent


@contextmanager
def atomic_stream(
    path: Path, *, mode: int = FILE_MODE, within: Path | None = None, expect: bytes | None | object = ANY
) -> Iterator[Replacement]:
    """Write a replacement of `path` through a binary handle (`Replacement.write`); it takes the
    old file's place (fsynced, renamed, folder fsynced) only if the block finishes without an
    exception. A file that cannot be replaced (read-only, a folder that takes no new file) is
    refused before the block runs. `expect`: as `Replacement.commit` takes it (what it returns
    is left in the replacement's `late`)."""
    new = Replacement(path, mode=mode, within=within)
    try:
        yield new
        new.late = new.commit(expect)
    except BaseException:
        new.discard()
        raise


def _open_current(path: Path) -> int | None:
    """A descriptor reading the file at `path` now (None when there is none)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unreadable(
            f"cannot read {path}: {exc.strerror}", file=str(path), reason=f"cannot be read ({exc.strerror})"
        ) from exc


def _held(fd: int | None) -> bytes | None:
    """What the file open as `fd` holds, from its start (None for no file)."""
    if fd is None:
        return None
    chunks, at = [], 0
    while at <= READ_BYTES:
        chunk = os.pread(fd, 1 << 20, at)
        if not chunk:
            break
        chunks.append(chunk)
        at += len(chunk)
    return b"".join(chunks)


def holds(path: Path, expect: bytes | None) -> bool:
    """Whether the file at `path` holds exactly `expect` (None: there is no file)."""
    fd = _open_current(path)
    try:
        return _held(fd) == expect
    finally:
        if fd is not None:
            os.close(fd)


@contextmanager
def rewriting(path: Path, *, mode: int = FILE_MODE, within: Path | None = None) -> Iterator[tuple[Replacement, Any]]:
    """Rewrite `path`, a file others may append to while it is rewritten (the log, ACCESS.jsonl):
    yields (the replacement, a binary handle reading the file as it is); the caller reads the
    handle to its end, writing what is to be kept. What is appended to the file meanwhile is
    carried over as it is (`Replacement.follow`); the replacement takes the file's place only if
    the block finishes without an exception."""
    new = Replacement(path, mode=mode, within=within)
    try:
        with open(path, "rb") as src:
            new.follow(src)
            yield new, src
            new.commit()
    except BaseException:
        new.discard()
        raise


@contextmanager
def staged(
    path: Path, data: bytes, *, mode: int = FILE_MODE, within: Path | None = None, expect: bytes | None | object = ANY
) -> Iterator[None]:
    """`data` written beside `path` and on disk before the block runs; it takes `path`'s place
    when the block finishes. For a file whose change is recorded first (a hot file's journal, a
    handoff's log record — the block): a file that cannot be written (read-only, its folder
    read-only, a full disk) is refused before anything is recorded, so a refused write leaves
    nothing behind; after the record, only the rename is left.

    `expect`: the bytes the file held when its new version was made from it (None: no file) — for
    a file another program may write without a lock. It is checked before the block runs and
    again right before the rename (`Replacement.commit`): changed, `FileChanged` is raised (before
    the block: nothing recorded), and the file is left as the other program wrote it. A write that
    lands in the rename itself is put back in the file's place, and `FileChanged` raised too."""
    with atomic_stream(path, mode=mode, within=within, expect=expect) as new:
        new.write(data)
        new.sync()
        if expect is not ANY and not holds(path, expect):  # type: ignore[arg-type]
            raise FileChanged(
                f"{path} changed while optmem wrote it (another program wrote it meanwhile); "
                "what that program wrote is kept, nothing of this write was put in its place",
                file=str(path),
            )
        yield
    if new.late is not None:
        _put_back(path, new.late, data, mode, within)


def _put_back(path: Path, late: bytes, ours: bytes, mode: int, within: Path | None) -> None:
    """A write another program made while `ours` took `path`'s place (`late`: what the replaced file
    holds): put back in the file's place — while it holds `ours` still — then `FileChanged`. If a
    third write came meanwhile, `late` is kept beside the file (`<name>.<time>.kept`) and the error
    names it: nothing another program wrote is dropped unseen."""
    spare: bytes | None = None
    back = Replacement(path, mode=mode, within=within)
    try:
        back.write(late)
        back.sync()
        spare = back.commit(ours)  # (what lands in this rename, if anything, is kept beside)
    except FileChanged:
        back.discard()
        spare = late
    except BaseException:
        back.discard()
        raise
    kept: str | None = None
    if spare is not None:
        aside = path.with_name(f"{path.name}.{time.time_ns()}.kept")
        with atomic_stream(aside, mode=mode, within=within) as out:
            out.write(spare)
        kept = str(aside)
    raise FileChanged(
        f"{path} was written by another program while optmem put its new version in place; that program's "
        + (
            f"version is kept in {kept} (the file changed again since): merge it by hand"
            if kept
            else "version is back in place"
        )
        + ", and optmem's write is not in the file",
        file=str(path),
        **({"kept": kept} if kept else {}),
    )


def move(src: Path, dst: Path, *, mode: int | None = None, within: Path | None = None) -> None:
    """Rename `src` over `dst` atomically (same folder tree), then fsync the folder."""
    check_within(dst, within)
    if mode is not None:
        os.chmod(src, mode)
    os.replace(src, dst)
    _fsync_dir(dst.parent)


def remove_tree(path: Path) -> None:
    """Delete a folder and everything in it (purge --all's tree/)."""
    import shutil

    shutil.rmtree(path, ignore_errors=False)


def append_bytes(path: Path, data: bytes, *, within: Path | None = None) -> None:
    """Append raw bytes in one write (used for files that keep what was moved out of the log)."""
    ensure_dir(path.parent, within=within)
    check_within(path, within)
    try:
        fd = _open_append(path)
    except OSError as exc:
        raise unwritable(path, exc) from exc
    try:
        _write_all(fd, data)
    except OSError as exc:
        raise unwritable(path, exc) from exc
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """One write of the whole buffer (looping only if the kernel takes less), then fsync."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


_TEMPORARY = lazy(r"^(?:\..+\.(\d+)\.[^.]+|index\.(\d+))\.tmp$")
_LEGACY_TEMPORARY = lazy(r"^\..+\.[^.]+\.tmp$")


def _alive(pid: int) -> bool:
    """Whether process `pid` still runs: a killed process its parent has not reaped yet (a
    zombie, which still answers kill(pid, 0)) writes nothing more, so it counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, alive
    try:  # Linux: the state after the command's name in /proc/PID/stat; Z is a zombie
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rpartition(b") ")[2][:1] != b"Z"
    except OSError:
        return True  # no /proc (macOS, BSD): kill(pid, 0) is all there is


def clean_temporaries(folder: Path, *, older_than: float = 3600.0) -> list[str]:
    """Remove temporary files a killed process left in `folder`: ours carry the writer's pid
    (`.<name>.<pid>.<random>.tmp`, `index.<pid>.tmp`) and go when that process is gone; older
    ones without a pid go once they are `older_than` seconds old. Returns the names removed."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        if not entry.name.endswith(".tmp") or not entry.is_file(follow_symlinks=False):
            continue
        m = _TEMPORARY.match(entry.name)
        try:
            if m:
                pid = int(m.group(1) or m.group(2))
                stale = pid != os.getpid() and not _alive(pid)
            else:
                stale = bool(_LEGACY_TEMPORARY.match(entry.name)) and now - entry.stat().st_mtime > older_than
            if stale:
                os.unlink(entry.path)
                removed.append(entry.name)
        except OSError:
            continue
    return removed


PROBE_BYTES = 64 * 1024  # what `probe_write` writes: an index update writes pages of this order


def probe_write(folder: Path) -> str | None:
    """Whether a file can be written in `folder` now (a full disk, a quota, a read-only vault):
    None when it can, else why not. Writes and removes a small temporary file."""
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".probe.{os.getpid()}.", suffix=".tmp")
    except OSError as exc:
        return unwritable(folder, exc).message
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(b"\0" * PROBE_BYTES)
            fh.flush()
            os.fsync(fh.fileno())
        return None
    except OSError as exc:
        return unwritable(folder, exc).message
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def create_empty(path: Path, *, mode: int = FILE_MODE, within: Path | None = None) -> Path | None:
    """Make `path` an empty file where there is none (the folders it needs too), on disk with its
    folder: for a file whose first write is recorded before its rename (a hot file's journal), so
    that a crash between the two leaves the file as that write found it — empty, with a stamp the
    record names — not missing, which a person's deletion leaves too. Returns the topmost thing
    made (a folder made for it, else the file), for `remove_empty`; None when a file is there or
    none can be made (the write itself then says why)."""
    check_within(path, within)
    top = path.parent
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    made = top if not top.exists() else None
    try:
        ensure_dir(path.parent, within=within)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except (OSError, OptmemError):
        if made is not None:
            remove_empty(path, made)
        return None
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    _fsync_dir(path.parent)
    return made or path


def remove_empty(path: Path, made: Path) -> None:
    """Undo `create_empty` (`made`: what it returned) when the write it began was refused: the file
    while it is still empty, and the folders made for it while they are empty."""
    try:
        if path.is_file() and not path.is_symlink() and path.stat().st_size == 0:
            path.unlink()
    except OSError:
        return
    if made == path:
        return
    folder = path.parent
    while folder.is_relative_to(made):
        try:
            folder.rmdir()
        except OSError:
            return
        if folder == made:
            return
        folder = folder.parent


def remove_file(path: Path) -> None:
    """Delete a derived file if present."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass


VAULT_LOCK = "the vault"  # what `exclusive_lock` guards unless told (`Vault.lock`'s, which every write takes)


@contextmanager
def exclusive_lock(
    lock_path: Path,
    timeout: float,
    *,
    within: Path | None = None,
    folder: Path | None = None,
    what: str = VAULT_LOCK,
    setting: bool = True,
) -> Iterator[None]:
    """Hold an exclusive advisory lock on `lock_path`, waiting at most `timeout` seconds.

    The lock is held on the file that is at `lock_path`: one deleted or replaced while this
    process waited for it (a `git clean`, a deleted `.cache/`) is let go and the file now at the
    path is locked instead — else two processes would each hold a lock, on different files. The
    holder writes who it is into the file (`holder`); raises `Locked` (exit 3) when another
    process keeps it longer than `timeout`, naming that process (and whether it is stopped),
    and the lock by `what` it guards ("the vault", "the summary tree (compact, purge)");
    `setting`: `timeout` is `[lock] timeout` of optmem.toml (the error says to raise it), not a
    wait of optmem's own.

    `folder` (the vault's): a folder no cleaning of caches deletes, whose own descriptor is
    locked first (`flock` takes a folder on Linux and macOS). A lock file deleted *while* it is
    held would let the next process make a new one and lock that beside the holder; the folder
    stays, so the next process waits on it. The lock file is still taken after it (an older
    optmem locks only the file, and the file names the holder). Where the folder cannot be
    locked (a file system that does not lock folders, as NFS), the file alone is the lock.
    """
    deadline = time.monotonic() + timeout
    fd = _open_lock(lock_path, within)
    dfd = -1
    held = False
    try:
        if folder is not None:
            dfd = _open_folder(folder)
            if dfd >= 0 and not _flock_by(dfd, deadline, lock_path, timeout, folder=True, what=what, setting=setting):
                os.close(dfd)  # (this file system does not lock folders: the file alone is the lock)
                dfd = -1
        while True:
            _flock_by(fd, deadline, lock_path, timeout, what=what, setting=setting)
            if _at_path(fd, lock_path):
                break
            os.close(fd)  # (its lock goes with it: this file is no longer the lock)
            fd = -1
            fd = _open_lock(lock_path, within)
        held = True
        _name_holder(fd)
        yield
    finally:
        if fd >= 0:
            if held:
                try:  # (still held: the next holder finds no stale name)
                    os.ftruncate(fd, 0)
                except OSError:
                    pass
            os.close(fd)  # closing the descriptor releases the flock
        if dfd >= 0:
            os.close(dfd)  # (after the file: the next holder finds the file unlocked and unnamed)


def _flock_by(
    fd: int,
    deadline: float,
    lock_path: Path,
    timeout: float,
    *,
    folder: bool = False,
    what: str = "",
    setting: bool = True,
) -> bool:
    """Lock `fd` exclusively, trying until `deadline` (then `Locked`, naming the holder of
    `lock_path`). A `folder` the file system cannot lock at all (NFS): False."""
    delay = 0.002
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                if folder and exc.errno in _NO_FOLDER_LOCKS:
                    return False
                raise
            if time.monotonic() >= deadline:
                raise locked(lock_path, timeout, folder=folder, what=what or VAULT_LOCK, setting=setting) from exc
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


# what flock answers where a file system cannot lock a folder (NFS's emulation needs a file open for writing)
# (some FUSE and CIFS mounts: ENOSYS, EPERM)
_NO_FOLDER_LOCKS = frozenset(
    {errno.EBADF, errno.ENOLCK, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EPERM}
)


def _open_folder(folder: Path) -> int:
    """A descriptor of the folder itself, to lock (-1 when it cannot be opened: not readable)."""
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return -1


def _open_lock(lock_path: Path, within: Path | None) -> int:
    ensure_dir(lock_path.parent, within=within)
    check_within(lock_path, within)
    try:
        return os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    except IsADirectoryError as exc:
        raise Unreadable(
            f"the lock file {lock_path} is a folder; remove that folder (it holds "
            "nothing of yours: the lock is recreated)",
            file=str(lock_path),
        ) from exc
    except OSError as exc:
        raise unwritable(lock_path, exc) from exc


def _at_path(fd: int, path: Path) -> bool:
    """Whether the file open as `fd` is the one at `path` now (not deleted, not replaced)."""
    try:
        here = os.stat(path)
    except OSError:
        return False
    st = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (st.st_dev, st.st_ino)


def _name_holder(fd: int) -> None:
    """Write who holds the lock into its file, one JSON line: pid, command, since when — for the
    `Locked` error another process raises (`holder`). A file that cannot be written still locks."""
    import json
    import sys

    from optmem import clock
    from optmem.errors import clip

    command = " ".join([os.path.basename(sys.argv[0]) if sys.argv else "python", *sys.argv[1:]])
    line = json.dumps(
        {"pid": os.getpid(), "command": clip(command), "since": clock.format_ts(clock.now())}, ensure_ascii=False
    )
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, line.encode("utf-8") + b"\n", 0)
    except OSError:
        pass


def holder(lock_path: Path) -> dict[str, Any] | None:
    """Who holds the lock at `lock_path`, as its holder wrote it (`_name_holder`), with its state
    now ("stopped": Ctrl-Z or SIGSTOP; "running"); None when no live process is named (a holder
    that has not written yet, or one gone)."""
    import json

    try:
        with open(lock_path, "rb") as fh:
            got = json.loads(fh.read(4096) or b"null")
    except (OSError, ValueError):
        return None
    if not isinstance(got, dict) or not isinstance(got.get("pid"), int) or not _alive(got["pid"]):
        return None
    out = {k: got[k] for k in ("pid", "command", "since") if isinstance(got.get(k), int | str)}
    out["state"] = "stopped" if _state(got["pid"]) in ("T", "t") else "running"
    return out


def _state(pid: int) -> str:
    """Process `pid`'s state letter (Linux's /proc; "" where there is none)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rpartition(b") ")[2][:1].decode("ascii", "replace")
    except OSError:
        return ""


def locked(
    lock_path: Path, timeout: float, *, folder: bool = False, what: str = VAULT_LOCK, setting: bool = True
) -> Locked:
    """The error for a lock another process kept past `timeout`: which lock (`what` it guards), who
    holds it, when it says, and what to do. `folder`: the folder held with it is what stayed locked —
    a lock file that names no one then is a new one, made after the holder's was deleted (`rm -r
    .cache`), so the holder cannot be named. `setting`: the wait is `[lock] timeout`, which can be
    raised; else it is optmem's own, and the advice is to try again once the holder has finished."""
    who = holder(lock_path)
    later = "try again when it has finished" + (", or raise [lock] timeout in optmem.toml" if setting else "")
    if who is None and folder:
        return Locked(
            f"{what} is locked by another optmem process (waited {timeout:g}s), which cannot be named: "
            "its lock file was deleted while it held the lock (a `rm -r .cache` or `git clean -fdX`); "
            f"{later}",
            file=str(lock_path),
        )
    if who is None:
        return Locked(
            f"{what} is locked by another optmem process (waited {timeout:g}s); {later}",
            file=str(lock_path),
        )
    pid = who["pid"]
    said = [f"`{who['command']}`" if who.get("command") else "", f"since {who['since']}" if who.get("since") else ""]
    named = f"process {pid}" + (f" ({', '.join(x for x in said if x)})" if any(said) else "")
    if who["state"] == "stopped":
        later = (
            f"it is stopped (Ctrl-Z or SIGSTOP) and holds the lock until it goes on: resume it (`fg` in its "
            f"shell, or `kill -CONT {pid}`) or end it (`kill {pid}`), then try again"
        )
    return Locked(
        f"{what} is locked by another optmem process, {named} (waited {timeout:g}s); {later}",
        file=str(lock_path),
        holder=who,
    )
