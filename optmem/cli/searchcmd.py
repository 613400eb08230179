"""Search and the effective view: search, correct, history, reindex."""

from __future__ import annotations

import sys

from optmem.cli.common import (
    emit,
    env_domain,
    get_vault,
    origin_of,
    progress_callback,
    read_arg,
    short,
    stored_line,
    warn_all,
)
from optmem.cli.spec import ORIGIN, SHOW_UNSAFE, UNSAFE, arg, command, flag, opt
from optmem.errors import quote

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any

PROJECT = opt("project", "--project", "-p", help="Only this project.")


def badges(hit: dict[str, Any]) -> str:
    """What a hit is besides its words (`view.labels`), as search prints it: `REDLINE; INFERRED`
    — each label apart (`SUPERSEDED by ABRM9RYY; FROM TOOL`: the hit came from a tool, not its
    successor)."""
    from optmem.view import labels

    return "; ".join(labels(hit))


def _rows(result: dict[str, Any]) -> list[tuple[str, str, str, str, str, dict[str, Any] | None]]:
    """(age, where, id, text, badges, explain) of each hit."""
    from optmem import clock

    now = clock.now().timestamp()
    rows = []
    for h in result["hits"]:
        age = clock.age_of(h["ts"], now)
        where = h["domain"] + (f"/{h['project']}" if h["project"] else "")
        text = stored_line(h["text"])
        rid = h["id"] if h["kind"] == "summary" else short(h["id"])  # a node id is short and whole
        rows.append((age, where, rid, text, badges(h), h.get("explain")))
    return rows


def render_hits(result: dict[str, Any]) -> str | None:
    rows = _rows(result)
    if not rows:
        return f"no matches for {quote(result['query'])}" + _cold_hint(result)
    if sys.stdout.isatty():
        from rich.console import Console

        Console().print(hits_table(result))
        return _footer(result) + _cold_hint(result)
    from optmem.terminal import pad
    from optmem.view import bracket

    lines = []
    for age, where, rid, text, badge, ex in rows:  # (the column by width on screen: 前端 takes four)
        lines.append(f"{age:>8}  {pad(where, 16)} {rid}  {text}" + (f"  {bracket([badge])}" if badge else ""))
        if ex:
            lines.append(" " * 10 + _explain(ex))
    lines.append(_footer(result) + _cold_hint(result))
    return "\n".join(lines)


def hits_table(result: dict[str, Any]) -> Any:
    """The hits as a Rich table for a terminal. Rich writes to the terminal itself (not through
    `echo`), so every cell is made `printable` here and given as plain `Text`: stored text is
    never read as Rich markup (`[link=…]`) nor sends an escape sequence."""
    from rich.table import Table
    from rich.text import Text

    from optmem.terminal import printable

    table = Table(show_edge=False, pad_edge=False)
    for col in ("age", "domain", "id", "text", ""):
        table.add_column(col, overflow="fold")
    for age, where, rid, said, badge, ex in _rows(result):
        text = Text(printable(said))
        if ex:
            text.append("\n" + printable(_explain(ex)), style="dim")
        table.add_row(
            age,
            Text(printable(where)),
            Text(printable(rid)),
            text,
            Text(printable(badge), style="bold red" if badge.startswith("REDLINE") else ""),
        )
    return table


def _footer(result: dict[str, Any]) -> str:
    """How many hits are shown of how many match: "3 of 5 matching"; hits that match none of the
    words, only as the turns beside a match in its conversation, are counted apart ("2 of 2
    matching, 2 more as context")."""
    shown, context = len(result["hits"]), result.get("context_hits") or 0
    if not context:
        return f"{shown} of {result['total']} matching"
    beside = f"{context} more as context (turns beside a match in its session)"
    return f"{shown - context} of {result['matching']} matching, {beside}"


def _cold_hint(result: dict[str, Any]) -> str:
    """What else matches but is hidden: cold, forgotten and held records, and the flag that shows them."""
    said = [
        f"{n} {what}: add --include-{what}"
        for what in ("cold", "forgotten", "held")
        if (n := result.get(f"{what}_matches") or 0)
    ]
    return f" ({'; '.join(said)})" if said else ""


