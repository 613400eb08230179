"""What index-time factors cost, on generated data (the same as bench/run.py's).

    python bench/factors.py            # 100,000 records
    python bench/factors.py --size 20000

In this process: tokenising with and without Snowball stemming, and computing date terms.
What each ranking stage costs a search is `python bench/run.py --only stages`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from gen import records  # noqa: E402
from run import table  # noqa: E402

from optmem import dates, text  # noqa: E402


def index_time(size: int) -> list[tuple[str, float, str, float, str, str]]:
    recs = list(records(size))
    folded = [text.fold(r["text"]) for r in recs]

    def timed(fn) -> float:
        t = time.perf_counter()
        for f in folded:
            fn(f)
        return (time.perf_counter() - t) * 1000

    stemmed = timed(text.analyze)
    saved = text.stem_words
    text.stem_words = lambda words: words  # the tokeniser as it was before stemming
    try:
        plain = timed(text.analyze)
    finally:
        text.stem_words = saved
    epochs = [time.mktime(time.strptime(r["ts"], "%Y-%m-%dT%H:%M:%SZ")) for r in recs]
    t = time.perf_counter()
    for e, f in zip(epochs, folded):
        dates.record_terms(e, f)
    date_ms = (time.perf_counter() - t) * 1000
    return [
        (f"tokenise {size:,} records, stemmed", stemmed, "not stemmed", plain, "info", "in-process"),
        (f"date terms of {size:,} records", date_ms, "tokenise (stemmed)", stemmed, "info", "in-process"),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100_000)
    args = ap.parse_args()
    rows = index_time(args.size)
    print(json.dumps({"size": args.size}), file=sys.stderr)
    print(table(rows))


if __name__ == "__main__":
    main()
