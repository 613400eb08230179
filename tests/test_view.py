"""The effective view's policy and the ranking, as pure functions on plain values."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optmem import ranking, view
from optmem.record import CORRECTION, Tier, new_id
from optmem.schema import DDL, INSERT_ROW, Row
from optmem.settings import Ranking

NOW = 1_800_000_000.0


def row(n: int = 1, **fields) -> Row:
    base = dict(
        n=n,
        id=f"ID{n:024d}",
        rid="",
        off=0,
        len=0,
        ts=NOW,
        domain="d",
        project=None,
        kind="note",
        tier=Tier.NORMAL,
        key=None,
        fp=None,
        expires=None,
        ref=None,
        corrects=None,
        session=None,
        spos=None,
    )
    base.update(fields)
    return Row(**base)


TIMES = st.sampled_from([None, NOW - 2, NOW - 1, NOW])
rows = st.builds(
    lambda forgotten, sup, ksup, retired, expires, pending, confirmed, cold, seen, touched, shown: row(
        forgotten=forgotten,
        sup=sup,
        ksup=ksup,
        retired=retired,
        expires=expires,
        pending=pending,
        confirmed=confirmed,
        cold=cold,
        seen=seen,
        touched=touched,
        shown=shown,
        ts=NOW - 2,
    ),
    st.sampled_from([0, 1]),
    st.sampled_from([None, "A"]),
    st.sampled_from([None, "B"]),
    st.sampled_from([0, 1]),
    st.sampled_from([None, NOW - 1, NOW, NOW + 1]),
    st.sampled_from([0, 1]),
    st.sampled_from([0, 1]),
    TIMES,
    TIMES,
    TIMES,
    TIMES,
)


@pytest.mark.long
@given(st.lists(rows, min_size=1, max_size=8))
def test_status_and_its_sql_twins_always_agree(sample):
    """status() in Python, status_sql() and is_sql() in SQLite: one rule table, one answer."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(DDL)
    conn.executemany(INSERT_ROW, [r._replace(n=i + 1) for i, r in enumerate(sample)])
    case, params = view.status_sql(NOW)
    in_sql = [s for (s,) in conn.execute(f"SELECT {case} FROM rec r ORDER BY n", params)]
    assert in_sql == [view.status(r, NOW).value for r in sample]
    for wanted in view.Status:
        clause, params = view.is_sql(wanted, NOW)
        got = [n for (n,) in conn.execute(f"SELECT n FROM rec r WHERE {clause} ORDER BY n", params)]
        assert got == [i + 1 for i, r in enumerate(sample) if view.status(r, NOW) == wanted]


def test_status_is_the_first_rule_that_holds_whichever_field_a_record_sets():
    """`view.status` answers the usual record (no field a rule reads is set) without asking each
    rule: every field any rule reads, set alone or beside another, still gets the rules' answer."""
    fields = {
        "forgotten": 1,
        "held": 1,
        "released": 1,
        "cold": NOW - 1,
        "sup": "A",
        "ksup": "B",
        "retired": 1,
        "expires": NOW - 1,
        "pending": 1,
        "confirmed": 1,
        "seen": NOW - 5,
    }
    samples = (
        [row()]
        + [row(**{a: fields[a]}) for a in fields]
        + [row(**{a: fields[a], b: fields[b]}) for a in fields for b in fields if a < b]
    )
    samples += [row(expires=NOW + 1), row(cold=NOW + 1), row(cold=NOW - 10, seen=NOW - 1)]
    for r in samples:
        first = next((rule.status for rule in view.STATUS_RULES if rule.test(r, NOW)), view.Status.CURRENT)
        assert view.status(r, NOW) == first, r
        warm = next(
            (rule.status for rule in view.STATUS_RULES if rule.test(r, NOW) and rule.status != view.Status.COLD),
            view.Status.CURRENT,
        )
        assert view.status(r, NOW, warm=True) == warm, r


def test_no_rule_holds_while_its_gate_columns_are_unset():
    """`view.status` answers "current" at once when every gate column (`view.gate_columns`: those a
    rule's SQL tests `!= 0` or `IS NOT NULL`) is unset: sound only if no rule holds then, whatever
    the other columns the rules read hold (`view.rule_columns`). A new rule that holds without one
    fails here, and so does a gate `status` does not look at (each set alone is not "current")."""
    gates = view.gate_columns()
    assert set(gates) <= set(view.rule_columns()) and len(gates) == 8, gates
    others = [c for c in view.rule_columns() if c not in gates]
    for setting in ({}, {c: NOW - 1 if c not in ("released", "confirmed") else 1 for c in others}):
        r = row(**gates, **{c: v for c, v in setting.items() if c != "ts"})
        assert [rule.status for rule in view.STATUS_RULES if rule.test(r, NOW)] == [], r
        assert view.status(r, NOW) == view.Status.CURRENT
    for column, unset in gates.items():  # (each gate set alone: its rule's answer, not "current")
        r = row(ts=NOW - 5, **{column: 1 if unset == 0 else ("A" if column in ("sup", "ksup") else NOW - 1)})
        assert view.status(r, NOW) != view.Status.CURRENT, column


