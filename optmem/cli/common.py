"""What every command shares: the vault at the edge, output, error reporting. Typer-free."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from optmem.errors import OptmemError, UsageError, envelope
from optmem.patterns import lazy
from optmem.terminal import printable

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any

    from optmem.vault import Vault


class _State:
    """What one invocation knows at the edge: the --vault value, and the vaults it opened (whose
    settings warnings are reported when it ends)."""

    def __init__(self) -> None:
        self.vault_opt: str | None = None
        self.set_opt: list[str] = []  # --set section.name=value pairs: settings for this invocation
        self.vaults: list[Any] = []
        self.created: list[Any] = []  # vaults this invocation's writes created
        self.warm: Any = None  # a server's warm handle on its vault (`optmem.warm`): the vault's calls use it


_PROCESS = _State()
_CALL: ContextVar[_State | None] = ContextVar("optmem_state", default=None)


def _now(name: str) -> Any:
    """A field of the state of the invocation running now (`_Current`)."""
    return property(
        lambda _: getattr(_CALL.get() or _PROCESS, name),
        lambda _, value: setattr(_CALL.get() or _PROCESS, name, value),
    )


class _Current:
    """`STATE`: the state of the invocation running now — the process's own, or inside a
    server's call (`own_state`) that call's, so calls running at once in threads share none.
    (A field `_State` gains is named here too: without slots, a new one would raise.)"""

    __slots__ = ()
    vault_opt = _now("vault_opt")
    set_opt = _now("set_opt")
    vaults = _now("vaults")
    created = _now("created")
    warm = _now("warm")


STATE: _State = _Current()  # type: ignore[assignment]  # (it reads as a _State)


@contextmanager
def own_state(warm: Any = None) -> Iterator[None]:
    """A state of its own for one call of a server, with the process's --vault and --set, and
    `warm` (`optmem.warm.Warm`) behind the vault it names."""
    call = _State()
    call.vault_opt, call.set_opt, call.warm = STATE.vault_opt, list(STATE.set_opt), warm
    token = _CALL.set(call)
    try:
        yield
    finally:
        _CALL.reset(token)


# When set (the MCP server), stdout lines are collected here instead of written: a tool's result
# is then exactly what the command prints with --json. A ContextVar keeps concurrent calls apart.
CAPTURE: ContextVar[list[str] | None] = ContextVar("optmem_capture", default=None)


STDOUT = "<stdout>"  # the `file` of an error writing the output itself


def output_failed(exc: OSError) -> OptmemError:
    """The error for output the system would not take (a full disk behind `> file`, a reader
    that went away): `unwritable`, exit 3, reported on stderr (`optmem.cli.errors`)."""
    from optmem.errors import Unwritable
    from optmem.fsio import why_unwritable

    return Unwritable(
        f"cannot write the output to stdout: {why_unwritable(exc)}; the output is cut short "
        "(what the command stored is stored) — write it where there is room, or read it whole",
        file=STDOUT,
    )


def write_out(text: str, *, flush: bool = False) -> None:
    """Write text to stdout as it is (buffered); a refused write raises `output_failed`."""
    try:
        sys.stdout.write(text)
        if flush:
            sys.stdout.flush()
    except OSError as exc:
        raise output_failed(exc) from exc


def echo(text: str, *, err: bool = False) -> None:
    """Write a line as UTF-8 (stdout is data, stderr is talk), whatever the locale says — without
    a control character or escape sequence (`optmem.terminal`): stored text never acts on the
    terminal. (JSON comes through whole: `dumps` escapes them.) Output the system refuses raises
    `output_failed`; talk it refuses is dropped (nowhere to say it)."""
    text = printable(text)
    captured = CAPTURE.get()
    if captured is not None and err:
        # an MCP tool call (stdio or the hub): its talk is in the JSON it answers (`warning` …);
        # on the server's stderr it would be a line per request, quoting stored text (tester 14 #11)
        import logging

        logging.getLogger("optmem.mcp").debug("a command's note to stderr, %d characters, not copied", len(text))
        return
    if captured is not None:
        captured.append(text)
        return
    stream = sys.stderr if err else sys.stdout
    data = (text + "\n").encode("utf-8")
    buf = getattr(stream, "buffer", None)
    try:
        if buf is not None:
            stream.flush()
            buf.write(data)
            buf.flush()
        else:
            stream.write(text + "\n")
    except OSError as exc:
        if not err:
            raise output_failed(exc) from exc


def note(message: str) -> None:
    echo(message, err=True)


def warn_all(warnings: list[str]) -> None:
    for w in warnings:
        note(f"warning: {w}")


def resolve_vault(explicit: str | None = None, overrides: list[str] | None = None) -> Vault:
    """The vault, resolved once, here at the edge: --vault > OPTMEM_VAULT > .optmem/ > ~/.optmem."""
    from optmem.vault import Vault, resolve

    chosen = explicit if explicit is not None else STATE.vault_opt
    if chosen is not None and not chosen.strip():
        raise UsageError("--vault is empty; give the vault's folder, or leave the option out")
    root = resolve(chosen, dict(os.environ), Path.cwd(), Path.home())
    vault: Vault
    warm = STATE.warm
    if warm is not None and root == warm.root and not overrides and STATE.set_opt == warm.overrides:
        vault = warm.vault()  # a server's call: its kept settings and open index
    else:
        vault = Vault(root, overrides=[*STATE.set_opt, *(overrides or [])])
    STATE.vaults.append(vault)
    return vault


def user_settings() -> Any:
    """The user's own configuration (`$OPTMEM_CONFIG`, else `$XDG_CONFIG_HOME/optmem/config.toml`,
    else `~/.config/optmem/config.toml`): where commands optmem runs may be named, since a
    vault's optmem.toml can arrive through git. Read here, at the edge; missing is empty."""
    from optmem import fsio, settings

    path = os.environ.get("OPTMEM_CONFIG") or str(
        Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "optmem" / "config.toml"
    )
    return settings.load(fsio.read_text(Path(path), limit=settings.FILE_BYTES), commands=True, where=path)


