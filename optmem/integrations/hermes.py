"""OptMem as Hermes Agent's memory provider (`MemoryProvider` of Hermes' `agent/memory_provider.py`).

Hermes loads one external memory provider, from `$HERMES_HOME/plugins/<name>/` (a folder whose
`__init__.py` registers it: `optmem hermes install` writes it) or from the entry-point group
`hermes_agent.memory_providers` (declared in optmem's package metadata). Both reach `register`.
`hermes-agent` is never a dependency of OptMem: `provider()` subclasses Hermes' base class when
Hermes is there (its loader looks for one), and is the plain class otherwise.

The hooks map onto OptMem's own operations:

* `prefetch(query)` → `context` for the query (cached per turn; `queue_prefetch` fills the cache
  for the next turn in a background thread); nothing at all when the vault holds nothing for it,
  and no hot memory in a shared vault (Hermes' own block shows those files already) — in this
  process, on the provider's warm handle (`optmem.warm`: the index stays open between turns,
  checked against the log at each);
* `sync_turn` → the turn appended to the log (chat tier, the session's id), but for a turn of
  courtesies and nothing else (logged, at level INFO), and nothing at all for an agent context
  that is not the primary one (a subagent, cron);
* `on_session_end` → a handoff of the session's project (extractive: the goal, what was reported
  done, what is open);
* `on_session_switch` → the new session id (and a fresh prefetch cache); `on_delegation` → the
  subagent's task and result, kept as a turn; `backup_paths` → the vault when it lives outside
  HERMES_HOME (so `hermes backup` carries it).

A write the vault cannot take now (locked longer than `[lock] timeout`, read-only, a configured
vault folder that is missing: an unmounted disk) is never dropped: it is logged through Hermes'
logging and kept in `$HERMES_HOME/optmem-spool.jsonl`, which the next write that succeeds drains
first, in order. A secret in a turn is never written, not even to the spool: it reads as the
scanner's `[BLOCKED: rule]`, the rest of the turn is kept (`redact.redact_secrets`), and that is logged.
* `on_pre_compress` → the facts worth keeping (redlines, hot memory, what the dropped messages
  touch), for the compression summary;
* `on_memory_write` → Hermes' own memory tool's add / replace / remove mirrored into the vault's
  hot files — or, when the vault's hot files are Hermes' own (`optmem hermes install --shared`),
  journalled as the edit Hermes made;
* tools: `optmem_search`, `optmem_get`, `optmem_correct`, `optmem_forget` — each result built as
  every MCP tool's is (`optmem.integrations.tool_result`: JSON inside the fence, every string
  defused), a refusal its error's JSON alone.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optmem import fsio
from optmem.errors import NearDuplicate, NoMatch, NotFound, OptmemError, OverLimit, UsageError, VaultMissing

logger = logging.getLogger(__name__)  # Hermes' logging (hermes_logging) writes every logger's records

NAME = "optmem"
CONFIG = "optmem.json"  # in HERMES_HOME: {"vault": PATH} (`save_config`, `optmem hermes install`)
PROJECT = "hermes"  # the project a session's handoff is written for (else the agent's identity)
ACKS = {"ok", "okay", "thanks", "thank you", "thx", "yes", "no", "sure", "好", "好的", "谢谢", "嗯", "行"}
ACKS |= {"不", "不要", "不用", "是", "是的", "对", "可以"}  # (yes and no in Chinese, as in English)
ACKS |= {
    "got it",
    "noted",
    "cool",
    "great",
    "收到",
    "明白",
    "明白了",
    "知道了",
    "了解",
    "好吧",
    "嗯嗯",
    "没问题",
    "谢谢你",
}
# what opens or closes an exchange and says nothing else (either side; matched per clause)
GREETINGS = {"hi", "hello", "hey", "hi there", "hello there", "good morning", "good afternoon", "good evening"}
GREETINGS |= {"morning", "you're welcome", "you are welcome", "welcome", "no problem", "no worries", "anytime"}
GREETINGS |= {"my pleasure", "glad to help", "happy to help", "你好", "您好", "嗨", "哈喽", "早", "早上好", "上午好"}
GREETINGS |= {"下午好", "晚上好", "早安", "晚安", "在吗", "在的", "在", "我在", "不客气", "不用谢", "不用客气", "没事"}
GREETINGS |= {"随时找我"}
_SENTENCE = r"(.+?)([。！？；…～!?;~]+|\.+(?=\s|$)|$)"  # a sentence and what ends it (a pattern)
_CLAUSE = r"[,，、:：—–]+|\s-\s"  # what parts its clauses
# what an assistant asks for courtesy, not for an answer — an offer of help, of more, of a topic:
# a "no" to it answers nothing (`question_of`)
COURTESY_ASKS = (
    r"\bhelp\b|anything else|what else|\bwork on\b|would you like to do|帮|有什么需要|还需要什么|需要什么|想做什么"
    r"|还有别的|其他问题"
)
CONTEXT_BUDGET = 2500  # characters of prefetched context a turn
RECALL_AGAIN = 86400.0  # seconds: a record the provider's blocks showed is recorded as recalled once in this
RECALLED_KEPT = 4096  # records whose last recall the provider remembers before it forgets the old ones
FILE_BYTES = 1 << 20  # what is read of the provider's Hermes config (a small JSON object)
SPOOL = "optmem-spool.jsonl"  # in HERMES_HOME: the writes the vault could not take yet, in order
HERMES_NEEDED = (0, 19, 0)  # the provider interface this plugin follows (agent/memory_provider.py)


def vault_path(hermes_home: str | os.PathLike[str]) -> Path:
    """The provider's vault: OPTMEM_VAULT, else the `vault` of its Hermes config, else
    `$HERMES_HOME/optmem`."""
    return _configured(hermes_home) or Path(hermes_home) / "optmem"


def _configured(hermes_home: str | os.PathLike[str]) -> Path | None:
    """The vault a person named (OPTMEM_VAULT, the provider's config), or None for the default."""
    if os.environ.get("OPTMEM_VAULT"):
        return Path(os.environ["OPTMEM_VAULT"]).expanduser()
    try:
        saved = json.loads(fsio.read_text(Path(hermes_home) / CONFIG, limit=FILE_BYTES) or "{}")
    except (OptmemError, ValueError):
        saved = {}
    if isinstance(saved, dict) and isinstance(saved.get("vault"), str) and saved["vault"].strip():
        return Path(saved["vault"]).expanduser()
    return None


def session_project(kwargs: dict[str, Any], mapping: dict[str, Any] | None = None) -> str:
    """The project a session works on: for a terminal session, the folder it runs in (its git
    repository's top folder, named as the git hooks and Claude Code's name it, `[projects]` of
    optmem.toml first); else the agent's profile when it is not the default one; else `hermes`."""
    import subprocess

    from optmem.integrations.git import project_name, repo_project, repo_root
    from optmem.vault import validate_name

    if kwargs.get("platform", "cli") in ("cli", "", None):
        cwd = Path(os.environ.get("TERMINAL_CWD") or os.getcwd())
        try:
            return repo_project(repo_root(cwd), mapping)
        except (OptmemError, OSError, subprocess.SubprocessError):
            folder = cwd.name
        if folder:
            return project_name(folder, mapping)
    identity = str(kwargs.get("agent_identity") or "")
    if identity and identity != "default":
        try:
            return validate_name(identity, "project")
        except OptmemError:
            pass
    return PROJECT


def _clip(text: str, limit: int) -> tuple[str, int]:
    """`text` within `limit` UTF-8 bytes and how many characters were cut: its head and its tail
    kept (what a long message ends with — the answer after a paste, its conclusion — matters as
    much as how it starts), the middle cut where a mark says how much."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, 0
    room = max(0, limit - 48) // 2
    head = data[:room].decode("utf-8", "ignore")
    tail = data[len(data) - room :].decode("utf-8", "ignore") if room else ""
    cut = len(text) - len(head) - len(tail)
    return f"{head} […{cut:,} characters cut…] {tail}", cut


def turn_parts(user: str, assistant: str, limit: int) -> tuple[str, int]:
    """A turn as one record within `limit` bytes, and how many characters were cut: the head and
    tail of what was asked and of the answer. A long side is cut, never the other one: the answer
    keeps at least half the room (all it needs when the question is short), the question what the
    answer leaves."""
    asked, answered = " ".join(user.split()), " ".join(assistant.split())
    room = max(200, limit - 64) - len("Asked:  — Answered: ".encode())
    answer_room = max(room // 2, room - len(asked.encode("utf-8")))
    answered, lost = _clip(answered, answer_room)
    asked, lost_too = _clip(asked, room - len(answered.encode("utf-8")))
    text = " — ".join(f"{what}: {text}" for what, text in (("Asked", asked), ("Answered", answered)) if text)
    return text, lost + lost_too


def turn_text(user: str, assistant: str, limit: int) -> str:
    """`turn_parts`' record text."""
    return turn_parts(user, assistant, limit)[0]


def question_of(answer: str) -> str | None:
    """The question an assistant's message ends with, when it asks the user something — the one
    a short "No" or "OK" of the next turn answers — or None (no question; a courtesy question:
    `COURTESY_ASKS`, "How can I help?")."""
    said = " ".join((answer or "").split())
    if not said.endswith(("?", "？")):
        return None
    sentences = [m.group(0).strip() for m in re.finditer(_SENTENCE, said) if m.group(0).strip()]
    last = sentences[-1] if sentences else said
    bare = last.lower().replace("\u2019", "'").rstrip("?？ ").strip(" '\"“”‘’")
    if re.search(COURTESY_ASKS, bare) or not _states(bare, asks=False):
        return None
    return last if len(last) <= 200 else "…" + last[-199:]


_KINDS: dict[type, str] = {str: "text", list: "a list of messages", dict: "an object (dict)"}


def _hook(nothing: Any = None, **kinds: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """One argument check for a Hermes hook: each argument named in `kinds` must be of its type
    (text, a list of messages, a dict) or None, which stands for an empty one. Anything else is
    logged, naming the hook, the argument and what it got, and the hook does nothing (returns
    `nothing`) — a hook never raises into Hermes' turn."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(self: Provider, *args: Any, **kwargs: Any) -> Any:
            import inspect

            bound = inspect.signature(fn).bind(self, *args, **kwargs)
            for name, kind in kinds.items():
                value = bound.arguments.get(name)
                if value is None:
                    if name in bound.arguments:
                        bound.arguments[name] = kind()  # ("", [], {}: an absent one is empty)
                elif not isinstance(value, kind):
                    said = repr(value)
                    said = said if len(said) <= 40 else said[:39] + "…"
                    self._tell(
                        f"{fn.__name__}: {name!r} is {type(value).__name__} ({said}), not {_KINDS[kind]}; "
                        "nothing was done"
                    )
                    return nothing
            return fn(*bound.args, **bound.kwargs)

        return run

    return wrap


def _ok(obj: dict[str, Any]) -> str:
    """A tool's result as the model reads it: its JSON inside the fence, every string defused —
    built as every MCP tool's is (`optmem.integrations.tool_result`): stored text is data."""
    from optmem.integrations import tool_result

    return str(tool_result({"ok": True, **obj})[0])


# a message of the core names a command line's argument (QUERY is empty): the tool's, here
_METAVARS = re.compile(r"\b(QUERY|TARGET|TEXT|ID)\b")


def _refused(err: OptmemError) -> str:
    """A refusal as the model reads it: the error's JSON (unfenced, defused: `_ok`), an argument
    named as the tool names it (`query`, not QUERY) outside a quoted command."""
    from optmem.integrations import tool_result

    said = err.envelope()
    parts = re.split(r"(`[^`]*`)", str(said["error"].get("message", "")))
    parts[::2] = [_METAVARS.sub(lambda m: f"`{m.group().lower()}`", part) for part in parts[::2]]
    said["error"]["message"] = "".join(parts)
    return str(tool_result(said)[0])


def _unsafe(text: str) -> tuple[str, str] | None:
    """What the write gate's scanner flags in `text` as written — (the rule, or "" when `text`
    cannot be UTF-8 at all; what to say about it) — or None."""
    from optmem.record import holds_lone_surrogate
    from optmem.safety import scan

    if holds_lone_surrogate(text):
        return "", "a lone surrogate (no UTF-8 file can hold it)"
    rule = scan.find(text)
    return (rule, f"the security rule {rule!r}") if rule else None


def _what(entry: dict[str, Any]) -> str:
    return "turn" if "turn" in entry else "handoff" if "handoff" in entry else "memory-tool write"


def _courtesy(user: str, assistant: str) -> bool:
    """Whether a turn is courtesies and nothing else, the one kind of turn not kept: every clause
    of both sides an acknowledgement, a greeting or a courtesy (`ACKS`, `GREETINGS`, or several of
    them: "ok thanks", "好的谢谢") or no word at all ("👍"), and on the assistant's side the
    question that ends a sentence ("How can I help?", "有什么需要？") — a question asked for an
    answer is none ("ok" / "Shall I also drop the old column?" is kept, so the "No" after it is
    kept naming it: tester 18 #14). A short turn is no courtesy for being short: "What port?" /
    "9090." is a fact."""
    return not _states(user, asks=False) and not _states(assistant, asks=True) and question_of(assistant) is None


def _states(text: str, *, asks: bool) -> bool:
    """Whether `text` holds a clause that is not a courtesy (see `_courtesy`)."""
    said = " ".join((text or "").split()).lower().replace("\u2019", "'")
    for m in re.finditer(_SENTENCE, said):
        clauses = [c.strip(" '\"“”‘’()（）") for c in re.split(_CLAUSE, m.group(1))]
        if asks and re.search("[?？]", m.group(2)):
            clauses = clauses[:-1]  # (the question itself)
        if any(c and not _courtesies().fullmatch(c) for c in clauses):
            return True
    return False


@functools.cache
def _courtesies() -> re.Pattern[str]:
    """One or more of `ACKS` and `GREETINGS` one after the other, and what is no word at all.
    The repetition is possessive: the longest phrase at each point is taken and never split again
    (嗯嗯 is one phrase and two — tried every way, a run of them before another character took
    time exponential in its length); a run it cannot read whole is kept, never dropped."""
    phrases = "|".join(map(re.escape, sorted(ACKS | GREETINGS, key=len, reverse=True)))
    return re.compile(rf"(?:(?:{phrases})(?![a-z])|[^\w])*+")


def _texts(messages: list[dict[str, Any]] | None, role: str) -> list[str]:
    """The text of each message of `role` (OpenAI-style: a string, or a list of parts)."""
    out = []
    for m in messages or []:
        if not isinstance(m, dict) or m.get("role") != role:
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        if isinstance(content, str) and content.strip():
            out.append(content.strip())
    return out


TOOLS = [
    {
        "name": "optmem_search",
        "description": "Search long-term memory (OptMem): ranked records, corrections and locked rules "
        "first; each hit says whether it is current, superseded or a guess.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to search for (any language)."},
                "limit": {"type": "integer", "description": "How many hits (default 8).", "minimum": 1},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
    {
        "name": "optmem_get",
        "description": "Read one stored record by its id (an id a search hit, a correction or a warning names): "
        "its text and labels — whether it is current, superseded (and by which record), pending, held, "
        "forgotten or in conflict, where it came from (origin), when it was last checked — and what happened "
        "to it since.",
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The record's id (or ≥ 6 of its first or last characters)."},
            },
            "required": ["id"],
            "additionalProperties": False,
        },
    },
    {
        "name": "optmem_correct",
        "description": "Correct a stored fact that changed: the new text supersedes the record "
        "(which stays in the history).",
        "parameters": {
            "type": "object",
            "properties": {
                "target": {
                    "type": "string",
                    "description": "The record's id (or ≥ 6 of its characters), or words naming it.",
                },
                "text": {"type": "string", "description": "The fact as it is now."},
            },
            "required": ["target", "text"],
            "additionalProperties": False,
        },
    },
    {
        "name": "optmem_forget",
        "description": "Forget a stored record that is wrong: out of search and context, kept in the log "
        "with the reason.",
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The record's id (or ≥ 6 of its characters)."},
                "reason": {"type": "string", "description": "Why it is wrong."},
            },
            "required": ["id", "reason"],
            "additionalProperties": False,
        },
    },
]
TOOL_ARGS: dict[str, set[str]] = {str(t["name"]): set(t["parameters"]["properties"]) for t in TOOLS}  # type: ignore[index]


