"""The `optmem` command line: parses, calls one core function, renders. Nothing more.

`run` tries the fast path (no Typer import) and falls back to the Typer app for help, usage
errors and anything unusual. Commands load lazily: a command imports only its own module.
"""

from __future__ import annotations

import sys

# name → (module under optmem.cli, one-line help); "@module" marks a group of subcommands.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("hot", "Create a vault, or add only what is missing to an existing folder."),
    "add": ("hot", "Add an entry to hot memory (an exact duplicate is a no-op)."),
    "replace": ("hot", "Replace the matched span inside the one entry containing OLD."),
    "remove": ("hot", "Remove the whole entry containing OLD (it stays in LOG.jsonl)."),
    "show": ("hot", "Print hot memory ready to paste into a prompt, with usage headers."),
    "apply": ("hot", "Apply a batch of add/replace/remove operations all-or-nothing."),
    "append": ("logcmd", "Append a record to LOG.jsonl (through the duplicate write gate) and print its id."),
    "get": ("logcmd", "Show one record with its status (current / superseded by … / expired / forgotten)."),
    "forget": ("logcmd", "Hide a record from search and context; it stays in LOG.jsonl."),
    "search": ("searchcmd", "Ranked search: corrections outrank what they correct, redlines outrank everything."),
    "correct": ("searchcmd", "Append a correction that supersedes TARGET at query time (the old record stays)."),
    "history": ("searchcmd", "Show every version of a fact, oldest first (corrections and same-key records)."),
    "conflicts": ("searchcmd", "List the facts with more than one current value; settle each with `resolve`."),
    "resolve": ("searchcmd", "Settle a conflict on KEY (or a fact's id): a `resolution` record supersedes every value in it."),
    "merge": ("searchcmd", "Merge fragments about one topic into one structured record; every detail is kept."),
    "reindex": ("searchcmd", "Rebuild the derived search index from LOG.jsonl (it is also rebuilt automatically)."),
    "touch": ("lifecmd", "Say records were used: they stay warm, and a cold one is warm again (ACCESS.jsonl)."),
    "sweep": ("lifecmd", "Cool what nobody used for long: out of normal search and context, never deleted."),
    "pending": ("lifecmd", "The review queue: guesses waiting to be confirmed, oldest first."),
    "confirm": ("lifecmd", "Confirm a pending record: it becomes current."),
    "reject": ("lifecmd", "Reject a pending record: it is forgotten, with your reason (it stays in LOG.jsonl)."),
    "handoff": ("@pipes", "Handoff notes between sessions: write, read, list."),
    "context": ("pipes", "Print the prompt-ready memory block for the start of a session."),
    "compact": ("pipes", "Roll the log up into the summary tree (tree/<domain>/); the log is never changed."),
    "tree": ("pipes", "Print the summary tree's outline, or one node with its children."),
    "doctor": ("maint", "Check the vault's files; exit 1 while problems remain. Without --fix nothing changes."),
    "stats": ("maint", "Show what the vault holds: counts, statuses, the lifecycle (heat, pending), health, sizes."),
    "purge": ("maint", "Delete records physically — the only command that does; refuses without --yes."),
    "hooks": ("@agentcmd", "Install git and Claude Code hooks: install, uninstall, claude-code."),
    "hook": ("@agentcmd", "Hook entry points run by git and agents: git-commit, git-rewrite, claude-code."),
    "mcp": ("mcpserve", "Serve the vault to agents over MCP (stdio); needs the optmem[mcp] extra."),
    "merge-driver": ("agentcmd", "Merge a hot-memory file entry by entry (git runs this; `init` and `hooks install` set it up)."),
    "curate": ("maint", "A curation pass: a model you configured proposes merge/update/delete; the gate decides."),
    "eval": ("maint", "Run a fixed query set on a copy of the vault: recall@k, MRR, stale rate; compare with a baseline."),
}


def run(argv: list[str]) -> int:
    """Run one invocation and return its exit code (`optmem.cli.errors.handle` maps every way
    it can end)."""
    from optmem.cli import fast
    from optmem.cli.common import STATE, finish

    mark = len(STATE.created)
    try:
        refuse_bad_bytes(argv)
        found = fast.find(argv, COMMANDS)
        cmd = found.command
        kwargs = fast.parse(cmd.params, found.rest) if cmd else None
        if cmd is None or kwargs is None:
            from optmem.cli.app import app

            code: int = app(args=argv, prog_name="optmem")
            return code
        STATE.vault_opt, STATE.set_opt = found.vault, found.sets
        cmd.fn(**kwargs)
        return 0
    except BaseException as exc:  # noqa: BLE001 - one handler for every ending
        from optmem.cli.errors import handle

        return handle(exc, argv)
    finally:
        finish(mark)


def refuse_bad_bytes(argv: list[str]) -> None:
    """Arguments that are not UTF-8 (Python keeps their bytes as lone surrogates) are refused."""
    for i, arg in enumerate(argv, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as exc:
            from optmem.errors import UsageError

            raise UsageError(f"argument {i} is not valid UTF-8 (at character {exc.start}); pass "
                             "text as UTF-8, or through stdin with -") from None


def main() -> None:
    """Console entry point."""
    sys.exit(run(sys.argv[1:]))
