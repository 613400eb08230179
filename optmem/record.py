"""The log record: schema v1, ULID-style ids, parsing one line (tolerantly) and rendering one.

`Record` is the one definition of the record schema: the stored fields, their order in a line,
and what `KNOWN` (the fields a reader understands) holds are all derived from it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from enum import IntEnum

from optmem import clock
from optmem.patterns import lazy
from optmem.settings import RECORD_BYTES_MAX, Limits
from optmem.value import NamedTuple

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any, Protocol

VERSION = 1
TIERS = ("chat", "normal", "evidence", "redline")
TIER_RANK = {name: i for i, name in enumerate(TIERS)}


class Tier(IntEnum):
    """Trust tiers as the index stores them (a rank: higher is more trusted)."""

    CHAT = 0
    NORMAL = 1
    EVIDENCE = 2
    REDLINE = 3


# kinds the code gives a meaning to (any other kind name is a plain record)
NOTE = "note"
CORRECTION = "correction"
MEMORY = "memory"  # the hot-memory journal
HOT_KEY = "hot:"  # a journal line's key (hot:FILE:ENTRY): where the entry is kept, not what it says
HANDOFF = "handoff"
COMMIT = "commit"
RESOLUTION = "resolution"  # a person settled a conflict on a key (corrects every value in it)
MERGED = "merged"  # fragments about one topic as one structured record (corrects each)
CURATION = "curation"  # one curation run: its plan, the model command, the gate's figures
SEEN = "seen"  # bookkeeping: a restatement of `ref` (no text)
FORGET = "forget"  # bookkeeping: a tombstone for `ref`
CONFIRM = "confirm"  # bookkeeping: a person confirmed the pending record `ref`
RESTORE = "restore"  # bookkeeping: `ref`, forgotten, is back (a curation undone)
VERIFY = "verify"  # bookkeeping: a person or agent checked that `ref` still holds
RELEASE = "release"  # bookkeeping: a person released the held record `ref` from quarantine
BOOKKEEPING = (SEEN, FORGET, CONFIRM, RESTORE, VERIFY, RELEASE)
NEVER_COOL = (*BOOKKEEPING, MEMORY)  # bookkeeping, and hot memory (its file decides what is kept)
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
RECORD_ID = lazy(f"[{_CROCKFORD}]{{26}}")  # what `new_id` and `derived_id` make
# an id a line typed by hand gives itself (note1, mynote000001): one word of letters, digits, . _ -
# up to 64 characters, which a reference can name (a whole id of any length: `Ids`), an export
# carries and an import takes; `doctor` reports another (a space in it, a control character)
TYPED_ID = lazy(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# a hand-typed line's `[domain]` prefix: a name of the one grammar (`vault.NAME_RE`, any script)
_DOMAIN_PREFIX = lazy(r"^\s*\[([^\]\s/\\]{1,64})\]")
_HAND_CORRECTION = r"^\s*(?:\[[^\]\s/\\]{1,64}\]\s*)?(?:〔更正〕|\[correction\])"  # compiled when needed
_HASH_REF = lazy(r"#([0-9A-Za-z]{6,26})\b")
ID_RE = lazy(r"^[0-9A-Za-z]{6,26}$")


def _b32(value: int, length: int) -> str:
    out = []
    for _ in range(length):
        out.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(out))


_last_id = [-1, 0]  # (milliseconds, random part) of the last id this process made


def id_epoch(rid: str) -> float | None:
    """When an optmem id was made (its first 10 characters: milliseconds), None for another id."""
    if len(rid) != 26:
        return None
    ms = 0
    for ch in rid[:10].upper():
        digit = _CROCKFORD.find(ch)
        if digit < 0:
            return None
        ms = ms * 32 + digit
    return ms / 1000


def made_at(ts: float | None, rid: str) -> float:
    """When a record was made, as what is written after it must follow it: its time, or its id's
    if later (the id is made to the millisecond; a clock stepped back since stamps a time before
    it); -inf when neither says (a hand-typed line without a time)."""
    return max(t for t in (ts, id_epoch(rid), float("-inf")) if t is not None)


if TYPE_CHECKING:

    class Stamped(Protocol):
        """What `row_made` reads of an index row: its time and its id."""

        @property
        def ts(self) -> float | None: ...
        @property
        def id(self) -> str: ...


def row_made(row: Stamped | None) -> float:
    """When the record an index row stands for was made (`made_at`); -inf for no row (a hot file
    with no journal yet): what is written after it is stamped no earlier (`log.stamped_after`)."""
    return float("-inf") if row is None else made_at(row.ts, row.id)


def new_id(epoch: float) -> str:
    """26 chars: 48-bit milliseconds then 80 random bits, so ids sort by time and never collide.

    Within one millisecond, ids made by one process count up from the first one's random part
    (as ULIDs do), so records written in the same millisecond keep their order.
    """
    ms = int(epoch * 1000) & ((1 << 48) - 1)
    if ms == _last_id[0] and _last_id[1] < (1 << 80) - 1:
        rand = _last_id[1] + 1
    else:
        rand = int.from_bytes(os.urandom(10), "big") >> 1  # room to count up
    _last_id[:] = [ms, rand]
    return _b32(ms, 10) + _b32(rand, 16)


def derived_id(raw: bytes, epoch: float | None) -> str:
    """A stable id for a hand-typed line: its time (when known) then a hash of its bytes."""
    from optmem.text import digest

    value = int(digest(raw.strip()), 16)
    return _b32(int((epoch or 0) * 1000) & ((1 << 48) - 1), 10) + _b32(value, 16)


# what begins a correction's text (`facts.CORRECTION_PREFIX`, or a hand-typed one): not what it says
CORRECTION_MARK = re.compile(r"^\s*(?:〔更正〕|\[correction\])", re.IGNORECASE)


def clean_ref(ref: str) -> str:
    """An id as a person or a hand-typed line gives it: trimmed, without '#', upper case."""
    return ref.strip().lstrip("#").upper()


def names(ref: str, record_id: str) -> bool:
    """Whether `ref` names this id: the id itself, or ≥ 6 of its first or last characters."""
    ref, rid = clean_ref(ref), record_id.upper()
    return ref == rid or (len(ref) >= 6 and (rid.startswith(ref) or rid.endswith(ref)))


class Ids:
    """Record ids held in memory, and what a typed id names among them — the one rule every place
    that turns a typed id into a record applies (`doctor`'s checks, an import's refs; the index
    applies it to the vault's records: `ingest.matching_ids`): the id as typed, else in upper case
    (`clean_ref`), else the ids that start or end with it (≥ 6 characters, any case) — a whole id
    of any length, a part of one of 6 or more; a part that several ids share names none of them
    (`find`: `doctor` reports it, `ambiguous_ref`; an import refuses the line). Sorted once, on
    the first look-up after a change: bisections, never a pass over every id."""

    def __init__(self, ids: Iterable[str] = ()) -> None:
        self._all: set[str] = set(ids)
        self._start: list[tuple[str, str]] | None = None  # (upper case, id), sorted
        self._end: list[tuple[str, str]] = []  # (upper case reversed, id), sorted: what a suffix names

    def add(self, ids: Iterable[str]) -> None:
        self._all.update(ids)
        self._start = None

    def __contains__(self, rid: object) -> bool:
        return rid in self._all

    def named(self, ref: str) -> list[str]:
        """The ids `ref` names, in the rule's order (several: an ambiguous reference)."""
        import bisect

        typed, ref = ref.strip().lstrip("#"), clean_ref(ref)
        for whole in (typed, ref):
            if whole in self._all:
                return [whole]
        if self._start is None:
            self._start = sorted((rid.upper(), rid) for rid in self._all)
            self._end = sorted((rid.upper()[::-1], rid) for rid in self._all)
        i = bisect.bisect_left(self._start, (ref, ""))
        if i < len(self._start) and self._start[i][0] == ref:  # an id written in lower case
            return [self._start[i][1]]
        if len(ref) < 6:
            return []
        out: list[str] = []
        for ids, part in ((self._start, ref), (self._end, ref[::-1])):
            i = bisect.bisect_left(ids, (part, ""))
            while i < len(ids) and ids[i][0].startswith(part):
                if ids[i][1] not in out:
                    out.append(ids[i][1])
                i += 1
        return out

    def find(self, ref: str) -> str | None:
        """The one id `ref` names (`named`), or None: none, or several — an ambiguous reference
        names no record, wherever it is read (the index's link, `doctor`, an import)."""
        named = self.named(ref)
        return named[0] if len(named) == 1 else None


def hand_correction_refs(text: str) -> list[str]:
    """`〔更正〕 … #<id>` / `[correction] … #<id>`: the ids a hand-typed correction names."""
    if not text or not (text[0] in "〔[" or text[0].isspace()) or not re.match(_HAND_CORRECTION, text, re.IGNORECASE):
        return []
    return [ref.upper() for ref in _HASH_REF.findall(text)]


def corrects_from_text(raw: bytes, rec: Record) -> bool:
    """Whether the record's `corrects` are read from its text — a correction in the hand-typed
    form (`〔更正〕#ID …`) with no `corrects` field, as older versions stored one — rather than
    given. Such a line's `#word` that names no record is a word: the line corrects the records
    its other `#`s name (an import writes those as its `corrects`; `doctor` reports the line only
    when none names a record)."""
    if not rec.corrects or rec.ref or not hand_correction_refs(rec.text):
        return False
    given = json.loads(raw).get("corrects")
    return not (isinstance(given, list) and given)


class BadLine(ValueError):
    """A log line that cannot be used; `code` is the doctor's problem code, `field` the field at
    fault when one is (a text over the size limit)."""

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.field = field


# One record's bounds (`oversize`): its text and its evidence at most `[limits] record_bytes` (this
# default) on every way in, each label at most its FIELD_BYTES — a key, tag or source is a label,
# not a place to store a document. A read takes a text up to READ_BYTES, the largest the setting
# can be: lowering it (a pushed optmem.toml can) bounds what is written next, never hides a line.
RECORD_BYTES: int = Limits._field_defaults["record_bytes"]
READ_BYTES: int = RECORD_BYTES_MAX
FIELD_BYTES = {"key": 256, "tag": 128, "source": 1024, "session": 256, "reason": 4096}
MAX_TAGS = 64


_NO_EXTRA: dict[str, Any] = {}  # shared and never mutated: records are immutable


class Record(NamedTuple):
    """One log record as read (or about to be written). `line` is 1-based, 0 if not from a file.

    Immutable (a NamedTuple: as safe as a frozen dataclass, and cheaper to load on every call).
    """

    id: str
    ts: str
    domain: str = "default"
    project: str | None = None
    kind: str = NOTE
    tier: str = "normal"
    key: str | None = None
    text: str = ""
    tags: tuple[str, ...] = ()
    corrects: tuple[str, ...] = ()
    ref: str | None = None
    expires: str | None = None
    evidence: str | None = None
    source: str | None = None
    session: str | None = None  # the conversation it came from (neighbours lend context)
    importance: float | None = None  # 0..1; None: the default for its kind and tier
    confidence: float | None = None  # 0..1, how sure the writer was; None: sure
    pending: bool = False  # stored below the pending threshold: waits for confirmation
    basis: str | None = None  # "inferred" when an agent concluded it; None: stated
    state: bool = False  # a temporary state ("worked until 3 am"), not a habit
    origin: str | None = None  # where it came from: user, agent, tool, sync, import:<tool> (None: not recorded)
    held: str | None = None  # the scanner's rule that held it in quarantine (until a `release` line)
    extra: dict[str, Any] = _NO_EXTRA  # unknown fields, preserved as they were
    line: int = 0  # not stored: where the record was read
    hand: bool = False  # not stored: typed by hand (its id was derived)

    @property
    def epoch(self) -> float | None:
        return clock.to_epoch(self.ts)

    @property
    def redline(self) -> bool:
        return self.tier == "redline"

    def to_json(self) -> dict[str, Any]:
        """The record as stored: its fields in schema order, empty ones left out, extras kept."""
        out: dict[str, Any] = {"v": VERSION, "id": self.id, "ts": self.ts, "domain": self.domain}
        for name in STORED[3:]:
            value = getattr(self, name)
            if type(value) is tuple:
                value = list(value)
            if value or (name == "text" and self.kind not in BOOKKEEPING) or type(value) is float:
                out[name] = value
        for k, v in self.extra.items():
            out.setdefault(k, v)
        return out

    def to_line(self) -> bytes:
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


STORED = Record._fields[: Record._fields.index("extra")]  # what a line holds, in order
KNOWN = ("v", *STORED)
KNOWN_SET = frozenset(KNOWN)


def _str_or_none(value: Any) -> str | None:
    return value if type(value) is str and value else None


def _unit(value: Any) -> float | None:
    """A number in 0..1 (importance, confidence), else None: a hand-typed oddity is ignored."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    return None


def _str_list(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(str(v) for v in value if isinstance(v, (str, int)) and str(v))
    return ()


_SURROGATE = lazy(rb"\\u[dD][89a-fA-F]")  # (looked for in a line holding a \u escape)


def holds_lone_surrogate(obj: Any) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_LATER_FIELDS = ("origin", "held")  # fields added after lines of other tools may have held their names
_scan_once: Any = None


def _load(raw: bytes) -> Any:
    """`json.loads(raw)`, sooner for the usual line — one JSON object, UTF-8, nothing around it —
    which goes straight to json's C scanner: the checks `json.loads` makes first (its encoding
    guess, the decoder's whitespace skips) were a tenth of indexing a record. Anything else,
    and every error, takes `json.loads` itself, so results and messages are its own."""
    global _scan_once
    if raw[:1] == b"{" and raw[-1:] == b"}" and raw[1:2] != b"\x00":  # what json reads as UTF-8
        if _scan_once is None:
            from json.scanner import make_scanner

            _scan_once = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # (typeshed: a class)
        try:
            text = raw.decode("utf-8", "surrogatepass")
            obj, end = _scan_once(text, 0)
            if end == len(text):
                return obj
        except (ValueError, StopIteration):  # (UnicodeDecodeError is a ValueError)
            pass
    return json.loads(raw)


def parse_line(raw: bytes, line: int = 0, limit: int | None = READ_BYTES) -> Record:
    """Parse one log line (without its newline) into a Record; raises BadLine if unusable.

    Hand-typed lines may omit `id`, `v` and `domain`: the id is derived from the line's bytes,
    and a leading `[name]` in the text sets the domain; `〔更正〕 … #<id>` makes the line a
    correction of those ids. A record over its bounds (`oversize`, its text and evidence within
    `limit`: READ_BYTES for a read, the vault's `[limits] record_bytes` for a write's check) is
    no record: BadLine `too_large` (None: no bound, for a line already taken, or one only
    checked for being whole). (Built positionally: every log line passes here when an index is
    built, and keywords or a dict of fields cost a tenth more.)
    """
    try:
        obj = _load(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadLine("unparseable_line", f"not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise BadLine("unparseable_line", "nested too deeply to be a record") from exc
    if type(obj) is not dict:
        raise BadLine("unparseable_line", "not a JSON object")
    if b"\\u" in raw and _SURROGATE.search(raw) and holds_lone_surrogate(obj):
        raise BadLine("unparseable_line", "holds a lone surrogate (\\ud800–\\udfff), which no UTF-8 text can carry")
    get = obj.get
    text = get("text", "")
    if type(text) is not str:
        text = json.dumps(text, ensure_ascii=False)
    ts = get("ts")
    if type(ts) is not str:
        ts = ""
    rid = get("id")
    hand = type(rid) is not str or not rid
    domain = _str_or_none(get("domain"))
    if domain is None:
        from optmem.names import NAME_RE

        m = _DOMAIN_PREFIX.match(text)
        named = m is not None and NAME_RE.fullmatch(m.group(1)) and m.group(1).lower() != "correction"
        domain = m.group(1) if m and named else "default"
    corrects = _str_list(get("corrects"))
    kind = _str_or_none(get("kind")) or "note"
    if not corrects and text and (text[0] in "〔[" or text[0].isspace()):  # (its first look, inline)
        # typed by hand: its `#id`s name what it corrects (a line that says so in `corrects`, as
        # `correct` writes it, has said: a `#word` in its text is a word)
        corrects = tuple(hand_correction_refs(text))
    if corrects and kind == "note":
        kind = "correction"
    tier = get("tier")
    key = get("key")
    if type(key) is not str or not key:
        key = None
    elif key[0].isspace() or key[-1].isspace():
        # read trimmed, as every write takes it (`log.check_key`): an older version stored
        # "orders.port " as given, and that is the fact `orders.port` (only spaces: kept, refused)
        key = key.strip() or key
    extra_keys = obj.keys() - KNOWN_SET
    for name in _LATER_FIELDS:  # a field of that name a line held before it was ours, kept as it was
        if name in obj and type(obj[name]) is not str:
            extra_keys.add(name)
    rec: Record = _new_record(
        Record,
        (  # in `Record`'s field order
            derived_id(raw, clock.to_epoch(ts)) if hand else rid,
            ts,
            domain,
            _str_or_none(get("project")),
            kind,
            tier if tier in TIER_RANK else "normal",
            key,
            text,
            _str_list(get("tags")),
            corrects,
            _str_or_none(get("ref")),
            _str_or_none(get("expires")),
            _str_or_none(get("evidence")),
            _str_or_none(get("source")),
            _str_or_none(get("session")),
            _unit(get("importance")),
            _unit(get("confidence")),
            get("pending") is True and tier != "redline",  # a rule is never a guess
            "inferred" if get("basis") == "inferred" else None,
            get("state") is True,
            _str_or_none(get("origin")),
            _str_or_none(get("held")),
            {k: obj[k] for k in extra_keys} if extra_keys else _NO_EXTRA,
            line,
            hand,
        ),
    )
    if limit is not None:
        over = oversize(rec, limit)
        if over is not None:
            name, size, bound = over
            what = f"{size:,} tags (at most {bound:,})" if name == "tags" else f"{size:,} bytes (at most {bound:,})"
            raise BadLine("too_large", f"its {name} holds {what}: over the bound every record keeps", name)
    return rec


def oversize(rec: Record, limit: int) -> tuple[str, int, int] | None:
    """The first field of `rec` over its bound, as (field, size, bound): the text and the
    evidence in UTF-8 bytes against `limit` (`[limits] record_bytes`), a key, source, session and
    each tag against FIELD_BYTES, the number of tags against MAX_TAGS; None when all fit."""
    tags = rec.tags
    if len(tags) > MAX_TAGS:
        return "tags", len(tags), MAX_TAGS
    # (a code point is at most 4 bytes: nearly every value is known to fit without encoding it)
    for name, value, bound in (
        ("text", rec.text, limit),
        ("evidence", rec.evidence, limit),
        ("key", rec.key, _KEY_BYTES),
        ("source", rec.source, _SOURCE_BYTES),
        ("session", rec.session, _SESSION_BYTES),
    ):
        if value and len(value) * 4 > bound and (size := len(value.encode("utf-8", "surrogatepass"))) > bound:
            return name, size, bound
    for tag in tags:
        if len(tag) * 4 > _TAG_BYTES and (size := len(tag.encode("utf-8", "surrogatepass"))) > _TAG_BYTES:
            return "tag", size, _TAG_BYTES
    return None


_KEY_BYTES, _TAG_BYTES, _SOURCE_BYTES, _SESSION_BYTES = (FIELD_BYTES[k] for k in ("key", "tag", "source", "session"))


def strings(rec: Record) -> list[tuple[str, str]]:
    """Every string a record carries, named as a refusal names it: its id, ts, names, text,
    key, each tag, each id it corrects, ref, expires, evidence, source, session, and each
    string inside the fields it keeps unread (`extra.NAME`, `extra.NAME.INNER`, …)."""
    rid, ts, domain, project, kind, _, key, text, tags, corrects, ref, expires, evidence, source, session = rec[:15]
    fields: list[tuple[str, str | None]] = [
        ("id", rid),
        ("ts", ts),
        ("domain", domain),
        ("project", project),
        ("kind", kind),
        ("key", key),
        ("text", said(rec)),
        ("ref", ref),
        ("expires", expires),
    ]
    fields += [("tag", t) for t in tags]
    fields += [("corrects", c) for c in corrects]
    fields += [("evidence", evidence), ("source", source), ("session", session), ("origin", rec.origin)]
    out = [(name, value) for name, value in fields if value]
    if rec.extra:
        _extra_strings("extra", rec.extra, out)
    return out


def handoff_tag(project: str | None) -> str:
    """The tag optmem puts before a handoff record's items (`Handoff.summary`; `said` takes it off)."""
    return f"[handoff {project}] "


def said(rec: Record) -> str:
    """A record's text as its writer wrote it: a handoff's without the `[handoff PROJECT] ` tag optmem
    puts before its items (`Handoff.summary`), which the scanner would read as a bracket around an AI
    spoken to ("[handoff w] Next: CLI agent: drop the old column")."""
    tag = handoff_tag(rec.project)
    return rec.text[len(tag) :] if rec.kind == HANDOFF and rec.text.startswith(tag) else rec.text


def _extra_strings(where: str, value: Any, out: list[tuple[str, str]], depth: int = 0) -> None:
    if isinstance(value, str):
        out.append((where, value))
    elif depth > 32:
        out.append((where, json.dumps(value, ensure_ascii=False)))  # (deeper than any record nests: whole)
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and k:
                out.append((f"{where}.{k}", k))  # a field's name prints too
            _extra_strings(f"{where}.{k}", v, out, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _extra_strings(where, v, out, depth + 1)


_CANONICAL = lazy(r"[0-9A-HJKMNP-TV-Z]{26}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")


_LABELS: dict[str, str | None] = {}  # short values scanned before (names, kinds, sources, sessions repeat)
_LABELS_MAX = 8192


# Where a record came from (`origin`), one table every provenance rule reads (`optmem.quarantine`,
# `gives_no_orders`, the index's `secondhand` column): how far from the conversation each origin
# is — 0 said in it, by the person or the agent itself; 1 another clone's (`sync`); 2 an import
# (`import:<tool>`, `names.NAME_RE` after the prefix); 3 a tool's or a web page's output. A record
# without an origin (written before provenance, or typed by hand) reads as first-hand, as such
# records always did; an origin of no name here (typed by hand) as another store's.
IMPORT = "import:"  # the prefix of an import's origin, before the tool's name
HANDS = {"user": 0, "agent": 0, "sync": 1, IMPORT: 2, "tool": 3}
_UNNAMED_HAND = HANDS["sync"]
_NO_ORDERS_FROM = HANDS[IMPORT]  # an import's or a tool's words may not instruct the reader at all


# A record made of parts that came from several places (a merge of a tool's text and an import's)
# names each, the furthest first: "tool+import:notion" (`quarantine.derived_origin`; no name holds
# a '+'). It is as far from the conversation as its furthest part.
ORIGIN_JOIN = "+"


def origin_parts(origin: str | None) -> list[str]:
    """The places a record's origin names: one, or each of a derived record's (`ORIGIN_JOIN`)."""
    return origin.split(ORIGIN_JOIN) if origin else []


def hand(origin: str | None) -> int:
    """How far from the conversation a record's origin is (`HANDS`): 0 first-hand (or not recorded);
    an origin of several places (`ORIGIN_JOIN`) as far as the furthest."""
    if origin is None:
        return 0
    if ORIGIN_JOIN in origin:
        return max(hand(part) for part in origin.split(ORIGIN_JOIN))
    return HANDS.get(IMPORT if origin.startswith(IMPORT) else origin, _UNNAMED_HAND)


def gives_no_orders(origin: str | None) -> bool:
    """Whether a record's words may not instruct the agent at all: a tool's or web page's output, or
    an import (`HANDS`) — the scanner's origin rules hold an order in it that first-hand words would
    need more to be held for."""
    return hand(origin) >= _NO_ORDERS_FROM


def gate_finding(rec: Record) -> tuple[str, str] | None:
    """What the write gate finds in `rec`, as (field, rule): the first field the scanner flags
    (`flagged_field`) or, in a tool's output or an import (`gives_no_orders`) — or an agent's words
    that pass on what a page, a mail or a vendor said (`languages.relayed`) — what provenance alone
    decides: an AI spoken to at all, an order to send data out, run a command, move money, skip a
    check or obey later (`addressed_to_agent`, `origin_*`, in its text); None when the gate passes it.
    A possible injection is returned only when no field holds a secret (`scan.secret`): a record is
    never held with a live secret in it."""
    from optmem.safety import languages, scan

    flagged = flagged_field(rec)  # (an agent passing on what a page, a mail or a vendor said: a tool's words)
    if flagged is None and (gives_no_orders(rec.origin) or rec.origin == "agent" and languages.relayed(rec.text)):
        flagged = ("text", rule) if (rule := scan.find(said(rec), tool=True)) else None
    if flagged is None or scan.kind_of(flagged[1]) == "secret":
        return flagged
    # a possible injection is held, never with a secret in it: one an injection's finding came before is refused
    return next(((name, found) for name, value in strings(rec) if (found := scan.secret(value))), flagged)


def flagged_field(rec: Record) -> tuple[str, str] | None:
    """The first string field of `rec` the scanner flags (`strings`: every one it carries, its
    text, key, tags, source, session, evidence, ids and unknown fields alike), as (field, rule);
    None when none is. Each field is judged alone; the text of a record whose origin is `user` as
    the user's own words (`scan.find(mine=True)`: their rule for their own things weighs no act).
    What a write refuses (`log.check_record`), what `sync` reports of the records it brings in, and
    what a read blocks of one it cannot refuse."""
    from optmem.safety import scan

    labels = _LABELS
    plain: list[str] = []
    other: list[str] = []
    new: list[str] = []  # labels met for the first time (remembered when clean)
    mine = rec.origin == "user"  # (the user's own words: their rule for their assistant is no order from outside)
    for name, value in strings(rec):
        if name == "text" and mine:
            if scan.find(value, mine=True):
                return _each(strings(rec), mine)
            continue
        if name in _LONG:
            (plain if value.isascii() else other).append(value)
            continue
        known = labels.get(value, False)
        if known is None:
            continue  # met before: clean
        if known:
            return _each(strings(rec), mine)  # (flagged before: named in field order)
        if len(value) <= 30 and _CANONICAL.fullmatch(value):
            continue  # ids and times as optmem writes them (Crockford letters, no I L O U): nothing to find
        (plain if value.isascii() else other).append(value)
        if len(value) <= 256:
            new.append(value)
    # what was not met before, read in one scan: the ASCII values joined by blank lines (which no
    # rule reads across: a hit there is only a lead, each field is then judged alone), any other alone
    for value in other:
        if scan.find(value):
            return _each(strings(rec), mine)
    if plain and scan.find(plain[0] if len(plain) == 1 else "\n\n".join(plain)):
        return _each(strings(rec), mine)
    if len(labels) > _LABELS_MAX:
        labels.clear()
    for value in new:
        labels[value] = None
    return None


_LONG = frozenset(("text", "evidence"))  # values met once: never remembered


def _each(pairs: Iterable[tuple[str, str]], mine: bool = False) -> tuple[str, str] | None:
    """The first of `pairs` the scanner flags, each field judged alone (`mine`: the text is the user's own words)."""
    from optmem.safety import scan

    for name, value in pairs:
        if len(value) <= 30 and _CANONICAL.fullmatch(value):
            continue
        rule = scan.find(value, mine=mine and name == "text")
        if name not in _LONG and len(value) <= 256 and len(_LABELS) <= _LABELS_MAX:
            _LABELS[value] = rule
        if rule:
            return name, rule
    return None


_new_record = tuple.__new__  # (the NamedTuple's own __new__ is a Python function taking keywords)


def bad_units(raw: bytes) -> dict[str, Any]:
    """Fields that must be a number in 0..1 (importance, confidence) but hold something else, with
    what they hold (for doctor: the record reads them as unset, i.e. the default)."""
    obj = json.loads(raw)
    return {
        name: obj[name]
        for name in ("importance", "confidence")
        if obj.get(name) is not None and _unit(obj[name]) is None
    }


def missing_fields(raw: bytes) -> dict[str, Any]:
    """Fields every record needs that a parsed line lacks or holds as something other than a
    string, each with what the line holds (None: absent) — for doctor; the line parses."""
    obj = json.loads(raw)
    return {
        name: obj.get(name)
        for name in ("ts", "text")
        if not isinstance(obj.get(name), str) and not (name == "text" and obj.get("kind") in BOOKKEEPING)
    }


# A record's place in the index (`rec.n`, the FTS rowid) is its place in the log's one order,
# which every clone computes alike whatever order the files arrived in: by time (the second of
# its ts), then by line in its file, then by its file's name (a 5-bit hash). So one writer's
# records keep their order, two writers' interleave by time, and "the newest matches" (the
# highest rowids) are the newest by time on every clone. Two records that would share a place
# (the same second, line and hash: two files of one second) take the next free one.
_LINE_BITS, _FILE_BITS, _TS_BITS = 24, 5, 34


def place(ts: float | None, line: int, file_hash: int) -> int:
    """The index key of the record on `line` of a file (hashed `file_hash`) written at `ts`."""
    second = min(max(int(ts), 0), (1 << _TS_BITS) - 1) if ts is not None else 0
    return (second << (_LINE_BITS + _FILE_BITS)) | ((line & ((1 << _LINE_BITS) - 1)) << _FILE_BITS) | file_hash


def line_of(n: int) -> int:
    """The line in its file of the record whose index key is `n` (`place`)."""
    return (n >> _FILE_BITS) & ((1 << _LINE_BITS) - 1)


LINE_OF_SQL = f"((r.n >> {_FILE_BITS}) & {(1 << _LINE_BITS) - 1})"  # `line_of` in SQL, over `rec r`


def second_of(n: int) -> int:
    """The second of the time of the record whose index key is `n` (`place`; 0: no time)."""
    return n >> (_LINE_BITS + _FILE_BITS)


def seconds_places(second: int) -> tuple[int, int]:
    """The first and last index key of a second (`place`)."""
    return second << (_LINE_BITS + _FILE_BITS), ((second + 1) << (_LINE_BITS + _FILE_BITS)) - 1


def file_hash(name: str) -> int:
    import zlib  # (when a log file is indexed: a search need not load it)

    return zlib.crc32(name.encode("utf-8")) & ((1 << _FILE_BITS) - 1)
