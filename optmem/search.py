"""Ranked lexical search over the log, with the effective view applied.

How a query is answered:

0. The query is read once (`reading.query.read`): its terms, what it asks (the present, the
   past), the names it writes — an `Intent` every later
   stage reads, never the raw text again.
1. The query's terms (words, CJK bigrams, a lone CJK character) select candidates from the FTS5
   index — the best by FTS5's own BM25 order, plus every matching redline — with the filters
   (domain, project, kind, tag, time, status) applied exactly, in SQL (`candidates.choose`), and a
   few records holding other words of the attributes the query names (`candidates.related`). A plain
   search weighs the cold records that match best too, and keeps those that match at least as
   well as the best warm hit (`_best_cold`).
2. Each candidate is re-tokenised and scored by `ranking.score` ((BM25 relevance + a share of
   its best session neighbour's — or, when more, of what the turn before it asked, `_Answers`;
   and, in a record holding none of the query's words for an attribute it names, a share of what
   another word of that attribute weighs, `_kin_relevance`)
   × tier × recency bonus × the status factor of an old version, in bands by status); the most
   relevant candidates bring their session neighbours along, and the most relevant notes the
   newer note that reads as their new value though it shares no word with the query
   (`_followers`, `_kin_followers`: it stands in for the note it follows) — `_score`; a hit that matches no word,
   only through its session, is kept below the turn it borrowed from (`_kept_below`).
3. Hits are sorted by band, score, tier, newer, id; then `ranking.updates_first` puts a newer
   record above an older one it updates, inside the top hits, and `ranking.successors_first` a
   superseded record below the records that replaced it — `_order`.
"""

from __future__ import annotations

from collections.abc import Callable

from optmem import candidates, clock, dates, ranking, view
from optmem import text as textmod
from optmem.errors import UsageError, quote
from optmem.index import Filters, Index, Row, is_guess, make_filters, match_all, match_any
from optmem.quarantine import secondhand
from optmem.reading import cues, questions
from optmem.reading.attributes import attribute_tokens
from optmem.reading.query import Intent, lone_characters, read, with_lone, with_terms
from optmem.record import COMMIT, HANDOFF, HANDS, MEMORY, MERGED, Record, Tier, hand
from optmem.settings import MAX_COUNT, Ranking
from optmem.value import NamedTuple, Value
from optmem.vault import Vault

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Filters", "Query", "SearchResult", "make_filters", "ranked", "search"]


TAGS_SHOWN = 20  # the most used tags a warning about an unknown --tag lists
FOLLOW_POOL = 10  # the newer notes sharing most words with a matched note that are read (`_followers`)


class Query(Value):
    """One search: what it asks (read once: `reading.query.read`), how many hits, the filters, now."""

    intent: Intent
    limit: int = 10
    filters: Filters = Filters()
    explain: bool = False
    now: float = 0.0
    cold_best: bool = False  # weigh cold records too, and keep those that match best (`_best_cold`)
    # the vault's redlines are rules (else unverified notes: `optmem.trust`); None: the vault is
    # asked when a redline is scored (`_trusted`: most searches score none, and skip the look-up)
    trusted: bool | None = True

    @property
    def text(self) -> str:
        """The query as given."""
        return self.intent.text

    @property
    def terms(self) -> list[str]:
        """Its search terms (`Intent.terms`)."""
        return self.intent.terms


class SearchResult(Value):
    query: str
    hits: list[view.RecordView]
    total: int
    warnings: list[str] = []
    # the hits shown that match none of the query's words: turns beside a match in its conversation,
    # found as its context (`relevance` 0); and how many records match the words themselves
    context_hits: int = 0
    matching: int | None = None  # None: all of `total`
    cold_matches: int = 0  # cold records that match too but were left out (they match less well
    #                          than the best warm hit); past `candidates.COUNT_BUDGET` term matches, those
    #                          among the candidates (a lower bound)
    forgotten_matches: int = 0  # when fewer hits than asked for: how many forgotten records match too
    held_matches: int = 0  # … and how many held in quarantine (`optmem quarantine`)

    def to_json(self, *, show_unsafe: bool = False) -> dict[str, Any]:
        return {
            "query": self.query,
            "hits": [h.hit(show_unsafe=show_unsafe) for h in self.hits],
            "total": self.total,
            "matching": self.total if self.matching is None else self.matching,
            "context_hits": self.context_hits,
            "cold_matches": self.cold_matches,
            "forgotten_matches": self.forgotten_matches,
            "held_matches": self.held_matches,
        }


def search(
    vault: Vault,
    query: str,
    *,
    limit: int = 10,
    filters: Filters | None = None,
    explain: bool = False,
    progress: Any = None,
) -> SearchResult:
    """Ranked hits for `query` (see the module docstring for how they are ordered)."""
    if query is None or not query.strip():
        raise UsageError("QUERY is empty; give words to search for (Chinese or English)")
    if limit < 1:
        raise UsageError("--limit must be at least 1")
    limit = min(limit, MAX_COUNT)  # more than any store holds: all of them
    now = clock.now().timestamp()
    from optmem.follow import open_followed

    # hot files edited outside optmem: journalled before the view is read
    with open_followed(vault, progress) as idx:
        q = Query(read(query, now, idx.vault.settings.ranking), limit, filters or Filters(), explain, now)
        # a plain search weighs cold records too (`_best_cold`) — in a vault that has any
        q = q._replace(cold_best=not q.filters.include_cold and not q.filters.current and idx.has_cold(), trusted=None)
        warnings = idx.warnings()
        if not q.terms:
            warnings.append(
                f"{quote(query)} has nothing to search for: words, numbers and Chinese characters "
                "are indexed, emoji, symbols and punctuation are not — add a word"
            )
        df = idx.doc_freq(q.terms) if q.terms else {}  # once, for the ranking and the hidden counts
        result = ranked(idx, q, df)._replace(warnings=warnings)
        result = result._replace(hits=guessed(idx, result.hits, now))  # (a guess never reads as a fact)
        if not result.hits:  # a typo in a filter must not read as "nothing about that"
            f = q.filters
            said = unknown_filters(idx, kind=f.kind, domains=f.domains, project=f.project, tag=f.tag)
            result = result._replace(warnings=[*result.warnings, *said])
        f = q.filters
        if len(result.hits) < q.limit and not f.current and not (f.include_forgotten and f.include_held):
            # the past stays findable: say so when forgotten or held records match too (a page not
            # filled; the cold ones `_ranked` counts) — each of what the search leaves out
            found = [t for t in q.terms if df[t]]
            match = match_any(found) if found else None
            result = result._replace(
                forgotten_matches=0
                if f.include_forgotten
                else candidates.hidden_matches(idx, f, q.now, match, view.Status.FORGOTTEN),
                held_matches=0 if f.include_held else candidates.hidden_matches(idx, f, q.now, match, view.Status.HELD),
            )
        return result