def _explain(ex: dict[str, Any]) -> str:
    """The parts of a hit's score as `ranking.Parts.explain` returns them: the score hits are
    sorted on (inside a band), what it is made of, then the re-ordering rule that moved the hit,
    if one did — the order of the lines is accounted for on them."""
    parts = [f"score={ex['score']} = relevance={ex['relevance']}"]
    if ex.get("stands_for"):
        parts.append(f"(of {short(ex['stands_for'])}, which it replaces)")
    if ex.get("context"):
        parts.append(f"context=+{ex['context']}")
    if ex.get("answers"):
        parts.append(f"(answers {short(ex['answers'])})")
    if ex.get("below"):
        parts.append(f"(matches only through its session: kept below {short(ex['below'])})")
    if ex.get("dates"):
        parts.append("dates=" + ",".join(d.lstrip("_") for d in ex["dates"]))
    parts += [
        f"heat×{ex['heat_factor']} (recency +{ex['recency_bonus']:.1%}, {ex['age_days']}d; "
        f"importance ×{ex['relative_importance']})",
        f"tier×{ex['tier_factor']}",
        *([f"{ex['status']}×{ex['status_factor']}"] if ex.get("status_factor", 1.0) != 1.0 else []),
        *([f"origin×{ex['origin_factor']}"] if ex.get("origin_factor", 1.0) != 1.0 else []),
        f"band={ex['band']}",
        f"b={ex['b']}",
    ]
    if ex.get("updates"):  # (`ranking.updates_first`: a newer record above an older one it updates)
        parts.append(f"updates {short(ex['updates'])}: placed above it (newer-first rule, whatever the scores)")
    if ex.get("after"):  # (`ranking.successors_first`: an old version below its later versions)
        later = ", ".join(short(v) for v in ex["after"])
        parts.append(f"placed after {later}, its later version (current version first, whatever the scores)")
    if ex.get("asks"):
        parts.append(f"asks for the {ex['asks']}")
    return "  ".join(parts)


@command(
    "search",
    arg("query", "Words to look for, Chinese or English (- reads stdin)."),
    opt("limit", "--limit", "-n", type=int, default=10, help="How many hits."),
    opt("domain", "--domain", "-d", multiple=True, help="Only this domain (repeatable)."),
    PROJECT,
    opt("kind", help="Only this kind (note, correction, memory, …; summary: tree nodes)."),
    opt("tag", help="Only records with this tag."),
    opt("since", help="From this date or ISO time, inclusive (2026-11-29 or 2026-11-29T18:55:30Z)."),
    opt("until", help="Up to this date or ISO time, inclusive (2026-11-29 or 2026-11-29T18:55:30Z)."),
    flag("current", help="Leave out superseded and expired records."),
    flag("include_forgotten", help="Also show forgotten records."),
    flag("include_cold", help="Also show cold records (a sweep found them unused for long)."),
    flag("include_held", help="Also show records held in quarantine (`optmem quarantine`), each saying why."),
    flag("touch", help="Count the hits returned as recalled: they stay warm (ACCESS.jsonl)."),
    flag("explain", help="Show each hit's score components."),
    SHOW_UNSAFE,
)
def search(
    query: str,
    limit: int,
    domain: list[str] | None,
    project: str | None,
    kind: str | None,
    tag: str | None,
    since: str | None,
    until: str | None,
    current: bool,
    include_forgotten: bool,
    include_cold: bool,
    include_held: bool,
    touch: bool,
    explain: bool,
    allow_unsafe: bool,
    json_out: bool,
) -> None:
    """Ranked search: corrections outrank what they correct, redlines outrank everything.

    \b
    Example:
      optmem search 后端端口 --domain code --explain
    """
    from optmem import search as core

    text = read_arg(query, "QUERY") or ""
    said: list[str] = []  # (warnings: on stderr, and in the JSON)
    if kind == "summary":  # summary-tree nodes, not log records
        from optmem import tree

        filters = core.make_filters(domains=domain)
        nodes = tree.search_nodes(get_vault(), text, domains=list(filters.domains), limit=limit)
        result = core.SearchResult(query, nodes, len(nodes))
    else:
        filters = core.make_filters(
            domains=domain,
            project=project,
            kind=kind,
            tag=tag,
            since=since,
            until=until,
            current=current,
            include_forgotten=include_forgotten,
            include_cold=include_cold,
            include_held=include_held,
        )
        vault = get_vault()
        result = core.search(vault, text, limit=limit, filters=filters, explain=explain, progress=progress_callback())
        said += result.warnings
        if touch and result.hits:
            from optmem import lifecycle
            from optmem.errors import OptmemError

            try:
                lifecycle.touch_ids(vault, [h.record.id for h in result.hits], "search")
            except OptmemError as exc:  # the hits are the answer; the recall is a hint
                said.append(f"the hits were not recorded as recalled: {exc.message}")
        warn_all(said)
    payload = result.to_json(show_unsafe=allow_unsafe) | ({"warnings": said} if said else {})
    emit(json_out, payload, lambda: render_hits(payload))


