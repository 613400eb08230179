"""Cold memory: appending to LOG.jsonl (with the write gate), the hot-memory journal, get, forget.

Every write goes through `_write`, under the vault lock: records are appended as whole lines in
one write, then the derived index catches up with them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection

from optmem import clock, compare, fsio, record, view
from optmem import text as textmod
from optmem.errors import (
    Ambiguous,
    InvalidName,
    NeedsPerson,
    NotApplicable,
    NotFound,
    OptmemError,
    PossibleUpdate,
    RedlineLocked,
    TooLarge,
    UnsafeContent,
    UsageError,
    quote,
)
from optmem.gate import find_similar, find_updates, probe
from optmem.index import Index, Row, catch_up, open_index
from optmem.index import prepare as prepare_index
from optmem.record import (
    BOOKKEEPING,
    CONFIRM,
    CORRECTION,
    CURATION,
    FORGET,
    HANDOFF,
    MEMORY,
    MERGED,
    NOTE,
    RELEASE,
    RESOLUTION,
    RESTORE,
    SEEN,
    TIER_RANK,
    TIERS,
    Record,
    line_of,
    new_id,
)
from optmem.safety import scan
from optmem.settings import ON_SIMILAR, ON_UPDATE
from optmem.stdlib import UTC, datetime, sqlite3
from optmem.value import NamedTuple
from optmem.vault import NAME_RE, Vault, hot_target, validate_name

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any, Protocol

    class HotEntry(Protocol):
        """A hot-memory entry (`memory.Entry`)."""

        @property
        def id(self) -> str: ...
        @property
        def text(self) -> str: ...

    class HotChange(Protocol):
        """One hot-memory change to journal (`memory.Change`; memory imports this module, so the
        type is named by what `journal_hot` reads of it, and mypy holds `memory.Change` to it)."""

        @property
        def op(self) -> str: ...
        @property
        def entry(self) -> HotEntry | None: ...
        @property
        def old(self) -> HotEntry | None: ...
        @property
        def updates(self) -> str | None: ...


class Draft(NamedTuple):
    """A record as a caller describes it, before the log gives it an id and a time."""

    text: str
    domain: str | None = None  # else OPTMEM_DOMAIN (resolved by the caller), config, default
    project: str | None = None
    kind: str = NOTE
    tier: str = "normal"
    tags: tuple[str, ...] | list[str] | None = None
    key: str | None = None
    ttl: str | None = None  # 30m, 12h, 7d, 2w …
    evidence: str | None = None
    source: str | None = None
    session: str | None = None  # the conversation (agent session) it came from
    corrects: tuple[str, ...] | list[str] | None = None
    extra: dict[str, Any] | None = None
    importance: float | None = None  # 0..1; None: the default for the kind and tier
    confidence: float | None = None  # 0..1; below [lifecycle] pending_threshold: stored as pending
    basis: str | None = None  # "stated" (default) or "inferred"
    state: bool = False  # a temporary state, not a habit: expires after [consolidation] state_ttl
    origin: str | None = None  # user | agent | tool | sync | import:<tool> (`optmem.quarantine`); None: not recorded
    held: str | None = None  # held in quarantine for this rule whatever the text's scan finds (a Hermes turn's side)
    # stamped after this time (`record.made_at` of the newest record it follows, read under the lock
    # the caller holds) when the clock stands behind it: a handoff written later is the latest
    after_time: float | None = None


def default_domain(vault: Vault, domain: str | None) -> str:
    """--domain / OPTMEM_DOMAIN (resolved by the caller), else config, else `default`."""
    if domain:
        return validate_name(domain, "domain")
    return validate_name(vault.settings.log.domain, "optmem.toml's [log] domain (change it there)")


def check_text(text: str | None) -> str:
    """A record's text must be non-empty (its bound and scan: `check_record`); it is stored trimmed."""
    if text is None or not text.strip():
        raise UsageError("TEXT is empty; give the memory to store (or - to read it from stdin)")
    return text.strip()


FIELD_BYTES, MAX_TAGS = record.FIELD_BYTES, record.MAX_TAGS  # (the bounds: `record.oversize`)


_BREAKS = frozenset("\n\r\t\v\f\x1c\x1d\x1e\x85\u2028\u2029")  # what makes a key more than one line


def check_key(key: str | None, what: str = "--key") -> str | None:
    """A fact key as it is taken (every command and tool that takes one: writes, `history`,
    `resolve`): surrounding whitespace trimmed — a stray space from a script or a template
    names the same fact, not a second one that nothing flags; a key that is empty or holds a
    line break or a tab is refused (`usage`, field `key`). (An escape code or an invisible
    character is the scanner's: a write holding one is held in quarantine, as in any field.)"""
    if key is None:
        return None
    if not isinstance(key, str) or not key.strip():
        raise UsageError(
            f"{what} {quote(str(key))} is empty; give the fact's key (e.g. backend.port), or leave {what} out",
            field="key",
        )
    trimmed = key.strip()
    odd = next((c for c in trimmed if c in _BREAKS), None)
    if odd is not None:
        raise UsageError(
            f"{what} {quote(key)} holds a line break or a tab (U+{ord(odd):04X}); a key is one line, e.g. "
            "backend.port — write it without; nothing was written",
            field="key",
        )
    return trimmed


def check_record(rec: Record, limit: int, *, allow_unsafe: bool) -> Record:
    """The one check of a whole record, on every way in (`append` and each command built on it,
    MCP, the Hermes provider, `import`): every field within its bound (`record.oversize`:
    `too_large`, always), its domain, project and kind valid names (`invalid_name`, always), and
    what the scanner flags in any string it carries (`record.flagged_field`) — a secret refused
    (`unsafe_content`), a possible injection held in quarantine (the record returned carries the
    rule as `held`: `optmem.quarantine`) — unless `allow_unsafe`. Every error names the field.
    Returns the record to store."""
    over = record.oversize(rec, limit)
    if over is not None:
        name, size, bound = over
        if name == "tags":
            raise TooLarge(
                f"{size} tags given; a record holds at most {bound} — keep the ones you will filter by "
                "(nothing was stored)",
                field=name,
                tags=size,
                limit=bound,
            )
        advice = "split it into several records" if name == "text" else "shorten it"
        raise TooLarge(
            f"the {name} is {size:,} bytes; one record's {name} holds at most {bound:,} bytes of UTF-8 (a "
            f"Chinese character takes 3) — {advice} "
            "(nothing was stored)",
            field=name,
            bytes=size,
            limit=bound,
        )
    if rec.key is not None and check_key(rec.key, "the key") != rec.key:
        raise UsageError(
            f"the key {quote(rec.key)} has whitespace around it, so it would name another fact than "
            f"{quote(rec.key.strip())}; write it without (nothing was stored)",
            field="key",
        )
    for name in ("domain", "project", "kind"):
        value = getattr(rec, name)
        if value is not None and not _valid_name(value):
            raise InvalidName(
                f"the {name} {quote(value)} is not a valid name (letters, digits, . _ -; at most 64, "
                "starting with a letter or digit); nothing was stored",
                field=name,
            )
    if not allow_unsafe:
        rec = _hold_or_refuse(rec)
        if not rec.held:  # (a held record is flagged: scanned on read, as it is shown)
            _passed(rec)
    return rec