def guessed(idx: Index, hits: list[view.RecordView], now: float) -> list[view.RecordView]:
    """The hits with the write gate's guesses that stand about them (`Index.guesses`, as `get`
    finds them), so every surface marks them (`view.guess_notes`)."""
    live = {h.record.id: h.record.extra.get("may_update") for h in hits if h.status in view.LIVE}
    live = {rid: old if isinstance(old, str) else None for rid, old in live.items()}
    found = idx.guesses(live, now)
    return [h._replace(**found[h.record.id]) if h.record.id in found else h for h in hits]


def unknown_filters(
    idx: Index,
    *,
    kind: str | None = None,
    domains: tuple[str, ...] | list[str] = (),
    project: str | None = None,
    tag: str | None = None,
) -> list[str]:
    """What a reader that found nothing says of its filters that no record has — a typo in
    --kind, --domain, --project or --tag must not read as "nothing about that" — naming the
    values the vault has (`search` and `context` say it alike)."""
    out = []
    for column, wanted in (("kind", (kind,)), ("domain", tuple(domains)), ("project", (project,))):
        if not any(w is not None for w in wanted):
            continue
        known = idx.values(column)  # (once a column: a query that lists them all)
        unknown = [w for w in wanted if w is not None and w not in known]
        if unknown:
            out.append(
                f"no record has {column} {', '.join(map(quote, unknown))}; the vault's "
                f"{column}s: {', '.join(known) or '(none)'}"
            )
    if tag is not None and not idx.has_tag(tag):
        tags = idx.tags(TAGS_SHOWN)
        out.append(f"no record has tag {quote(tag)}; the vault's most used tags: {', '.join(tags) or '(none)'}")
    return out


def ranked(idx: Index, q: Query, df: dict[str, int] | None = None) -> SearchResult:
    """The ranked hits for a query on an open index (what `search` runs); `df`: the documents
    holding each of its terms, when the caller looked them up already."""
    settings = idx.vault.settings.ranking
    if df is None:
        df = idx.doc_freq(q.terms) if q.terms else {}
    lone = lone_characters(q.terms, df) if settings.cjk_lone and not q.text.isascii() else []
    if lone:  # a Chinese pair no record holds: its characters search (我现在多重 → 重 of 体重)
        q = q._replace(intent=with_lone(q.intent, lone))
        df = df | idx.doc_freq(lone)
    kin = q.intent.kin
    if kin:  # the other words of the attributes it names: their record counts, in the same way
        df = df | idx.doc_freq([t for t in attribute_tokens(kin) if t not in df])
    found = [t for t in q.terms if df[t]]
    related = kin and any(all(df[t] for t in p) for k in kin for p in k.phrases)
    result = _ranked(idx, q, found, df, settings) if found or related else SearchResult(q.text, [], 0)
    if result.hits or not settings.cjk_fallback:
        return result
    # a Chinese query whose pairs occur only outside its filters (or whose characters are all of
    # grammar): the records within them that hold every one of its characters, ranked by them
    chars = q.intent.characters
    df = idx.doc_freq(chars) if len(chars) > 1 else {}
    if not df or not all(df.values()):
        return result
    return _ranked(idx, q._replace(intent=with_terms(q.intent, chars)), chars, df, settings, match_all(chars))


def _ranked(
    idx: Index, q: Query, found: list[str], df: dict[str, int], settings: Ranking, match: str | None = None
) -> SearchResult:
    rows, total, replaced = (
        candidates.choose(
            idx, found, df, settings, filters=q.filters, now=q.now, limit=q.limit, cold_best=q.cold_best, match=match
        )
        if found
        else ({}, 0, [])
    )
    if q.intent.kin and settings.attribute_candidates:
        # a few records holding the other words of an attribute the query names ("teeth": dentist)
        for n, row in candidates.related(
            idx, [p for k in q.intent.kin for p in k.phrases], df, settings, filters=q.filters, now=q.now
        ).items():
            rows.setdefault(n, row)
    if not rows and not replaced:
        return SearchResult(q.text, [], 0)
    scored, corpus = _score(idx, q, rows, df, settings, replaced)
    context_only = {s.row.n for s in scored if s.parts.relevance <= 0}
    admitted = left = 0
    if q.cold_best:
        scored, left = _best_cold(idx, scored)
        admitted = sum(s.parts.status == view.Status.COLD for s in scored)
    hits, found_all, context_all = _order(scored, q, corpus, settings, _later_versions(idx, scored), idx)
    context_hits = sum(1 for h in hits if h.line in context_only)
    if hits:  # the hits whose lines the write gate passed are shown without a scan (`Index.passed`)
        shown = {s.row.n: s.row for s in scored}
        passed = idx.passed([shown[h.line] for h in hits])
        hits = [h._replace(passed=True) if h.line in passed else h for h in hits]
        hits = [  # a merged record's facts a newer value of their key replaced (`Index.outdated_facts`)
            h._replace(outdated=idx.outdated_facts(shown[h.line], h.record)) if h.record.kind == MERGED else h
            for h in hits
        ]
    if q.cold_best:
        # the cold records left out are counted (a footer says how to see them): exactly while a
        # filtered count is cheap, else those among the candidates
        exact = sum(df[t] for t in found) <= candidates.COUNT_BUDGET
        left = (
            candidates.hidden_matches(idx, q.filters, q.now, match or match_any(found), view.Status.COLD) - admitted
            if exact
            else left
        )
    by_words = len(hits) - context_hits  # the hits shown that match the words
    return SearchResult(
        q.text,
        hits,
        found_all if total < 0 else max(total + admitted, len(hits)),
        cold_matches=max(0, left),
        context_hits=context_hits,
        matching=found_all - context_all if total < 0 else max(total + admitted, by_words),
    )


def _best_cold(idx: Index, scored: list[_Scored]) -> tuple[list[_Scored], int]:
    """The cold tier's rule for a plain search: a cold record is kept when it matches at least as
    well as the best warm hit (relevance + context: what its words, and its conversation's, give
    it — neither its status nor how recently it was used), or when nothing warm matches — unless
    it is an old version of a fact whose current version is a warm hit (that one answers for it).
    The others stay out. (The kept list, and how many cold records it left out.)"""
    cold = [s for s in scored if s.parts.status == view.Status.COLD]
    if not cold:
        return scored, 0
    warm = [s for s in scored if s.parts.status != view.Status.COLD]
    best = max((s.parts.relevance + s.parts.context for s in warm), default=0.0)
    ids = {s.row.id for s in warm}
    known: dict[str, Row] = {}
    out = {
        s.row.n
        for s in cold
        if s.parts.relevance + s.parts.context < best
        or (s.row.superseded_by and idx.current_version(s.row, known).id in ids)
    }
    return [s for s in scored if s.row.n not in out], len(out)


