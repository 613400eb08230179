"""Where a vault's log lives: one `LOG.jsonl`, or one set of files per writer.

A vault shared by several machines (git, Syncthing, rclone, NFS) keeps its log as segments,
`log/<writer>/<YYYY-MM>.jsonl`: each clone appends only to its own writer's file of the month,
so no file ever has two writers and a sync adds whole lines or whole files — never a conflict,
never a rewrite. Its recalls and sweeps go to `log/<writer>/ACCESS.jsonl` the same way. A vault
is segmented once `log/` exists (`optmem segment` makes it); a `LOG.jsonl` it had before stays
as it is, read as the oldest segment. Readers merge every segment (the effective view orders
records by time and id, never by file).

A writer id names this clone of the vault on this machine: `OPTMEM_WRITER` if set, else the
one recorded in the user's own list (`$XDG_DATA_HOME/optmem/writers`, by host and real path:
local, never committed, never copied with the folder), else — the vault moved or renamed: one
listed path of this host is gone, its writer's folder is in this vault and the vault's own
`.cache/writer` (local, never committed, moved with the folder) names that writer — that
writer's (its line moves to the new path), else a new one — the host's name and four random hex
digits. A new clone, or a clone made where another sits on a disk not mounted now, has no such
`.cache/writer`: it never takes over a writer id another live folder may hold — nor does a vault
an older optmem wrote (no `.cache/writer`) moved before this one wrote to it, which looks the
same; `doctor` notes that it may be one (`moved_from`) and how to keep its writer.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from optmem import fsio
from optmem.errors import OptmemError, UsageError, quote
from optmem.patterns import lazy

LOG = "LOG.jsonl"
ACCESS = "ACCESS.jsonl"
SEGMENTS = "log"
MONTH_RE = lazy(r"^\d{4}-\d{2}\.jsonl$")
WRITER_RE = lazy(r"^[a-z0-9][a-z0-9._-]{0,47}$")


def segmented(root: Path) -> bool:
    return (root / SEGMENTS).is_dir()


def _writer_dirs(root: Path) -> list[Path]:
    try:
        found = [p for p in os.scandir(root / SEGMENTS) if p.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [Path(p.path) for p in sorted(found, key=lambda p: p.name) if WRITER_RE.fullmatch(p.name)]


def segments(root: Path) -> list[tuple[str, Path]]:
    """Every log file, as (name relative to the vault, path): LOG.jsonl first (always, in a vault
    that is not segmented: it is where appends go), then each writer's months in order."""
    out = [(LOG, root / LOG)] if not segmented(root) or (root / LOG).exists() else []
    for folder in _writer_dirs(root):
        try:
            months = sorted(e.name for e in os.scandir(folder) if MONTH_RE.fullmatch(e.name))
        except OSError:
            continue
        out += [(f"{SEGMENTS}/{folder.name}/{m}", folder / m) for m in months]
    return out


def own_files(root: Path) -> str | None:
    """The log files this clone writes, as a segment's name or the folder (ending in /) its
    names start with: LOG.jsonl in a vault not split, this writer's folder in one that is — None
    while this clone has no writer id (it wrote nothing there). Read only: no writer id is made
    (what an older optmem honoured as this clone's releases: `vault._honoured_before`)."""
    if not segmented(root):
        return LOG
    name = os.environ.get("OPTMEM_WRITER") or _listed().get(_place(root))
    return f"{SEGMENTS}/{name}/" if name and WRITER_RE.fullmatch(name) else None


def is_own(own: str | None, name: str) -> bool:
    """Whether the log file `name` is one of this clone's own (`own`: `own_files`)."""
    return own is not None and (name == own or (own.endswith("/") and name.startswith(own)))


def access_files(root: Path) -> list[tuple[str, Path]]:
    """Every file of recalls and sweeps: ACCESS.jsonl (always, in a vault that is not
    segmented), then each writer's."""
    out = [(ACCESS, root / ACCESS)] if not segmented(root) or (root / ACCESS).exists() else []
    out += [(f"{SEGMENTS}/{d.name}/{ACCESS}", d / ACCESS) for d in _writer_dirs(root) if (d / ACCESS).exists()]
    return out


def own_access(root: Path) -> str | None:
    """The name of this clone's own recall file (as `access_files` names it): ACCESS.jsonl in a
    vault not split, this writer's in one that is — None while this clone has no writer id (it
    recalled nothing there). Read only, as `own_files`. Another clone's recalls, brought by a sync,
    are in the other files: what that clone's sessions read, not this one's (`handoff._seen_by`)."""
    own = own_files(root)
    if own is None or own == LOG:
        return None if own is None else ACCESS
    return f"{own}{ACCESS}"


def writers_file() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "optmem" / "writers"


