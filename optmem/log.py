"""Cold memory: appending to LOG.jsonl (with the write gate), the hot-memory journal, forget.

Every write goes through `_write`, under the vault lock: records are appended as whole lines in
one write, then the derived index catches up with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from optmem import clock, fsio, scan
from optmem import text as textmod
from optmem.errors import RedlineLocked, TooLarge, UsageError
from optmem.index import ROW_SELECT, Index, Row, catch_up, match_any, open_index
from optmem.record import TIERS, Record, new_id
from optmem.vault import NAME_RE, Vault, validate_name

ON_SIMILAR = ("skip", "store", "supersede")


def default_domain(vault: Vault, domain: str | None) -> str:
    """--domain / OPTMEM_DOMAIN (resolved by the caller), else config, else `default`."""
    return validate_name(domain or str(vault.setting("log", "domain")), "domain")


def check_text(vault: Vault, text: str, *, allow_unsafe: bool) -> str:
    """A record's text must be non-empty, within the size bound, and pass the scanner."""
    if text is None or not text.strip():
        raise UsageError("TEXT is empty; give the memory to store (or - to read it from stdin)")
    text = text.strip()
    limit = int(vault.setting("limits", "record_bytes"))
    size = len(text.encode("utf-8"))
    if size > limit:
        raise TooLarge(
            f"the text is {size:,} bytes; one record holds at most {limit:,} — split it into "
            "several records (nothing was stored)", bytes=size, limit=limit)
    scan.check(text, allow_unsafe=allow_unsafe)
    return text


def _write(vault: Vault, idx: Index, records: list[Record]) -> Index:
    """Append records in one write (lock held) and let the index catch up."""
    fsio.append_lines(vault.log_path, [r.to_line() for r in records])
    return catch_up(idx)


def describe(row: Row, rec: Record, now: float) -> dict[str, Any]:
    """A record as shown to callers: its stored fields plus its effective status."""
    out: dict[str, Any] = {
        "id": rec.id, "ts": rec.ts, "domain": rec.domain, "project": rec.project,
        "kind": rec.kind, "tier": rec.tier, "text": rec.text, "status": row.status(now),
        "superseded_by": row.superseded_by, "corrects": list(rec.corrects), "key": rec.key,
        "tags": list(rec.tags), "expires": rec.expires, "evidence": rec.evidence,
        "source": rec.source, "line": row.n,
    }
    if rec.ref:
        out["ref"] = rec.ref
    for k, v in rec.extra.items():
        out.setdefault(k, v)
    return out


@dataclass(frozen=True)
class Appended:
    status: str                       # stored | similar | duplicate | skipped
    id: str | None
    record: dict[str, Any] | None = None
    similar: list[dict[str, Any]] = field(default_factory=list)
    duplicate_of: str | None = None
    warning: str | None = None


def _current(row: Row, now: float) -> bool:
    return row.status(now) == "current"


def find_similar(idx: Index, text: str, domain: str, project: str | None, threshold: float,
                 now: float, limit: int = 20) -> list[dict[str, Any]]:
    """Current records in the same domain and project whose text is a near duplicate of `text`.

    Candidates come from the text's rarest terms only: a text ≥ 90 % similar shares nearly all
    of its terms, and rare terms have short posting lists, so the probe stays cheap at a million
    records (a query over every term would rank tens of thousands of common-term matches).
    """
    terms = textmod.query_terms(text)
    if not terms:
        return []
    df = idx.doc_freq(terms)
    rare = sorted((t for t in terms if df[t]), key=lambda t: df[t])[:4]
    if not rare:
        return []
    rows = [Row(*t[:-1]) for t in idx.conn.execute(
        f"SELECT {ROW_SELECT}, bm25(fts) AS s FROM fts JOIN rec r ON r.n = fts.rowid "
        "WHERE fts MATCH ? AND r.domain = ? AND r.project IS ? ORDER BY s LIMIT ?",
        (match_any(rare), domain, project, limit))]
    out = []
    for row in rows:
        if not _current(row, now) or row.kind in ("memory", "seen", "forget"):
            continue
        rec = idx.record(row)
        sim = textmod.similarity(text, rec.text)
        if sim >= threshold:
            out.append({"id": rec.id, "text": rec.text, "similarity": round(sim, 3),
                        "tier": rec.tier})
    out.sort(key=lambda s: -s["similarity"])
    return out


