"""Keeping a vault healthy: doctor, stats, purge, and the evaluation gate (eval)."""

from typing import Any

from optmem.cli.common import emit, get_vault, short, warn_all, write_out
from optmem.cli.spec import JSON, PERSON, UNSAFE, CommandExit, arg, command, flag, opt


def _finish(json_out: bool, ok: bool, payload: dict[str, Any], human: str) -> None:
    """Print a result that may be a failure (ok false, exit 1) without being an error."""
    emit(json_out, payload, lambda: human, ok=ok)
    if not ok:
        raise CommandExit(1)


@command(
    "doctor",
    flag(
        "fix",
        help="Make the safe repairs (end a torn line, quarantine unparseable lines, stamp "
        "lines without ts, rebuild the index, store what a hook's spool holds: commits, handoffs).",
    ),
)
def doctor(fix: bool, json_out: bool) -> None:
    """Check the vault's files; exit 1 while problems remain. Without --fix nothing changes.

    \b
    Example:
      optmem doctor --fix
    """
    from optmem import doctor as core
    from optmem.integrations import claude_code, git

    report = core.check(get_vault(), fix=fix, drain=lambda v: git.drain_spools(v) + claude_code.drain_spools(v))
    lines = [f"fixed: {f}" for f in report.fixed]
    for p in report.problems:
        where = p.file + (f":{p.line}" if p.line else "") + (f" ({p.id[-8:]})" if p.id else "")
        lines.append(f"{p.code:<17} {where}  {p.message}")
    lines += [f"note: {n}" for n in report.notes]
    lines += [f"unchecked since {u['since'][:10]}  {short(u['id'])}  {u['text']}" for u in report.unchecked]
    if report.unchecked:
        lines.append("(facts that matter, unchecked for long: `optmem verify ID` once checked, or correct them)")
    lines.append("no problems" if report.ok else f"{len(report.problems)} problem(s)")
    _finish(
        json_out,
        report.ok,
        {
            "problems": [p.to_dict() for p in report.problems],
            "fixed": report.fixed,
            "notes": report.notes,
            "unchecked": report.unchecked,
        },
        "\n".join(lines),
    )


@command("trust", flag("revoke", help="Withdraw the trust: its redlines read as unverified notes again."), PERSON)
def trust(revoke: bool, origin: str | None, json_out: bool) -> None:
    """Trust this vault's redlines as rules (a vault that came in a git clone shows them as notes until then).

    A vault inside a git work tree that optmem did not begin here (it came in a clone, or from
    someone who can push) is not trusted: its hand-typed locked rules are shown as unverified
    notes — not first in search, not "Redlines" in context — until you read them and run this.
    Trust belongs to this clone: a folder deleted and cloned again asks again. Only a person
    trusts (run it at a terminal): an agent's `trust` is refused (exit 1, needs_person); anyone
    may --revoke.

    \b
    Example:
      optmem trust
    """
    from optmem import clock
    from optmem import trust as core
    from optmem.index import open_index

    vault = get_vault()
    vault.require()
    if not revoke:  # (taking trust back makes nothing a rule: anyone may)
        from optmem.cli.common import person_check

        person_check(f"trusting the redlines of {vault.root} as rules", "optmem trust", origin)
    trusted, changed, inside = core.decide(vault.root, revoke=revoke)
    with open_index(vault) as idx:
        redlines = idx.count_redlines(clock.now().timestamp())
    if not inside:
        said = f"{vault.root} is not in a git work tree: it is your own vault, and its {redlines} redline(s) are rules"
    elif trusted:
        said = f"trusted {vault.root}: its {redlines} redline(s) are rules" + ("" if changed else " (it was already)")
    else:
        said = f"not trusted: the {redlines} redline(s) of {vault.root} read as unverified notes"
    emit(
        json_out,
        {"vault": str(vault.root), "trusted": trusted, "changed": changed, "in_git": inside, "redlines": redlines},
        lambda: said,
    )


