"""Merging fragments: one structured record for records about one subject, every detail kept —
and the suggestions of what to merge, which propose only what `merge` accepts.

`plan` is merge's one set of checks and the record it would write; `merge` writes it,
`suggest_merges` keeps only the groups it accepts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from optmem import clock, log, view
from optmem import text as textmod
from optmem.errors import NotApplicable, OptmemError, TooLarge, UsageError, quote
from optmem.index import Index, Row, open_index
from optmem.reading.lexicon import STOPWORDS
from optmem.record import MEMORY, MERGED, Record, Tier
from optmem.safety import scan
from optmem.vault import Vault


@dataclass(frozen=True)
class Merged:
    id: str
    topic: str
    fragments: list[str]
    record: dict[str, Any]


class Plan(NamedTuple):
    """The merged record `merge` would write: its main text, facts, details, key and scope."""

    records: list[Record]  # the fragments, oldest first
    main: str
    facts: dict[str, Any]
    details: list[str]
    key: str | None
    domain: str
    project: str | None
    inferred: bool  # every fragment an inference: so is the merged record


def refusal(idx: Index, row: Row, now: float) -> None:
    """Refuse (exit 1) a record merge does not take: a bookkeeping line or hot-memory journal
    record, a value of a key in conflict (the user settles it first), a record that is not
    current (pending, superseded, expired, forgotten, cold), a redline."""
    log.refuse_bookkeeping(idx, row, "merge")
    if row.disputed:
        settle = (
            f"`optmem resolve {row.key} --keep ID`" if row.key else "`optmem conflicts` names it and how to settle it"
        )
        raise NotApplicable(
            f"{row.id} is one of the values of "
            + (f"key {quote(row.key)}" if row.key else "a fact corrected two ways")
            + f" in conflict: settle it first ({settle})",
            code="not_mergeable",
            id=row.id,
            key=row.key,
        )
    st = view.status(row, now)
    if st != view.Status.CURRENT:
        raise NotApplicable(
            f"{row.id} is {st.value}, not current: merge current records only",
            code="not_mergeable",
            id=row.id,
            status=st.value,
        )
    if row.tier == Tier.REDLINE:
        raise NotApplicable(f"{row.id} is a redline (a locked rule); it is not merged", code="not_mergeable", id=row.id)


def check_fragment(rec: Record, limit: int, allow_unsafe: bool) -> None:
    """A fragment the scanner flags is not carried into a new record's details (`unsafe_content`)."""
    scan.check_field("fragment", rec.text, limit=limit, allow_unsafe=allow_unsafe)