def _later_versions(idx: Index, scored: list[_Scored]) -> dict[str, frozenset[str]]:
    """For each superseded hit, the records that replaced it: its successor, that one's, … to
    the current version (what `ranking.successors_first` keeps above it). A chain is walked once
    however many of its versions matched."""
    chains: dict[str, tuple[str, ...]] = {}  # id → its later versions, nearest first

    def chain(row: Row) -> tuple[str, ...]:
        path: list[Row] = []
        seen = {row.id}
        while row.id not in chains and row.superseded_by and row.superseded_by not in seen:
            newer = idx.by_id(row.superseded_by)
            if newer is None:
                break
            path.append(row)
            seen.add(newer.id)
            row = newer
        end = chains.get(row.id, ())
        for older in reversed(path):  # from the nearest to the end back to the record asked about
            end = chains[older.id] = (older.superseded_by or "", *end)
        return end

    return {s.row.id: frozenset(ids) for s in scored if s.row.superseded_by and (ids := chain(s.row))}


class _Corpus(Value):
    """What BM25 needs of the whole index for one query."""

    idfs: dict[str, float]
    avgdl: float
    params: ranking.Bm25
    when: frozenset[str] = frozenset()  # the query's present-asking words, when it has others too
    note_idfs: dict[str, float] | None = None  # for a note, when a question about the past names a landmark
    alone_idfs: dict[str, float] | None = None  # … for a note that holds only the landmark (`LANDMARK_ALONE`)
    weighed: frozenset[str] = frozenset()  # every term BM25 weighs (`idfs`'s, at least): what a record is asked for
    kin: tuple[_Kin, ...] = ()  # the attributes the query names, their other words weighed (`_kin`)


class _Kin(NamedTuple):
    """An attribute the query names (`reading.attributes.Kin`), its other words with their weight."""

    group: str
    asked: frozenset[str]  # the query's terms that name it: a record holding one is scored by them
    phrases: tuple[tuple[tuple[str, ...], float], ...]  # (a term's tokens, its weight)


LANDMARK_ALONE = 0.1  # what a note matching only a past question's landmark keeps of its weight


def _corpus(idx: Index, q: Query, df: dict[str, int], settings: Ranking) -> _Corpus:
    docs, mean, cv, turns = idx.lengths()
    idfs = {t: ranking.idf(docs, df[t]) * (settings.cjk_unigram if t in q.intent.lone else 1.0) for t in q.terms}
    chars = [c for c in q.intent.characters if c not in idfs] if settings.cjk_unigram else []
    if chars:
        # the single characters of a Chinese query count a little too (they choose no records):
        # a record holding all of them wins where bigrams alone tie or mislead — 前端端口's 端端
        # spans two words and matches 后端端口
        idfs.update({c: settings.cjk_unigram * ranking.idf(docs, n) for c, n in idx.doc_freq(chars).items() if n})
    words = sum(1 for t in q.terms if not t.startswith(dates.PREFIX))
    b = ranking.b_for(cv, mean, turns, words, settings)
    # a question about the past names what came after the value it asks for ("before Fastmail"):
    # in a note, a landmark, no part of the subject — it selects the note, and weighs nothing; a
    # conversation turn that names it relates two events ("I got the Instant Pot before the Air
    # Fryer") and keeps its weight
    landmarks = {t: 0.0 for t in q.intent.after if t in idfs}
    note_idfs = {**idfs, **landmarks} if landmarks else None
    alone = {t: w * LANDMARK_ALONE for t, w in idfs.items()} if landmarks else None
    kin = _kin(q, df, docs, idfs, settings)
    weighed = frozenset(idfs).union(*(p for k in kin for p, _ in k.phrases))
    return _Corpus(idfs, mean, ranking.Bm25(settings.k1, b), q.intent.when, note_idfs, alone, weighed, kin)


def _kin(q: Query, df: dict[str, int], docs: int, idfs: dict[str, float], settings: Ranking) -> tuple[_Kin, ...]:
    """The other words of the attributes the query names, each weighed `attribute_share` of the
    lesser of its own idf (that of its rarest token: a term of several words is held by no more
    records) and what the query's name of the attribute weighs (its words' idfs: "cell provider"
    both): well below the question's own words."""
    out = []
    for k in q.intent.kin:
        asked = max((sum(idfs.get(t, 0.0) for t in name) for name in k.names), default=0.0)
        phrases = tuple(
            (p, settings.attribute_share * min(asked, ranking.idf(docs, min(df[t] for t in p))))
            for p in k.phrases
            if all(df.get(t) for t in p)
        )
        if phrases and asked:
            out.append(_Kin(k.group, k.asked, phrases))
    return tuple(out)


class _Relevance(NamedTuple):
    row: Row
    relevance: float  # BM25
    matched: frozenset[str]  # the query terms it holds
    length: int  # its number of tokens
    read: Callable[[Row], Record]  # (`Index.record`: its line is read only when its text is asked for)
    kin: tuple[str, ...] = ()  # the attributes it matched through their other words (`_Kin`)

    @property
    def record(self) -> Record:
        return self.read(self.row)


def _relevance(idx: Index, q: Query, row: Row, corpus: _Corpus) -> _Relevance:
    """The BM25 relevance of one row, with what it rests on. A record that matched nothing but
    the words asking for the present ("now", "现在") is not relevant: they say *when*, not *what*
    ("where does Alice live now" is not about everything said "now") — beside other matched terms
    they count ("my current road bike" states a value)."""
    toks = idx.tokens(row)  # (as the index keeps them: the line is not read)
    held = corpus.weighed.intersection(toks)  # (the few weighed terms it holds: no set of all its tokens)
    matched = frozenset(t for t in q.terms if t in held)
    if corpus.when and matched and matched <= corpus.when:
        return _Relevance(row, 0.0, matched, len(toks), idx.record)
    if corpus.note_idfs is not None and _is_note(row):
        if any(corpus.note_idfs.get(t) for t in matched):
            corpus = corpus._replace(idfs=corpus.note_idfs)
        else:  # a note holding the landmark alone is still found, below every note of the subject
            corpus = corpus._replace(idfs=corpus.alone_idfs)
    relevance = _bm25(toks, len(toks), corpus, held)
    # (a redline ranks above every hit when the question's words match it: another word of an
    # attribute does not make it match — "生产环境的端口变更必须先在 staging 验证" is no answer to
    # "backend port")
    if corpus.kin and len(held) > len(matched) and row.tier != Tier.REDLINE:
        more, kin = _kin_relevance(held, len(toks), corpus)
        return _Relevance(row, relevance + more, matched, len(toks), idx.record, kin)
    return _Relevance(row, relevance, matched, len(toks), idx.record)