def _note(requests: list[str], judged: str) -> str:
    """A Hermes handoff's note: the session's goal (its first request) and the reader's judgement
    of which open items a later report settled (`handoff.session_note` checks each alone)."""
    goal = f"goal: {requests[0]}" if requests else ""
    if goal and judged and not goal.endswith(tuple(".!?。！？")):
        goal += "."  # (apart from the sentence after it)
    return " ".join(x for x in (goal, judged) if x)


class Provider:
    """The provider's behaviour (Hermes' hooks); `provider()` gives it Hermes' base class."""

    def __init__(self) -> None:
        self.vault: Any = None
        self.warm: Any = None  # (`optmem.warm.Warm`: recall and search read through it)
        self.home = Path.home() / ".hermes"
        self.session_id = ""
        self.writes = True  # false for an agent context that is not the primary one
        self.project = PROJECT
        self.missing: Path | None = None  # a configured vault folder that is not there
        self._warn: Callable[[str], Any] | None = None  # Hermes' warning_callback (a terminal session)
        self._cache: dict[str, tuple[str, list[str]]] = {}  # query → prefetched context, its read (this turn's)
        self._recalled: dict[str, float] = {}  # record id → when a block this provider showed last recorded it
        self._questions: dict[str, str | None] = {}  # session → the question its last answer ended with
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    # -- identity and set-up ----------------------------------------------------------------------
    @property
    def name(self) -> str:
        return NAME

    def is_available(self) -> bool:
        return True  # local files: nothing to reach, no credentials

    def get_config_schema(self) -> list[dict[str, Any]]:
        return [
            {
                "key": "vault",
                "description": "The OptMem vault folder (default: $HERMES_HOME/optmem; OPTMEM_VAULT overrides)",
                "required": False,
                "default": "",
            }
        ]

    def save_config(self, values: dict[str, Any], hermes_home: str) -> None:
        vault = str(values.get("vault") or "").strip()
        from optmem import fsio

        fsio.atomic_write(Path(hermes_home) / CONFIG, json.dumps({"vault": vault} if vault else {}) + "\n")

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        from optmem.vault import ensure_layout
        from optmem.warm import Warm

        self.home = Path(kwargs.get("hermes_home") or os.environ.get("HERMES_HOME") or self.home)
        warn = kwargs.get("warning_callback")
        self._warn = warn if callable(warn) else None
        configured = _configured(self.home)
        if self.warm is not None:
            self.warm.close()
        self.warm = Warm(configured or self.home / "optmem")  # recall and search read through it
        self.vault = self.warm.vault()
        self.session_id = session_id or ""
        self.writes = kwargs.get("agent_context", "primary") in ("primary", None, "")
        if not self.writes:  # (deliberate: the primary agent keeps what its subagents and cron jobs report)
            logger.info(
                "optmem: session %s runs as agent context %r, not the primary one: it recalls, and writes nothing "
                "(no turn, handoff, memory write or correction)",
                session_id,
                kwargs.get("agent_context"),
            )
        self.project = session_project(
            kwargs, self.vault.settings.projects if configured is None or configured.is_dir() else None
        )
        self.missing = None
        if configured is not None and not configured.is_dir() and fsio.outside(configured, self.home) is not None:
            # a folder a person named outside HERMES_HOME that is not there (an unmounted disk, a
            # typo): never made anew as an empty vault; the session's writes wait in the spool
            self.missing = configured
            self._tell(
                f"the OptMem vault {configured} does not exist: nothing is recalled, and this session's "
                f"turns wait in {self.home / SPOOL} until it does — mount it, or create it with "
                f"`optmem init {configured}`, or name another in {self.home / CONFIG} / OPTMEM_VAULT"
            )
            return
        ensure_layout(self.vault)  # an agent's memory that is still empty is a vault, not an error
        if self.writes:
            self._drain()

    def _tell(self, message: str, *, error: bool = False) -> None:
        """Say `message` through Hermes' logging (and its terminal warning, when it gave one)."""
        (logger.error if error else logger.warning)("optmem: %s", message)
        if self._warn is not None:
            try:
                self._warn(f"OptMem: {message}")
            except Exception:  # noqa: BLE001 — (Hermes' callback: the message is logged above)
                pass

    def _present(self) -> bool:
        """Whether the vault is there to read and write (a missing one may have been mounted since)."""
        if self.missing is not None and self.missing.is_dir():
            from optmem.vault import ensure_layout

            self.missing = None
            ensure_layout(self.vault)
        return self.missing is None

    def system_prompt_block(self) -> str:
        return (
            "Long-term memory is OptMem (plain files): relevant records, corrections and locked rules "
            "arrive before each turn. Use optmem_search before answering from memory, optmem_get to read a "
            "record by its id, optmem_correct "
            "when a stored fact changed, optmem_forget for one that is wrong; the memory tool's "
            "entries are kept in OptMem too."
        )

    # -- recall -----------------------------------------------------------------------------------
    def _context(self, query: str) -> tuple[str, list[str]]:
        """Context for `query` — nothing when the vault holds nothing for it (no empty fence); in
        a shared vault without the hot files, which Hermes' own memory block already shows — and
        the records it read, unrecorded: the block is read when it is shown (`_shown`)."""
        from optmem import context

        if not self._present():
            return "", []
        try:  # (a vault of its own: recall runs in a thread beside the turn's writes)
            ctx = context.build(  # the project's block and last handoff; records from everywhere
                self.warm.vault(),
                project=self.project,
                query=query.strip() or None,
                budget=CONTEXT_BUDGET,
                hot=not self._shared(),
                everywhere=True,
                record=False,
            )
        except (OptmemError, UnicodeError):
            return "", []  # (recall that cannot be had this turn: the turn goes on without it)
        return (ctx.text, ctx.read) if any(s["items"] or s["omitted"] for s in ctx.sections) else ("", [])

    def _shown(self, block: tuple[str, list[str]]) -> str:
        """A block given to the agent: what it read is recalled (warm; a handoff shown whole is read —
        one written after it here follows it). A record this provider recorded within `RECALL_AGAIN`
        is not recorded again: Hermes asks each turn, mostly for the same records, and a line a turn
        would say nothing new (a sweep counts unused days) and grow ACCESS.jsonl with the session."""
        from optmem import clock, context

        text, read = block
        now = clock.now().timestamp()
        with self._lock:
            new = [i for i in read if not 0 <= now - self._recalled.get(i, -RECALL_AGAIN) < RECALL_AGAIN]
            if len(self._recalled) > RECALLED_KEPT:  # (a long-lived process: the ones that would be said again go)
                self._recalled = {i: t for i, t in self._recalled.items() if 0 <= now - t < RECALL_AGAIN}
            self._recalled.update(dict.fromkeys(new, now))
        if new and self.warm is not None:
            context.recalled(self.warm.vault(), new)
        return text

    @_hook("", query=str, session_id=str)
    def prefetch(self, query: str, *, session_id: str = "") -> str:
        with self._lock:
            cached = self._cache.pop(query, None)
        return self._shown(cached if cached is not None else self._context(query))

    @_hook(query=str, session_id=str)
    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        def fill() -> None:
            block = self._context(query)  # (read when a prefetch of the same query shows it; else never)
            with self._lock:
                self._cache = {query: block}  # the next turn's: one query, the newest

        thread = threading.Thread(target=fill, name="optmem-prefetch", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    # -- writes -----------------------------------------------------------------------------------
    @_hook(user_content=str, assistant_content=str, session_id=str, messages=list)
    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
    ) -> None:
        if not self.writes:
            return
        session, held = session_id or self.session_id, None
        # the question this session's last answer ended with: a "No" / "OK" now answers it
        question = self._questions.pop(session, None)  # (asked in a turn that was kept)
        if _courtesy(user_content, assistant_content):
            if question is None:
                logger.info("optmem: a turn of session %s was not kept: it holds courtesies and nothing else", session)
                return
            user_content = f"{user_content.strip()} (the reply to “{question}”)"
        from optmem.quarantine import kind_of
        from optmem.redact import redact_secrets

        # each side scanned as written (a pasted transcript's role markers start lines): a secret
        # reads as the scanner's placeholder, the rest kept; a possible injection is held in
        # quarantine for a person; what no file can hold is not kept
        (user_content, asked), (assistant_content, answered) = map(redact_secrets, (user_content, assistant_content))
        if redacted := list(dict.fromkeys(asked + answered)):
            self._tell(
                f"a turn of session {session} is kept with a secret redacted: it trips the security rule(s) "
                f"{', '.join(map(repr, redacted))}, which read as [BLOCKED: rule] in the log"
            )
        for rule, said in filter(None, map(_unsafe, (user_content, assistant_content))):
            if not rule or kind_of(rule) == "secret":
                self._tell(f"a turn of session {session} was not kept: it trips {said}")
                return
            held = held or rule
        if held:
            self._tell(
                f"a turn of session {session} is kept but held in quarantine: it trips the security rule {held!r} "
                "(a possible prompt injection) — `optmem quarantine` lists it, `optmem release ID` lets it in"
            )
        # one line, no role markers (which read as a forged conversation turn to the scanner)
        limit = self.vault.settings.limits.record_bytes if self.missing is None else 64 * 1024
        turn, cut = turn_parts(user_content, assistant_content, limit)
        self._questions[session] = question_of(assistant_content)
        self._write(
            {"turn": turn, "session": session, "project": self.project}
            | ({"held": held} if held else {})
            | ({"cut": cut} if cut else {})  # (the record says it: its text's mark, and `cut`)
            | ({"redacted": redacted} if redacted else {})  # (and its placeholders, `redacted`)
        )

    @_hook(messages=list)
    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        from optmem.integrations.claude_code import reports

        if not self.writes:
            return
        asked = _texts(messages, "user")
        got = reports(_texts(messages, "assistant"))  # (an item clearly reported done later is not open)
        if not asked and not got.done and not got.open and not got.blocked:
            return
        # (which open items the reader took as done is said: its judgement, not the agent's words;
        # the note is made of its parts when it is stored — `handoff.session_note`, as the Claude
        # Code hook's: a part the scanner flags is held alone, the goal and the items kept)
        self._write(
            {
                "handoff": self.project,
                "done": list(dict.fromkeys(got.done))[-5:],
                "blocked": list(dict.fromkeys(got.blocked))[-5:],
                "next": list(dict.fromkeys(got.open))[-5:],
                "requests": [" ".join(asked[0].split())[:240]] if asked else [],
                "judged": got.judged(),
                "judged_count": len(got.settled),
                "session": self.session_id,
            }
        )

    @_hook(task=str, result=str, child_session_id=str)
    def on_delegation(self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any) -> None:
        """A subagent's task and what came back, kept as a turn of this session."""
        self.sync_turn(task, result, session_id=self.session_id)

    @_hook(new_session_id=str, parent_session_id=str)
    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        rewound: bool = False,
        **kwargs: Any,
    ) -> None:
        self.session_id = new_session_id or self.session_id
        with self._lock:
            self._cache = {}  # (a prefetch made for the session left behind)

    def backup_paths(self) -> list[str]:
        """The vault, when it lives outside HERMES_HOME (`hermes backup` walks only that)."""
        vault = vault_path(self.home)
        return [] if fsio.outside(vault, self.home) is None else [str(vault)]

    def _write(self, entry: dict[str, Any]) -> None:
        """Write one turn or handoff — after what the spool holds, which goes first. What the vault
        cannot take now is spooled (and logged); what it refuses for what it says is logged."""
        from optmem import spool

        if self._drain():
            try:
                self._store(entry)
                return
            except (OptmemError, UnicodeError, OSError) as err:
                if not spool.transient(err):
                    self._tell(f"a {_what(entry)} of session {entry.get('session')} was not kept: {err}")
                    return
                reason = str(err)
        else:
            reason = "earlier writes still wait in the spool"
        try:
            spool.put(self.home / SPOOL, entry, within=self.home)  # (stamped with when it was said)
        except OptmemError as err:  # (HERMES_HOME itself cannot be written: nothing is left but the log)
            self._tell(f"a {_what(entry)} of session {entry.get('session')} is lost: {reason}; and {err}", error=True)
            return
        self._tell(f"a {_what(entry)} waits in {self.home / SPOOL} (the next write that succeeds stores it): {reason}")

    def _store(self, entry: dict[str, Any]) -> None:
        from optmem import handoff, log, spool

        if not self._present():
            raise VaultMissing(f"the vault {self.missing} does not exist (an unmounted disk?)")
        said_at = spool.said_at(entry)  # (a spooled write: when it was said)
        extra = (
            ({"said_at": said_at} if said_at else {})
            | ({"cut": entry["cut"]} if isinstance(entry.get("cut"), int) else {})  # characters cut from a long turn
            | ({"redacted": entry["redacted"]} if isinstance(entry.get("redacted"), list) else {})  # secrets left out
        ) or None
        if "memory" in entry:
            from optmem import memory

            try:
                memory.apply(
                    self.vault,
                    entry["ops"],
                    target=str(entry["memory"]),
                    source="hermes",
                    said_at=said_at,
                    origin="agent",  # the agent's own memory-tool edit (as the provider writes every record)
                )
            except (NotFound, NoMatch, NearDuplicate, OverLimit) as err:  # (held already, or no more)
                self._not_mirrored(entry, err, said_at)
        elif "turn" in entry:
            draft = log.Draft(
                entry["turn"],
                tier="chat",
                project=entry.get("project") or None,  # the session's, as its handoff's
                session=entry.get("session") or None,
                source="hermes",
                origin="agent",
                extra=extra,
                held=str(entry["held"]) if entry.get("held") else None,
            )
            log.append(self.vault, draft)
        else:  # (a line the scanner flags is held in quarantine, out of the handoff: never the whole refused)
            count = entry.get("judged_count")
            said = (
                handoff.session_note(
                    [str(r) for r in entry.get("requests") or []],
                    str(entry.get("judged") or ""),
                    count if isinstance(count, int) else None,
                    _note,
                )
                if "requests" in entry or "judged" in entry
                else handoff.SessionNote(str(entry.get("note") or ""), "", [], ([], 0))  # (spooled by an older one)
            )
            _, _, warnings = handoff.write_kept(
                self.vault,
                str(entry["handoff"]),
                done=[str(i) for i in entry.get("done") or []],
                blocked=[str(i) for i in entry.get("blocked") or []],
                next=[str(i) for i in entry.get("next") or []],
                note=said.note,
                bare_note=said.bare or None,
                left_out=said.left_out,
                scrubbed=said.scrubbed,
                source="hermes",
                session=entry.get("session") or None,
                said_at=said_at,
                origin="agent",  # the agent's own account of its session
            )
            for warning in warnings:
                self._tell(warning)

    def _not_mirrored(self, entry: dict[str, Any], err: OptmemError, said_at: str | None) -> None:
        """A memory-tool edit hot memory did not take (full, its old text not there, nearly there
        already): said as a warning (logged, and Hermes' terminal warning); the text it adds or
        replaces with goes to the log — from the agent, found by search and by every other agent —
        and the warning names the record, and for a replace that the hot entry may be outdated."""
        from optmem import log

        op = entry["ops"][0]
        action = op.get("op") or op.get("action")
        text = str(op.get("text") or op.get("content") or "").strip()
        file = "USER.md" if entry["memory"] == "user" else "MEMORY.md"
        said = f"Hermes' memory-tool {action} was not mirrored into {file}: {err.message}"
        if not text:  # (a remove: nothing to keep)
            self._tell(said)
            return
        try:
            res = log.append(
                self.vault,
                log.Draft(
                    text,
                    project=self.project or None,
                    tags=[entry["memory"]],
                    source="hermes",
                    session=entry.get("session") or None,
                    origin="agent",  # the agent's own memory-tool edit
                    extra={"said_at": said_at} if said_at else None,
                ),
            )
        except OptmemError as again:
            self._tell(f"{said}; and its text could not go to the log either: {again}", error=True)
            return
        old = str(op.get("old_text"))[:80]
        stale = f"; the hot entry it replaces (“{old}”) still says the old value, and may be outdated"
        said += f". Its text went to the log as record {res.id} (search finds it)"
        self._tell(said + (stale if action == "replace" else ""))

    def _drain(self) -> bool:
        """Store what the spool holds, in order (`optmem.spool`); whether it is empty now."""
        from optmem import spool

        path = self.home / SPOOL
        stored: list[dict[str, Any]] = []

        def store(entry: dict[str, Any]) -> None:
            self._store(entry)
            stored.append(entry)

        try:
            return spool.drain(path, store, within=self.home, dropped=self._dropped)
        except (OptmemError, ValueError) as err:
            self._tell(f"the spool {path} cannot be read: {err}; move it aside to go on", error=True)
            return False
        finally:
            if stored:
                logger.info("optmem: %d spooled write(s) stored", len(stored))

    def _dropped(self, entry: dict[str, Any], err: BaseException) -> None:
        if "line" in entry and len(entry) == 1:  # (what the spool could not read: set aside)
            self._tell(f"a spooled line could not be read ({err!r}): it is kept in {self.home / SPOOL}.rejected")
            return
        self._tell(f"a spooled {_what(entry)} of session {entry.get('session')} was not kept: {err}")

    @_hook("", messages=list)
    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        """The facts worth keeping through a compression: what OptMem holds that the messages about
        to be dropped touch (redlines and hot memory first)."""
        said = " ".join(_texts(messages, "user")[-3:])[-400:]
        return self._shown(self._context(said))

    @_hook(action=str, target=str, content=str, metadata=dict)
    def on_memory_write(self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None) -> None:
        if not self.writes:
            return
        # an argument Hermes' memory tool never gives is said, as every hook's (tester 14 #14)
        odd = ("action", action) if action not in ("add", "replace", "remove") else ("target", target)
        if odd[0] == "action" or target not in ("memory", "user"):
            self._tell(
                f"on_memory_write: {odd[0]} {repr(odd[1])[:60]} is not one of Hermes' memory tool's "
                "(add, replace or remove; memory or user); nothing was done"
            )
            return
        old = (metadata or {}).get("old_text")
        if self._shared():
            if self._present():  # Hermes wrote the very file: journal its edit, as the edit it made
                self._journal_edit(target, action, old if isinstance(old, str) else None, content)
            return
        ops: list[dict[str, Any]]
        if action == "add" and content.strip():
            ops = [{"op": "add", "text": content}]
        elif action == "replace" and old and content.strip():
            ops = [{"action": "replace", "old_text": old, "content": content}]  # Hermes': the whole entry
        elif action == "remove" and old:
            ops = [{"op": "remove", "old": old}]
        else:
            return
        self._write({"memory": target, "ops": ops, "session": self.session_id})

    def _journal_edit(self, target: str, action: str, old: str | None, content: str) -> None:
        from optmem import memory
        from optmem.follow import follow_hot

        try:
            memory.follow_edit(self.vault, target, action, old, content, source="hermes", origin="agent")
        except (OptmemError, OSError) as err:  # (the next read journals it as the file's drift)
            self._tell(f"Hermes' memory-tool {action} is not journalled yet: {err}")
            follow_hot(self.vault)

    def _shared(self) -> bool:
        """Whether the vault's hot files are Hermes' own (the vault is `$HERMES_HOME/memories`)."""
        return bool(self.vault.root.resolve() == (self.home / "memories").resolve())

    # -- tools ------------------------------------------------------------------------------------
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [dict(t) for t in TOOLS]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        from optmem import facts, log, search

        args = {} if args is None else args
        try:
            if not isinstance(args, dict):
                raise UsageError(
                    f"{tool_name}: the arguments must be an object of named values, not {type(args).__name__}; "
                    "nothing was done"
                )
            if tool_name not in TOOL_ARGS:
                raise UsageError(f"optmem has no tool {tool_name!r}; its tools: {', '.join(TOOL_ARGS)}")
            unknown = set(args) - TOOL_ARGS[tool_name]
            if unknown:
                raise UsageError(
                    f"{tool_name} takes no argument {sorted(unknown)[0]!r}; nothing was done — its arguments: "
                    f"{', '.join(sorted(TOOL_ARGS[tool_name]))}"
                )
            for name, value in args.items():
                wanted = int if name == "limit" else str
                wrong = isinstance(value, bool) or not isinstance(value, wanted)
                if wrong or (isinstance(value, int) and value < 1):
                    what = "a whole number, 1 or more" if wanted is int else "a string"
                    raise UsageError(f"{tool_name}: argument {name!r} must be {what}, not {value!r}; nothing was done")
                if isinstance(value, str):
                    value.encode("utf-8")  # (a lone surrogate: refused below, as every other refusal)
            if tool_name == "optmem_search":
                query, limit = str(args.get("query") or ""), int(args.get("limit") or 8)
                found = search.search(self.warm.vault(), query, limit=limit)
                return _ok(found.to_json())
            if tool_name == "optmem_get":
                from optmem import lookup

                got = lookup.get(self.warm.vault(), str(args.get("id") or ""))
                return _ok({"record": got.record, "warnings": got.warnings})
            if not self.writes:
                raise UsageError("this agent context does not write to memory (only the primary agent does)")
            if tool_name == "optmem_correct":
                done = facts.correct(
                    self.vault,
                    str(args.get("target") or ""),
                    str(args.get("text") or ""),
                    source="hermes",
                    origin="agent",
                )
                return _ok({"id": done.id, "corrects": done.corrects, "record": done.record})
            gone = log.forget(
                self.vault, str(args.get("id") or ""), reason=str(args.get("reason") or "") or None, source="hermes"
            )
            return _ok({"status": gone.status, "id": gone.id, "tombstone": gone.tombstone})
        except OptmemError as err:
            return _refused(err)
        except UnicodeEncodeError:
            return _refused(UsageError(f"{tool_name}: a string holds a lone surrogate, which no UTF-8 text can carry"))

    def shutdown(self) -> None:
        for thread in self._threads:
            thread.join(timeout=10)
        self._threads.clear()
        if self.writes and self.vault is not None:
            self._drain()
        if self.warm is not None:
            self.warm.close()


