"""Handoff notes: what a session leaves for the next one, per project.

`projects/<name>/HANDOFF.md` holds the latest note (front matter + Done / Blocked / Next, and
optional Notes); every note is also appended to the log as a `handoff` record, so earlier ones
stay in history and in search. A person may edit HANDOFF.md: `read` then returns their version.
The file's format is `handoff_file`'s.
"""

from __future__ import annotations

import re

from optmem import clock, fsio, log, record, view
from optmem import meta as metamod
from optmem.errors import (
    BadFrontMatter,
    NotFound,
    OptmemError,
    TooLarge,
    Unreadable,
    UnsafeContent,
    Unwritable,
    UsageError,
)
from optmem.handoff_file import SECTIONS, Handoff, from_row, names_sections, parse, parse_body, render
from optmem.record import HANDOFF
from optmem.safety import scan
from optmem.settings import MAX_COUNT
from optmem.value import Value
from optmem.vault import NAME_RE, Vault, validate_name

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on `context`'s path)
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    from optmem.schema import Row


def front_matter_gaps(text: str) -> tuple[bool, str] | None:
    """What `optmem doctor` says of a HANDOFF.md whose front matter does not say when and from
    which record it was written: (broken, what) — broken when the file opens a front matter it
    never closes (its fields are read as body); None when the file has what it needs. Raises
    BadFrontMatter as `parse` does."""
    fields, _ = metamod.split(text)
    if fields is None:
        if re.match(r"---[ \t]*\r?\n", text):
            return (
                True,
                "opens its front matter with a '---' line but never closes it with another: fix the closing line",
            )
        return False, (
            "has no front matter: it shows no time, domain or record (fine for a file typed by hand; "
            "the next `optmem handoff write` writes one)"
        )
    missing = [k for k in ("project", "time", "record") if not fields.get(k)]
    if missing:
        return False, f"has front matter without {', '.join(missing)}: its handoff shows none"
    return None


def _redacted(h: Handoff) -> Handoff:
    """`h` as `follow` journals it: each field the scanner flags as its `[BLOCKED: rule]`."""
    return h._replace(
        done=[scan.redact(i) for i in h.done],
        blocked=[scan.redact(i) for i in h.blocked],
        next=[scan.redact(i) for i in h.next],
        note=scan.redact(h.note) if h.note else "",
    )