def plan(
    vault: Vault,
    idx: Index,
    rows: list[Row],
    topic: str,
    now: float,
    *,
    text: str | None = None,
    fields: dict[str, str] | None = None,
    key: str | None = None,
    allow_unsafe: bool = False,
) -> Plan:
    """Every check `merge` makes, and the record it would write — the one function behind both
    `merge` and `suggest_merges`: ≥ 2 different records, each one `refusal` lets through, all in
    one domain and project, all stated or all inferences, a topic, fragments, fields and topic
    the scanner passes, within the size bound. Raises merge's refusal; writes nothing."""
    if not topic or not topic.strip():
        raise UsageError("--topic is required: what the merged record is about")
    limit = vault.settings.limits.record_bytes
    scan.check_field("topic", topic, limit=log.FIELD_BYTES["key"], allow_unsafe=allow_unsafe)
    for name, value in (fields or {}).items():
        scan.check_field("fact", f"{name}={value}", limit=log.FIELD_BYTES["reason"], allow_unsafe=allow_unsafe)
    rows = list({r.id: r for r in rows}.values())
    if len(rows) < 2:
        raise UsageError("give at least two different records to merge (see `optmem merge --suggest`)")
    for row in rows:
        refusal(idx, row, now)
    scopes = {(r.domain, r.project) for r in rows}
    if len(scopes) > 1:
        raise NotApplicable(
            "the records are in different domains or projects: "
            + ", ".join(f"{d}/{p or '-'}" for d, p in sorted(scopes, key=str))
            + "; merge within one",
            code="not_mergeable",
            ids=[r.id for r in rows],
        )
    guessed = [r.id for r in rows if r.inferred]
    if guessed and len(guessed) < len(rows):  # the merged record would state it: a guess read as a fact
        raise NotApplicable(
            f"{', '.join(guessed)} {'is an inference' if len(guessed) == 1 else 'are inferences'} "
            "(--basis inferred) and the others were stated: merged, the record would state "
            f"{'it' if len(guessed) == 1 else 'them'}; merge the stated records without it, or, once "
            "the user has said it, correct it in their words (`optmem correct ID TEXT` writes a "
            "statement) and merge that; nothing was written",
            code="not_mergeable",
            ids=guessed,
        )
    records = [idx.record(r) for r in sorted(rows, key=lambda r: view.newer_key(r.ts, r.id, r.n))]
    for rec in records:
        check_fragment(rec, limit, allow_unsafe)
    facts: dict[str, Any] = {}
    for rec in records:
        if rec.key and rec.key in facts:  # two values of one key: both kept, never one over the other
            prev = facts[rec.key]
            facts[rec.key] = (prev if isinstance(prev, list) else [prev]) + [rec.text]
        elif rec.key:
            facts[rec.key] = rec.text
        for k, v in (rec.extra.get("facts") or {}).items() if rec.kind == MERGED else ():
            facts.setdefault(k, v)  # a merged fragment's own facts carry over
    facts.update(fields or {})
    details = [
        d for rec in records for d in ((rec.extra.get("details") or [rec.text]) if rec.kind == MERGED else [rec.text])
    ]
    # "Japan trip: going next month", not "Japan trip: Japan trip: going next month" (nor, with
    # --text, "… — Japan trip: going next month"): the topic is said once, at the front
    head = heading(topic)
    rest = [p for p in (after_topic(d, head) for d in details) if p]
    if text and text.strip():
        main = f"{text.strip()} — " + " / ".join(rest) if rest else text.strip()
    else:
        main = f"{head}: " + " / ".join(rest) if rest else head
    size = len(main.encode("utf-8")) + len(json.dumps(details, ensure_ascii=False).encode("utf-8"))
    if size > 2 * limit:
        raise TooLarge(
            f"the merged record would be {size:,} bytes (its text and details); merge fewer or "
            f"shorter records (at most about {limit:,} bytes of fragments); nothing was written",
            bytes=size,
            limit=limit,
        )
    shared_keys = {r.key for r in records}
    key = key or (next(iter(shared_keys)) if len(shared_keys) == 1 and None not in shared_keys else None)
    domain, project = next(iter(scopes))
    return Plan(records, main, facts, details, key, domain, project, bool(guessed))


def merge(
    vault: Vault,
    refs: list[str],
    topic: str,
    *,
    text: str | None = None,
    fields: dict[str, str] | None = None,
    key: str | None = None,
    source: str | None = None,
    allow_unsafe: bool = False,
    origin: str | None = None,
) -> Merged:
    """One structured record for fragments about one topic: a main text, `facts` (field → value:
    the fragments' keyed values, then `fields`), and `details` — every fragment's text verbatim,
    so nothing is lost ("structured fields only grow"). It supersedes the fragments (a
    correction of each); `history` leads from it to them. What it refuses: `plan`."""
    if len(refs) < 2:
        raise UsageError("give the ids of at least two records to merge, or --suggest to find some")
    now = clock.now().timestamp()
    with open_index(vault) as idx:
        p = plan(
            vault,
            idx,
            [log.resolve_one(idx, ref) for ref in refs],
            topic,
            now,
            text=text,
            fields=fields,
            key=key,
            allow_unsafe=allow_unsafe,
        )
    res = log.append(
        vault,
        log.Draft(
            p.main,
            domain=p.domain,
            project=p.project,
            kind=MERGED,
            key=p.key,
            basis="inferred" if p.inferred else None,
            corrects=[r.id for r in p.records],
            source=source,
            origin=origin,  # the writer's: the merge takes its fragments' too (`quarantine.derived_origin`)
            tags=sorted({t for r in p.records for t in r.tags}),
            extra={
                "topic": heading(topic),
                "facts": p.facts,
                "details": p.details,
                "fragments": [r.id for r in p.records],
            },
        ),
        gate=False,
        allow_unsafe=allow_unsafe,
    )
    return Merged(res.id or "", heading(topic), [r.id for r in p.records], res.record or {})


# What may end a topic a fragment begins with: a colon, comma, dash, bar, equals sign, arrow, a
# full stop before a space ("Japan trip. Flights …", not the "." of "Python 3.11"), or the end
_TOPIC_END = re.compile(r"\s*(?:[:：,，;；—–\-|=→。]+\s*|\.\s+|$)")
_TOPIC_TAIL = " :：,，;；—–-|=→.。"


def heading(topic: str) -> str:
    """The topic as the merged text begins with it: without the separator a user may type after
    it (`--topic "Japan trip:"` → "Japan trip", which the text then follows with ": ")."""
    return topic.strip().rstrip(_TOPIC_TAIL).strip() or topic.strip()