# the lines of records the gate passed whole in this process, not yet written (`write_records`
# keeps their verdict: `optmem.verdicts`); bounded — a line checked and then dropped costs a scan
# on read at worst
_PASSED: dict[bytes, None] = {}
_PASSED_MAX = 4096


def _passed(rec: Record) -> None:
    if len(_PASSED) >= _PASSED_MAX:
        _PASSED.clear()
    _PASSED[rec.to_line()] = None


@functools.lru_cache(maxsize=1024)
def _valid_name(value: str) -> bool:
    return NAME_RE.fullmatch(value) is not None  # (names repeat from record to record)


def _hold_or_refuse(rec: Record) -> Record:
    """`rec` held in quarantine when the scanner flags an injection in it, refused when it flags a
    secret. A bookkeeping line is refused too (it is no memory to hold), and so are a hot-memory
    journal line and a handoff: their files go into prompts whole, with nothing to hold them."""
    from optmem.quarantine import kind_of

    flagged = record.gate_finding(rec)
    if flagged is None:
        return rec
    if kind_of(flagged[1]) == "injection" and rec.kind not in (*BOOKKEEPING, MEMORY, HANDOFF):
        return rec if rec.held else rec._replace(held=flagged[1])
    _refuse_flagged(rec, flagged)
    return rec


def _refuse_flagged(rec: Record, flagged: tuple[str, str] | None = None) -> None:
    flagged = flagged or record.flagged_field(rec)
    if flagged is not None:
        from optmem.quarantine import kind_of

        name, rule = flagged
        raise UnsafeContent(  # (its kind, as the scanner's own refusal says it: callers hold an injection)
            f"refused: the {name} trips the security rule {rule!r}; remove that part, or pass "
            "--allow-unsafe if it is really meant to be stored",
            rule=rule,
            kind=kind_of(rule),
            field=name,
        )


def write_records(vault: Vault, idx: Index, records: list[Record]) -> tuple[Index | None, str | None]:
    """Append records in one write (lock held) and let the index catch up: (the index, or None
    with a warning when it could not — the records are stored, and that is what counts). The
    lines the write gate passed whole keep its verdict (`optmem.verdicts`): a read shows them
    without scanning them again."""
    lines = [r.to_line() for r in records]
    fsio.append_lines(vault.append_path(), lines, within=vault.root)
    passed = [line for line in lines if line in _PASSED]
    if passed:
        from optmem import verdicts

        for line in passed:
            _PASSED.pop(line, None)
        verdicts.remember(vault, passed)
    try:
        return catch_up(idx), None
    except (OptmemError, sqlite3.Error, OSError) as exc:
        idx.close()
        reason = getattr(exc, "message", None) or str(exc)
        return None, (f"stored, but the search index could not catch up ({reason}); it catches up on a later command")


class Appended(NamedTuple):
    status: str  # stored | similar | duplicate | skipped
    id: str | None
    record: dict[str, Any] | None = None
    similar: list[dict[str, Any]] = []  # shared default: never mutated
    duplicate_of: str | None = None
    warning: str | None = None
    possible_update: list[dict[str, Any]] = []  # records it may update (shared default: never mutated)
    confirmed: list[str] = []  # pending guesses this statement confirmed by saying them again
    conflict_with: list[str] = []  # the values the new record is in conflict with (it made a conflict)
    held: str | None = None  # status held: the scanner's rule that holds it in quarantine


# Kinds only optmem's own bookkeeping writes, and what writes each: a record of one of them made
# any other way (no `ref`, no journal fields) would be taken for what it is not
RESERVED_KINDS = {
    FORGET: "`optmem forget ID` writes it (the tombstone of a record)",
    MEMORY: "`optmem add` / `optmem replace` / `optmem remove` write it (the hot-memory journal)",
    SEEN: "`optmem append` writes it when the same fact is appended again (a restatement)",
    CONFIRM: "`optmem confirm ID` writes it (a pending record confirmed)",
    RELEASE: "`optmem release ID` writes it (a record held in quarantine released)",
    RESTORE: "`optmem curate` writes it when it undoes a run (a forgotten record back)",
    CURATION: "`optmem curate` writes it (one per run)",
    "summary": "the summary tree's nodes have it (`optmem compact` writes them into tree/, "
    "`search --kind summary` finds them)",
}

# Kinds that say which records they replace (`corrects`): written without that link, a record of
# one of them would pose as a correction, merge or settled conflict that never happened
LINKED_KINDS = {
    CORRECTION: "`optmem correct ID TEXT` writes it (naming the record it corrects)",
    MERGED: "`optmem merge ID ID …` writes it (naming the fragments it merges)",
    RESOLUTION: "`optmem resolve KEY --keep ID | --value TEXT` writes it (naming the values it settles)",
}


def build_record(vault: Vault, draft: Draft, moment: datetime, allow_unsafe: bool) -> Record:
    """The validated record a draft describes, stamped with `moment` (the write gate's checks of
    one record; `append` then weighs it against the vault, `optmem import` writes it in bulk)."""
    text = check_text(draft.text)
    if draft.project is not None:
        validate_name(draft.project, "project")
    if not NAME_RE.fullmatch(draft.kind or ""):
        raise UsageError(f"--kind {quote(draft.kind)} is not a valid kind name (letters, digits, . _ -)")
    if draft.kind in RESERVED_KINDS:
        raise UsageError(
            f"--kind {draft.kind} is optmem's own: {RESERVED_KINDS[draft.kind]}; use that "
            "command, or another kind (note, decision, …); nothing was written"
        )
    if draft.kind in LINKED_KINDS and not draft.corrects:
        raise UsageError(
            f"--kind {draft.kind} names the records it replaces: {LINKED_KINDS[draft.kind]}; "
            "use that command, or another kind (note, decision, …); nothing was written"
        )
    if draft.tier not in TIERS:
        raise UsageError(f"--tier must be one of {', '.join(TIERS)}, not {quote(draft.tier)}")
    tags = tuple(t.strip() for t in draft.tags or () if t and t.strip())
    from optmem import lifecycle

    importance = lifecycle.check_unit("importance", draft.importance)
    confidence = lifecycle.check_unit("confidence", draft.confidence)
    pending = lifecycle.is_pending(vault.settings.lifecycle, confidence)
    if pending and draft.tier == "redline":
        raise UsageError(
            f"a redline is a rule a person sets, not a guess: --confidence {confidence:g} "
            f"is below the pending threshold ({vault.settings.lifecycle.pending_threshold:g}); "
            "drop --confidence, or write a plain record"
        )
    from optmem.quarantine import check_origin, refuse_promotion

    origin = check_origin(draft.origin)
    if draft.tier == "redline":  # a locked rule is a person's (a caller recording no origin is not asked)
        verb = "correct ID" if draft.corrects else "append"
        refuse_promotion("a redline", origin, origin, f"optmem {verb} … --redline")
        if origin is not None:
            from optmem.quarantine import refuse_unless_person

            refuse_unless_person("making a locked rule (a redline)", f"optmem {verb} … --redline", origin)
    if draft.basis not in (None, "stated", "inferred"):
        raise UsageError(f"--basis must be stated or inferred, not {quote(draft.basis)}")
    ttl = draft.ttl if draft.ttl is not None or not draft.state else vault.settings.consolidation.state_ttl
    rec = Record(
        id=new_id(moment.timestamp()),
        ts=clock.format_ts(moment),
        text=text,
        domain=default_domain(vault, draft.domain),
        project=draft.project,
        kind=draft.kind,
        tier=draft.tier,
        key=check_key(draft.key),
        tags=tags,
        corrects=tuple(draft.corrects or ()),
        expires=clock.format_ts(clock.later(moment, ttl)) if ttl is not None else None,
        evidence=draft.evidence,
        source=draft.source,
        session=draft.session,
        importance=importance,
        confidence=confidence,
        pending=pending,
        basis="inferred" if draft.basis == "inferred" else None,
        state=draft.state,
        origin=origin,
        held=draft.held,
        extra=dict(draft.extra or {}),
    )
    return check_record(rec, vault.settings.limits.record_bytes, allow_unsafe=allow_unsafe)


