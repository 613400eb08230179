"""Cold log: record schema, append flags, the write gate, get/forget, hand lines, torn tails."""

from __future__ import annotations

import json

import pytest
from conftest import log_lines, put
from hypothesis import given
from hypothesis import strategies as st

from optmem import record
from optmem.errors import TooLarge, UnsafeContent


def test_append_writes_schema_v1_with_all_flags(cli, vault_path):
    out = cli.json(
        "append",
        "后端端口是 9090",
        "--domain",
        "code",
        "--project",
        "webapp",
        "--kind",
        "decision",
        "--tier",
        "evidence",
        "--tag",
        "infra",
        "--tag",
        "port",
        "--key",
        "backend.port",
        "--ttl",
        "7d",
        "--evidence",
        "https://ci/run/1",
        "--source",
        "agent-a",
        env={"OPTMEM_NOW": "2026-11-29T18:55:30Z"},
    )
    assert out["status"] == "stored" and len(out["id"]) == 26
    line = log_lines(vault_path)[-1]
    assert line == {
        "v": 1,
        "id": out["id"],
        "ts": "2026-11-29T18:55:30Z",
        "domain": "code",
        "project": "webapp",
        "kind": "decision",
        "tier": "evidence",
        "key": "backend.port",
        "text": "后端端口是 9090",
        "tags": ["infra", "port"],
        "expires": "2026-12-06T18:55:30Z",
        "evidence": "https://ci/run/1",
        "source": "agent-a",
        "origin": "agent",  # no terminal on stdin: an agent's write (issue 46)
        "after": [],  # the key's values its writer saw: none (a sync tells concurrent values apart)
    }


def test_plain_append_prints_the_id_and_defaults(cli, vault_path, monkeypatch):
    res = cli("append", "a plain note")
    assert res.exit_code == 0
    rid = res.stdout.strip()
    line = log_lines(vault_path)[-1]
    assert line["id"] == rid and line["domain"] == "default" and line["kind"] == "note"
    assert line["tier"] == "normal"
    monkeypatch.setenv("OPTMEM_DOMAIN", "hermes")
    cli.json("append", "from the env domain")
    assert log_lines(vault_path)[-1]["domain"] == "hermes"
    cli.json("append", "redline rule", "--redline", "--origin", "user")
    assert log_lines(vault_path)[-1]["tier"] == "redline"


def test_ids_are_unique_and_time_sortable():
    ids = [record.new_id(1_700_000_000 + i) for i in range(50)]
    assert len(set(ids)) == 50 and ids == sorted(ids)
    same_second = {record.new_id(1_700_000_000.5) for _ in range(1000)}
    assert len(same_second) == 1000


def test_exact_duplicate_stores_nothing_but_refreshes_recency(cli, vault_path):
    first = cli.json("append", "小明喜欢喝拿铁", "--domain", "hermes", env={"OPTMEM_NOW": "2026-01-01T00:00:00Z"})
    again = cli.json(
        "append", "小明 非常 喜欢喝拿铁！", "--domain", "hermes", env={"OPTMEM_NOW": "2026-03-01T00:00:00Z"}
    )
    assert again["status"] == "duplicate" and again["id"] == first["id"]
    lines = log_lines(vault_path)
    assert len(lines) == 2
    assert lines[1]["kind"] == "seen" and lines[1]["ref"] == first["id"] and "text" not in lines[1]
    other = cli.json("append", "小明喜欢喝拿铁", "--domain", "code")
    assert other["status"] == "stored"  # the gate is per domain


def test_stdout_of_a_plain_append_is_only_ever_an_id(cli, vault_path):
    first = cli("append", "the port is 8080").stdout.strip()
    again = cli("append", "The port is 8080!")
    assert again.exit_code == 0 and again.stdout.strip() == first  # the existing id, for scripts
    assert "duplicate of" in again.stderr
    cli("append", "The staging server is deployed with docker compose")
    skipped = cli("append", "The staging server is deployed using docker compose", "--on-similar", "skip")
    assert skipped.exit_code == 0 and skipped.stdout == "" and "nothing stored" in skipped.stderr


