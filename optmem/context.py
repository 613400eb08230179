"""`context`: one prompt-ready block for the start of a session, within a character budget.

Parts, highest priority first: current redlines, a share of the open conflicts, hot memory
(MEMORY.md, USER.md, the project block), the project's latest handoff, then the rest of the open
conflicts, keyed facts, the keys another domain holds otherwise and the most relevant current
records (`PRIORITY`; what is cut of the conflicts and those keys is named on one line). The block is
fenced and labelled as recalled reference data, never instructions (`optmem.safety.fence`: stored text
cannot close or forge the fence). When it does not fit, the
lowest-priority items go first and an elision line says what was left out; redlines are cut
last, and never silently.
"""

from __future__ import annotations

import functools

from optmem import clock, view
from optmem.errors import NotFound, OptmemError, UsageError, clip
from optmem.quarantine import found_in, secondhand
from optmem.record import HANDOFF, MEMORY
from optmem.safety.fence import CLOSE, OPEN, TITLES, heading, line
from optmem.value import Value
from optmem.vault import Vault, validate_name

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from optmem.record import Record


class Section:
    """One part of the block, trimmed in place by `fit`. (A plain class, as `Context` is a
    `Value`: `dataclasses` and what it imports cost `context` ~40M instructions, ~12 ms.)"""

    def __init__(
        self,
        name: str,
        title: str,
        items: list[str],
        omitted: int = 0,
        ids: list[str] | None = None,
        names: list[str] | None = None,
    ) -> None:
        # redlines | conflicts | across_domains | memory | user | project | handoff | unverified | records | found
        self.name = name
        self.title = title
        self.items = items
        self.omitted = omitted
        self.ids: list[str] = [] if ids is None else ids  # the records behind the items, when they are records
        # what one line names each item by when items are cut (a conflict's key): the part then
        # ends with that line (`summary`), kept until only redlines are left to cut
        self.names = names
        self.summed = bool(names)
        self.chars = sum(map(len, items))  # the items' length together (kept by `fit` as it cuts)
        self.cut_ids: list[str] = []  # the ids of the items `fit` cut, when it names them (redlines)
        self._cut_at: int | None = None  # (`_cut`: how many items were kept when it last counted)
        self._cut_names: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"Section({', '.join(f'{k}={v!r}' for k, v in vars(self).items() if not k.startswith('_'))})"

    def summary(self) -> str:
        """The one line that names the items cut from this part ("" when none is to be said)."""
        if not (self.summed and self.names and self.omitted):
            return ""
        cut = self._cut()
        if not cut:
            return ""
        first: list[str] = []  # (the first names cut, each once: `dict.fromkeys(cut)[:SUMMARY_NAMES]`)
        for name in self.names[len(self.items) :]:
            if len(first) == SUMMARY_NAMES:
                break
            if name not in first:
                first.append(name)
        over = len(cut) - SUMMARY_NAMES
        named = ", ".join(first) + (f" and {over} more" if over > 0 else "")
        return _item(SUMMARIES[self.name].format(n=self.omitted, names=named))

    def _cut(self) -> dict[str, int]:
        """The names of the items cut (`names` past the items kept), each with how often: kept
        from one call to the next as `fit` cuts an item at a time (each call costs the items cut
        since the last, not all of them)."""
        names, at = self.names or [], len(self.items)
        was = self._cut_at
        if was is None or was < at:
            self._cut_at, self._cut_names = len(names), {}
            was = len(names)
        counts = self._cut_names
        for name in names[at:was]:
            counts[name] = counts.get(name, 0) + 1
        self._cut_at = at
        return counts

    def render(self) -> str:
        """`## title`, then one line per item — the fence's structure and its data (`fit` made
        each item one defused line starting `- `) — then the line naming what was cut, if any."""
        tail = self.summary()
        return f"## {self.title}\n" + "\n".join(self.items + ([tail] if tail else []))

    def size(self) -> int:
        """`len(self.render())`, from the items' lengths `fit` keeps (`chars`) — not joined again."""
        tail = self.summary()
        lines = len(self.items) + bool(tail)
        return len(self.title) + 4 + self.chars + len(tail) + max(lines - 1, 0)

    def shown(self) -> bool:
        return bool(self.items or self.summary())


class Context(Value):
    text: str
    chars: int
    budget: int
    sections: list[dict[str, Any]]
    omitted: dict[str, int]
    warnings: list[str]  # a hot file that could not be read, …
    # the records it read (`lifecycle.read_in_full`: each line of them shown), which `build` records as
    # recalled unless its caller records them when it shows the block (`record=False`: Hermes' prefetch)
    read: list[str] = []


RECENT_POOL, RECENT_SHOWN = 60, 20  # newest current records considered, and the warmest shown
# what is cut first when the budget is tight: the end of this list. Hot memory outranks every
# part but the redlines and a share of the open conflicts (`SHARE`): the conflicts beyond that
# share ("conflicts+") and the keys another domain holds otherwise are cut before the handoff and
# the records, each part's cut items named on one line (`SUMMARIES`) that stays until only
# redlines are left to cut.
PRIORITY = (
    "redlines",
    "conflicts",
    "memory",
    "user",
    "project",
    "handoff",
    "conflicts+",
    "facts",
    "unverified",
    "across_domains",
    "records",
    "found",
)
SHARE = {"conflicts": 5}  # a part that keeps 1/N of the budget ahead of hot memory (beyond it: "<name>+")
SUMMARIES = {
    "conflicts": "[{n} more open conflict(s) left out here: {names} — `optmem conflicts` lists them; "
    "ask the user before relying on any of these]",
    "across_domains": "[{n} more key(s) hold a different value in another domain: {names} — "
    "`optmem conflicts` lists them]",
}
SUMMARY_NAMES = 8  # names a summary line lists at most
HOT_FILES = {"memory": "MEMORY.md", "user": "USER.md", "project": "project-block"}  # (as the elision line names them)
# a handoff an agent wrote (`origin: agent`): what it says it did is its account, not a checked fact
BY_AGENT = " (the agent's own report: its “done” items are its claims)"
FACTS_SHOWN = 30  # the project's current keyed facts listed at most, newest first


