"""The life of a record: importance, heat, the cold tier, and pending memories.

* **Importance** (0..1) is written with a record (`--importance`) or defaults by kind and tier
  (`[lifecycle]`); a redline is always 1.
* **Heat** = importance × e^(−decay × days since the record was last written, said again or
  recalled). Decay is per kind: agent memory loses ~2 % a day, session-type notes ~8 %.
* **Recalls** (`touch`, `search --touch`, what `context` injects) are lines in `ACCESS.jsonl`
  beside the log: appended without the log's lock, never a line of `LOG.jsonl` per search, and
  mergeable by git like the log (order-free: the latest time wins). Being shown by `context`
  keeps a record warm, but `context` chooses by the other accesses only — else whatever it
  showed once would be shown, and kept, for ever.
* **Sweep** marks records whose heat fell below `cold_below` — and unconfirmed guesses older
  than `pending_ttl_days`, expired records past `expired_grace_days` — as **cold**: out of
  context, and of a plain search unless it matches at least as well as the best warm hit
  (`search._best_cold`); still in the log, in `--include-cold`, `get` and `history`. A cold
  record written about, said again or recalled after the sweep is warm again (`view.is_cold`).
  The daily sweep a write runs (`auto_sweep`) is reported by that write's command.
  Redlines, hot-memory journal records (their file decides) and bookkeeping never cool.
* **Pending**: a record appended with a confidence below `pending_threshold` waits, ranked below
  current records and kept out of context, until it is stated (said again by a write that is no
  guess and no inference: the write gate's `seen`, `view.confirms`) or someone runs `confirm`;
  `reject` forgets it with a reason. Other guesses of it are counted, never enough.

Policy is the pure functions at the top; `sweep`, `touch_ids` and `queue` are the drivers, which
write ACCESS.jsonl only. What writes through the log about a record — `touch` checking the ids it
is given, `confirm`, `reject` — is `optmem.review`, above the log.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from contextlib import nullcontext

from optmem import clock, fsio, view
from optmem.errors import UsageError
from optmem.record import CORRECTION, NEVER_COOL, Tier
from optmem.settings import Lifecycle
from optmem.value import NamedTuple
from optmem.vault import Vault

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing)
if TYPE_CHECKING:
    from typing import Any

DAY = 86400.0
IDS_PER_LINE = 1000  # a sweep's cold marks, per ACCESS.jsonl line


# -- policy -------------------------------------------------------------------------------------
def default_importance(s: Lifecycle, kind: str, tier: int) -> float:
    """A record's importance when none was written: by kind and tier."""
    if tier == Tier.REDLINE:
        return 1.0
    if kind == CORRECTION:
        return s.importance_correction
    return {Tier.EVIDENCE: s.importance_evidence, Tier.CHAT: s.importance_chat}.get(Tier(tier), s.importance)


def importance(s: Lifecycle, kind: str, tier: int, written: float | None) -> float:
    """A record's importance: as written, else its default; a redline's is always 1."""
    if tier == Tier.REDLINE:
        return 1.0
    return written if written is not None else default_importance(s, kind, tier)


def matters(s: Lifecycle, kind: str, tier: int, key: str | None, written: float | None) -> bool:
    """Whether a fact matters enough to be checked now and then: a keyed fact, a redline, or one
    at least `check_importance` important."""
    return key is not None or tier == Tier.REDLINE or importance(s, kind, tier, written) >= s.check_importance


def unchecked_since(s: Lifecycle, row: Any, now: float) -> float | None:
    """When a fact that matters was last checked (`verify`, or a correction's own writing) — or,
    never checked, written — when that is more than `unchecked_days` ago; else None."""
    if not s.unchecked_days or not matters(s, row.kind, row.tier, row.key, row.imp):
        return None
    last = row.checked if row.checked is not None else row.ts
    return last if last is not None and now - last > s.unchecked_days * DAY else None


