"""Git: hooks that record every commit in the log, and the merge driver for hot files.

`install_git_hook` puts three hooks in a repository: `post-commit` and `post-merge` record HEAD
(domain `code`, project = the repository folder, kind `commit`, the sha as evidence and key, the
subject as text, the changed paths as detail); `post-rewrite` (an amend, a rebase) records each
new commit as superseding its pre-rewrite record (post-commit leaves an amended or rebased
commit to it, so it is recorded once). A commit already recorded is never recorded again.
Hooks that were there are kept and still run first; `uninstall_git_hook` restores exactly what
was there. The hooks never block git: they wait for the vault's lock `HOOK_LOCK_WAIT` at most,
and a commit the vault cannot take then (locked, read-only, its folder missing — an unmounted
disk) waits in the repository's spool (`optmem-spool.jsonl` in its git folder, `optmem.spool`),
which the next hook run stores first, in order (`record_hook`).

`merge_hot` is the merge driver for hot-memory files: it merges entry sets (see there).
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optmem import fsio, gitstate
from optmem.errors import NotFound, OptmemError, Unreadable, UnsafeContent, UsageError
from optmem.record import COMMIT, IMPORT
from optmem.vault import Vault
from optmem.vault import project_name as project_name  # (a name the integrations import from here)

HOOKS = ("post-commit", "post-merge", "post-rewrite")
BEGIN = "# >>> optmem"
END = "# <<< optmem"
VAULT_LINE = "# optmem vault: "
SPOOL = "optmem-spool.jsonl"  # in the repository's git folder: the commits the vault could not take yet
HOOK_LOCK_WAIT = 0.3  # seconds a hook waits for the vault's lock: then the commit is spooled, not held up


def _git(repo: Path, *args: str, reading: bool = True, hooks: bool = False) -> str:
    """git's output as text: bytes git does not give as UTF-8 (a reflog line holds a commit's
    subject as it was typed, in whatever encoding) kept as `os.fsdecode` keeps them, so a path
    round-trips and no output fails to read (tester 14 #3: a Latin-1 subject lost the commit)."""
    return _git_bytes(repo, *args, reading=reading, hooks=hooks).decode("utf-8", "surrogateescape")


def _git_bytes(repo: Path, *args: str, reading: bool = True, hooks: bool = False) -> bytes:
    res = gitstate.run(repo, *args, reading=reading, hooks=hooks, text=False)
    if res.returncode != 0:
        said = (res.stderr.strip() or res.stdout.strip()).decode("utf-8", "replace")
        raise UsageError(f"git {' '.join(args)} failed in {repo}: {said}")
    return bytes(res.stdout)


def _message_text(raw: bytes) -> tuple[str, str | None]:
    """A commit message's words (git has turned them to UTF-8 from the encoding the commit
    declares, `--encoding=UTF-8`) and, when some bytes are not UTF-8 even so (a message typed
    in another encoding than the one declared), the words with U+FFFD for each such byte and
    the bytes as written, escaped (`caf\\xe9`): recorded all the same, never lost."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace"), raw.decode("utf-8", "backslashreplace")


def repo_root(path: Path) -> Path:
    """The top-level folder of the git repository holding `path`."""
    return Path(_git(path, "rev-parse", "--show-toplevel").strip())


def _named_repo(repo: Path) -> Path:
    """The top folder of the repository `--repo` names (the current folder when not given), or a
    usage error that says what is wrong with it in words, not git's."""
    said = "--repo" if str(repo) != "." else "the current folder"
    if not repo.exists():
        raise UsageError(
            f"{said} {repo} does not exist: give the folder of a git repository (e.g. --repo ~/src/webapp)",
            repo=str(repo),
        )
    if not repo.is_dir():
        raise UsageError(f"{said} {repo} is a file: give the folder of a git repository", repo=str(repo))
    try:
        return repo_root(repo)
    except UsageError:
        raise UsageError(
            f"{said} {repo} is not in a git repository: give a repository's folder, or `git init` this one first",
            repo=str(repo),
        ) from None


PROJECT_KEY = "optmem.project"  # the repository's own git config: the project its commits go to


def repo_project(
    root: Path, mapping: dict[str, Any] | None = None, *, remember: bool = False, vault: Vault | None = None
) -> str:
    """The project of the git repository whose top folder is `root`: `[projects]` of optmem.toml
    for its folder's name first; else the name its git config keeps (`optmem.project`, in
    `.git/config`: never pushed, and kept when the folder is renamed or moved — so `mv coderepo
    coderepo2` leaves its commits, sessions and handoffs in one project); else the folder's name
    (`project_name`) — or, in a `vault` that holds this repository's commits under the name an
    earlier optmem gave its folder (`café` was `caf`: `earlier_project_name`), that name, so an
    upgrade does not split its history. `remember` (the hooks, on install and at each commit): a
    repository whose config keeps none is given its name now. A git that cannot answer names the
    folder."""
    import subprocess

    mapped = (mapping or {}).get(root.name)
    if isinstance(mapped, str):
        return mapped
    try:
        res = gitstate.run(root, "config", "--local", "--get", PROJECT_KEY)
        kept = res.stdout.strip() if res.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return project_name(root.name, mapping)
    from optmem.vault import NAME_RE

    if kept and NAME_RE.fullmatch(kept):
        return kept
    name = project_name(root.name, mapping)
    if not kept and vault is not None:
        name = _earlier_name(vault, root) or name
    if remember and not kept:
        try:
            gitstate.run(root, "config", "--local", PROJECT_KEY, name, reading=False)
        except (OSError, subprocess.SubprocessError):
            pass  # (named by its folder again next time)
    return name


_EARLIER_LOOKED = 5  # commit records of the earlier name whose sha is looked for in the repository


def _earlier_name(vault: Vault, root: Path) -> str | None:
    """The name an earlier optmem gave this repository's folder, when it differs from today's and
    the vault holds commits of this repository under it (their sha known to its git) — not the
    shared `project` every repository named in another script was (item 1 of the tenth stop: their
    records leaked into each other's sessions; each gets its own name now)."""
    import subprocess

    from optmem.vault import earlier_project_name

    old = earlier_project_name(root.name)
    if old == "project" or old == project_name(root.name) or not vault.exists():
        return None
    from optmem.index import open_index

    try:
        with open_index(vault) as idx:
            rows = idx.rows("r.kind = ? AND r.project = ? ORDER BY r.n DESC LIMIT ?", (COMMIT, old, _EARLIER_LOOKED))
    except OptmemError:
        return None
    for r in rows:
        sha = (r.key or "").removeprefix("commit:")
        if not sha or not all(c in "0123456789abcdef" for c in sha):
            continue
        try:
            if gitstate.run(root, "cat-file", "-e", f"{sha}^{{commit}}").returncode == 0:
                return old
        except (OSError, subprocess.SubprocessError):
            return None
    return None


def vault_inside(vault: Vault, root: Path) -> str | None:
    """The vault's folder relative to the repository's top `root` (`.optmem`), when the vault lies
    inside the repository's work tree; else None."""
    import os

    real, top = Path(os.path.realpath(vault.root)), Path(os.path.realpath(root))
    if real == top or not real.is_relative_to(top):
        return None
    return real.relative_to(top).as_posix()


def _inside_note(vault: Vault, root: Path) -> str | None:
    """What `hooks install` says of a vault inside the repository it hooks, which git does not
    ignore: each commit's record changes the vault, so the work tree shows it modified until it
    is committed (with the next change: a commit of the vault alone is not recorded)."""
    import subprocess

    inside = vault_inside(vault, root)
    if inside is None:
        return None
    try:
        if gitstate.run(root, "check-ignore", "-q", "--", inside + "/").returncode == 0:
            return None  # (kept out of git: nothing to say)
    except (OSError, subprocess.SubprocessError):
        pass
    return (
        f"the vault {inside}/ lies inside this repository: each commit's record changes it, so `git status` "
        f"shows it modified until you commit it — with your next change (a commit of {inside}/ alone is not "
        f"recorded), or keep it out of git: `echo {inside}/ >> .git/info/exclude`"
    )


def _hooks_dir(repo: Path) -> Path:
    path = Path(_git(repo, "rev-parse", "--git-path", "hooks", hooks=True).strip())  # where they are
    return path if path.is_absolute() else repo / path


def optmem_command() -> str:
    """This optmem, by absolute path, so the hook works from any shell or GUI client."""
    return f"{shlex.quote(sys.executable)} -m optmem"


@dataclass(frozen=True)
class HookResult:
    status: str  # installed | updated | already_installed | uninstalled | not_installed
    hook: str  # the first of them (post-commit)
    chained: str | None
    vault: str | None = None
    hooks: tuple[str, ...] = ()  # every hook installed (or found installed), or removed
    note: str | None = None  # the vault lies inside the repository (`_inside_note`)


def _chained(hook: Path) -> Path:
    return hook.with_name(hook.name + ".optmem-chained")


def _script(hook: str, vault: Vault) -> str:
    chained = f"{hook}.optmem-chained"
    event = {"post-commit": "git-commit", "post-merge": "git-commit", "post-rewrite": "git-rewrite"}[hook]
    takes_stdin = hook == "post-rewrite"  # git hands it "<old> <new>" lines
    feed = 'printf "%s\\n" "$input" | ' if takes_stdin else ""
    return "\n".join(
        [
            "#!/bin/sh",
            f"{BEGIN} {hook} hook (remove it with `optmem hooks uninstall`)",
            f"{VAULT_LINE}{vault.root}",
            "input=$(cat)" if takes_stdin else ":",
            f'if [ -x "$(dirname "$0")/{chained}" ]; then {feed}"$(dirname "$0")/{chained}" "$@"; fi',
            "status=$?",
            # git's work is done: record it, never fail it; errors go to stderr
            f"{feed}{optmem_command()} --vault {shlex.quote(str(vault.root))} hook {event} "
            f'--repo "$(git rev-parse --show-toplevel)" || echo "optmem: not recorded" >&2',
            "exit $status",
            END,
            "",
        ]
    )


def install_git_hook(vault: Vault, repo: Path) -> HookResult:
    """Install the hooks in `repo`, keeping (and still running) any existing ones; a repository
    already hooked for another vault is re-pointed at this one."""
    root = _named_repo(repo)
    hooks = _hooks_dir(root)
    repo_project(root, vault.settings.projects, remember=True, vault=vault)  # it survives a rename of the folder
    statuses = []
    for name in HOOKS:
        hook = hooks / name
        existing = fsio.read_text(hook) if hook.exists() else None
        if existing is not None and BEGIN in existing:
            if f"{VAULT_LINE}{vault.root}\n" in existing:
                statuses.append("already_installed")
                continue
            statuses.append("updated")  # hooked for another vault: the new one wins
        else:
            if hook.exists():
                fsio.move(hook, _chained(hook))  # kept byte for byte, mode included; runs first
            statuses.append("installed")
        fsio.atomic_write(hook, _script(name, vault), mode=0o755)  # git runs hooks: executable
    _register(vault, root, spool_path(root))  # (`doctor` says when commits wait in it)
    status = "installed" if "installed" in statuses else ("updated" if "updated" in statuses else "already_installed")
    first = hooks / HOOKS[0]
    return HookResult(
        status,
        str(first),
        str(_chained(first)) if _chained(first).exists() else None,
        str(vault.root),
        tuple(str(hooks / name) for name in HOOKS),
        _inside_note(vault, root),
    )


def uninstall_git_hook(repo: Path) -> HookResult:
    """Remove our hooks and put back exactly what was there before."""
    root = _named_repo(repo)
    hooks = _hooks_dir(root)
    removed: list[str] = []
    restored = None
    for name in HOOKS:
        hook = hooks / name
        current = fsio.read_text(hook) if hook.exists() else None
        if current is None or BEGIN not in current:
            continue
        removed.append(str(hook))
        if _chained(hook).exists():
            fsio.move(_chained(hook), hook)
            restored = restored or str(hook)
        else:
            fsio.remove_file(hook)
    first = str(hooks / HOOKS[0])
    return HookResult("uninstalled" if removed else "not_installed", first, restored, hooks=tuple(removed))


def _commit(root: Path, rev: str) -> tuple[str, str, str, list[str], str | None]:
    """A commit's sha, subject, author, changed paths, and its subject's bytes as written when
    they are not valid in the encoding it declares (`_message_text`), else None."""
    raw = _git_bytes(root, "log", "-1", "--encoding=UTF-8", "--format=%H%x00%s%x00%an", rev)
    sha_b, subject_b, author_b = raw.rstrip(b"\n").split(b"\x00")
    subject, undecoded = _message_text(subject_b)
    sha, author = sha_b.decode("ascii"), _message_text(author_b)[0]
    paths = [
        p
        for p in _git(
            root, "diff-tree", "--no-commit-id", "--name-only", "-r", "--root", "-m", "--first-parent", sha
        ).splitlines()
        if p
    ]
    return sha, subject, author, paths, undecoded


def _recorded(vault: Vault, keys: list[str], domain: str, project: str) -> list[str | None]:
    """For each key (`commit:<sha>`), the id of that commit's latest record, or None."""
    from optmem.index import open_index

    with open_index(vault) as idx:
        return [
            max(rows, key=lambda r: r.n).id if rows else None
            for rows in (idx.key_group(k, domain, project) for k in keys)
        ]


def _rewrite_pending(root: Path) -> bool:
    """HEAD was made by an amend or a rebase, and our post-rewrite hook will record it (as
    superseding the commit it replaced) — so post-commit leaves it, and it is recorded once."""
    action = _git(root, "reflog", "-1", "--format=%gs", "HEAD")
    if not action.startswith(("commit (amend)", "rebase")):
        return False
    hook = _hooks_dir(root) / "post-rewrite"
    return BEGIN in (fsio.read_text(hook) or "") if hook.is_file() else False


MERGED_IN = f"{IMPORT}git"  # the origin of a commit a merge brought in (`commit_origin`): import:git


def made_here() -> str:
    """The origin of a commit made in this repository (post-commit, post-rewrite): `agent` when an
    agent host's mark is in the hook's environment (`quarantine.agent_mark`: the agent ran git),
    else `user` — a person's commit in their own repository, whose subject they wrote."""
    import os

    from optmem.quarantine import agent_mark

    return "agent" if agent_mark(os.environ) else "user"


def commit_origin(root: Path) -> str:
    """The origin of HEAD as a hook sees it: a commit a merge or a pull brought in (its reflog
    entry: "merge …", "pull …" — a fast-forward to another's commit, or a merge commit of their
    work) was written by someone else, in another clone — its subject is second-hand, another
    store's text: `import:git` (fenced apart, never an order, a redline or hot memory without a
    person); a commit made here is `made_here`'s."""
    action = _git(root, "reflog", "-1", "--format=%gs", "HEAD")
    return MERGED_IN if action.startswith(("merge ", "pull")) else made_here()


SPOOLED_ORIGINS = ("user", "agent", MERGED_IN)  # what a spooled commit's origin may be


def record_commit(
    vault: Vault,
    repo: Path,
    domain: str = "code",
    rev: str = "HEAD",
    supersedes: str | None = None,
    *,
    root: Path | None = None,
    said_at: str | None = None,
    origin: str | None = None,
) -> dict[str, Any]:
    """Append a commit (HEAD by default) to the log, once. `supersedes` is the sha it replaced
    (an amend, a rebase): its record is superseded, and a record post-commit already made of the
    new commit is replaced, not repeated. `said_at`: when a hook that could not record it spooled it.
    `origin`: who wrote its subject (`commit_origin`; None: not known — a commit an older optmem
    spooled)."""
    from optmem import log
    from optmem.vault import validate_name

    validate_name(domain, "domain")  # before anything is made
    root = root or repo_root(repo)
    sha, subject, author, paths, undecoded = _commit(root, rev)
    inside = vault_inside(vault, root)
    if inside is not None and paths and all(p.startswith(inside + "/") for p in paths):
        # a commit of the memory alone (the records of earlier commits) is not news: recording it
        # would change the vault again, and the work tree would never come clean
        return {"id": None, "sha": sha, "subject": subject, "files": len(paths), "status": "memory_only"}
    project = repo_project(root, vault.settings.projects, remember=True, vault=vault)
    key = f"commit:{sha}"
    keys = [key] + ([f"commit:{supersedes}"] if supersedes else [])
    already, old = (_recorded(vault, keys, domain, project) + [None])[:2]
    if already is not None and old is None:
        return {"id": already, "sha": sha, "subject": subject, "files": len(paths), "status": "duplicate"}
    if already is None and supersedes is None and rev == "HEAD" and _rewrite_pending(root):
        return {"id": None, "sha": sha, "subject": subject, "files": len(paths), "status": "deferred"}
    corrects = [x for x in (old, already) if x]

    def draft(subject: str, author: str, paths: list[str], undecoded: str | None) -> log.Draft:
        return log.Draft(
            subject or f"commit {sha[:12]}",
            domain=domain,
            project=project,
            kind=COMMIT,
            key=key,
            evidence=sha,
            source=f"git:{author}",
            origin=origin,
            corrects=corrects,
            extra={"paths": paths[:200], "files": len(paths)}
            | ({"said_at": said_at} if said_at else {})
            | ({"subject_bytes": undecoded[:2000]} if undecoded else {}),
        )

    redacted: list[str] = []
    kept = undecoded
    try:
        res = log.append(vault, draft(subject, author, paths, undecoded), gate=False)
    except UnsafeContent as err:
        if err.context.get("kind") != "secret":
            raise
        # a secret is never stored, the commit is: each secret read as its `[BLOCKED: rule]`
        # placeholder, the rest kept (`optmem.redact`, as the agent hosts' texts are)
        from optmem.redact import redact_secrets

        def out_of(text: str) -> str:
            said, rules = redact_secrets(text)
            redacted.extend(r for r in rules if r not in redacted)
            return said

        subject, author = out_of(subject), out_of(author)
        paths = [out_of(p) for p in paths]
        kept = out_of(undecoded) if undecoded else None
        res = log.append(vault, draft(subject, author, paths, kept), gate=False)
    out: dict[str, Any] = {
        "id": res.id,
        "sha": sha,
        "subject": subject,
        "files": len(paths),
        "status": "rewritten" if corrects else "recorded",
    }
    if undecoded:
        out["warning"] = (
            f"commit {sha[:12]}'s subject is not valid in the encoding it declares (UTF-8 unless "
            f"i18n.commitEncoding said otherwise when it was made): recorded with � for each byte that is "
            f"not, the bytes as written in the record's subject_bytes ({(kept or '')[:80]}); set "
            "i18n.commitEncoding to the encoding you type in (e.g. ISO-8859-1) so later commits declare it"
        )
    if redacted:
        out["redacted"] = redacted
        said = (
            f"commit {sha[:12]} holds a secret ({', '.join(redacted)}): recorded with it read as "
            f"[BLOCKED: {redacted[0]}], never stored — the commit itself still holds it: take it out of git's "
            "history before pushing (`git commit --amend`), and rotate it if it was pushed"
        )
        out["warning"] = f"{out['warning']}; {said}" if out.get("warning") else said
    return out


def spool_path(root: Path) -> Path:
    """The repository's spool: in its (common) git folder, which git never commits."""
    return Path(_git(root, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()) / SPOOL


def _register(vault: Vault, root: Path, path: Path) -> None:
    """The repository's spool, named in the vault's cache (`spool.register`), when the vault is there."""
    from optmem import spool

    try:
        if vault.exists():
            spool.register(vault.cache(spool.KNOWN), vault.root, str(root), path)
    except (OptmemError, OSError):
        pass  # (best effort: a hook never fails for it)


def record_hook(vault: Vault, repo: Path, domain: str = "code", pairs: str | None = None) -> dict[str, Any]:
    """What the hooks run: the commits the repository's spool holds first, in order, then HEAD
    (post-commit, post-merge) or, given `pairs` ("<old sha> <new sha>" lines: post-rewrite),
    each rewritten commit. A commit the vault cannot take now (`spool.transient`: locked past the
    wait the caller set, read-only, its folder missing — never made anew: an unmounted disk) is
    spooled with every later one, never lost; a commit is recorded once however often it is
    offered. Returns `{"commits": [what record_commit said of each commit recorded now, spooled
    ones first], "spooled": n (waiting now), "spool", "reason"? (why they wait), "dropped"?
    (spooled commits that cannot be recorded, and why)}` — for HEAD also what was said of it at
    the top (`status`: recorded, duplicate, rewritten, deferred to post-rewrite, spooled, or
    memory_only — a commit of the vault's own files alone, not recorded)."""
    from optmem import spool
    from optmem.errors import Locked, TooLarge, VaultMissing
    from optmem.vault import validate_name

    validate_name(domain, "domain")  # (a usage error: nothing is spooled under a bad name)
    root = repo_root(repo)
    if pairs is None:
        sha = _git(root, "rev-parse", "HEAD").strip()
        pending = _rewrite_pending(root)  # (post-rewrite records it, as superseding the commit it replaced)
        wanted = [] if pending else [{"commit": sha, "domain": domain, "origin": commit_origin(root)}]
    else:  # (an amend, a rebase: the commits rewritten here)
        lines = [p for p in map(str.split, pairs.splitlines()) if len(p) >= 2]
        here = made_here()
        wanted = [{"commit": new, "supersedes": old, "domain": domain, "origin": here} for old, new, *_ in lines]
    done: list[dict[str, Any]] = []
    dropped: list[str] = []
    failed: list[str] = []  # why the vault could not take a commit now

    def store(entry: dict[str, Any]) -> None:
        try:
            _store(entry)
        except (OptmemError, UnicodeError, OSError) as err:
            if isinstance(err, Locked):  # which lock, and who holds it — not its advice: hooks read no `[lock] timeout`
                said = str(getattr(err, "message", None) or err).split("; ", 1)[0]
                failed.append(f"{said}: a hook waits no longer (a hook never holds up git)")
            elif spool.transient(err):
                failed.append(str(getattr(err, "message", None) or err))
            raise

    def _store(entry: dict[str, Any]) -> None:
        if not vault.exists():
            raise VaultMissing(
                f"the vault {vault.root} does not exist (an unmounted disk? if it moved: "
                f"`optmem --vault NEW-PATH hooks install --repo {root}` points this repository's hooks at it)",
                vault=str(vault.root),
            )
        commit = entry["commit"]
        if not (isinstance(commit, str) and len(commit) <= 64 and commit.isalnum() and commit.isascii()):
            raise ValueError(f"a spooled commit is its sha, not {str(commit)[:80]!r}")  # (never an option to git)
        done.append(
            record_commit(
                vault,
                root,
                str(entry.get("domain") or domain),
                rev=commit,
                supersedes=entry.get("supersedes"),
                root=root,
                said_at=spool.said_at(entry),
                origin=entry.get("origin") if entry.get("origin") in SPOOLED_ORIGINS else None,
            )
        )

    def drop(entry: dict[str, Any], err: BaseException) -> None:
        if "commit" in entry:
            dropped.append(f"the spooled commit {entry['commit']} was not recorded: {err}")
        else:  # (what the spool could not read: `spool.drain` set it aside)
            dropped.append(f"a spooled line could not be read ({err!r}): it is kept in {path}.rejected")

    path = spool_path(root)
    _register(vault, root, path)
    error = None
    try:
        drained = spool.drain(path, store, dropped=drop)
    except TooLarge as err:  # (this run's commits are spooled all the same: never lost)
        drained, error = False, f"{err.message}: `optmem hook git-commit --repo {root}` stores each part"
    if drained:
        for i, entry in enumerate(wanted):
            try:
                store(entry)
            except (OptmemError, UnicodeError, OSError) as err:
                if not spool.transient(err):
                    raise
                wanted = wanted[i:]
                break
        else:
            wanted = []
    reason = failed[-1] if failed else error or "another process records the spooled commits now"
    for entry in wanted:
        spool.put(path, entry)
    out: dict[str, Any] = {
        "commits": done,
        "spooled": len(wanted),  # this run's commits spooled now
        "waiting": spool.pending(path) if wanted or not drained else 0,  # every commit the spool holds now
        "spool": str(path),
        "repo": str(root),
    }
    if error:
        out["error"] = error
    if pairs is None:
        head = next((c for c in reversed(done) if c["sha"] == sha), None)
        out = (head or {"sha": sha, "status": "deferred" if pending else "spooled"}) | out
    if reason and wanted:
        out["reason"] = reason
    if dropped:
        out["dropped"] = dropped
    return out


def drain_spools(vault: Vault) -> list[str]:
    """Store what each hooked repository's spool holds (`doctor`'s `git_spool`), in order, as the
    next hook run there would (`doctor --fix`): `record_hook` with no commit of its own — the
    spool's lock, the vault's for each commit, a commit recorded once however often it is offered.
    What was stored, and what still waits and why; a spool that cannot be drained now stays
    (`doctor`'s re-check names it)."""
    import subprocess

    from optmem import spool

    said: list[str] = []
    for repo, path in spool.known(vault.cache_dir / spool.KNOWN, vault.root):
        try:
            if not spool.pending(path):
                continue
            got = record_hook(vault, Path(repo), pairs="")  # (no pairs: the spool's commits alone)
        except (OptmemError, OSError, ValueError, subprocess.SubprocessError) as err:
            said.append(f"left the spool of {repo} as it is: {getattr(err, 'message', None) or err}")
            continue
        stored = [c for c in got["commits"] if c.get("status") != "duplicate"]
        if got["commits"]:
            said.append(
                f"recorded {len(stored)} commit(s) that waited in the spool of {repo}"
                + (
                    f" ({len(got['commits']) - len(stored)} already recorded)"
                    if len(stored) < len(got["commits"])
                    else ""
                )
            )
        if got.get("waiting"):
            said.append(
                f"{got['waiting']} commit(s) still wait in the spool of {repo}: {got.get('reason') or got.get('error')}"
            )
        said += got.get("dropped") or []
    return said


# -- the merge driver for hot files ----------------------------------------------------------
GIT_DRIVER = "optmem-hot"
HOT_ATTRIBUTES = ("MEMORY.md", "USER.md", "projects/*/MEMORY.md")


def merge_hot(base: str, ours: str, theirs: str) -> str:
    """Merge three versions of a hot file entry by entry: our entries in order, then their new
    ones; an entry either side removed stays removed. An entry edited on both sides keeps both
    edits — never conflict markers; the journal in the log says they are one entry edited two
    ways (`facts.hot_forks`: `conflicts`, `context` and `doctor` read it on every clone)."""
    from optmem import memory

    _, b, _ = memory.parse(base)
    front, o, final_newline = memory.parse(ours)
    _, t, _ = memory.parse(theirs)
    removed = {e for e in b if e not in o or e not in t}
    merged = [e for e in o if e not in removed] + [e for e in t if e not in o and e not in b]
    hot = memory.HotFile(
        "memory",
        "merged",
        Path("."),
        0,
        list(dict.fromkeys(merged)),
        front,
        final_newline,
        "\r\n" if "\r\n" in ours else "\n",
    )
    return hot.render()


def run_merge_driver(base: Path, ours: Path, theirs: Path, path: str) -> int:
    """`git merge` calls this for a hot file (`path`, from the repository's top): the merged file
    goes to `ours`, in place (its mode kept); exit 0 (merged). Entries edited on both sides are
    both kept (the journal in the log names them: `merge_hot`). A version that is missing or unreadable
    is refused before anything is written (git then shows the file as a real conflict)."""
    texts = []
    for what, p in (("base (%O)", base), ("ours (%A)", ours), ("theirs (%B)", theirs)):
        if not p.is_file():
            raise NotFound(
                f"merge-driver: the {what} version {p} does not exist; git passes three files — run it as "
                "`optmem merge-driver %O %A %B %P`; nothing was written",
                file=str(p),
            )
        try:  # bounded (`fsio`); newlines read as text mode reads them
            raw = (fsio.read_bytes(p) or b"").decode("utf-8")
            texts.append(raw.replace("\r\n", "\n").replace("\r", "\n"))
        except (OptmemError, UnicodeDecodeError) as exc:
            raise Unreadable(
                f"merge-driver: the {what} version {p} could not be read ({exc}); merge {path} by hand; "
                "nothing was written",
                file=str(p),
            ) from exc
    fsio.atomic_write(ours, merge_hot(*texts), mode=ours.stat().st_mode & 0o777)
    return 0


def driver_command() -> str:
    """The merge driver as git runs it (with /bin/sh): this optmem by its absolute path while
    that exists, else the `optmem` on PATH (the venv was recreated, moved, or this is another
    machine), else git's own line merge — conflict markers, a real conflict the user sees and
    doctor reports, never one side's file passed off as the merge."""
    run = "merge-driver %O %A %B %P"
    python = shlex.quote(sys.executable)
    return (
        f"{{ [ -x {python} ] && {python} -m optmem {run}; }} || "
        f"{{ command -v optmem >/dev/null 2>&1 && optmem {run}; }} || "
        "git merge-file -L ours -L base -L theirs %A %O %B"
    )


def install_merge_driver(vault: Vault) -> list[str]:
    """When the vault is inside a git work tree: hot files merge entry by entry (the vault's
    .gitattributes names the driver; this clone's git config defines it). Returns what it added."""
    added: list[str] = []
    try:
        root = repo_root(vault.root)
    except (UsageError, OSError):
        return added
    attributes = vault.root / ".gitattributes"
    text = fsio.read_text(attributes) or ""
    lines = [f"{pattern} merge={GIT_DRIVER}" for pattern in HOT_ATTRIBUTES]
    missing = [line for line in lines if line not in text.splitlines()]
    if missing:
        sep = "" if not text or text.endswith("\n") else "\n"
        fsio.atomic_write(attributes, text + sep + "\n".join(missing) + "\n", within=vault.root)
        added.append(".gitattributes")
    driver = driver_command()
    current = gitstate.run(root, "config", "--local", f"merge.{GIT_DRIVER}.driver").stdout.strip()
    if current != driver:
        _git(root, "config", "--local", f"merge.{GIT_DRIVER}.name", "optmem: merge hot-memory entries", reading=False)
        _git(root, "config", "--local", f"merge.{GIT_DRIVER}.driver", driver, reading=False)
        added.append(f"git config merge.{GIT_DRIVER}")
    return added