@command(
    "segment",
    opt("writer", "--writer", help="This clone's writer id (default: the host's name and 4 random hex digits)."),
)
def segment(writer: str | None, json_out: bool) -> None:
    """One log file per writer (log/<writer>/YYYY-MM.jsonl), so clones never conflict; LOG.jsonl stays.

    Run it once, in one clone, before sharing a vault between machines (`optmem sync` runs it
    when the vault has not been split). Each clone then appends only to its own folder under
    log/, so git, Syncthing, rclone or NFS never meet a conflict in the log. LOG.jsonl is not
    changed: it is read as the oldest part of the log. Run again with --writer to rename this
    clone's writer (new records go to the new folder; the old one is still read).

    \b
    Example:
      optmem segment
    """
    from optmem import share

    done = share.segment(get_vault(), writer)
    state = "is one file per writer now" if done.status == "segmented" else "was already one file per writer"
    said = f"the log {state}: this clone writes log/{done.writer}/" + (
        f"; LOG.jsonl ({done.legacy:,} record(s)) stays as it is, read as the oldest part" if done.legacy else ""
    )
    emit(json_out, done._asdict(), lambda: said)


@command(
    "export",
    JSON._replace(
        help="Changes nothing: the export is JSONL either way (one JSON object a line); an error is one JSON document."
    ),
)
def export(json_out: bool) -> None:
    """Write the whole vault as JSONL on stdout: a header, every record, the hot entries.

    One JSON object a line: the header (format `optmem-export`, version 1), each log record as
    {"record": …} in time order, each hot file as {"hot": {"file", "front", "entries"}} with each
    entry's journal record id. Two exports of one vault are identical; `optmem import` of it into
    an empty vault gives a vault whose export is identical. (--json changes nothing: it is JSONL.)

    \b
    Example:
      optmem export > vault.jsonl
    """
    from optmem import transfer

    warnings: list[str] = []  # (a hot file the export could not carry whole)
    for line in transfer.export_lines(get_vault(), warnings):
        write_out(line + "\n")  # (a full disk behind `>`, a closed pipe: `unwritable`, exit 3)
    write_out("", flush=True)
    warn_all(warnings)


