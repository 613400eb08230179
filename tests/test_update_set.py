"""The knowledge-update set in bench/updates/: its shape, and how the bench loads it (no ranking figures)."""

from __future__ import annotations

import importlib.util
import re
import shlex
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "updates.py"
CUES = {"moved", "switched", "changed", "no_longer", "now", "instead", "restate", "change_verb"}


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_updates", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def cases(bench: ModuleType) -> list[dict]:
    return bench.load_cases()


def test_at_least_150_cases_in_both_languages(cases: list[dict]) -> None:
    ids = [c["id"] for c in cases]
    assert len(cases) >= 150
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"(en|zh)-\d{3}-[a-z0-9-]+", i) and i[:2] == c["lang"] for i, c in zip(ids, cases))
    langs = Counter(c["lang"] for c in cases)
    assert set(langs) == {"en", "zh"} and min(langs.values()) >= 0.4 * len(cases)


def test_every_case_is_an_update_asked_after_it(cases: list[dict]) -> None:
    for c in cases:
        assert c["old"]["text"].strip() != c["new"]["text"].strip(), c["id"]
        assert 0 <= c["old"]["day"] < c["new"]["day"] < c["question"]["day"], c["id"]
        assert c["cue"] in CUES and c["question"]["cue"] in ("plain", "present"), c["id"]
        assert c["question"]["text"].strip() and (c["past_question"] is None or c["past_question"].strip())
        for d in c["distractors"]:
            # not an update: dated after the older statement, before the question, about something else
            assert c["old"]["day"] < d["day"] < c["question"]["day"], c["id"]
            assert d["text"] not in (c["old"]["text"], c["new"]["text"]) and d["kind"], c["id"]


def test_phrasings_questions_and_distractors_vary(cases: list[dict]) -> None:
    cues = Counter(c["cue"] for c in cases)
    assert set(cues) == CUES
    assert cues["restate"] >= 0.15 * len(cases)  # plain restatements with a new value, no cue word
    assert sum(1 for c in cases if c["distractors"]) >= 0.9 * len(cases)
    assert len({d["kind"] for c in cases for d in c["distractors"]}) >= 8
    present = sum(1 for c in cases if c["question"]["cue"] == "present")
    assert 0.05 * len(cases) <= present <= 0.5 * len(cases)  # most questions ask plainly
    assert sum(1 for c in cases if c["past_question"]) >= 30


def test_every_text_is_written_once(bench: ModuleType, cases: list[dict]) -> None:
    # The write gate stores nothing for a second identical statement: every record must be new.
    texts = [c[k]["text"] for c in cases for k in ("old", "new")]
    texts += [d["text"] for c in cases for d in c["distractors"]]
    texts += [f["text"] for f in bench.load_fillers()]
    assert len(set(texts)) == len(texts)


def test_halves_are_a_stable_hash_of_the_id(bench: ModuleType, cases: list[dict]) -> None:
    halves = Counter((bench.half_of(c["id"]), c["lang"]) for c in cases)
    for half in ("tune", "held-out"):
        for lang in ("en", "zh"):
            assert halves[(half, lang)] >= 30, (half, lang)
        assert any(c["past_question"] and bench.half_of(c["id"]) == half for c in cases)
    # pinned: a change of salt or hash would silently mix the held-out half into the tune half
    assert bench.half_of("en-002-webapp-backend-port") == "tune"
    assert bench.half_of("en-001-alice-city") == "held-out"
    fillers = Counter(bench.half_of(f["id"]) for f in bench.load_fillers())
    assert min(fillers.values()) >= 50


def test_each_half_is_one_store_in_time_order(bench: ModuleType, cases: list[dict]) -> None:
    fillers = bench.load_fillers()
    for half in ("tune", "held-out"):
        records, questions = bench.build_half(half, cases, fillers)
        ts = [r["ts"] for r in records]
        assert ts == sorted(ts) and len(set(ts)) == len(ts)
        by_case: dict[str, list[tuple[str, str]]] = {}
        for r in records:
            if r["case"]:
                by_case.setdefault(r["case"], []).append((r["role"], r["ts"]))
        for q in questions:
            mine = by_case[q["case"]]
            when = dict(mine)
            assert when["old"] < when["new"] < q["now"]
            assert all(t < q["now"] for _, t in mine) and len(mine) >= 3


def test_a_write_the_store_refuses_is_counted_and_the_load_goes_on(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading through the CLI: a note holding a password is refused by `append` (a user could not store
    it either); the bench counts it, marks its record missing and loads the rest instead of stopping."""
    import sys

    py = shlex.quote(sys.executable)
    records = [
        {"ts": "2026-03-01T09:00:00Z", "text": "The home router sits in the hallway cupboard."},
        {"ts": "2026-03-02T09:00:00Z", "text": "家里 WiFi 密码 88886666。"},
        {"ts": "2026-03-03T09:00:00Z", "text": "The router was moved to the study."},
    ]
    saw: list[str] = []
    monkeypatch.setattr(bench, "INIT_CMD", f"{py} -m optmem --vault {{vault}} init")
    stats = bench.load_vault(
        tmp_path / "v", records, "cli", f"{py} -m optmem --vault {{vault}} append {{text}} --json", saw.append
    )
    assert stats["refused"] == 1 and stats["status"] == {"stored": 2}
    assert records[1]["id"].startswith("(refused") and all(len(r["id"]) > 8 for r in records)
    stored = (tmp_path / "v" / "LOG.jsonl").read_text(encoding="utf-8")
    assert "hallway" in stored and "study" in stored and "88886666" not in stored
    assert any("refused (unsafe_content)" in line for line in saw)
