"""Ranking as pure functions: BM25 relevance, the score of a hit and its named parts, and the
re-ordering of same-topic records. `--explain` prints exactly the parts `score()` returns.

A hit's score is (relevance + context) × tier factor × heat factor × status factor:
* relevance is BM25 with an IDF that stays positive in small vaults; `b` follows the store and
  the query: short conversation turns and notes of uniform length want little length
  normalisation, long answers, notes beside long ones and long queries want much (`b_for`);
  date terms count like words;
* context is a share of the best relevance among the record's neighbours in its conversation
  (records of one `session`, in log order), so the turn that answers a question ranks with the
  turns that asked it;
* trust tiers break near-ties (chat 0.97 < normal 1.0 < evidence = correction 1.03), what an
  agent inferred yields to what was stated (× 0.98), and what was saved from outside the
  conversation — a tool's output, an import, another clone — to what was said in it (× 0.95);
* the heat factor is 1 + recency bonus × relative importance. The recency bonus is at most
  `ranking.recency_window` (10 %), shrinking with whole days since the record was last written,
  said again or recalled (`touch`); the relative importance is the record's importance over the
  default for its kind and tier (so 1 unless `--importance` was given; at most 2). It re-orders
  near-equals but never buries an old record that is the only strong match; current redlines
  never decay, and a cold record gets no bonus (nobody used it lately). (The lifecycle's own
  heat, which decides what a sweep cools, decays faster — `optmem.lifecycle`; ranking keeps the
  past findable.)
* the status factor lowers an old version: a superseded record ranks among the current ones by
  its own relevance × `ranking.superseded_factor` (0.75 — below the 0.97 × 0.98 / (1.2 × 1.03)
  that trust and heat can give or take, so a current record that matches as well always goes
  first), never as a tier below every current hit: its own words find it in any vault.
Hits are ordered in bands first (`view.band`), then by score; then, inside the top hits only (so
the set of hits is relevance's and the past stays found), a record at least a day newer goes above
an older one that matched largely the same query terms (`updates_first`) — readily when the
query asks for the present ("now", "currently", "现在", "目前" …), cautiously otherwise. Last, a
superseded record goes below the records that replaced it, when they are hits too
(`successors_first`): the current version of a fact ranks above its old ones.

Scoring only: what a query asks (its terms, the present or the past, its names) is
read once by `optmem.reading.query` and handed in; no word list lives here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

from optmem import view
from optmem.dates import PREFIX as DATE_PREFIX
from optmem.record import CORRECTION, Tier
from optmem.settings import Ranking
from optmem.value import NamedTuple, Value

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any

DAY = 86400.0
CV_UNIFORM, CV_SPREAD = 0.55, 0.85  # spreads of note lengths (std / mean) that get b_min / b_max
TURN_SHORT, TURN_LONG = 40.0, 150.0  # mean lengths (tokens) of conversation turns that get b_min / b_max
QUERY_SHORT, QUERY_LONG = 12, 24  # query terms: a question, up to a chat turn asked as a query
TIER_FACTOR: dict[int, float] = {Tier.CHAT: 0.97, Tier.NORMAL: 1.0, Tier.EVIDENCE: 1.03, Tier.REDLINE: 1.03}
INFERRED_FACTOR = 0.98  # what an agent concluded yields to what was said, on near-ties
# what was saved from outside the conversation — a tool's or web page's output, an import, another
# clone (`quarantine.secondhand`) — yields to what was said there, on near-ties; small, as trust
# tiers are: it re-orders near-equals, never buries the only strong match
SECONDHAND_FACTOR = 0.95


def idf(docs: int, df: int) -> float:
    """Inverse document frequency that stays positive however common the term, in every language
    (English drops its function words by a list, `reading.lexicon.STOPWORDS`). A count read a
    moment after the record count (another process appended in between) is taken as every record."""
    df = min(df, docs)
    return math.log(1 + (docs - df + 0.5) / (df + 0.5))


class Bm25(Value):
    k1: float = 1.2
    b: float = 0.75


def _between(x: float, lo: float, hi: float) -> float:
    return min(1.0, max(0.0, (x - lo) / (hi - lo)))


def b_for(cv: float, mean: float, turns: float, query_terms: int, settings: Ranking) -> float:
    """BM25's b — how much a long record is held back — for a store and a query.

    The store: notes, by the spread of their lengths (std / mean, `cv`: b_min for uniform ones,
    b_max for short notes beside long ones); conversation turns (the share `turns` of the
    records), by their mean length: b_min while they are short utterances (a longer turn says
    more, and is no less likely the answer), b_max as they grow into long answers. The query: the
    more terms it holds, the more a long record matches by its length alone — from `QUERY_SHORT`
    terms (a question) to `QUERY_LONG` (a chat turn asked as a query) b rises to b_max."""
    t = (1.0 - turns) * _between(cv, CV_UNIFORM, CV_SPREAD) + turns * _between(mean, TURN_SHORT, TURN_LONG)
    t += (1.0 - t) * _between(query_terms, QUERY_SHORT, QUERY_LONG)
    return settings.b_min + t * (settings.b_max - settings.b_min)


def bm25(
    tf: Mapping[str, int], dl: int, terms: Iterable[str], idfs: dict[str, float], avgdl: float, params: Bm25 = Bm25()
) -> float:
    """BM25 of one document (term counts `tf`, length `dl`) for the query `terms`."""
    score = 0.0
    k1, b = params.k1, params.b
    norm = k1 * (1 - b + b * dl / (avgdl or 1.0))
    for t in terms:
        f = tf.get(t, 0)
        if f:
            score += idfs[t] * f * (k1 + 1) / (f + norm)
    return score


def context_share(neighbours: Iterable[float], settings: Ranking) -> float:
    """What a record gains from its conversation: a share of its best neighbour's relevance."""
    return settings.context_share * max(neighbours, default=0.0)


