"""What each search factor costs, on generated data (the same as bench/run.py's).

    python bench/factors.py            # 100,000 records
    python bench/factors.py --size 20000

Index time, per 100k records, in this process: tokenising with and without Snowball stemming,
and computing date terms. Query time, whole process, medians: search with every factor, then
with conversation context off (context_top = 0, context_share = 0), with the updates-first
rule off and with answers not found through their question (answer_share = 0), through a vault-level optmem.toml — against the bare FTS5 query script as anchor;
and the same queries asking for an amount, with and without the amount factor (amount_share = 0).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from gen import records  # noqa: E402
from run import ANCHOR, OPTMEM, QUERIES, env_for, median_ms, run, table, write_log  # noqa: E402

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
    return [(f"tokenise {size:,} records, stemmed", stemmed, "not stemmed", plain, "info", "in-process"),
            (f"date terms of {size:,} records", date_ms, "tokenise (stemmed)", stemmed, "info", "in-process")]


def query_time(size: int, repeat: int, work: Path) -> list[tuple[str, float, str, float, str, str]]:
    vault = work / "v"
    write_log(vault / "LOG.jsonl", size)
    db = work / "anchor.db"
    run(ANCHOR + ["build", str(vault / "LOG.jsonl"), str(db)])
    env = env_for(vault)
    run(OPTMEM + ["reindex"], env)
    anchor = statistics.mean(median_ms(ANCHOR + ["query", str(db), q], repeat) for q in QUERIES)

    def timed(settings: str, queries: list[str] = QUERIES) -> float:
        (vault / "optmem.toml").write_text(settings, "utf-8")
        return statistics.mean(median_ms(OPTMEM + ["search", q], repeat, env) for q in queries)

    every = timed("")
    no_context = timed("[ranking]\ncontext_top = 0\ncontext_share = 0\n")
    no_updates = timed("[ranking]\nupdate_overlap = 2\nupdate_overlap_plain = 2\n")
    no_answers = timed("[ranking]\nanswer_share = 0\n")
    # the same queries asking for an amount ("how many …", "…有多少"): the amount factor reads
    # the sentences of the candidates that matched
    amounts = [f"how many {q}" if q.isascii() else f"{q}有多少" for q in QUERIES]
    asked, not_asked = timed("", amounts), timed("[ranking]\namount_share = 0\n", amounts)
    return [(f"search, {size:,} records, every factor", every, "bare FTS5 query script", anchor, "≤ 2x", ""),
            ("… without conversation context", no_context, "every factor", every, "info", ""),
            ("… without updates first", no_updates, "every factor", every, "info", ""),
            ("… without answers found through their question", no_answers, "every factor", every, "info", ""),
            ("the same asking an amount (how many …, …有多少)", asked, "… with amount_share = 0", not_asked,
             "info", "")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="optmem-factors-"))
    try:
        rows = index_time(args.size) + query_time(args.size, args.repeat, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"size": args.size}), file=sys.stderr)
    print(table(rows))


if __name__ == "__main__":
    main()
