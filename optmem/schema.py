"""The index schema, defined once: the `Row` type is the column table.

Each field of `Row` is a column of `rec`, annotated with its SQL type; the DDL, the SELECT list
and the INSERT statement are generated from it. Fields marked `view=True` belong to the
effective view: they start empty and are set by the index as later records act on earlier ones.
Adding a column is one line here (plus the code that fills or reads it); bump `SCHEMA` so old
indexes rebuild.
"""

import operator

from optmem import view
from optmem.record import HANDOFF, Tier
from optmem.value import Annotated, NamedTuple

# 6: stemmed words; 7, 8: date terms, sessions; 9: lifecycle; 10–12: consolidation; 14: indexes for context;
# 15: places per domain; 16: Latin diacritics folded; 17: parts of letter-digit words; 18: cold marks indexed;
# 19: correction links (cor), forks; 20: forks apart from key conflicts; 21: the share of conversation turns (BM25's b);
# 22: log segments (one file per writer), recall files per writer, keys by place in the log's order, `after`
# 25: provenance (origin) and quarantine (held, released); 28: term counts (df); 29: keys read trimmed,
# and a line that names its targets in `corrects` reads no more from its text's #words; 30: ids written in
# lower case named in any case; 31: the write gate's guesses found from the record they may update
# (rec_upd: search marks both sides); 32: a key's values replaced through `after` lose to what replaced them,
# whatever the clocks say (an index built before keeps the newer clock's answer); 33: the date terms a
# record's text names (`dates`), stored with its row; 34: a whole id shorter than 6 characters names its record;
# 35: a part of an id several values of a key share replaces none of them (`view.replaces`); 36: a
# second-hand value (a tool's output, an import) never replaces what was said, by key or by link; 37: nor does
# an agent's inference replace a second-hand value by key: the two are in conflict (review 15); 38: each record's
# tokens kept (`tok`): a search scores a candidate from them, not from its line read back and re-tokenised
# 39: a pending guess or an inference supersedes no stated record, by a correction's link or on-similar (review 18)
# 40: what a keyed value says kept (`said`), and the keys whose current values differ between domains kept as
# records come in (`split`, its triggers): a session start reads them, not every keyed row; 42: the split
# keys' SQL made from the status rules, a key a row moves away from said again, `split_dirty` one row a key;
# a hot-memory entry's key (hot:FILE:ENTRY) no more among its searchable words; 43: what this clone
# itself recalled (`here`: its own recall file's lines, not another clone's a sync brought)
SCHEMA = "optmem-index-43"


class Col(NamedTuple):
    sql: str
    view: bool = False  # maintained by the effective view, not known when the line is indexed