def after_topic(detail: str, topic: str, *, spaced: bool = True) -> str:
    """A fragment as the main text shows it after "TOPIC: ": without the topic it already begins
    with ("Japan trip: going next month" → "going next month"; "Japan trip is in June" → "is in
    June"; case and width folded, the topic a whole word: "Japanese food" stays, and so does
    "Python 3.11" after "Python 3"). `spaced=False` takes the topic off only before a separator
    (what a common beginning of texts must have to be a topic). The details keep every fragment
    verbatim."""
    flat, want = " ".join(detail.split()), " ".join(topic.split())
    if want and textmod.fold_case(flat[: len(want)]) == textmod.fold_case(want):
        end = _TOPIC_END.match(flat, len(want))
        if end is not None:
            return flat[end.end() :]
        if spaced and flat[len(want) : len(want) + 1] == " " and not want[-1:].isspace():
            return flat[len(want) + 1 :]
    return flat


# -- suggestions: groups `merge` accepts, about one subject -------------------------------------
@dataclass(frozen=True)
class Suggestion:
    reason: str
    ids: list[str]
    texts: list[str]
    topic: str  # a --topic to merge them with (the label, or the words they share)


SUGGEST_POOL = 2000  # the most recent current records looked at
SUGGEST_MIN = 3  # records a group needs
SUGGEST_RARE = 20  # a word in more of the pool's records says nothing of one subject
SUGGEST_TERMS = 8  # of a record's rare words, the rarest that may pair it with others
TOPIC_CHARS = 60  # the longest topic a suggestion reads off the texts' common beginning


def terms_of(rec: Record) -> set[str]:
    """A record's content words as `suggest_merges` compares them: the words of its text as
    written (case folded, not stemmed: "cache" and "caching" are two) and CJK bigrams — not its
    key's or tags' words (a label, not what the record says), function words, numbers or
    one-letter words."""
    return {
        t
        for t in textmod.tokens(textmod.fold(rec.text), folded=True, stem=False)
        if len(t) > 1 and not t.isdigit() and t not in STOPWORDS
    }


def label_words(label: str) -> set[str]:
    """The words of a key prefix or tag: a label is no evidence that its records share a subject."""
    return terms_of(Record(id="", ts="", text=label))


# Common Chinese predicates: a verb shared by records about different people ("小明喜欢茶",
# "小红喜欢咖啡") tells no subject, as "likes" does not
_CJK_PREDICATES = frozenset(
    "喜欢 喜爱 讨厌 爱吃 爱喝 想要 需要 使用 住在 偏好 习惯 觉得 认为 希望 打算 知道 会说 正在 已经 可以 没有".split()
)
_CAPITALISED = re.compile(r"(?<![.!?。！？\n]\s)(?<!^)\b[A-Z][\w']*|\b[A-Z]{2,}\b")


def predicates(texts: list[str]) -> set[str]:
    """The words of `texts` that may be verbs rather than what they are about: English words in
    -s or -ed (likes, prefers, booked — not -ss, -us, -is, -os: class, bus, redis, macos; nor a
    word a text capitalises inside a sentence or writes in capitals: Windows, AWS), and common
    Chinese predicates (喜欢, 需要). A plural noun ("flights") is among them: without a tagger
    "likes" and "flights" look alike, so such a word links records only beside another."""
    named = {textmod.fold(m.group()) for t in texts for m in _CAPITALISED.finditer(t)}
    words = {textmod.fold(w) for t in texts for w in re.findall(r"[A-Za-z]{4,}", t)}
    verbs = {
        w
        for w in words
        if w not in named
        and (
            (w.endswith("s") and not w.endswith(("ss", "us", "is", "os")))
            or (w.endswith("ed") and not w.endswith("eed"))
        )
    }
    return verbs | {w for w in _CJK_PREDICATES if any(w in t for t in texts)}


