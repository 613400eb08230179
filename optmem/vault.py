"""The vault: where it is, what it holds, names that may live in it, and `init`."""

from __future__ import annotations

import re
from _thread import get_ident  # threading.get_ident itself: importing threading costs ~1 ms
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from optmem import __version__, fsio, layout, settings
from optmem.errors import InvalidName, OptmemError, VaultMissing, quote
from optmem.names import ASCII_NAME, INVISIBLE, NAME_BYTES, too_long
from optmem.names import NAME_MAX as NAME_MAX  # (the grammar, as modules import it from here)
from optmem.names import NAME_RE as NAME_RE
from optmem.settings import Settings
from optmem.value import Value

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any


CACHE = ".cache"
OWN = ".clone"  # this clone's own notes that cannot be rebuilt (`Vault.own`), never committed
OWN_FILES = ("purged", "lost.jsonl")  # what `.clone/` holds (`optmem.lost`); an older optmem kept them in .cache/
OWN_MOVED = "own-moved"  # in .cache/: `Vault.take_own_from_cache` has run (once)
RELEASES = "releases"  # in .clone/: ids of the release lines this clone's own `optmem release` wrote
RELEASES_STARTED = "releases-started"  # in .cache/: `Vault.start_release_list` has run (once)
GITATTRIBUTES = "LOG.jsonl merge=union\nACCESS.jsonl merge=union\nlog/*/*.jsonl merge=union\n"
GITIGNORE = f"{CACHE}/\n*.tmp\n*.md.lock\n*.md.bak.*\n"  # Hermes Agent's lock and backups too


def validate_name(name: str, what: str = "name") -> str:
    """Refuse any project/domain name that could escape the vault or confuse a path."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or name in (".", ".."):
        import unicodedata

        if isinstance(name, str) and NAME_RE.fullmatch(unicodedata.normalize("NFC", name)):
            raise InvalidName(
                f"{what} {quote(name)} is written in decomposed form (a letter and its accent apart): write "
                "it in composed form (NFC), as a keyboard types it, so that it names one folder of the vault",
                name=name,
            )
        if isinstance(name, str) and len(name) <= NAME_MAX and too_long(name):
            raise InvalidName(
                f"{what} {quote(name)} is too long: {len(name.encode('utf-8', 'surrogatepass'))} bytes in UTF-8, "
                f"over the {NAME_BYTES} a name may take (it becomes a folder name, which the file system limits "
                "by bytes): use a shorter name",
                name=name,
            )
        raise InvalidName(
            f"{what} {quote(name)} is not allowed: use 1-64 letters (of any script: 前端 and café are names), "
            "digits, '.', '_' or '-', starting with a letter or digit (no '/', '..', spaces, symbols or emoji: "
            "the name becomes a folder of the vault)",
            name=name,
        )
    return name


def project_name(folder: str, mapping: dict[str, Any] | None = None) -> str:
    """A project name for a folder: a mapping from optmem.toml [projects], else the folder name
    made safe: letters of every script kept (`前端`, `café`), each run of characters a name may
    not hold (a space, a symbol, an emoji) become one '-'. A folder left with no letter or digit
    (`🚀`, `!!!`) is named `project-` and 8 hex digits of its name's hash: distinct such folders
    do not share a project. The name is in composed form (NFC), as a folder listed on macOS may not be."""
    import unicodedata

    mapping = mapping or {}
    mapped = mapping.get(folder)
    if not isinstance(mapped, str):
        folder = unicodedata.normalize("NFC", folder)
        mapped = mapping.get(folder)
    if isinstance(mapped, str):
        return mapped
    kept = "".join(
        ch if ch in "._-" or (unicodedata.category(ch)[0] in "LNM" and not INVISIBLE.match(ch)) else " "
        for ch in folder
    )
    name = re.sub(r"[\s]+", "-", kept.strip()).strip("-._")
    if name and not NAME_RE.fullmatch(name[0]):
        name = "p" + name  # (a combining mark may not start a name)
    name = name[:NAME_MAX]
    while too_long(name):  # (a folder name of 64 characters outside the BMP: 256 bytes)
        name = name[:-1]
    name = name.rstrip("-._")
    if name and NAME_RE.fullmatch(name):
        return name
    import hashlib

    return "project-" + hashlib.sha256(folder.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def earlier_project_name(folder: str) -> str:
    """The name an optmem before the tenth stop gave a repository's folder (ASCII only: every other
    character a '-', `café` → `caf`, `naïve-ui` → `na-ve-ui`, `前端` → `project`): a vault written
    then holds its commits, handoffs and memory under it (`integrations.git.repo_project`)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", folder).strip("-._") or "project"
    if not name[0].isalnum():
        name = "p" + name
    name = name[:NAME_MAX]
    return name if ASCII_NAME.fullmatch(name) else "project"


