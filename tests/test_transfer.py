"""`optmem export` and `optmem import` (issue 34, part 3): real files, the CLI in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "import"


def export(cli, vault: Path) -> str:
    res = cli("--vault", str(vault), "export")
    assert res.exit_code == 0, res.stderr
    return res.stdout


def log_bytes(vault: Path) -> bytes:
    files = [vault / "LOG.jsonl", *sorted((vault / "log").glob("*/*.jsonl"))]
    return b"".join(f.read_bytes() for f in files if f.exists())


def records_only(dump: str) -> list[str]:
    """An export's record and hot lines (not its header, not the recall history it carries)."""
    return [x for x in dump.splitlines()[1:] if not x.startswith('{"access":')]


def busy(cli, vault: Path) -> None:
    cli.json("--vault", str(vault), "append", "the port is 8080", "--key", "port")
    cli.json("--vault", str(vault), "append", "the port is 9090", "--key", "port")
    rid = cli.json("--vault", str(vault), "append", "deploys go out on Friday")["id"]
    cli.json("--vault", str(vault), "correct", rid, "deploys go out on Thursday")
    gone = cli.json("--vault", str(vault), "append", "a note to forget")["id"]
    cli.json("--vault", str(vault), "forget", gone, "--reason", "wrong")
    cli.json("--vault", str(vault), "append", "never break the build", "--redline", "--origin", "user")
    cli.json("--vault", str(vault), "add", "prefers short answers")
    cli.json("--vault", str(vault), "add", "uses vim", "--target", "user")
    cli.json("--vault", str(vault), "add", "webapp: tests run with pytest", "--project", "webapp")
    cli.json("--vault", str(vault), "remove", "uses vim", "--target", "user")
    with open(vault / "LOG.jsonl", "a", encoding="utf-8") as fh:  # typed by hand: no id
        fh.write(json.dumps({"ts": "2026-01-02T00:00:00Z", "text": "hand typed: the cache is redis"}) + "\n")


