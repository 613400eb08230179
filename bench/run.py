"""OptMem benchmarks: whole-process timings against an anchor measured in the same run.

    python bench/run.py            # start-up and append at 100k
    python bench/run.py --quick    # smaller sizes, fewer repeats

Prints a Markdown table. Machines are noisy, so every target is a ratio to an anchor that runs
right beside it; the README quotes the latest table.
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


def timed(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> float:
    """Median wall time (ms) of `repeat` runs of a whole process."""
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        runs.append((time.perf_counter() - t) * 1000)
    return statistics.median(runs)


def env_for(vault: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["OPTMEM_VAULT"] = str(vault)
    return env


def bench_startup(repeat: int) -> list[tuple[str, float, str, float, str]]:
    anchor = timed([PY, "-c", "import typer"], repeat)
    rows = []
    for args in (["--version"], ["--help"]):
        ms = timed(OPTMEM + args, repeat)
        rows.append((f"optmem {args[0]}", ms, "python -c 'import typer'", anchor,
                     "≤ 1.2x"))
    return rows


def bench_append(size: int, repeat: int, work: Path) -> list[tuple[str, float, str, float, str]]:
    vault = work / f"append{size}"
    write_log(vault / "LOG.jsonl", size)
    env = env_for(vault)
    t = time.perf_counter()
    subprocess.run(OPTMEM + ["append", "warm-up builds the index"], check=True,
                   stdout=subprocess.DEVNULL, env=env)
    build = (time.perf_counter() - t) * 1000
    runs = []
    for i in range(repeat):
        t = time.perf_counter()
        subprocess.run(OPTMEM + ["append", f"bench append {i} 端口 {i}"], check=True,
                       stdout=subprocess.DEVNULL, env=env)
        runs.append((time.perf_counter() - t) * 1000)
    version = timed(OPTMEM + ["--version"], repeat)
    return [
        (f"optmem append, {size:,} records", statistics.median(runs), "optmem --version", version,
         "< 100 ms"),
        (f"first command on a fresh {size:,}-record log (index build)", build, "—", 0.0, "info"),
    ]


def table(rows: list[tuple[str, float, str, float, str]]) -> str:
    out = ["| measurement | ms | anchor | anchor ms | ratio | target |",
           "| --- | ---: | --- | ---: | ---: | --- |"]
    for name, ms, anchor, ams, target in rows:
        ratio = f"{ms / ams:.2f}x" if ams else "—"
        out.append(f"| {name} | {ms:,.1f} | {anchor} | {ams:,.1f} | {ratio} | {target} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    ap.add_argument("--only", choices=["startup", "append"], action="append")
    args = ap.parse_args()
    repeat = 5 if args.quick else 15
    size = 10_000 if args.quick else 100_000
    work = Path(tempfile.mkdtemp(prefix="optmem-bench-"))
    rows: list[tuple[str, float, str, float, str]] = []
    try:
        if not args.only or "startup" in args.only:
            rows += bench_startup(repeat)
        if not args.only or "append" in args.only:
            rows += bench_append(size, repeat, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    print(table(rows))


if __name__ == "__main__":
    main()
