"""The write gate's "possible update" guess on notes nobody tuned it to: how often it flags a note
about another subject (a false flag), and how often it finds a real new value (recall).

    python bench/gate_precision.py                       # tests/data/gate_blind/notes.jsonl
    python bench/gate_precision.py --data FILE --show    # another set; print every miss and flag

The data (JSON lines, written blind from a brief of goals — see tests/data/gate_blind/README.md):
* `{"kind": "distinct", "notes": [...]}` — notes written together about DIFFERENT facts, many of
  the same sentence shape ("numpy is pinned to 1.26" / "pandas is pinned to 2.1");
* `{"kind": "update", "old": ..., "new": ..., "distractors": [...]}` — a new value of the same
  attribute of the same subject, with notes that share its words but not its subject.

Each group goes into a vault of its own through `log.append` (the write gate as an agent meets
it: the candidates its probe finds, then `compare.looks_like_update`), in the order written —
an update's old note, its distractors, then its new note. Figures:
* false flags per 100 ordinary notes: notes of a `distinct` group, and distractors, flagged as a
  possible update of anything;
* recall: the update's new note flagged as a possible update of its old note.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data" / "gate_blind" / "notes.jsonl"


def flags(notes: list[str]) -> list[list[str]]:
    """For each note appended in turn to a fresh vault: the texts it was flagged as updating."""
    from optmem import log
    from optmem.vault import Vault, init

    with tempfile.TemporaryDirectory() as tmp:
        vault = Vault(Path(tmp) / "v")
        init(vault)
        (vault.root / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
        out = []
        for i, note in enumerate(notes):
            os.environ["OPTMEM_NOW"] = f"2026-03-01T09:{i:02d}:00Z"
            got = log.append(vault, log.Draft(note, domain="dev"), on_similar="store")
            out.append([u["text"] for u in got.possible_update])
        return out


def measure(rows: list[dict[str, Any]], show: bool = False) -> dict[str, Any]:
    ordinary = flagged = 0
    pairs = found = 0
    for row in rows:
        if row["kind"] == "distinct":
            got = flags(row["notes"])
            ordinary += len(row["notes"])
            for note, upd in zip(row["notes"], got):
                if upd:
                    flagged += 1
                    if show:
                        print(f"FALSE FLAG {row['group']}: {note!r} ~ {upd}")
        elif row["kind"] == "update":
            distractors = list(row.get("distractors") or [])
            got = flags([row["old"], *distractors, row["new"]])
            ordinary += len(distractors)
            for note, upd in zip(distractors, got[1:-1]):
                if upd:
                    flagged += 1
                    if show:
                        print(f"FALSE FLAG {row['group']} (distractor): {note!r} ~ {upd}")
            pairs += 1
            if row["old"] in got[-1]:
                found += 1
            elif show:
                print(f"MISSED {row['group']}: {row['old']!r} -> {row['new']!r}")
    return {
        "ordinary_notes": ordinary,
        "false_flags": flagged,
        "false_flags_per_100": round(100 * flagged / max(ordinary, 1), 2),
        "update_pairs": pairs,
        "updates_found": found,
        "recall": round(found / max(pairs, 1), 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--show", action="store_true", help="print every false flag and missed update")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in args.data.read_text("utf-8").splitlines() if line.strip()]
    figures = measure(rows, show=args.show)
    if args.json:
        print(json.dumps(figures))
    else:
        print("| ordinary notes | false flags | per 100 | update pairs | found | recall |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        f = figures
        print(
            f"| {f['ordinary_notes']} | {f['false_flags']} | {f['false_flags_per_100']} | "
            f"{f['update_pairs']} | {f['updates_found']} | {f['recall']:.1%} |"
        )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    sys.exit(main())