def write(
    vault: Vault,
    project: str,
    *,
    done: list[str] | None = None,
    blocked: list[str] | None = None,
    next: list[str] | None = None,
    note: str | None = None,
    file_text: str | None = None,
    domain: str | None = None,
    source: str | None = None,
    session: str | None = None,
    allow_unsafe: bool = False,
    confidence: float | None = None,
    said_at: str | None = None,
    origin: str | None = None,
) -> Handoff:
    """Write projects/P/HANDOFF.md atomically and append a `handoff` record to the log
    (`confidence`: as `append --confidence`; an agent's own digest waits as pending; `said_at`:
    when it was written, if earlier than now — a handoff that waited in a spool; `origin`: who
    wrote it — `agent` for an agent's own account of its session, whose "done" items are its
    claims, as every surface says). A person's edit of the HANDOFF.md it replaces is journalled
    first (`follow`). HANDOFF.md holds the latest handoff, as `read` orders them (`_order`: by
    time), and the handoff written last is the latest: under a clock that stands behind the
    project's newest handoff (stepped back, OPTMEM_NOW) it is stamped just after that one, as a
    hot file's journal is (`log.stamped_after`) — the returned handoff's `stamped_after` names
    that one and `clock_said` what the clock said."""
    validate_name(project, "project")
    if domain is not None:
        validate_name(domain, "domain")  # before anything is made
    items: dict[str, list[str]] = {"done": list(done or []), "blocked": list(blocked or []), "next": list(next or [])}
    notes = (note or "").strip()
    if file_text:
        body = metamod.split(file_text)[1]
        parsed = parse_body(body)
        if not any(parsed[s] for s in ("done", "blocked", "next", "note")) and not names_sections(body):
            parsed["note"] = file_text.strip()  # free text: keep it as the note (headings alone: nothing said)
        for s in SECTIONS:
            items[s] += parsed[s]
        notes = "\n\n".join(x for x in (notes, parsed["note"]) if x)
    for s in SECTIONS:
        items[s] = [i.strip() for i in items[s] if i and i.strip()]
    if not any(items.values()) and not notes:
        if file_text:
            raise UsageError("an empty handoff: the file's sections (## Done, ## Next …) hold no item; fill one")
        raise UsageError("an empty handoff: give --done, --blocked, --next, --note or --file")
    for field, n, item in [*((s, i, x) for s in SECTIONS for i, x in enumerate(items[s], 1)), ("note", 0, notes)]:
        try:
            scan.check(item, allow_unsafe=allow_unsafe)
        except UnsafeContent as err:  # (named as docs/safety.md says: the field, and which item of it)
            where = f"the {field} item {n}" if n else "the note"
            named: dict[str, Any] = {**err.context, "field": field} | ({"item": n} if n else {})
            raise UnsafeContent(err.message.replace("the text", where, 1) + " (nothing was written)", **named) from None
    draft = Handoff(
        project=project,
        time="",
        done=items["done"],
        blocked=items["blocked"],
        next=items["next"],
        note=notes,
        source=source,
        origin=origin,
    )
    size, limit = len(draft.summary().encode("utf-8")), vault.settings.limits.record_bytes
    if size > limit:
        raise TooLarge(
            f"the handoff is {size:,} bytes; it may hold at most {limit:,} — keep what "
            "the next session needs and leave the detail in the log (nothing was "
            "written)",
            bytes=size,
            limit=limit,
        )
    extra: dict[str, Any] = {s: v for s, v in items.items() if v}
    if notes:
        extra["note"] = notes
    if said_at:
        extra["said_at"] = said_at
    from optmem.index import prepare

    prepare(vault)
    path = vault.project_dir(project) / "HANDOFF.md"
    stored: str | None = None  # the log record's id, once it is stored
    try:
        # the file is made ready before the log record: one that cannot be written (read-only, in a
        # read-only folder) refuses the handoff with nothing stored — a refused one never reads as the latest
        with vault.lock(), fsio.atomic_stream(path, within=vault.root) as new:
            # a person's edit of the file this write replaces is journalled first, as every read
            # of the view journals it (`follow`): their words are never overwritten unlogged
            _follow_one(vault, project, before_write=True)
            # the handoffs of its project and domain its writer sees as the latest (the shown one and
            # any written beside it): this one follows them, and none of them is shown beside it
            with _index(vault) as idx:
                after, newest = _newest(idx, project)
                heads = _heads(idx, project, log.default_domain(vault, domain))
                extra["after"] = [r.id for r in heads if _seen_by(r, session)]
                if unread := [r.id for r in heads if not _seen_by(r, session)]:
                    extra["unread"] = unread  # (shown beside it, "written before it, read by no one")
            said = clock.now()
            behind = newest is not None and said.timestamp() < after  # (stamped after it: the clock's time kept)
            if behind:
                extra["clock_said"] = clock.format_ts(said)
            res = log.append(
                vault,
                log.Draft(
                    draft.summary(),
                    domain=domain,
                    project=project,
                    kind=HANDOFF,
                    source=source,
                    session=session,
                    extra=extra,
                    confidence=confidence,
                    origin=origin,
                    after_time=after,
                ),
                gate=False,
                allow_unsafe=allow_unsafe,
            )
            stored, rec = res.id, res.record or {}
            done_h = draft._replace(time=rec.get("ts", clock.format_ts(said)), domain=rec.get("domain"), id=stored)
            if behind:
                done_h = done_h._replace(stamped_after=newest, clock_said=clock.format_ts(said))
            new.write(render(done_h).encode("utf-8"))
    except Unwritable as exc:
        if stored is None:
            raise
        raise _stored_unwritten(path, stored, exc) from exc  # (the disk filled meanwhile, …)
    return done_h


BESIDE_WALK = 16  # a project's (domain's) newest handoffs looked through for ones written beside the latest


def _index(vault: Vault) -> Any:
    from optmem.index import open_index

    return open_index(vault)


def _after_of(idx: Any, row: Row) -> list[str] | None:
    """The handoffs a handoff record's writer saw as the latest of its project and domain (its
    `after`); None for one written without it (before handoffs kept it, or typed by hand): it
    follows every handoff before it."""
    after = idx.record(row).extra.get("after")
    if isinstance(after, list) and all(isinstance(a, str) for a in after):
        return after
    return None


def _heads(idx: Any, project: str, domain: str) -> list[Row]:
    """The handoffs of `project` and `domain` no later one followed, newest first (of its
    `BESIDE_WALK` newest): the latest, and each written beside it — on another machine, before a
    sync — that its writer had not seen. One without `after` follows every handoff before it.
    A forgotten handoff is never one of them, but what it followed stays followed if a later one
    followed it: forgetting a handoff brings none back as "written beside" (review19 #3)."""
    out: list[Row] = []
    seen: set[str] = set()
    for row in idx.handoffs(project, BESIDE_WALK, domain, forgotten=True):
        if row.forgotten and row.id not in seen:
            continue  # (forgotten, and no later one followed it: what it had seen says nothing)
        if row.id not in seen:
            out.append(row)
        after = _after_of(idx, row)
        if after is None:
            break
        seen.update(after)
    return out


