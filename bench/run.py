"""OptMem benchmarks: whole-process timings against anchors measured in the same run.

    python bench/run.py                  # everything: start-up, append, search at 10k/100k/1M
    python bench/run.py --quick          # small sizes, few repeats (a smoke run)
    python bench/run.py --only search --sizes 10000,100000
    python bench/run.py --only compact
    python bench/run.py --only hooks         # what the git hooks add to a commit
    python bench/run.py --only lifecycle     # sweep over 1M records, search with the cold tier, touch
    python bench/run.py --only stages        # what each ranking stage costs a search (largest size)
    python bench/run.py --only sync --sizes 100000,1000000   # catching up 1,000 records a sync brought
    python bench/run.py --only import --sizes 100000,1000000 # an export imported vs the plain build
    python bench/run.py --only hub --sizes 100000,1000000    # a warm server: in process; MCP over HTTP, 4 clients
    python bench/run.py --only hub --keep /tmp/warm-bench    # … keeping the generated vaults for the next run
    python bench/run.py --only stats --sizes 50000,1000000   # `optmem stats` (counts, lifecycle, hygiene)
    python bench/run.py --only scan                          # the content scanner (bench/scan_cost.py)
    python bench/run.py --only search --sizes 100000 --write-docs   # … and into docs/performance.md
    python bench/run.py --only search --sizes 100000,1000000 --keep /tmp/speed-bench  # corpora kept, reused
    python bench/run.py --only search --sizes 100000 --keep /tmp/speed-bench --old-tree ../main --classes-only

Machines are noisy, so each target is a ratio to an anchor that runs right beside it:
* start-up: `python -c "import typer"`;
* search and index build: bench/anchor.py, a bare Python script over a prebuilt SQLite FTS5
  bigram index of the same records (one bm25-ranked query; a plain build — up to 100k records
  each build runs three times, alternating with optmem's, and the medians are compared). The
  search rows run on a chat-like corpus (`gen.records(chat=True)`); per class of
  bench/queries.py's query set (and the old seven queries) each query runs as optmem and as the
  anchor in turn, `--repeat` pairs, and the table gives per class the median and p90 over the
  queries of the ratio of their median CPU times (user + sys: steadier than wall time on a shared
  machine) — `--keep DIR` keeps the corpora and both indexes there for the next run;
* sweep: bench/anchor.py scan, a bare Python pass that reads and parses every log line once.
* stats: `optmem search` on the same vault (a whole process that opens the index and reads it);
* hub (a warm server): `optmem search` as a whole process, what an agent without a server pays
  a query — beside searches on a warm handle in one process (bench/warm.py) and through
  `optmem mcp --http` with 4 clients at once — the MCP SDK's client, and plain JSON-RPC over
  HTTP as a client in another language sends it (Basic Memory's MCP search, measured side by
  side once, answered in 32 ms at 10k notes);
* sync: the first search after another writer's 1,000 records arrived (a sync, a file sync)
  against the same search once caught up: the difference is the catch-up; the index file must
  be the same one after it (caught up, never rebuilt).
The search and append rows run with `[lifecycle] auto_sweep = "off"` (generated records are years
old: the first append would sweep them); the lifecycle rows measure the sweep on its own.
The stage table switches each ranking stage off in turn through the vault's optmem.toml
([ranking], `optmem.settings.Ranking`) and says what it costs a whole-process search; below it,
one search split in process (read the query, choose candidates, score, order, render).
Prints Markdown tables; `--write-docs` puts them between the `<!-- bench:… -->` markers of
docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen import write_log  # noqa: E402
from queries import CLASSES, OLD, query_set  # noqa: E402

PY = sys.executable
# -P: the current folder is not put first on the module path (`python -m` and `-c` put it there:
# run from a checkout's root, `--old-tree`'s PYTHONPATH lost to that checkout's optmem)
OPTMEM = [PY, "-P", "-m", "optmem"]
ANCHOR = [PY, str(HERE / "anchor.py")]
CHECKOUT = HERE.parent
# what pip writes into the `optmem` command (its console script), less the re-spelling of argv[0]
CONSOLE = "import sys; from optmem.cli import main; sys.exit(main())"
QUERIES = OLD  # the earlier search row's seven queries (an update cue; a date); the per-class
#               table runs bench/queries.py's set beside them
Row = tuple[str, float, str, float, str, str]


def clean_env() -> dict[str, str]:
    """The environment users have: bytecode caching on (a shell may have turned it off)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("OPTMEM_NOW", None)
    if PY != sys.executable:  # the user's installation (`user_install`): this checkout's optmem
        env["PYTHONPATH"] = str(CHECKOUT)
    return env