@command(
    "correct",
    arg("target", "The record to correct: an id (or ≥ 6 of its characters) or a query."),
    arg("text", "The corrected fact (- reads stdin)."),
    flag("redline", help="The correction is itself a locked rule."),
    opt("tier", help="chat | normal | evidence | redline.", choices=("chat", "normal", "evidence", "redline")),
    opt("domain", "--domain", "-d", help="Domain (default: the target's)."),
    opt("project", "--project", "-p", help="Project (default: the target's)."),
    opt("key", help="Fact key (default: the target's)."),
    opt("evidence", help="Where the correction comes from."),
    opt("source", help="Who wrote it."),
    ORIGIN,
    UNSAFE,
)
def correct(
    target: str,
    text: str,
    redline: bool,
    tier: str | None,
    domain: str | None,
    project: str | None,
    key: str | None,
    evidence: str | None,
    source: str | None,
    origin: str | None,
    allow_unsafe: bool,
    json_out: bool,
) -> None:
    """Append a correction that supersedes TARGET at query time (the old record stays).

    \b
    Example:
      optmem correct "端口 8080" "后端端口改成 9090 了" --evidence deploy.yml
    """
    from optmem import facts
    from optmem.errors import UsageError

    if redline and tier not in (None, "redline"):
        raise UsageError("--redline and --tier disagree; give one of them")
    res = facts.correct(
        get_vault(write=True, create=False),
        target,
        read_arg(text),
        tier="redline" if redline else tier,
        domain=env_domain(domain) if domain else None,
        project=project,
        key=key,
        evidence=evidence,
        source=source,
        allow_unsafe=allow_unsafe,
        origin=origin_of(origin),
    )
    warn_all(res.warnings)
    emit(
        json_out,
        {
            "status": "held" if res.held else "stored",
            "id": res.id,
            "corrects": res.corrects,
            "record": res.record,
            "conflict_with": res.conflict_with,
            "quoted": res.quoted,
        },
        lambda: f"{res.id} corrects {res.corrects}" + _named_by_words(target, res.corrects, res.quoted),
    )


def _named_by_words(target: str, corrected: str, quoted: str | None) -> str:
    """When TARGET was words, which record they named (the current one they find, which may be
    the newer version of an old one the words quote — then that one too): said, and how to see it."""
    from optmem.record import ID_RE

    if ID_RE.match(target.strip().lstrip("#")):
        return ""
    if quoted:
        return (
            f" — {quote(target)} quotes {short(quoted)}, an old version; its current version was corrected "
            f"(`optmem history {short(corrected)}` shows both)"
        )
    return f" — the current record {quote(target)} names (`optmem get {short(corrected)}` shows it)"


@command(
    "history",
    arg("record_id", "A record of the fact.", metavar="ID", required=False),
    opt("key", help="All versions of this fact key instead."),
    opt("domain", "--domain", "-d", help="With --key: only this domain."),
    opt("project", "--project", "-p", help="With --key: only this project."),
    SHOW_UNSAFE,
)
def history(
    record_id: str | None, key: str | None, domain: str | None, project: str | None, allow_unsafe: bool, json_out: bool
) -> None:
    """Show every version of a fact, oldest first (corrections and same-key records).

    \b
    Example:
      optmem history --key backend.port
    """
    from optmem import facts
    from optmem.cli.logcmd import render_record

    versions = facts.history(get_vault(), record_id, key=key, domain=domain, project=project, show_unsafe=allow_unsafe)
    emit(json_out, {"versions": versions}, lambda: "\n".join(render_record(v) for v in versions))