def _line(text: str, stored: bool = False) -> str:
    """A stored string on one line, as every surface shows it: as `stored` when its record's
    words are shown so (`view.as_stored`), else scanned (`view.display`: `[BLOCKED: rule]` when
    the scan flags it) — defused before its lines are joined (`fence.line`): a label at the start
    of a later line is quoted as one at the first line's start is."""
    return " ".join(line(text if stored else view.display(text)).split())


def _id(rid: str, stored: bool = False) -> str:
    """A record's id as the block names it: its last 8 characters (`[BLOCKED: rule]` whole)."""
    said = _line(rid, stored)
    return said if said.startswith("[BLOCKED: ") else said[-8:]


def _scope(domain: str, project: str | None, stored: bool = False) -> str:
    """A record's domain, and its project where records of several projects meet (`context`
    without --project, or a redline): `code/zeta`, as `search` shows it — "the deploy port is
    8276" of zeta and "… 8080" of beta are two projects' facts, not two answers to one question."""
    return _line(domain, stored) + (f"/{_line(project, stored)}" if project else "")


def _unchecked(vault: Vault, row: Any, now: float) -> list[str]:
    """ "unchecked since …" for a fact that matters and went unchecked long (`lifecycle.unchecked_since`)."""
    from optmem.lifecycle import unchecked_since

    since = unchecked_since(vault.settings.lifecycle, row, now)
    return [] if since is None else [f"unchecked since {clock.format_ts(clock.from_epoch(since))[:10]}"]


CUT_NAMED = 5  # the redlines cut that the line saying what was left out names by id, at most
CHUNK = 50  # redlines read (and their verdicts looked up) in the first page


def _redlines(
    vault: Vault,
    domain: str | None,
    now: float,
    budget: int,
    project: str | None = None,
    ids: list[str] | None = None,
) -> tuple[list[str], int]:
    """The current redlines' lines (each of a project other than `project` naming it), and how
    many more there are; `ids` gets each line's id as the block names it. Only those that can be
    in a block of `budget` characters are read, a page at a time: once the lines so far that each
    fit the budget alone are longer than it together (and `CUT_NAMED` more, which the line saying
    what was cut names), no later one is shown (`fit` keeps the first ones that fit, in order,
    skipping one that does not), so the rest are counted, not read — however many redlines the
    log holds."""
    from optmem.index import open_index

    out: list[str] = []
    size = at = past = 0
    page = CHUNK  # (doubled page by page: thousands of redlines that fit are sorted a few times, not once a page)
    with open_index(vault) as idx, idx.snapshot():
        while True:
            chunk = idx.current_redlines(now, domain, limit=page, offset=at)
            stored = idx.as_stored(chunk)
            for i, r in enumerate(chunk):
                ok = r.n in stored
                scope = _scope(r.domain, r.project if r.project != project else None, ok)
                said = (
                    f"- [{scope}] {_line(idx.record(r).text, ok)} (id {_id(r.id, ok)}"
                    + "".join(f"; {n}" for n in _unchecked(vault, r, now))
                    + ")"
                )
                out.append(said)
                if ids is not None:
                    ids.append(_id(r.id, ok))
                if (one := len(_item(said)) + 1) <= budget:  # (one longer than the block alone never counts)
                    size += one
                past += size > budget
                if past > CUT_NAMED:  # (and the first ones cut after that: the block names them by id)
                    return out, idx.count_redlines(now, domain) - at - i - 1
            if len(chunk) < page:
                return out, 0
            at, page = at + page, page * 2


def _said_when(value: dict[str, Any], ok: bool) -> str:
    """When a value in conflict was written, and where it came from: "found in a tool result on
    2026-06-03" (`quarantine.found_in`), "the user said it on 2026-06-01", else its day."""
    day = _line(value["ts"], ok)[:10]
    origin = value.get("origin")
    if secondhand(origin):
        return found_in(_line(str(origin), ok), day)
    return f"the user said it on {day}" if origin == "user" else day


