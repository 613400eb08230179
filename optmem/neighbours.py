"""The memory files of the tools users come from, read as they really are (`import --from`).

Each reader turns a tool's files into `Memory` items — a statement a person would want recalled,
with the project, date, tags and fields its source gives it — plus warnings (a file read only in
part) and the source fields it did not map; `transfer` writes them. Input that is not in the
named tool's format is refused (`WrongFormat`) before anything is written, naming what that tool
writes and, when it can tell, which tool the files seem to come from. Where each shape was read
(repository, file, version) is in tests/data/import/README.md; docs/agents.md says, per tool, what
is imported and what is not.

* Claude Code: the auto memory (`~/.claude/projects/<project>/memory/`: topic files with front
  matter — `type:` at the top, or under `metadata:` as Claude Code writes it since 2.1.139 — and
  the `MEMORY.md` index), and CLAUDE.md files (`~/.claude/CLAUDE.md`: no project; a project's:
  its folder). The project is the folder a project's transcripts name as their `cwd` (the one
  Claude Code encoded into the folder name), else that folder name.
* Codex: `~/.codex/memories` — `memory_summary.md` (first line `v1`), `MEMORY.md` (`# Task
  Group:` blocks), `raw_memories.md` (`## Thread` blocks with `updated_at`, `cwd`,
  `rollout_path`). Only the statements under the sections that hold them (user preferences,
  reusable knowledge, failures, general tips, the user profile, a raw memory's description) are
  records; headings, labels, keyword lines, rollout file lists, key steps and references are not.
* Mem0: exports as `get_all` answers them (the open-source `{"results": […]}`, the platform's
  paged `{"count", "next", "previous", "results"}`, or a bare list), one file or a folder of them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from optmem import fsio
from optmem.errors import OptmemError, WrongFormat
from optmem.stdlib import UTC, datetime

PREFIX_BYTES = 256 << 10  # of a Claude Code transcript, read to find the folder it ran in


class Memory(NamedTuple):
    """One memory read from a neighbour's files."""

    file: str  # where it came from, as messages name it
    line: int
    text: str
    when: float | None  # its date (epoch seconds); None: the import's time
    project: str | None = None
    domain: str | None = None
    tags: tuple[str, ...] = ()
    key: str | None = None
    session: str | None = None
    expires: str | None = None  # an ISO time
    extra: dict[str, Any] | None = None
    ident: str | None = None  # what its source calls it (Mem0's id), else where it is (file, project)
    # what an older optmem keyed it by (`Legacy`): a record of these it holds current is this memory's earlier self
    legacy: Legacy | None = None


class Legacy(NamedTuple):
    """How an older optmem keyed a memory it imported, so the next import re-keys exactly those
    records and no other: `like`, what their key starts with (SQL LIKE, `_`/`%` escaped with `\\`);
    `pattern`, what the key says without a part's `#N` (a regular expression); `heading`, what the
    text of such a record must open with (`<heading>: `) to be this section — a CLAUDE.md section
    was keyed by its place among headings without ASCII letters (`#top`, `#top-2` …) or of the same
    name (`#testing-2`), so its key alone does not say which section it was ("": the text before
    the first heading; None: the key says it — an auto-memory topic file); `headings`, every
    heading of the file (a text that opens with another is another section)."""

    like: str
    pattern: str
    heading: str | None = None
    headings: tuple[str, ...] = ()


class Found:
    """What a reader found: memories, records it could not take, warnings, unmapped fields."""

    def __init__(self) -> None:
        self.memories: list[Memory] = []
        self.bad: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.unmapped: Counter[str] = Counter()


def read(path: Path) -> str:
    """A neighbour's file, read whole with a bound (a file past it is refused as too large)."""
    return (fsio.read_bytes(path) or b"").decode("utf-8", errors="replace").removeprefix("\ufeff")


def mtime(path: Path) -> float:
    return path.stat().st_mtime


