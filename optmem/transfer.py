"""Moving memory in and out: `export` (the whole vault as JSONL) and `import` (an export, or the
memory files of the tools users come from).

An export is one JSON object a line: a header (`{"format": "optmem-export", "version": 1, …}`),
then every log record as `{"record": {…}}` in time order (ts, then id: the same on every clone),
then each hot file as `{"hot": {"file", "front", "entries": [{"id", "text", "journal"}]}}`. It
says nothing of when it was made, so two exports of one vault are identical, and importing one
into an empty vault gives a vault whose export is identical again. Records are keyed by id:
importing twice changes nothing.

An import writes in bulk: every record is checked (it parses; the write gate's scanner finds
nothing in its text or evidence), a bad one is reported with its line number and the rest go in,
appended together, then the index catches up once. A big export into a vault whose log is empty
goes in one pass instead: worker processes check each chunk and prepare its index rows from the
same parse, while this process appends the chunk before and inserts its rows (`_Batch.write_fed`).
Imported history keeps the dates its source gave it, and is marked as seen at the import (a recall
line `via: import`, which warms it without making it recent), so the lifecycle's sweep does not
cool it before anyone could look.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from optmem import clock, fsio, scan
from optmem.errors import OptmemError, UsageError, quote
from optmem.record import BadLine, Record, derived_id, parse_line
from optmem.vault import Vault

FORMAT, VERSION = "optmem-export", 1
SOURCES = ("claude-code", "codex", "hermes", "mem0")
CHUNK = 5000  # records checked (and appended) together
Progress = Callable[[int, int], None]


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# -- export -----------------------------------------------------------------------------------
def export_lines(vault: Vault) -> Iterator[str]:
    """The vault as export lines (see the module's doc). A line the log cannot parse is left
    out (doctor reports it); a hand-typed line gets its derived id written out."""
    from optmem import memory
    from optmem.index import open_index

    vault.require()
    found: list[tuple[str, str, bytes]] = []
    for _, path in vault.segments():
        if not path.is_file():
            continue
        with open(path, "rb") as fh:
            for raw in fh:
                body = raw.strip()
                if not body:
                    continue
                try:
                    rec = parse_line(body, limit=vault.settings.limits.record_bytes)
                except BadLine:
                    continue
                found.append((rec.ts or "", rec.id, body))
    found.sort(key=lambda f: (f[0], f[1]))
    hot = []
    with open_index(vault) as idx:
        for target, project in memory.targets(vault):
            try:
                f = memory.load(vault, target, project)
            except OptmemError:
                continue
            last = {row.key: row.id for row in idx.journal(f.name)}
            entries = [
                {"id": (e := memory.entry_id(text)), "text": text, "journal": last.get(f"hot:{f.name}:{e}")}
                for text in f.entries
            ]
            if entries or f.front:
                hot.append({"file": f.name, "front": f.front, "entries": entries})
    yield _dumps({"format": FORMAT, "version": VERSION, "records": len(found), "hot_files": len(hot)})
    seen: set[str] = set()
    for _, rid, body in found:
        if rid in seen:
            continue  # one id written twice (doctor's duplicate_id): the first stands
        seen.add(rid)
        obj = json.loads(body)
        if not isinstance(obj.get("id"), str) or not obj["id"]:
            obj = {"id": rid, **obj}
        yield _dumps({"record": obj})
    for h in hot:
        yield _dumps({"hot": h})


# -- import -----------------------------------------------------------------------------------
def bounded_lines(fh: Any) -> Iterator[str]:
    """An export's lines from a binary handle (a file, a pipe, stdin), each read with a bound: no
    export line is longer than `fsio.LINE_BYTES` (a record is bounded far below), so a longer one
    — or a stream without end, /dev/zero — is no export, and the import stops there with
    `too_large`, having held none of it whole. Bytes that are not UTF-8 read as U+FFFD (the line
    is then refused by its parse, not the import)."""
    from optmem.errors import TooLarge

    n = 0
    while raw := fh.readline(fsio.LINE_BYTES + 1):
        n += 1
        if len(raw) > fsio.LINE_BYTES:
            raise TooLarge(
                f"line {n} is longer than {fsio.size_words(fsio.LINE_BYTES)}: not a line of an optmem export "
                "(`optmem export` writes one record a line); the import stopped there — records before "
                "it are imported (importing again changes nothing)",
                line=n,
                limit=fsio.LINE_BYTES,
            )
        yield raw.decode("utf-8", errors="replace")


def _read(path: Path) -> str:
    """A neighbour's memory file (`--from`), read whole with a bound (`fsio.read_bytes`: a file
    past it, or /dev/zero, is refused as too large, never read in full)."""
    return (fsio.read_bytes(path) or b"").decode("utf-8", errors="replace")


class Imported(NamedTuple):
    source: str  # optmem-export | claude-code | codex | hermes | mem0
    records: int  # records written
    already: int  # records the vault had (same id): left as they were
    hot: int  # hot entries added
    bad: list[dict[str, Any]]  # {"line", "code", "message"}: what was not imported, and why


class _Batch:
    """What an import gathers before it writes: record lines, hot entries, refusals."""

    def __init__(self, vault: Vault, allow_unsafe: bool) -> None:
        from optmem.index import open_index

        self.vault, self.allow_unsafe = vault, allow_unsafe
        with open_index(vault) as idx:
            self.known = idx.ids()
            self.was_empty = idx.count() == 0
        self.lines: list[bytes] = []
        self.ids: list[str] = []
        self.already = 0
        self.bad: list[dict[str, Any]] = []
        self.hot: list[tuple[int, dict[str, Any]]] = []  # (the export's line, its hot file)
        self.idx: Any = None  # an Index, opened once when a --from import looks for words it holds

    def refuse(self, line: int, code: str, message: str, field: str | None = None) -> None:
        self.bad.append({"line": line, "code": code, "message": message, **({"field": field} if field else {})})

    def take(self, checked: list[Checked], keep: bool = True) -> list[Checked]:
        """Records `check` passed (or the reason it did not), in order: the new ids, which are
        kept for `write` unless `keep` is false."""
        ids = [c[1] for c in checked]
        if all(c[3] is None for c in checked) and self.known.isdisjoint(ids) and len(set(ids)) == len(ids):
            self.known.update(ids)  # (every record taken, and none met before: the usual chunk)
            if keep:
                self.lines.extend(c[2] for c in checked)
                self.ids.extend(ids)
            return list(checked)
        new = []
        for c in checked:
            line, rid, raw, refusal = c
            if refusal is not None:
                self.refuse(line, *refusal)
            elif rid in self.known:
                self.already += 1
            else:
                self.known.add(rid)
                new.append(c)
                if keep:
                    self.lines.append(raw)
                    self.ids.append(rid)
        return new

    def add(self, line: int, rid: str, raw: bytes, rec: Record) -> None:
        if rid in self.known:
            self.already += 1
            return
        self.take([(line, rid, raw, refusal(rec, self.vault.settings.limits.record_bytes, self.allow_unsafe))])

    def draft(self, line: int, source: str, where: str, text: str, when: float | None, **fields: Any) -> None:
        """A memory read from another tool's files: a record dated as the source dates it, its id
        derived from where it came from and what it says (importing again finds it present)."""
        from optmem import log

        text = text.strip()
        if not text:
            return
        moment = clock.from_epoch(when) if when is not None else clock.now()
        try:
            draft = log.Draft(text, source=source, origin=f"import:{source}", **fields)  # (where it came from)
            rec = log.build_record(self.vault, draft, moment, self.allow_unsafe)
        except OptmemError as exc:
            self.refuse(line, exc.code, exc.message, exc.context.get("field"))
            return
        rid = derived_id(f"{source}\0{where}\0{text}".encode(), moment.timestamp())
        rec = rec._replace(id=rid)
        if rid not in self.known and self._said(rec):
            self.already += 1  # the same words from the same tool, dated otherwise (a copied folder)
            return
        self.add(line, rid, rec.to_line(), rec)

    def _said(self, rec: Record) -> bool:
        """Whether the vault holds a record of these very words from this source, in its scope."""
        from optmem import text as textmod
        from optmem.index import open_index

        fp = textmod.fingerprint(rec.text)
        if fp is None:
            return False
        if self.idx is None:  # one index for the whole gathering (closed by `write`)
            self.idx = open_index(self.vault)
        idx = self.idx
        return any(
            row.source == rec.source and idx.record(row).text == rec.text
            for row in idx.with_fingerprint(fp, rec.domain, rec.project)
        )

    def write(self, progress: Progress | None) -> int:
        """Append the gathered records in bulk, mark them seen at the import, catch the index up
        once (a build when the vault held nothing), and put the hot entries in their files."""
        from optmem import index

        if self.idx is not None:
            self.idx.close()
            self.idx = None
        if not self.lines and not self.hot:
            return 0
        index.prepare(self.vault)
        with self.vault.lock():
            target = self.vault.append_path()
            for i in range(0, len(self.lines), CHUNK):
                fsio.append_lines(target, self.lines[i : i + CHUNK], within=self.vault.root)
            _mark_seen(self.vault, clock.format_ts(clock.now()), self.ids)
            if self.was_empty and self.lines:
                index.build(self.vault, progress)
            else:
                index.open_index(self.vault, progress).close()
        return _put_hot(self)

    def write_fed(
        self, results: Callable[[int, int, float | None], Iterator[Fresh]], total: int, progress: Progress | None
    ) -> int:
        """Into a vault whose log is empty: append the checked records chunk by chunk while the
        index is built from them (`index.build(fed=…)`). `results(sid, hashed, shown)` gives each
        chunk checked and prepared for the index (`check_prepared`), so a record is parsed once
        and the checking overlaps the inserting. Returns the records written."""
        from optmem import index, ingest

        vault = self.vault
        index.prepare(vault)
        with vault.lock():
            target = vault.append_path()
            fsio.append_lines(target, [], within=vault.root)  # (a writer's new file: a segment now)
            name = next(n for n, path in vault.segments() if path == target)
            now = clock.format_ts(clock.now())
            marks, moment = vault.access_path, clock.to_epoch(now)
            # the records are marked seen now; while the recall file holds nothing else, the index
            # takes that from the rows (`Fed.recall`) rather than reading the marks back
            shown = moment if ingest.access_state(marks)[0] == 0 else None

            def batches(sid: int, hashed: int) -> Iterator[Any]:
                done = 0  # record lines read: those before a chunk (`check_prepared`'s `before`)
                for checked, prep, base in results(sid, hashed, shown):
                    new = self.take(checked, keep=False)
                    before = done
                    if len(new) != len(prep.ids):  # an id met before (an export doubled up): only the new
                        prep, before, base = _prepared(new, sid, hashed, fed.lines, shown=shown), fed.lines, 0
                    done += len(checked)
                    if new:
                        at = fsio.append_lines(target, [c[2] for c in new], within=vault.root)
                        fed.mark(_mark_seen(vault, now, [c[1] for c in new]))
                        yield ingest.placed_after(prep, fed.lines - before, at - base)
                        fed.lines += len(new)
                    if progress and total:
                        progress(min(done, total), total)

            fed = ingest.Fed(name, batches, None if shown is None else marks.relative_to(vault.root).as_posix())
            index.build(vault, None, fed=fed)
            return fed.lines


def _mark_seen(vault: Vault, now: str, ids: list[str]) -> bytes:
    """Imported records, marked as seen at the import (`via: import`: warm, not recently used);
    returns the lines appended."""
    from optmem import lifecycle

    step = lifecycle.IDS_PER_LINE
    marks = [lifecycle.access_line(now, touch=ids[i : i + step], via="import") for i in range(0, len(ids), step)]
    if marks:
        fsio.append_lines(vault.access_path, marks, within=vault.root)
    return b"".join(m + b"\n" for m in marks)


Refusal = tuple[str, ...]  # (code, message[, the field at fault])
Checked = tuple[int, str, bytes, Refusal | None]  # (line, id, the line to write, why refused)
PARALLEL_MIN = 4000  # records: below this a worker pool costs more than it saves


def refusal(rec: Record, limit: int, allow_unsafe: bool) -> Refusal | None:
    """Why the write gate refuses a record as an import brings it (`log.check_record`: every
    field it carries bounded and scanned, its names valid), or None."""
    from optmem import log

    try:
        checked = log.check_record(rec, limit, allow_unsafe=allow_unsafe)
        if checked.held and not rec.held:  # an export's line is written as it is: it cannot be held here
            from optmem.errors import UnsafeContent
            from optmem.record import flagged_field

            raise UnsafeContent("flagged", rule=checked.held, field=(flagged_field(rec) or ("text",))[0])
    except OptmemError as exc:
        field = str(exc.context.get("field") or "")
        if exc.code == "unsafe_content":
            message = (
                f"the security scan flags its {field} ({exc.context.get('rule')}); not imported — pass "
                "--allow-unsafe to take it anyway"
            )
        else:
            message = exc.message.replace("nothing was stored", "not imported")
        return exc.code, message, field
    return None


def check(chunk: tuple[list[tuple[int, str]], bool, int]) -> list[Checked]:
    """Export lines holding records, checked: each parses as a record, and the scanner finds
    nothing in it (pure: runs in worker processes for a big import)."""
    return [c for c, _, _ in _checked(*chunk)]


def _checked(lines: list[tuple[int, str]], allow_unsafe: bool, limit: int) -> list[tuple[Checked, Record | None, bool]]:
    """Each line checked, its record, and whether the record's bytes are the line's slice (`_slice`)."""
    out: list[tuple[Checked, Record | None, bool]] = []
    for n, text in lines:
        if text.startswith('{"record":{') and text.endswith("}}\n"):
            # the record's own JSON as `export` writes it: parsed once, written as it stands
            # (a slice that parses as one object is the whole record; anything else is read in full)
            raw = _slice(text)
            try:
                rec = parse_line(raw, n, limit)
            except BadLine:
                pass
            else:
                out.append(((n, rec.id, raw, refusal(rec, limit, allow_unsafe)), rec, True))
                continue
        try:
            obj = json.loads(text)["record"]
        except (ValueError, RecursionError, KeyError, TypeError) as exc:
            out.append(((n, "", b"", ("unparseable_line", f"not valid JSON: {exc}")), None, False))
            continue
        if not isinstance(obj, dict):
            out.append(((n, "", b"", ("unparseable_line", "a record is a JSON object")), None, False))
            continue
        raw = _dumps(obj).encode("utf-8")
        try:
            rec = parse_line(raw, n, limit)
        except BadLine as exc:
            out.append(((n, "", b"", (exc.code, str(exc), *((exc.field,) if exc.field else ()))), None, False))
            continue
        out.append(((n, rec.id, raw, refusal(rec, limit, allow_unsafe)), rec, False))
    return out


def _slice(text: str) -> bytes:
    """A record line as `export` writes it (`{"record":{…}}`), as its record's own bytes."""
    return text[10:-2].encode("utf-8")


