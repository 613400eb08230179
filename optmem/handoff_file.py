"""HANDOFF.md: the file's format, and the file as the copy of its project's latest handoff record.

`handoff` writes, reads and journals handoffs; this module is what `log.forget` needs of them
without importing `handoff` (which appends to the log): when the record a HANDOFF.md copies is
forgotten, the file becomes the copy of the handoff before it.
"""

from __future__ import annotations

import re

from optmem import fsio, view
from optmem import meta as metamod
from optmem import text as textmod
from optmem.record import handoff_tag
from optmem.value import Value

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on `context`'s path)
if TYPE_CHECKING:
    from typing import Any

    from optmem.index import Index
    from optmem.schema import Row
    from optmem.vault import Vault

SECTIONS = ("done", "blocked", "next")
_TITLES = {"done": "Done", "blocked": "Blocked", "next": "Next"}
_HEADING = re.compile(r"^#{1,3}\s*(.+?)\s*$")
_ALIASES = {
    "done": "done",
    "完成": "done",
    "已完成": "done",
    "blocked": "blocked",
    "阻塞": "blocked",
    "卡点": "blocked",
    "next": "next",
    "下一步": "next",
    "待办": "next",
    "notes": "note",
    "note": "note",
    "备注": "note",
}


class Handoff(Value):  # (a Value, not a dataclass: `context` reads one at every session start)
    project: str
    time: str
    done: list[str]
    blocked: list[str]
    next: list[str]
    note: str = ""
    domain: str | None = None
    source: str | None = None
    id: str | None = None  # the log record that carries it
    edited: bool = False  # HANDOFF.md was changed by hand after it was written
    # who wrote it (record.origin): `agent` — an agent's own account of its session (its "done"
    # items are its claims), `user` — a person; None: not recorded
    origin: str | None = None
    # (what `write` returns) the handoff this one is stamped just after — the clock stood behind it
    # so that the handoff written last is the latest
    stamped_after: str | None = None
    # what the clock said when it was written, when it was stamped after the project's latest
    # (kept in its record: a handoff dated in the future puts every later one after it)
    clock_said: str | None = None
    # the latest handoff of its project and domain this one is shown beside: written beside it (on
    # another machine, before a sync), not before it — the latest's writer had not seen it
    # (`handoff.beside`); None for the latest itself
    beside: str | None = None
    # (with `beside`) written before the latest, here, but read by no one before the latest was
    # written (`handoff.write`: its writer had not seen it) — not on another machine
    unread: bool = False

    def to_dict(self) -> dict[str, Any]:
        return (
            {
                "project": self.project,
                "time": self.time,
                "done": self.done,
                "blocked": self.blocked,
                "next": self.next,
                "note": self.note,
                "domain": self.domain,
                "source": self.source,
                "id": self.id,
                "edited": self.edited,
                "origin": self.origin,
            }
            | ({"beside": self.beside} if self.beside else {})
            | ({"unread": True} if self.unread else {})
            | ({"clock_said": self.clock_said} if self.clock_said else {})
        )

    def shown(self) -> Handoff:
        """The handoff as every surface shows it: each field — the front matter's too — through
        the read-side scan (`view.shown`: `[BLOCKED: rule]` for a flagged one)."""
        return Handoff(**view.shown(self.to_dict()))

    def summary(self) -> str:
        """One searchable line: what the log record's text says."""
        parts = [f"{_TITLES[s]}: " + "; ".join(getattr(self, s)) for s in SECTIONS if getattr(self, s)]
        if self.note:
            parts.append("Notes: " + " ".join(self.note.split()))
        return handoff_tag(self.project) + " | ".join(parts)


def render_body(h: Handoff) -> str:
    lines = [f"# Handoff — {h.project}", ""]
    for s in SECTIONS:
        lines.append(f"## {_TITLES[s]}")
        items = getattr(h, s)
        lines += [f"- {_indent(i)}" for i in items] if items else ["- (none)"]
        lines.append("")
    if h.note:
        lines += ["## Notes", h.note.strip(), ""]
    return "\n".join(lines)


def _indent(item: str) -> str:
    return item.strip().replace("\n", "\n  ")


def render(h: Handoff) -> str:
    """HANDOFF.md: front matter and the body."""
    body = render_body(h)
    return metamod.render(
        {
            "project": h.project,
            "time": h.time,
            "domain": h.domain,
            "source": h.source,
            "origin": h.origin,
            "record": h.id,
            "digest": textmod.digest(body.encode("utf-8")),
        },
        body,
    )