def unchecked(idx: Any, s: Lifecycle, now: float) -> list[tuple[float, Any]]:
    """(since, row) for each current fact that matters and went unchecked for `unchecked_days`
    (cold ones too: they are current, only unused), longest unchecked first."""
    from optmem import view

    if not s.unchecked_days:
        return []
    # (a record of no written importance matters by its key or tier — unless a default reaches the bar)
    defaults = max(s.importance, s.importance_evidence, s.importance_chat, s.importance_correction)
    rows = idx.unchecked_candidates(now - s.unchecked_days * DAY, s.check_importance, defaults >= s.check_importance)
    found = [
        (since, row)
        for row in rows
        if view.status(row, now, warm=True) == view.Status.CURRENT
        and (since := unchecked_since(s, row, now)) is not None
    ]
    return sorted(found, key=lambda f: (f[0], f[1].n))


def decay_rate(s: Lifecycle, kind: str, tier: int) -> float:
    """Heat lost per day: session-type notes (`session_kinds`, the chat tier) faster."""
    session = {k.strip() for k in s.session_kinds.split(",") if k.strip()}
    return s.decay_session if kind in session or tier == Tier.CHAT else s.decay


def heat(imp: float, rate: float, accessed: float | None, now: float) -> float:
    """importance × e^(−rate × days since last access); a redline (importance 1, rate 0) is 1."""
    days = max(0.0, (now - (accessed if accessed is not None else now)) / DAY)
    return imp * math.exp(-rate * days)


def heat_of(s: Lifecycle, row: Any, now: float, *, shown: bool = True) -> float:
    """A record's heat now (`row`: an index row); without `shown`, context showing it does not
    count as an access (what context chooses by)."""
    if row.tier == Tier.REDLINE:
        return 1.0
    return heat(
        importance(s, row.kind, row.tier, row.imp),
        decay_rate(s, row.kind, row.tier),
        row.accessed if shown else row.used,
        now,
    )


def heat_shown(h: float) -> float:
    """A heat as `get` and a sweep's list show it: cut to three decimals, never rounded up — 0.49996
    is below `stats`' 0.5 band and reads 0.499, not 0.500."""
    return math.floor(h * 1000) / 1000


def cools(s: Lifecycle, row: Any, now: float, fresh: float | None = None) -> str | None:
    """Why a sweep at `now` cools this record — `heat`, `pending_ttl` or `expired` — or None.
    `fresh`: what was used at or after it is not cooled (default `now`: this very second)."""
    if row.tier == Tier.REDLINE or row.kind in NEVER_COOL or row.disputed:
        return None  # (a value of a key in conflict waits for the user, warm)
    if row.accessed is not None and row.accessed >= (now if fresh is None else min(now, fresh)):
        return None  # used just now (or stamped later by a clock ahead): not cold
    st = view.status(row, now)
    if st in (view.Status.FORGOTTEN, view.Status.COLD):
        return None
    if st == view.Status.PENDING and row.ts is not None and (now - row.ts) / DAY >= s.pending_ttl_days:
        return "pending_ttl"  # counted from when it was guessed: a recall does not confirm it
    if row.expires is not None and (now - row.expires) / DAY >= s.expired_grace_days:
        return "expired"
    if heat_of(s, row, now) < s.cold_below:
        return "heat"
    return None


def describe(s: Lifecycle, row: Any, now: float) -> dict[str, Any]:
    """A record's life as `get` shows it: importance (as used), heat now, last access."""
    accessed = row.accessed
    return {
        "importance": importance(s, row.kind, row.tier, row.imp),
        "heat": heat_shown(heat_of(s, row, now)),
        "last_access": view.iso(accessed) if accessed is not None else None,
        "recalled": view.iso(row.touched) if row.touched is not None else None,
    }


HEAT_BANDS = (0.5, 0.2, 0.05)  # stats: hot, warm, cooling, and below the default threshold
PENDING_AGES = (1, 7, 30)  # stats: pending records younger than 1, 7, 30 days, older


def heat_since(imp: float, rate: float, band: float, now: float) -> float | None:
    """The earliest last access at which a record of this importance and decay is at least
    `band` hot now (`heat`): None when it never is, −∞ when it always is."""
    if imp < band:
        return None
    if rate <= 0:
        return -math.inf
    return now - DAY * math.log(imp / band) / rate


