"""`doctor`: check a vault people can edit, and make only the repairs that lose nothing.

Checks: every log line parses and has what it needs, ids are unique, `corrects`/`ref` point at
existing records, the last line is whole, hot files are readable and within their limits,
handoff and tree files have valid front matter, and the index is in step. `--fix` only ends a
torn last line, moves unparseable lines — their exact bytes and line numbers — into
`LOG.quarantine.jsonl`, stamps a line without `ts` with one (and with the id it reads as, the
line as it was kept in the quarantine), and rebuilds the index; everything else is reported
for a person.
"""

from __future__ import annotations

import base64
import json
import os
import stat
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optmem import clock, fsio, gitstate, lost, memory, view
from optmem.errors import BadFrontMatter, OptmemError, Unreadable, UsageError
from optmem.record import (
    HANDOFF,
    MEMORY,
    READ_BYTES,
    RECORD_ID,
    TYPED_ID,
    BadLine,
    Ids,
    bad_units,
    corrects_from_text,
    line_of,
    missing_fields,
    parse_line,
)
from optmem.stdlib import UTC
from optmem.vault import NAME_RE, OWN_FILES, RELEASES, Vault, hot_target

QUARANTINE = "LOG.quarantine.jsonl"
OWN_NOTES = {  # this clone's own notes (`Vault.own_dir`), by what each keeps
    lost.PURGED: "the records it purged (a purge is refused while it cannot note them)",
    lost.NOTE: "what left the files outside optmem (told once, then not kept for doctor)",
    lost.HELD: "the records the log held (records that leave it would not be told)",
    RELEASES: "the records it released from quarantine (a release is refused)",
}


@dataclass(frozen=True)
class Problem:
    code: str
    file: str
    message: str
    line: int | None = None
    id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "file": self.file}
        if self.line is not None:
            out["line"] = self.line
        if self.id is not None:
            out["id"] = self.id
        out["message"] = self.message
        return out


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # facts that matter, unchecked for `unchecked_days` (not a problem: a reminder to verify them)
    unchecked: list[dict[str, Any]] = field(default_factory=list)
    # each `duplicate_id` met, for `_name_duplicates`: (its problem's place in `problems`, file,
    # line, the file and line of the id's first use)
    duplicates: list[tuple[int, str, int, str, int]] = field(default_factory=list)
    # each log file read: (lines read, records among them), for `_check_index_rows`
    scanned: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def _scan_log(
    vault: Vault,
    report: Report,
    journals: dict[str, dict[str, tuple[str, str]]] | None = None,
    untimed: dict[str, dict[int, str]] | None = None,
    forked: set[str] | None = None,
    copies: dict[str, list[int]] | None = None,
) -> tuple[dict[str, list[int]], list[str]]:
    """Check every log file line by line (streamed); returns (unparseable line numbers by file,
    the files with a torn tail). With `journals`, collects the hot-memory journal there (file →
    entry → (last op, text), the last by time); with `untimed`, the lines that have no `ts`
    (file → line number → the id the record reads as); with `forked`, the hot files the journal
    ends an entry of more than once (where a merge may have kept it two ways: `_check_forks`);
    with `copies`, the lines of this clone's files that repeat an earlier line byte for byte
    (file → line numbers: what `--fix` moves to the quarantine)."""
    seen: dict[str, tuple[str, int, str]] = {}  # ID IN UPPER CASE → (file, line, the id as written)
    refs: list[tuple[str, int, str, tuple[str, ...], bool]] = []  # (file, line, id, refs, read from its text)
    corrections: list[tuple[int, str, str]] = []  # (line, record, what it corrects)
    bad: dict[str, list[int]] = {}
    torn: list[str] = []
    steps: list[tuple[str, str, int, tuple[str, str, str], str]] = []  # (ts, id, line, step, text)
    files = vault.segments()
    limit = READ_BYTES  # (a read: the vault's record_bytes bounds writes, never which lines are records)
    mine = _own_files(vault, [name for name, _ in files])
    for name, path in files:
        if not path.exists():
            continue
        if not path.is_file():
            report.problems.append(
                Problem("unreadable", name, "is not a file (a folder?); move it aside and put the log back")
            )
            continue
        with open(path, "rb") as fh:
            _scan_file(name, name not in mine, fh, report, seen, refs, corrections, bad, torn, steps, untimed, limit)
    if report.duplicates:
        _name_duplicates(files, mine, report, copies)
    if forked is not None:
        ends = Counter((step[0], step[1]) for _, _, _, step, _ in steps if step[2] == "remove")
        forked.update(file for (file, _), n in ends.items() if n > 1)
    if journals is not None:
        for _, _, _, step, text in sorted(steps, key=lambda s: (s[0], s[1][:10] if len(s[1]) == 26 else s[1], s[2])):
            journals.setdefault(step[0], {})[step[1]] = (step[2], text)
    # the ids as written (`record.Ids` reads them), with those another differs from in case only
    # (each `duplicate_id`): a part of both names neither, as in the index
    ids = Ids(first for _, _, first in seen.values())
    ids.add(p.id for p in report.problems if p.code == "duplicate_id" and p.id and p.id not in ids)
    for where, n, rid, named, texted in refs:
        found = {ref: ids.named(ref) for ref in named}
        for ref, several in found.items():
            if len(several) > 1:  # names no record: which one was meant is not the reader's guess
                report.problems.append(
                    Problem(
                        "ambiguous_ref",
                        where,
                        f"names {ref}, which {len(several)} records' ids share ({', '.join(several[:5])}), so it "
                        "names none of them; write the whole id of the one it means",
                        n,
                        rid,
                    )
                )
        missing = [ref for ref, hits in found.items() if not hits]
        if texted and len(missing) < len(named):
            continue  # (a hand-typed correction's `#word` that names no record is a word)
        for ref in missing[:1] if texted else missing:
            report.problems.append(
                Problem(
                    "dangling_ref",
                    where,
                    f"its text is a correction of #{ref} (the hand-typed form 〔更正〕#ID), which no record "
                    "has: write the id it corrects, or write its text without the '#'"
                    if texted
                    else f"points at {ref}, which no record has",
                    n,
                    rid,
                )
            )
    _check_correction_cycles(corrections, seen, ids, report)
    return bad, torn