def epoch(value: Any) -> float | None:
    """An ISO 8601 time (or date) as a source writes it, in epoch seconds; None if it is none."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()


def _project(folder: str, mapping: dict[str, Any]) -> str:
    from optmem.vault import project_name

    return project_name(folder, mapping)


# -- what a file looks like ---------------------------------------------------------------------
_INDEX_LINK = re.compile(r"^\s*[-*]\s+\[[^\]]*\]\([^)]*\.md\)", re.M)
_HEADING_LINE = re.compile(r"^#{1,6}\s+\S", re.M)
_SEPARATOR = re.compile(r"^§[ \t]*$", re.M)


def looks_like(text: str) -> str | None:
    """Which tool's memory file `text` seems to be, by the marks each tool's format carries."""
    first = text.lstrip().split("\n", 1)[0].strip()
    if first == "v1" or "# Task Group:" in text or "\n## Thread `" in text or text.startswith("# Raw Memories"):
        return "codex"
    if _SEPARATOR.search(text):
        return "hermes"
    if text.startswith("---") and re.search(r"^(description|type|metadata):", text, re.M) or _INDEX_LINK.search(text):
        return "claude-code"
    if text.lstrip()[:1] in ("[", "{") and re.search(r'"memory"\s*:', text):
        return "mem0"
    return None


EXPECTED = {
    "claude-code": "Claude Code's auto memory (~/.claude/projects/<project>/memory/: topic files that open with "
    "front matter — name, description, type or metadata.type — and a MEMORY.md index of `- [Title](file.md)` "
    "lines) or CLAUDE.md files",
    "codex": "Codex's ~/.codex/memories: memory_summary.md whose first line is `v1`, MEMORY.md of `# Task Group:` "
    "blocks, raw_memories.md of `## Thread` blocks",
    "hermes": "Hermes Agent's memories/MEMORY.md and USER.md: entries separated by a line holding only `§`",
    "mem0": "Mem0 exports: JSON files holding the memories `get_all` answers — a list, or an object with "
    "`results` — each with a `memory` text",
}


def wrong(source: str, file: Path | str, why: str, seen: str | None = None) -> WrongFormat:
    """The refusal of input that is not `source`'s format."""
    hint = f"; it looks like {seen}'s — try --from {seen}" if seen and seen != source else ""
    return WrongFormat(
        f"--from {source}: {file} {why}{hint}; expected {EXPECTED[source]}; nothing was imported",
        file=str(file),
        expected=EXPECTED[source],
        looks_like=seen,
    )


# -- Claude Code --------------------------------------------------------------------------------
TYPES = ("user", "feedback", "project", "reference")
CLAUDE_MD = ("CLAUDE.md", "CLAUDE.local.md")


def _encode(path: str) -> str:
    """A folder as Claude Code names its folder under ~/.claude/projects/ (`/a/b_c` → `-a-b-c`)."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def claude_project(folder: Path, mapping: dict[str, Any]) -> str:
    """The project of a folder under ~/.claude/projects/: the folder its transcripts ran in (the
    `cwd` whose encoding is this folder's name, or an ancestor's — a session may start in a
    subfolder), else the folder name itself (Claude Code's encoding cannot be undone: `-` stands
    for `/`, `.` and `_` alike)."""
    cwd = re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.)*)"')
    for transcript in sorted(folder.glob("*.jsonl"))[:50]:
        try:
            with open(transcript, "rb") as fh:
                head = fh.read(PREFIX_BYTES)
        except OSError:
            continue
        for m in cwd.finditer(head):
            try:
                ran = Path(json.loads(b'"' + m.group(1) + b'"'))
            except ValueError:
                continue
            for q in (ran, *ran.parents):
                if q.name and _encode(str(q)) == folder.name:
                    return _project(q.name, mapping)
    return _project(folder.name, mapping)


def _claude_md_project(path: Path, mapping: dict[str, Any]) -> str | None:
    """A CLAUDE.md's project: its folder's (`.claude/CLAUDE.md`: the folder holding `.claude`);
    none for the user's own (~/.claude/CLAUDE.md: a `.claude` folder holding `projects/`, or the
    home folder's)."""
    folder = path.parent
    if (folder / "projects").is_dir() or folder == Path.home() / ".claude":
        return None
    if folder.name == ".claude":
        folder = folder.parent
    return _project(folder.name, mapping)