def _kin_relevance(held: frozenset[str], length: int, corpus: _Corpus) -> tuple[float, tuple[str, ...]]:
    """What a record gains from the other words of the attributes the query names (`_Kin`): for
    each attribute none of whose question words it holds, its best-weighed term it holds, counted
    once — and which attributes it matched so."""
    gained, kin = 0.0, []
    for k in corpus.kin:
        if not held.isdisjoint(k.asked):
            continue  # it holds the question's own word for it: scored by that
        best = max((w for p, w in k.phrases if held.issuperset(p)), default=0.0)
        if best:
            gained += ranking.bm25({k.group: 1}, length, (k.group,), {k.group: best}, corpus.avgdl, corpus.params)
            kin.append(k.group)
    return gained, tuple(kin)


def _bm25(toks: list[str], length: int, corpus: _Corpus, held: frozenset[str] | None = None) -> float:
    # (the query's terms counted alone: a Counter of every token cost ~4x as much, ~135 a search;
    # `held`: the weighed terms among the tokens, when known — only those are counted)
    tf = {t: toks.count(t) for t in corpus.idfs if held is None or t in held}
    return ranking.bm25(tf, length, corpus.idfs, corpus.idfs, corpus.avgdl, corpus.params)


class _Answers:
    """The questions asked in the candidates' conversations, and what the turn after each gains
    from it (`ranking.answer_lift`): a turn with question sentences lends the next turn of its
    session (in its domain) their relevance — computed with the whole turn's length, so never
    more than the turn's own —, unless they matched only the words asking for the present (as a
    record's own relevance, `_relevance`)."""

    def __init__(
        self, q: Query, seen: dict[int, _Relevance], rows: dict[int, Row], corpus: _Corpus, settings: Ranking
    ) -> None:
        self.settings = settings
        self.asked: dict[tuple[str, str, int], tuple[float, int, str]] = {}
        if not settings.answer_share:
            return
        terms = frozenset(q.terms)
        placed = {(row.domain, row.session, row.spos) for row in rows.values() if row.session is not None}
        for n, row in rows.items():
            rel = seen[n]
            if (
                row.session is None
                or row.spos is None
                or rel.relevance <= 0
                or (row.domain, row.session, row.spos + 1) not in placed
            ):  # no answer to lend to
                continue
            if not questions.may_ask(rel.record.text):
                continue
            folded = textmod.fold(rel.record.text)
            asks = questions.questions(folded)
            toks = textmod.tokens(asks, folded=True) if asks else []
            matched = terms.intersection(toks)
            if matched and _holds_its_answer(folded, matched):
                continue
            if matched and not (corpus.when and matched <= corpus.when):
                place = (row.domain, row.session, row.spos)
                self.asked[place] = (_bm25(toks, rel.length, corpus), rel.length, row.id)

    def of(self, row: Row, length: int) -> tuple[float, str | None]:
        """(what a turn of `length` tokens gains as the answer to the turn before it, that turn's id)."""
        if row.session is None or row.spos is None:
            return 0.0, None
        question = self.asked.get((row.domain, row.session, row.spos - 1))
        if question is None:
            return 0.0, None
        relevance, question_length, question_id = question
        return ranking.answer_lift(relevance, question_length, length, self.settings), question_id


def _holds_its_answer(folded: str, matched: frozenset[str]) -> bool:
    """Whether a turn that asks states its answer itself, after its question: what it says there
    is labelled as the answer ("Asked: What port does the api use? — Answered: The api listens on
    port 8080.", as the Hermes provider writes a turn; "Q: … ? A: …") or speaks of what the
    question matched ("… the api listens on port 8080"). Its next turn is then no answer to it:
    a new message, which gains only a neighbour's share."""
    after = questions.open_questions(folded)[1]
    return bool(after) and (questions.answered(after) or not matched.isdisjoint(textmod.tokens(after, folded=True)))


class _Scored(NamedTuple):
    row: Row
    read: Callable[[Row], Record]  # (`Index.record`: its line is read when its text is asked for)
    parts: ranking.Parts
    matched: frozenset[str]
    stands_for: str | None = None  # the superseded record whose relevance it took
    answers: str | None = None  # the question (the turn before) whose relevance it took a share of
    follows: str | None = None  # the matched note it reads as a newer value of (`_followers`)
    below: str | None = None  # matching only through its session: the record it is kept below (`_kept_below`)
    kin: tuple[str, ...] = ()  # the attributes it matched through their other words (`_Kin`)

    @property
    def record(self) -> Record:
        return self.read(self.row)


_Placed = tuple[_Scored, str | None, str | None]  # a hit, the record it went above, the one it updates


def _successors(
    idx: Index, rows: dict[int, Row], relevance: dict[int, float], replaced: list[Row]
) -> dict[str, tuple[float, str]]:
    """The current versions of the superseded records that matched, by id: (the best relevance
    among the records each one replaces, that record's id). A correction, a newer value of a key
    or a replaced hot entry is the same fact said anew, in words the query may not share: it
    stands in for what it replaces — also for a replaced record the filters hide (`replaced`:
    cold, older than --since, of another kind, or any with --current)."""
    olds = [(row, relevance[n]) for n, row in rows.items() if row.superseded_by and relevance[n] > 0]
    olds += [(row, -1.0) for row in replaced if row.n not in rows]  # scored below, if it matters
    best: dict[str, tuple[float, int, str]] = {}
    known: dict[str, Row] = {}  # id → the end of its chain: a long chain is walked once, not per match
    for row, rel in olds:
        head = idx.current_version(row, known)
        # on equal relevance the later line: a hot entry's text journalled twice (added, then
        # replaced) is shown as the later line, so that is the one to name
        if head.id != row.id and (head.id not in best or (rel, row.n) > best[head.id][:2]):
            best[head.id] = (rel, row.n, row.id)
    return {head: (rel, rid) for head, (rel, _, rid) in best.items()}