@command(
    "import",
    arg("path", "An export file, or - for stdin; with --from, the tool's memory folder or file.", metavar="PATH"),
    opt(
        "source",
        "--from",
        help="Read another tool's memory files: claude-code, codex, hermes or mem0.",
        choices=("claude-code", "codex", "hermes", "mem0"),
    ),
    UNSAFE,
    opt(
        "origin",
        help="Who runs it: user (you — the default at a terminal: an export's lines go in as they are, Hermes' "
        "entries into hot memory) or agent (the default without a terminal, or in a command Claude Code, Codex or "
        "Hermes runs: every record is second-hand, none a locked rule or hot memory).",
    ),
)
def import_(path: str, source: str | None, allow_unsafe: bool, origin: str | None, json_out: bool) -> None:
    """Import an export (records keyed by id), or another tool's memory files with --from.

    Every record is checked (it parses; the security scan: another tool's possible injection is
    held in quarantine, a secret refused); a bad one is reported with its line number and the
    rest go in, in one write, then the index catches up once.
    Importing again changes nothing; an export carries the recall history too. --from reads
    Claude Code's memory (~/.claude: every project's auto memory, each in its project, and
    CLAUDE.md files), Codex's ~/.codex/memories (the statements, dated by their thread),
    Hermes's MEMORY.md/USER.md (into hot memory while they fit, the rest to the log) or Mem0
    exports (a JSON file or a folder of them); each record keeps the date its source gave it.
    Files not in the named tool's format are refused (wrong_format) and nothing is written.
    What an import brings is second-hand unless a person runs it (at a terminal): an agent's
    import of an export marks every record `import:optmem`, stores a redline as a plain record
    and puts no entry in hot memory (each said on stderr). Records held in quarantine are
    counted (`held`): `optmem quarantine` lists them for review.

    \b
    Example:
      optmem import vault.jsonl
      optmem import --from claude-code ~/.claude
      optmem import --from codex ~/.codex/memories
    """
    import sys
    from pathlib import Path

    from optmem import transfer
    from optmem.cli.common import origin_of, progress_callback
    from optmem.errors import UsageError
    from optmem.quarantine import check_origin

    vault = get_vault(write=True)
    progress = progress_callback("importing")
    writer = origin_of(check_origin(origin))
    if source:
        done = transfer.import_from(
            vault, source, Path(path), allow_unsafe=allow_unsafe, progress=progress, writer=writer
        )
    elif path == "-":
        lines = transfer.bounded_lines(sys.stdin.buffer)
        done = transfer.import_export(vault, lines, allow_unsafe=allow_unsafe, progress=progress, writer=writer)
    else:
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror or exc}; nothing was imported") from exc
        with fh:
            done = transfer.import_export(
                vault, transfer.bounded_lines(fh), allow_unsafe=allow_unsafe, progress=progress, writer=writer
            )
    warn_all(
        [
            f"{b['file'] + ' ' if b.get('file') else ''}line {b['line']}: {b['message']} (not imported)"
            for b in done.bad[:20]
        ]
    )
    if len(done.bad) > 20:
        warn_all([f"{len(done.bad) - 20} more line(s) not imported (see --json)"])
    warn_all(done.warnings)
    if done.held:  # (as `append` warns of the one it holds)
        warn_all(
            [
                f"{done.held:,} imported record(s) held in quarantine: the scanner flags them as possible prompt "
                "injections, so they stay out of context and search until a person reviews them — `optmem "
                "quarantine` lists them; `optmem release ID` if one is fine, `optmem forget ID` if not"
            ]
        )
    if done.unmapped:
        fields = ", ".join(f"{k} ({n:,})" for k, n in done.unmapped.items())
        warn_all([f"{done.source} fields not mapped to a record's (not kept): {fields}"])
    refused = transfer.nothing_imported(done)
    if refused is not None:  # (its bad lines said above, one a line)
        raise refused
    said = (
        ("partial import: " if done.bad else "")
        + f"imported {done.records:,} record(s) from {done.source}"
        + (f" and {done.bookkeeping:,} line(s) about them (seen, forgotten …)" if done.bookkeeping else "")
        + (f", {done.hot} hot entr{'y' if done.hot == 1 else 'ies'}" if done.hot else "")
        + (f"; {done.already:,} already here" if done.already else "")
        + (f"; {len(done.bad)} line(s) not imported" if done.bad else "")
        + (f"; {done.held:,} held in quarantine" if done.held else "")
        + (
            f"; {sum(len(s['supersedes']) for s in done.superseded):,} earlier record(s) superseded"
            if done.superseded
            else ""
        )
    )
    replaced = [
        f"{s['record'][-8:]} ({s['key']}) supersedes {', '.join(r[-8:] for r in s['supersedes'])}"
        for s in done.superseded
    ]
    emit(
        json_out,
        done._asdict() | {"partial": bool(done.bad)},
        lambda: "\n".join(
            [said, *replaced[:20]] + ([f"… and {len(replaced) - 20} more (see --json)"] if len(replaced) > 20 else [])
        ),
    )