def suggest_merges(vault: Vault, *, limit: int = 20) -> list[Suggestion]:
    """Groups of ≥ 3 current records about one subject, each one `merge` accepts (`plan`), no
    record in two groups. A group is about one subject when

    * their keys share a prefix of two levels or more (`trip.japan.*`: the key names the subject),
    * or they share a one-level key prefix (`trip.*`) or a tag, and are linked to one another
      (directly or through each other) by rare words of their texts — words the label does not
      give them, never a key's or a tag's words: `user.name`, `user.city`, `user.lang` about
      three people share no word, and are no group; `user.alice.drink`, `user.bob.drink`,
      `user.carol.drink` ("Alice likes tea", "Bob likes coffee", …) share only a verb;
    * or, with no label, they all hold the same two rare words, one of them no verb.

    A rare word is in at most `SUGGEST_RARE` of the pool's records (a frequent word, such as
    "user" in an agent's memory, tells no subject apart). A word that may be a verb (`predicates`:
    likes, 喜欢) links two records only beside another word they share. Nothing is written."""
    now = clock.now().timestamp()
    with open_index(vault) as idx:
        rows: dict[str, Row] = {}
        recs: dict[str, Record] = {}
        for row in idx.recent(now, exclude_kinds=(MEMORY,), limit=SUGGEST_POOL):
            try:  # what merge would refuse is never proposed: a value in conflict, …
                refusal(idx, row, now)
            except OptmemError:
                continue
            rows[row.id], recs[row.id] = row, idx.record(row)
        terms = {i: terms_of(rec) for i, rec in recs.items()}
        df: dict[str, int] = {}
        for ts in terms.values():
            for t in ts:
                df[t] = df.get(t, 0) + 1
        rare = {i: {t for t in ts if 2 <= df[t] <= SUGGEST_RARE} for i, ts in terms.items()}
        verbs = predicates([rec.text for rec in recs.values()]) & {t for ts in rare.values() for t in ts}
        flagged: dict[str, bool] = {}  # … nor a text the scanner flags (scanned when a group holds it)

        def unsafe(i: str) -> bool:
            if i not in flagged:
                try:
                    check_fragment(recs[i], vault.settings.limits.record_bytes, False)
                    flagged[i] = False
                except OptmemError:
                    flagged[i] = True
            return flagged[i]

        while True:  # the groups again without a flagged record, which may have linked them
            kept = {i: rare[i] for i in recs if not flagged.get(i)}
            candidates = _labelled(recs, kept, verbs) + _by_words(recs, kept, df, verbs)
            if not {i for c in candidates if len(c[3]) >= SUGGEST_MIN for i in c[3] if unsafe(i)}:
                break
        out: list[Suggestion] = []
        used: set[str] = set()
        for _, reason, topic, ids in sorted(candidates, key=lambda c: (c[0], -len(c[3]), sorted(c[3]))):
            if len(ids) < SUGGEST_MIN or used & ids:
                continue
            ordered = sorted(ids, key=lambda i: (recs[i].ts, i))
            try:  # merge's own checks, on the group as merge would get it
                plan(vault, idx, [rows[i] for i in ordered], topic, now)
            except OptmemError:
                continue
            used |= ids
            out.append(Suggestion(reason, ordered, [recs[i].text for i in ordered], topic))
            if len(out) >= limit:
                break
    return out


Candidate = tuple[int, str, str, set[str]]  # (priority: lower first, reason, topic, ids)
Scope = tuple[str, str | None, bool]  # domain, project, inferred: what merge takes together


def _scope(rec: Record) -> Scope:
    return (rec.domain, rec.project, rec.basis == "inferred")


def _labelled(recs: dict[str, Record], rare: dict[str, set[str]], verbs: set[str]) -> list[Candidate]:
    """Groups by key prefix and by tag (one scope each: `_scope`), kept only about one subject."""
    groups: dict[tuple[str, str, Scope], set[str]] = {}
    for i in rare:
        rec = recs[i]
        scope = _scope(rec)
        parts = rec.key.split(".") if rec.key else []
        for depth in range(1, len(parts)):
            groups.setdefault(("key", ".".join(parts[:depth]), scope), set()).add(i)
        for tag in rec.tags:
            groups.setdefault(("tag", tag, scope), set()).add(i)
    out: list[Candidate] = []
    for (what, label, _), ids in groups.items():
        if len(ids) < SUGGEST_MIN:
            continue
        said = f"the key prefix {label}.*" if what == "key" else f"the tag {label}"
        if what == "key" and "." in label:  # two levels or more: the key itself names the subject
            out.append((0, f"they share {said}", label, ids))
            continue
        own = label_words(label)
        for part in _linked({i: rare[i] - own for i in ids}, verbs):
            words = _as_written(_shared_words(part, rare, own), recs, part)
            out.append(
                (1, f"they share {said} and {_the_words(words)}", _lead([recs[i].text for i in part]) or label, part)
            )
    return out


def _the_words(words: list[str]) -> str:
    return f"the word{'s' if len(words) > 1 else ''} {', '.join(words)}"


def _lead(texts: list[str]) -> str | None:
    """The topic every text begins with, when they all say it first ("Japan trip: …" → "Japan
    trip"), else None."""
    first = " ".join(texts[0][:200].split())[:TOPIC_CHARS]
    for end in range(len(first), 0, -1):
        lead = first[:end].rstrip(" :：,，;；—–-")
        if (
            lead
            and lead == first[:end]
            and all(after_topic(t, lead, spaced=False) != " ".join(t.split()) for t in texts)
        ):
            return lead
    return None