def summarizer_command(flag: str | None) -> str | None:
    """--summarizer, else OPTMEM_SUMMARIZER, else the user's configuration (never the vault's)."""
    return flag or os.environ.get("OPTMEM_SUMMARIZER") or user_settings().tree.summarizer or None


def finish(mark: int = 0) -> None:
    """The end of an invocation (`mark`: how many vaults were noted as new when it began — an
    MCP tool call runs inside the server's own): a vault its writes created is announced; then
    the settings warnings."""
    for vault in STATE.created[mark:]:
        if vault.made_here:  # not when another process made it between the check and the write
            note(f"created a new vault at {vault.root}")
        elif vault.laid_out and vault.held_files:  # a folder of other files is a vault now: said, with what was added
            note(f"made {vault.root} a vault (it held other files; added {', '.join(vault.laid_out)} and the log)")
    del STATE.created[mark:]
    for vault in STATE.vaults:
        said = swept_note(vault)
        if said:
            note(said)
        if vault.degraded:
            note(f"warning: {vault.degraded}")
        if vault.read_bare and vault.bare():  # (not when a write of this invocation made it a vault)
            note(
                f"note: {vault.root} holds none of a vault's files, so there was nothing to read and nothing was "
                f"written there; `optmem init {vault.root}` makes it a vault, or point --vault / OPTMEM_VAULT at yours"
            )
        vault.read_bare = False
        for said in vault.lost:  # (what an outside write dropped: `optmem.lost`)
            note(f"warning: {said}")
        vault.lost.clear()
    settings_warnings()


def degraded() -> str | None:
    """Why this invocation's reads went past the search index (`index._from_log`), or None."""
    return next((v.degraded for v in STATE.vaults if v.degraded), None)


def swept() -> dict[str, Any] | None:
    """The daily sweep a write of this invocation ran or started (`lifecycle.auto_sweep`), in
    the shape `optmem sweep --json` prints; None when none did."""
    done = next((v.swept for v in STATE.vaults if v.swept is not None), None)
    return done._asdict() if done is not None else None


def swept_note(vault: Any) -> str | None:
    """What the daily sweep a write ran did, said to a person: how many records went cold and
    why, where they are now, and how to turn it off. Nothing when it cooled nothing."""
    done = vault.swept
    if done is None:
        return None
    s = vault.settings.lifecycle
    where = (
        "Search shows a cold record only when nothing warm matches as well (`optmem search "
        "--include-cold` shows them all); context leaves them out; `optmem touch ID` warms one. "
        '`[lifecycle] auto_sweep = "off"` in optmem.toml stops the daily sweep.'
    )
    if done.background:
        return (
            f"sweeping: the daily sweep runs in the background (the log holds over [lifecycle] "
            f"background_above = {s.background_above:,} records) and cools what nobody used for "
            f"long; `optmem stats` shows when it last ran. {where}"
        )
    if not done.cooled:
        return None
    why = {
        "heat": f"unused for {done.unused_days}+ days" if done.unused_days is not None else "unused for long",
        "pending_ttl": f"guess(es) unconfirmed for {s.pending_ttl_days:g}+ days",
        "expired": f"expired {s.expired_grace_days:g}+ days ago",
        "superseder_cold": "replaced by a record that went cold",
    }
    parts = ", ".join(
        f"{n:,} {why.get(reason, reason)}" for reason, n in sorted(done.by_reason.items(), key=lambda item: -item[1])
    )
    return f"swept: {done.cooled:,} record(s) went cold ({parts}). {where}"