def _slug(text: str) -> str:
    """A heading as its key names it: its words in any script, lower-cased, joined by `-`
    (`## 测试` → `测试`, `## Café Setup` → `café-setup`); a heading without a letter or digit
    (`## ---`, an emoji), a short hash of it — never its place in the file."""
    import hashlib

    slug = re.sub(r"[\W_]+", "-", text.lower()).strip("-")
    return slug or "h" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]


def claude_code(path: Path, mapping: dict[str, Any], limit: int) -> Found:
    """Claude Code's memory under `path`: a `~/.claude` folder (its CLAUDE.md and every project's
    auto memory), its `projects/` folder, one project's folder or `memory/` folder, a topic file,
    a CLAUDE.md, or a project checkout holding CLAUDE.md files."""
    found = Found()
    memories: list[tuple[Path, str | None]] = []  # (a memory folder, its project)
    claude_mds: list[tuple[Path, str | None]] = []
    one: Path | None = None  # a single topic file
    if not path.is_dir():
        if path.name in CLAUDE_MD:
            claude_mds.append((path, _claude_md_project(path, mapping)))
        elif path.suffix == ".md":
            memories.append((path.parent, claude_project(path.parent.parent, mapping)))
            one = path
        else:
            raise wrong("claude-code", path, "is not a Markdown file", None)
    elif (path / "projects").is_dir():  # ~/.claude
        claude_mds += [(path / n, None) for n in CLAUDE_MD if (path / n).is_file()]
        memories += [
            (p / "memory", claude_project(p, mapping)) for p in _dirs(path / "projects") if (p / "memory").is_dir()
        ]
    elif any((p / "memory").is_dir() for p in _dirs(path)):  # ~/.claude/projects
        memories += [(p / "memory", claude_project(p, mapping)) for p in _dirs(path) if (p / "memory").is_dir()]
    elif (path / "memory").is_dir():  # one project's folder
        memories.append((path / "memory", claude_project(path, mapping)))
    elif path.name == "memory" or (path / "MEMORY.md").is_file():
        memories.append((path, claude_project(path.parent, mapping)))
    else:  # a checkout: its CLAUDE.md files
        for f in (path / "CLAUDE.md", path / "CLAUDE.local.md", path / ".claude" / "CLAUDE.md"):
            if f.is_file():
                claude_mds.append((f, _project(path.name, mapping)))
    recognised = False
    for folder, project in memories:
        recognised |= _claude_memory(found, folder, project, limit, only=one)
    for f, project in claude_mds:
        _claude_md(found, f, project, limit)
        recognised = True
    if not recognised:
        seen = _first_seen(path.glob("*.md") if path.is_dir() else [path])
        raise wrong(
            "claude-code", path, "holds no topic file with front matter, no MEMORY.md index and no CLAUDE.md", seen
        )
    return found


def _dirs(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.is_dir()) if path.is_dir() else []


def _first_seen(files: Iterable[Path]) -> str | None:
    for n, f in enumerate(files):
        if n >= 20:
            break
        try:
            seen = looks_like(read(f)) if f.is_file() else None
        except OptmemError:  # (too large, unreadable: it names no tool)
            continue
        if seen:
            return seen
    return None


