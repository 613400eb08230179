"""The vault: where it is, what it holds, names that may live in it, and `init`."""

from __future__ import annotations

import re
from _thread import get_ident  # threading.get_ident itself: importing threading costs ~1 ms
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from optmem import __version__, fsio, layout, settings
from optmem.errors import InvalidName, OptmemError, Unreadable, VaultMissing, quote
from optmem.names import ASCII_NAME, INVISIBLE, NAME_BYTES, too_long
from optmem.names import NAME_MAX as NAME_MAX  # (the grammar, as modules import it from here)
from optmem.names import NAME_RE as NAME_RE
from optmem.settings import Settings
from optmem.value import Value

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any


CACHE = ".cache"
OWN = ".clone"  # this clone's own notes that cannot be rebuilt (`Vault.own`) in a vault outside git
OWN_IN_GIT = "optmem"  # in a git directory: the own notes of each vault in its work tree (`Vault.own_dir`)
CLONE_MOVED = "clone-moved"  # in the own notes' folder in git: `.clone/`'s notes were moved there (once)
OWN_FILES = ("purged", "lost.jsonl")  # own notes (`optmem.lost`) an older optmem kept in .cache/
OWN_FALLBACK = "own-fallback"  # in .clone/: the git directory cannot be written, the notes are here
OWN_MOVED = "own-moved"  # in .cache/: `Vault.take_own_from_cache` has run (once)
RELEASES = "releases"  # an own note: ids of the release lines this clone's own `optmem release` wrote
RELEASES_STARTED = "releases-started"  # in .cache/: `Vault.start_release_list` has run (once)
GITATTRIBUTES = "LOG.jsonl merge=union\nACCESS.jsonl merge=union\nlog/*/*.jsonl merge=union\n"
GITIGNORE = f"{CACHE}/\n*.tmp\n*.md.lock\n*.md.bak.*\n"  # Hermes Agent's lock and backups too
# what only a vault's folder holds (the log, its parts, the hot files, projects, the tree, the
# settings, the index): a folder with none of them is no vault yet, and a read writes nothing there
VAULT_FILES = (
    layout.LOG,
    layout.ACCESS,
    layout.SEGMENTS,
    "MEMORY.md",
    "USER.md",
    "projects",
    "tree",
    "optmem.toml",
    CACHE,
)
# ... or the line `init` (or a first write) puts in .gitattributes: an initialised vault is a vault
# before its first write (a git work tree's own .gitattributes does not hold it)
VAULT_MARK = GITATTRIBUTES.splitlines()[0]


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
        # `.clone/` files a pull wrote over this clone's own notes before they were moved into the
        # git directory (`move_own_from_clone`): what this process found — `sync` names them
        self.own_overwritten: list[str] = []
        self.reads_checked = False  # the log and ACCESS.jsonl lead nowhere outside (`index._open_index`)
        # the log read into memory when the index could not be updated (`index._from_log`), with
        # the states of the log and ACCESS.jsonl it was read at: read once, copied for each reader
        self.from_log: tuple[Any, Any] | None = None
        # a read found a folder holding none of a vault's files and wrote nothing there (`bare`):
        # the command says it is no vault yet
        self.read_bare = False
        # a long-lived process's warm handle (`optmem.warm.Warm`): its settings and open index
        # connections serve this vault's reads; None in a command run as its own process
        self.warm: Any = None
        self._own_access: tuple[str | None] | None = None  # (`own_access`, once found)

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

    def own_access(self) -> str | None:
        """The name of this clone's own recall file (`layout.own_access`), found once a Vault (a
        command, a warm handle's call): the index marks what this clone read from it."""
        if self._own_access is None:
            self._own_access = (layout.own_access(self.root),)
        return self._own_access[0]

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

    def _own_place(self) -> tuple[Path, Path]:
        """(`own_dir`, `own_within`): in a git work tree, a folder of its git directory
        (`_git_place`); elsewhere, or where this process cannot write that folder (`own_fallback`),
        `.clone/`. Found on each use (a few `stat`s), never kept: a long-lived server's vault may
        be put in git (`git init`) while it runs."""
        place = self._git_place()
        if place is None or not _can_write(*place):
            return (self.root / OWN, self.root)
        return place

    def _git_place(self) -> tuple[Path, Path] | None:
        """(folder, git dir) the own notes would have in the git directory — writable or not —
        or None for a vault outside a git work tree: `<git dir>/optmem/top` for a vault at the top
        of the work tree, `…/optmem/in-<place>` for one inside it (`/` written `%2F`)."""
        import os

        from optmem import gitstate

        top = gitstate.work_tree(self.root)
        if top is None:
            return None
        from optmem.trust import git_dir

        folder = git_dir(top)
        if folder is None:
            return None
        place = os.path.relpath(os.path.realpath(self.root), top)
        name = "top" if place == "." else "in-" + place.replace("%", "%25").replace(os.sep, "%2F")
        return (folder / OWN_IN_GIT / name, folder)

    def orphaned_own(self) -> list[Path]:
        """When this vault has no own notes yet in the git directory: the folders of
        `.git/optmem/` whose place holds no vault (`initialised`) — a vault moved in its work
        tree (`mv .optmem memory`) left its notes under its old place's name (`doctor` names
        them; rename the folder to this vault's to keep its purges)."""
        place = self._git_place()
        if place is None or place[0].exists():
            return []
        from optmem import gitstate

        top = gitstate.work_tree(self.root)
        parent = place[0].parent
        out: list[Path] = []
        if top is None or not parent.is_dir() or parent.is_symlink():
            return out
        for folder in sorted(parent.iterdir()):
            if not folder.is_dir():
                continue
            if folder.name == "top":
                where = top
            elif folder.name.startswith("in-"):
                where = top / folder.name[3:].replace("%2F", "/").replace("%25", "%")
            else:
                continue
            if not initialised(Vault(where)):
                out.append(folder)
        return out

    @property
    def own_fallback(self) -> Path | None:
        """The git directory's folder for the own notes when this process cannot write it (a
        sandbox that keeps `.git` read-only and the work tree writable, a file where the folder
        should be): the own notes are then kept in `.clone/`, as before the move, and read from
        both; the next lock that can write the git directory moves them there. None otherwise."""
        if self.own_in_git:
            return None
        place = self._git_place()
        return None if place is None else place[0]

    @property
    def own_dir(self) -> Path:
        """Where this clone keeps its own notes, which nothing can rebuild (the purged ids'
        hashes, its releases, the ids the log held, the notes of what went: `optmem.lost`): in a
        vault that lies in a git work tree, a folder of that work tree's git directory, where no
        pull, merge or checkout writes (a crafted commit that tracks a file there cannot replace
        it); in a vault outside git, `.clone/` — beside the cache, not in it, so deleting `.cache/`
        stays safe either way."""
        return self._own_place()[0]

    @property
    def own_within(self) -> Path:
        """The folder no read or write of the own notes may lead out of: the git directory, or the vault."""
        return self._own_place()[1]

    @property
    def own_in_git(self) -> bool:
        return self.own_dir != self.root / OWN

    def own_within_of(self, path: Path) -> Path:
        """The folder no read of `path`, one of `own_kept`'s, may lead out of."""
        if path.parent == self.own_dir:
            return self.own_within
        place = self._git_place()
        return place[1] if place is not None and path.parent == place[0] else self.root

    def own_path(self, name: str) -> Path:
        """A path among the own notes (`own_dir`), nothing made."""
        return self.own_dir / name

    def own(self, name: str) -> Path:
        """A path among the own notes (`own_dir`), its folder made first if missing — `.clone/`
        with a .gitignore of its own (never committed)."""
        folder, within = self._own_place()
        if folder == self.root / OWN:
            if fsio.ensure_dir(folder, within=within) or not (folder / ".gitignore").exists():
                fsio.atomic_write(folder / ".gitignore", "*\n", within=within)
        else:
            fsio.ensure_dir(folder, within=within)
        return folder / name

    def own_kept(self, name: str) -> list[Path]:
        """Where the own note `name` is read: `own_dir`, and — in a vault in git whose `.clone/`
        was not moved yet (`move_own_from_clone`) — `.clone/` too, but never a file git tracks
        there (a commit carried it: no clone's own note)."""
        out = [p for p in (self.own_path(name),) if p.is_file()]
        fallback = self.own_fallback
        if fallback is not None:  # (`.clone/` stands in for a git directory this process cannot write)
            from optmem import gitstate

            if out and gitstate.tracked(out[0]):
                out = []  # (a commit carried it: no clone's own note)
            if (fallback / name).is_file():
                out.append(fallback / name)
            return out
        waiting = not (self.own_dir / CLONE_MOVED).exists() or (self.root / OWN / OWN_FALLBACK).is_file()
        if self.own_in_git and (self.root / OWN / name).is_file() and waiting:
            from optmem import gitstate

            if not gitstate.tracked(self.root / OWN / name):
                out.append(self.root / OWN / name)
        return out

    def move_own_from_clone(self) -> None:
        """In a vault in a git work tree, move what `.clone/` holds (an optmem of the twelfth stop
        or before kept its own notes there, in the work tree a pull writes) into `own_dir`, once,
        lock held (`own_dir/clone-moved` says it ran; what appears in `.clone/` later is no
        note of this clone's). Each file's lines are appended to the note of its name, then the
        file removed: cut short between the two, the next lock appends them again, which reads
        the same (a hash, an id or a note read twice reads as once). A file git tracks there is
        not moved — a commit carried it, and a pull wrote it over what this clone kept, if it
        kept anything: named in `own_overwritten`, and noted for `doctor` (`optmem.lost`)."""
        if not self.own_in_git:
            self._say_fallback()
            return
        if (self.own_dir / CLONE_MOVED).exists():
            # (moved once; again only if a process that could not write the git directory kept them
            # in `.clone/` since — its untracked mark says so: a commit's says nothing)
            mark = self.root / OWN / OWN_FALLBACK
            from optmem import gitstate

            if not mark.is_file() or mark.is_symlink() or gitstate.tracked(mark):
                return
        old = self.root / OWN
        names = sorted(p.name for p in old.iterdir()) if old.is_dir() and not old.is_symlink() else []
        for name in names:
            path = old / name
            if name in (".gitignore", OWN_FALLBACK) or path.is_symlink() or not path.is_file():
                continue
            from optmem import gitstate

            if gitstate.tracked(path):
                self.own_overwritten.append(f"{OWN}/{name}")
                continue
            fsio.check_within(path, self.root, reading=True)
            with open(path, "rb") as fh:
                batch: list[bytes] = []
                for raw, _ in fsio.lines(fh):
                    if raw.strip():
                        batch.append(raw.rstrip(b"\r\n"))
                    if len(batch) >= 50_000:
                        fsio.append_lines(self.own(name), batch, within=self.own_within)
                        batch = []
                if batch or not self.own_path(name).exists():
                    fsio.append_lines(self.own(name), batch, within=self.own_within)
            fsio.remove_file(path)
        if (old / OWN_FALLBACK).is_file() and not (old / OWN_FALLBACK).is_symlink():
            fsio.remove_file(old / OWN_FALLBACK)
        if old.is_dir() and not old.is_symlink() and [p.name for p in old.iterdir()] == [".gitignore"]:
            fsio.remove_file(old / ".gitignore")
            old.rmdir()
        fsio.atomic_write(self.own(CLONE_MOVED), "", within=self.own_within)
        if self.own_overwritten:
            self._note_overwritten()

    def _move_own_or_say(self) -> None:
        """`move_own_from_clone`, never failing the lock: a move that cannot be done (a note
        that cannot be read or written) is said, and `.clone/` stays read beside the git
        directory until a later lock finishes it (no `clone-moved` mark is written)."""
        try:
            self.move_own_from_clone()
        except (OptmemError, OSError) as exc:
            self.lost.append(
                f"this clone's own notes in {OWN}/ could not be moved into {self.own_dir} ({exc}); they are "
                "read from both places, and the next command that takes the vault lock tries again"
            )

    def _say_fallback(self) -> None:
        """Say once (lock held) that the own notes are kept in `.clone/` because the git
        directory cannot be written (`own_fallback`): `.clone/own-fallback` marks it said, and
        tells the next lock that can write the git directory to move `.clone/` there."""
        fallback = self.own_fallback
        mark = self.root / OWN / OWN_FALLBACK
        if fallback is None or mark.is_file():
            return
        self.own(OWN_FALLBACK)
        fsio.atomic_write(mark, "", within=self.root)
        self.lost.append(
            f"the git directory cannot be written here ({fallback}): this clone's own notes (purged ids, "
            f"releases, held ids) are kept in {OWN}/ in the work tree, where a pull of a commit that tracks "
            "them could write over them; the next command that can write the git directory moves them there"
        )

    def _note_overwritten(self) -> None:
        """Tell, and note for `doctor` (a `lost.jsonl` note, as `optmem.lost` keeps them), the
        `.clone/` files git tracked when the own notes were moved (`own_overwritten`)."""
        import json

        from optmem import clock

        paths = self.own_overwritten
        message = (
            f"git tracks {', '.join(paths)}: a commit carried {'them' if len(paths) > 1 else 'it'}, and a pull or "
            "checkout wrote over what this clone kept there, if anything — this optmem keeps the clone's own notes "
            "in its git directory, where no pull writes, and did not take git's copy as one; records this clone "
            "purged may come back (purge them again) and records it released may be held again (`optmem "
            "quarantine`); `optmem sync` takes the files out of git; `optmem doctor --fix` clears this note"
        )
        self.lost.append(message)
        from optmem import gitstate

        # (the commit checked out at the move: a sync tells a file git wrote over from one a later commit tracked)
        res = gitstate.run(self.root, "rev-parse", "--verify", "--quiet", "HEAD")
        head = res.stdout.strip() if res.returncode == 0 else ""
        item = {
            "at": clock.format_ts(clock.now()),
            "what": "own",
            "file": paths[0],
            "files": paths,
            "head": head,
            "message": message,
        }
        line = json.dumps(item, ensure_ascii=False).encode("utf-8")
        fsio.append_lines(self.own(OWN_FILES[1]), [line], within=self.own_within)

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

    def bare(self) -> bool:
        """The folder exists and holds none of a vault's files (`VAULT_FILES`, `VAULT_MARK`): it reads as an empty
        vault (SPEC §2), and a read leaves it as it found it (`--vault ~/Documents`, a typo, must
        not plant an index there)."""
        import os

        if not self.exists() or any(os.path.lexists(self.root / name) for name in VAULT_FILES):
            return False
        try:
            said = fsio.read_text(self.root / ".gitattributes", limit=1 << 16)
        except OptmemError:
            return True  # (a .gitattributes that cannot be read marks nothing)
        return said is None or VAULT_MARK not in (line.strip() for line in said.splitlines())

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

    def _refuse_a_file(self, *, making: bool = False) -> None:
        """Refuse a vault path that is a file, or lies under one (--vault names the folder, not
        its LOG.jsonl); `making`: for `init`, which is to make the vault there."""
        at = self.root
        while not at.exists() and at.parent != at:
            at = at.parent
        if at.exists() and not at.is_dir():
            holder = at.parent
            if (holder / "LOG.jsonl").is_file():
                where = f"the folder that holds it ({holder})"
            elif making:  # (`init`: the vault is to be made there)
                where = "a folder (or a path not there yet: init makes it), or move the file aside; nothing was made"
            else:
                where = "a vault folder (`optmem init DIR` makes one)"
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
        hashes, the notes of what went) among the own notes (`own_dir`), lock held — or deleting the cache would
        take it. Once (`.cache/own-moved` says it ran): a file that appears in `.cache/` later is
        no clone's own note, nor is one git tracks (a checkout or a merge wrote it: a crafted
        commit's `.cache/purged` would purge this clone's records) — neither is moved nor read.
        Its lines are appended to the own note's file, then the old file is removed: cut short
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
                fsio.append_lines(self.own(name), kept, within=self.own_within)
            fsio.remove_file(old)
        fsio.atomic_write(marker, "", within=self.root)

    def own_releases(self) -> frozenset[str]:
        """The ids (upper case) of the `release` lines this clone's own `optmem release` (or
        `segment`'s release again) wrote (`releases`, an own note): only these let a record out of
        quarantine here (`quarantine.release_honoured`) — a line another clone wrote, whatever
        file a sync, a hand `git pull` or a fresh clone put it in, is kept and lets nothing out."""
        paths = self.own_kept(RELEASES)
        if not paths:  # (none written yet; before the first lock, what it will hold)
            return frozenset(_honoured_before(self) if self.used_by_older() else ())
        out: set[str] = set()
        for path in paths:
            data = fsio.read_bytes(path, within=self.own_within_of(path), limit=64 << 20) or b""
            out |= {line.strip().decode("ascii", "replace").upper() for line in data.split(b"\n") if line.strip()}
        return frozenset(out)

    def list_releases(self, ids: list[str]) -> None:
        """Put the ids of release lines this clone is writing on its list (`own_releases`), before
        the lines are appended (the caller holds the vault lock): cut short between the two, an id
        with no line lets nothing out."""
        if ids:
            listed = [i.upper().encode("ascii", "replace") for i in ids]
            fsio.append_lines(self.own(RELEASES), listed, within=self.own_within)

    def used_by_older(self) -> bool:
        """Whether an older optmem (one that kept no release list) took the lock in this
        clone: its `.cache/own-moved` mark is there and this optmem's `.cache/releases-started`
        is not (this optmem writes both at its first lock). An index alone says nothing: a reader
        builds one without the lock. Nor does a mark git tracks (a crafted commit that tracks
        `.cache/own-moved` would make a fresh clone read as such a clone, and honour another
        clone's release in a log it shares: `LOG.jsonl` of a vault never split) — asked of git
        only when the marks say "older"."""
        mark = self.cache_dir / OWN_MOVED
        if not mark.exists() or (self.cache_dir / RELEASES_STARTED).exists():
            return False
        from optmem import gitstate

        return not gitstate.tracked(mark)

    def start_release_list(self) -> None:
        """Start the `releases` list once (the caller holds the lock; `.cache/releases-started`
        says it ran: a command that writes nothing makes no own notes). In a
        clone an older optmem used (`used_by_older`) it lists
        the releases that optmem honoured — a person's (`origin` user) in this clone's own log
        file (`layout.own_files`), not one a sync noted as another clone's
        (its `foreign-releases` note) — so nothing a person released before is held again. In a
        fresh clone or a new vault it starts empty (no file): a release line the clone came with
        is another writer's."""
        marker = self.cache_dir / RELEASES_STARTED
        if marker.exists() or self.own_kept(RELEASES):
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

    def tree_lock(self, *, make: bool = False) -> AbstractContextManager[None]:
        """The summary tree's own lock: compaction takes a while and must not hold up appends.
        Held on the `tree/` folder too, as `lock` is on the vault's, so a `.cache/` deleted while
        it is held lets no second compaction in; `make`: the folder is made first if missing
        (compaction, which writes nodes there — a purge of a vault with no tree makes none)."""
        self.lay_out()
        tree = self.root / "tree"
        if make:
            fsio.ensure_dir(tree, within=self.root)
        return fsio.exclusive_lock(
            self.cache("tree.lock"),
            self.settings.lock.timeout,
            within=self.root,
            folder=tree if tree.is_dir() else None,
            what="the summary tree (held while `compact` or `purge` runs; appends and searches go on meanwhile)",
        )

    @contextmanager
    def lock(self) -> Iterator[None]:
        """The vault's exclusive write lock (in the ignored cache folder, so git never sees it),
        held on the vault's folder too, so a `.cache/` deleted while it is held lets no one in.

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
        with fsio.exclusive_lock(self.cache("lock"), self.settings.lock.timeout, within=self.root, folder=self.root):
            self._lock_depth, self._lock_owner = 1, get_ident()
            try:  # (a first step that fails leaves the vault unlocked: it never believes it holds the lock)
                self.clean_temporaries()
                self._move_own_or_say()  # (first: the steps below read and write the own notes)
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
    brought = b""  # (what an older sync noted)
    for path in vault.own_kept("foreign-releases"):
        brought += (fsio.read_bytes(path, within=vault.own_within_of(path)) or b"") + b"\n"
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


def _can_write(path: Path, within: Path) -> bool:
    """Whether this process can make or write the folder `path` inside `within` (the git
    directory): its nearest existing part is a folder it may write in. A few `stat`s."""
    import os

    part = path
    while not os.path.lexists(part) and part != within and part.parent != part:
        part = part.parent
    return part.is_dir() and not part.is_symlink() and os.access(part, os.W_OK | os.X_OK)


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

    for path in (vault.log_path, vault.root / "optmem.toml", vault.root / "MEMORY.md", vault.root / "USER.md"):
        if path.is_dir():  # (before anything is made: a write that cannot go on leaves nothing behind)
            raise Unreadable(f"{fsio.folder_said(path)}; nothing was made or changed", file=str(path))
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
    """Create a vault, or add only what is missing to an existing folder (e.g. Hermes memories/);
    a path that is a file (or lies under one) is refused as every command refuses it."""
    vault._refuse_a_file(making=True)
    with_lock_dir = ensure_layout(vault)
    return InitResult(vault=str(vault.root), created=with_lock_dir)
