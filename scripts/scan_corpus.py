"""Measure the content scanner: payloads caught per kind, false positives on ordinary notes.

    python scripts/scan_corpus.py            # figures
    python scripts/scan_corpus.py --misses   # also list every miss and false positive

The sets are the ones tests/test_scan.py asserts on (tests/data/): the adversarial payload
corpus, 1,000 generated ordinary notes (Chinese and English) and every text of sample_vault/.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "data"))
sys.path.insert(0, str(ROOT))

import corpus  # noqa: E402

from optmem import scan  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list misses and false positives")
    args = parser.parse_args()

    rows = corpus.payloads()
    for kind in ("injection", "secret"):
        mine = [r for r in rows if r["kind"] == kind]
        missed = [r for r in mine if scan.find(r["text"]) is None]
        print(f"{kind + ' payloads caught':<32} {len(mine) - len(missed):>5} / {len(mine)}")
        if args.misses:
            for r in missed:
                print(f"    miss: {r['note']}: {r['text']!r}")
    for label, texts in (("ordinary notes", corpus.ordinary_notes()),
                         ("sample vault texts", corpus.sample_vault_texts())):
        flagged = [(t, scan.find(t)) for t in texts]
        flagged = [(t, rule) for t, rule in flagged if rule]
        print(f"{label + ' false positives':<32} {len(flagged):>5} / {len(texts)}")
        if args.misses:
            for t, rule in flagged:
                print(f"    false positive ({rule}): {t!r}")

    texts = [r["text"] for r in rows] + corpus.ordinary_notes()
    start = time.perf_counter()
    for t in texts:
        scan.find(t)
    per = (time.perf_counter() - start) / len(texts) * 1e6
    print(f"{'scan.find, mean per text':<32} {per:>8.1f} µs ({len(texts)} texts)")


if __name__ == "__main__":
    main()