@command("reindex")
def reindex(json_out: bool) -> None:
    """Rebuild the derived search index from LOG.jsonl (it is also rebuilt automatically).

    \b
    Example:
      optmem reindex
    """
    import time

    from optmem.index import open_index

    start = time.perf_counter()
    with open_index(get_vault(), progress_callback(), rebuild=True) as idx:
        count = idx.count()
        warnings = idx.warnings()
    seconds = round(time.perf_counter() - start, 3)
    warn_all(warnings)
    emit(json_out, {"records": count, "seconds": seconds}, lambda: f"indexed {count:,} records in {seconds:.2f}s")


@command("conflicts", SHOW_UNSAFE)
def conflicts(allow_unsafe: bool, json_out: bool) -> None:
    """List the facts with more than one current value; settle each with `resolve`.

    A key is in conflict when two of its values stand together (two clones corrected one value,
    an inference against what was said, or values within `[consolidation]
    conflict_window_days`); a fact without a key when one record was corrected two ways (on two
    clones that git merged). A key with a different current value in two domains is listed
    apart: each domain keeps its own, but it may be one fact told two ways.

    \b
    Example:
      optmem conflicts
      optmem resolve user.os --keep 7QMZMMFT
    """
    from optmem import facts
    from optmem.view import CONFLICT_LABEL, STATUS_LABEL, bracket, labels

    found = facts.conflicts(get_vault(), show_unsafe=allow_unsafe)
    split = facts.splits(get_vault(), show_unsafe=allow_unsafe)

    def human() -> str:
        return "\n".join([_human_conflicts()] + _human_splits())

    def _human_splits() -> list[str]:
        out = []
        for sk in split:
            out.append(
                f"{sk.key}" + (f"  ({sk.project})" if sk.project else "") + "  — a different current value in "
                f"each of {len({v['domain'] for v in sk.values})} domains (each keeps its own; no conflict to "
                "resolve, but it may be one fact told two ways)"
            )
            out += [f"  {short(v['id'])}  {v['ts']}  {v['domain']}  {stored_line(v['text'])}" for v in sk.values]
            out.append("  if they are one fact, correct the stale one: optmem correct ID TEXT")
        return out

    def _human_conflicts() -> str:
        if not found:
            return "no open conflicts"
        out = []
        for c in found:
            if c.decision:
                what = f"kept on one machine, forgotten on another: {short(c.fact or '')}"
            elif c.removal:
                what = f"an entry of {c.file} removed on one machine, edited on another: {c.key}"
            elif c.file is not None:
                what = f"an entry of {c.file} edited two ways: {c.key}"
            else:
                what = c.key if c.key is not None else f"corrected two ways: {short(c.fact or '')}"
            out.append(f"{what}  ({c.domain}" + (f"/{c.project}" if c.project else "") + ")")
            out += [
                f"  {short(v['id'])}  {v['ts']}  {stored_line(v['text'])}"
                + (f"  — {v['source']}" if v.get("source") else "")
                + (f"  {bracket(said)}" if (said := labels(v, omit=(STATUS_LABEL, CONFLICT_LABEL))) else "")
                for v in c.values
            ]
            out.append(f"  settle it: optmem resolve {c.name} --keep ID  (or --value TEXT)")
        return "\n".join(out)

    emit(
        json_out,
        {
            "conflicts": [
                {"key": c.key, "fact": c.fact, "domain": c.domain, "project": c.project, "values": c.values}
                | ({"file": c.file} if c.file else {})
                | ({"decision": True} if c.decision else {})
                for c in found
            ],
            "count": len(found),
            "across_domains": [{"key": sk.key, "project": sk.project, "values": sk.values} for sk in split],
        },
        human,
    )


