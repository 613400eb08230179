"""Conflicts on keyed facts (issue 14, item 1): when time cannot order two values of a key, both
stay current, marked; the agent is asked to settle it with the user; a resolution is a record."""

from __future__ import annotations

import json

import pytest

from optmem import view
from optmem.record import Tier


def at(monkeypatch, when: str) -> None:
    monkeypatch.setenv("OPTMEM_NOW", when)


def quiet(vault_path) -> None:
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")


def test_the_policy_time_orders_values_unless_it_cannot():
    day = 86400.0
    a = view.Member(1, "01A", 0.0, Tier.NORMAL, fp="a")
    b = view.Member(2, "01B", 0.5 * day, Tier.NORMAL, fp="b")
    c = view.Member(3, "01C", 30 * day, Tier.NORMAL, fp="c")
    assert view.key_winner([a, b]) == view.Winner(b)  # by default the newer wins
    assert view.key_winner([a, b], day) == view.Conflict((a, b))  # same day, with a window
    assert view.key_winner([a, b._replace(change=1)], day) == view.Winner(b._replace(change=1))  # "now"
    assert view.key_winner([a, c], day) == view.Winner(c)  # a month apart
    assert view.key_winner([a, b._replace(fp="a")], day) == view.Winner(b._replace(fp="a"))  # agreement
    fork1, fork2 = (
        view.Member(4, "01D", 0.0, Tier.NORMAL, fp="x", corrects=("T",)),
        view.Member(5, "01E", 9 * day, Tier.NORMAL, fp="y", corrects=("T",)),
    )
    assert isinstance(view.key_winner([fork1, fork2]), view.Conflict)  # two clones corrected T
    assert view.key_winner([a, b._replace(out=1)]) == view.Winner(a)  # corrected: out of the running
    assert view.key_winner([a, b._replace(guess=1)]) == view.Winner(a)  # a guess waits


def window(vault_path, days: float = 1) -> None:
    """The article's rule, opted into: values of a key written within `days` are put to the user."""
    (vault_path / "optmem.toml").write_text(
        f'[lifecycle]\nauto_sweep = "off"\n[consolidation]\nconflict_window_days = {days}\n', "utf-8"
    )


def test_a_correction_naming_a_prefix_several_values_share_replaces_none_and_doctor_says_so(cli, vault, vault_path):
    """A reference names a record only when it names one: a correction whose `corrects` holds a
    part that two values of its key share (ids made in one second share their first 8 characters)
    replaces neither — the two stay in conflict, and the correction with them — and `doctor` says
    which reference names none (`ambiguous_ref`), as it does for any reference."""
    quiet(vault_path)
    lines = [  # two clones wrote the key without seeing each other's value; a third line corrects "01KAB7Q2"
        {"id": "01KAB7Q2AAAAAAAAAAAAAAAAAA", "ts": "2026-11-02T09:00:00Z", "text": "db host is alpha", "after": []},
        {"id": "01KAB7Q2BBBBBBBBBBBBBBBBBB", "ts": "2026-11-02T09:00:00Z", "text": "db host is beta", "after": []},
        {
            "id": "01KAB9ZZCCCCCCCCCCCCCCCCCC",
            "ts": "2026-11-03T09:00:00Z",
            "text": "db host is gamma",
            "kind": "correction",
            "corrects": ["01KAB7Q2"],
            "after": [],
        },
    ]
    with (vault_path / "LOG.jsonl").open("a", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps({"v": 1, "domain": "default", "key": "db.host"} | line) + "\n")
    [conflict] = cli.json("conflicts")["conflicts"]
    assert sorted(v["text"] for v in conflict["values"]) == ["db host is alpha", "db host is beta", "db host is gamma"]
    assert [h["status"] for h in cli.json("history", "--key", "db.host")["versions"]] == ["current"] * 3
    problems = [p for p in cli.json("doctor", code=None)["problems"] if p["code"] == "ambiguous_ref"]
    assert [p["id"] for p in problems] == ["01KAB9ZZCCCCCCCCCCCCCCCCCC"] and "01KAB7Q2" in problems[0]["message"]
    # the unit: the policy asks which members a reference names among the key's values
    a, b, c = (
        view.Member(1, "01KAB7Q2AAAA", 0.0, Tier.NORMAL, fp="a", after=()),
        view.Member(2, "01KAB7Q2BBBB", 0.0, Tier.NORMAL, fp="b", after=()),
        view.Member(3, "01KAB9ZZCCCC", 9.0, Tier.NORMAL, fp="c", corrects=("01KAB7Q2",), after=()),
    )
    assert view.key_winner([a, b, c]) == view.Conflict((a, b, c))
    named = c._replace(corrects=("01KAB7Q2AAAA",))  # the whole id: it replaces that one value
    assert view.key_winner([a, b, named]) == view.Conflict((b, named))


def test_a_prefix_another_record_of_the_vault_shares_replaces_nothing_as_doctor_says(cli, vault, vault_path):
    """Which record a reference names is decided once, among every id of the vault (`record.Ids`,
    `ingest.matching_ids`), by doctor and by the index alike: a correction naming a part that a
    value of its key shares with a record of no key (a note on lunch) names neither. It replaced
    the value in history and search while doctor said it names none."""
    quiet(vault_path)
    lines = [
        {
            "id": "01KAB7Q2AAAAAAAAAAAAAAAAAA",
            "ts": "2026-11-02T09:00:00Z",
            "text": "db host is alpha",
            "key": "db.host",
            "after": [],
        },
        {"id": "01KAB7Q2BBBBBBBBBBBBBBBBBB", "ts": "2026-11-02T09:00:00Z", "text": "lunch is at noon"},
        {
            "id": "01KAB9ZZCCCCCCCCCCCCCCCCCC",
            "ts": "2026-11-03T09:00:00Z",
            "text": "db host is gamma",
            "key": "db.host",
            "kind": "correction",
            "corrects": ["01KAB7Q2"],
            "after": [],
        },
    ]
    with (vault_path / "LOG.jsonl").open("a", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps({"v": 1, "domain": "default"} | line) + "\n")
    problems = [p for p in cli.json("doctor", code=None)["problems"] if p["code"] == "ambiguous_ref"]
    assert [p["id"] for p in problems] == ["01KAB9ZZCCCCCCCCCCCCCCCCCC"]
    versions = cli.json("history", "--key", "db.host")["versions"]
    assert [(v["text"], v["status"], v["conflict"]) for v in versions] == [
        ("db host is alpha", "current", True),
        ("db host is gamma", "current", True),
    ]
    assert "SUPERSEDED" not in cli("search", "db host").stdout
    assert cli.json("get", "01KAB7Q2AAAAAAAAAAAAAAAAAA")["record"]["status"] == "current"
    # the whole id names the one value: it is replaced
    with (vault_path / "LOG.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(
            json.dumps(
                {
                    "v": 1,
                    "domain": "default",
                    "key": "db.host",
                    "id": "01KAB9ZZDDDDDDDDDDDDDDDDDD",
                    "ts": "2026-11-04T09:00:00Z",
                    "text": "db host is delta",
                    "kind": "correction",
                    "corrects": ["01KAB7Q2AAAAAAAAAAAAAAAAAA"],
                }
            )
            + "\n"
        )
    assert cli.json("get", "01KAB7Q2AAAAAAAAAAAAAAAAAA")["record"]["status"] == "superseded"
    # a record that shares the part, indexed after the correction (a sync brings it): names none now
    port = {"v": 1, "domain": "default", "key": "db.port", "after": []}
    with (vault_path / "LOG.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(
            json.dumps(
                port | {"id": "01KAC1X9AAAAAAAAAAAAAAAAAA", "ts": "2026-11-05T09:00:00Z", "text": "db port is 5432"}
            )
            + "\n"
        )
        fh.write(
            json.dumps(
                port
                | {"id": "01KAC2ZZEEEEEEEEEEEEEEEEEE", "ts": "2026-11-06T09:00:00Z", "text": "db port is 6432"}
                | {"kind": "correction", "corrects": ["01KAC1X9"]}
            )
            + "\n"
        )
    assert [v["status"] for v in cli.json("history", "--key", "db.port")["versions"]] == ["superseded", "current"]
    assert not [p for p in cli.json("doctor", code=None)["problems"] if "01KAC1X9" in p["message"]]
    with (vault_path / "LOG.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(
            json.dumps({"v": 1, "domain": "default", "id": "01KAC1X9BBBBBBBBBBBBBBBBBB", "text": "lunch at one"}) + "\n"
        )
    versions = cli.json("history", "--key", "db.port")["versions"]
    assert [(v["status"], v["conflict"]) for v in versions] == [("current", True), ("current", True)]
    assert [p["id"] for p in cli.json("doctor", code=None)["problems"] if "01KAC1X9" in p["message"]] == [
        "01KAC2ZZEEEEEEEEEEEEEEEEEE"
    ]