def hot_target(file: str) -> tuple[str, str | None] | None:
    """(target, project) of a hot file named as the journal names it ("MEMORY.md",
    "USER.md", "projects/P/MEMORY.md"); None for any other name."""
    parts = file.split("/")
    if file in ("MEMORY.md", "USER.md"):
        return ("memory" if file == "MEMORY.md" else "user"), None
    if len(parts) == 3 and parts[0] == "projects" and parts[2] == "MEMORY.md":
        return "memory", parts[1]
    return None


class Vault:
    """A vault folder. Files it lacks read as empty; settings load lazily."""

    def __init__(self, root: Path | str, overrides: list[str] | None = None) -> None:
        self.root = Path(root)
        self.overrides = list(overrides or [])
        self._settings: settings.Settings | None = None
        self._lock_depth = 0
        self._lock_owner = 0  # the thread holding the lock (another thread of the process waits)
        # set for a vault a write may create: its folder and git files are made when a write
        # takes the lock — after the command checked its input, so a refusal creates nothing
        self.lay_out_on_write = False
        self.made_here = False  # this process made the vault's folder (a write laid it out)
        self.laid_out: list[str] = []  # what a write added to make the folder a vault (`ensure_layout`)
        self.held_files = False  # the folder held files before a write made it a vault
        # the daily sweep a write through this object ran or started (`lifecycle.auto_sweep`):
        # what the command reports, on stderr and in its JSON
        self.swept: Any = None  # a lifecycle.Swept (the store layer does not import the core)
        # why this invocation read past the search index (a full disk, a read-only vault): every
        # read still answers, from the log; the command warns (`index._from_log`)
        self.degraded: str | None = None
        # what this invocation found gone from the files, written outside optmem (`optmem.lost`):
        # the command warns
        self.lost: list[str] = []
        # ids (upper case) of the records a sync's merged commits took out of the log marked as
        # purged there — another clone's purge, spreading — and those of them the index held
        # (`lost.left_the_log`): told, not lost; `removed_elsewhere`, `left_elsewhere`: those taken
        # out with no such mark (a purge or an outside edit there: which, is not known): a loss noted
        self.purged_elsewhere: set[str] = set()
        self.purge_commits: dict[str, str] = {}  # (of those: the commit that carried each purge)
        self.left_with_purge: list[str] = []
        self.removed_elsewhere: set[str] = set()
        self.left_elsewhere: list[str] = []
        self._trusted: bool | None = None
        self.reads_checked = False  # the log and ACCESS.jsonl lead nowhere outside (`index._open_index`)
        # the log read into memory when the index could not be updated (`index._from_log`), with
        # the states of the log and ACCESS.jsonl it was read at: read once, copied for each reader
        self.from_log: tuple[Any, Any] | None = None
        # a long-lived process's warm handle (`optmem.warm.Warm`): its settings and open index
        # connections serve this vault's reads; None in a command run as its own process
        self.warm: Any = None

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"

    @property
    def trusted(self) -> bool:
        """Whether the user trusts this vault's redlines as rules (`optmem.trust`): asked once."""
        if self._trusted is None:
            from optmem import trust

            self._trusted = trust.trusted(self.root)
        return self._trusted

    @trusted.setter
    def trusted(self, value: bool) -> None:
        self._trusted = value

    @property
    def log_path(self) -> Path:
        """LOG.jsonl: the whole log of a vault that is not segmented, the oldest part of one
        that is (`layout`)."""
        return self.root / "LOG.jsonl"

    @property
    def segmented(self) -> bool:
        return layout.segmented(self.root)

    def segments(self) -> list[tuple[str, Path]]:
        """Every file of the log, oldest first (`layout.segments`)."""
        return layout.segments(self.root)

    def append_path(self) -> Path:
        """The log file this clone appends to now: LOG.jsonl, or its writer's file of the month."""
        from optmem import clock

        return layout.write_path(self.root, clock.format_ts(clock.now())[:7])

    def access_files(self) -> list[tuple[str, Path]]:
        """Every file of recalls and sweeps (`layout.access_files`)."""
        return layout.access_files(self.root)

    @property
    def access_path(self) -> Path:
        """Where this clone appends recalls and sweeps (the lifecycle's lines; never the log's lock)."""
        return layout.access_path(self.root)

    @property
    def cache_dir(self) -> Path:
        return self.root / CACHE

    def cache(self, name: str, *, check_ignore: bool = False) -> Path:
        """A path in the cache folder, made first if missing — with a .gitignore of its own, so
        git never sees the index or the locks, even in a folder `init` never laid out.
        `check_ignore` (an index build, a rare step): add that .gitignore to a cache folder made
        without one (by an older optmem)."""
        made = fsio.ensure_dir(self.cache_dir, within=self.root)
        ignore = self.cache_dir / ".gitignore"
        if made or (check_ignore and not ignore.exists()):
            fsio.atomic_write(ignore, "*\n", within=self.root)
        return self.cache_dir / name

    def own(self, name: str) -> Path:
        """A path in `.clone/`: what this clone keeps of its own that cannot be rebuilt (the purged
        ids' hashes, the notes of what went: `optmem.lost`) — beside the cache, not in it, so
        deleting `.cache/` stays safe; made first if missing, with a .gitignore of its own (never
        committed)."""
        if fsio.ensure_dir(self.root / OWN, within=self.root) or not (self.root / OWN / ".gitignore").exists():
            fsio.atomic_write(self.root / OWN / ".gitignore", "*\n", within=self.root)
        return self.root / OWN / name

    @property
    def lock_path(self) -> Path:
        return self.cache_dir / "lock"

    @property
    def index_path(self) -> Path:
        return self.cache_dir / "index.sqlite3"

    def project_dir(self, project: str) -> Path:
        return self.root / "projects" / validate_name(project, "project")

    def path_setting(self, name: str, value: str) -> Path:
        """The file a path setting of the vault's optmem.toml names (`[curator] queries`): a
        vault that arrived through git must not point a command at a file elsewhere, so the path
        is relative, stays inside the vault and follows no link out of it."""
        from optmem.errors import UsageError

        rel = Path(value)
        if not value or rel.is_absolute() or ".." in rel.parts:
            raise UsageError(
                f"{name} = {quote(value)} must name a file inside the vault (a relative path without '..', "
                "e.g. queries.jsonl); nothing was read",
                setting=name,
            )
        path = self.root / rel
        fsio.check_within(path, self.root, reading=True)
        return path

    def hot_paths(self) -> list[tuple[str, Path]]:
        """The hot files, as the journal names them, with their paths: MEMORY.md, USER.md, then
        each project's MEMORY.md that exists."""
        out = [("MEMORY.md", self.root / "MEMORY.md"), ("USER.md", self.root / "USER.md")]
        pdir = self.root / "projects"
        if pdir.is_dir():
            out += [
                (f"projects/{p.name}/MEMORY.md", p / "MEMORY.md")
                for p in sorted(pdir.iterdir())
                if (p / "MEMORY.md").is_file()
            ]
        return out

    def handoff_paths(self) -> list[tuple[str, Path]]:
        """Each project's HANDOFF.md that exists, named as `hot_paths` names the hot files."""
        pdir = self.root / "projects"
        if not pdir.is_dir():
            return []
        return [
            (f"projects/{p.name}/HANDOFF.md", p / "HANDOFF.md")
            for p in sorted(pdir.iterdir())
            if (p / "HANDOFF.md").is_file()
        ]

    def tree_dir(self, domain: str) -> Path:
        return self.root / "tree" / validate_name(domain, "domain")

    def exists(self) -> bool:
        return self.root.is_dir()

    @property
    def settings(self) -> settings.Settings:
        """optmem.toml and the overrides, read once, typed and validated (see `settings`)."""
        if self._settings is None:
            self._refuse_a_file()  # (a write reads the settings first: say what is wrong, as a read does)
            if self.warm is not None:  # kept by a server while optmem.toml holds the same text
                self._settings = self.warm.settings(self)
            else:
                # a link out of the vault, a FIFO or a huge file is refused, never read (`fsio`)
                text = fsio.read_text(self.root / "optmem.toml", within=self.root, limit=settings.FILE_BYTES)
                self._settings = self.settings_from(text)
        return self._settings

    def settings_from(self, text: str | None) -> Settings:
        """The settings optmem.toml's `text` and the overrides make."""
        where = str(self.root / "optmem.toml")
        return (
            _cached_settings(self, text)
            if text and not self.overrides
            else settings.load(text, self.overrides, where=where)
        )

    @property
    def settings_loaded(self) -> bool:
        return self._settings is not None

    def _refuse_a_file(self) -> None:
        """Refuse a vault path that is a file, or lies under one (--vault names the folder, not
        its LOG.jsonl)."""
        at = self.root
        while not at.exists() and at.parent != at:
            at = at.parent
        if at.exists() and not at.is_dir():
            holder = at.parent
            where = (
                f"the folder that holds it ({holder})"
                if (holder / "LOG.jsonl").is_file()
                else "a vault folder (`optmem init DIR` makes one)"
            )
            what = f"{at} is a file" if at == self.root else f"{self.root} lies under a file ({at})"
            raise VaultMissing(
                f"{what}, not a vault folder; point --vault / OPTMEM_VAULT at {where}", vault=str(self.root)
            )

    def require(self, *, create: bool = False, named: bool = True) -> Vault:
        """The one check of whether a command may use this vault, for reads and writes alike: it
        must exist — except for a write that stores something new (`create`), which makes a
        missing one, unless the vault was not `named` (--vault, OPTMEM_VAULT: it is the fallback,
        ~/.optmem) and the current folder is, or lies in, another vault (`optmem init DIR`, then
        `cd DIR`): that write is refused as a read is, naming the vault here — it would start a
        second vault in silence, and the next search would not find what it stored."""
        if self.exists():
            return self
        self._refuse_a_file()
        try:
            here = _vault_around(Path.cwd())
        except OSError:  # (a current folder that was deleted)
            here = None
        elsewhere = here is not None and here != self.root
        if create and (named or not elsewhere):
            return self
        raise VaultMissing(
            f"no vault at {self.root}"
            + ("; nothing was written" if create else "")
            + "; "
            + (
                f"{here} is one (found from the current folder only when it holds .optmem/): "
                f"`optmem --vault {here} …` or `export OPTMEM_VAULT={here}`"
                if elsewhere
                else f"create one with `optmem init {self.root}` or point --vault / OPTMEM_VAULT at an existing one"
            ),
            vault=str(self.root),
        )

    @property
    def locked(self) -> bool:
        """Whether this object holds the vault lock right now, in this thread."""
        return self._lock_depth > 0 and self._lock_owner == get_ident()

    def clean_temporaries(self) -> list[str]:
        """Remove what killed writers left behind (their temporary files), lock held."""
        folders = [self.root, self.cache_dir]
        pdir = self.root / "projects"
        if pdir.is_dir():
            folders += [p for p in pdir.iterdir() if p.is_dir() and not p.is_symlink()]
        return [name for folder in folders for name in fsio.clean_temporaries(folder)]

    def take_own_from_cache(self) -> None:
        """Move what an older optmem kept in `.cache/` that nothing can rebuild (the purged ids'
        hashes, the notes of what went) into `.clone/`, lock held — or deleting the cache would
        take it. Once (`.cache/own-moved` says it ran): a file that appears in `.cache/` later is
        no clone's own note, nor is one git tracks (a checkout or a merge wrote it: a crafted
        commit's `.cache/purged` would purge this clone's records) — neither is moved nor read.
        Its lines are appended to `.clone/`'s file, then the old file is removed: cut short
        between the two, the next lock appends them again, which reads the same (`optmem.lost`
        reads a hash or a note twice as once)."""
        marker = self.cache_dir / OWN_MOVED
        if marker.exists():
            return
        for name in older_own(self):
            old = self.cache_dir / name
            data = fsio.read_bytes(old, within=self.root, limit=64 << 20) or b""
            kept = [line.rstrip(b"\r") for line in data.split(b"\n") if line.strip()]
            if kept:
                fsio.append_lines(self.own(name), kept, within=self.root)
            fsio.remove_file(old)
        fsio.atomic_write(marker, "", within=self.root)

    def own_releases(self) -> frozenset[str]:
        """The ids (upper case) of the `release` lines this clone's own `optmem release` (or
        `segment`'s release again) wrote (`.clone/releases`): only these let a record out of
        quarantine here (`quarantine.release_honoured`) — a line another clone wrote, whatever
        file a sync, a hand `git pull` or a fresh clone put it in, is kept and lets nothing out."""
        path = self.root / OWN / RELEASES
        if not path.is_file():  # (none written yet; before the first lock, what it will hold)
            return frozenset(_honoured_before(self) if self.used_by_older() else ())
        data = fsio.read_bytes(path, within=self.root, limit=64 << 20) or b""
        return frozenset(line.strip().decode("ascii", "replace").upper() for line in data.split(b"\n") if line.strip())

    def list_releases(self, ids: list[str]) -> None:
        """Put the ids of release lines this clone is writing on its list (`own_releases`), before
        the lines are appended (the caller holds the vault lock): cut short between the two, an id
        with no line lets nothing out."""
        if ids:
            fsio.append_lines(self.own(RELEASES), [i.upper().encode("ascii", "replace") for i in ids], within=self.root)

    def used_by_older(self) -> bool:
        """Whether an older optmem (one that kept no `.clone/releases`) took the lock in this
        clone: its `.cache/own-moved` mark is there and this optmem's `.cache/releases-started`
        is not (this optmem writes both at its first lock). An index alone says nothing: a reader
        builds one without the lock."""
        return (self.cache_dir / OWN_MOVED).exists() and not (self.cache_dir / RELEASES_STARTED).exists()

    def start_release_list(self) -> None:
        """Start `.clone/releases` once (the caller holds the lock; `.cache/releases-started`
        says it ran: a command that writes nothing makes no `.clone/`). In a
        clone an older optmem used (`used_by_older`) it lists
        the releases that optmem honoured — a person's (`origin` user) in this clone's own log
        file (`layout.own_files`), not one a sync noted as another clone's
        (`.clone/foreign-releases`) — so nothing a person released before is held again. In a
        fresh clone or a new vault it starts empty (no file): a release line the clone came with
        is another writer's."""
        marker = self.cache_dir / RELEASES_STARTED
        if marker.exists() or (self.root / OWN / RELEASES).exists():
            return
        if self.used_by_older():
            self.list_releases(_honoured_before(self))
        fsio.atomic_write(marker, "", within=self.root)

    def use_defaults(self) -> None:
        """Read with the built-in settings (doctor, when optmem.toml cannot be read)."""
        self._settings = settings.Settings()

    def lay_out(self) -> None:
        """Make the folder and git files a write was waiting for (`lay_out_on_write`)."""
        if self.lay_out_on_write:
            self.laid_out = ensure_layout(self)
            self.made_here = str(self.root) in self.laid_out
            self.lay_out_on_write = False

    def tree_lock(self) -> AbstractContextManager[None]:
        """The summary tree's own lock: compaction takes a while and must not hold up appends."""
        self.lay_out()
        return fsio.exclusive_lock(self.cache("tree.lock"), self.settings.lock.timeout, within=self.root)

    @contextmanager
    def lock(self) -> Iterator[None]:
        """The vault's exclusive write lock (in the ignored cache folder, so git never sees it).

        Re-entrant within one Vault object in the thread holding it, so a command holding it can
        call helpers that take it; another thread sharing the object waits as another process does.
        """
        if self.locked:
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        self.lay_out()
        with fsio.exclusive_lock(self.cache("lock"), self.settings.lock.timeout, within=self.root):
            self._lock_depth, self._lock_owner = 1, get_ident()
            try:  # (a first step that fails leaves the vault unlocked: it never believes it holds the lock)
                self.clean_temporaries()
                self.start_release_list()  # (before `take_own_from_cache` marks a clone an older optmem used)
                self.take_own_from_cache()
                yield
            finally:
                self._lock_depth, self._lock_owner = 0, 0