# What counts as a read of a handoff: a surface that shows handoffs records the ones it showed whole
# (`lifecycle.read_in_full` picks them; `seen` records them, or the surface puts them in its own
# recall line, as `context` does), and a handoff written later here follows those (`_seen_by`).


def _seen_by(row: Row, session: str | None) -> bool:
    """Whether a handoff a new one of its project and domain is written after was seen before
    it: shown in full on this clone (`lifecycle.read_in_full`: by `context` or `handoff read` — the MCP
    tools, a session-start hook — its record's `here`: a recall in this clone's own recall file),
    or written earlier in the same session (`session`: a PreCompact handoff, then the SessionEnd
    one). One nobody read — another agent's, written a minute before on the same project (tester18
    #7) — is not followed: its open items stand beside the new one. Nor is one read only on another
    clone, whose recall a sync brought (tidy18 #1): its reader is not this writer."""
    return row.here is not None or bool(session and row.session == session)


def seen(vault: Vault, shown: list[Handoff]) -> None:
    """Record that these handoffs were read, each shown whole (`handoff read`): a handoff written
    after this here follows them (`_seen_by`). A read-only vault: they are shown all the same,
    unrecorded."""
    from optmem import lifecycle

    ids = [h.id for h in shown if h.id and len(h.id) == 26]  # (a HANDOFF.md typed by hand names none)
    try:
        lifecycle.touch_ids(vault, lifecycle.read_in_full((i, True) for i in ids), "context")
    except OptmemError:
        pass


def beside(vault: Vault, latest: Handoff, *, show_unsafe: bool = False) -> list[Handoff]:
    """The handoffs of `latest`'s project and domain written beside it (`_heads`: on another
    machine, before a sync — its writer had not seen them), newest first, each with `beside` its
    id: their open items are the next session's as much as the latest's. None when `latest` is no
    record of the log's (a HANDOFF.md typed by hand) or no other was written beside it."""
    if not latest.id or not latest.domain or not NAME_RE.fullmatch(latest.domain):
        return []
    with _index(vault) as idx:
        heads = _heads(idx, latest.project, latest.domain)
        if latest.id not in {r.id for r in heads}:
            return []
        top = idx.by_id(latest.id) if len(heads) > 1 else None
        unread = idx.record(top).extra.get("unread") if top is not None else None
        unread = set(unread) if isinstance(unread, list) else set()
        found = [from_row(idx, r)._replace(beside=latest.id, unread=r.id in unread) for r in heads if r.id != latest.id]
    return [h if show_unsafe else h.shown() for h in found]


def _newest(idx: Any, project: str) -> tuple[float, str | None]:
    """When the project's newest handoff was made (`record.made_at`: a handoff written now is
    stamped after it), and its id; -inf and None when it has none. Lock held."""
    rows = idx.handoffs(project, 1)
    return (record.made_at(rows[0].ts, rows[0].id), rows[0].id) if rows else (float("-inf"), None)


def _stored_unwritten(path: Path, record: str | None, exc: Unwritable) -> Unwritable:
    """The error of a handoff whose log record was stored and whose HANDOFF.md could not be
    written after it: said as it is — the record is the project's latest handoff (`read` shows
    it), the file is the older one until the next write."""
    why = fsio.why_unwritable(exc.__cause__) if isinstance(exc.__cause__, OSError) else exc.message
    return Unwritable(
        f"the handoff is stored in the log (record {record}) and `optmem handoff read` shows it, but {path} "
        f"could not be written ({why}): it holds the previous handoff until the next `optmem handoff write`",
        file=str(path),
        record=record,
    )


def _records(vault: Vault, project: str | None, limit: int | None) -> list[Handoff]:
    return _logged(vault, project, limit)[0]


def _logged(
    vault: Vault, project: str | None, limit: int | None, record: str | None = None, domain: str | None = None
) -> tuple[list[Handoff], bool]:
    """The `limit` newest handoff records (of `project`), newest first as the log orders them
    (SPEC §4: later `ts`, then id, then line), and whether the record `record` is one of them
    however old: a handoff of `project` the log shows (not one forgotten, of another project —
    a copied folder's — or of another kind)."""
    from optmem.index import open_index

    with open_index(vault) as idx:
        # (as stored: `Handoff.shown` scans them for the surfaces that show them)
        rows = idx.handoffs(project, limit, domain)
        held = record is not None and (record in {r.id for r in rows} or _shown_handoff(idx.by_id(record), project))
        return [from_row(idx, r) for r in rows], held