def census(s: Lifecycle, idx: Any, now: float, c: Any, last_sweep: float | None) -> dict[str, Any]:
    """What `stats` shows of the lifecycle: the heat and importance of the records in normal
    recall (redlines aside: always 1), the active set's size and share of the log, pending records
    by age, and when the last sweep ran. Counted by the index (`c`: its `Census`; `warm_counts`,
    `pending_ages`): each band is a time of last access per importance and decay."""
    live = (view.Status.CURRENT.value, view.Status.PENDING.value)
    imp_total, imp_given, warm = 0.0, 0, 0
    since: dict[tuple[str, int, float | None], list[float | None]] = {}
    for st, kind, tier, written, count in c.warmth:
        if st not in live:
            continue
        imp = importance(s, kind, tier, written)
        warm += count
        imp_total += imp * count
        imp_given += count if written is not None else 0
        rate = decay_rate(s, kind, tier)
        since[(kind, tier, written)] = [heat_since(imp, rate, b, now) for b in HEAT_BANDS]
    at_least = idx.warm_counts(now, live, since) or [0] * len(HEAT_BANDS)  # records at least each band hot
    counts = [*at_least, warm]
    heat_bands = {f">={b:g}": counts[i] - (counts[i - 1] if i else 0) for i, b in enumerate(HEAT_BANDS)}
    heat_bands[f"<{HEAT_BANDS[-1]:g}"] = warm - at_least[-1]
    younger = idx.pending_ages(now, PENDING_AGES)  # pending records younger than each age, then all
    ages = {f"<{d}d": younger[i] - (younger[i - 1] if i else 0) for i, d in enumerate(PENDING_AGES)}
    ages[f">={PENDING_AGES[-1]}d"] = younger[-1] - younger[-2]
    total = sum(c.by_status.values())
    active = c.by_status.get(view.Status.CURRENT.value, 0)
    return {
        "active": active,
        "active_share": round(active / total, 4) if total else 0.0,
        "heat": heat_bands,
        "heat_of": warm,
        "importance": {"mean": round(imp_total / warm, 3) if warm else None, "given": imp_given},
        "pending_by_age": ages,
        "last_sweep": view.iso(last_sweep) if last_sweep is not None else None,
    }


def is_pending(s: Lifecycle, confidence: float | None) -> bool:
    """Whether a record written with this confidence waits as pending."""
    return confidence is not None and confidence < s.pending_threshold


def check_unit(name: str, value: float | None) -> float | None:
    """`--importance` / `--confidence`: a number from 0 to 1."""
    if value is not None and (value != value or not 0 <= value <= 1):  # NaN too
        raise UsageError(f"--{name} must be a number from 0 to 1, not {value!r}", field=name)
    return value


# the daily sweep a write starts (`if_due`) never cools what was used in the hour before it: the
# write that started it stored its record a moment earlier — a second earlier on a busy machine —
# and a record of low importance must not go cold in the command that wrote it
AUTO_GRACE = 3600.0


def sweep_due(last_sweep: float | None, now: float, mode: str) -> bool:
    """Whether a write should sweep first (`auto_sweep = daily`: at most once a day). A last
    sweep dated more than a day ahead (a clone with a fast clock) does not stop sweeps for ever."""
    return mode == "daily" and (last_sweep is None or now - last_sweep >= DAY or last_sweep - now > DAY)


# -- drivers ------------------------------------------------------------------------------------
def access_line(ts: str, **fields: Any) -> bytes:
    return json.dumps({"v": 1, "ts": ts, **fields}, ensure_ascii=False, separators=(",", ":")).encode()


class Swept(NamedTuple):
    """What a sweep did: `optmem sweep` prints it, and a write that ran the daily sweep reports
    it the same way (`auto_sweep`)."""

    at: str
    dry_run: bool
    checked: int  # records a sweep could cool
    cooled: int
    by_reason: dict[str, int]
    records: list[dict[str, Any]] = []  # the first `show` of them (shared default: never mutated)
    ran: bool = True  # False: `if_due` and a sweep ran within the day
    unused_days: int | None = None  # the records cooled by heat were unused for at least this
    background: bool = False  # started in a detached process: nothing is counted yet