def append(vault: Vault, text: str, *, domain: str | None = None, project: str | None = None,
           kind: str = "note", tier: str = "normal", tags: list[str] | None = None,
           key: str | None = None, ttl: str | None = None, evidence: str | None = None,
           source: str | None = None, corrects: list[str] | None = None,
           on_similar: str | None = None, allow_unsafe: bool = False,
           extra: dict[str, Any] | None = None, gate: bool = True) -> Appended:
    """Append one record, through the write gate.

    * same normalised fingerprint as a current record (same domain, project, key): nothing new
      is stored; a `seen` line refreshes the existing record's recency; status `duplicate`;
    * a near duplicate (similarity ≥ threshold, numbers equal): handled per `on_similar` —
      `store` (status `similar`, the near ones listed), `skip` (nothing stored, status `skipped`)
      or `supersede` (stored as a correction of the closest one);
    * a same-key record that would supersede a current redline is refused unless it is one.
    """
    text = check_text(vault, text, allow_unsafe=allow_unsafe)
    domain = default_domain(vault, domain)
    if project is not None:
        validate_name(project, "project")
    if not NAME_RE.match(kind or ""):
        raise UsageError(f"--kind {kind!r} is not a valid kind name (letters, digits, . _ -)")
    if tier not in TIERS:
        raise UsageError(f"--tier must be one of {', '.join(TIERS)}, not {tier!r}")
    on_similar = on_similar or str(vault.setting("dedup", "on_similar"))
    if on_similar not in ON_SIMILAR:
        raise UsageError(f"--on-similar must be one of {', '.join(ON_SIMILAR)}, not {on_similar!r}")
    moment = clock.now()
    now = moment.timestamp()
    expires = clock.format_ts(moment + clock.parse_ttl(ttl)) if ttl else None
    tags = [t.strip() for t in (tags or []) if t and t.strip()]
    corrects = list(corrects or [])
    threshold = float(vault.setting("dedup", "threshold"))
    idx = open_index(vault)  # outside the lock: a rebuild, if one is due, does not hold it
    with vault.lock():
        idx = catch_up(idx)
        try:
            _check_corrects_lock(idx, corrects, tier)
            if key:
                _check_key_lock(idx, key, domain, project, tier, now)
            similar: list[dict[str, Any]] = []
            if gate:
                dup = _exact_duplicate(idx, text, domain, project, key, now)
                if dup is not None:
                    seen = Record(id=new_id(now), ts=clock.format_ts(moment), domain=domain,
                                  project=project, kind="seen", ref=dup.id)
                    idx = _write(vault, idx, [seen])
                    return Appended("duplicate", dup.id, duplicate_of=dup.id)
                similar = find_similar(idx, text, domain, project, threshold, now)
            status = "stored"
            warning = None
            if similar:
                if on_similar == "skip":
                    return Appended("skipped", None, similar=similar,
                                    warning="a near duplicate exists; nothing was stored")
                if on_similar == "supersede" and similar[0]["tier"] != "redline":
                    corrects.append(similar[0]["id"])
                    if kind == "note":
                        kind = "correction"
                else:
                    status = "similar"
                    warning = (f"stored, but {similar[0]['id']} is nearly the same; use "
                               f"`optmem correct {similar[0]['id'][-8:]} …` to replace it instead")
            rec = Record(id=new_id(now), ts=clock.format_ts(moment), text=text, domain=domain,
                         project=project, kind=kind, tier=tier, key=key, tags=tuple(tags),
                         corrects=tuple(corrects), expires=expires, evidence=evidence,
                         source=source, extra=dict(extra or {}))
            idx = _write(vault, idx, [rec])
            row = idx.by_id(rec.id)
            return Appended(status, rec.id, describe(row, rec, now) if row else rec.to_json(),
                            similar=similar, warning=warning)
        finally:
            idx.close()


def _exact_duplicate(idx: Index, text: str, domain: str, project: str | None,
                     key: str | None, now: float) -> Row | None:
    fp = textmod.fingerprint(text)
    if fp is None:
        return None  # nothing to compare: punctuation or symbols only
    for row in idx.rows("r.fp = ? AND r.domain = ? AND r.project IS ? ORDER BY r.n DESC",
                        (fp, domain, project)):
        if _current(row, now) and row.kind not in ("memory",) and (key is None or row.key == key):
            return row
    return None


