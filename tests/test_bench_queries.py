"""The search bench's query set (bench/queries.py): every class the issue names, enough of each,
of the shape the class says — and the same set on every run."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import queries  # noqa: E402
import vocab  # noqa: E402


def test_every_class_has_enough_queries_of_its_shape() -> None:
    qs = queries.query_set()
    by: dict[str, list[str]] = {}
    for cls, q in qs:
        by.setdefault(cls, []).append(q)
    assert set(by) == set(queries.CLASSES) and len(qs) >= 200
    assert all(len(set(v)) >= 40 for v in by.values())
    assert all(6 <= len(q.split()) <= 15 for q in by["question"])
    assert all(any("\u4e00" <= c <= "\u9fff" for c in q) for q in by["chinese"])
    assert all(2 <= len(q.split()) <= 3 and q.isascii() for q in by["keywords"])
    corpus_words = {w.lower() for w in vocab.EN_FUNCTION + vocab.EN_CONTENT + vocab.NAMES}
    assert all(w not in corpus_words for q in by["nomatch"] for w in q.split())
    assert queries.query_set() == qs  # deterministic: runs compare