def _shown_handoff(row: Row | None, project: str | None) -> bool:
    """Whether the index row is a handoff record of `project` that `Index.handoffs` gives."""
    return row is not None and row.kind == HANDOFF and not row.forgotten and row.project == project


def record_gap(row: Row | None, project: str, record: str) -> str | None:
    """What `optmem doctor` says of a HANDOFF.md of `project` whose front matter names `record`
    (its index row `row`) when that is no handoff of the project the log shows — the file is then
    read as the file it is; None otherwise (a record the log lacks is a write the log has not
    caught up with, or a file typed by hand)."""
    if row is None or _shown_handoff(row, project):
        return None
    if row.kind != HANDOFF:
        return f"names record {record}, which is no handoff ({row.kind}): it is read as the file it is"
    if row.project != project:
        return (
            f"names record {record}, a handoff of project {row.project!r} (a folder copied with its file?): "
            "this project shows the file as it is — write this project's own handoff, or remove the file"
        )
    return (
        f"names record {record}, which is forgotten: `handoff read` and `context` still show the file — "
        "edit or remove it to take the note away too"
    )


def _file(vault: Vault, project: str) -> Handoff | None:
    raw = fsio.read_text(vault.project_dir(project) / "HANDOFF.md", within=vault.root, limit=fsio.NOTE_BYTES)
    if raw is None or not raw.strip():
        return None
    try:
        h = parse(raw)
    except BadFrontMatter as exc:
        # the first line says what is wrong; the parser's detail quotes the file (`optmem doctor` has it)
        where, what = f"projects/{project}/HANDOFF.md", exc.message.splitlines()[0]
        raise BadFrontMatter(
            f"{where} could not be read: {what} — fix its front matter (`optmem doctor` says where), or "
            "remove the file (the log keeps every handoff: `optmem handoff read` then shows the latest)",
            file=where,
            reason=(
                f"has front matter that {what.removeprefix('front matter ')}"
                if what.startswith("front matter ")
                else f"has front matter that cannot be read ({what})"
            ),
        ) from exc
    return h if h.project else Handoff(**{**h.to_dict(), "project": project})


def read(
    vault: Vault,
    project: str,
    history: int = 1,
    *,
    domain: str | None = None,
    show_unsafe: bool = False,
    set_aside: list[OptmemError] | None = None,
) -> list[Handoff]:
    """The latest handoff (HANDOFF.md when a person edited it, or when it is the newest), or the
    `history` latest, newest first, as surfaces show them (`Handoff.shown`) unless `show_unsafe`;
    `domain`: of that domain only (HANDOFF.md counts when its front matter names the domain).
    Raises NotFound when the project has none; BadFrontMatter or Unreadable, naming the file, when
    its HANDOFF.md cannot be read — unless `set_aside` is given: then that error is put there and
    the log's handoffs are read (`--history`, `context`: the log keeps every handoff)."""
    validate_name(project, "project")
    if domain is not None:
        validate_name(domain, "domain")
    if history < 1:
        raise UsageError("--history must be at least 1")
    history = min(history, MAX_COUNT)  # more than any project holds: all of them
    vault.require()
    try:
        current = _file(vault, project)
    except (BadFrontMatter, Unreadable) as exc:
        if set_aside is None:
            raise
        if all(e.message != exc.message for e in set_aside):
            set_aside.append(exc)
        current = None
    if current is not None and domain is not None and current.domain != domain:
        current = None  # (another agent's, or a file typed by hand: no domain)
    # a HANDOFF.md no person edited is a copy of its log record: the log says what was written
    # (the file's Markdown cannot tell an item "(none)" or a note's "## Next" line from its own)
    # and which handoff is the newest (a write killed after its record and before the file
    # leaves the file older than the log) — the file stands only for a record the log lacks.
    # A person's edit wins unless the log holds it (`follow`) and a newer handoff after it.
    unedited = current is not None and not current.edited and current.id is not None
    window = history + (1 if current is None or unedited else _WALK)  # (an edit's journal, writes after it)
    records, logged = _logged(vault, project, window, current.id if unedited and current else None, domain)
    if current is not None and unedited and logged:
        current = None
    out: list[Handoff] = []
    if current is not None:
        newest = records[0] if records else None
        journalled = _journal_of(_redacted(current), records) if current.edited else None
        # the edit is in the log, and a handoff was written after it (its file write cut short)
        superseded = journalled is not None and newest is not None and journalled.id != newest.id
        if not superseded and (current.edited or newest is None or _order(current) > _order(newest)):
            if journalled is not None:  # a person's edit, journalled (`follow`): shown once, with its record
                current = current._replace(id=journalled.id)
            out.append(current)
            records = [r for r in records if r.id != current.id]
    out += records
    if not out:
        if domain is not None:
            raise NotFound(
                f"project {project!r} has no handoff of domain {domain!r}; `optmem handoff read --project "
                f"{project}` shows the latest of every domain",
                project=project,
                domain=domain,
            )
        raise NotFound(
            f"project {project!r} has no handoff yet; write one with "
            f"`optmem handoff write --project {project} --done …`",
            project=project,
        )
    return [h if show_unsafe else h.shown() for h in out[:history]]


