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
from typing import TYPE_CHECKING, Any, NamedTuple

from optmem import clock, view
from optmem import text as textmod
from optmem.reading.lexicon import STOPWORDS
from optmem.record import Record

if TYPE_CHECKING:
    from optmem.index import Index
    from optmem.schema import Row

# a quoted record: "- text (`ID`) [badge] [badge]"
BULLET = re.compile(r"^- (.*) \(`([0-9A-Za-z]{6,26})`\)((?: \[[^\[\]]+\])*)$")
_BADGE = re.compile(r"\[([^\[\]]+)\]")
PENDING, INFERRED = "pending", "inferred"  # the badges of a guess and of an agent's conclusion
UNVERIFIED = "unverified redline"  # a redline's badge, shown, in a vault the user has not trusted
CONFLICT = "conflict"  # one of two values that stand together: the user is asked which is right
STATE = "state"  # a temporary state ("worked until 3 am last night"), not a habit
KEPT_BADGES = ("correction", "redline")  # a bullet with one of these is always quoted
GUESS_BADGES = ("may be a new value of ", "may have been updated by ")  # shown, never stored (`view.guess_notes`)


def provenance(row: Row) -> list[str]:
    """The badge of a quoted record that came from outside the conversation (a tool's output, an
    import, another clone: `quarantine.secondhand`), as `context` fences such records apart —
    else none. The same for a node's stored body and for every node as shown (`Shown`)."""
    from optmem.quarantine import secondhand, where_from

    return [where_from(str(row.origin))] if secondhand(row.origin) else []


# -- the extractive summariser -----------------------------------------------------------------
@dataclass(frozen=True)
class Item:
    """One line a summary may quote: a record (level 1) or a line of a child node."""

    id: str
    text: str
    badges: tuple[str, ...]  # redline | correction, then pending | inferred
    kind: str


_BLOCKED = re.compile(r"\[BLOCKED: [a-z][a-z0-9_]*\]")  # a text the read-side scan flagged, as shown


def _terms(text: str) -> list[str]:
    if _BLOCKED.fullmatch(text):  # no key terms from optmem's own placeholder
        return []
    return [t for t in textmod.tokens(text, stem=False) if len(t) > 1 and t not in STOPWORDS and not t.isdigit()]


# Chinese has no spaces, and optmem no word segmenter: the tokeniser's bigrams (色主, 置为 from
# 深色主题, 设置为) serve search, but are no words to show. A key term is a string of Han
# characters that recurs across the items and whose neighbours vary on both sides (a string
# nearly always preceded by the same character is the tail of a longer word, not a word).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
_HAN_RUN = re.compile(f"[{_HAN}]+")
_TERM_LONGEST = 6  # characters: longer recurring strings are phrases, their words are found inside
# characters that carry grammar, not a topic: a term made only of them says nothing (一个, 可以)
_FUNCTION_CHARS = frozenset(
    "的地得了着过是在和与及或也都就还又很太"
    "把被给对向从到为于以之其而且吗呢吧啊呀"
    "嘛哦么这那哪谁我你他她它们个一不没有要会能可将让使"
)
# words that carry grammar though not all their characters do: conjunctions, adverbs, pronouns
_FUNCTION_WORDS = frozenset(
    "因为 所以 但是 如果 虽然 然后 然而 因此 或者 并且 只是 总是 已经 其实 当然 比如 "
    "例如 以后 之后 以前 之前 现在 自己 什么 怎么 这样 那样 如何 为什么 还有 所有 "
    "非常 比较 一直 一定 一样 一下 一些 关于 对于 由于 根据 按照 即使 尽管 而是".split()
)
_FUNCTION_WORDS_LONGEST_FIRST = tuple(sorted(_FUNCTION_WORDS, key=lambda w: (-len(w), w)))
# Function characters, a closed class: each is a word of its own beside a content word — before
# it (把字体, 为方案) or after it (设置为, 主题的, 因为第) — except beside the characters it makes a
# word with: those before it (目的, 参与, 存在, 方向, 行为, 因为) and those after it (在线, 对象,
# 第三, 和平, 向量), the ones such a word most often has in a general word-frequency list, and
# common technical words. Beside a string it is no neighbour (a string always after 把 is not
# the tail of a longer word for that), and off a term's edge it is trimmed.
_GLUE: dict[str, tuple[str, str]] = {  # char: (the characters before it, after it, it makes a word with)
    "的": ("目真似别有", "确话士"),
    "了": ("为除不罢算极", "解结"),
    "着": ("随看接有想指沿顺睡跟朝向当为围本凭靠味沉穿", "手重急实眼陆想落"),
    "吗": ("干", "啡"),
    "呢": ("花毛", "绒子喃"),
    "吧": ("网酒氧书", "台嗒"),
    "啊": ("", ""),
    "呀": ("哎", ""),
    "嘛": ("喇干", ""),
    "哦": ("", ""),
    "把": ("一火两几", "握手关头持守柄"),
    "被": ("植棉", "迫捕动子告评"),
    "给": ("交送供递留补发带献分输付还让写借转", "予出养与"),
    "对": ("反相面绝针一不敌核校比配", "于方象外手付待抗面话立比此应称策准照口峙联齐接"),
    "从": ("是自服无随听顺遵", "而事此来未不业前小中没容头属"),
    "向": ("方走倾转面一趋推定通指导流投动横偏意双纵风单正反引航径内外志", "前来往东西南北上下着导量日"),
    "第": ("次门府及", "一二三四五六七八九十几"),
    "为": ("成因认作称行以极最更较视变化转名身人尤大誉评沦", "了主何首止期什人"),
    "在": ("现存实坐放正不所留自潜内外", "于内线场职意乎外"),
    "是": ("不但可于而还正就却真便总更只算要或像竟凡乃也都", "否非"),
    "和": ("共温缓调总柔平暖", "平谐解约尚好"),
    "与": ("参给赠授", "其会否"),
    "及": ("以涉埃不普遍提危顾触未波来", "其时至早格"),
    "或": ("抑倘间甚", "者是许"),
    "也": ("再", "许好罢"),
    "都": ("首成大全迁建古京", "市城督"),
    "就": ("成早造也", "是业算要此近"),
    "还": ("归偿退交返生", "有是要原好款"),
    "又": ("", "称名"),
    "很": ("", "多大快少小早"),
}


