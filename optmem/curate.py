"""`curate`: a periodic curation pass, proposed by a model the user configured, applied only when
the evaluation gate shows no regression.

1. **Gather** the records added since the last curation (at most `[curator] batch`, oldest
   first) and, for each, the current long-term records most like it (`related`).
2. **Ask** the model command (from the user's own configuration, `OPTMEM_CURATOR` or
   `--command`; never from a vault, which can arrive through git) in a fresh process: the batch
   as JSON on stdin (`CONTRACT`), JSON operations back on stdout.
3. **Validate** every operation: known ids, current records only, no redline, no pending guess,
   no value of a key in conflict; an invalid one is listed with its reason and skipped.
4. **Apply** (only with `--apply`) through the normal write paths — `merge` → `optmem merge`,
   `update` → a correction, `delete` → `forget` with the reason (never a physical deletion) —
   then run the gate (`eval` with the vault's query set, before and after). On a regression the
   applied operations are undone by appending their inverse (forget the merge or the
   correction, restore what was forgotten), never by rewriting the log.
5. **Record** the run: one `curation` record (the plan, the command's name, the gate's figures).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optmem import clock, fsio, view
from optmem.errors import OptmemError, UsageError, quote
from optmem.record import BOOKKEEPING, CURATION, HANDOFF, MEMORY, RESTORE, Record, Tier, new_id
from optmem.vault import Vault

CONTRACT = "optmem-curate-1"
OPS = ("merge", "update", "delete", "no-change")
RELATED_PER_RECORD = 3
PLAN_KEPT = 200  # operations described in the curation record (the rest are counted)


class CurationFailed(OptmemError):
    code = "curation_failed"


@dataclass(frozen=True)
class Curation:
    applied: bool  # written (and kept) — False for a dry run or an undone one
    command: str
    records: int  # records in the batch
    plan: list[dict[str, Any]]  # every operation with "valid" and, if not, "reason"
    written: list[str] = field(default_factory=list)
    undone: bool = False
    regressions: list[dict[str, Any]] = field(default_factory=list)
    eval_before: dict[str, Any] | None = None
    eval_after: dict[str, Any] | None = None
    record: str | None = None  # the curation record's id


def gather(vault: Vault, batch: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the records added since the last curation, the current long-term records related to
    them) as the model sees them."""
    from optmem.index import Filters, open_index
    from optmem.reading.query import read
    from optmem.search import Query, ranked

    now = clock.now().timestamp()
    skip = (*BOOKKEEPING, MEMORY, HANDOFF, CURATION)
    with open_index(vault) as idx:
        # the batch starts after the last run that was kept (an undone run's records come back)
        since = next(
            (
                r.n
                for r in idx.rows("r.kind = ? ORDER BY r.n DESC LIMIT 50", (CURATION,))
                if idx.record(r).extra.get("undone") is not True
            ),
            0,
        )
        fresh = [
            r
            for r in idx.rows(f"r.n > ? AND r.kind NOT IN ({','.join('?' * len(skip))}) ORDER BY r.n", (since, *skip))
            if view.status(r, now) == view.Status.CURRENT
        ][:batch]
        stored = idx.as_stored(fresh)  # (as every surface shows them: `view.as_stored`)
        records = [_shown(idx.record(r), r.n in stored) for r in fresh]
        ids = {r.id for r in fresh}
        related: dict[str, dict[str, Any]] = {}
        for rec in records:
            q = Query(
                read(rec["text"], None, idx.vault.settings.ranking),
                RELATED_PER_RECORD + 1,
                Filters(current=True),
                False,
                now,
            )
            for hit in ranked(idx, q).hits:
                if hit.record.id not in ids and hit.line <= since and hit.record.kind not in skip:
                    related.setdefault(hit.record.id, _shown(hit.record, hit.stored()))
    return records, list(related.values())