AGENTS_SHOWN = 4  # other domains' latest handoffs shown beside the latest one, newest first


def latest_per_domain(
    vault: Vault,
    project: str,
    *,
    domain: str | None = None,
    show_unsafe: bool = False,
    set_aside: list[OptmemError] | None = None,
) -> list[Handoff]:
    """The latest handoff of `domain` (given) or of the project, then the latest of each other
    domain that wrote one (at most `AGENTS_SHOWN`, newest first): several agents on one project
    (a Hermes cron agent, a coding agent) each leave their open items, and neither a later
    handoff of one nor a `--domain` hides another's. Raises as `read` does (`set_aside` as there)."""
    from optmem.index import open_index

    latest = read(vault, project, show_unsafe=show_unsafe, set_aside=set_aside)[0]
    with open_index(vault) as idx:
        domains = idx.handoff_domains(project)
        newest = idx.handoffs(project, 1)
    # a HANDOFF.md typed by hand without front matter names no domain: it stands for the newest
    # handoff it was edited from, whose agent it speaks for
    latest_of = latest.domain or (newest[0].domain if newest else None)
    mine = domain if domain is not None else latest_of
    first: Handoff | None = latest
    if mine != latest_of:
        try:
            first = read(vault, project, domain=mine, show_unsafe=show_unsafe, set_aside=set_aside)[0]
        except NotFound:
            first = None  # that agent left none: the others' still come
    others: list[Handoff] = [] if first is latest else [latest]
    for d in domains:
        if d in (mine, latest_of) or not NAME_RE.fullmatch(d):
            continue
        try:
            h = read(vault, project, domain=d, show_unsafe=show_unsafe, set_aside=set_aside)[0]
        except NotFound:
            continue
        others.append(h)
    others = [h for h in others if first is None or (h.id != first.id and h.summary() != first.summary())]
    others.sort(key=_order, reverse=True)
    # each agent's latest, then the handoffs of its domain written beside it (`beside`)
    return [
        x
        for h in ([first] if first is not None else []) + others[:AGENTS_SHOWN]
        for x in (h, *beside(vault, h, show_unsafe=show_unsafe))
    ]


_WALK = 8  # handoff records looked through for the journal of a person's edit


def _journal_of(said: Handoff, records: list[Handoff]) -> Handoff | None:
    """The record that journals the person's edit `said` (`follow`), among `records` (newest
    first): looked for past writes whose HANDOFF.md never landed (a write killed after its
    record), up to the file's own record or an earlier edit's journal (source `drift`)."""
    for r in records:
        if r.summary() == said.summary():
            return r
        if r.source == "drift" or r.id == said.id:
            return None
    return None


def _order(h: Handoff) -> tuple[str, str]:
    """Where a handoff stands among records (SPEC §4: "newer" is a later `ts`, equal times ordered
    by id — its time part, as `ingest.NEWEST_FIRST` orders them)."""
    rid = h.id or ""
    return h.time, rid[:10] if len(rid) == 26 else rid


def follow(vault: Vault) -> list[str]:
    """Journal each HANDOFF.md a person edited (its body no longer matches its digest) that the
    log does not hold yet: a `handoff` record of the file's fields (source `drift`), correcting
    the project's latest one — so search finds the person's words and reads the handoff they
    replaced as superseded. A field the scanner flags is journalled as its `[BLOCKED: rule]`
    placeholder (the file keeps it); a file that cannot be read, or holds nothing, is left to the
    commands that read it. Looked for without the lock and journalled under it (looked for again
    there: two readers journal it once). The record ids."""
    out: list[str] = []
    for name, _ in vault.handoff_paths():
        project = name.split("/")[1]
        try:
            if NAME_RE.fullmatch(project) and _unjournalled(vault, project):
                with vault.lock():
                    out += _follow_one(vault, project)
        except OptmemError:
            continue  # (cannot be read or written now: its readers say so, the next read tries again)
    return out


