"""The summary tree: records roll up into readable overviews, per domain ("攒多了再往上层收拢").

A level-1 node summarises a run of `tree.run` (64) consecutive records of a domain, in time
order; a level-k+1 node summarises `tree.fanout` (8) level-k nodes; only full runs are sealed,
the rest stays raw. Each domain also has a `root` node over its current top-level nodes — the
only node that is ever rewritten. Nodes are Markdown files with front matter under
`tree/<domain>/`; a person may edit a node's body and later compactions keep the edit. The log
is only read.

The built-in summariser is extractive and deterministic: counts by kind, key terms, and the most
representative current records with their ids (corrections and redlines always kept, superseded
records left out), within `tree.max_chars`. `--summarizer CMD` pipes a node's input to a command
instead, falling back to the extractive summary (with a warning) when it fails or times out.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from optmem import clock, fsio, ranking, view
from optmem import meta as metamod
from optmem import text as textmod
from optmem.errors import BadFrontMatter, NotFound, Unreadable, UsageError
from optmem.record import CORRECTION, Record, Tier
from optmem.runner import run_command
from optmem.vault import NAME_RE, Vault, validate_name

EXTRACTIVE = "extractive"
_NODE_FILE = re.compile(r"^L(\d+)-(\d+)\.md$")
_BULLET_ID = re.compile(r"^- (.*) \(`([0-9A-Za-z]{6,26})`\)(?: \[(\w+)\])?$")


@dataclass(frozen=True)
class Node:
    id: str                    # L1-0001, L2-0001, …, or root
    level: int
    domain: str
    start: str                 # `from` in the front matter
    end: str                   # `to`
    count: int                 # records covered
    children: list[str]        # record ids (level 1) or node ids
    summarizer: str = EXTRACTIVE
    body: str = ""
    root: bool = False
    digest: str | None = None  # of the body as generated: a mismatch means a person edited it

    @property
    def path_name(self) -> str:
        return "root.md" if self.root else f"{self.id}.md"

    @property
    def edited(self) -> bool:
        return self.digest is not None and self.digest != textmod.digest(self.body.encode("utf-8"))


def render(node: Node) -> str:
    return metamod.render({
        "id": node.id, "level": node.level, "root": True if node.root else None,
        "domain": node.domain, "from": node.start, "to": node.end, "count": node.count,
        "children": node.children, "summarizer": node.summarizer,
        "digest": node.digest or textmod.digest(node.body.encode("utf-8"))}, node.body)


def parse(text: str) -> Node:
    """A node file back into a Node; raises UsageError on missing or malformed front matter."""
    meta, body = metamod.split(text)
    if meta is None:
        raise BadFrontMatter("no front matter")
    missing = [k for k in ("id", "level", "domain", "from", "to", "count", "children") if k not in meta]
    if missing:
        raise BadFrontMatter(f"front matter lacks {', '.join(missing)}")
    if not isinstance(meta["level"], int) or not isinstance(meta["children"], list):
        raise BadFrontMatter("level must be an integer and children a list")
    return Node(id=str(meta["id"]), level=meta["level"], domain=str(meta["domain"]),
                start=str(meta["from"]), end=str(meta["to"]), count=int(meta["count"]),
                children=[str(c) for c in meta["children"]],
                summarizer=str(meta.get("summarizer", EXTRACTIVE)), body=body,
                root=bool(meta.get("root")), digest=meta.get("digest"))


# -- summarising -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Item:
    """One line a summary may quote: a record (level 1) or a line of a child node."""

    id: str
    text: str
    badge: str | None       # correction | redline | None
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
_FUNCTION_CHARS = frozenset("的地得了着过是在和与及或也都就还又很太把被给对向从到为于以之其而且吗呢吧啊呀嘛哦么"
                            "这那哪谁我你他她它们个一不没有要会能可将让使")
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

    must = [i for i, it in enumerate(items) if it.badge in ("correction", "redline")]
    rest = sorted((i for i in range(len(items)) if i not in set(must)),
                  key=lambda i: (-centrality(i), items[i].id))

    def bullet(it: Item) -> str:
        return f"- {' '.join(it.text.split())[:200]} (`{it.id}`)" + (f" [{it.badge}]" if it.badge else "")

    chosen: list[int] = []
    size = sum(len(h) + 1 for h in head)
    for i in must + rest:
        line = bullet(items[i])
        if i not in must and size + len(line) + 1 > max_chars:
            continue
        chosen.append(i)
        size += len(line) + 1
    return "\n".join(head + [bullet(items[i]) for i in sorted(chosen)]) + "\n"


# -- the tree of one domain ------------------------------------------------------------------
def _load(folder: Path) -> tuple[dict[str, Node], Node | None, list[str]]:
    nodes: dict[str, Node] = {}
    root = None
    problems: list[str] = []
    if not folder.is_dir():
        return nodes, root, problems
    for path in sorted(folder.iterdir()):
        if not path.name.endswith(".md"):
            continue
        try:
            node = parse(fsio.read_text(path) or "")
        except (BadFrontMatter, Unreadable) as exc:
            problems.append(f"{path.name} in {folder}: {exc.message} — left as it is")
            continue
        if path.name == "root.md":
            root = node
        elif _NODE_FILE.match(path.name):
            nodes[node.id] = node
    return nodes, root, problems


def _seq(node_id: str) -> tuple[int, int]:
    m = re.match(r"^L(\d+)-(\d+)$", node_id)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _node_items(node: Node) -> list[Item]:
    items = []
    for line in node.body.splitlines():
        m = _BULLET_ID.match(line.strip())
        if m:
            items.append(Item(m.group(2), m.group(1), m.group(3), "summary"))
    return items


def _node_kinds(node: Node) -> Counter[str]:
    for line in node.body.splitlines():
        if line.startswith("Kinds: "):
            out: Counter[str] = Counter()
            for part in line[7:].split(", "):
                name, _, n = part.rpartition(" ")
                if n.isdigit():
                    out[name] += int(n)
            return out
    return Counter()


@dataclass
class Plan:
    domain: str
    created: list[Node] = field(default_factory=list)
    root: Node | None = None
    root_changed: bool = False
    tail: int = 0
    warnings: list[str] = field(default_factory=list)


class _Summariser:
    """Summarises a node's input: with the user's command when one is set (falling back to the
    extractive summary, with a warning, when it fails), else extractively."""

    def __init__(self, vault: Vault, domain: str, cmd: str, plan: Plan) -> None:
        self.domain, self.cmd, self.plan = domain, cmd, plan
        self.timeout = vault.settings.tree.summarizer_timeout
        self.max_chars = vault.settings.tree.max_chars

    def __call__(self, level: int, start: str, end: str, count: int, items: list[Item],
                 kinds: Counter[str], feed: str) -> tuple[str, str]:
        if self.cmd:
            ran = run_command(self.cmd, feed, self.timeout)
            if ran.output is not None:
                return ran.output, self.cmd
            self.plan.warnings.append(f"summariser {self.cmd!r} failed ({ran.error}) for a level-{level} node "
                                      f"of {self.domain}; used the extractive summary")
        return extractive(self.domain, level, start, end, count, items, kinds, self.max_chars), EXTRACTIVE


def plan_domain(vault: Vault, domain: str, *, summarizer: str | None = None,
                progress: Callable[[int, int], None] | None = None) -> Plan:
    """What compacting `domain` would create and refresh (nothing is written here)."""
    nodes, old_root, problems = _load(vault.tree_dir(domain))
    plan = Plan(domain, warnings=problems)
    if problems:
        # a node it cannot read might cover any records: sealing them again, or reusing its
        # number, could overwrite a person's file — so this domain waits until it is fixed
        plan.warnings.append(f"tree/{domain} was not compacted: fix or remove the file(s) above")
        return plan
    summarise = _Summariser(vault, domain, vault.settings.tree.summarizer if summarizer is None
                            else summarizer, plan)
    next_seq: dict[int, int] = {}
    for nid in nodes:
        lvl, seq = _seq(nid)
        next_seq[lvl] = max(next_seq.get(lvl, 0), seq)
    plan.tail = _seal_runs(vault, domain, nodes, next_seq, plan, summarise, progress)
    _build_levels(vault.settings.tree.fanout, domain, nodes, next_seq, plan, summarise)
    _refresh_root(domain, nodes, old_root, plan, summarise)
    return plan


def _seal_runs(vault: Vault, domain: str, nodes: dict[str, Node], next_seq: dict[int, int],
               plan: Plan, summarise: _Summariser,
               progress: Callable[[int, int], None] | None) -> int:
    """Level-1 nodes over every full run of records no node covers yet; returns the raw tail."""
    from optmem.index import open_index

    run = vault.settings.tree.run
    covered = {c for n in nodes.values() if n.level == 1 for c in n.children}
    now = clock.now().timestamp()
    with open_index(vault) as idx:
        rows = [r for r in idx.domain_records(domain) if r.id not in covered]
        sealable = len(rows) - len(rows) % run
        for i in range(0, sealable, run):
            chunk = rows[i : i + run]
            recs = [idx.record(r) for r in chunk]
            items = []
            for r, rec in zip(chunk, recs):
                if view.status(r, now) in (view.Status.SUPERSEDED, view.Status.FORGOTTEN):
                    continue  # summaries quote what is current
                badge = "redline" if r.tier == Tier.REDLINE else ("correction" if rec.kind == CORRECTION else None)
                items.append(Item(rec.id, rec.text, badge, rec.kind))
            kinds = Counter(rec.kind for rec in recs)
            feed = "\n".join(f"[{rec.ts}] [{rec.kind}/{rec.tier}] {rec.text} ({rec.id})" for rec in recs)
            start, end = recs[0].ts, recs[-1].ts
            body, used = summarise(1, start, end, len(recs), items, kinds, feed)
            next_seq[1] = next_seq.get(1, 0) + 1
            node = Node(f"L1-{next_seq[1]:04d}", 1, domain, start, end, len(recs),
                        [rec.id for rec in recs], used, body)
            nodes[node.id] = node
            plan.created.append(node)
            if progress:
                progress(i + run, sealable)
    return len(rows) - sealable


def _build_levels(fanout: int, domain: str, nodes: dict[str, Node], next_seq: dict[int, int],
                  plan: Plan, summarise: _Summariser) -> None:
    """A level-k+1 node over every full group of `fanout` level-k nodes without a parent."""
    level = 1
    while any(n.level == level for n in nodes.values()):
        parented = {c for n in nodes.values() if n.level == level + 1 for c in n.children}
        free = sorted((n for n in nodes.values() if n.level == level and n.id not in parented),
                      key=lambda n: _seq(n.id))
        for i in range(0, len(free) - len(free) % fanout, fanout):
            node = _parent(level + 1, domain, free[i : i + fanout], next_seq, summarise)
            nodes[node.id] = node
            plan.created.append(node)
        level += 1


def _refresh_root(domain: str, nodes: dict[str, Node], old_root: Node | None, plan: Plan,
                  summarise: _Summariser) -> None:
    """The root over the current top-level nodes (a person's edit of its body is kept)."""
    top = _top(nodes)
    if not top:
        return
    root = _over("root", max(n.level for n in nodes.values()) + 1, domain, top, summarise, root=True)
    if old_root is not None and old_root.edited:
        # a person's words win: keep their body, refresh only what the root points at
        root = replace(root, body=old_root.body, digest=old_root.digest, summarizer=old_root.summarizer)
        plan.warnings.append(f"tree/{domain}/root.md was edited by hand; its body was kept")
    plan.root = root
    plan.root_changed = old_root is None or render(old_root) != render(root)


def _parent(level: int, domain: str, group: list[Node], next_seq: dict[int, int],
            summarise: Callable[..., tuple[str, str]]) -> Node:
    next_seq[level] = next_seq.get(level, 0) + 1
    return _over(f"L{level}-{next_seq[level]:04d}", level, domain, group, summarise)


def _over(node_id: str, level: int, domain: str, group: list[Node],
          summarise: Callable[..., tuple[str, str]], *, root: bool = False) -> Node:
    """A node summarising other nodes: its items, kinds and range come from theirs."""
    items = [it for n in group for it in _node_items(n)]
    kinds = sum((_node_kinds(n) for n in group), Counter())
    count = sum(n.count for n in group)
    start, end = min(n.start for n in group), max(n.end for n in group)
    feed = "\n\n".join(f"## {n.id} ({n.start} → {n.end})\n{n.body}" for n in group)
    body, used = summarise(level, start, end, count, items, kinds, feed)
    return Node(node_id, level, domain, start, end, count, [n.id for n in group], used, body,
                root=root)


def _top(nodes: dict[str, Node]) -> list[Node]:
    """Nodes no other node holds: what the root summarises, highest level first."""
    held = {c for n in nodes.values() if n.level > 1 for c in n.children}
    return sorted((n for n in nodes.values() if n.id not in held), key=lambda n: (-n.level, _seq(n.id)))


@dataclass(frozen=True)
class Compacted:
    domains: list[dict[str, Any]]
    dry_run: bool
    warnings: list[str]


def domains_of(vault: Vault) -> list[str]:
    from optmem.index import open_index

    with open_index(vault) as idx:
        return idx.domains()


def compact(vault: Vault, *, domain: str | None = None, dry_run: bool = False,
            summarizer: str | None = None,
            progress: Callable[[int, int], None] | None = None) -> Compacted:
    """Seal full runs into nodes and refresh each domain's root; incremental and idempotent."""
    vault.require()
    report, warnings = [], []
    if domain:
        targets = [validate_name(domain, "domain")]
    else:
        targets = []
        for d in domains_of(vault):
            if NAME_RE.fullmatch(d):
                targets.append(d)
            else:
                warnings.append(f"domain {d[:40]!r} in LOG.jsonl is not a usable name; its records were "
                                "not compacted (see `optmem doctor`)")
    with vault.tree_lock():  # not the vault lock: agents keep appending while this runs
        for d in targets:
            plan = plan_domain(vault, d, summarizer=summarizer, progress=progress)
            warnings += plan.warnings
            if not dry_run:
                folder = vault.tree_dir(d)
                fsio.clean_temporaries(folder)
                for node in plan.created:
                    fsio.atomic_write(folder / node.path_name, render(node), within=vault.root)
                if plan.root is not None and plan.root_changed:
                    fsio.atomic_write(folder / "root.md", render(plan.root), within=vault.root)
            report.append({"domain": d, "created": [n.id for n in plan.created],
                           "root_updated": plan.root_changed, "raw_tail": plan.tail})
    return Compacted(report, dry_run, warnings)


# -- reading ---------------------------------------------------------------------------------
def outline(vault: Vault, domain: str | None = None) -> list[dict[str, Any]]:
    """Each domain's root and its descendants, as nested dicts."""
    vault.require()
    tree_root = vault.root / "tree"
    domains = [validate_name(domain, "domain")] if domain else (
        sorted(p.name for p in tree_root.iterdir() if p.is_dir()) if tree_root.is_dir() else [])
    out = []
    for d in domains:
        nodes, root, _ = _load(vault.tree_dir(d))

        def walk(node: Node) -> dict[str, Any]:
            kids = [walk(nodes[c]) for c in node.children if c in nodes] if node.level > 1 or node.root else []
            return {**_brief(node), "children": kids}

        if root is not None:
            out.append(walk(root))
    return out


def _brief(node: Node) -> dict[str, Any]:
    return {"id": f"{node.domain}/{node.id}", "level": node.level, "from": node.start,
            "to": node.end, "count": node.count, "summarizer": node.summarizer,
            "edited": node.edited}


def get_node(vault: Vault, ref: str) -> dict[str, Any]:
    """One node (`domain/L1-0001` or `domain/root`) with its body and its children."""
    vault.require()
    if not ref.strip():
        raise UsageError("NODE is empty; a node id is required, as DOMAIN/NODE (e.g. hermes/root) — "
                         "or leave NODE out for the outline")
    domain, _, node_id = ref.partition("/")
    if not node_id:
        raise UsageError(f"name a node as DOMAIN/NODE, e.g. hermes/root or hermes/L1-0001, not {ref!r}")
    validate_name(domain, "domain")
    if node_id != "root" and not re.match(r"^L\d+-\d+$", node_id):
        raise UsageError(f"{node_id!r} is not a node id (root, L1-0001, …)")
    nodes, root, _ = _load(vault.tree_dir(domain))
    node = root if node_id == "root" else nodes.get(node_id)
    if node is None:
        raise NotFound(f"no node {ref!r}; see `optmem tree`", node=ref)
    return {**_brief(node), "body": node.body, "children": node.children}


def search_nodes(vault: Vault, query: str, *, domains: list[str] | None = None,
                 limit: int = 10) -> list[view.RecordView]:
    """Summary nodes ranked by BM25 over their bodies (`search --kind summary`)."""
    tree_root = vault.root / "tree"
    if not tree_root.is_dir():
        return []
    terms = textmod.search_terms(query)
    docs = []
    for d in sorted(p.name for p in tree_root.iterdir() if p.is_dir()):
        if domains and d not in domains:
            continue
        nodes, root, _ = _load(tree_root / d)
        for node in [*nodes.values(), *([root] if root else [])]:
            toks = textmod.tokens(node.body)
            docs.append((node, Counter(toks), len(toks)))
    if not docs or not terms:
        return []
    avgdl = sum(dl for _, _, dl in docs) / len(docs) or 1.0
    idfs = {t: ranking.idf(len(docs), sum(1 for _, tf, _ in docs if t in tf)) for t in terms}
    scored = [(ranking.bm25(tf, dl, terms, idfs, avgdl), node) for node, tf, dl in docs]
    scored = [(s, n) for s, n in scored if s > 0]
    scored.sort(key=lambda sn: (-sn[0], -sn[1].level, sn[1].domain, sn[1].id))
    return [view.RecordView(
        Record(id=f"{n.domain}/{n.id}", ts=n.end, domain=n.domain, kind="summary", text=n.body.strip()),
        view.Status.CURRENT, score=round(s, 4),
        annex={"level": n.level, "range": {"from": n.start, "to": n.end}, "children": n.children})
        for s, n in scored[:limit]]
