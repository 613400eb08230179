"""Records older versions stored, imported and read as the docs promise (review 8, findings 3,
4, 9, 10): a key with whitespace around it is the trimmed key; an old hand-form correction keeps
the refs that resolve and reads the others as words; the hand-typed correction path stores the
resolved full id; the unresolved-ref check of an import does bounded work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

A = "01M8RGR080BR2GZ775VGVA88ZY"
B = "01M8V34Q806CP75716FXTQJJ6C"


def write_export(path: Path, records: list[dict]) -> Path:
    lines = [{"format": "optmem-export", "version": 1}] + [{"record": r} for r in records]
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), "utf-8")
    return path


def test_the_hand_typed_correction_path_stores_the_full_id_correct_stores(cli):
    """Finding 10: `append "〔更正〕#<last 8 of the id> …"` stores the id it resolved, as `correct`
    does — not the typed fragment."""
    rid = cli.json("append", "the staging db is on host db2")["id"]
    stored = cli.json("append", f"[correction] #{rid[-8:].lower()} the staging db is on host db3")
    assert cli.json("get", stored["id"])["record"]["corrects"] == [rid]


@pytest.mark.long
def test_an_old_key_with_whitespace_around_it_imports_and_reads_trimmed(cli, tmp_path):
    """Finding 3: a key stored with a space around it by an older version is imported (the
    correction with its target) and read as the trimmed key: `history --key`, a new value of the
    trimmed key supersedes it — one current value, no second fact."""
    src = write_export(
        tmp_path / "old.export",
        [
            {"v": 1, "id": A, "ts": "2026-12-01T10:00:00Z", "key": "orders.port ", "text": "orders port is 8080"},
            {
                "v": 1,
                "id": B,
                "ts": "2026-12-02T10:00:00Z",
                "kind": "correction",
                "key": "orders.port ",
                "text": "〔更正〕orders port is 9090",
                "corrects": [A],
            },
        ],
    )
    vault = tmp_path / "v"
    done = cli.json("--vault", str(vault), "import", str(src))
    assert done["bad"] == [] and done["records"] == 2
    hist = cli.json("--vault", str(vault), "history", "--key", "orders.port")
    assert A in json.dumps(hist) and B in json.dumps(hist)
    assert B in json.dumps(cli.json("--vault", str(vault), "history", "--key", "orders.port "))
    cli.json("--vault", str(vault), "append", "orders port is 7070", "--key", "orders.port")
    hits = cli.json("--vault", str(vault), "search", "orders port")["hits"]
    assert [h["text"] for h in hits if h["status"] == "current"] == ["orders port is 7070"]
    res = cli("--vault", str(vault), "doctor")
    assert res.exit_code == 0, res.stdout


def test_a_live_vaults_old_key_with_a_space_is_the_trimmed_key(cli, vault_path: Path):
    """Finding 3, live: a LOG line an older version wrote with key 'orders.port ' is the fact
    `orders.port` — found by `history --key`, superseded by a new value of that key."""
    vault_path.mkdir(parents=True, exist_ok=True)
    line = {
        "v": 1,
        "id": A,
        "ts": "2026-12-01T10:00:00Z",
        "domain": "default",
        "key": "orders.port ",
        "text": "orders port is 9090",
    }
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")
    assert A in json.dumps(cli.json("history", "--key", "orders.port"))
    cli.json("append", "orders port is 7070", "--key", "orders.port")
    hits = cli.json("search", "orders port")["hits"]
    assert [h["text"] for h in hits if h["status"] == "current"] == ["orders port is 7070"]


C = "01M8XNHE800GWCTF3ETB5AN3S7"


@pytest.mark.long
def test_an_old_hand_form_correction_imports_with_the_refs_that_resolve(cli, tmp_path):
    """Finding 4: an older version stored `〔更正〕#<A> … see #deploy42` without a `corrects`
    field. Import keeps it: #<A> resolves, so it corrects A (written as its `corrects`, the full
    id); #deploy42 names no record, so it is a word. The current version stays the correction;
    `doctor` is clean. A hand-form line none of whose refs resolves is refused, its message
    about its text (it has no `corrects` field to remove anything from)."""
    src = write_export(
        tmp_path / "old.export",
        [
            {"v": 1, "id": A, "ts": "2026-12-01T10:00:00Z", "kind": "note", "text": "staging db is on host db2"},
            {
                "v": 1,
                "id": C,
                "ts": "2026-12-03T10:00:00Z",
                "kind": "note",
                "text": f"〔更正〕#{A[-8:].lower()} staging db moved to host db3, see #deploy42",
            },
            {"v": 1, "id": B, "ts": "2026-12-04T10:00:00Z", "text": "[correction] #release2026 ship on Monday"},
        ],
    )
    vault = tmp_path / "v"
    done = cli.json("--vault", str(vault), "import", str(src))
    assert done["records"] == 2
    assert [(b["line"], b["code"], b.get("field")) for b in done["bad"]] == [(4, "dangling_ref", "text")]
    assert "RELEASE2026" in done["bad"][0]["message"].upper() and "its corrects" not in done["bad"][0]["message"]
    assert cli.json("--vault", str(vault), "get", C)["record"]["corrects"] == [A]
    hits = cli.json("--vault", str(vault), "search", "staging db")["hits"]
    assert [h["id"] for h in hits if h["status"] == "current"] == [C]
    res = cli("--vault", str(vault), "doctor")
    assert res.exit_code == 0, res.stdout
    again = cli.json("--vault", str(vault), "import", str(src))  # again: nothing new, the same refusal
    assert again["records"] == 0 and [b["line"] for b in again["bad"]] == [4]


class _Unlisted(set):
    """A set of ids that may be asked about but never listed (nor sorted) whole."""

    def __iter__(self):
        raise AssertionError("the import listed every id the vault holds")


def test_the_unresolved_ref_check_looks_ids_up_and_never_lists_them_all(cli, tmp_path, monkeypatch):
    """Finding 9: which refs of an import name nothing is found by looking each up (a set for a
    whole id, the index or a bisection for a prefix or suffix), never by sorting or scanning every
    id the vault holds — bounded work, the same answers."""
    from optmem import transfer
    from optmem.vault import Vault

    vault = tmp_path / "v"
    first = cli.json("--vault", str(vault), "append", "the cache is redis")["id"]
    cli.json("--vault", str(vault), "append", "the queue is rabbitmq")
    new = "01M9XXXXXXXXXXXXXXXXXXXXXA"
    lines = [
        (
            2,
            json.dumps(
                {
                    "record": {
                        "id": new,
                        "ts": "2026-01-01T00:00:00Z",
                        "text": "the cache is valkey",
                        "corrects": [first[-8:]],
                    }
                }
            )
            + "\n",
        ),
        (
            3,
            json.dumps(
                {
                    "record": {
                        "id": "01M9XXXXXXXXXXXXXXXXXXXXXB",
                        "ts": "2026-01-02T00:00:00Z",
                        "text": "the cache is dragonfly",
                        "corrects": [new[-8:]],  # (its first 10 characters all four ids share: no record)
                    }
                }
            )
            + "\n",
        ),
        (
            4,
            json.dumps(
                {
                    "record": {
                        "id": "01M9XXXXXXXXXXXXXXXXXXXXXC",
                        "ts": "2026-01-02T00:00:00Z",
                        "text": "the queue is kafka",
                        "corrects": ["01ABCDEFGH"],
                    }
                }
            )
            + "\n",
        ),
        (
            5,
            json.dumps(
                {
                    "record": {
                        "id": "01M9XXXXXXXXXXXXXXXXXXXXXD",
                        "ts": "2026-01-03T00:00:00Z",
                        "text": "the queue is nats",
                        "corrects": ["01M9XXXXXXXXXXXXXXXXXXXXXC"],
                    }
                }
            )
            + "\n",
        ),
    ]
    batch = transfer._Batch(Vault(vault), False)
    batch.known = _Unlisted(batch.known)
    batch.take(transfer.check((lines, False, 1 << 20, True)))
    batch.unresolved()
    if batch.idx is not None:
        batch.idx.close()
    assert [(b["line"], b["code"]) for b in batch.bad] == [(4, "dangling_ref"), (5, "dangling_ref")]
    assert batch.ids == [new, "01M9XXXXXXXXXXXXXXXXXXXXXB"]


def test_a_hand_typed_id_the_log_reads_imports_and_one_no_ref_can_name_does_not(cli, tmp_path):
    """Finding 4 (lower): a line typed with its own id, e.g. "mynote000001" or "abc" — the log
    reads it and `doctor` flags nothing — imports under that id (a whole id of any length is
    named); an id no reference could name (holding a space, or a slash) is still refused
    (`bad_value`, field id), as `doctor` reports it."""
    src = write_export(
        tmp_path / "typed.export",
        [
            {"id": "mynote000001", "ts": "2026-01-01T00:00:00Z", "text": "my own note"},
            {"id": "abc", "ts": "2026-01-01T00:00:00Z", "text": "a short id"},
            {"id": "my note 01", "ts": "2026-01-01T00:00:00Z", "text": "an id with spaces"},
            {"id": "my/note", "ts": "2026-01-01T00:00:00Z", "text": "an id with a slash"},
        ],
    )
    vault = tmp_path / "v"
    done = cli.json("--vault", str(vault), "import", str(src))
    assert done["records"] == 2
    assert [(b["line"], b["code"], b.get("field")) for b in done["bad"]] == [
        (4, "bad_value", "id"),
        (5, "bad_value", "id"),
    ]
    files = [vault / "LOG.jsonl", *sorted((vault / "log").glob("*/*.jsonl"))]
    assert any('"id":"mynote000001"' in f.read_text("utf-8") for f in files if f.exists())
    res = cli("--vault", str(vault), "doctor")
    assert res.exit_code == 0, res.stdout


def test_a_hand_typed_lower_case_id_is_named_in_any_case(cli, vault_path):
    """Ids are named in any case (Crockford base32 decodes either case): a line typed with its id
    in lower case — a record id or one of its own — keeps the id it says, and `get`, `forget` and
    a hand-typed correction name it whatever the case they give (brief fix-i, item 3)."""
    cli.json("append", "a first record")  # (the vault and its index)
    lines = [
        {"id": "mynote000001", "ts": "2026-12-01T00:00:00Z", "text": "redis runs on host db3"},
        {"id": "01m8rgr080br2gz775vgva88zy", "ts": "2026-12-01T00:00:00Z", "text": "the backend port is 8080"},
        {"ts": "2026-12-02T00:00:00Z", "text": "〔更正〕 #VGVA88ZY the backend port is 9090"},
    ]
    with (vault_path / "LOG.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
    for ref in ("mynote000001", "MYNOTE000001", "mynote", "000001"):
        got = cli.json("get", ref)["record"]
        assert (got["id"], got["text"]) == ("mynote000001", "redis runs on host db3"), ref
    for ref in ("01m8rgr080br2gz775vgva88zy", A, "vgva88zy", "01M8RGR0"):
        got = cli.json("get", ref)["record"]
        assert (got["id"], got["status"]) == ("01m8rgr080br2gz775vgva88zy", "superseded"), ref
    assert cli.json("forget", "MyNote000001")["status"] == "forgotten"
    assert cli.json("search", "redis")["hits"] == []


def test_ids_that_differ_only_in_case_are_each_named_as_typed_and_doctor_names_the_clash(cli, vault_path):
    """A line typed `mynote000001` beside one typed `MYNOTE000001`: `get`/`forget` of the id as
    typed name that line's record (the upper-case one shadowed it), and `doctor` reports the
    pair — a reference in any case cannot tell them apart (review finding 3)."""
    cli.json("append", "a first record")
    lines = [
        {"id": "mynote000001", "ts": "2026-12-01T00:00:00Z", "text": "cache host is redis-a"},
        {"id": "MYNOTE000001", "ts": "2026-12-01T00:00:01Z", "text": "queue host is rabbit-b"},
    ]
    with (vault_path / "LOG.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(x) + "\n" for x in lines))
    assert cli.json("get", "mynote000001")["record"]["text"] == "cache host is redis-a"
    assert cli.json("get", "MYNOTE000001")["record"]["text"] == "queue host is rabbit-b"
    problems = cli.json("doctor", code=1)["problems"]
    assert [(p["code"], p["id"]) for p in problems] == [("duplicate_id", "MYNOTE000001")], problems
    assert "mynote000001" in problems[0]["message"] and "another id" in problems[0]["message"]
    assert cli.json("forget", "mynote000001")["status"] == "forgotten"
    assert [h["text"] for h in cli.json("search", "host")["hits"]] == ["queue host is rabbit-b"]


def test_doctor_reads_an_old_live_hand_form_lines_unresolved_hash_word_as_a_word(cli, vault_path):
    """An older version stored `〔更正〕#<A> … see #deploy42` in the live log with no `corrects`
    field: #<A> names a record, #deploy42 none — a word, as import reads it, so `doctor` is clean.
    A hand-form line none of whose `#`s names a record is a correction of nothing: reported,
    about its text (brief fix-i, item 4)."""
    a = cli.json("append", "staging db is on host db2")["id"]
    said = f"〔更正〕#{a[-8:]} staging db moved to db3, see #deploy42"
    lines = [{"v": 1, "id": C, "ts": "2026-12-03T10:00:00Z", "text": said}]
    with (vault_path / "LOG.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
    cli.json("search", "staging")  # (the index catches up)
    res = cli.json("doctor")
    assert res["ok"] is True and res["problems"] == [], res
    with (vault_path / "LOG.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"v": 1, "id": B, "ts": "2026-12-04T10:00:00Z", "text": "[correction] #release2026 ship"}))
        fh.write("\n")
    problems = cli.json("doctor", code=1)["problems"]
    assert [(p["code"], p["id"]) for p in problems] == [("dangling_ref", B)], problems
    assert "#release2026" in problems[0]["message"].lower() and "'#'" in problems[0]["message"]
