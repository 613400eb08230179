"""One search split into its stages, in process (bench/run.py --only stages runs this).

    python bench/stages.py VAULT REPEAT QUERY...

Times `optmem.search.search` warm (after one search of each query) with time.perf_counter
around the library calls it makes — open the index, read the query, choose candidates, score
them, order them — and the rendering of the hits (`to_json`: each hit's text scanned, then JSON).
Prints `stage<TAB>ms` lines: per stage the median over the queries of each query's median.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from optmem import candidates, follow, search
from optmem.vault import Vault

STAGES = {  # stage → (module, the function its calls go through)
    "open the index (and follow the hot files)": (follow, "open_followed"),
    "read the query": (search, "read"),
    "choose candidates (SQL)": (candidates, "choose"),
    "score candidates": (search, "_score"),
    "order": (search, "_order"),
}
spent: dict[str, float] = defaultdict(float)


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - t

    return call


def main() -> None:
    vault, repeat, queries = Vault(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    for name, (module, attr) in STAGES.items():
        setattr(module, attr, timed(name, getattr(module, attr)))
    per_query: dict[str, list[float]] = defaultdict(list)
    for q in queries:
        search.search(vault, q)  # warm: patterns compiled, pages cached
        runs: dict[str, list[float]] = defaultdict(list)
        for _ in range(repeat):
            spent.clear()
            t = time.perf_counter()
            result = search.search(vault, q)
            searched = time.perf_counter()
            json.dumps(result.to_json(), ensure_ascii=False)
            end = time.perf_counter()
            runs["render (JSON, each hit's text scanned)"].append((end - searched) * 1000)
            for name in STAGES:
                runs[name].append(spent[name] * 1000)
            runs["the rest (term counts, warnings, hidden matches)"].append(
                ((searched - t) - sum(spent.values())) * 1000
            )
            runs["one search, all of it"].append((end - t) * 1000)
        for name, ms in runs.items():
            per_query[name].append(statistics.median(ms))
    order = [
        *STAGES,
        "render (JSON, each hit's text scanned)",
        "the rest (term counts, warnings, hidden matches)",
        "one search, all of it",
    ]
    for name in order:
        print(f"{name}\t{statistics.median(per_query[name]):.2f}")


if __name__ == "__main__":
    main()
