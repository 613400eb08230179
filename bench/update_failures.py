"""Why the current value does not come first: the failures of an update set, by mechanism.

    python bench/update_failures.py bench/updates_blind9 [more sets…] [--json out.json] [--show N]

For every question asking the current value (`bench/updates.py --half all --load direct`, searched
in this process), a failure — the newer statement not first of the two in the top 10 — is put in
one class, and the classes are counted over all sets given:

  missing / below       the newer statement is not in the top 10 / is there, below the older
  shares-word / no-word the newer statement holds a word of the question (as a query reads it) or not
  new-in-group / new-no-group
                        it holds a word of an attribute group the question names
                        (`optmem.reading.attributes`) or not — the lexicon can bring it, or cannot
  old-found / old-far   the older statement is in the top 30 (a note the followers start from) or not
  told / untold         the newer says it changes something (`reading.cues.says_change`)
  top: own / other, promoted / plain
                        the first hit is of the question's own case (its older statement, a
                        distractor) or another case's record, and whether the update rule or a
                        follower put it there (its explain names a record it updates)

and, apart, every question whose OLDER statement is not in the top 10 (the history a person
remembers beside the answer), by the same first three classes read of the older statement
(missing from the top 30 or not; shares a word of the question or not; holds a word of the
attribute it names or not), and whether the newer is in the top 10.

Read the classes, not the cases: a set you measure on is a set you do not read. The set being
written while a change is made (`updates_blind17`, and whichever the current brief holds back) is refused.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import updates  # noqa: E402  (bench/updates.py: the same stores and questions)

HELD_OUT = ("updates_blind17",)
DEPTH = 30  # hits asked for: far enough to see where a missing statement stands


def classify(data: Path, work: Path) -> list[dict[str, Any]]:
    """One row per question asking the current value: its ranks and, for a failure, its class."""
    from optmem.identifiers import values
    from optmem.index import make_filters
    from optmem.reading import cues
    from optmem.reading.lexicon import STOPWORDS
    from optmem.reading.query import read
    from optmem.search import search
    from optmem.text import query_terms
    from optmem.vault import Vault

    cases = updates.load_cases(data / "cases.jsonl")
    with open(data / "fillers.jsonl", encoding="utf-8") as f:
        fillers = [json.loads(line) for line in f if line.strip()]
    records, questions = updates.build_half("all", cases, fillers)
    vault = work / data.name
    updates.load_vault(vault, records, "direct", updates.ADD_CMD, lambda *_: None)
    (vault / "optmem.toml").write_text(updates.search_toml([]), encoding="utf-8")
    role = {r["id"]: (r["case"], r["role"]) for r in records}
    by_case = {c["id"]: c for c in cases}
    ignore = cues.time_words()

    def words(text: str) -> set[str]:
        return {t for t in query_terms(text) if t not in STOPWORDS}

    rows = []
    for q in questions:
        if q["asks"] != "current":
            continue
        os.environ["OPTMEM_NOW"] = q["now"]
        hits = search(Vault(vault), q["text"], limit=DEPTH, filters=make_filters(until=q["now"]), explain=True).hits

        at = {role.get(h.record.id): i for i, h in reversed(list(enumerate(hits)))}
        new_at, old_at = at.get((q["case"], "new")), at.get((q["case"], "old"))
        ok = new_at is not None and new_at < 10 and (old_at is None or new_at < old_at)
        row: dict[str, Any] = {"set": data.name, "case": q["case"], "lang": q["lang"], "ok": ok}
        if old_at is None or old_at >= 10:
            old_text = by_case[q["case"]]["old"]["text"]
            kept = words(old_text) | set(query_terms(old_text))
            row["old_class"] = [
                "old-far" if old_at is None else "old-11-30",
                "shares-word" if words(q["text"]) & kept else "no-word",
                "old-in-group"
                if any(k.asked & kept or any(set(p) <= kept for p in k.phrases) for k in read(q["text"], 0.0).kin)
                else "old-no-group",
                "newer in the top 10" if new_at is not None and new_at < 10 else "newer not in the top 10",
            ]
        if not ok:
            case = by_case[q["case"]]
            old, new = case["old"]["text"], case["new"]["text"]
            asked = words(q["text"])
            kin = read(q["text"], 0.0).kin
            held = words(new) | set(query_terms(new))
            top = hits[0] if hits else None
            own = top is not None and role.get(top.record.id, ("", ""))[0] == q["case"]
            promoted = bool(top is not None and top.explain and top.explain.get("updates"))
            row["class"] = [
                "missing" if new_at is None or new_at >= 10 else "below",
                "shares-word" if asked & held else "no-word",
                "new-in-group"
                if any(k.asked & held or any(set(p) <= held for p in k.phrases) for k in kin)
                else "new-no-group",
                "old-found" if old_at is not None else "old-far",
                "told" if cues.says_change(new) else "untold",
                "states-value" if values(new, ignore) - values(old, ignore) else "no-new-value",
                "top: " + ("none" if top is None else ("own" if own else "other")) + (", promoted" if promoted else ""),
            ]
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", nargs="+", help="update sets (folders of cases.jsonl and fillers.jsonl)")
    p.add_argument("--json", help="write every question's row here")
    p.add_argument("--show", type=int, default=12, help="the most frequent classes printed")
    a = p.parse_args(argv)
    for d in a.data:
        if Path(d).name in HELD_OUT:
            p.error(f"{d} is held out: measure it with bench/updates.py, do not read its failures")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="optmem-failures-") as work:
        for d in a.data:
            rows += classify(Path(d), Path(work))
    failed = [r for r in rows if not r["ok"]]
    print(f"{len(rows)} questions asking the current value, {len(failed)} failures")
    for name, part in (("class", 3), ("why the newer is not first", 7)):
        counts = collections.Counter(" / ".join(r["class"][:part]) for r in failed)
        print(f"\n{name}:")
        for label, n in counts.most_common(a.show):
            print(f"  {n:4d}  {label}")
    lost = [r for r in rows if "old_class" in r]
    print(f"\nthe older statement not in the top 10: {len(lost)} of {len(rows)}")
    for label, n in collections.Counter(" / ".join(r["old_class"]) for r in lost).most_common(a.show):
        print(f"  {n:4d}  {label}")
    tops = collections.Counter(r["class"][-1] for r in failed)
    print("\nthe first hit of a failure:")
    for label, n in tops.most_common():
        print(f"  {n:4d}  {label}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
