"""The update rule knows its subject: a newer record goes above an older one only when it states
the same attribute of the same subject with another value — not when the two merely share words.
Small vaults, English and Chinese, through the CLI."""

from __future__ import annotations

import pytest

from optmem.identifiers import values
from optmem.reading.cues import time_words

pytestmark = pytest.mark.usefixtures("no_sweep")

FILLERS = (
    "Lunch with the design team on Friday.",
    "The office plants get watered on Mondays.",
    "Bought a new kettle for the kitchen.",
    "周末去爬山了，天气很好。",
    "公司发布了新产品。",
    "晚上看了一部电影。",
)


def _store(cli, monkeypatch, records: list[tuple[str, str]], fillers: tuple[str, ...] = FILLERS) -> list[str]:
    """Append the fillers, then each (time, text) with OPTMEM_NOW at its time: the records' ids."""
    monkeypatch.setenv("OPTMEM_NOW", "2026-01-02T09:00:00Z")
    for text in fillers:
        assert cli("append", text).exit_code == 0
    ids = []
    for when, text in records:
        monkeypatch.setenv("OPTMEM_NOW", when)
        ids.append(cli.json("append", text)["id"])
    return ids


def _top(cli, monkeypatch, query: str) -> list[dict]:
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-01T20:00:00Z")
    return cli.json("search", query, "--explain")["hits"]


@pytest.mark.long
@pytest.mark.parametrize(
    "old, new, query",
    [
        # the same subject words, another number
        ("The orders backend listens on port 8080.", "The orders backend moved to port 9090.", "orders backend port"),
        # … another name
        (
            "Team Falcon deploys everything through Jenkins.",
            "Team Falcon deploys everything through GitHub Actions since the migration.",
            "what does team Falcon deploy through",
        ),
        # … in Chinese: another place, another number
        ("小明住在杭州西湖区。", "小明搬家了，现在住在上海浦东。", "小明住在哪里"),
        ("我在阳台养了三盆花。", "我在阳台养了五盆花。", "阳台养了几盆花"),
        # a newer note that names part of the subject in its own words (not its rarest one, GP)
        (
            "GP appointment booked for March 14 at 9:20.",
            "Clinic called, appointment pushed to March 21, 11:00.",
            "When is my GP appointment?",
        ),
        (
            "小宝的游泳课是周六上午九点，在体育中心。",
            "小宝游泳换到周日上午十点半，还是那个泳池。",
            "小宝什么时候上游泳课？",
        ),
    ],
)
def test_a_newer_value_of_the_same_attribute_goes_first(vault, cli, monkeypatch, old, new, query):
    old_id, new_id = _store(cli, monkeypatch, [("2026-02-01T10:00:00Z", old), ("2026-04-01T10:00:00Z", new)])
    hits = _top(cli, monkeypatch, query)
    order = [h["id"] for h in hits]
    assert order.index(new_id) < order.index(old_id), [h["text"] for h in hits]


@pytest.mark.long
@pytest.mark.parametrize(
    "old, new, query",
    [
        # a later turn that speaks of the same thing again, with no value of its own
        (
            "Caroline went to the LGBTQ support group meeting and found it powerful.",
            "Caroline said the LGBTQ support group meeting was really powerful again.",
            "Caroline LGBTQ support group meeting",
        ),
        # the same in Chinese: 小王 and 西湖边 again, nothing new said of them
        ("我和小王在西湖边散步，聊了很久。", "小王也在西湖边散步，聊了很久了。", "小王在西湖边散步"),
        # a newer note that shares only a common word of the subject ("port"), not what it is of
        (
            "The orders backend listens on port 9090.",
            "Maybe try port 8081 for the mock server.",
            "orders backend port?",
        ),
    ],
)
def test_records_that_merely_share_words_stay_in_relevances_order(vault, cli, monkeypatch, old, new, query):
    _, _ = _store(cli, monkeypatch, [("2026-02-01T10:00:00Z", old), ("2026-04-01T10:00:00Z", new)])
    hits = _top(cli, monkeypatch, query)
    assert len(hits) >= 2
    assert all(h["explain"]["updates"] is None for h in hits), [(h["text"], h["explain"]["updates"]) for h in hits]


def test_the_values_a_statement_gives():
    ignore = time_words()
    assert values("The orders backend listens on port 8080.", ignore) == {"#8080"}
    assert {"github", "action"} <= values("Falcon moved to GitHub Actions.", ignore)
    # a sentence's first word is no name; common words give no value
    assert values("Caroline: the support group was so helpful.", ignore) == frozenset()
    # Chinese: the characters that are no function characters nor cue words (现在, 搬到)
    assert values("小明现在搬到上海了", ignore) == {"小", "明", "上", "海"}
    assert values("测试库用的是 MySQL 8.0", ignore) == {"测", "试", "库", "mysql", "#8.0"}


@pytest.mark.long
def test_a_remark_saved_at_the_chat_tier_is_no_newer_value_of_a_note(vault, cli, monkeypatch):
    # "Chat: maybe try port 8081" speaks in passing, as a conversation turn does: it holds "port"
    # of "backend port", yet states no new value of the backend's port
    monkeypatch.setenv("OPTMEM_NOW", "2026-02-01T10:00:00Z")
    for text in FILLERS:
        assert cli("append", text).exit_code == 0
    port = cli.json("append", "The backend listens on port 9090 behind nginx.")["id"]
    for text in ("The nightly backup job runs at 02:00.", "Deploys go out from the main branch."):
        assert cli("append", text).exit_code == 0
    monkeypatch.setenv("OPTMEM_NOW", "2026-02-02T10:00:00Z")
    chat = cli.json("append", "Chat: maybe try port 8081 for the debug server?", "--tier", "chat")["id"]
    hits = _top(cli, monkeypatch, "backend port")
    order = [h["id"] for h in hits]
    assert order.index(port) < order.index(chat), [h["text"] for h in hits]


@pytest.mark.parametrize(
    "old, new, query",
    [
        ("后端端口是 8080", "后端端口改成 9090 了", "端口"),
        ("The backend port is 8080", "The backend port is now 9090", "backend port"),
    ],
)
@pytest.mark.parametrize("later", ["2026-03-01T10:03:00Z", "2026-03-01T10:00:00Z"])  # minutes; the same second
def test_a_note_that_updates_one_written_minutes_before_goes_above_it(cli, monkeypatch, old, new, query, later):
    """Two notes a few minutes apart (a correction typed right after the mistake) that the write
    gate links (it says the newer may update the older): the newer value comes first — written
    in the same second too (an agent's two appends), the gate's link says which came after.
    Records of one day that merely share a word, and two turns of one conversation, keep
    relevance's order."""
    ids = _store(cli, monkeypatch, [("2026-03-01T10:00:00Z", old)])
    monkeypatch.setenv("OPTMEM_NOW", later)
    added = cli.json("append", new)
    assert added["possible_update"], added  # (the gate's link: what lets the minutes-newer note go first)
    ids.append(added["id"])
    assert [h["id"] for h in _top(cli, monkeypatch, query)][:2] == [ids[1], ids[0]]


def test_two_turns_of_one_conversation_minutes_apart_keep_relevances_order(cli, monkeypatch):
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-01T10:00:00Z")
    first = cli.json("append", "The backend port is 8080 on the staging box", "--session", "s1")["id"]
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-01T10:03:00Z")
    second = cli.json("append", "port 9090 maybe", "--session", "s1")["id"]
    hits = [h["id"] for h in _top(cli, monkeypatch, "backend port staging")]
    assert hits.index(first) < hits.index(second)
