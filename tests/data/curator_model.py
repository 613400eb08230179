"""A deterministic stand-in for a model command, for `optmem curate` tests: it reads the batch
on stdin and proposes operations by rule. `regress` as the first argument also deletes what an
evaluation query expects (the gate must undo that run); `junk` prints something that is not JSON;
`tidy` also drops older values of one statement (the same words, other numbers) and repeats."""

import json
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else ""
if mode == "junk":
    print("sorry, I cannot help with that")
    sys.exit(0)
batch = json.load(sys.stdin)
assert batch["contract"] == "optmem-curate-1"
ops = []
fragments = [r["id"] for r in batch["records"] if r["text"].startswith("fragment:")]
if len(fragments) >= 2:
    ops.append({"op": "merge", "ids": fragments, "topic": "the fragments", "facts": {"count": len(fragments)}})
for r in batch["records"]:
    if "OLD VALUE" in r["text"]:
        ops.append({"op": "update", "id": r["id"], "text": r["text"].replace("OLD VALUE", "NEW VALUE")})
    elif "obsolete" in r["text"] or (mode == "regress" and "weekly report" in r["text"]):
        ops.append({"op": "delete", "id": r["id"], "reason": "obsolete"})
    elif not r["text"].startswith("fragment:"):
        ops.append({"op": "no-change", "id": r["id"]})
# the same statement with other numbers, or said twice: keep the newest, drop the rest
import re  # noqa: E402

seen_forms: dict[str, list[dict]] = {}
for r in batch["records"] + batch["related"]:
    if mode == "tidy":
        form = re.sub(r"[\d\W_]+", " ", r["text"].lower()).strip()
        seen_forms.setdefault(form, []).append(r)
for group in seen_forms.values():
    for r in sorted(group, key=lambda r: (r["ts"], r["id"]))[:-1]:
        ops.append({"op": "delete", "id": r["id"], "reason": "an older value of the same statement"})
ops.append({"op": "delete", "id": "NOT-AN-ID", "reason": "a hallucinated id"})
print(json.dumps({"operations": ops}))