def append(
    vault: Vault,
    draft: Draft,
    *,
    on_similar: str | None = None,
    on_update: str | None = None,
    allow_unsafe: bool = False,
    gate: bool = True,
) -> Appended:
    """Append one record, through the write gate (see `_append`); then, at most once a day, the
    lifecycle's sweep (`[lifecycle] auto_sweep`)."""
    from optmem import lifecycle

    done = _append(vault, draft, on_similar=on_similar, on_update=on_update, allow_unsafe=allow_unsafe, gate=gate)
    if draft.tier == "redline" and done.status == "stored" and not vault.trusted:
        untrusted = (
            "this vault came in a git clone and is not trusted here: the redline is stored, but on this clone it "
            "reads as an unverified note — not a locked rule in context — until you run `optmem trust` (which makes "
            "every redline of the vault a rule: read them first, under 'Unverified rules' in `optmem context`); "
            "a clone that trusts the vault (the one it was begun on, or one you ran `optmem trust` on) reads it "
            "as a locked rule once it syncs it"
        )
        done = done._replace(warning="; ".join(w for w in (done.warning, untrusted) if w))
    trouble = lifecycle.auto_sweep(vault)
    if trouble:
        done = done._replace(warning="; ".join(w for w in (done.warning, trouble) if w))
    return done


def _append(
    vault: Vault, draft: Draft, *, on_similar: str | None, on_update: str | None, allow_unsafe: bool, gate: bool
) -> Appended:
    """Append one record, through the write gate.

    * same normalised fingerprint as a current record (same domain, project, key): nothing new
      is stored; a `seen` line refreshes the existing record's recency; status `duplicate` —
      unless the record is an inference and this write states it: stored, as its correction;
    * a pending record (any domain) saying the same, or nearly: a `seen` line for it too — said
      again as a statement (not a guess, not an inference), it is confirmed; a guess repeating it
      is counted and confirms nothing, and one repeating it word for word is that `seen` line
      alone (status `duplicate` of it, whatever its domain);
    * a possible update of a current unkeyed record (the same statement with another value: "端口
      是 8080" → "端口改成 9090"): per `on_update` — `keep` (stored, the older one named in
      `possible_update`), `supersede` (stored as its correction), `ask` (refused with
      `possible_update`, nothing stored);
    * a near duplicate (similarity ≥ threshold, numbers equal): handled per `on_similar` —
      `store` (status `similar`, the near ones listed), `skip` (nothing stored, status `skipped`)
      or `supersede` (stored as a correction of the closest one);
    * a record that would supersede a current redline (by `corrects` or by key) is refused
      unless it is a redline itself (`redline_locked`).
    """
    moment = clock.now()
    if draft.after_time is not None:
        moment = stamped_after(moment, draft.after_time)
    now = moment.timestamp()
    rec = build_record(vault, draft, moment, allow_unsafe)
    if rec.held:  # held for a person: no restatement, no update or supersession by the gate
        gate, on_similar, on_update = False, "store", "keep"
    on_similar = on_similar or vault.settings.dedup.on_similar
    if on_similar not in ON_SIMILAR:
        raise UsageError(f"--on-similar must be one of {', '.join(ON_SIMILAR)}, not {quote(on_similar)}")
    on_update = on_update or vault.settings.dedup.on_update
    if on_update not in ON_UPDATE:
        raise UsageError(f"--on-update must be one of {', '.join(ON_UPDATE)}, not {quote(on_update)}")
    idx = open_index(vault)  # outside the lock: a rebuild, if one is due, does not hold it
    with vault.lock():
        idx = catch_up(idx)
        try:
            rec = _hand_corrects(idx, rec, now)
            _check_redline_lock(idx, rec, now)
            rec = _derived_origin(idx, rec)
            if rec.tier == "redline" and rec.corrects:  # a tool's output made a rule only by a person
                from optmem.quarantine import refuse_promotion

                for ref in rec.corrects:
                    for target in idx.resolve(ref):
                        refuse_promotion("a redline", target.origin, rec.origin, f"optmem correct {ref} … --redline")
            if rec.key and rec.kind != MEMORY:  # what its writer saw: two clones' values are told apart
                rec = rec._replace(extra={**rec.extra, "after": idx.key_heads(rec.key, rec.domain, rec.project)})
            similar: list[dict[str, Any]] = []
            restating: list[Record] = []
            updates: list[dict[str, Any]] = []
            if gate:
                dup, guessed = _exact_duplicate(idx, rec, now)
                if guessed is not None:  # the inference said as a statement: it corrects the guess
                    rec = rec._replace(
                        corrects=(*rec.corrects, guessed.id), kind=CORRECTION if rec.kind == "note" else rec.kind
                    )
                    if rec.key is None and guessed.key:  # (the fact's key, as `correct` inherits it)
                        after = idx.key_heads(guessed.key, rec.domain, rec.project)
                        rec = rec._replace(key=guessed.key, extra={**rec.extra, "after": after})
                said_again = _pending_said_again(idx, rec, now, vault.settings.dedup.threshold)
                if dup is None and rec.pending:  # a guess repeating a guess elsewhere: counted, not stored twice
                    dup = _same_guess(idx, rec, said_again)
                restating = [
                    _seen(rec, ref, now) for ref in said_again if ref not in (dup and dup.id, guessed and guessed.id)
                ]
                if dup is not None:
                    written, lag = write_records(vault, idx, [_seen(rec, dup.id, now), *restating])
                    idx = written or idx
                    was_guess = [dup.id] if dup.pending and not dup.confirmed else []  # not one confirmed before
                    confirmed = _now_confirmed(idx, [*was_guess, *(r.ref or "" for r in restating)], now)
                    kept = None
                    if draft.importance is not None and draft.importance != dup.imp:
                        # the statement was said again, not rewritten: say what it keeps
                        kept = (
                            f"--importance {draft.importance:g} not applied: {dup.id} was said again "
                            "and keeps its own importance (`optmem correct` it to store a new version)"
                        )
                    return Appended(
                        "duplicate",
                        dup.id,
                        duplicate_of=dup.id,
                        warning="; ".join(w for w in (kept, lag) if w) or None,
                        confirmed=confirmed,
                    )
                if guessed is None:  # (a statement of a guess is its correction, whatever is near)
                    near = probe(idx, rec.text, rec.domain, rec.project, 20)  # one probe for both checks
                    similar = find_similar(
                        idx, rec.text, rec.domain, rec.project, vault.settings.dedup.threshold, now, rows=near
                    )
                    updates = [] if similar else find_updates(idx, rec, now, rows=near)
            update_warning = None
            if updates:
                rec, update_warning = _on_update(rec, updates, on_update, _said(idx, rec, updates))
            rec, status, warning = _on_similar(rec, similar, on_similar, _said(idx, rec, similar))
            warning = "; ".join(w for w in (warning or update_warning, _guess_links(idx, rec)) if w) or None
            if rec.held:
                status, warning = "held", _held_notice(rec)
            if status == "skipped":
                if restating:
                    written, _ = write_records(vault, idx, restating)
                    idx = written or idx
                return Appended(status, None, similar=similar, warning=warning)
            written, lag = write_records(vault, idx, [rec, *restating])
            if written is None:
                return Appended(
                    status,
                    rec.id,
                    rec.to_json(),
                    similar=similar,
                    warning="; ".join(w for w in (warning, lag) if w),
                    possible_update=updates,
                    held=rec.held,
                )
            idx = written
            row = idx.by_id(rec.id)
            rivals = idx.conflict_with(row, now) if row else []
            if rivals:  # the write made a conflict: whoever wrote it hears of it at once
                said = (
                    f"{rec.id} is in conflict with {', '.join(rivals)}"
                    + (f" on key {quote(rec.key)}" if rec.key else "")
                    + (
                        f"; settle it with `optmem resolve {rec.key} --keep ID`"
                        if rec.key
                        else "; `optmem conflicts` names it and how to settle it"
                    )
                )
                warning = "; ".join(w for w in (warning, said) if w)
            return Appended(
                status,
                rec.id,
                idx.view_of(row, now, rec).full(show_unsafe=allow_unsafe) if row else rec.to_json(),
                similar=similar,
                warning=warning,
                possible_update=updates,
                confirmed=_now_confirmed(idx, [r.ref or "" for r in restating], now),
                conflict_with=rivals,
                held=rec.held,
            )
        finally:
            idx.close()