def user_install(where: Path) -> None:
    """Measure what a user's installation runs, not this development one: a virtual environment
    of its own in `where` (made once, reused) holding optmem's dependencies, in which both optmem
    — this checkout's, on PYTHONPATH as `--old-tree` puts an earlier one — and the anchor run.

    An editable install (`pip install -e .`, this repository's development set-up) loads an import
    hook in every Python process of its environment: ~10 ms of `pathlib`, `importlib.util` … before
    the first line of any script, the anchor's too. A `pip install .` has none. The commands are
    those of an installation too: `optmem …` is pip's console script (`CONSOLE`), not `python -m`."""
    global PY, OPTMEM, ANCHOR
    import tomllib

    venv = where / "user-venv"
    python = venv / "bin" / "python"
    project = tomllib.loads((CHECKOUT / "pyproject.toml").read_text("utf-8"))["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["mcp"]]
    stamp = venv / "optmem-dependencies.json"
    if not python.exists() or not stamp.exists() or json.loads(stamp.read_text("utf-8")) != wanted:
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        got = subprocess.run([str(python), "-m", "pip", "install", "-q", *wanted], capture_output=True, text=True)
        if got.returncode:
            raise SystemExit(f"bench: installing optmem's dependencies failed:\n{got.stdout}{got.stderr}")
        stamp.write_text(json.dumps(wanted), "utf-8")
    PY = str(python)
    OPTMEM = [PY, "-P", "-c", CONSOLE]
    ANCHOR = [PY, str(HERE / "anchor.py")]


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    """(wall ms, peak RSS in MB) of one whole process."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env or clean_env())
    _, status, usage = os.wait4(proc.pid, 0)
    ms = (time.perf_counter() - t) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return ms, usage.ru_maxrss // 1024


def median_ms(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> float:
    run(cmd, env)  # warm-up: bytecode written, files in the page cache
    return statistics.median(run(cmd, env)[0] for _ in range(repeat))


def env_for(vault: Path, now: str | None = None) -> dict[str, str]:
    env = clean_env()
    env["OPTMEM_VAULT"] = str(vault)
    if now:
        env["OPTMEM_NOW"] = now
    return env


NO_SWEEP = '[lifecycle]\nauto_sweep = "off"\n'  # measured on its own (bench_lifecycle)


def bench_startup(repeat: int) -> list[Row]:
    anchor = median_ms([PY, "-c", "import typer"], repeat)
    return [
        (f"optmem {a}", median_ms(OPTMEM + [a], repeat), "python -c 'import typer'", anchor, "≤ 1.2x", "")
        for a in ("--version", "--help")
    ]


def builds_for(size: int) -> int:
    """How many times each build runs: the machine's speed drifts by a third within minutes, so
    one build of each is a coin toss; up to 100k the median of three, each anchor build right
    before an optmem build (a 1M build takes a minute: once)."""
    return 3 if size <= 100_000 else 1


def prepare(
    size: int, work: Path, chat: bool = False, keep: Path | None = None
) -> tuple[Path, Path, float, float, int]:
    """A vault of `size` generated records (`chat`: the chat-like corpus), indexed by optmem and by
    the anchor, alternately (`builds_for`); the medians of both, and optmem's peak memory. With
    `keep`, the vault and the anchor's index live there and are reused when present (then no
    build is timed: both builds come back as 0)."""
    name = f"{'chat' if chat else 'v'}{size}"
    vault = (keep or work) / name
    db = (keep or work) / f"anchor-{name}.db"
    if keep and db.exists() and (vault / "LOG.jsonl").exists():
        run(OPTMEM + ["search", "warm"], env_for(vault))  # the index caught up (or rebuilt: another version)
        if chat:
            fresh_verdicts(vault)
        return vault, db, 0.0, 0.0, 0
    if chat:
        write_through_optmem(vault, size, work)
    else:
        write_log(vault / "LOG.jsonl", size)
    (vault / "optmem.toml").write_text(NO_SWEEP, "utf-8")
    anchor_runs, build_runs, peaks = [], [], []
    for _ in range(builds_for(size)):
        db.unlink(missing_ok=True)
        anchor_runs.append(run(ANCHOR + ["build", str(vault / "LOG.jsonl"), str(db)])[0])
        ms, mb = run(OPTMEM + ["reindex"], env_for(vault))
        build_runs.append(ms)
        peaks.append(mb)
    return vault, db, statistics.median(anchor_runs), statistics.median(build_runs), max(peaks)


def write_through_optmem(vault: Path, size: int, work: Path) -> None:
    """The chat-like corpus written as a user's records are: through optmem's write gate (an
    export of the generated records, imported), so each line carries the gate's verdict and a
    read does not scan it again (`optmem.verdicts`) — a log typed by hand would be scanned."""
    from gen import records

    dump = work / f"export-chat{size}.jsonl"
    with open(dump, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"format": "optmem-export", "version": 1, "records": size}) + "\n")
        for rec in records(size, chat=True):
            fh.write(json.dumps({"record": rec}, ensure_ascii=False, separators=(",", ":")) + "\n")
    vault.mkdir(parents=True, exist_ok=True)
    (vault / "optmem.toml").write_text(NO_SWEEP, "utf-8")
    run(OPTMEM + ["import", "--origin", "user", str(dump)], env_for(vault))  # (the corpus is the person's own)
    dump.unlink()


def fresh_verdicts(vault: Path) -> None:
    """A kept corpus as the write gate of this checkout leaves it: each line it passes carries its
    verdict under this scanner (`optmem.verdicts`), as in a corpus made now. Any change to the
    scanner's files makes every stored verdict stale: on a corpus kept from before, each hit would
    be scanned again on every read (the read-side scan, measured apart: `--only scan`)."""
    import sqlite3

    from optmem import verdicts
    from optmem.record import flagged_field, parse_line
    from optmem.vault import Vault

    store = vault / ".cache" / verdicts.FILE
    conn = sqlite3.connect(store)
    try:
        stale = conn.execute("SELECT count(*) FROM verdict WHERE v != ?", (verdicts.scanner_version(),)).fetchone()[0]
    finally:
        conn.close()
    if not stale:
        return
    print(f"bench: {stale:,} verdicts of {vault.name} are another scanner's; scanning its lines again", file=sys.stderr)
    for log in [vault / "LOG.jsonl", *sorted((vault / "log").rglob("*.jsonl"))]:
        with open(log, "rb") as fh:
            lines = [line.rstrip(b"\n") for line in fh]
        verdicts.remember(
            Vault(vault), [line for n, line in enumerate(lines, 1) if flagged_field(parse_line(line, n, None)) is None]
        )


def cpu_ms(cmd: list[str], env: dict[str, str] | None = None) -> float:
    """The CPU time (user + sys, ms) of one whole process."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env or clean_env())
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return (usage.ru_utime + usage.ru_stime) * 1000


ClassRow = tuple[str, str, int, int, float, float, float, float]
# (which optmem, class, records, queries, its CPU ms (median), the anchor's, ratio median, ratio p90)


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def index_schema(tree: Path) -> str | None:
    """The index schema a checkout of optmem writes (`optmem.schema.SCHEMA`), read from its source."""
    import re

    found = re.search(r'^SCHEMA = "([^"]+)"', (tree / "optmem" / "schema.py").read_text("utf-8"), re.M)
    return found[1] if found else None