def _honoured_before(vault: Vault) -> list[str]:
    """The ids (upper case) of the release lines an older optmem let act in this clone: a
    person's, in this clone's own log files, and not noted as brought by a sync."""
    from optmem.record import RELEASE, BadLine, parse_line

    own = layout.own_files(vault.root)
    brought_path = vault.root / OWN / "foreign-releases"  # (what an older sync noted)
    brought = (fsio.read_bytes(brought_path, within=vault.root) or b"") if brought_path.is_file() else b""
    foreign = {line.strip().decode("ascii", "replace").upper() for line in brought.split(b"\n") if line.strip()}
    ids: list[str] = []
    for name, path in vault.segments():
        if not layout.is_own(own, name) or not path.is_file():
            continue
        with open(path, "rb") as fh:
            for n, (raw, _) in enumerate(fsio.lines(fh), 1):
                try:
                    rec = parse_line(raw.strip(), n, limit=None) if raw.strip() else None
                except BadLine:
                    continue
                if rec is not None and rec.kind == RELEASE and rec.origin == "user" and rec.id.upper() not in foreign:
                    ids.append(rec.id.upper())
    return ids


def older_own(vault: Vault) -> list[str]:
    """The names of `OWN_FILES` an older optmem left in `.cache/`, not moved yet
    (`Vault.take_own_from_cache`) and not tracked by git (a file git wrote is no clone's own)."""
    if (vault.cache_dir / OWN_MOVED).exists():
        return []
    found = [name for name in OWN_FILES if (vault.cache_dir / name).is_file()]
    if not found:
        return []
    from optmem import gitstate

    return [name for name in found if not gitstate.tracked(vault.cache_dir / name)]