def _apart_before(f: str, nxt: str) -> bool:
    """`f` before `nxt` is a word of its own (把 before 字体), not the start of one (对象)."""
    return f in _GLUE and nxt not in _GLUE[f][1]


def _apart_after(prev: str, f: str) -> bool:
    """`f` after `prev` is a word of its own (为 after 设置), not the end of one (行为)."""
    return f in _GLUE and prev not in _GLUE[f][0]


# a measure word right after a number belongs to the number (第3次会议 → 会议, 5个节点 → 节点)
_MEASURE = frozenset("次个位条件张本台元块号只种项份篇名岁倍天年月日周")


def _han_runs(text: str) -> list[str]:
    """The runs of Han characters of `text` as written, a measure word after a digit left off."""
    runs = []
    for m in _HAN_RUN.finditer(text):
        run = m.group()
        if m.start() and text[m.start() - 1].isdigit() and run[0] in _MEASURE:
            run = run[1:]
        if run:
            runs.append(run)
    return runs


def _trim(g: str) -> str:
    """`g` without the function characters that stand apart at its edges (用户把 → 用户, 因为第
    → 因为; 参与, 在线 stay), nor the function words (因为监控 → 监控); "" when nothing of two
    characters is left."""
    while len(g) >= 2:
        if _apart_before(g[0], g[1]):
            g = g[1:]
        elif _apart_after(g[-2], g[-1]):
            g = g[:-1]
        elif word := next((w for w in _FUNCTION_WORDS_LONGEST_FIRST if len(g) > len(w) and g.startswith(w)), ""):
            g = g[len(word) :]
        elif word := next((w for w in _FUNCTION_WORDS_LONGEST_FIRST if len(g) > len(w) and g.endswith(w)), ""):
            g = g[: -len(word)]
        else:
            return g
    return ""


def _joins(g: str) -> bool:
    """Whether `g` is two strings with a function character between them (设置为方案, 上海的服务
    器): no term — the maximal strings of content on either side are."""
    return any(_apart_after(g[j - 1], g[j]) and _apart_before(g[j], g[j + 1]) for j in range(1, len(g) - 1))