class Row(NamedTuple):
    """What the index knows of one record, without its text."""

    n: Annotated[int, Col("INTEGER PRIMARY KEY")]  # 1-based: the line number in LOG.jsonl, counted on across segments
    id: Annotated[str, Col("TEXT NOT NULL")]
    rid: Annotated[str, Col("TEXT NOT NULL")]  # the id reversed, for suffix look-ups
    off: Annotated[int, Col("INTEGER NOT NULL")]  # byte offset of the line in its file
    len: Annotated[int, Col("INTEGER NOT NULL")]  # byte length of the line
    ts: Annotated[float | None, Col("REAL")]
    domain: Annotated[str, Col("TEXT NOT NULL")]
    project: Annotated[str | None, Col("TEXT")]
    kind: Annotated[str, Col("TEXT NOT NULL")]
    tier: Annotated[int, Col("INTEGER NOT NULL")]  # record.Tier
    key: Annotated[str | None, Col("TEXT")]
    fp: Annotated[str | None, Col("TEXT")]  # text.fingerprint of the text
    expires: Annotated[float | None, Col("REAL")]
    ref: Annotated[str | None, Col("TEXT")]
    corrects: Annotated[str | None, Col("TEXT")]  # JSON list of ids
    session: Annotated[str | None, Col("TEXT")]  # the conversation it belongs to
    spos: Annotated[int | None, Col("INTEGER")]  # its place in that session of its domain, in log order
    retired: Annotated[int, Col("INTEGER NOT NULL DEFAULT 0")] = 0  # a removed hot-memory entry
    imp: Annotated[float | None, Col("REAL")] = None  # importance as written (None: default)
    pending: Annotated[int, Col("INTEGER NOT NULL DEFAULT 0")] = 0  # stored below the threshold
    conf: Annotated[float | None, Col("REAL")] = None  # confidence as written
    source: Annotated[str | None, Col("TEXT")] = None  # who wrote it
    inferred: Annotated[int, Col("INTEGER NOT NULL DEFAULT 0")] = 0  # basis: inferred, not stated
    state: Annotated[int, Col("INTEGER NOT NULL DEFAULT 0")] = 0  # a temporary state, not a habit
    upd: Annotated[str | None, Col("TEXT")] = None  # the record it may update (kept both)
    change: Annotated[int, Col("INTEGER NOT NULL DEFAULT 0")] = 0  # says it is a change ("搬到", "now")
    seg: Annotated[int, Col("INTEGER NOT NULL DEFAULT 0")] = 0  # the log file it is in (index meta `segs`)
    after: Annotated[str | None, Col("TEXT")] = None  # a keyed value: the key's values its writer saw (JSON)
    origin: Annotated[str | None, Col("TEXT")] = None  # where it came from (record.origin)
    held: Annotated[int, Col("INTEGER NOT NULL DEFAULT 0")] = 0  # written held in quarantine (record.held)
    # the date terms of its text, space-separated (`dates.record_terms`): None when they are its own
    # day's alone, as for most records — a search re-tokenising a candidate reads them here
    dates: Annotated[str | None, Col("TEXT")] = None
    # a keyed value whose line can hold a correction's prefix: the fingerprint of its text without
    # it, else its id (`Index.said_as`); None: its `fp` says it (most values)
    said: Annotated[str | None, Col("TEXT")] = None
    sup: Annotated[str | None, Col("TEXT", view=True)] = None  # superseded by this correction
    ksup: Annotated[str | None, Col("TEXT", view=True)] = None  # superseded by this same-key record
    forgotten: Annotated[int, Col("INTEGER NOT NULL DEFAULT 0", view=True)] = 0
    seen: Annotated[float | None, Col("REAL", view=True)] = None  # latest restatement
    confirmed: Annotated[int, Col("INTEGER NOT NULL DEFAULT 0", view=True)] = 0  # pending no more
    verified: Annotated[float | None, Col("REAL", view=True)] = None  # latest `verify` of it
    touched: Annotated[float | None, Col("REAL", view=True)] = None  # latest recall (ACCESS.jsonl)
    shown: Annotated[float | None, Col("REAL", view=True)] = None  # latest time context showed it
    # latest recall of it this clone made (its own recall file, `layout.own_access`): what a writer
    # here read (`handoff._seen_by`) — another clone's recalls, brought by a sync, warm it all the same
    here: Annotated[float | None, Col("REAL", view=True)] = None
    cold: Annotated[float | None, Col("REAL", view=True)] = None  # latest sweep that cooled it
    conflict: Annotated[int, Col("INTEGER NOT NULL DEFAULT 0", view=True)] = 0  # a value of a key in conflict
    fork: Annotated[int, Col("INTEGER NOT NULL DEFAULT 0", view=True)] = 0  # a version of a fact corrected two ways
    released: Annotated[int, Col("INTEGER NOT NULL DEFAULT 0", view=True)] = 0  # held no more (a `release` line)
    # a hot entry's removal line: when the entry it removes was written (`written`)
    wrote: Annotated[float | None, Col("REAL", view=True)] = None

    @property
    def disputed(self) -> bool:
        """One of the values that stand together, in conflict: of a key, or of a fact corrected
        two ways (what shows `[CONFLICT]` while the record is current or pending)."""
        return bool(self.conflict or self.fork)

    @property
    def superseded_by(self) -> str | None:
        return self.sup or self.ksup

    @property
    def written(self) -> float | None:
        """When its text was written: its time — for a hot entry's removal line, the time of the
        entry it removes (a removal says nothing new: it never makes the entry look recent; when
        it happened is the line's `ts`, `view.removal`). `WRITTEN_SQL` is its twin."""
        return self.wrote if self.wrote is not None else self.ts

    @property
    def recency(self) -> float | None:
        """When the record was last said: when it was written, or a later restatement's time."""
        if self.seen is not None and (self.written is None or self.seen > self.written):
            return self.seen
        return self.written

    @property
    def checked(self) -> float | None:
        """When someone last checked that the record holds: its latest verification, or — for a
        correction, which a person writes knowing the new value — its own time."""
        times = [t for t in (self.verified, self.ts if self.kind == "correction" else None) if t is not None]
        return max(times) if times else None

    @property
    def accessed(self) -> float | None:
        """When the record was last written, said again, recalled or shown (what keeps it warm)."""
        times = [t for t in (self.written, self.seen, self.touched, self.shown) if t is not None]
        return max(times) if times else None

    @property
    def used(self) -> float | None:
        """When the record was last written, said again or recalled by a caller — not counting
        `context` showing it, so what context shows is not chosen for having been shown."""
        times = [t for t in (self.written, self.seen, self.touched) if t is not None]
        return max(times) if times else None


