"""The concurrency run: many writers doing mixed operations on one vault at once.

    python bench/concurrency.py                      # 10 writers x 150 operations
    python bench/concurrency.py --writers 4 --ops 50

Each writer appends, corrects and forgets its own records, adds, replaces and removes its own
hot-memory entries and searches, keeping a list of what it was told succeeded. At the end: every
acknowledged record is in LOG.jsonl exactly once, every writer's hot entries are exactly what it
expects, the journal agrees with the file, and `doctor` finds no problem. Prints the figures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WRITER = r"""
import json, random, sys
from optmem import facts, log, memory, search
from optmem.errors import OptmemError
from optmem.vault import Vault
v = Vault(sys.argv[1]); me = sys.argv[2]; n = int(sys.argv[3]); rng = random.Random(me)
mine, entries, errors = [], set(), []
for i in range(n):
    r = rng.random()
    try:
        if r < 0.35:
            mine.append(log.append(v, log.Draft(f"{me} record {i} 端口 {i}", domain=me), gate=False).id)
        elif r < 0.45 and mine:
            mine.append(facts.correct(v, rng.choice(mine), f"{me} corrected {i}").id)
        elif r < 0.5 and mine:
            log.forget(v, rng.choice(mine), reason="bench")
        elif r < 0.7:
            text = f"{me} entry {i}"
            memory.add(v, text, force=True); entries.add(text)
        elif r < 0.8 and entries:
            old = sorted(entries)[0]; memory.replace(v, old, old + " v2")
            entries.discard(old); entries.add(old + " v2")
        elif r < 0.85 and entries:
            old = sorted(entries)[-1]; memory.remove(v, old); entries.discard(old)
        else:
            search.search(v, f"{me} record", limit=5)
    except OptmemError as exc:
        errors.append(f"{exc.code}: {exc.message}")
print(json.dumps({"ids": mine, "entries": sorted(entries), "errors": errors}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--writers", type=int, default=10)
    ap.add_argument("--ops", type=int, default=150)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="optmem-conc-"))
    vault = work / "v"
    try:
        subprocess.run([sys.executable, "-m", "optmem", "init", str(vault)], check=True, capture_output=True)
        (vault / "optmem.toml").write_text("[limits]\nmemory = 1000000\n[lock]\ntimeout = 120\n", "utf-8")
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(vault), f"w{k}", str(args.ops)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for k in range(args.writers)
        ]
        results = []
        for p in procs:
            out, err = p.communicate()
            if p.returncode != 0:
                raise SystemExit(f"a writer failed: {err[-2000:]}")
            results.append(json.loads(out))
        lines = [json.loads(x) for x in (vault / "LOG.jsonl").read_text("utf-8").splitlines() if x.strip()]
        counts: dict[str, int] = {}
        for rec in lines:
            counts[rec["id"]] = counts.get(rec["id"], 0) + 1
        acked = [i for r in results for i in r["ids"]]
        lost = sum(1 for i in acked if i not in counts)
        doubled = sum(1 for i in acked if counts.get(i, 0) > 1)
        text = (vault / "MEMORY.md").read_text("utf-8") if (vault / "MEMORY.md").exists() else ""
        held = {e.strip() for e in text.split("\n§\n") if e.strip()}
        expected = {e for r in results for e in r["entries"]}
        doctor = json.loads(
            subprocess.run(
                [sys.executable, "-m", "optmem", "--vault", str(vault), "doctor", "--json"],
                capture_output=True,
                text=True,
            ).stdout
        )
        refusals = sum(len(r["errors"]) for r in results)
        print(
            f"| writers x operations | {args.writers} x {args.ops} |\n"
            f"| records acknowledged / lost / doubled | {len(acked):,} / {lost} / {doubled} |\n"
            f"| hot entries expected / missing / unexpected | {len(expected)} / {len(expected - held)} / "
            f"{len(held - expected)} |\n| refusals (expected outcomes, e.g. ambiguous) | {refusals} |\n"
            f"| doctor problems | {len(doctor['problems'])} |"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