def _conflicts(
    vault: Vault, project: str | None, domain: str | None, *, said: bool = True, mine: str | None = None
) -> Section:
    """The open conflicts' part: one line per open conflict (of this project and domain, or
    none): both values with their dates, and the question to settle it with the user — the
    block's own project's first — each named for the line that says which were cut (`Section.
    summary`). Not `said` (none of them can be in the block: `_crowded`), no line, only how many
    there are. A conflict of a project other than the block's (`mine`) names its project — or
    its values' projects, for a record of no project corrected two ways in another project."""
    from optmem import facts

    ours = [
        c
        for c in facts.conflicts(vault, values=said)
        if not ((domain and c.domain != domain) or (project and c.project not in (None, project)))
    ]
    if not said:
        return Section("conflicts", TITLES["conflicts"], [], len(ours))
    here = project or mine
    ours.sort(key=lambda c: c.project != here)  # (stable: the block's project's own first, each oldest first)
    out, names = [], []
    for c in ours:
        shown = c.values[-3:]  # the newest three: a long fork is listed by `optmem conflicts`
        ok = c.passed  # (every line it shows is shown as stored: `OpenConflict.passed`)
        told = " or ".join(
            f"“{_line(v['text'][:160], ok)}” ({_said_when(v, ok)}, id {_id(v['id'], ok)}"
            + (", inferred" if v.get("basis") == "inferred" else "")
            + ")"
            for v in shown
        )
        more = f" (and {len(c.values) - 3} more: optmem conflicts)" if len(c.values) > 3 else ""
        if c.decision:
            kept = "kept on one machine (confirmed, corrected or restored)"
            what = f"id {_line(c.name, ok)} was {kept} and forgotten on another"
        elif c.removal:
            where = f"an entry of {_line(c.file or '', ok)}"
            what = f"{where} was removed on one machine and edited on another ({_line(c.name, ok)})"
        elif c.file is not None:
            what = f"an entry of {_line(c.file, ok)} was edited two ways ({_line(c.name, ok)})"
        else:
            what = _line(c.key, ok) if c.key is not None else f"id {_line(c.name, ok)} was corrected two ways"
        # several projects' conflicts: whose this one is — its own project, else its values'
        # (two corrections written in 数据平台 of a record of no project are 数据平台's question)
        theirs = [c.project] if c.project else [v.get("project") for v in c.values if v.get("project")]
        theirs = list(dict.fromkeys(p for p in theirs if p != here))
        whose = f" (project {', '.join(_line(str(p), ok) for p in theirs)})" if theirs else ""
        # where each value came from: "you were told" only when every value was said in the
        # conversation — none found outside it, none an agent's inference, none a guess (`view.said`)
        told_all = all(
            not secondhand(v.get("origin")) and v.get("basis") != "inferred" and not v.get("pending") for v in shown
        )
        lead = "you were told" if told_all else "the values are"
        out.append(
            f"- {what}{whose}: {lead} {told}{more} — which is right now? Ask the user, then "
            f"`optmem resolve {_line(c.name, ok)} --keep ID`"
        )
        names.append(_line(c.name, ok) + whose)
    return Section("conflicts", TITLES["conflicts"], out, names=names)


def _split(
    vault: Vault, project: str | None, domain: str | None, *, said: bool = True, budget: int | None = None
) -> Section:
    """The part of keys with a different current value in two or more domains (`facts.splits`;
    `conflicts --json` lists them apart, `across_domains`, outside its `count`): one line per
    key, each named for the line that says which were cut — or, not `said`, only how many. A
    domain filter is exact (SPEC §6.6): under `--domain` only that domain's value is told, and the
    other domains' named by id. Only the keys that can be in a block of `budget` characters are
    read back and said: once the lines so far are longer than the budget together, no later one
    can be shown (`fit` cuts the part before it can fit), so the rest are named and counted only
    — a large log holds thousands of such keys."""
    from optmem import facts
    from optmem.index import open_index

    now = clock.now().timestamp()
    shown: dict[str, str] = {}  # (a domain as `get` shows it: one the scanner flags reads `[BLOCKED: rule]`)
    with open_index(vault) as idx:
        if not said and not domain:  # (only how many: counted in SQL — the domain filter compares shown domains)
            return Section("across_domains", TITLES["across_domains"], [], facts.split_count(idx, now, project))
        heads = [
            (key, p)
            for key, p, domains in facts.split_names(idx, now)
            if not (
                (domain and domain not in {shown.get(d) or shown.setdefault(d, view.display(d)) for d in domains})
                or (project and p not in (None, project))
            )
        ]
        if not said:
            return Section("across_domains", TITLES["across_domains"], [], len(heads))
        out, names = [], []
        size = 0
        for key, p in heads:
            whose = f" (project {_line(p)})" if p and p != project else ""
            if budget is not None and size > budget:  # (past what the block can show: named, not said)
                names.append(_line(view.shown(key)) + whose)
                continue
            rows = facts.split_values(idx, key, p, now)
            sk = facts.split_key(idx, key, p, rows, now)
            mine = [v for v in sk.values if not domain or v["domain"] == domain]
            others = [v for v in sk.values if domain and v["domain"] != domain]
            told = " and ".join(
                f"“{_line(v['text'][:160])}” ({_line(v['domain'])}, {_line(v['ts'])[:10]}, id {_id(v['id'], False)})"
                for v in mine[-3:]
            )
            if others:
                ids = ", ".join(_id(v["id"], False) for v in others[-3:])
                where = f"{_line(sk.key)}{whose} is {told}; another domain holds a different value (id {ids})"
            else:
                n = len({v["domain"] for v in sk.values})
                where = f"{_line(sk.key)}{whose} holds a different current value in {n} domains: {told}"
            item = (
                f"- {where} — each domain keeps its own; if they are one fact, ask the user which is right now, then "
                "`optmem correct ID TEXT` the stale one"
            )
            out.append(item)
            names.append(_line(sk.key) + whose)
            size += len(_item(item)) + 1
    return Section("across_domains", TITLES["across_domains"], out, len(names) - len(out), names=names)