SETTINGS_CACHE = "settings-{reader}.json"
_SETTINGS_KEPT = 4  # cached readings of optmem.toml kept at most (one for each optmem that reads the vault)


def settings_cache(vault: Vault, stamp: list[Any]) -> Path:
    """The file that keeps optmem.toml as read by this optmem (`stamp`: the code that read it).
    Each installation that reads the vault — a command line and an agent's provider in another
    environment, two checkouts — has its own: sharing one, each read the TOML again and rewrote
    the file on every command that followed the other's."""
    version, size, mtime = stamp[1:]
    return vault.cache_dir / SETTINGS_CACHE.format(reader=f"{version}-{size:x}-{mtime:x}")


def _cached_settings(vault: Vault, text: str) -> settings.Settings:
    """The settings of the vault's optmem.toml (`text`), kept in its cache folder as JSON: the
    TOML parser costs a command ~4 ms to import, a twentieth of a search. The cache holds the
    file's very text and the version of the code that read it (an edit, or another optmem,
    reads the file again); an invalid file is never kept (reading it raises every time)."""
    import json
    import os

    try:
        st = os.stat(settings.__file__)
        stamp = [text, __version__, st.st_size, st.st_mtime_ns]
    except OSError:
        return settings.load(text, where=str(vault.root / "optmem.toml"))
    path = settings_cache(vault, stamp)
    try:
        kept = json.loads(fsio.read_bytes(path, within=vault.root, limit=4 * settings.FILE_BYTES) or b"")
        if kept["stamp"] == stamp:
            return settings.from_plain(kept["settings"])
    except (OptmemError, OSError, ValueError, KeyError, TypeError):
        pass
    loaded = settings.load(text, where=str(vault.root / "optmem.toml"))
    if vault.cache_dir.is_dir():  # (reading settings never lays out a vault)
        try:
            fsio.atomic_write(
                path,
                json.dumps({"stamp": stamp, "settings": settings.to_plain(loaded)}, ensure_ascii=False),
                within=vault.root,
            )
            others = [p for p in vault.cache_dir.glob(SETTINGS_CACHE.format(reader="*")) if p != path]
            others.sort(key=lambda p: p.stat().st_mtime_ns)
            for old in others[: max(0, len(others) - _SETTINGS_KEPT + 1)]:  # (optmems no longer run)
                fsio.remove_file(old)
        except (OptmemError, OSError):
            pass  # a read-only vault: read the file each time
    return loaded


