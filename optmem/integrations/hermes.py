"""OptMem as Hermes Agent's memory provider (`MemoryProvider` of Hermes' `agent/memory_provider.py`).

Hermes loads one external memory provider, from `$HERMES_HOME/plugins/<name>/` (a folder whose
`__init__.py` registers it: `optmem hermes install` writes it) or from the entry-point group
`hermes_agent.memory_providers` (declared in optmem's package metadata). Both reach `register`.
`hermes-agent` is never a dependency of OptMem: `provider()` subclasses Hermes' base class when
Hermes is there (its loader looks for one), and is the plain class otherwise.

The hooks map onto OptMem's own operations:

* `prefetch(query)` → `context` for the query (cached per turn; `queue_prefetch` fills the cache
  for the next turn in a background thread);
* `sync_turn` → the turn appended to the log (chat tier, the session's id), skipping trivial
  turns, and nothing at all for an agent context that is not the primary one (a subagent, cron);
* `on_session_end` → a handoff of the session (extractive: the goal, what was reported done,
  what is open);
* `on_pre_compress` → the facts worth keeping (redlines, hot memory, what the dropped messages
  touch), for the compression summary;
* `on_memory_write` → Hermes' own memory tool's add / replace / remove mirrored into the vault's
  hot files — or, when the vault's hot files are Hermes' own (`optmem hermes install --shared`),
  journalled as the edit Hermes made;
* tools: `optmem_search`, `optmem_correct`, `optmem_forget`.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from optmem import fsio
from optmem.errors import OptmemError, UsageError

NAME = "optmem"
CONFIG = "optmem.json"  # in HERMES_HOME: {"vault": PATH} (`save_config`, `optmem hermes install`)
PROJECT = "hermes"  # the project a session's handoff is written for (else the agent's identity)
TRIVIAL = 12  # characters: a turn whose both sides are this short says nothing worth keeping
ACKS = {"ok", "okay", "thanks", "thank you", "thx", "yes", "no", "sure", "好", "好的", "谢谢", "嗯", "行"}
CONTEXT_BUDGET = 2500  # characters of prefetched context a turn
FILE_BYTES = 1 << 20  # what is read of the provider's Hermes config (a small JSON object)


def vault_path(hermes_home: str | os.PathLike[str]) -> Path:
    """The provider's vault: OPTMEM_VAULT, else the `vault` of its Hermes config, else
    `$HERMES_HOME/optmem`."""
    if os.environ.get("OPTMEM_VAULT"):
        return Path(os.environ["OPTMEM_VAULT"]).expanduser()
    try:
        saved = json.loads(fsio.read_text(Path(hermes_home) / CONFIG, limit=FILE_BYTES) or "{}")
    except (OptmemError, ValueError):
        saved = {}
    if isinstance(saved, dict) and isinstance(saved.get("vault"), str) and saved["vault"].strip():
        return Path(saved["vault"]).expanduser()
    return Path(hermes_home) / "optmem"


def _ok(obj: dict[str, Any]) -> str:
    return json.dumps({"ok": True, **obj}, ensure_ascii=False)


def _refused(err: OptmemError) -> str:
    return json.dumps(err.envelope(), ensure_ascii=False)


def _unsafe(text: str) -> bool:
    """Whether the write gate's scanner flags `text` as written, or it cannot be UTF-8 at all."""
    from optmem import scan
    from optmem.record import holds_lone_surrogate

    return holds_lone_surrogate(text) or scan.find(text) is not None  # (a lone surrogate: no file holds it)


def _trivial(user: str, assistant: str) -> bool:
    said = [" ".join((t or "").split()).strip(" .!?。！？").lower() for t in (user, assistant)]
    return all(len(s) < TRIVIAL for s in said) or said[0] in ACKS or not any(said)


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