def _json_kind(value: Any) -> str:
    """How JSON calls a value that is not a string: a number, true/false, a list, an object, null."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    return "a list" if isinstance(value, list) else "an object"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


# fields a record reads only as a string: another value reads as the field unset (`record.parse_line`)
AS_UNSET = {
    "kind": "kind `note`",
    "tier": "tier `normal`",
    "key": "no key",
    "domain": "domain `default`",
    "project": "no project",
    "source": "no source",
}


def _not_strings(body: bytes) -> dict[str, Any]:
    """The fields of `AS_UNSET` a log line holds as something other than a string (`"kind": 5`,
    typed by hand): read as unset, said by doctor — an export keeps them as they are."""
    obj = json.loads(body)
    return {f: obj[f] for f in AS_UNSET if f in obj and obj[f] is not None and type(obj[f]) is not str}


def _scan_file(
    name: str,
    theirs: bool,
    fh: Any,
    report: Report,
    seen: dict[str, tuple[str, int, str]],
    refs: list[tuple[str, int, str, tuple[str, ...], bool]],
    corrections: list[tuple[int, str, str]],
    bad: dict[str, list[int]],
    torn: list[str],
    steps: list[tuple[str, str, int, tuple[str, str, str], str]],
    untimed: dict[str, dict[int, str]] | None,
    limit: int,
) -> None:
    """`_scan_log` for one log file (`name`, open as `fh`; `theirs`: another clone writes it,
    so it is fixed there, and a torn tail may be a sync still under way). A line no reader takes
    (unparseable, or over a record's bounds: `too_large`) is reported under its own code."""
    elsewhere = "another clone writes this file: run `optmem doctor --fix` on that clone"
    n = records = 0
    for raw, length in fsio.lines(fh):  # (a line past the bound is unparseable, never held whole)
        n += 1
        if not raw.endswith(b"\n"):
            torn.append(name)
            report.problems.append(
                Problem(
                    "torn_last_line",
                    name,
                    "the last line has no final newline ("
                    + (
                        f"a sync still under way? it is read once it is whole — if it stays torn, {elsewhere})"
                        if theirs
                        else "a write was cut short); --fix ends it"
                    ),
                    n,
                )
            )
        body = raw.rstrip(b"\r\n")
        if not body.strip():
            continue
        try:
            rec = parse_line(body, n, limit)
        except BadLine as exc:
            bad.setdefault(name, []).append(n)
            fix = elsewhere if theirs else f"--fix moves it to {QUARANTINE}"
            why = str(exc) if length <= fsio.LINE_BYTES else f"{length:,} bytes, longer than any line is read"
            report.problems.append(Problem(exc.code, name, f"{why}; {fix}", n))
            continue
        records += 1
        lacking = missing_fields(body)
        if lacking:
            todo = []
            if "ts" in lacking:
                todo.append(
                    'add "ts": "2026-11-29T18:55:30Z" (when it was written) to the line, or '
                    "run `optmem doctor --fix`: it stamps the line with the log's last-modified "
                    "time and keeps the record's id"
                )
            if "text" in lacking and lacking["text"] is not None:
                shown = json.dumps(lacking["text"], ensure_ascii=False)
                todo.append(f'write its "text" as a string ("{shown.strip(chr(34))}"), or `optmem purge` the record')
            elif "text" in lacking:
                todo.append('add its "text" to the line, or `optmem purge` the record')
            wrong = [
                f"no {f}" if v is None else f"a {f} that is {_json_kind(v)} ({_short(v)}), not a string"
                for f, v in lacking.items()
            ]
            report.problems.append(
                Problem(
                    "missing_field",
                    name,
                    f"the record has {' and '.join(wrong)}: {'; '.join(todo)}",
                    n,
                    rec.id,
                )
            )
            if "ts" in lacking and untimed is not None:
                untimed.setdefault(name, {})[n] = rec.id
        for unit, value in bad_units(body).items():
            report.problems.append(
                Problem(
                    "bad_value",
                    name,
                    f"{unit} {json.dumps(value, ensure_ascii=False)[:40]} is not a number from 0 to 1, "
                    f"so the record has the default {unit}; edit it (e.g. 0.8) or remove the field",
                    n,
                    rec.id,
                )
            )
        for named, value in _not_strings(body).items():
            report.problems.append(
                Problem(
                    "bad_value",
                    name,
                    f"{named} {json.dumps(value, ensure_ascii=False)[:40]} is {_json_kind(value)}, not a string, so "
                    f"the record reads as having {AS_UNSET[named]}; write it as a string or remove the field",
                    n,
                    rec.id,
                )
            )
        if rec.ts and clock.to_epoch(rec.ts) is None:
            report.problems.append(
                Problem(
                    "bad_timestamp",
                    name,
                    f"ts {rec.ts[:40]!r} is not an ISO time; the record "
                    "has no place in time (edit it to e.g. 2026-11-29T18:55:30Z)",
                    n,
                    rec.id,
                )
            )
        if not rec.hand and not (RECORD_ID.fullmatch(rec.id) or TYPED_ID.fullmatch(rec.id)):
            report.problems.append(
                Problem(
                    "bad_value",
                    name,
                    f"its id {json.dumps(rec.id, ensure_ascii=False)[:40]} is not one an export carries to an import "
                    "(up to 64 letters, digits, '.', '_' or '-'); give the line such an id (and the lines that "
                    "name it the same), or remove the field: the record's id is then derived from its line",
                    n,
                    rec.id,
                )
            )
        for what, given in (("domain", rec.domain), ("project", rec.project)):
            if given is not None and not NAME_RE.fullmatch(given):
                report.problems.append(
                    Problem(
                        "invalid_name",
                        name,
                        f"{what} {given[:40]!r} is not a usable name "
                        "(letters, digits, . _ -); the record cannot be filtered or compacted by it",
                        n,
                        rec.id,
                    )
                )
        # (by upper case: a reference names an id in any case, so ids that differ only in case
        # are one id to every correction and `get`)
        if rec.id.upper() in seen:
            where, line, first = seen[rec.id.upper()]
            also = f"on line {line}" if where == name else f"in {where}, line {line}"
            if first != rec.id:
                also += f" as {first} (ids are named in any case: give one of them another id)"
            else:  # (which line is the record: `_name_duplicates` says, once both lines are read)
                report.duplicates.append((len(report.problems), name, n, where, line))
            report.problems.append(Problem("duplicate_id", name, f"id also used {also}", n, rec.id))
        else:
            seen[rec.id.upper()] = (name, n, rec.id)
        if rec.kind == MEMORY:
            step = memory.journal_step(rec)
            if step:
                steps.append((rec.ts or "", rec.id, len(steps), step, rec.text))
        if rec.corrects and corrects_from_text(body, rec):
            refs.append((name, n, rec.id, rec.corrects, True))
        else:
            refs += [(name, n, rec.id, (ref,), False) for ref in rec.corrects]
        corrections += [(n, rec.id, ref) for ref in rec.corrects]
        if rec.ref:
            refs.append((name, n, rec.id, (rec.ref,), False))
    report.scanned[name] = (n, records)


def _name_duplicates(
    files: list[tuple[str, Path]], mine: set[str], report: Report, copies: dict[str, list[int]] | None
) -> None:
    """Say of each `duplicate_id` whether its line repeats the first byte for byte (a merge or a
    paste doubled it: the same record twice, and `--fix` moves the copy to the quarantine) or is
    another record under the same id (which is the record cannot be told: a person says, and
    until then every command given the id refuses it as ambiguous)."""
    wanted: dict[str, set[int]] = {}
    for _, name, n, first, line in report.duplicates:
        wanted.setdefault(name, set()).add(n)
        wanted.setdefault(first, set()).add(line)
    bodies: dict[tuple[str, int], bytes] = {}
    for name, path in files:
        if name not in wanted:
            continue
        with open(path, "rb") as fh:
            for n, (raw, _) in enumerate(fsio.lines(fh), 1):
                if n in wanted[name]:
                    bodies[(name, n)] = raw.rstrip(b"\r\n").strip()
    for at, name, n, first, line in report.duplicates:
        old = report.problems[at]
        where = f"line {line}" if first == name else f"{first}, line {line}"
        if bodies.get((name, n)) == bodies.get((first, line)):
            fix = (
                f"--fix moves this copy to {QUARANTINE}"
                if name in mine
                else "another clone writes this file: run `optmem doctor --fix` on that clone"
            )
            said = f"repeats {where} byte for byte (a merge or a paste doubled it: one record, twice); {fix}"
            if copies is not None and name in mine:
                copies.setdefault(name, []).append(n)
        else:
            said = (
                f"id also used on {where}, by another line: which of the two is the record cannot be told, so a "
                "command given this id (`forget`, `correct`, `get` …) refuses it as ambiguous — remove the "
                '"id" field from the line that is not the record (it then reads with an id of its own, '
                "derived from its bytes), or delete that line, then run `optmem doctor`"
            )
        report.problems[at] = Problem(old.code, old.file, said, old.line, old.id)


def _check_correction_cycles(
    corrections: list[tuple[int, str, str]], seen: dict[str, tuple[str, int, str]], ids: Ids, report: Report
) -> None:
    """A record that corrects, through a chain of corrections, itself (A corrects B and B
    corrects A — typed by hand, or merged from two clones): no version of that fact is the
    newest, so each record of the circle is named once."""
    corrects: dict[str, set[str]] = {}
    for _, rid, ref in corrections:
        rid, target = rid.upper(), (found.upper() if (found := ids.find(ref)) else None)
        if target is not None and target != rid:
            corrects.setdefault(rid, set()).add(target)
    named: set[str] = set()
    for start in sorted(corrects, key=lambda r: seen[r]):
        path, todo, reached = {start: [start]}, [start], None
        while todo and reached is None:
            node = todo.pop()
            for nxt in sorted(corrects.get(node, ())):
                if nxt == start:
                    reached = path[node]
                    break
                if nxt not in path:
                    path[nxt] = [*path[node], nxt]
                    todo.append(nxt)
        if reached is None or start in named:
            continue
        named.update(reached)
        circle = " → ".join(r[-8:] for r in [*reached, start])
        report.problems.append(
            Problem(
                "correction_cycle",
                seen[start][0],
                f"corrections run in a circle ({circle}): no record of it is the newest version of its fact; "
                "forget the one that is wrong (`optmem forget ID`), or fix its `corrects` by hand",
                seen[start][1],
                seen[start][2],
            )
        )


def _check_hot(vault: Vault, report: Report, journals: dict[str, dict[str, tuple[str, str]]], linked: set[str]) -> None:
    for target, project in memory.targets(vault):
        name = f"projects/{project}/MEMORY.md" if project else ("MEMORY.md" if target == "memory" else "USER.md")
        if name in linked or f"projects/{project}" in linked:
            continue  # named already: a link that leads outside
        lock = vault.root / f"{name}.lock"
        if lock.is_dir():  # (every write to the file takes this lock: each would fail, exit 3)
            report.problems.append(
                Problem(
                    "unreadable",
                    f"{name}.lock",
                    f"is a folder, not the lock file every write to {name} takes, so each one fails; remove that "
                    "folder (a lock holds nothing of yours: it is made again)",
                )
            )
        try:
            hot = memory.load(vault, target, project)
        except OptmemError as exc:
            report.problems.append(Problem("bad_hot_file", name, exc.message))
            continue
        if not hot.conflicted and gitstate.unmerged(hot.path):
            report.problems.append(
                Problem(
                    "merge_unresolved",
                    hot.name,
                    "git holds it unmerged, without conflict markers (a merge driver that could not run "
                    "left one side's file): the other side's entries are missing, not removed, so nothing "
                    f"is journalled from it — run `optmem init` (it sets up this clone's merge driver again), "
                    f"then, in the vault folder, `git checkout --merge -- {hot.name}` to merge it again; "
                    "keep the entries you want and `git add` it",
                )
            )
            continue
        if hot.conflicted:
            # what sits between the markers is neither side's entries yet: nothing to journal, and
            # `--fix` rightly leaves the file alone — the advice is the merge, then doctor again
            again = (
                "`optmem sync` merges it again entry by entry, as the merge driver would (git holds it "
                "unmerged); or by hand: "
                if gitstate.unmerged(hot.path)
                else ""
            )
            report.problems.append(
                Problem(
                    "merge_conflict",
                    hot.name,
                    f"holds git's conflict markers (<<<<<<< … >>>>>>>): {again}{memory.BY_HAND} "
                    "(`--fix` cannot choose for you: it "
                    "leaves a file mid-merge alone, and its entries are compared with the journal once the "
                    "markers are gone — run `optmem doctor` again then); `optmem init` (once in every "
                    "clone: git does not copy the driver) sets up the merge driver, so hot files merge "
                    "entry by entry",
                )
            )
        try:
            raw = fsio.read_text(hot.path, within=vault.root) or ""
        except OptmemError:
            raw = ""
        for n, said in memory.lookalike_separators(raw)[:10]:
            report.notes.append(
                f"{hot.name} line {n} ({said!r}) looks like a separator but is none — a separator is a "
                "line holding only `§` — so the entries above and below it read as one entry (`optmem show` "
                "shows them as one); make it `§` to part them, or leave it if it belongs to the entry"
            )
        if hot.bad_limit:  # the default is used meanwhile: said, not passed over
            report.problems.append(Problem("bad_hot_file", hot.name, hot.bad_limit.partition(": ")[2]))
        u = hot.usage()
        if u.chars > u.limit:
            report.problems.append(
                Problem(
                    "over_limit",
                    hot.name,
                    f"{u.chars:,} of {u.limit:,} characters; consolidate with `optmem replace` / `optmem remove`",
                )
            )
        if not hot.conflicted:
            _check_drift(vault, hot, journals.get(hot.name, {}), report)


def _check_forks(vault: Vault, report: Report) -> None:
    """Hot entries a git merge kept two ways — edited differently on two clones, or removed on one
    and edited on the other — read as `optmem conflicts` reads them (`facts.hot_forks`): from the
    journal in the log, which every clone has, so each clone of the same files says the same. The
    index is read as it is when it is in step with the log, else the log is indexed in memory:
    doctor changes nothing."""
    from optmem import facts
    from optmem.index import in_memory, in_step, open_index
    from optmem.stdlib import sqlite3

    try:
        with open_index(vault) if in_step(vault) else in_memory(vault) as idx:
            forks = [
                (fork, [(idx.record(row).extra.get("op"), view.shown(idx.record(row).text)) for row in held])
                for held, fork in facts.hot_forks(idx)
            ]
    except (OptmemError, sqlite3.Error):
        return  # the log's own problems are reported above
    for fork, versions in forks:
        kept = [repr(" ".join(text.split())[:60]) for op, text in versions if op != "remove"]
        what = (
            f"a git merge kept an entry removed on one clone and edited on another: {kept[0]}"
            if len(kept) < len(versions)
            else f"a git merge kept {'two' if len(kept) == 2 else len(kept)} edits of one entry: {' and '.join(kept)}"
        )
        report.problems.append(
            Problem(
                "merge_conflict",
                fork.file or "",
                f"{what}; keep the right one — `optmem resolve {fork.key} --keep ID` (`optmem conflicts` "
                "lists them with their ids)",
            )
        )


def _check_drift(vault: Vault, hot: memory.HotFile, journal: dict[str, tuple[str, str]], report: Report) -> None:
    """A hot file that disagrees with its journal in the log (a write cut short, an edit by
    Hermes, a person or git); `--fix` journals what the file holds."""
    d = memory.drift(vault, hot, journal)
    texts = {memory.entry_id(e): e for e in hot.entries}
    for e in d.resurfaced:
        report.problems.append(
            Problem(
                "hot_drift",
                hot.name,
                f"entry [{e}] {texts[e][:60]!r} is in the file, but the journal "
                "says it was removed (a write cut short, or an edit outside optmem); --fix finishes a "
                "write cut short (the file untouched since), else journals the file as it is",
            )
        )
    for e in d.missing:
        report.problems.append(
            Problem(
                "hot_drift",
                hot.name,
                f"the journal says entry [{e}] is in the file, and it is not; --fix finishes a write "
                "cut short (the file untouched since), else journals its removal (its text stays in LOG.jsonl)",
            )
        )
    if d.unjournalled:
        report.notes.append(
            f"{hot.name}: {len(d.unjournalled)} entr{'y was' if len(d.unjournalled) == 1 else 'ies were'} "
            "never journalled (typed by hand or by another tool); --fix journals them"
        )


def _check_markdown(vault: Vault, report: Report) -> list[tuple[str, str, str]]:
    """Handoff and tree front matter; the HANDOFF.md files nobody edited, with the project and the
    record each names (for `_check_handoff_records`)."""
    from optmem import handoff, handoff_file, tree

    pdir = vault.root / "projects"
    if pdir.is_dir():
        for folder in sorted(pdir.iterdir()):
            if not NAME_RE.fullmatch(folder.name):
                report.problems.append(
                    Problem(
                        "invalid_name",
                        f"projects/{folder.name}",
                        "a project folder whose name is not "
                        "usable (letters, digits, . _ -): optmem leaves it alone; rename it",
                    )
                )
    files = sorted(p for p in pdir.glob("*/HANDOFF.md") if NAME_RE.fullmatch(p.parent.name)) if pdir.is_dir() else []
    named: list[tuple[str, str, str]] = []  # (file, project, the record its front matter names)
    for path in files:
        rel = str(path.relative_to(vault.root))
        try:
            text = fsio.read_text(path, within=vault.root, limit=fsio.NOTE_BYTES) or ""
            h = handoff_file.parse(text)
            gaps = handoff.front_matter_gaps(text) if text.strip() else None
        except (BadFrontMatter, Unreadable) as exc:
            report.problems.append(Problem("bad_front_matter", rel, exc.message))
            continue
        if gaps is not None:
            broken, what = gaps
            if broken:
                report.problems.append(Problem("bad_front_matter", rel, what))
            else:
                report.notes.append(f"{rel} {what}")
        elif text.strip() and h.id and not h.edited:
            named.append((rel, path.parent.name, h.id))
    troot = vault.root / "tree"
    for path in sorted(troot.glob("*/*.md")) if troot.is_dir() else []:
        rel = str(path.relative_to(vault.root))
        try:
            tree.parse(fsio.read_text(path, within=vault.root, limit=fsio.NOTE_BYTES) or "")
        except (BadFrontMatter, Unreadable) as exc:
            report.problems.append(Problem("bad_front_matter", rel, exc.message))
    return named


def _check_handoff_records(vault: Vault, report: Report, named: list[tuple[str, str, str]]) -> None:
    """A HANDOFF.md nobody edited whose record is forgotten or another project's (a folder copied
    with its file): read as the file it is, which doctor says. Looked up only in an index in step
    with the log (doctor changes nothing; an index behind is reported on its own)."""
    from optmem import handoff
    from optmem.index import in_step, open_index
    from optmem.stdlib import sqlite3

    if not named:
        return
    try:
        if not in_step(vault):
            return
        with open_index(vault) as idx:
            gaps = [(rel, handoff.record_gap(idx.by_id(rid), project, rid)) for rel, project, rid in named]
    except (OptmemError, sqlite3.Error):
        return  # (the index's own problems are reported on their own)
    report.notes += [f"{rel} {gap}" for rel, gap in gaps if gap]


def _check_cache(vault: Vault, report: Report) -> bool:
    """The derived folder must be a folder, its lock a file; True when it can be used."""
    if vault.cache_dir.exists() and not vault.cache_dir.is_dir():
        report.problems.append(
            Problem(
                "bad_cache",
                ".cache",
                "is a file, not the folder of the index and the lock; nothing can be written until it is moved aside",
            )
        )
        return False
    if vault.lock_path.is_dir():
        report.problems.append(
            Problem("bad_cache", ".cache/lock", "is a folder, not the lock file; remove it (the lock is recreated)")
        )
        return False
    return True


def _check_settings(vault: Vault, report: Report) -> None:
    """optmem.toml must read; if it does not, the other checks use the built-in settings."""
    try:
        _ = vault.settings  # read (and checked) on first use
    except (UsageError, Unreadable) as exc:  # invalid; a link out, a FIFO, a huge file (not read)
        report.problems.append(Problem("bad_settings", "optmem.toml", exc.message))
        vault.use_defaults()
        return
    for warning in vault.settings.warnings:
        report.notes.append(warning)


def _check_own(vault: Vault, report: Report) -> None:
    """What an older optmem kept in `.cache/` that nothing can rebuild (`Vault.take_own_from_cache`):
    every read takes it from there beside the own notes (`Vault.own_dir`), and no read moves it — said, so deleting the
    cache does not take it unseen."""
    for folder in vault.orphaned_own():
        report.notes.append(
            f"{folder} holds a clone's own notes (purged ids, releases) for a vault no longer at the place it "
            f"names, and this vault has none yet: if this vault was moved from there, rename that folder to "
            f"{vault.own_dir.name if vault.own_in_git else 'this vault’s'} (while no optmem runs) — "
            "else records it purged come back with the next sync"
        )
    fallback = vault.own_fallback
    if fallback is not None:
        report.notes.append(
            f"the git directory cannot be written here ({fallback}): this clone's own notes are kept in "
            ".clone/ in the work tree, where a pull of a commit that tracks them could write over them; the "
            "next command that can write the git directory moves them there"
        )
    purged, notes = OWN_FILES
    said = {
        purged: ("the hashes of the records this clone purged", "a sync would bring back what was purged"),
        notes: ("the notes of what left the files outside optmem", "doctor would no longer report it"),
    }
    for name, what in OWN_NOTES.items():
        for path in vault.own_kept(name):
            try:
                mode = path.stat().st_mode
            except OSError:
                continue
            if stat.S_ISREG(mode) and (not mode & 0o222 or not os.access(path, os.W_OK)):
                why = f"mode {stat.filemode(mode)}" + ("" if mode & 0o222 else ": read-only")
                report.problems.append(
                    Problem(
                        "own_note_unwritable",
                        str(path),
                        f"this clone's own note of {what} cannot be written ({why}): commands that add to it fail "
                        f"or remember less — make it writable (`chmod u+w {path}`)",
                    )
                )
    for name in OWN_FILES:
        if (vault.cache_dir / name).is_file():
            what, loss = said[name]
            report.notes.append(
                f".cache/{name} holds {what}, where an older optmem kept them; they are read from there, and "
                "the next command that writes (or `optmem doctor --fix`) moves them among this clone's own notes "
                f"({vault.own_dir}) — do not delete "
                f".cache/ until then: without them {loss}"
            )


def _check_index(vault: Vault, report: Report) -> None:
    from optmem.index import in_step

    if not vault.index_path.exists() and vault.bare():
        vault.read_bare = True  # (no vault yet: said as every read says it, `cli.common`)
    elif not vault.index_path.exists():
        report.notes.append("the search index does not exist yet; it is built on first use")
    elif not in_step(vault):
        report.notes.append("the search index is behind the log; it catches up on next use")
    else:
        _check_index_rows(vault, report)


def _check_index_rows(vault: Vault, report: Report) -> None:
    """An index in step with the log holds a row for each record the log holds (as many as the
    scan counted): one that lacks some — rows lost to a damaged or hand-edited file — would
    answer every search without them, and only a rebuild mends it (a catch-up reads new lines
    only). Two counts: the scan's, and one statement's on the index, with where the index read
    each file to, in one read — a log that grew since the scan is not compared."""
    from optmem.index import open_index
    from optmem.ingest import known_segments, read_meta
    from optmem.stdlib import sqlite3

    if any(p.code == "torn_last_line" for p in report.problems):
        return  # (a torn tail is taken by the index only once whole: reported, and mended, on its own)
    try:
        with open_index(vault) as idx, idx.snapshot():
            read_to = known_segments(read_meta(idx.conn))
            held = idx.count()
    except (OptmemError, sqlite3.Error):
        return  # (an index that cannot be read is rebuilt on next use)
    lines = {name: int(seg.get("lines", 0)) for name, seg in read_to.items() if seg.get("lines")}
    if lines != {name: n for name, (n, _) in report.scanned.items() if n}:
        return  # the log changed since it was scanned: the counts are of two logs
    in_log = sum(records for _, records in report.scanned.values())
    if held != in_log:
        lacks = f"lacks {in_log - held:,}" if held < in_log else f"holds {held - in_log:,} more"
        report.problems.append(
            Problem(
                "index_inconsistent",
                ".cache/index.sqlite3",
                f"the search index holds {held:,} record(s), the log {in_log:,} (it {lacks}), so search, "
                "`get` and `stats` answer without them; run `optmem doctor --fix` (or `optmem reindex`) "
                "to rebuild it from the log",
            )
        )


def check(vault: Vault, *, fix: bool = False, drain: Callable[[Vault], list[str]] | None = None) -> Report:
    """Every check; with `fix`, the safe repairs first, then a fresh check of what remains.
    `drain`: what else `fix` repairs, outside the vault's lock (each write takes it), saying what
    it did — the spools of the hooks (`integrations.git.drain_spools`,
    `integrations.claude_code.drain_spools`, a layer above this one)."""
    vault.require()
    if fix:
        read = Report()
        _check_settings(vault, read)  # an unreadable optmem.toml: repair with the built-in settings
        fixed = _repair(vault, sweep=not read.problems)  # (each part takes the locks it needs)
        fixed += drain(vault) if drain else []  # (outside the lock: each commit takes it, as in the hook)
        report = check(vault)
        report.problems[:0] = read.problems  # … and still report it (the settings now read as built-in)
        if read.problems:
            report.notes.append(
                "no sweep was run: optmem.toml cannot be read, and a sweep by the built-in "
                "lifecycle settings could cool what yours keep — fix the file, then run "
                "`optmem doctor --fix` again"
            )
        report.fixed = fixed
        return report
    report = Report()
    linked = _check_links(vault, report)
    _check_settings(vault, report)
    cache_ok = _check_cache(vault, report)
    journals: dict[str, dict[str, tuple[str, str]]] = {}
    forked: set[str] = set()
    if not {"LOG.jsonl", "log"} & linked:  # (a log that leads outside is neither read nor indexed)
        _scan_log(vault, report, journals, forked=forked)
    _check_hot(vault, report, journals, linked)
    handoffs = _check_markdown(vault, report)
    if "ACCESS.jsonl" not in linked:
        _check_access(vault, report)
    if cache_ok and not {"LOG.jsonl", "ACCESS.jsonl", "log"} & linked:
        _check_index(vault, report)
        _check_own(vault, report)
        _check_handoff_records(vault, report, handoffs)
        if forked:
            _check_forks(vault, report)
        _check_lifecycle(vault, report)
    _check_space(vault, report)
    _check_spools(vault, report)
    _check_writer(vault, report)
    _check_quarantine(vault, report)
    if cache_ok:
        _check_lost(vault, report)
        _check_purged(vault, report)
    if not vault.trusted:
        report.notes.append(
            "this vault is inside a git work tree and not on your trust list (it came in a clone): its "
            "redlines read as unverified notes until you have read them and run `optmem trust`"
        )
    if cache_ok and vault.segmented and not {"LOG.jsonl", "log"} & linked:
        try:
            _check_from_clones(vault, report)
        except OptmemError:  # (a log file that cannot be read: named above)
            pass
    return report


def _check_quarantine(vault: Vault, report: Report) -> None:
    """A LOG.quarantine.jsonl that holds lines: named, with how to bring a line back — what
    `--fix` moved out of the log is out of every read until a person puts it back, and no later
    check would say so."""
    path = vault.root / QUARANTINE
    moved = stamped = 0
    try:
        with open(path, "rb") as fh:
            for raw, _ in fsio.lines(fh):
                if raw.strip():
                    stamped += b'"stamped"' in raw
                    moved += b'"stamped"' not in raw
    except OSError:  # (none: the usual case; a folder or unreadable file: nothing to count)
        return
    if moved:
        report.notes.append(
            f"{QUARANTINE} holds {moved} line(s) `doctor --fix` moved out of the log, which no read sees: each "
            'entry\'s "raw" is the line as it was (from its "file", else LOG.jsonl, at "line") — to bring one '
            "back, correct what doctor said of it and append it to that file, then run `optmem doctor`"
            + (f" ({stamped} more are lines stamped with a ts: those are in the log already)" if stamped else "")
        )


def _check_from_clones(vault: Vault, report: Report) -> None:
    """A note naming what other clones wrote that acts here as this clone's own (tester 13,
    finding 6): the current redlines whose lines are in another writer's folder, and the hot
    entries whose last journal record is — or says it came in by sync (`origin: sync`, a line
    typed into a file on another clone). In a trusted vault they are rules and hot memory here:
    trusting a clone trusts whoever can push to it."""
    from optmem import layout
    from optmem.index import open_index
    from optmem.record import Tier

    own = f"{layout.SEGMENTS}/{layout.writer(vault.root)}/"

    def elsewhere(idx: Any, row: Any) -> bool:
        name = idx.file_of(row)
        return row.origin == "sync" or (name.startswith(f"{layout.SEGMENTS}/") and not name.startswith(own))

    with open_index(vault) as idx:
        now = clock.now().timestamp()
        rules = [
            r.id[-8:]
            for r in idx.rows(f"r.tier = {int(Tier.REDLINE)} AND r.forgotten = 0")
            if view.status(r, now) == view.Status.CURRENT and elsewhere(idx, r)
        ]
        entries = []
        for target, project in memory.targets(vault):
            try:
                hot = memory.load(vault, target, project)
            except OptmemError:
                continue
            held = {memory.entry_id(e) for e in hot.entries}
            last: dict[str, Any] = {}
            for row in idx.journal(hot.name):
                step = memory.journal_step(idx.record(row))
                if step:
                    last[step[1]] = row
            entries += [f"{hot.name} [{e}]" for e, row in last.items() if e in held and elsewhere(idx, row)]
    if rules or entries:
        said = [f"redline(s) {', '.join(rules[:10])}{' …' if len(rules) > 10 else ''}"] if rules else []
        said += (
            [f"hot-memory entr(ies) {', '.join(entries[:10])}{' …' if len(entries) > 10 else ''}"] if entries else []
        )
        report.notes.append(
            f"written on other clones, acting here as this clone's own: {'; '.join(said)} — "
            + (
                "this vault is trusted, and trusting it trusts whoever can push to it; `optmem get ID` / `optmem "
                "show` read them, `optmem forget ID --redline` / `optmem remove` take one out"
                if vault.trusted
                else "its redlines read as unverified notes until `optmem trust`; the hot entries are in every prompt"
            )
        )


def _check_lost(vault: Vault, report: Report) -> int:
    """What outside writes dropped (`optmem.lost`), while it is still gone: records the log lost
    (`records_gone`), the newest entries optmem added removed outside optmem (`entries_gone`). The
    number reported."""
    from optmem.index import open_index

    items = lost.notes(vault)
    if not items:
        return 0
    n = 0
    with open_index(vault) as idx:
        for item in items:
            file = str(item.get("file") or "")
            if item.get("what") == "log":
                ids = [i for i in item.get("ids") or [] if isinstance(i, str) and idx.by_id(i) is None]
                if ids:
                    report.problems.append(
                        Problem("records_gone", file, f"{item['message']} — still gone: {', '.join(ids[:20])}")
                    )
                    n += 1
            elif item.get("what") == "changed":  # records rewritten in place: their earlier words are gone
                ids = [i for i in item.get("ids") or [] if isinstance(i, str)]
                report.problems.append(Problem("records_changed", file, f"{item['message']} — {', '.join(ids[:20])}"))
                n += 1
            elif item.get("what") == "purged":  # a purge elsewhere, by its commit's word: noted, no problem
                ids = [i for i in item.get("ids") or [] if isinstance(i, str) and idx.by_id(i) is None]
                if ids:
                    said = item.get("commits")
                    commits = said if isinstance(said, dict) else {}
                    named = [f"{i} ({str(commits.get(i) or '?')[:12]})" for i in ids[:20]]
                    report.notes.append(f"{item['message']} — still gone: {', '.join(named)}")
            elif item.get("what") == "own":  # own notes a pull wrote over before they were moved: noted
                report.notes.append(str(item["message"]))
            elif item.get("what") == "hot":
                target, project = hot_target(file) or ("memory", None)
                try:
                    held = {memory.entry_id(e) for e in memory.load(vault, target, project).entries}
                except OptmemError:
                    held = set()
                if any(isinstance(e, str) and e not in held for e in item.get("entries") or []):
                    report.problems.append(Problem("entries_gone", file, item["message"]))
                    n += 1
    return n


def _check_spools(vault: Vault, report: Report) -> None:
    """What waits in a spool named in the vault's cache (`spool.known`): the commits of a
    repository hooked to this vault (those this clone's hooks ran in), the handoffs of a Claude
    Code project the vault could not take when its session ended. The next hook run there stores
    them first, and `--fix` does (`integrations.git.drain_spools`, `claude_code.drain_spools`) —
    said here, with how to store them now; a spool too large to be read, with how to split it."""
    from optmem import spool
    from optmem.errors import TooLarge

    for repo, path in spool.known(vault.cache_dir / spool.KNOWN, vault.root):
        try:
            spool.too_big(path)
        except TooLarge as exc:
            report.problems.append(
                Problem(
                    "git_spool", str(path), f"{exc.message}: `optmem hook git-commit --repo {repo}` stores each part"
                )
            )
            continue
        n = spool.pending(path)
        if n:
            report.problems.append(
                Problem(
                    "git_spool",
                    str(path),
                    f"{n} commit(s) of {repo} wait in its spool (the vault could not take them when they were "
                    "made); the next hook run there records them first — or now: `optmem doctor --fix`, or "
                    f"`optmem hook git-commit --repo {repo}`",
                )
            )
    for project, path in spool.known(vault.cache_dir / spool.KNOWN, vault.root, kind="claude-code"):
        if n := spool.pending(path):
            report.problems.append(
                Problem(
                    "agent_spool",
                    str(path),
                    f"{n} handoff(s) of Claude Code project {project} wait in this spool (the vault could not "
                    "take them when the session ended); the project's next Claude Code session stores them "
                    "first — or now: `optmem doctor --fix`",
                )
            )


def _check_writer(vault: Vault, report: Report) -> None:
    """A vault that may have been moved before it had its `.cache/writer` (`layout.moved_from`):
    a note with the command that keeps one writer — a guess, put to the user, never acted on."""
    from optmem import layout

    for path, name in layout.moved_from(vault.root):
        report.notes.append(
            f"this vault may be the one that was at {path} (that folder is gone, and its writer {name} has a "
            f"folder here, but this clone writes as another): if it is that folder moved or renamed — not a copy "
            f"or a clone —, `optmem segment --writer {name}` makes this clone write as {name} again, so the vault "
            "keeps one writer's files on this machine (the records of the other folder stay, and are read)"
        )


MIN_FREE = 16 << 20  # bytes: below this, a write to the log or the index may fail any time


def space_needed(index_bytes: int, log_bytes: int) -> int:
    """Free bytes the vault's disk should keep: a rebuild writes a whole new index beside the
    old one (about the size of the old, or of the log when there is none yet)."""
    return max(MIN_FREE, 2 * (index_bytes or log_bytes))


def _check_space(vault: Vault, report: Report) -> None:
    """Low disk space, and reads that could not update the index (they answer from the log)."""
    if vault.degraded:
        report.problems.append(Problem("index_not_updated", ".cache", vault.degraded))
    elif vault.cache_dir.is_dir():
        why = fsio.probe_write(vault.cache_dir)
        if why:
            report.problems.append(
                Problem(
                    "index_not_updated",
                    ".cache",
                    f"nothing can be written in .cache/ ({why}): the search index cannot be kept up to date, so "
                    "reads answer from LOG.jsonl (slower) and writes are refused — free some disk space or make "
                    "the vault writable",
                )
            )
    try:
        st = os.statvfs(vault.root)
    except (OSError, AttributeError):  # (no statvfs: Windows)
        return
    free = st.f_bavail * st.f_frsize
    sizes = [
        vault.index_path.stat().st_size if vault.index_path.is_file() else 0,
        sum(p.stat().st_size for _, p in vault.segments() if p.is_file()),
    ]
    need = space_needed(*sizes)
    if free < need:
        report.problems.append(
            Problem(
                "low_disk_space",
                ".",
                f"{free / 2**20:.1f} MiB free on the vault's disk, and keeping the search index up to date "
                f"needs about {need / 2**20:.0f} MiB: free some space — meanwhile reads answer from "
                "LOG.jsonl (slower) and writes may be refused",
            )
        )


def _check_links(vault: Vault, report: Report) -> set[str]:
    """The vault's files and folders that lead outside it through a symbolic link (git can carry
    one): optmem neither reads nor writes them. Their names, as the vault names them.

    The whole vault is walked (git's own folder aside), so every file and folder optmem reads —
    settings, hot files, handoffs, tree nodes, writer folders and their log files, the cache —
    is covered, whatever its name; a linked folder is named, not entered."""
    import os

    root = vault.root
    paths: list[Path] = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if not (here == root and d == ".git"))
        paths += [here / name for name in sorted(files) + dirs if (here / name).is_symlink()]
    linked = set()
    for path in sorted(paths):
        real = fsio.outside(path, root)
        if real is not None:
            rel = path.relative_to(root).as_posix()
            linked.add(rel)
            report.problems.append(
                Problem(
                    "link_outside",
                    rel,
                    f"leads outside the vault (to {real}) through a symbolic link: optmem neither reads nor "
                    "writes it — replace the link with a real file or folder",
                )
            )
    return linked