def _han_terms(texts: list[str]) -> Counter[str]:
    """Chinese key terms of `texts`, each with the number of texts holding it: strings of 2–6 Han
    characters that recur in several texts (or stand alone between punctuation, spaces or other
    scripts, 2–4 characters), neither side dominated by one neighbour (a function character
    beside it is no neighbour), function characters trimmed off the edges, none that is two
    words joined by a function character (设置为方案), none a function word. Deterministic."""
    runs = [_han_runs(t) if textmod.has_cjk(t) else [] for t in texts]
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

    # how often its most frequent one-character extension recurs, on either side — a function
    # character that is a word of its own there (把 before 字体, 为 after 设置; not 为 of 行为准则,
    # mostly with the character it makes a word with on its other side) extends nothing
    def apart(g: str, first: bool) -> bool:
        # g: the string and its extension, first: the extension is g's first character
        if first:
            beside, around = _apart_before(g[0], g[1]), (x + g for x in _GLUE.get(g[0], ("", ""))[0])
        else:
            beside, around = _apart_after(g[-2], g[-1]), (g + x for x in _GLUE.get(g[-1], ("", ""))[1])
        return beside and 2 * sum(df.get(a, 0) for a in around) < df[g]

    top: dict[str, int] = {}
    for g, c in df.items():
        if len(g) > 2:
            for part, first in ((g[1:], True), (g[:-1], False)):
                if c > top.get(part, 0) and not apart(g, first):
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
        term = _trim(g)
        if len(term) < 2 or term in _FUNCTION_WORDS or all(ch in _FUNCTION_CHARS for ch in term) or _joins(term):
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


def _guessed(it: Item) -> bool:
    """A guess (`[pending]`) or an agent's inference (`[inferred]`): no key term is its word."""
    return PENDING in it.badges or INFERRED in it.badges


def bullet(it: Item) -> str:
    """How a summary quotes a record (its id kept for drill-down) and what it is."""
    return f"- {' '.join(it.text.split())[:200]} (`{it.id}`)" + "".join(f" [{b}]" for b in it.badges)


def header(domain: str, level: int, count: int, start: str, end: str) -> str:
    """A generated body's first line: what the node covers (`restate` keeps it true in a body a
    person edited)."""
    return f"**{domain}** · level {level} · {count:,} records · {start[:10]} → {end[:10]}"


_HEADER = re.compile(r"^\*\*(?P<domain>[^*\n]+)\*\* · level \d+ · [\d,]+ records · \S+ → \S+$")


def restate(body: str, level: int, count: int, start: str, end: str) -> str:
    """`body` with its generated header (`header`, on its first line) saying what the node covers
    now — a body a person edited is kept, but the count and range it states are not theirs to
    keep stale; a body without that header is returned as it is."""
    first, nl, rest = body.partition("\n")
    m = _HEADER.match(first)
    return header(m.group("domain"), level, count, start, end) + nl + rest if m else body


def extractive(
    domain: str, level: int, start: str, end: str, count: int, items: list[Item], kinds: Counter[str], max_chars: int
) -> str:
    """Counts by kind, key terms, then the most representative items (ids kept for drill-down);
    corrections and redlines always make it in. The key terms are what the node's current records
    state: a guess quoted `[pending]` gives none (tester 16 #10j — "maybe", "tea" from a guess read
    as what the records are about), nor does an agent's inference `[inferred]` (tester 18 #4: its
    words stood unbadged among the terms, the record itself not quoted). Deterministic."""
    tf: Counter[str] = Counter()
    said: Counter[str] = Counter()  # (the terms of the items that are no guess: the key terms')
    per_item = []
    for it in items:
        terms = set(_terms(it.text))
        per_item.append(terms)
        tf.update(terms)
        if not _guessed(it):
            said.update(terms)
    held = [it.text for it in items if not _guessed(it)]
    head = [
        header(domain, level, count, start, end),
        "",
        "Kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
        "Key terms: " + (", ".join(key_terms(held, words=said)) or "—"),
        "",
    ]

    def centrality(i: int) -> float:
        terms = per_item[i]
        return sum(math.log(1 + tf[t]) for t in terms) / math.sqrt(1 + len(terms))

    must = [i for i, it in enumerate(items) if set(it.badges) & set(KEPT_BADGES)]
    rest = sorted((i for i in range(len(items)) if i not in set(must)), key=lambda i: (-centrality(i), items[i].id))
    chosen: list[int] = []
    size = sum(len(h) + 1 for h in head)
    for i in must + rest:
        line = bullet(items[i])
        if i not in must and size + len(line) + 1 > max_chars:
            continue
        chosen.append(i)
        size += len(line) + 1
    return "\n".join(head + [bullet(items[i]) for i in sorted(chosen)]) + "\n"