# a chunk checked, its accepted records prepared for the index, and the offset they were placed at
Fresh = tuple[list[Checked], Any, int]
Slim = tuple[int, str, bytes | None, Refusal | None]  # a Checked whose bytes may be left to its line


class Task(NamedTuple):
    """A chunk of export lines for `check_prepared`, and where its records would land in segment
    `sid` (name hashed `hashed`) were every record before them taken: after `before` lines, at
    `offset` (the export's record lines, as written, before it); `shown`: when they are marked seen."""

    lines: list[tuple[int, str]]
    allow_unsafe: bool
    limit: int  # `[limits] record_bytes`
    sid: int
    hashed: int
    before: int
    offset: int
    shown: float | None


def check_prepared(task: Task) -> tuple[list[Slim], Any, int]:
    """`check`, and the records it accepts prepared for the index as if written where the task
    says (`ingest.placed_after` moves them to where they do land, when that is elsewhere)."""
    found = _checked(task.lines, task.allow_unsafe, task.limit)
    kept = [(c, rec) for c, rec, _ in found if c[3] is None and rec is not None]
    accepted, records = [c for c, _ in kept], [rec for _, rec in kept]
    prep = _prepared(accepted, task.sid, task.hashed, task.before, records, task.offset, task.shown)
    # a record's bytes that are its line's slice go back as None (the caller has the line: `_whole`)
    checked: list[Slim] = [(c[0], c[1], None, None) if sliced and c[3] is None else c for c, _, sliced in found]
    return checked, prep, task.offset