def search_classes(vault: Path, db: Path, size: int, repeat: int, old_tree: Path | None = None) -> list[ClassRow]:
    """Per class of the query set (and the old seven queries): each query as optmem and as the
    anchor in turn, `repeat` pairs (with `old_tree`, a checkout of an earlier optmem, that one
    too, in the same turn, on the same vault); per query the ratio of the medians of CPU time;
    per class the median and p90 of those ratios, and the median CPU ms of each side."""
    env = env_for(vault)
    sides = {"this checkout": env}
    if old_tree is not None:
        sides[f"old: {old_tree.name}"] = {**env, "PYTHONPATH": str(old_tree)}
    for side_env in sides.values():
        cpu_ms(OPTMEM + ["search", OLD[0]], side_env)  # warm-up: bytecode written, pages cached
    cpu_ms(ANCHOR + ["query", str(db), OLD[0]])
    per: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for cls, q in [("old set", q) for q in OLD] + query_set():
        theirs: list[float] = []
        ours: dict[str, list[float]] = {side: [] for side in sides}
        for _ in range(repeat):
            theirs.append(cpu_ms(ANCHOR + ["query", str(db), q]))
            for side, side_env in sides.items():
                ours[side].append(cpu_ms(OPTMEM + ["search", q], side_env))
        for side in sides:
            per.setdefault((side, cls), []).append((statistics.median(ours[side]), statistics.median(theirs)))
    rows: list[ClassRow] = []
    for side in sides:
        for cls in ("old set", *CLASSES):
            pairs = per[side, cls]
            ratios = [a / b for a, b in pairs]
            rows.append(
                (
                    side,
                    cls,
                    size,
                    len(pairs),
                    statistics.median(a for a, _ in pairs),
                    statistics.median(b for _, b in pairs),
                    statistics.median(ratios),
                    p90(ratios),
                )
            )
    return rows