def _check_key_lock(idx: Index, key: str, domain: str, project: str | None, tier: str,
                    now: float) -> None:
    if tier == "redline":
        return
    for row in idx.rows("r.key = ? AND r.domain = ? AND r.project IS ?", (key, domain, project)):
        if row.tier == 3 and _current(row, now):
            raise RedlineLocked(
                f"key {key!r} is held by redline {row.id}; a redline is a locked rule — write a "
                "newer redline (--redline) to change it", id=row.id, key=key)


def _check_corrects_lock(idx: Index, corrects: list[str], tier: str) -> None:
    """A redline is a locked rule: only a redline may correct it."""
    if tier == "redline":
        return
    for ref in corrects:
        for row in idx.resolve(ref):
            if row.tier == 3:
                raise RedlineLocked(
                    f"{row.id} is a redline (a locked rule); only a redline can correct it — add "
                    "--redline if the rule itself changed", id=row.id)


def journal_hot(vault: Vault, file: str, project: str | None, changes: list[Any], *,
                domain: str | None = None, source: str | None = None) -> list[str]:
    """Journal hot-memory changes into the log (lock held): every old and new text is kept.

    A removed entry becomes a retired `memory` record; a replaced one too, corrected by the
    record of its new text — so both stay searchable and only the new one is current.
    """
    moment = clock.now()
    ts = clock.format_ts(moment)
    domain = default_domain(vault, domain)
    records: list[Record] = []

    def make(op: str, entry: Any, corrects: tuple[str, ...] = (), **more: Any) -> Record:
        return Record(id=new_id(moment.timestamp()), ts=ts, text=entry.text, domain=domain,
                      project=project, kind="memory", key=f"hot:{file}:{entry.id}",
                      source=source, corrects=corrects,
                      extra={"op": op, "file": file, "entry": entry.id, **more})

    for c in changes:
        if c.op == "add":
            records.append(make("add", c.entry))
        elif c.op == "remove":
            records.append(make("remove", c.entry))
        else:
            gone = make("remove", c.old, replaced_by=c.entry.id)
            records.append(gone)
            records.append(make("replace", c.entry, (gone.id,), old=c.old.text))
    fsio.append_lines(vault.log_path, [r.to_line() for r in records])
    return [r.id for r in records]


def resolve_one(idx: Index, ref: str) -> Row:
    """The one record an id, id prefix or id suffix (≥ 6 chars) names."""
    from optmem.errors import Ambiguous, NotFound

    rows = idx.resolve(ref)
    if not rows:
        raise NotFound(f"no record has id {ref!r} (give the full id, or ≥ 6 of its first or last "
                       "characters)", ref=ref)
    if len(rows) > 1:
        raise Ambiguous(f"{ref!r} names {len(rows)} records; give more characters of the id",
                        candidates=[{"id": r.id, "line": r.n} for r in rows[:20]])
    return rows[0]


@dataclass(frozen=True)
class Got:
    record: dict[str, Any]
    warnings: list[str]


def get(vault: Vault, ref: str) -> Got:
    """One record with its status (current / superseded by … / expired / forgotten)."""
    now = clock.now().timestamp()
    with open_index(vault) as idx:
        row = resolve_one(idx, ref)
        return Got(describe(row, idx.record(row), now), idx.warnings())


@dataclass(frozen=True)
class Forgotten:
    status: str          # forgotten | already_forgotten
    id: str
    tombstone: str | None


def forget(vault: Vault, ref: str, *, reason: str | None = None, domain: str | None = None,
           source: str | None = None) -> Forgotten:
    """Append a tombstone: the record leaves search and context but stays in the file."""
    moment = clock.now()
    idx = open_index(vault)
    with vault.lock():
        idx = catch_up(idx)
        try:
            row = resolve_one(idx, ref)
            if row.forgotten:
                return Forgotten("already_forgotten", row.id, None)
            extra = {"reason": reason} if reason else {}
            tomb = Record(id=new_id(moment.timestamp()), ts=clock.format_ts(moment),
                          domain=row.domain if domain is None else default_domain(vault, domain),
                          project=row.project, kind="forget", ref=row.id, source=source,
                          extra=extra)
            idx = _write(vault, idx, [tomb])
            return Forgotten("forgotten", row.id, tomb.id)
        finally:
            idx.close()