def _stand_ins(
    idx: Index,
    q: Query,
    rows: dict[int, Row],
    seen: dict[int, Any],
    corpus: _Corpus,
    replaced: list[Row],
    lifted: dict[int, float],
) -> dict[int, tuple[float, str]]:
    """The current versions (passing the filters) of the superseded matches, added to `rows` and
    `seen`: line number → (the relevance it stands in with, the record it replaces). What a
    replaced record lends is its relevance in words: the date terms it matched say when it was
    said, which its successor was not ("May 2025" finds May's record, not its correction of 2026)
    — or, when more, what it gained as the answer to a question (`lifted`: a corrected answer
    shares no word with the question either)."""
    content = corpus._replace(idfs={t: w for t, w in corpus.idfs.items() if not t.startswith(dates.PREFIX)})

    def in_words(n: int) -> float:
        rel = seen[n]
        if rows[n].superseded_by and any(t.startswith(dates.PREFIX) for t in rel.matched):
            return max(_relevance(idx, q, rows[n], content).relevance, lifted.get(n, 0.0))
        own: float = rel.relevance
        return max(own, lifted.get(n, 0.0))

    heads = _successors(idx, rows, {n: in_words(n) for n in seen}, replaced)
    stands: dict[int, tuple[float, str]] = {}
    if not heads:
        return stands
    where, params = q.filters.sql(q.now)
    ids = sorted(heads)
    for row in idx.rows(f"r.id IN ({', '.join('?' * len(ids))}) AND {where}", [*ids, *params]):
        if row.n not in rows:
            rows[row.n] = row
            seen[row.n] = _relevance(idx, q, row, corpus)
        rel, old = heads[row.id]
        if rel < 0:  # a replaced record the filters hide: its relevance in words
            old_row = idx.by_id(old)
            hidden = _relevance(idx, q, old_row, content) if old_row else None
            rel = hidden.relevance if hidden else 0.0
        stands[row.n] = (rel, old)
    return stands


def _is_note(row: Row) -> bool:
    """A note states a fact; a conversation turn, or a remark saved at the chat tier ("Chat: maybe
    try port 8081"), speaks of things in passing."""
    return row.session is None and row.tier != Tier.CHAT


def _followers(
    idx: Index, q: Query, rows: dict[int, Row], seen: dict[int, Any], corpus: _Corpus, settings: Ranking
) -> dict[int, tuple[str, float]]:
    """The newer notes that read as a new value of a matched note, though they share no word with
    the query — found the way a person finds them: from the note that answers, by what it says
    ("Sold the Civic. Picked up a used Kia Niro EV" after "Drives a silver 2014 Honda Civic", for
    "what car does the user drive"). For each of the `follow_top` most relevant notes, the newer
    note (a day or more) that holds one of its rare words (held by at most `follow_rare` records)
    and a share of its words, weighed by their rarity (`ranking.held`: at least `follow_overlap`;
    a terse note names little more than the old value, "cancelled Avenida; we're in an Airbnb in
    Alfama instead"; in a small store, where every word is rare, the share keeps out notes that
    share one word in passing), says it changes something (`reading.cues.says_change`) — or, saying
    none, holds two of its words and puts a number in place of one of its numbers (`follow_values`:
    `ranking.replaces_number`;
    a name for a name is how a distractor reads, "Team Heron still uses GitLab CI" after "Team Falcon
    builds through Jenkins") —, states a value it does not
    (`identifiers.values`) and does not name another subject in place of its own
    (`identifiers.names_another_thing`) — of those, one that says a change before one that does
    not, then the one holding the largest share of its words, weighed by their rarity
    (`ranking.held`) — is added to `rows` and `seen`: line number → (the id
    of the note it follows, the relevance it gains: `follow_share` of that note's). The update
    rule then puts it above the note it follows (`ranking.Match.follows`). A query that asks for
    the past looks for none."""
    out: dict[int, tuple[str, float]] = {}
    if not settings.follow_share or not settings.follow_top or q.intent.asks == "past":
        return out
    from optmem.identifiers import names_another_thing, values
    from optmem.reading.lexicon import STOPWORDS
    from optmem.reading.query import names_in

    ignore = cues.time_words()
    notes = sorted(
        (n for n, row in rows.items() if _is_note(row) and seen[n].relevance > 0 and not row.superseded_by),
        key=lambda n: -seen[n].relevance,
    )[: settings.follow_top]
    if not notes:
        return out
    docs = idx.lengths()[0]
    where, params = q.filters._replace(current=False).sql(q.now)
    words = {
        n: sorted({t for t in idx.tokens(rows[n]) if t not in STOPWORDS and not t.startswith(dates.PREFIX)})
        for n in notes
        if rows[n].ts is not None
    }
    # only a note holding a rare word is looked at: which words are rare is read first — with
    # every count the notes' words need (one look-up for all, not one for the rare and another)
    held = idx.term_counts(sorted({t for terms in words.values() for t in terms}))
    few = {t for t, k in held.items() if k <= settings.follow_rare}
    words = {n: terms for n, terms in words.items() if not few.isdisjoint(terms)}
    if not words:
        return out
    df = {t: held.get(t, 0) for terms in words.values() for t in terms}
    for n, terms in words.items():
        older = rows[n]
        assert older.ts is not None  # (`words` holds dated notes only)
        idfs = {t: ranking.idf(docs, df[t]) for t in terms if df[t]}
        # a follower shares one of its rare words: those few records are all there is to read
        # (a look-up of every word, common ones too, ranked every match: ~50 ms a note at 100k)
        rare = [t for t in idfs if df[t] <= settings.follow_rare]
        if not rare:
            continue
        text = seen[n].record.text
        # a name the query writes that the older holds: a newer note that lacks it and says no change
        # is about another ("Bob's phone number is 555-0202" for "what is Alice's phone number")
        # — unless it names nobody the older does not ("Vet visit: … we cut the dog down to 1.5 cups
        # a day" for "how much should I be feeding Biscuit?": `follow_unnamed`)
        named = q.intent.names & seen[n].matched
        own = frozenset(idx.tokens(older))
        best: tuple[bool, float, float, Row] | None = None
        for row in idx.matches(
            match_any(rare),
            f"{where} AND r.ts >= ? AND r.n != ?",
            [*params, older.ts + ranking.DAY, older.n],
            "ORDER BY bm25(fts)",
            FOLLOW_POOL,
        ):
            if not _is_note(row) or row.superseded_by or row.domain != older.domain:
                continue
            newer = frozenset(idx.tokens(row))
            share = ranking.held(frozenset(idfs), newer, idfs)
            if share < settings.follow_overlap:
                continue
            if not any(df[t] <= settings.follow_rare for t in newer.intersection(idfs)):
                continue  # (the look-up's words as the index reads them: one of them, rare)
            # a note that says it changes something; or, holding enough of the older's words, one
            # that puts a number in place of one of its own ("prod pg max_connections=500" after
            # "生产 PG 的 max_connections 是 200") — the one that says a change goes first
            said = idx.record(row).text
            told = cues.says_change(said)
            if best and (told, share, row.ts or 0.0) <= best[:3]:
                continue
            new, old = values(said, ignore), values(text, ignore)
            # (two of its words at least: "Maybe try port 8081 for the mock server" holds only "port"
            # of "The orders backend listens on port 9090")
            unnamed = named <= newer or (settings.follow_unnamed and not names_in(said) - own)
            if not told and not (
                settings.follow_values
                and len(newer.intersection(idfs)) > 1
                and unnamed
                and ranking.replaces_number(new, old)
            ):
                continue
            if new - old and not names_another_thing(text, said, ignore):
                best = (told, share, row.ts or 0.0, row)
        if best is None:
            continue
        row = best[3]
        lent = settings.follow_share * seen[n].relevance
        if row.n not in rows:
            rows[row.n] = row
            seen[row.n] = _relevance(idx, q, row, corpus)
        if row.n not in out or out[row.n][1] < lent:
            out[row.n] = (older.id, lent)
    return out


