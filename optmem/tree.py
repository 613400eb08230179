"""The summary tree: records roll up into readable overviews, per domain ("攒多了再往上层收拢").

A level-1 node summarises a run of `tree.run` (64) consecutive records of a domain, in time
order; a level-k+1 node summarises `tree.fanout` (8) level-k nodes; only full runs are sealed,
the rest stays raw. Records older than a sealed node keep every level in time order: one dated
inside a level-1 node's range (another clone wrote it earlier, and it came in by sync) joins that
node; others in a gap between nodes (that, or a purge deleted the nodes that covered them) are
sealed where they stand (`_seal_runs`), and a node in a gap joins the parent of the node after it
(`_build_levels`) — such a node and the nodes above it are made again over their children as they
are now. Each domain also has a `root` node over its current top-level nodes. Nodes are
Markdown files with front matter under `tree/<domain>/`; a person may edit a node's body and
later compactions keep the edit — but nothing above reads it: a node above counts kinds from the
records it covers and quotes each child as generated (`_Domain.generated`: an edited child as
the extractive summary its records give now), so an edit never miscounts a parent, and a late
record that joined an edited node reaches every level as one that came in time. The log is only
read.

The built-in summariser (`optmem.summary`) is extractive and deterministic: counts by kind, key
terms, and the most representative current records with their ids (corrections and redlines
always kept, superseded, expired and forgotten records left out, a guess badged `[pending]`, an
inference `[inferred]`), within `tree.max_chars`. `--summarizer CMD` pipes a node's input to a
command instead, falling back to the extractive summary (with a warning) when it fails or times
out; its input holds what the extractive one would quote, nothing else.

The tree tells what `get` tells. A level-1 node keeps a digest of its records' statuses (`view`)
from when its body was made; when one of them changes (superseded, expired, confirmed, forgotten
— by any means: a command, a hand-typed line, a git merge), `compact` makes that node again in
place (same id, same children) and then the nodes above it and the root. `forget` does this at
once for the nodes that cover the record, so its text leaves the files when it is forgotten.
Shown nodes (`tree NODE`, `search --kind summary`) label each quoted record whose status is no
longer what the node says, badge the write gate's guesses that stand about it (as `search` does),
and leave out forgotten ones.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from optmem import clock, fsio, ranking, summary, view
from optmem import meta as metamod
from optmem import text as textmod
from optmem.errors import BadFrontMatter, NotFound, OptmemError, Unreadable, UsageError, quote
from optmem.record import CORRECTION, Record, Tier
from optmem.runner import run_command
from optmem.vault import NAME_RE, Vault, validate_name

if TYPE_CHECKING:
    from optmem.index import Index
    from optmem.schema import Row

EXTRACTIVE = "extractive"
_NODE_FILE = re.compile(r"^L(\d+)-(\d+)\.md$")
# what a summary leaves out: no longer what holds (the tree quotes what `get` calls current)
_LEFT_OUT = (
    view.Status.SUPERSEDED,
    view.Status.REMOVED,
    view.Status.EXPIRED,
    view.Status.FORGOTTEN,
    view.Status.HELD,  # in quarantine: no summary quotes it before a person released it
)


@dataclass(frozen=True)
class Node:
    id: str  # L1-0001, L2-0001, …, or root
    level: int
    domain: str
    start: str  # `from` in the front matter
    end: str  # `to`
    count: int  # records covered
    children: list[str]  # record ids (level 1) or node ids
    summarizer: str = EXTRACTIVE
    body: str = ""
    root: bool = False
    digest: str | None = None  # of the body as generated: a mismatch means a person edited it
    view: str | None = None  # level 1: digest of its records' statuses when the body was made
    resummarize: bool = False  # a stand-in extractive body (forget runs no command): compact redoes it

    @property
    def path_name(self) -> str:
        return "root.md" if self.root else f"{self.id}.md"

    @property
    def edited(self) -> bool:
        return metamod.edited(self.digest, self.body)


def render(node: Node) -> str:
    return metamod.render(
        {
            "id": node.id,
            "level": node.level,
            "root": True if node.root else None,
            "domain": node.domain,
            "from": node.start,
            "to": node.end,
            "count": node.count,
            "children": node.children,
            "summarizer": node.summarizer,
            "digest": node.digest or textmod.digest(node.body.encode("utf-8")),
            "view": node.view,
            "resummarize": True if node.resummarize else None,
        },
        node.body,
    )


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
    seen = meta.get("view")
    return Node(
        id=str(meta["id"]),
        level=meta["level"],
        domain=str(meta["domain"]),
        start=str(meta["from"]),
        end=str(meta["to"]),
        count=int(meta["count"]),
        children=[str(c) for c in meta["children"]],
        summarizer=str(meta.get("summarizer", EXTRACTIVE)),
        body=body,
        root=bool(meta.get("root")),
        digest=meta.get("digest"),
        view=str(seen) if seen is not None else None,
        resummarize=bool(meta.get("resummarize")),
    )


# -- the tree of one domain ------------------------------------------------------------------
class Loaded(NamedTuple):
    """A domain's node files as read: its nodes by id, its root, and the files that could not be
    read (file name → why: `BadFrontMatter` or `Unreadable`)."""

    folder: Path
    nodes: dict[str, Node]
    root: Node | None
    unread: dict[str, OptmemError]

    @property
    def problems(self) -> list[str]:
        """What compaction and forget say of the files they leave as they are."""
        return [f"{name} in {self.folder}: {exc.message} — left as it is" for name, exc in self.unread.items()]


def _load(folder: Path) -> Loaded:
    nodes: dict[str, Node] = {}
    root = None
    unread: dict[str, OptmemError] = {}
    if not folder.is_dir():
        return Loaded(folder, nodes, root, unread)
    for path in sorted(folder.iterdir()):
        if not path.name.endswith(".md"):
            continue
        try:
            vault_root = folder.parents[1]  # (folder: VAULT/tree/DOMAIN)
            node = parse(fsio.read_text(path, within=vault_root, limit=fsio.NOTE_BYTES) or "")
        except (BadFrontMatter, Unreadable) as exc:
            unread[path.name] = exc
            continue
        if path.name == "root.md":
            root = node
        elif _NODE_FILE.match(path.name):
            nodes[node.id] = node
    return Loaded(folder, nodes, root, unread)


def cannot_read(domain: str, name: str, exc: OptmemError) -> OptmemError:
    """The error a surface gives for a node file it could not read — as a handoff's says it: which
    file, what is wrong, what to do (a file it may not read, `unreadable`, says so itself)."""
    if not isinstance(exc, BadFrontMatter):
        return exc
    where, what = f"tree/{domain}/{name}", exc.message.splitlines()[0]
    return BadFrontMatter(
        f"{where} could not be read: {what} — fix its front matter (`optmem doctor` says where), or remove "
        "the file (`optmem compact` writes the node again from the log)",
        file=where,
    )


def _seq(node_id: str) -> tuple[int, int]:
    m = re.match(r"^L(\d+)-(\d+)$", node_id)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def quoting(nodes: dict[str, Node], named: Callable[[str], bool]) -> set[str]:
    """The keys of `nodes` (by id or by file name) that may quote any of the records whose ids
    `named` picks: the level-1 nodes that cover one, any node whose body quotes one by its id (a
    node another clone made over other children, a person's edit), every node above those, and
    the root. (Purge, and a sync that brings a purged record back, delete them.)"""
    hit = {
        k
        for k, n in nodes.items()
        if (n.level == 1 and not n.root and any(map(named, n.children)))
        or any(named(it.id) for it in summary.items_of(n.body))
    }
    hit = _above(nodes, hit)
    if hit:
        hit |= {k for k, n in nodes.items() if n.root}
    return hit


def _above(nodes: dict[str, Node], hit: set[str]) -> set[str]:
    """The keys `hit` of `nodes` and every node above them (each quotes the lines of the one below)."""
    hit = set(hit)
    grew = bool(hit)
    while grew:
        held = {nodes[k].id for k in hit}
        more = {k for k, n in nodes.items() if k not in hit and held & set(n.children)}
        grew = bool(more)
        hit |= more
    return hit


@dataclass
class Plan:
    domain: str
    created: list[Node] = field(default_factory=list)
    refreshed: list[Node] = field(default_factory=list)
    root: Node | None = None
    root_changed: bool = False
    tail: int = 0
    warnings: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)  # the files that kept this domain from compacting
    joined: list[str] = field(default_factory=list)  # of `refreshed`, those made again for late records


class _Summariser:
    """Summarises a node's input: with the user's command when one is set (falling back to the
    extractive summary, with a warning, when it fails), else extractively."""

    def __init__(self, vault: Vault, domain: str, cmd: str, plan: Plan) -> None:
        self.domain, self.cmd, self.plan = domain, cmd, plan
        self.timeout = vault.settings.tree.summarizer_timeout
        self.max_chars = vault.settings.tree.max_chars
        # a node holds about max_chars characters (4 bytes at most each): a summariser printing
        # four times that is stopped, and nothing of it is kept
        self.out_bytes = 16 * self.max_chars

    def __call__(
        self,
        level: int,
        start: str,
        end: str,
        count: int,
        items: list[summary.Item],
        kinds: Counter[str],
        feed: str,
        *,
        external: bool = True,
    ) -> tuple[str, str]:
        """(body, who made it); `external` False: extractive whatever command is set (a node
        made extractively is made again the same way)."""
        if self.cmd and external:
            ran = run_command(self.cmd, feed, self.timeout, limit=self.out_bytes)
            if ran.output is not None:
                return ran.output, self.cmd
            self.plan.warnings.append(
                f"summariser {self.cmd!r} failed ({ran.error}) for a level-{level} node "
                f"of {self.domain}; used the extractive summary"
            )
        return summary.extractive(self.domain, level, start, end, count, items, kinds, self.max_chars), EXTRACTIVE


class _Domain:
    """One domain's tree at work: its records' rows and statuses (from the index, through
    `optmem.view`), the summariser, and the nodes made again so far."""

    def __init__(
        self,
        vault: Vault,
        idx: Index,
        domain: str,
        summarise: _Summariser,
        plan: Plan,
        rows: dict[str, Row] | None = None,
        *,
        stand_in: bool = False,
    ) -> None:
        self.vault, self.idx, self.domain, self.summarise, self.plan = vault, idx, domain, summarise, plan
        self.rows = rows  # every record of the domain by id (compact), else looked up one by one
        self.stand_in = stand_in  # forget: never runs a command; a summariser's node gets a stand-in
        self.now = clock.now().timestamp()
        self.gone: dict[str, summary.Gone] = {}  # forgotten records met so far, as lines may hold them
        self._kinds: dict[str, str] | None = None  # each record's kind by id (forget: read once, when needed)
        self._generated: dict[tuple[str, tuple[str, ...]], str] = {}  # level-1 bodies as generated, by children

    def statuses(self, children: list[str]) -> tuple[list[tuple[Row, view.Status]], str]:
        """The rows of a level-1 node's records with their statuses as `get` shows them — cold or
        not: cooling is about recall, not whether a fact holds, so it changes nothing in the
        tree — and the digest of those statuses (`view`: a node made when they were otherwise is
        made again)."""
        rows, parts = [], []
        # (runs once per record of the domain on every compact: kept lean)
        row_of = self.rows.get if self.rows is not None else self.idx.by_id
        status, now = view.status, self.now
        for rid in children:
            row = row_of(rid)
            if row is None:
                parts.append(f"{rid}:-")
                continue
            st = status(row, now, warm=True)
            rows.append((row, st))
            parts.append(f"{rid}:{st.value}" + ("!" if row.disputed and st in view.LIVE else ""))
        return rows, textmod.digest("\n".join(parts).encode("utf-8"))

    def forgotten(self, rows: list[tuple[Row, view.Status]]) -> None:
        """Note the forgotten ones among `rows`: a body kept as it is loses the lines quoting them."""
        for row, st in rows:
            if st == view.Status.FORGOTTEN and row.id not in self.gone:
                self.gone[row.id] = summary.gone(row, self.idx.record(row))

    def stale(self, node: Node) -> bool:
        """Whether a level-1 node no longer tells what its records are."""
        if node.resummarize:
            return True
        rows, seen = self.statuses(node.children)
        if node.view is not None:
            return node.view != seen
        # made before nodes kept their records' statuses: stale when one of them was forgotten,
        # or a quoted one no longer reads as what it is
        if any(st == view.Status.FORGOTTEN for _, st in rows):
            return True
        now = {row.id: (row, st) for row, st in rows}
        for it in summary.items_of(node.body):
            if it.id not in now:
                continue
            row, st = now[it.id]
            if (
                st in _LEFT_OUT
                or (st == view.Status.PENDING) != (summary.PENDING in it.badges)
                or bool(row.inferred) != (summary.INFERRED in it.badges)
                or (row.disputed and st in view.LIVE) != (summary.CONFLICT in it.badges)
            ):
                return True
        return False

    def said(self, rows: list[tuple[Row, view.Status]]) -> dict[int, str]:
        """Each record's words as a node may quote them, by line: as stored when every surface shows
        them so (`Index.as_stored`), else as the read-side scan shows them (`view.display`: a hand-typed
        secret reads `[BLOCKED: rule]`) — a node's file, its key terms and a summariser's input
        never hold what `get` would block."""
        stored = self.idx.as_stored([row for row, _ in rows])
        out = {}
        for row, _ in rows:
            text = self.idx.record(row).text
            out[row.n] = text if row.n in stored else view.display(text)
        return out

    def items(self, rows: list[tuple[Row, view.Status]]) -> tuple[list[summary.Item], list[str], dict[int, str]]:
        """What a level-1 node over `rows` may quote — the current records and the guesses, badged
        — as items and as a summariser's input lines; and each record's words as quoted (by line)."""
        items, feed = [], []
        self.forgotten(rows)
        said = self.said(rows)
        guesses = self.idx.guesses_of([row for row, _ in rows], clock.now().timestamp())
        for row, st in rows:
            if st in _LEFT_OUT:
                continue
            rec = self.idx.record(row)
            badges = ["redline"] if row.tier == Tier.REDLINE else ["correction"] if rec.kind == CORRECTION else []
            badges += [summary.PENDING] if st == view.Status.PENDING else []
            badges += [summary.INFERRED] if row.inferred else []
            badges += [summary.CONFLICT] if row.disputed and st in view.LIVE else []
            badges += summary.provenance(row)  # a tool's output, an import: never read as what was said
            badges += [summary.STATE] if row.state else []
            # the write gate's guesses, worded as questions (`view.guess_notes`), as `search` words
            # them: the node's file never lists two values the gate could not order as two facts
            # (`tree NODE` words them anew as it shows the node: `summary.Shown`); a summariser
            # reads them too, with the whole ids, so a model never takes them for one settled fact
            guess = guesses.get(row.n, {})
            notes = view.guess_notes(guess.get("may_update"), guess.get("updated_by", ()))
            item = summary.Item(rec.id, said[row.n], (*badges, *notes), rec.kind)
            items.append(item)
            asked = view.guess_notes(guess.get("may_update"), guess.get("updated_by", ()), lambda rid: rid)
            feed.append(
                f"[{rec.ts}] [{rec.kind}/{rec.tier}] {said[row.n]} ({rec.id})"
                + "".join(f" [{b}]" for b in (*badges, *asked))
            )
        return items, feed, said

    def kinds(self, node: Node, nodes: dict[str, Node]) -> Counter[str]:
        """The counts by kind of the records `node` covers, from the records (never from a body:
        a person may edit that) — a node above counts what its children cover."""
        if node.level == 1 and not node.root:
            if self._kinds is None:
                self._kinds = (
                    {rid: row.kind for rid, row in self.rows.items()}
                    if self.rows is not None
                    else self.idx.kinds_by_id(self.domain)
                )
            return Counter(self._kinds[c] for c in node.children if c in self._kinds)
        return sum((self.kinds(nodes[c], nodes) for c in node.children if c in nodes), Counter())

    def generated(self, node: Node, nodes: dict[str, Node]) -> str:
        """`node`'s body as a node above reads it: the body itself when it was generated, else —
        a person edited it — the extractive body its records (or children) give now, so what a
        node above quotes and counts never comes from text a person may edit, and a record that
        joined an edited node late reaches every level as one that came in time does."""
        if not node.edited:
            return node.body
        if node.level == 1 and not node.root:
            key = (node.id, tuple(node.children))
            if key not in self._generated:
                rows, _ = self.statuses(node.children)
                items, _, _ = self.items(rows)
                kinds = self.kinds(node, nodes)
                self._generated[key] = summary.extractive(
                    self.domain, 1, node.start, node.end, node.count, items, kinds, self.summarise.max_chars
                )
            return self._generated[key]
        group = [nodes[c] for c in node.children if c in nodes]
        items = [it for n in group for it in summary.items_of(self.generated(n, nodes))]
        return summary.extractive(
            self.domain,
            node.level,
            node.start,
            node.end,
            node.count,
            items,
            self.kinds(node, nodes),
            self.summarise.max_chars,
        )

    def level1(
        self,
        node_id: str,
        rows: list[tuple[Row, view.Status]],
        children: list[str],
        seen: str,
        *,
        start: str | None = None,
        end: str | None = None,
        count: int | None = None,
        external: bool = True,
    ) -> Node:
        """A level-1 node over `rows`: it quotes the current records and the guesses (badged),
        and its summariser reads nothing else — no forgotten, superseded or expired record."""
        items, feed, said = self.items(rows)
        kinds = Counter(row.kind for row, _ in rows)
        start = start if start is not None else self.idx.record(rows[0][0]).ts
        end = end if end is not None else self.idx.record(rows[-1][0]).ts
        count = len(rows) if count is None else count
        if not items and rows:  # every record replaced since: say so, and what they covered
            gone_as = (view.Status.SUPERSEDED, view.Status.EXPIRED, view.Status.REMOVED)  # never a forgotten one's
            texts = [said[row.n] for row, st in rows if st in gone_as]
            gone = Counter(st.value for _, st in rows)
            body = summary.replaced(self.domain, start, end, count, kinds, texts, gone)
            return Node(node_id, 1, self.domain, start, end, count, children, EXTRACTIVE, body, view=seen)
        body, used = self.summarise(1, start, end, count, items, kinds, "\n".join(feed), external=external)
        return Node(node_id, 1, self.domain, start, end, count, children, used, body, view=seen)

    def over(
        self,
        node_id: str,
        level: int,
        group: list[Node],
        nodes: dict[str, Node],
        *,
        root: bool = False,
        external: bool = True,
    ) -> Node:
        """A node summarising other nodes: its items and a summariser's input come from their bodies
        as generated (`generated`: a body a person edited is not read), its kinds from the records
        they cover, its range from theirs."""
        bodies = [self.generated(n, nodes) for n in group]
        items = [it for body in bodies for it in summary.items_of(body)]
        kinds = sum((self.kinds(n, nodes) for n in group), Counter())
        count = sum(n.count for n in group)
        start, end = min(n.start for n in group), max(n.end for n in group)
        feed = "\n\n".join(f"## {n.id} ({n.start} → {n.end})\n{body}" for n, body in zip(group, bodies))
        body, used = self.summarise(level, start, end, count, items, kinds, feed, external=external)
        return Node(node_id, level, self.domain, start, end, count, [n.id for n in group], used, body, root=root)

    def again(self, old: Node, nodes: dict[str, Node]) -> Node | None:
        """`old` made again in place — same id, same children — from what its records (level 1)
        or children are now. A body a person edited is kept, without the lines that quote a
        forgotten record (said in a warning); None when nothing it covers is left to read."""
        external = old.summarizer != EXTRACTIVE or old.resummarize
        if old.level == 1 and not old.root:
            rows, seen = self.statuses(old.children)
            if not rows:
                return None
            if old.edited:
                self.forgotten(rows)
                return self.kept(replace(old, view=seen, resummarize=False))
            new = self.level1(
                old.id, rows, old.children, seen, start=old.start, end=old.end, count=old.count, external=external
            )
        else:
            group = [nodes[c] for c in old.children if c in nodes]
            if old.edited or len(group) < len(old.children) or not group:
                return self.kept(old)  # a child it cannot read: keep what it says, minus what is gone
            new = replace(
                self.over(old.id, old.level, group, nodes, root=old.root, external=external), children=old.children
            )
        if external and new.summarizer == EXTRACTIVE:  # a summariser's node, made again without one
            where = f"tree/{self.domain}/{old.path_name} was made by a summariser"
            if self.stand_in:  # forget runs no command: the next compact summarises it again
                self.plan.warnings.append(
                    f"{where}: it holds the extractive summary until the next `optmem compact` summarises it again"
                )
                return replace(new, resummarize=True)
            if not self.summarise.cmd:
                self.plan.warnings.append(
                    f"{where}; with no summariser given (--summarizer), it was summarised again extractively"
                )
        return new

    def kept(self, node: Node) -> Node:
        """`node` with its body kept, without the lines quoting forgotten records, its generated
        header saying what the node covers now (`summary.restate`: a person's edit stays an edit;
        a generated body stays generated)."""
        body, removed = summary.strip(node.body, self.gone)
        body = summary.restate(body, node.level, node.count, node.start, node.end)
        if removed and node.edited:
            self.plan.warnings.append(
                f"tree/{self.domain}/{node.path_name} was edited by hand; its body was kept "
                f"without the {removed} line(s) quoting forgotten records"
            )
        return replace(node, body=body, digest=node.digest if node.edited else None)

    def refresh(self, nodes: dict[str, Node], stale: list[Node]) -> dict[str, Node]:
        """Make the `stale` level-1 nodes again, then every node above one that changed; the
        nodes that changed (their files to rewrite), by id. `nodes` is updated."""
        changed: dict[str, Node] = {}
        stale_ids = {n.id for n in stale}
        affected = _above(nodes, stale_ids)
        for nid in sorted(affected, key=lambda k: (nodes[k].level, _seq(k))):
            old = nodes[nid]
            if nid not in stale_ids and not any(c in changed for c in old.children):
                continue
            new = self.again(old, nodes)
            if new is not None and render(new) != render(old):
                nodes[nid] = changed[nid] = new
        return changed

    def root(self, nodes: dict[str, Node], old_root: Node | None) -> tuple[Node | None, bool]:
        """The root over the current top-level nodes (a person's edit of its body is kept,
        without lines quoting forgotten records); (root, whether its file changes)."""
        top = _top(nodes)
        if not top:
            return old_root, False
        root = self.over("root", max(n.level for n in nodes.values()) + 1, top, nodes, root=True)
        if old_root is not None and old_root.edited:
            # a person's words win: keep their body, refresh only what the root points at
            root = self.kept(
                replace(
                    old_root,
                    level=root.level,
                    children=root.children,
                    count=root.count,
                    start=root.start,
                    end=root.end,
                    resummarize=False,
                )
            )
            self.plan.warnings.append(f"tree/{self.domain}/root.md was edited by hand; its body was kept")
        return root, old_root is None or render(old_root) != render(root)


def plan_domain(
    vault: Vault, domain: str, *, summarizer: str | None = None, progress: Callable[[int, int], None] | None = None
) -> Plan:
    """What compacting `domain` would create and refresh (nothing is written here)."""
    from optmem.index import open_index

    loaded = _load(vault.tree_dir(domain))
    nodes, old_root, problems = loaded.nodes, loaded.root, loaded.problems
    plan = Plan(domain, warnings=problems, blocked=list(problems))
    if problems:
        # a node it cannot read might cover any records: sealing them again, or reusing its
        # number, could overwrite a person's file — so this domain waits until it is fixed
        plan.warnings.append(f"tree/{domain} was not compacted: fix or remove the file(s) above")
        return plan
    summarise = _Summariser(vault, domain, vault.settings.tree.summarizer if summarizer is None else summarizer, plan)
    with open_index(vault) as idx:
        rows = idx.domain_records(domain)
        work = _Domain(vault, idx, domain, summarise, plan, {r.id: r for r in rows})
        stale = [n for n in nodes.values() if (n.level == 1 and work.stale(n)) or n.resummarize]
        changed = work.refresh(nodes, stale)
        next_seq: dict[int, int] = {}
        for nid in nodes:
            lvl, seq = _seq(nid)
            next_seq[lvl] = max(next_seq.get(lvl, 0), seq)
        grown: set[str] = set()  # older nodes a late record or node joined: made again, and those above
        plan.tail = _seal_runs(vault, work, rows, nodes, next_seq, progress, grown)
        _build_levels(vault.settings.tree.fanout, work, nodes, next_seq, grown)
        made = {n.id for n in plan.created}
        again = {**changed, **{nid: nodes[nid] for nid in grown if nid not in made}}
        plan.refreshed = sorted(again.values(), key=lambda n: _seq(n.id))
        plan.joined = [n.id for n in plan.refreshed if n.id in grown and n.id not in changed]
        plan.created = [nodes[n.id] for n in plan.created]
        plan.root, plan.root_changed = work.root(nodes, old_root)
    return plan


def _seal_runs(
    vault: Vault,
    work: _Domain,
    rows: list[Row],
    nodes: dict[str, Node],
    next_seq: dict[int, int],
    progress: Callable[[int, int], None] | None,
    grown: set[str],
) -> int:
    """Level-1 nodes over every full run of records no node covers yet; returns the raw tail.

    Records no node covers that are older than a covered one — records another clone wrote
    earlier came in later by sync, or a gap where `purge` deleted the nodes that quoted what it
    removed — stay in time order: those dated inside a node's range (between two of its records)
    join that node, made again in place (`grown`: the nodes above are made again too); the others
    are sealed where they stand, in runs of at most `run`, however few (sealed with the newer
    tail instead, a node would reach across the nodes between them — out of time order, over
    records that are not consecutive — and left raw they would never be sealed at all)."""
    run = vault.settings.tree.run
    node_of = {c: n.id for n in nodes.values() if n.level == 1 for c in n.children}
    chunks: list[list[Row]] = []
    waiting: list[Row] = []
    last: str | None = None  # the covered record before `waiting`
    for r in rows:  # (in time order)
        if r.id not in node_of:
            waiting.append(r)
            continue
        if waiting and last is not None and node_of[last] == node_of[r.id]:  # inside one node's range
            _join(work, nodes, node_of[r.id], last, [w.id for w in waiting])
            grown.add(node_of[r.id])
        elif waiting:  # a gap between nodes, closed by a covered record: sealed as it is
            chunks += [waiting[i : i + run] for i in range(0, len(waiting), run)]
        waiting, last = [], r.id
    sealable = len(waiting) - len(waiting) % run
    chunks += [waiting[i : i + run] for i in range(0, sealable, run)]
    total, done = sum(len(c) for c in chunks), 0
    for chunk in chunks:
        children = [r.id for r in chunk]
        rows_now, seen = work.statuses(children)
        next_seq[1] = next_seq.get(1, 0) + 1
        node = work.level1(f"L1-{next_seq[1]:04d}", rows_now, children, seen)
        nodes[node.id] = node
        work.plan.created.append(node)
        done += len(chunk)
        if progress:
            progress(done, total)
    return len(waiting) - sealable


def _join(work: _Domain, nodes: dict[str, Node], nid: str, after: str, ids: list[str]) -> None:
    """Level-1 node `nid` made again with the records `ids` among its children, after `after` (one
    of them): records dated inside its range that came in after it was sealed."""
    old = nodes[nid]
    at = old.children.index(after) + 1
    kids = [*old.children[:at], *ids, *old.children[at:]]
    if old.edited:
        shown = ", ".join(i[-8:] for i in ids[:5]) + (", …" if len(ids) > 5 else "")
        work.plan.warnings.append(
            f"tree/{work.domain}/{old.path_name} was edited by hand: {len(ids)} late record(s) joined it ({shown}) "
            "that its body does not mention — dated inside its range, they came in after it was made (by sync, "
            "or written with an earlier time); its body was kept as edited, its header counts them — add them to "
            "it, or remove the file and `optmem compact` writes it again from the log"
        )
    nodes[nid] = work.again(replace(old, children=kids, count=old.count + len(ids)), nodes) or nodes[nid]


def _in_time(node: Node) -> tuple[str, str, tuple[int, int]]:
    """Nodes of one level in time order: by their range, then their number (a node sealed in a
    gap has a later number than the nodes after it in time)."""
    return (node.start, node.end, _seq(node.id))


def _build_levels(
    fanout: int, work: _Domain, nodes: dict[str, Node], next_seq: dict[int, int], grown: set[str]
) -> None:
    """A level-k+1 node over every full group of `fanout` level-k nodes without a parent, in time
    order. Level-k nodes without a parent that are older than one with a parent (sealed in a gap:
    records another clone wrote earlier, a purge) stay where they are in time: their full groups
    get a parent of their own, and the rest join the parent of the node after them, so every level
    stays in time order. The nodes above one that `grown` names are made again over their
    children as they are now (and join `grown`)."""
    level = 1
    while any(n.level == level for n in nodes.values()):
        parent_of = {c: n.id for n in nodes.values() if n.level == level + 1 for c in n.children}
        ordered = sorted((n for n in nodes.values() if n.level == level), key=_in_time)
        runs: list[list[Node]] = [[]]  # the nodes without a parent, in runs between those with one
        for n in ordered:
            if n.id not in parent_of:
                runs[-1].append(n)
            elif runs[-1]:
                _adopt(nodes, parent_of[n.id], n.id, runs[-1][len(runs[-1]) - len(runs[-1]) % fanout :], grown)
                runs[-1] = runs[-1][: len(runs[-1]) - len(runs[-1]) % fanout]
                runs.append([])
        for up in sorted((n for n in nodes.values() if n.level == level + 1), key=lambda n: _seq(n.id)):
            if up.id in grown or grown.intersection(up.children):
                group = [nodes[c] for c in up.children if c in nodes]
                if group:  # (a body kept as a person edited it still names the range it covers now)
                    up = replace(
                        up,
                        start=min(g.start for g in group),
                        end=max(g.end for g in group),
                        count=sum(g.count for g in group),
                    )
                if up.edited:
                    work.plan.warnings.append(
                        f"tree/{work.domain}/{up.path_name} was edited by hand: late records joined what it "
                        "covers (through the nodes below it), which its body does not mention; its body was kept "
                        f"as edited, its header counts them ({up.count:,} records) — add them to it, or remove the "
                        "file and "
                        "`optmem compact` writes it again"
                    )
                nodes[up.id] = work.again(up, nodes) or up
                grown.add(up.id)
        for run in runs:
            for i in range(0, len(run) - len(run) % fanout, fanout):
                next_seq[level + 1] = next_seq.get(level + 1, 0) + 1
                node = work.over(f"L{level + 1}-{next_seq[level + 1]:04d}", level + 1, run[i : i + fanout], nodes)
                nodes[node.id] = node
                work.plan.created.append(node)
        level += 1


def _adopt(nodes: dict[str, Node], pid: str, before: str, orphans: list[Node], grown: set[str]) -> None:
    """Parent `pid` takes the nodes `orphans` among its children, just before its child `before`
    (they are older than it, and newer than the child before it) — to be made again (`grown`)."""
    if not orphans:
        return
    kids = nodes[pid].children
    at = kids.index(before)
    nodes[pid] = replace(nodes[pid], children=[*kids[:at], *(o.id for o in orphans), *kids[at:]])
    grown.add(pid)


def _top(nodes: dict[str, Node]) -> list[Node]:
    """Nodes no other node holds: what the root summarises, highest level first."""
    held = {c for n in nodes.values() if n.level > 1 for c in n.children}
    return sorted((n for n in nodes.values() if n.id not in held), key=lambda n: (-n.level, *_in_time(n)))


@dataclass(frozen=True)
class Compacted:
    domains: list[dict[str, Any]]
    dry_run: bool
    warnings: list[str]

    @property
    def ok(self) -> bool:
        """Every domain compacted: none was left as it is for a node that cannot be read."""
        return not any(d["not_compacted"] for d in self.domains)


def domains_of(vault: Vault) -> list[str]:
    from optmem.index import open_index

    with open_index(vault) as idx:
        return idx.domains()


def compact(
    vault: Vault,
    *,
    domain: str | None = None,
    dry_run: bool = False,
    summarizer: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Compacted:
    """Seal full runs into nodes, make again the nodes whose records changed status, and refresh
    each domain's root; incremental and idempotent."""
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
                warnings.append(
                    f"domain {d[:40]!r} in LOG.jsonl is not a usable name; its records were "
                    "not compacted (see `optmem doctor`)"
                )
    if vault.bare():  # a folder holding none of a vault's files: nothing to compact, nothing written there
        vault.read_bare = True
        return Compacted([], dry_run, warnings)
    with vault.tree_lock(make=bool(targets) and not dry_run):  # not the vault lock: appends go on meanwhile
        for d in targets:
            seen = _stamps(vault.tree_dir(d))  # (before the plan reads them: a summariser can take minutes)
            plan = plan_domain(vault, d, summarizer=summarizer, progress=progress)
            warnings += plan.warnings
            if not dry_run:
                nodes = [*plan.refreshed, *plan.created]
                warnings += _write(vault, d, nodes, plan.root if plan.root_changed else None, seen)
            report.append(
                {
                    "domain": d,
                    "created": [n.id for n in plan.created],
                    "refreshed": [n.id for n in plan.refreshed],
                    "joined": plan.joined,  # of those, made again because late records joined them
                    "root_updated": plan.root_changed,
                    "raw_tail": plan.tail,
                    "not_compacted": plan.blocked,  # why not, when a node of it cannot be read
                }
            )
    return Compacted(report, dry_run, warnings)


def _stamps(folder: Path) -> dict[str, tuple[int, int, int]]:
    """What each node file of a domain is now (inode, size, modification time), to tell a file
    changed by someone else while a plan was made from it."""
    out: dict[str, tuple[int, int, int]] = {}
    try:
        with os.scandir(folder) as found:
            for entry in found:
                if entry.name.endswith(".md"):
                    st = entry.stat(follow_symlinks=False)
                    out[entry.name] = (st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        pass
    return out


def _write(
    vault: Vault, domain: str, nodes: Iterable[Node], root: Node | None, seen: dict[str, tuple[int, int, int]]
) -> list[str]:
    """Write the nodes and the root the plan made — each only if its file is still as the plan
    found it (`seen`, `_stamps`): a file someone edited or made meanwhile (review 17 #2: a person's
    note in root.md while a summariser ran) is left as they saved it, and said."""
    folder = vault.tree_dir(domain)
    fsio.clean_temporaries(folder)
    now = _stamps(folder)
    kept: list[str] = []
    for name, text in [(n.path_name, render(n)) for n in nodes] + ([("root.md", render(root))] if root else []):
        if now.get(name) != seen.get(name):
            kept.append(name)
            continue
        fsio.atomic_write(folder / name, text, within=vault.root)
    return [
        f"tree/{domain}/{name} changed while this ran: it was left as it is now, not rewritten from what was "
        "read before the change — run `optmem compact` again to bring it up to date"
        for name in kept
    ]


def forget(vault: Vault, domain: str, ids: list[str]) -> list[str]:
    """Take forgotten records out of the summary tree at once: the level-1 nodes that cover them
    are made again without them (same ids, same children), then the nodes above and the root;
    nothing else is read or summarised. Runs no summariser command: a node a summariser made gets
    the extractive summary until the next `compact`. Returns warnings, and never raises — the
    record is forgotten already, and the next `compact` finishes what this could not."""
    from optmem.index import open_index

    if not NAME_RE.fullmatch(domain):
        return []  # compaction leaves such a domain out: it has no tree
    try:
        folder = vault.tree_dir(domain)
        if not folder.is_dir():
            return []
        with vault.tree_lock():  # as compaction; never inside the vault lock (purge takes tree, then vault)
            seen = _stamps(folder)
            loaded = _load(folder)
            nodes, root, problems = loaded.nodes, loaded.root, loaded.problems
            hit = [n for n in nodes.values() if n.level == 1 and set(ids) & set(n.children)]
            if not hit:
                return [f"{p}; it may still quote the forgotten record" for p in problems]
            plan = Plan(domain, warnings=[f"{p}; it may still quote the forgotten record" for p in problems])
            with open_index(vault) as idx:
                work = _Domain(vault, idx, domain, _Summariser(vault, domain, "", plan), plan, stand_in=True)
                changed = work.refresh(nodes, hit)
                new_root = work.again(root, nodes) if root is not None else None
            if root is None or new_root is None or render(new_root) == render(root):
                new_root = None  # the root says what it said
            return plan.warnings + _write(vault, domain, changed.values(), new_root, seen)
    except OptmemError as exc:
        return [
            f"the summary tree of {domain} may still quote {', '.join(ids)} ({exc.message}); "
            "the next `optmem compact` takes it out"
        ]


# -- reading ---------------------------------------------------------------------------------
class Outline(NamedTuple):
    roots: list[dict[str, Any]]
    warnings: list[str]  # a node file that could not be read (`cannot_read`): left out of `roots`


def outline(vault: Vault, domain: str | None = None) -> Outline:
    """Each domain's root and its descendants, as nested dicts (each field as surfaces show it:
    `view.shown`), and what could not be read — a node left out is named, never dropped unsaid."""
    vault.require()
    tree_root = vault.root / "tree"
    domains = (
        [validate_name(domain, "domain")]
        if domain
        else (sorted(p.name for p in tree_root.iterdir() if p.is_dir()) if tree_root.is_dir() else [])
    )
    out = []
    warnings: list[str] = []
    for d in domains:
        nodes, root, unread = _load(vault.tree_dir(d))[1:]
        warnings += [cannot_read(d, name, exc).message for name, exc in unread.items()]

        def walk(node: Node, nodes: dict[str, Node] = nodes) -> dict[str, Any]:
            kids = [walk(nodes[c]) for c in node.children if c in nodes] if node.level > 1 or node.root else []
            return {**_brief(node), "children": kids}

        if root is not None:
            out.append(view.shown(walk(root)))
    return Outline(out, warnings)


def _brief(node: Node) -> dict[str, Any]:
    return {
        "id": f"{node.domain}/{node.id}",
        "level": node.level,
        "from": node.start,
        "to": node.end,
        "count": node.count,
        "summarizer": node.summarizer,
        "edited": node.edited,
    }


def get_node(vault: Vault, ref: str) -> dict[str, Any]:
    """One node (`domain/L1-0001` or `domain/root`) with its body (as shown: see `summary.Shown`) and
    its children — as every surface shows stored text: each field through the read-side scan, and
    each line of the body the scan flags as `[BLOCKED: rule]` (`view.shown`, `view.display_lines`)."""
    from optmem.index import open_index

    vault.require()
    if not ref.strip():
        raise UsageError(
            "NODE is empty; a node id is required, as DOMAIN/NODE (e.g. hermes/root) — "
            "or leave NODE out for the outline"
        )
    domain, _, node_id = ref.partition("/")
    if not node_id:
        raise UsageError(f"name a node as DOMAIN/NODE, e.g. hermes/root or hermes/L1-0001, not {quote(ref)}")
    validate_name(domain, "domain")
    tree_root = vault.root / "tree"
    trees = sorted(p.name for p in tree_root.iterdir() if p.is_dir()) if tree_root.is_dir() else []
    # a domain with no tree is said first or beside a bad node id: "no/such" names neither
    no_tree = (
        f"domain {quote(domain)} has no tree ("
        + (f"domains with one: {', '.join(trees[:10])}" if trees else "none has one yet: `optmem compact` makes them")
        + ")"
        if domain not in trees
        else ""
    )
    if node_id != "root" and not re.match(r"^L\d+-\d+$", node_id):
        also = f"; and {no_tree}" if no_tree else ""
        raise UsageError(f"{quote(node_id)} is not a node id (root, L1-0001, …){also}")
    if no_tree:
        raise NotFound(f"no node {quote(ref)}: {no_tree}; see `optmem tree`", node=ref)
    nodes, root, unread = _load(vault.tree_dir(domain))[1:]
    node = root if node_id == "root" else nodes.get(node_id)
    name = f"{node_id}.md"
    if node is None and name in unread:  # the node is there: say what is wrong with its file
        raise cannot_read(domain, name, unread[name])
    if node is None:
        raise NotFound(f"no node {quote(ref)}; see `optmem tree`", node=ref)
    with open_index(vault) as idx:
        shown = summary.Shown(idx)
        body = shown(node.body)
        stored = shown.as_stored()  # (a record quoted word for word: shown as `get` shows it)
    return {**view.shown(_brief(node)), "body": view.display_lines(body, stored), "children": view.shown(node.children)}


def search_nodes(
    vault: Vault, query: str, *, domains: list[str] | None = None, limit: int = 10
) -> list[view.RecordView]:
    """Summary nodes ranked by BM25 over their bodies as shown (`search --kind summary`)."""
    from optmem.index import open_index

    tree_root = vault.root / "tree"
    if not tree_root.is_dir():
        return []
    from optmem.reading.query import search_terms

    terms = search_terms(query)
    if not terms:
        return []
    found: list[Node] = []
    for d in sorted(p.name for p in tree_root.iterdir() if p.is_dir()):
        if not domains or d in domains:
            nodes, root, _ = _load(tree_root / d)[1:]
            found += [*nodes.values(), *([root] if root else [])]
    if not found:
        return []
    docs = []
    with open_index(vault) as idx:
        shown = summary.Shown(idx, (n.body for n in found))
        for node in found:
            body = shown(node.body)
            toks = textmod.tokens(body)
            docs.append((node, body, Counter(toks), len(toks)))
        stored = shown.as_stored()  # (a record quoted word for word: shown as `get` shows it)
    avgdl = sum(dl for _, _, _, dl in docs) / len(docs) or 1.0
    idfs = {t: ranking.idf(len(docs), sum(1 for _, _, tf, _ in docs if t in tf)) for t in terms}
    scored = [(ranking.bm25(tf, dl, terms, idfs, avgdl), node, body) for node, body, tf, dl in docs]
    scored = [x for x in scored if x[0] > 0]
    scored.sort(key=lambda x: (-x[0], -x[1].level, x[1].domain, x[1].id))
    # a hit shows its node as `tree NODE` does (`view.display_lines`, line by line, the lines
    # quoting a record word for word as that record is shown) — every field already as surfaces
    # show it, so the hit is not scanned again whole (`passed`)
    return [
        view.RecordView(
            Record(
                id=view.display(f"{n.domain}/{n.id}"),
                ts=view.display(n.end),
                domain=view.display(n.domain),
                kind="summary",
                text=view.display_lines(body, stored).strip(),
                # a model's words are its reading of the records, not what anyone said
                basis=None if n.summarizer == EXTRACTIVE else "inferred",
            ),
            view.Status.CURRENT,
            score=round(s, 4),
            annex={
                "level": n.level,
                "range": {"from": n.start, "to": n.end},
                "children": n.children,
                "summarizer": n.summarizer,  # who wrote it: `extractive`, or the command (a model's words)
            },
            passed=True,
        )
        for s, n, body in scored[:limit]
    ]