def test_near_duplicate_is_stored_and_named(cli, vault_path):
    first = cli.json("append", "The staging server is deployed with docker compose")
    near = cli.json("append", "The staging server is deployed with docker-compose files")
    assert near["status"] == "similar" and near["similar"][0]["id"] == first["id"]
    assert len(log_lines(vault_path)) == 2
    skip = cli.json("append", "The staging server is deployed with docker compose!!", "--on-similar", "skip")
    assert skip["status"] == "duplicate"
    skipped = cli.json("append", "The staging server is deployed using docker compose", "--on-similar", "skip")
    assert skipped["status"] == "skipped" and skipped["id"] is None
    sup = cli.json("append", "The staging server is deployed via docker compose", "--on-similar", "supersede")
    assert sup["status"] == "stored" and sup["record"]["corrects"]
    target = sup["record"]["corrects"][0]
    assert cli.json("get", target)["record"]["status"] == "superseded"


def test_a_word_form_change_is_never_an_exact_duplicate(cli, vault_path):
    """Stems group "wants" and "wanted" for search, but a changed word form may be a changed
    fact: it is stored (named as a near duplicate), never dropped as the same statement."""
    first = cli.json("append", "User wants the release on Friday")
    changed = cli.json("append", "User wanted the release on Friday")
    assert changed["status"] == "similar" and changed["similar"][0]["id"] == first["id"]
    assert [r["text"] for r in log_lines(vault_path)] == [
        "User wants the release on Friday",
        "User wanted the release on Friday",
    ]
    assert cli.json("append", "user WANTS the release, on friday!")["status"] == "duplicate"


def test_texts_without_letters_or_digits_are_not_duplicates_of_each_other(cli, vault_path):
    assert cli.json("append", "！！！")["status"] == "stored"
    assert cli.json("append", "???")["status"] == "stored"
    assert len(log_lines(vault_path)) == 2


def test_numbers_never_make_a_near_duplicate(cli):
    cli.json("append", "端口是8080")
    second = cli.json("append", "端口是9090")
    assert second["status"] == "stored" and second["similar"] == []


def test_get_shows_status_and_accepts_prefix_and_suffix(cli):
    rid = cli.json("append", "to be forgotten")["id"]
    assert cli.json("get", rid[:10])["record"]["status"] == "current"
    assert cli.json("get", rid[-8:].lower())["record"]["text"] == "to be forgotten"
    assert cli.json("get", "ZZZZZZZZ", code=1)["error"]["code"] == "not_found"
    assert cli.json("get", "ABC", code=1)["error"]["code"] == "not_found"


def test_forget_appends_a_tombstone_and_keeps_the_record(cli, vault_path):
    rid = cli.json("append", "a secret plan")["id"]
    out = cli.json("forget", rid, "--reason", "wrong")
    assert out["status"] == "forgotten"
    assert cli.json("get", rid)["record"]["status"] == "forgotten"
    assert "a secret plan" in (vault_path / "LOG.jsonl").read_text("utf-8")
    assert log_lines(vault_path)[-1] == {**log_lines(vault_path)[-1], "kind": "forget", "ref": rid, "reason": "wrong"}
    assert cli.json("forget", rid)["status"] == "already_forgotten"


@pytest.mark.long
def test_a_redline_is_forgotten_only_when_a_person_says_so(cli, vault_path):
    """A redline is a locked rule: only a redline corrects it, and forgetting it drops the rule —
    refused without --redline (nothing written); over MCP, where an agent asks, refused always."""
    from conftest import fenced_json, mcp_session

    rule = cli.json("append", "Never deploy on Fridays", "--redline", "--origin", "user")["id"]
    lines = len(log_lines(vault_path))
    refused = cli.json("forget", rule, code=1)
    assert refused["error"]["code"] == "redline_locked" and "--redline" in refused["error"]["message"]
    assert len(log_lines(vault_path)) == lines and cli.json("get", rule)["record"]["status"] == "current"

    async def script(s) -> str:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert "redline" not in tools["forget"].input_schema["properties"]
        return (await s.call_tool("forget", {"id": rule})).content[0].text

    assert fenced_json(mcp_session(vault_path, script))["error"]["code"] == "redline_locked"
    assert cli.json("get", rule)["record"]["status"] == "current"
    assert cli.json("forget", rule, "--redline", "--origin", "user")["status"] == "forgotten"
    newer = cli.json("append", "Deploys need two approvals", "--redline", "--origin", "user")["id"]
    old = cli.json("append", "Deploys need one approval", "--redline", "--origin", "user")["id"]
    cli.json("correct", old, "Deploys need three approvals", "--redline", "--origin", "user")
    assert cli.json("forget", old)["status"] == "forgotten"  # (no longer a rule: superseded)
    assert cli.json("get", newer)["record"]["status"] == "current"