def _front(text: str) -> tuple[str | None, int, str]:
    """(the front matter block or None, the line its YAML starts on, the body)."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return None, 0, text
    for n, line in enumerate(lines[1:], 1):
        if line.rstrip() in ("---", "..."):
            return "\n".join(lines[1:n]), 2, "\n".join(lines[n + 1 :])
    return None, 0, text


def _claude_memory(found: Found, folder: Path, project: str | None, limit: int, only: Path | None = None) -> bool:
    """One auto-memory folder: each topic file a record keyed `claude-code:<folder>/<file>` in the
    project (`<folder>`: the Claude Code folder's name under ~/.claude/projects/; so an edited file
    imported again supersedes its older version, and only that folder's);
    each line of the MEMORY.md index that is not a link to a topic file, a record. Returns
    whether it held anything in Claude Code's format."""
    import yaml

    recognised = False
    index = folder / "MEMORY.md"
    if index.is_file() and only in (None, index):
        text = read(index)
        if (seen := looks_like(text)) not in (None, "claude-code"):
            raise wrong("claude-code", index, "is not a Claude Code memory index", seen)
        recognised |= bool(_INDEX_LINK.search(text))
        for n, _, item in markdown_items(text):
            if not _LINK_ONLY.match(item):
                found.memories.append(Memory(f"{project}/MEMORY.md", n, item, mtime(index), project, tags=("index",)))
                recognised = True
    topics = [only] if only is not None and only != index else [] if only is not None else sorted(folder.rglob("*.md"))
    for topic in topics:
        rel = topic.relative_to(folder).as_posix()
        if rel == "MEMORY.md":
            continue
        text = read(topic)
        block, start, body = _front(text)
        meta: dict[str, Any] = {}
        if block is not None:
            recognised = True
            try:
                loaded = yaml.safe_load(block)
                meta = loaded if isinstance(loaded, dict) else {}
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                line = start + mark.line if mark is not None else start
                problem = getattr(exc, "problem", None) or str(exc).split("\n", 1)[0]
                found.warnings.append(
                    f"{project}/{rel}: line {line}: its front matter is not valid YAML ({problem}); "
                    "its body was imported without it (no type, no description) — fix the file and import again"
                )
        elif (seen := looks_like(text)) not in (None, "claude-code"):
            raise wrong("claude-code", topic, "is not a Claude Code topic file", seen)
        nested: dict[str, Any] = meta["metadata"] if isinstance(meta.get("metadata"), dict) else {}
        kind = str(meta.get("type") or nested.get("type") or "").strip().lower()
        described = str(meta.get("description") or "").strip()
        whole = "\n\n".join(p for p in (described, body.strip()) if p)
        when = epoch(str(nested.get("modified") or meta.get("modified") or "")) or mtime(topic)
        origin = nested.get("originSessionId") or meta.get("originSessionId")
        # the Claude Code folder's name (the path its sessions ran in, encoded) in the key: two
        # checkouts of one name (~/old/api, ~/work/api) are one project, never one fact
        key = f"claude-code:{folder.parent.name}/{rel.removesuffix('.md')}"
        old = f"claude-code:{rel.removesuffix('.md')}"  # (an older optmem's key: re-keyed, `Legacy`)
        parts = parts_of(whole, limit)
        for i, part in enumerate(parts, 1):
            found.memories.append(
                Memory(
                    f"{project}/{rel}",
                    1,
                    part,
                    when,
                    project,
                    tags=(kind,) if kind in TYPES else (),
                    key=key if len(parts) == 1 else f"{key}#{i}",
                    session=str(origin) if isinstance(origin, str) and origin.strip() else None,
                    legacy=Legacy(_like(old), re.escape(old)) if i == 1 else None,
                )
            )
    return recognised


_LINK_ONLY = re.compile(r"^\[[^\]]*\]\([^)]*\.md\)\s*(?:[—–:-]\s*.*)?$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_HEADING = re.compile(r"^\s*#{1,6}\s+(.*?)\s*#*\s*$")


def markdown_items(text: str) -> list[tuple[int, str, str]]:
    """The memories of a Markdown file: each list item and each paragraph, as (line, the heading
    it sits under, its text); an item's indented continuation lines join it (a line that starts at
    the margin after an item is a paragraph of its own: a note, not the item's tail)."""
    out: list[tuple[int, str, str]] = []
    heading, start, in_item = "", 0, False
    cur: list[str] = []

    def flush() -> None:
        if cur:
            out.append((start, heading, " ".join(s.strip() for s in cur).strip()))
            cur.clear()

    for n, line in enumerate(text.splitlines(), 1):
        h = _HEADING.match(line)
        item = _ITEM.match(line)
        if h:
            flush()
            heading = h.group(1)
        elif not line.strip():
            flush()
        elif item:
            flush()
            cur.append(item.group(1))
            start, in_item = n, True
        else:
            if in_item and not line[:1].isspace():
                flush()
            if not cur:
                start, in_item = n, False
            cur.append(line)
    flush()
    return out


def _claude_md(found: Found, path: Path, project: str | None, limit: int) -> None:
    """A CLAUDE.md: each section (the text under a heading, the heading kept in front) one record
    keyed `claude-code:<file>§<heading>` in the file's project (`_slug`: the heading's words in any
    script); the text before the first heading keyed `claude-code:<file>§`. A section's text opens
    with its heading. Sections under the same heading are one record, their texts in the file's
    order, each opening with the headings it sits under (`Backend › Testing: …`, `Frontend ›
    Testing: …`), so they read apart: a key never says where a section sits, so one inserted above
    another changes no other section's key."""
    label = ".claude/CLAUDE.md" if path.parent.name == ".claude" and project is not None else path.name
    sections: list[tuple[str, str, int, str]] = []  # (heading, its path, its line, text)
    heading, start, body = "", 1, list[str]()
    above: list[tuple[int, str]] = []  # the headings it sits under: (level, heading)
    fence = False
    for n, line in enumerate(read(path).split("\n"), 1):
        fence ^= line.lstrip().startswith("```")
        m = None if fence else re.match(r"^\s*(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            sections.append((heading, " › ".join(h for _, h in above), start, "\n".join(body).strip()))
            above = [(level, h) for level, h in above if level < len(m.group(1))] + [(len(m.group(1)), m.group(2))]
            heading, start, body = m.group(2), n, []
        else:
            body.append(line)
    sections.append((heading, " › ".join(h for _, h in above), start, "\n".join(body).strip()))
    sections = [section for section in sections if section[3]]
    repeated = {h for h, n in Counter(h for h, _, _, _ in sections).items() if n > 1}
    merged: dict[str, tuple[str, int, list[str]]] = {}  # key → (heading, line, texts)
    for h, where, n, text in sections:
        said = merged.setdefault(f"claude-code:{label}§{_slug(h) if h else ''}", (h, n, []))
        said[2].append((f"{where if h in repeated else h}: {text}") if h else text)
    headings = tuple(dict.fromkeys(h for h, _, _, _ in sections if h))
    # what an older optmem keyed this file's sections by: `<file>#<ASCII slug>`, `-N` after a repeat
    like = _like(f"claude-code:{label}#")
    pattern = re.escape(f"claude-code:{label}#") + r"[a-z0-9-]+"
    for key, (h, n, texts) in merged.items():
        for i, part in enumerate(parts := parts_of("\n\n".join(texts), limit), 1):
            found.memories.append(
                Memory(
                    f"{project or '~'}/{label}",
                    n,
                    part,
                    mtime(path),
                    project,
                    tags=("claude-md",),
                    key=key if len(parts) == 1 else f"{key}#{i}",
                    legacy=Legacy(like, pattern, h, headings) if i == 1 else None,
                )
            )


def _like(prefix: str) -> str:
    """An SQL LIKE pattern of the keys that start with `prefix`."""
    return re.sub(r"([\\%_])", r"\\\1", prefix) + "%"


def parts_of(text: str, limit: int) -> list[str]:
    """A text cut at paragraphs into pieces of at most `limit` bytes (one record each)."""
    if len(text.encode("utf-8")) <= limit:
        return [text]
    out, cur = [], ""
    for para in text.split("\n\n"):
        joined = f"{cur}\n\n{para}" if cur else para
        if cur and len(joined.encode("utf-8")) > limit:
            out.append(cur)
            cur = para
        else:
            cur = joined
    return out + ([cur] if cur else [])


# -- Codex --------------------------------------------------------------------------------------
CODEX_FILES = ("memory_summary.md", "MEMORY.md", "raw_memories.md")
# the sections whose lines are statements, as Codex's consolidation and phase-1 prompts name them
SECTIONS = {
    "user profile": "user-profile",
    "user preferences": "user-preferences",
    "preference signals": "user-preferences",
    "general tips": "general-tips",
    "reusable knowledge": "reusable-knowledge",
    "failures and how to do differently": "failures",
    "things that did not work / things that can be improved": "failures",
}
# the labels of what is not: a rollout's recap, routing handles, evidence, the summary's index
SKIPPED = (
    "key steps",
    "references",
    "pointers and references",
    "rollout_summary_files",
    "keywords",
    "what's in memory",
    "memory context",
    "rollout context",
    "outcome",
)
_TASK = re.compile(r"^#{1,6}\s+Task(?:\s+\d+)?\s*:\s*(.*?)\s*$")
_GROUP = re.compile(r"^#\s+Task Group\s*:\s*(.*?)\s*$")
_THREAD = re.compile(r"^##\s+Thread\b")
_LABEL = re.compile(r"^([A-Za-z][A-Za-z' /]*?)\s*(?:\(.*\))?\s*(?::\s*(.*?)|)\s*$")
_REF = re.compile(r"(?:\s*\[Task \d+\])+\s*$")
_UPDATED = re.compile(r"updated_at=([0-9T:.+\-Z]+)")
_CWD = re.compile(r"\bcwd=([^;,)\s]+)")
GENERIC = {"", "tmp", "temp", "src", "code", "projects", "repos", "work", "dev", "desktop", "documents", "downloads"}


def codex_project(cwd: str | None, mapping: dict[str, Any]) -> str | None:
    """The project a Codex `cwd` names: its last folder, unless the cwd names none sensibly —
    `unknown`, not absolute, the root, a home folder (`/home/<user>`, `/Users/<user>`, `/root`,
    this user's home), a temporary folder, or a folder of folders (`src`, `code`, `projects` …)."""
    if not cwd or not cwd.startswith("/"):
        return None
    p = Path(cwd.rstrip("/") or "/")
    if p == Path("/") or p == Path.home() or str(p) == "/root":
        return None
    if len(p.parts) == 3 and p.parts[1] in ("home", "Users"):
        return None
    if p.parts[1:2] in (("tmp",), ("private",), ("var",)) or p.name.lower() in GENERIC:
        return None
    return _project(p.name, mapping)


def codex(path: Path, mapping: dict[str, Any]) -> Found:
    """Codex's memories folder (or one of its three files); see the module's doc."""
    found = Found()
    files = [path / n for n in CODEX_FILES if (path / n).is_file()] if path.is_dir() else [path]
    if not files:
        raise wrong("codex", path, f"holds none of {', '.join(CODEX_FILES)}", _first_seen(path.glob("*.md")))
    texts = {}
    for f in files:  # every file checked before any is read into records: all or nothing
        text = read(f)
        marked = {
            "memory_summary.md": text.lstrip().split("\n", 1)[0].strip() == "v1",
            "MEMORY.md": bool(re.search(r"^#\s+Task Group\s*:", text, re.M)),
            "raw_memories.md": text.startswith("# Raw Memories") or bool(re.search(r"^##\s+Thread\b", text, re.M)),
        }.get(f.name, looks_like(text) == "codex")
        if not marked:
            raise wrong("codex", f, "does not carry Codex's marks", looks_like(text))
        texts[f] = text
    for f, text in texts.items():
        _codex_file(found, f, text, mapping)
    return found


def _codex_file(found: Found, f: Path, text: str, mapping: dict[str, Any]) -> None:
    tag = re.sub(r"[^a-z0-9]+", "-", f.stem.lower()).strip("-")
    raw = f.name == "raw_memories.md"
    lines = text.split("\n")
    when_file = mtime(f)
    # MEMORY.md: each task group's date (the newest updated_at of its rollouts) and project
    group_when: dict[int, float | None] = {}
    group_cwd: dict[int, str | None] = {}
    if f.name == "MEMORY.md":
        starts = [n for n, line in enumerate(lines) if _GROUP.match(line)] + [len(lines)]
        for a, b in zip(starts, starts[1:], strict=False):
            block = "\n".join(lines[a:b])
            dates = [t for t in (epoch(m) for m in _UPDATED.findall(block)) if t is not None]
            group_when[a] = max(dates) if dates else None
            applies = re.search(r"^applies_to:\s*cwd=([^;\s]+)", block, re.M)
            cwds = _CWD.findall(block)
            group_cwd[a] = applies.group(1) if applies else (cwds[0] if cwds else None)
    section: str | None = None
    context = ""  # the task (or task group) a statement belongs to
    when: float | None = None if raw else when_file
    cwd: str | None = None
    group = -1
    header = False  # in a `## Thread` block's header lines
    front = False  # in a raw memory's front matter
    item: list[str] = []
    item_line = 0

    def emit() -> None:
        nonlocal item
        statement = _REF.sub("", " ".join(s.strip() for s in item)).strip()
        item = []
        if not statement or section is None or statement.lower() in ("none", "none observed"):
            return
        text = f"{context}: {statement}" if context and not statement.startswith(context) else statement
        found.memories.append(Memory(f.name, item_line, text, when, codex_project(cwd, mapping), tags=(tag, section)))

    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if raw and _THREAD.match(line):
            emit()
            section, context, when, cwd, header, front = None, "", None, None, True, False
            continue
        if header:
            m = re.match(r"^(updated_at|cwd|rollout_path|rollout_summary_file|thread_id)\s*:\s*(.*)$", stripped)
            if m:
                if m.group(1) == "updated_at":
                    when = epoch(m.group(2))
                elif m.group(1) == "cwd":
                    cwd = m.group(2)
                continue
            if not stripped:
                continue
            header = False
            if stripped == "---":
                front = True
                continue
        if front:
            if stripped == "---":
                front = False
                continue
            m = re.match(r"^(description|cwd)\s*:\s*(.*)$", stripped)
            if m and m.group(1) == "cwd" and m.group(2) not in ("", "unknown"):
                cwd = m.group(2)
            elif m and m.group(2):
                section, item, item_line = "summary", [m.group(2)], n
                emit()
                section = None
            continue
        if g := _GROUP.match(line):
            emit()
            group = n - 1
            context, section = g.group(1), None
            when, cwd = group_when.get(group) or when_file, group_cwd.get(group)
            continue
        if t := _TASK.match(line):
            emit()
            section = None
            if raw:
                context = t.group(1)
            continue
        if stripped == "v1" and n == 1:
            continue
        if stripped.startswith("#"):  # a heading: a section's, or context only
            emit()
            section = SECTIONS.get(re.sub(r"^#+\s*", "", stripped).rstrip(":").strip().lower())
            continue
        label = _LABEL.match(stripped)
        if label and (stripped.endswith(":") or label.group(2) is not None):
            name = label.group(1).strip().lower()
            if name in SECTIONS:
                emit()
                section = SECTIONS[name]
                rest = (label.group(2) or "").strip()
                if rest and not rest.startswith("<"):
                    item, item_line = [rest], n
                    emit()
                continue
            if name in SKIPPED:
                emit()
                section = None
                continue
        if not stripped:
            emit()
            continue
        bullet = re.match(r"^(\s*)[-*+]\s+(.*)$", line)
        if bullet and len(bullet.group(1)) >= 2 and item:
            emit()  # a sub-item (a summary's `desc:` / `learnings:`): not joined to its topic line
            continue
        if bullet:
            emit()
            item, item_line = [bullet.group(2)], n
        elif item or section:
            if not item:
                item_line = n
            item.append(stripped)
    emit()


# -- Mem0 ---------------------------------------------------------------------------------------
MEM0_MAPPED = {
    "id", "memory", "user_id", "agent_id", "app_id", "run_id", "session_id", "actor_id", "attributed_to",
    "categories", "metadata", "created_at", "updated_at", "expiration_date", "score",
}  # fmt: skip


def mem0(path: Path, mapping: dict[str, Any]) -> Found:
    """Mem0 exports — one JSON file, or every `*.json` file of a folder — as `get_all` answers
    them. `memory` is the text; its `updated_at` (else `created_at`) the date, `created_at` kept
    when it differs; `agent_id` the domain, `app_id` the project, `run_id` (`session_id` on the
    platform's list) the session; `categories` (top-level, or in `metadata`) tags; `id` kept as
    `mem0_id`, `user_id`, `actor_id`, `attributed_to` as themselves, the rest of `metadata` as
    `metadata`; `expiration_date` the record's expiry. Fields with a value it does not map are
    counted in `unmapped`."""
    found = Found()
    files = sorted(p for p in path.glob("*.json") if p.is_file()) if path.is_dir() else [path]
    if not files:
        raise wrong("mem0", path, "holds no JSON file", _first_seen(path.glob("*.md")))
    loaded = []
    for f in files:
        try:
            data = json.loads(fsio.read_bytes(f) or b"")
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise wrong("mem0", f, f"is not JSON ({exc})", looks_like(read(f))) from exc
        items = data.get("results", data.get("memories")) if isinstance(data, dict) else data
        if not isinstance(items, list) or (items and not any(isinstance(i, dict) and "memory" in i for i in items)):
            raise wrong("mem0", f, "holds no list of memories", None)
        loaded.append((f, items))
    for f, items in loaded:
        for n, item in enumerate(items, 1):
            _mem0_item(found, f.name, n, item, mapping)
    return found


def _mem0_item(found: Found, file: str, n: int, item: Any, mapping: dict[str, Any]) -> None:
    from optmem import clock
    from optmem.vault import NAME_RE

    if not isinstance(item, dict) or not isinstance(item.get("memory"), str) or not item["memory"].strip():
        found.bad.append({"file": file, "line": n, "code": "bad_value", "message": f"memory {n} has no `memory` text"})
        return
    found.unmapped.update(k for k, v in item.items() if k not in MEM0_MAPPED and v is not None)
    meta = dict(item["metadata"]) if isinstance(item.get("metadata"), dict) else {}
    cats = [*(item.get("categories") or []), *(meta.pop("categories", None) or [])]
    tags = tuple(dict.fromkeys(c.strip() for c in cats if isinstance(c, str) and c.strip()))[:16]
    created, updated = epoch(item.get("created_at")), epoch(item.get("updated_at"))
    when = updated if updated is not None else created
    extra: dict[str, Any] = {"mem0_id": item.get("id")} if item.get("id") else {}
    for k in ("user_id", "actor_id", "attributed_to"):
        if isinstance(item.get(k), str) and item[k].strip():
            extra[k] = item[k]
    if (
        created is not None
        and when is not None
        and clock.format_ts(clock.from_epoch(created)) != clock.format_ts(clock.from_epoch(when))
    ):
        extra["created_at"] = clock.format_ts(clock.from_epoch(created))
    if meta:
        extra["metadata"] = meta
    agent, app = item.get("agent_id"), item.get("app_id")
    session = item.get("run_id") or item.get("session_id")
    expires = epoch(item.get("expiration_date"))
    found.memories.append(
        Memory(
            file,
            n,
            item["memory"],
            when,
            project=_project(app, mapping) if isinstance(app, str) and app.strip() else None,
            domain=(agent if NAME_RE.fullmatch(agent) else _project(agent, {}))
            if isinstance(agent, str) and agent.strip()
            else None,
            tags=tags,
            session=str(session) if session else None,
            ident=str(item["id"]) if item.get("id") else None,
            expires=clock.format_ts(clock.from_epoch(expires)) if expires is not None else None,
            extra=extra,
        )
    )


# -- Hermes -------------------------------------------------------------------------------------
def check_hermes(files: list[tuple[Path, str]]) -> None:
    """Refuse a MEMORY.md / USER.md that is not Hermes's: one without a `§` separator that carries
    another tool's marks, or Markdown headings (Hermes writes plain entries; a file of headings is
    another tool's notes, and would become one entry filling the hot file)."""
    for f, text in files:
        if Path(f).name not in ("MEMORY.md", "USER.md"):  # (Hermes keeps these two files, no other)
            raise wrong("hermes", f, "is neither MEMORY.md nor USER.md", looks_like(text))
        if _SEPARATOR.search(text):
            continue
        seen = looks_like(text)
        if seen not in (None, "hermes"):
            raise wrong("hermes", f, "has no `§` separator and carries another tool's marks", seen)
        if _HEADING_LINE.search(text):
            raise wrong("hermes", f, "has no `§` separator and is Markdown with headings", seen)