def answer_lift(asked: float, question_length: int, answer_length: int, settings: Ranking) -> float:
    """What the turn after a question gains from it: a share of the question's relevance (that of
    its question sentences alone), scaled down when the answer is longer than the question's
    turn — a long reply says much besides its answer, a short one says the answer ("What spices
    did you use in the soup?" — "Some sage, for flavour.")."""
    return settings.answer_share * asked * min(1.0, question_length / max(answer_length, 1))


class Candidate(NamedTuple):
    """What the score of a hit depends on."""

    relevance: float
    context: float
    tier: int
    kind: str
    status: view.Status
    recency: float | None  # when it was last accessed (written, said again or recalled)
    importance: float = 1.0  # its importance over the default for its kind and tier
    inferred: bool = False  # concluded by an agent rather than stated
    was: view.Status | None = None  # a cold record: its status were it warm (the band it ranks in)
    secondhand: bool = False  # saved from outside the conversation (`quarantine.secondhand`)


class Parts(NamedTuple):
    """A hit's score and every part of it."""

    relevance: float
    context: float
    tier_factor: float
    recency_bonus: float
    age_days: int
    band: int
    status: view.Status
    score: float
    importance: float = 1.0
    heat_factor: float = 1.0
    status_factor: float = 1.0  # `ranking.superseded_factor` for an old version, else 1
    origin_factor: float = 1.0  # SECONDHAND_FACTOR for what came from outside the conversation, else 1

    def explain(self, **more: Any) -> dict[str, Any]:
        return {
            "score": round(self.score, 4),  # (what hits are sorted on, inside a band, before the re-ordering rules)
            "relevance": round(self.relevance, 4),
            "context": round(self.context, 4),
            "heat_factor": round(self.heat_factor, 4),
            "recency_bonus": round(self.recency_bonus, 4),
            "relative_importance": round(self.importance, 3),
            "age_days": self.age_days,
            "tier_factor": self.tier_factor,
            "status_factor": self.status_factor,
            "origin_factor": self.origin_factor,
            "band": str(view.BANDS[self.band]),
            "status": self.status.value,
            **more,
        }


