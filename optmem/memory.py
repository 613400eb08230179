"""Hot memory: bounded MEMORY.md / USER.md / project blocks, edited by add, replace and remove.

Format (compatible with Hermes Agent's memory files): optional YAML front matter, then entries
joined by a line holding only `§`. Front matter and a missing final newline are kept as they
were, so a Hermes file edited here keeps its format. Every change is journalled to LOG.jsonl, so
a removed or replaced entry is never lost.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from pathlib import Path

from optmem import fsio, gitstate
from optmem.errors import (
    Ambiguous,
    FileChanged,
    MergeConflict,
    NearDuplicate,
    NoMatch,
    OptmemError,
    OverLimit,
    SeparatorInText,
    Unreadable,
    Unwritable,
    UsageError,
    quote,
)
from optmem.record import MEMORY, Record, row_made
from optmem.value import NamedTuple, Value
from optmem.vault import Vault, hot_target

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any

    from optmem.index import Index, Row

SEPARATOR = "\n§\n"
# Entries are joined by a line holding only `§` — split exactly as Hermes Agent splits them
# ("\n§\n"; "\r\n§\r\n" too), so both tools see the same entries in the same file
_SPLIT = re.compile(r"\r?\n§\r?\n")
# what entry text may not hold: any line that is `§`, even with spaces around it
_SEPARATOR_LINE = re.compile(r"(?m)^[ \t]*§[ \t\r]*$")
# git's conflict markers, left in a hot file by a merge without the merge driver
# how a person finishes a hot file's merge by hand: the marker lines alone deleted leave the two
# sides' versions of an entry edited both ways joined into one entry (each is a line of it)
BY_HAND = (
    "keep the entries you want, with a line holding only `§` between each two, and delete the marker "
    "lines (deleting the marker lines alone joins the two sides' entries into one)"
)
MARKER_LINE = re.compile(r"(?m)^(?:<{7}|>{7}|\|{7})(?: .*)?\r?$|^={7}\r?$")
# merge.conflictStyle diff3/zdiff3: `||||||| base`, then the base's lines up to `=======` — the
# version both sides left, never an entry of the merged file
_BASE_SECTION = re.compile(r"(?m)^\|{7}(?: .*)?\r?\n(?:.*\r?\n)*?(?=={7}\r?$)")


def unmarked(raw: str) -> str:
    """A hot file git left conflicted, its base sections dropped and each marker line a separator
    (`§`): both sides' entries, neither joined to the other."""
    return MARKER_LINE.sub("§", _BASE_SECTION.sub("", raw))


# front matter: a first line `---`, `key: value` lines (no entry separator among them), a line
# `---`; LF or CRLF line ends
# a line that looks like a separator and is none (a separator is a line holding only `§`): the
# entries on either side of it read as one — `  §  `, `§§`, a Markdown rule (`---`, `***`)
_LOOKALIKE = re.compile(r"(?m)^(?:[ \t]*§[ \t§]*|[ \t]*(?:-{3,}|\*{3,}|_{3,})[ \t]*)\r?$")
_FRONT = re.compile(r"\A(---[ \t]*\r?\n(?:(?![ \t]*§[ \t\r]*\n).*?\r?\n)*?---[ \t]*(?:\r?\n|\Z))")
_LIMIT_LINE = re.compile(r"(?m)^limit[ \t]*:[ \t]*(.*?)[ \t\r]*$")  # (its value read by `_limit_of`)
TARGETS = ("memory", "user")


MIN_ID_PREFIX = 4  # of an entry id's 8 characters, the fewest --id accepts
# the most a hot file's front matter `limit:` sets (the configured limit, if higher): the file may
# come from another clone (git, `sync`), and hot memory goes into every prompt whole
LIMIT_CEILING = 20_000


_sha256: Any = None


def entry_id(text: str) -> str:
    """A short stable id of an entry's text (SHA-256: the built-in module, where there is one, loads
    faster than hashlib, which loads OpenSSL — a search that checks its hits' hot files needs only this)."""
    global _sha256
    if _sha256 is None:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found]
        except ImportError:  # pragma: no cover - (Python 3.12 names it _sha2)
            from hashlib import sha256
        _sha256 = sha256
    digest: str = _sha256(text.encode("utf-8")).hexdigest()
    return digest[:8]


class Entry(Value):
    id: str
    text: str


class Usage(Value):
    chars: int
    limit: int
    percent: int


class HotFile:
    """A parsed hot-memory file. `front` is the raw front matter block, kept byte for byte.
    (A plain class: `dataclasses` and what it imports, `inspect` and `ast`, cost a search that
    checks a hit from a hot file ~40M instructions, ~12 ms.)"""

    def __init__(
        self,
        label: str,  # memory | user | project:<name>
        name: str,  # path relative to the vault
        path: Path,
        limit: int,
        entries: list[str],
        front: str = "",
        final_newline: bool = True,
        newline: str = "\n",  # "\r\n" for a file written with Windows line ends
        conflicted: bool = False,  # git's conflict markers are in it (the entries are shown without them)
        bad_limit: str | None = None,  # its `limit:` could not be read: what is wrong, and the limit used
        read: object = fsio.ANY,  # the bytes `load` read (None: no file) — a write replaces only those
    ) -> None:
        self.label, self.name, self.path, self.limit, self.entries = label, name, path, limit, entries
        self.front, self.final_newline, self.newline, self.conflicted = front, final_newline, newline, conflicted
        self.bad_limit, self.read = bad_limit, read

    def __eq__(self, other: object) -> bool:
        return type(other) is HotFile and vars(other) == vars(self)

    __hash__ = None  # type: ignore[assignment]  # (mutable: as a dataclass's)

    def __repr__(self) -> str:
        return f"HotFile({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    def replace(self, **changes: Any) -> HotFile:
        """A copy with those fields changed (`dataclasses.replace`)."""
        return HotFile(**{**vars(self), **changes})

    def render(self) -> str:
        body = SEPARATOR.replace("\n", self.newline).join(self.entries)
        if body and self.final_newline:
            body += self.newline
        return self.front + body

    def check_round_trip(self) -> None:
        """What is written must read back as the same front matter and entries: an entry can
        never turn into front matter or split into others."""
        front, entries, _ = parse(self.render())
        if front != self.front or entries != self.entries:
            raise UsageError(
                f"the edit would not read back from {self.name} as written: an entry at the top of "
                "the file that looks like front matter (a '---' line, 'key: value' lines, a '---' "
                "line) would be taken for it; reword that entry (nothing was written)"
            )

    def usage(self) -> Usage:
        chars = size_of(self.entries)
        return Usage(chars, self.limit, int(chars * 100 / self.limit) if self.limit else 100)

    def listing(self) -> list[dict[str, str]]:
        return [{"id": entry_id(e), "text": e} for e in self.entries]


def size_of(entries: list[str]) -> int:
    """Characters (code points) of the entries joined with the separator."""
    return len(SEPARATOR.join(entries))


def parse(text: str) -> tuple[str, list[str], bool]:
    """(front matter block, entries, ends with newline) of a hot file's text."""
    if text.startswith("\ufeff"):
        text = text[1:]
    front = ""
    m = _FRONT.match(text)
    if m:
        front, text = m.group(1), text[m.end() :]
    # a `§` line left at an entry's start or end (a separator typed twice: "a\n§\n§\nb") is dropped
    # — `§` is never an entry, nor the first or last line of one; inside one it stays, as Hermes reads it
    entries = [_edges_cut(e).strip() for e in _SPLIT.split(text)]
    # a duplicate entry is dropped on load, as Hermes does
    return front, list(dict.fromkeys(e for e in entries if e)), text.endswith("\n") or not text