@pytest.mark.long
def test_an_export_imported_into_an_empty_vault_exports_the_same_and_again_changes_nothing(cli, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    busy(cli, first)
    dump = export(cli, first)
    assert export(cli, first) == dump  # nothing in it says when it was made
    lines = [json.loads(x) for x in dump.splitlines()]
    head = lines[0]
    assert head == {"format": "optmem-export", "version": 1, "records": head["records"], "hot_files": 2, "access": 1}
    assert [sorted(x["access"]) for x in lines[1:] if "access" in x] == [["sweep", "ts", "v"]]  # the recall history
    records = [x["record"] for x in lines if "record" in x]
    assert len(records) == lines[0]["records"] and all(r.get("id") for r in records)
    assert [(r["ts"], r["id"]) for r in records] == sorted((r["ts"], r["id"]) for r in records)
    hot = {h["hot"]["file"]: h["hot"] for h in lines if "hot" in h}
    assert [e["text"] for e in hot["MEMORY.md"]["entries"]] == ["prefers short answers"]
    assert hot["MEMORY.md"]["entries"][0]["journal"] in {r["id"] for r in records}
    (tmp_path / "dump.jsonl").write_text(dump, "utf-8")
    done = cli.json("--vault", str(second), "import", "--origin", "user", str(tmp_path / "dump.jsonl"))
    noted = [r for r in records if r.get("kind") in ("seen", "forget", "confirm", "restore", "verify", "release")]
    assert noted and done["bookkeeping"] == len(noted)  # a line about a record is no record imported
    assert done["records"] == len(records) - len(noted) and done["bad"] == [] and done["hot"] == 2
    assert export(cli, second) == dump
    before = log_bytes(second)
    again = cli.json("--vault", str(second), "import", "--origin", "user", str(tmp_path / "dump.jsonl"))
    assert again["records"] == again["bookkeeping"] == 0 and again["hot"] == 0
    assert again["already"] == len(records) - len(noted)
    assert log_bytes(second) == before and export(cli, second) == dump
    # and it reads as the vault it came from
    for query in ("port", "deploys", "forget", "build"):
        a = cli.json("--vault", str(first), "search", query)["hits"]
        b = cli.json("--vault", str(second), "search", query)["hits"]
        assert [(h["id"], h["status"]) for h in a] == [(h["id"], h["status"]) for h in b]
    assert cli.json("--vault", str(second), "doctor")["ok"] is True


def test_a_bad_line_is_reported_with_its_number_and_the_rest_go_in(cli, tmp_path):
    good = {"v": 1, "id": "01KAAAAAAAAAAAAAAAAAAAAAAA", "ts": "2026-01-01T00:00:00Z", "text": "the port is 8080"}
    secret = {**good, "id": "01KBBBBBBBBBBBBBBBBBBBBBBB", "text": "aws key AKIAIOSFODNN7EXAMPLQ secret"}
    lines = [
        json.dumps({"format": "optmem-export", "version": 1}),
        json.dumps({"record": good}),
        "{not json",
        json.dumps({"record": secret}),
        json.dumps({"something": "else"}),
        json.dumps({"record": {**good, "id": "01KCCCCCCCCCCCCCCCCCCCCCCC", "text": "deploys on Friday"}}),
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    done = cli.json("import", "--origin", "user", str(path))
    assert done["records"] == 2
    assert [(b["line"], b["code"]) for b in done["bad"]] == [
        (3, "unparseable_line"),
        (4, "unsafe_content"),
        (5, "unparseable_line"),
    ]
    assert {h["text"] for h in cli.json("search", "port Friday")["hits"]} == {"the port is 8080", "deploys on Friday"}
    human = cli("import", "--origin", "user", str(path))
    assert human.exit_code == 0 and "line 4:" in human.stderr and "--allow-unsafe" in human.stderr


def test_import_refuses_what_is_not_an_export_and_writes_nothing(cli, tmp_path, vault_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some notes\n", "utf-8")
    err = cli.json("import", str(path), code=2)["error"]
    assert err["code"] == "usage" and "--from" in err["message"]
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({"format": "optmem-export", "version": 99}) + "\n", "utf-8")
    assert "upgrade optmem" in cli.json("import", str(newer), code=2)["error"]["message"]
    assert not vault_path.exists() or not any(vault_path.glob("**/*.jsonl"))


@pytest.mark.long
def test_hermes_memories_go_to_hot_memory_within_its_limits_and_the_rest_to_the_log(cli):
    from conftest import at_terminal

    run = at_terminal("import", "--from", "hermes", str(DATA / "hermes"), "--json")  # a person imports them
    assert run.returncode == 0, run.stderr
    done = json.loads(run.stdout)
    memory, user = (DATA / "hermes" / "MEMORY.md").read_text("utf-8"), cli("show", "--target", "user").stdout
    assert all(e.strip() in cli("show").stdout for e in memory.split("§"))  # all three fit
    in_hot = sum(f"User note {i}:" in user for i in range(8))
    assert 0 < in_hot < 8 and done["hot"] == 3 + in_hot
    assert done["records"] == 8 - in_hot  # every user entry is somewhere: hot while it fits, else the log
    assert cli.json("stats")["hot"][1]["chars"] <= cli.json("stats")["hot"][1]["limit"]
    logged = cli.json("search", "User note 7 concise")["hits"]
    assert any(h["text"].startswith("User note 7:") for h in logged)


def test_a_mem0_export_imports_dated_as_mem0_dates_it_and_stays_findable(cli, monkeypatch):
    done = cli.json("import", "--from", "mem0", str(DATA / "mem0" / "oss-get_all.json"))
    assert done["records"] == 2 and done["bad"] == []
    hit = cli.json("search", "hiking weekends")["hits"][0]
    record = cli.json("get", hit["id"])["record"]
    assert record["ts"] == "2026-06-03T17:30:00Z"  # updated_at, in UTC
    assert record["source"] == "mem0" and record["tags"] == ["hobbies"]
    assert record["mem0_id"] == "5b0e3f0c-2b6d-4a8e-9a51-0f2c7d3e9b14"
    # months later nobody has used them, but they came in today: a sweep leaves them warm
    cli.json("sweep")
    assert {h["text"] for h in cli.json("search", "vegetarian hiking", "--domain", "travel-planner")["hits"]} | {
        h["text"] for h in cli.json("search", "vegetarian hiking")["hits"]
    } == {"Likes hiking on weekends", "Is vegetarian and allergic to peanuts"}


@pytest.mark.long
def test_a_big_import_checks_its_records_in_worker_processes_with_the_same_result(cli, tmp_path, monkeypatch):
    from optmem import transfer

    lines = [json.dumps({"format": "optmem-export", "version": 1, "records": 300})]
    for i in range(300):
        text = f"note {i}: the service listens on port {8000 + i}" if i != 150 else "password: hunter2hunter2"
        rec = {"v": 1, "id": f"01KA{i:022d}", "ts": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z", "text": text}
        lines.append(json.dumps({"record": rec}))
    lines.insert(100, "{broken")
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    serial = cli.json("--vault", str(tmp_path / "serial"), "import", "--origin", "user", str(path))
    monkeypatch.setattr(transfer, "PARALLEL_MIN", 10)  # the pool from 10 records on: both paths, same input
    monkeypatch.setattr(transfer, "CHUNK", 7)
    parallel = cli.json("--vault", str(tmp_path / "parallel"), "import", "--origin", "user", str(path))
    assert serial == parallel and serial["records"] == 299
    assert [(b["line"], b["code"]) for b in serial["bad"]] == [(101, "unparseable_line"), (153, "unsafe_content")]
    assert export(cli, tmp_path / "serial") == export(cli, tmp_path / "parallel")


def _index_tables(vault: Path) -> dict[str, list[tuple[object, ...]]]:
    """What the vault's index holds, table by table, in key order (the meta row of each log
    file's read state aside: the same file read twice has the same state)."""
    import sqlite3

    from optmem.vault import Vault

    conn = sqlite3.connect(Vault(vault).index_path)
    try:
        return {
            "rec": conn.execute("SELECT * FROM rec ORDER BY n").fetchall(),
            "fts": conn.execute("SELECT rowid, body FROM fts ORDER BY rowid").fetchall(),
            "tag": conn.execute("SELECT * FROM tag ORDER BY 1, 2").fetchall(),
            "meta": conn.execute("SELECT k, v FROM meta ORDER BY k").fetchall(),
        }
    finally:
        conn.close()


def test_a_big_import_at_time_zero_is_indexed_as_a_rebuild_would(cli, tmp_path, monkeypatch):
    """The import's moment is only a time: at 1970-01-01T00:00:00Z (0 seconds) the records are
    marked seen then, as at any other (a zero once read as "no time" failed the insert)."""
    from optmem import transfer
    from optmem.schema import COLUMNS

    dump = tmp_path / "busy.jsonl"
    _busy_export(dump, 100, "1970-01")  # (dated then: a record from the future is refused)
    monkeypatch.setattr(transfer, "PARALLEL_MIN", 10)
    monkeypatch.setattr(transfer, "CHUNK", 23)
    monkeypatch.setenv("OPTMEM_NOW", "1970-01-01T00:00:00Z")
    assert cli.json("--vault", str(tmp_path / "v"), "import", "--origin", "user", str(dump))["records"] == 100
    fed = _index_tables(tmp_path / "v")
    shown = list(COLUMNS).index("shown")
    assert {row[shown] for row in fed["rec"]} == {0.0}  # (seen at the import: time 0, not "never")
    cli.json("--vault", str(tmp_path / "v"), "reindex")
    assert _index_tables(tmp_path / "v") == fed


def _busy_export(path: Path, size: int, month: str = "2026-01") -> None:
    """An export of `size` records with what an index must get right: keys set again and again,
    corrections of records in earlier chunks, conversations, tags, a redline — plus a record
    written twice (chunks apart), one the scanner refuses and a line that is not JSON."""
    lines = []
    for i in range(size):
        rec: dict[str, object] = {
            "v": 1,
            "id": f"01KA{i:022d}",
            "ts": f"{month}-{1 + i // 1440:02d}T{i // 60 % 24:02d}:{i % 60:02d}:00Z",
            "domain": "default",
            "kind": "note",
            "tier": "redline" if i == 5 else "normal",
            "text": f"note {i}: 服务 listens on port {8000 + i}",
        }
        if i % 9 == 0:
            rec.update(key="port", text=f"the port is {9000 + i}")
        if i % 11 == 3 and i > 20:
            rec.update(kind="correction", text=f"〔更正〕note {i - 17} was wrong", corrects=[f"01KA{i - 17:022d}"])
        if i % 4 == 1:
            rec.update(session=f"s{i % 3}", tags=["talk"])
        lines.append(json.dumps({"record": rec}, ensure_ascii=False, separators=(",", ":")))
    lines.insert(40, lines[3])  # the same record again, in a later chunk
    lines.insert(77, json.dumps({"record": {"v": 1, "id": "01KB" + "9" * 22, "text": "password: hunter2hunter2"}}))
    lines.insert(120, "{broken")
    head = json.dumps({"format": "optmem-export", "version": 1, "records": len(lines)})
    path.write_text("\n".join([head, *lines]) + "\n", "utf-8")


@pytest.mark.long
def test_a_big_import_checks_in_workers_and_its_index_is_the_one_a_rebuild_builds(cli, tmp_path, monkeypatch):
    """A big import checks its chunks in worker processes, appends what passed and lets the
    normal build index it: its index is the one `reindex` builds from the log it wrote, table for
    table — also into a writer's own log file and into a vault whose recall file held a line
    already — and its vault exports as the one imported without workers."""
    from optmem import lifecycle, transfer

    dump = tmp_path / "busy.jsonl"
    _busy_export(dump, 400)
    plain = cli.json("--vault", str(tmp_path / "plain"), "import", "--origin", "user", str(dump))  # below PARALLEL_MIN
    monkeypatch.setattr(transfer, "PARALLEL_MIN", 10)
    monkeypatch.setattr(transfer, "CHUNK", 23)
    split = tmp_path / "split"
    cli.json("--vault", str(split), "init")
    cli.json("--vault", str(split), "segment", "--writer", "laptop")
    recalled = tmp_path / "recalled"
    cli.json("--vault", str(recalled), "init")
    (recalled / "ACCESS.jsonl").write_bytes(lifecycle.access_line("2026-01-02T03:04:05Z", sweep=True) + b"\n")
    for vault in (tmp_path / "fed", split, recalled):
        done = cli.json("--vault", str(vault), "import", "--origin", "user", str(dump))
        assert done == plain and done["records"] == 400 and done["already"] == 1
        assert [(b["line"], b["code"]) for b in done["bad"]] == [(79, "unsafe_content"), (122, "unparseable_line")]
        fed = _index_tables(vault)
        assert len(fed["rec"]) == 400 and fed["tag"]
        cli.json("--vault", str(vault), "reindex")
        assert _index_tables(vault) == fed
        assert dict(fed["meta"])["last_sweep"] == ("" if vault != recalled else repr(1767323045.0))
        # the same records and hot files; the recalled vault's history also holds its own sweep
        assert records_only(export(cli, vault)) == records_only(export(cli, tmp_path / "plain"))
    assert (split / "log" / "laptop").is_dir() and not (split / "LOG.jsonl").exists()
    for query in ("port", "note 30", "服务"):
        assert cli.json("--vault", str(tmp_path / "fed"), "search", query) == cli.json(
            "--vault", str(tmp_path / "plain"), "search", query
        )


def test_an_import_says_what_it_does_not_take_rather_than_storing_or_dropping_it_silently(cli, tmp_path):
    """A record without a text (missing, not a string, blank) is refused as `append` refuses it; a
    record whose id the vault holds with other words is reported, the vault's kept — neither is
    counted as imported or as already here."""
    first, second = tmp_path / "first", tmp_path / "second"
    rid = cli.json("--vault", str(first), "append", "用户喜欢乌龙茶", "--key", "user.tea")["id"]
    dump = export(cli, first)
    (tmp_path / "one.jsonl").write_text(dump, "utf-8")
    assert cli.json("--vault", str(second), "import", "--origin", "user", str(tmp_path / "one.jsonl"))["records"] == 1
    head = dump.splitlines()[0]
    bad = [
        {"record": {"v": 1, "id": "01M9XXXXXXXXXXXXXXXXXXXXXA", "ts": "2026-01-01T00:00:00Z", "text": 5}},
        {"record": {"v": 1, "id": "01M9XXXXXXXXXXXXXXXXXXXXXB", "ts": "2026-01-01T00:00:00Z", "text": "   "}},
        {"record": {"v": 1, "id": "01M9XXXXXXXXXXXXXXXXXXXXXC", "ts": "2026-01-01T00:00:00Z"}},
    ]
    # an export's line edited by hand: its own shape, one space after "text":
    spaced = '{"record":{"v":1,"id":"01M9XXXXXXXXXXXXXXXXXXXXXD","ts":"2026-01-01T00:00:00Z","text": "ok"}}'
    changed = dump.replace("用户喜欢乌龙茶", "用户改喝红茶了").splitlines()[1]
    (tmp_path / "two.jsonl").write_text(
        "\n".join([head, *(json.dumps(b, ensure_ascii=False) for b in bad), changed, spaced]) + "\n",
        "utf-8",
    )
    before = log_bytes(second)
    done = cli.json("--vault", str(second), "import", "--origin", "user", str(tmp_path / "two.jsonl"))
    assert done["records"] == 1 and done["already"] == 0  # ("text": "ok", written with a space: taken)
    assert [(b["line"], b["code"], b.get("field")) for b in done["bad"]] == [
        (2, "missing_field", "text"),
        (3, "missing_field", "text"),
        (4, "missing_field", "text"),
        (5, "id_taken", "id"),
    ]
    assert "5, not a string" in done["bad"][0]["message"] and f"optmem correct {rid}" in done["bad"][3]["message"]
    assert log_bytes(second).startswith(before)  # (what the vault held is as it was)
    assert [h["text"] for h in cli.json("--vault", str(second), "search", "茶")["hits"]] == ["用户喜欢乌龙茶"]


def test_an_export_says_which_hot_file_it_could_not_carry_whole(cli, vault_path):
    """A backup that leaves something out says so: a hot file that cannot be read is named on
    stderr (its entries are not in the export), and one git left mid-merge is named too (both
    sides go out as entries of their own) — the export itself still runs."""
    cli.json("add", "prefers short answers")
    (vault_path / "USER.md").write_bytes(b"likes \xff\xfe tea\n")  # not UTF-8
    res = cli("export")
    assert res.exit_code == 0 and "prefers short answers" in res.stdout
    assert "USER.md" in res.stderr and "not in this export" in res.stderr, res.stderr
    (vault_path / "USER.md").write_text("likes tea\n", "utf-8")
    mem = vault_path / "MEMORY.md"
    mem.write_text("shared\n§\n<<<<<<< HEAD\nport 8080\n=======\nport 9090\n>>>>>>> origin/main\n", "utf-8")
    res = cli("export")
    assert res.exit_code == 0 and '"port 8080"' in res.stdout and '"port 9090"' in res.stdout
    assert "MEMORY.md" in res.stderr and "mid-merge" in res.stderr and "USER.md" not in res.stderr, res.stderr


@pytest.mark.long
def test_an_import_checks_each_records_id_time_and_field_types_and_leaves_doctor_clean(cli, tmp_path):
    """An export's record lines edited by hand (finding F3): an id that is no record id, a time
    that is none or lies in the future (it would stay the newest value of its key, every later
    write losing to it), tags or corrects that are not lists of strings, a correction of a record
    neither the vault nor the import holds — each is reported in `bad` and not written; the rest
    go in, and `doctor` finds nothing wrong after."""
    vault = tmp_path / "v"
    rid = cli.json("--vault", str(vault), "append", "the cache is redis")["id"]
    good = "01M9XXXXXXXXXXXXXXXXXXXXXA"
    lines = [
        {"format": "optmem-export", "version": 1},
        {"record": {"id": 5, "ts": "2026-01-01T00:00:00Z", "text": "record with an integer id"}},
        {"record": {"id": "a b/c", "ts": "2026-01-01T00:00:00Z", "text": "record with an id no ref can name"}},
        {"record": {"text": "record with ts yesterday", "ts": "yesterday"}},
        {"record": {"text": "port is 7000 (dated 2099)", "ts": "2099-01-01T00:00:00Z", "key": "port"}},
        {"record": {"text": "record with tags as a string", "tags": "notalist", "ts": "2026-01-01T00:00:00Z"}},
        {"record": {"text": "record correcting a string id", "corrects": "01ABC", "ts": "2026-01-01T00:00:00Z"}},
        {"record": {"text": "record correcting nothing held", "corrects": ["01ABCDEFG"], "ts": "2026-01-01T00:00:00Z"}},
        {"record": {"text": "record with no id and no ts"}},
        {"record": {"id": good, "ts": "2026-01-01T00:00:00Z", "text": "a good record", "tags": ["ok"]}},
        {"record": {"ts": "2026-01-02T00:00:00Z", "text": "hand typed, its id derived"}},
        {"record": {"ts": "2026-01-03T00:00:00Z", "text": "the cache is valkey", "corrects": [rid]}},
        {"access": {"v": 1, "ts": "2099-01-01T00:00:00Z", "touch": [good]}},
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", "utf-8")
    done = cli.json("--vault", str(vault), "import", "--origin", "user", str(path))
    assert [(b["line"], b["code"], b.get("field")) for b in done["bad"]] == [
        (2, "bad_value", "id"),
        (3, "bad_value", "id"),
        (4, "bad_timestamp", "ts"),
        (5, "future_time", "ts"),
        (6, "bad_value", "tags"),
        (7, "bad_value", "corrects"),
        (8, "dangling_ref", "corrects"),
        (9, "missing_field", "ts"),
        (13, "future_time", "ts"),
    ]
    assert all(b["message"].count(";") >= 1 for b in done["bad"])  # each says what to do
    assert done["records"] == 3
    res = cli("--vault", str(vault), "doctor")
    assert res.exit_code == 0, res.stdout
    # the future-dated value did not go in: a new value of the key is its current one
    cli.json("--vault", str(vault), "append", "port is 8000", "--key", "port")
    assert [h["text"] for h in cli.json("--vault", str(vault), "search", "port")["hits"]] == ["port is 8000"]
    assert (
        cli.json("--vault", str(vault), "import", "--origin", "user", str(path))["records"] == 0
    )  # again: nothing new


def test_an_import_where_every_line_is_bad_is_refused_and_a_partial_one_says_so(cli, tmp_path):
    """A script must tell an import that brought nothing from one that worked: every line refused
    is `nothing_imported` (exit 1, ok false, each bad line listed) and creates no vault; an import
    of some lines says `partial`."""
    vault = tmp_path / "v"
    head = '{"format":"optmem-export","version":1}\n'
    res = cli(
        "--vault",
        str(vault),
        "import",
        "--origin",
        "user",
        "-",
        "--json",
        input=head + '{"record":{"text":"a"}}\ngarbage\n',
    )
    out = json.loads(res.stdout)
    assert res.exit_code == 1 and out["ok"] is False and out["error"]["code"] == "nothing_imported"
    assert [(b["line"], b["code"]) for b in out["error"]["bad"]] == [(2, "missing_field"), (3, "unparseable_line")]
    assert not vault.exists()
    human = cli("--vault", str(vault), "import", "--origin", "user", "-", input=head + "garbage\n")
    assert human.exit_code == 1 and "nothing was imported" in human.stderr
    good = '{"record":{"v":1,"id":"01KB5Z3M0000000000000000AB","ts":"2026-11-29T18:55:30Z","text":"b","domain":"d"}}\n'
    part = cli("--vault", str(vault), "import", "--origin", "user", "-", "--json", input=head + good + "garbage\n")
    done = json.loads(part.stdout)
    assert part.exit_code == 0 and done["ok"] and done["partial"] is True and done["records"] == 1
    again = cli(
        "--vault", str(vault), "import", "--origin", "user", "-", input=head + good + "x\n"
    ).stdout  # (the record: here already)
    assert again.startswith("partial import: imported 0 record(s)")
    assert "1 already here; 1 line(s) not imported" in again
    empty = cli.json(
        "--vault", str(vault), "import", "--origin", "user", "-", input=head
    )  # an export of an empty vault
    assert empty["records"] == 0 and empty["partial"] is False


def test_a_refused_line_says_not_imported_once(cli, tmp_path):
    """Each line refused is said once as "… (not imported)": the reasons say why, not that too."""
    dump = tmp_path / "dump.jsonl"
    head = {"format": "optmem-export", "version": 1, "records": 3, "hot_files": 0, "access": 0}
    rows = [
        {"id": "01KJMDEB80AAAAAAAAAAAAAAA7", "ts": "2026-03-01T09:00:00Z", "text": "kept"},
        {"id": "01KJMDEB80AAAAAAAAAAAAAAA8", "ts": "2026-03-01T09:00:00Z", "text": "x", "corrects": ["NOSUCH0001"]},
        {"id": "01KJMDEB80AAAAAAAAAAAAAAA9", "text": "no time"},
    ]
    dump.write_text("\n".join(json.dumps(x) for x in [head, *({"record": r} for r in rows)]) + "\n", "utf-8")
    res = cli("import", "--origin", "user", str(dump))
    said = [line for line in res.stderr.splitlines() if line.startswith("warning: line")]
    assert len(said) == 2 and all(line.count("not imported") == 1 for line in said), res.stderr
    assert all("nothing was stored" not in line for line in said), res.stderr


def test_an_export_carries_both_lines_of_a_doubled_id_and_says_what_it_leaves_out(cli, tmp_path):
    """tester19's F2: every log record exactly as the log holds it — the second line of an id
    written twice with other words too — and what it cannot carry (a line that is no record) said
    on stderr and counted in the header; the header's count is the record lines that follow."""
    vault = tmp_path / "v"
    cli.json("--vault", str(vault), "init")
    dup = "01M99DDDDDDDDDDDDDDDDDDDDD"
    with open(vault / "LOG.jsonl", "ab") as fh:
        for day, words in ((3, "dup id port one"), (4, "dup id port two")):
            line = {"v": 1, "id": dup, "ts": f"2026-12-0{day}T00:00:00Z", "text": words, "domain": "default"}
            fh.write(json.dumps(line).encode() + b"\n")
        fh.write(b'{"v":1,"id":"01M99HHHHHHHHHHHHHHHHHHHHH","ts":"2026-12-05T00:00:00Z","text":"bad \xff here"}\n')
        fh.write(
            json.dumps(
                {"v": 1, "id": dup, "ts": "2026-12-03T00:00:00Z", "text": "dup id port one", "domain": "default"}
            ).encode()
            + b"\n"
        )
    res = cli("--vault", str(vault), "export")
    assert res.exit_code == 0, res.stderr
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    records = [x["record"] for x in lines if "record" in x]
    assert sorted(r["text"] for r in records) == ["dup id port one", "dup id port two"]  # (the same line twice: once)
    assert lines[0]["records"] == len(records) == 2
    assert lines[0]["left_out"] == 1
    assert "LOG.jsonl line 3" in res.stderr and "not in this export" in res.stderr
    assert dup in res.stderr and "two lines" in res.stderr
    # imported: the first line of the id goes in, the second is reported (not counted as already here)
    dump = tmp_path / "ex.jsonl"
    dump.write_text(res.stdout, "utf-8")
    got = cli.json("--vault", str(tmp_path / "w"), "import", str(dump), "--origin", "user", code=None)
    assert got["records"] == 1 and got["already"] == 0
    assert [(b["code"], b["field"]) for b in got["bad"]] == [("id_taken", "id")] and got["partial"]