def _follow_one(vault: Vault, project: str, *, before_write: bool = False) -> list[str]:
    """Journal a person's edit of the project's HANDOFF.md the log does not hold yet, lock held
    (`follow`; `write`, before it replaces the file); the record id, if one was written. A file
    that cannot be read is left to the commands that read it — except `before_write`: a file
    whose front matter cannot be read is journalled as its text (`_journal_unread`), and one
    that cannot be read at all (not UTF-8, too large) refuses the write, which would replace
    what nobody could journal."""
    try:
        edit = _unjournalled(vault, project)
    except BadFrontMatter:
        return _journal_unread(vault, project) if before_write else []
    except OptmemError as exc:
        if before_write and isinstance(exc, Unreadable):
            raise Unreadable(
                f"{exc.message.removesuffix('; nothing was changed')} — and `handoff write` would replace it "
                "with nothing kept of it: fix or move the file aside first; nothing was written",
                file=f"projects/{project}/HANDOFF.md",
            ) from exc
        return []
    return [_journal_edit(vault, *edit)] if edit is not None else []


def _journal_unread(vault: Vault, project: str) -> list[str]:
    """A HANDOFF.md whose front matter cannot be read, journalled before `write` replaces it: its
    whole text as the note of a `handoff` record (source `drift`, the person's), which a field the
    scanner flags is redacted in as `follow` redacts one — unless the project's latest handoff
    already holds that text (a write tried before, refused after its journal)."""
    raw = fsio.read_text(vault.project_dir(project) / "HANDOFF.md", within=vault.root, limit=fsio.NOTE_BYTES)
    text = scan.redact(raw.strip()) if raw else ""
    if not text:
        return []
    latest = _records(vault, project, 1)
    if latest and latest[0].note == text and not (latest[0].done or latest[0].blocked or latest[0].next):
        return []
    said = Handoff(project=project, time="", done=[], blocked=[], next=[], note=text)
    return [_journal_edit(vault, said, latest[0] if latest else None)]


def _unjournalled(vault: Vault, project: str) -> tuple[Handoff, Handoff | None] | None:
    """A person's edit of the project's HANDOFF.md that the log does not hold yet (as `follow`
    journals it), and the handoff it replaces; or None."""
    h = _file(vault, project)
    if h is None or not h.edited or not (h.done or h.blocked or h.next or h.note):
        return None
    said = _redacted(h)._replace(project=project)
    latest = _records(vault, project, _WALK)
    if _journal_of(said, latest) is not None:
        return None  # journalled already
    return said, latest[0] if latest else None


def _journal_edit(vault: Vault, said: Handoff, latest: Handoff | None) -> str:
    """A person's edit of HANDOFF.md as a handoff record (source `drift`) correcting `latest`,
    stamped after the project's newest handoff (lock held): it is the latest, whatever the clock."""
    extra: dict[str, Any] = {s: getattr(said, s) for s in SECTIONS if getattr(said, s)}
    if said.note:
        extra["note"] = said.note
    domain = said.domain if said.domain and NAME_RE.fullmatch(said.domain) else None
    if latest is not None and latest.id and latest.domain == log.default_domain(vault, domain):
        extra["after"] = [latest.id]  # (the file the person edited showed it; another domain's: as before)
    with _index(vault) as idx:
        newest = _newest(idx, said.project)[0]
    res = log.append(
        vault,
        log.Draft(
            said.summary(),
            domain=domain,
            project=said.project,
            kind=HANDOFF,
            source="drift",
            origin="user",  # a person's edit of the file
            corrects=[latest.id] if latest is not None and latest.id else None,
            extra=extra,
            after_time=newest,
        ),
        gate=False,
    )
    return str(res.id)


def list_all(vault: Vault) -> list[dict[str, Any]]:
    """Every project with a handoff: its latest (as `read` shows it), and the latest of each other
    agent (domain) that left one on it (`agents`, as `latest_per_domain` and context give them —
    a later handoff of one agent never hides another's open items), each followed by the handoffs
    of its domain written beside it (`beside`, marked so); a project whose HANDOFF.md
    cannot be read is listed with why (`unreadable`), the others as ever."""
    vault.require()
    projects = {h.project for h in _records(vault, None, None) if h.project and NAME_RE.fullmatch(h.project)}
    pdir = vault.root / "projects"
    if pdir.is_dir():  # a folder whose name is not a project name is not ours (doctor says so)
        projects |= {p.name for p in pdir.iterdir() if NAME_RE.fullmatch(p.name) and (p / "HANDOFF.md").is_file()}
    out: list[dict[str, Any]] = []
    for project in sorted(projects):
        try:
            latest, *agents = latest_per_domain(vault, project)
        except NotFound:
            continue  # (a HANDOFF.md that holds nothing, and no record: no handoff to list)
        except (BadFrontMatter, Unreadable) as exc:
            why = exc.context.get("reason") or "cannot be read"
            out.append({"project": project, "unreadable": view.display(f"projects/{project}/HANDOFF.md {why}")})
            continue
        out.append(
            {"project": project, **_listed(latest), "edited": latest.edited, "agents": [_listed(h) for h in agents]}
        )
    return out