def test_windows_or_mac_on_the_same_day_is_asked_and_resolved(cli, vault, vault_path, monkeypatch):
    window(vault_path)
    at(monkeypatch, "2026-05-10T09:00:00Z")
    win = cli.json("append", "用户喜欢用 Windows", "--key", "user.os")["id"]
    at(monkeypatch, "2026-05-10T15:00:00Z")
    mac = cli.json("append", "用户喜欢用 Mac", "--key", "user.os")["id"]
    at(monkeypatch, "2026-05-11T08:00:00Z")
    hits = cli.json("search", "用户喜欢用")["hits"]
    assert {h["id"]: (h["status"], h.get("conflict")) for h in hits} == {win: ("current", True), mac: ("current", True)}
    assert "[CONFLICT]" in cli("search", "用户喜欢用").stdout
    assert cli.json("get", win)["record"]["conflict"] is True
    history = cli.json("history", "--key", "user.os")["versions"]
    assert [(v["id"], v["status"], v["conflict"]) for v in history] == [(win, "current", True), (mac, "current", True)]
    listed = cli.json("conflicts")["conflicts"]
    assert [(c["key"], [v["id"] for v in c["values"]]) for c in listed] == [("user.os", [win, mac])]
    ctx = cli.json("context")["text"]
    assert "which is right now? Ask the user" in ctx and "Windows" in ctx and "Mac" in ctx
    before = (vault_path / "LOG.jsonl").read_bytes()
    done = cli.json("resolve", "user.os", "--keep", mac[-8:])
    assert done["kept"] == mac and sorted(done["superseded"]) == sorted([win, mac])
    assert (vault_path / "LOG.jsonl").read_bytes().startswith(before)  # a new record, never a rewrite
    assert cli.json("conflicts")["conflicts"] == []
    current = cli.json("search", "用户喜欢用", "--current")["hits"]
    assert [(h["id"], h["text"], h["kind"]) for h in current] == [(done["id"], "用户喜欢用 Mac", "resolution")]
    assert cli.json("get", win)["record"]["superseded_by"] == done["id"]
    assert "Ask the user" not in cli.json("context")["text"]


def test_a_resolution_may_be_a_new_value(cli, vault, vault_path, monkeypatch):
    window(vault_path)
    at(monkeypatch, "2026-05-10T09:00:00Z")
    cli.json("append", "the standup is at 9:30", "--key", "team.standup")
    cli.json("append", "the standup is at 10:00", "--key", "team.standup")
    done = cli.json("resolve", "team.standup", "--value", "the standup is at 9:45 from June")
    assert done["kept"] is None
    assert [h["text"] for h in cli.json("search", "standup", "--current")["hits"]] == [
        "the standup is at 9:45 from June"
    ]