def _vault_around(cwd: Path) -> Path | None:
    """The vault folder the current folder is, or lies in (`optmem init DIR` then `cd DIR`): its
    log, or the merge rule `init` writes into its .gitattributes — for a hint, never to choose one."""
    for folder in (cwd, *cwd.parents):
        try:
            if (folder / "LOG.jsonl").is_file() or "LOG.jsonl merge=union" in (folder / ".gitattributes").read_text(
                "utf-8", errors="replace"
            ):
                return folder
        except OSError:
            continue
    return None


def resolve(explicit: str | None, env: dict[str, str], cwd: Path, home: Path) -> Path:
    """--vault > OPTMEM_VAULT > nearest ancestor holding `.optmem/` > ~/.optmem."""
    if explicit:
        return Path(explicit).expanduser().absolute()
    if env.get("OPTMEM_VAULT"):
        return Path(env["OPTMEM_VAULT"]).expanduser().absolute()
    for folder in (cwd, *cwd.parents):
        candidate = folder / ".optmem"
        if candidate.is_dir():
            return candidate
    return home / ".optmem"


class InitResult(Value):
    vault: str
    created: list[str]


def initialised(vault: Vault) -> bool:
    """The vault folder exists with its git files (`init`, or a first write, made them)."""
    return all((vault.root / name).exists() for name in (".gitattributes", ".gitignore"))


