"""Whether two checkouts of optmem rank alike: the ids each returns, in order, for every query of
the bench's query set (bench/queries.py, and the old seven) on one vault.

    python bench/same_results.py VAULT OTHER_CHECKOUT [--limit 10]

Each checkout runs all the queries in a process of its own (PYTHONPATH set to it); prints the
queries whose ids differ, and a last line `same: N of M` (exit 1 when any differs). A change
meant for speed alone must print `same: M of M`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

CHILD = """
import json, sys
from optmem import search  # (the checkout on PYTHONPATH: first, as gen.py puts its own checkout first)
from optmem.vault import Vault
sys.path.insert(0, sys.argv[3])
from queries import OLD, query_set
print(json.dumps(search.__file__))
vault, limit = Vault(sys.argv[1]), int(sys.argv[2])
for q in [*OLD, *(q for _, q in query_set())]:
    print(json.dumps([h.record.id for h in search.search(vault, q, limit=limit).hits]))
"""


def ids(tree: Path, vault: Path, limit: int) -> list[list[str]]:
    # one moment for both (recency counts in a score)
    env = {**os.environ, "PYTHONPATH": str(tree), "OPTMEM_VAULT": str(vault), "OPTMEM_NOW": "2026-12-06T00:00:00Z"}
    out = subprocess.run(
        [sys.executable, "-P", "-c", CHILD, str(vault), str(limit), str(HERE)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=str(tree),
    ).stdout
    first, *rest = out.splitlines()
    imported = Path(json.loads(first)).resolve()
    if not imported.is_relative_to(tree.resolve()):  # what was compared must be that checkout
        raise SystemExit(f"same_results: {tree} was asked for, {imported} was imported")
    return [json.loads(line) for line in rest]


def main() -> None:
    from queries import OLD, query_set

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("vault", type=Path)
    ap.add_argument("other", type=Path, help="another checkout of optmem (its root folder)")
    ap.add_argument("--limit", type=int, default=10)
    args = ap.parse_args()
    queries = [*OLD, *(q for _, q in query_set())]
    ours, theirs = ids(HERE.parent, args.vault, args.limit), ids(args.other, args.vault, args.limit)
    differ = [(q, a, b) for q, a, b in zip(queries, ours, theirs, strict=True) if a != b]
    for q, a, b in differ:
        print(f"differs: {q!r}\n  this:  {a}\n  other: {b}")
    print(f"same: {len(queries) - len(differ)} of {len(queries)}")
    raise SystemExit(1 if differ else 0)


if __name__ == "__main__":
    main()