# (the annotations as written: `typing.get_type_hints` reads them the same, ~0.1 ms later)
COLUMNS: dict[str, Col] = {name: hint.__metadata__[0] for name, hint in Row.__annotations__.items()}
# the body holds tokens made by `text` and `dates` (whose terms keep their underscores)
TOKENIZE = "unicode61 remove_diacritics 0 tokenchars '_'"
ROW_SELECT = ", ".join(f"r.{c}" for c in Row._fields)
# what a log line says of a record (the effective view's columns keep their defaults until the
# view is applied): the values `ingest` inserts of a Row (`line_values`), in this order
LINE_FIELDS = tuple(name for name, col in COLUMNS.items() if not col.view)
_LINE = operator.itemgetter(*(Row._fields.index(name) for name in LINE_FIELDS))

# Python's sqlite3 binds None slowly: it looks for an adapter and then for `__adapt__` and
# `__conform__` on it (two failed attribute look-ups; a row has ~10 Nones: 0.2 s of the inserting
# process's time for 100,000 rows). So a row's values are bound with NONE_BOUND where a value is
# missing, and the INSERT turns it back into NULL. No nullable column ever holds an empty string:
# a missing text field is None, not "".
NONE_BOUND = ""
NULLABLE = frozenset(name for name, col in COLUMNS.items() if "NOT NULL" not in col.sql and name != "n")


def line_values(row: Row) -> tuple[object, ...]:
    """What `INSERT_REC` binds of a Row: its line fields (`LINE_FIELDS`), a None as NONE_BOUND."""
    return tuple(NONE_BOUND if v is None else v for v in _LINE(row))


def _insert(fields: tuple[str, ...]) -> str:
    values = ", ".join(f"NULLIF(?, '{NONE_BOUND}')" if name in NULLABLE else "?" for name in fields)
    return f"INSERT INTO rec ({', '.join(fields)}) VALUES ({values})"


INSERT_REC = _insert(LINE_FIELDS)
INSERT_ROW = _insert(Row._fields)  # a whole Row (tests build rows of any status with it)

DDL = f"""
CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT);
CREATE TABLE rec(
  {("," + chr(10) + "  ").join(f"{name} {col.sql}" for name, col in COLUMNS.items())}
);
CREATE TABLE tag(tag TEXT NOT NULL, n INTEGER NOT NULL);
CREATE TABLE pend(ref TEXT NOT NULL, src INTEGER NOT NULL, what TEXT NOT NULL);
-- applied correction links: t is corrected by s (line numbers); both ways are indexed look-ups
CREATE TABLE cor(t INTEGER NOT NULL, s INTEGER NOT NULL);
CREATE INDEX cor_t ON cor(t);
CREATE INDEX cor_s ON cor(s);
CREATE TABLE bad(n INTEGER PRIMARY KEY, code TEXT NOT NULL, message TEXT NOT NULL);
CREATE VIRTUAL TABLE fts USING fts5(body, content='', tokenize="{TOKENIZE}");
-- how many records hold each term of `fts`: read by the term, however many hold it (FTS5's own
-- count, fts5vocab, reads every posting of a term — ~1 ms for a word 25,000 records hold)
CREATE TABLE df(term TEXT PRIMARY KEY, doc INTEGER NOT NULL) WITHOUT ROWID;
-- each record's tokens as `fts` indexed them (space-separated, in order: `ingest.tokens_for`), by line: a search
-- scores its candidates from them (FTS5 keeps no text: `content=''`)
CREATE TABLE tok(n INTEGER PRIMARY KEY, body TEXT NOT NULL);
-- the redlines again, so "every matching redline" costs nothing however large the log grows
CREATE VIRTUAL TABLE fts_red USING fts5(body, content='', tokenize="{TOKENIZE}");
-- the keys whose current values differ between domains (`SPLIT_GROUP`), kept as records come in
-- and change (`SPLIT_TRIGGERS`): `since` its oldest value's time, `until` when the first of its
-- values stops being current with time (expires, goes cold), `domains` (JSON) those holding one
CREATE TABLE split(key TEXT NOT NULL, project TEXT, since REAL NOT NULL, until REAL, domains TEXT NOT NULL);
CREATE INDEX split_key ON split(key, project);
-- while a catch-up runs (a row in `split_hold`, inside its transaction) the triggers only note the
-- keys they touch in `split_dirty`; the catch-up says each of them once at its end (`SPLIT_DRAIN`)
CREATE TABLE split_hold(one INTEGER PRIMARY KEY);
CREATE TABLE split_dirty(key TEXT NOT NULL, project TEXT);
-- one row a key: no row holds an empty project (`NONE_BOUND`), so no project is ''
CREATE UNIQUE INDEX split_dirty_key ON split_dirty(key, coalesce(project, ''));
"""
# when a record was last used — written, said again or recalled (not shown by context): what
# `context` lists the recent records by (ties: later in the log first), through the index
# `rec_used` (the same expression, or the index does not apply and a session start sorts the
# whole log; an index entry ends with the line number, so the tie-break is free)
USED_SQL = "max(coalesce(wrote, ts, 0), coalesce(seen, 0), coalesce(touched, 0))"
WRITTEN_SQL = "coalesce(r.wrote, r.ts)"  # `Row.written`
# `view.id_time` in SQL: the millisecond part of an optmem id, the whole of any other
ID_TIME_SQL = "(CASE WHEN length(id) = 26 THEN substr(id, 1, 10) ELSE id END)"

