"""`doctor`: check a vault people can edit, and make only the repairs that lose nothing.

Checks: every log line parses and has what it needs, ids are unique, `corrects`/`ref` point at
existing records, the last line is whole, hot files are readable and within their limits,
handoff and tree files have valid front matter, and the index is in step. `--fix` only ends a
torn last line, moves unparseable lines — their exact bytes and line numbers — into
`LOG.quarantine.jsonl`, and rebuilds the index; everything else is reported for a person.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from optmem import clock, fsio, memory
from optmem.errors import BadFrontMatter, OptmemError, Unreadable
from optmem.record import BadLine, clean_ref, missing_fields, names, parse_fields
from optmem.vault import Vault

QUARANTINE = "LOG.quarantine.jsonl"


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

    @property
    def ok(self) -> bool:
        return not self.problems


def _scan_log(vault: Vault, report: Report) -> tuple[list[int], bool]:
    """Check LOG.jsonl line by line (streamed); returns (unparseable line numbers, torn tail)."""
    path = vault.log_path
    if not path.exists():
        return [], False
    seen: dict[str, int] = {}
    refs: list[tuple[int, str, str]] = []
    bad: list[int] = []
    torn = False
    with open(path, "rb") as fh:
        n = 0
        for raw in fh:
            n += 1
            if not raw.endswith(b"\n"):
                torn = True
                report.problems.append(Problem(
                    "torn_last_line", "LOG.jsonl", "the last line has no final newline (a write was "
                    "cut short); --fix ends it", n))
            body = raw.rstrip(b"\r\n")
            if not body.strip():
                continue
            try:
                f = parse_fields(body)
            except BadLine as exc:
                bad.append(n)
                report.problems.append(Problem("unparseable_line", "LOG.jsonl",
                                               f"{exc}; --fix moves it to {QUARANTINE}", n))
                continue
            lacking = missing_fields(body)
            if lacking:
                report.problems.append(Problem("missing_field", "LOG.jsonl",
                                               f"the record has no {', '.join(lacking)}", n, f["id"]))
            if f["id"] in seen:
                report.problems.append(Problem(
                    "duplicate_id", "LOG.jsonl", f"id also used on line {seen[f['id']]}", n, f["id"]))
            else:
                seen[f["id"]] = n
            for ref in f["corrects"]:
                refs.append((n, f["id"], ref))
            if f["ref"]:
                refs.append((n, f["id"], f["ref"]))
    ids = sorted(seen)
    for n, rid, ref in refs:
        if not _known(ref, seen, ids):
            report.problems.append(Problem("dangling_ref", "LOG.jsonl",
                                           f"points at {ref}, which no record has", n, rid))
    return bad, torn


def _known(ref: str, seen: dict[str, int], ids: list[str]) -> bool:
    """Whether some record has the id `ref` names (see `record.names`); `ids` is sorted."""
    import bisect

    ref = clean_ref(ref)
    if ref in seen:
        return True
    i = bisect.bisect_left(ids, ref)  # a prefix sorts right before the ids it starts
    if i < len(ids) and names(ref, ids[i]):
        return True
    return any(names(ref, rid) for rid in ids)  # a suffix: no order helps


def _check_hot(vault: Vault, report: Report) -> None:
    for target, project in memory.targets(vault):
        try:
            hot = memory.load(vault, target, project)
        except OptmemError as exc:
            name = f"projects/{project}/MEMORY.md" if project else ("MEMORY.md" if target == "memory" else "USER.md")
            report.problems.append(Problem("bad_hot_file", name, exc.message))
            continue
        u = hot.usage()
        if u.chars > u.limit:
            report.problems.append(Problem(
                "over_limit", hot.name, f"{u.chars:,} of {u.limit:,} characters; consolidate with "
                "`optmem replace` / `optmem remove`"))


def _check_markdown(vault: Vault, report: Report) -> None:
    from optmem import handoff, tree

    pdir = vault.root / "projects"
    files = sorted(pdir.glob("*/HANDOFF.md")) if pdir.is_dir() else []
    for path in files:
        rel = str(path.relative_to(vault.root))
        try:
            handoff.parse(fsio.read_text(path) or "")
        except (BadFrontMatter, Unreadable) as exc:
            report.problems.append(Problem("bad_front_matter", rel, exc.message))
    troot = vault.root / "tree"
    for path in sorted(troot.glob("*/*.md")) if troot.is_dir() else []:
        rel = str(path.relative_to(vault.root))
        try:
            tree.parse(fsio.read_text(path) or "")
        except (BadFrontMatter, Unreadable) as exc:
            report.problems.append(Problem("bad_front_matter", rel, exc.message))


def _check_index(vault: Vault, report: Report) -> None:
    from optmem.index import in_step

    if not vault.index_path.exists():
        report.notes.append("the search index does not exist yet; it is built on first use")
    elif not in_step(vault):
        report.notes.append("the search index is behind LOG.jsonl; it catches up on next use")


def check(vault: Vault, *, fix: bool = False) -> Report:
    """Every check; with `fix`, the safe repairs first, then a fresh check of what remains."""
    vault.require()
    if fix:
        with vault.lock():
            fixed = _repair(vault)
        report = check(vault)
        report.fixed = fixed
        return report
    report = Report()
    _scan_log(vault, report)
    _check_hot(vault, report)
    _check_markdown(vault, report)
    _check_index(vault, report)
    return report


def _repair(vault: Vault) -> list[str]:
    from optmem import index

    fixed: list[str] = []
    probe = Report()
    bad, torn = _scan_log(vault, probe)
    if torn:
        fsio.append_bytes(vault.log_path, b"\n")
        fixed.append("ended the torn last line of LOG.jsonl")
        bad, _ = _scan_log(vault, Report())  # the ended line may itself be unparseable
    if bad:
        _quarantine(vault, set(bad))
        fixed.append(f"moved {len(bad)} unparseable line(s) ({', '.join(map(str, bad[:10]))}"
                     f"{', …' if len(bad) > 10 else ''}) to {QUARANTINE}")
    index.build(vault)
    fixed.append("rebuilt the search index")
    return fixed


def _quarantine(vault: Vault, lines: set[int]) -> None:
    """Move these lines out of the log: exact bytes and line numbers kept in the quarantine.

    The quarantine is written first, the log rewritten second: a crash in between leaves a line
    in both places, never in neither.
    """
    moved: list[bytes] = []
    at = clock.format_ts(clock.now())
    with open(vault.log_path, "rb") as src:
        for n, raw in enumerate(src, 1):
            if n in lines:
                body = raw.rstrip(b"\n")
                entry: dict[str, Any] = {"line": n, "moved": at}
                try:
                    entry["raw"] = body.decode("utf-8")
                except UnicodeDecodeError:
                    entry["raw_base64"] = base64.b64encode(body).decode("ascii")
                moved.append(json.dumps(entry, ensure_ascii=False).encode("utf-8") + b"\n")
    fsio.append_bytes(vault.root / QUARANTINE, b"".join(moved))
    with fsio.atomic_stream(vault.log_path) as out, open(vault.log_path, "rb") as src:
        for n, raw in enumerate(src, 1):
            if n not in lines:
                out.write(raw)