@command(
    "resolve",
    arg("key", "The key in conflict (for a fact without a key: the id `conflicts` names)."),
    opt("keep", help="The id of the value that is right (≥ 6 of its characters)."),
    opt("value", help="Or the right value, as new text."),
    opt("domain", "--domain", "-d", help="Where the conflict is, when the key is in conflict in several."),
    opt("project", "--project", "-p", help="Likewise."),
    opt("source", help="Who settled it."),
    ORIGIN,
    UNSAFE,
)
def resolve(
    key: str,
    keep: str | None,
    value: str | None,
    domain: str | None,
    project: str | None,
    source: str | None,
    origin: str | None,
    allow_unsafe: bool,
    json_out: bool,
) -> None:
    """Settle a conflict on KEY (or a fact's id): a `resolution` record supersedes every value in it.

    \b
    Example:
      optmem resolve user.os --keep 7QMZMMFT
      optmem resolve user.os --value "用 Mac，Windows 只在公司用"
    """
    from optmem import facts

    res = facts.resolve(
        get_vault(),
        key,
        keep=keep,
        value=value,
        domain=domain,
        project=project,
        source=source,
        allow_unsafe=allow_unsafe,
        origin=origin_of(origin),
    )
    emit(
        json_out,
        res._asdict(),
        lambda: (
            f"resolved {res.key}: {res.id}"
            + (f" keeps {short(res.kept)}" if res.kept else "")
            + f"; superseded {len(res.superseded)} value(s)"
        ),
    )


@command(
    "merge",
    arg(
        "record_ids",
        "The fragments to merge (ids, or ≥ 6 of their characters).",
        metavar="[ID]...",
        required=False,
        multiple=True,
    ),
    opt("topic", help="What the merged record is about."),
    opt("text", help="Its main text (default: the topic and every fragment, joined)."),
    opt("fact", multiple=True, help="A structured field, field=value (repeatable)."),
    opt("key", help="A fact key for the merged record."),
    flag(
        "suggest",
        help="Only list groups of ≥ 3 current records about one subject that merge "
        "accepts, each with a --topic; nothing is merged.",
    ),
    opt("source", help="Who merged them."),
    ORIGIN,
    UNSAFE,
)
def merge(
    record_ids: list[str] | None,
    topic: str | None,
    text: str | None,
    fact: list[str] | None,
    key: str | None,
    suggest: bool,
    source: str | None,
    origin: str | None,
    allow_unsafe: bool,
    json_out: bool,
) -> None:
    """Merge fragments about one topic into one structured record; every detail is kept.

    \b
    The merged record supersedes the fragments; its details keep each one verbatim.
    --suggest lists groups of current records about one subject that merge accepts.
    Example:
      optmem merge --suggest
      optmem merge 7QMZMMFT 9XKD2P1A 3JH8WQ0N --topic "Japan trip" --fact month=June
    """
    import shlex
    from dataclasses import asdict

    from optmem import merging
    from optmem.errors import UsageError

    if suggest:
        if record_ids:
            raise UsageError("--suggest lists groups; give either IDs to merge or --suggest")
        found = merging.suggest_merges(get_vault())
        emit(
            json_out,
            {"suggestions": [asdict(s) for s in found], "count": len(found)},
            lambda: (
                "\n".join(
                    f"{s.reason}:\n"
                    + "\n".join(f"  {short(i)}  {stored_line(t)[:80]}" for i, t in zip(s.ids, s.texts))
                    + f"\n  optmem merge {' '.join(short(i) for i in s.ids)} --topic {shlex.quote(s.topic)}"
                    for s in found
                )
                or "nothing to suggest"
            ),
        )
        return
    fields: dict[str, str] = {}
    for pair in fact or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--fact {quote(pair)}: use field=value, e.g. --fact city=Tokyo")
        if fields.get(name.strip(), value.strip()) != value.strip():
            raise UsageError(
                f"--fact {name.strip()} is given two values ({quote(fields[name.strip()])} and "
                f"{quote(value.strip())}); give the one that is right — a field holds one value "
                "(nothing was written)"
            )
        fields[name.strip()] = value.strip()
    res = merging.merge(
        get_vault(),
        list(record_ids or []),
        topic or "",
        text=text,
        fields=fields,
        key=key,
        source=source,
        allow_unsafe=allow_unsafe,
        origin=origin_of(origin),
    )
    emit(json_out, asdict(res), lambda: f"merged {len(res.fragments)} records into {res.id}")
