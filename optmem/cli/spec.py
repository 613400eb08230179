"""Command declarations, free of Typer: one source for the fast parser and for the Typer app.

Each command is a plain function registered with `@command(name, *params)`. The fast path
(`optmem.cli.fast`) parses ordinary invocations straight from these declarations without
importing Typer; the Typer app (`optmem.cli.app`) is built from the same declarations for
`--help`, usage errors and everything the fast path declines.
"""

from __future__ import annotations

from collections.abc import Callable

from optmem.value import NamedTuple, Value

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any

# name → (module under optmem.cli, one-line help); "@module" marks a group of subcommands.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("hot", "Create a vault, or add only what is missing to an existing folder."),
    "add": ("hot", "Add an entry to hot memory (an exact duplicate is a no-op)."),
    "replace": ("hot", "Replace the matched span inside the one entry containing OLD."),
    "remove": ("hot", "Remove the whole entry containing OLD (it stays in LOG.jsonl)."),
    "show": ("hot", "Print hot memory ready to paste into a prompt, with usage headers, fenced as stored notes."),
    "apply": ("hot", "Apply a batch of add/replace/remove operations all-or-nothing."),
    "append": ("logcmd", "Append a record to LOG.jsonl (through the duplicate write gate) and print its id."),
    "get": ("logcmd", "Show one record with its status (current / superseded by … / expired / forgotten)."),
    "forget": ("logcmd", "Hide a record from search and context; it stays in LOG.jsonl."),
    "search": ("searchcmd", "Ranked search: corrections outrank what they correct, redlines outrank everything."),
    "correct": ("searchcmd", "Append a correction that supersedes TARGET at query time (the old record stays)."),
    "history": ("searchcmd", "Show every version of a fact, oldest first (corrections and same-key records)."),
    "conflicts": ("searchcmd", "List the facts with more than one current value; settle each with `resolve`."),
    "resolve": (
        "searchcmd",
        "Settle a conflict on KEY (or a fact's id): a `resolution` record supersedes every value in it.",
    ),
    "merge": ("searchcmd", "Merge fragments about one topic into one structured record; every detail is kept."),
    "reindex": ("searchcmd", "Rebuild the derived search index from LOG.jsonl (it is also rebuilt automatically)."),
    "touch": ("lifecmd", "Say records were used: they stay warm, and a cold one is warm again (ACCESS.jsonl)."),
    "sweep": ("lifecmd", "Cool what nobody used for long: out of normal search and context, never deleted."),
    "pending": ("lifecmd", "The review queue: guesses waiting to be confirmed, oldest first."),
    "confirm": ("lifecmd", "Confirm a pending record: it becomes current."),
    "verify": ("lifecmd", "Say facts were checked and still hold (when, by whom, a note)."),
    "reject": ("lifecmd", "Reject a pending record: it is forgotten, with your reason (it stays in LOG.jsonl)."),
    "quarantine": ("lifecmd", "Records held in quarantine (a possible injection), each with the rule that fired."),
    "release": ("lifecmd", "Release a record held in quarantine: you reviewed it, it is fine."),
    "handoff": ("@pipes", "Handoff notes between sessions: write, read, list."),
    "context": ("pipes", "Print the prompt-ready memory block for the start of a session."),
    "compact": ("pipes", "Roll the log up into the summary tree (tree/<domain>/); the log is never changed."),
    "tree": ("pipes", "Print the summary tree's outline, or one node with its children."),
    "doctor": ("maint", "Check the vault's files; exit 1 while problems remain. Without --fix nothing changes."),
    "stats": ("maint", "Show what the vault holds: counts, statuses, the lifecycle (heat, pending), health, sizes."),
    "trust": (
        "maint",
        "Trust this vault's redlines as rules (a vault that came in a git clone shows them as notes until then).",
    ),
    "segment": (
        "maint",
        "One log file per writer (log/<writer>/YYYY-MM.jsonl), so clones never conflict; LOG.jsonl stays.",
    ),
    "export": ("maint", "Write the whole vault as JSONL on stdout: a header, every record, the hot entries."),
    "import": (
        "maint",
        "Import an export (records keyed by id), or another tool's memory files with --from.",
    ),
    "purge": ("maint", "Delete records physically — the only command that does; refuses without --yes."),
    "hooks": ("@agentcmd", "Install git and Claude Code hooks: install, uninstall, claude-code."),
    "hook": ("@agentcmd", "Hook entry points run by git and agents: git-commit, git-rewrite, claude-code."),
    "mcp": (
        "mcpserve",
        "Serve the vault to agents over MCP (stdio, or HTTP with --http); needs the optmem[mcp] extra.",
    ),
    "hermes": ("@agentcmd", "Hermes Agent: install OptMem as its memory provider."),
    "sync": ("agentcmd", "Share the vault through git: commit, fetch, merge, scan what came in, catch up, push."),
    "merge-driver": (
        "agentcmd",
        "Merge a hot-memory file entry by entry (git runs this; `init` and `hooks install` set it up).",
    ),
    "curate": ("maint", "A curation pass: a model you configured proposes merge/update/delete; the gate decides."),
    "eval": (
        "maint",
        "Run a fixed query set on a copy of the vault: recall@k, MRR, stale rate; compare with a baseline.",
    ),
}