def replaced(
    domain: str, start: str, end: str, count: int, kinds: Counter[str], texts: list[str], gone: Counter[str]
) -> str:
    """The body of a level-1 node none of whose records holds now (every one superseded, expired,
    removed, forgotten or held): what it covered — the key terms of the records replaced or
    expired (`texts`; a forgotten or held record's words are never quoted) — and that its records
    were replaced, by how many of each (`gone`: status → count), not an empty summary whose key
    terms read "—"."""
    terms = ", ".join(key_terms(texts)) or "—"
    how = ", ".join(f"{n} {status}" for status, n in sorted(gone.items(), key=lambda kv: (-kv[1], kv[0])))
    return (
        "\n".join(
            [
                header(domain, 1, count, start, end),
                "",
                "Kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
                f"Key terms: {terms}",
                "",
                f"None of these {count:,} records holds now ({how}): what they said was replaced or has "
                "expired since — the records that replaced them are summarised where they were written; "
                "`optmem history` shows each value of a key, `optmem get ID` one record.",
            ]
        )
        + "\n"
    )


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


# -- a body kept as it is, without what was forgotten ------------------------------------------
class Gone(NamedTuple):
    """A forgotten record as the tree's lines may hold it."""

    needles: list[str]  # its id, the short id optmem prints, its text (when long enough not to be everywhere)
    text: str  # folded, for the key terms it gave


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
            terms = line[len(_TERMS_LINE) :].rstrip("\n").split(", ")
            left = [t for t in terms if textmod.fold(t) in kept or not any(textmod.fold(t) in g for g in gone_texts)]
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
    longer what the node says (`[superseded by …]`, `[expired]`, `[pending]` added or gone,
    `[unverified redline]` in a vault the user has not trusted), and
    a forgotten one left out — so a node always agrees with `get`, even before `compact` makes
    it again."""

    def __init__(self, idx: Index, bodies: Iterable[str] = ()) -> None:
        self.idx = idx
        self.now = clock.now().timestamp()
        self.rows: dict[str, Row | None] = {}
        self.quoting: list[tuple[str, Row, str]] = []  # (a line shown, the record it quotes, its words)
        self._guessed: dict[str, dict[str, Any]] = {}  # id → the guesses that stand about it (`_guesses`)
        # the records all `bodies` quote, read at once (one query per 500, not one per line)
        wanted = sorted(
            {m.group(2) for body in bodies for line in body.splitlines() if (m := BULLET.match(line.strip()))}
        )
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
            now += [b for b in provenance(row) if b not in now]  # (a node made before nodes said so)
            if row.state and STATE not in now:
                now.append(STATE)
            if st == view.Status.PENDING and PENDING not in now:
                now.append(PENDING)
            elif st == view.Status.SUPERSEDED:
                now.append(f"superseded by {row.superseded_by[-8:]}" if row.superseded_by else "superseded")
            elif st in (view.Status.EXPIRED, view.Status.REMOVED):
                now.append(st.value)
            if not self.idx.vault.trusted:  # a vault from a clone: its redlines are notes (`optmem.trust`)
                now = [UNVERIFIED if b == "redline" else b for b in now]
            # the write gate's guesses that stand, worded and found as every surface finds them
            now = [b for b in now if not b.startswith(GUESS_BADGES)] + self._guesses(row, st)
            if tuple(now) != said:
                indent = line[: len(line) - len(line.lstrip())]
                line = (
                    f"{indent}- {m.group(1)} (`{rid}`)"
                    + "".join(f" [{b}]" for b in now)
                    + ("\n" if line.endswith("\n") else "")
                )
            out.append(line)
            self.quoting.append((line.rstrip("\n"), row, m.group(1)))
        return "".join(_prune_terms(out, dropped))

    def _guesses(self, row: Row, st: view.Status) -> list[str]:
        """The write gate's guesses that stand about a quoted record (`Index.guesses`, as `get`
        finds them), as badges worded as `search` words them (`view.guess_notes`). Looked up for
        every record read so far at once, then one at a time for a record read later."""
        if st not in view.LIVE:
            return []
        if row.id not in self._guessed:
            live = {
                rid: r.upd
                for rid, r in self.rows.items()
                if r is not None and rid not in self._guessed and view.status(r, self.now) in view.LIVE
            }
            found = self.idx.guesses(live or {row.id: row.upd}, self.now)
            self._guessed.update({rid: found.get(rid, {}) for rid in (live or {row.id: None})})
        got = self._guessed.get(row.id, {})
        return view.guess_notes(got.get("may_update"), got.get("updated_by", ()))

    def as_stored(self) -> set[str]:
        """The lines shown so far that quote their record word for word (as `bullet` quotes it)
        when every surface shows that record's words as stored (`view.as_stored`): such a line is
        shown as stored too, as `get` shows the record (`view.display_lines`)."""
        ok = self.idx.as_stored([row for _, row, _ in self.quoting])
        return {
            line
            for line, row, words in self.quoting
            if row.n in ok and words == " ".join(self.idx.record(row).text.split())[:200]
        }