def _hot(
    vault: Vault,
    target: str,
    project: str | None,
    warnings: list[str],
    scope: tuple[str | None, str | None],
    stale_only: bool = False,
) -> list[str]:
    """A hot file's entries; for a file that cannot be read, a line saying so (the agent is told
    its entries are missing, the rest of the block still comes) and a warning for the caller.
    `stale_only`: only the entries that may be outdated, with their note (for an agent that shows
    the file itself, without the notes)."""
    from optmem import memory

    shown = memory.show(vault, [(target, project)], marks=False)[0]
    if stale_only:
        if shown.unreadable:
            return []  # (the agent reads the file itself: what it cannot read, it is told)
        texts = [e["text"] for e in shown.entries if not e.get("blocked")]
        stale = _outdated(vault, shown.file, texts, *scope)
        return [f"- {' '.join(line(t).split())}{stale[t]}" for t in texts if t in stale]
    if shown.unreadable:
        warnings.append(shown.warning() or "")
        return [
            f"- [{shown.file} could not be read: it {shown.unreadable}; its entries are missing here — "
            "tell the user (`optmem doctor` names the problem)]"
        ]
    merge: list[str] = []
    if shown.conflicted:  # both sides of a merge git left unfinished: said, never read as one truth
        warnings.append(shown.warning() or "")
        merge = [
            f"- [{shown.file} is mid-merge: the entries below hold both sides of a git merge, each on its "
            "own, and they may contradict each other — ask the user which are right (`optmem doctor` "
            "says how to finish the merge)]"
        ]
    # each stored line defused before the entry becomes one line: a label at its start is seen
    texts = [e["text"] for e in shown.entries if not e.get("blocked")]
    newer = _newer_entries(vault, shown.file, texts)
    stale = _outdated(vault, shown.file, texts, *scope, newer=newer)
    order = _newer_first([e["text"] for e in shown.entries], newer)
    return merge + [f"- {' '.join(line(text).split())}{stale.get(text, '')}" for text in order]


def _newer_first(texts: list[str], newer: dict[str, str]) -> list[str]:
    """The entries in their file's order, but an entry that may be a new value of an older one
    (`newer`: older → newer) read just before it."""
    moved = set(newer.values())
    out: list[str] = []
    for text in texts:
        if text in moved:
            continue  # (placed before the older one it may update)
        if text in newer:
            out.append(newer[text])
        out.append(text)
    return out + [t for t in texts if t not in out]


def _newer_entries(vault: Vault, file: str, texts: list[str]) -> dict[str, str]:
    """The entries of a hot file that may be older values of another entry — older text → the
    newer's — as `add` guessed when it added the newer (its journal record's `may_update`, the
    write gate's guess) and while both are in the file."""
    from optmem.index import open_index
    from optmem.memory import entry_id

    if len(texts) < 2:
        return {}
    with open_index(vault) as idx:
        keys = [f"hot:{file}:{entry_id(text)}" for text in texts]
        last = {row.key: row for row in idx.rows(f"r.key IN ({', '.join('?' * len(keys))}) ORDER BY r.n", keys)}
    record = {last[k].id: text for k, text in zip(keys, texts) if k in last}
    out: dict[str, str] = {}
    for k, text in zip(keys, texts):
        old = record.get(last[k].upd or "") if k in last else None
        if old is not None and old != text and old not in out:
            out[old] = text
    return out


def _outdated(
    vault: Vault,
    file: str,
    texts: list[str],
    project: str | None,
    domain: str | None,
    newer: dict[str, str] | None = None,
) -> dict[str, str]:
    """The note to add to each entry that states a value a newer keyed value replaced
    (`facts.outdated_hot`) — a guess, said as one, with what the newer record says — or that
    another entry of the file may be a newer value of (`newer`, as `_newer_entries` gives it)."""
    from optmem import facts
    from optmem.index import open_index
    from optmem.memory import entry_id

    if not texts:
        return {}
    with open_index(vault) as idx:

        def written(text: str) -> float | None:  # (the entry's last journal record, read by its key)
            last = idx.rows("r.key = ? ORDER BY r.ts DESC, r.n DESC LIMIT 1", (f"hot:{file}:{entry_id(text)}",))
            return last[0].ts if last else None

        out = {
            older: f" (may be outdated: the entry “{_line(later[:160])}” may be a newer value of it — a guess)"
            for older, later in (_newer_entries(vault, file, texts) if newer is None else newer).items()
        }
        for text, head in facts.outdated_hot(idx, texts, written, clock.now().timestamp(), project, domain).items():
            rec = idx.record(head)
            guess = ", inferred" if head.inferred else ""
            out[text] = (
                f" (may be outdated: a newer note of {_line(head.key or '')} says “{_line(rec.text[:160])}” — "
                f"{_line(rec.ts or 'undated')[:10]}, id {_id(head.id)}{guess})"
            )
        return out