def _shown(rec: Record, stored: bool = False) -> dict[str, Any]:
    """A record as the model reads it: every field as surfaces show it (`view.shown`: as stored
    when its words are shown so, `view.as_stored`)."""
    shown: dict[str, Any] = view.shown(
        {
            "id": rec.id,
            "ts": rec.ts,
            "domain": rec.domain,
            "project": rec.project,
            "kind": rec.kind,
            "key": rec.key,
            "tags": list(rec.tags),
            "text": rec.text,
        },
        stored,
    )
    return shown


def ask(
    command: str, records: list[dict[str, Any]], related: list[dict[str, Any]], timeout: float
) -> list[dict[str, Any]]:
    """The operations the model command proposes for this batch."""
    from optmem.runner import run_command

    payload = {
        "contract": CONTRACT,
        "records": records,
        "related": related,
        "operations": {
            "merge": {"ids": "[≥ 2 ids]", "topic": "str", "text?": "str", "facts?": "{field: value}"},
            "update": {"id": "id", "text": "the corrected statement"},
            "delete": {"id": "id", "reason": "why it is wrong or useless"},
            "no-change": {"id?": "id"},
        },
        "answer": 'one JSON object: {"operations": [ {"op": …, …}, … ]}',
    }
    ran = run_command(command, json.dumps(payload, ensure_ascii=False), timeout)
    if not ran.ok:
        raise CurationFailed(f"the curator command {quote(_name(command))} {ran.error}; nothing was written")

    def finite(word: str) -> Any:
        raise ValueError(f"{word} is not a JSON number")

    try:
        out = json.loads(ran.output or "", parse_constant=finite)
    except ValueError as exc:
        raise CurationFailed(
            f"the curator command {quote(_name(command))} did not print JSON ({exc}); nothing was written"
        ) from exc
    except RecursionError as exc:
        raise CurationFailed(
            f"the curator command {quote(_name(command))} printed JSON nested too deeply to read; nothing was written"
        ) from exc
    if _has_lone_surrogate(out):
        raise CurationFailed(
            f"the curator command {quote(_name(command))} printed a string with a lone surrogate (\\ud800 …), "
            "which is no text; nothing was written"
        )
    ops = out.get("operations") if isinstance(out, dict) else None
    if not isinstance(ops, list):
        raise CurationFailed(
            f'the curator command {quote(_name(command))} printed no "operations" list; nothing was written'
        )
    return [op if isinstance(op, dict) else {"op": None, "raw": op} for op in ops]