FUTURE_SLACK = clock.FUTURE_SLACK  # an ACCESS.jsonl time further ahead than this is no clock skew


def _check_access(vault: Vault, report: Report) -> None:
    """ACCESS.jsonl (recalls and sweep marks; one per writer in a segmented vault): a file, of
    lines that parse. Its lines are hints — a bad one only loses a recall — so they are reported
    for a person, not moved."""
    for name, path in vault.access_files():
        _check_access_file(name, path, report)


def _check_access_file(name: str, path: Path, report: Report) -> None:
    from optmem.ingest import parse_access

    if not path.exists():
        return
    if not path.is_file():
        report.problems.append(
            Problem(
                "unreadable",
                name,
                "is not a file (a folder?); recalls and cold marks are ignored until it is moved aside",
            )
        )
        return
    bad: list[int] = []
    future: list[tuple[int, str]] = []
    soon = clock.now().timestamp() + FUTURE_SLACK
    with open(path, "rb") as fh:
        for n, (raw, _) in enumerate(fsio.lines(fh), 1):
            if not raw.strip():
                continue
            line = parse_access(raw)
            if line is None:
                bad.append(n)
            elif line[0] > soon:
                future.append((n, str(line[1]["ts"])))
    for n, ts in future[:10]:
        report.problems.append(
            Problem(
                "future_time",
                name,
                f"ts {ts[:40]!r} is in the future: the records it names would count as recalled until then "
                "and never cool — delete the line (only a recall or a cold mark is lost)",
                n,
            )
        )
    if len(future) > 10:
        report.notes.append(f"{name}: {len(future) - 10} more line(s) dated in the future not listed")
    for n in bad[:10]:
        report.problems.append(
            Problem(
                "unparseable_line",
                name,
                "not a recall or sweep "
                "line (JSON with a ts); it is skipped — delete it (only a "
                "recall or a cold mark is lost)",
                n,
            )
        )
    if len(bad) > 10:
        report.notes.append(f"{name}: {len(bad) - 10} more unparseable line(s) not listed")