def parse_body(body: str) -> dict[str, Any]:
    """Done / Blocked / Next items and Notes text of a handoff body (English or Chinese headings)."""
    out: dict[str, Any] = {"done": [], "blocked": [], "next": [], "note": []}
    current: str | None = None
    for line in body.splitlines():
        m = _HEADING.match(line)
        if m:
            current = _ALIASES.get(m.group(1).strip().lower().rstrip(":："))
            continue
        if current is None:
            continue
        if current == "note":
            out["note"].append(line)
        elif re.match(r"^\s*[-*]\s+", line):
            item = re.sub(r"^\s*[-*]\s+", "", line).strip()
            if item and item != "(none)":
                out[current].append(item)
        elif line.startswith("  ") and out[current] and line.strip():
            out[current][-1] += "\n" + line.strip()
    out["note"] = "\n".join(out["note"]).strip()
    return out


def names_sections(body: str) -> bool:
    """Whether `body` has a heading of a handoff's section (## Done, ## 下一步 …), even an empty one."""
    return any(
        (m := _HEADING.match(line)) and m.group(1).strip().lower().rstrip(":：") in _ALIASES
        for line in body.splitlines()
    )


def parse(text: str) -> Handoff:
    """A HANDOFF.md back into a Handoff (`edited` when its body no longer matches its digest)."""
    fields, body = metamod.split(text)
    meta = fields or {}
    parts = parse_body(body)
    edited = metamod.edited(meta.get("digest"), body)
    return Handoff(
        project=str(meta.get("project", "")),
        time=str(meta.get("time", "")),
        done=parts["done"],
        blocked=parts["blocked"],
        next=parts["next"],
        note=parts["note"],
        domain=_text(meta.get("domain")),
        source=_text(meta.get("source")),
        id=_text(meta.get("record")),
        edited=edited or not meta.get("digest"),
        # (a file a person edited or typed is theirs: no longer the agent's account)
        origin="user" if edited or not meta.get("digest") else _text(meta.get("origin")),
    )


def _text(value: Any) -> str | None:
    """A front matter field as text (a hand edit may give any YAML value), None when absent."""
    return None if value is None else str(value)


def from_row(idx: Index, row: Row) -> Handoff:
    """The handoff a log record holds, as stored (`Handoff.shown` scans it for the surfaces that show it)."""
    rec = idx.view_of(row, 0.0, passed=False).full(show_unsafe=True)
    return Handoff(
        project=rec.get("project") or "",
        time=rec["ts"],
        done=list(rec.get("done") or []),
        blocked=list(rec.get("blocked") or []),
        next=list(rec.get("next") or []),
        note=rec.get("note") or "",
        domain=rec.get("domain"),
        source=rec.get("source"),
        id=rec["id"],
        origin=rec.get("origin"),
        clock_said=rec["clock_said"] if isinstance(rec.get("clock_said"), str) else None,
    )


def settle(vault: Vault, project: str, forgotten: str) -> list[str]:
    """After the handoff record `forgotten` of `project` is forgotten: the project's HANDOFF.md,
    when it is the unedited copy of that record, becomes the copy of the newest handoff record
    the project still shows — or goes, when there is none (the log keeps the forgotten one). A
    file a person edited, or the copy of another record, is left as it is. Under the vault lock.
    What could not be done (the file unreadable, the lock busy), as warnings: the record is
    forgotten either way, and `doctor` names a file that still shows it."""
    from optmem.errors import OptmemError

    where = f"projects/{project}/HANDOFF.md"
    path = vault.project_dir(project) / "HANDOFF.md"
    try:
        with vault.lock():
            h = parse(fsio.read_text(path, within=vault.root, limit=fsio.NOTE_BYTES) or "")
            if h.edited or (h.id or "").upper() != forgotten.upper():
                return []
            put_back(vault, project)
    except OptmemError as exc:
        return [f"{where} still shows the forgotten handoff ({exc.message.splitlines()[0]}): edit or remove it"]
    return []


def put_back(vault: Vault, project: str) -> str | None:
    """The project's HANDOFF.md made the copy of the newest handoff record it still shows, or
    removed when there is none; that record's id. What `forget` (`settle`) and `purge` do to a file
    that carried the handoff they took away: the previous one comes back, as `handoff read` shows
    it. The caller holds the vault lock."""
    from optmem.index import open_index

    path = vault.project_dir(project) / "HANDOFF.md"
    with open_index(vault) as idx:
        latest = [from_row(idx, r) for r in idx.handoffs(project, 1)]
    if latest:
        fsio.atomic_write(path, render(latest[0]), within=vault.root)
        return latest[0].id
    fsio.remove_file(path)
    return None
