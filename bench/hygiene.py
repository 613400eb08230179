"""Hygiene before and after consolidation, on a scripted "three months of agent memory".

    python bench/hygiene.py

An agent's quarter, written through the CLI with OPTMEM_NOW: preferences restated and
paraphrased, facts updated with and without keys (one inference against what was said), trip fragments,
inferences, one-off notes, values that went stale. Then the consolidation a user would run —
`sweep`, `merge --suggest` + `merge`, `curate --apply` with the deterministic test model
(tests/data/curator_model.py, "tidy") — and the article's three figures before and after:
duplicate rate, contradiction rate (stats) and recall accuracy (eval top-5 on a fixed query set).
Prints a Markdown table; docs/agents.md (the curator) quotes it.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen import text_for  # noqa: E402

MODEL = f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE.parent / 'tests' / 'data' / 'curator_model.py'))} tidy"
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
PLANTS = ["I have {n} plants on the balcony"]
PREFS = [
    "The user likes green tea in the morning",
    "The user prefers short answers with code first",
    "用户喜欢用深色主题写代码",
    "The user writes commit messages in English",
]
PARAPHRASE = {
    "The user likes green tea in the morning": "The user really likes green tea in the morning!",
    "The user prefers short answers with code first": "The user prefers short answers, code first",
}


def om(vault: Path, when: datetime, *args: str) -> dict:
    env = dict(os.environ, OPTMEM_VAULT=str(vault), OPTMEM_NOW=when.strftime("%Y-%m-%dT%H:%M:%SZ"))
    res = subprocess.run([sys.executable, "-m", "optmem", *args, "--json"], capture_output=True, text=True, env=env)
    if res.returncode not in (0, 1):
        raise SystemExit(f"optmem {' '.join(args)} failed: {res.stdout}{res.stderr}")
    return json.loads(res.stdout)


def quarter(vault: Path) -> None:
    rnd = random.Random(14)
    for day in range(90):
        t = START + timedelta(days=day)
        if day % 7 == 0:  # preferences restated (sometimes in other words)
            for p in PREFS:
                om(vault, t, "append", PARAPHRASE.get(p, p) if day % 14 == 7 else p, "--on-similar", "store")
        if day % 10 == 0:  # a keyed fact that moves, and an unkeyed one
            om(vault, t, "append", f"The backend listens on port {8000 + day}", "--key", "backend.port")
            om(vault, t, "append", PLANTS[0].format(n=3 + day // 10))
        if day == 40:  # what was said, and an agent's conclusion against it: only the user settles it
            om(vault, t, "append", "The user prefers Windows for work", "--key", "user.os")
            om(
                vault,
                t + timedelta(hours=3),
                "append",
                "The user seems to prefer Mac for work",
                "--key",
                "user.os",
                "--basis",
                "inferred",
            )
        if day == 50:  # a trip told in fragments
            for i, f in enumerate(
                [
                    "fragment: the Japan trip is in June",
                    "fragment: fly to Tokyo first",
                    "fragment: then Osaka and Kyoto by train",
                ]
            ):
                om(vault, t + timedelta(minutes=i), "append", f, "--tag", "trip")
        if day % 15 == 3:  # what an agent concluded
            om(vault, t, "append", "The user seems to be an early riser", "--basis", "inferred")
        if day == 60:
            om(vault, t, "append", "The build uses OLD VALUE flags")
            om(vault, t, "append", "An obsolete note about the old office")
        om(vault, t + timedelta(hours=1), "append", text_for(rnd))  # a one-off note, never repeated


QUERIES = [
    {"query": "backend port", "expect_text": "port 8080"},
    {"query": "plants balcony", "expect_text": "11 plants"},
    {"query": "green tea", "expect_text": "green tea"},
    {"query": "short answers code", "expect_text": "short answers"},
    {"query": "深色主题", "expect_text": "深色主题"},
    {"query": "Japan trip Kyoto", "expect_text": "Kyoto"},
    {"query": "build flags", "expect_text": "NEW VALUE"},
    {"query": "commit messages", "expect_text": "English"},
]


def figures(vault: Path, when: datetime) -> dict[str, float]:
    s = om(vault, when, "stats")
    e = om(vault, when, "eval", str(vault / "queries.jsonl"))
    return {
        "duplicate rate": s["duplicate_rate"],
        "records with a near duplicate": s["duplicates"],
        "contradiction rate": s["contradiction_rate"],
        "contradictions": s["contradictions"],
        "recall@5": e["overall"]["recall"],
        "MRR": e["overall"]["mrr"],
        "current records": s["status"]["current"],
    }


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="optmem-hygiene-") as tmp:
        vault = Path(tmp) / "vault"
        om(vault, START, "init")
        (vault / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
        quarter(vault)
        (vault / "queries.jsonl").write_text(
            "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUERIES), "utf-8"
        )
        end = START + timedelta(days=91)
        before = figures(vault, end)
        om(vault, end, "sweep")
        merged = 0
        for s in om(vault, end, "merge", "--suggest")["suggestions"]:
            if "tag" in s["reason"] or "key prefix" in s["reason"]:  # shared words alone: left for review
                if om(vault, end, "merge", *s["ids"], "--topic", s["topic"]).get("id"):
                    merged += 1
        run = om(vault, end, "curate", "--command", MODEL, "--apply")
        after = figures(vault, end + timedelta(minutes=1))
    print(
        f"python {sys.version.split()[0]}, {datetime.now().strftime('%Y-%m-%d')}: {merged} merge(s), "
        f"curator: {sum(1 for op in run.get('plan', []) if op['valid'])} valid operation(s), "
        f"{'undone: ' + json.dumps(run.get('regressions')) if run.get('undone') else 'kept'}"
    )
    print("| figure | before | after |\n| --- | ---: | ---: |")
    for name in before:
        print(f"| {name} | {before[name]} | {after[name]} |")


if __name__ == "__main__":
    main()