def _whole(checked: list[Slim], lines: list[tuple[int, str]]) -> list[Checked]:
    """`check_prepared`'s lines checked, each accepted record's bytes back from its line."""
    return [
        (n, rid, _slice(text) if raw is None else raw, why) for (n, rid, raw, why), (_, text) in zip(checked, lines)
    ]


def _prepared(
    accepted: list[Checked],
    sid: int,
    hashed: int,
    before: int,
    records: list[Record] | None = None,
    offset: int = 0,
    shown: float | None = None,
) -> Any:
    """The index rows of checked lines written one after another from `offset`, after `before` lines."""
    from optmem import ingest

    lines, off = [], offset
    for i, (_, _, raw, _) in enumerate(accepted, before + 1):
        lines.append((raw, i, off, len(raw)))
        off += len(raw) + 1
    return ingest.prepare_rows(lines, sid, hashed, records, shown)


def _put_hot(batch: _Batch) -> int:
    """Hot entries from an export, into their files as `add` puts them (`memory.put_entries`):
    while the file's limit holds, journalled (unless the export's own journal records say them
    already); an entry that does not fit is refused and reported (`over_limit`), with what to do.
    A file that is empty takes the export's front matter too."""
    from optmem import memory
    from optmem.vault import hot_target

    added = 0
    for n, h in batch.hot:
        where = hot_target(h["file"])
        if where is None:
            continue
        try:
            put = memory.put_entries(
                batch.vault, *where, [e["text"] for e in h["entries"]], front=h.get("front") or "", source="import"
            )
        except OptmemError as exc:
            batch.refuse(n, exc.code, f"{h['file']}: {exc.message}")
            continue
        added += len(put.added)
        for text in put.over:
            batch.refuse(
                n,
                "over_limit",
                f"{h['file']}: the entry [{memory.entry_id(text)}] {quote(text, 60)} does not fit in its limit "
                f"({put.usage.chars:,} of {put.usage.limit:,} characters held); not put in hot memory — make room "
                f"(`optmem replace` / `optmem remove`) and `optmem add` it, or keep it in the log with "
                "`optmem append`",
            )
    return added