UNCHECKED_SHOWN = 20


def _check_lifecycle(vault: Vault, report: Report) -> None:
    """Guesses left pending past `pending_ttl_days` (no sweep since): the queue is not being
    reviewed, and they still rank as if fresh — a note when `auto_sweep` is off (the person
    sweeps, and may leave them: a vault frozen at a date, as the sample vault is). And the facts
    that matter unchecked for `unchecked_days` (listed, not problems: `optmem verify` them, or
    correct them)."""
    from optmem import facts, lifecycle, review
    from optmem.index import in_step, open_index

    s = vault.settings.lifecycle
    now = clock.now().timestamp()
    if vault.bare():  # (nothing to check: said once, as every read says it — `_check_index`)
        return
    if not in_step(vault):
        report.notes.append(
            "pending records past their TTL are checked once the index has caught up "
            "(run any command, then doctor again)"
        )
        return
    try:
        with open_index(vault) as idx:
            stale = [
                (row, idx.file_of(row)) for row in idx.pending_rows() if lifecycle.cools(s, row, now) == "pending_ttl"
            ]
            unchecked = lifecycle.unchecked(idx, s, now)
            split = facts.split_keys(idx, now)
            lines_blocked, _ = review.blocked(idx, now)
            ahead = [
                (row, idx.file_of(row)) for row in idx.rows("r.ts > ? ORDER BY r.n LIMIT 21", (now + FUTURE_SLACK,))
            ]
            held_sql, held_params = view.is_sql(view.Status.HELD, now)
            held = idx.rows(f"r.held != 0 AND {held_sql}", held_params)
            listed = unchecked[:UNCHECKED_SHOWN]
            stored = idx.as_stored([row for _, row in listed])  # (as every surface shows them)
            report.unchecked = [
                {
                    "id": row.id,
                    "since": view.iso(since),
                    "text": " ".join(view.shown(idx.record(row).text, row.n in stored).split())[:120],
                    "key": view.shown(row.key, row.n in stored),
                }
                for since, row in listed
            ]
    except OptmemError:
        return  # the log's own problems are reported above
    live = (view.Status.CURRENT, view.Status.PENDING, view.Status.COLD, view.Status.HELD)
    for row, file in ahead[:20]:
        when = view.iso(row.ts or 0)
        st = view.status(row, now)
        if st not in live:  # replaced, forgotten or past: its date decides nothing now
            report.notes.append(
                f"{file}:{line_of(row.n)} {row.id} is dated {when}, in the future, and is {st.value}: its date "
                "decides nothing now; `optmem purge ID` takes it out if nothing needs it"
            )
            continue
        report.problems.append(
            Problem(
                "future_time",
                file,
                f"dated {when}, in the future (a clock set ahead, or OPTMEM_NOW), and {st.value}: it reads as "
                "new until then, and among its key's values as newer than every value not written after it "
                "(one written after it replaces it, whatever the clocks say). The log is never rewritten: if "
                "the date is wrong, `optmem correct ID TEXT` says it again under today's date (or `optmem purge "
                "ID` if nothing needs it)",
                line_of(row.n),
                row.id,
            )
        )
    if lines_blocked:  # (not a problem of the files: each waits for a person's review, as a held record does)
        from optmem.quarantine import kind_of

        secrets = [h.id[-8:] for h in lines_blocked if kind_of(h.rule) == "secret"]
        named = ", ".join(secrets[:5]) + (", …" if len(secrets) > 5 else "")
        report.notes.append(
            f"{len(lines_blocked)} line(s) no write gate held read as [BLOCKED] (typed into the log, brought by sync, "
            "or written with --allow-unsafe; the scanner flags them) — `optmem quarantine` lists them: "
            "`optmem release ID` if one is fine, `optmem forget ID` if not"
            + (
                f"; {len(secrets)} of them hold a secret ({named}), "
                "stored in the log and copied by every sync: `optmem purge ID --yes` deletes each"
                if secrets
                else ""
            )
        )
    if split:  # (each domain keeps its own values: a note, as a person may mean it)
        names = ", ".join(sk.key for sk in split[:5]) + (f" and {len(split) - 5} more" if len(split) > 5 else "")
        report.notes.append(
            f"{len(split)} key(s) hold a different current value in two or more domains ({names}): each domain "
            "keeps its own, but if they are one fact, `optmem conflicts` lists them — correct the stale one"
        )
    if held:  # (not a problem of the files: each waits for a person's review)
        report.notes.append(
            f"{len(held)} record(s) held in quarantine — a possible prompt injection each, out of context and "
            "search until you review them: `optmem quarantine` lists them with the rule that fired, "
            "`optmem release ID` or `optmem forget ID` decides"
        )
    if len(unchecked) > UNCHECKED_SHOWN:
        report.notes.append(
            f"{len(unchecked) - UNCHECKED_SHOWN} more fact(s) unchecked for {s.unchecked_days:g}+ days not listed"
        )
    if stale and s.auto_sweep == "off":  # (the person sweeps: a guess left pending is theirs to leave)
        report.notes.append(
            f"{len(stale)} guess(es) pending for more than {s.pending_ttl_days:g} days (`optmem pending` lists "
            'them): with `[lifecycle] auto_sweep = "off"` no sweep cools them until you run `optmem sweep` — '
            "or confirm or reject them"
        )
        return
    swept = _last_sweep(vault)
    for row, file in stale[:20]:
        report.problems.append(
            Problem(
                "stale_pending",
                file,
                f"pending for more than {s.pending_ttl_days:g} days and not cooled by a sweep yet "
                f"(last sweep: {swept}): confirm or reject it (`optmem pending`), or run `optmem sweep` to cool "
                "it (`doctor --fix` does)",
                line_of(row.n),  # (its line in its file; `n` is its index key)
                row.id,
            )
        )
    if len(stale) > 20:
        report.notes.append(f"{len(stale) - 20} more stale pending record(s) not listed")