def _kin_followers(
    q: Query, rows: dict[int, Row], seen: dict[int, Any], corpus: _Corpus, settings: Ranking
) -> dict[int, tuple[str, float]]:
    """The newer notes that read as a new value of a matched note because both state the attribute
    the query names, one of them only in another word of it (`_Kin`): "Switched dentists. Now seeing
    Dr. Okafor" after "Dentist: Dr. Alvarez", for "who do I go to for my teeth" — found among the
    candidates, as `_followers` finds its own: for each of the `follow_top` most relevant notes
    that hold a word of such an attribute, the newest candidate note (a day or more newer, of its
    domain; not a handoff nor a commit) that holds another word of it, says it changes something
    (`reading.cues.says_change`),
    states a value the older does not (`identifiers.values`) and names no other subject in place
    of its own (`identifiers.names_another_thing`). Records that share no attribute stay apart."""
    out: dict[int, tuple[str, float]] = {}
    if not settings.follow_share or not settings.follow_top or q.intent.asks == "past":
        return out
    from optmem.identifiers import names_another_thing, values

    asked = {k.group: k.asked for k in corpus.kin}

    def about(n: int) -> frozenset[str]:
        rel = seen[n]
        return frozenset(g for g, terms in asked.items() if not terms.isdisjoint(rel.matched)) | frozenset(rel.kin)

    live = [n for n, row in rows.items() if _is_note(row) and not row.superseded_by and row.ts is not None]
    notes = sorted((n for n in live if seen[n].relevance > 0), key=lambda n: -seen[n].relevance)[: settings.follow_top]
    later = [n for n in live if seen[n].kin and rows[n].kind not in (HANDOFF, COMMIT)]  # (as `_order` reads them)
    if not notes or not later:
        return out
    ignore = cues.time_words()
    for n in notes:
        older = rows[n]
        groups = about(n)
        if not groups:
            continue
        text = seen[n].record.text
        best: Row | None = None
        for m in later:
            row = rows[m]
            if m == n or row.domain != older.domain or (row.ts or 0.0) < (older.ts or 0.0) + ranking.DAY:
                continue
            if groups.isdisjoint(seen[m].kin) or (best is not None and (row.ts or 0.0) <= (best.ts or 0.0)):
                continue
            said = seen[m].record.text
            if cues.says_change(said) and values(said, ignore) - values(text, ignore):
                if not names_another_thing(text, said, ignore):
                    best = row
        if best is not None:
            lent = settings.follow_share * seen[n].relevance
            if best.n not in out or out[best.n][1] < lent:
                out[best.n] = (older.id, lent)
    return out


def _score(
    idx: Index, q: Query, rows: dict[int, Row], df: dict[str, int], settings: Ranking, replaced: list[Row]
) -> tuple[list[_Scored], _Corpus]:
    """Every candidate re-tokenised and scored; the best ones bring their session neighbours,
    and each record with a session gains a share of its best neighbour's relevance — or, when
    more, what the turn before it asked (`_Answers`)."""
    corpus = _corpus(idx, q, df, settings)
    past = q.intent.asks == "past"
    idx.keep_records()  # (a candidate's text is read when asked for, and once)
    idx.tokens_of(rows.values())  # (one statement for all of them)
    seen = {n: _relevance(idx, q, row, corpus) for n, row in rows.items()}
    rows = dict(rows)
    turns = _neighbours(idx, q, rows, {n: v.relevance for n, v in seen.items()}, settings)
    idx.tokens_of(turns)
    for row in turns:
        if row.n not in rows:
            rows[row.n] = row
            seen[row.n] = _relevance(idx, q, row, corpus)
    answers = _Answers(q, seen, rows, corpus, settings)
    # a superseded answer lends its successor what it gained from its question too
    lifted = {n: answers.of(row, seen[n].length)[0] for n, row in rows.items() if row.superseded_by}
    stands = _stand_ins(idx, q, rows, seen, corpus, replaced, lifted)
    follows = _followers(idx, q, rows, seen, corpus, settings)
    if corpus.kin and settings.attribute_follow:
        follows = _kin_followers(q, rows, seen, corpus, settings) | follows
    # a session's turns lend each other context within one domain (a session name reused in
    # another domain is another conversation)
    own = {(r.domain, r.session, r.spos): seen[n].relevance for n, r in rows.items() if r.session is not None}
    ids = {(r.domain, r.session, r.spos): r.id for r in rows.values() if r.session is not None}
    borrowed: dict[int, tuple[str, bool]] = {}  # line → the turn its context came from, as its answer?
    out = []
    w = settings.context_window
    hot = _HotFiles(idx)
    life = idx.vault.settings.lifecycle
    for n, row in rows.items():
        _, relevance, matched, length, read, kin = seen[n]
        stands_for = answered = None
        if n in stands and stands[n][0] > relevance:
            relevance, stands_for = stands[n]
        context = 0.0
        if row.session is not None and row.spos is not None:
            near = [(row.domain, row.session, row.spos + d) for d in range(-w, w + 1) if d]
            context = ranking.context_share((own.get(p, 0.0) for p in near), settings)
            lender = ids.get(max(near, key=lambda p: own.get(p, 0.0))) if context > 0 else None
            lift, question = answers.of(row, length)
            if lift > context:
                context, answered, lender = lift, question, question
            if lender:
                borrowed[n] = (lender, answered is not None)
        follows_id = None
        if n in follows:  # it stands in for the note it follows, as a correction does
            follows_id, lent = follows[n]
            relevance = max(relevance, lent)
        if relevance <= 0 and context <= 0:
            continue
        status = hot.status(row, read, q.now)
        cold = status == view.Status.COLD
        if q.filters.hidden(status) and not (cold and q.cold_best):
            continue
        parts = ranking.score(
            ranking.Candidate(
                relevance,
                context,
                row.tier if row.tier != Tier.REDLINE or _trusted(idx, q) else int(Tier.NORMAL),
                row.kind,
                status,
                row.accessed,
                relative_importance(life, row),
                bool(row.inferred),
                view.status(row, q.now, warm=True) if cold else None,
                secondhand(row.origin),
            ),
            q.now,
            settings,
            past=past,
        )
        out.append(_Scored(row, read, parts, matched, stands_for, answered, follows_id, kin=kin))
    return _kept_below(out, borrowed), corpus


