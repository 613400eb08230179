"""`optmem sync`: one memory on many machines, through git.

The vault is its own git repository (or a worktree of a branch of its own), split into one log
file per writer (`optmem segment`, run here when it has not been). A sync, in stages:

1. finish what an interrupted sync left (its note in `.cache/sync-merge.json`, written before
   git merges): a git merge it left running is waited for; a merge git itself did not live to
   finish (killed with it) is undone — its index lock removed, the files it touched put back —
   and done again below; a merge whose files are all merged is committed; and what that merge
   brought in is reported by this sync, counted from where the interrupted one began;
2. commit this clone's changes to the vault (its own log files, recalls, hot files, tree);
3. fetch the remote branch and merge it: log files only gain lines or arrive whole (no file has
   two writers), hot files merge entry by entry (the merge driver), the summary tree and
   handoff notes keep this clone's version (both are rebuilt from the log: the other clone's
   records are there);
4. check the records that came in as the write gate checks a write (`record.flagged_field`: every
   string field each carries; and the size bound every read keeps): flagged by field, never
   dropped — every read surface shows a flagged field as [BLOCKED: rule], and a line over the
   bound is read by no one (doctor names it). What came in is what the merges brought: in other
   writers' files the lines past their size before the merge (in one the merged commits took a
   line out of — a purge, an edit there — the lines they added to it, read from git); in this clone's own folder, which
   it appends to meanwhile, the lines each merged commit added since its merge base (optmem
   never writes another writer's folder: such lines were typed or forged on another clone, and
   are reported as such);
5. catch the index up (per file: never a rebuild because of a merge);
6. push; when the remote moved meanwhile, fetch, merge and push again (a few times).

Every stage is safe to interrupt: git's own steps are atomic or are finished by the next sync,
and records are keyed by id, so nothing is lost or doubled. The git processes run in a session
of their own: killing sync does not kill a git step half-way. Git is read by exit codes and
plumbing output, never by its messages (which speak the user's language): a branch the remote
lacks is `ls-remote --exit-code`'s answer, a remote that moved is a fetch that is no ancestor.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from optmem import fsio, gitstate, layout
from optmem.errors import MergeConflict, OptmemError, SyncFailed, UnsafeContent, UsageError, quote
from optmem.record import BOOKKEEPING, READ_BYTES, RELEASE, BadLine, flagged_field, parse_line, strings
from optmem.vault import Vault
from optmem.view import short_ids

PUSH_TRIES = 5
# files every clone writes its own version of, rebuilt from the log: a merge keeps ours
DERIVED = ("tree/", "projects/*/HANDOFF.md")
LINE_SETS = (".gitattributes", ".gitignore")  # sets of lines: a merge keeps both sides' lines


@dataclass
class SyncReport:
    remote: str
    branch: str
    writer: str
    segmented_now: bool = False  # this sync split the log first (`optmem segment`)
    committed: bool = False  # this clone's changes were committed
    merged: bool = False  # the remote had commits this clone lacked
    pushed: bool = False
    retries: int = 0  # pushes refused because the remote moved, then merged again
    records_in: int = 0  # records that came in from other writers
    into_own_folder: int = 0  # of those, records another clone put into this clone's own folder
    records_out: int = 0  # records of this writer the remote lacked
    flagged: list[dict[str, Any]] = field(default_factory=list)  # incoming records flagged: id, file, field, rule
    # incoming `release` lines: id, ref (the record), file, origin — none lets its record out here
    releases_in: list[dict[str, Any]] = field(default_factory=list)
    new_conflicts: list[dict[str, Any]] = field(default_factory=list)  # conflicts the merge made
    over_budget: list[dict[str, Any]] = field(default_factory=list)  # hot files over their limit after it
    kept_ours: list[str] = field(default_factory=list)  # derived files both sides changed: ours kept
    # hot files git's own line merge left with conflict markers (its fallback when the driver
    # cannot run): merged again here entry by entry, as the driver merges them (`_remerge_hot`)
    hot_merged: list[str] = field(default_factory=list)
    untracked_local: list[str] = field(default_factory=list)  # .cache/ and .clone/ files git tracked: taken out
    purged_again: int = 0  # records this clone purged that a merge brought back: dropped again
    nodes_dropped: list[str] = field(default_factory=list)  # tree nodes a merge brought back quoting those
    handoffs_dropped: list[str] = field(default_factory=list)  # HANDOFF.md files a merge brought back carrying one
    purged_elsewhere: int = 0  # records this clone held that another clone purged: the merge took them out
    removed_elsewhere: int = 0  # records the merge took out with no purge's mark (a purge or an edit there)
    # what another clone made that acts here as this clone's own: hot-memory entries the merge put
    # in the hot files ({file, entry, text, journal}: `memory.follow_merge`) and redlines that came in
    # ({id, file}) — in a trusted vault they are rules and hot memory here, so each is named
    hot_in: list[dict[str, Any]] = field(default_factory=list)
    redlines_in: list[dict[str, Any]] = field(default_factory=list)
    # a project's handoff the view no longer shows because another clone's handoff of the same
    # domain, written without having seen it, is newer ({project, domain, id, time, next, shown}):
    # its open items are named here, and `handoff read --history` lists it (`_handoffs_beside`)
    handoffs_beside: list[dict[str, Any]] = field(default_factory=list)
    noop: bool = False  # nothing to commit, fetch, merge or push

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Say = Callable[[str], None]


class _Git:
    def __init__(self, root: Path, writer: str) -> None:
        self.root = root
        self.env: dict[str, str] = {}  # on top of `gitstate.environment`
        self._made: set[str] | None = None
        self._fetched: set[str] = set()  # the new ends of the remote-tracking refs' fetches (`reflogs`)
        self.cleared: set[bytes] = set()  # lines `_refuse_secrets` found no secret in, this sync
        self.brought: set[str] = set()  # the commits this sync's own fetches ended on
        self._elsewhere: dict[str, set[str]] = {}  # base → `from_elsewhere(base)`
        self._commit_diffs: dict[str, dict[str, bytes]] = {}  # a marked commit → its diff (`_commit_diff`)
        self._marked: dict[tuple[str, str], dict[str, str]] = {}  # (base, theirs: commits) → `_marked`'s all
        self._empty = ""  # the empty tree's name (`empty_tree`)
        if self.run("config", "user.email", check=False).returncode != 0:
            # a machine where git was never told who the user is (an agent's container): the
            # commits are the writer's, not refused
            for who in ("AUTHOR", "COMMITTER"):
                for part, value in (("NAME", f"optmem ({writer})"), ("EMAIL", f"{writer}@optmem.invalid")):
                    if f"GIT_{who}_{part}" not in os.environ:
                        self.env[f"GIT_{who}_{part}"] = value

    def fetched(self, sha: str) -> None:
        """This sync's fetch left the remote-tracking ref at `sha` (`from_elsewhere`)."""
        if sha and sha not in self.brought:
            self.brought.add(sha)
            self._elsewhere.clear()
            self._marked.clear()

    def empty_tree(self) -> str:
        """The empty tree (what a first commit's diff is taken from), asked of git once."""
        if not self._empty:
            self._empty = self.out("hash-object", "-t", "tree", os.devnull)
        return self._empty

    def run(
        self, *args: str, check: bool = True, timeout: float = 300, started: Callable[[int], None] | None = None
    ) -> subprocess.CompletedProcess[str]:
        try:
            # fsmonitor, pager and editor off, the vault repository's own hooks on (`gitstate`);
            # a killed sync leaves its git step to finish
            res = gitstate.run(
                self.root,
                *args,
                env=self.env,
                reading=False,
                timeout=timeout,
                own_session=True,
                hooks=True,
                started=started,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise SyncFailed(f"git {args[0]} could not run ({exc}); nothing was changed by it") from exc
        if check and res.returncode != 0:
            said = (res.stderr or res.stdout).strip()
            advice = "fix that, then run `optmem sync` again"
            if "index.lock" in said:  # git's own advice (remove the file) is wrong while a git runs
                advice = (
                    "another git is still running in this repository (an earlier sync, an editor, a "
                    "hook): wait for it to end, then run `optmem sync` again — remove .git/index.lock "
                    "only if no git process runs"
                )
            raise SyncFailed(f"git {' '.join(args[:3])} failed: {said[:600]}; what is stored is unchanged — {advice}")
        return res

    def out(self, *args: str) -> str:
        return self.run(*args).stdout.strip()

    def head(self) -> str:
        """The commit checked out; "" on a branch with no commit yet."""
        return self.run("rev-parse", "--verify", "--quiet", "HEAD", check=False).stdout.strip()

    def ok(self, *args: str) -> bool:
        return self.run(*args, check=False).returncode == 0

    def made_here(self) -> set[str]:
        """The commits made in this clone, as its local reflogs (HEAD's and each branch's) tell
        (`MADE_HERE`; read once a sync): a purge's mark on one of them is no other clone's word. The
        reflog is git's record, not proof (whoever runs git here can write it); a commit whose entry
        expired (`gc.reflogExpire`) or was never written (`core.logAllRefUpdates` off) is not known
        as made here — `from_elsewhere` asks for a fetch besides."""
        if self._made is None:
            self._made, self._fetched = reflogs(self.root)
        return self._made

    def from_elsewhere(self, base: str) -> set[str]:
        """The commits not in `base` that a fetch brought: reachable from the new end of a
        remote-tracking ref's fetch, pull or clone as its reflog records it (`FETCHED`), or from
        a commit this sync's own fetch ended on (`brought`). A commit reachable only from this
        clone's branches was made here, whatever its reflog entry says (`git commit-tree`, then
        `git reset --hard`, `git merge --ff-only` or `git update-ref`). One `git rev-list` per base."""
        if base not in self._elsewhere:
            self.made_here()
            tips = sorted(self._fetched | self.brought)
            got: set[str] = set()
            if tips:
                res = gitstate.run(
                    self.root,
                    *("rev-list", "--no-merges", "--ignore-missing", "--stdin"),
                    stdin="".join(f"{t}\n" for t in tips) + (f"^{base}\n" if base else ""),
                    timeout=300,
                )
                got = set(res.stdout.split()) if res.returncode == 0 else set()
            self._elsewhere[base] = got
        return self._elsewhere[base]


# A reflog entry that made the commit it records, in this clone: a commit (amended, a merge's, the
# first), a cherry-pick, a revert, `git am`, a rebase's picked or edited commit (`rebase (pick)`,
# `pull --rebase (pick)`) — and one with no message at all (`git update-ref` after `git
# commit-tree`). The others move a branch to a commit that was there: a fast-forward (`pull:
# Fast-forward`), a reset, a checkout, a new branch, a clone, a rebase's start and finish.
MADE_HERE = r"(?:commit|cherry-pick|revert|am)\b.*|.*\((?:pick|reword|edit|squash|fixup)\):.*|"


# A remote-tracking ref's reflog entry that brought commits from elsewhere: `git fetch`'s, `git
# pull`'s, `git clone`'s — not "update by push" (this clone's own commits going out), nor one
# with no message (the sync's `update-ref` after a push) — and not a fetch from this very
# repository (`git fetch . COMMIT:refs/remotes/…`).
FETCHED = r"(?:fetch|pull)\b(?!.*\s\.\s).*|clone: .*"


def reflogs(root: Path) -> tuple[set[str], set[str]]:
    """(the commits this clone made: `made_here`; the new ends of the fetches, pulls and clones
    its remote-tracking refs' reflogs record: `FETCHED`), in one read of the reflogs."""
    import re

    made, fetched = re.compile(MADE_HERE, re.S), re.compile(FETCHED, re.S)
    res = gitstate.run(root, "log", "-g", "--all", "--format=%H%x00%gD%x00%gs%x00", timeout=300)
    parts = res.stdout.split("\0") if res.returncode == 0 else []
    mine: set[str] = set()
    brought: set[str] = set()
    for sha, ref, said in zip(parts[0::3], parts[1::3], parts[2::3], strict=False):
        sha = sha.strip()
        if ref.startswith(("HEAD@", "refs/heads/")) and made.fullmatch(said):
            mine.add(sha)
        elif ref.startswith("refs/remotes/") and fetched.fullmatch(said):
            brought.add(sha)
    return mine, brought


def _top(vault: Vault) -> Path:
    top = gitstate.work_tree(vault.root)
    if top is None:
        raise UsageError(
            f"{vault.root} is not in a git repository; sync shares a vault through git: "
            f"`git -C {vault.root} init` and add a remote (`git remote add origin URL`) — or share the "
            "folder with Syncthing, rclone or NFS after `optmem segment` (they need no sync command)"
        )
    if os.path.realpath(top) != os.path.realpath(vault.root):
        raise UsageError(
            f"the vault {vault.root} lies inside the repository at {top}; sync commits and pushes only a vault "
            "that is a repository of its own, so it never pushes a code branch — make the vault its own "
            "repository, or a worktree on a branch of its own with none of the code's history (`git -C "
            f"{top} worktree add --detach DIR && git -C DIR checkout --orphan memory && git -C DIR rm -rfq .`; "
            f"on git 2.42 or later `git -C {top} worktree add --orphan -b memory DIR`), then use DIR as the vault"
        )
    return top


SYNC_WAIT = 600.0  # seconds a sync waits for another sync of the same clone


def sync(vault: Vault, remote: str | None = None, branch: str | None = None, say: Say | None = None) -> SyncReport:
    """Commit, fetch, merge, scan, catch up, push (see the module's doc); the report. One sync
    of a clone at a time (a second waits for the first)."""
    vault.require()
    with sync_lock(vault):
        return _sync(vault, remote, branch, say or (lambda _: None))


def sync_lock(vault: Vault, timeout: float = SYNC_WAIT) -> AbstractContextManager[None]:
    """One sync of a clone at a time: `.cache/sync.lock`, held on the clone's git directory too
    (as the vault lock is on the vault's folder), so a `.cache/` deleted while a sync runs lets no
    second one in (the vault is its work tree's top: `_top`)."""
    return fsio.exclusive_lock(
        vault.cache("sync.lock"),
        timeout,
        within=vault.root,
        folder=_git_dir(vault.root),
        what="this clone's sync (held while `optmem sync` runs: one sync of a clone at a time)",
        setting=False,
    )


def _git_dir(top: Path) -> Path | None:
    """The git directory of the work tree at `top` (`.git`, or where a worktree's `.git` file
    points), without running git; None when there is none (`_sync` says so)."""
    dot = top / ".git"
    if dot.is_dir():
        return dot
    try:
        said = dot.read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not said.startswith("gitdir:"):
        return None
    path = Path(said.removeprefix("gitdir:").strip())
    return path if path.is_absolute() else top / path


def _sync(vault: Vault, remote: str | None, branch: str | None, say: Say) -> SyncReport:
    from optmem import share
    from optmem.integrations.git import install_merge_driver

    git = _Git(_top(vault), layout.writer(vault.root))
    current = git.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.strip()
    if not current:
        raise UsageError("the vault's repository has no branch checked out (a detached HEAD); check one out first")
    up = git.run("rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}", check=False)
    upstream = up.stdout.strip() if up.returncode == 0 else ""
    up_remote, _, up_branch = upstream.partition("/")
    remote = remote or up_remote or "origin"
    branch = branch or up_branch or current
    if not git.ok("remote", "get-url", remote):
        raise UsageError(
            f"the vault's repository has no remote {quote(remote)}; add one (`git -C {vault.root} remote add "
            f"{remote} URL`) or name another with --remote"
        )
    segmented_now = False
    if not vault.segmented:
        say("splitting the log into one file per writer (optmem segment)")
        share.segment(vault)
        segmented_now = True
    report = SyncReport(remote, branch, layout.writer(vault.root), segmented_now=segmented_now)
    install_merge_driver(vault)
    with vault.lock():  # a merge rewrites hot files: no add or replace meanwhile
        resumed = _resume(git, vault, say)
        _finish_merge(git, report, say)
    was = resumed.get("head") if resumed else None  # the interrupted sync's merge: done, or to do again
    report.merged = isinstance(was, str) and git.head() != was
    with vault.lock():  # (a clone or a pull may have brought such files too)
        _untrack_local(git, vault, {}, report, say)
    resumed_drop = False
    if report.merged:  # an interrupted sync's merge, done: what it brought back of a purge goes
        with vault.lock():
            resumed_drop = _drop_purged(git, vault, str(was), report, say)
    with vault.lock():  # merged since the last sync outside a sync (`git pull` by hand): what it brought back goes
        dropped = _drop_purged(git, vault, _last_synced(git, vault), report, say)
    conflicts_before = set(resumed["conflicts"]) if resumed else _conflict_names(vault)
    from optmem import follow, memory

    follow.follow_hot(vault)  # this clone's own edits of its hot files, journalled as its own before the merge
    report.committed = _commit(git, vault, say) or dropped or resumed_drop
    # the hot files' entries before the merge — an interrupted sync's, taken before its merge
    # began: what that merge put in (a merge stopped on optmem.toml, finished by hand) came in too
    noted = resumed.get("hot") if resumed else None
    hot_before = {f: set(ids) for f, ids in noted.items()} if noted is not None else memory.entries_now(vault)
    noted_handoffs = resumed.get("handoffs") if resumed else None
    handoffs_before = set(noted_handoffs) if noted_handoffs is not None else _handoff_ids(vault)
    before = dict(resumed["before"]) if resumed else _sizes(vault)
    note = _Note(vault, resumed, before, conflicts_before, hot_before, handoffs_before)
    remote_ref = f"refs/remotes/{remote}/{branch}"
    for attempt in range(PUSH_TRIES):
        say(f"fetching {remote}/{branch}")
        fetched = git.run("fetch", "--quiet", remote, branch, check=False)
        exists = fetched.returncode == 0
        if not exists and not _missing_branch(git, remote, branch):
            raise SyncFailed(
                f"git fetch {remote} {branch} failed: {fetched.stderr.strip()[:600]}; what is stored is "
                "unchanged — run `optmem sync` again when the remote can be reached"
            )
        if exists:  # (what this fetch ended on came from elsewhere: its marks may be believed)
            git.fetched(git.out("rev-parse", remote_ref))
        if exists and git.head() != git.out("rev-parse", remote_ref):
            if not git.head() or not git.ok("merge-base", "--is-ancestor", remote_ref, "HEAD"):
                say(f"merging {remote}/{branch}")
                with vault.lock():  # a merge rewrites hot files: no add or replace meanwhile
                    was = git.head()
                    kept = _keep_local(git, vault, remote_ref)
                    _merge(git, remote_ref, report, note)
                    _untrack_local(git, vault, kept, report, say)  # (before any purge mark is read)
                    _drop_purged(git, vault, was, report, say)
                report.merged = True
        if exists and git.head() == git.out("rev-parse", remote_ref):
            break  # nothing of ours the remote lacks
        if not git.head():
            break  # nothing here, nothing there: an empty vault in an empty repository
        report.records_out = _records_out(git, vault, remote_ref if exists else None)
        _refuse_secrets(git, vault, "log", "-p", "--format=%x00", f"{remote_ref}..HEAD" if exists else "HEAD")
        say(f"pushing to {remote}/{branch}")
        pushed = git.run("push", "--quiet", remote, f"HEAD:refs/heads/{branch}", check=False)
        if pushed.returncode == 0:
            report.pushed = True
            git.run("update-ref", remote_ref, "HEAD", check=False)
            break
        if attempt == PUSH_TRIES - 1 or not _moved(git, remote, branch, remote_ref):
            raise SyncFailed(
                f"git push {remote} {branch} was refused: {pushed.stderr.strip()[:600]}; this clone's records "
                "are committed here and go out with the next `optmem sync`"
            )
        report.retries += 1
        say(f"the remote moved meanwhile; merging again (try {attempt + 2} of {PUSH_TRIES})")
    _after_merge(vault, git, note.spans, before, report, conflicts_before, say)
    if report.merged:  # entries another clone put in the hot files: named, and journalled as that clone's
        report.hot_in = memory.follow_merge(vault, hot_before)
        report.handoffs_beside = _handoffs_beside(vault, git, handoffs_before)
    fsio.atomic_write(vault.cache(SYNCED), git.head(), within=vault.root)
    note.done()  # reported: the next sync has nothing to finish
    report.noop = not (report.committed or report.merged or report.pushed or segmented_now)
    return report


def _handoff_ids(vault: Vault) -> set[str]:
    """The ids of the handoff records the log holds (not forgotten)."""
    from optmem.index import open_index

    with open_index(vault) as idx:
        return {r.id for r in idx.handoffs(None, None)}


def _handoffs_beside(vault: Vault, git: _Git, before: set[str]) -> list[dict[str, Any]]:
    """The handoffs a merge put out of view without their open items being seen: of each project
    and domain a handoff came in for, the latest (what `handoff read` and `context` show) and the
    handoffs written beside it, which its writer had not seen when it wrote it (`_hidden`: from
    the `after` it kept, as `handoff read` tells them; for an older optmem's handoff, from git
    history) — each is named, with its open items, by the sync that brought them together. Two
    machines that each wrote a handoff for one project before syncing: the later hides the
    other's "next" from session start, so the sync says it. Nothing is written. Its rows
    may come from another clone: a project or domain that is no name (`NAME_RE`, as `handoff
    list` reads them) is passed over, and what is named is what every surface shows (`display`)."""
    from optmem.index import open_index
    from optmem.names import NAME_RE
    from optmem.view import display

    out: list[dict[str, Any]] = []
    try:
        with open_index(vault) as idx:
            rows = idx.handoffs(None, None)  # (newest first)
            came = {r.id for r in rows} - before
            named = {(r.project, r.domain) for r in rows if r.id in came and r.project and NAME_RE.fullmatch(r.project)}
            for project, domain in sorted(x for x in named if NAME_RE.fullmatch(x[1])):
                of = [r for r in rows if r.project == project and r.domain == domain]
                shown = of[0]
                for said in _hidden(vault, idx, git, of, came):
                    if said.id and said.id not in came and shown.id not in came:
                        continue  # (nothing new between them: said by the sync that brought it)
                    out.append(
                        {
                            "project": display(project),
                            "domain": display(domain),
                            "id": display(said.id or ""),
                            "time": said.time,
                            "next": said.next,
                            "blocked": said.blocked,
                            "shown": shown.id,
                        }
                    )
    except OptmemError:
        return out  # (the report says what it could; the handoffs are all in the log)
    return out


def _hidden(vault: Vault, idx: Any, git: _Git, of: list[Any], came: set[str]) -> list[Any]:
    """The handoffs (`Handoff`, as shown) of one project and domain written beside the latest,
    `of[0]` (`of`: newest first): what `handoff read` and `context` show beside it
    (`handoff.beside`, from the `after` its writer kept) — or, for a latest an older optmem wrote
    without `after`, each other clone's latest that git history says its writer had not seen (the
    commit that brought it lacked it)."""
    from optmem import handoff
    from optmem.handoff_file import from_row

    shown = of[0]
    if idx.record(shown).extra.get("after") is not None:  # its writer said what it had seen
        return handoff.beside(vault, from_row(idx, shown))
    by_writer: dict[str, Any] = {}  # each clone's latest handoff of the project and domain
    for r in of:
        by_writer.setdefault(_writer_of(idx.file_of(r)), r)
    return [
        from_row(idx, h).shown()
        for writer, h in by_writer.items()
        if h.id != shown.id
        and writer != _writer_of(idx.file_of(shown))
        and (shown.id not in came or _saw(git, idx.file_of(shown), shown.id, h.id) is False)
    ]


def _writer_of(file: str) -> str:
    """The clone a log file belongs to: its folder under `log/` (LOG.jsonl: the shared log)."""
    parts = file.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == layout.SEGMENTS else file


def _saw(git: _Git, file: str, shown: str, other: str) -> bool | None:
    """Whether the commit that brought record `shown` into `file` already held record `other`
    (its writer had it when it wrote `shown`); None when git cannot tell."""
    first = git.run("log", "--format=%H", "--reverse", "-S", shown, "HEAD", "--", file, check=False).stdout.split()
    if not first:
        return None
    found = git.run("grep", "-q", "-F", other, first[0], "--", "LOG.jsonl", layout.SEGMENTS, check=False)
    return found.returncode == 0


JOURNAL = "sync-merge.json"  # in .cache/: a merge begun, for the sync after an interrupted one
SYNCED = "sync-head"  # in .cache/: the commit the last sync ended on


def _last_synced(git: _Git, vault: Vault) -> str:
    """The commit the last sync ended on, when HEAD still descends from it; else "" (none noted —
    the cache deleted, a first sync —, or history rewritten): everything is looked at."""
    path = vault.cache_dir / SYNCED
    try:
        head = (fsio.read_text(path, within=vault.root) or "").strip()
    except OptmemError:
        return ""
    if len(head) < 40 or not all(c in "0123456789abcdef" for c in head):
        return ""
    return head if git.ok("merge-base", "--is-ancestor", head, "HEAD") else ""


class _Note:
    """The note a sync keeps while it merges (`.cache/sync-merge.json`): where it began (the
    log files' sizes, the open conflicts), the commits it merges, and git's process id — what
    the next sync needs to finish an interrupted one and report what came in."""

    def __init__(
        self,
        vault: Vault,
        resumed: dict[str, Any] | None,
        before: dict[str, int],
        conflicts: set[str],
        hot: dict[str, set[str]],
        handoffs: set[str],
    ):
        self.path = vault.cache(JOURNAL)
        self.vault = vault
        self.data: dict[str, Any] = {
            "before": before,
            "conflicts": sorted(conflicts),
            "hot": {f: sorted(ids) for f, ids in hot.items()},  # (`memory.entries_now` before the merge)
            "handoffs": sorted(handoffs),  # (`_handoff_ids` before the merge)
        }
        # the commits merged, each with its merge base: what they changed in this clone's own
        # folder came in — whatever became of the merge (done, half-written by a git killed with
        # the sync and committed as this clone's, or done again)
        self.data["spans"] = list(resumed["spans"]) if resumed else []
        self.kept = resumed is not None  # an interrupted sync's note stays until this one reports

    @property
    def spans(self) -> list[tuple[str, str]]:
        return [(base, theirs) for base, theirs in self.data["spans"]]

    def merging(self, head: str, theirs: str, pid: int | None = None, base: str | None = None) -> None:
        """A merge of `theirs` into `head` begins (`base`: their merge base, "" for none)."""
        if base is not None and [base, theirs] not in self.data["spans"]:
            self.data["spans"].append([base, theirs])
        self.data.update({"head": head, "theirs": theirs, "pid": pid})
        fsio.atomic_write(self.path, json.dumps(self.data), within=self.vault.root)
        self.kept = True

    def refused(self) -> None:
        """Git refused to start the merge (it changed nothing): nothing to finish or undo."""
        self.data["spans"] = [s for s in self.data["spans"] if s[1] != self.data.get("theirs")]
        for name in ("head", "theirs", "pid"):
            self.data.pop(name, None)
        fsio.atomic_write(self.path, json.dumps(self.data), within=self.vault.root)

    def done(self) -> None:
        if self.kept:
            fsio.remove_file(self.path)


def _read_note(vault: Vault) -> dict[str, Any] | None:
    path = vault.cache_dir / JOURNAL
    try:
        raw = fsio.read_text(path, within=vault.root) if path.is_file() else None
        data = json.loads(raw) if raw else None
    except (OptmemError, ValueError):
        return None  # unreadable: this sync counts from where it begins
    if not isinstance(data, dict) or not isinstance(data.get("before"), dict):
        return None
    data["conflicts"] = [c for c in data.get("conflicts") or [] if isinstance(c, str)]
    data["before"] = {k: v for k, v in data["before"].items() if isinstance(v, int)}
    handoffs = data.get("handoffs")
    data["handoffs"] = [h for h in handoffs if isinstance(h, str)] if isinstance(handoffs, list) else None
    hot = data.get("hot")  # (none in a note an older optmem wrote: this sync looks from where it begins)
    data["hot"] = (
        {f: [e for e in ids if isinstance(e, str)] for f, ids in hot.items() if isinstance(ids, list)}
        if isinstance(hot, dict)
        else None
    )
    spans = data.get("spans")
    spans = spans if isinstance(spans, list) else []
    data["spans"] = [s for s in spans if isinstance(s, list) and len(s) == 2 and all(isinstance(c, str) for c in s)]
    return data


def _resume(git: _Git, vault: Vault, say: Say) -> dict[str, Any] | None:
    """The note of a sync interrupted while it merged (None when there is none): a git merge it
    left running is waited for; one git did not live to finish (no MERGE_HEAD, HEAD where the
    merge began, git's index lock left behind: git holds it from before it merges until the
    index is written) is undone, to be done again by this sync — the lock, which no process
    holds, removed, and every file the merge may have written put back as HEAD has it (this
    writer's own log files aside: this clone may have appended to them since, and a merge writes
    them only when another clone wrote into them)."""
    import time

    data = _read_note(vault)
    if data is None:
        return None
    pid = data.get("pid")
    if isinstance(pid, int) and gitstate.running(pid):
        say("waiting for the git merge an interrupted sync left running")
        end = time.monotonic() + SYNC_WAIT
        while gitstate.running(pid):
            if time.monotonic() > end:
                raise SyncFailed(
                    f"the git merge an interrupted sync started (process {pid}) still runs after "
                    f"{SYNC_WAIT:.0f} s; let it finish (or stop it), then run `optmem sync` again; nothing was changed"
                )
            time.sleep(0.05)
    git_dir = Path(git.out("rev-parse", "--absolute-git-dir"))
    head, theirs = data.get("head"), data.get("theirs")
    if (git_dir / "MERGE_HEAD").exists() or not isinstance(theirs, str) or git.head() != (head or ""):
        return data  # git finished it (committed, or stopped on files `_finish_merge` settles)
    if not (git_dir / "index.lock").exists():
        return data  # git never began writing (killed before it ran): merged again below, as it is
    say("redoing the merge an interrupted sync left half-done")
    (git_dir / "index.lock").unlink()  # its owner, the merge, is gone
    own = f"{layout.SEGMENTS}/{layout.writer(vault.root)}/"
    out = git.run("diff", "--name-only", "-z", "--no-renames", head or theirs, theirs, check=False).stdout
    for path in (p for p in out.split("\0") if p and not p.startswith(own)):
        if head and git.ok("cat-file", "-e", f"{head}:{path}"):
            git.run("checkout", head, "--", path)
        else:  # new on their side: what git wrote of it goes
            git.run("rm", "--quiet", "--cached", "--ignore-unmatch", "--", path)
            (git.root / path).unlink(missing_ok=True)
    return data


def _missing_branch(git: _Git, remote: str, branch: str) -> bool:
    """Whether the remote lacks the branch (the first push makes it): `ls-remote --exit-code`
    says so by its exit code (2), in whatever language git speaks."""
    res = git.run("ls-remote", "--exit-code", "--heads", remote, f"refs/heads/{branch}", check=False)
    return res.returncode == 2


def _moved(git: _Git, remote: str, branch: str, remote_ref: str) -> bool:
    """Whether a refused push was refused because the remote has commits this clone lacks (else:
    a real failure): fetched again, the remote's branch is no ancestor of HEAD."""
    if git.run("fetch", "--quiet", remote, branch, check=False).returncode != 0:
        return False  # the remote cannot be read: the refusal stands as git gave it
    return not git.ok("merge-base", "--is-ancestor", remote_ref, "HEAD")


def _finish_merge(git: _Git, report: SyncReport, say: Say) -> None:
    """A merge an interrupted sync (or a person) left: derived files take ours; committed when
    nothing else is unmerged, else refused, naming the files."""
    git_dir = Path(git.out("rev-parse", "--absolute-git-dir"))
    if not (git_dir / "MERGE_HEAD").exists():
        return
    say("finishing the merge an interrupted sync left")
    _settle_derived(git, report)
    _conclude(git)


def _unmerged(git: _Git) -> list[str]:
    out = git.run("diff", "--name-only", "--diff-filter=U", "-z", check=False).stdout
    return [p for p in out.split("\0") if p]


def _settle_derived(git: _Git, report: SyncReport) -> None:
    """Derived files (the summary tree, handoff notes) both sides changed: ours is kept (a
    deleted one stays deleted) — both are rebuilt from the log, where the other side's records are."""
    from fnmatch import fnmatch

    for path in _unmerged(git):
        if _remerge_hot(git, path):
            report.hot_merged.append(path)
            continue
        if path in LINE_SETS:  # both sides' lines, each once
            lines = [git.run("show", f":{stage}:{path}", check=False).stdout for stage in (2, 3)]
            merged = list(dict.fromkeys(line for text in lines for line in text.splitlines() if line.strip()))
            target = git.root / path
            try:  # (the file's mode kept: a .gitignore others read)
                mode = target.stat().st_mode & 0o777
            except OSError:
                mode = 0o644
            fsio.atomic_write(target, "".join(f"{line}\n" for line in merged), mode=mode, within=git.root)
            git.run("add", "--", path)
            continue
        if not any(path.startswith(p) if p.endswith("/") else fnmatch(path, p) for p in DERIVED):
            continue
        if git.ok("checkout", "--ours", "--", path):
            git.run("add", "--", path)
        else:
            git.run("rm", "--quiet", "--cached", "--ignore-unmatch", "--", path)
            Path(git.root / path).unlink(missing_ok=True)
        report.kept_ours.append(path)


def _remerge_hot(git: _Git, path: str) -> bool:
    """A hot file git holds unmerged, as its own line merge left it (the fallback of the merge
    driver when that cannot run: a venv moved, `git pull` in a clone without it — conflict
    markers, or our side's file where a driver failed): merged again
    from git's three versions entry by entry (`git.merge_hot`: an entry edited two ways keeps
    both edits, each an entry, and `conflicts` names them) and added. Only while every entry the
    working file holds, the marker lines read as separators, is one of those versions' — a
    person's edit in it (an entry typed between the markers) is theirs to finish: left, and the
    merge stops as before. Deleting only the marker lines would join two edits into one entry. A
    file with no marker left that is not our side's is a merge a person is finishing (one side's
    version of an entry deleted, `git add` not yet run): left too. The base's lines diff3/zdiff3
    add (`|||||||` … `=======`) are no entry (`memory.unmarked`)."""
    from fnmatch import fnmatch

    from optmem import memory
    from optmem.integrations.git import HOT_ATTRIBUTES, merge_hot

    if not any(fnmatch(path, p) for p in HOT_ATTRIBUTES) or path.count("/") > 2:
        return False
    target = git.root / path
    try:
        raw = fsio.read_text(target, within=git.root)
    except OptmemError:
        return False
    if raw is None:
        return False
    stages = [git.run("show", f":{n}:{path}", check=False) for n in (1, 2, 3)]
    texts = [res.stdout.replace("\r\n", "\n") if res.returncode == 0 else "" for res in stages]
    raw = raw.replace("\r\n", "\n")
    # markers still in it, or our side's file as it was (a driver that failed): a file without
    # markers that differs from ours is a merge a person is finishing (`git add` not yet run)
    if memory.MARKER_LINE.search(raw) is None and raw != texts[1]:
        return False
    known = {e for text in texts for e in memory.parse(text)[1]}
    if not set(memory.parse(memory.unmarked(raw))[1]) <= known:
        return False
    mode = target.stat().st_mode & 0o777
    fsio.atomic_write(target, merge_hot(*texts), mode=mode, within=git.root)
    git.run("add", "--", path)
    return True


def _conclude(git: _Git) -> None:
    left = _unmerged(git)
    if left:
        raise MergeConflict(
            f"the merge stopped on {', '.join(left[:10])}: merge {'them' if len(left) > 1 else 'it'} by hand "
            f"in {git.root} (`git status` lists them), commit, then run `optmem sync` again; the records of "
            "both sides are in the log",
            files=left,
        )
    git.run("commit", "--quiet", "--no-edit", "--no-verify")


def _merge(git: _Git, ref: str, report: SyncReport, note: _Note) -> None:
    # noted first: a sync killed from here on is finished (or done again) by the next one
    head, theirs = git.head(), git.out("rev-parse", ref)
    base = git.run("merge-base", head, theirs, check=False).stdout.strip() if head else ""
    note.merging(head, theirs, base=base)
    # two clones that each began the vault before their first sync have no common commit: their
    # files still merge (the log by file, hot files by entry)
    res = git.run(
        "merge",
        "--quiet",
        "--no-edit",
        "--no-verify",
        "--allow-unrelated-histories",
        ref,
        check=False,
        started=lambda pid: note.merging(head, theirs, pid),
    )
    if res.returncode == 0:
        return
    git_dir = Path(git.out("rev-parse", "--absolute-git-dir"))
    if res.returncode < 0:  # git was killed (out of memory, …): the next sync does the merge again
        raise SyncFailed(
            f"git merge {ref} was stopped by signal {-res.returncode}; run `optmem sync` again: it puts back "
            "what the merge had written and merges again"
        )
    if not (git_dir / "MERGE_HEAD").exists():  # not a conflict: git refused to start (dirty files, …)
        note.refused()
        raise SyncFailed(f"git merge {ref} failed: {(res.stderr or res.stdout).strip()[:600]}; nothing was merged")
    _settle_derived(git, report)
    _conclude(git)


LOCAL = (".cache", ".clone")  # this clone's own folders (each ignores all it holds): never in a commit


def _keep_local(git: _Git, vault: Vault, ref: str) -> dict[str, bytes | None]:
    """Before merging `ref`: this clone's own bytes at each path under `LOCAL` that `ref` tracks
    (None: no such file here) — git's merge writes over an ignored file, and `_untrack_local`
    puts it back."""
    out = git.run("ls-tree", "-r", "-z", "--name-only", ref, "--", *LOCAL, check=False).stdout
    kept: dict[str, bytes | None] = {}
    for path in (p for p in out.split("\0") if p):
        try:
            kept[path] = fsio.read_bytes(vault.root / path, within=vault.root, limit=64 << 20)
        except OptmemError:
            kept[path] = None
    return kept


def _untrack_local(git: _Git, vault: Vault, kept: dict[str, bytes | None], report: SyncReport, say: Say) -> None:
    """Files under `.cache/` or `.clone/` that git tracks (a commit made by hand, `git add -f`, a
    crafted commit): no clone's notes travel — another clone's `.cache/purged` would make this
    one purge the records it names. Each is taken out of git (the removal committed, so the push
    takes it out for every clone) and this clone's own file put back as it was before the merge
    (`kept`), or removed when there was none — what git wrote there is never read nor moved. The
    clone's own notes are in its git directory (`Vault.own_dir`), where no pull writes; those a
    pull wrote over while they were still in `.clone/` (`Vault.own_overwritten`: found when this
    process moved them, or named by the `own` note of the command that did) are said to be lost."""
    out = git.run("ls-files", "-z", "--", *LOCAL, check=False).stdout
    paths = sorted(p for p in out.split("\0") if p)
    if not paths:
        return
    git.run("rm", "--quiet", "--cached", "-r", "--ignore-unmatch", "--", *paths)
    from optmem import lost as lost_notes

    # written over: found by this process's move, or by an earlier command's (its `own` note) —
    # when no commit since that move took the file out of git (a later commit's file overwrote nothing)
    over = set(vault.own_overwritten)
    for item in lost_notes.notes(vault) if any(p.startswith(".clone/") for p in paths) else []:
        head = item.get("head")
        if item.get("what") != "own" or not isinstance(item.get("files"), list) or not isinstance(head, str):
            continue
        if head and not all(c in "0123456789abcdef" for c in head):
            continue  # (a commit's name, nothing else, goes to git)
        for path in {str(f) for f in item["files"]} & set(paths) - over:
            since = git.run("log", "--format=%H", "--diff-filter=D", f"{head}..HEAD", "--", path, check=False)
            if since.returncode == 0 and not since.stdout.strip():
                over.add(path)
    lost = []
    for path in paths:
        target = vault.root / path
        was = kept.get(path)
        if was is None:
            lost += [path] if path in over else []
            fsio.remove_file(target)
        else:
            with fsio.staged(target, was, within=vault.root):
                pass
    report.untracked_local += [p for p in paths if p not in report.untracked_local]
    say(
        f"git tracked {len(paths)} file(s) of a clone's own folders ({', '.join(paths[:5])}): a commit carried them "
        "(made by hand or crafted), and no clone's notes travel — taken out of git, "
        + (
            f"but a merge made outside optmem sync (git pull) had already written over {', '.join(lost)}: what this "
            "clone kept there, if anything, is gone (records it purged may come back — purge them again; "
            "`optmem doctor` tells what else)"
            if lost
            else "this clone's own kept (its notes are in its git directory, where no pull writes)"
        )
    )
    git.run("commit", "--quiet", "--no-verify", "-m", f"optmem sync: {report.writer}: untrack {', '.join(LOCAL)}")


def _drop_purged(git: _Git, vault: Vault, was: str, report: SyncReport, say: Say) -> bool:
    """What the commits since `was` brought back of a purge (a merge by this sync, or one made by
    hand since the last), dropped as purge drops it, and the drop committed, so the push carries it
    out: records this clone purged (another clone still holds them, and git's union merge of its
    file kept the line this clone had dropped), and tree nodes and HANDOFF.md files quoting them;
    and this clone's own tree nodes and HANDOFF.md files quoting a record another clone purged
    (the merge took its line out, the purge's mark in its commit says so: `_purged_since`).
    Whether anything was."""
    from optmem import lost, purge

    head = git.head()
    if not head or was == head:
        return False
    hashes = lost.purged_hashes(vault)
    elsewhere = _purged_since(git, was, hashes) if was else set()
    if not hashes and not elsewhere:
        return False  # (a clone that never purged, and no purge came in: nothing more is read)
    since = was or git.out("hash-object", "-t", "tree", os.devnull)
    # the log's files (the shared older LOG.jsonl too) and the summary tree, which other clones commit
    out = git.run("diff", "--name-only", "-z", "--no-renames", since, "HEAD", "--", layout.SEGMENTS, layout.LOG, "tree")
    again = purge.drop_again(vault, {p for p in out.stdout.split("\0") if p}, elsewhere)
    if not (again.records or again.nodes or again.handoffs):
        return False
    report.purged_again += len(again.records)
    report.nodes_dropped += again.nodes
    report.handoffs_dropped += again.handoffs
    what = [f"{len(again.records)} record(s) this clone purged (another clone still held them)"] * bool(again.records)
    what += [f"{len(again.nodes)} summary node(s) quoting a purged record"] if again.nodes else []
    what += [f"{', '.join(again.handoffs)} carrying a purged handoff"] if again.handoffs else []
    say(
        f"dropped as purge drops them: {'; '.join(what)}"
        + (" — the previous handoff is shown instead" if again.handoffs else "")
        + ("; `optmem compact` makes the nodes again from what is left" if again.nodes else "")
    )
    return _commit(git, vault, say)


def _purged_since(git: _Git, was: str, hashes: set[str]) -> set[str]:
    """The ids (upper case) of the records another clone purged whose lines the commits since
    `was` took out of this clone's log: removed since, each by a commit that marks it as purged
    (`_marked`; `hashes`: this clone's own purges, not another's)."""
    from optmem import lost

    marked = _marked(git, was, "HEAD", _removed_ids(git, was, "HEAD"))
    return {rid for rid in marked if lost.id_hash(rid) not in hashes}


PURGED_MARK = "Optmem-Purged"  # a commit trailer: the one-way hash of an id a purge took out of the log


def _commit(git: _Git, vault: Vault, say: Say) -> bool:
    """Commit the vault's changes (the repository is the vault's own); whether there were any.
    Lines of records this clone purged that the commit takes out of the log are marked, one
    trailer each (`PURGED_MARK`: the id's one-way hash, as the `purged` list keeps it), so other
    clones can tell a purge from a line lost to an outside edit (`_left_elsewhere`)."""
    from optmem import lost

    git.run("add", "--all", "--", ".")
    if git.ok("diff", "--cached", "--quiet"):
        return False
    try:
        _refuse_secrets(git, vault, "diff", "--cached")
    except UnsafeContent:
        git.run("reset", "--quiet", check=False)  # (nothing staged is left for a commit by hand)
        raise
    say("committing this clone's changes")
    message = ["-m", f"optmem sync: {layout.writer(vault.root)}"]
    purged = lost.purged_hashes(vault)
    if purged:
        out = _removed_ids(git, "--cached")
        marks = sorted(h for h in map(lost.id_hash, out) if h in purged)
        if marks:
            message += ["-m", "\n".join(f"{PURGED_MARK}: {h}" for h in marks)]
    git.run("commit", "--quiet", "--no-verify", *message)
    return True


def _refuse_secrets(git: _Git, vault: Vault, *command: str) -> None:
    """Refuse to commit or push a line that holds a secret (`UnsafeContent`, naming the file, the
    line, the rule, and the record's id when it has one): a line `command` adds (`diff --cached`:
    what this clone is about to commit; `log -p` of the commits the remote lacks: each of them, as
    a push sends every commit, not only their sum). The write gate refuses secrets, so such a line
    was typed or pasted by hand (or written with --allow-unsafe); once pushed, only `purge` and a
    rewrite of the remote's history take it out. A log line the gate passed (its verdict kept:
    `verdicts.clean`) is not scanned again; every other added line is — each string a JSON line
    carries (its escapes read), any other line as it stands. The secret is never quoted."""
    from optmem import verdicts
    from optmem.safety import scan

    committed = command[0] == "log"
    options = ("-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames")
    diff = gitstate.run(git.root, command[0], *options, *command[1:], text=False, timeout=300).stdout
    added: list[tuple[str, int, bytes]] = []
    name, n, header = "", 0, False
    for line in diff.split(b"\n"):
        if line.startswith(b"diff --git "):
            name, header = "", True  # (a file's header lines, up to its first hunk)
        elif header and line.startswith(b"+++ "):
            name = line[4:].decode("utf-8", "replace").removeprefix("b/") if line[4:] != b"/dev/null" else ""
        elif line.startswith(b"@@"):
            header = False
            got = line.split(b" +", 1)[1].split(b",", 1)[0].split(b" ", 1)[0] if b" +" in line else b""
            n = int(got) if got.isdigit() else 0
        elif not header and line.startswith(b"+") and name:
            added.append((name, n, line[1:]))
            n += 1
    logs = [raw for name, _, raw in added if name.endswith(".jsonl")]
    passed = {
        part[i] for part in (logs[k : k + 5000] for k in range(0, len(logs), 5000)) for i in verdicts.clean(vault, part)
    }
    for name, n, raw in added:
        if not raw.strip() or raw in passed or raw in git.cleared:
            continue
        rid, values = None, [raw.decode("utf-8", "replace")]
        if name.endswith(".jsonl"):
            try:
                obj = json.loads(raw)
            except ValueError:
                obj = None
            if obj is not None:
                try:  # (a record: each string it carries, as the write gate judges them — `record.strings`)
                    values = [v for _, v in strings(parse_line(raw, n, READ_BYTES))]
                except BadLine:
                    values = list(_json_strings(obj))
                rid = obj.get("id") if isinstance(obj, dict) and isinstance(obj.get("id"), str) else None
        rule = next((r for v in values if (r := scan.secret(v))), None)
        if rule is None:
            git.cleared.add(raw)  # (the push's scan of the commit just made reads it again)
            continue
        if rid:
            fix = f"`optmem purge {rid} --yes` takes the record out"
        elif _hot_name(name):
            fix = "take the entry out (edit the file, or `optmem remove`)"
        else:
            fix = "take the line out of the file (it was typed by hand)"
        where = "a commit of this clone the remote lacks holds" if committed else "the change to commit holds"
        done = (
            "nothing was pushed; a commit keeps what it held, so take it out of this clone's unpushed commits too "
            "(`git rebase -i`, or `git reset --soft` to the remote's branch, then `optmem sync`)"
            if committed
            else "nothing was committed or pushed"
        )
        raise UnsafeContent(
            f"refused: {where} a secret in {name} line {n} (the security rule {rule!r}); {fix}, then run "
            f"`optmem sync` again — {done}",
            rule=rule,
            kind="secret",
            file=name,
            line=n,
            **({"id": rid} if rid else {}),
        )


def _hot_name(name: str) -> bool:
    from optmem.vault import hot_target

    return hot_target(name) is not None


def _json_strings(value: Any) -> Iterator[str]:
    """Every string inside a parsed JSON value (keys too)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _json_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _json_strings(v)


def _removed_ids(git: _Git, *between: str, paths: tuple[str, ...] = (layout.SEGMENTS, layout.LOG)) -> set[str]:
    """The ids (upper case) of the records whose lines the diff `between` takes out of the log's
    files (a diff's arguments: two commits, or `--cached`; `paths`: of these files only)."""
    diff = gitstate.run(
        git.root,
        *("diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", *between),
        *("--", *paths),
        text=False,
        timeout=300,
    )
    return _removed_in({"": diff.stdout})


def _sizes(vault: Vault) -> dict[str, int]:
    return {name: path.stat().st_size for name, path in vault.segments() if path.is_file()}


def _count(raw: bytes) -> int:
    return sum(1 for line in raw.splitlines() if line.strip())


def _records_out(git: _Git, vault: Vault, remote_ref: str | None) -> int:
    """Records in the log's files that the remote's branch lacks (this writer's, and a LOG.jsonl
    from before the split)."""
    total = 0
    for name, path in vault.segments():
        if not path.is_file():
            continue
        with open(path, "rb") as fh:
            here = sum(1 for raw, _ in fsio.lines(fh) if raw.strip())
        there = 0
        if remote_ref is not None:
            shown = gitstate.run(git.root, "show", f"{remote_ref}:{name}", text=False, timeout=120)
            there = _count(shown.stdout) if shown.returncode == 0 else 0
        total += max(0, here - there)
    return total


def _after_merge(
    vault: Vault,
    git: _Git,
    spans: list[tuple[str, str]],
    before: dict[str, int],
    report: SyncReport,
    conflicts_before: set[str],
    say: Say,
) -> None:
    """What came in: counted and scanned; the index caught up; new conflicts and hot files over
    their budget named."""
    from optmem import memory
    from optmem.index import catch_up, open_index

    own = f"{layout.SEGMENTS}/{layout.writer(vault.root)}/"
    limit = READ_BYTES  # (what is read; the vault's record_bytes bounds writes)

    def came(name: str, n: int, raw: bytes) -> None:
        body = raw.strip()
        if not body:
            return
        report.records_in += 1
        try:
            rec = parse_line(body, n, limit)
        except BadLine as exc:
            if exc.field:  # over the bound: read by no one, named here (doctor names it too)
                report.flagged.append({"id": None, "file": name, "line": n, "field": exc.field, "rule": exc.code})
            return  # (an unparseable line: doctor reports it; the index skips it)
        flagged = flagged_field(rec)
        if flagged:
            report.flagged.append({"id": rec.id, "file": name, "field": flagged[0], "rule": flagged[1]})
        if rec.tier == "redline" and rec.kind not in BOOKKEEPING:
            report.redlines_in.append({"id": rec.id, "file": name})
        if rec.kind == RELEASE:  # another clone's release: told, and the record stays held here
            report.releases_in.append({"id": rec.id, "ref": rec.ref, "file": name, "origin": rec.origin})

    logs = {name for name, path in vault.segments() if path.is_file()}
    explained = _purge_rewrites(git, spans, own, logs)
    for name, n, raw in _added(git, spans, own, logs):
        if (name, raw) not in explained:  # (a kept line a purge there rewrote: no one typed it)
            came(name, n, raw)
    report.into_own_folder = report.records_in

    if report.into_own_folder:
        say(
            f"{report.into_own_folder} record(s) came into this clone's own folder {own}: optmem writes "
            "there only here — typed or forged on another clone, or another clone writes as this writer"
        )
    shrunk = _lost_lines(git, spans)
    for name, path in vault.segments():
        if name.startswith(own) or not path.is_file():
            continue
        start = before.get(name, 0)
        if name in shrunk or path.stat().st_size < start:
            # lines taken out elsewhere (a purge, an edit): the size before the merge is no place in
            # the file any more (read from there, a line would be read torn) — what was added, from git
            rewritten = _purge_rewrites(git, spans, name, {name})
            for _, n, raw in _added(git, spans, name, {name}):
                if (name, raw) not in rewritten:  # (a kept line a purge rewrote came in before)
                    came(name, n, raw)
            continue
        with open(path, "rb") as fh:
            lines = 0  # before `start` (read in pieces: a log may be large)
            while fh.tell() < start and (piece := fh.read(min(1 << 20, start - fh.tell()))):
                lines += piece.count(b"\n")
            for n, (raw, _) in enumerate(fsio.lines(fh), lines + 1):  # (a line past the bound never held whole)
                came(name, n, raw)
    if report.releases_in:
        say(
            f"{len(report.releases_in)} release(s) from quarantine came in from another clone "
            f"({short_ids([str(r['ref']) for r in report.releases_in])}): a release "
            "acts only on the clone where a person made it — what it names stays held here until a person here "
            "runs `optmem release`"
        )
    if report.merged or report.records_in:
        say("catching the index up")
    purged, vault.removed_elsewhere, mine = _left_elsewhere(git, spans, own)
    vault.purged_elsewhere = set(purged)
    vault.purge_commits = purged
    idx = open_index(vault)  # (a rebuild, if the merge took lines out, outside the lock)
    with vault.lock():  # a writer: what the index took in is kept in this clone's `held` note
        catch_up(idx).close()
    report.purged_elsewhere = len(vault.left_with_purge)
    report.removed_elsewhere = len(vault.left_elsewhere)
    if report.purged_elsewhere:
        ours = [r for r in vault.left_with_purge if r.upper() in mine]
        say(
            f"{report.purged_elsewhere} record(s) purged by another clone left this clone's log with the merge "
            f"({short_ids(vault.left_with_purge)}): a purge spreads to every clone that syncs"
            + (f" — {len(ours)} of them written on this clone ({short_ids(ours)})" if ours else "")
            + "; the purge's mark is its committer's word: `optmem doctor` names the commit of each (git keeps "
            "the text before it)"
        )
    # (those taken out with no purge's mark: `lost.left_the_log` says so, as a loss to restore)
    report.new_conflicts = [c for c in _conflicts(vault) if c["name"] not in conflicts_before]
    for target, project in memory.targets(vault):
        try:
            hot = memory.load(vault, target, project)
        except OptmemError:  # reported by doctor
            continue
        u = hot.usage()
        if u.chars > u.limit:
            report.over_budget.append({"file": hot.name, "chars": u.chars, "limit": u.limit})


def _left_elsewhere(git: _Git, spans: list[tuple[str, str]], own: str) -> tuple[dict[str, str], set[str], set[str]]:
    """The ids (upper case) of the records whose lines the merged commits took out of the log's
    files since their merge base: (those a purge marked — id → the commit that took the line out
    and carries the mark: a mark counts only in the commit whose own diff removes that line, so a
    mark forged into another commit, or left in one that removed nothing, marks nothing —, the
    rest: taken out by a purge whose commit lost its mark, or by an outside edit on another clone
    — which, is not known —, and of all of them those taken out of this clone's own folder `own`).
    A mark is its committer's claim, not proof: whoever can push can write one (`lost` keeps a
    note naming the commit, to restore from)."""
    purged: dict[str, str] = {}
    removed: set[str] = set()
    mine: set[str] = set()
    for base, theirs in spans:
        if not base:
            continue
        out = _removed_ids(git, base, theirs)
        if not out:
            continue
        removed |= out
        mine |= _removed_ids(git, base, theirs, paths=(own,))
        for rid, sha in _marked(git, base, theirs, out).items():
            purged.setdefault(rid, sha)
    return purged, removed - set(purged), mine


def _marked(git: _Git, base: str, theirs: str, out: set[str] | None) -> dict[str, str]:
    """Of the ids `out` whose lines the commits `base..theirs` took out (None: any id), those a
    purge marked: id → the commit that took the line out and carries the mark (`PURGED_MARK`) — a
    mark counts only in the commit whose own diff removes that line, so one forged into another
    commit, or left in one that removed nothing, marks nothing — and only in a commit another
    clone made: one a fetch brought (`_Git.from_elsewhere`) and its reflogs do not record as made
    here (`made_here`). Read once for a range of two commits, each marked commit's diff once a
    sync (`_commit_diff`)."""
    if out is not None and not out:
        return {}
    key = (base, theirs)
    got = git._marked.get(key)
    if got is None:
        got = _marked_all(git, base, theirs)
        if all(len(x) == 40 and x.isalnum() for x in key):  # (two commits, not HEAD: the same range later)
            git._marked[key] = got
    return got if out is None else {rid: sha for rid, sha in got.items() if rid in out}


def _marked_all(git: _Git, base: str, theirs: str) -> dict[str, str]:
    from optmem import lost

    marked: dict[str, str] = {}
    prefix = f"{PURGED_MARK}:"
    log = gitstate.run(git.root, "log", "--no-merges", "--format=%H%x00%P%x00%B%x00", f"{base}..{theirs}", timeout=300)
    parts = log.stdout.split("\0")
    for sha, parents, body in zip(parts[0::3], parts[1::3], parts[2::3], strict=False):
        sha = sha.strip()
        marks = {line[len(prefix) :].strip() for line in body.splitlines() if line.startswith(prefix)}
        if not marks or not sha or sha in git.made_here():
            continue
        if sha not in git.from_elsewhere(base):  # (no fetch brought it: made here, whatever the reflog says)
            continue
        parent = (parents.split() or [""])[0]
        for rid in _removed_in(_commit_diff(git, sha, parent)):
            if lost.id_hash(rid) in marks:
                marked.setdefault(rid, sha)
    return marked


def _commit_diff(git: _Git, sha: str, parent: str) -> dict[str, bytes]:
    """The log files a commit changed against its first `parent` ("" for a first commit: the
    empty tree), each with its diff (no context lines, as bytes) — taken once a sync for every
    folder that asks (`_marked`, `_purge_rewrites`): two git processes a marked commit."""
    if sha in git._commit_diffs:
        return git._commit_diffs[sha]
    since = parent or git.empty_tree()
    paths = ("--", layout.SEGMENTS, layout.LOG)
    listed = gitstate.run(git.root, "diff", "--name-only", "-z", "--no-renames", since, sha, *paths)
    names = [p for p in listed.stdout.split("\0") if p]
    got: dict[str, bytes] = {}
    if names:
        diff = gitstate.run(
            git.root,
            *("diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", since, sha, *paths),
            text=False,
            timeout=300,
        ).stdout
        pieces = diff.split(b"\ndiff --git ")  # (one a file, in the order --name-only lists them)
        if len(pieces) == len(names) and diff.startswith(b"diff --git "):
            got = dict(zip(names, pieces, strict=True))
        else:  # (a name git would quote in a header, say: each file's diff on its own)
            for name in names:
                got[name] = gitstate.run(
                    git.root,
                    *("diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", since, sha),
                    *("--", name),
                    text=False,
                    timeout=300,
                ).stdout
    git._commit_diffs[sha] = got
    return got


def _removed_in(diffs: dict[str, bytes]) -> set[str]:
    """The ids (upper case) of the records whose lines the diffs take out."""
    out: set[str] = set()
    for diff in diffs.values():
        for line in diff.split(b"\n"):
            if line.startswith(b"-") and not line.startswith(b"---"):
                try:
                    out.add(parse_line(line[1:], limit=None).id.upper())
                except BadLine:
                    continue
    return out


def _lost_lines(git: _Git, spans: list[tuple[str, str]]) -> set[str]:
    """The log files the merged commits took a line out of since their merge base (whatever they
    added besides)."""
    out: set[str] = set()
    for base, theirs in spans:
        if not base:
            continue
        stat = gitstate.run(
            git.root, "diff", "--numstat", "-z", "--no-renames", base, theirs, "--", layout.SEGMENTS, layout.LOG
        ).stdout
        for entry in (e for e in stat.split("\0") if e):
            parts = entry.split("\t", 2)
            if len(parts) == 3 and parts[1] not in ("0", "-"):
                out.add(parts[2])
    return out


def _purge_rewrites(git: _Git, spans: list[tuple[str, str]], folder: str, names: set[str]) -> set[tuple[str, bytes]]:
    """The lines the merged commits added to the log files `names` under `folder` that are a purge's
    rewrite of a line that was there (`purge.explains`: the same record without the ids a purge
    marked) — a correction of a purged record, say, kept without naming it: (file, line). Each
    commit's rewrites are explained by its own marks alone, those of the ids whose lines its own
    diff takes out (`_marked`): a rewrite in a commit that marks nothing is no purge's, whatever
    a commit beside it marks. Another clone rewrote them, but no one typed or forged them."""
    from optmem import lost, purge

    out: set[tuple[str, bytes]] = set()
    for base, theirs in spans:
        if not base:
            continue
        commits: dict[str, set[str]] = {}
        for rid, sha in _marked(git, base, theirs, None).items():
            commits.setdefault(sha, set()).add(lost.id_hash(rid))
        top = folder.rstrip("/")
        for sha, marks in commits.items():
            changed = git._commit_diffs.get(sha, {})  # (taken by `_marked` just above)
            for name, diff in changed.items():
                if name not in names or not (name == top or name.startswith(top + "/")):
                    continue
                gone: dict[str, bytes] = {}
                added: list[tuple[str, bytes]] = []
                for line in diff.split(b"\n"):
                    if line[:3] in (b"---", b"+++") or line[:1] not in (b"-", b"+"):
                        continue
                    try:
                        rid = parse_line(line[1:], limit=None).id.upper()
                    except BadLine:
                        continue
                    if line.startswith(b"-"):
                        gone[rid] = line[1:]
                    else:
                        added.append((rid, line[1:]))
                out |= {(name, raw) for rid, raw in added if rid in gone and purge.explains(gone[rid], raw, marks)}
    return out


def _diffs(git: _Git, since: str, theirs: str, folder: str, names: set[str]) -> Iterator[tuple[str, bytes]]:
    """Each log file of `names` under `folder` that changed between `since` and `theirs`, with its
    diff (no context lines, as bytes)."""
    listed = gitstate.run(git.root, "diff", "--name-only", "-z", "--no-renames", since, theirs, "--", folder)
    for name in (p for p in listed.stdout.split("\0") if p in names):
        diff = gitstate.run(
            git.root,
            *("diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames"),
            *(since, theirs, "--", name),
            text=False,
            timeout=300,
        )
        yield name, diff.stdout


def _added(git: _Git, spans: list[tuple[str, str]], folder: str, names: set[str]) -> list[tuple[str, int, bytes]]:
    """The lines the merged commits added to the log files `names` under `folder` since their
    merge base (`spans`: (base, theirs); "" for no base): (file, its line number in theirs, the
    line), each once. Read from git, so what this clone appends meanwhile is not among them, and
    how the merge went (done, half-done, done again) does not matter."""
    out: dict[tuple[str, bytes], int] = {}
    empty = ""
    for base, theirs in spans:
        if not base:  # no common commit: everything theirs holds is new here
            empty = empty or git.out("hash-object", "-t", "tree", os.devnull)
        since = base or empty
        for name, diff in _diffs(git, since, theirs, folder, names):
            n, hunks = 0, False  # (the file's header lines come before its first hunk)
            for line in diff.split(b"\n"):
                if line.startswith(b"@@"):
                    hunks = True
                    got = line.split(b" +", 1)[1].split(b",", 1)[0].split(b" ", 1)[0] if b" +" in line else b""
                    n = int(got) if got.isdigit() else 0
                elif hunks and line.startswith(b"+"):
                    out.setdefault((name, line[1:]), n)
                    n += 1
    return [(name, n, raw) for (name, raw), n in out.items()]


def _conflicts(vault: Vault) -> list[dict[str, Any]]:
    from optmem import facts

    return [
        {"name": c.name, "key": c.key, "domain": c.domain, "ids": [v["id"] for v in c.values]}
        | ({"file": c.file} if c.file else {})
        for c in facts.conflicts(vault)
    ]


def _conflict_names(vault: Vault) -> set[str]:
    return {c["name"] for c in _conflicts(vault)}


def main_say(line: str) -> None:
    """Progress on stderr, one line a stage (stdout is the report) — `printable`, as every line
    people read (it may quote git, and git what a remote said)."""
    from optmem.terminal import printable

    print(f"sync: {printable(line)}", file=sys.stderr, flush=True)