def _has_lone_surrogate(value: Any) -> bool:
    """Whether any string of a parsed JSON value (keys too) holds a lone surrogate, which no
    file can store as UTF-8 (walked without recursion: the value may be deep)."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, list):
            todo.extend(item)
        elif isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
    return False


INTERPRETERS = ("python", "python3", "node", "sh", "bash", "uv", "npx", "env")


def _name(command: str) -> str:
    """What to call the command in the log: its program (and script, behind an interpreter) —
    never an environment assignment, which may hold a key."""
    words = [w for w in command.split() if "=" not in w]
    if not words:
        return "a command"
    first = Path(words[0]).name
    if (first in INTERPRETERS or first.startswith("python")) and len(words) > 1:
        return f"{first} {Path(words[1]).name}"
    return first


def validate(vault: Vault, ops: list[dict[str, Any]], known: set[str]) -> list[dict[str, Any]]:
    """Every operation with `valid` and, when it is not, the `reason`."""
    from optmem.index import open_index

    now = clock.now().timestamp()
    plan = []
    with open_index(vault) as idx:

        def problem(rid: Any) -> str | None:
            if not isinstance(rid, str) or rid not in known:
                return f"{rid!r} is not a record of this batch or its related ones"
            row = idx.by_id(rid)
            if row is None:
                return f"{rid} is not in the log"
            st = view.status(row, now)
            if st != view.Status.CURRENT:
                return f"{rid} is {st.value}, not current"
            if row.tier == Tier.REDLINE:
                return f"{rid} is a redline (a locked rule)"
            if row.disputed:
                return f"{rid} is a value of key {row.key!r} in conflict: the user settles it"
            return None

        touched: set[str] = set()
        for op in ops:
            kind, reason = op.get("op"), None
            targets = (
                [str(i) for i in op.get("ids") or []]
                if kind == "merge" and isinstance(op.get("ids"), list)
                else [op["id"]]
                if isinstance(op.get("id"), str)
                else []
            )
            if kind not in OPS:
                reason = (
                    f"unknown operation {kind!r} (one of {', '.join(OPS)})"
                    if "raw" not in op
                    else f"not an operation object: {json.dumps(op['raw'])[:80]}"
                )
            elif kind == "merge":
                ids = op.get("ids")
                if not isinstance(ids, list) or len(set(map(str, ids))) < 2 or not str(op.get("topic") or "").strip():
                    reason = "a merge needs ≥ 2 ids and a topic"
                else:
                    reason = next((p for p in map(problem, ids) if p), None)
            elif kind == "no-change":  # saying nothing about a record: only the id must be real
                if "id" in op and (not isinstance(op["id"], str) or op["id"] not in known):
                    reason = f"{op['id']!r} is not a record of this batch or its related ones"
            elif kind in ("update", "delete"):
                reason = problem(op.get("id"))
                if reason is None and kind == "update" and not str(op.get("text") or "").strip():
                    reason = "an update needs the corrected text"
            if reason is None and kind != "no-change" and touched & set(targets):
                reason = "an earlier operation of this plan already acts on " + ", ".join(
                    sorted(touched & set(targets))
                )
            if reason is None and kind != "no-change":
                touched.update(targets)
            plan.append({**op, "valid": reason is None, **({"reason": reason} if reason else {})})
    return plan


def curate(vault: Vault, command: str | None, *, apply: bool = False, batch: int | None = None) -> Curation:
    """One curation run (see the module docstring); a dry run unless `apply`."""
    s = vault.settings.curator  # read first: a command named in the vault is reported as ignored
    if not command:
        raise UsageError(
            "no curator command: set [curator] command in your own configuration "
            "(~/.config/optmem/config.toml), OPTMEM_CURATOR, or pass --command CMD"
        )
    queries = vault.path_setting("[curator] queries", s.queries)
    if apply:  # no gate, no writing: a model's plan is applied only where a regression can show
        from optmem.evaluate import load_queries

        if not queries.is_file():
            raise UsageError(
                f"--apply needs the evaluation gate's query set, and {s.queries} is not in the "
                "vault: write it (one JSON query per line, see `optmem eval`) or set "
                "[curator] queries; a dry run (without --apply) needs none"
            )
        load_queries(queries)  # a malformed set is refused before the model runs
    records, related = gather(vault, batch or s.batch)
    if not records:
        return Curation(False, _name(command), 0, [])
    ops = ask(command, records, related, s.timeout)
    plan = validate(vault, ops, {r["id"] for r in (*records, *related)})
    if not apply:
        return Curation(False, _name(command), len(records), plan)
    before = _gate(vault, queries)
    written = _apply(vault, [op for op in plan if op["valid"] and op["op"] != "no-change"])
    after, regressions = _gate(vault, queries, before) if before is not None else (None, [])
    undone = bool(regressions)
    if undone:
        _undo(vault, written)
    rec = _record(vault, command, len(records), plan, written, undone, before, after)
    return Curation(
        not undone, _name(command), len(records), plan, [w for _, w in written], undone, regressions, before, after, rec
    )


def _gate(vault: Vault, queries: Path, before: dict[str, Any] | None = None) -> Any:
    """The evaluation gate on the vault's query set: its overall figures (before), or (figures,
    regressions against `before`)."""
    from optmem import evaluate

    if not queries.is_file():
        return None if before is None else (None, [])
    if before is None:
        return evaluate.run(vault, queries).overall
    with tempfile.TemporaryDirectory(prefix="optmem-curate-") as tmp:
        base = Path(tmp) / "before.json"
        fsio.atomic_write(base, json.dumps({"k": 5, "overall": before, "queries": []}))
        result = evaluate.run(vault, queries, baseline=base)
        return result.overall, result.regressions or []


def _apply(vault: Vault, ops: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Apply valid operations through the normal write paths; (op, the record it wrote)."""
    from optmem import facts, log, merging

    written: list[tuple[str, str]] = []
    for op in ops:
        try:
            if op["op"] == "merge":
                fields = (
                    {str(k): str(v) for k, v in (op.get("facts") or {}).items()}
                    if isinstance(op.get("facts"), dict)
                    else {}
                )
                res = merging.merge(
                    vault,
                    [str(i) for i in op["ids"]],
                    str(op["topic"]),
                    text=op.get("text"),
                    fields=fields,
                    source="curator",
                )
                written.append(("merge", res.id))
            elif op["op"] == "update":
                written.append(("update", facts.correct(vault, op["id"], str(op["text"]), source="curator").id))
            elif op["op"] == "delete":
                log.forget(
                    vault, op["id"], reason=f"curator: {op.get('reason') or 'no reason given'}", source="curator"
                )
                written.append(("delete", op["id"]))
        except OptmemError as exc:  # refused by the write path: noted in the plan, the rest goes on
            op["valid"], op["reason"] = False, exc.message
    return written