def test_expired_status(cli):
    rid = cli.json("append", "temp", "--ttl", "1h", env={"OPTMEM_NOW": "2026-01-01T00:00:00Z"})["id"]
    assert cli.json("get", rid, env={"OPTMEM_NOW": "2026-01-01T00:30:00Z"})["record"]["status"] == "current"
    assert cli.json("get", rid, env={"OPTMEM_NOW": "2026-01-01T01:00:01Z"})["record"]["status"] == "expired"
    assert cli.json("append", "x", "--ttl", "soon", code=2)["error"]["code"] == "usage"


def test_hand_typed_lines_get_stable_ids_and_domain_prefixes(cli, vault, vault_path):
    cli.json("append", "first")
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"ts": "2026-11-01T10:00:00Z", "text": "[openclaw] 文章大纲写好了"}\n')
        fh.write("this line is not json\n")
        fh.write('{"ts": "2026-11-02T10:00:00Z", "text": "plain hand note", "mood": "ok"}\n')
    from optmem.index import open_index

    with open_index(vault) as idx:
        rows = sorted(idx.rows("1=1"), key=lambda r: record.line_of(r.n))  # in file order
        recs = [idx.record(r) for r in rows]
        assert idx.bad_lines()[0][0] == 3
    assert [r.domain for r in recs] == ["default", "openclaw", "default"]
    assert recs[2].extra == {"mood": "ok"} and recs[1].hand
    again = record.parse_line(
        b'{"ts": "2026-11-01T10:00:00Z", "text": "[openclaw] \\u6587\\u7ae0\\u5927\\u7eb2\\u5199\\u597d\\u4e86"}'
    )
    got = cli("get", recs[1].id)
    assert "openclaw" in got.stdout and "skipped 1 unparseable line(s) (line 3)" in got.stderr
    assert cli.json("get", recs[1].id)["warnings"] == [
        "LOG.jsonl: skipped 1 unparseable line(s) (line 3); they stay in the file — run `optmem doctor` to see them"
    ]
    assert (
        recs[1].id
        == record.parse_line(
            b'{"ts": "2026-11-01T10:00:00Z", "text": "[openclaw] ' + "文章大纲写好了".encode() + b'"}'
        ).id
    )
    assert again.domain == "openclaw"
    # the line it could not parse is still there, byte for byte
    assert "this line is not json\n" in (vault_path / "LOG.jsonl").read_text("utf-8")


def test_torn_last_line_is_tolerated_and_ended_by_the_next_append(cli, vault_path):
    cli.json("append", "before the crash")
    with open(vault_path / "LOG.jsonl", "ab") as fh:
        fh.write(b'{"v":1,"id":"01TORN","ts":"2026-11-29T00:00:00Z","te')
    assert cli.json("get", log_lines_safe(vault_path)[0]["id"])["record"]["status"] == "current"
    rid = cli.json("append", "after the crash")["id"]
    raw = (vault_path / "LOG.jsonl").read_text("utf-8").split("\n")
    assert raw[1] == '{"v":1,"id":"01TORN","ts":"2026-11-29T00:00:00Z","te'
    assert json.loads(raw[2])["id"] == rid
    assert cli.json("get", rid)["record"]["text"] == "after the crash"


def log_lines_safe(vault_path):
    out = []
    for line in (vault_path / "LOG.jsonl").read_text("utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def test_record_size_bound_and_scanner(vault):
    with pytest.raises(TooLarge):
        put(vault, "字" * 22000)  # 66,000 bytes
    put(vault, "字" * 21000)  # 63,000 bytes
    with pytest.raises(UnsafeContent) as err:
        put(vault, "key: AKIAABCDEFGHIJKLMNOP")
    assert err.value.context["rule"] == "aws_access_key"
    assert put(vault, "AKIAABCDEFGHIJKLMNOP is the test key", allow_unsafe=True).status == "stored"


def test_unreadable_log_stops_with_exit_3_and_is_not_overwritten(cli, vault_path):
    vault_path.mkdir()
    (vault_path / "LOG.jsonl").mkdir()  # an I/O error on every read
    out = cli.json("append", "good", code=3)
    assert out["error"]["code"] == "unreadable" and "LOG.jsonl" in out["error"]["message"]
    assert (vault_path / "LOG.jsonl").is_dir()


def test_stdin_text(cli, vault_path):
    out = cli.json("append", "-", input="多行\n文本\n")
    assert log_lines(vault_path)[-1]["text"] == "多行\n文本"
    assert out["status"] == "stored"


tiers = st.sampled_from(record.TIERS)
names = st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True)


