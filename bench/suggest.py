"""`merge --suggest` on labelled groups, and its cost on a large vault.

    python bench/suggest.py                 # the labelled set, then the cost at 50k records
    python bench/suggest.py --size 100000

The labelled set: groups of records written through the CLI into one domain beside 300
generated one-off notes — groups about one subject (a trip told in fragments, a project's keys,
a renovation in Chinese, …) and groups that only share a label or a common word (`user.*` facts
about three people, a `todo` tag, values of a key in conflict, …). A suggestion is right when
all its records come from one group about one subject. Every suggestion is then merged with
the topic it proposes (`merge` must accept it). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen import text_for, write_log  # noqa: E402

# (name, one subject?, [(text, key, tags)])
CASES = [
    (
        "trip.* fragments",
        True,
        [
            ("Japan trip: flights booked for June 3", "trip.flight", ()),
            ("Japan trip: ryokan in Kyoto for two nights", "trip.hotel", ()),
            ("Japan trip: JR pass ordered", "trip.rail", ()),
        ],
    ),
    (
        "tag japan",
        True,
        [
            ("going to Japan next month", "plan.when", ("japan",)),
            ("plans to visit Tokyo, Osaka and Kyoto", None, ("japan",)),
            ("booked a ryokan in Kyoto for the plan", None, ("japan",)),
        ],
    ),
    (
        "proj.apollo.* keys",
        True,
        [
            ("deadline is March 3", "proj.apollo.deadline", ()),
            ("owner is Li Wei", "proj.apollo.owner", ()),
            ("written in Rust", "proj.apollo.stack", ()),
        ],
    ),
    (
        "tag 装修",
        True,
        [
            ("厨房装修下周开始", None, ("home",)),
            ("装修预算五万元", None, ("home",)),
            ("装修公司是红星", None, ("home",)),
        ],
    ),
    (
        "tag migration",
        True,
        [
            ("Postgres migration starts Monday", None, ("migration",)),
            ("the migration needs a read-only window on the Postgres primary", None, ("migration",)),
            ("rollback plan for the Postgres migration is in the runbook", None, ("migration",)),
        ],
    ),
    (
        "pet.* about Luna",
        True,
        [
            ("Luna is a grey cat", "pet.kind", ()),
            ("Luna's vet is Dr. Park", "pet.vet", ()),
            ("Luna eats salmon kibble", "pet.food", ()),
        ],
    ),
    (
        "no label: Hangzhou offsite",
        True,
        [
            ("the Hangzhou offsite is on May 12", None, ()),
            ("book the Hangzhou offsite hotel near West Lake", None, ()),
            ("Hangzhou offsite agenda: planning and a hike", None, ()),
        ],
    ),
    (
        "no label: 小明生日",
        True,
        [("小明的生日是五月三号", None, ()), ("小明生日想要一台相机", None, ()), ("小明生日聚会在周六", None, ())],
    ),
    (
        "user.* about three people",
        False,
        [
            ("Alice", "user.name", ()),
            ("Bob lives in Paris", "user.city", ()),
            ("Chen speaks Mandarin", "user.lang", ()),
        ],
    ),
    (
        "tag todo",
        False,
        [
            ("renew the passport", None, ("todo",)),
            ("call the plumber", None, ("todo",)),
            ("pay the electricity bill", None, ("todo",)),
        ],
    ),
    (
        "os.* values in conflict",
        False,
        [
            ("OS is Windows", "os.main", ()),
            ("OS is Mac", "os.main", ()),
            ("the OS choice matters for builds", "os.note", ()),
        ],
    ),
    (
        "people.* sharing a verb",
        False,
        [
            ("Dana likes tea", "people.drink", ()),
            ("Eli likes jazz", "people.music", ()),
            ("Fay likes hiking", "people.sport", ()),
        ],
    ),
    (
        "no label: three preferences",
        False,
        [
            ("The user prefers dark mode", None, ()),
            ("The user prefers short answers", None, ()),
            ("The user prefers green tea", None, ()),
        ],
    ),
]


def om(vault: Path, *args: str, check: bool = True) -> dict:
    env = dict(os.environ, OPTMEM_VAULT=str(vault))
    res = subprocess.run([sys.executable, "-m", "optmem", *args, "--json"], capture_output=True, text=True, env=env)
    if check and res.returncode != 0:
        raise SystemExit(f"optmem {' '.join(args)} exited {res.returncode}: {res.stdout}{res.stderr}")
    return json.loads(res.stdout)


def labelled(tmp: Path) -> None:
    import random

    vault = tmp / "labelled"
    om(vault, "init")
    (vault / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    group: dict[str, str] = {}
    rnd = random.Random(5)
    lines = [json.dumps({"text": text_for(rnd), "domain": "agent"}, ensure_ascii=False) for _ in range(300)]
    (vault / "LOG.jsonl").write_text("\n".join(lines) + "\n", "utf-8")  # hand lines: derived ids
    for name, _, records in CASES:
        for text, key, tags in records:
            args = ["append", text, "--domain", "agent", "--on-similar", "store", "--on-update", "keep"]
            args += ["--key", key] if key else []
            for t in tags:
                args += ["--tag", t]
            group[om(vault, *args)["id"]] = name
    subject = {name: one for name, one, _ in CASES}
    found = om(vault, "merge", "--suggest")["suggestions"]
    right = [s for s in found if len({group.get(i) for i in s["ids"]}) == 1 and subject.get(group.get(s["ids"][0], ""))]
    print("| group | one subject | suggested |\n| --- | --- | --- |")
    for name, one, _ in CASES:
        mine = [s for s in found if any(group.get(i) == name for i in s["ids"])]
        print(f"| {name} | {'yes' if one else 'no'} | {'; '.join(s['reason'] for s in mine) or '—'} |")
    wrong = [s for s in found if s not in right]
    positives = sum(1 for _, one, _ in CASES if one)
    print(
        f"\n{len(found)} suggestion(s): {len(right)} right, {len(wrong)} wrong; "
        f"{len({group[s['ids'][0]] for s in right})} of {positives} subjects found"
    )
    refused = []
    for s in found:  # merge must accept every one, with the topic it proposes
        res = om(vault, "merge", *s["ids"], "--topic", s["topic"], check=False)
        if not res.get("ok"):
            refused.append((s["reason"], res["error"]["code"]))
    print(f"merge accepted {len(found) - len(refused)} of {len(found)}" + (f"; refused: {refused}" if refused else ""))


def cost(tmp: Path, size: int) -> None:
    vault = tmp / f"v{size}"
    write_log(vault / "LOG.jsonl", size)
    (vault / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    om(vault, "reindex")
    times = []
    for _ in range(5):
        t = time.perf_counter()
        out = om(vault, "merge", "--suggest")
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    print(
        f"\n`merge --suggest` on {size:,} generated records (whole process, median of 5): "
        f"{times[2]:.0f} ms, {out['count']} suggestion(s)"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=50_000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="optmem-suggest-") as tmp:
        labelled(Path(tmp))
        cost(Path(tmp), a.size)


if __name__ == "__main__":
    main()