@pytest.mark.long
@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, "svc.port", "hot:MEMORY.md:E1", "hot", "hot;x", "hotel"]),
            st.sampled_from([0, 1]),
            st.sampled_from(["note", "memory", "correction"]),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_a_keyed_fact_in_python_and_in_sql_agree(sample):
    """`view.KEYED_FACT`: a key's value, no temporary state, no hot-memory journal line — one
    definition whose Python test (`Index.split_rows`, `across_domains`) and SQL (`schema`'s split
    keys, `facts`) give one answer."""
    rows_ = [row(i + 1, key=key, state=state, kind=kind) for i, (key, state, kind) in enumerate(sample)]
    conn = sqlite3.connect(":memory:")
    conn.executescript(DDL)
    conn.executemany(INSERT_ROW, rows_)
    got = [n for (n,) in conn.execute(f"SELECT n FROM rec r WHERE {view.KEYED_FACT.sql} ORDER BY n")]
    assert got == [r.n for r in rows_ if view.KEYED_FACT.test(r)]
    assert all(not r.key.startswith("hot:") and not r.state and r.kind != "memory" for r in rows_ if r.n in got)


def test_status_priority_forgotten_over_superseded_over_expired():
    assert view.status(row(forgotten=1, sup="X", expires=NOW - 5), NOW) == view.Status.FORGOTTEN
    assert view.status(row(ksup="X", expires=NOW - 5), NOW) == view.Status.SUPERSEDED
    assert view.status(row(retired=1), NOW) == view.Status.REMOVED  # a hot entry's removal: no successor
    assert view.status(row(retired=1, sup="X"), NOW) == view.Status.SUPERSEDED  # replaced: its new text
    assert view.status(row(expires=NOW), NOW) == view.Status.EXPIRED  # at the instant: expired
    assert view.status(row(expires=NOW + 1), NOW) == view.Status.CURRENT


def test_redline_lock_and_key_winner():
    assert not view.may_supersede(Tier.NORMAL, Tier.REDLINE)
    assert view.may_supersede(Tier.REDLINE, Tier.REDLINE)
    assert view.may_supersede(Tier.CHAT, Tier.EVIDENCE)
    old, new = view.Member(1, "01A", 100.0, Tier.NORMAL), view.Member(2, "01B", 200.0, Tier.NORMAL)
    assert view.key_winner([new, old]) == view.Winner(new)
    same_time = view.Member(3, "01C", 200.0, Tier.NORMAL)
    assert view.key_winner([new, same_time]) == view.Winner(same_time)  # equal ts: larger id
    rule = view.Member(4, "00Z", 50.0, Tier.REDLINE)
    assert view.key_winner([old, new, rule]) == view.Winner(rule)  # a redline holds its key
    undated = view.Member(5, "01Z", None, Tier.NORMAL)
    assert view.key_winner([undated, old]) == view.Winner(old)  # no time is oldest


def test_links_name_what_a_record_acts_on():
    assert view.links(CORRECTION, ["A1B2C3"], None) == [view.Link(view.SUPERSEDES, "A1B2C3")]
    assert view.links("forget", [], "XYZ123") == [view.Link(view.FORGETS, "XYZ123")]
    assert view.links("seen", [], "XYZ123") == [view.Link(view.RESTATES, "XYZ123")]
    assert view.links("note", [], "XYZ123") == []  # a plain record's ref acts on nothing
    assert view.retired_at_birth("memory", {"op": "remove"})
    assert not view.retired_at_birth("memory", {"op": "add"})
    assert view.restated(None, 5.0) == 5.0 and view.restated(9.0, 5.0) == 9.0


def test_ids_made_in_one_millisecond_keep_their_order():
    made = [new_id(NOW) for _ in range(200)]
    assert made == sorted(made) and len(set(made)) == 200
    assert new_id(NOW + 0.001) > made[-1]


def test_score_is_the_product_of_its_parts():
    settings = Ranking()
    c = ranking.Candidate(2.0, 0.5, Tier.CHAT, "note", view.Status.CURRENT, NOW - 30 * ranking.DAY)
    p = ranking.score(c, NOW, settings)
    assert p.age_days == 30 and p.band == 1 and p.tier_factor == 0.97 and p.context == 0.5
    assert p.recency_bonus == settings.recency_window / 2
    assert p.score == (2.0 + 0.5) * 0.97 * (1 + settings.recency_window / 2)
    fix = ranking.score(c._replace(kind=CORRECTION), NOW, settings)
    assert fix.tier_factor == ranking.TIER_FACTOR[Tier.EVIDENCE]  # a correction counts as evidence
    red = ranking.score(c._replace(tier=Tier.REDLINE, recency=NOW - 900 * ranking.DAY), NOW, settings)
    assert red.band == 0 and red.recency_bonus == settings.recency_window  # redlines never decay
    old = ranking.score(c._replace(status=view.Status.SUPERSEDED), NOW, settings)
    assert old.band == p.band and old.score == p.score * settings.superseded_factor  # lowered, no band of its own