def _held_notice(rec: Record) -> str:
    from optmem.quarantine import held_because

    return f"stored, but {held_because(rec.held or '?', rec.id, rec.origin)}"


def _said(idx: Index, rec: Record, found: list[dict[str, Any]]) -> set[str]:
    """The ids among the records the gate `found` near `rec` that it may not replace: what was
    said in the conversation, when `rec` is second-hand (`quarantine.may_replace`)."""
    from optmem.quarantine import may_replace, secondhand

    if not found or not secondhand(rec.origin):
        return set()
    return {f["id"] for f in found if not all(may_replace(rec.origin, row.origin) for row in idx.resolve(str(f["id"])))}


def _on_update(
    rec: Record, updates: list[dict[str, Any]], on_update: str, said: Collection[str] = ()
) -> tuple[Record, str | None]:
    """(the record to store, a warning) once the records it may update are known (newest first);
    `said`: those it may not replace (a tool's output never replaces a statement: kept beside it)."""
    from optmem.reading.cues import time_words

    newest = updates[0]
    # supersede replaces every current value that says the same in other numbers (30, then 60 kept
    # beside it, then 90 superseding: neither 30 nor 60 stays current) — else the newest the gate
    # found (one where another word changed too is only its guess: "the staging port is 8080" is
    # no older value of "the production port is 9191")
    replaced = [u["id"] for u in updates if compare.same_words(u["text"], rec.text, time_words())] or [newest["id"]]
    if on_update == "ask":
        more = f" and {len(replaced) - 1} older value{'s' if len(replaced) > 2 else ''}" if len(replaced) > 1 else ""
        raise PossibleUpdate(
            f"this looks like a new value of {newest['id']} (“{newest['text'][:60]}”){more}; nothing "
            f"was stored — say which: --on-update supersede (it replaces {'them' if more else 'that record'}), "
            "or --on-update keep (both stay)",
            updates=updates,
        )
    replaced = [rid for rid in replaced if rid not in said]
    if on_update == "supersede" and rec.basis != "inferred" and replaced:
        # an inference never replaces a statement, nor does a tool's output (`said`); a guess keeps
        # its link and replaces them once it is confirmed, as by `--on-similar supersede` (the index
        # holds a pending record's `corrects` until then; `_guess_links` tells the writer)
        return rec._replace(
            corrects=(*rec.corrects, *replaced), kind=CORRECTION if rec.kind == NOTE else rec.kind
        ), None
    rec = rec._replace(extra={**rec.extra, "may_update": newest["id"]})  # counted until settled
    hint = (
        "it was kept beside it (an inference or a tool's output supersedes nothing said)"
        if on_update == "supersede"
        else f"if so, `optmem correct {newest['id'][-8:]} …` or --on-update supersede makes that explicit"
    )
    return rec, f"this may update {newest['id']} (“{newest['text'][:60]}”); {hint}"


def _on_similar(
    rec: Record, similar: list[dict[str, Any]], on_similar: str, said: Collection[str] = ()
) -> tuple[Record, str, str | None]:
    """(the record to store, status, warning) once near duplicates are known; `said`: those it
    may not replace (`_on_update`)."""
    if not similar:
        return rec, "stored", None
    closest = similar[0]
    if on_similar == "skip":
        return rec, "skipped", "a near duplicate exists; nothing was stored"
    # an inference never replaces a statement, nor does a tool's output (`said`): each is kept
    # beside it, as `_on_update` keeps them; a guess keeps its link and replaces it once it is
    # confirmed (the index holds a pending record's `corrects` until then; `_guess_links` says so)
    if (
        on_similar == "supersede"
        and closest["tier"] != "redline"
        and closest["id"] not in said
        and rec.basis != "inferred"
    ):
        return (
            rec._replace(corrects=(*rec.corrects, closest["id"]), kind=CORRECTION if rec.kind == NOTE else rec.kind),
            "stored",
            None,
        )
    beside = (
        "it was kept beside it (an inference or a tool's output supersedes nothing said)"
        if on_similar == "supersede" and closest["tier"] != "redline"
        else f"use `optmem correct {closest['id'][-8:]} …` to replace it instead"
    )
    return rec, "similar", f"stored, but {closest['id']} is nearly the same; {beside}"