def _kept_below(out: list[_Scored], lent: dict[int, tuple[str, bool]]) -> list[_Scored]:
    """A hit that matches none of the query's words, only through its session (`lent`: line →
    the turn it borrowed from, whether as that turn's answer), never ranks above the turn it
    borrowed from; and one a neighbour's share brought, never above a hit of its band that matches
    the words (the turn after a question may: it is read as the answer). Its score is set just
    below, keeping the order of such hits; `--explain` names the record it is kept below."""
    parts = {s.row.id: s.parts for s in out}
    weakest: dict[int, _Scored] = {}  # band → its lowest-scored hit that matches the words
    for s in out:
        if s.parts.relevance > 0 and (s.parts.band not in weakest or s.parts.score < weakest[s.parts.band].parts.score):
            weakest[s.parts.band] = s
    for i, s in enumerate(out):
        if s.parts.relevance > 0 or s.row.n not in lent:
            continue
        lender, answer = lent[s.row.n]
        above = [(p.score, lender) for p in (parts.get(lender),) if p is not None and p.band == s.parts.band]
        if not answer and (match := weakest.get(s.parts.band)) is not None:
            above.append((match.parts.score, match.row.id))
        if not above or s.parts.score < min(above)[0]:
            continue
        score, below = min(above)
        # just below it, the larger score still the higher
        out[i] = s._replace(parts=s.parts._replace(score=score * (1 - 1e-6 / (1 + s.parts.score))), below=below)
    return out


def _trusted(idx: Index, q: Query) -> bool:
    """Whether the vault's redlines are rules (`Query.trusted`; else the vault says: `optmem.trust`,
    which looks for a git work tree around it — asked once, and only when a redline is scored)."""
    return q.trusted if q.trusted is not None else idx.vault.trusted


def relative_importance(s: Any, row: Row) -> float:
    """A record's importance over the default for its kind and tier (1 unless one was given)."""
    if row.imp is None:
        return 1.0
    from optmem.lifecycle import default_importance, importance

    base = default_importance(s, row.kind, row.tier)
    return importance(s, row.kind, row.tier, row.imp) / base if base else 2.0


class _HotFiles:
    """The status of hot-memory journal records, checked against their file: an entry a person,
    Hermes or git removed from the file is no longer current, journalled or not yet."""

    def __init__(self, idx: Index) -> None:
        self.vault = idx.vault
        self.held: dict[str, set[str] | None] = {}
        self.unmerged: dict[str, bool] = {}  # a hot file git holds unmerged is not the truth of its entries

    def status(self, row: Row, read: Callable[[Row], Record], now: float) -> view.Status:
        status = view.status(row, now)
        if status != view.Status.CURRENT or row.kind != MEMORY:
            return status
        rec = read(row)
        file, entry = rec.extra.get("file"), rec.extra.get("entry")
        if not isinstance(file, str) or not isinstance(entry, str):
            return status
        if file not in self.held:
            from optmem import memory

            self.held[file] = memory.held_entries(self.vault, file)
        held = self.held[file]
        if held is None or entry in held:
            return status
        if file not in self.unmerged:  # (looked at only for an entry missing from its file: rare)
            from optmem import memory

            self.unmerged[file] = memory.unmerged(self.vault, file)
        return status if self.unmerged[file] else view.Status.REMOVED


def _neighbours(
    idx: Index, q: Query, rows: dict[int, Row], relevance: dict[int, float], settings: Ranking
) -> list[Row]:
    """The session neighbours (within the window, of the same domain, passing the filters) of the
    most relevant candidates: the turns around an answer are often what a question's words
    matched. With --current, superseded turns are fetched too: a corrected answer is still the
    turn after its question, and lends its correction what it gains there (`_stand_ins`) — it is
    scored, not shown."""
    w = settings.context_window
    placed = [(r, r.session, r.spos) for r in rows.values() if r.session is not None and r.spos is not None]
    top = sorted(placed, key=lambda p: -relevance[p[0].n])[: settings.context_top]
    held = {(r.domain, session, spos) for r, session, spos in placed}
    where, params = q.filters._replace(current=False).sql(q.now)
    found: dict[int, Row] = {}
    spans = [(session, near.domain, max(0, spos - w), spos + w) for near, session, spos in top]
    for r in idx.in_sessions(spans, where, params):  # one statement for all of them
        if (r.domain, r.session, r.spos) not in held:
            found[r.n] = r
    return list(found.values())


def _covers(s: _Scored, q: Query, settings: Ranking) -> frozenset[str]:
    """The query terms a record's text holds once its cue words are out ("我现在养了5盆" holds 我养;
    `time_words`: the Chinese time words say when, not what)."""
    if s.record.text.isascii() or not settings.time_words:
        return s.matched
    stripped = cues.without_cues(textmod.fold(s.record.text))
    return s.matched | frozenset(textmod.tokens(stripped, folded=True)).intersection(q.terms)


def _compared(q: Query, corpus: _Corpus, settings: Ranking) -> Callable[[_Scored], frozenset[str]]:
    """What of the query a hit holds, as the update rule compares two hits: its matched terms —
    for a Chinese query, the query's characters it holds in place of its bigrams
    (`cjk_characters`; the characters weigh by their idf, so with `cjk_unigram` = 0 bigrams are
    compared). A bigram across two words says little of a topic: 我爸妈住在哪 pairs
    妈住 and 我爸, which "爸妈搬到郑州了，住在我姐家附近" lacks though it is about the same parents."""
    chars = [c for c in q.intent.characters if c in corpus.idfs] if settings.cjk_characters else []
    if not chars:
        return lambda s: s.matched
    return lambda s: (
        frozenset(c for c in chars if c in textmod.fold(s.record.text)) | frozenset(t for t in s.matched if t.isascii())
    )


class _Subjects:
    """How much of an older note's own words a newer one holds, weighed by their rarity in the
    store (`ranking.held`): its subject named in words the query need not use ("the orders topic
    has 12 partitions" → "order-events partitions raised to 48"). The words and their document
    counts are read only for the pairs the update rule asks about."""

    def __init__(self, idx: Index) -> None:
        self.idx = idx
        self.docs = 0
        self.words: dict[str, frozenset[str]] = {}
        self.idfs: dict[str, float] = {}
        self.said = cues.cue_terms() | cues.time_terms()

    def of(self, m: ranking.Match) -> frozenset[str]:
        if m.id not in self.words:
            from optmem.reading.lexicon import STOPWORDS

            self.words[m.id] = frozenset(
                t
                for t in textmod.tokens(m.text)
                if t not in STOPWORDS and t not in self.said and not t.startswith(dates.PREFIX)
            )
        return self.words[m.id]

    def share(self, older: ranking.Match, newer: ranking.Match) -> float:
        words = self.of(older)
        unread = [t for t in words if t not in self.idfs]
        if unread:
            self.docs = self.docs or self.idx.lengths()[0]
            self.idfs.update({t: ranking.idf(self.docs, n) for t, n in self.idx.doc_freq(unread).items() if n})
        return ranking.held(words, self.of(newer), self.idfs)