unit = st.none() | st.floats(0, 1)


@pytest.mark.long
@given(
    text=st.text(min_size=1, max_size=50),
    domain=names,
    tier=tiers,
    tags=st.lists(names, max_size=3),
    key=st.none() | names,
    corrects=st.lists(st.from_regex(r"[0-9A-Z]{26}", fullmatch=True), max_size=2),
    optional=st.tuples(*[st.none() | names] * 6),
    importance=unit,
    confidence=unit,
    flags=st.tuples(st.booleans(), st.booleans(), st.booleans()),
)
def test_record_line_round_trip(text, domain, tier, tags, key, corrects, optional, importance, confidence, flags):
    # every field set or not, so a field read into another one's place shows
    project, ref, expires, evidence, source, session = optional
    pending, inferred, state = flags
    rec = record.Record(
        id=record.new_id(1e9),
        ts="2026-11-29T18:55:30Z",
        text=text,
        domain=domain,
        tier=tier,
        tags=tuple(tags),
        key=key,
        corrects=tuple(corrects),
        kind="correction" if corrects else "note",
        extra={"x": [1, "二"]},
        project=project,
        ref=ref,
        expires=expires,
        evidence=evidence,
        source=source,
        session=session,
        importance=importance,
        confidence=confidence,
        pending=pending and tier != "redline",
        basis="inferred" if inferred else None,
        state=state,
    )
    back = record.parse_line(rec.to_line(), 7)
    assert back == rec._replace(line=7) and back.extra == rec.extra


def test_session_is_a_record_field(cli, vault_path):
    out = cli.json("append", "a turn of a conversation", "--session", "conv-7")
    assert out["record"]["session"] == "conv-7"
    assert log_lines(vault_path)[-1]["session"] == "conv-7"
    assert cli.json("get", out["id"])["record"]["session"] == "conv-7"
    plain = cli.json("append", "a note without one")
    assert plain["record"]["session"] is None and "session" not in log_lines(vault_path)[-1]


def test_an_importance_given_to_a_duplicate_is_not_dropped_silently(cli, vault_path):
    first = cli("append", "deploys go through the staging cluster").stdout.strip()
    again = cli("append", "Deploys go through the staging cluster.", "--importance", "0.9")
    assert again.stdout.strip() == first and "--importance 0.9 not applied" in again.stderr
    assert "not applied" not in cli("append", "deploys go through the staging cluster").stderr


def _outcome(load, raw: bytes):
    try:
        return "ok", load(raw)
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__, str(exc)


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@pytest.mark.long
@given(
    obj=st.dictionaries(st.text(), _values, max_size=4),
    ascii_only=st.booleans(),
    wrap=st.sampled_from(["", " ", "\ufeff", "utf-16", "utf-32", "cut", "junk", "[]"]),
)
def test_a_line_is_read_as_json_reads_it(obj, ascii_only, wrap):
    # log lines skip json.loads' own checks on the usual path: same objects, same errors
    line = json.dumps(obj, ensure_ascii=ascii_only)
    raw = {
        "": line.encode(),
        " ": f" {line} ".encode(),
        "\ufeff": ("\ufeff" + line).encode(),
        "utf-16": line.encode("utf-16"),
        "utf-32": line.encode("utf-32-le"),
        "cut": line.encode()[:-1],
        "junk": line.encode() + b"}",
        "[]": b"[" + line.encode() + b"]",
    }[wrap]
    assert _outcome(record._load, raw) == _outcome(json.loads, raw)
    bad_utf8 = raw[:1] + b"\xff" + raw[1:]
    assert _outcome(record._load, bad_utf8) == _outcome(json.loads, bad_utf8)