def _guess_links(idx: Index, rec: Record) -> str | None:
    """What the writer of a guess or an inference hears when it names records in `corrects`: a
    guess replaces them once it is confirmed, an inference replaces nothing stated — both stand
    (the index decides the same: `ingest._apply`, `view.may_overrule`)."""
    if not rec.corrects or not (rec.pending or rec.basis == "inferred"):
        return None
    targets = [row for ref in rec.corrects for row in idx.resolve(ref)]
    if rec.basis == "inferred":
        stated = [row.id for row in targets if not row.inferred]
        if stated:
            return (
                f"{', '.join(stated)} stays current: an inference replaces nothing said — both stand, the "
                f"inference labelled (a statement of the new value, `optmem correct {stated[0][-8:]} …`, replaces it)"
            )
    if rec.pending and targets:
        return (
            f"{', '.join(row.id for row in targets)} is not replaced while this is a guess: it replaces "
            f"{'it' if len(targets) == 1 else 'them'} once it is confirmed (`optmem confirm {rec.id[-8:]}`) or stated"
        )
    return None


def _seen(rec: Record, ref: str, now: float) -> Record:
    """The `seen` line of a record said again: where, by whom and in which conversation."""
    return Record(
        id=new_id(now),
        ts=rec.ts,
        domain=rec.domain,
        project=rec.project,
        kind=SEEN,
        ref=ref,
        source=rec.source,
        session=rec.session,
        pending=rec.pending,
        basis=rec.basis,  # an inference said again confirms nothing (`view.confirms`)
    )


def _now_confirmed(idx: Index, ids: list[str], now: float) -> list[str]:
    """Of records that were pending and were just said again, the ones now current (a statement
    of them confirmed them)."""
    out = []
    for rid in ids:
        row = idx.by_id(rid) if rid else None
        if row is not None and row.pending and row.confirmed and view.status(row, now) == view.Status.CURRENT:
            out.append(rid)
    return out


def _pending_said_again(idx: Index, rec: Record, now: float, threshold: float) -> list[str]:
    """Pending records, in any domain, that this record says again (the same statement, or
    nearly): the ids to restate."""
    if not idx.has_pending():
        return []
    found: dict[str, None] = {}
    fp = textmod.fingerprint(rec.text)
    if fp is not None:
        for row in idx.with_fingerprint(fp, None, None):
            if view.status(row, now, warm=True) == view.Status.PENDING:
                found[row.id] = None
    for near in find_similar(idx, rec.text, None, None, threshold, now, statuses=(view.Status.PENDING,)):
        found[near["id"]] = None
    return list(found)


def _same_guess(idx: Index, rec: Record, pending: list[str]) -> Row | None:
    """Of the pending records a guess says again (any domain or project), the one it repeats word
    for word (and key): the guess is stored as that record's `seen` alone — counted as said again
    (still a guess), never a second guess of the same words waiting in another domain."""
    as_written = textmod.normalize(rec.text, stem=False)
    for rid in pending:
        row = idx.by_id(rid)
        if (
            row is not None
            and (rec.key is None or row.key == rec.key)
            and textmod.normalize(idx.record(row).text, stem=False) == as_written
        ):
            return row
    return None


def _exact_duplicate(idx: Index, rec: Record, now: float) -> tuple[Row | None, Row | None]:
    """The current record saying exactly this: the same fingerprint (stemmed, like search) and
    the same words as written — a changed word form ("wants" → "wanted") may be a changed fact,
    so it is left to the near-duplicate check, which stores it and names the older one. An
    inference that a statement says word for word is no duplicate of it: it comes second, for
    the statement to correct (what was guessed is now said)."""
    fp = textmod.fingerprint(rec.text)
    if fp is None:
        return None, None  # nothing to compare: punctuation or symbols only
    as_written, guessed = None, None
    for row in idx.with_fingerprint(fp, rec.domain, rec.project):
        if (
            view.status(row, now, warm=True) in (view.Status.CURRENT, view.Status.PENDING)
            and row.kind != MEMORY
            and (rec.key is None or row.key == rec.key)
        ):
            as_written = as_written or textmod.normalize(rec.text, stem=False)
            if textmod.normalize(idx.record(row).text, stem=False) == as_written:
                if (
                    row.inferred
                    and not (rec.basis == "inferred" or rec.pending)
                    and view.may_supersede(TIER_RANK[rec.tier], row.tier)
                ):
                    guessed = guessed or row
                    continue
                return row, None
    return None, guessed


def refuse_superseded(idx: Index, row: Row, now: float) -> None:
    """A correction of `row`, an old version of its fact, would make a second current version:
    refused (`superseded`), naming the current one — or, when the fact was corrected two ways
    already, how the user settles it."""
    if not row.superseded_by:
        return
    head = idx.current_version(row)
    rivals = idx.conflict_with(head, now)
    if rivals:  # the fact has two current versions already: the user settles it
        first = idx.first_versions(head)[0]
        raise NotApplicable(
            f"{row.id} was corrected two ways: {', '.join([head.id, *rivals])} stand together "
            f"— ask the user which is right, then `optmem resolve {first.id[-8:]} --keep ID` "
            "(or --value TEXT); nothing was written",
            code="superseded",
            id=row.id,
            superseded_by=row.superseded_by,
            current=[head.id, *rivals],
        )
    raise NotApplicable(
        f"{row.id} is already superseded by {row.superseded_by}; the current version is "
        f"{head.id} — correct that one (`optmem correct {head.id} TEXT`), so one fact never "
        "has two current versions; nothing was written",
        code="superseded",
        id=row.id,
        superseded_by=row.superseded_by,
        current=head.id,
    )


def _hand_corrects(idx: Index, rec: Record, now: float) -> Record:
    """A text in the hand-typed correction form (`〔更正〕#<id> …`, `[correction] #<id> …`)
    corrects the records it names, as every reader takes it (`record.parse_line`): through
    `append` it meets the checks `correct` makes — the id names one record (`not_found`,
    `ambiguous`), a memory (not a bookkeeping or journal line), and its current version
    (`superseded`); the redline lock follows (`_check_redline_lock`). Returns the record with
    the full ids of those records in its `corrects`, as `correct` writes them."""
    refs = [] if rec.corrects else record.hand_correction_refs(rec.text)  # (targets named: a #word is a word)
    if not refs:
        return rec
    targets: list[str] = []
    for ref in refs:
        rows = idx.resolve(ref)
        if not rows:
            raise NotFound(
                f"the text is a correction of #{ref} (the hand-typed form 〔更正〕#ID), but no record has that "
                "id; give the id of the record it corrects (`optmem correct ID TEXT`), or leave out the '#' "
                "— nothing was stored",
                ref=ref,
            )
        if len(rows) > 1:
            raise Ambiguous(
                f"#{ref} names {len(rows)} records; give more of the id — nothing was stored",
                candidates=[{"id": r.id, "text": idx.record(r).text} for r in rows[:10]],
            )
        refuse_copies(idx, rows[0])
        refuse_bookkeeping(idx, rows[0], "correct")
        refuse_superseded(idx, rows[0], now)
        targets.append(rows[0].id)  # the full id, as `correct` writes it: not the typed fragment
    return rec._replace(corrects=(*rec.corrects, *targets), kind=CORRECTION if rec.kind == NOTE else rec.kind)


