"""The write gate's "possible update" guess: how often it flags ordinary notes (precision), and
how often it sees a real update (recall).

    python bench/gate.py [--lme ../shared/retrieval/data/lme-dev] [--show]

Precision: every line of tests/data/dev_notes.txt — developer notes in English and Chinese
(tickets, numbered notes, steps, hosts, versions, paths, people, decisions), none of them a
changed value of another — is appended through the CLI into one fresh vault, one domain, a
minute apart; a note is a false flag when `append` names a record in `possible_update`, and a
false near duplicate when it names one in `similar` (the gate asks about updates only when there is
none: `--on-similar skip` would drop the note).

Recall: the knowledge-update questions of the LongMemEval development split kept beside the
repository (../shared/retrieval, never copied into it; the row is skipped when it is missing).
Each eligible question (`ku_eligible`: evidence in an older and in the latest session) gives one
pair per (older evidence turn, latest evidence turn) — `ku_older_evidence` × `ku_latest_evidence`
— the older value and the newer one in the user's own words. A pair counts when
`compare.looks_like_update(older, newer)` holds, with the gate's cue words:
* turns: the two whole turns, as the gate would compare them as records;
* clauses: some clause of the older turn and some clause of the newer one (clauses: the text cut
  at . ! ? ; : , — and newlines, and before "and" / "by the way"; three words or more) — the
  value is stated in one clause of a long turn, and this is the finer test of the rule.
`--show` prints the flagged notes and the clauses that matched.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import os
import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOTES = HERE.parent / "tests" / "data" / "dev_notes.txt"
LME = HERE.parent.parent / "shared" / "retrieval" / "data" / "lme-dev"


def optmem(*args: str) -> dict:
    """One CLI call through the real dispatcher, in this process (as `optmem ARGS --json`)."""
    from optmem.cli import run

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = run([*args, "--json"])
    if code not in (0, 1):
        raise SystemExit(f"optmem {' '.join(args)} exited {code}: {out.getvalue()}")
    return json.loads(out.getvalue())


def precision(show: bool) -> tuple[int, int, int]:
    """(notes flagged as a possible update, notes taken for a near duplicate, notes appended)."""
    notes = [line.strip() for line in NOTES.read_text("utf-8").splitlines() if line.strip()]
    flagged = similar = 0
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["OPTMEM_VAULT"] = str(Path(tmp) / "vault")
        optmem("init")
        Path(tmp, "vault", "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
        for i, note in enumerate(notes):
            os.environ["OPTMEM_NOW"] = f"2026-03-01T{9 + i // 60:02d}:{i % 60:02d}:00Z"
            res = optmem("append", note, "--domain", "dev", "--on-similar", "store")
            if res.get("possible_update"):
                flagged += 1
                if show:
                    print(f"  flagged: {note!r} may update {[u['text'] for u in res['possible_update']]}")
            if res.get("similar"):
                similar += 1
                if show:
                    print(f"  similar: {note!r} near {[u['text'] for u in res['similar']]}")
    return flagged, similar, len(notes)


_CLAUSE_CUT = re.compile(r"[.!?;:,\n—]+|\s-\s|\band\b|\bby the way\b", re.IGNORECASE)


def clauses(turn: str) -> list[str]:
    return [c.strip() for c in _CLAUSE_CUT.split(turn) if len(c.split()) >= 3]


def ku_pairs(data: Path) -> list[tuple[str, str]]:
    """(older turn, newer turn) of every eligible knowledge-update question, in file order."""
    queries = [json.loads(line) for line in (data / "queries.jsonl").read_text("utf-8").splitlines() if line]
    wanted = {
        e
        for q in queries
        if q.get("question_type") == "knowledge-update" and q.get("ku_eligible")
        for e in (*q["ku_older_evidence"], *q["ku_latest_evidence"])
    }
    turns = {}
    with gzip.open(data / "LOG.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec["id"] in wanted:
                turns[rec["id"]] = rec["text"]
    return [
        (turns[old], turns[new])
        for q in queries
        if q.get("question_type") == "knowledge-update" and q.get("ku_eligible")
        for old in q["ku_older_evidence"]
        for new in q["ku_latest_evidence"]
    ]


def recall(data: Path, show: bool) -> tuple[int, int, int]:
    """(pairs flagged as whole turns, pairs flagged in some pair of clauses, pairs)."""
    from optmem import compare
    from optmem.reading.cues import time_words

    cues = time_words()
    pairs = ku_pairs(data)
    whole = sum(compare.looks_like_update(old, new, cues) for old, new in pairs)
    by_clause = 0
    for old, new in pairs:
        hits = [(a, b) for a in clauses(old) for b in clauses(new) if compare.looks_like_update(a, b, cues)]
        by_clause += bool(hits)
        if show and hits:
            print(f"  clauses: {hits[0][0]!r} → {hits[0][1]!r}")
    return whole, by_clause, len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lme", type=Path, default=LME, help="the LongMemEval development split (lme-dev)")
    parser.add_argument("--show", action="store_true", help="print the flagged notes and matched clauses")
    args = parser.parse_args()
    flagged, similar, notes = precision(args.show)
    print(
        f"precision: {flagged} of {notes} ordinary notes flagged as a possible update (false flags), "
        f"{similar} taken for a near duplicate"
    )
    if (args.lme / "queries.jsonl").exists() and (args.lme / "LOG.jsonl.gz").exists():
        whole, by_clause, pairs = recall(args.lme, args.show)
        print(
            f"recall (LongMemEval dev, knowledge updates): {whole} of {pairs} pairs as whole turns, "
            f"{by_clause} of {pairs} in some pair of clauses"
        )
    else:
        print(f"recall: skipped, no LongMemEval development data at {args.lme}", file=sys.stderr)


if __name__ == "__main__":
    main()
