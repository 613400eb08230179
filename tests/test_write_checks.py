"""What a write takes is checked where it is taken, the same on every way in (findings of
tester 8: F13 a hand-typed correction through `append`, F10 keys, F5/F6 names and flags, F9
`merge --fact`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import log_lines


@pytest.mark.long
def test_a_hand_typed_correction_through_append_meets_the_checks_correct_makes(cli, vault_path: Path):
    """`append "〔更正〕#ID …"` is a correction of ID as every reader takes it: it is refused as
    `correct` refuses it — a redline only by a redline (`redline_locked`), an old version of a
    fact (`superseded`, naming the current one: one fact never has two current corrections on
    one clone), an id no record has (`not_found`) — and otherwise stored as the correction."""
    rule = cli.json("append", "生产发布必须两人批准", "--redline", "--origin", "user")["id"]
    before = log_lines(vault_path)
    for text in (f"〔更正〕#{rule} 生产发布一人批准即可", f"[correction] #{rule[-8:]} release needs one approval only"):
        out = cli.json("append", text, code=1)["error"]
        assert out["code"] == "redline_locked" and rule in out["message"]
    assert log_lines(vault_path) == before  # nothing stored
    assert (
        cli.json("append", f"〔更正〕#{rule} 生产发布三人批准", "--redline", "--origin", "user")["status"] == "stored"
    )

    fact = cli.json("append", "数据库是 MySQL 5.7")["id"]
    fixed = cli.json("correct", fact, "数据库是 MySQL 8.0")["id"]
    out = cli.json("append", f"〔更正〕#{fact} 数据库其实是 Postgres", code=1)["error"]
    assert out["code"] == "superseded" and fixed in out["message"]
    out = cli.json("append", "〔更正〕#0123456789ABCDEF 数据库其实是 Postgres", code=1)["error"]
    assert out["code"] == "not_found" and "0123456789ABCDEF" in out["message"]
    stored = cli.json("append", f"〔更正〕#{fixed} 数据库其实是 Postgres")
    assert cli.json("get", stored["id"])["record"]["corrects"] == [fixed]
    assert cli.json("conflicts")["conflicts"] == []
    res = cli("doctor")
    assert res.exit_code == 0, res.stdout


@pytest.mark.long
def test_a_key_is_trimmed_where_it_is_taken_and_one_that_cannot_be_a_key_is_refused(cli, vault_path: Path):
    """A stray space around a key (from a script or a template) names the same fact: the later
    value supersedes the earlier, `history --key` finds both whatever spaces it is given; a key
    with a line break or a tab, or only spaces, is refused with what to do —
    on `append`, `correct`, `history`, `resolve`, MCP, and `import` of an export."""
    first = cli.json("append", "backend port is 8080", "--key", "backend.port")["id"]
    second = cli.json("append", "backend port is 9090", "--key", "backend.port ")
    assert second["record"]["key"] == "backend.port"
    third = cli.json("append", "backend port is 9191", "--key", " backend.port")["id"]
    hits = cli.json("search", "backend port")["hits"]
    assert [h["id"] for h in hits if not h.get("superseded_by")] == [third]
    assert len(cli.json("history", "--key", "  backend.port\t")["versions"]) == 3
    for bad in ("backend\nport", "backend\tport", "   "):
        for args in (
            ("append", "backend port is 7070", "--key", bad),
            ("history", "--key", bad),
            ("correct", first, "backend port is 7171", "--key", bad),
            ("resolve", bad, "--keep", first),
        ):
            out = cli.json(*args, code=2)["error"]
            assert out["code"] == "usage" and "key" in out["message"].lower(), (args, out)
    assert cli.json("conflicts")["conflicts"] == []

    async def script(session):
        return await session.call_tool("append", {"text": "backend port is 6060", "key": "backend\nport"})

    from conftest import mcp_session

    res = mcp_session(vault_path, script)
    assert res.is_error and "key" in res.content[0].text

    dump = vault_path.parent / "keys.jsonl"
    rec = {"id": "01M9XXXXXXXXXXXXXXXXXXXXXA", "ts": "2026-01-01T00:00:00Z", "text": "port 1", "key": " port"}
    tab = {"id": "01M9XXXXXXXXXXXXXXXXXXXXXB", "ts": "2026-01-01T00:00:00Z", "text": "port 2", "key": "po\trt"}
    dump.write_text(
        '{"format":"optmem-export","version":1}\n' + "".join(json.dumps({"record": r}) + "\n" for r in (rec, tab)),
        "utf-8",
    )
    done = cli.json("import", str(dump))  # (a key an older version stored with a space: taken trimmed)
    assert [(b["line"], b.get("field")) for b in done["bad"]] == [(3, "key")] and done["records"] == 1
    assert [v["id"] for v in cli.json("history", "--key", "port")["versions"]] == [rec["id"]]


@pytest.mark.parametrize(
    "args",
    [
        ("history", "--key", "port", "-p", "../x"),
        ("history", "--key", "port", "--domain", "../y"),
        ("correct", "port 1000", "port 1001 in A", "-p", "../x"),
        ("correct", "port 1000", "port 1001 in A", "--domain", "a b"),
    ],
)
def test_history_and_correct_refuse_a_bad_project_or_domain_as_every_command_does(cli, vault_path: Path, args):
    cli.json("append", "port 1000 in A", "--key", "port", "-p", "A")
    before = log_lines(vault_path)
    out = cli.json(*args, code=2)["error"]
    assert out["code"] == "invalid_name"
    assert log_lines(vault_path) == before


def test_show_refuses_target_user_with_a_project_as_add_does(cli, vault_path: Path):
    cli.json("add", "用户喜欢茶", "--target", "user")
    add = cli.json("add", "x", "--target", "user", "--project", "p", code=2)["error"]
    show = cli.json("show", "--target", "user", "--project", "p", code=2)["error"]
    assert show["code"] == add["code"] == "usage" and "--project" in show["message"]
    assert "用户喜欢茶" in cli("show", "--target", "user").stdout  # (alone, it shows USER.md)


def test_merge_refuses_two_values_of_one_fact_field(cli, vault_path: Path):
    a = cli.json("append", "日本旅行计划在六月")["id"]
    b = cli.json("append", "日本旅行要去东京和大阪")["id"]
    before = log_lines(vault_path)
    out = cli.json("merge", a, b, "--topic", "日本旅行", "--fact", "month=六月", "--fact", "month=七月", code=2)
    assert out["error"]["code"] == "usage" and "month" in out["error"]["message"]
    assert "六月" in out["error"]["message"] and "七月" in out["error"]["message"]
    assert log_lines(vault_path) == before
    # the same value twice says one thing: taken
    done = cli.json("merge", a, b, "--topic", "日本旅行", "--fact", "month=六月", "--fact", " month = 六月")
    assert cli.json("get", done["id"])["record"]["facts"] == {"month": "六月"}


def test_a_hashtag_in_a_corrections_text_is_a_word_not_a_record_id(cli, vault_path):
    """`correct` names what it corrects: a `#word` in the new text ("#release2026") is part of
    what the user says — neither refused as an unknown id nor stored as a second, dangling
    target; the hand-typed form (`〔更正〕#ID` through `append`) still names its target by `#`."""
    rid = cli.json("append", "deploy announcements go to the ops channel")["id"]
    new = cli.json("correct", rid, "deploy announcements go to #release2026 now")
    got = cli.json("get", new["id"])["record"]
    assert got["corrects"] == [rid] and "#release2026" in got["text"], got
    assert cli.json("doctor")["problems"] == []
    typed = cli.json("append", f"〔更正〕#{new['id'][-8:]} deploy announcements go to #ops-2027")
    assert cli.json("get", new["id"])["record"]["superseded_by"] == typed["id"]