POST_DDL = f"""
CREATE INDEX rec_id ON rec(id);
CREATE INDEX rec_rid ON rec(rid);
CREATE INDEX rec_uid ON rec(upper(id)) WHERE id != upper(id);
CREATE INDEX rec_urid ON rec(upper(rid)) WHERE id != upper(id);
CREATE INDEX rec_fp ON rec(fp);
CREATE INDEX rec_upd ON rec(upd) WHERE upd IS NOT NULL;
CREATE INDEX rec_key ON rec(key, domain, project) WHERE key IS NOT NULL;
CREATE INDEX rec_tier ON rec(tier) WHERE tier = {int(Tier.REDLINE)};
CREATE INDEX rec_session ON rec(session, domain, spos) WHERE session IS NOT NULL;
CREATE INDEX tag_tag ON tag(tag, n);
CREATE INDEX pend_ref ON pend(ref);
CREATE INDEX rec_pending ON rec(pending) WHERE pending != 0;
CREATE INDEX rec_held ON rec(held) WHERE held != 0;
CREATE INDEX rec_ref ON rec(ref) WHERE ref IS NOT NULL;
CREATE INDEX rec_conflict ON rec(conflict) WHERE conflict != 0;
CREATE INDEX rec_fork ON rec(fork) WHERE fork != 0;
CREATE INDEX rec_used ON rec({USED_SQL});
CREATE INDEX rec_handoff ON rec(project, ts, {ID_TIME_SQL}, n) WHERE kind = '{HANDOFF}';
CREATE INDEX rec_cold ON rec(cold) WHERE cold IS NOT NULL;
"""


# `split`: a key (of a project) whose current values, as far as time leaves them current, stand in
# two or more domains and differ between domains by what they say (`Index.said_as`; of keyed facts:
# no temporary state, no hot-memory journal — `facts.split_heads`' candidates). Both come from
# `view.STATUS_RULES`: a row counts in its key's group while no rule time alone never changes holds
# (`_counts`), and stops being current when the first of the others does (`_OUT`: it goes cold, it
# expires — each rule's `since`); until then the row is the answer, after it the key's values are
# read again (`facts.split_heads`). A new status rule is one edit there: the SQL here follows.


def _counts(row: str = "") -> str:
    """Whether a row counts in its key's group (`row` is "", "OLD." or "NEW." in a trigger): a keyed
    fact (`view.KEYED_FACT`) that no status rule time alone never changes holds for (`view.STATUS_RULES`)."""
    untimed = " AND ".join(f"NOT ({view.over(rule.sql, row)})" for rule in view.STATUS_RULES if not rule.uses_now)
    return f"{view.over(view.KEYED_FACT.sql, row)} AND {untimed}"


