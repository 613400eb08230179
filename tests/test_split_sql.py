"""The index's `split` table (the keys another domain holds otherwise) and its triggers say what the
status rules say: their SQL is made from `view.STATUS_RULES`, a row's change says again every key
it touches (the one it leaves too), and a catch-up notes each key once."""

from __future__ import annotations

import sqlite3

import pytest
from conftest import put

from optmem import clock, schema, view
from optmem.index import Index, open_index
from optmem.ingest import say_split
from optmem.vault import Vault

NOW = "2026-06-10T00:00:00Z"

# how to make each status rule hold for a row (the columns set), and to undo it: a status rule
# added to `view.STATUS_RULES` needs a line here, and nothing in `schema`
MAKE = {
    view.Status.FORGOTTEN: ("forgotten = 1", "forgotten = 0"),
    view.Status.HELD: ("held = 1, released = 0", "held = 0"),
    view.Status.COLD: ("cold = ts + 60", "cold = NULL"),
    view.Status.SUPERSEDED: ("ksup = 'ZZZZ'", "ksup = NULL"),
    view.Status.REMOVED: ("retired = 1", "retired = 0"),
    view.Status.EXPIRED: ("expires = ts + 60", "expires = NULL"),
    view.Status.PENDING: ("pending = 1, confirmed = 0", "pending = 0"),
}


def _reference(idx: Index, now: float) -> set[tuple[str, str | None, frozenset[str]]]:
    """The split keys read from every keyed value, status by status in Python (`Index.split_rows`)."""
    out = set()
    for key, project in idx.conn.execute("SELECT DISTINCT key, project FROM rec WHERE key IS NOT NULL").fetchall():
        if rows := idx.split_rows(key, project, now):
            out.add((key, project, frozenset(r.domain for r in rows)))
    return out


def _kept(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    return sorted(conn.execute("SELECT key, coalesce(project, ''), since, until, domains FROM split").fetchall())


def _built(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    """What `split` holds made afresh from every row (a build's one pass)."""
    conn.execute("CREATE TEMP TABLE again AS SELECT * FROM split WHERE 0")
    try:
        conn.execute(schema.SPLIT_FILL.replace("INSERT INTO split", "INSERT INTO temp.again"))
        return sorted(conn.execute("SELECT key, coalesce(project, ''), since, until, domains FROM temp.again"))
    finally:
        conn.execute("DROP TABLE temp.again")


def _split_now(idx: Index, now: float) -> set[tuple[str, str | None, frozenset[str]]]:
    from optmem import facts

    return {(k, p, d) for k, p, d in facts.split_names(idx, now)}


@pytest.fixture
def split(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> Vault:
    (vault.root / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    vault = Vault(vault.root)
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-01T00:00:00Z")
    put(vault, "the cache lives on redis", key="cache.where", domain="code", gate=False)
    put(vault, "the cache lives on memcached", key="cache.where", domain="hermes", gate=False)
    put(vault, "the queue is rabbitmq", key="queue.what", domain="code", project="webapp", gate=False)
    put(vault, "the queue is kafka", key="queue.what", domain="hermes", project="webapp", gate=False)
    put(vault, "the queue is sqs", key="queue.what", domain="ops", project="webapp", gate=False)
    monkeypatch.setenv("OPTMEM_NOW", NOW)
    return vault


def test_every_status_rule_takes_a_value_out_of_the_split_keys_as_the_view_says(split):
    """Each status rule, made to hold for one of a split key's values and then undone, changes the
    kept `split` table as the view read in Python says and as a build would have it."""
    assert set(MAKE) == {rule.status for rule in view.STATUS_RULES}
    now = clock.now().timestamp()
    with open_index(split) as idx:
        conn = idx.conn
        assert _split_now(idx, now) == _reference(idx, now) and len(_reference(idx, now)) == 2
        (n,) = conn.execute("SELECT n FROM rec WHERE key = 'cache.where' AND domain = 'code'").fetchone()
        for status, (make, undo) in MAKE.items():
            with conn:
                conn.execute(f"UPDATE rec SET {make} WHERE n = ?", (n,))
            assert view.status(idx.rows("r.n = ?", (n,))[0], now) == status  # (the rule holds, and no earlier one)
            assert _kept(conn) == _built(conn), status
            assert _split_now(idx, now) == _reference(idx, now), status
            assert "cache.where" not in {k for k, _, _ in _split_now(idx, now)}, status
            with conn:
                conn.execute(f"UPDATE rec SET {undo} WHERE n = ?", (n,))
            assert _kept(conn) == _built(conn), status
            assert _split_now(idx, now) == _reference(idx, now), status


def test_the_split_keys_sql_names_every_status_rule_once_in_view():
    """The SQL of the split keys is made from the status rules: each rule time alone never changes
    takes a row out of its key's group, each timed one says when the row stops being current."""
    for rule in view.STATUS_RULES:
        if rule.since is None:
            assert view.over(rule.sql, "NEW.") in schema.SPLIT_TRIGGERS, rule.status
            assert view.over(rule.sql, "") in schema.SPLIT_GROUP, rule.status
        else:
            assert view.over(rule.since, "") in schema.SPLIT_GROUP, rule.status
    watched = schema.SPLIT_TRIGGERS.split("AFTER UPDATE OF ")[1].split(" ON rec")[0].split(", ")
    assert {"forgotten", "held", "released", "cold", "sup", "ksup", "expires", "pending", "confirmed"} <= set(watched)
    assert set(view.rule_columns()) <= set(watched)  # (a change to any column a rule reads says the key again)


@pytest.mark.parametrize("move", ["key = 'cache.other'", "project = 'elsewhere'", "key = NULL"])
def test_a_value_moved_away_from_a_split_key_leaves_the_table_as_a_build_would(split, move):
    """A row whose key or project changes says again the key it leaves, not only the one it joins."""
    now = clock.now().timestamp()
    with open_index(split) as idx:
        conn = idx.conn
        with conn:
            conn.execute(f"UPDATE rec SET {move} WHERE key = 'cache.where' AND domain = 'code'")
        assert _kept(conn) == _built(conn)
        assert "cache.where" not in {k for k, _, _ in _split_now(idx, now)}
        assert _split_now(idx, now) == _reference(idx, now)
        with conn:
            conn.execute("UPDATE rec SET key = 'queue.what', project = 'webapp' WHERE domain = 'code' AND n = 1")
        assert _kept(conn) == _built(conn)
        with conn:  # (and in a catch-up, which says the keys its changes touched at its end)
            conn.execute("INSERT OR IGNORE INTO split_hold VALUES (1)")
            conn.execute(
                "UPDATE rec SET key = 'cache.where', project = NULL WHERE key = 'queue.what' AND domain = 'hermes'"
            )
            say_split(conn)
        assert _kept(conn) == _built(conn)
        assert _split_now(idx, now) == _reference(idx, now)


def test_a_catch_up_notes_each_key_once_with_or_without_a_project(split):
    """While a catch-up holds the triggers, each key its rows' changes touch is one row of
    `split_dirty` — a key of no project too (NULLs are never equal in a UNIQUE constraint)."""
    with open_index(split) as idx:
        conn = idx.conn
        with conn:
            conn.execute("INSERT OR IGNORE INTO split_hold VALUES (1)")
            for when in range(5):
                conn.execute("UPDATE rec SET touched = ? WHERE key IS NOT NULL", (1e9 + when,))
            dirty = conn.execute("SELECT key, project FROM split_dirty ORDER BY key").fetchall()
            for sql in schema.SPLIT_DONE:
                conn.execute(sql)
    assert dirty == [("cache.where", None), ("queue.what", "webapp")]