def _last_sweep(vault: Vault) -> str:
    """When the last sweep ran, as `stats` says it ("never" when none has): a sweep before a
    guess went stale — or an import, which marks every record it brings as seen — cools nothing
    of it."""
    from optmem.index import open_index

    with open_index(vault) as idx:
        at = idx.last_sweep()
    return "never" if at is None else view.iso(at)


def _check_purged(vault: Vault, report: Report) -> None:
    """Records this clone purged (`lost.purged_hashes`) that are still in the log: a purge cut
    short (killed, a full disk) — it notes the ids before it deletes anything and rewrites the log
    last — or a line put back by hand or by a merge no sync has dropped again. Run again, the
    purge finishes."""
    from optmem.index import open_index

    hashes = lost.purged_hashes(vault)
    if not hashes:
        return
    with open_index(vault) as idx:
        left = sorted(rid for rid in idx.ids() if lost.id_hash(rid) in hashes)
    if not left:
        return
    shown = " ".join(left[:20]) + (" …" if len(left) > 20 else "")
    report.problems.append(
        Problem(
            "purge_unfinished",
            "the log" if vault.segmented else "LOG.jsonl",
            f"purge unfinished: {len(left)} record(s) this clone purged are still in the log ({shown}) — a purge "
            "was cut short (killed, a full disk), or a line was put back; run "
            f"`optmem purge {' '.join(left[:20])} --yes` again to finish it",
            id=left[0] if len(left) == 1 else None,
        )
    )


