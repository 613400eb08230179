"""One truth: clones holding the same records answer the same, whatever order their index holds
the records in (each clone indexes its own file first, then what a sync brings: two files'
records that share a place in the index, `record.place`, take it in that order)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from optmem.record import new_id
from optmem.vault import Vault, init

NOW = "2026-12-06T14:00:00Z"
START = 1796563320.0  # 2026-12-06T13:22:00Z: the records are written in the 38 minutes before NOW
WORDS = ["port", "deploy", "cache", "token", "build", "vim", "pnpm", "nginx", "redis", "queue"]


def _records() -> list[str]:
    """200 notes as four writers of two clones make them (tests/test_sync.py's WRITER): dozens in
    each second, keys set by every writer."""
    lines = []
    for w, tag in enumerate(("onea", "oneb", "twoa", "twob")):
        for i in range(50):
            a, b = WORDS[i % 10], WORDS[(i * 7 + 3) % 10]
            t = START + i * 0.2 + w * 0.003
            rec = {
                "v": 1,
                "id": new_id(t),
                "ts": f"2026-12-06T13:22:{int(i * 0.2):02d}Z",
                "domain": "default",
                "kind": "note",
                "tier": "normal",
                "text": f"{tag} note {i}: the {a} uses {b} on {8000 + i}",
            }
            if i % 5 == 0:
                rec["key"] = f"{a}_{i % 13}"
            lines.append(json.dumps(rec))
    return lines


def _clones(tmp_path: Path) -> list[Path]:
    """Three vaults holding the same 200 lines: as written, rotated by 100, reversed."""
    lines = _records()
    out = []
    for name, order in (("a", lines), ("b", lines[100:] + lines[:100]), ("c", lines[::-1])):
        root = tmp_path / name
        init(Vault(root))
        (root / "LOG.jsonl").write_text("\n".join(order) + "\n", "utf-8")
        out.append(root)
    return out


@pytest.mark.long
@pytest.mark.parametrize("query", ["deploy nginx", "two note 49", "note", "8042", "redis queue", "one note 7"])
def test_the_same_records_in_any_index_order_give_the_same_search(tmp_path, cli, query):
    answers = [
        cli.json("--vault", str(root), "search", query, "-n", "20", env={"OPTMEM_NOW": NOW})
        for root in _clones(tmp_path)
    ]
    assert answers[0]["hits"]
    assert answers[1] == answers[0]
    assert answers[2] == answers[0]


def _equal_matches(tmp_path: Path, budget: int | None) -> tuple[list[Path], list[str]]:
    """150 notes that match "build passed" exactly as well (one word of each, as long as each
    other), one every six hours, in three line orders; the ids of the newest first."""
    lines, ids = [], []
    for i in range(150):
        t = START - (150 - i) * 6 * 3600.0
        rid = new_id(t)
        when = datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        lines.append(json.dumps({"v": 1, "id": rid, "ts": when, "kind": "note", "text": f"build {1000 + i} passed"}))
        ids.append(rid)
    out = []
    for name, order in (("a", lines), ("b", lines[75:] + lines[:75]), ("c", lines[::-1])):
        root = tmp_path / name
        init(Vault(root))
        (root / "LOG.jsonl").write_text("\n".join(order) + "\n", "utf-8")
        if budget is not None:  # every query past the budget: the wide plan (`candidates.wide_queries`)
            (root / "optmem.toml").write_text(f"[ranking]\npostings_budget = {budget}\n", "utf-8")
        out.append(root)
    return out, ids[::-1]


@pytest.mark.long
@pytest.mark.parametrize("budget", [None, 1])
@pytest.mark.parametrize("filtered", [False, True])
def test_among_equal_matches_the_newest_are_chosen_and_come_first_in_any_index_order(tmp_path, cli, budget, filtered):
    roots, newest = _equal_matches(tmp_path, budget)
    more = ["--kind", "note"] if filtered else []
    for root in roots:
        found = cli.json("--vault", str(root), "search", "build passed", "-n", "12", *more, env={"OPTMEM_NOW": NOW})
        assert [h["id"] for h in found["hits"]] == newest[:12], root.name
        assert found["total"] == 150


@pytest.mark.long
def test_the_same_records_in_any_index_order_give_the_same_context_and_tree(tmp_path, cli):
    env = {"OPTMEM_NOW": NOW}
    roots = _clones(tmp_path)
    for root in roots:
        assert cli("--vault", str(root), "compact", env=env).exit_code == 0
    for args in (("context",), ("tree", "--json"), ("search", "queue pnpm", "-n", "20", "--json")):
        shown = [cli("--vault", str(root), *args, env=env) for root in roots]
        assert shown[0].exit_code == 0 and ("note" in shown[0].stdout or "default/L1" in shown[0].stdout), args
        assert [s.stdout for s in shown[1:]] == [shown[0].stdout] * 2, args


@pytest.mark.parametrize("order", ["as written", "shuffled"])
def test_the_newest_matches_are_the_newest_by_time_whatever_the_lines(tmp_path, order):
    """`Index.newest_lines` reads from the end of the index (its keys begin with the second) and
    decides a second the cut falls in as `view.tie_key` does; with a filter, among the records
    that pass it. Records without a time are oldest."""
    import random

    from optmem import index
    from optmem.record import line_of

    lines = []
    for i in range(60):
        t = START + (i // 6)  # six records a second
        rec = {"v": 1, "id": new_id(t), "kind": "note", "text": f"{'alpha' if i % 4 else 'beta'} step {i}"}
        if i > 1:  # the first two have no time
            rec["ts"] = datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        lines.append(json.dumps(rec))
    if order == "shuffled":
        random.Random(7).shuffle(lines)
    root = tmp_path / "v"
    init(Vault(root))
    (root / "LOG.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    with index.open_index(Vault(root)) as idx:
        every = sorted(
            idx.rows_in(idx.top_lines('"alpha"', index.BEST, 100)),
            key=lambda r: (r.ts or -1e18, r.id[:10], line_of(r.n), r.id),
            reverse=True,
        )
        assert len(every) == 45 and every[-1].ts is None
        for limit in (1, 3, 5, 9, 44, 45, 50):
            got = idx.newest_lines('"alpha"', limit)
            assert sorted(got) == sorted(r.n for r in every[:limit]), limit
            assert got == sorted(got, key=lambda n: n >> 29, reverse=True)  # newest second first
        odd = [r for r in every if r.n % 2]
        for limit in (2, 4, 7):
            got = idx.newest_lines('"alpha"', limit, "r.n % 2 = ?", [1])
            assert sorted(got) == sorted(r.n for r in odd[:limit]), limit


def _colliding_writers() -> tuple[str, str]:
    """Two writer ids whose files of one month hash alike (`record.file_hash`: 5 bits)."""
    from optmem.record import file_hash

    seen: dict[int, str] = {}
    for i in range(100):
        name = f"w{i}"
        h = file_hash(f"log/{name}/2026-12.jsonl")
        if h in seen:
            return seen[h], name
        seen[h] = name
    raise AssertionError("no two of 100 names hash alike")  # (33 of them must)


@pytest.mark.long
def test_synced_clones_whose_files_share_index_places_answer_the_same(tmp_path, cli):
    """Two clones' writers wrote at the same seconds, line for line, into files that hash alike:
    their records share places in the index, and each clone gave the place to its own file's
    record (indexed first) and the next one to the record the sync brought."""
    lines = _records()
    files = dict(zip(_colliding_writers(), (lines[:100], lines[100:]), strict=True))
    roots = []
    for first in files:
        root = tmp_path / first
        init(Vault(root))
        for name in sorted(files, key=lambda n: n != first):  # its own file, indexed; then the other's
            folder = root / "log" / name
            folder.mkdir(parents=True)
            (folder / "2026-12.jsonl").write_text("\n".join(files[name]) + "\n", "utf-8")
            assert cli("--vault", str(root), "search", "note", env={"OPTMEM_NOW": NOW}).exit_code == 0
        roots.append(root)
    for query in ("note", "deploy nginx", "one note 7", "redis queue", "8042"):
        answers = [
            cli.json("--vault", str(root), "search", query, "-n", "20", env={"OPTMEM_NOW": NOW}) for root in roots
        ]
        assert answers[0]["hits"] and answers[1] == answers[0], query
    shown = [cli("--vault", str(root), "context", env={"OPTMEM_NOW": NOW}).stdout for root in roots]
    assert "note" in shown[0] and shown[1] == shown[0]