def _undo(vault: Vault, written: list[tuple[str, str]]) -> None:
    """Undo applied operations by appending their inverse: forget a merge or a correction (the
    fact goes back to what it superseded), restore what was forgotten."""
    from optmem import log

    def restore(rid: str) -> Any:
        return lambda moment: Record(
            id=new_id(moment.timestamp()), ts=clock.format_ts(moment), kind=RESTORE, ref=rid, source="curator"
        )

    for op, rid in reversed(written):
        if op == "delete":
            log.append_bookkeeping(vault, restore(rid))
        else:
            log.forget(
                vault, rid, reason="curator run undone: the evaluation gate regressed", source="curator", redline=True
            )


def _record(
    vault: Vault,
    command: str,
    n: int,
    plan: list[dict[str, Any]],
    written: list[tuple[str, str]],
    undone: bool,
    before: Any,
    after: Any,
) -> str:
    from optmem import log

    counts = {k: sum(1 for op in plan if op.get("op") == k and op["valid"]) for k in OPS}
    # only what was checked goes into the log — never a model's free text (it was not scanned)
    kept = [
        {
            "op": op.get("op") if op.get("op") in OPS else "unknown",
            **({"ids": [str(i)[:40] for i in op["ids"][:50]]} if isinstance(op.get("ids"), list) else {}),
            **({"id": op["id"][:40]} if isinstance(op.get("id"), str) else {}),
            "valid": op["valid"],
            **({"reason": str(op["reason"])[:200]} if not op["valid"] else {}),
        }
        for op in plan[:PLAN_KEPT]
    ]
    text = (
        f"curation by {_name(command)}: {n} records, "
        + ", ".join(f"{v} {k}" for k, v in counts.items())
        + f", {sum(1 for op in plan if not op['valid'])} invalid"
        + ("; undone (the gate regressed)" if undone else "")
    )
    line = log.append_bookkeeping(
        vault,
        lambda moment: Record(
            id=new_id(moment.timestamp()),
            ts=clock.format_ts(moment),
            kind=CURATION,
            text=text,
            source="curator",
            extra={
                "command": _name(command),
                "plan": kept,
                "plan_size": len(plan),
                "written": [w for _, w in written],
                "undone": undone,
                "eval_before": before,
                "eval_after": after,
            },
        ),
    )
    return line
