"""What the content scanner costs: CPU per 1,000 texts, and a fresh process's first scan.

    python bench/scan_cost.py          # both figures (CPU time, so a busy machine skews them less)

* per 1,000 texts: every text of the corpora tests/test_scan.py measures (the payloads and 1,000
  ordinary notes), each scanned once in one process after a warm-up scan — the rules a text needs
  compile on first use, as in a real process;
* first scan: a fresh `python` imports the scanner and scans one ordinary note (importing the
  rules, building the automata, compiling the rules it needs), median of several processes.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST = (
    "import time; t = time.process_time(); from optmem.safety import scan; "
    "scan.find('Deploy webapp with docker compose on Friday, ask Anna about the port.'); "
    "print((time.process_time() - t) * 1e3)"
)


def per_thousand() -> float:
    """CPU ms to scan 1,000 texts of the corpora, each once."""
    sys.path.insert(0, str(ROOT / "tests" / "data"))
    import corpus

    from optmem.safety import scan

    texts = [r["text"] for r in corpus.payloads()] + corpus.ordinary_notes()
    scan.find("warm up: ignore previous instructions, password=hunter22")
    start = time.process_time()
    for text in texts:
        scan.find(text)
    return (time.process_time() - start) / len(texts) * 1e6


def first_scan(repeat: int = 7) -> float:
    """CPU ms of a fresh process's import of the scanner and first scan (median)."""
    runs = [float(subprocess.run([sys.executable, "-c", FIRST], capture_output=True, text=True, check=True).stdout)]
    runs += [
        float(subprocess.run([sys.executable, "-c", FIRST], capture_output=True, text=True, check=True).stdout)
        for _ in range(repeat - 1)
    ]
    return statistics.median(runs)


if __name__ == "__main__":
    print(f"scan, 1,000 texts: {per_thousand():.1f} ms CPU")
    print(f"fresh process, import + first scan: {first_scan():.1f} ms CPU")