def _own_files(vault: Vault, names: list[str]) -> set[str]:
    """The log files `--fix` may rewrite: the ones this clone writes. Another writer's file is
    theirs — a torn tail there may be a sync still under way — so its problems are only reported."""
    if not vault.segmented:
        return set(names)
    from optmem import layout

    try:
        own = f"{layout.SEGMENTS}/{layout.writer(vault.root)}/"
    except OptmemError:  # no writer id can be recorded (a read-only home): nothing here is this clone's
        return set()
    return {name for name in names if name.startswith(own)}


def _repair(vault: Vault, *, sweep: bool = True) -> list[str]:
    """The safe repairs, saying what each did. The log is mended under the vault lock (only when
    a scan without it finds something to mend); the index is then rebuilt as `reindex` rebuilds
    it — from a snapshot, outside the lock, caught up and swapped in under it — so agents keep
    writing meanwhile; then the sweep (its own lock) and the hot files' journals (the vault lock)."""
    from optmem import index, lifecycle

    fixed: list[str] = []
    if vault.bare():  # a folder holding none of a vault's files: nothing to mend, nothing written there
        vault.read_bare = True
        return fixed
    if lost.notes(vault):
        index.prepare(vault)  # (`_check_lost` reads the index: a rebuild, if due, not under the lock)
    if lost.notes(vault) or _log_to_mend(vault):
        with vault.lock():
            fixed += _mend_log(vault)
    index.open_index(vault, rebuild=True).close()
    fixed.append("rebuilt the search index")
    stale = Report()
    _check_lifecycle(vault, stale)
    swept = lifecycle.sweep(vault, show=0) if stale.problems and sweep else None
    if swept and swept.cooled:
        fixed.append(
            f"swept: {swept.cooled} record(s) cooled ({', '.join(f'{n} by {w}' for w, n in swept.by_reason.items())})"
        )
    with vault.lock():
        fixed += _mend_hot(vault)
        fixed += _settle_forgotten_handoffs(vault)
    return fixed