def settings_warnings() -> None:
    """Say, on stderr, what the settings of the vaults this invocation used got wrong (unknown
    sections or keys) — once, when the command ends."""
    said: set[str] = set()
    for vault in STATE.vaults:
        if vault.settings_loaded:
            for w in vault.settings.warnings:
                if w not in said:
                    said.add(w)
                    note(f"warning: {w}")
    STATE.vaults.clear()


def get_vault(*, write: bool = False, create: bool = True, overrides: list[str] | None = None) -> Vault:
    """The resolved vault. A read requires it to exist; so does a write that edits what is
    stored (`create=False`: forget, correct, replace, remove — there is nothing to edit in a
    vault that is not there). A write that stores something new creates a missing vault — when
    it takes the lock, after its input was checked, so a refused write creates nothing (noted
    on stderr when made).
    """
    from optmem.vault import initialised

    vault = resolve_vault(None, overrides)
    warm = STATE.warm
    if warm is not None and warm.laid_out and vault.root == warm.root and not initialised(vault):
        _served_vault_gone(vault)
    # (one check for reads and writes: a write that makes the fallback vault while the current
    # folder is another vault is refused as a read there is)
    vault.require(create=write and create, named=STATE.vault_opt is not None or bool(os.environ.get("OPTMEM_VAULT")))
    if write and not initialised(vault):
        # a folder never set up gets its .gitattributes and .gitignore when the write happens;
        # once they exist, what the user changes in them is theirs
        vault.lay_out_on_write = True
        # (before this write adds any; a fresh clone's `.git` is no file of its own: tester 14 #14)
        vault.held_files = vault.exists() and any(p.name != ".git" for p in vault.root.iterdir())
        STATE.created.append(vault)  # (announced at the end: a new folder, or one made a vault)
    return vault


def _served_vault_gone(vault: Vault) -> None:
    """A server's call whose vault is no longer where the server laid it out at its start (the
    folder renamed, moved, deleted or unmounted while it ran): refused — a write would start a
    new, empty vault in its place, and the agent's memory would split in two in silence (the git
    hooks and the Hermes provider never make a vault where one was, either)."""
    from optmem.errors import VaultMissing

    what = "is gone" if not vault.exists() else "is no longer a vault (its .gitattributes and .gitignore are gone)"
    raise VaultMissing(
        f"the vault this MCP server serves, {vault.root}, {what} since the server started — renamed, moved or "
        "unmounted? Nothing was read or written (no new vault is made in its place): put the folder back, or "
        "restart the server with --vault naming where the vault is now",
        vault=str(vault.root),
    )


def env_domain(domain: str | None) -> str | None:
    """--domain, else OPTMEM_DOMAIN (the core falls back to config, then `default`); a name
    OPTMEM_DOMAIN gives that is not one is refused naming the variable (tester 14 #13: the
    error named a domain nobody had typed on the command line)."""
    if domain:
        return domain
    said = os.environ.get("OPTMEM_DOMAIN") or None
    if said is not None:
        from optmem.errors import InvalidName
        from optmem.vault import validate_name

        try:
            validate_name(said, "domain")
        except InvalidName as exc:
            raise InvalidName(
                f"OPTMEM_DOMAIN (the environment's domain): {exc.message}; set it to such a name, or unset it",
                **exc.context,
                variable="OPTMEM_DOMAIN",
            ) from exc
    return said