def _derived_origin(idx: Index, rec: Record) -> Record:
    """A merge, or a resolution keeping a value, takes the origin its parts give it — its text is
    theirs (`quarantine.derived_origin`: a tool's text merged or kept by an agent is still a
    tool's); a correction's text, or a resolution's new value, is its writer's own, so it keeps
    the writer's origin. Either is refused (`needs_person`) when it would replace what was said
    (by the user or the agent) with a second-hand text: only a person settles that, as the index
    decides too (`quarantine.may_replace`)."""
    from optmem.quarantine import derived_origin, may_replace

    if rec.kind not in LINKED_KINDS or not rec.corrects:
        return rec
    targets = [row for ref in rec.corrects for row in idx.resolve(ref)]
    if rec.kind == MERGED:  # its text is its fragments'
        parts = [row.origin for row in targets]
    elif rec.kind == RESOLUTION:  # the kept value's text (or the writer's own new value)
        kept = rec.extra.get("kept")
        parts = [row.origin for row in targets if kept and row.id == kept]
    else:  # a correction: the writer's own words, whatever they replace
        parts = []
    origin = derived_origin(rec.origin, parts)
    said = [row for row in targets if not may_replace(origin, row.origin)]
    if said:
        raise NeedsPerson(
            f"{said[0].id} was said in the conversation ({said[0].origin or 'first-hand'}), and this "
            f"{rec.kind} would replace it with text from {origin} output: a tool's output, an import or "
            "another store never replaces a statement by itself — the user runs the command themselves, "
            "at their own terminal; else the new text is appended (`optmem append`): it stands "
            "beside the statement, below it; nothing was written",
            origin=origin,
            id=said[0].id,
        )
    return rec._replace(origin=origin)


def _check_redline_lock(idx: Index, rec: Record, now: float) -> None:
    """Refuse a record that would supersede a current redline without being one (the lock the
    index applies too: `view.may_supersede`)."""
    tier = TIER_RANK[rec.tier]
    for ref in rec.corrects:
        for row in idx.resolve(ref):
            if not view.may_supersede(tier, row.tier):
                raise RedlineLocked(
                    f"{row.id} is a redline (a locked rule); only a redline can correct it — add "
                    "--redline if the rule itself changed",
                    id=row.id,
                )
    if rec.key:
        for row in idx.key_group(rec.key, rec.domain, rec.project):
            if not view.may_supersede(tier, row.tier) and view.status(row, now) == view.Status.CURRENT:
                raise RedlineLocked(
                    f"key {quote(rec.key)} is held by redline {row.id}; a redline is a locked rule — "
                    "only a newer redline (--redline) changes it",
                    id=row.id,
                    key=rec.key,
                )


def _after_journal(vault: Vault, file: str, moment: datetime, newest: float | None) -> datetime:
    """When to stamp a hot file's journal records: `stamped_after` its newest journal record. The
    journal is read in time order (`Index.journal`), so an edit stamped before the one it follows
    would read as undone — the file as edited outside optmem (review 17 #5). Lock held. `newest`:
    when that record was made (`record.row_made`), as the caller read it under this lock; None:
    read here."""
    if newest is None:
        with open_index(vault) as idx:
            newest = record.row_made(idx.journal_newest(file))
    return stamped_after(moment, newest)


def stamped_after(moment: datetime, newest: float) -> datetime:
    """When to stamp a record written after one made at `newest` (`record.made_at`): now, or just
    after it if the clock stands behind it (stepped back, `OPTMEM_NOW`) — what is written later
    is the newer, as every reader orders records (SPEC §4: by `ts`, then id)."""
    if moment.timestamp() >= newest:
        return moment
    return datetime.fromtimestamp(newest + 0.001, UTC)


def journal_hot(
    vault: Vault,
    file: str,
    project: str | None,
    changes: Collection[HotChange],
    *,
    domain: str | None = None,
    source: str | None = None,
    extra: dict[str, Any] | None = None,
    said_at: str | None = None,
    unscanned: bool = False,
    origin: str | None = None,
    newest: float | None = None,
) -> list[str]:
    """Journal hot-memory changes into the log (lock held): every old and new text is kept, and
    the lines the gate's scan passes keep its verdict (`optmem.verdicts`). `extra`: fields every
    journal record carries (a resolution's `resolves`); `said_at`: when the edit was asked for, if
    earlier than now (a write that waited in a spool).

    A removed entry becomes a retired `memory` record; a replaced one too, corrected by the
    record of its new text — so both stay searchable and only the new one is current. What a
    hot file got outside optmem (`source` drift: typed by hand, written by Hermes, brought by
    `sync`) passed no scan, nor did what another program wrote into a file it shares with the
    vault (`unscanned`: Hermes' memory tool, journalled as its own edit, `memory.follow_edit`):
    an entry the scanner flags as a possible injection is journalled with its exact text and held
    in quarantine (`record.held`), as any flagged record is — kept, never shown as a fact until a
    person releases it; one that holds a secret is journalled as its `[BLOCKED: rule]`
    placeholder, so the secret is not copied into the append-only log (the file keeps it, to be
    removed there). So is an entry holding a secret that optmem's own edit removes or replaces
    (the removal's text, the replace's `old`: `_secretless`) — no path of the journal stores one.
    `origin`: who made the edit (`record.origin`); an edit found in the file (`drift`) has none.
    An entry added that may be a new value of another (`memory._do_add`, as the gate guesses one)
    carries `may_update`, the other entry's journal record (`Change.updates`): search and context
    read the guess as they read the gate's.
    `newest`: when the file's newest journal record was made, as the caller just read it under the
    lock (its look for drift: `memory.Drift.newest`), else None — the records are stamped after it.
    """
    moment = _after_journal(vault, file, clock.now(), newest)
    ts = clock.format_ts(moment)
    domain = default_domain(vault, domain)
    records: list[Record] = []

    def make(op: str, entry: HotEntry, corrects: tuple[str, ...] = (), **more: Any) -> Record:
        rec = Record(
            id=new_id(moment.timestamp()),
            ts=ts,
            text=entry.text,
            domain=domain,
            project=project,
            kind=MEMORY,
            key=f"hot:{file}:{entry.id}",
            source=source,
            corrects=corrects,
            origin=origin,
            extra={"op": op, "file": file, "entry": entry.id, **more, **(extra or {})}
            | ({"said_at": said_at} if said_at else {}),
        )
        return _secretless(_unscanned_entry(rec) if source == "drift" or unscanned else rec)

    for c in changes:
        if c.entry is None:  # (a bug: every change journalled names its entry, a replace the old one too)
            raise ValueError(f"a hot-memory change without its entry: {c!r}")
        if c.op == "add":  # (an entry it may be a new value of: its journal record, as the gate notes one)
            records.append(make("add", c.entry, (), **({"may_update": c.updates} if c.updates else {})))
        elif c.op == "remove":
            records.append(make("remove", c.entry))
        else:
            if c.old is None:
                raise ValueError(f"a hot-memory replace without the entry it replaces: {c!r}")
            gone = make("remove", c.old, replaced_by=c.entry.id)
            records.append(gone)
            records.append(make("replace", c.entry, (gone.id,), old=c.old.text))
    lines = [r.to_line() for r in records]
    fsio.append_lines(vault.append_path(), lines, within=vault.root)
    from optmem import verdicts  # (the entries' text was checked; the lines whole pass the gate's scan)

    verdicts.remember(vault, [line for line, r in zip(lines, records) if record.gate_finding(r) is None])
    return [r.id for r in records]