def sweep(vault: Vault, *, dry_run: bool = False, show: int = 20, if_due: bool = False) -> Swept:
    """Mark every record that has gone cold (see the module docstring); idempotent — a second
    sweep finds nothing new. Writes only ACCESS.jsonl; nothing is deleted. `if_due`: only when
    no sweep ran in the last day (cron, and the daily sweep a write starts)."""
    from optmem.index import open_index

    moment = clock.now()
    now, ts = moment.timestamp(), clock.format_ts(moment)
    s = vault.settings.lifecycle
    vault.require()
    # one sweep at a time (two would only repeat each other's lines); writers never wait for it;
    # a dry run writes nothing, so it needs no lock (and works on a read-only vault)
    lock = (
        nullcontext()
        if dry_run
        else fsio.exclusive_lock(
            vault.cache("sweep.lock"),
            vault.settings.lock.timeout,
            within=vault.root,
            what="the sweep (held while another process sweeps; appends go on meanwhile)",
        )
    )
    with lock:
        with open_index(vault) as idx:
            if if_due and not sweep_due(idx.last_sweep(), now, "daily"):
                return Swept(ts, dry_run, 0, 0, {}, ran=False)
            ids: list[str] = []
            shown: list[dict[str, Any]] = []
            reasons: dict[str, int] = {}
            behind: dict[str, list[Any]] = {}  # superseder id → the visible records it supersedes
            checked = 0
            idle: list[float] = []  # days since the last access, of the records cooled by heat

            def cool(row: Any, why: str) -> None:
                ids.append(row.id)
                reasons[why] = reasons.get(why, 0) + 1
                if len(shown) < show:
                    shown.append(
                        {
                            "id": row.id,
                            "reason": why,
                            "heat": heat_shown(heat_of(s, row, now)),
                            "status": view.status(row, now).value,
                            "text": _preview(idx, row, bool(idx.as_stored([row]))),
                            "basis": "inferred" if row.inferred else None,
                        }
                    )

            for row in idx.coolable():
                checked += 1
                why = cools(s, row, now, now - AUTO_GRACE if if_due else None)
                if why is not None:
                    cool(row, why)
                    if why == "heat" and row.accessed is not None:
                        idle.append((now - row.accessed) / DAY)
                elif row.superseded_by and view.status(row, now) == view.Status.SUPERSEDED:
                    behind.setdefault(row.superseded_by, []).append(row)
            # an old value never outlives, in normal search, the record that replaced it
            todo = list(ids)
            while todo:
                for row in behind.pop(todo.pop(), []):
                    cool(row, "superseder_cold")
                    todo.append(row.id)
        if not dry_run:
            lines = [access_line(ts, cold=ids[i : i + IDS_PER_LINE]) for i in range(0, len(ids), IDS_PER_LINE)]
            lines.append(access_line(ts, sweep={"cooled": len(ids), "checked": checked}))
            fsio.append_lines(vault.access_path, lines, within=vault.root)
            open_index(vault).close()  # the index takes the marks in now, not on the next search
    return Swept(ts, dry_run, checked, len(ids), reasons, shown, unused_days=int(min(idle)) if idle else None)


def _preview(idx: Any, row: Any, stored: bool) -> str:
    """A record's text on one line, cut at 120 characters: as stored when its words are shown so
    (`view.as_stored`), else scanned whole (`view.display`) — as `get` shows it."""
    text = " ".join(view.shown(idx.record(row).text, stored).split())
    return text[:120] + ("…" if len(text) > 120 else "")