def origin_of(origin: str | None, agent: bool = False) -> str:
    """--origin, else who runs the command: `agent` (--agent; an agent host's command, even on a
    pty: `quarantine.agent_mark`, said on stderr when on a terminal; no terminal on stdin — an
    agent runs optmem as a subprocess), `user` (a person typing at a terminal)."""
    import sys

    from optmem.quarantine import agent_mark

    if origin is not None:
        return origin
    terminal = sys.stdin is not None and sys.stdin.isatty()
    if agent:
        return "agent"
    if mark := agent_mark(os.environ):
        if terminal:  # (a person typing in a shell the host started carries its mark too: say so)
            # — and name no flag that passes the person check: an agent on a pty reads this too
            # (tester 14 #4); docs/safety.md tells a person the rest
            inside = ("Claude Code's `!` bash mode, " if mark[0] == "CLAUDECODE" else "") + f"a shell {mark[1]} started"
            note(
                f"written as the agent's: {mark[0]} is set ({mark[1]} runs this command); if you typed it "
                f"yourself ({inside}), run it at a terminal of your own that {mark[1]} did not start"
            )
        return "agent"
    return "user" if terminal else "agent"


def person_check(doing: str, command: str, origin: str | None) -> str:
    """The origin of a command only a person may run (`origin_of` of --origin), after the one
    person check (`quarantine.refuse_unless_person`: `needs_person` unless it is `user`)."""
    from optmem.quarantine import check_origin, refuse_unless_person

    who = origin_of(check_origin(origin))
    refuse_unless_person(doing, command, who)
    return who


STDIN_BYTES = 16 << 20  # what `-` reads from stdin at most: a record's text is bounded far below


def read_stdin(what: str, limit: int = STDIN_BYTES) -> bytes:
    """stdin's bytes, at most `limit` (an endless pipe is refused, `too_large`, not read whole)."""
    from optmem import fsio

    if hasattr(sys.stdin, "buffer"):
        return fsio.read_stream(sys.stdin.buffer, limit, f"{what} on stdin")
    return fsio.read_stream(_Encoded(sys.stdin), limit, f"{what} on stdin")


class _Encoded:
    """A text stdin (a test's) read as UTF-8 bytes."""

    def __init__(self, fh: Any) -> None:
        self.fh = fh

    def read(self, n: int) -> bytes:
        return str(self.fh.read(n)).encode("utf-8")


def stdin_text(data: str) -> str:
    """Text piped in, read as a file is: a leading BOM (an encoding mark a Windows editor saves, not
    content) dropped, and line ends as text mode reads them (\\r\\n and \\r become \\n)."""
    if data.startswith("\ufeff"):
        data = data[1:]
    return data.replace("\r\n", "\n").replace("\r", "\n") if "\r" in data else data


def read_arg(value: str | None, what: str = "TEXT", limit: int = STDIN_BYTES) -> str | None:
    """A TEXT argument, where `-` means: read it from stdin (not under MCP, whose stdin is the
    protocol stream: there `-` is just text) — at most `limit` bytes of it."""
    if value == "-" and CAPTURE.get() is None:
        raw = read_stdin(what, limit)
        try:
            data = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"{what} on stdin is not valid UTF-8 (byte {exc.start}); nothing was stored") from exc
        data = stdin_text(data)
        if not data.strip():
            raise UsageError(
                f"{what} was '-' but stdin was empty; pipe it in (echo 'the text' | optmem "
                "… -) or give it as an argument"
            )
        return data
    return value


# JSON escapes C0 controls itself; DEL and the C1 controls (U+0080–U+009F, which a terminal may
# read as escape sequences) it writes raw: escaped here too, so JSON output holds no control
# character and still reads back as exactly the stored text
_C1 = lazy("[\x7f-\x9f]")


def dumps(payload: Any) -> str:
    import json

    try:
        text = json.dumps(payload, ensure_ascii=False, indent=2, default=_default, allow_nan=False)
    except ValueError:  # an inf or nan (a field a hand-typed line holds): JSON has no number for it
        text = json.dumps(_finite(payload), ensure_ascii=False, indent=2, default=_default, allow_nan=False)
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _finite(value: Any) -> Any:
    """`value` with every inf and nan float in it as null (as JavaScript's JSON.stringify writes
    them): output that a strict JSON reader takes. (Settings refuse such numbers: this is for a
    stored line's own fields.)"""
    import math

    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    from optmem.value import Value

    if isinstance(value, Value):
        return _finite(value._asdict())
    from dataclasses import asdict, is_dataclass

    if is_dataclass(value) and not isinstance(value, type):
        return _finite(asdict(value))
    return value