def import_export(
    vault: Vault,
    lines: Iterable[str],
    *,
    allow_unsafe: bool = False,
    progress: Progress | None = None,
) -> Imported:
    """Import an export (see the module's doc) — records keyed by id, hot entries by text."""
    batch = _Batch(vault, allow_unsafe)
    it = iter(lines)
    first = next(it, "")
    try:
        head = json.loads(first) if first.strip() else None
    except ValueError:
        head = None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise UsageError(
            "line 1 is not an optmem export's header (`optmem export` writes one); to read another "
            f"tool's memory files use --from ({', '.join(SOURCES)}); nothing was imported"
        )
    if not isinstance(head.get("version"), int) or head["version"] > VERSION:
        raise UsageError(
            f"this export is version {head.get('version')!r}; this optmem reads version {VERSION} and "
            "earlier — upgrade optmem; nothing was imported"
        )
    total = head["records"] if isinstance(head.get("records"), int) else 0
    big = total >= PARALLEL_MIN
    pool = None
    if big:
        import multiprocessing
        import os

        pool = multiprocessing.get_context("fork").Pool(max(2, os.cpu_count() or 1))
    try:
        chunks = _record_chunks(batch, it, allow_unsafe)
        if big and batch.was_empty and not any(path.is_file() and path.stat().st_size for _, path in vault.segments()):

            def results(sid: int, hashed: int, shown: float | None) -> Iterator[Fresh]:
                sent: deque[list[tuple[int, str]]] = deque()  # (the lines of each task, in order)

                def tasks() -> Iterator[Task]:
                    before = offset = 0
                    for lines, allow, limit in chunks:
                        sent.append(lines)
                        yield Task(lines, allow, limit, sid, hashed, before, offset, shown)
                        before += len(lines)
                        # a record line as `export` writes it lands 12 characters shorter (`_slice`);
                        # where a line lands otherwise, its chunk's rows are moved there after (`placed_after`)
                        offset += sum(len(text.encode()) - 11 for _, text in lines)

                assert pool is not None  # (a big import: the workers check and prepare)
                for checked, prep, base in pool.imap(check_prepared, tasks()):
                    yield _whole(checked, sent.popleft()), prep, base

            written = batch.write_fed(results, total, progress)
            hot = _put_hot(batch)
        else:
            done = 0
            for checked in pool.imap(check, chunks) if pool else map(check, chunks):
                batch.take(checked)
                done += len(checked)
                if progress and total:
                    progress(min(done, total), total)  # checking; the index's own progress follows
            written = len(batch.lines)
            hot = batch.write(progress)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return Imported(FORMAT, written, batch.already, hot, sorted(batch.bad, key=lambda b: b["line"]))


