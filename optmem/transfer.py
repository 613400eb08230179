"""Moving memory in and out: `export` (the whole vault as JSONL) and `import` (an export, or the
memory files of the tools users come from).

An export is one JSON object a line: a header (`{"format": "optmem-export", "version": 1, …}`),
then every log record as `{"record": {…}}` in time order (ts, then id: the same on every clone),
then each hot file as `{"hot": {"file", "front", "entries": [{"id", "text", "journal"}]}}`. It
says nothing of when it was made, so two exports of one vault are identical, and importing one
into an empty vault gives a vault whose export is identical again. Records are keyed by id:
importing twice changes nothing.

An import writes in bulk: every record is checked (it parses; the write gate's scanner finds
nothing in its text or evidence — in worker processes for a big export), a bad one is reported
with its line number and the rest go in, appended together, then the index catches up once (the
normal build, when the vault held nothing). Imported history keeps the dates its source gave it,
and is marked as seen at the import (a recall line `via: import`, which warms it without making
it recent), so the lifecycle's sweep does not cool it before anyone could look.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from optmem import clock, fsio
from optmem.errors import OptmemError, UsageError, quote
from optmem.record import (
    BOOKKEEPING,
    IMPORT,
    MEMORY,
    NOTE,
    RECORD_ID,
    RELEASE,
    TYPED_ID,
    BadLine,
    Record,
    corrects_from_text,
    derived_id,
    hand,
    missing_fields,
    parse_line,
)
from optmem.safety import scan
from optmem.vault import Vault, hot_target

FORMAT, VERSION = "optmem-export", 1
SOURCES = ("claude-code", "codex", "hermes", "mem0")
CHUNK = 5000  # records checked (and appended) together
Progress = Callable[[int, int], None]


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# -- export -----------------------------------------------------------------------------------
def export_lines(vault: Vault, warnings: list[str] | None = None) -> Iterator[str]:
    """The vault as export lines (see the module's doc): every record line as the log holds it —
    both lines of an id written twice with other words (the same line twice goes out once); a
    hand-typed line gets its derived id written out. What it cannot carry is said in `warnings`: a
    line the log cannot parse (left out, named by file and line, counted in the header's
    `left_out`; doctor reports it), a doubled id; and what a hot file could not give whole: a file
    that cannot be read (not in the export), a file git left mid-merge (both sides exported as
    entries of their own)."""
    from optmem import memory
    from optmem.index import open_index

    vault.require()
    found: list[tuple[str, str, bytes]] = []
    left_out = 0
    bodies: dict[str, list[bytes]] = {}  # an id → its lines' bytes (an id written twice: both go out)
    for name, path in vault.segments():
        if not path.is_file():
            continue
        with open(path, "rb") as fh:
            for n, raw in enumerate(fh, 1):
                body = raw.strip()
                if not body:
                    continue
                try:
                    rec = parse_line(body)  # (read as every read is: up to READ_BYTES)
                except BadLine as exc:
                    left_out += 1
                    _say(
                        warnings,
                        f"{name} line {n} is no record optmem can read ({exc.code}: {exc}): not in this export — "
                        "`optmem doctor` names it and says how to mend it",
                    )
                    continue
                same = bodies.setdefault(rec.id, [])
                if body in same:
                    continue  # (the very same line twice: one record)
                if same:
                    _say(
                        warnings,
                        f"the id {rec.id} is on two lines with other words ({name} line {n} is the later one; "
                        "`optmem doctor`: duplicate_id): both are in this export — an import keeps the first and "
                        "reports the other",
                    )
                same.append(body)
                found.append((rec.ts or "", rec.id, body))
    found.sort(key=lambda f: (f[0], f[1]))
    hot = []
    with open_index(vault) as idx:
        for name, _ in vault.hot_paths():
            if (where := hot_target(name)) is None:
                continue
            try:
                f = memory.load(vault, *where)
            except OptmemError as exc:
                _say(
                    warnings,
                    f"{name} could not be read ({exc.message}): its entries are not in this export — `optmem doctor`",
                )
                continue
            if f.conflicted:
                _say(
                    warnings,
                    f"{f.name} is mid-merge: both sides of the git merge are exported as entries of their own — "
                    "finish the merge (`optmem doctor` says how) and export again",
                )
            last = {row.key: row.id for row in idx.journal(f.name)}
            entries = [
                {"id": (e := memory.entry_id(text)), "text": text, "journal": last.get(f"hot:{f.name}:{e}")}
                for text in f.entries
            ]
            if entries or f.front:
                hot.append({"file": f.name, "front": f.front, "entries": entries})
    access = _access_lines(vault)
    head = {"format": FORMAT, "version": VERSION, "records": len(found), "hot_files": len(hot), "access": len(access)}
    yield _dumps(head | ({"left_out": left_out} if left_out else {}))
    for _, rid, body in found:
        obj = json.loads(body)
        if not isinstance(obj.get("id"), str) or not obj["id"]:
            obj = {"id": rid, **obj}
        yield _dumps({"record": obj})
    for h in hot:
        yield _dumps({"hot": h})
    for line in access:
        yield f'{{"access":{line}}}'


def _say(warnings: list[str] | None, message: str) -> None:
    if warnings is not None:
        warnings.append(message)


def _access_lines(vault: Vault) -> list[str]:
    """The recall history (every ACCESS.jsonl line of every writer: recalls, cold marks, sweeps)
    as an export carries it: each line once, in time order, so two exports of one vault — or of
    its clones — are identical. The marks an import wrote for the records it brought (`via:
    import`) are left out: they say when this vault took them in, not how they were used."""
    from optmem import layout

    seen: set[str] = set()
    for _, path in layout.access_files(vault.root):
        if not path.is_file():
            continue
        with open(path, "rb") as fh:
            for raw, _length in fsio.lines(fh):
                obj = _access_obj(raw)
                if obj is not None and obj.get("via") != "import":
                    seen.add(_dumps(obj))
    return sorted(seen, key=lambda line: (json.loads(line)["ts"], line))


def _access_obj(raw: bytes | str) -> dict[str, Any] | None:
    """An ACCESS.jsonl line as an object, or None when it is not one (torn, not JSON, no time)."""
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return obj if type(obj) is dict and isinstance(obj.get("ts"), str) else None


# -- import -----------------------------------------------------------------------------------
def bounded_lines(fh: Any) -> Iterator[str]:
    """An export's lines from a binary handle (a file, a pipe, stdin), each read with a bound: no
    export line is longer than `fsio.LINE_BYTES` (a record is bounded far below), so a longer one
    — or a stream without end, /dev/zero — is no export, and the import stops there with
    `too_large`, having held none of it whole. Bytes that are not UTF-8 read as U+FFFD (the line
    is then refused by its parse, not the import). A BOM that opens the stream is dropped, as a
    file's text is read (`fsio.decode`)."""
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
        if n == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a BOM (a Windows editor's mark, not content)
            raw = raw[3:]
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
    bad: list[dict[str, Any]]  # {"line", "code", "message"[, "file"]}: what was not imported, and why
    warnings: list[str] = []  # what was imported only in part (`--from`: a file's front matter unread …)
    unmapped: dict[str, int] = {}  # `--from`: the source's fields not mapped to a record's, and how often
    access: int = 0  # recall and sweep lines the export carried that the vault lacked
    bookkeeping: int = 0  # lines written that say something about a record (seen, forget, confirm …)
    held: int = 0  # records written held in quarantine (a person reviews them: `optmem quarantine`)
    # `--from`: the records a keyed memory imported now supersedes: {"record", "key", "supersedes": [ids]}
    superseded: list[dict[str, Any]] = []

    @property
    def taken(self) -> bool:
        """Whether the input brought anything the vault now holds: records, hot entries, lines
        about records, recalls — or records it held already (an import run again)."""
        return bool(self.records or self.already or self.hot or self.access or self.bookkeeping)


class _Batch:
    """What an import gathers before it writes: record lines, hot entries, refusals."""

    def __init__(self, vault: Vault, allow_unsafe: bool, person: bool = True) -> None:
        from optmem.index import open_index
        from optmem.record import Tier

        self.vault, self.allow_unsafe, self.person = vault, allow_unsafe, person
        self.rules: frozenset[str] = frozenset()  # the vault's redlines, which no import a person does not run drops
        # a vault not there yet (or a folder not yet one) holds no record: its index is not read,
        # for reading it lays the vault out — an import that writes nothing creates no vault
        self.stored = any(path.exists() for _, path in vault.segments())
        self.known: set[str] = set()
        self.was_empty = True
        if self.stored:
            with open_index(vault) as idx:
                self.known = idx.ids()
                self.was_empty = idx.count() == 0
                if not person:
                    self.rules = frozenset(r.id for r in idx.rows(f"r.tier = {int(Tier.REDLINE)}"))
        self.lines: list[bytes] = []
        self.ids: list[str] = []
        self.already = 0  # records the vault had (bookkeeping lines it had are not counted)
        self.noted = 0  # bookkeeping lines among `lines`
        self.had = frozenset(self.known)  # the ids the vault held before the import
        self.same: list[tuple[int, str, bytes]] = []  # records whose id the vault holds: compared by `settle`
        self.bad: list[dict[str, Any]] = []
        self.changed: Counter[str] = Counter()  # an import no person runs: records it took as plain (`second_hand`)
        self.hot: list[tuple[int, dict[str, Any]]] = []  # (the export's line, its hot file)
        self.access: list[dict[str, Any]] = []  # the recall history an export carries
        # (line, index in `lines`, refs, bookkeeping, refs read from its text: a hand-form correction's)
        self.refs: list[tuple[int, int, tuple[str, ...], bool, bool]] = []
        self.superseded: list[dict[str, Any]] = []  # what each keyed memory supersedes (`Imported.superseded`)
        self.warnings: list[str] = []  # what a reader of another store's files says (`Imported.warnings`)
        self._lookup: Any = None  # the import's ids as `record.Ids` looks them up (made once they are all read)
        self._in_vault: dict[str, list[str]] = {}  # a ref → the vault's records it names (the index's answer)
        self.idx: Any = None  # an Index, opened once when a --from import looks for words it holds or refs name
        # the vault's records (closed by `write`)

    def refuse(self, line: int, code: str, message: str, field: str | None = None, file: str | None = None) -> None:
        self.bad.append(
            {
                **({"file": file} if file else {}),
                "line": line,
                "code": code,
                "message": message,
                **({"field": field} if field else {}),
            }
        )

    def take(self, checked: list[Checked]) -> None:
        """Records `check` passed (or the reason it did not), in order: the new ones are kept for
        `write`. A bookkeeping line (`seen`, `forget`, `confirm` …) says something about a record
        and is counted apart from the records."""
        if self.rules:
            checked = [self._keep_rule(c) for c in checked]
        ids = [c[1] for c in checked]
        if all(c[3] is None for c in checked) and self.known.isdisjoint(ids) and len(set(ids)) == len(ids):
            self.known.update(ids)  # (every record taken, and none met before: the usual chunk)
            start = len(self.lines)
            self.refs.extend((c[0], start + i, c[5], c[4], c[6]) for i, c in enumerate(checked) if c[5])
            self.lines.extend(c[2] for c in checked)
            self.ids.extend(ids)
            self.noted += sum(c[4] for c in checked)
            for c in checked:
                self.changed[c[7]] += 1
            return
        for line, rid, raw, refusal, noted, refs, texted, changed in checked:
            if refusal is not None:
                self.refuse(line, *refusal)
            elif rid in self.had and not noted:
                self.same.append((line, rid, raw))  # the vault's: the same record, or other words? (`settle`)
            elif rid in self.known:
                if not noted and rid in self.ids and not _one_record(self.lines[self.ids.index(rid)], raw):
                    self.refuse(  # (an id this input gave before, with other words: the first is kept, this one told)
                        line,
                        "id_taken",
                        f"an earlier line of this input has the id {rid} with other words; the first is kept — "
                        f"to keep these words too, `optmem append` them (a new id)",
                        "id",
                    )
                    continue
                self.already += not noted
            else:
                self.known.add(rid)
                if refs:
                    self.refs.append((line, len(self.lines), refs, noted, texted))
                self.lines.append(raw)
                self.ids.append(rid)
                self.noted += noted
                self.changed[changed] += 1

    def _keep_rule(self, c: Checked) -> Checked:
        """A `forget` or `restore` line of an import no person runs that names one of the vault's
        redlines is refused: dropping a locked rule, or bringing one back, is a person's."""
        if not c[4] or c[3] is not None or self.rules.isdisjoint(c[5]):
            return c
        kind = json.loads(c[2]).get("kind")
        if kind not in ("forget", "restore"):
            return c
        why = (
            "needs_person",
            f"a {kind} line about the locked rule {next(iter(self.rules.intersection(c[5])))}: only a person "
            f"{'drops' if kind == 'forget' else 'brings back'} a locked rule",
            "kind",
        )
        return (c[0], c[1], c[2], why, *c[4:])

    def settle(self) -> None:
        """The records whose id the vault holds: the same record is already here; other words under
        its id are reported (`id_taken`) — the vault's record is kept, never replaced unseen."""
        from optmem.index import open_index

        if not self.same:
            return  # (nothing to compare: the index is not opened, which would lay a new vault out)
        with open_index(self.vault) as idx:
            for i in range(0, len(self.same), 500):
                chunk = self.same[i : i + 500]
                rows = {r.id: r for r in idx.rows(f"r.id IN ({','.join('?' * len(chunk))})", [c[1] for c in chunk])}
                for line, rid, raw in chunk:
                    row = rows.get(rid)
                    if row is None or _same(idx.record(row), raw, line):
                        self.already += 1
                    else:
                        self.refuse(
                            line,
                            "id_taken",
                            f"the vault holds a record with id {rid} that says something else; the vault's is "
                            f"kept — to change what it says, `optmem correct {rid} TEXT`",
                            "id",
                        )
        self.same = []

    def unresolved(self) -> None:
        """The records taken whose `corrects` or `ref` names a record that neither the vault nor
        the import holds (`doctor` would report each as `dangling_ref`): reported, not written —
        and so on, for a record naming one thus left out. A correction in the hand-typed form
        whose `#id`s are read from its text (`〔更正〕#ID …`, as an older version stored it, with no
        `corrects`) keeps the ids that name a record — written as its `corrects`, the full ids — and
        the others are words; it is refused only when none names a record. A ref that several
        records' ids share names none (`ambiguous_ref`, as `doctor` reports it). Each ref is looked
        up (`_named`): no id list is sorted or scanned whole."""
        if not self.refs:
            return
        left: set[int] = set()
        kept: dict[int, list[str]] = {}  # a hand-form correction that names something else too → its targets
        while True:
            out, unsure = [], []
            for line, i, refs, noted, texted in self.refs:
                if i in left:
                    continue
                hits = [self._named(r) for r in refs]
                if several := next(((r, n) for r, n in zip(refs, hits, strict=True) if len(n) > 1), None):
                    unsure.append((line, i, several, noted, texted))
                    continue
                targets = [n[0] if n else None for n in hits]
                missing = [r for r, t in zip(refs, targets, strict=True) if t is None]
                if texted and len(missing) < len(refs):
                    if missing:
                        kept[i] = list(dict.fromkeys(t for t in targets if t is not None))
                    else:
                        kept.pop(i, None)
                elif missing:
                    out.append((line, i, missing[0], noted, texted))
            if not out and not unsure:
                break
            # a line left out may leave a reference naming one record: the ambiguous are refused
            # once no line naming nothing is left
            for line, i, ref, noted, texted in out:
                self._refuse_dangling(line, ref, noted, texted)
                left.add(i)
                self.known.discard(self.ids[i])
                self.noted -= noted
            for line, i, (ref, shared), noted, texted in [] if out else unsure:
                field = "text" if texted else "ref" if noted else "corrects"
                self.refuse(
                    line,
                    "ambiguous_ref",
                    f"its {field} names {'#' * texted}{ref}, which {len(shared)} records' ids share "
                    f"({', '.join(shared[:5])}), so it names none of them; write the whole id of the one it means",
                    field,
                )
                left.add(i)
                self.known.discard(self.ids[i])
                self.noted -= noted
        for i, named in kept.items():  # its refs naming no record are words: `corrects` says which refs are
            if i in left:
                continue
            obj = json.loads(self.lines[i])
            obj["corrects"] = named
            self.lines[i] = _dumps(obj).encode("utf-8")
        if left:
            self.lines = [x for i, x in enumerate(self.lines) if i not in left]
            self.ids = [x for i, x in enumerate(self.ids) if i not in left]

    def _refuse_dangling(self, line: int, ref: str, noted: bool, texted: bool) -> None:
        if texted:
            self.refuse(
                line,
                "dangling_ref",
                f"its text is a correction of #{ref} (the hand-typed form 〔更正〕#ID), a record neither the vault "
                f"nor the import holds; import the record it corrects with it, or write its text "
                "without the '#'",
                "text",
            )
            return
        field = "ref" if noted else "corrects"
        self.refuse(
            line,
            "dangling_ref",
            f"its {field} names {ref}, a record neither the vault nor the import holds; "
            f"import the record it names with it, or remove {ref} from its {field}",
            field,
        )

    def _target(self, ref: str) -> str | None:
        """The id of the one record `ref` names among those the import and the vault hold now, or
        None (none, or several: an ambiguous reference names none) — by the rule every place
        applies (`record.Ids`)."""
        named = self._named(ref)
        return named[0] if len(named) == 1 else None

    def _named(self, ref: str) -> list[str]:
        """The ids `ref` names among the records the import and the vault hold now (`record.Ids`'s
        rule over both): the import's ids in memory (sorted once), the vault's through its index
        (`ingest.matching_ids`) — never a pass over every id. A whole id, wherever it is, is
        the one named; else the parts it is of, in both."""
        from optmem.record import Ids, clean_ref

        for whole in (ref.strip().lstrip("#"), clean_ref(ref)):  # a whole id first, wherever it is
            if whole in self.known:
                return [whole]
        if self._lookup is None:
            self._lookup = Ids(self.ids)
        hits = [rid for rid in self._lookup.named(ref) if rid in self.known]  # (not one left out)
        hits += [rid for rid in self._vault_named(ref) if rid not in hits]
        upper = clean_ref(ref)
        cased = sorted((rid for rid in hits if rid.upper() == upper), key=lambda rid: (rid != upper, rid))
        return cased[:1] if cased else hits  # (a whole id written in another case, else the parts)

    def _vault_named(self, ref: str) -> list[str]:
        """The vault's records `ref` names (its ids never leave: asked once per ref, of the index)."""
        if not self.stored:
            return []
        if ref not in self._in_vault:
            from optmem.index import open_index
            from optmem.ingest import matching_ids

            if self.idx is None:
                self.idx = open_index(self.vault)
            self._in_vault[ref] = list(matching_ids(self.idx.conn, ref, 5))
        return self._in_vault[ref]

    def add(self, line: int, rid: str, raw: bytes, rec: Record) -> None:
        if rid in self.known:
            self.already += 1
            return
        why = refusal(rec, self.vault.settings.limits.record_bytes, self.allow_unsafe)
        self.take([(line, rid, raw, why, rec.kind in BOOKKEEPING, _refs(rec), corrects_from_text(raw, rec), "")])

    def draft(self, source: str, memory: Any) -> None:
        """A memory read from another tool's files (`neighbours.Memory`): a record dated as the
        source dates it, its id derived from where it came from and what it says (importing again
        finds it present)."""
        from optmem import log

        text = memory.text.strip()
        if not text:
            return
        if memory.when is not None and (
            late := future_time(
                memory.when,
                f"its date {clock.format_ts(clock.from_epoch(memory.when))} (as the {source} file gives it)",
                field=None,
                fix="correct the date where it is kept and import it again",
            )
        ):
            self.refuse(memory.line, late[0], late[1], file=memory.file)
            return
        moment = clock.from_epoch(memory.when) if memory.when is not None else clock.now()
        draft = log.Draft(
            text,
            domain=memory.domain,
            project=memory.project,
            tags=list(memory.tags),
            key=memory.key,
            source=source,
            session=memory.session,
            extra=memory.extra,
            origin=f"{IMPORT}{source}",  # (where it came from)
        )
        try:
            rec = log.build_record(self.vault, draft, moment, self.allow_unsafe)
        except OptmemError as exc:
            self.refuse(memory.line, exc.code, exc.message, exc.context.get("field"), memory.file)
            return
        where = memory.ident or (memory.file if memory.project is None else f"{memory.project}\0{memory.file}")
        if memory.key:  # (the same words under another key are another memory: a re-keyed one is written anew)
            where += f"\0{memory.key}"
        rid = derived_id(f"{source}\0{where}\0{text}".encode(), moment.timestamp())
        rec = rec._replace(id=rid, expires=memory.expires or rec.expires)
        if rid not in self.known and self._said(rec):
            self.already += 1  # the same words from the same tool, dated otherwise (a copied folder)
            return
        if memory.key and rid not in self.known:
            old = self._legacy(rec, memory.legacy, moment.timestamp()) if memory.legacy is not None else []
            if old:  # (an older optmem's key for this very memory: superseded by it, named)
                rec = rec._replace(corrects=(*rec.corrects, *old))
            replaced = old + self._keyed(rec, moment.timestamp())
            if replaced:
                self.superseded.append({"record": rid, "key": rec.key, "supersedes": replaced})
        self.add(memory.line, rid, rec.to_line(), rec)

    def _index(self) -> Any:
        from optmem.index import open_index

        if self.idx is None:  # one index for the whole gathering (closed by `write`)
            self.idx = open_index(self.vault)
        return self.idx

    def _keyed(self, rec: Record, at: float) -> list[str]:
        """The vault's current records of `rec`'s key from its tool, in its project and domain, not
        newer than it (dated `at`): what it supersedes."""
        from optmem import clock, view

        if not self.stored:
            return []
        current, params = view.is_sql(view.Status.CURRENT, clock.now().timestamp())
        rows = self._index().rows(
            f"r.key = ? AND r.project IS ? AND r.domain = ? AND r.source IS ? AND {current}",
            [rec.key, rec.project, rec.domain, rec.source, *params],
        )
        return [row.id for row in rows if (row.ts or 0) <= at]

    def _legacy(self, rec: Record, legacy: Any, at: float) -> list[str]:
        """The vault's current records an older optmem imported as this memory (`neighbours.Legacy`):
        from the same tool, in its project and domain, under a key of the older form, and — where
        that key alone does not say which section it was — whose text opens with this section's
        heading (of the file's headings, the longest it opens with); the text before the first
        heading was `#top` or `#top-N`, so only such a key is it. Not one newer than the memory
        (dated `at`): a correction never reaches forward in time."""
        from optmem import clock, view

        if not self.stored:
            return []
        current, params = view.is_sql(view.Status.CURRENT, clock.now().timestamp())
        idx = self._index()
        rows = idx.rows(
            f"r.key LIKE ? ESCAPE '\\' AND r.project IS ? AND r.domain = ? AND r.source = ? AND {current}",
            [legacy.like, rec.project, rec.domain, rec.source, *params],
        )
        groups: dict[str, list[Any]] = {}
        for row in rows:
            if (row.ts or 0) > at:
                continue
            base = re.sub(r"#\d+$", "", row.key or "")
            if re.fullmatch(legacy.pattern, base):
                groups.setdefault(base, []).append(row)
        out: list[str] = []
        for base, members in groups.items():
            if legacy.heading is not None:
                first = min(members, key=lambda r: (not (r.key or "").endswith("#1"), r.n))
                text = idx.record(first).text
                opens = max((h for h in legacy.headings if text.startswith(f"{h}: ")), key=len, default="")
                if opens != legacy.heading or (not opens and not re.search(r"#top(?:-\d+)?$", base)):
                    continue
            out += [row.id for row in members]
        return out

    def _said(self, rec: Record) -> bool:
        """Whether the vault holds a record of these very words from this source, in its scope."""
        from optmem import text as textmod
        from optmem.index import open_index

        fp = textmod.fingerprint(rec.text)
        if fp is None or not self.stored:
            return False
        if self.idx is None:  # one index for the whole gathering (closed by `write`)
            self.idx = open_index(self.vault)
        idx = self.idx
        return any(
            row.source == rec.source and row.key == rec.key and idx.record(row).text == rec.text
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
                try:
                    fsio.append_lines(target, self.lines[i : i + CHUNK], within=self.vault.root)
                except OptmemError as exc:
                    if not i:
                        raise
                    raise fsio.partly_done(
                        exc,
                        f"the first {i:,} of the {len(self.lines):,} records were imported (each whole); the rest "
                        "were not — once that is fixed, run the same import again: what is in the log already is "
                        "skipped",
                    ) from exc
                self.passed(self.lines[i : i + CHUNK])
            _mark_seen(self.vault, clock.format_ts(clock.now()), self.ids)
            if self.was_empty and self.lines:
                index.build(self.vault, progress)
            else:
                index.open_index(self.vault, progress).close()
        return _put_hot(self)

    def held(self) -> int:
        """How many of the records written are held in quarantine."""
        from optmem.record import parse_line

        return sum(1 for line in self.lines if b'"held"' in line and parse_line(line).held)

    def plain(self) -> list[str]:
        """What an import no person runs took as plain records, and why (`second_hand`)."""
        said = []
        if n := self.changed["redline"]:
            said.append(
                f"{n} redline(s) stored as plain records, not locked rules: a locked rule comes from a person, "
                "and no person runs this import — the user makes one at their own terminal (`optmem append … "
                "--redline`), or runs the import there"
            )
        if n := self.changed["hot"] + self.changed["hot_entries"]:
            said.append(
                f"the export's hot memory ({self.changed['hot_entries']} entr(ies)) was not put in hot memory: "
                "another store's text becomes hot memory only by a person — its journal records are stored as "
                "plain records; the user runs the import at their own terminal to put the entries in hot memory"
            )
        return said

    def passed(self, lines: list[bytes]) -> None:
        """Lines just written, each checked whole by the write gate (`refusal`): its verdict is
        kept (`optmem.verdicts`) — unless --allow-unsafe let flagged ones through."""
        if not self.allow_unsafe:
            from optmem import verdicts

            verdicts.remember(self.vault, lines)


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
# (line, id, the line to write, why refused, bookkeeping, the ids it names: corrects and ref, and
# whether they are read from its text: a hand-typed correction's `#id`s, with no `corrects` field)
# and what an import no person runs changed in it (`second_hand`: "redline", "hot" or "")
Checked = tuple[int, str, bytes, Refusal | None, bool, tuple[str, ...], bool, str]
PARALLEL_MIN = 4000  # records: below this a worker pool costs more than it saves


def refusal(rec: Record, limit: int, allow_unsafe: bool) -> Refusal | None:
    """Why the write gate refuses a record as an import brings it (`log.check_record`: every
    field it carries bounded and scanned, its names valid), or None."""
    from optmem import log

    if rec.kind == RELEASE:  # (whoever it says released it: `quarantine.release_honoured`)
        return (
            "needs_person",
            f"a release from quarantine (of {rec.ref}) is a person's, made on the vault it acts in: an import "
            f"brings none — review the record here and `optmem release {str(rec.ref or '')[-8:] or 'ID'}` it",
            "kind",
        )
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
                f"the security scan flags its {field} ({exc.context.get('rule')}); pass "
                "--allow-unsafe to take it anyway"
            )
        else:
            message = re.sub(r"[;,]? *(?:and )?nothing was stored", "", exc.message)  # (the import says what was not)
        return exc.code, message, field
    return None


def check(chunk: tuple[list[tuple[int, str]], bool, int, bool]) -> list[Checked]:
    """Export lines holding records, checked: each parses as a record, and the scanner finds
    nothing in it (pure: runs in worker processes for a big import); `person` false: taken as
    second-hand (`second_hand`)."""
    lines, allow_unsafe, limit, person = chunk
    soon = clock.now().timestamp() + clock.FUTURE_SLACK
    out: list[Checked] = []
    for n, text in lines:
        if text.startswith('{"record":{') and text.endswith("}}\n"):
            # the record's own JSON as `export` writes it: parsed once, written as it stands
            # (a slice that parses as one object is the whole record; anything else is read in full)
            raw = text[10:-2].encode("utf-8")
            try:
                rec = parse_line(raw, n, limit)
            except BadLine:
                pass
            else:
                out.append(_checked(n, raw, rec, limit, allow_unsafe, soon, person))
                continue
        try:
            obj = json.loads(text)["record"]
        except (ValueError, RecursionError, KeyError, TypeError) as exc:
            out.append((n, "", b"", ("unparseable_line", f"not valid JSON: {exc}"), False, (), False, ""))
            continue
        if not isinstance(obj, dict):
            out.append((n, "", b"", ("unparseable_line", "a record is a JSON object"), False, (), False, ""))
            continue
        raw = _dumps(obj).encode("utf-8")
        try:
            rec = parse_line(raw, n, limit)
        except BadLine as exc:
            refused = (exc.code, str(exc), *((exc.field,) if exc.field else ()))
            out.append((n, "", b"", refused, False, (), False, ""))
            continue
        out.append(_checked(n, raw, rec, limit, allow_unsafe, soon, person))
    return out


def _checked(
    n: int, raw: bytes, rec: Record, limit: int, allow_unsafe: bool, soon: float, person: bool = True
) -> Checked:
    changed = ""
    if not person:  # (a release line is refused whoever imports it: `refusal`)
        rec, changed = second_hand(rec)
    if not person and rec.kind not in BOOKKEEPING:
        raw = _second_hand_line(raw, rec)
    why = _textless(raw, rec) or refusal(rec, limit, allow_unsafe) or _malformed(raw, rec, soon)
    texted = corrects_from_text(raw, rec)
    if why is None and rec.hand:
        raw = rec.to_line()  # (no id given: written with the one derived from the line, as it reads)
    return n, rec.id, raw, why, rec.kind in BOOKKEEPING, _refs(rec), texted, changed


def _second_hand_line(raw: bytes, rec: Record) -> bytes:
    """An export's line with the fields `second_hand` changed set as `rec` has them, the rest as
    the file wrote them (a hand-form correction keeps its text's refs as its only `corrects`)."""
    try:
        obj = json.loads(raw)
    except ValueError:
        return raw  # (unparseable: refused on its own)
    if not isinstance(obj, dict):
        return raw
    obj["origin"] = rec.origin
    obj["tier"] = rec.tier
    if rec.kind != obj.get("kind", rec.kind):
        obj["kind"] = rec.kind
        for name in ("key", *HOT_FIELDS):
            obj.pop(name, None)
    return _dumps(obj).encode("utf-8")


EXPORT_ORIGIN = f"{IMPORT}optmem"  # what an export's records are, imported by no person
HOT_FIELDS = ("op", "file", "entry", "file_write", "vouched_by")  # a hot-memory journal record's own


def second_hand(rec: Record) -> tuple[Record, str]:
    """An export's record as an import no person runs takes it: second-hand whatever the file says
    (origin `import:optmem`, unless it says something further from the conversation: `tool`,
    another `import:…`), and never a locked rule or hot memory — only a person makes those: a
    redline is stored as a plain record, a hot-memory journal record as a note with the entry's
    words. Returns the record and what was changed ("redline", "hot" or ""). A bookkeeping line
    (`seen`, `forget` …) is left as it is."""
    if rec.kind in BOOKKEEPING:
        return rec, ""
    changed = ""
    origin = rec.origin if hand(rec.origin) >= hand(EXPORT_ORIGIN) else EXPORT_ORIGIN
    rec = rec._replace(origin=origin)
    if rec.tier == "redline":
        rec, changed = rec._replace(tier="normal"), "redline"
    if rec.kind == MEMORY:
        extra = {k: v for k, v in rec.extra.items() if k not in HOT_FIELDS}
        rec, changed = rec._replace(kind=NOTE, key=None, extra=extra), "hot"
    return rec, changed


def _same(held: Record, raw: bytes, line: int) -> bool:
    """Whether the vault's record says what an export's line under its id says — a hand-form
    correction an import took before with its `corrects` written out (`_Batch.unresolved`) is the
    same record as its line without."""
    rec = parse_line(raw, line)
    if corrects_from_text(raw, rec):
        held, rec = held._replace(corrects=()), rec._replace(corrects=())
    return held.to_line() == rec.to_line()


def _one_record(first: bytes, raw: bytes) -> bool:
    """Whether two lines of one input under one id say the same (key order and spacing aside)."""
    try:
        return bool(first == raw or json.loads(first) == json.loads(raw))
    except ValueError:
        return False


def _refs(rec: Record) -> tuple[str, ...]:
    return (*rec.corrects, rec.ref) if rec.ref else rec.corrects


def _malformed(raw: bytes, rec: Record, soon: float) -> Refusal | None:
    """What a reader would take otherwise than the line says, or `doctor` would report, in a
    record an export brings: an id that is no record id (none is fine: it is derived from the
    line, as a hand-typed line's is), a time that is missing, no ISO time or in the future (it
    would stay the newest version of its fact, every later write losing to it), tags or
    corrects that are not a list of strings."""
    obj: dict[str, Any] | None = None
    if rec.hand:
        obj = json.loads(raw)
        if obj.get("id") is not None:
            return (
                "bad_value",
                f"its id {_short(obj['id'])} is not a record id; remove the field (the record's id is then "
                "derived from its line) or give it the id it has where it came from",
                "id",
            )
    elif not (RECORD_ID.fullmatch(rec.id) or TYPED_ID.fullmatch(rec.id)):
        return (
            "bad_value",
            f"its id {_short(rec.id)} is not a record id (26 letters and digits, as optmem makes them, or one "
            "typed by hand: up to 64 letters, digits, '.', '_' or '-', so a reference can name it); remove the "
            "field (the record's id is then derived from its line) or give it the id it has where it came from",
            "id",
        )
    epoch = clock.to_epoch(rec.ts)
    if not rec.ts:
        return (
            "missing_field",
            'it has no time; add "ts" (when it was written, e.g. "2026-11-29T18:55:30Z") and import it again',
            "ts",
        )
    if epoch is None:
        return (
            "bad_timestamp",
            f"its ts {_short(rec.ts)} is not an ISO time; write when it was written (e.g. 2026-11-29T18:55:30Z) "
            "and import it again",
            "ts",
        )
    late = future_time(epoch, f"its ts {_short(rec.ts)}", soon)
    if late:
        return late
    for name in ("tags", "corrects"):
        given: tuple[str, ...] = getattr(rec, name)
        mark = f'"{name}":'.encode()
        if (mark + _dumps(list(given)).encode() in raw) if given else mark not in raw:
            continue  # (the usual record: the list as written is the list read)
        if obj is None:
            obj = json.loads(raw)
        value = obj.get(name)
        if value is None:
            continue  # (none given: a hand-typed correction's ids come from its text)
        if not (isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)):
            return (
                "bad_value",
                f"its {name} is {_short(value)}, not a list of strings; write it as a list "
                f'(e.g. ["{value if isinstance(value, str) else "…"}"]) and import it again',
                name,
            )
    return None


FUTURE_HARM = "it would stay the newest version of its fact, every later write losing to it"


def future_time(
    epoch: float,
    said: str,
    soon: float | None = None,
    *,
    field: str | None = "ts",
    harm: str = FUTURE_HARM,
    fix: str = "give it the time it was written and import it again",
) -> Refusal | None:
    """The one check every import makes of a time it brings (an export's record or recall, a
    neighbour's dated memory): more than `clock.FUTURE_SLACK` ahead of this clock is no clock
    skew but a wrong date, refused as `future_time` — `said` names the time, `harm` what taking
    it would do. `soon`: the limit, when a caller checks many times at once."""
    limit = clock.now().timestamp() + clock.FUTURE_SLACK if soon is None else soon
    if epoch <= limit:
        return None
    message = f"{said} is in the future (more than a day ahead of this clock): {harm}; {fix}"
    return ("future_time", message, field) if field else ("future_time", message)


def _short(value: Any) -> str:
    text = _dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _textless(raw: bytes, rec: Record) -> Refusal | None:
    """A record (not a bookkeeping line) whose text is missing, not a string or blank: `append`
    refuses such a text, so an import does too (a hand-edited export's `"text": 5`)."""
    if rec.kind in BOOKKEEPING or (b'"text":"' in raw and rec.text.strip()):
        return None
    given = missing_fields(raw).get("text", rec.text)  # (`"text": "…"` written with a space too)
    if isinstance(given, str):
        if given.strip():
            return None
        return "missing_field", "its text is empty; give the record a text that states something", "text"
    what = "missing" if given is None else f"{json.dumps(given, ensure_ascii=False)[:40]}, not a string"
    return "missing_field", f"its text is {what}; write it as a string", "text"


def _put_hot(batch: _Batch) -> int:
    """Hot entries from an export, into their files as `add` puts them (`memory.put_entries`):
    while the file's limit holds, journalled (unless the export's own journal records say them
    already); an entry that does not fit is refused and reported (`over_limit`), with what to do.
    A file that is empty takes the export's front matter too."""
    from optmem import memory

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


def nothing_imported(done: Imported) -> OptmemError | None:
    """The refusal of an import of which every line that had something to import was refused
    (`nothing_imported`: a script must tell it from one that worked), or None."""
    if not done.bad or done.taken:
        return None
    first = done.bad[0]
    return OptmemError(
        f"nothing was imported: each of the {len(done.bad)} line(s) with something to import was refused "
        f"(line {first['line']}: {first['message']}{' …' if len(done.bad) > 1 else ''}); fix them and import again",
        code="nothing_imported",
        source=done.source,
        bad=done.bad,
    )


def import_export(
    vault: Vault,
    lines: Iterable[str],
    *,
    allow_unsafe: bool = False,
    progress: Progress | None = None,
    writer: str | None = "user",
) -> Imported:
    """Import an export (see the module's doc) — records keyed by id, hot entries by text.
    `writer`: who runs the import. A person's import (`user`: a backup restored, a vault moved)
    writes the export's lines as they are; anyone else's takes them as second-hand whatever the
    file says (`second_hand`: origin `import:optmem`, a redline stored as a plain record, hot
    entries left out of hot memory, their journal records plain; a `release` line, or a `forget` or
    `restore` of one of the vault's redlines, refused) — and says so in `warnings`."""
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
    batch = _Batch(vault, allow_unsafe, person=writer == "user")
    import os

    from optmem.ingest import worker_pool

    with worker_pool(max(2, os.cpu_count() or 1) if total >= PARALLEL_MIN else 0) as pool:
        chunks = _record_chunks(batch, it, allow_unsafe)
        done = 0
        for checked in pool.imap(check, chunks) if pool else map(check, chunks):
            batch.take(checked)
            done += len(checked)
            if progress and total:
                progress(min(done, total), total)  # checking; the index's own progress follows
    batch.settle()
    batch.unresolved()
    written = len(batch.lines) - batch.noted
    hot = batch.write(progress)
    access = _put_access(batch)
    bad = sorted(batch.bad, key=lambda b: b["line"])
    return Imported(
        FORMAT,
        written,
        batch.already,
        hot,
        bad,
        batch.plain(),
        access=access,
        bookkeeping=batch.noted,
        held=batch.held(),
    )


def _put_access(batch: _Batch) -> int:
    """Append the recall history an export carried (the lines the vault lacks, each once) to this
    writer's ACCESS.jsonl, and let the index take it in; returns the lines appended."""
    from optmem.index import open_index

    if not batch.access or not (batch.stored or batch.lines):
        return 0  # (recalls of records a vault neither holds nor took: nothing they are about)
    vault = batch.vault
    have = set(_access_lines(vault))
    new: list[bytes] = []
    for obj in batch.access:
        line = _dumps(obj)
        if line not in have:
            have.add(line)
            new.append(line.encode())
    if new:
        fsio.append_lines(vault.access_path, new, within=vault.root)
        open_index(vault).close()  # the index takes the recalls in now, not on the next search
    return len(new)


def _record_chunks(
    batch: _Batch, lines: Iterator[str], allow_unsafe: bool
) -> Iterator[tuple[list[tuple[int, str]], bool, int, bool]]:
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
                yield chunk, allow_unsafe, limit, batch.person
                chunk, size = [], min(CHUNK, size * 2)
            continue
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError) as exc:
            batch.refuse(n, "unparseable_line", f"not valid JSON: {exc}")
            continue
        if isinstance(obj, dict) and "record" in obj:
            chunk.append((n, text))
        elif isinstance(obj, dict) and "access" in obj:
            line = obj["access"]
            when = clock.to_epoch(line["ts"]) if isinstance(line, dict) and isinstance(line.get("ts"), str) else None
            if when is None:
                batch.refuse(n, "unparseable_line", "an access line without a time")
            elif late := future_time(
                when,
                f"its ts {_short(line['ts'])}",
                harm="the records it names would count as recalled until then",
                fix="only a recall is left out",
            ):
                batch.refuse(n, *late)
            else:
                batch.access.append(line)
        elif isinstance(obj, dict) and isinstance(obj.get("hot"), dict) and _hot_ok(obj["hot"]):
            hot = obj["hot"]
            if not batch.person:  # another store's text becomes hot memory only by a person
                batch.changed["hot_entries"] += len(hot["entries"])
                continue
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
            batch.refuse(n, "unparseable_line", 'neither {"record": …}, {"hot": …} nor {"access": …}')
    if chunk:
        yield chunk, allow_unsafe, limit, batch.person