def _default(obj: Any) -> Any:
    from optmem.value import Value

    if isinstance(obj, Value):  # (a hot file's usage, …: a NamedTuple is a list already)
        return obj._asdict()
    if isinstance(obj, Path):
        return str(obj)
    from dataclasses import asdict, is_dataclass  # only when a payload holds one

    if is_dataclass(obj) and not isinstance(obj, type):
        return asdict(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def short(rid: str | None) -> str:
    """Human output shows the last 8 characters of an id (`view.short_id`)."""
    from optmem.view import short_id

    return short_id(rid)


def stored_line(text: str) -> str:
    """Stored text on one line of a human listing (search's hits, conflicts, pending, merge
    suggestions): defused as every surface shows stored text (`fence.line`: a fake `[REDLINE]`
    or `[SUPERSEDED by …]` reads `⟦REDLINE⟧`, tester 14 #5), its runs of white space one space."""
    from optmem.safety.fence import line

    return " ".join(line(text).split())


def emit(json_out: bool, payload: dict[str, Any], human: Callable[[], str | None], *, ok: bool = True) -> None:
    """Print the result: `{"ok": …, ...}` with --json, else the human rendering. A result that
    is not ok without being an error (doctor's problems, eval's regressions) passes ok=False.
    When a write ran the daily sweep, the JSON says what it did (`swept`; stderr says it too,
    when the command ends); when reads had to answer from the log, it says why (`degraded`)."""
    if json_out:
        ran = swept()  # a write that ran the daily sweep says what it cooled
        slow = degraded()  # reads answered from the log: the index could not be updated
        gone = [said for v in STATE.vaults for said in v.lost]  # what an outside write dropped
        echo(
            dumps(
                {
                    "ok": ok,
                    **payload,
                    **({"swept": ran} if ran and "swept" not in payload else {}),
                    **({"degraded": slow} if slow else {}),
                    **({"lost": gone} if gone and "lost" not in payload else {}),
                }
            )
        )
    else:
        text = human()
        if text:
            echo(text)


def error_payload(code: str, message: str, **context: Any) -> str:
    return dumps(envelope(code, message, **context))


def render_error_human(err: OptmemError, ctx: dict[str, Any]) -> str:
    lines = [f"error ({err.code}): {err.message}"]
    for item in ctx.get("entries", []):
        lines.append(f"  [{item['id']}] {item['text']}")
    for item in ctx.get("candidates", []):
        label = item.get("preview") or item.get("text") or ""
        what = item.get("id") or " / ".join(f"{k} {v if v is not None else '—'}" for k, v in item.items())
        where = "/".join(str(item[k]) for k in ("domain", "project") if item.get(k)) if item.get("id") else ""
        lines.append(
            f"  candidate {what}"
            + (f"  ({where})" if where else "")
            + (f": {label}" if label and item.get("id") else "")
        )
    if "similar" in ctx and isinstance(ctx["similar"], dict):
        lines.append(f"  similar [{ctx['similar']['id']}] {ctx['similar']['text']}")
    if "usage" in ctx and isinstance(ctx["usage"], dict) and "chars" in ctx["usage"]:
        u = ctx["usage"]
        lines.append(f"  usage: {u['chars']:,}/{u['limit']:,} chars")
    return "\n".join(lines)


# what an error carries of the vault's stored text (the entries a no_match lists, the records an
# ambiguous target could mean, a near duplicate, the values a write may update)
STORED_CONTEXT = ("entries", "candidates", "similar", "possible_update")


def report_error(err: OptmemError, json_out: bool) -> None:
    """The one place an expected failure is shown: JSON on stdout, or a message on stderr — the
    stored text it quotes as every surface shows it (`view.shown`: `[BLOCKED: rule]` when flagged)."""
    ctx = err.context
    if any(k in ctx for k in STORED_CONTEXT):
        from optmem import view

        ctx = {k: view.shown(v) if k in STORED_CONTEXT else v for k, v in ctx.items()}
    if json_out:
        echo(error_payload(err.code, err.message, **ctx))
    else:
        echo(render_error_human(err, ctx), err=True)


def progress_callback(label: str = "indexing LOG.jsonl") -> Callable[[int, int], None] | None:
    """A progress callback that draws a bar on a terminal once the work takes over a second."""
    if not sys.stderr.isatty():
        return None
    import time

    start = time.monotonic()
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if "bar" not in state:
            if time.monotonic() - start < 1.0 or done >= total:
                return
            from rich.console import Console
            from rich.progress import Progress

            bar = Progress(transient=True, console=Console(stderr=True))
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task(label, total=total)
        state["bar"].update(state["task"], completed=done)
        if done >= total:
            state["bar"].stop()

    return update