def _log_to_mend(vault: Vault) -> bool:
    """Whether this clone's log files hold what `_mend_log` mends (read without the lock: the
    mending reads them again under it)."""
    untimed: dict[str, dict[int, str]] = {}
    copies: dict[str, list[int]] = {}
    bad, torn = _scan_log(vault, Report(), untimed=untimed, copies=copies)
    mine = _own_files(vault, [name for name, _ in vault.segments()])
    return any(name in mine for name in [*bad, *torn, *untimed, *copies])


def _mend_log(vault: Vault) -> list[str]:
    """The log's repairs (lock held): the notes of what left it cleared, a torn last line ended,
    unparseable lines and byte-for-byte copies moved to the quarantine, lines without `ts`
    stamped — in this clone's own files."""
    fixed: list[str] = []
    told = _check_lost(vault, Report())
    if lost.clear(vault) and told:  # told by the command that noticed, and by doctor: seen now
        fixed.append(f"cleared the note of what left the log or a hot file outside optmem ({told} report(s))")
    probe = Report()
    bad, torn = _scan_log(vault, probe)
    files = dict(vault.segments())
    mine = _own_files(vault, list(files))
    for name in (t for t in torn if t in mine):
        fsio.append_bytes(files[name], b"\n", within=vault.root)
        fixed.append(f"ended the torn last line of {name}")
    if torn:
        bad, _ = _scan_log(vault, Report())  # the ended line may itself be unparseable
    moved: dict[str, list[int]] = {}  # each file's lines moved out, numbered as doctor found the file
    for name, lines in bad.items():
        if name in mine:
            _quarantine(vault, name, files[name], set(lines))
            moved[name] = sorted(lines)
            fixed.append(
                f"moved {len(lines)} unparseable line(s) ({', '.join(map(str, lines[:10]))}"
                f"{', …' if len(lines) > 10 else ''}) of {name} to {QUARANTINE}"
            )
    copies: dict[str, list[int]] = {}
    _scan_log(vault, Report(), copies=copies)
    for name, lines in copies.items():  # (numbered as the file now is; in the quarantine as it was found)
        found_at = {n: _found_line(n, moved.get(name, [])) for n in lines}
        _quarantine(vault, name, files[name], set(lines), found_at)
        moved[name] = sorted([*moved.get(name, []), *found_at.values()])
        shown = sorted(found_at.values())
        fixed.append(
            f"moved {len(lines)} line(s) ({', '.join(map(str, shown[:10]))}{', …' if len(lines) > 10 else ''}) of "
            f"{name} that repeated an earlier line byte for byte to {QUARANTINE}"
        )
    untimed: dict[str, dict[int, str]] = {}
    _scan_log(vault, Report(), untimed=untimed)
    for name, lines_of in untimed.items():
        if name not in mine:
            continue
        # numbered as the file was found, as the moved lines are: one numbering in the quarantine
        found_at = {n: _found_line(n, moved.get(name, [])) for n in lines_of}
        at = _stamp(vault, name, files[name], lines_of, found_at)
        lines = [found_at[n] for n in lines_of]
        fixed.append(
            f"stamped {len(lines)} line(s) without ts ({', '.join(map(str, lines[:10]))}"
            f"{', …' if len(lines) > 10 else ''}) of {name} with ts {at} — the file's last-modified time, "
            "the latest they can have been written (or now, if that is earlier) — and with the "
            f"id each read as, so references to it still hold; the lines as they were are in {QUARANTINE}"
        )
    return fixed