def provider() -> Any:
    """A provider instance: of a subclass of Hermes' `MemoryProvider` when Hermes is importable
    (its loader and manager expect one), of `Provider` itself otherwise."""
    try:
        from agent.memory_provider import MemoryProvider  # type: ignore[import-not-found]
    except ImportError:
        return Provider()
    kind = type("OptmemMemoryProvider", (Provider, MemoryProvider), {"__module__": __name__})
    return kind()


def register(ctx: Any) -> None:
    """Hermes' plugin entry: `ctx.register_memory_provider(provider)` (folder plugin and entry point).
    An older Hermes than the interface this provider follows is told so in its log."""
    older = hermes_too_old()
    if older:
        logger.warning(
            "optmem: Hermes Agent %s is older than %s, the provider interface this plugin follows", older, NEEDS
        )
    ctx.register_memory_provider(provider())


NEEDS = ".".join(map(str, HERMES_NEEDED))


def hermes_too_old() -> str | None:
    """The installed hermes-agent's version when it is older than `HERMES_NEEDED` (else None)."""
    from importlib import metadata

    try:
        version = metadata.version("hermes-agent")
    except metadata.PackageNotFoundError:
        return None
    parts = tuple(int(p) if p.isdigit() else 0 for p in version.split(".")[:3])
    return version if parts < HERMES_NEEDED else None


