"""What left the files: ids this clone purged (kept as one-way hashes, so a sync never takes them
back), and what writes outside optmem dropped (told rather than lost silently).

`purge` notes a one-way hash of each id it deletes in `purged` (this clone's own, never committed: no
id as written); a sync drops a purged record that a merge brings back (`purge.drop_again`).

An editor or a script that reads a file, then writes its older copy back over what optmem wrote
meanwhile, drops it: records from LOG.jsonl (the index, rebuilt, finds records it held gone:
`left_the_log`), entries from a hot file (an outside save removes entries optmem added since:
`memory._overwritten`). Each is noted once, by the command that notices it — on stderr and in
its JSON (`vault.lost`) — and kept in `lost.jsonl` (this clone's own, never committed), which
`doctor` reports as `records_gone` / `entries_gone` until what went is back or `doctor --fix`
clears the note. Nothing here restores: a hot entry's text is still in the log (journalled as
removed); a record's text is gone from the log, and git or a backup holds it.

What the log held is remembered in `held` too (`note_held`: the id of each record the index
takes in, bookkeeping lines aside — the index keeps them in its meta as it takes them in, in the
same transaction (`to_hold`), and whatever holds the vault lock — a write, or a read that takes it
to catch the index up — appends them, so a command costs one short append however large the
vault; a rebuild writes it whole, `left_the_log`): an index deleted with `.cache/` takes nothing
with it, and records that leave the log meanwhile are still told when the index is built again.

These files are this clone's own notes (`Vault.own_dir`): in a vault in a git work tree, a folder
of its git directory, where no pull, merge or checkout writes (a crafted commit that tracks
`.clone/purged` cannot replace the purge list); outside git, `.clone/`. Not in `.cache/`: nothing
can rebuild them, and deleting the cache must stay safe. What an older optmem kept in `.cache/`,
or in a git vault's `.clone/`, is still read, and the first command that takes the vault lock
moves it, once (`Vault.take_own_from_cache`, `Vault.move_own_from_clone`); a file git tracks in
`.cache/` or `.clone/` is never this clone's own (a commit carried it: `optmem sync` takes it out
of git).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from optmem import clock, fsio
from optmem.errors import OptmemError
from optmem.stdlib import sqlite3
from optmem.vault import OWN_FILES, Vault, older_own
from optmem.view import short_ids

PURGED, NOTE = OWN_FILES  # own notes (`Vault.own`): a one-way hash of each id this clone purged, one a line; the notes
HELD = "held"  # an own note: the ids of the records the log held when the index last read it, one a line
SHOWN = 5  # ids or entries a message names


def id_hash(rid: str) -> str:
    """The one-way hash `purged` keeps of an id."""
    import hashlib  # (not on a search's path: `note_held` is)

    return hashlib.blake2b(rid.upper().encode("utf-8"), digest_size=16).hexdigest()


def note_purged(vault: Vault, ids: set[str]) -> None:
    """Note the ids a purge deletes (before it deletes anything)."""
    new = sorted({id_hash(i) for i in ids} - purged_hashes(vault))
    if new:
        fsio.append_lines(vault.own(PURGED), [h.encode("ascii") for h in new], within=vault.own_within)


def _kept(vault: Vault, name: str) -> list[Path]:
    """Where `name` is kept: among the own notes (`Vault.own_kept`: the git directory, or
    `.clone/`), and `.cache/` where an older optmem kept it and it was not moved yet (never a file
    git tracks: `vault.older_own`)."""
    older = [vault.cache_dir / name] if name in older_own(vault) else []
    return [*vault.own_kept(name), *(p for p in older if p.is_file())]


def purged_hashes(vault: Vault) -> set[str]:
    """The hashes of the ids this clone purged (empty when it never purged)."""
    out: set[str] = set()
    for path in _kept(vault, PURGED):
        with open(path, "rb") as fh:
            out |= {raw.strip().decode("ascii", "replace") for raw, _ in fsio.lines(fh, 64) if raw.strip()}
    return out


UNHELD = "unheld"  # in the index's meta: ids it took in that `held` does not keep yet, one a line


def to_hold(conn: sqlite3.Connection, ids: list[str]) -> None:
    """The index just took in the records `ids` (`ingest.consume`, any catch-up): kept in its
    meta until a lock holder notes them in `held` (`note_held`). Run inside the transaction that
    stores what the index took in (`ingest.consume`'s `hold`): both are kept, or neither."""
    conn.execute(
        "INSERT INTO meta VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = v || excluded.v",
        (UNHELD, "".join(f"{rid}\n" for rid in ids)),
    )


def note_held(vault: Vault, conn: sqlite3.Connection) -> None:
    """Lock held (`index.catch_up`, `index._caught_up`): keep the ids the index took in since the
    last lock holder noted them (`to_hold`) in `held`, then clear them from the index — cut short
    between the two, the next lock holder appends them again, which reads the same. Only what was read is cleared (ids
    another process's catch-up adds meanwhile are appended to what is waiting, and stay). All the
    index holds when `held` is not there yet (a vault an older optmem wrote). A vault that cannot
    be written is left as it is: the command goes on (it remembers less)."""
    try:
        row = conn.execute("SELECT v FROM meta WHERE k = ?", (UNHELD,)).fetchone()
        seen = str(row[0]) if row and row[0] is not None else None  # (what waits, as read)
        path = vault.own_path(HELD)
        if not path.is_file():
            ids = _held_in(conn)
            if not ids and seen is None:
                return  # (an empty vault gets no own notes for it)
            fsio.atomic_write(vault.own(HELD), "".join(f"{rid}\n" for rid in ids), within=vault.own_within)
        elif seen:
            fsio.append_lines(path, [rid.encode("utf-8") for rid in seen.split()], within=vault.own_within)
        if seen is not None:
            with conn:  # (`to_hold` only appends: what was read is still the start of what waits)
                conn.execute(
                    "UPDATE meta SET v = substr(v, ?) WHERE k = ? AND substr(v, 1, ?) = ?",
                    (len(seen) + 1, UNHELD, len(seen), seen),
                )
                conn.execute("DELETE FROM meta WHERE k = ? AND v = ''", (UNHELD,))
    except (OptmemError, OSError, sqlite3.Error):
        pass


def _held_in(conn: sqlite3.Connection, schema: str = "main") -> list[str]:
    """The ids of the records an index holds, bookkeeping lines aside."""
    from optmem.record import BOOKKEEPING

    marks = ",".join("?" * len(BOOKKEEPING))
    return [
        rid
        for (rid,) in conn.execute(f"SELECT id FROM {schema}.rec WHERE kind NOT IN ({marks}) ORDER BY n", BOOKKEEPING)
        if isinstance(rid, str)
    ]


def _changed_in(conn: sqlite3.Connection) -> list[str]:
    """The records (bookkeeping lines aside) of the index attached as `old` whose text the new
    index (`main`) reads otherwise: same id, no line of it with the same fingerprint — a record
    changed in place (`sed s/8080/8081/`), its earlier words gone from the log. Compared only
    between indexes of one schema: another optmem may fingerprint the same words otherwise."""
    from optmem.record import BOOKKEEPING

    schemas = [conn.execute(f"SELECT v FROM {db}.meta WHERE k = 'schema'").fetchone() for db in ("main", "old")]
    if schemas[0] is None or schemas[0] != schemas[1]:
        return []
    marks = ",".join("?" * len(BOOKKEEPING))
    return [
        rid
        for (rid,) in conn.execute(
            f"SELECT DISTINCT o.id FROM old.rec o WHERE o.kind NOT IN ({marks}) "
            "AND EXISTS (SELECT 1 FROM main.rec m WHERE m.id = o.id) "
            "AND NOT EXISTS (SELECT 1 FROM main.rec m WHERE m.id = o.id AND m.fp IS o.fp) ORDER BY o.n",
            BOOKKEEPING,
        )
        if isinstance(rid, str)
    ]


def _held(vault: Vault) -> list[str]:
    """The ids `held` keeps (none when it is missing or cannot be read)."""
    out: list[str] = []
    for path in vault.own_kept(HELD):
        try:
            with open(path, "rb") as fh:
                out += [raw.strip().decode("utf-8", "replace") for raw, _ in fsio.lines(fh) if raw.strip()]
        except OSError:
            continue
    return out


def left_the_log(vault: Vault, new: Path) -> None:
    """Compare what the log held — the index about to be replaced, and the ids `held`
    keeps (the index may have been deleted with `.cache/`) — with `new`, built from the log as it
    is now: the records (bookkeeping lines aside) the log held that it no longer has are noted —
    but not the ones this clone purged (`purge` says so itself; a sync drops them again), nor
    those another clone purged that a sync's merge took out (`vault.purged_elsewhere`: the sync
    says so, `vault.left_with_purge`). Those a merge took out with no purge's mark
    (`vault.removed_elsewhere`) are noted as taken out in another clone's commits
    (`vault.left_elsewhere`)."""
    old = vault.index_path
    if new == old:
        return
    held = _held(vault)
    try:
        conn = sqlite3.connect(str(new))
        try:
            now = set(_held_in(conn))
            changed: list[str] = []
            if old.is_file():
                try:
                    conn.execute("ATTACH DATABASE ? AS old", (str(old),))
                    held += _held_in(conn, "old")
                    changed = _changed_in(conn)
                except sqlite3.Error:
                    pass  # an old index of another schema, or unreadable: the ids kept are compared
            gone = sorted(set(held) - now)
            try:
                if now or vault.own_kept(HELD):  # (an empty vault gets no own notes for it)
                    text = "".join(f"{rid}\n" for rid in sorted(now))
                    fsio.atomic_write(vault.own(HELD), text, within=vault.own_within)
                    with conn:  # (what a catch-up of the new index took in: kept whole just now)
                        conn.execute("DELETE FROM meta WHERE k = ?", (UNHELD,))
            except (OptmemError, OSError):
                pass  # (a vault that cannot be written: the next build compares again)
        finally:
            conn.close()
    except sqlite3.Error:
        return  # a new index that cannot be read: nothing to compare
    if changed:
        message = (
            f"{len(changed):,} record(s) say something else than when the index last read them "
            f"({short_ids(changed)}): {'the log' if vault.segmented else 'LOG.jsonl'} was edited outside optmem, and "
            "what they said before is no longer in it — restore it from git or a backup if that was not meant; to "
            "change what a record says, `optmem correct ID TEXT` keeps both; `optmem doctor --fix` clears this note"
        )
        _note(
            vault,
            {
                "what": "changed",
                "file": "the log" if vault.segmented else "LOG.jsonl",
                "ids": changed,
                "message": message,
            },
        )
    if gone:
        hashes = purged_hashes(vault)
        vault.left_with_purge = [rid for rid in gone if rid.upper() in vault.purged_elsewhere]
        gone = [rid for rid in gone if id_hash(rid) not in hashes and rid.upper() not in vault.purged_elsewhere]
        vault.left_elsewhere = [rid for rid in gone if rid.upper() in vault.removed_elsewhere]
        gone = [rid for rid in gone if rid.upper() not in vault.removed_elsewhere]
    where = "the log" if vault.segmented else "LOG.jsonl"
    if vault.left_with_purge:
        commits = {rid: vault.purge_commits.get(rid.upper(), "") for rid in vault.left_with_purge}
        named = sorted({c[:12] for c in commits.values() if c})
        message = (
            f"{len(vault.left_with_purge):,} record(s) left the log with a sync's merge, purged by another clone "
            f"({short_ids(vault.left_with_purge)}): the commit that took each out says so (`Optmem-Purged`, in "
            f"{', '.join(named[:SHOWN]) or 'its commit'}) — that committer's word, not proof; if that purge was "
            "not meant, `git show COMMIT^:FILE` holds the text; `optmem doctor --fix` clears this note"
        )
        _note(
            vault,
            {"what": "purged", "file": where, "ids": vault.left_with_purge, "commits": commits, "message": message},
            told=False,
        )
    if vault.left_elsewhere:
        message = (
            f"{len(vault.left_elsewhere):,} record(s) left the log with a sync's merge "
            f"({short_ids(vault.left_elsewhere)}): they were taken out of it in another clone's commits, with no "
            "purge's mark (a purge there, or an outside edit — an editor or script that saved an older copy); "
            "their text is no longer in it — restore it from git (`git log -S ID`) if that was not meant; "
            "`optmem doctor` names them, `optmem doctor --fix` clears this note"
        )
        _note(vault, {"what": "log", "file": where, "ids": vault.left_elsewhere, "message": message})
    if not gone:
        return
    message = (
        f"{len(gone):,} record(s) left the log ({short_ids(gone)}): {where} was rewritten outside "
        "optmem (an editor or script that saved an older copy, a git checkout, another clone's purge); "
        "their text is no longer in it — restore it from git or a backup if that was not meant; "
        "`optmem doctor` names them, `optmem doctor --fix` clears this note"
    )
    _note(vault, {"what": "log", "file": where, "ids": gone, "message": message})


def overwritten(vault: Vault, file: str, entries: list[tuple[str, str]]) -> None:
    """Note hot entries (id, text) optmem added that something outside optmem removed from `file` (the
    newest it added: a person's edit, or an older copy saved over them — which, is not known)."""
    texts = "; ".join(repr(text[:60]) for _, text in entries[:SHOWN]) + ("; …" if len(entries) > SHOWN else "")
    n = len(entries)
    message = (
        f"{n} entr{'y' if n == 1 else 'ies'} optmem added to {file} {'is' if n == 1 else 'are'} gone from it, "
        f"removed outside optmem ({texts}) — by hand, or an editor or script may have saved an older copy of "
        "the file over them; their text stays in the log (`optmem "
        "search` shows them as removed) — `optmem add` them again if that was not meant; `optmem doctor "
        "--fix` clears this note"
    )
    _note(vault, {"what": "hot", "file": file, "entries": [e for e, _ in entries], "message": message})


def _note(vault: Vault, item: dict[str, Any], *, told: bool = True) -> None:
    """Keep a note for `doctor`; `told`: the command warns of it too (a purge elsewhere: the sync
    says it in its own words)."""
    if told:
        vault.lost.append(item["message"])
    line = json.dumps({"at": clock.format_ts(clock.now()), **item}, ensure_ascii=False).encode("utf-8")
    try:
        fsio.append_lines(vault.own(NOTE), [line], within=vault.own_within)
    except (OSError, OptmemError):
        pass  # (a vault or a note that cannot be written: the command still says it, doctor names the file)


def notes(vault: Vault) -> list[dict[str, Any]]:
    """The notes kept, oldest first (lines that cannot be read are skipped; a note kept twice —
    a move from an older optmem's `.cache/` cut short — counts once)."""
    out, seen = [], set()
    for path in reversed(_kept(vault, NOTE)):  # (an older optmem's first)
        with open(path, "rb") as fh:
            for raw, _ in fsio.lines(fh):
                try:
                    item = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(item, dict) and isinstance(item.get("message"), str) and raw.strip() not in seen:
                    seen.add(raw.strip())
                    out.append(item)
    return sorted(out, key=lambda item: str(item.get("at", "")))  # (moved lines follow newer ones)


def clear(vault: Vault) -> int:
    """Remove the notes (`doctor --fix`: told, and seen); how many there were."""
    n = len(notes(vault))
    for path in _kept(vault, NOTE):
        fsio.remove_file(path)
    return n