def _record_chunks(
    batch: _Batch, lines: Iterator[str], allow_unsafe: bool
) -> Iterator[tuple[list[tuple[int, str]], bool, int]]:
    """The record lines of an export in chunks for `check`; the other lines (hot files, lines
    that are neither) are taken here as they come."""
    chunk: list[tuple[int, str]] = []
    limit = batch.vault.settings.limits.record_bytes
    size = max(1, CHUNK // 8)  # the first chunks smaller: the inserting process starts sooner
    for n, text in enumerate(lines, 2):
        if not text.strip():
            continue
        if text.startswith('{"record":'):
            chunk.append((n, text))
            if len(chunk) >= size:
                yield chunk, allow_unsafe, limit
                chunk, size = [], min(CHUNK, size * 2)
            continue
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError) as exc:
            batch.refuse(n, "unparseable_line", f"not valid JSON: {exc}")
            continue
        if isinstance(obj, dict) and "record" in obj:
            chunk.append((n, text))
        elif isinstance(obj, dict) and isinstance(obj.get("hot"), dict) and _hot_ok(obj["hot"]):
            hot = obj["hot"]
            for e in hot["entries"]:
                rule = None if allow_unsafe else scan.find(e["text"])
                if rule:
                    batch.refuse(n, "unsafe_content", f"the security scan flags an entry of {hot['file']} ({rule})")
                    hot["entries"] = [x for x in hot["entries"] if x is not e]
            rule = None if allow_unsafe or not isinstance(hot.get("front"), str) else scan.find(hot["front"])
            if rule:
                batch.refuse(n, "unsafe_content", f"the security scan flags the front matter of {hot['file']} ({rule})")
                hot["front"] = ""
            batch.hot.append((n, hot))
        else:
            batch.refuse(n, "unparseable_line", 'neither {"record": …} nor {"hot": …}')
    if chunk:
        yield chunk, allow_unsafe, limit


