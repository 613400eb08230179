"""Agents and git: hooks install/uninstall, the hook entry points, the Claude Code settings."""

from typing import Any

from optmem.cli.common import dumps, echo, emit, get_vault, note, read_stdin, resolve_vault
from optmem.cli.spec import CommandExit, arg, command, flag, opt

EVENT_BYTES = 1 << 20  # a hook event is a small JSON object (the transcript is read apart)

REPO = opt("repo", help="The git repository (default: the current folder's).")


@command("hooks install", REPO)
def hooks_install(repo: str | None, json_out: bool) -> None:
    """Install git hooks that record every commit in the vault (post-commit, post-merge, post-rewrite).

    Existing hooks are kept and still run. The hooks name this vault and this optmem by absolute
    path, never block git, and record a commit once (an amend or a rebase supersedes the old
    record). A repository hooked for another vault is re-pointed at this one. When the vault
    itself is in a git work tree, its hot files get the entry-by-entry merge driver.

    \b
    Example:
      optmem --vault ~/.optmem hooks install --repo ~/src/webapp
    """
    from pathlib import Path

    from optmem.integrations import git

    vault = get_vault(write=True)
    res = git.install_git_hook(vault, Path(repo or "."))
    vault.lay_out()  # the hooks will write to it: it exists from now on
    git.install_merge_driver(vault)
    if res.note:
        note(f"optmem: note: {res.note}")
    emit(
        json_out,
        {"status": res.status, "hook": res.hook, "hooks": list(res.hooks), "chained": res.chained, "vault": res.vault}
        | ({"note": res.note} if res.note else {}),
        lambda: (
            f"{res.status.replace('_', ' ')}: {_named(res.hooks)}"
            + (f" (your hook still runs: {res.chained})" if res.chained else "")
        ),
    )


def _named(hooks: tuple[str, ...]) -> str:
    """/repo/.git/hooks/post-commit, post-merge, post-rewrite"""
    from pathlib import Path

    return ", ".join([hooks[0], *(Path(h).name for h in hooks[1:])]) if hooks else "(none)"


@command("hooks uninstall", REPO)
def hooks_uninstall(repo: str | None, json_out: bool) -> None:
    """Remove the git hooks (post-commit, post-merge, post-rewrite) and restore exactly what was there before.

    \b
    Example:
      optmem hooks uninstall --repo ~/src/webapp
    """
    from pathlib import Path

    from optmem.integrations import git

    res = git.uninstall_git_hook(Path(repo or "."))
    emit(
        json_out,
        {"status": res.status, "hook": res.hook, "hooks": list(res.hooks), "restored": res.chained},
        lambda: (
            f"{res.status.replace('_', ' ')}: {_named(res.hooks) if res.hooks else res.hook}"
            + (" (the previous hook is back)" if res.chained else "")
        ),
    )


@command(
    "hooks claude-code",
    flag("print", help="Only print the settings snippet; change nothing."),
    opt("settings", help="The Claude Code settings file to add the hooks to (default: ./.claude/settings.json)."),
)
def hooks_claude_code(print: bool, settings: str | None, json_out: bool) -> None:
    """Wire Claude Code's session hooks (SessionStart, PreCompact, SessionEnd) to this vault.

    Adds them to .claude/settings.json (keeping everything already there), or with --print only
    prints the snippet.

    \b
    Example:
      optmem --vault ~/.optmem hooks claude-code          # in the project's folder
      optmem hooks claude-code --print                    # just show what it would add
    """
    from pathlib import Path

    from optmem.integrations import claude_code

    if print:
        snippet = claude_code.claude_code_settings(resolve_vault(), Path.cwd())  # nothing is created
        if json_out:
            emit(True, {"settings": snippet}, lambda: None)
        else:
            echo(dumps(snippet))
        return
    path = Path(settings or ".claude/settings.json")
    make_folder = settings is None  # the project's .claude/ may be new; a path given must exist
    claude_code.read_settings(path, make_folder=make_folder)  # refused before the vault is made
    vault = get_vault(write=True)
    vault.lay_out()  # the hooks will write to it: it exists from now on
    added = claude_code.install_settings(vault, path, make_folder=make_folder)
    command, notes = claude_code.hook_command(vault, claude_code.project_of(path))
    portable = not any("this machine's path" in n for n in notes)

    def human() -> str:
        said = f"{'added the optmem hooks to' if added else 'already wired:'} {path}"
        if portable:
            said += f" — they run `{command}`, which works on every clone (`optmem` from PATH)"
        return "\n".join([said, *(f"note: {n}" for n in notes)])

    emit(
        json_out,
        {"file": str(path), "added": added, "command": command, "portable": portable, "notes": notes},
        human,
    )