def _linked(words: dict[str, set[str]], verbs: set[str]) -> list[set[str]]:
    """The groups of records linked, directly or through each other, by a shared word — a word
    that may be a verb (`verbs`) only with another one."""
    parent = {i: i for i in words}

    def root(i: str) -> str:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    holder: dict[str, str] = {}
    holders: dict[str, list[str]] = {}
    for i, ws in words.items():
        for w in ws:
            if w in verbs:
                holders.setdefault(w, []).append(i)
            elif w in holder:
                parent[root(i)] = root(holder[w])
            else:
                holder[w] = i
    pairs: dict[tuple[str, str], int] = {}  # records sharing two such words are linked
    for hs in holders.values():
        for a_i, a in enumerate(hs):
            for b in hs[a_i + 1 :]:
                pairs[(a, b)] = pairs.get((a, b), 0) + 1
    for (a, b), n in pairs.items():
        if n >= 2:
            parent[root(a)] = root(b)
    parts: dict[str, set[str]] = {}
    for i in words:
        parts.setdefault(root(i), set()).add(i)
    return [p for p in parts.values() if len(p) >= SUGGEST_MIN]


def _by_words(
    recs: dict[str, Record], rare: dict[str, set[str]], df: dict[str, int], verbs: set[str]
) -> list[Candidate]:
    """Groups with no label: the records (one scope) that all hold the same two rare words, one
    of them no verb, and hold at least half the records holding either (two words that meet in 3
    of the 40 records holding each meet by chance: word salad, or bigrams across word
    boundaries)."""
    holders: dict[tuple[str, str, Scope], set[str]] = {}
    for i, ws in rare.items():
        scope = _scope(recs[i])
        mine = sorted(ws, key=lambda w: (df[w], w))[:SUGGEST_TERMS]
        for a_i, a in enumerate(mine):
            for b in mine[a_i + 1 :]:
                holders.setdefault((a, b, scope) if a < b else (b, a, scope), set()).add(i)
    out: list[Candidate] = []
    seen: set[frozenset[str]] = set()
    for (a, b, _), ids in holders.items():
        key = frozenset(ids)
        if len(ids) < SUGGEST_MIN or key in seen or 2 * len(ids) < max(df[a], df[b]) or {a, b} <= verbs:
            continue  # (words that meet in a few of the many records holding them: chance, no subject)
        seen.add(key)
        words = _as_written(set.intersection(*(rare[i] for i in ids)), recs, ids)
        if len(words) < 2:
            continue  # one word as written ("服务器" is two bigrams): no subject
        out.append(
            (2, f"they share {_the_words(words)}", _lead([recs[i].text for i in ids]) or " ".join(words[:3]), ids)
        )
    return out


def _shared_words(ids: set[str], rare: dict[str, set[str]], own: set[str]) -> set[str]:
    """The rare words held by two or more of `ids` (a label's own words aside)."""
    count: dict[str, int] = {}
    for i in ids:
        for w in rare[i] - own:
            count[w] = count.get(w, 0) + 1
    return {w for w, n in count.items() if n >= 2}


def _as_written(words: set[str], recs: dict[str, Record], ids: set[str], most: int = 5) -> list[str]:
    """Shared words as the texts write them: the case of their first use, adjacent CJK bigrams
    joined back into the run they come from ("数据" + "据库" → "数据库"), most shared first."""
    found: dict[str, int] = {}
    for i in sorted(ids, key=lambda i: (recs[i].ts, i)):
        text = recs[i].text
        folded = [textmod.fold(c) for c in text]  # per character: positions stay the text's
        start = None
        for k in range(len(text) + 1):
            bigram = "".join(folded[k : k + 2]) if k < len(text) - 1 else ""
            inside = len(bigram) == 2 and bigram in words and textmod.has_cjk(bigram)
            if inside and start is None:
                start = k
            elif not inside and start is not None:
                run = text[start : k + 1]
                found[run] = found.get(run, 0) + 1
                start = None
        for m in re.finditer(r"[^\W_]+", text):
            word = m.group()
            if textmod.fold(word) in words and not textmod.has_cjk(textmod.fold(word)):
                same = next((w for w in found if textmod.fold(w) == textmod.fold(word)), word)
                found[same] = found.get(same, 0) + 1
    return [w for w, _ in sorted(found.items(), key=lambda f: (-f[1], f[0]))][:most]