def _hot_ok(h: dict[str, Any]) -> bool:
    entries = h.get("entries")
    return (
        isinstance(h.get("file"), str)
        and isinstance(entries, list)
        and all(isinstance(e, dict) and isinstance(e.get("text"), str) and e["text"].strip() for e in entries)
    )


# -- other tools' memory files ----------------------------------------------------------------
def import_from(
    vault: Vault, source: str, path: Path, *, allow_unsafe: bool = False, progress: Progress | None = None
) -> Imported:
    """Read another tool's memory files into records with `source` set (see each reader)."""
    if source not in SOURCES:
        raise UsageError(f"--from must be one of {', '.join(SOURCES)}, not {quote(source)}")
    if not path.exists():
        raise UsageError(f"{path} does not exist; give the {source} memory folder or file; nothing was imported")
    batch = _Batch(vault, allow_unsafe)
    hot_added = 0
    if source == "claude-code":
        _claude_code(batch, path)
    elif source == "codex":
        _codex(batch, path)
    elif source == "mem0":
        _mem0(batch, path)
    else:
        hot_added = _hermes(batch, path)
    written = len(batch.lines)
    batch.write(progress)
    return Imported(source, written, batch.already, hot_added, batch.bad)


def _files(path: Path, names: Iterable[str]) -> list[Path]:
    if path.is_file():
        return [path]
    return [path / n for n in names if (path / n).is_file()]


