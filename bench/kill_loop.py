"""The kill loop: writers SIGKILLed at random moments, then a count of what was lost.

    python bench/kill_loop.py                 # 200 kills on a 50,000-record log
    python bench/kill_loop.py --kills 40 --records 5000

Each round starts one writer process that appends records, adds and replaces hot-memory entries
and now and then rebuilds the index, printing an acknowledgement after each operation returns;
the round kills it at a random moment. At the end every acknowledged record must be in LOG.jsonl
exactly once, no line but the last may be torn, every acknowledged hot entry must be in its file,
and `doctor --fix` then search must work. Prints operations, kills, lost, doubled, torn.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gen import write_log  # noqa: E402

WRITER = r"""
import sys, random
from optmem import index, log, memory
from optmem.vault import Vault
v = Vault(sys.argv[1]); me = sys.argv[2]; rng = random.Random(me)
i = 0
while True:
    i += 1
    r = rng.random()
    if r < 0.75:
        res = log.append(v, log.Draft(f"kill-loop {me} record {i} 端口 {i}"), gate=False)
        print("A", res.id, flush=True)
    elif r < 0.9:
        text = f"kill-loop {me} entry {i}"
        memory.add(v, text, force=True)
        print("H", text, flush=True)
    elif r < 0.97:
        hot = memory.load(v)
        mine = [e for e in hot.entries if e.startswith(f"kill-loop {me} entry") and not e.endswith("(edited)")]
        if mine:
            memory.replace(v, mine[0], mine[0] + " (edited)")
            print("R", mine[0], flush=True)
    else:
        index.open_index(v, rebuild=True).close()
        print("I", flush=True)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="optmem-kill-"))
    vault = work / "v"
    write_log(vault / "LOG.jsonl", args.records)
    (vault / "optmem.toml").write_text("[limits]\nmemory = 1000000\n", "utf-8")
    subprocess.run([sys.executable, "-m", "optmem", "--vault", str(vault), "reindex"], check=True, capture_output=True)
    acked: list[str] = []
    hot: dict[str, str] = {}  # entry text as acknowledged → its latest form
    ops = 0
    try:
        for k in range(args.kills):
            proc = subprocess.Popen(
                [sys.executable, "-c", WRITER, str(vault), f"w{k}"],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            time.sleep(rng.uniform(0.15, 1.2))
            proc.send_signal(signal.SIGKILL)
            out, _ = proc.communicate()
            for line in out.splitlines():
                kind, _, rest = line.partition(" ")
                ops += 1
                if kind == "A":
                    acked.append(rest)
                elif kind == "H":
                    hot[rest] = rest
                elif kind == "R":
                    hot[rest] = rest + " (edited)"
        lines = (vault / "LOG.jsonl").read_bytes().split(b"\n")
        torn = sum(1 for raw in lines[:-1] if raw.strip() and not _parses(raw))
        ids: dict[str, int] = {}
        for raw in lines:
            if raw.strip() and _parses(raw):
                rid = json.loads(raw).get("id")
                ids[rid] = ids.get(rid, 0) + 1
        lost = sum(1 for a in acked if a not in ids)
        doubled = sum(1 for a in acked if ids.get(a, 0) > 1)
        entries = (
            set((vault / "MEMORY.md").read_text("utf-8").split("\n§\n")) if (vault / "MEMORY.md").exists() else set()
        )
        entries = {e.strip() for e in entries}
        hot_lost = sum(1 for text in hot.values() if text not in entries)
        doctor = subprocess.run(
            [sys.executable, "-m", "optmem", "--vault", str(vault), "doctor", "--fix", "--json"],
            capture_output=True,
            text=True,
        )
        search = subprocess.run(
            [sys.executable, "-m", "optmem", "--vault", str(vault), "search", "kill-loop", "--json"],
            capture_output=True,
            text=True,
        )
        print(
            f"| operations acknowledged | {ops:,} |\n| kills | {args.kills} |\n"
            f"| log records lost / doubled | {lost} / {doubled} (of {len(acked):,}) |\n"
            f"| hot entries lost | {hot_lost} (of {len(hot)}) |\n| torn lines (not last) | {torn} |\n"
            f"| doctor --fix exit / search exit | {doctor.returncode} / {search.returncode} |"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _parses(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw), dict)
    except ValueError:
        return False


if __name__ == "__main__":
    os.environ.pop("OPTMEM_NOW", None)
    main()