def _handoff(
    vault: Vault, project: str, domain: str | None, warnings: list[str]
) -> list[tuple[str, list[str], list[str]]]:
    """(title, items, the handoff id behind each item) of the project's latest handoff — of
    `domain` first, if given — then the latest of each other domain that wrote one, newest first
    (`handoff.latest_per_domain`: neither another agent's handoff nor `--domain` hides an agent's
    open items). A handoff of the same domain written before the latest that no one had read
    when the latest was written (`Handoff.unread`: tester18 #7) has its open
    items in the latest's part, said so; one written beside it on another machine has a part of
    its own. For a HANDOFF.md that cannot be read, a line saying so (the rest of the block still
    comes) and a warning for the caller — one bad handoff costs its own line, nothing more."""
    from optmem import handoff

    bad: list[OptmemError] = []  # (a HANDOFF.md that cannot be read: the log's latest handoff instead)
    try:
        found = handoff.latest_per_domain(vault, project, domain=domain, set_aside=bad)
    except NotFound:
        found = []
    if bad:
        why = _line(f"projects/{project}/HANDOFF.md could not be read: it {bad[0].context.get('reason') or 'failed'}")
        warnings.append(f"{why}; `optmem doctor` names the problem")
        if not found:
            said = f"- [{why}; the latest handoff is missing here — tell the user (`optmem doctor` names the problem)]"
            return [(f"Latest handoff — {project}", [said], [])]
    out: list[tuple[str, list[str], list[str]]] = []
    latest: dict[str | None, int] = {}  # a domain's latest handoff: its part
    for h in found:
        # what to do next matters most to the next session, so it comes first (and is cut last)
        items = [f"- next: {_line(i)}" for i in h.next] + [f"- blocked: {_line(i)}" for i in h.blocked]
        if h.beside and h.unread and h.domain in latest and items:  # (its open items: in its latest's part)
            by = " (an agent's)" if h.origin == "agent" else ""
            said = UNREAD.format(id=_id(h.id or ""), time=_line(h.time), by=by)
            _, lines, ids = out[latest[h.domain]]
            lines.extend([said, *items])
            ids.extend(["", *[h.id or ""] * len(items)])  # (its heading alone reads none of it)
            continue
        if h.beside:  # written beside the latest, on another machine (`handoff.beside`): its open items
            title = TITLES["handoff_beside"].format(project=project, time=_line(h.time), id=_id(h.beside))
            out.append((title + (BY_AGENT if h.origin == "agent" else ""), items, [h.id or ""] * len(items)))
            continue
        items += [f"- done: {_line(i)}" for i in h.done]
        if h.note:
            items.append(f"- note: {_line(h.note)}")
        if h.domain and (len(found) > 1 or h.domain != (domain or h.domain)):  # whose each is, beside another's
            title = TITLES["handoff_domain"].format(project=project, domain=_line(h.domain), time=_line(h.time))
        else:
            title = TITLES["handoff"].format(project=project, time=_line(h.time))
        title += " (edited by hand)" if h.edited else BY_AGENT if h.origin == "agent" else ""
        latest[h.domain] = len(out)
        out.append((title, items, [h.id or ""] * len(items)))
    if bad and out:  # (said first in the part, so it is cut last of it)
        title, items, ids = out[0]
        said = f"- [{why}; this is the log's latest handoff — a hand edit of the file is not in it; tell the user]"
        out[0] = (title, [said, *items], ["", *ids])
    return out


# the open items of a handoff written before the latest that its writer had not read (`Handoff.unread`)
UNREAD = "- still open in the handoff {id}{by} of {time}, written before this one and not read before it was written:"


def _facts(vault: Vault, project: str, domain: str | None, now: float) -> tuple[list[str], list[str]]:
    """(items, ids) of the project's keyed facts — each key's current value (`Index.keyed_current`),
    newest first: what the project's keys hold comes before its recent notes — in a busy project
    the 20 most recent notes leave out "proj7 port is 8450" written a month ago. A key's value is
    its latest keyed record, not a checked fact: a newer unkeyed note that may update it (the
    write gate's guess, or one saying the same in other numbers: `compare.same_words`) follows it,
    both marked as guesses (`view.guess_notes`). A value saved from outside the conversation stays
    with the others of its kind (`found`)."""
    from optmem import compare
    from optmem.index import open_index
    from optmem.reading.cues import time_words
    from optmem.record import COMMIT

    out: list[str] = []
    ids: list[str] = []
    with open_index(vault) as idx:
        rows = [
            r
            for r in idx.keyed_current(now, project, domain, (HANDOFF, MEMORY, COMMIT), FACTS_SHOWN)
            if not secondhand(r.origin)
        ]
        if not rows:
            return out, ids
        texts = {r.id: idx.record(r).text for r in rows}
        notes_of = [
            n
            for n in idx.recent(
                now, project=project, domain=domain, exclude_kinds=(HANDOFF, MEMORY, COMMIT), limit=RECENT_POOL
            )
            if not n.key and not secondhand(n.origin)
        ]
        ignore = time_words()
        beside: dict[str, list[Any]] = {}
        taken: set[str] = set()
        for r in rows:
            for n in notes_of:  # (newest first)
                if n.id in taken or (n.ts or 0.0) < (r.ts or 0.0):
                    continue
                said = texts.setdefault(n.id, idx.record(n).text)
                if n.upd == r.id or compare.same_words(texts[r.id], said, ignore):
                    beside.setdefault(r.id, []).append(n)
                    taken.add(n.id)
        both = rows + [n for ns in beside.values() for n in ns]
        stored = idx.as_stored(both)
        stored_ids = {x.id for x in both if x.n in stored}

        def name(rid: str) -> str:
            return f"id {_id(rid, rid in stored_ids)}"

        for r in rows:
            ok = r.n in stored
            newer = beside.get(r.id, [])
            notes = [
                *([view.CONFLICT_LABEL] if r.disputed else []),
                *(["inferred"] if r.inferred else []),
                *(["state"] if r.state else []),  # (a temporary state, as every surface labels it: `view.labels`)
                *view.guess_notes(None, [n.id for n in newer], name),
                *_unchecked(vault, r, now),
            ]
            rec = idx.record(r)
            out.append(
                f"- [{clock.age_of(rec.ts, now)}, {_line(r.domain, ok)}, {_line(r.key or '', ok)}, id {_id(r.id, ok)}] "
                f"{_line(rec.text, ok)}" + (f" ({'; '.join(notes)})" if notes else "")
            )
            ids.append(r.id)
            for n in newer:
                ok = n.n in stored
                guess = [*view.guess_notes(r.id, (), name), *_unchecked(vault, n, now)]
                out.append(
                    f"- [{clock.age_of(idx.record(n).ts, now)}, {_line(n.domain, ok)}, id {_id(n.id, ok)}] "
                    f"{_line(texts[n.id], ok)} ({'; '.join(guess)})"
                )
                ids.append(n.id)
    return out, ids