# when a row that counts stops being current with time: the first of the times from which a timed
# status rule holds (NULL: never; 9e999 is SQLite's infinity, as no time is)
_OUT = (
    "nullif(min("
    + ", ".join(f"coalesce({view.over(rule.since, '')}, 9e999)" for rule in view.STATUS_RULES if rule.since)
    + ", 9e999), 9e999)"
)
SPLIT_GROUP = (
    f"SELECT key, project, min(coalesce(ts, 0)), min({_OUT}), json_group_array(DISTINCT domain) FROM rec "
    f"WHERE {_counts()} AND {{where}} GROUP BY key, project "
    "HAVING count(DISTINCT domain) > 1 AND count(DISTINCT coalesce(said, fp, id)) > 1"
)
# a row's change says its key again — and the key it had, when the change moved it to another key
# or project (OLD: the row before the change)
_SAY_AGAIN = (
    "DELETE FROM split WHERE key = NEW.key AND project IS NEW.project; "
    "INSERT INTO split " + SPLIT_GROUP.format(where="key = NEW.key AND project IS NEW.project") + ";"
)
# a row moved to another key or project leaves its old key's group: that key is said again too
_MOVED = "(OLD.key IS NOT NEW.key OR OLD.project IS NOT NEW.project)"
_SAY_OLD_AGAIN = (
    "DELETE FROM split WHERE key = OLD.key AND project IS OLD.project; "
    "INSERT INTO split " + SPLIT_GROUP.format(where="key = OLD.key AND project IS OLD.project") + ";"
)
_NOTE = "INSERT OR IGNORE INTO split_dirty VALUES (NEW.key, NEW.project);"
_NOTE_OLD = "INSERT OR IGNORE INTO split_dirty VALUES (OLD.key, OLD.project);"
_HELD = "EXISTS (SELECT 1 FROM split_hold)"
# the end of a catch-up: each key its rows' changes touched (`split_dirty`) said once, then the
# triggers say each change again as it comes (`split_hold` emptied)
SPLIT_DIRTY = "SELECT DISTINCT key, project FROM split_dirty"
SPLIT_SAY = (
    "DELETE FROM split WHERE key = ? AND project IS ?",
    "INSERT INTO split " + SPLIT_GROUP.format(where="key = ? AND project IS ?"),
)
SPLIT_DONE = ("DELETE FROM split_dirty", "DELETE FROM split_hold")
# what changes whether a value stands, is current, when it stops being current (what the status
# rules read), or which group it is in and what it says
_WATCHED = ", ".join(
    dict.fromkeys([*view.rule_columns(), "ts", "domain", "project", "key", "kind", "state", "fp", "said"])
)
# made after a build has filled `split` in one pass (`SPLIT_FILL`): a build's rows are not said one by one
SPLIT_FILL = "INSERT INTO split " + SPLIT_GROUP.format(where="1")
# A row counts in its key's group only while it stands: a change to a row that counts neither
# before nor after changes no group and says nothing again. Each new value of a key re-points every
# older version's `ksup` to the new head (and a sweep or a read stamps rows): saying the whole key
# again for each of those rows made one append to a key of N versions N regroups of N rows.
_IN = _counts("NEW.")
_LEFT = _counts("OLD.")
_UP = f"({_LEFT}) OR ({_counts('NEW.')})"
SPLIT_TRIGGERS = f"""
CREATE TRIGGER split_in AFTER INSERT ON rec WHEN {_IN} AND NOT {_HELD} BEGIN {_SAY_AGAIN} END;
CREATE TRIGGER split_up AFTER UPDATE OF {_WATCHED} ON rec WHEN ({_UP}) AND NOT {_HELD} BEGIN {_SAY_AGAIN} END;
CREATE TRIGGER split_left AFTER UPDATE OF key, project ON rec WHEN {_MOVED} AND ({_LEFT}) AND NOT {_HELD}
  BEGIN {_SAY_OLD_AGAIN} END;
CREATE TRIGGER split_in_held AFTER INSERT ON rec WHEN {_IN} AND {_HELD} BEGIN {_NOTE} END;
CREATE TRIGGER split_up_held AFTER UPDATE OF {_WATCHED} ON rec WHEN ({_UP}) AND {_HELD} BEGIN {_NOTE} END;
CREATE TRIGGER split_left_held AFTER UPDATE OF key, project ON rec WHEN {_MOVED} AND ({_LEFT}) AND {_HELD}
  BEGIN {_NOTE_OLD} END;
"""