def lookalike_separators(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each line of a hot file's text, front matter aside, that looks like
    a separator and is none — `doctor` says so: the entries around it read as one entry."""
    m = _FRONT.match(text)
    skip = text[: m.end()].count("\n") if m else 0
    lines = text.split("\n")
    return [
        (i + 1, line.rstrip("\r"))
        for i, line in enumerate(lines)
        if i >= skip and line.rstrip("\r") != "§" and _LOOKALIKE.fullmatch(line)
    ]


def _edges_cut(entry: str) -> str:
    """An entry without the lines holding only `§` at its start and end."""
    lines = entry.split("\n")
    while lines and lines[0].strip(" \t\r") == "§":
        lines.pop(0)
    while lines and lines[-1].strip(" \t\r") == "§":
        lines.pop()
    return "\n".join(lines)


def _resolve(vault: Vault, target: str, project: str | None) -> tuple[str, str, Path, str]:
    """(label, relative name, path, limit setting) of a target."""
    if project:
        if target not in ("memory", "project"):
            raise UsageError(f"--target {target} cannot be combined with --project; a project has one MEMORY.md")
        path = vault.project_dir(project) / "MEMORY.md"
        return f"project:{project}", f"projects/{project}/MEMORY.md", path, "project"
    if target not in TARGETS:
        raise UsageError(f"--target must be memory or user, not {quote(target)}")
    name = "MEMORY.md" if target == "memory" else "USER.md"
    return target, name, vault.root / name, target


def targets(vault: Vault) -> list[tuple[str, str | None]]:
    """Every hot file of the vault as (target, project): MEMORY.md, USER.md, then each project
    block that exists."""
    return [where for name, _ in vault.hot_paths() if (where := hot_target(name)) is not None]


def load(vault: Vault, target: str = "memory", project: str | None = None) -> HotFile:
    """Read a hot file (missing reads as empty); the limit comes from front matter, then config."""
    label, name, path, limit_key = _resolve(vault, target, project)
    # hand edits may pass the limit (doctor says so); a file far past it is not read whole
    bound = max(fsio.NOTE_BYTES, 16 * getattr(vault.settings.limits, limit_key))
    data = fsio.read_bytes(path, within=vault.root, limit=bound)
    return _parsed(vault, target, project, data)


def _parsed(vault: Vault, target: str, project: str | None, data: bytes | None) -> HotFile:
    """A hot file read from `data`, the bytes it holds (None: there is no file)."""
    label, name, path, limit_key = _resolve(vault, target, project)
    raw = "" if data is None else fsio.decode(data, str(path))
    conflicted = MARKER_LINE.search(raw) is not None
    # both sides of an unresolved merge, without the markers (never print a marker into a prompt),
    # each marker line a boundary between entries: a side is never joined to the other into one
    # entry (`conflicted` says the file holds both; its readers warn)
    front, entries, final_newline = parse(unmarked(raw) if conflicted else raw)
    if conflicted:
        sides = (part.strip() for e in entries for part in _SEPARATOR_LINE.split(e))
        entries = list(dict.fromkeys(part for part in sides if part))
    limit, bad = _limit_of(front, getattr(vault.settings.limits, limit_key), name)
    return HotFile(
        label,
        name,
        path,
        limit,
        entries,
        front,
        final_newline,
        "\r\n" if "\r\n" in raw else "\n",
        conflicted,
        bad,
        read=data,
    )


def _limit_of(front: str, default: int, name: str) -> tuple[int, str | None]:
    """The limit a file's front matter sets (`limit: 3000`, a YAML comment after it allowed), else
    `default`; at most `LIMIT_CEILING` (or `default`, if higher), which applies to a file that asks
    more; and, when its `limit:` cannot be read (3,000, 3k, -5, 0, [unclosed), what is wrong
    and that `default` is used — said by the commands that read the file and by `doctor`, never
    passed over without a word."""
    m = _LIMIT_LINE.search(front)
    if not m:
        return default, None
    value = re.sub(r"[ \t]+#.*$", "", m.group(1))
    top = max(LIMIT_CEILING, default)
    if value.isascii() and value.isdigit() and 1 <= int(value) <= top:
        return int(value), None
    if value.isascii() and value.isdigit() and int(value) > top:
        return top, (
            f"{name}: its front matter's `limit: {value}` is over the most a hot file's front matter may set "
            f"({top:,} characters: hot memory goes into every prompt whole, and the file may come from another "
            f"clone), so {top:,} applies — lower the line (a larger limit is set in optmem.toml's [limits])"
        )
    return default, (
        f"{name}: its front matter's `limit: {value}` is not a whole number of characters (at least 1, "
        f"digits only: `limit: 3000`), so the configured limit {default:,} applies — correct the line"
    )


class Drift(NamedTuple):
    """Where a hot file and its journal disagree (a write cut short, Hermes, a person, git)."""

    unjournalled: list[str]  # entries in the file the journal never saw (typed by hand, Hermes)
    resurfaced: list[str]  # entries in the file the journal says were removed
    missing: list[str]  # entries the journal says are in the file, and are not
    texts: dict[str, str]  # entry id → its text (from the file, else from the journal)
    newest: float | None = None  # when the journal's newest record was made (`record.row_made`); None: not read here


JOURNAL_OPS = ("add", "replace", "remove")


def journal_step(rec: Record) -> tuple[str, str, str] | None:
    """(file, entry id, op) of a hot-memory journal record, or None for any other record."""
    entry, op, file = rec.extra.get("entry"), rec.extra.get("op"), rec.extra.get("file")
    if rec.kind == MEMORY and isinstance(entry, str) and isinstance(file, str) and op in JOURNAL_OPS:
        return file, entry, op
    return None


def held_entries(vault: Vault, file: str) -> set[str] | None:
    """The entry ids a hot file (named as the journal names it) holds now; None for a name that
    is not a hot file."""
    where = hot_target(file)
    if where is None:
        return None
    target, project = where
    try:
        return {entry_id(e) for e in load(vault, target, project).entries}
    except OptmemError:
        return None


def unmerged(vault: Vault, file: str) -> bool:
    """Whether git holds a hot file (named as the journal names it) unmerged: a merge stopped on
    it, and what it lacks is missing, not removed."""
    where = hot_target(file)
    return where is not None and gitstate.unmerged(_resolve(vault, *where)[2])


def journal_of(vault: Vault, file: str) -> dict[str, tuple[str, str]]:
    """entry id → (its last journalled op, its text), for one hot file, from the index."""
    return _read_journal(vault, file)[0]


def _read_journal(vault: Vault, file: str) -> tuple[dict[str, tuple[str, str]], float]:
    """`journal_of`, and when the journal's newest record was made (`record.row_made`)."""
    from optmem.index import open_index

    out: dict[str, tuple[str, str]] = {}
    with open_index(vault) as idx:
        rows = idx.journal(file)
        last = {row.key: row for row in rows}  # log order: the last row of each entry
        for row in last.values():
            rec = idx.record(row)
            step = journal_step(rec)
            if step:
                out[step[1]] = (step[2], rec.text)
    return out, row_made(rows[-1] if rows else None)  # (`Index.journal` reads in time order)


def drift(vault: Vault, hot: HotFile, journal: dict[str, tuple[str, str]] | None = None) -> Drift:
    """Compare a hot file with its journal in LOG.jsonl (the last journalled op of each entry);
    `journal` as `journal_of` gives it, read from the index when not given (and then `newest`
    says when its newest record was made)."""
    newest = None
    if journal is None:
        journal, newest = _read_journal(vault, hot.name)
    last = {e: op for e, (op, _) in journal.items()}
    texts = {e: text for e, (_, text) in journal.items()}
    held = [entry_id(e) for e in hot.entries]
    texts.update(zip(held, hot.entries))
    return Drift(
        [e for e in held if e not in last],
        [e for e in held if last.get(e) == "remove"],
        [e for e, op in last.items() if op != "remove" and e not in held],
        texts,
        newest,
    )


def follow(vault: Vault, state: str | None = None) -> list[str]:
    """Journal the edits made to the hot files outside optmem (Hermes, a person, git) — what
    every read of the view does first when the files changed (`follow.follow_hot`), so `search`,
    `get`, `history` and `stats` see an entry Hermes added as current and one it dropped as
    removed. Drift is looked for without the lock and journalled under
    it (looked for again there: two readers journal it once). A file that cannot be read is left
    to the commands that read it (they say so). A vault that cannot be written (read-only, locked
    too long) is read as it is: search still checks the files for removed entries. Returns the
    journal ids. `state`: the files' state as noted before anything was read (`hot_state`), when
    the caller read some of them first (`follow._journal_edits`: a HANDOFF.md)."""
    from optmem.index import hot_state, open_index
    from optmem.stdlib import sqlite3

    state = hot_state(vault) if state is None else state  # (first: an edit made meanwhile is looked at next time)
    out: list[str] = []
    try:
        drifted = []
        for target, project in targets(vault):
            try:
                if _drift_changes(vault, load(vault, target, project))[0]:
                    drifted.append((target, project))
            except OptmemError:
                continue
        if drifted:
            with vault.lock():
                for target, project in drifted:
                    try:
                        out += _journal_drift(vault, load(vault, target, project), project, None)
                    except Unreadable:
                        continue  # (changed again, unreadable now: its readers say so)
        with open_index(vault) as idx:
            idx.note_hot(state)
    except (OptmemError, OSError, sqlite3.Error):
        pass  # cannot be written, or locked too long: read as it is
    return out


def entries_now(vault: Vault) -> dict[str, set[str]]:
    """Each hot file's entry ids as the files hold them now (a file that cannot be read: none)."""
    out: dict[str, set[str]] = {}
    for target, project in targets(vault):
        try:
            hot = load(vault, target, project)
        except OptmemError:
            continue
        out[hot.name] = {entry_id(e) for e in hot.entries}
    return out


def follow_merge(vault: Vault, before: dict[str, set[str]]) -> list[dict[str, Any]]:
    """After a sync's merge: the entries the merge put in the hot files (not there `before`, as
    `entries_now` gave them), each {file, entry, text, journal}. One another clone's optmem
    added comes with its journal record (`journal` its id: that clone's origin); one typed into
    the file there comes with none — it is journalled here as an edit by another clone, origin
    `sync` (not as this clone's own hand edit). Lock taken here."""
    from optmem.index import hot_state, open_index

    came: list[dict[str, Any]] = []
    state = hot_state(vault)  # (first: an edit made meanwhile is looked at by the next read)
    with vault.lock():
        for target, project in targets(vault):
            try:
                hot = load(vault, target, project)
            except OptmemError:
                continue
            new = {entry_id(e): e for e in hot.entries if entry_id(e) not in before.get(hot.name, set())}
            if not new:
                continue
            hot, drifted, newest = _followed(vault, hot, project)
            added = [c for c in drifted if c.op == "add" and c.entry is not None and c.entry.id in new]
            ids = _journal(vault, hot, project, added, domain=None, source="drift", origin="sync", newest=newest)
            journalled = {c.entry.id: rid for c, rid in zip(added, ids, strict=False) if c.entry is not None}
            journalled = {**_journalled(vault, hot.name, [e for e in new if e not in journalled]), **journalled}
            came += [
                {"file": hot.name, "entry": e, "text": text, "journal": journalled.get(e)} for e, text in new.items()
            ]
        with open_index(vault) as idx:  # what the merge made of the files is followed: no read journals it again
            idx.note_hot(state)
    return came


def _journalled(vault: Vault, file: str, entries: list[str]) -> dict[str, str]:
    """entry id → the id of its last journal record (`hot:<file>:<entry>`), for those of
    `entries` the log journals: an entry another clone's optmem added, or its hand edit that
    clone journalled, came with its record."""
    from optmem.index import open_index

    if not entries:
        return {}
    keys = {f"hot:{file}:{e}": e for e in entries}
    with open_index(vault) as idx:
        rows = idx.rows(f"r.key IN ({', '.join('?' * len(keys))}) ORDER BY r.ts, r.n", list(keys))
    return {keys[r.key]: r.id for r in rows if r.key in keys}  # (the last one wins)


def follow_edit(
    vault: Vault, target: str, op: str, old: str | None, new: str | None, *, source: str, origin: str | None = None
) -> list[str]:
    """Journal the edit another program's memory tool made of a hot file it shares with the vault
    (Hermes' `replace`, `add`, `remove`: it wrote the file, and says what it did) as that
    program's own edit (`source`) — a replace as optmem's replace is journalled, the old entry
    superseded by its new text with the link, not a removal by "an edit outside optmem" and an
    unrelated add. `old` is the part of the entry it named, `new` the entry's new text. Only that
    edit is journalled: the rest of the file's drift may be the next edit of the same batch (Hermes
    writes a batch of operations, then names each), and the next read journals what is left as
    `follow` does — as it journals everything here when the edit named is not found in the file.
    `origin`: who made the edit (the journal of the edit named carries it; the drift has none).
    A replace or remove named without `old` (a provider call without `old_text`) is the one entry
    gone from the file, when one is.
    Lock taken here; returns the journal ids."""
    with vault.lock():
        hot, drifted, newest = _followed(vault, load(vault, target, None), None)
        added = [c for c in drifted if c.op == "add" and c.entry is not None and c.entry.text == (new or "").strip()]
        # the entry it named; with no `old_text` named, the one entry gone from the file (several: not told which)
        gone = [c for c in drifted if c.op == "remove" and c.entry is not None and (not old or old in c.entry.text)]
        named: list[Change] = []
        if op == "replace" and len(added) == 1 and len(gone) == 1:
            named = [Change("replace", "replaced", added[0].entry, gone[0].entry)]
            drifted = [c for c in drifted if c is not added[0] and c is not gone[0]]
        elif (op, len(added)) == ("add", 1) or (op, len(gone)) == ("remove", 1):
            named = added if op == "add" else gone
            drifted = [c for c in drifted if c is not named[0]]
        if not named:
            return _journal(vault, hot, None, drifted, domain=None, source="drift", newest=newest)
        return _journal(
            vault, hot, None, named, domain=None, source=source, unscanned=True, origin=origin, newest=newest
        )


def reconcile(
    vault: Vault, target: str = "memory", project: str | None = None, *, domain: str | None = None
) -> list[str]:
    """Journal a hot file as it is, where the journal disagrees (lock held by the caller or
    taken here): an add for every entry it holds that the journal lacks or calls removed, a
    remove for every entry the journal holds that the file lacks. Returns the journal ids."""
    with vault.lock():
        return _journal_drift(vault, load(vault, target, project), project, domain)


def _journal_drift(vault: Vault, hot: HotFile, project: str | None, domain: str | None) -> list[str]:
    """What changed in the file outside optmem (Hermes, a person, git), journalled — so the log's
    view of hot memory is the file's (lock held). An edit of optmem's own that was journalled
    and cut short before its file was written is finished first (`_finish`)."""
    hot, drifted, newest = _followed(vault, hot, project)
    return _journal(vault, hot, project, drifted, domain=domain, source="drift", newest=newest)


CUT = "file_write"  # a journal record's extra: the file before and after its edit ({was, stamp, now})


def _stamp(path: Path) -> list[int] | None:
    """What says a file was not touched since: its inode, size, modification and change times (a
    copy put back with its old time, `cp -p`, has a new change time); None when it is missing."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _followed(vault: Vault, hot: HotFile, project: str | None) -> tuple[HotFile, list[Change], float | None]:
    """The file and what differs from its journal (`_drift_changes`, with when the journal's
    newest record was made), once an edit cut short is finished — looked for only when the two
    differ: an edit cut short always leaves them apart."""
    drifted, newest = _drift_changes(vault, hot)
    if drifted:
        done = _finish(vault, hot, project)
        if done is not hot:
            return done, *_drift_changes(vault, done)
    return hot, drifted, newest


def _unnote(vault: Vault) -> None:
    """Forget the hot files' state the index noted (`follow`), before an edit is journalled: cut
    short before its rename, the edit leaves the file as it was noted, and the next read must
    still look at it to finish the edit (`_finish`)."""
    from optmem.index import open_index

    with open_index(vault) as idx:
        idx.note_hot("")


def _finish(vault: Vault, hot: HotFile, project: str | None) -> HotFile:
    """The file with optmem's last edit of it finished, when that edit was journalled and the
    process stopped before the new file was renamed into place (lock held): the file is exactly as
    the edit found it — the same content, its inode, size and times untouched since — so what the
    journal says was added or removed is no one's edit but that cut-short one's. The edit is
    replayed from its journal records and written only if it gives the file the journal names;
    else (a person's undo writes the file anew, a copy put back has a new change time) the file
    is left as it is. A file's first write starts from an empty file (`fsio.create_empty`), so it
    is finished as any other; a file missing now is never written back: one deleted since cannot be
    told from one never written."""
    from optmem.index import open_index

    with open_index(vault) as idx:
        rows = idx.journal(hot.name)
        cut = idx.record(rows[-1]).extra.get(CUT) if rows else None
        stamp = _stamp(hot.path)
        if (
            not isinstance(cut, dict)
            or stamp is None
            or cut.get("stamp") != stamp
            or cut.get("was") != entry_id(hot.render())
        ):
            return hot
        batch: list[Record] = []
        for row in reversed(rows):  # the last edit: its records carry the same `cut`
            rec = idx.record(row)
            if rec.extra.get(CUT) != cut:
                break
            batch.insert(0, rec)
    entries: list[str] = list(hot.entries)
    for rec in batch:
        op, entry = rec.extra.get("op"), rec.extra.get("entry")
        at = next((i for i, e in enumerate(entries) if entry_id(e) == entry), None)
        if op == "add":
            entries.append(rec.text)
        elif op == "remove" and at is not None and not rec.extra.get("replaced_by"):
            del entries[at]
        elif op == "replace":  # the entry it replaces keeps its place (named by its removal's record: its
            # `old` text is a placeholder when it held a secret, `log._secretless`)
            gone = {r.extra.get("entry") for r in batch if r.extra.get("replaced_by") == entry}
            old = next((i for i, e in enumerate(entries) if e == rec.extra.get("old") or entry_id(e) in gone), None)
            if old is None:
                return hot
            entries[old] = rec.text
    done = hot.replace(entries=entries)
    text = done.render()
    if entry_id(text) != cut.get("now"):
        return hot
    try:
        with fsio.staged(hot.path, text.encode("utf-8"), within=vault.root, expect=hot.read):
            pass
    except FileChanged:
        return hot  # (written meanwhile: no longer as the edit found it — its readers look again)
    return done.replace(read=text.encode("utf-8"))


def _drift_changes(vault: Vault, hot: HotFile) -> tuple[list[Change], float | None]:
    """The journal operations that would make the log's view of a hot file the file's, and when
    the journal's newest record was made (`Drift.newest`: a journal record is stamped after it)."""
    if hot.conflicted:
        return [], None
    d = drift(vault, hot)
    changes = [Change("add", "added", Entry(e, d.texts[e])) for e in (*d.unjournalled, *d.resurfaced)]
    changes += [Change("remove", "removed", Entry(e, d.texts[e])) for e in d.missing]
    if changes and gitstate.unmerged(hot.path):
        # a merge git could not finish left one side's file (a merge driver that could not run):
        # the other side's entries are missing from it, not removed — nothing is journalled
        return [], d.newest
    return changes, d.newest


def _journal(
    vault: Vault,
    hot: HotFile,
    project: str | None,
    changes: list[Change],
    *,
    domain: str | None,
    source: str | None,
    said_at: str | None = None,
    extra: dict[str, Any] | None = None,
    unscanned: bool = False,
    origin: str | None = None,
    newest: float | None = None,
) -> list[str]:
    """Journal `changes` (`log.journal_hot`). `newest`: when the file's newest journal record was
    made, as the caller read it under the lock (`Drift.newest`); None: read again there."""
    from optmem import log  # the journal goes through the log's single append path

    if not changes:
        return []
    if source == "drift":
        _overwritten(vault, hot, changes)
    if any(c.may_update for c in changes):
        changes = _noting_updates(vault, hot.name, changes)
    return log.journal_hot(
        vault,
        hot.name,
        project,
        changes,
        domain=domain,
        source=source,
        said_at=said_at,
        extra=extra,
        unscanned=unscanned,
        origin=origin,
        newest=newest,
    )


def _noting_updates(vault: Vault, file: str, changes: list[Change]) -> list[Change]:
    """The changes, each add that may be a new value of another entry given that entry's last
    journal record (`Change.updates`), which its own journal record names as `may_update`."""
    from optmem.index import open_index

    out = []
    with open_index(vault) as idx:
        for c in changes:
            if c.may_update is not None:
                last = idx.rows("r.key = ? ORDER BY r.n DESC LIMIT 1", (f"hot:{file}:{c.may_update.id}",))
                c = c._replace(updates=last[0].id) if last else c
            out.append(c)
    return out


EDITED = 0.5  # similarity from which an entry removed beside one added reads as that entry edited


def _overwritten(vault: Vault, hot: HotFile, drifted: list[Change]) -> None:
    """Tell (`optmem.lost`) when an outside edit removed entries optmem added — perhaps an older
    copy saved over them (which cannot be told from a person deleting them, so it is said as a
    possibility): the entries removed are the newest optmem added (it wrote the file: its journal
    record carries `CUT`), none still in the file was added after them. A person who deletes an
    older entry, or one another program added, is not told."""
    removed = {c.entry.id: c.entry.text for c in drifted if c.op == "remove" and c.entry is not None}
    if not removed:
        return
    from optmem import lost
    from optmem.index import open_index

    added: dict[str, int] = {}  # entry -> where optmem's latest add of it stands in the journal
    with open_index(vault) as idx:
        for pos, row in enumerate(idx.journal(hot.name)):
            extra = idx.record(row).extra
            if extra.get("op") in ("add", "replace") and isinstance(extra.get(CUT), dict):
                added[str(extra.get("entry"))] = pos
    from optmem.compare import looks_like_update, similarity

    # what the outside copy still held: the entries in the file, and those it edited (removed, with
    # one like it, or a new value of it, added — "prefers tabs" saved as "prefers spaces")
    new = [c.entry.text for c in drifted if c.op == "add" and c.entry is not None]
    edited = {
        e
        for e, text in removed.items()
        if any(similarity(text, n, least=EDITED) >= EDITED or looks_like_update(text, n) for n in new)
    }
    held = [entry_id(text) for text in hot.entries] + sorted(edited)
    newest_kept = max((added[e] for e in held if e in added), default=-1)
    gone = sorted(
        (added[e], e, text) for e, text in removed.items() if e not in edited and added.get(e, -1) > newest_kept
    )
    if gone:
        lost.overwritten(vault, hot.name, [(e, text) for _, e, text in gone])


# -- operations on an in-memory file --------------------------------------------------------
NO_OPS = ("duplicate", "unchanged")  # an add of an entry already there, a replace by the same text


class Change(Value):
    """One applied operation: what happened, and the journal facts for the log."""

    op: str  # add | replace | remove
    status: str  # added | duplicate | replaced | unchanged | removed
    entry: Entry | None = None  # the new (add/replace) or removed entry
    old: Entry | None = None  # the replaced entry
    may_update: Entry | None = None  # an added entry: the entry it may be a new value of (the gate's guess)
    updates: str | None = None  # that entry's journal record, the added one's `may_update` (`_journal`)


def _check_text(text: str | None, what: str) -> str:
    if text is None or not text.strip():
        if what == "OLD":
            raise UsageError("OLD is empty; give a part of the entry to remove or replace (`optmem show` lists them)")
        raise UsageError(f"{what} is empty; give the entry's text (to delete an entry, use `optmem remove`)")
    if _SEPARATOR_LINE.search(text):
        raise SeparatorInText(
            f"{what} contains a line that is only '§', which would split the entry; remove that line",
        )
    return text.strip()


def _match(hot: HotFile, old: str | None, entry: str | None, first: bool) -> int:
    """Index of the entry to edit: by id, else the unique entry containing `old`."""
    if entry:
        want = entry.strip().lower()
        if len(want) < MIN_ID_PREFIX:  # one or two characters name an entry by accident
            raise UsageError(
                f"--id {quote(entry)} is too short: give at least {MIN_ID_PREFIX} characters of the "
                "id `optmem show --ids` prints"
            )
        hits = sorted({i for i, e in enumerate(hot.entries) if entry_id(e).startswith(want)})
        if not hits:
            raise NoMatch(f"no entry in {hot.name} has id {quote(entry)}", entries=hot.listing(), usage=_usage(hot))
        if len({entry_id(hot.entries[i]) for i in hits}) > 1:
            raise Ambiguous(
                f"id {quote(entry)} matches several entries in {hot.name}; give more of it",
                candidates=[_preview(hot, i) for i in hits],
            )
        return hits[0]
    old = old or ""
    core = _check_text(old, "OLD")  # (whitespace alone is no OLD)
    whole = [i for i, e in enumerate(hot.entries) if _canonical(e) == _canonical(core)]
    if whole:
        return whole[0]
    old = _typed(old)
    hits = [i for i, e in enumerate(hot.entries) if _holds(e, old)]
    if not hits:
        raise NoMatch(
            f"no entry in {hot.name} contains {quote(old)}; every entry is listed — pick a substring "
            "of one of them, or use --id",
            entries=hot.listing(),
            usage=_usage(hot),
        )
    if len(hits) > 1 and not first:
        raise Ambiguous(
            f"{quote(old)} is in {len(hits)} entries of {hot.name}; use a longer, unique substring, "
            "--id ID, or --first to edit the first match",
            candidates=[_preview(hot, i) for i in hits],
        )
    return hits[0]


def _canonical(text: str) -> str:
    """The text in Unicode's composed form (NFC): "é" typed as e + a combining accent is "é"."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def _typed(old: str) -> str:
    """OLD as typed, without the line end a pipe adds (`echo … | optmem replace - NEW`); its
    spaces stay — they say where it stands (`_find`)."""
    return old.strip("\r\n") or old


def _holds(entry: str, old: str) -> bool:
    """Whether `entry` contains `old`, whichever Unicode form either was typed in (`_find`)."""
    return _find(entry, old) is not None


def _find(entry: str, old: str) -> tuple[str, int, int] | None:
    """Where `entry` holds `old`: (the entry, or its composed form when the two were typed in
    different Unicode forms; the start and end of the span to replace), or None.

    The space around OLD says where it stands: "entry 1 " is in "entry 1 first", not in "entry
    10" — a space (any whitespace) before or after it matches whitespace in the entry, or the
    entry's start or end (an entry holds no space there). The span replaced is OLD without that
    space: the entry's own spacing stays."""
    core = old.strip()
    before, after = core != old.rstrip(), core != old.lstrip()
    for text, part in ((entry, core), (_canonical(entry), _canonical(core))):
        start = text.find(part)
        while start >= 0:
            end = start + len(part)
            if (not before or start == 0 or text[start - 1].isspace()) and (
                not after or end == len(text) or text[end].isspace()
            ):
                return text, start, end
            start = text.find(part, start + 1)
    return None


def _preview(hot: HotFile, i: int) -> dict[str, str]:
    e = hot.entries[i]
    return {"id": entry_id(e), "preview": e if len(e) <= 80 else e[:77] + "..."}


def _usage(hot: HotFile) -> dict[str, int]:
    u = hot.usage()
    return {"chars": u.chars, "limit": u.limit, "percent": u.percent}


def _do_add(hot: HotFile, text: str | None, force: bool, threshold: float, allow_unsafe: bool) -> Change:
    text = _check_text(text, "TEXT")
    if text in hot.entries:
        return Change("add", "duplicate", Entry(entry_id(text), text))
    _check_hot(text, allow_unsafe=allow_unsafe)
    if not force:
        from optmem.compare import similarity  # (an add's check alone: not loaded to read a file)

        for e in hot.entries:
            if similarity(text, e, least=threshold) >= threshold:
                raise NearDuplicate(
                    f"a very similar entry is already in {hot.name}: {e!r}; update it with "
                    "`optmem replace` (or add anyway with --force)",
                    similar={"id": entry_id(e), "text": e},
                )
    from optmem.gate import is_update  # the write gate's guess, as `append` makes it

    # the newest entry it may be a new value of ("standup is at 9:30" → "… at 10:00 now"): kept
    # beside it — the file is the user's — and said, as `append` says it
    older = next((e for e in reversed(hot.entries) if is_update(e, text)), None)
    hot.entries.append(text)
    return Change(
        "add", "added", Entry(entry_id(text), text), may_update=Entry(entry_id(older), older) if older else None
    )


def _do_replace(
    hot: HotFile,
    old: str | None,
    new: str | None,
    entry: str | None,
    first: bool,
    allow_unsafe: bool,
    *,
    whole: bool = False,
) -> Change:
    new = _check_text(new, "NEW")
    i = _match(hot, old, entry, first)
    before = hot.entries[i]
    if entry or whole:
        after = new  # by id (or given as a whole entry) the whole entry is replaced
    elif _canonical(before) == _canonical((old or "").strip()):
        after = new
    else:  # only the matched span changes (in different Unicode forms, the edited entry is composed)
        found = _find(before, _typed(old or ""))
        assert found is not None  # (`_match` chose the entry for holding it)
        text, start, end = found
        after = text[:start] + new + text[end:]
    after = _check_text(after, "the replaced entry")
    if after == before:  # nothing to change: nothing is written or journalled
        return Change("replace", "unchanged", Entry(entry_id(after), after))
    if after in hot.entries:  # two entries would merge into one: say so rather than drop one
        other = entry_id(after)
        raise NearDuplicate(
            f"after the edit, entry [{entry_id(before)}] would read {after!r}, which {hot.name} already "
            f"holds as entry [{other}]; nothing was written — to drop [{entry_id(before)}], run "
            f"`optmem remove --id {entry_id(before)}`, or choose another NEW",
            similar={"id": other, "text": after},
        )
    _check_hot(after, allow_unsafe=allow_unsafe)
    hot.entries[i] = after
    return Change("replace", "replaced", Entry(entry_id(after), after), Entry(entry_id(before), before))


def _do_remove(hot: HotFile, old: str | None, entry: str | None, first: bool) -> Change:
    i = _match(hot, old, entry, first)
    removed = hot.entries.pop(i)
    return Change("remove", "removed", Entry(entry_id(removed), removed))


# -- public API ------------------------------------------------------------------------------
class Result(Value):
    """The outcome of add / replace / remove / apply on one file."""

    status: str
    file: str
    target: str
    usage: Usage
    changes: list[dict[str, Any]]
    journal: list[str]
    warning: str | None = None
    entry: Entry | None = None
    possible_update: list[dict[str, str]] = []  # entries an added one may be a new value of (shared: never mutated)


OP_FIELDS = frozenset(
    ("op", "action", "text", "content", "old", "old_text", "new", "new_text", "id", "force", "first", "target")
)


def _check_hot(text: str, *, allow_unsafe: bool) -> None:
    from optmem.quarantine import check_hot

    check_hot(text, allow_unsafe=allow_unsafe)


def _check_ops(ops: list[Any], target: str, allow_unsafe: bool = False, batch: bool = False) -> None:
    """Refuse a malformed batch before the vault is touched: each operation an object of known
    fields holding strings, for this batch's file, of a known op with its text given (`batch`:
    the caller's own list, whose every error names its operation, a list of one too)."""
    for n, op in enumerate(ops, 1):
        if not isinstance(op, dict):
            raise UsageError(f"operation {n} is not an object: {quote(op)}")
        if op.get("target") not in (None, target):  # Hermes names the file in each call
            raise UsageError(
                f"operation {n} is for target {quote(op['target'])}, the batch for {quote(target)}: "
                "one batch edits one file (give --target)",
                operation=n,
            )
        unknown = sorted(set(op) - OP_FIELDS)
        if unknown:  # a misspelt field must not read as a missing one ("txt" → "TEXT is empty")
            raise UsageError(
                f"operation {n}: unknown field(s) {', '.join(map(repr, unknown))}; an "
                f"operation has {', '.join(sorted(OP_FIELDS))}",
                fields=unknown,
            )
        for name in ("op", "action", "text", "content", "old", "old_text", "new", "new_text", "id"):
            if op.get(name) is not None and not isinstance(op[name], str):
                raise UsageError(f"operation {n}: {quote(name)} must be a string, not {type(op[name]).__name__}")
            try:
                (op.get(name) or "").encode("utf-8")
            except UnicodeEncodeError as exc:
                raise UsageError(
                    f"operation {n}: {quote(name)} holds a lone surrogate (character {exc.start}), "
                    "which no UTF-8 text can carry; nothing was written"
                ) from None
        for name in ("force", "first"):
            if op.get(name) is not None and not isinstance(op[name], bool):
                raise UsageError(f"operation {n}: {quote(name)} must be true or false, not {quote(op[name])}")
        for pair in (
            ("op", "action"),
            ("text", "content"),
            ("old", "old_text"),
            ("new", "new_text"),
            ("new", "content"),
        ):
            if all(op.get(name) is not None for name in pair):  # two spellings of one field: which is meant?
                raise UsageError(
                    f"operation {n} gives both {quote(pair[0])} and {quote(pair[1])}, two spellings of one field; "
                    "keep one (nothing was written)",
                    operation=n,
                    fields=list(pair),
                )
        kind = op.get("op") or op.get("action")
        if kind not in ("add", "replace", "remove"):
            raise UsageError(f"operation {n}: op must be add, replace or remove, not {quote(kind)}")
        # a field of another op's where this op's is missing: named, not read as an empty text
        given = {name for name in op if op.get(name) is not None}
        if kind == "replace" and not given & {"new", "new_text", "content"} and given & {"text"}:
            raise UsageError(
                f'operation {n} (replace): a replace takes its new text as "new" (or "content", the whole '
                'entry), not "text", which is an add\'s — rename the field; nothing was written',
                operation=n,
            )
        if kind == "add" and not given & {"text", "content"} and given & {"new", "new_text"}:
            raise UsageError(
                f'operation {n} (add): an add takes its text as "text" (or "content"), not "new", which is a '
                "replace's — rename the field; nothing was written",
                operation=n,
            )
        try:
            text = None
            if kind == "add":
                text = _check_text(op.get("text") or op.get("content"), "TEXT")
            elif kind == "replace":
                text = _check_text(op.get("new") or op.get("new_text") or op.get("content"), "NEW")
            if text is not None:
                _check_hot(text, allow_unsafe=allow_unsafe)
        except OptmemError as exc:
            if len(ops) > 1 or batch:
                exc.message = f"operation {n} ({kind}): {exc.message}"
                exc.context["operation"] = n
            raise


def _edit(
    hot: HotFile, ops: list[dict[str, Any]], threshold: float, allow_unsafe: bool, batch: bool = False
) -> list[Change]:
    """Apply the operations (checked by `_check_ops`) to `hot` in memory — nothing is written —
    and check the limit on the final state; an error lists the file as it was."""
    before = HotFile(hot.label, hot.name, hot.path, hot.limit, list(hot.entries))
    changes: list[Change] = []
    for n, op in enumerate(ops, 1):
        kind = op.get("op") or op.get("action")
        try:
            if kind == "add":
                changes.append(
                    _do_add(hot, op.get("text") or op.get("content"), bool(op.get("force")), threshold, allow_unsafe)
                )
            elif kind == "replace":
                new = op.get("new") or op.get("new_text")
                whole = new is None and op.get("content") is not None  # Hermes: the entry becomes content
                changes.append(
                    _do_replace(
                        hot,
                        op.get("old") or op.get("old_text"),
                        op.get("content") if whole else new,
                        op.get("id"),
                        bool(op.get("first")),
                        allow_unsafe,
                        whole=whole,
                    )
                )
            else:  # remove (`_check_ops` let only the three through)
                changes.append(
                    _do_remove(hot, op.get("old") or op.get("old_text"), op.get("id"), bool(op.get("first")))
                )
        except OptmemError as exc:
            wanted = op.get("old") or op.get("old_text")
            held = [*before.entries, *(c.entry.text for c in changes if c.entry is not None)]
            if isinstance(exc, NoMatch) and n > 1 and wanted and any(_holds(e, wanted) for e in held):
                # the file as it is (listed), or an entry the batch wrote, holds it: an earlier
                # operation of this batch took it
                exc.message = (
                    f"no entry in {hot.name} contains {quote(wanted)} once the batch's earlier operations "
                    "are applied: one of them replaced or removed it (the file as it is is listed); "
                    "nothing was written"
                )
            if (len(ops) > 1 or batch) and not exc.message.startswith("operation"):
                exc.message = f"operation {n} ({kind or '?'}): {exc.message}"
                exc.context["operation"] = n
            if "entries" in exc.context:  # the file as it is — nothing of the batch was written
                exc.context["entries"] = before.listing()
            if "usage" in exc.context:
                exc.context["usage"] = _usage(before)
            raise
    usage = hot.usage()
    # over the limit is refused — unless the file was already over (typed by hand, a lower limit
    # set since) and this change does not make it bigger: shrinking it one edit at a time must
    # always be possible (a remove; a replace by text no longer)
    if usage.chars > max(before.usage().chars, hot.limit):
        alone = max((len(c.entry.text) for c in changes if c.entry and c.status not in NO_OPS), default=0)
        advice = (
            f"an entry of {alone:,} characters cannot fit in {hot.limit:,}: shorten it, or keep "
            "it in the log with `optmem append`"
            if alone > hot.limit
            else "consolidate entries (replace/remove) first, every entry is listed"
        )
        raise OverLimit(
            f"{hot.name} would hold {usage.chars:,} of {hot.limit:,} characters; nothing was written — {advice}",
            usage=_usage(before),
            would_be={"chars": usage.chars, "limit": hot.limit},
            entries=before.listing(),
        )
    return changes


def apply(
    vault: Vault,
    ops: list[dict[str, Any]],
    *,
    target: str = "memory",
    project: str | None = None,
    domain: str | None = None,
    source: str | None = None,
    allow_unsafe: bool = False,
    origin: str | None = None,
    said_at: str | None = None,
    vouched_by: str | None = None,
    batch: bool = False,
) -> Result:
    """Apply operations to one hot file all-or-nothing, under the vault lock. `origin`: where the
    text came from (`optmem.quarantine`: a tool's output becomes hot memory only by a person),
    which every journal record of the edit carries; `vouched_by`: the person who puts another
    store's text there (`user`: a person's `import --from hermes`) — the text keeps its origin,
    the journal records say who vouched for it (`vouched_by`);
    `said_at`: when the edit was asked for, kept in its journal records (a write that waited);
    `batch`: `ops` is the caller's own list (`optmem apply`): an error names its operation, in a
    list of one too (tester 14 #14).

    Each op is {"op": "add", "text"} | {"op": "replace", "old"|"id", "new"} |
    {"op": "remove", "old"|"id"}, with optional "force" / "first". The limit is checked on the
    final state only, so one batch can free room and add. Nothing is written if any op fails.
    """
    from optmem.index import prepare

    if not ops:
        raise UsageError('no operations given; pass a JSON list like [{"op": "add", "text": "…"}]')
    if origin is not None:
        from optmem.quarantine import check_origin, refuse_promotion

        refuse_promotion("hot memory", check_origin(origin), vouched_by or origin, "optmem add …")
    _check_ops(ops, target, allow_unsafe, batch)  # before anything is read or made: a malformed batch touches nothing
    threshold = vault.settings.dedup.threshold
    _, _, path, _ = _resolve(vault, target, project)
    if not vault.exists():  # the file is known to be empty: a batch that fails on it makes no vault
        _edit(load(vault, target, project), ops, threshold, allow_unsafe, batch)
    prepare(vault)  # a rebuild, if one is due, happens before the lock is taken
    with vault.lock(), _file_lock(vault, path):
        journal: list[str] = []
        for _ in _tries(vault):  # (again while another program changes the file before the journal)
            hot = _writable(vault, target, project)
            hot, drifted, newest = _followed(vault, hot, project)  # (journalled only if every operation succeeds)
            was = entry_id(hot.render())
            changes = _edit(hot, ops, threshold, allow_unsafe, batch)
            real = [c for c in changes if c.status not in NO_OPS]
            if real:
                hot.check_round_trip()
            if _journal(vault, hot, project, drifted, domain=domain, source="drift", newest=newest):
                newest = None  # (the journal has newer records now: read again)
            if not real:
                break
            # the log is the truth: journal first — with the file as it was and as it will be, so
            # that an edit cut short before the rename is finished by the next command (`_finish`);
            # a file's first write starts from an empty file made now, which such a crash leaves as
            # the edit found it (a missing file cannot be told from one a person deleted)
            made = fsio.create_empty(hot.path, within=vault.root) if hot.read is None else None
            if made is not None:
                hot.read = b""
            _unnote(vault)
            text = hot.render()
            cut = {CUT: {"was": was, "stamp": _stamp(hot.path), "now": entry_id(text)}}
            vouched = {"vouched_by": vouched_by} if vouched_by else {}
            try:
                with _journalled_write(hot, text, vault.root, journal):
                    journal += _journal(
                        vault,
                        hot,
                        project,
                        real,
                        domain=domain,
                        source=source,
                        said_at=said_at,
                        extra=cut | vouched,
                        origin=origin,
                        newest=newest,
                    )
            except FileChanged:
                if not journal:
                    continue  # changed before the journal: the edit is made again on the file as it is now
                # changed after it: the edit journalled is put into the file as the other program left it
                again = [{**op, "force": True} if (op.get("op") or op.get("action")) == "add" else op for op in ops]
                redo = partial(_edit, ops=again, threshold=threshold, allow_unsafe=allow_unsafe)
                hot = _rewrite(vault, target, project, journal, redo)
            except BaseException:
                if made is not None and not journal:  # (refused before its journal: nothing of it is left)
                    fsio.remove_empty(hot.path, made)
                raise
            break
        else:
            raise FileChanged(
                f"{hot.name} kept changing while optmem edited it (for {vault.settings.lock.timeout:g}s: another "
                f"program writes it without taking {hot.name}.lock); nothing was written — what that program "
                "wrote is kept; try again (a program that takes the lock, as Hermes Agent does, is waited for instead)",
                file=hot.name,
            )
        usage = hot.usage()
    status = (
        changes[0].status
        if len(changes) == 1
        else "applied"
        if real
        else "duplicate"
        if all(c.status == "duplicate" for c in changes)
        else "unchanged"
    )
    warn = "; ".join(w for w in (hot.bad_limit, _update_warning(hot, changes)) if w) or None
    if usage.percent >= vault.settings.limits.warn_percent:
        full = f"{hot.name} is {usage.percent}% full ({usage.chars:,}/{hot.limit:,} chars); consolidate soon"
        warn = f"{warn}; {full}" if warn else full
    return Result(
        status=status,
        file=hot.name,
        target=hot.label,
        usage=usage,
        changes=[_change_dict(c) for c in changes],
        journal=journal,
        warning=warn,
        entry=changes[0].entry if len(changes) == 1 else None,
        possible_update=[
            {"id": c.may_update.id, "text": c.may_update.text}
            for c in changes
            if c.may_update is not None and c.may_update.text in hot.entries
        ],
    )


class Put(NamedTuple):
    """What `put_entries` did: the entries added, the ones that did not fit, the file's usage after."""

    added: list[str]
    over: list[str]
    usage: Usage


def put_entries(
    vault: Vault, target: str, project: str | None, texts: list[str], *, front: str = "", source: str | None = None
) -> Put:
    """Entries an import brings, put into a hot file as `add` puts them (under the vault lock and
    the file's lock): the ones it does not hold, in order, at its end, while the file's limit
    holds — the rest are returned as `over`, not written; an empty file takes `front` too (its
    `limit:` never raises the vault's). Each entry added is journalled (`source`), unless the
    journal holds it already (an export's own journal records came in with its log)."""
    _, _, path, _ = _resolve(vault, target, project)
    with vault.lock(), _file_lock(vault, path):
        for _ in _tries(vault):  # (again while another program changes the file before the journal)
            hot = load(vault, target, project)
            if hot.conflicted:
                raise MergeConflict(
                    f"{hot.name} still holds git's conflict markers (<<<<<<< … >>>>>>>); resolve the merge by "
                    "hand, then import again (what was imported already is left as it is); its entries were not put",
                    file=hot.name,
                )
            held = set(hot.entries)
            new = [t for t in dict.fromkeys(texts) if t not in held]
            if not new:
                return Put([], [], hot.usage())
            if not hot.entries and not hot.front:
                hot.front = front
                hot.limit = min(hot.limit, _limit_of(front, hot.limit, hot.name)[0])
            added, over = [], []
            for text in new:
                if size_of([*hot.entries, text]) <= hot.limit:
                    hot.entries.append(text)
                    added.append(text)
                else:
                    over.append(text)
            if not added:
                return Put([], over, hot.usage())
            hot.check_round_trip()
            journal, newest = _read_journal(vault, hot.name)
            changes = [
                Change("add", "added", Entry(e, t))
                for t in added
                if journal.get(e := entry_id(t), ("remove", ""))[0] == "remove"
            ]
            done: list[str] = []
            try:
                with _journalled_write(hot, hot.render(), vault.root, done):  # the log first, as `apply`
                    done += _journal(vault, hot, project, changes, domain=None, source=source, newest=newest)
            except FileChanged:
                if not done:
                    continue
                hot = _rewrite(
                    vault,
                    target,
                    project,
                    done,
                    partial(_add_missing, texts=added),
                )
            return Put(added, over, hot.usage())
    raise FileChanged(
        f"{hot.name} kept changing while optmem imported into it (for {vault.settings.lock.timeout:g}s: "
        f"another program writes it without taking {hot.name}.lock); nothing was put in it — what that "
        "program wrote is kept; import again",
        file=hot.name,
    )


def _add_missing(hot: HotFile, texts: list[str]) -> None:
    """The texts `hot` does not hold, added at its end (an import's entries, made again: `_rewrite`)."""
    hot.entries.extend(t for t in texts if t not in hot.entries)


TRIES = 5  # the fewest times an edit is made on a hot file another program keeps changing, before it gives up


def _tries(vault: Vault) -> Iterator[int]:
    """The attempts at an edit of a hot file another program may change meanwhile without its lock:
    at least `TRIES`, and more while the vault's lock timeout (`[lock] timeout`) has not passed
    since the first — a pause between two, growing, as a lock is waited for. A program that stops
    writing lets the edit through; one that never does has it refused (`FileChanged`)."""
    import time

    deadline = time.monotonic() + vault.settings.lock.timeout
    n, delay = 0, 0.002
    while n < TRIES or time.monotonic() < deadline:
        if n:
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        yield n
        n += 1


def _writable(vault: Vault, target: str, project: str | None) -> HotFile:
    """A hot file read for an edit: refused while it holds git's conflict markers."""
    hot = load(vault, target, project)
    if hot.conflicted:
        raise MergeConflict(
            f"{hot.name} still holds git's conflict markers (<<<<<<< … >>>>>>>); resolve the merge "
            "(`optmem sync` merges it entry by entry while git holds it unmerged; "
            f"by hand: {BY_HAND}), or install the merge "
            "driver (`optmem init` in the clone, or `optmem hooks install`) so it does not happen again; "
            "nothing was written",
            file=hot.name,
        )
    return hot


def _rewrite(
    vault: Vault, target: str, project: str | None, journal: list[str], edit: Callable[[HotFile], object]
) -> HotFile:
    """An edit journalled (`journal`: its records) whose file another program wrote between the
    journal and the rename, without the file's lock: made again (`edit`, in memory) on the file as
    that program left it, and written — what both wrote is in the file. Should the edit no longer
    apply there (what it edits is gone, the file is full or mid-merge), the file is left as that
    program wrote it and the error says so: the next command that reads hot memory journals the
    difference (the edit's text stays in the log) — nothing either wrote is lost."""
    for _ in _tries(vault):
        hot = load(vault, target, project)
        try:
            if hot.conflicted:
                raise MergeConflict(f"{hot.name} now holds git's conflict markers")
            edit(hot)
            hot.check_round_trip()
        except OptmemError as exc:
            raise FileChanged(
                f"another program wrote {hot.name} (without taking {hot.name}.lock) while this edit was written, "
                f"and the edit no longer applies to what it wrote ({exc.message}); its file is left as that "
                "program wrote it — the edit is journalled, and the next command that reads hot memory "
                "journals it as removed outside optmem (its text stays in the log): make it again",
                file=hot.name,
                journal=list(journal),
            ) from exc
        try:
            with _journalled_write(hot, hot.render(), vault.root, journal):
                pass
        except FileChanged:
            continue
        return hot
    raise FileChanged(
        f"{hot.name} kept changing while this edit was written (another program writes it without taking "
        f"{hot.name}.lock); the file is left as that program wrote it — the edit is journalled, and the next "
        "command that reads hot memory journals it as removed outside optmem (its text stays in the log): "
        "make it again",
        file=hot.name,
        journal=list(journal),
    )


@contextmanager
def _journalled_write(hot: HotFile, text: str, root: Path, journal: list[str]) -> Iterator[None]:
    """Write `text` as the hot file's new content, journalled by the block first (`journal`: the
    ids it journals): the file is written beside the old one before the block runs, so a file
    that cannot be written (read-only, a read-only folder, a full disk) is refused with nothing
    journalled — an edit refused is never finished later. After the journal only the rename is
    left; should it fail, the edit is journalled and not in the file, as after a crash at that
    point: the next command that reads hot memory finishes it (`_finish`), and the error says so.

    The file is replaced only while it holds what `hot` was read from (`fsio.staged`'s `expect`):
    another program that wrote it meanwhile without its lock (a person's editor, a script) raises
    `FileChanged` — before the block, nothing journalled (the caller edits the file again as it is
    now); after it, the caller makes the journalled edit again on that program's file (`_rewrite`)."""
    try:
        with fsio.staged(hot.path, text.encode("utf-8"), within=root, expect=hot.read):
            yield
    except Unwritable as exc:
        if not journal:
            raise
        why = fsio.why_unwritable(exc.__cause__) if isinstance(exc.__cause__, OSError) else exc.message
        raise Unwritable(
            f"the edit of {hot.name} is journalled, but the file could not be put in place ({why}): the next "
            "command that reads hot memory finishes it — fix the cause, then run `optmem show`",
            file=hot.name,
            journal=list(journal),
        ) from exc


def _file_lock(vault: Vault, path: Path) -> AbstractContextManager[None]:
    """Hermes Agent holds `<file>.lock` while it rewrites a memory file: so do we, inside the vault
    lock. A file whose folder does not exist yet (a new project) has no one else editing it, and
    taking its lock would make the folder: only a write that succeeds creates a project's folder."""
    if not path.parent.is_dir():
        return nullcontext()
    return fsio.exclusive_lock(
        path.with_name(path.name + ".lock"),
        vault.settings.lock.timeout,
        within=vault.root,
        what=f"the hot-memory file {path.name}",
    )


def settle(
    vault: Vault, target: str, project: str | None, entry: str, resolves: list[str], *, source: str | None
) -> str | None:
    """Journal that the entry `entry`, which the file holds, stays — settling the journal records
    `resolves` (a removal made on another clone while this entry's edit was made here): an `add`
    of it that names them (`facts.hot_forks` reads it); the file is unchanged. The journal
    record's id; None when the file no longer holds the entry."""
    from optmem import log
    from optmem.index import prepare

    _, _, path, _ = _resolve(vault, target, project)
    prepare(vault)
    with vault.lock(), _file_lock(vault, path):
        hot = load(vault, target, project)
        text = next((e for e in hot.entries if entry_id(e) == entry), None)
        if text is None:
            return None
        # (the entry came through a merge, unscanned here: a flagged one is journalled held, a secret
        # as its placeholder — `log.journal_hot`)
        kept = [Change("add", "added", Entry(entry, text))]
        return log.journal_hot(
            vault, hot.name, project, kept, source=source, extra={"resolves": resolves}, unscanned=True
        )[0]


def _change_dict(c: Change) -> dict[str, Any]:
    out: dict[str, Any] = {"op": c.op, "status": c.status}
    if c.entry:
        out["entry"] = {"id": c.entry.id, "text": c.entry.text}
    if c.old:
        out["old"] = {"id": c.old.id, "text": c.old.text}
    if c.may_update:
        out["may_update"] = {"id": c.may_update.id, "text": c.may_update.text}
    return out


def _update_warning(hot: HotFile, changes: list[Change]) -> str | None:
    """What `add` says of an entry it added that may be a new value of another (kept beside it)."""
    said = []
    for c in changes:
        if c.may_update is None or c.entry is None or c.may_update.text not in hot.entries:
            continue
        old = c.may_update
        said.append(
            f"[{c.entry.id}] may be a new value of [{old.id}] (“{old.text[:60]}”), kept beside it; if so, "
            f"`optmem remove --id {old.id}` drops the older (it stays in the log) — `optmem replace` "
            "changes an entry in place"
        )
    return "; ".join(said) or None


def add(vault: Vault, text: str | None, *, force: bool = False, **kw: Any) -> Result:
    return apply(vault, [{"op": "add", "text": text, "force": force}], **kw)


def replace(
    vault: Vault, old: str | None, new: str | None, *, entry: str | None = None, first: bool = False, **kw: Any
) -> Result:
    return apply(vault, [{"op": "replace", "old": old, "new": new, "id": entry, "first": first}], **kw)


def remove(vault: Vault, old: str | None, *, entry: str | None = None, first: bool = False, **kw: Any) -> Result:
    return apply(vault, [{"op": "remove", "old": old, "id": entry, "first": first}], **kw)


class Shown(Value):
    label: str
    file: str
    usage: Usage
    entries: list[dict[str, Any]]
    conflicted: bool = False
    unreadable: str | None = None  # what is wrong with the file, when it could not be read
    bad_limit: str | None = None  # its `limit:` could not be read (`HotFile.bad_limit`)

    def header(self) -> str:
        name = self.label.upper().replace("PROJECT:", "PROJECT ")
        if self.unreadable:
            return f"{name} [{self.file} {self.unreadable}: not shown]"
        u = self.usage
        merge = " — unresolved git merge: both sides shown, run `optmem doctor`" if self.conflicted else ""
        return f"{name} [{u.percent}% — {u.chars:,}/{u.limit:,} chars{merge}]"

    def warning(self) -> str | None:
        """What a reader says of the file when it could not read it and went on without it, or
        when it is mid-merge (both sides' entries shown, each on its own)."""
        if self.conflicted:
            return (
                f"{self.file} is mid-merge (git's conflict markers): both sides' entries are shown, each "
                "on its own, and they may contradict each other — keep the ones that are right, each two "
                "apart by a line holding only `§`, and delete the marker lines (`optmem doctor` says how); "
                "until then writes to it are refused"
            )
        if not self.unreadable:
            return self.bad_limit
        return (
            f"{self.file} {self.unreadable}: its entries are left out. Fix or remove the file "
            "(`optmem doctor` names the problem); until then writes to it are refused"
        )


_FORKED_HOT = (
    # an entry ended more than once (each `remove` journal record is retired), one of the ends a
    # replacement (a removal corrected by the entry's new text)
    "SELECT r.key FROM rec r WHERE r.key >= 'hot:' AND r.key < 'hot;' AND r.kind = ? AND r.retired != 0 "
    "GROUP BY r.key, r.domain, r.project "
    "HAVING count(DISTINCT r.n) > 1 AND max(EXISTS (SELECT 1 FROM cor c WHERE c.t = r.n)) = 1"
)


def forks(idx: Index) -> list[tuple[list[Row], str, str, str | None]]:
    """Hot-memory entries edited two ways: an entry that `replace` (a journalled edit) turned
    into two entries the file still holds both of — each clone replaced it, git's merge kept both
    edits; or one clone removed it while another replaced it (the merge keeps the edit: nothing
    is lost before someone decides). Read from the journal in the log, so every clone that synced
    sees it, not only the one whose merge met it. The values are the journal records of the
    versions held (and of the removal), with the key `hot:<file>:<entry id of the edited entry>`,
    the file and its project.

    A clone cannot end an entry twice without it being made again in between (once removed or
    replaced, it is not in the file): two ends of one entry with no make between them were made
    on two clones, neither having seen the other's. A removal a resolution settled (`resolves`
    in a later journal record) is no longer in conflict."""
    out: list[tuple[list[Row], str, str, str | None]] = []
    # every read of `conflicts` passes here: only the files holding an entry ended twice are read
    forked = {key[4:].rsplit(":", 1)[0] for (key,) in idx.conn.execute(_FORKED_HOT, (MEMORY,)).fetchall()}
    for where in sorted(filter(None, map(hot_target, forked))):
        target, project = where
        try:
            hot = load(idx.vault, target, project)
        except OptmemError:  # doctor names it
            continue
        held = {entry_id(e) for e in hot.entries}
        successors: dict[str, list[str]] = {}  # an entry → the entries that replaced it
        made: dict[str, Row] = {}  # an entry → the journal record that last put it in the file
        ends: dict[str, list[tuple[Row, str | None]]] = {}  # an entry → its ends since it was last made
        together: list[tuple[str, list[tuple[Row, str | None]]]] = []  # ends of one entry made apart
        settled: set[str] = set()  # journal records a resolution settled
        for row in idx.journal(hot.name):
            rec = idx.record(row)
            step = journal_step(rec)
            if step is None:
                continue
            entry, op, by = step[1], step[2], rec.extra.get("replaced_by")
            resolves = rec.extra.get("resolves")
            if isinstance(resolves, list):
                settled.update(r for r in resolves if isinstance(r, str))
            if op == "remove":
                if isinstance(by, str):
                    successors.setdefault(entry, []).append(by)
                ends.setdefault(entry, []).append((row, by if isinstance(by, str) else None))
            else:
                made[entry] = row
                together.append((entry, ends.pop(entry, [])))
        together += ends.items()
        removed: dict[str, list[Row]] = {}  # an entry → its removals made without seeing its edit
        for entry, group in together:
            plain = [r for r, by in group if by is None and r.id not in settled]
            if plain and any(by is not None for _, by in group):
                removed.setdefault(entry, []).extend(plain)
        for entry, after in successors.items():
            if entry in held:
                continue
            heads = [h for h in dict.fromkeys(_held_head(e, successors, held) for e in after) if h in made]
            gone = removed.get(entry, []) if heads else []
            if len(heads) + len(gone) > 1:
                rows = gone + [made[h] for h in heads]
                key = f"hot:{hot.name}:{entry}"
                out.append((rows, key, hot.name, project))
    return out


def _held_head(entry: str, successors: dict[str, list[str]], held: set[str]) -> str | None:
    """The entry the file holds now that `entry` became, following single edits; None when it
    was removed, or forked again (that fork is a conflict of its own)."""
    seen: set[str] = set()
    while entry not in held:
        after = successors.get(entry, [])
        if len(after) != 1 or entry in seen:
            return None
        seen.add(entry)
        entry = after[0]
    return entry


def hot_rivals(idx: Index, row: Row) -> list[Row]:
    """The journal records of the other versions of a hot entry edited two ways (`forks`: what
    `conflicts`, `context` and `stats` read) that `row` is one of; [] for any other record. Such a
    conflict is keyed on the entry edited, each version on its own key — the index marks it on no
    row —, so `search`, `get`, `history` and `show` ask here: one answer. Read once per state of
    the log and the hot files on one index handle (`Index.memo`)."""
    if row.kind != MEMORY or not (row.key or "").startswith("hot:"):
        return []
    state = (idx.lines(), idx.hot_noted())
    memo = idx.memo.get("hot_rivals")
    if memo is None or memo[0] != state:
        rivals: dict[int, list[Row]] = {}
        for rows, *_ in forks(idx):
            for r in rows:
                rivals.setdefault(r.n, []).extend(o for o in rows if o.n != r.n)
        memo = idx.memo["hot_rivals"] = (state, rivals)
    return list(memo[1].get(row.n, []))


def forked_entries(vault: Vault) -> dict[str, set[str]]:
    """file → the ids of the entries it holds that are versions of one entry edited two ways (on
    two clones, git keeping both: `forks`, what `conflicts` lists) — a vault whose
    index cannot be read marks none."""
    from optmem.index import open_index
    from optmem.stdlib import sqlite3

    out: dict[str, set[str]] = {}
    if not vault.exists():
        return out
    try:
        with open_index(vault) as idx:
            for rows, *_ in forks(idx):
                for row in rows:
                    step = journal_step(idx.record(row))
                    if step is not None and step[2] != "remove":
                        out.setdefault(step[0], set()).add(step[1])
    except (OptmemError, OSError, sqlite3.Error):
        return {}
    return out


def show(vault: Vault, targets: list[tuple[str, str | None]], *, marks: bool = True) -> list[Shown]:
    """The files, ready for a prompt: entries re-scanned, flagged ones shown as [BLOCKED: rule].
    Each file stands on its own: one that cannot be read (invalid UTF-8, an I/O error) is
    returned without entries, with `unreadable` saying why — the others are still shown. (A
    write to it still refuses: `load` raises.) An entry that is one version of an entry edited
    two ways (`forked_entries`) carries `conflict`, as every surface marks it (`marks`: looked
    for — `context` asks about such an entry in a section of its own)."""
    out = []
    forked: dict[str, set[str]] | None = None if marks else {}
    for target, project in targets:
        try:
            hot = load(vault, target, project)
        except Unreadable as exc:
            label, name, _, limit_key = _resolve(vault, target, project)
            out.append(
                Shown(
                    label,
                    name,
                    Usage(0, getattr(vault.settings.limits, limit_key), 0),
                    [],
                    unreadable=exc.context.get("reason") or f"could not be read ({exc.message})",
                )
            )
            continue
        from optmem.safety import scan  # (what is shown is scanned; reading a file's ids is not)

        if forked is None:
            forked = forked_entries(vault)
        entries = []
        for e in hot.entries:
            rule = scan.find(e)
            eid = entry_id(e)
            entries.append(
                {"id": eid, "text": f"[BLOCKED: {rule}]" if rule else e, "blocked": rule}
                | ({"conflict": True} if eid in forked.get(hot.name, ()) else {})
            )
        out.append(Shown(hot.label, hot.name, hot.usage(), entries, hot.conflicted, bad_limit=hot.bad_limit))
    return out
