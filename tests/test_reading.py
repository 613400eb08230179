"""Every language rule in one home (optmem/reading): a query is read once into an `Intent`."""

from __future__ import annotations

import ast
from datetime import datetime, timezone
from pathlib import Path

import optmem
from optmem import text
from optmem.reading.query import NAMED_DAY, Intent, read

SATURDAY_AFTER = datetime(2026, 5, 4, 12, tzinfo=timezone.utc).timestamp()  # a Monday


def test_a_query_is_read_once_into_what_it_asks():
    assert read("How many plants do I have now?") == Intent(
        "How many plants do I have now?", ["plant", "now"], "present", True, frozenset(), frozenset({"now"}), [])
    zh = read("小明现在住在哪里")
    assert zh.terms == ["小明", "住在"] and zh.asks == "present" and zh.characters == ["小", "明", "住", "在"]
    assert read("What was Alice's previous address?").asks == "past"
    assert read("What was Alice's previous address?").names == frozenset()  # the past: no newer-first rule to hold back
    assert read("what is Alice's phone number now").names == {"alic"}
    assert read("what did we sign last Saturday", SATURDAY_AFTER).asks == NAMED_DAY


# -- the layout --------------------------------------------------------------------------------------
def _imports(module: str) -> set[str]:
    """The optmem modules a module imports, anywhere in it (functions too)."""
    root = Path(optmem.__file__).parent
    path = root.joinpath(*module.split(".")[1:]).with_suffix(".py")
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("optmem"):
            found |= {f"{node.module}.{a.name}" if node.module == "optmem.reading" else node.module for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("optmem")}
    return found


def test_the_tokeniser_and_the_scorer_read_no_question():
    """The tokeniser takes its few word lists from the lexicon and imports no reader (nor dates:
    the text ↔ dates circle is gone); the scorer imports no reading at all — it is handed what the
    query asks. The lexicon imports nothing."""
    assert {m for m in _imports("optmem.text") if m.startswith("optmem.reading")} == {"optmem.reading.lexicon"}
    assert "optmem.dates" not in _imports("optmem.text")
    assert not {m for m in _imports("optmem.ranking") if m.startswith("optmem.reading")}
    assert _imports("optmem.reading.lexicon") == set()
    for name in ("asks_amount", "search_terms", "questions", "stated_amounts", "time_span_terms"):
        assert not hasattr(text, name), name
    from optmem import ranking

    for name in ("UPDATE_CUES", "asks_for", "names_in", "says_change", "cue_terms"):
        assert not hasattr(ranking, name), name