def _listed(h: Handoff) -> dict[str, Any]:
    """A handoff as `list_all` lists it; one written beside its domain's latest (`beside`) says so,
    with its id and the latest's."""
    said = {"domain": h.domain, "time": h.time, "done": len(h.done), "blocked": len(h.blocked), "next": h.next}
    return said | ({"id": h.id, "beside": h.beside} if h.beside else {})


HELD_NOTE = " ({} part(s) the security scan flagged are held in quarantine.)"  # what a handoff says of them


def scrub(lines: list[str]) -> tuple[list[str], list[str], int]:
    """`lines` with each secret in them read as its `[BLOCKED: rule]` placeholder and the rest of
    the line kept (`redact.secrets_out`, as Hermes keeps a turn): (the lines kept, the rules
    of the secrets taken out, how many lines were left out — a secret and too little else). A line
    without a secret is kept as it is; what else the scanner flags in one is for the caller."""
    from optmem.redact import secrets_out

    kept: list[str] = []
    rules: list[str] = []
    gone = 0
    for line in lines:
        said, found = secrets_out(line)
        if said is None:
            gone += 1
        else:
            kept.append(said)
            rules += found
    return kept, rules, gone


def secrets_told(of: str, rules: list[str], gone: int) -> list[str]:
    """What a handoff's writer tells of the secrets `scrub` took out of `of`."""
    told = []
    if rules:
        shown = ", ".join(f"[BLOCKED: {r}]" for r in dict.fromkeys(rules))
        told.append(f"{len(rules)} secret(s) in {of} were not kept: each reads as {shown}, the rest of its line kept")
    if gone:
        told.append(f"{gone} line(s) of {of} were not kept: a secret and too little else (fewer than two words)")
    return told


def write_kept(
    vault: Vault,
    project: str,
    *,
    done: list[str],
    blocked: list[str],
    next: list[str],
    note: str,
    bare_note: str | None = None,
    left_out: list[tuple[str, str]] | None = None,
    scrubbed: tuple[list[str], int] = ([], 0),
    source: str,
    session: str | None,
    said_at: str | None = None,
    origin: str | None = "agent",
) -> tuple[Handoff | None, str | None, list[str]]:
    """A session's handoff as an agent host writes it, unattended: nothing of it is lost to the
    scanner. A secret is never stored: it reads as its `[BLOCKED: rule]` placeholder and the rest
    of its line is kept (`scrub`; a line that holds little else is left out), and the warnings say
    so — with what the caller scrubbed already (`scrubbed`: the rules and the lines left out; the
    requests its note quotes). A line the scanner flags as a possible injection is left out of the
    handoff (its file goes into prompts whole, so it cannot be held itself) and kept, with every
    other line left out, in one record held in quarantine (`optmem quarantine`), as any flagged
    write is; the note says how many parts that record holds. When the note as a whole trips the
    scanner (lines that each pass, read together), the handoff is written with `bare_note` instead
    and the note is held; when the handoff as a whole still trips, all of it is held and no handoff
    is written (`left_out`: parts the caller left out already, (what, text), held with them).
    Errors of the vault's state (locked, read-only) pass to the caller, which spools the write.
    Returns (the handoff written, or None when none could be; the record that holds what was left
    out, or None; what to tell)."""
    from optmem.errors import UnsafeContent

    rules, gone = list(scrubbed[0]), scrubbed[1]

    def cleared(lines: list[str]) -> list[str]:
        nonlocal rules, gone
        kept, found, lost = scrub(lines)
        rules, gone = rules + found, gone + lost
        return kept

    left: list[tuple[str, str, str]] = []  # (what, text, rule): held in quarantine
    for what, text in left_out or []:
        left += [(what, line, scan.find(line) or "?") for line in cleared([text])]
    items: dict[str, list[str]] = {"done": [], "blocked": [], "next": []}
    for section, lines in (("done", done), ("blocked", blocked), ("next", next)):
        for line in cleared(lines):
            if rule := scan.find(line):
                left.append((section, line, rule))
            else:
                items[section].append(line)
    notes = (cleared([note]) or [bare_note or ""])[0] if note else note
    if notes and notes != (bare_note or "") and (rule := scan.find(notes)):
        left.append(("note", notes, rule))
        notes = bare_note or ""
    h: Handoff | None = None
    for attempt in range(3):
        try:
            if any(items.values()) or notes.strip():
                h = write(
                    vault,
                    project,
                    done=items["done"],
                    blocked=items["blocked"],
                    next=items["next"],
                    note=notes + (HELD_NOTE.format(len(left)) if left else ""),
                    source=source,
                    session=session,
                    said_at=said_at,
                    origin=origin,
                )
            break
        except UnsafeContent as err:  # (the parts pass one by one; read together they trip)
            rule = str(err.context.get("rule") or "?")
            if err.context.get("kind") != "injection":
                raise
            if attempt == 0 and notes and notes != (bare_note or ""):
                left.append(("note", notes, rule))
                notes = bare_note or ""
                continue
            left += [(s, line, rule) for s, lines in items.items() for line in lines]
            if notes and notes != (bare_note or ""):
                left.append(("note", notes, rule))
            items = {s: [] for s in items}
            notes = ""
            break
    held, told = _hold_left(vault, project, left, source=source, session=session, said_at=said_at, origin=origin)
    return h, held, secrets_told(host_handoff(source, session), rules, gone) + told


