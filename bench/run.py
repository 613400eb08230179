"""OptMem benchmarks: whole-process timings against anchors measured in the same run.

    python bench/run.py                  # everything: start-up, append, search at 10k/100k/1M
    python bench/run.py --quick          # small sizes, few repeats (a smoke run)
    python bench/run.py --only search --sizes 10000,100000
    python bench/run.py --only compact
    python bench/run.py --only hooks         # what the git hooks add to a commit

Machines are noisy, so each target is a ratio to an anchor that runs right beside it:
* start-up: `python -c "import typer"`;
* search and index build: bench/anchor.py, a bare Python script over a prebuilt SQLite FTS5
  bigram index of the same records (one bm25-ranked query; a plain build).
Prints Markdown tables; the README quotes the latest run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen import write_log  # noqa: E402

PY = sys.executable
OPTMEM = [PY, "-m", "optmem"]
ANCHOR = [PY, str(HERE / "anchor.py")]
QUERIES = ["后端 端口 部署", "docker deploy rollback", "小明喜欢拿铁", "数据库缓存性能", "kubernetes alert",
           "what is the current redis latency", "2023-11-20 发布 回滚"]  # an update cue; a date
Row = tuple[str, float, str, float, str, str]


def clean_env() -> dict[str, str]:
    """The environment users have: bytecode caching on (a shell may have turned it off)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("OPTMEM_NOW", None)
    return env


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    """(wall ms, peak RSS in MB) of one whole process."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env or clean_env())
    _, status, usage = os.wait4(proc.pid, 0)
    ms = (time.perf_counter() - t) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return ms, usage.ru_maxrss // 1024


def median_ms(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> float:
    run(cmd, env)  # warm-up: bytecode written, files in the page cache
    return statistics.median(run(cmd, env)[0] for _ in range(repeat))


def env_for(vault: Path) -> dict[str, str]:
    env = clean_env()
    env["OPTMEM_VAULT"] = str(vault)
    return env


def bench_startup(repeat: int) -> list[Row]:
    anchor = median_ms([PY, "-c", "import typer"], repeat)
    return [(f"optmem {a}", median_ms(OPTMEM + [a], repeat), "python -c 'import typer'", anchor,
             "≤ 1.2x", "") for a in ("--version", "--help")]


def prepare(size: int, work: Path) -> tuple[Path, Path, float, float, int]:
    """A vault of `size` generated records, indexed by optmem and by the anchor (both timed)."""
    vault = work / f"v{size}"
    write_log(vault / "LOG.jsonl", size)
    db = work / f"anchor{size}.db"
    anchor_ms, _ = run(ANCHOR + ["build", str(vault / "LOG.jsonl"), str(db)])
    build_ms, build_mb = run(OPTMEM + ["reindex"], env_for(vault))
    return vault, db, anchor_ms, build_ms, build_mb


def bench_search(sizes: list[int], repeat: int, work: Path) -> tuple[list[Row], list[Row]]:
    rows: list[Row] = []
    extra: list[Row] = []
    per_size: dict[int, float] = {}
    for size in sizes:
        vault, db, anchor_build, build, build_mb = prepare(size, work)
        env = env_for(vault)
        ours = statistics.mean(median_ms(OPTMEM + ["search", q], repeat, env) for q in QUERIES)
        theirs = statistics.mean(median_ms(ANCHOR + ["query", str(db), q], repeat) for q in QUERIES)
        per_size[size] = ours
        rows.append((f"optmem search, {size:,} records", ours, "bare FTS5 query script", theirs,
                     "≤ 2x at 100k", ""))
        rows.append((f"index build from scratch, {size:,} records", build, "bare FTS5 bigram build",
                     anchor_build, "≤ 2x", f"peak {build_mb} MB"))
        if size == max(sizes):
            _, peak = run(OPTMEM + ["search", QUERIES[0]], env)
            appends, firsts = [], []
            for i in range(repeat):
                appends.append(run(OPTMEM + ["append", f"bench append {i} 端口迁移到 {9000 + i}"], env)[0])
                firsts.append(run(OPTMEM + ["search", f"端口迁移 {9000 + i}"], env)[0])
            extra.append((f"optmem append, {size:,} records", statistics.median(appends),
                          "optmem --version", median_ms(OPTMEM + ["--version"], repeat), "< 100 ms", ""))
            extra.append((f"first search after an append, {size:,} records", statistics.median(firsts),
                          "optmem search (steady)", ours, "info", ""))
            extra.append((f"peak memory of search, {size:,} records", float(peak), "—", 0.0,
                          "< 200 MB", "MB, not ms"))
        shutil.rmtree(vault, ignore_errors=True)
        db.unlink(missing_ok=True)
    if 100_000 in per_size and 1_000_000 in per_size:
        extra.append(("search 1M vs search 100k", per_size[1_000_000], "optmem search, 100k",
                      per_size[100_000], "≤ 3x", ""))
    return rows, extra


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
    return [(f"optmem compact, {size:,} records ({nodes:,} nodes)", ms, "—", 0.0, "< 30 s",
             f"peak {mb} MB"),
            ("optmem compact again (nothing new)", again, "—", 0.0, "info", "")]


def bench_hooks(repeat: int, work: Path) -> list[Row]:
    """What the git hooks add to a commit: `git commit` with and without them, whole processes."""
    repo, vault = work / "repo", work / "hookvault"
    git_env = {**clean_env(), "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
               "GIT_COMMITTER_EMAIL": "b@x", "GIT_CONFIG_NOSYSTEM": "1"}
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
    return [("git commit with optmem's hooks (10k-record vault)", hooked, "git commit without", bare,
             "info", "the hook's cost: one optmem process")]


def table(rows: list[Row]) -> str:
    out = ["| measurement | value | anchor | anchor ms | ratio | target | note |",
           "| --- | ---: | --- | ---: | ---: | --- | --- |"]
    for name, ms, anchor, ams, target, note in rows:
        ratio = f"{ms / ams:.2f}x" if ams else "—"
        anchor_val = f"{ams:,.1f}" if ams else "—"
        out.append(f"| {name} | {ms:,.1f} | {anchor} | {anchor_val} | {ratio} | {target} | {note} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    ap.add_argument("--only", choices=["startup", "search", "compact", "hooks"], action="append")
    ap.add_argument("--sizes", help="comma-separated record counts for search (default 10k,100k,1M)")
    ap.add_argument("--repeat", type=int, help="runs per measurement (median taken)")
    args = ap.parse_args()
    repeat = args.repeat or (3 if args.quick else 7)
    sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes
             else [2_000, 10_000] if args.quick else [10_000, 100_000, 1_000_000])
    work = Path(tempfile.mkdtemp(prefix="optmem-bench-"))
    rows: list[Row] = []
    try:
        if not args.only or "startup" in args.only:
            rows += bench_startup(repeat)
        if not args.only or "search" in args.only:
            found, extra = bench_search(sizes, repeat, work)
            rows += found + extra
        if not args.only or "compact" in args.only:
            rows += bench_compact(10_000 if args.quick else 100_000, work)
        if not args.only or "hooks" in args.only:
            rows += bench_hooks(repeat, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}")
    print(table(rows))


if __name__ == "__main__":
    main()