@command("hook git-commit", REPO, opt("domain", "--domain", "-d", default="code", help="Domain of the record."))
def hook_git_commit(repo: str | None, domain: str, json_out: bool) -> None:
    """Record the repository's latest commit (what the post-commit hook runs; never fails a commit).

    It waits for the vault's lock 0.3 s at most: a commit the vault cannot take then
    (locked, its folder missing) waits in the repository's spool (.git/optmem-spool.jsonl), which
    the next hook run records first. A commit is recorded once.

    \b
    Example:
      optmem hook git-commit --repo .
    """
    from pathlib import Path

    from optmem.integrations import fail_open, git

    got = fail_open(
        lambda: git.record_hook(_hook_vault(), Path(repo or "."), domain), note, "commit not recorded"
    )  # the commit is already made
    if got is not None:
        _said_of_spool(got)
        emit(json_out, got, lambda: None)


def _hook_vault() -> Any:
    """The vault a git hook writes to: its lock waited for briefly (`git.HOOK_LOCK_WAIT`)."""
    from optmem.integrations import git

    return get_vault(write=True, overrides=[f"lock.timeout={git.HOOK_LOCK_WAIT}"])


def _said_of_spool(got: dict[str, Any]) -> None:
    """What a hook run says on stderr of its spool: what waits there and why, what was dropped."""
    for line in got.get("dropped") or []:
        note(f"optmem: {line}")
    for said in [got, *got.get("commits", [])]:  # (HEAD's own fields are its entry's, said once)
        if said.get("warning") and (said is got or said.get("sha") != got.get("sha")):
            note(f"optmem: warning: {said['warning']}")
    if got.get("error"):
        note(f"optmem: error: {got['error']}")
    if got.get("spooled"):
        also = got.get("waiting", 0) - got["spooled"]
        note(
            f"optmem: {got['spooled']} commit(s) of this run spooled"
            + (f", {got['waiting']} in all" if also > 0 else "")
            + f" — they wait in {got['spool']}"
            + (f": {got['reason']}" if got.get("reason") and got["reason"] != got.get("error") else "")
            + ". The next hook run in this repository (a commit, a merge, a rebase) records them first; "
            f"to record them now, once the vault is free: `optmem hook git-commit --repo {got['repo']}`"
        )


@command("hook git-rewrite", REPO, opt("domain", "--domain", "-d", default="code", help="Domain of the records."))
def hook_git_rewrite(repo: str | None, domain: str, json_out: bool) -> None:
    """Record rewritten commits ("<old sha> <new sha>" lines on stdin, what git hands the
    post-rewrite hook after an amend or a rebase): each new commit supersedes the old one's record.

    \b
    Example:
      echo "$OLD $NEW" | optmem hook git-rewrite --repo .
    """
    from pathlib import Path

    from optmem.integrations import fail_open, git

    pairs = read_stdin("the rewritten commits").decode("utf-8", errors="replace")
    got = fail_open(
        lambda: git.record_hook(_hook_vault(), Path(repo or "."), domain, pairs),
        note,
        "rewritten commits not recorded",
    )
    if got is not None:
        _said_of_spool(got)
        emit(json_out, got, lambda: None)