class CommandExit(Exception):
    """A command finished with this exit code (raised instead of calling sys.exit)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Param(NamedTuple):
    """One argument or option. `decls` are option names; none means a positional argument."""

    name: str
    decls: tuple[str, ...] = ()
    type: type = str
    default: Any = None
    help: str = ""
    multiple: bool = False
    metavar: str | None = None
    required: bool = False
    choices: tuple[str, ...] | None = None  # the values it takes (for MCP schemas; the core checks)

    @property
    def is_argument(self) -> bool:
        return not self.decls

    @property
    def is_flag(self) -> bool:
        return bool(self.decls) and self.type is bool


class Command(Value):
    name: str  # "search", or "handoff write" for a group's subcommand
    fn: Callable[..., Any]
    params: tuple[Param, ...]
    help: str


REGISTRY: dict[str, Command] = {}


def refuse_empty(params: tuple[Param, ...], values: dict[str, Any]) -> None:
    """An option given an empty value (`--ttl ""`) is a mistake, never a silent default."""
    from optmem.errors import UsageError

    for p in params:
        if p.is_argument or p.type is not str:
            continue
        value = values.get(p.name)
        given = value if isinstance(value, list) else [value]
        if any(v is not None and not v.strip() for v in given):
            raise UsageError(f"{p.decls[0]} is empty; give it a value, or leave the option out")


def fold_choices(params: tuple[Param, ...], values: dict[str, Any]) -> None:
    """A value from a fixed set is read in any case (`-t USER` is `-t user`): a word of a set is
    no name, and a refusal for its capitals helps nobody. What is not in the set is left for the
    core to refuse, naming the set."""
    for p in params:
        value = values.get(p.name)
        if p.choices and isinstance(value, str) and value not in p.choices and value.strip().lower() in p.choices:
            values[p.name] = value.strip().lower()


JSON = Param("json_out", ("--json",), bool, False, "Print one JSON document on stdout.")
UNSAFE = Param(
    "allow_unsafe", ("--allow-unsafe",), bool, False, "Store even if the security scan flags the text or another field."
)
SHOW_UNSAFE = Param(
    "allow_unsafe",
    ("--allow-unsafe",),
    bool,
    False,
    "Show text the security scan flags (else it reads [BLOCKED: rule]).",
)


def arg(
    name: str,
    help: str,
    *,
    metavar: str | None = None,
    required: bool = True,
    default: Any = None,
    multiple: bool = False,
) -> Param:
    """A positional argument; `multiple` takes all the remaining ones (it must come last)."""
    return Param(name, (), str, default, help, multiple, metavar or name.upper(), required)


def opt(
    name: str,
    *decls: str,
    help: str,
    type: type = str,
    default: Any = None,
    multiple: bool = False,
    metavar: str | None = None,
    choices: tuple[str, ...] | None = None,
) -> Param:
    return Param(
        name, decls or ("--" + name.replace("_", "-"),), type, default, help, multiple, metavar, False, choices
    )


ORIGIN = opt(
    "origin",
    help="Where the text came from: user, agent, tool (a tool's or web page's output: shown as found in a tool "
    "result, and held for review when it speaks to an AI or orders one of the acts docs/safety.md lists), sync, "
    "import:<tool> (default: user at a terminal, else agent — and agent for a command Claude Code, Codex or "
    "Hermes runs).",
)


WHO = (
    "Who runs it: user (you — the default at a terminal) or agent (the default without a terminal, or in a "
    "command Claude Code, Codex or Hermes runs)."
)
PERSON = opt("origin", help=f"{WHO} Only a person may: an agent's is refused.")


def flag(name: str, *decls: str, help: str) -> Param:
    return Param(name, decls or ("--" + name.replace("_", "-"),), bool, False, help)


def command(name: str, *params: Param) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a command; its docstring is its --help. Errors propagate to the one handler
    (`optmem.cli.errors.handle`)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        # every command takes --json; one whose output is not one document says what it does
        declared = params if any(p.name == JSON.name for p in params) else (*params, JSON)

        def checked(**kwargs: Any) -> Any:
            refuse_empty(declared, kwargs)
            fold_choices(declared, kwargs)
            return fn(**kwargs)

        REGISTRY[name] = Command(name, checked, declared, fn.__doc__ or "")
        return fn

    return deco