def _hot_ok(h: dict[str, Any]) -> bool:
    entries = h.get("entries")
    return (
        isinstance(h.get("file"), str)
        and isinstance(entries, list)
        and all(isinstance(e, dict) and isinstance(e.get("text"), str) and e["text"].strip() for e in entries)
    )


# -- other tools' memory files ----------------------------------------------------------------
def import_from(
    vault: Vault,
    source: str,
    path: Path,
    *,
    allow_unsafe: bool = False,
    progress: Progress | None = None,
    writer: str | None = None,
) -> Imported:
    """Read another tool's memory files into records with `source` set (`optmem.neighbours`
    reads each format; input in another format is refused before anything is written).
    `writer`: who runs the import (`record.origin`) — another store's entries (`import:<tool>`
    whoever runs it) go into hot memory only when a person runs it, who vouches for them
    (`vouched_by`); else into the log."""
    from optmem import neighbours

    if source not in SOURCES:
        raise UsageError(f"--from must be one of {', '.join(SOURCES)}, not {quote(source)}")
    if not path.exists():
        raise UsageError(f"{path} does not exist; give the {source} memory folder or file; nothing was imported")
    batch = _Batch(vault, allow_unsafe)
    hot_added = to_log = 0
    mapping = vault.settings.projects
    found: neighbours.Found | None = None
    if source == "claude-code":
        found = neighbours.claude_code(path, mapping, vault.settings.limits.record_bytes)
    elif source == "codex":
        found = neighbours.codex(path, mapping)
    elif source == "mem0":
        found = neighbours.mem0(path, mapping)
    else:
        hot_added, to_log = _hermes(batch, path, writer)
    if found is not None:
        batch.bad.extend(found.bad)
        for memory in found.memories:
            batch.draft(source, memory)
    written = len(batch.lines)
    batch.write(progress)
    warnings = found.warnings if found is not None else list(batch.warnings)
    if source == "hermes" and to_log:
        warnings += [
            f"{to_log} hot-memory entr{'y' if to_log == 1 else 'ies'} went to the log as imports, not into hot "
            "memory: another store's text becomes hot memory only by a person — the user runs the import "
            "at their own terminal, or `optmem add`s there what they vouch for"
        ]
    unmapped = dict(sorted(found.unmapped.items())) if found is not None else {}
    return Imported(
        source,
        written,
        batch.already,
        hot_added,
        batch.bad,
        warnings,
        unmapped,
        held=batch.held(),
        superseded=batch.superseded,
    )