class SessionNote(Value):
    """A host's handoff note made of its parts (`session_note`), as `write_kept` takes it."""

    note: str  # every part that passes the scanner
    bare: str  # the note without the requests (when the requests read together trip the scanner)
    left_out: list[tuple[str, str]]  # (what, text): each part the scanner flags, held alone
    scrubbed: tuple[list[str], int]  # the secrets taken out of the requests: their rules, lines left out


def session_note(
    requests: list[str],
    judged: str,
    judged_count: int | None,
    note_of: Callable[[list[str], str], str],
) -> SessionNote:
    """The note of a handoff an agent host draws from a session (the Claude Code hook, Hermes'
    `on_session_end`: one path), from its parts — the user's requests (the goal first) and the
    reader's judgement of which open items a later report settled (`Reports.judged`) — each
    checked alone: a request the scanner flags is held in quarantine by itself (`left_out`) and
    the note keeps the others; a flagged judgement is held and the note says only how many items
    were taken as done. A secret in a request reads as its placeholder (`scrub`). `note_of`:
    the host's wording of the note from the requests kept and the judgement."""
    requests, rules, gone = scrub(requests)
    asked = [r for r in requests if not scan.find(r)]
    left = [("request", r) for r in requests if r not in asked]
    if judged and scan.find(judged):
        left.append(("judged", judged))
    if judged and (left[-1:] == [("judged", judged)] or scrub([judged])[1]):
        # (the sentence naming them is held; that open items were taken as done is still said)
        count = judged_count if isinstance(judged_count, int) and judged_count > 0 else "Some"
        judged = (
            f"{count} open item(s) were taken as done, named by a later report of work done; "
            "the sentence naming them is held out by the scanner."
        )
    return SessionNote(note_of(asked, judged), note_of([], judged), left, (rules, gone))


def host_handoff(source: str, session: str | None) -> str:
    """How a host's handoff is named in what is told of it."""
    return f"the {source} handoff of session {session}" if session else f"a {source} handoff"


def _hold_left(
    vault: Vault,
    project: str,
    left: list[tuple[str, str, str]],
    *,
    source: str,
    session: str | None,
    said_at: str | None,
    origin: str | None,
) -> tuple[str | None, list[str]]:
    """What `write_kept` left out of a handoff (its secrets read as placeholders already: `scrub`),
    as one record held in quarantine: (its id, what to tell). A secret the parts make only read
    together reads as its placeholder there too (`redact_secrets`)."""
    from optmem.errors import UnsafeContent
    from optmem.quarantine import kind_of
    from optmem.redact import redact_secrets

    of = host_handoff(source, session)
    if not left:
        return None, []
    text = f"Left out of {of} (project {project}) because the security scan flagged it:\n" + "\n".join(
        f"- {what}: {line}" for what, line, _ in left
    )
    if (rule := scan.find(text)) and kind_of(rule) == "secret":
        text = redact_secrets(text)[0]
    try:
        res = log.append(
            vault,
            log.Draft(
                text,
                project=project,
                source=source,
                session=session,
                origin=origin,
                held=left[0][2],
                extra={"said_at": said_at} if said_at else None,
            ),
            gate=False,
        )
    except UnsafeContent as err:  # (what even the placeholders leave flagged: storing it is the harm itself)
        return None, [f"{len(left)} part(s) of {of} were not kept: {err.message}; nothing else was lost"]
    rid = str(res.id)
    return rid, [
        f"{len(left)} part(s) of {of} the security scan flagged ({', '.join(sorted({r for *_, r in left}))}) are "
        f"held in quarantine as record {rid}, out of the handoff: `optmem quarantine` lists them, "
        f"`optmem release {rid[-8:]}` if they are fine",
    ]