def _in_block(vault: Vault, project: str | None) -> Callable[[Record], bool]:
    """Whether a record is the journal record of an entry a hot file the block comes with holds
    now (MEMORY.md, USER.md, the project's block): its entry is listed there — said twice, it would
    spend the budget twice. A file that cannot be read lists nothing: its entries' records stay."""
    from optmem import memory

    files = {"MEMORY.md", "USER.md", *([f"projects/{project}/MEMORY.md"] if project else [])}
    held: dict[str, set[str]] = {}

    def check(rec: Record) -> bool:
        step = memory.journal_step(rec)
        if step is None or step[0] not in files:
            return False
        if step[0] not in held:
            held[step[0]] = memory.held_entries(vault, step[0]) or set()
        return step[1] in held[step[0]]

    return check


def _records(
    vault: Vault,
    project: str | None,
    domain: str | None,
    query: str | None,
    now: float,
    block: str | None = None,  # the project whose block the context shows
) -> tuple[tuple[list[str], list[str]], tuple[list[str], list[str]]]:
    """(items, ids) of the records said in the conversation, then of those saved from outside
    it (a tool's output, an import, another clone: `quarantine.secondhand`), each item one line
    with its own id — records never run together, whatever they say one after the other."""
    rows: dict[str, Any]
    guesses: dict[str, dict[str, Any]]  # the write gate's guesses that stand (`Index.guesses`)
    if query:
        from optmem import search

        found = search.search(
            vault,
            query,
            limit=20,
            filters=search.make_filters(domains=[domain] if domain else None, project=project, current=True),
        ).hits
        # (a hot file's entry is not said again: the block shows its file — or, without `hot`, the
        # caller's agent does — `_in_block`)
        in_block = _in_block(vault, block)
        hits = [h.record for h in found if h.record.tier != "redline" and not in_block(h.record)]
        stored = {h.record.id for h in found if h.stored()}  # (shown as stored: `view.as_stored`)
        outdated = {h.record.id: h.outdated for h in found if h.outdated}  # (a merged record's facts)
        guesses = {h.record.id: {"may_update": h.may_update, "updated_by": h.updated_by} for h in found}
        from optmem.index import open_index

        with open_index(vault) as idx:  # (their rows: what `_unchecked` reads)
            ids = [rec.id for rec in hits]
            rows = {r.id: r for r in idx.rows(f"r.id IN ({','.join('?' * len(ids))})", ids)} if ids else {}
    else:
        from optmem.index import open_index
        from optmem.lifecycle import heat_of

        life = vault.settings.lifecycle
        with open_index(vault) as idx:
            # the warmest of the recent records: important ones, and ones recalled lately (being
            # shown here before does not count: that would keep whatever was shown once)
            recent = idx.recent(now, project=project, domain=domain, exclude_kinds=(HANDOFF, MEMORY), limit=RECENT_POOL)
            # … and nothing gone cold by use, though no sweep has marked it yet: showing it would
            # keep it warm by being shown
            warm = [(heat_of(life, r, now, shown=False), r) for r in recent]
            warm = sorted((hr for hr in warm if hr[0] >= life.cold_below), key=lambda hr: -hr[0])
            hits = [idx.record(r) for _, r in warm[:RECENT_SHOWN]]
            rows = {r.id: r for _, r in warm[:RECENT_SHOWN]}
            lines = idx.as_stored(list(rows.values()))  # (shown as stored: `view.as_stored`)
            stored = {r.id for r in rows.values() if r.n in lines}
            outdated = {rec.id: o for rec in hits if (o := idx.outdated_facts(rows[rec.id], rec))}
            live = {rid: r.upd for rid, r in rows.items() if view.status(r, now) in view.LIVE}
            guesses = idx.guesses(live, now)  # the write gate's guesses that stand, as `get` finds them
    # a possible update the write gate kept beside the older value (both current) is its guess:
    # each asks — never "outdated", which would read a guess as a fact
    out: list[str] = []
    apart: list[str] = []  # saved from outside the conversation
    for rec in hits:
        age = clock.age_of(rec.ts, now)
        guess = guesses.get(rec.id, {})
        notes = [
            # one of two values that stand together: marked as every surface marks it (`view.labels`)
            *([view.CONFLICT_LABEL] if rows[rec.id].disputed and view.status(rows[rec.id], now) in view.LIVE else []),
            *(["inferred"] if rec.basis == "inferred" else []),
            *(["state"] if rec.state else []),  # (a temporary state, as every surface labels it: `view.labels`)
            *view.guess_notes(  # the write gate's guesses, worded as every surface words them
                guess.get("may_update"), guess.get("updated_by", ()), lambda rid: f"id {_id(rid, rid in stored)}"
            ),
            *_unchecked(vault, rows[rec.id], now),
            *([BY_AGENT.strip(" ()")] if rec.kind == HANDOFF and rec.origin == "agent" else []),  # (a query's hit)
            *(
                f"its {key} is outdated: see id {_id(by, rec.id in stored)}"
                for key, by in (outdated.get(rec.id) or {}).items()
            ),
        ]
        ok = rec.id in stored
        text = _line(rec.text, ok)  # (defused, as every item: `fit`)
        where = f"{age}, " if not secondhand(rec.origin) else f"{found_in(str(rec.origin), rec.ts[:10])}, "
        (apart if secondhand(rec.origin) else out).append(
            f"- [{where}{_scope(rec.domain, None if project else rec.project, ok)}, id {_id(rec.id, ok)}] {text}"
            + (f" ({'; '.join(notes)})" if notes else "")
        )
    return (out, [r.id for r in hits if not secondhand(r.origin)]), (
        apart,
        [r.id for r in hits if secondhand(r.origin)],
    )