@command(
    "sync",
    opt("remote", "--remote", help="The git remote to sync with (default: the branch's upstream, else origin)."),
    opt("branch", "--branch", help="The remote branch (default: the upstream's, else the branch checked out)."),
)
def sync(remote: str | None, branch: str | None, json_out: bool) -> None:
    """Share the vault through git: commit, fetch, merge, scan what came in, catch up, push.

    The vault is a git repository of its own (or a worktree on a branch of its own), with a
    remote. The first sync splits the log into one file per writer (`optmem segment`), so the
    log never conflicts; hot files merge entry by entry. Progress goes to stderr, the report to
    stdout: records in and out, incoming records the scanner flags, new conflicts, hot files over
    their budget. A push the remote refused because it moved is merged and tried again. A line
    holding a secret that the write gate never passed (typed in by hand) is neither committed nor
    pushed: the sync is refused, naming the file and line (exit 1).

    \b
    Example:
      optmem sync --remote origin --branch main
    """
    from optmem.integrations import sync as core

    vault = get_vault()
    r = core.sync(vault, remote, branch, core.main_say)

    def human() -> str:
        if r.noop:
            return f"in sync with {r.remote}/{r.branch}: nothing to commit, fetch or push"
        out = [
            f"synced with {r.remote}/{r.branch} as writer {r.writer}: {r.records_in:,} record(s) in, "
            f"{r.records_out:,} out" + (f" ({r.retries} retr{'y' if r.retries == 1 else 'ies'})" if r.retries else "")
        ]
        if r.into_own_folder:
            out.append(
                f"{r.into_own_folder:,} of them came into this clone's own folder (log/{r.writer}/), where optmem "
                "writes only here: typed or forged on another clone, or another clone writes as this writer — "
                "check who can push to the remote"
            )
        if r.purged_again or r.nodes_dropped or r.handoffs_dropped:
            out.append(
                f"{r.purged_again:,} record(s) and {len(r.nodes_dropped):,} summary node(s) quoting what this clone "
                "purged came back with the merge (another clone still held them): dropped again; the drop goes out "
                "with this push"
                + (f"; `optmem compact` makes the {len(r.nodes_dropped):,} node(s) again" if r.nodes_dropped else "")
            )
        if r.handoffs_dropped:
            out.append(
                f"{', '.join(r.handoffs_dropped)} came back with the merge carrying a handoff this clone purged: "
                "it shows the project's previous handoff again (or is gone, when there is none)"
            )
        if r.purged_elsewhere:
            out.append(
                f"{r.purged_elsewhere:,} record(s) purged by another clone left this clone's log with the merge: "
                "a purge spreads to every clone that syncs"
            )
        # (`removed_elsewhere`: the command's warning says it, naming them — `optmem.lost`)
        out += [f"flagged by the scanner: {f['id']} ({f['rule']}) in {f['file']}" for f in r.flagged]
        out += _came_from_clones(r, vault.trusted)
        out += [
            f"a release of {f['ref']} came in from {f['file']}: it stays held here until a person here runs "
            f"`optmem release {str(f['ref'])[-8:]}`"
            for f in r.releases_in
        ]
        out += [
            f"new conflict: {c['name']} — `optmem conflicts` shows it, `optmem resolve` settles it"
            for c in r.new_conflicts
        ]
        out += [
            f"{h['file']} is over its budget after the merge ({h['chars']:,}/{h['limit']:,} chars): "
            "`optmem remove` or `optmem replace` to consolidate"
            for h in r.over_budget
        ]
        out += [f"kept this clone's {p} (rebuilt from the log)" for p in r.kept_ours]
        out += [
            f"merged {p} again entry by entry (git's line merge had left it mid-merge): an entry edited on "
            "both sides is two entries now — `optmem conflicts` names them"
            for p in r.hot_merged
        ]
        out += [
            f"{h['project']}: the handoff of {h['time']} ({h['domain']}, id {h['id'][-8:]}) is no longer the one "
            f"shown — a newer one written without seeing it is (id {h['shown'][-8:]}); its next: "
            + ("; ".join(h["next"]) or "(none)")
            + f" — `optmem handoff read -p {h['project']} --history 2`"
            for h in r.handoffs_beside
        ]
        return "\n".join(out)

    emit(json_out, r.to_dict(), human)


def _came_from_clones(r: Any, trusted: bool) -> list[str]:
    """What another clone made that acts here as this clone's own, named (a sync's `redlines_in`
    and `hot_in`): a trusted vault's redlines are rules, and hot entries go into every prompt."""
    from optmem.safety import scan

    out = []
    if r.redlines_in:
        ids = ", ".join(x["id"][-8:] for x in r.redlines_in[:8]) + (" …" if len(r.redlines_in) > 8 else "")
        out.append(
            f"{len(r.redlines_in)} redline(s) came in from another clone ({ids}): "
            + (
                "locked rules here too — this vault is trusted, and trusting it trusts whoever can push to it; "
                "`optmem get ID` reads one, `optmem forget ID --redline` drops it"
                if trusted
                else "read as unverified notes here until you run `optmem trust`"
            )
        )
    for h in r.hot_in:
        words = scan.redact(h["text"])
        out.append(
            f"came in from another clone, now in {h['file']} (hot memory, in every prompt): [{h['entry']}] "
            f"{words[:80]}{'…' if len(words) > 80 else ''}"
        )
    if r.hot_in:
        out.append("(`optmem remove` takes out an entry that should not be there — on every clone, at the next sync)")
    return out