def _secretless(rec: Record) -> Record:
    """A journal record of optmem's own edit with the texts no gate passed in this edit — the entry
    it removes or replaces (`text` of a removal, a replace's `old`), perhaps pasted by hand or
    brought by git — as their `[BLOCKED: rule]` placeholder when they hold a secret, as the journal
    of the hand edit that brought them has them (`_unscanned_entry`): taking a secret out of hot
    memory never stores it in the append-only log. (An added or new text passed the gate.)"""
    old = rec.extra.get("old")
    if rec.extra.get("op") == "remove" and (rule := scan.secret(rec.text)):
        rec = rec._replace(text=_placeholder(rec.text, rule))
    if isinstance(old, str) and (rule := scan.secret(old)):
        rec = rec._replace(extra={**rec.extra, "old": _placeholder(old, rule)})
    return rec


def _placeholder(text: str, rule: str) -> str:
    """What a text holding a secret (`rule`) reads as: the placeholder every surface shows it as."""
    return f"[BLOCKED: {scan.find(text) or rule}]"


def _unscanned_entry(rec: Record) -> Record:
    """A journal record of a hot entry no scan passed: as it is when the gate finds nothing; held
    in quarantine, its text exact, when it finds a possible injection; its text the `[BLOCKED:
    rule]` placeholder when it finds a secret (a stored secret is the harm itself)."""
    from optmem.quarantine import kind_of

    flagged = record.gate_finding(rec)
    if flagged is None:
        return rec
    if kind_of(flagged[1]) == "injection":
        return rec._replace(held=flagged[1])
    return rec._replace(text=scan.redact(rec.text))


def resolve_one(idx: Index, ref: str) -> Row:
    """The one record an id, id prefix or id suffix (≥ 6 chars) names."""
    if not ref.strip():
        raise UsageError(
            "ID is empty; a record id is required (the full id, or ≥ 6 of its first or "
            "last characters, as `optmem search` shows it)"
        )
    rows = idx.resolve(ref)
    if not rows:
        entry = ref.strip().lower()
        journal = (
            idx.rows("r.kind = ? AND r.key LIKE ?", [MEMORY, f"hot:%:{entry}"])
            if len(entry) == 8 and all(c in "0123456789abcdef" for c in entry)
            else []
        )
        if journal:  # the 8-character id `show --ids` gives a hot-memory entry
            raise NotFound(
                f"{quote(ref)} is a hot-memory entry's id (`optmem show --ids` lists them), not a "
                f"record's; the log's record of it is {journal[-1].id}",
                ref=ref,
                record=journal[-1].id,
            )
        raise NotFound(
            f"no record has id {quote(ref)} (give the full id, or ≥ 6 of its first or last characters)", ref=ref
        )
    if len(rows) > 1:
        raise Ambiguous(
            f"{quote(ref)} names {len(rows)} records; give more characters of the id",
            candidates=[{"id": r.id, "line": line_of(r.n)} for r in rows[:20]],
        )
    refuse_copies(idx, rows[0])
    return rows[0]


def refuse_copies(idx: Index, row: Row) -> None:
    """Refuse, as `ambiguous`, an id several lines of the log carry (a hand edit or a paste
    copied it; `doctor`'s duplicate_id): which line is the record is no guess a command makes."""
    copies = idx.rows("r.id = ? ORDER BY r.n", (row.id,))
    if len(copies) < 2:
        return
    where = ", ".join(f"{idx.file_of(r)} line {line_of(r.n)}" for r in copies[:5])
    raise Ambiguous(
        f"{row.id} is the id of {len(copies)} lines of the log ({where}), so which one is the record "
        "cannot be told; nothing was written — `optmem doctor` names them and says how to give the line "
        "that is not the record an id of its own",
        id=row.id,
        candidates=[
            {"id": r.id, "file": idx.file_of(r), "line": line_of(r.n), "text": view.display(idx.record(r).text)[:80]}
            for r in copies[:20]
        ],
    )


# why a command that records something about a record has nothing to record of a hot entry, and
# what to do instead (the advice that follows: "… the entry with `optmem replace …`")
_HOT_WHY = {
    "verify": (
        "a hot entry is not a fact `optmem verify` records checks of: it stands in every prompt as written and "
        'never reads "unchecked since …" (`optmem show --ids` shows it); if it no longer holds, edit'
    ),
    "confirm": "a hot entry is never a guess waiting for review: it is in hot memory as written; if it is wrong, edit",
    "reject": "a hot entry is never a guess waiting for review: it is in hot memory as written; if it is wrong, edit",
}


def refuse_bookkeeping(idx: Index, row: Row, command: str) -> None:
    """`correct`, `forget`, `merge`, `confirm` and `reject` act on log records; a hot-memory
    journal record (kind `memory`) only mirrors an entry of a hot file, which is changed through
    the file, and a bookkeeping line (`seen`, `forget`, `confirm`) says something about another
    record: refused (exit 1: the command line is fine, the record is the wrong one), naming how."""
    if row.kind in BOOKKEEPING:
        raise NotApplicable(
            f"{row.id} is a `{row.kind}` line about record {row.ref or '?'}, not a memory; "
            f"`optmem {command}` that record instead (`optmem get {(row.ref or '?')[-8:]}` shows it); "
            "nothing was written",
            code="bookkeeping_line",
            id=row.id,
            ref=row.ref,
        )
    if row.kind != MEMORY:
        return
    rec = idx.record(row)
    file, entry = str(rec.extra.get("file") or "a hot file"), str(rec.extra.get("entry") or "ID")
    target, project = hot_target(file) or ("memory", None)
    where = f" --project {project}" if project else " --target user" if target == "user" else ""
    why = _HOT_WHY.get(command, f"`optmem {command}` does not change hot memory — edit")
    raise NotApplicable(
        f"{row.id} is the hot-memory journal of entry [{entry}] in {file}; {why} the entry with "
        f"`optmem replace --id {entry}{where} NEW`, or drop it with `optmem remove --id {entry}{where}` "
        "(the log keeps its history); nothing was written",
        code="hot_memory_journal",
        id=row.id,
        file=file,
        entry=entry,
    )