def test_hangzhou_then_shanghai_months_apart_is_an_update_not_a_conflict(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    at(monkeypatch, "2026-01-10T10:00:00Z")
    hz = cli.json("append", "小明住在杭州", "--key", "user.city")["id"]
    at(monkeypatch, "2026-05-01T10:00:00Z")
    sh = cli.json("append", "小明搬到上海了", "--key", "user.city")["id"]
    assert cli.json("conflicts")["conflicts"] == []
    history = cli.json("history", "--key", "user.city")["versions"]
    assert [(v["id"], v["status"]) for v in history] == [(hz, "superseded"), (sh, "current")]


def test_corrections_of_one_record_from_two_clones_are_a_conflict(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    at(monkeypatch, "2026-03-01T00:00:00Z")
    base = cli.json("append", "the release branch is rel-1", "--key", "release.branch")["id"]
    log = vault_path / "LOG.jsonl"
    with open(log, "a", encoding="utf-8") as fh:  # what git's union merge leaves: two corrections
        for day, text in (("2026-03-02", "the release branch is rel-2"), ("2026-03-09", "the release branch is rel-3")):
            fh.write(
                json.dumps(
                    {
                        "ts": f"{day}T00:00:00Z",
                        "domain": "default",
                        "kind": "correction",
                        "key": "release.branch",
                        "corrects": [base],
                        "text": text,
                    }
                )
                + "\n"
            )
    at(monkeypatch, "2026-03-10T00:00:00Z")
    [c] = cli.json("conflicts")["conflicts"]
    assert [v["text"] for v in c["values"]] == ["the release branch is rel-2", "the release branch is rel-3"]


def test_the_window_is_a_setting_and_changing_it_redecides_every_key(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    at(monkeypatch, "2026-05-10T09:00:00Z")
    cli.json("append", "deploys go out on Tuesday", "--key", "deploy.day")
    at(monkeypatch, "2026-05-12T09:00:00Z")
    cli.json("append", "deploys go out on Thursday", "--key", "deploy.day")
    assert cli.json("conflicts")["count"] == 0  # two days apart: time decides
    window(vault_path, 3)
    assert cli.json("conflicts")["count"] == 1  # the index was rebuilt with the new window


def test_resolve_refusals_name_what_to_do(cli, vault, vault_path, monkeypatch):
    window(vault_path)
    err = cli.json("resolve", "user.os", "--keep", "ABCDEF", code=1)["error"]
    assert err["code"] == "not_found" and "optmem conflicts" in err["message"]
    at(monkeypatch, "2026-05-10T09:00:00Z")
    a = cli.json("append", "editor is vim", "--key", "user.editor")["id"]
    cli.json("append", "editor is emacs", "--key", "user.editor")
    other = cli.json("append", "unrelated note")["id"]
    before = (vault_path / "LOG.jsonl").read_bytes()
    err = cli.json("resolve", "user.editor", code=2)["error"]
    assert "--keep ID" in err["message"] and "--value TEXT" in err["message"]
    err = cli.json("resolve", "user.editor", "--keep", other, code=1)["error"]  # not found: exit 1
    assert "not one of the values in conflict" in err["message"] and a[-8:] in err["message"]
    assert (vault_path / "LOG.jsonl").read_bytes() == before  # a refusal writes nothing


# -- updates without a key (issue 14, item 2) ---------------------------------------------------------
def test_what_reads_as_a_changed_value(cli):
    from optmem import compare
    from optmem.reading import cues

    cues = frozenset((*cues.UPDATE_CUES, *cues.UPDATE_CUES_CJK))
    assert compare.looks_like_update("后端端口是 8080", "后端端口改成 9090 了", cues)
    assert compare.looks_like_update("I have 3 plants", "I now have 5 plants", cues)
    assert compare.looks_like_update("小明住在杭州", "小明住在上海", cues)
    assert not compare.looks_like_update("Prefers Cython", "Prefers Python", cues)  # too short to tell
    assert not compare.looks_like_update(
        "We decided to use Postgres for billing", "We decided to use Redis for the session cache", cues
    )  # more than one change
    assert not compare.looks_like_update("备份在 3 点", "备份在 3 点", cues)  # the same
    # a new number for someone or something else named is no update: two things changed
    assert not compare.looks_like_update("Alice's phone number is 555-0101", "Bob's phone number is 555-0202", cues)
    assert not compare.looks_like_update("Staging listens on port 8080", "Production listens on port 9090", cues)
    assert compare.looks_like_update("The backend port is 8080", "Our backend port is 9090", cues)  # not names
    # a sentence-final particle (了, 啦, 呢 …) says how it is said, not what: 五 → 十 is the one change
    assert compare.looks_like_update("小红每天跑步五公里", "小红现在每天跑十公里了", cues)
    assert compare.looks_like_update("我有两只猫", "我现在有三只猫了", cues)
    # … but a word more beside a new number is another fact, not a new value of this one
    assert not compare.looks_like_update("The API timeout is 30 seconds", "The API retry timeout is 5 seconds", cues)
    assert not compare.looks_like_update(
        "The staging server has 16 GB of RAM", "The staging database server has 32 GB of RAM", cues
    )
    assert not compare.looks_like_update("I have 3 cats at home", "I have 2 black cats at home", cues)
    assert compare.looks_like_update("Alice lives in Paris", "Alice lives in Berlin", cues)  # a named value


@pytest.mark.long
def test_a_possible_update_is_reported_superseded_or_asked(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    at(monkeypatch, "2026-01-01T00:00:00Z")
    old = cli.json("append", "I have 3 plants on the balcony")["id"]
    at(monkeypatch, "2026-02-01T00:00:00Z")
    kept = cli.json("append", "I now have 5 plants on the balcony")
    assert kept["status"] == "stored" and [u["id"] for u in kept["possible_update"]] == [old]
    assert cli.json("get", old)["record"]["status"] == "current"  # the default keeps both
    assert "this may update" in cli("append", "I now have 6 plants on the balcony").stderr
    before = (vault_path / "LOG.jsonl").read_bytes()
    err = cli.json("append", "I now have 7 plants on the balcony", "--on-update", "ask", code=1)["error"]
    assert err["code"] == "possible_update" and err["updates"][0]["text"] == "I now have 6 plants on the balcony"
    assert (vault_path / "LOG.jsonl").read_bytes() == before
    done = cli.json("append", "I now have 7 plants on the balcony", "--on-update", "supersede")
    # it replaces every value the gate found, not only the newest: none of them stays current
    found = [u["id"] for u in err["updates"]]
    assert len(found) == 3 and set(done["record"]["corrects"]) == set(found)
    assert all(cli.json("get", rid)["record"]["status"] == "superseded" for rid in found)
    current = cli.json("search", "plants on the balcony", "--current")["hits"]
    assert [h["text"] for h in current] == ["I now have 7 plants on the balcony"]
    # … every value that says the same in other numbers — never another subject in the same shape:
    # staging's port is no value of production's (the gate does not guess it), and staging stays
    # when production's port changes again
    staging = cli.json("append", "the staging port is 8080")["id"]
    production = cli.json("append", "the production port is 9090")
    assert production["possible_update"] == []
    again = cli.json("append", "the production port is 9191", "--on-update", "supersede")
    assert again["record"]["corrects"] == [production["id"]]
    assert cli.json("get", staging)["record"]["status"] == "current"
    keyed = cli.json("append", "the backend port is 8080", "--key", "port")["id"]
    at(monkeypatch, "2026-03-01T00:00:00Z")
    assert cli.json("append", "the backend port is 9090", "--key", "port")["possible_update"] == []  # a key versions it
    assert cli.json("get", keyed)["record"]["status"] == "superseded"
    (vault_path / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n[dedup]\non_update = "ask"\n', "utf-8")
    assert cli.json("append", "I now have 8 plants on the balcony", code=1)["error"]["code"] == "possible_update"


@pytest.mark.parametrize(
    "old, others, new",
    [
        ("我有两只猫", ["邻居说她现在有三只兔子", "那只猫很可爱"], "我现在有三只猫"),
        (
            "我养了3盆绿萝",
            ["同事现在养了5盆多肉，我现在也想养", "绿萝要浇水 第1次", "绿萝要浇水 第2次", "绿萝要浇水 第3次"],
            "我现在养了5盆绿萝",
        ),
    ],
)
def test_a_possible_update_is_found_whatever_else_the_vault_holds(
    cli, vault, vault_path, monkeypatch, old, others, new
):
    """The gate looks for what a statement may update through its rarest terms — not the new
    value's own ("有三", "5") nor the words saying it changed ("现在", "now"), which the earlier
    statement cannot hold: records elsewhere that happen to hold them hide nothing."""
    quiet(vault_path)
    at(monkeypatch, "2026-03-01T10:00:00Z")
    first = cli.json("append", old, "--domain", "home")["id"]
    for text in others:
        cli.json("append", text, "--domain", "other")
    at(monkeypatch, "2026-04-05T10:00:00Z")
    assert [u["id"] for u in cli.json("append", new, "--domain", "home")["possible_update"]] == [first]


@pytest.mark.long
def test_a_near_duplicate_is_found_among_many_records_that_differ_only_in_a_number(cli, vault, vault_path):
    """The probe for what an update changes leaves numbers out; the one for near duplicates keeps
    them: forty daily counts hide neither the same count said again nor the record it repeats."""
    quiet(vault_path)
    ids = [cli.json("append", f"daily step count was {8100 + i} steps, logged by the watch")["id"] for i in range(40)]
    out = cli.json("append", "daily step count was 8135 steps, logged by my watch")
    assert out["status"] == "similar" and [s["id"] for s in out["similar"]] == [ids[35]]


def test_history_lists_a_possible_update_beside_the_value_it_may_update(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    at(monkeypatch, "2026-01-01T00:00:00Z")
    old = cli.json("append", "I have 3 plants on the balcony")["id"]
    at(monkeypatch, "2026-02-01T00:00:00Z")
    new = cli.json("append", "I now have 5 plants on the balcony")["id"]
    for start in (old, new):
        versions = cli.json("history", start)["versions"]
        assert [v["id"] for v in versions] == [old, new], start
    assert cli.json("history", new)["versions"][1]["may_update"] == old


def test_history_asks_the_guesses_of_all_its_versions_at_once(cli, vault, vault_path, monkeypatch):
    # each version's guesses (may_update, may_be_updated_by) are what `get` shows for it, read in
    # the two statements of `Index.guesses` for the whole chain — not two a version (N+1)
    from optmem import clock, index

    quiet(vault_path)
    ids = []
    for i, n in enumerate((3, 5, 7, 9)):
        at(monkeypatch, f"2026-0{i + 1}-01T00:00:00Z")
        ids.append(cli.json("append", f"I now have {n} plants on the balcony")["id"])
    versions = cli.json("history", ids[-1])["versions"]
    assert [v["id"] for v in versions] == ids
    guessed = [{k: v.get(k) or None for k in ("may_update", "may_be_updated_by")} for v in versions]
    assert guessed == [
        {k: cli.json("get", rid)["record"].get(k) or None for k in ("may_update", "may_be_updated_by")} for rid in ids
    ]
    assert any(g["may_update"] for g in guessed) and any(g["may_be_updated_by"] for g in guessed)
    now = clock.now().timestamp()
    with index.open_index(vault) as idx:
        rows = [idx.by_id(rid) for rid in ids]
        statements: list[str] = []
        idx.conn.set_trace_callback(statements.append)
        try:
            together = idx.guesses_of(rows, now)
        finally:
            idx.conn.set_trace_callback(None)
        assert len(statements) == 2
        assert together == {r.n: idx.guesses({r.id: r.upd}, now).get(r.id, {}) for r in rows}


# -- fact vs inference; habit vs state (issue 14, item 3) ---------------------------------------------
def test_a_late_night_does_not_replace_a_bedtime(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    at(monkeypatch, "2026-03-01T08:00:00Z")
    habit = cli.json("append", "usually sleeps at ten", "--key", "user.sleep")["id"]
    state = cli.json("append", "worked until 3 am last night", "--key", "user.sleep", "--state")
    assert state["record"]["state"] is True and state["record"]["expires"] == "2026-03-03T08:00:00Z"
    assert cli.json("conflicts")["count"] == 0  # a state never conflicts with a habit
    assert cli.json("get", habit)["record"]["status"] == "current"  # nor replaces it
    assert "STATE" in cli("search", "worked until 3 am").stdout
    at(monkeypatch, "2026-03-05T08:00:00Z")
    assert cli.json("get", state["id"])["record"]["status"] == "expired"  # a state passes
    assert cli.json("get", habit)["record"]["status"] == "current"


def test_an_inference_never_overrules_what_was_said(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    at(monkeypatch, "2026-03-01T08:00:00Z")
    said = cli.json("append", "likes to hike on weekends", "--key", "user.outdoors")["id"]
    at(monkeypatch, "2026-04-01T08:00:00Z")  # a month later: time alone would let it win
    guess = cli.json("append", "is an outdoors person", "--key", "user.outdoors", "--basis", "inferred")
    assert guess["record"]["basis"] == "inferred"
    assert {cli.json("get", i)["record"]["status"] for i in (said, guess["id"])} == {"current"}
    [c] = cli.json("conflicts")["conflicts"]  # kept apart, and the user is asked
    assert {v["id"] for v in c["values"]} == {said, guess["id"]}
    assert "(CONFLICT; inferred)" in cli.json("context")["text"]  # (in conflict, as search marks it)
    assert "INFERRED" in cli("search", "outdoors person").stdout
    at(monkeypatch, "2026-05-01T08:00:00Z")
    newer = cli.json("append", "now likes climbing on weekends", "--key", "user.outdoors")["id"]
    assert cli.json("get", said)["record"]["status"] == "superseded"  # a statement still updates one
    assert cli.json("get", newer)["record"]["status"] == "current"


def test_stated_goes_first_on_a_near_tie(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    at(monkeypatch, "2026-03-01T08:00:00Z")
    inferred = cli.json("append", "the team deploys on Fridays", "--basis", "inferred")["id"]
    stated = cli.json("append", "the crew deploys on Fridays", "--on-similar", "store")["id"]
    hits = cli.json("search", "deploys Fridays", "--explain")["hits"]  # equal relevance
    assert [h["id"] for h in hits][:2] == [stated, inferred]
    assert hits[1]["explain"]["tier_factor"] == 0.98


# -- merging fragments (issue 14, item 4) -------------------------------------------------------------
def test_fragments_merge_into_one_record_and_no_city_is_lost(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    at(monkeypatch, "2026-05-01T00:00:00Z")
    # linked by words of their texts — trip (first, last), Kyoto (last two) — not the key trip.when
    trip = cli.json("append", "trip to Japan next month", "--tag", "japan", "--key", "trip.when")["id"]
    cities = cli.json("append", "plans to visit Tokyo, Osaka and Kyoto", "--tag", "japan")["id"]
    inn = cli.json("append", "booked a ryokan in Kyoto for the trip", "--tag", "japan")["id"]
    cli.json("append", "the standup moved to 9:45")
    [suggestion] = cli.json("merge", "--suggest")["suggestions"]
    assert suggestion["ids"] == [trip, cities, inn] and "tag japan" in suggestion["reason"]
    before = (vault_path / "LOG.jsonl").read_bytes()
    merged = cli.json("merge", trip, cities, inn, "--topic", "Japan trip", "--fact", "month=June")
    assert (vault_path / "LOG.jsonl").read_bytes().startswith(before)
    record = cli.json("get", merged["id"])["record"]
    assert record["kind"] == "merged" and record["topic"] == "Japan trip"
    assert record["facts"] == {"trip.when": "trip to Japan next month", "month": "June"}
    assert record["details"] == [
        "trip to Japan next month",
        "plans to visit Tokyo, Osaka and Kyoto",
        "booked a ryokan in Kyoto for the trip",
    ]
    for city in ("Tokyo", "Osaka", "Kyoto"):  # structured fields only grow: every detail is found
        assert cli.json("search", city, "--current")["hits"][0]["id"] == merged["id"]
    assert {cli.json("get", i)["record"]["superseded_by"] for i in (trip, cities, inn)} == {merged["id"]}
    assert {v["id"] for v in cli.json("history", merged["id"])["versions"]} == {trip, cities, inn, merged["id"]}
    assert cli.json("merge", "--suggest")["suggestions"] == []


def test_a_newer_value_of_a_merged_key_marks_the_merged_fact_outdated_on_every_surface(
    cli, vault, vault_path, monkeypatch
):
    """A merged record keeps its fragments' keyed values as `facts`; a newer value of one of those
    keys, written after the merge, makes that fact outdated (the other facts stay current): `get`,
    `search` (JSON and human), `history --key` and `context` say which fact and what replaced it."""
    quiet(vault_path)
    at(monkeypatch, "2026-05-01T00:00:00Z")
    port = cli.json("append", "backend port is 8080", "--key", "backend.port")["id"]
    day = cli.json("append", "backend deploys on Fridays", "--key", "backend.deploy")["id"]
    merged = cli.json("merge", port, day, "--topic", "backend")["id"]
    assert "outdated_facts" not in cli.json("get", merged)["record"]  # nothing newer yet
    at(monkeypatch, "2026-05-02T00:00:00Z")
    newer = cli.json("append", "backend port is 9090", "--key", "backend.port")["id"]
    record = cli.json("get", merged)["record"]
    assert record["status"] == "current" and record["outdated_facts"] == {"backend.port": newer}
    assert f"FACT backend.port SUPERSEDED by {newer[-8:]}" in cli("get", merged).stdout
    hits = {h["id"]: h for h in cli.json("search", "backend port")["hits"]}
    assert hits[merged]["outdated_facts"] == {"backend.port": newer} and "outdated_facts" not in hits[newer]
    assert f"FACT backend.port SUPERSEDED by {newer[-8:]}" in cli("search", "backend port").stdout
    versions = [v["id"] for v in cli.json("history", "--key", "backend.port")["versions"]]
    assert versions == [port, merged, newer]  # the merged record held a value of the key
    said = cli.json("context")["text"]
    assert f"its backend.port is outdated: see id {newer[-8:]}" in said
    at(monkeypatch, "2026-05-03T00:00:00Z")
    cli.json("append", "backend deploys on Tuesdays", "--key", "backend.deploy", "--on-update", "keep")
    assert set(cli.json("get", merged)["record"]["outdated_facts"]) == {"backend.port", "backend.deploy"}
    # a merged record keyed by one of its own facts is one version of that key, listed once
    host = cli.json("append", "backend host is api.internal", "--key", "backend.host")["id"]
    keyed = cli.json("merge", newer, host, "--topic", "backend", "--key", "backend.port")["id"]
    assert [v["id"] for v in cli.json("history", "--key", "backend.port")["versions"]].count(keyed) == 1


def test_a_merged_fact_said_again_with_the_same_value_is_not_outdated(cli, vault, vault_path, monkeypatch):
    """A value of a merged key written after the merge that says the same thing again ("Backend
    port is 8080." after the merged "backend port is 8080") replaces nothing: the fact stays
    current; a different value still outdates it."""
    quiet(vault_path)
    at(monkeypatch, "2026-05-01T00:00:00Z")
    port = cli.json("append", "backend port is 8080", "--key", "backend.port")["id"]
    day = cli.json("append", "backend deploys on Fridays", "--key", "backend.deploy")["id"]
    merged = cli.json("merge", port, day, "--topic", "backend")["id"]
    at(monkeypatch, "2026-05-02T00:00:00Z")
    cli.json("append", "Backend port is 8080.", "--key", "backend.port")
    assert "outdated_facts" not in cli.json("get", merged)["record"]
    assert "outdated" not in cli.json("context")["text"]
    at(monkeypatch, "2026-05-03T00:00:00Z")
    newer = cli.json("append", "backend port is 9090", "--key", "backend.port")["id"]
    assert cli.json("get", merged)["record"]["outdated_facts"] == {"backend.port": newer}


def test_merge_refusals(cli, vault, vault_path, monkeypatch):
    quiet(vault_path)
    a = cli.json("append", "note one about the trip")["id"]
    b = cli.json("append", "note two about the trip", "--domain", "other")["id"]
    rule = cli.json("append", "never book without asking", "--redline", "--origin", "user")["id"]
    before = (vault_path / "LOG.jsonl").read_bytes()
    assert "at least two" in cli.json("merge", a, "--topic", "t", code=2)["error"]["message"]
    assert "--topic is required" in cli.json("merge", a, b, code=2)["error"]["message"]
    # well-formed, but these records cannot be merged: refusals (exit 1), not usage errors
    assert "different domains" in cli.json("merge", a, b, "--topic", "t", code=1)["error"]["message"]
    assert "redline" in cli.json("merge", a, rule, "--topic", "t", code=1)["error"]["message"]
    assert "field=value" in cli.json("merge", a, b, "--topic", "t", "--fact", "oops", code=2)["error"]["message"]
    assert (vault_path / "LOG.jsonl").read_bytes() == before


@pytest.mark.long
def test_merge_never_makes_an_inference_a_fact(cli, vault, vault_path):
    """An inference merged with stated records would read as a fact on every surface (the merged
    record carries no basis): merge refuses the mix, and --suggest never proposes it; inferences
    merged with each other stay one inference, marked wherever a person reads it."""
    quiet(vault_path)
    a = cli.json("append", "日本旅行：六月出发", "--tag", "trip")["id"]
    b = cli.json("append", "日本旅行：住在京都", "--tag", "trip")["id"]
    c = cli.json("append", "日本旅行：京都的酒店订好了", "--tag", "trip")["id"]
    i = cli.json("append", "日本旅行：小明大概喜欢京都的温泉", "--tag", "trip", "--basis", "inferred")["id"]
    before = (vault_path / "LOG.jsonl").read_bytes()
    err = cli.json("merge", a, b, i, "--topic", "Japan trip", code=1)["error"]
    assert err["code"] == "not_mergeable" and i in err["message"] and "inferred" in err["message"]
    assert (vault_path / "LOG.jsonl").read_bytes() == before
    groups = [s["ids"] for s in cli.json("merge", "--suggest")["suggestions"]]
    assert groups == [[a, b, c]]  # the stated three, without the inference
    j = cli.json("append", "日本旅行：小明大概想去奈良", "--basis", "inferred")["id"]
    merged = cli.json("merge", i, j, "--topic", "Japan trip")["id"]
    assert cli.json("get", merged)["record"]["basis"] == "inferred"
    assert "[INFERRED]" in next(ln for ln in cli("search", "奈良").stdout.splitlines() if merged[-8:] in ln)
    assert "inferred" in next(ln for ln in cli("context").stdout.splitlines() if merged[-8:] in ln)


# -- found by an adversarial run ----------------------------------------------------------------------
def test_a_same_day_value_that_says_it_changed_is_a_new_version(cli, vault, vault_path):
    quiet(vault_path)
    hz = cli.json("append", "小明住在杭州", "--key", "user.city")["id"]
    sh = cli.json("append", "小明搬到上海了", "--key", "user.city")["id"]  # the same second
    port = cli.json("append", "the backend port is 8080", "--key", "backend.port")["id"]
    cli.json("append", "the backend port is now 9090", "--key", "backend.port")
    assert cli.json("conflicts")["count"] == 0
    assert cli.json("get", hz)["record"]["superseded_by"] == sh
    assert cli.json("get", port)["record"]["status"] == "superseded"


def test_guesses_states_and_cold_values_are_never_put_to_the_user_wrongly(cli, vault, vault_path, monkeypatch):
    window(vault_path)
    at(monkeypatch, "2026-05-10T09:00:00Z")
    cli.json("append", "user drinks coffee", "--key", "drink", "--agent")
    cli.json("append", "user drinks tea", "--key", "drink", "--agent")
    cli.json("append", "worked until 3 am last night", "--key", "sleep", "--state")
    cli.json("append", "took a nap at noon today", "--key", "sleep", "--state")
    habit = cli.json("append", "usually sleeps at ten", "--key", "sleep")["id"]
    other = cli.json("append", "usually sleeps at eleven", "--key", "sleep")["id"]
    [c] = cli.json("conflicts")["conflicts"]  # only the two habits: guesses and states are not asked
    assert {v["id"] for v in c["values"]} == {habit, other}
    at(monkeypatch, "2026-12-10T09:00:00Z")
    cli.json("sweep")
    assert {cli.json("get", i)["record"]["status"] for i in (habit, other)} == {"current"}  # waits, warm
    done = cli.json("resolve", "sleep", "--keep", other)
    assert sorted(done["superseded"]) == sorted([habit, other])  # the states were not swept in


def test_resolve_finds_its_conflict_by_the_kept_value_and_never_crashes_on_ambiguity(cli, vault, vault_path):
    window(vault_path)
    cli.json("append", "端口是 8080", "--key", "port", "-d", "api")
    keep = cli.json("append", "端口是 7070", "--key", "port", "-d", "api")["id"]
    cli.json("append", "端口是 1111", "--key", "port", "-d", "api", "-p", "p1")
    cli.json("append", "端口是 2222", "--key", "port", "-d", "api", "-p", "p1")
    out = cli("resolve", "port", "--value", "端口是 9999")
    assert out.exit_code == 1 and "Traceback" not in out.stderr and "candidate domain api" in out.stderr
    assert cli.json("resolve", "port", "--keep", keep)["kept"] == keep  # its id names the conflict
    assert [c["project"] for c in cli.json("conflicts")["conflicts"]] == ["p1"]


def test_merge_keeps_the_scanner_the_bounds_and_every_detail(cli, vault, vault_path):
    quiet(vault_path)
    a = cli.json("append", "going to Japan next month")["id"]
    b = cli.json("append", "plans to visit Tokyo, Osaka and Kyoto")["id"]
    secret = cli.json("append", "deploy key ghp_abcdefghijklmnopqrstuvwxyz0123456789 for the repo", "--allow-unsafe")[
        "id"
    ]
    before = (vault_path / "LOG.jsonl").read_bytes()
    assert cli.json("merge", a, b, secret, "--topic", "trip", code=1)["error"]["code"] == "unsafe_content"
    assert (
        cli.json("merge", a, b, "--topic", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", code=1)["error"]["code"]
        == "unsafe_content"
    )
    assert "two different records" in cli.json("merge", a, a[-6:], "--topic", "x", code=2)["error"]["message"]
    assert (vault_path / "LOG.jsonl").read_bytes() == before
    merged = cli.json("merge", a, b, "--topic", "Japan trip", "--text", "Japan trip notes")["id"]
    assert cli.json("search", "Kyoto", "--current")["hits"][0]["id"] == merged  # found with --text too


def test_merge_refuses_values_in_conflict_and_keeps_both_values_of_a_key(cli, vault, vault_path, monkeypatch):
    window(vault_path)
    x = cli.json("append", "OS is Windows", "--key", "os")["id"]
    y = cli.json("append", "OS is Mac", "--key", "os")["id"]
    err = cli.json("merge", x, y, "--topic", "os", code=1)["error"]
    assert err["code"] == "not_mergeable" and "in conflict" in err["message"] and "optmem resolve os" in err["message"]
    at(monkeypatch, "2026-01-01T00:00:00Z")
    p = cli.json("append", "editor: vim", "--key", "ed", "-d", "d2")["id"]
    q = cli.json("append", "editor: vim with plugins", "--key", "ed2", "-d", "d2")["id"]
    r = cli.json("append", "editor config lives in dotfiles", "-d", "d2")["id"]
    rec = cli.json("merge", p, q, r, "--topic", "editor")["record"]
    assert rec["facts"] == {"ed": "editor: vim", "ed2": "editor: vim with plugins"}


def test_an_inference_never_supersedes_through_a_possible_update(cli, vault, vault_path):
    quiet(vault_path)
    said = cli.json("append", "user lives in Hangzhou city")["id"]
    out = cli.json("append", "user lives in Shanghai city", "--basis", "inferred", "--on-update", "supersede")
    assert out["record"]["corrects"] == [] and cli.json("get", said)["record"]["status"] == "current"


def test_state_ttl_and_windows_are_checked_when_the_settings_are_read(cli, vault, vault_path):
    (vault_path / "optmem.toml").write_text('[consolidation]\nstate_ttl = "abc"\n', "utf-8")
    err = cli.json("stats", code=2)["error"]
    assert err["key"] == "consolidation.state_ttl" and "a duration" in err["message"]
    (vault_path / "optmem.toml").write_text("[consolidation]\nconflict_window_days = nan\n", "utf-8")
    assert cli.json("stats", code=2)["error"]["key"] == "consolidation.conflict_window_days"


@pytest.mark.long
def test_forgetting_the_newest_version_gives_the_fact_back(cli, vault, vault_path):
    quiet(vault_path)
    a = cli.json("append", "the cache is redis 6")["id"]
    b = cli.json("correct", a, "the cache is redis 7")["id"]
    c = cli.json("correct", b, "the cache is valkey 8")["id"]
    cli.json("forget", b, "--reason", "a middle version, mistyped")
    assert cli.json("get", a)["record"]["status"] == "superseded"  # the chain still ends at c
    cli.json("forget", c, "--reason", "wrong: we never moved")
    assert cli.json("get", a)["record"]["status"] == "superseded"  # b was forgotten too
    port = cli.json("append", "the api listens on 8080")["id"]
    wrong = cli.json("correct", port, "the api listens on 8081")["id"]
    cli.json("forget", wrong, "--reason", "the correction was wrong")
    assert cli.json("get", port)["record"]["status"] == "current"
    x = cli.json("append", "plans to visit Tokyo, Osaka and Kyoto")["id"]
    y = cli.json("append", "going to Japan next month")["id"]
    merged = cli.json("merge", x, y, "--topic", "Japan")["id"]
    cli.json("forget", merged, "--reason", "unmerge")  # the fragments are current again
    assert {cli.json("get", i)["record"]["status"] for i in (x, y)} == {"current"}
    cli.json("reindex")  # and the same after a rebuild, from the log alone
    assert {cli.json("get", i)["record"]["status"] for i in (x, y)} == {"current"}


def test_a_forgotten_newest_keyed_value_is_superseded_by_nothing_and_says_what_forgot_it(cli, vault, vault_path):
    """Forgetting a key's newest value gives the older one back — which replaces nothing newer:
    the forgotten value names its tombstone on every surface, and no successor (newcomer finding:
    `history` said the older value had forgotten it)."""
    quiet(vault_path)
    old = cli.json("append", "后端端口是 8080", "--key", "backend.port")["id"]
    new = cli.json("append", "后端端口改成 9090 了", "--key", "backend.port")["id"]
    tomb = cli.json("forget", new, "--reason", "typo")["tombstone"]
    for got in (
        cli.json("get", new)["record"],
        next(v for v in cli.json("history", "--key", "backend.port")["versions"] if v["id"] == new),
        next(h for h in cli.json("search", "后端端口", "--include-forgotten")["hits"] if h["id"] == new),
    ):
        assert got["status"] == "forgotten" and got["superseded_by"] is None
    versions = cli.json("history", "--key", "backend.port")["versions"]
    assert [(v["id"], v.get("forgotten_by")) for v in versions] == [(old, None), (new, tomb)]
    assert f"[FORGOTTEN by {tomb[-8:]}: typo]" in cli("history", "--key", "backend.port").stdout
    assert cli.json("get", old)["record"]["status"] == "current"


@pytest.mark.long
def test_concurrent_resolutions_settle_a_conflict_once(vault, vault_path):
    import subprocess

    from conftest import HANG, PATIENT, optmem_cmd, run_optmem

    window(vault_path)
    run_optmem("append", "the shell is zsh", "--key", "shell")
    run_optmem("append", "the shell is fish", "--key", "shell")
    procs = [
        subprocess.Popen(
            # they take turns at the vault lock: a turn may come late on a busy machine
            [*optmem_cmd(), "--set", PATIENT, "resolve", "shell", "--value", f"the shell is bash {i}", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    codes = sorted(p.wait(timeout=HANG) for p in procs)
    assert codes == [0, 1, 1, 1]  # one settles it; the others find no open conflict
    assert json.loads(run_optmem("conflicts", "--json").stdout)["count"] == 0


def test_a_hot_entry_stating_a_keyed_value_that_a_newer_one_replaced_is_shown_as_maybe_outdated(
    cli, vault, vault_path, monkeypatch
):
    """Hot memory is what an agent reads first: an entry that states the value a newer value of
    a key replaced ("…在杭州…" after user.city became 上海; "port 8080" after backend.port became
    9090) is shown in `context` with what the newer note says — as a guess ("may be outdated"),
    never as a fact. Entries about the same subject that state no replaced value, that state the
    new one, or that were written after the update are shown as they are."""
    quiet(vault_path)
    at(monkeypatch, "2026-05-01T00:00:00Z")
    cli.json("add", "--target", "user", "用户的名字叫小明，在杭州做后端开发。")
    cli.json("add", "Backend runs on port 8080 in dev; the frontend proxies /api to it.")
    cli.json("add", "Backend logs go to Loki, kept 14 days.")
    cli.json("append", "小明住在杭州。", "--key", "user.city")
    cli.json("append", "backend port is 8080", "--key", "backend.port")
    cli.json("add", "The office wifi is called AcmeGuest.")
    cli.json("append", "office wifi is AcmeGuest", "--key", "office.wifi")
    said = cli.json("context")["text"]
    assert "may be outdated" not in said  # nothing newer yet
    at(monkeypatch, "2026-06-01T00:00:00Z")  # a web page's words outdate nothing a person kept
    cli.json("append", "office wifi is AcmeFiveG", "--key", "office.wifi", "--origin", "tool")
    at(monkeypatch, "2026-06-15T00:00:00Z")
    city = cli.json("append", "小明搬到上海了。", "--key", "user.city")["id"]
    port = cli.json("append", "backend port is 9090", "--key", "backend.port")["id"]
    at(monkeypatch, "2026-06-16T00:00:00Z")
    cli.json("add", "Staging still answers on 8080 until the DNS moves.")  # written after the update
    lines = {ln for ln in cli.json("context")["text"].splitlines() if ln.startswith("- ")}
    zh = next(ln for ln in lines if "杭州做后端开发" in ln)
    assert "may be outdated" in zh and "小明搬到上海了" in zh and city[-8:] in zh and "2026-06-15" in zh
    en = next(ln for ln in lines if "port 8080 in dev" in ln)
    assert "may be outdated" in en and "backend port is 9090" in en and port[-8:] in en
    for kept in ("Loki", "Staging still answers", "AcmeGuest"):
        assert "may be outdated" not in next(ln for ln in lines if kept in ln)
    # another project's or domain's key outdates nothing here; a number shared with an unrelated
    # fact of the scope neither ("VLAN 20" after office.floor 20 → 3: not its subject)
    for args in (["--project", "beta"], ["--domain", "personal"]):
        said = cli.json("context", *args)["text"]
        assert ("backend port is 9090" in said) is (args[0] == "--project"), args
    cli.json("append", "backend port is 8080", "--key", "backend.port", "--project", "alpha")
    at(monkeypatch, "2026-06-17T00:00:00Z")
    cli.json("add", "--project", "beta", "Beta's backend port is 8080 too.")
    cli.json("add", "Guests use wifi VLAN 20 in the office.")
    cli.json("append", "the office is on floor 20", "--key", "office.floor")
    at(monkeypatch, "2026-06-18T00:00:00Z")
    cli.json("append", "backend port is 7070", "--key", "backend.port", "--project", "alpha")
    cli.json("append", "the office is on floor 3", "--key", "office.floor")
    lines = {ln for ln in cli.json("context", "--project", "beta")["text"].splitlines() if ln.startswith("- ")}
    assert "may be outdated" not in next(ln for ln in lines if "Beta's backend" in ln)
    assert "may be outdated" not in next(ln for ln in lines if "VLAN 20" in ln)
    # the entry brought up to date is shown as it is
    cli.json("replace", "port 8080 in dev", "port 9090 in dev")
    lines = {ln for ln in cli.json("context")["text"].splitlines() if ln.startswith("- ")}
    assert "may be outdated" not in next(ln for ln in lines if "port 9090 in dev" in ln)


def test_one_key_with_two_values_in_two_domains_is_told_not_left_silent(cli, vault, vault_path):
    # tester 10, fix-m 3: one agent per domain — each keeps its own key, but the user hears of it
    quiet(vault_path)
    old = cli.json("append", "小明住在杭州", "--key", "user.city", "--domain", "hermes")["id"]
    cli.json("append", "小明搬到上海了", "--key", "user.city", "--domain", "code")
    cli.json("append", "the port is 8080", "--key", "svc.port", "--domain", "hermes")
    cli.json("append", "the port is 8080", "--key", "svc.port", "--domain", "code")  # agreement: nothing to say
    out = cli.json("conflicts")
    assert out["conflicts"] == [] and out["count"] == 0  # no conflict to resolve: each domain keeps its own
    [split] = out["across_domains"]
    assert split["key"] == "user.city" and [v["domain"] for v in split["values"]] == ["hermes", "code"]
    assert "a different current value in each of 2 domains" in cli("conflicts").stdout
    assert "user.city" in " ".join(cli.json("doctor")["notes"])
    block = cli("context").stdout
    assert "user.city holds a different current value in 2 domains" in block and "杭州" in block and "上海" in block
    # correcting the stale value to the other's words settles it everywhere
    assert cli("correct", old, "小明搬到上海了").exit_code == 0
    assert cli.json("conflicts")["across_domains"] == []
    assert "user.city" not in cli("context").stdout.split("## Recent")[0]


def test_history_of_a_key_split_over_two_domains_labels_each_current_value_as_conflicts_does(cli, vault, vault_path):
    """`history --key` lists every domain's versions: the current value of each of two domains is
    labelled with the other's (JSON `across_domains`, a label in print), as `conflicts` tells it —
    never two bare "current" values side by side. A domain that agrees, or one value, is not."""
    quiet(vault_path)
    hz = cli.json("append", "小明住在杭州", "--key", "user.city", "--domain", "hermes")["id"]
    sh = cli.json("append", "小明搬到上海了", "--key", "user.city", "--domain", "code")["id"]
    versions = {v["id"]: v for v in cli.json("history", "--key", "user.city")["versions"]}
    assert versions[hz]["status"] == versions[sh]["status"] == "current"
    assert versions[hz]["across_domains"] == [{"id": sh, "domain": "code"}]
    assert versions[sh]["across_domains"] == [{"id": hz, "domain": "hermes"}]
    shown = cli("history", "--key", "user.city").stdout
    assert f"ANOTHER VALUE IN code ({sh[-8:]})" in shown and f"ANOTHER VALUE IN hermes ({hz[-8:]})" in shown
    # --domain shows that domain's versions, still labelled with the other's value
    [only] = cli.json("history", "--key", "user.city", "--domain", "hermes")["versions"]
    assert only["id"] == hz and only["across_domains"] == [{"id": sh, "domain": "code"}]
    assert "ANOTHER VALUE IN code" in cli("history", hz).stdout  # by id too
    # an agreeing domain, and a superseded value, carry no label
    cli.json("append", "the port is 8080", "--key", "svc.port", "--domain", "hermes")
    cli.json("append", "the port is 8080", "--key", "svc.port", "--domain", "code")
    assert all("across_domains" not in v for v in cli.json("history", "--key", "svc.port")["versions"])
    assert cli("correct", hz, "小明搬到上海了").exit_code == 0
    assert all("across_domains" not in v for v in cli.json("history", "--key", "user.city")["versions"])
    assert "ANOTHER VALUE" not in cli("history", "--key", "user.city").stdout


def test_a_key_split_over_two_domains_is_labelled_alike_by_get_search_mcp_and_history(cli, vault, vault_path):
    """Which other domain holds a different current value of a key is decided in one place
    (`Index.across_domains`, which `view_of` and search read), so `get`, `search` (JSON and print),
    MCP's search and `history` all carry it: only history did, and `get` showed a plain [current]."""
    from conftest import mcp_session

    quiet(vault_path)
    hz = cli.json("append", "小明住在杭州", "--key", "user.city", "--domain", "hermes")["id"]
    sh = cli.json("append", "小明搬到上海了", "--key", "user.city", "--domain", "code")["id"]
    got = cli.json("get", hz)["record"]
    assert got["status"] == "current" and got["across_domains"] == [{"id": sh, "domain": "code"}]
    assert f"ANOTHER VALUE IN code ({sh[-8:]})" in cli("get", hz).stdout
    hits = {h["id"]: h for h in cli.json("search", "小明")["hits"]}
    assert hits[hz]["across_domains"] == [{"id": sh, "domain": "code"}]
    assert hits[sh]["across_domains"] == [{"id": hz, "domain": "hermes"}]
    printed = cli("search", "小明").stdout
    assert f"ANOTHER VALUE IN code ({sh[-8:]})" in printed and f"ANOTHER VALUE IN hermes ({hz[-8:]})" in printed

    async def script(s):
        return await s.call_tool("search", {"query": "小明"})

    found = mcp_session(vault_path, script)
    said = getattr(found, "structured_content", None) or found.structuredContent
    assert {h["id"]: h.get("across_domains") for h in said["hits"]} == {
        hz: [{"id": sh, "domain": "code"}],
        sh: [{"id": hz, "domain": "hermes"}],
    }
    versions = {v["id"]: v for v in cli.json("history", "--key", "user.city")["versions"]}
    assert versions[hz]["across_domains"] == got["across_domains"]
    # settled (the stale value corrected to the other's words): no surface labels it
    assert cli("correct", hz, "小明搬到上海了").exit_code == 0
    assert "across_domains" not in cli.json("get", sh)["record"]
    assert all("across_domains" not in h for h in cli.json("search", "小明")["hits"])


def test_context_under_a_domain_tells_that_domains_value_of_a_split_key_and_counts_as_conflicts_does(
    cli, vault, vault_path
):
    # review fix-m2 4: `context --domain hermes` printed code's value; a crowded block counted split keys
    # as conflicts while `conflicts --json` `count` leaves them out
    quiet(vault_path)
    cli.json("append", "小明住在杭州", "--key", "user.city", "--domain", "hermes")
    code = cli.json("append", "小明搬到上海了", "--key", "user.city", "--domain", "code")["id"]
    block = cli("context", "--domain", "hermes").stdout
    assert "杭州" in block and "上海" not in block
    assert f"another domain holds a different value (id {code[-8:]})" in block
    assert "上海" in cli("context", "--domain", "code").stdout
    for i in range(6):  # redlines longer than the budget: the rest is counted, not said
        cli.json(
            "append",
            f"never push to the release branch {i} without a signed review from two owners",
            "--redline",
            "--origin",
            "user",
        )
    out = cli.json("context", "--budget", "300")
    assert out["omitted"].get("conflicts", 0) == cli.json("conflicts")["count"] == 0
    assert out["omitted"]["across_domains"] == len(cli.json("conflicts")["across_domains"]) == 1


def test_history_of_a_key_given_as_an_id_points_to_history_key(cli):
    """Tester 12, finding 11: `optmem history backend.port` said only "no record has id": a key
    given where an id goes is pointed to `history --key`, saying whether the key holds records."""
    cli.json("append", "backend port is 8080", "--key", "backend.port")
    err = cli.json("history", "backend.port", code=1)["error"]
    assert err["code"] == "not_found" and "optmem history --key backend.port" in err["message"], err
    assert "has records" in err["message"] and err["key"] == "backend.port"
    err = cli.json("history", "frontend.port", code=1)["error"]  # looks like a key, holds none
    assert "optmem history --key frontend.port" not in err["message"] and "no record has key" in err["message"], err
    assert "key" not in cli.json("history", "ZZZZZZZZ", code=1)["error"]["message"]  # an id: as ever


def test_a_hot_key_typed_by_hand_is_no_fact_split_across_domains_on_any_surface(cli):
    """A `hot:` key names a hot-memory entry, not a fact: two domains' notes given one by hand are
    no key held two ways — not in `conflicts`, nor (one definition: `view.KEYED_FACT`) beside each
    hit of `search` and `get` (tidy18 #3: they disagreed)."""
    one = cli.json("append", "-d", "code", "-p", "web", "--key", "hot:x", "the port is 8080")["id"]
    cli.json("append", "-d", "hermes", "-p", "web", "--key", "hot:x", "the port is 9090")
    assert cli.json("conflicts")["across_domains"] == []
    assert all("across_domains" not in h for h in cli.json("search", "port")["hits"])
    assert "across_domains" not in cli.json("get", one)["record"]