def build(
    vault: Vault,
    *,
    project: str | None = None,
    domain: str | None = None,
    query: str | None = None,
    budget: int = 4000,
    hot: bool = True,
    everywhere: bool = False,
    record: bool = True,
) -> Context:
    """The session-start block: every part that fits in `budget` characters, fences included
    (when not `hot`, of the vault's MEMORY.md / USER.md only the entries that may be outdated,
    with their note: a caller whose agent shows those files itself). `everywhere`: the records
    and open conflicts come from every project, not only `project` (whose block and handoff
    still come). What it read (`Context.read`) is recorded as one recall — unless `record` is
    off: a caller that builds a block before it shows it (a prefetch) records it when it does."""
    vault.require()
    if project is not None:
        validate_name(project, "project")
    if domain is not None:
        validate_name(domain, "domain")
    now = clock.now().timestamp()
    from optmem.follow import follow_hot

    follow_hot(vault)  # hot files edited outside optmem: journalled before the view is read
    warnings: list[str] = []
    scope = (project, domain)  # whose keyed values may outdate a hot entry (`facts.outdated_hot`)
    own = None if everywhere else project  # whose records and open conflicts
    rule_ids: list[str] = []
    rules, more = _redlines(vault, domain, now, budget, project, rule_ids)
    crowded = _crowded(rules, budget) if vault.trusted else False
    sections = [
        Section(
            "redlines",
            TITLES["redlines"],
            rules if vault.trusted else [],
            more if vault.trusted else 0,
            ids=rule_ids if vault.trusted else [],
        ),
        _conflicts(vault, own, domain, said=not crowded, mine=project),
        _split(vault, own, domain, said=not crowded, budget=budget),
        Section("memory", TITLES["memory"], _hot(vault, "memory", None, warnings, scope, stale_only=not hot)),
        Section("user", TITLES["user"], _hot(vault, "user", None, warnings, scope, stale_only=not hot)),
    ]
    if project:
        sections.append(
            Section(
                "project", TITLES["project"].format(project=project), _hot(vault, "memory", project, warnings, scope)
            )
        )
        for title, items, handoff_ids in _handoff(vault, project, domain, warnings):
            if items:
                sections.append(Section("handoff", title, items, ids=handoff_ids))
    label = (
        TITLES["query"].format(query=clip(query))
        if query
        else (TITLES["project_records"].format(project=own) if own else TITLES["records"])
    )
    if rules and not vault.trusted:  # a vault from a git clone: its locked rules are someone's notes
        sections.append(Section("unverified", TITLES["unverified"], rules, more))
    facts, fact_ids = _facts(vault, project, domain, now) if project else ([], [])
    if facts:
        sections.append(Section("facts", TITLES["facts"].format(project=project), facts, ids=fact_ids))
    (items, ids), (found, found_ids) = _records(vault, own, domain, query, now, project)
    if fact_ids:  # (a fact listed above is not listed again among the records)
        kept = [(i, rid) for i, rid in zip(items, ids, strict=True) if rid not in set(fact_ids)]
        items, ids = [i for i, _ in kept], [rid for _, rid in kept]
    if not items and not found and (own or domain):  # a typo in --project or --domain, said as search says it
        from optmem.index import open_index
        from optmem.search import unknown_filters

        with open_index(vault) as idx:
            warnings += unknown_filters(idx, domains=[domain] if domain else [], project=own)
    sections.append(Section("records", label, items, ids=ids))
    sections.append(Section("found", TITLES["found"], found, ids=found_ids))
    out = fit(sections, budget)._replace(warnings=warnings)
    # (and each handoff it shows whole was read: one written after it follows it — `lifecycle.read_in_full`;
    # a handoff whose open items the budget cut was not, or they would be followed unseen)
    from optmem.lifecycle import read_in_full

    shown = read_in_full(
        (rid, n < len(s.items)) for s in sections if s.name in READ_PARTS for n, rid in enumerate(s.ids)
    )
    if shown and record:  # what a session starts with was recalled: it stays warm
        recalled(vault, shown)
    return out._replace(read=shown)


def recalled(vault: Vault, read: list[str]) -> None:
    """Record that a block showed these records (`Context.read`): one recall line. A read-only
    vault: the block is still right; only the recall goes unrecorded."""
    from optmem import lifecycle
    from optmem.errors import OptmemError

    try:
        lifecycle.touch_ids(vault, read, "context")
    except OptmemError:
        pass


READ_PARTS = ("handoff", "facts", "records", "found")  # the parts whose lines name their records (`Section.ids`)


def _crowded(rules: list[str], budget: int) -> bool:
    """Whether the redlines' lines alone are longer than `budget`: then `fit` leaves out every
    item of the parts after them before it cuts a redline, so of those parts only how many items
    they have can be in the block — and the open conflicts, which grow with the log, are counted,
    not read and said."""
    return sum(len(_item(r)) + 1 for r in rules) > budget


def _elision(sections: list[Section], budget: int, short: bool = False) -> str:
    cut = [(s.name, s.omitted) for s in sections if s.omitted]
    if not cut:
        return ""
    if short:
        red = next((n for name, n in cut if name == "redlines"), 0)
        return (
            f"[… {sum(n for _, n in cut)} items left out to fit {budget:,} characters"
            + (f", {red} of them redlines" if red else "")
            + "]"
        )
    parts = [_left_out(s) for s in sections if s.omitted]
    return f"[… left out to fit {budget:,} characters: {', '.join(parts)}]"