def _mtime(path: Path) -> float:
    return path.stat().st_mtime


_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_HEADING = re.compile(r"^\s*#{1,6}\s+(.*?)\s*#*\s*$")
_LINK_ONLY = re.compile(r"^\[[^\]]*\]\([^)]*\.md\)\s*(?:[—–:-]\s*.*)?$")


def markdown_items(text: str) -> list[tuple[int, str, str]]:
    """The memories of a Markdown file: each list item and each paragraph, as (line, the heading
    it sits under, its text); an item's continuation lines join it."""
    out: list[tuple[int, str, str]] = []
    heading, start = "", 0
    cur: list[str] = []

    def flush() -> None:
        if cur:
            out.append((start, heading, " ".join(s.strip() for s in cur).strip()))
            cur.clear()

    for n, line in enumerate(text.splitlines(), 1):
        h = _HEADING.match(line)
        item = _ITEM.match(line)
        if h:
            flush()
            heading = h.group(1)
        elif not line.strip():
            flush()
        elif item:
            flush()
            cur.append(item.group(1))
            start = n
        else:
            if not cur:
                start = n
            cur.append(line)
    flush()
    return out


def _claude_code(batch: _Batch, path: Path) -> None:
    """Claude Code's auto memory (`~/.claude/projects/<project>/memory/`): each topic file is
    one record (its description and body; its `type` a tag; key `claude-code:<file>`, so a newer
    import of an edited file supersedes the older one), and each line of the MEMORY.md index
    that is not a link to a topic file is a record of its own."""
    import frontmatter

    folder = path if path.is_dir() else path.parent
    index = folder / "MEMORY.md"
    if index.is_file():
        for n, _, item in markdown_items(_read(index)):
            if not _LINK_ONLY.match(item):
                batch.draft(n, "claude-code", "MEMORY.md", item, _mtime(index), tags=["index"])
    for topic in sorted(folder.glob("*.md")):
        if topic.name == "MEMORY.md":
            continue
        try:
            post = frontmatter.loads(_read(topic))
        except Exception as exc:  # a YAML error of any kind: this file is reported, the rest go in
            batch.refuse(1, "bad_front_matter", f"{topic.name}: {exc}")
            continue
        kind = str(post.get("type") or "").strip().lower()
        described = str(post.get("description") or "").strip()
        body = "\n\n".join(p for p in (described, post.content.strip()) if p)
        tags = [kind] if kind in ("user", "feedback", "project", "reference") else []
        for part in _parts(body, batch.vault.settings.limits.record_bytes):
            batch.draft(1, "claude-code", topic.name, part, _mtime(topic), tags=tags, key=f"claude-code:{topic.stem}")


def _parts(text: str, limit: int) -> list[str]:
    """A text cut at paragraphs into pieces of at most `limit` bytes (one record each)."""
    if len(text.encode("utf-8")) <= limit:
        return [text]
    out, cur = [], ""
    for para in text.split("\n\n"):
        joined = f"{cur}\n\n{para}" if cur else para
        if cur and len(joined.encode("utf-8")) > limit:
            out.append(cur)
            cur = para
        else:
            cur = joined
    return out + ([cur] if cur else [])