def ensure_layout(vault: Vault) -> list[str]:
    """Add what a vault lacks (folder, .gitattributes, .gitignore); never touch what exists. A
    vault optmem begins here inside a git work tree — git tracks no file in its folder — goes on
    the user's trust list (`optmem.trust`); one that came in a clone or a pull waits for
    `optmem trust`, whatever it holds or lacks."""
    from optmem import trust

    created: list[str] = []
    laid_out = initialised(vault)
    if fsio.ensure_dir(vault.root):
        created.append(str(vault.root))
    if not laid_out and trust.in_git_work_tree(vault.root) and trust.begun_here(vault.root):
        try:
            trust.allow(vault.root)
            vault.trusted = True
        except OptmemError:
            pass  # (a git directory it cannot write: the vault stays untrusted, and `doctor` says so)
    for name, content in ((".gitattributes", GITATTRIBUTES), (".gitignore", GITIGNORE)):
        path = vault.root / name
        existing = fsio.read_text(path)
        if existing is None:
            fsio.atomic_write(path, content, within=vault.root)
            created.append(name)
        else:
            # an existing file (a Hermes or git-managed folder) gets the lines it lacks, nothing else
            have = {line.strip() for line in existing.splitlines()}
            missing = [line for line in content.splitlines() if line.strip() not in have]
            if missing:
                sep = "" if existing.endswith("\n") or not existing else "\n"
                fsio.atomic_write(path, existing + sep + "\n".join(missing) + "\n", within=vault.root)
                created.append(name)
    return created


def init(vault: Vault) -> InitResult:
    """Create a vault, or add only what is missing to an existing folder (e.g. Hermes memories/)."""
    with_lock_dir = ensure_layout(vault)
    return InitResult(vault=str(vault.root), created=with_lock_dir)