def _left_out(s: Section) -> str:
    """How the elision line counts what was cut of one part: a hot file's entries name their
    file, and that the last ones listed went ("the last 9 MEMORY.md entries": `optmem show`
    prints them all)."""
    if s.name == "redlines" and s.cut_ids:  # (named, so an agent can `get` them)
        over = s.omitted - min(len(s.cut_ids), CUT_NAMED)
        named = ", ".join(s.cut_ids[:CUT_NAMED]) + (f" and {over} more" if over > 0 else "")
        return f"{s.omitted} redlines (id{'s' if s.omitted > 1 else ''} {named})"
    if s.name in ("records", "redlines"):
        return f"{s.omitted} {s.name}"
    if s.name in HOT_FILES:  # (short: what it says is paid for with the budget)
        return f"the last {s.omitted} {HOT_FILES[s.name]} entr{'y' if s.omitted == 1 else 'ies'}"
    return f"{s.omitted} {s.name} item(s)"


def _size(sections: list[Section], budget: int) -> int:
    """`len(_assemble(sections, budget))`, from each part's `Section.size`: what `fit` measures
    after each item it cuts, without joining the block again (which made the cutting quadratic)."""
    sizes = [s.size() for s in sections if s.shown()]
    elision = _elision(sections, budget)
    parts = 2 + len(sizes) + bool(elision)
    return len(OPEN) + len(CLOSE) + sum(sizes) + len(elision) + 2 * (parts - 1)


def _assemble(sections: list[Section], budget: int, short: bool = False) -> str:
    parts = [OPEN] + [s.render() for s in sections if s.shown()]
    elision = _elision(sections, budget, short)
    if elision:
        parts.append(elision)
    parts.append(CLOSE)
    return "\n\n".join(parts)


@functools.lru_cache(maxsize=4096)  # (a redline's line is measured as `_redlines` reads it, then fitted)
def _item(text: str) -> str:
    item = line(text)
    return item if item.startswith("- ") else f"- {item}"


def _rank(s: Section, budget: int) -> int:
    """Where a part stands in `PRIORITY` now: a part with a share (`SHARE`) of the budget
    longer than its share stands as "<name>+", cut before the handoff, down to its share."""
    if s.name in SHARE and s.size() > budget // SHARE[s.name]:
        return PRIORITY.index(f"{s.name}+")
    return PRIORITY.index(s.name)


def _victim(sections: list[Section], budget: int) -> Section | None:
    """The part to cut an item from next: of the lowest rank (of two parts of one kind — two
    agents' handoffs — the later, older one); once only redlines are left, a part's line naming
    what was cut of it, then the redlines."""
    cut = [(_rank(s, budget), i, s) for i, s in enumerate(sections) if s.items and s.name != "redlines"]
    if cut:
        return max(cut, key=lambda c: c[:2])[2]
    said = [(PRIORITY.index(s.name), i, s) for i, s in enumerate(sections) if s.summary()]
    if said:
        return max(said, key=lambda c: c[:2])[2]
    return next((s for s in sections if s.items), None)


def _fit_redlines(sections: list[Section], rules: Section, budget: int) -> None:
    """Once only redlines are left to cut: keep them in their order, each that still fits, and
    skip one that does not — a long rule never pushes out the shorter ones after it. What is cut
    is counted and named by id (`Section.cut_ids`). Measured with every candidate cut first, so
    the line naming them is at its longest."""
    pairs = list(zip(rules.items, rules.ids or [""] * len(rules.items), strict=False))
    rules.items, rules.chars = [], 0
    rules.omitted += len(pairs)
    rules.cut_ids = [i for _, i in pairs if i]
    for item, rid in pairs:
        rules.items.append(item)
        rules.chars += len(item)
        rules.omitted -= 1
        if rid:
            rules.cut_ids.remove(rid)
        if _size(sections, budget) > budget:
            rules.items.pop()
            rules.chars -= len(item)
            rules.omitted += 1
            if rid:
                rules.cut_ids.append(rid)
    order = {rid: n for n, (_, rid) in enumerate(pairs)}
    rules.cut_ids.sort(key=lambda rid: order.get(rid, 0))


def fit(sections: list[Section], budget: int) -> Context:
    """Drop the lowest-priority items until the block fits; say what was dropped (in a shorter
    line when even the list of what was dropped would not fit). Every title is made one line,
    its stored values defused (`fence.heading`), and every item one defused line starting `- `
    (`fence.line`): stored text can never print a line of the block's structure. What is
    measured is what is printed."""
    for s in sections:
        s.title, s.items = heading(s.title), [_item(i) for i in s.items]
        s.chars = sum(map(len, s.items))
    short = False
    while _size(sections, budget) > budget:
        victim = _victim(sections, budget)
        if victim is None:
            short = True
            break
        if victim.name == "redlines" and victim.items:
            _fit_redlines(sections, victim, budget)  # (all else is cut: in order, each that fits)
            if _size(sections, budget) > budget:
                short = True
            break
        if victim.items:
            victim.chars -= len(victim.items.pop())
            victim.omitted += 1
        else:  # (only redlines are left to cut: the lines naming what was cut go first)
            victim.summed = False
    text = _assemble(sections, budget, short)
    if len(text) > budget:
        # the line saying what was left out quotes the budget, so the least that fits is the
        # length of the block made for that least budget
        least = len(text)
        while (need := len(_assemble(sections, least, short=True))) > least:
            least = need
        raise UsageError(
            f"--budget {budget} is too small even for the fences and the line saying "
            f"what was left out; give at least {least} characters"
        )
    return Context(
        text=text,
        chars=len(text),
        budget=budget,
        sections=[
            {"name": s.name, "title": s.title, "items": s.items, "omitted": s.omitted}
            | ({"summary": tail} if (tail := s.summary()) else {})
            for s in sections
        ],
        omitted={
            n: sum(s.omitted for s in sections if s.name == n)
            for n in dict.fromkeys(s.name for s in sections if s.omitted)
        },
        warnings=[],
    )