class Forgotten(NamedTuple):
    status: str  # forgotten | already_forgotten
    id: str
    tombstone: str | None
    warnings: tuple[str, ...] = ()  # what the summary tree could not do at once


def forget(
    vault: Vault,
    ref: str,
    *,
    reason: str | None = None,
    domain: str | None = None,
    source: str | None = None,
    allow_unsafe: bool = False,
    redline: bool = False,
    origin: str | None = None,
) -> Forgotten:
    """Append a tombstone: the record leaves search and context but stays in the file. A current
    redline is a locked rule: it is forgotten only by a person (`origin` user: the one person
    check, `quarantine.refuse_unless_person`; `needs_person` otherwise), and only when `redline`
    says that is meant (`redline_locked` otherwise), as only a redline corrects one. (A caller
    that records no origin — the library, as before provenance — is not asked.)"""
    for name, value in (("reason", reason), ("source", source)):
        if value is not None:  # a tombstone is bookkeeping, but an agent still reads its reason
            scan.check_field(name, value, limit=FIELD_BYTES[name], allow_unsafe=allow_unsafe)

    def tombstone(idx: Index, row: Row, moment: datetime) -> Record | None:
        refuse_bookkeeping(idx, row, "forget")
        if row.forgotten:
            return None
        rule = row.tier == record.Tier.REDLINE and view.status(row, moment.timestamp()) == view.Status.CURRENT
        if rule and redline and origin is not None:
            from optmem.quarantine import refuse_unless_person

            refuse_unless_person(
                f"dropping the locked rule {row.id}", f"optmem forget {row.id[-8:]} --redline", origin, row.id
            )
        if rule and not redline:
            raise RedlineLocked(
                f"{row.id} is a redline (a locked rule); forgetting it drops the rule — add --redline if that "
                "is meant (nothing was written)",
                id=row.id,
            )
        tomb = about(row, moment, FORGET, source=source, extra={"reason": reason} if reason else None)
        return tomb if domain is None else tomb._replace(domain=default_domain(vault, domain))

    row, tomb = write_about(vault, ref, tombstone, allow_unsafe=allow_unsafe)
    from optmem import (
        tree,  # the text leaves the summary tree at once (after the vault lock: purge takes tree, then vault)
    )

    warnings = tuple(tree.forget(vault, row.domain, [row.id]))
    if tomb and row.kind == HANDOFF and row.project:
        from optmem import handoff_file  # (HANDOFF.md copies its project's latest handoff: no longer this one)

        warnings += tuple(handoff_file.settle(vault, row.project, row.id))
    return (
        Forgotten("forgotten", row.id, tomb.id, warnings)
        if tomb
        else Forgotten("already_forgotten", row.id, None, warnings)
    )


def about(
    row: Row,
    moment: datetime,
    kind: str,
    *,
    source: str | None,
    extra: dict[str, Any] | None = None,
    origin: str | None = None,
) -> Record:
    """A bookkeeping line of `kind` about the record `row` (a tombstone, a confirmation, a
    verification), written at `moment` in the record's domain and project; `origin`: who wrote
    it, where that matters (a release: a person's)."""
    return Record(
        id=new_id(moment.timestamp()),
        ts=clock.format_ts(moment),
        domain=row.domain,
        project=row.project,
        kind=kind,
        ref=row.id,
        source=source,
        origin=origin,
        extra=extra or {},
    )


DECISIONS = (FORGET, CONFIRM, RESTORE)  # what is decided about a record's life: dropped, or kept


def decided(idx: Index, row: Row) -> list[str]:
    """The decisions about `row` there are — its forget, confirm and restore lines, and the
    records that correct it: what a new decision about it is made after (`decided_after`, which
    `facts.decision_forks` reads to tell two clones' concurrent decisions from a change of mind)."""
    marks = ", ".join("?" * len(DECISIONS))
    about = idx.rows(f"r.ref = ? AND r.kind IN ({marks}) ORDER BY r.n", (row.id.upper(), *DECISIONS))  # (refs: upper)
    return [r.id for r in (*about, *idx.correcting(row))]


def write_about(
    vault: Vault, ref: str, make: Callable[[Index, Row, datetime], Record | None], *, allow_unsafe: bool = False
) -> tuple[Row, Record | None]:
    """Write the bookkeeping line `make` returns about the record `ref` names (a tombstone, a
    confirmation), deciding and appending under the vault lock; (that record, the line written,
    or None when `make` had nothing to write)."""

    def one(idx: Index, rows: list[Row], moment: datetime) -> list[Record]:
        line = make(idx, rows[0], moment)
        return [line] if line is not None else []

    rows, lines = write_about_all(vault, [ref], one, allow_unsafe=allow_unsafe)
    return rows[0], lines[0] if lines else None


def write_about_all(
    vault: Vault,
    refs: list[str],
    make: Callable[[Index, list[Row], datetime], list[Record]],
    *,
    allow_unsafe: bool = False,
) -> tuple[list[Row], list[Record]]:
    """`write_about` for several records at once: every ref is resolved before `make` decides,
    and its lines are appended together — all or none. (The records, each once; the lines.)
    What a line adds of its own — its source, its extra fields (a reason, a note) — passes the
    scanner as every write does, unless `allow_unsafe` (the rest it copies from the record it is
    about, which must stay possible to forget whatever it holds)."""
    moment = clock.now()
    idx = open_index(vault)
    with vault.lock():
        idx = catch_up(idx)
        try:
            rows = list({row.id: row for row in (resolve_one(idx, ref) for ref in refs)}.values())
            lines = make(idx, rows, moment)
            by_id = {row.id: row for row in rows}
            lines = [  # a decision says which others it was made after: two clones' are told apart
                line._replace(extra={"decided_after": decided(idx, by_id[line.ref]), **line.extra})
                if line.kind in DECISIONS and line.ref in by_id
                else line
                for line in lines
            ]
            for line in lines if not allow_unsafe else ():
                _refuse_flagged(Record(id=line.id, ts=line.ts, source=line.source, extra=line.extra))
            if lines:
                written, _ = write_records(vault, idx, lines)
                idx = written or idx
            return rows, lines
        finally:
            idx.close()


def append_bookkeeping(vault: Vault, make: Callable[[datetime], Record]) -> str:
    """Append one record optmem itself writes (a curation, a restore) under the vault lock, past
    the write gate and the reserved-kind check that guard what callers append; its id."""
    prepare_index(vault)
    moment = clock.now()
    rec = make(moment)
    idx = open_index(vault)
    with vault.lock():
        idx = catch_up(idx)
        try:
            written, _ = write_records(vault, idx, [rec])
            if written is not None:
                idx = written
        finally:
            idx.close()
    return rec.id