def _hot_forked(idx: Index, row: Row) -> bool:
    """Whether a hit is one version of a hot entry edited two ways (`memory.hot_rivals`, what
    `conflicts` reads); only a hot-memory journal record can be (memory is loaded for it alone)."""
    if row.kind != MEMORY or not (row.key or "").startswith("hot:"):
        return False
    from optmem import memory

    return bool(memory.hot_rivals(idx, row))


def _order(
    scored: list[_Scored],
    q: Query,
    corpus: _Corpus,
    settings: Ranking,
    replacing: dict[str, frozenset[str]],
    idx: Index,
) -> tuple[list[view.RecordView], int, int]:
    """Band, score, then ties (higher tier, newer — a later ts, then `view.tie_key`: never the
    order the index holds the records in, which can differ between clones); then the newer-first
    rules: same-topic records among the top hits, and records that update an older one inside
    the top `reorder_top`. A query that asks for the past turns the
    ties round and skips both rules (one that names a day skips them too). Last, every
    superseded hit goes below the hits that replaced it (`replacing`: `_later_versions`), whatever
    the query asks. Returns the hits of the page and how many there are in all (a hot entry
    journalled more than once counts once), and how many of those match as context only."""
    asks = q.intent.asks
    later = -1 if asks == "past" else 1  # ties: the newer first — the older when asked for the past
    # (not the index key: it can differ between clones — `view.tie_key`)
    scored.sort(key=lambda s: view.tie_key(s.row.id, s.row.n), reverse=later > 0)
    scored.sort(
        key=lambda s: (
            s.parts.band,
            -round(s.parts.score, 9),
            s.parts.status == view.Status.COLD,
            -s.row.tier,
            -later * (s.row.ts or 0),
        )
    )
    # a hot-memory entry is journalled more than once (added, then removed or replaced): one hit
    # per entry — its best-ranked record
    seen_entries: set[str] = set()
    kept = []
    for s in scored:
        if s.row.kind == MEMORY and s.row.key:
            if s.row.key in seen_entries:
                continue
            seen_entries.add(s.row.key)
        kept.append(s)
    # the rule re-orders a fixed number of top hits (`reorder_top`), not --limit's: a shorter
    # --limit is then the start of a longer one
    k = settings.reorder_top
    top = kept[:k]
    # "what was my previous …": the newest statement is not what is asked for — the newer-first
    # rule turns round, the older value goes above the newer one that updates it
    from optmem.identifiers import names_its_subject, values  # (read for the top hits only)

    compared = _compared(q, corpus, settings)
    # a record holding another word of an attribute the query names holds the query's word for it,
    # as the update rule reads it: "IT swapped me onto a MacBook" states the "laptop" — not a
    # handoff or a commit, which reports work done in passing ("Done: nginx now proxies /api to
    # :9090" states no port of the backend)
    asked = {k.group: k.asked for k in corpus.kin}
    ignore = cues.time_words()
    matches = [
        ranking.Match(
            s.row.id,
            s.row.recency,
            s.parts.band,
            s.parts.score,
            compared(s),
            s.row.upd,
            _covers(s, q, settings) if s.row.upd else s.matched,
            s.parts.status in (view.Status.SUPERSEDED, view.Status.REMOVED) or bool(s.row.superseded_by),
            s.row.key,
            None,
            _is_note(s.row),
            s.record.text,
            s.follows,
            hand(s.row.origin) == HANDS["tool"],  # (a derived record with a tool's part too)
            frozenset().union(*(asked[g] for g in s.kin))
            if s.kin and s.row.kind not in (HANDOFF, COMMIT)
            else frozenset(),
        )
        for s in top
    ]
    updates = ranking.updates_first(
        matches,
        corpus.idfs,
        asks == "present",
        settings,
        q.intent.names,
        cues.cue_terms() if settings.present_cues else frozenset(),
        q.intent.question,
        asks == "past",
        lambda text: values(text, ignore),
        cues.says_change,
        # what the older note is about, named by the newer one or by the question
        lambda older, newer: names_its_subject(older, newer, ignore) or names_its_subject(older, q.text, ignore),
        _Subjects(idx).share,
    )
    final = [(top[p.at], p.over) for p in updates] + [(s, None) for s in kept[k:]]
    after: dict[str, list[str]] = {}  # a superseded hit placed after its later versions: which (`--explain`)
    if replacing:
        before = [s.row.id for s, _ in final]
        order = ranking.successors_first(before, replacing)
        # (its later versions that stood below it: the rule moved it after them)
        after = {rid: [v for v in before[i + 1 :] if v in replacing.get(rid, ())] for i, rid in enumerate(before)}
        final = [final[i] for i in order]
    # a note found as the newer value of another (`_followers`) updates it when it stands above it
    below = {s.row.id: i for i, (s, _) in enumerate(final)}
    final = [
        (s, updated or (s.follows if s.follows and below.get(s.follows, -1) > i else None))
        for i, (s, updated) in enumerate(final)
    ]
    hits = []
    across = idx.across_domains([s.row for s, _ in final[: q.limit]], q.now)  # (as `Index.view_of` reads it)
    for s, updated in final[: q.limit]:
        explain = None
        if q.explain:
            explain = s.parts.explain(
                updates=updated,
                asks=asks,
                stands_for=s.stands_for,
                answers=s.answers,
                below=s.below,
                after=after.get(s.row.id, []),
                **({"attributes": list(s.kin)} if s.kin else {}),
                dates=sorted(t for t in s.matched if t.startswith(dates.PREFIX)),
                b=round(corpus.params.b, 3),
            )
        hits.append(
            view.RecordView(
                s.record,
                s.parts.status,
                s.row.superseded_by,
                s.row.n,
                round(s.parts.score, 4),
                explain,
                cold_since=s.row.cold if s.parts.status == view.Status.COLD else None,
                conflict=(s.row.disputed or _hot_forked(idx, s.row)) and s.parts.status in view.LIVE,
                guess=is_guess(s.row, q.now),
                expired=view.is_expired(s.row, q.now),
                unverified=s.row.tier == Tier.REDLINE and not _trusted(idx, q),
                checked=s.row.checked,
                released=bool(s.row.released),
                written=s.row.wrote,
                across_domains=across.get(s.row.n, ()),
            )
        )
    return hits, len(kept), sum(1 for s in kept if s.parts.relevance <= 0)