def check_writer(name: str) -> str:
    if not WRITER_RE.fullmatch(name or ""):
        raise UsageError(
            f"writer id {quote(name)} is not allowed: use 1-48 lower-case letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def _listed() -> dict[tuple[str, str], str]:
    try:
        text = fsio.read_text(writers_file()) or ""
    except OptmemError:
        return {}
    out = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and WRITER_RE.fullmatch(parts[2]):
            out[(parts[0], parts[1])] = parts[2]
    return out


def _place(root: Path) -> tuple[str, str]:
    return os.uname().nodename, os.path.realpath(root)  # (no `socket` import: every command pays for one)


def writer(root: Path, *, choose: str | None = None) -> str:
    """This clone's writer id (made and recorded on first use; `choose` sets it)."""
    env = os.environ.get("OPTMEM_WRITER")
    if env and choose is None:
        return check_writer(env)
    listed = _listed()
    place = _place(root)
    if choose is None and place in listed:
        _mark(root, listed[place])
        return listed[place]
    moved = _moved_from(root, place, listed) if choose is None else None
    name = check_writer(choose) if choose is not None else listed[moved] if moved else _new_id(place[0])
    if moved is not None:
        del listed[moved]  # (its folder is gone: this clone is that one, moved)
    if listed.get(place) != name:
        listed[place] = name
        path = writers_file()
        fsio.ensure_dir(path.parent)
        fsio.atomic_write(path, "".join(f"{h}\t{r}\t{w}\n" for (h, r), w in sorted(listed.items())))
    _mark(root, name)
    return name


WRITER_MARK = (".cache", "writer")  # the vault's own note of its writer id (the cache is never committed)


def _marked(root: Path) -> str | None:
    try:
        text = fsio.read_text(root.joinpath(*WRITER_MARK), limit=64)
    except OptmemError:
        return None
    return text.strip() if text else None


def _mark(root: Path, name: str) -> None:
    """Note `name` in the vault's `.cache/writer` unless it is there (a vault that cannot be
    written keeps none: it is then never taken for a moved one)."""
    if _marked(root) == name:
        return
    try:
        fsio.ensure_dir(root.joinpath(*WRITER_MARK[:-1]), within=root)
        fsio.atomic_write(root.joinpath(*WRITER_MARK), name + "\n", within=root)
    except OptmemError:
        pass


def _moved_from(root: Path, place: tuple[str, str], listed: dict[tuple[str, str], str]) -> tuple[str, str] | None:
    """The place this clone was listed at before it was moved or renamed: the one place of this
    host whose folder is gone, whose writer has a folder in this vault and whose writer the
    vault's `.cache/writer` names (it moved with the folder: a new clone, or one made while the
    old folder's disk is not mounted, has none) — so a moved vault goes on appending to its own
    writer's files, not to a new writer's beside them. None when no place or more than one fits
    (then a new writer id: two live clones never share one)."""
    said = _marked(root)
    if said is None:
        return None
    found = [
        (host, path)
        for (host, path), name in listed.items()
        if host == place[0] and name == said and (root / SEGMENTS / name).is_dir() and not os.path.lexists(path)
    ]
    return found[0] if len(found) == 1 else None


def moved_from(root: Path) -> list[tuple[str, str]]:
    """Where this vault may have been moved from without its `.cache/writer` (an older optmem made
    none), so that it took a writer of its own: (path, writer) of each place of this host the
    user's list names whose folder is gone and whose writer — not this clone's — has a folder in
    this vault. Read only; a guess (a new clone made while that folder's disk is away looks the
    same), for `doctor` to put to the user (`optmem segment --writer W` keeps one writer)."""
    if not segmented(root):
        return []
    listed = _listed()
    host, here = _place(root)
    mine = os.environ.get("OPTMEM_WRITER") or listed.get((host, here))
    return sorted(
        (path, name)
        for (h, path), name in listed.items()
        if h == host and name != mine and (root / SEGMENTS / name).is_dir() and not os.path.lexists(path)
    )


def _new_id(host: str) -> str:
    stem = re.sub(r"[^a-z0-9-]+", "-", host.lower().split(".")[0]).strip("-")[:24] or "writer"
    return f"{stem}-{os.urandom(2).hex()}"


def write_path(root: Path, month: str) -> Path:
    """The file this clone appends records to: LOG.jsonl, or its writer's file of `month`
    (YYYY-MM) in a segmented vault."""
    if not segmented(root):
        return root / LOG
    return root / SEGMENTS / writer(root) / f"{month}.jsonl"


def access_path(root: Path) -> Path:
    """The file this clone appends recalls and sweeps to."""
    if not segmented(root):
        return root / ACCESS
    return root / SEGMENTS / writer(root) / ACCESS
