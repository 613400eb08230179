"""The write gate compares a new statement with older ones under the vault's lock: the comparison
does bounded work for any text — a run of one repeated CJK character made it quadratic (s7 F1:
minutes for 20,000 × 大, every other writer refused `locked`) — and decides as before for
ordinary text. Work is counted as the lines difflib executes, never as time."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optmem import compare, identifiers
from optmem.reading.cues import time_words


def diff_lines(call: Callable[[], Any]) -> tuple[Any, int]:
    """What `call` returns, and how many lines of difflib it executed (its work, on any machine)."""
    count = 0

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def calls(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == difflib.__file__ else None

    before = sys.gettrace()  # (coverage's tracer: given back, or the rest of the run goes unmeasured)
    sys.settrace(calls)
    try:
        out = call()
    finally:
        sys.settrace(before)
    return out, count


# what one comparison may cost, in difflib's lines: each step (a unit read, a place visited) is
# under ten, and a comparison past the bound tries twice (whole, then without the shared ends)
BOUND = 20 * identifiers.DIFF_STEPS


@pytest.mark.long
@pytest.mark.parametrize("n", [1000, 4000])
def test_a_long_run_of_one_repeated_character_is_compared_in_bounded_work(n):
    old, new = "大" * n + " big 1", "大" * n + " big 2"
    # the gate's possible update: the same text with another number, as difflib tells it
    update, work = diff_lines(lambda: compare.looks_like_update(old, new, time_words()))
    assert update is True and work < BOUND
    # the near-duplicate check (a label changed: two things)
    sim, work = diff_lines(lambda: compare.similarity("大" * n + " server A", "大" * n + " server B", least=0.9))
    assert sim == 0.0 and work < BOUND


@pytest.mark.long
def test_texts_that_differ_all_along_are_not_compared_past_the_bound():
    # no shared beginning or end to take out: every other word changed, the first and last too
    a = " ".join(f"w{i}" for i in range(3001))
    b = " ".join(f"w{i}" if i % 2 else f"v{i}" for i in range(3001))
    differ, work = diff_lines(lambda: identifiers.labels_differ(a, b))
    assert work < BOUND
    assert differ is True  # cannot tell: the two stay apart, neither is a near duplicate of the other
    assert identifiers.opcodes(a.split(), b.split()) is None
    assert compare.looks_like_update(a, b) is False
    # the gate's other readings of what changed: another thing, another subject — not one value
    assert identifiers.names_another_thing(a, b) is True
    assert identifiers.changes_subject(a, b) is True


units = st.lists(st.sampled_from("甲乙丙大小是在 port 8080 the a b".split()), max_size=60)


@pytest.mark.long
@given(units, units)
def test_within_the_bound_the_opcodes_are_difflibs(a, b):
    assert identifiers.opcodes(a, b) == difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()


@pytest.mark.long
@given(st.lists(st.sampled_from("大小x"), max_size=30), units, units, st.lists(st.sampled_from("大小y"), max_size=30))
def test_past_the_bound_the_ops_still_turn_one_text_into_the_other(head, a, b, tail):
    x, y = head + a + tail, head + b + tail
    ops = identifiers.opcodes(x, y, steps=50)
    if ops is None:
        return  # cannot tell within the steps
    at = (0, 0)
    for tag, i1, i2, j1, j2 in ops:
        assert (i1, j1) == at and tag in ("equal", "replace", "insert", "delete")
        if tag == "equal":
            assert x[i1:i2] == y[j1:j2] and i2 > i1
        at = (i2, j2)
    assert at == (len(x), len(y))


def test_past_the_bound_a_shared_beginning_and_end_are_taken_out():
    x, y = ["大"] * 50 + ["#1", "big"], ["大"] * 50 + ["#2", "big"]
    assert identifiers.opcodes(x, y, steps=10) == difflib.SequenceMatcher(a=x, b=y, autojunk=False).get_opcodes()
    assert identifiers.opcodes(x, x, steps=10) == [("equal", 0, 52, 0, 52)]
    assert identifiers.opcodes(x, y[:50], steps=10) == [("equal", 0, 50, 0, 50), ("delete", 50, 52, 50, 50)]
    # … and what lies between them must fit the same steps
    assert identifiers.opcodes(["s", *x, "e"], ["s", "小", *y, "e"], steps=10) is None


def test_an_ordinary_long_note_is_compared_as_before():
    # a 2,000-character note against an edited copy: well within the bound, difflib's answer
    body = "".join(chr(0x4E00 + (i * 7919) % 3000) for i in range(2000))
    a, b = list(body), list(body[:900] + "改成上海" + body[904:])
    assert identifiers.opcodes(a, b) == difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()


@pytest.mark.long
def test_a_long_repeated_append_is_a_normal_write(cli, vault, vault_path):
    # the gate's answer is the one it gave before (a possible update of the first), at once
    first = cli.json("append", "哈" * 3000 + " 版本 1")["id"]
    out = cli.json("append", "哈" * 3000 + " 版本 2")
    assert out["status"] == "stored" and [u["id"] for u in out["possible_update"]] == [first]