def _files(path: Path, names: Iterable[str]) -> list[Path]:
    if path.is_file():
        return [path]
    return [path / n for n in names if (path / n).is_file()]


def _hermes(batch: _Batch, path: Path, writer: str | None) -> tuple[int, int]:
    """Hermes Agent's MEMORY.md / USER.md (`§`-separated entries), each `origin: import:hermes`:
    into hot memory while they fit its limits (an entry it holds already is left) when a person
    runs the import — its journal records say who vouched for them (`vouched_by: user`) — else
    to the log; returns the entries added, and how many went to the log because no person runs
    the import (hot memory takes another store's text only from a person: `memory.apply` refuses
    it, `needs_person`). An entry the scanner flags as an injection — weighed as an import's text,
    which gives no orders — goes to the log, held there for a person: a hot file cannot hold it.
    Every file is checked to be Hermes's before any entry is written."""
    from optmem import memory, neighbours
    from optmem.errors import NeedsPerson, OverLimit
    from optmem.quarantine import kind_of

    origin = f"{IMPORT}hermes"  # where the text came from, whoever runs the import
    vouched = "user" if writer == "user" else None  # (a person's word puts it in hot memory)
    to_log = 0

    found = _files(path, ("MEMORY.md", "USER.md"))
    if not found:
        raise neighbours.wrong("hermes", path, "holds neither MEMORY.md nor USER.md", None)
    texts = [(f, neighbours.read(f)) for f in found]
    neighbours.check_hermes(texts)
    added = 0
    full: Counter[str] = Counter()  # entries a hot file had no room for, by file
    for f, text in texts:
        target = "user" if f.name == "USER.md" else "memory"
        _, entries, _ = memory.parse(text)
        for n, entry in enumerate(e.strip() for e in entries if e.strip()):
            rule = None if batch.allow_unsafe else scan.find(entry, tool=True)
            if rule and kind_of(rule) != "injection":
                batch.refuse(n + 1, "unsafe_content", f"{f.name} entry {n + 1}: the security scan flags it ({rule})")
                continue
            if rule is None:
                try:
                    res = memory.add(
                        batch.vault,
                        entry,
                        target=target,
                        source="hermes",
                        allow_unsafe=batch.allow_unsafe,
                        origin=origin,
                        vouched_by=vouched,
                    )
                    added += res.status == "added"
                    continue
                except OverLimit:
                    full[f.name] += 1  # (the rest goes to the log: said)
                except NeedsPerson:
                    to_log += 1
                except OptmemError as exc:
                    batch.refuse(n + 1, exc.code, f"{f.name} entry {n + 1}: {exc.message}")
                    continue
            # to the log: held there when flagged (`log.build_record`), never injected whole into a prompt
            batch.draft("hermes", neighbours.Memory(f.name, n + 1, entry, f.stat().st_mtime, tags=(target,)))
    for name, n in full.items():
        limit = batch.vault.settings.limits.user if name == "USER.md" else batch.vault.settings.limits.memory
        batch.warnings.append(
            f"{n} {name} entr{'y' if n == 1 else 'ies'} went to the log as imports, not into hot memory: the vault's "
            f"{name} is full (at most {limit:,} characters, `[limits]` in optmem.toml) — search finds them; "
            f"`optmem add` one there after making room (`optmem remove`) if it belongs in every prompt"
        )
    return added, to_log
