"""The suite passes on a busy machine (issue 44, part 3): no test depends on the machine's speed.

A laptop or a CI runner at load 10 is many times slower than a quiet one. A timeout in a test is a
hang detector (conftest.HANG), or the test waits on an event; Hypothesis times neither an example
nor its generation. These tests read the suite's own source, so a tight clock cannot come back.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import HANG
from hypothesis import HealthCheck, settings

TESTS = Path(__file__).resolve().parent
GENEROUS = 120.0  # seconds: whole-process work on a loaded 2-core machine stays below this
MARK = "timeout under test"  # on a line whose short timeout is what the test is about


def test_hypothesis_times_neither_an_example_nor_its_generation():
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check
    # the checks that do not depend on the machine's speed stay on
    kept = set(HealthCheck) - {HealthCheck.too_slow}
    assert not kept & set(settings.default.suppress_health_check)
    # a test's own settings (tests/test_scan.py) keep the profile's
    own = settings(max_examples=7)
    assert own.max_examples == 7 and own.deadline is None and HealthCheck.too_slow in own.suppress_health_check


def _number(node: ast.AST | None) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    return None


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def tight_clocks(source: str) -> list[tuple[int, str]]:
    """(line, what) for each wall-clock limit below GENEROUS in a test module's code, and each
    pause of a second or more standing in for an event; a line carrying MARK is left out."""
    lines = source.splitlines()
    found: list[tuple[int, str]] = []

    def report(node: ast.AST, what: str) -> None:
        span = lines[node.lineno - 1 : (node.end_lineno or node.lineno)]
        if not any(MARK in line for line in span):
            found.append((node.lineno, what))

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = _name(node.func)
            for kw in node.keywords:
                value = _number(kw.value)
                if kw.arg == "timeout" and value is not None and value < GENEROUS:
                    report(node, f"{name}(timeout={value:g})")
            if name == "wait_for" and len(node.args) >= 2 and (v := _number(node.args[1])) is not None and v < GENEROUS:
                report(node, f"wait_for(…, {v:g})")
            if name == "select" and len(node.args) == 4 and (v := _number(node.args[3])) is not None and v < GENEROUS:
                report(node, f"select(…, {v:g})")
            if name == "sleep" and node.args and (v := _number(node.args[0])) is not None and v >= 1:
                report(node, f"sleep({v:g}) in place of an event")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            clock = node.left if isinstance(node.left, ast.Call) else None
            if clock is not None and _name(clock.func) in {"monotonic", "time", "perf_counter"}:
                v = _number(node.right)
                if v is not None and v < GENEROUS:
                    report(node, f"a deadline {v:g}s ahead")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for m in re.finditer(r"\[lock\]\s*\n\s*timeout\s*=\s*([0-9.]+)", node.value):
                if float(m.group(1)) < GENEROUS:
                    report(node, f"[lock] timeout = {m.group(1)}")
    return sorted(found)


def test_the_audit_finds_each_kind_of_tight_clock():
    """The reader below is what keeps the suite clean: each kind it looks for is found."""
    bad = (
        "proc.wait(timeout=30)\n"
        "asyncio.run(asyncio.wait_for(session(), 60))\n"
        "select.select([out], [], [], 60)\n"
        "time.sleep(1.5)\n"
        "deadline = time.monotonic() + 60\n"
        'toml = "[lock]\\ntimeout = 0.5\\n"\n'
    )
    assert [line for line, _ in tight_clocks(bad)] == [1, 2, 3, 4, 5, 6]
    fine = (
        f"proc.wait(timeout={HANG})\n"
        "proc.wait(timeout=HANG)\n"
        "time.sleep(0.01)\n"
        'toml = "[lock]\\ntimeout = 0.2\\n"  # the timeout under test: the test holds the lock\n'
    )
    assert tight_clocks(fine) == []


@pytest.mark.long
def test_no_test_waits_on_a_tight_clock():
    assert HANG >= GENEROUS
    found = {
        f"{path.name}:{line}: {what}"
        for path in sorted(TESTS.glob("*.py"))
        for line, what in tight_clocks(path.read_text("utf-8"))
    }
    assert not found, (
        "a test depends on the machine's speed — use conftest.HANG or wait on an event "
        f"(or mark a timeout that is itself tested with '{MARK}'): {sorted(found)}"
    )