def auto_sweep(vault: Vault) -> str | None:
    """Sweep when a write finds the last sweep a day old (`auto_sweep = daily`) — in this process
    for a vault of up to `background_above` records, else in a detached `optmem sweep --if-due`,
    so an agent's write never waits for a sweep of a big log. A warning, not an error, when it cannot:
    the write itself succeeded.

    What it did is left on the vault object (`vault.swept`, a `Swept`; `background` when it was
    only started), so the command that wrote reports it: records never go cold unannounced."""
    from optmem.errors import OptmemError
    from optmem.index import open_index

    s = vault.settings.lifecycle
    if s.auto_sweep == "off":
        return None
    if clock.ahead() > clock.FUTURE_SLACK:
        # a clock set ahead (OPTMEM_NOW, to try a query "a year on") must not cool the vault as if
        # that time had come, unasked: the marks would stand once the real clock catches up
        return (
            f"the daily sweep did not run: OPTMEM_NOW is {clock.ahead() / DAY:.0f} days ahead of this machine's clock "
            "(a write sweeps on the real clock only); `optmem sweep` sweeps as of OPTMEM_NOW if that is meant"
        )
    try:
        with open_index(vault) as idx:  # every write asks: two meta reads, no count of the log
            last, size = idx.last_sweep(), idx.lines()
        if not sweep_due(last, clock.now().timestamp(), s.auto_sweep):
            return None
        if size > s.background_above:
            import sys

            from optmem.runner import detach

            if not detach(
                [sys.executable, "-m", "optmem", "--vault", str(vault.root), "sweep", "--if-due", "--show", "0"]
            ):
                return "the daily sweep could not be started; run `optmem sweep`"
            vault.swept = Swept(clock.format_ts(clock.now()), False, 0, 0, {}, background=True)
            return None
        done = sweep(vault, show=0, if_due=True)
        if done.ran:  # (not when another process swept first)
            vault.swept = done
    except OptmemError as exc:
        return f"the daily sweep did not run ({exc.message}); run `optmem sweep` later"
    return None


def read_in_full(items: Iterable[tuple[str, bool]]) -> list[str]:
    """The records a surface read, from each line it had — (the id of the record behind it, "" for
    one that is none's: a heading; whether it was shown — a budget cuts lines): each whose every
    line was shown. The one rule of what counts as a read of a handoff (`context`, `handoff read`,
    the Hermes prefetch): a handoff whose open items were cut was not read — one written after it
    would follow it unseen (`handoff._seen_by`)."""
    lines: dict[str, bool] = {}
    for rid, shown in items:
        if rid:
            lines[rid] = lines.get(rid, True) and shown
    return [rid for rid, whole in lines.items() if whole]


def touch_ids(vault: Vault, ids: Iterable[str], via: str) -> None:
    """Record that these records were recalled (full ids; no lock: one small appended line)."""
    ids = list(dict.fromkeys(ids))
    if ids:
        fsio.append_lines(
            vault.access_path, [access_line(clock.format_ts(clock.now()), touch=ids, via=via)], within=vault.root
        )


class Waiting(NamedTuple):
    id: str
    ts: str
    domain: str
    project: str | None
    text: str
    confidence: float | None
    age_days: int
    restated: int  # other conversations that said it again (guesses: counted, never enough)
    status: str  # pending, or cold once pending_ttl passed
    basis: str | None = None  # "inferred": an agent's conclusion (`view.labels`)
    # what else it is, as every surface labels it (`view.labels`): where it came from, a
    # correction (and the records it replaces once confirmed), its tier, a state
    origin: str | None = None
    kind: str = "note"
    tier: str = "normal"
    state: bool = False
    corrects: tuple[str, ...] = ()


def queue(vault: Vault, *, include_cold: bool = False, limit: int | None = None) -> list[Waiting]:
    """The review queue: pending records, oldest first, with how often they were said again."""
    from optmem.index import open_index

    now = clock.now().timestamp()
    out: list[Waiting] = []
    with open_index(vault) as idx:
        rows = []
        for row in idx.pending_rows():
            st = view.status(row, now)
            if st not in (view.Status.PENDING, *((view.Status.COLD,) if include_cold else ())):
                continue
            if st == view.Status.COLD and view.status(row, now, warm=True) != view.Status.PENDING:
                continue
            rows.append((row, st))
            if limit and len(rows) >= limit:
                break
        stored = idx.as_stored([row for row, _ in rows])  # (as every surface shows them: `view.as_stored`)
        for row, st in rows:
            rec = idx.record(row)
            said = [row.id, rec.ts, row.domain, row.project, rec.text, rec.origin, list(rec.corrects)]
            rid, ts, domain, project, text, origin, corrects = view.shown(said, row.n in stored)
            out.append(
                Waiting(
                    rid,
                    ts,
                    domain,
                    project,
                    text,
                    rec.confidence,
                    max(0, int((now - (row.ts or now)) // DAY)),
                    idx.restatements(row),
                    st.value,
                    rec.basis,
                    origin,
                    rec.kind,
                    rec.tier,
                    bool(rec.state),
                    tuple(corrects),
                )
            )
    return out