def tier_factor(tier: int, kind: str) -> float:
    """Trust breaks near-ties; a correction counts like evidence."""
    factor = TIER_FACTOR[tier]  # (an IntEnum's key is found by its int: no `Tier(tier)`, ~5,000 instructions a hit)
    return max(factor, TIER_FACTOR[Tier.EVIDENCE]) if kind == CORRECTION else factor


def score(c: Candidate, now: float, settings: Ranking, *, past: bool = False) -> Parts:
    """The score of one candidate and its parts (see the module docstring). A query that asks
    what something used to be (`past`) gives no recency bonus: the newer version has no claim."""
    cold = c.status == view.Status.COLD
    # a cold record gets no recency bonus (nobody used it lately): on equal relevance a warm
    # record goes first
    window = 0.0 if past or cold else settings.recency_window
    band = view.band(c.status, c.tier, c.was)
    age_days = max(0, int((now - (c.recency if c.recency is not None else 0.0)) // DAY))
    # redlines never decay; everything else gets at most the window, shrinking with whole days
    bonus = window if band == 0 else window / (1 + age_days / 30)
    factor = tier_factor(c.tier, c.kind) * (INFERRED_FACTOR if c.inferred else 1.0)
    importance = min(2.0, max(0.0, c.importance))
    heat = 1 + bonus * importance
    # an old version (a cold one too: what it was when it cooled) ranks by its own relevance, lowered
    old = (c.was if cold and c.was is not None else c.status) in (view.Status.SUPERSEDED, view.Status.REMOVED)
    status = settings.superseded_factor if old else 1.0
    origin = SECONDHAND_FACTOR if c.secondhand else 1.0
    return Parts(
        c.relevance,
        c.context,
        factor,
        bonus,
        age_days,
        band,
        c.status,
        (c.relevance + c.context) * factor * heat * status * origin,
        importance,
        heat,
        status,
        origin,
    )


class Ranked(Value):
    """A hit in ranking order, and whose place it took (the newer-first rule: the record it updates)."""

    at: int  # index into the list given to `updates_first`
    over: str | None


class Match(NamedTuple):
    """What the newer-first rule compares: when it was last said, how well it scored, which
    query terms it matched, and what it is and says (its key, its values)."""

    id: str
    ts: float | None
    band: int
    score: float
    matched: frozenset[str]
    may_update: str | None = None  # the record the write gate saw it update (possible_update, kept both)
    covers: frozenset[str] = frozenset()  # the query terms its text holds once cue words are out of it
    replaced: bool = False  # it is superseded: an old version is no newer value of anything
    key: str | None = None  # the key it gives a value of
    values: frozenset[str] | None = None  # the values it states (`identifiers.values`); None: read from `text`
    note: bool = False  # a note, not a conversation turn
    text: str = ""  # its text: its values are read from it when a comparison needs them (`values_of`)
    follows: str | None = None  # the note it was found from as its newer value (`search._followers`)
    tool: bool = False  # found in a tool's output (origin `tool`): never a newer value of what was said
    # the query terms it stands for through another word of an attribute the query names
    # (`reading.attributes`: "MacBook" for "laptop"), which it does not hold
    kin: frozenset[str] = frozenset()


def overlap(a: frozenset[str], b: frozenset[str], idfs: dict[str, float]) -> float:
    """IDF-weighted overlap (Jaccard) of two sets of matched query terms."""
    union = a | b
    total = sum(idfs.get(t, 0.0) for t in union)
    return sum(idfs.get(t, 0.0) for t in a & b) / total if total else 0.0


def updates_first(
    top: list[Match],
    idfs: dict[str, float],
    cue: bool,
    settings: Ranking,
    names: frozenset[str] = frozenset(),
    when: frozenset[str] = frozenset(),
    question: bool = True,
    past: bool = False,
    values_of: Callable[[str], frozenset[str]] | None = None,
    changed: Callable[[str], bool] | None = None,
    about: Callable[[str, str], bool] | None = None,
    subject: Callable[[Match, Match], float] | None = None,
) -> list[Ranked]:
    """Re-order the top hits only: a record a day newer (or newer at all, when the key or the
    write gate links the two) goes above an older one of its band that states the same attribute
    of the same subject — the way a person reads "the backend port is 9090" after "the backend port is 8080":

    * the same key, or the write gate saw it update the older one (its `may_update`) and it holds
      every query term the older matched: it goes above when it scores at least `update_ratio`
      of it;
    * or the same subject words and a value the older does not state (a number, a name, an
      identifier; in Chinese a character of no function: `identifiers.values`). Between two
      notes, for a query that asks one thing (`question`: `reading.query.asks_something`), part
      of the older's subject will do (the newer matched at least update_overlap_note of what the
      older matched, by IDF: `held`; a score ≥ update_ratio_note of the older's): notes state
      facts, and a newer one often names its subject in fewer words ("orders backend is on 9090
      now"; "appointment pushed to March 21" after "GP appointment booked for March 14"); "maybe
      try port 8081" holds only "port" of "the orders backend listens on port 9090". Else
      largely the same query terms (update_overlap with an update cue in the query, `cue`,
      otherwise update_overlap_plain; a score ≥ update_ratio, update_ratio_plain): conversation
      turns speak of things in passing. Records that merely share words — the newer states no
      value the older lacks ("the support group was so helpful" after "I went to the support
      group") — stay in relevance's order.
    * or, between two notes, for a question, the notes' own words: the newer holds at least
      update_overlap_text of the older's words, weighed by their rarity (`subject(older, newer)`:
      `search._Subjects`), and puts a value in place of one of the older's (`replaces`) or says
      it changes something — whatever the scores and the query terms each matched: the question's
      words split between them ("contact" — "Contacts: Acuvue Oasys -2.75"; "prescription" —
      "New prescription: left -3.00, right -3.25"), or the older repeats them and outscores the
      newer many times over ("订单 topic 有 12 个分区" — "order-events 分区数扩到了 48").

    The cue words themselves (`when`: `reading.cues.cue_terms`) do not count in the overlap. A
    record that lacks a name of the query (`names`: `reading.query.names_in`) the older one
    matched updates nothing of it: Bob's new phone number is no update of Alice's; nor does a
    superseded record (`replaced`), however new: it is an old version itself.

    Between two notes, one that says it changes something (`changed`: "renamed to main", "换了")
    gives a new value though no capital marks it. A record that names the query's attribute in
    another word of it (`kin`) holds the query's word for it. A note found from the older one as its newer
    value (`follows`: `search._followers`) goes above it.

    A record that goes above one it updates takes along the newer values of itself placed before
    it: "dropped duolingo, doing italki lessons" stays above "Spanish: Duolingo every morning"
    when that one goes above the older "Spanish podcast: …".

    A query that asks for the past (`past`) turns the rule round: the older value goes above the
    newer one that updates it — "what did the team chat run on before Mattermost" names the
    newer value, and asks for the one it replaced — when the older is about what the newer, or
    the question, names (`about(older text, newer text)`: `identifiers.names_its_subject`):
    "Database is Postgres 16; migrations live in backend/migrations" shares "backend" with "The
    backend listens on port 9090", but is about the database, and stays below it."""

    def what(matched: frozenset[str]) -> frozenset[str]:
        # the terms that say *what*: not the cue words, nor the date terms (two records of one
        # month share its term, not a topic)
        return frozenset(t for t in matched - when if not t.startswith(DATE_PREFIX))

    cue_characters = frozenset(c for w in when if not w.isascii() for c in w)  # 现 and 在 of 现在
    # a query that asks for now reads the newer record as an update readily; otherwise cautiously
    theta = settings.update_overlap if cue else settings.update_overlap_plain
    ratio = settings.update_ratio if cue else settings.update_ratio_plain

    read: dict[str, frozenset[str]] = {}

    def vals(x: Match) -> frozenset[str]:
        # (read once per hit, and only for the pairs the cheaper tests leave: a tenth of a search's time)
        if x.values is not None:
            return x.values
        if x.id not in read:
            read[x.id] = values_of(x.text) if values_of else frozenset()
        return read[x.id]

    told: dict[str, bool] = {}

    def says(x: Match) -> bool:
        # whether a note says it replaces a value ("renamed to main", "is at the library café now"):
        # its new value may be a word no capital marks
        if x.id not in told:
            told[x.id] = changed(x.text) if changed else False
        return told[x.id]

    def updates(m: Match, o: Match) -> bool:
        """Whether the newer `m` gives another value of what the older `o` states."""
        if m.kin or o.kin:
            # a record stating the attribute the query names in another word of it (`kin`) holds
            # the query's word for it: "IT swapped me onto a MacBook" states the "laptop"
            m = m._replace(matched=m.matched | m.kin)
            o = o._replace(matched=o.matched | o.kin)
        # newer by a day at least — or by any time when the key or the write gate links the two:
        # "后端端口改成 9090 了" a minute after "后端端口是 8080" (the gate saw it) is its new value,
        # while two records of one day that merely share the query's word ("本周五冻结端口配置")
        # are not (within a conversation, a turn speaks of things in passing)
        later = (m.ts or 0.0) - (o.ts or 0.0)
        keyed = m.key is not None and m.key == o.key
        followed = m.follows is not None and m.follows == o.id
        gated = m.may_update is not None and m.may_update == o.id
        linked = keyed or followed or gated
        # (written in the same second, a record the gate or the follower links to the other is
        # the newer one all the same: the link was made after the other was there)
        if not (o.band == m.band and not m.replaced and (later > 0 or (later == 0 and (followed or gated)))):
            return False
        if m.tool and not o.tool:
            return False  # a web page's or tool's words do not replace a statement (they rank below it)
        if later < DAY and not linked:
            return False
        if any(t.startswith(DATE_PREFIX) for t in o.matched - m.matched):
            return False  # the older holds a date the query names: the query asks for that time
        # a name of the query the older matched and the newer lacks: the newer is about
        # another subject when it names one the older does not ("Bob's phone number" for
        # "Alice's phone"); a note that names nothing new ("Prod cluster upgrade done, on
        # 1.29" after "Prod cluster is running Kubernetes 1.26") may still be its new value
        named = (o.matched & names) <= m.matched or (
            m.note and o.note and not any(_is_word(v) for v in vals(m) - vals(o))
        )
        if not named:
            return False
        # the same key, or the gate's guess (when the newer one holds every query term the
        # older matched, its cue words aside: "我现在养了" holds 我养 — then the query does
        # not ask about the part that changed)
        if followed:
            return True  # found from the older as its newer value (a value it does not state)
        if linked and (keyed or what(o.matched) <= m.covers):
            return m.score >= settings.update_ratio * o.score
        shared = overlap(what(m.matched), what(o.matched), idfs)
        return (
            (
                (m.score >= ratio * o.score and shared >= theta)
                or (
                    m.note
                    and o.note
                    and question
                    and m.score >= settings.update_ratio_note * o.score
                    and held(what(o.matched) - cue_characters, m.matched, idfs) >= settings.update_overlap_note
                )
            )
            and (bool(vals(m) - vals(o)) or (m.note and o.note and says(m)))
            or (
                m.note
                and o.note
                and question
                and settings.update_said
                and m.score >= settings.update_ratio_note * o.score
                and says(m)
                and not says(o)
                and replaces(vals(m), vals(o))
            )
            or (
                m.note
                and o.note
                and question
                and subject is not None
                and settings.update_overlap_text > 0
                and (replaces(vals(m), vals(o)) or says(m))
                and subject(o, m) >= settings.update_overlap_text
            )
        )

    out: list[Ranked] = []
    for i, m in enumerate(top):
        pos, over = len(out), None
        for j, placed in enumerate(out):
            o = top[placed.at]
            if past:
                # the older value, asked for, goes above the newer note that updates it when it
                # is as much about the query (conversation turns keep relevance's order)
                if (
                    m.note
                    and o.note
                    and m.score >= settings.update_ratio_note * o.score
                    and updates(o, m)
                    and (about is None or about(m.text, o.text))
                ):
                    pos = j
                    break
            elif updates(m, o):
                pos, over = j, o.id
                break
        out.insert(pos, Ranked(i, over))
        if not past and over is not None:
            # its newer values placed before it stay above it
            newer = [x for x in out[pos + 1 :] if updates(top[x.at], m)]
            if newer:
                rest = [x for x in out[pos + 1 :] if x not in newer]
                out[pos:] = [Ranked(x.at, m.id) for x in newer] + [out[pos]] + rest
    return out


def replaces(newer: frozenset[str], older: frozenset[str]) -> bool:
    """Whether a newer record states a value in place of one the older states: a value the older
    lacks, of the shape of one the older holds and the newer lacks — a number for a number, a word
    (a name, an identifier) for a word. A Chinese character is no shape: every Chinese statement
    holds characters the other lacks."""
    return bool({_shape(v) for v in newer - older} & {_shape(v) for v in older - newer} - {None})


def replaces_number(newer: frozenset[str], older: frozenset[str]) -> bool:
    """Whether a newer record states a number in place of one the older states: a number the older
    lacks, where the older holds one the newer lacks ("max_connections=500" after "… 是 200")."""
    return any(_shape(v) == "number" for v in newer - older) and any(_shape(v) == "number" for v in older - newer)


def _shape(value: str) -> str | None:
    return "number" if value.startswith("#") else ("word" if value.isascii() else None)


def held(older: frozenset[str], newer: frozenset[str], idfs: dict[str, float]) -> float:
    """The share of what an older record matched (IDF-weighted) that a newer one matched too: how
    much of its subject the newer names ("orders backend" of "the orders backend listens on port
    8080" in "orders backend is on 9090 now"; "port" alone, of "maybe try port 8081", is little)."""
    total = sum(idfs.get(t, 0.0) for t in older)
    return sum(idfs.get(t, 0.0) for t in older & newer) / total if total else 0.0


def _is_word(value: str) -> bool:
    """A value that is a word (a name, an identifier), not a number nor a Chinese character."""
    return value.isascii() and not value.startswith("#")


def successors_first(ids: list[str], later: dict[str, frozenset[str]]) -> list[int]:
    """The order of `ids` (positions into it) in which every record comes after each record that
    replaced it (`later`: id → the ids of its later versions — the record that superseded it, that
    one's successor, … — of which those in `ids` count): a superseded record that ranked above its
    successor goes right after it; nothing else moves. The guarantee of the current version first
    (SPEC §5, property 1), whatever scores and the newer-first rule gave."""
    present = set(ids)
    after = [(later.get(rid, frozenset()) & present) - {rid} for rid in ids]
    out: list[int] = []
    placed: set[str] = set()
    held: list[int] = []
    for i, rid in enumerate(ids):
        if not after[i] <= placed:
            held.append(i)
            continue
        out.append(i)
        placed.add(rid)
        released = True
        while released and held:  # the held records whose successors are all placed now, in order
            released = False
            for j in list(held):
                if after[j] <= placed:
                    held.remove(j)
                    out.append(j)
                    placed.add(ids[j])
                    released = True
    return out + held  # (a cycle of versions — none is written — keeps its order)