def _codex(batch: _Batch, path: Path) -> None:
    """Codex's memories (`MEMORY.md`, `memory_summary.md`, `raw_memories.md`): every list item
    and paragraph a record, tagged with the file it came from, the heading above it kept."""
    names = ("MEMORY.md", "memory_summary.md", "raw_memories.md")
    found = _files(path, names)
    if not found:
        raise UsageError(f"{path} holds none of Codex's memory files ({', '.join(names)}); nothing was imported")
    for f in found:
        tag = re.sub(r"[^a-z0-9]+", "-", f.stem.lower()).strip("-")
        for n, heading, item in markdown_items(_read(f)):
            text = f"{heading}: {item}" if heading and not item.startswith(heading) else item
            batch.draft(n, "codex", f.name, text, _mtime(f), tags=[tag])


def _hermes(batch: _Batch, path: Path) -> int:
    """Hermes Agent's MEMORY.md / USER.md (`§`-separated entries): into hot memory while they fit
    its limits (an entry it holds already is left), the rest to the log; returns entries added."""
    from optmem import memory
    from optmem.errors import OverLimit

    found = _files(path, ("MEMORY.md", "USER.md"))
    if not found:
        raise UsageError(f"{path} holds neither MEMORY.md nor USER.md; nothing was imported")
    added = 0
    for f in found:
        target = "user" if f.name == "USER.md" else "memory"
        _, entries, _ = memory.parse(_read(f))
        for n, entry in enumerate(e.strip() for e in entries if e.strip()):
            rule = None if batch.allow_unsafe else scan.find(entry)
            if rule:
                batch.refuse(n + 1, "unsafe_content", f"{f.name} entry {n + 1}: the security scan flags it ({rule})")
                continue
            try:
                res = memory.add(batch.vault, entry, target=target, source="hermes", allow_unsafe=batch.allow_unsafe)
                added += res.status == "added"
            except OverLimit:
                batch.draft(n + 1, "hermes", f.name, entry, _mtime(f), tags=[target])
            except OptmemError as exc:
                batch.refuse(n + 1, exc.code, f"{f.name} entry {n + 1}: {exc.message}")
    return added


def _mem0(batch: _Batch, path: Path) -> None:
    """A Mem0 export: JSON — a list of memories, or an object holding one under `results` or
    `memories` — each with `memory`, `created_at`, `updated_at`, `metadata` (kept as `metadata`;
    its `categories` become tags) and Mem0's own `id` (kept as `mem0_id`)."""
    try:
        data = json.loads(fsio.read_bytes(path) or b"")
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise UsageError(f"{path} is not a Mem0 export (not JSON: {exc}); nothing was imported") from exc
    items = data.get("results", data.get("memories")) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise UsageError(f"{path} is not a Mem0 export (no list of memories); nothing was imported")
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict) or not isinstance(item.get("memory"), str):
            batch.refuse(n, "bad_value", f"memory {n} has no `memory` text")
            continue
        when = next(
            (t for t in (_epoch(item.get("updated_at")), _epoch(item.get("created_at"))) if t is not None), None
        )
        meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else None
        cats = (meta or {}).get("categories") or item.get("categories") or []
        tags = [c for c in cats if isinstance(c, str) and c.strip()][:16] if isinstance(cats, list) else []
        extra = {k: v for k, v in (("mem0_id", item.get("id")), ("metadata", meta)) if v}
        for key in ("user_id", "agent_id"):
            if isinstance(item.get(key), str):
                extra[key] = item[key]
        batch.draft(n, "mem0", str(item.get("id") or n), item["memory"], when, tags=tags, extra=extra)


def _epoch(value: Any) -> float | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return clock.to_epoch(value)
    if dt.tzinfo is None:
        from datetime import UTC

        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()