class Provider:
    """The provider's behaviour (Hermes' hooks); `provider()` gives it Hermes' base class."""

    def __init__(self) -> None:
        self.vault: Any = None
        self.home = Path.home() / ".hermes"
        self.session_id = ""
        self.writes = True  # false for an agent context that is not the primary one
        self.project = PROJECT
        self._cache: dict[str, str] = {}  # query → prefetched context (this turn's)
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
        from optmem.vault import Vault, ensure_layout, validate_name

        self.home = Path(kwargs.get("hermes_home") or os.environ.get("HERMES_HOME") or self.home)
        self.vault = Vault(vault_path(self.home))
        ensure_layout(self.vault)  # an agent's memory that is still empty is a vault, not an error
        self.session_id = session_id or ""
        self.writes = kwargs.get("agent_context", "primary") in ("primary", None, "")
        identity = str(kwargs.get("agent_identity") or "")
        try:
            self.project = validate_name(identity, "project") if identity else PROJECT
        except OptmemError:
            self.project = PROJECT

    def system_prompt_block(self) -> str:
        return (
            "Long-term memory is OptMem (plain files): relevant records, corrections and locked rules "
            "arrive before each turn. Use optmem_search before answering from memory, optmem_correct "
            "when a stored fact changed, optmem_forget for one that is wrong; the memory tool's "
            "entries are kept in OptMem too."
        )

    # -- recall -----------------------------------------------------------------------------------
    def _context(self, query: str) -> str:
        from optmem import context

        try:
            return context.build(self.vault, query=query.strip() or None, budget=CONTEXT_BUDGET).text
        except (OptmemError, UnicodeError):
            return ""  # (recall that cannot be had this turn: the turn goes on without it)

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        with self._lock:
            cached = self._cache.pop(query, None)
        return cached if cached is not None else self._context(query)

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        def fill() -> None:
            text = self._context(query)
            with self._lock:
                self._cache = {query: text}  # the next turn's: one query, the newest

        thread = threading.Thread(target=fill, name="optmem-prefetch", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    # -- writes -----------------------------------------------------------------------------------
    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
    ) -> None:
        from optmem import log

        if not self.writes or _trivial(user_content, assistant_content):
            return
        if any(_unsafe(side) for side in (user_content, assistant_content)):
            return  # scanned as written (a pasted transcript's role markers start lines): not kept
        # one line, no role markers (which read as a forged conversation turn to the scanner)
        text = f"Asked: {' '.join(user_content.split())} — Answered: {' '.join(assistant_content.split())}"
        limit = self.vault.settings.limits.record_bytes  # (a long turn is kept whole up to it)
        text = text.encode("utf-8")[: max(200, limit - 64)].decode("utf-8", "ignore")
        try:
            log.append(
                self.vault,
                log.Draft(
                    text, tier="chat", session=session_id or self.session_id or None, source="hermes", origin="agent"
                ),
            )
        except (OptmemError, UnicodeError):
            pass  # a turn the write gate refuses (a secret, an injection) is not kept; the session goes on

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        from optmem import handoff
        from optmem.integrations.claude_code import report_lines

        if not self.writes:
            return
        asked = _texts(messages, "user")
        done: list[str] = []
        open_items: list[str] = []
        for text in _texts(messages, "assistant"):
            d, o = report_lines(text)
            done += d
            open_items += o
        if not asked and not done and not open_items:
            return
        note = f"goal: {' '.join(asked[0].split())[:240]}" if asked else None
        try:
            handoff.write(
                self.vault,
                self.project,
                done=list(dict.fromkeys(done))[-5:],
                next=list(dict.fromkeys(open_items))[-5:],
                note=note,
                source="hermes",
                session=self.session_id or None,
            )
        except (OptmemError, UnicodeError):
            pass  # (a handoff the gate refuses is not written; the session still ends)

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        """The facts worth keeping through a compression: what OptMem holds that the messages about
        to be dropped touch (redlines and hot memory first)."""
        said = " ".join(_texts(messages, "user")[-3:])[-400:]
        return self._context(said)

    def on_memory_write(self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None) -> None:
        from optmem import memory
        from optmem.follow import follow_hot

        if target not in ("memory", "user") or not self.writes:
            return
        if self._shared():
            follow_hot(self.vault)  # Hermes wrote the very file: journal its edit
            return
        old = (metadata or {}).get("old_text")
        ops: list[dict[str, Any]]
        if action == "add" and content.strip():
            ops = [{"op": "add", "text": content}]
        elif action == "replace" and old and content.strip():
            ops = [{"action": "replace", "old_text": old, "content": content}]  # Hermes': the whole entry
        elif action == "remove" and old:
            ops = [{"op": "remove", "old": old}]
        else:
            return
        try:
            memory.apply(self.vault, ops, target=target, source="hermes")
        except (OptmemError, UnicodeError):
            pass  # (an entry the vault holds already, or no longer holds: nothing to mirror)

    def _shared(self) -> bool:
        """Whether the vault's hot files are Hermes' own (the vault is `$HERMES_HOME/memories`)."""
        return bool(self.vault.root.resolve() == (self.home / "memories").resolve())

    # -- tools ------------------------------------------------------------------------------------
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [dict(t) for t in TOOLS]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        from optmem import facts, log, search

        args = args or {}
        try:
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
                found = search.search(self.vault, str(args.get("query") or ""), limit=int(args.get("limit") or 8))
                return _ok(found.to_json())
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
    """Hermes' plugin entry: `ctx.register_memory_provider(provider)` (folder plugin and entry point)."""
    ctx.register_memory_provider(provider())


PLUGIN_INIT = '''"""OptMem as Hermes Agent's memory provider (written by `optmem hermes install`).

register(ctx) calls ctx.register_memory_provider with a MemoryProvider backed by an OptMem vault.
"""

from optmem.integrations.hermes import register  # noqa: F401
'''
PLUGIN_YAML = """name: optmem
version: {version}
description: "OptMem — memory in plain files: corrections supersede, locked rules, Chinese and English
  search, no model needed."
pip_dependencies:
  - optmem
hooks:
  - on_session_end
  - on_pre_compress
  - on_memory_write
"""


def install(hermes_home: Path, *, shared: bool = False) -> dict[str, Any]:
    """Write the plugin folder `$HERMES_HOME/plugins/optmem/` (`__init__.py`, `plugin.yaml`) and,
    with `shared`, the provider's config making the vault `$HERMES_HOME/memories` — Hermes' own
    MEMORY.md / USER.md are then the vault's hot files (one truth for both)."""
    from optmem import __version__, fsio

    folder = hermes_home / "plugins" / NAME
    fsio.ensure_dir(folder)
    fsio.atomic_write(folder / "__init__.py", PLUGIN_INIT, within=hermes_home)
    fsio.atomic_write(folder / "plugin.yaml", PLUGIN_YAML.format(version=__version__), within=hermes_home)
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