@command("stats")
def stats(json_out: bool) -> None:
    """Show what the vault holds: counts, statuses, the lifecycle (heat, pending), health, sizes.

    \b
    Example:
      optmem stats --json
    """
    from optmem import stats as core

    s = core.stats(get_vault())

    def human() -> str:
        st = s["status"]
        life = s["lifecycle"]
        out = [
            f"records: {s['records']:,}  (current {st['current']:,}, pending {st['pending']:,}, "
            f"cold {st['cold']:,}, superseded {st['superseded']:,}, removed {st['removed']:,}, "
            f"expired {st['expired']:,}, "
            f"forgotten {st['forgotten']:,}"
            + (f", held {st['held']:,} — a possible injection each: `optmem quarantine`" if st.get("held") else "")
            + f"); redlines {s['redlines']}"
            + (
                " (unverified: this vault came in a git clone — read as notes until `optmem trust`)"
                if s["redlines"] and s["redlines_unverified"]
                else ""
            )
            + (f" ({s['redlines_held']:,} more held: `optmem quarantine`)" if s.get("redlines_held") else ""),
            f"active set: {life['active']:,} ({life['active_share']:.1%} of the log); heat of the "
            f"{life['heat_of']:,} current or pending records that can go cold: "
            + ", ".join(f"{b} {n:,}" for b, n in life["heat"].items())
            + f"; last sweep {life['last_sweep'] or 'never'}",
            f"importance: mean {life['importance']['mean'] if life['importance']['mean'] is not None else '—'}"
            f" ({life['importance']['given']:,} given with --importance, the rest by kind and tier)",
            "pending by age: " + ", ".join(f"{a} {n:,}" for a, n in life["pending_by_age"].items()),
            "by domain: " + ", ".join(f"{d} {n:,}" for d, n in s["by_domain"].items()),
            "by kind: " + ", ".join(f"{k} {n:,}" for k, n in s["by_kind"].items()),
            f"duplicate rate {s['duplicate_rate']:.1%}, contradiction rate {s['contradiction_rate']:.1%} "
            f"({s['contradictions']} open conflict(s); {s['open_updates']} possible update(s), the write "
            "gate's guesses, not counted)",
        ]
        out += [
            f"{h['file']}: {h['unreadable']} (`optmem doctor`)"
            if h.get("unreadable")
            else f"{h['file']}: {h['percent']}% — {h['chars']:,}/{h['limit']:,} chars, "
            f"{h['entries']} entr{'y' if h['entries'] == 1 else 'ies'}"
            for h in s["hot"]
        ]
        z = s["sizes"]
        out.append(f"sizes: log {z['log']:,} B, access {z['access']:,} B, tree {z['tree']:,} B, index {z['index']:,} B")
        return "\n".join(out)

    emit(json_out, s, human)


@command(
    "purge",
    arg("record_ids", "Records to delete for good.", metavar="[ID]...", required=False, multiple=True),
    opt("domain", "--domain", "-d", help="Every record of this domain."),
    flag("all", help="Every record (and the tree, handoffs and quarantine)."),
    flag("yes", help="Really delete (without it, purge only says what it would do)."),
    PERSON,
)
def purge(
    record_ids: list[str] | None, domain: str | None, all: bool, yes: bool, origin: str | None, json_out: bool
) -> None:
    """Delete records physically — the only command that does; refuses without --yes.

    Only a person purges: run it at a terminal; an agent's purge (a command without a terminal,
    or one Claude Code, Codex or Hermes runs) is refused (exit 1, needs_person), before anything
    is read.

    \b
    Example:
      optmem purge 7QMZMMFT --yes
    """
    from optmem import purge as core
    from optmem.cli.common import person_check

    ids = [i for arg in record_ids or [] for i in arg.replace(",", " ").split()] or None
    what = " ".join(ids or []) or ("--all" if all else f"--domain {domain}" if domain else "ID")
    person_check("deleting records for good (purge)", f"optmem purge {what} --yes", origin)
    res = core.purge(get_vault(), ids, domain=domain, everything=all, yes=yes)
    warn_all(res.warnings)
    emit(
        json_out,
        {
            "records": res.records,
            "lines": res.lines,
            "files": res.files,
            "restored": res.restored,
            "warnings": res.warnings,
            "not_found": res.not_found,
        },
        lambda: (
            f"purged {res.records} record(s) ({res.lines} line(s))"
            + (f"; deleted {', '.join(res.files)}" if res.files else "")
            + (f"; {', '.join(res.restored)} shows the previous handoff again" if res.restored else "")
        ),
    )


