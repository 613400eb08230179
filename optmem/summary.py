"""A summary-tree node's body: what the built-in summariser writes, and how a body is read,
labelled and trimmed.

A body quotes records as bullets — `- text (`ID`) [badge]` — so a reader can drill down; a badge
says what the record is (a correction, a redline, a guess `[pending]`, an agent's conclusion
`[inferred]`). The extractive summariser counts kinds, finds key terms (Chinese ones as words,
without a segmenter) and quotes the most representative items within a size bound. A shown body
labels each bullet whose record is no longer what the node says, from the index through
`optmem.view`; a kept body (a person's edit) loses only the lines quoting forgotten records.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from optmem import clock, view
from optmem import text as textmod
from optmem.record import Record

if TYPE_CHECKING:
    from optmem.index import Index
    from optmem.schema import Row

# a quoted record: "- text (`ID`) [badge] [badge]"
BULLET = re.compile(r"^- (.*) \(`([0-9A-Za-z]{6,26})`\)((?: \[[^\[\]]+\])*)$")
_BADGE = re.compile(r"\[([^\[\]]+)\]")
PENDING, INFERRED = "pending", "inferred"  # the badges of a guess and of an agent's conclusion
CONFLICT = "conflict"  # one of two values that stand together: the user is asked which is right
KEPT_BADGES = ("correction", "redline")   # a bullet with one of these is always quoted


# -- the extractive summariser -----------------------------------------------------------------
@dataclass(frozen=True)
class Item:
    """One line a summary may quote: a record (level 1) or a line of a child node."""

    id: str
    text: str
    badges: tuple[str, ...]  # redline | correction, then pending | inferred
    kind: str


def _terms(text: str) -> list[str]:
    return [t for t in textmod.tokens(text, stem=False) if len(t) > 1 and t not in textmod.STOPWORDS and not t.isdigit()]


# Chinese has no spaces, and optmem no word segmenter: the tokeniser's bigrams (色主, 置为 from
# 深色主题, 设置为) serve search, but are no words to show. A key term is a string of Han
# characters that recurs across the items and whose neighbours vary on both sides (a string
# nearly always preceded by the same character is the tail of a longer word, not a word).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
_HAN_RUN = re.compile(f"[{_HAN}]+")
_TERM_LONGEST = 6  # characters: longer recurring strings are phrases, their words are found inside
# characters that carry grammar, not a topic: a term made only of them says nothing (一个, 可以)
_FUNCTION_CHARS = frozenset("的地得了着过是在和与及或也都就还又很太"
                            "把被给对向从到为于以之其而且吗呢吧啊呀"
                            "嘛哦么这那哪谁我你他她它们个一不没有要会能可将让使")
# particles that cling to the edge of the word beside them (为深色主题, 主题的): trimmed off a
# term; chars that often begin or end a word themselves (在线, 对象, 通过) are not among them
_LEADING = frozenset("的把被为和与")
_TRAILING = frozenset("的了着吗呢吧啊呀嘛哦")


def _han_terms(texts: list[str]) -> Counter[str]:
    """Chinese key terms of `texts`, each with the number of texts holding it: strings of 2–6 Han
    characters that recur in several texts (or stand alone between punctuation, spaces or other
    scripts, 2–4 characters), neither side dominated by one neighbour, particles trimmed off the
    edges, none made only of function characters. Deterministic."""
    runs = [_HAN_RUN.findall(t) if textmod.has_cjk(t) else [] for t in texts]  # as written
    if not any(runs):
        return Counter()
    # every run of every text in one string, a space between runs; owner[i]: the text of place i
    joined = " ".join(run for text_runs in runs for run in text_runs)
    owner = [t for t, text_runs in enumerate(runs) for run in text_runs for _ in range(len(run) + 1)]
    # apriori: a string of n characters recurs only where its two halves of n-1 do, so each
    # length looks only at the places the last one left (up to one longer than a term, to see
    # whether the longest terms are parts of longer strings)
    df: Counter[str] = Counter()
    places = [i for i in range(len(joined) - 1) if joined[i] != " " and joined[i + 1] != " "]
    for n in range(2, _TERM_LONGEST + 2):
        grams = [joined[i : i + n] for i in places]
        held = Counter(g for _, g in set(zip([owner[i] for i in places], grams)))
        recurring = {g for g, c in held.items() if c >= 2}
        if not recurring:
            break
        df.update({g: held[g] for g in recurring})
        ok = [i for i, g in zip(places, grams) if g in recurring]
        kept = set(ok)
        places = [i for i in ok if i + 1 in kept]
    alone = Counter(r for text_runs in runs for r in set(text_runs) if 2 <= len(r) <= 4)
    # how often its most frequent one-character extension recurs, on either side
    top: dict[str, int] = {}
    for g, c in df.items():
        if len(g) > 2:
            for part in (g[1:], g[:-1]):
                if c > top.get(part, 0):
                    top[part] = c

    def varied(g: str) -> bool:
        # one neighbour in (nearly) every text that holds it, on either side: the string is part
        # of a longer one (色主 of 深色主题); the edge of a run is a boundary, never a neighbour
        return 4 * top.get(g, 0) < 3 * df[g]

    words = {g for g in df if len(g) <= _TERM_LONGEST and varied(g)}
    found: Counter[str] = Counter()
    for g, count in [*((g, df[g]) for g in words), *alone.items()]:
        if any(part in words and df[part] > count for part in (g[1:], g[:-1])):
            continue  # a word that recurs more often, and a neighbour it happens to have (端端口)
        term = g
        while term and term[0] in _LEADING:
            term = term[1:]
        while term and term[-1] in _TRAILING:
            term = term[:-1]
        if len(term) < 2 or all(ch in _FUNCTION_CHARS for ch in term):
            continue
        found[term] = max(found[term], df.get(term, count), count)
    return found


def key_terms(texts: list[str], limit: int = 12, *, words: Counter[str] | None = None) -> list[str]:
    """The words a set of texts is about, most shared first: English (and other spaced) words as
    written, Chinese terms found as `_han_terms` finds them — never a fragment across words.
    `words`: the texts' `_terms` counted once per text, when the caller has them already."""
    if words is None:
        words = Counter(t for text in texts for t in set(_terms(text)))
    counts = Counter({t: n for t, n in words.items() if t.isascii() or not _HAN_RUN.search(t)})
    counts.update(_han_terms(texts))
    return [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def bullet(it: Item) -> str:
    """How a summary quotes a record (its id kept for drill-down) and what it is."""
    return f"- {' '.join(it.text.split())[:200]} (`{it.id}`)" + "".join(f" [{b}]" for b in it.badges)


def extractive(domain: str, level: int, start: str, end: str, count: int, items: list[Item],
               kinds: Counter[str], max_chars: int) -> str:
    """Counts by kind, key terms, then the most representative items (ids kept for drill-down);
    corrections and redlines always make it in. Deterministic."""
    tf: Counter[str] = Counter()
    per_item = []
    for it in items:
        terms = set(_terms(it.text))
        per_item.append(terms)
        tf.update(terms)
    head = [f"**{domain}** · level {level} · {count:,} records · {start[:10]} → {end[:10]}", "",
            "Kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
            "Key terms: " + (", ".join(key_terms([it.text for it in items], words=tf)) or "—"), ""]

    def centrality(i: int) -> float:
        terms = per_item[i]
        return sum(math.log(1 + tf[t]) for t in terms) / math.sqrt(1 + len(terms))

    must = [i for i, it in enumerate(items) if set(it.badges) & set(KEPT_BADGES)]
    rest = sorted((i for i in range(len(items)) if i not in set(must)),
                  key=lambda i: (-centrality(i), items[i].id))
    chosen: list[int] = []
    size = sum(len(h) + 1 for h in head)
    for i in must + rest:
        line = bullet(items[i])
        if i not in must and size + len(line) + 1 > max_chars:
            continue
        chosen.append(i)
        size += len(line) + 1
    return "\n".join(head + [bullet(items[i]) for i in sorted(chosen)]) + "\n"


# -- reading a body --------------------------------------------------------------------------
def badges(tail: str) -> tuple[str, ...]:
    """The badges at the end of a bullet ("[correction] [pending]" → correction, pending)."""
    return tuple(_BADGE.findall(tail))


def items_of(body: str) -> list[Item]:
    """The records a body quotes, as items a node above may quote in turn."""
    items = []
    for line in body.splitlines():
        m = BULLET.match(line.strip())
        if m:
            items.append(Item(m.group(2), m.group(1), badges(m.group(3)), "summary"))
    return items


def kinds_of(body: str) -> Counter[str]:
    """The counts by kind a body's "Kinds:" line gives."""
    for line in body.splitlines():
        if line.startswith("Kinds: "):
            out: Counter[str] = Counter()
            for part in line[7:].split(", "):
                name, _, n = part.rpartition(" ")
                if n.isdigit():
                    out[name] += int(n)
            return out
    return Counter()


# -- a body kept as it is, without what was forgotten ------------------------------------------
class Gone(NamedTuple):
    """A forgotten record as the tree's lines may hold it."""

    needles: list[str]  # its id, the short id optmem prints, its text (when long enough not to be everywhere)
    text: str           # folded, for the key terms it gave


def gone(row: Row, rec: Record) -> Gone:
    """What marks a line as quoting the forgotten record `rec` (its index row: `row`)."""
    flat = " ".join(rec.text.split())[:80]
    return Gone([row.id, row.id[-8:], *([flat] if len(flat) >= 6 else [])], textmod.fold(rec.text))


_TERMS_LINE = "Key terms: "


def _prune_terms(lines: list[str], gone_texts: list[str]) -> list[str]:
    """`lines` with their "Key terms:" line rid of the terms only forgotten texts held (a term
    another line still says stays)."""
    if not gone_texts:
        return lines
    kept = textmod.fold("".join(x for x in lines if not x.startswith(_TERMS_LINE)))
    out = []
    for line in lines:
        if line.startswith(_TERMS_LINE):
            terms = line[len(_TERMS_LINE):].rstrip("\n").split(", ")
            left = [t for t in terms
                    if textmod.fold(t) in kept or not any(textmod.fold(t) in g for g in gone_texts)]
            if left != terms:
                line = _TERMS_LINE + (", ".join(left) or "—") + ("\n" if line.endswith("\n") else "")
        out.append(line)
    return out


def strip(body: str, forgotten: dict[str, Gone]) -> tuple[str, int]:
    """A body without the lines quoting the `forgotten` records (by id): a bullet by its id, any other
    line (a person's words) by its id, short id or text; and without the key terms only they
    gave. Returns (body, lines removed)."""
    kept, removed = [], 0
    for line in body.splitlines(keepends=True):
        m = BULLET.match(line.strip())
        if m:
            quotes = m.group(2) in forgotten
        else:
            flat = " ".join(line.split())
            quotes = not flat.startswith(_TERMS_LINE) and any(n in flat for g in forgotten.values() for n in g.needles)
        if quotes:
            removed += 1
        else:
            kept.append(line)
    return "".join(_prune_terms(kept, [g.text for g in forgotten.values()] if removed else [])), removed


# -- a body as shown ---------------------------------------------------------------------------
class Shown:
    """Node bodies as shown: each quoted record labelled with what it is now, when that is no
    longer what the node says (`[superseded by …]`, `[expired]`, `[pending]` added or gone), and
    a forgotten one left out — so a node always agrees with `get`, even before `compact` makes
    it again."""

    def __init__(self, idx: Index, bodies: Iterable[str] = ()) -> None:
        self.idx = idx
        self.now = clock.now().timestamp()
        self.rows: dict[str, Row | None] = {}
        # the records all `bodies` quote, read at once (one query per 500, not one per line)
        wanted = sorted({m.group(2) for body in bodies for line in body.splitlines()
                         if (m := BULLET.match(line.strip()))})
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            self.rows.update({rid: None for rid in chunk})
            for row in sorted(idx.rows(f"r.id IN ({', '.join('?' * len(chunk))})", chunk), key=lambda r: -r.n):
                self.rows[row.id] = row  # the first line of an id, as `by_id` reads it

    def __call__(self, body: str) -> str:
        out, dropped = [], []
        for line in body.splitlines(keepends=True):
            m = BULLET.match(line.strip())
            if m is None:
                out.append(line)
                continue
            rid = m.group(2)
            if rid not in self.rows:
                self.rows[rid] = self.idx.by_id(rid)
            row = self.rows[rid]
            if row is None:
                out.append(line)
                continue
            st = view.status(row, self.now, warm=True)
            if st == view.Status.FORGOTTEN:
                dropped.append(textmod.fold(m.group(1)))
                continue
            said = badges(m.group(3))
            torn = row.disputed and st in view.LIVE
            now = [b for b in said if (b != PENDING or st == view.Status.PENDING) and (b != CONFLICT or torn)]
            if torn and CONFLICT not in now:
                now.append(CONFLICT)
            if st == view.Status.PENDING and PENDING not in now:
                now.append(PENDING)
            elif st == view.Status.SUPERSEDED:
                now.append(f"superseded by {row.superseded_by[-8:]}" if row.superseded_by else "superseded")
            elif st == view.Status.EXPIRED:
                now.append("expired")
            if tuple(now) == said:
                out.append(line)
                continue
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}- {m.group(1)} (`{rid}`)" + "".join(f" [{b}]" for b in now)
                       + ("\n" if line.endswith("\n") else ""))
        return "".join(_prune_terms(out, dropped))


