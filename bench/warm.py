"""In-process search on a warm handle, as a server answers it (bench/run.py --only hub runs this).

    python bench/warm.py VAULT QUERY...

Opens one `optmem.warm.Warm` handle on the vault, as `optmem mcp` and the Hermes provider do,
searches each query once to warm it (the index open, its pages cached, patterns compiled), then
times each query again — `optmem.search.search` on a vault of the handle plus `to_json` (each
hit's text scanned), what a tool call computes — and prints one line: the p50 and p90 in ms,
how many searches were timed, and the median CPU time of one (ms: what a busy machine's other
processes do not change much). Queries that differ share their words as users' do, so the
handle's kept term counts and records serve the words they share, never a whole answer.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def distinct_queries(n: int, seed: int = 43) -> list[str]:
    """`n` different queries of two or three words from the generated records' words (gen.py),
    Chinese and English: no query twice."""
    from gen import EN, ZH

    rng = random.Random(seed)
    out: dict[str, None] = {}
    while len(out) < n:
        if rng.random() < 0.5:
            out[" ".join(rng.sample(ZH, rng.randint(2, 3)))] = None
        else:
            out[" ".join(rng.sample(EN, rng.randint(2, 3)))] = None
    return list(out)


def main() -> None:
    from optmem import search
    from optmem.warm import Warm

    root, queries = sys.argv[1], sys.argv[2:]
    took: list[float] = []
    cpu: list[float] = []
    with Warm(root) as warm:
        for q in queries[: min(len(queries), 20)]:  # warm: the first searches open and cache
            json.dumps(search.search(warm.vault(), q).to_json(), ensure_ascii=False)
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            json.dumps(search.search(warm.vault(), q).to_json(), ensure_ascii=False)
            took.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
    took.sort()
    p50, p90, mid = statistics.median(took), took[int(len(took) * 0.9)], statistics.median(cpu)
    print(f"{p50:.2f}\t{p90:.2f}\t{len(took)}\t{mid:.2f}")


if __name__ == "__main__":
    main()