@command(
    "eval",
    arg("queries", 'A JSONL file of {"query", "expect" | "expect_text", "forbid"?, "domain"?}.'),
    opt("k", type=int, default=5, help="Cut-off for recall@k."),
    opt("save", help="Save the metrics to this file (a baseline for later)."),
    opt("baseline", help="Compare with saved metrics; exit 1 if anything got worse."),
    opt("set", multiple=True, help="Try a setting, e.g. ranking.recency_window=0.2 (repeatable)."),
)
def evaluate(
    queries: str, k: int, save: str | None, baseline: str | None, set: list[str] | None, json_out: bool
) -> None:
    """Run a fixed query set on a copy of the vault: recall@k, MRR, stale rate; compare with a baseline.

    \b
    Example:
      optmem eval sample_vault/queries.jsonl --save before.json
      optmem eval sample_vault/queries.jsonl --baseline before.json --set ranking.recency_window=0.3
    """
    from pathlib import Path

    from optmem import evaluate as core

    res = core.run(
        get_vault(),
        Path(queries),
        k=k,
        save=Path(save) if save else None,
        baseline=Path(baseline) if baseline else None,
        overrides=set,
    )
    warn_all(res.warnings)
    o = res.overall
    lines = [f"{'recall':>7} {'rank':>5} {'stale':>5}  query"]
    lines += [
        f"{q['recall']:>7.2f} {q['rank'] or '-':>5} {'yes' if q['stale'] else '':>5}  {q['query']}" for q in res.queries
    ]
    lines.append(
        f"overall (k={res.k}, n={o['n']}): recall {o['recall']:.3f}, MRR {o['mrr']:.3f}, "
        f"stale rate {o['stale_rate']:.3f}"
    )
    if res.saved:
        lines.append(f"saved to {res.saved}")
    if res.regressions is not None:
        lines.append("no regressions against the baseline" if res.ok else "REGRESSION:")
        lines += [
            f"  {r['metric']}: {r['before']} → {r['after']}" + (f"  ({r['query']})" if r["query"] else "")
            for r in res.regressions
        ]
    payload = res.to_dict()
    if not res.ok:
        from optmem.errors import Regression

        payload["error"] = Regression(
            f"{len(res.regressions or [])} measure(s) got worse than the "
            f"baseline {baseline}; keep the change only if it really helped"
        ).to_dict()
    _finish(json_out, res.ok, payload, "\n".join(lines))


@command(
    "curate",
    flag("apply", help="Write the plan (then the gate decides); without it, only show it."),
    opt("command", help="The model command (else OPTMEM_CURATOR, else [curator] command in your own config)."),
    opt("batch", type=int, help="New records per run (default [curator] batch, 100)."),
)
def curate(apply: bool, command: str | None, batch: int | None, json_out: bool) -> None:
    """A curation pass: a model you configured proposes merge/update/delete; the gate decides.

    \b
    Stdin to the command: {"contract", "records", "related", …}; stdout: {"operations": […]}.
    Example:
      optmem curate --command "llm -m local 'Curate these memory records'"
      optmem curate --apply
    """
    import os

    from optmem import curate as core
    from optmem.cli.common import user_settings
    from optmem.errors import UsageError

    if batch is not None and batch < 1:
        raise UsageError("--batch must be at least 1")
    cmd = command or os.environ.get("OPTMEM_CURATOR") or user_settings().curator.command or None
    res = core.curate(get_vault(), cmd, apply=apply, batch=batch)

    def human() -> str:
        if not res.records:
            return "nothing new since the last curation"
        lines = [
            f"{'applied' if res.applied else 'undone' if res.undone else 'plan (dry run; --apply writes it)'}: "
            f"{res.records} record(s) sent to {res.command}"
        ]
        for op in res.plan:
            what = op.get("ids") or op.get("id") or ""
            lines.append(
                f"  {'ok ' if op['valid'] else 'BAD'} {op.get('op')} {what}"
                + (f" — {op['reason']}" if not op["valid"] else "")
            )
        if res.undone:
            lines.append(
                "  the evaluation gate regressed: "
                + ", ".join(
                    f"{r.get('query') or 'overall'} {r['metric']} {r['before']} → {r['after']}" for r in res.regressions
                )
            )
        return "\n".join(lines)

    from dataclasses import asdict

    emit(json_out, asdict(res), human)
