"""Ranking as pure functions: BM25 relevance, the score of a hit and its named parts, and the
re-ordering of same-topic records. `--explain` prints exactly the parts `score()` returns.

A hit's score is relevance × tier factor × (1 + recency bonus):
* relevance is BM25 (k1 1.2, b 0.75) with an IDF that stays positive in small vaults;
* trust tiers break near-ties (chat 0.97 < normal 1.0 < evidence = correction 1.03);
* the recency bonus is at most `ranking.recency_window` (10 %), shrinking with whole days of
  age — it re-orders near-equals but never buries an old record that is the only strong match;
  current redlines never decay.
Hits are ordered in bands first (`view.band`), then by score; then a newer record about the same
thing (a shared key, a correction link, mostly the same terms) goes above an older one whose
relevance it nearly matches (`ranking.same_topic_window`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from optmem import view
from optmem.record import CORRECTION, Tier
from optmem.settings import Ranking

K1, B = 1.2, 0.75
DAY = 86400.0
TIER_FACTOR = {Tier.CHAT: 0.97, Tier.NORMAL: 1.0, Tier.EVIDENCE: 1.03, Tier.REDLINE: 1.03}


def idf(docs: int, df: int) -> float:
    """Inverse document frequency that stays positive however common the term."""
    return math.log(1 + (docs - df + 0.5) / (df + 0.5))


def bm25(tf: Counter[str], dl: int, terms: Iterable[str], idfs: dict[str, float], avgdl: float) -> float:
    """BM25 of one document (term counts `tf`, length `dl`) for the query `terms`."""
    score = 0.0
    norm = K1 * (1 - B + B * dl / avgdl)
    for t in terms:
        f = tf.get(t, 0)
        if f:
            score += idfs[t] * f * (K1 + 1) / (f + norm)
    return score


class Candidate(NamedTuple):
    """What the score of a hit depends on."""

    relevance: float
    tier: int
    kind: str
    status: view.Status
    recency: float | None     # when it was last said (its time, or a later restatement)


@dataclass(frozen=True)
class Parts:
    """A hit's score and every part of it."""

    relevance: float
    tier_factor: float
    recency_bonus: float
    age_days: int
    band: int
    status: view.Status
    score: float

    def explain(self, promoted_over: str | None) -> dict[str, Any]:
        return {"relevance": round(self.relevance, 4), "recency_bonus": round(self.recency_bonus, 4),
                "age_days": self.age_days, "tier_factor": self.tier_factor,
                "band": str(view.BANDS[self.band]), "status": self.status.value,
                "promoted_over": promoted_over}


def tier_factor(tier: int, kind: str) -> float:
    """Trust breaks near-ties; a correction counts like evidence."""
    factor = TIER_FACTOR[Tier(tier)]
    return max(factor, TIER_FACTOR[Tier.EVIDENCE]) if kind == CORRECTION else factor


def score(c: Candidate, now: float, settings: Ranking) -> Parts:
    """The score of one candidate and its parts (see the module docstring)."""
    window = settings.recency_window
    band = view.band(c.status, c.tier)
    age_days = max(0, int((now - (c.recency if c.recency is not None else 0.0)) // DAY))
    # redlines never decay; everything else gets at most the window, shrinking with whole days
    bonus = window if band == 0 else window / (1 + age_days / 30)
    factor = tier_factor(c.tier, c.kind)
    return Parts(c.relevance, factor, bonus, age_days, band, c.status,
                 c.relevance * factor * (1 + bonus))


class Topic(NamedTuple):
    """What tells whether two hits are about the same thing."""

    id: str
    key: str | None
    scope: tuple[str, str | None]          # (domain, project): keys are scoped
    superseded_by: str | None
    corrects: tuple[str, ...]
    tokens: frozenset[str]


def same_topic(a: Topic, b: Topic) -> bool:
    """About the same thing: a shared key, a correction link, or mostly the same terms."""
    if a.key and a.key == b.key and a.scope == b.scope:
        return True
    if a.superseded_by == b.id or b.superseded_by == a.id or a.id in b.corrects or b.id in a.corrects:
        return True
    if not a.tokens or not b.tokens:
        return False
    return len(a.tokens & b.tokens) / len(a.tokens | b.tokens) >= 0.5


class Ranked(NamedTuple):
    """A hit in ranking order, and whose place it took (the newer-first rule)."""

    at: int                    # index into the list given to `promote_newer`
    promoted_over: str | None


def promote_newer(hits: list[tuple[Parts, Topic]], window: float) -> list[Ranked]:
    """Within a band, put a newer same-topic record (by whole days) above an older one whose
    relevance is at least `1 - window` of the older one's. `hits` come in score order."""
    keep = 1 - window
    out: list[Ranked] = []
    for i, (parts, topic) in enumerate(hits):
        pos, over = len(out), None
        for j, placed in enumerate(out):
            o_parts, o_topic = hits[placed.at]
            if (o_parts.band == parts.band and parts.age_days < o_parts.age_days
                    and same_topic(topic, o_topic) and parts.relevance >= keep * o_parts.relevance):
                pos, over = j, o_topic.id
                break
        out.insert(pos, Ranked(i, over))
    return out