def _mend_hot(vault: Vault) -> list[str]:
    """Each hot file journalled as it is, where the journal disagrees (lock held)."""
    fixed: list[str] = []
    for target, project in memory.targets(vault):
        try:
            hot = memory.load(vault, target, project)
            journalled = memory.reconcile(vault, target, project)
        except OptmemError:
            continue  # reported by the checks that follow
        if journalled:
            fixed.append(
                f"journalled {hot.name} as it is ({len(journalled)} record(s)): its journal now agrees with the file"
            )
        elif memory.load(vault, target, project).entries != hot.entries:
            fixed.append(
                f"finished the edit of {hot.name} that was journalled and cut short before its file was written"
            )
    return fixed


def _settle_forgotten_handoffs(vault: Vault) -> list[str]:
    """A HANDOFF.md nobody edited that copies a forgotten handoff (`forget` killed between its
    record and the file): the file becomes the project's handoff before it, as `forget` does."""
    from optmem import handoff, handoff_file
    from optmem.index import open_index

    named = _check_markdown(vault, Report())
    with open_index(vault) as idx:
        rows = [(rel, project, rid, idx.by_id(rid)) for rel, project, rid in named]
    fixed = []
    for rel, project, rid, row in rows:
        if row is not None and row.kind == HANDOFF and row.project == project and handoff.record_gap(row, project, rid):
            if not handoff_file.settle(vault, project, rid):
                fixed.append(f"{rel} copied the forgotten handoff {rid}: it now shows the handoff before it, if any")
    return fixed


def _exact(body: bytes) -> dict[str, str]:
    """A line's exact bytes as the quarantine keeps them: `raw`, or `raw_base64` when they are
    not UTF-8."""
    try:
        return {"raw": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"raw_base64": base64.b64encode(body).decode("ascii")}


def _found_line(n: int, moved: list[int]) -> int:
    """Line `n` of a file after the lines `moved` (sorted, numbered as the file was found) were
    taken out of it, numbered as the file was found."""
    for m in moved:
        if m > n:
            break
        n += 1
    return n


def _stamp(vault: Vault, name: str, path: Path, untimed: dict[int, str], found_at: dict[int, int]) -> str:
    """Give lines without `ts` one, and the id they read as (derived from their bytes, which the
    stamp changes) as an explicit `id`: the record keeps its id, and whatever names it still
    finds it. The time is the log's last-modified time — a line in the log was written by then —
    or now, when that is earlier (a clock set back, OPTMEM_NOW). The original lines go to the
    quarantine first (exact bytes, with their line numbers as `found_at` gives them: the file's as
    doctor found it, before any line was moved out), then the log is rewritten
    atomically: a crash in between leaves a line in both places, never in neither. Returns the
    time stamped."""
    from optmem.stdlib import datetime

    now = clock.now()
    modified = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    at = clock.format_ts(min(modified, now))
    kept: list[bytes] = []
    with open(path, "rb") as src:
        for n, raw in enumerate(src, 1):
            if n in untimed:
                entry = {
                    **_where(name),
                    "line": found_at[n],
                    "stamped": clock.format_ts(now),
                    **_exact(raw.rstrip(b"\r\n")),
                }
                kept.append(json.dumps(entry, ensure_ascii=False).encode("utf-8") + b"\n")
    fsio.append_bytes(vault.root / QUARANTINE, b"".join(_not_kept_yet(vault, kept)), within=vault.root)
    with fsio.rewriting(path, within=vault.root) as (out, src):
        for n, raw in enumerate(src, 1):
            if n in untimed:
                obj = {k: v for k, v in json.loads(raw).items() if k not in ("id", "ts")}
                raw = (
                    json.dumps({"id": untimed[n], "ts": at, **obj}, ensure_ascii=False, separators=(",", ":")).encode(
                        "utf-8"
                    )
                    + b"\n"
                )
            out.write(raw)
    return at


def _kept_as(entry: Any) -> tuple[Any, ...] | None:
    """What makes a quarantine entry the same line moved (or stamped) again: its file, its line
    number, its exact bytes and which of the two it was — not when."""
    if not isinstance(entry, dict):
        return None
    said = (entry.get("file"), entry.get("line"), entry.get("raw"), entry.get("raw_base64"))
    return (*(x if isinstance(x, str | int | None) else repr(x) for x in said), "stamped" in entry)


def _not_kept_yet(vault: Vault, entries: list[bytes]) -> list[bytes]:
    """The quarantine entries (JSON lines) it does not hold yet: a `--fix` cut short after it
    wrote the quarantine and before it rewrote the log finds the same lines again, and the
    quarantine keeps each once."""
    path = vault.root / QUARANTINE
    if not path.is_file():
        return entries
    held: set[tuple[Any, ...] | None] = set()
    with open(path, "rb") as fh:
        for raw, _ in fsio.lines(fh):
            try:
                held.add(_kept_as(json.loads(raw)))
            except (ValueError, RecursionError):
                continue
    return [e for e in entries if _kept_as(json.loads(e)) not in held]


def _where(name: str) -> dict[str, str]:
    """The file a quarantined line came from, when it is not LOG.jsonl (which older entries mean)."""
    return {} if name == "LOG.jsonl" else {"file": name}


def _quarantine(vault: Vault, name: str, path: Path, lines: set[int], found_at: dict[int, int] | None = None) -> None:
    """Move these lines out of the log: exact bytes and line numbers kept in the quarantine.

    The quarantine is written first, the log rewritten second: a crash in between leaves a line
    in both places, never in neither.
    """
    moved: list[bytes] = []
    at = clock.format_ts(clock.now())
    with open(path, "rb") as src:
        for n, raw in enumerate(src, 1):
            if n in lines:
                line = found_at[n] if found_at else n  # (numbered as doctor found the file)
                entry: dict[str, Any] = {**_where(name), "line": line, "moved": at, **_exact(raw.rstrip(b"\n"))}
                moved.append(json.dumps(entry, ensure_ascii=False).encode("utf-8") + b"\n")
    fsio.append_bytes(vault.root / QUARANTINE, b"".join(_not_kept_yet(vault, moved)), within=vault.root)
    with fsio.rewriting(path, within=vault.root) as (out, src):
        for n, raw in enumerate(src, 1):
            if n not in lines:
                out.write(raw)