PLUGIN_INIT = '''"""OptMem as Hermes Agent's memory provider (written by `optmem hermes install`).

register(ctx) calls ctx.register_memory_provider with a MemoryProvider backed by an OptMem vault.
"""

from optmem.integrations.hermes import register  # noqa: F401
'''
PLUGIN_YAML = """name: optmem
version: {version}
description: "OptMem — memory in plain files: corrections supersede, locked rules, Chinese and English
  search, no model needed."
requires_hermes: ">={needs}"  # agent/memory_provider.py as Hermes Agent {needs} defines it
pip_dependencies:
  - optmem
hooks:
  - on_session_end
  - on_session_switch
  - on_pre_compress
  - on_memory_write
  - on_delegation
"""


def install(hermes_home: Path, *, shared: bool = False) -> dict[str, Any]:
    """Write the plugin folder `$HERMES_HOME/plugins/optmem/` (`__init__.py`, `plugin.yaml`) and,
    with `shared`, the provider's config making the vault `$HERMES_HOME/memories` — Hermes' own
    MEMORY.md / USER.md are then the vault's hot files (one truth for both)."""
    from optmem import __version__, fsio

    folder = hermes_home / "plugins" / NAME
    fsio.ensure_dir(folder)
    fsio.atomic_write(folder / "__init__.py", PLUGIN_INIT, within=hermes_home)
    fsio.atomic_write(folder / "plugin.yaml", PLUGIN_YAML.format(version=__version__, needs=NEEDS), within=hermes_home)
    written = [str(folder / "__init__.py"), str(folder / "plugin.yaml")]
    if shared:
        config = hermes_home / CONFIG
        fsio.atomic_write(config, json.dumps({"vault": str(hermes_home / "memories")}) + "\n", within=hermes_home)
        written.append(str(config))
    vault = vault_path(hermes_home)
    out: dict[str, Any] = {"plugin": str(folder), "written": written, "vault": str(vault)}
    if not shared and (hermes_home / CONFIG).exists() and vault == hermes_home / "memories":
        out["note"] = (
            f"the vault stays Hermes' memories folder, as {hermes_home / CONFIG} says (an earlier --shared); "
            f"remove that file for {hermes_home / 'optmem'}"
        )
    return out
