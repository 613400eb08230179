"""`purge`: the only physical deletion ("forget all my data").

It rewrites LOG.jsonl without the chosen records (atomically, under the lock), together with the
bookkeeping lines that point at them; deletes the summary-tree nodes that quote them (and the
nodes above those — the next `compact` rebuilds them from what is left) and the HANDOFF.md
files they carried (each made again from the project's previous handoff, when it has one, as
`forget` does); takes their ids out of ACCESS.jsonl; and rebuilds the index from scratch,
so no copy of the text (nor an id as written) is left in the vault. The clone keeps a one-way
hash of each purged id (`purged` among this clone's own notes, never committed): a sync that brings a purged record
back (another clone's copy, kept by git's union merge of that clone's file; a tree node or a
HANDOFF.md another clone committed) drops it again (`drop_again`; `optmem.lost` keeps the
hashes). Every path it will touch
is found and checked first: one that is not what it should be (the tree a file, a handoff a
folder) stops it with exit 3 before anything is deleted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from optmem import fsio, log, lost
from optmem.errors import BadFrontMatter, ConfirmationRequired, NotFound, OptmemError, Unreadable, UsageError, quote
from optmem.record import BOOKKEEPING, BadLine, parse_line
from optmem.vault import Vault, hot_target, validate_name


@dataclass(frozen=True)
class Purged:
    records: int
    lines: int
    files: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)  # handoff files that show the project's previous handoff now
    warnings: list[str] = field(default_factory=list)
    not_found: list[str] = field(default_factory=list)  # ids given that name no record (purged already, or never there)


def purge(
    vault: Vault,
    ids: list[str] | None = None,
    *,
    domain: str | None = None,
    everything: bool = False,
    yes: bool = False,
) -> Purged:
    """Delete records for good. Refuses without `yes` (`confirmation_required`), saying how many."""
    from optmem.index import open_index

    absent: list[str] = []
    chosen = sum(bool(x) for x in (ids, domain, everything))
    if chosen != 1:
        raise UsageError("say what to purge: record IDs, --domain D, or --all (one of them)")
    vault.require()
    with vault.tree_lock(), vault.lock():  # tree first, as compaction takes them
        with open_index(vault) as idx:
            if ids:
                targets, absent = _named(idx, ids)
            elif domain:
                validate_name(domain, "domain")
                targets = idx.ids(domain)
                if not targets:  # a typo must not read as "done"
                    known = idx.domains()
                    raise NotFound(
                        f"no records in domain {quote(domain)}; the vault's domains: "
                        f"{', '.join(known) or '(none)'} — nothing was purged",
                        domain=domain,
                        domains=known,
                    )
            else:
                targets = idx.ids()
            if not everything:
                targets = _with_copies(vault, idx, targets)
            seen = {} if everything else _seen_through(idx, targets)
        written, targets = targets, {t.upper() for t in targets}  # ids are compared in upper case, as written elsewhere
        if not yes:
            what = f"every record ({len(written):,})" if everything else f"{len(written):,} record(s)"
            raise ConfirmationRequired(
                f"purge deletes {what} from LOG.jsonl for good (not recoverable); run it again with --yes to do it"
                + (f" ({_absent(absent)})" if absent else ""),
                records=len(written),
                ids=sorted(written)[:20],  # as written
                not_found=absent,
            )
        # Every path purge will touch is found and checked first: a refusal deletes nothing.
        derived = _derived(vault, lambda rid: rid.upper() in targets, everything)
        index_files = sorted(vault.cache_dir.glob("index*"))
        _check_kinds(vault, derived, index_files)
        # noted before anything is deleted: a purge killed part-way is re-run, and a record it
        # dropped never comes back through a sync meanwhile
        lost.note_purged(vault, written | targets)
        # In an order a kill at any point leaves re-runnable: what is made again from the log (tree
        # nodes, recall times) first; then the kept lines stop naming the purged ones, in every log
        # file; only then are the purged lines dropped — no kept line names an id that is gone.
        # Stopped part-way (a full disk), it says what it had done: not "nothing was changed".
        files: list[str] = []
        again = f"optmem purge {' '.join(ids) if ids else f'--domain {domain}' if domain else '--all'} --yes"
        try:
            for path, shown in derived:
                if shown.endswith("/"):
                    fsio.remove_tree(path)
                else:
                    fsio.remove_file(path)
                if shown:
                    files.append(shown)
            _rewrite_access(vault, targets, everything)
            lines = _rewrite_log(vault, targets, everything, seen)
        except (OptmemError, OSError) as exc:
            err = exc if isinstance(exc, OptmemError) else fsio.unwritable(Path(exc.filename or vault.root), exc)
            gone = f"it had deleted {', '.join(files[:10])}{', …' if len(files) > 10 else ''}" if files else ""
            raise fsio.partly_done(
                err,
                f"the purge is unfinished ({gone or 'the records are still in the log'}; `optmem doctor` names "
                f"what is left) — once that is fixed, run `{again}` again to finish it",
            ) from exc
        try:
            for path in index_files:
                fsio.remove_file(path)
            from optmem.index import build

            build(vault)
        except (OptmemError, OSError) as exc:
            err = exc if isinstance(exc, OptmemError) else fsio.unwritable(Path(exc.filename or vault.root), exc)
            raise fsio.partly_done(
                err, "the records are purged from the log; the search index is built again at its next use"
            ) from exc
        restored: list[str] = []
        warnings: list[str] = []
        if not everything:  # a project's handoff file shows the handoff it still has, as after `forget`
            from optmem import handoff_file

            for path, shown in derived:
                if path.name == "HANDOFF.md" and path.parent.parent == vault.root / "projects":
                    try:
                        if handoff_file.put_back(vault, path.parent.name) is not None:
                            restored.append(shown)
                    except OptmemError as exc:  # (purged all the same: the file is gone, not wrong)
                        warnings.append(
                            f"{shown} was not made again ({exc.message.splitlines()[0]}): "
                            "`optmem handoff read` shows the previous handoff"
                        )
    if absent:
        warnings.insert(0, _absent(absent))
    return Purged(len(written), lines, files, restored, warnings, absent)


def _named(idx: Any, ids: list[str]) -> tuple[set[str], list[str]]:
    """The records `ids` name, and the ids that name none — purged already (a purge killed
    partway, run again with the same ids, finishes the job) or never there. Ids that all name
    nothing are an error (`not_found`): a typo must not read as "done". An ambiguous one stops it."""
    found: set[str] = set()
    absent: list[str] = []
    for ref in ids:
        try:
            found.add(log.resolve_one(idx, ref).id)
        except NotFound:
            if len(ids) == 1:
                raise
            if ref not in absent:
                absent.append(ref)
    if not found:
        raise NotFound(
            f"none of the {len(ids)} ids names a record now (purged already, or never there): "
            f"{', '.join(absent[:20])} — nothing was purged (give the full id, or ≥ 6 of its first or last characters)",
            ids=absent,
        )
    return found, absent


def _absent(absent: list[str]) -> str:
    """What a purge says of the ids it was given that name no record."""
    return f"{len(absent)} id(s) name no record (purged already, or never there): {', '.join(absent[:20])}" + (
        ", …" if len(absent) > 20 else ""
    )


class Again(NamedTuple):
    """What a sync dropped again of what this clone purged (`drop_again`)."""

    records: list[str]  # purged records back in the log's files (ids as the files held them)
    nodes: list[str]  # tree nodes that quoted one (and those above them, the root)
    handoffs: list[str]  # HANDOFF.md files that carried one: the project's previous handoff again, or gone


def drop_again(vault: Vault, names: set[str], elsewhere: Collection[str] = ()) -> Again:
    """Records this clone purged that are back in the files `names` (a sync merged another
    clone's copy): dropped again, as `purge` drops them, wherever a merged line can bring one —
    a log file (a writer's, or the shared older LOG.jsonl), with the lines about them, and kept
    lines no longer naming them; a tree node that quotes one (another clone summarised it before
    it saw the purge), by its children or its body, with the nodes above it and the root, deleted
    as purge deletes them (the next `compact` makes them again); a HANDOFF.md that carries one,
    made again from the project's previous handoff, as purge does. Files that name one are
    rewritten before the files that hold one, as in purge: a kill between leaves it findable.
    Copies another clone made meanwhile (its merge of the record, its `resolve --keep`) are
    records of their own and stay. `elsewhere`: ids (upper case) another clone purged, which the
    merge took out of the log — this clone's nodes and HANDOFF.md files quoting them go too. The
    caller holds the vault lock."""
    hashes = lost.purged_hashes(vault)
    if not hashes and not elsewhere:
        return Again([], [], [])

    def named(rid: str) -> bool:
        return rid.upper() in elsewhere or lost.id_hash(rid) in hashes

    tree_changed = bool(elsewhere) or any(n.startswith("tree/") for n in names)
    derived = [
        (path, shown)
        for path, shown in _derived(vault, named, False)
        if (tree_changed and shown.startswith("tree/"))
        or (path.name == "HANDOFF.md" and path.is_file() and not path.is_symlink())  # (else: not one to read)
    ]
    _check_kinds(vault, derived, [])
    for path, _ in derived:
        fsio.remove_file(path)
    back: dict[str, str] = {}  # id in upper case -> as written
    held: set[str] = set()  # of those, the records themselves (not lines about them)
    holds: dict[Path, bool] = {}  # a file naming one -> whether it holds one
    for name, path in vault.segments():
        if name not in names or not path.is_file():
            continue
        with open(path, "rb") as fh:
            for raw, _ in fsio.lines(fh):
                try:
                    rec = parse_line(raw.rstrip(b"\r\n"), limit=None)
                except BadLine:
                    continue
                after = rec.extra.get("after")
                listed = [rec.id, rec.ref or "", *rec.corrects, *(after if isinstance(after, list) else [])]
                hit = [n for n in listed if isinstance(n, str) and n and named(n)]
                if hit:
                    back.update({n.upper(): n for n in hit})
                    if rec.id in hit:
                        held.add(rec.id.upper())
                    holds[path] = holds.get(path, False) or rec.id in hit
    for path in sorted(holds, key=lambda p: holds[p]):
        _rewrite_file(vault, path, set(back), False, {}, drop=True)
    handoffs = [shown for path, shown in derived if path.name == "HANDOFF.md"]
    if handoffs:
        from optmem import handoff_file

        for path, _ in (d for d in derived if d[0].name == "HANDOFF.md"):
            try:
                handoff_file.put_back(vault, path.parent.name)  # (after the log: never the purged one again)
            except OptmemError:
                continue  # (dropped all the same: the file is gone; `handoff read` shows the previous one)
    return Again(sorted(back[t] for t in held), [s for _, s in derived if s.startswith("tree/")], handoffs)


def _with_copies(vault: Vault, idx: Any, targets: set[str]) -> set[str]:
    """The targets and every record that carries a copy of their text: the other journal lines of
    a hot-memory entry (its add, its removal), a resolution that kept a target's value, and merged
    records that quote a target (and merges of those). A hot entry still in its file is refused:
    remove it from the file first."""
    from optmem import memory
    from optmem.record import MEMORY, MERGED, RESOLUTION

    out = set(targets)  # ids as the index holds them; compared in upper case (hand-typed ones may be lower)
    up = {t.upper() for t in out}
    keys = {r.key for r in idx.rows("r.kind = ? AND r.key IS NOT NULL", (MEMORY,)) if r.id.upper() in up}
    for key in sorted(keys):
        _, file, entry = key.split(":", 2)
        held = memory.held_entries(vault, file)
        if held and entry in held:
            target, project = hot_target(file) or ("memory", None)
            where = f" -p {project}" if project else " --target user" if target == "user" else ""
            raise OptmemError(
                f"entry [{entry}] is still in {file}: remove it there first (`optmem remove "
                f"--id {entry}{where}`), then purge its records",
                code="still_held",
                file=file,
                entry=entry,
            )
        out |= {r.id for r in idx.journal(file) if r.key == key}
    for r in idx.rows("r.kind = ?", (RESOLUTION,)):  # `resolve --keep` repeats the kept value's text
        kept = idx.record(r).extra.get("kept")
        if isinstance(kept, str) and kept.upper() in up:
            out.add(r.id)
    merged = [(r.id, set(json.loads(r.corrects or "[]"))) for r in idx.rows("r.kind = ?", (MERGED,))]
    grew = True
    while grew:  # a merge quotes its fragments verbatim; a merge of merges quotes them too
        up = {o.upper() for o in out}
        more = {rid for rid, quoted in merged if rid.upper() not in up and {q.upper() for q in quoted} & up}
        grew = bool(more)
        out |= more
    return out


def _seen_through(idx: Any, targets: set[str]) -> dict[str, list[str]]:
    """For each purged keyed value, the values its writer had seen (its `after`, with purged ones
    replaced by theirs in turn): a kept value written after a purged one was written after those
    too. Spliced into the kept lines' `after`, so a purge never brings back, as current or in
    conflict, a value the purged one had replaced."""
    own: dict[str, list[str]] = {}  # by id in upper case, as every id is compared
    ids = sorted(targets)  # as the index holds them
    up = {t.upper() for t in targets}
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        for row in idx.rows(f"r.id IN ({','.join('?' * len(chunk))}) AND r.after IS NOT NULL", chunk):
            own[row.id.upper()] = [a for a in json.loads(row.after) if isinstance(a, str)]

    def through(rid: str, path: frozenset[str]) -> list[str]:
        out: list[str] = []
        for a in own.get(rid, []):
            if a.upper() not in up:
                out.append(a)
            elif a.upper() not in path:  # (a hand-made cycle ends here)
                out += through(a.upper(), path | {a.upper()})
        return out

    return {rid: list(dict.fromkeys(through(rid, frozenset({rid})))) for rid in own}


def _rewrite_log(vault: Vault, targets: set[str], everything: bool, seen: dict[str, list[str]]) -> int:
    """Every log file without the purged records (each rewritten whole, atomically); the count
    dropped. In a segmented vault that includes other writers' files: what they hold here goes,
    not what other clones and git's history still hold. `targets`: ids in upper case.

    Files are rewritten in an order a kill between two leaves re-runnable: first every kept line
    stops naming the purged ones (they stay), then the files holding none of the purged records
    drop the lines about them, and the files holding them come last — no kept line is left naming
    an id that is gone, and while one is left `purge` finds it again."""
    paths = [path for _, path in vault.segments() if path.exists()]
    if len(paths) > 1 and not everything:  # (one file is rewritten at once: there is no between)
        holds = {path: _rewrite_file(vault, path, targets, everything, seen, drop=False) for path in paths}
        paths.sort(key=lambda path: holds[path] > 0)
    return sum(_rewrite_file(vault, path, targets, everything, seen, drop=True) for path in paths)


def _rewrite_file(
    vault: Vault, path: Path, targets: set[str], everything: bool, seen: dict[str, list[str]], drop: bool
) -> int:
    dropped = 0
    with fsio.rewriting(path, within=vault.root) as (out, src):
        for raw in src:
            if everything:
                dropped += 1
                continue
            try:
                rec = parse_line(raw.rstrip(b"\r\n"), limit=None)  # (one over the bounds can still go)
            except BadLine:
                out.write(raw)  # not a record: kept byte for byte (doctor handles it)
                continue
            ref = (rec.ref or "").upper()
            if rec.id.upper() in targets or (rec.kind in BOOKKEEPING and ref in targets):
                if drop:
                    dropped += 1
                else:  # a first pass: kept, and counted when it is one of them (not a line about one)
                    dropped += rec.id.upper() in targets
                    out.write(raw)
                continue
            after = rec.extra.get("after")
            names_purged = isinstance(after, list) and any(isinstance(a, str) and a.upper() in targets for a in after)
            if ref in targets or any(c.upper() in targets for c in rec.corrects) or names_purged:
                raw = _without_refs(raw, targets, rec.id, seen)  # kept, no longer naming (or quoting) what is gone
            out.write(raw)
    return dropped


def _rewrite_access(vault: Vault, targets: set[str], everything: bool) -> None:
    """ACCESS.jsonl without the purged ids (a recall or a cooling names ids, no text — but "for
    good" leaves no trace): they leave each line's lists, a line left naming nothing goes. Recall
    lines are appended without the log's lock: one written meanwhile is carried over as it is
    (`fsio.rewriting`)."""
    for _, path in vault.access_files():
        if path.is_file() and not path.is_symlink():  # (else: none yet, or not what it should be — doctor says)
            _rewrite_access_file(vault, path, targets, everything)


def _rewrite_access_file(vault: Vault, path: Path, targets: set[str], everything: bool) -> None:
    with fsio.rewriting(path, within=vault.root) as (out, src):
        for raw in src:
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):
                out.write(raw)  # not a line optmem can read: kept byte for byte (doctor reports it)
                continue
            named = [f for f in ("touch", "cold") if isinstance(obj, dict) and isinstance(obj.get(f), list)]
            if not named:
                out.write(raw)
                continue
            left = {
                f: [] if everything else [i for i in obj[f] if not (isinstance(i, str) and i.upper() in targets)]
                for f in named
            }
            if all(len(left[f]) == len(obj[f]) for f in named):
                out.write(raw)  # names none of them: kept byte for byte
                continue
            for f in named:
                if left[f]:
                    obj[f] = left[f]
                else:
                    del obj[f]
            if any(f in obj for f in named) or "sweep" in obj:
                out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")


def _without_refs(raw: bytes, targets: set[str], rid: str, seen: dict[str, list[str]]) -> bytes:
    """A kept line rewritten without the purged ids in its `corrects` and `ref` — and, for a hot-memory
    replacement, without the replaced entry's old text (`old`), a copy of it; in its `after`, a
    purged value gives way to the values it was written after (`seen`). `rid`: its id."""
    obj = json.loads(raw)
    if not isinstance(obj.get("id"), str) or not obj["id"]:
        obj = {"id": rid, **obj}  # a hand-typed line's id came from its bytes: keep it as they change
    corrects = obj.get("corrects") or []
    if not isinstance(corrects, list):  # hand-typed: one id as a string
        corrects = [corrects]
    kept = [c for c in corrects if not (isinstance(c, str) and c.upper() in targets)]
    if kept:
        obj["corrects"] = kept
    else:
        obj.pop("corrects", None)
    if isinstance(obj.get("ref"), str) and obj["ref"].upper() in targets:
        obj.pop("ref")
    if isinstance(obj.get("resolves"), list):  # a resolution by --value: what it settled
        obj["resolves"] = [r for r in obj["resolves"] if not (isinstance(r, str) and r.upper() in targets)]
    if isinstance(obj.get("after"), list):
        after: list[Any] = []
        for a in obj["after"]:
            purged = isinstance(a, str) and a.upper() in targets
            after += seen.get(a.upper(), []) if purged else [a]
        obj["after"] = [a for i, a in enumerate(after) if a not in after[:i]]
    if obj.get("kind") == "memory":
        obj.pop("old", None)
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def explains(old: bytes, new: bytes, marks: set[str]) -> bool:
    """Whether `new` is the line `old` as a purge of records whose ids hash to `marks` (the
    commits' `Optmem-Purged` trailers) rewrites a kept line (`_without_refs`): the same record,
    only without the purged ids in its `corrects`, `ref`, `resolves` and `after` (where a purged
    value gives way to those it was written after), and a hot-memory replacement without its
    `old` text. Anything else changed — the text, a field added — is no purge's doing."""
    try:
        was, now = json.loads(old), json.loads(new)
    except (ValueError, RecursionError):
        return False
    if not isinstance(was, dict) or not isinstance(now, dict) or was == now:
        return False

    def gone(x: Any) -> bool:
        return isinstance(x, str) and lost.id_hash(x) in marks

    def named(obj: dict[str, Any], name: str) -> list[Any]:
        got = obj.get(name) or []
        return got if isinstance(got, list) else [got]

    hit = [x for f in ("corrects", "resolves", "after") for x in named(was, f)] + [was.get("ref")]
    if not any(gone(x) for x in hit):
        return False  # it named no purged record: a purge had nothing to rewrite
    if "id" not in was and isinstance(now.get("id"), str):
        was = {"id": now["id"], **was}  # (a hand-typed line's id, kept as its bytes change)
    for f in ("corrects", "resolves"):
        if named(now, f) != [x for x in named(was, f) if not gone(x)]:
            return False
    if now.get("ref") != (None if gone(was.get("ref")) else was.get("ref")):
        return False
    after_was, after_now = named(was, "after"), named(now, "after")
    if any(gone(a) for a in after_now) or not {a for a in after_was if not gone(a)} <= set(after_now):
        return False
    if not any(gone(a) for a in after_was) and after_now != after_was:
        return False
    rest = ("corrects", "resolves", "ref", "after") + (("old",) if was.get("kind") == "memory" else ())
    return {k: v for k, v in was.items() if k not in rest} == {k: v for k, v in now.items() if k not in rest}


def _check_kinds(vault: Vault, derived: list[tuple[Path, str]], index_files: list[Path]) -> None:
    """Refuse (exit 3) before anything is deleted when a path purge will touch is not the kind of
    thing it should be (the summary tree a file, a handoff a folder, a link out of the vault)."""
    want: list[tuple[Path, bool]] = [(path, False) for _, path in vault.segments()]  # (path, is it a folder?)
    want += [(path, shown.endswith("/")) for path, shown in derived]
    want += [(path, False) for path in index_files]
    for path, folder in want:
        if not os.path.lexists(path):
            continue
        fsio.check_within(path, vault.root)
        if path.is_symlink() or path.is_dir() != folder:
            what = "a link" if path.is_symlink() else "a folder" if path.is_dir() else "a file"
            rel = path.relative_to(vault.root)
            raise Unreadable(
                f"{rel} is {what}, expected {'the summary-tree folder' if folder else 'a file'}; "
                "move it aside and run purge again; nothing was deleted",
                file=str(path),
            )


def _derived(vault: Vault, named: Callable[[str], bool], everything: bool) -> list[tuple[Path, str]]:
    """The tree nodes and handoff files that carry purged text (`named`: whether an id is one
    purged), as (path, how the result names it — "" for a file not reported, a trailing "/" for a
    folder); nothing is deleted here."""
    from optmem import handoff_file, tree

    out: list[tuple[Path, str]] = []
    troot = vault.root / "tree"
    if everything:
        if os.path.lexists(troot):
            out.append((troot, "tree/"))
        out.append((vault.root / "LOG.quarantine.jsonl", ""))
    elif troot.is_dir():
        for folder in sorted(p for p in troot.iterdir() if p.is_dir()):
            nodes: dict[str, Any] = {}
            for path in folder.glob("*.md"):
                if not path.is_file() or path.is_symlink():
                    out.append((path, f"tree/{folder.name}/{path.name}"))  # refused by _check_kinds
                    continue
                try:
                    nodes[path.name] = tree.parse(fsio.read_text(path, within=vault.root, limit=fsio.NOTE_BYTES) or "")
                except BadFrontMatter:
                    continue
            hit = tree.quoting(nodes, named)  # and the nodes above them, the root too (they quote them)
            out += [(folder / name, f"tree/{folder.name}/{name}") for name in sorted(hit)]
    pdir = vault.root / "projects"
    for path in sorted(pdir.glob("*/HANDOFF.md")) if pdir.is_dir() else []:
        if not path.is_file() or path.is_symlink():
            out.append((path, str(path.relative_to(vault.root))))  # refused by _check_kinds
            continue
        try:
            h = handoff_file.parse(fsio.read_text(path, within=vault.root, limit=fsio.NOTE_BYTES) or "")
        except BadFrontMatter:
            continue
        if everything or (h.id and named(h.id)):
            out.append((path, str(path.relative_to(vault.root))))
    return out