def class_table(rows: list[ClassRow]) -> str:
    out = [
        "| optmem | query class | records | queries | optmem CPU ms (median) | anchor CPU ms (median) "
        "| ratio, median | ratio, p90 |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for side, cls, size, n, ours, theirs, med, high in rows:
        out.append(f"| {side} | {cls} | {size:,} | {n} | {ours:,.0f} | {theirs:,.0f} | {med:.2f}x | {high:.2f}x |")
    return "\n".join(out)


def bench_search(
    sizes: list[int],
    repeat: int,
    work: Path,
    keep: Path | None = None,
    old_tree: Path | None = None,
    classes_only: bool = False,
) -> tuple[list[Row], list[Row], list[ClassRow]]:
    rows: list[Row] = []
    extra: list[Row] = []
    classes: list[ClassRow] = []
    per_size: dict[int, float] = {}
    for size in sizes:
        vault, db, anchor_build, build, build_mb = prepare(size, work, chat=True, keep=keep)
        classes += search_classes(vault, db, size, max(1, repeat // 2), old_tree)
        if classes_only:
            continue
        env = env_for(vault)
        ours = statistics.mean(median_ms(OPTMEM + ["search", q], repeat, env) for q in QUERIES)
        theirs = statistics.mean(median_ms(ANCHOR + ["query", str(db), q], repeat) for q in QUERIES)
        per_size[size] = ours
        rows.append((f"optmem search, {size:,} records", ours, "bare FTS5 query script", theirs, "≤ 1.5x at 100k", ""))
        rows += (
            []
            if keep and not build
            else [
                (
                    f"index build from scratch, {size:,} records",
                    build,
                    "bare FTS5 bigram build",
                    anchor_build,
                    "≤ 2x",
                    f"peak {build_mb} MB; median of {builds_for(size)}",
                )
            ]
        )
        # what a session-start hook runs: the redlines, hot memory and the recent records
        extra.append(
            (
                f"optmem context, {size:,} records",
                median_ms(OPTMEM + ["context"], repeat, env),
                "optmem search",
                ours,
                "info",
                "session start",
            )
        )
        if size == max(sizes) and keep is None:  # (appends would change a kept corpus)
            _, peak = run(OPTMEM + ["search", QUERIES[0]], env)
            appends, firsts = [], []
            for i in range(repeat):
                appends.append(run(OPTMEM + ["append", f"bench append {i} 端口迁移到 {9000 + i}"], env)[0])
                firsts.append(run(OPTMEM + ["search", f"端口迁移 {9000 + i}"], env)[0])
            extra.append(
                (
                    f"optmem append, {size:,} records",
                    statistics.median(appends),
                    "optmem --version",
                    median_ms(OPTMEM + ["--version"], repeat),
                    "< 100 ms",
                    "",
                )
            )
            extra.append(
                (
                    f"first search after an append, {size:,} records",
                    statistics.median(firsts),
                    "optmem search (steady)",
                    ours,
                    "info",
                    "",
                )
            )
            extra.append((f"peak memory of search, {size:,} records", float(peak), "—", 0.0, "< 200 MB", "MB, not ms"))
        if keep is None:
            shutil.rmtree(vault, ignore_errors=True)
            db.unlink(missing_ok=True)
    if 100_000 in per_size and 1_000_000 in per_size:
        extra.append(
            ("search 1M vs search 100k", per_size[1_000_000], "optmem search, 100k", per_size[100_000], "≤ 1.5x", "")
        )
    return rows, extra, classes


def bench_sync(sizes: list[int], repeat: int, work: Path) -> list[Row]:
    """A segmented vault of `size` records (writer alpha), indexed; then another writer's file of
    1,000 records arrives, as a sync or a file sync brings it. The first search after it catches
    the index up; the same search again is the anchor (nothing to catch up)."""
    from gen import START, STEP, records

    rows: list[Row] = []
    for size in sizes:
        vault = work / f"sync{size}"
        write_log(vault / "log" / "alpha" / "2023-11.jsonl", size)
        (vault / "optmem.toml").write_text(NO_SWEEP, "utf-8")
        env = {**env_for(vault), "OPTMEM_WRITER": "alpha"}
        run(OPTMEM + ["reindex"], env)
        catch, steady, rebuilt = [], [], 0
        for i in range(max(1, repeat // 2)):
            index = vault / ".cache" / "index.sqlite3"
            before = os.stat(index).st_ino
            incoming = vault / "log" / f"beta{i}" / "2026-12.jsonl"
            incoming.parent.mkdir(parents=True)
            tmp = incoming.with_suffix(".part")
            with open(tmp, "w", encoding="utf-8") as fh:
                for rec in records(1000, seed=100 + i, start=START + (size + 1000 * i) * STEP):
                    fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
            os.replace(tmp, incoming)  # arrives whole, as git or a file sync writes it
            catch.append(run(OPTMEM + ["search", QUERIES[i % len(QUERIES)]], env)[0])
            steady.append(run(OPTMEM + ["search", QUERIES[i % len(QUERIES)]], env)[0])
            rebuilt += os.stat(index).st_ino != before
        up = statistics.median(catch) - statistics.median(steady)
        rows.append(
            (
                f"sync catch-up, 1,000 new records into {size:,}",
                max(up, 0.0),
                "—",
                0.0,
                "≤ 2,000 ms at 1M",
                f"first search after the file arrived {statistics.median(catch):,.0f} ms, then "
                f"{statistics.median(steady):,.0f} ms; {'REBUILT ' + str(rebuilt) + 'x' if rebuilt else 'no rebuild'}",
            )
        )
        shutil.rmtree(vault, ignore_errors=True)
    return rows


def bench_import(sizes: list[int], work: Path) -> list[Row]:
    """`optmem import` of an export of `size` records into an empty vault, whole process, against
    `optmem reindex` of the same records in LOG.jsonl (the plain index build); up to 100k records
    each runs three times, alternating, and the medians are compared."""
    from gen import records

    rows: list[Row] = []
    for size in sizes:
        plain = work / f"plain{size}"
        write_log(plain / "LOG.jsonl", size)
        (plain / "optmem.toml").write_text(NO_SWEEP, "utf-8")
        dump = work / f"export{size}.jsonl"
        with open(dump, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"format": "optmem-export", "version": 1, "records": size}) + "\n")
            for rec in records(size):
                fh.write(json.dumps({"record": rec}, ensure_ascii=False, separators=(",", ":")) + "\n")
        builds, imports, peaks = [], [], []
        target = work / f"imported{size}"
        for _ in range(3 if size <= 100_000 else 1):  # alternating, medians compared (a noisy VM)
            builds.append(run(OPTMEM + ["reindex"], env_for(plain))[0])
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            (target / "optmem.toml").write_text(NO_SWEEP, "utf-8")
            ms, peak = run(OPTMEM + ["import", "--origin", "user", str(dump)], env_for(target))
            imports.append(ms)
            peaks.append(peak)
        rows.append(
            (
                f"optmem import of an export, {size:,} records",
                statistics.median(imports),
                "optmem reindex of the same records",
                statistics.median(builds),
                "≤ 2.0x",  # (a one-time operation: checked, appended, then the plain build)
                f"peak {max(peaks)} MB",
            )
        )
        for path in (plain, target):
            shutil.rmtree(path, ignore_errors=True)
        dump.unlink(missing_ok=True)
    return rows


def kept_vault(size: int, work: Path, keep: Path | None, name: str = "hub") -> Path:
    """A vault of `size` generated records, indexed: made in `work` (removed after), or kept in
    `keep` and made only once (`--keep DIR`: a 1M vault takes minutes to generate and index)."""
    vault = (keep or work) / f"{name}{size}"
    if not (vault / ".cache" / "index.sqlite3").exists():
        shutil.rmtree(vault, ignore_errors=True)
        write_log(vault / "LOG.jsonl", size)
        (vault / "optmem.toml").write_text(NO_SWEEP, "utf-8")
        run(OPTMEM + ["reindex"], env_for(vault))
    return vault


def in_process(vault: Path, queries: list[str]) -> tuple[float, float, int, float]:
    """(p50, p90, searches, CPU ms of one) of searches on a warm handle in one process (bench/warm.py)."""
    cmd = [PY, str(HERE / "warm.py"), str(vault), *queries]
    out = subprocess.run(cmd, env=env_for(vault), capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1]), int(out[2]), float(out[3])


def process_cpu_ms(pid: int) -> float | None:
    """CPU time a process and its live children (the hub's workers) have used so far, in ms
    (Linux's /proc; None elsewhere)."""
    ticks = 0
    try:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(entry.name) == pid or int(fields[1]) == pid:
                    ticks += int(fields[11]) + int(fields[12])
    except OSError:
        return None
    return ticks * 1000 / os.sysconf("SC_CLK_TCK")


def hub_workers(pid: int) -> int:
    """How many worker processes the hub `pid` runs (0: it answers in its own process)."""
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                count += int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid
            except OSError:
                continue
    return count


def bench_hub(
    sizes: list[int], repeat: int, work: Path, keep: Path | None = None, clients: int = 4, calls: int = 50
) -> list[Row]:
    """A warm server at each size (100k and 1M by default): searches in process on a warm handle
    (`optmem.warm`, what `optmem mcp` and the Hermes provider answer with) — the bench's queries
    in turn, and 200 different queries each once — then, at 100k, `optmem mcp --http` with
    `clients` MCP clients at once, each making `calls` searches of different queries over
    streamable HTTP: the p50/p95 of one call and the queries per second — the SDK's clients
    served by one process, then by one worker per CPU, then plain JSON-RPC clients (`hub_row`)
    by one worker per CPU. The anchor of each row
    is `optmem search` as a whole process (what an agent without a server pays a query),
    measured beside it."""
    from warm import distinct_queries

    rows: list[Row] = []
    hub_size = 100_000 if 100_000 in sizes else min(sizes)
    for size in sizes:
        vault = kept_vault(size, work, keep)
        env = env_for(vault)
        cli_ms = statistics.mean(median_ms(OPTMEM + ["search", q], repeat, env) for q in QUERIES[:4])
        p50, p90, n, cpu = in_process(vault, QUERIES * 3)
        target = "≤ 20 ms at 100k" if size <= 100_000 else "≤ 40 ms at 1M"
        rows.append(
            (
                f"search in a warm process, {size:,} records (p50)",
                p50,
                "optmem search, one process a query",
                cli_ms,
                target,
                f"the bench's {len(QUERIES)} queries in turn, {n} searches; p90 {p90:,.1f} ms; CPU {cpu:,.1f} ms",
            )
        )
        p50, p90, n, cpu = in_process(vault, distinct_queries(200))
        rows.append(
            (
                f"search in a warm process, {size:,} records, 200 different queries (p50)",
                p50,
                "optmem search, one process a query",
                cli_ms,
                target,
                f"each query once; p90 {p90:,.1f} ms; CPU {cpu:,.1f} ms",
            )
        )
        if size == hub_size:  # one process (the hub before its workers), then one worker per CPU
            rows += [hub_row(vault, size, cli_ms, clients, calls, work, workers) for workers in (1, 0)]
            rows.append(hub_row(vault, size, cli_ms, clients, calls, work, 0, client="http"))
        if keep is None:
            shutil.rmtree(vault, ignore_errors=True)
    return rows


def hub_row(
    vault: Path, size: int, cli_ms: float, clients: int, calls: int, work: Path, workers: int = 0, client: str = "sdk"
) -> Row:
    """`optmem mcp --http` on `vault`, `clients` MCP clients searching at once; `workers` its
    [mcp] workers (0: one per CPU, 1: its own process), in a configuration of its own in `work`.
    `client`: "sdk", the MCP Python SDK's client (`ClientSession` over streamable HTTP, as a
    Python agent has it), or "http", plain JSON-RPC over keep-alive HTTP connections — the
    protocol's own messages (initialize, then tools/call), as a client in another language sends
    them, with no SDK around them. Both run in this process, whose CPU a call is reported (the
    clients' share of the machine's two cores)."""
    import socket

    from warm import distinct_queries

    config = work / f"hub-config-{workers}.toml"
    config.write_text(f"[mcp]\nworkers = {workers}\n", "utf-8")
    env = {**env_for(vault), "OPTMEM_CONFIG": str(config)}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = "bench-token-0123456789abcdef"
    hub = subprocess.Popen(
        OPTMEM + ["mcp", "--http", str(port)],
        env={**env, "OPTMEM_MCP_TOKEN": token},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    asked = [distinct_queries(clients * calls, seed=44)[i * calls : (i + 1) * calls] for i in range(clients)]
    clock: dict[str, Any] = {}  # when the clock starts: the time, the hub's CPU, this process's; its workers

    def start() -> None:
        clock.update(wall=time.perf_counter(), hub=process_cpu_ms(hub.pid), own=time.process_time())
        clock["workers"] = hub_workers(hub.pid)

    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        took = (sdk_clients if client == "sdk" else http_clients)(port, token, asked, start)
        wall, own = time.perf_counter() - clock["wall"], time.process_time() - clock["own"]
        used = process_cpu_ms(hub.pid)
    finally:
        hub.kill()
        hub.wait()
    took.sort()
    qps = len(took) / wall
    before = clock["hub"]
    per_query = "?" if before is None or used is None else f"{(used - before) / len(took):,.1f} ms"
    served_by = f"{clock['workers']} worker processes" if clock["workers"] else "one process"
    by = "the MCP SDK's client" if client == "sdk" else "plain JSON-RPC over HTTP"
    p50, p95 = took[len(took) // 2], took[int(len(took) * 0.95)]
    return (
        f"hub: {clients} clients searching at once ({by}), {size:,} records, {served_by} (p50)",
        p50,
        "optmem search, one process a query",
        cli_ms,
        "≤ 30 ms, ≥ 100 queries/s",
        f"{qps:.1f} queries/s (a process a query: {1000 / cli_ms:.1f}/s); p95 {p95:,.1f} ms; "
        f"{len(took)} different queries; the hub's CPU {per_query} a query, "
        f"the clients' {own * 1000 / len(took):,.1f} ms",
    )


def sdk_clients(port: int, token: str, asked: list[list[str]], start: Callable[[], None]) -> list[float]:
    """One MCP SDK client session for each list of `asked` queries, all at once over streamable
    HTTP: each connects and warms the hub (the bench's queries), then — `start()` called when all
    are ready — searches its queries in turn. The ms of each search."""
    import asyncio

    async def client(i: int, go: asyncio.Event, waiting: list[int]) -> list[float]:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        took = []
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (r, w, *_):
            async with ClientSession(r, w) as session:
                await session.initialize()
                for q in QUERIES:  # warm: the hub's first searches open and cache
                    await session.call_tool("search", {"query": q})
                waiting.append(i)
                if len(waiting) == len(asked):  # every client connected and warm: the clock starts
                    start()
                    go.set()
                await go.wait()
                for q in asked[i]:
                    t = time.perf_counter()
                    result = await session.call_tool("search", {"query": q})
                    took.append((time.perf_counter() - t) * 1000)
                    if result.is_error:
                        raise SystemExit(f"bench: the hub refused a search: {result.content}")
        return took

    async def all_clients() -> list[float]:
        go, waiting = asyncio.Event(), []
        done = await asyncio.gather(*(client(i, go, waiting) for i in range(len(asked))))
        return [ms for one in done for ms in one]

    return asyncio.run(all_clients())


def http_clients(port: int, token: str, asked: list[list[str]], start: Callable[[], None]) -> list[float]:
    """As `sdk_clients`, each client a thread speaking the protocol's JSON-RPC itself over one
    keep-alive HTTP connection (`http.client`): initialize (keeping the session id, when the hub
    gives one), the initialized notification, then one POST a tools/call, its JSON answer read."""
    import http.client
    import threading

    head = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    ready = threading.Barrier(len(asked) + 1)
    took: list[float] = []
    failed: list[str] = []

    def post(conn: http.client.HTTPConnection, message: dict[str, Any], headers: dict[str, str]) -> Any:
        conn.request("POST", "/mcp", json.dumps(message), headers)
        answer = conn.getresponse()
        body = answer.read()
        if answer.status >= 300 or (body and b'"isError":true' in body) or b'"error"' in body[:40]:
            raise RuntimeError(f"HTTP {answer.status}: {body[:300]!r}")
        return answer

    def client(queries: list[str]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        try:
            hello = {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"},
                },
            }
            session = post(conn, hello, head).getheader("mcp-session-id")
            headers = {**head, "MCP-Protocol-Version": "2025-06-18", **({"mcp-session-id": session} if session else {})}
            post(conn, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)

            def search(n: int, q: str) -> None:
                params = {"name": "search", "arguments": {"query": q}}
                post(conn, {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}, headers)

            for n, q in enumerate(QUERIES, 1):  # warm: the hub's first searches open and cache
                search(n, q)
        except Exception as exc:  # (said below, after the others are released)
            failed.append(str(exc))
        ready.wait()
        if failed:
            return
        try:
            for n, q in enumerate(queries, 100):
                t = time.perf_counter()
                search(n, q)
                took.append((time.perf_counter() - t) * 1000)
        except Exception as exc:
            failed.append(str(exc))
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(queries,)) for queries in asked]
    for t in threads:
        t.start()
    ready.wait()
    start()
    for t in threads:
        t.join()
    if failed:
        raise SystemExit(f"bench: a plain HTTP client failed: {failed[0]}")
    return took


def bench_stats(sizes: list[int], repeat: int, work: Path) -> list[Row]:
    """`optmem stats` on a vault of `size` generated records (index built), whole process, beside
    `optmem search` on the same vault; the figures it printed go in the note."""
    rows: list[Row] = []
    for size in sizes:
        vault = work / f"stats{size}"
        write_log(vault / "LOG.jsonl", size)
        (vault / "optmem.toml").write_text(NO_SWEEP, "utf-8")
        env = env_for(vault)
        run(OPTMEM + ["reindex"], env)
        ours = median_ms(OPTMEM + ["stats"], repeat, env)
        _, peak = run(OPTMEM + ["stats"], env)
        search = statistics.mean(median_ms(OPTMEM + ["search", q], repeat, env) for q in QUERIES[:3])
        figures = json.loads(
            subprocess.run(OPTMEM + ["stats", "--json"], env=env, capture_output=True, text=True, check=True).stdout
        )
        rows.append(
            (
                f"optmem stats, {size:,} records",
                ours,
                "optmem search",
                search,
                "≤ 1 s at 50k; ≤ 5 s at 1M",
                f"peak {peak} MB; duplicate rate {figures['duplicate_rate']:.2%}, "
                f"contradiction rate {figures['contradiction_rate']:.2%}",
            )
        )
        shutil.rmtree(vault, ignore_errors=True)
    return rows


def bench_compact(size: int, work: Path) -> list[Row]:
    """`optmem compact` over a fresh log (index already built), whole process."""
    vault = work / f"compact{size}"
    write_log(vault / "LOG.jsonl", size)
    env = env_for(vault)
    run(OPTMEM + ["reindex"], env)
    ms, mb = run(OPTMEM + ["compact"], env)
    nodes = sum(1 for _ in (vault / "tree").rglob("*.md"))
    again, _ = run(OPTMEM + ["compact"], env)
    shutil.rmtree(vault, ignore_errors=True)
    return [
        (f"optmem compact, {size:,} records ({nodes:,} nodes)", ms, "—", 0.0, "< 30 s", f"peak {mb} MB"),
        ("optmem compact again (nothing new)", again, "—", 0.0, "info", ""),
    ]


def bench_hooks(repeat: int, work: Path) -> list[Row]:
    """What the git hooks add to a commit: `git commit` with and without them, whole processes."""
    repo, vault = work / "repo", work / "hookvault"
    git_env = {
        **clean_env(),
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@x",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    repo.mkdir()
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True, env=git_env)

    def commits(n: int) -> float:
        times = []
        for i in range(n):
            (repo / "f.txt").write_text(f"{time.time()} {i}")
            subprocess.run(["git", "-C", str(repo), "add", "f.txt"], check=True, env=git_env)
            times.append(run(["git", "-C", str(repo), "commit", "-q", "-m", f"change {i}"], git_env)[0])
        return statistics.median(times)

    bare = commits(repeat)
    write_log(vault / "LOG.jsonl", 10_000)
    run(OPTMEM + ["--vault", str(vault), "hooks", "install", "--repo", str(repo)])
    hooked = commits(repeat)
    return [
        (
            "git commit with optmem's hooks (10k-record vault)",
            hooked,
            "git commit without",
            bare,
            "info",
            "the hook's cost: one optmem process",
        )
    ]


def bench_lifecycle(size: int, repeat: int, work: Path) -> list[Row]:
    """The lifecycle at `size` records: a sweep (whole process, peak memory), search once most of
    the log is cold, and what a recall costs (`touch`, `search --touch`)."""
    from gen import START, STEP

    vault, db, _, _, _ = prepare(size, work)
    # "now" is a month after the newest record, and at least a year after the first: the records
    # of the last ~4 months stay warm, the rest cools (a vault used for a year, never swept)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(START + max(size * STEP, 365 * 86400) + 30 * 86400))
    env = env_for(vault, now)
    before = statistics.mean(median_ms(OPTMEM + ["search", q], repeat, env) for q in QUERIES)
    scan, _ = run(ANCHOR + ["scan", str(vault / "LOG.jsonl")])
    sweep_ms, sweep_mb = run(OPTMEM + ["sweep", "--show", "0"], env)
    again_ms, _ = run(OPTMEM + ["sweep", "--show", "0"], env)
    import json as _json

    stats = _json.loads(
        subprocess.run(OPTMEM + ["stats", "--json"], env=env, capture_output=True, text=True, check=True).stdout
    )
    cold = stats["status"]["cold"]
    after = statistics.mean(median_ms(OPTMEM + ["search", q], repeat, env) for q in QUERIES)
    theirs = statistics.mean(median_ms(ANCHOR + ["query", str(db), q], repeat) for q in QUERIES)
    hit = _json.loads(
        subprocess.run(
            OPTMEM + ["search", QUERIES[1], "--json"], env=env, capture_output=True, text=True, check=True
        ).stdout
    )["hits"][0]["id"]
    touch = median_ms(OPTMEM + ["touch", hit], repeat, env)
    version = median_ms(OPTMEM + ["--version"], repeat, env)
    plain = statistics.median(run(OPTMEM + ["search", QUERIES[1]], env)[0] for _ in range(repeat))
    touched = statistics.median(run(OPTMEM + ["search", QUERIES[1], "--touch"], env)[0] for _ in range(repeat))
    shutil.rmtree(vault, ignore_errors=True)
    db.unlink(missing_ok=True)
    return [
        (
            f"optmem sweep, {size:,} records ({cold:,} cooled)",
            sweep_ms,
            "read + parse every line",
            scan,
            "< 30 s at 1M",
            f"peak {sweep_mb} MB (< 200 MB)",
        ),
        ("optmem sweep again (nothing new)", again_ms, "—", 0.0, "info", ""),
        (
            f"optmem search, {size:,} records, after the sweep",
            after,
            "bare FTS5 query script",
            theirs,
            "≤ 2x at 100k; ≤ 3x of 100k at 1M",
            f"before the sweep: {before:,.0f} ms",
        ),
        ("optmem touch ID (one line to ACCESS.jsonl)", touch, "optmem --version", version, "info", ""),
        ("optmem search --touch", touched, "optmem search", plain, "info", "the recall's cost"),
    ]


def stage_switches() -> list[tuple[str, str, list[str], str]]:
    """(stage, the [ranking] settings that switch it off, the queries it is measured on, a note)."""
    sys.path.insert(0, str(HERE.parent))
    from optmem.settings import Ranking

    rules = [name for name, default in Ranking._field_defaults.items() if isinstance(default, bool)]
    switches = [
        ("conversation context", "context_share = 0\ncontext_top = 0\n", QUERIES),
        ("answers through their question", "answer_share = 0\n", QUERIES),
        ("updates first", "update_overlap = 2\nupdate_overlap_plain = 2\n", QUERIES),
        ("Chinese single characters", "cjk_unigram = 0\n", QUERIES),
        ("the language rules", "".join(f"{r} = false\n" for r in rules), QUERIES),
    ]
    return [
        (
            stage,
            off,
            queries,
            f"all {len(rules)} true/false switches of [ranking] false"
            if stage == "the language rules"
            else off.strip().replace("\n", "; "),
        )
        for stage, off, queries in switches
    ]


StageRow = tuple[str, float, float | None, str]  # stage, ms, what it costs (ms), note


def bench_stages(size: int, repeat: int, work: Path) -> list[StageRow]:
    """Whole-process search with every stage on, then with each switched off (the difference is
    what the stage costs); then one search split in process."""
    vault = work / f"stages{size}"
    write_log(vault / "LOG.jsonl", size)
    env = env_for(vault)

    def timed(ranking: str, queries: list[str]) -> float:
        (vault / "optmem.toml").write_text(NO_SWEEP + ("[ranking]\n" + ranking if ranking else ""), "utf-8")
        return statistics.mean(median_ms(OPTMEM + ["search", q], repeat, env) for q in queries)

    timed("", QUERIES[:1])  # the index built
    every = timed("", QUERIES)
    rows: list[StageRow] = [
        (f"every stage on, {size:,} records", every, None, "whole process, mean of the queries' medians")
    ]
    for stage, off, queries, note in stage_switches():
        ms = timed(off, queries)
        rows.append((f"without {stage}", ms, every - ms, note))
    (vault / "optmem.toml").write_text(NO_SWEEP, "utf-8")
    split = subprocess.run(
        [PY, str(HERE / "stages.py"), str(vault), str(repeat), *QUERIES],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for line in split.splitlines():
        name, ms = line.split("\t")
        rows.append((f"in process: {name}", float(ms), None, "median of the queries' medians, warm"))
    shutil.rmtree(vault, ignore_errors=True)
    return rows


def stage_table(rows: list[StageRow]) -> str:
    out = ["| stage | ms | what it costs | note |", "| --- | ---: | ---: | --- |"]
    for name, ms, cost, note in rows:
        out.append(f"| {name} | {ms:,.1f} | {'' if cost is None else f'{cost:+,.1f} ms'} | {note} |")
    return "\n".join(out)


DOCS = HERE.parent / "docs" / "performance.md"


def write_docs(blocks: dict[str, str]) -> None:
    """Each table between its `<!-- bench:NAME -->` and `<!-- /bench:NAME -->` in docs/performance.md."""
    import re

    text = DOCS.read_text("utf-8")
    for name, block in blocks.items():
        pattern = re.compile(rf"(<!-- bench:{name} -->\n).*?(<!-- /bench:{name} -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"docs/performance.md has no <!-- bench:{name} --> … <!-- /bench:{name} --> markers")
        text = pattern.sub(lambda m, block=block: m.group(1) + block + "\n" + m.group(2), text)
    DOCS.write_text(text, "utf-8")


def bench_scan(repeat: int) -> list[Row]:
    """The content scanner in CPU time (bench/scan_cost.py): 1,000 texts of the corpora, and a
    fresh process's import and first scan, against importing the error module it raises."""
    import scan_cost

    anchor = statistics.median(
        float(
            subprocess.run(
                [
                    PY,
                    "-c",
                    "import time; t = time.process_time(); import optmem.errors; "
                    "print((time.process_time() - t) * 1e3)",
                ],
                env=clean_env(),
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for _ in range(repeat)
    )
    return [
        ("content scan, 1,000 texts of the corpora (CPU)", scan_cost.per_thousand(), "", 0.0, "", "each text once"),
        (
            "content scan: fresh process, import + first scan (CPU)",
            scan_cost.first_scan(repeat),
            "import optmem.errors (CPU)",
            anchor,
            "",
            "rules, automata, the patterns one note needs",
        ),
    ]


def table(rows: list[Row]) -> str:
    out = [
        "| measurement | value | anchor | anchor ms | ratio | target | note |",
        "| --- | ---: | --- | ---: | ---: | --- | --- |",
    ]
    for name, ms, anchor, ams, target, note in rows:
        ratio = f"{ms / ams:.2f}x" if ams else "—"
        anchor_val = f"{ams:,.1f}" if ams else "—"
        out.append(f"| {name} | {ms:,.1f} | {anchor} | {anchor_val} | {ratio} | {target} | {note} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    ap.add_argument(
        "--only",
        choices=[
            "startup",
            "search",
            "compact",
            "hooks",
            "lifecycle",
            "stages",
            "sync",
            "import",
            "hub",
            "stats",
            "scan",
        ],
        action="append",
    )
    ap.add_argument("--sizes", help="comma-separated record counts for search (default 10k,100k,1M)")
    ap.add_argument("--repeat", type=int, help="runs per measurement (median taken)")
    ap.add_argument(
        "--keep", type=Path, metavar="DIR", help="keep the generated corpora, indexes and vaults in DIR, reuse them"
    )
    ap.add_argument("--old-tree", type=Path, help="a checkout of an earlier optmem: the class table measures it too")
    ap.add_argument("--classes-only", action="store_true", help="search: the class table alone (no other rows)")
    ap.add_argument(
        "--editable",
        action="store_true",
        help="run this Python's optmem (a development install) instead of a user's installation in a "
        "virtual environment of its own (made in --keep DIR, else for the run)",
    )
    ap.add_argument(
        "--write-docs",
        action="store_true",
        help="put the search, stage and hub tables into docs/performance.md (between its markers)",
    )
    args = ap.parse_args()
    repeat = args.repeat or (3 if args.quick else 7)
    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else [2_000, 10_000]
        if args.quick
        else [10_000, 100_000, 1_000_000]
    )
    work = Path(tempfile.mkdtemp(prefix="optmem-bench-"))
    rows: list[Row] = []
    searched: list[Row] = []  # the rows of docs/performance.md's search table
    served: list[Row] = []  # … and of its hub table
    stages: list[StageRow] = []
    classes: list[ClassRow] = []
    if args.old_tree and index_schema(args.old_tree) != index_schema(CHECKOUT):
        # each side would find the other's index and rebuild it, turn after turn
        raise SystemExit(
            f"bench: --old-tree {args.old_tree} writes index {index_schema(args.old_tree)}, this checkout "
            f"{index_schema(CHECKOUT)}: they cannot share one vault — run each on a copy of its own"
        )
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    if not args.editable:
        user_install(args.keep or work)
    try:
        if not args.only or "startup" in args.only:
            rows += bench_startup(repeat)
            searched += rows
        if not args.only or "search" in args.only:
            found, extra, classes = bench_search(sizes, repeat, work, args.keep, args.old_tree, args.classes_only)
            rows += found + extra
            searched += found + extra
        if not args.only or "compact" in args.only:
            rows += bench_compact(10_000 if args.quick else 100_000, work)
        if not args.only or "hooks" in args.only:
            rows += bench_hooks(repeat, work)
        if not args.only or "lifecycle" in args.only:
            rows += bench_lifecycle(10_000 if args.quick else max(sizes), repeat, work)
        if not args.only or "stages" in args.only:
            stages = bench_stages(max(sizes), repeat, work)
        if not args.only or "import" in args.only:
            rows += bench_import([s for s in sizes if s >= 10_000] or sizes, work)
        if not args.only or "sync" in args.only:
            rows += bench_sync([s for s in sizes if s >= 10_000] or sizes, repeat, work)
        if not args.only or "hub" in args.only:
            hub_sizes = [10_000] if args.quick else [s for s in sizes if s >= 100_000] or sizes
            served = bench_hub(hub_sizes, repeat, work, args.keep)
            rows += served
        if not args.only or "scan" in args.only:
            rows += bench_scan(repeat)
        if not args.only or "stats" in args.only:
            rows += bench_stats(sizes if args.sizes or args.quick else [50_000, 1_000_000], repeat, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()[0]
    line = (
        f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}, "
        f"load {load:.1f} (1-minute average at the end)"
    )
    print(line)
    if rows:
        print(table(rows))
    if classes:
        print(class_table(classes))
    if stages:
        print(stage_table(stages))
    if args.write_docs:
        command = "python bench/run.py " + " ".join(sys.argv[1:]).replace(" --write-docs", "").replace(
            "--write-docs", ""
        )
        blocks = {}
        if searched:
            blocks["search"] = f"`{command.strip()}` — {line}:\n\n{table(searched)}\n"
        if classes:
            blocks["classes"] = f"`{command.strip()}` — {line}:\n\n{class_table(classes)}\n"
        if served:
            blocks["hub"] = f"`{command.strip()}` — {line}:\n\n{table(served)}\n"
        if stages:
            blocks["stages"] = f"`{command.strip()}` — {line}:\n\n{stage_table(stages)}\n"
        write_docs(blocks)


if __name__ == "__main__":
    main()
