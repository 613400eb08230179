"""One memory on many machines: the log as one file per writer (`segment`), and `sync` through git.

Files are the truth and git is the distributed engine. A segmented vault (`layout`) gives no file
two writers, so git, Syncthing, rclone or NFS only ever add whole lines or whole files, and the
index catches up per file; hot files merge entry by entry through the merge driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from optmem import fsio, layout
from optmem.vault import Vault, ensure_layout

if TYPE_CHECKING:
    from optmem.index import Index, Row
    from optmem.record import Record
    from optmem.stdlib import datetime

README = """# The log, one folder per writer

Each clone of this vault (a machine, an agent with its own copy) appends only to its own folder
here, `log/<writer>/`, one file a month (`YYYY-MM.jsonl`, one JSON record a line) and its
recalls to `ACCESS.jsonl`. No file has two writers, so git, Syncthing, rclone or NFS never meet
a conflict in the log. Readers merge every file; a record's place is its time and id, never its
file. A `LOG.jsonl` beside this folder is the log from before it was split: kept as it was, read
as the oldest part.

A clone's writer id is local to it: `OPTMEM_WRITER`, or the one optmem recorded for this folder
on this machine. Do not copy another writer's folder by hand; `optmem sync` or your file sync
brings it.
"""


class Segmented(NamedTuple):
    status: str  # segmented | already_segmented
    writer: str
    legacy: int  # records LOG.jsonl holds (kept as it is, read as the oldest part)
    created: list[str]


def segment(vault: Vault, writer: str | None = None) -> Segmented:
    """Give the vault one log file per writer (or set this clone's writer id in one that has it).
    LOG.jsonl is not changed — not a byte, so not a record: it is read as the oldest part of the
    log, and nothing appends to it again. A release from quarantine acts only if this clone wrote
    it (`Vault.own_releases`): each record released in LOG.jsonl by a release on that list
    (the index's `released`) is released again in the writer's folder (a line of this writer's,
    `source` segment, put on the list too), so splitting the log holds nothing that was let out
    and lets out nothing another clone released."""
    if writer is not None:
        layout.check_writer(writer)
    vault.require()
    released: list[str] = []
    with vault.lock():
        already = vault.segmented
        if not already and vault.log_path.is_file():
            from optmem.index import open_index

            with open_index(vault) as idx:
                released = [row.id for row in idx.rows("r.released != 0 ORDER BY r.n")]
        created = ensure_layout(vault)
        folder = vault.root / layout.SEGMENTS
        if fsio.ensure_dir(folder, within=vault.root):
            created.append(f"{layout.SEGMENTS}/")
        readme = folder / "README.md"
        if not readme.exists():
            fsio.atomic_write(readme, README, within=vault.root)
            created.append(f"{layout.SEGMENTS}/README.md")
        name = layout.writer(vault.root, choose=writer)
        if released:
            _release_again(vault, released)
    legacy = 0
    if vault.log_path.is_file():
        with open(vault.log_path, "rb") as fh:
            legacy = sum(1 for raw, _ in fsio.lines(fh) if raw.strip())
    return Segmented("already_segmented" if already else "segmented", name, legacy, created)


def _release_again(vault: Vault, ids: list[str]) -> None:
    """The records a person released in LOG.jsonl, released again in this writer's folder."""
    from optmem import log
    from optmem.record import RELEASE

    def again(idx: Index, rows: list[Row], moment: datetime) -> list[Record]:
        lines = [log.about(row, moment, RELEASE, source="segment", origin="user") for row in rows]
        vault.list_releases([line.id for line in lines])  # (this clone's own, as `optmem release`'s)
        return lines

    log.write_about_all(vault, ids, again)