@command(
    "merge-driver",
    arg("base", "The common ancestor's version (%O)."),
    arg("ours", "Our version, where the result goes (%A)."),
    arg("theirs", "Their version (%B)."),
    arg("path", "The file's path in the repository (%P).", required=False),
)
def merge_driver(base: str, ours: str, theirs: str, path: str | None, json_out: bool) -> None:
    """Merge a hot-memory file entry by entry (git runs this; `init` and `hooks install` set it up).

    Our entries, then their new ones; an entry either side removed stays removed; an entry
    edited on both sides keeps both versions and `optmem doctor` reports them — never conflict
    markers.

    \b
    Example:
      git config merge.optmem-hot.driver "optmem merge-driver %O %A %B %P"
    """
    from pathlib import Path

    from optmem.errors import INTERNAL
    from optmem.integrations import git

    if git.run_merge_driver(Path(base), Path(ours), Path(theirs), path or Path(ours).name) != 0:
        raise CommandExit(INTERNAL)


@command("hook claude-code", opt("budget", type=int, default=4000, help="Context size for SessionStart."))
def hook_claude_code(budget: int, json_out: bool) -> None:
    """Handle a Claude Code hook event (JSON on stdin); always exits 0.

    SessionStart prints the project's context; PreCompact and SessionEnd write a handoff drawn
    from the transcript. The project is the git top-level folder name of the event's cwd.

    \b
    Example:
      echo '{"hook_event_name":"SessionStart","cwd":"."}' | optmem hook claude-code
    """
    import json
    from pathlib import Path

    from optmem.cli.common import STATE
    from optmem.integrations import claude_code, fail_open

    def handle() -> dict[str, Any]:
        what = (
            'stdin must be the JSON event Claude Code sends its hooks ({"hook_event_name": …, '
            '"cwd": …}); `optmem hooks claude-code` wires them up'
        )
        try:
            event = json.loads(read_stdin("the hook event", EVENT_BYTES) or b"{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"{what} — this is not JSON ({exc})") from exc
        if not isinstance(event, dict):
            raise ValueError(f"{what} — this is not a JSON object")
        # no vault yet: nothing to say — unless handoffs an earlier session could not store wait
        starting = event.get("hook_event_name") == "SessionStart" and not claude_code.waiting(event)
        # the project's vault, found up to the repository's top from a subfolder (never made there)
        found = claude_code.hook_vault(resolve_vault().root, Path.cwd())
        STATE.vault_opt = str(found)
        return claude_code.claude_code_event(
            resolve_vault() if starting else get_vault(write=True), event, budget=budget
        )

    said: list[str] = []

    def told(msg: str) -> None:
        said.append(msg.removeprefix("optmem: hook skipped: "))
        note(msg)

    got = fail_open(handle, told, "hook skipped")  # never break the agent's session
    if got is None and json_out:  # (--json always answers JSON, with the reason)
        emit(json_out, {"handoff": None, "reason": "skipped", "warnings": said}, lambda: None)
    elif got is not None:
        for w in got.get("warnings") or []:  # (what the context block itself tells the agent)
            note(f"optmem: warning: {w}")
        emit(json_out, got, lambda: got.get("context"))


@command(
    "hermes install",
    opt("hermes_home", help="Hermes' home folder (default: $HERMES_HOME, else ~/.hermes)."),
    flag("shared", help="Make the vault Hermes' own memories folder: its MEMORY.md and USER.md are the vault's."),
)
def hermes_install(hermes_home: str | None, shared: bool, json_out: bool) -> None:
    """Install OptMem as Hermes Agent's memory provider: writes $HERMES_HOME/plugins/optmem/.

    The provider's vault is OPTMEM_VAULT, else the vault this writes with --shared (Hermes'
    memories folder: the built-in memory tool and OptMem read one truth), else
    $HERMES_HOME/optmem. Then set `memory.provider: optmem` in Hermes' config.

    \b
    Example:
      optmem hermes install --shared
    """
    import os
    from pathlib import Path

    from optmem.errors import UsageError
    from optmem.integrations import hermes

    home = Path(hermes_home or os.environ.get("HERMES_HOME") or Path.home() / ".hermes").expanduser()
    if home.exists() and not home.is_dir():
        raise UsageError(f"{home} is not a folder; give Hermes' home folder with --hermes-home")
    res = hermes.install(home, shared=shared)
    if res.get("note"):
        note(res["note"])
    emit(
        json_out,
        res,
        lambda: (
            f"installed the optmem memory provider in {res['plugin']} (vault {res['vault']}); "
            "now set memory.provider: optmem in Hermes' config.yaml"
        ),
    )
