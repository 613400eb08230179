"""Search factors added for outside data, each on a small hand-made store: dates as terms,
conversation context, BM25's b from the store, updates first (English and Chinese)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from conftest import put
from hypothesis import given
from hypothesis import strategies as st

from optmem import dates, ranking, text
from optmem.reading import cues
from optmem.reading.query import names_in, read, search_terms, terms_of
from optmem.reading.questions import questions
from optmem.settings import Ranking

pytestmark = pytest.mark.usefixtures("no_sweep")


def at(monkeypatch, when: str) -> None:
    monkeypatch.setenv("OPTMEM_NOW", when)


def epoch(day: str) -> float:
    return datetime.fromisoformat(day + "T12:00:00+00:00").astimezone(UTC).timestamp()


# pieces of every date hint and near misses, so random texts hit the edges (word boundaries,
# years of other centuries, half a month name)
_DATE_BITS = st.sampled_from(
    [
        "yesterday",
        "ago",
        "last",
        "other week",
        "other  week",
        "昨",
        "上个",
        "this",
        "this ",
        "today",
        "今天",
        "本月",
        "明年",
        "月",
        "年",
        "2023",
        "1899",
        "19",
        "20",
        "may",
        "mayor",
        "sept",
        "dec",
        "xdec",
        "jan.",
        " ",
        "-",
        "a",
        "7",
        "前",
        "天",
    ]
)


@pytest.mark.long
@given(st.lists(_DATE_BITS, max_size=8).map("".join))
def test_a_text_the_date_hint_passes_over_names_no_date(folded):
    # the hint is a shortcut: a text it passes over must be one no date pattern reads anything in
    words = text.words(folded)
    if not dates._hinted(folded, words):
        day = datetime(2023, 5, 4).date()
        assert dates._resolved(dates._RELATIVE_SOURCES, folded, day) == []
        assert dates._explicit(folded, 2023) == []


def test_the_date_hint_passes_over_texts_without_a_date_word():
    for plain in (
        "the port is 8080",
        "mayor chicago blasted the pasta",
        "1899 rows",
        "端口改成了9090",
        "lastly",
        "nextgen",
    ):
        assert not dates._hinted(plain, text.words(plain)), plain
    for dated in ("last week", "in may", "sept 3", "the other week", "2023", "昨天", "3月", "10 days ago"):
        assert dates._hinted(dated, text.words(dated)), dated


def test_date_terms_of_records_and_queries():
    rec = dates.record_terms(epoch("2023-05-04"), text.fold("Yesterday I moved to Berlin; the lease starts June 1st."))
    assert {"__d2023_05_04", "__m2023_05"} <= set(rec) and "__y2023" not in rec  # its own day and month
    assert "__d2023_05_03" in rec  # yesterday
    assert "__d2023_06_01" in rec  # an explicit date, its year
    zh = dates.record_terms(epoch("2023-05-04"), text.fold("昨天搬到了上海，上个月还在杭州"))
    assert "__d2023_05_03" in zh and "__m2023_04" in zh
    # 上周六 said on a Tuesday: the Saturday of the calendar week before
    assert "__d2023_04_29" in dates.record_terms(epoch("2023-05-02"), text.fold("上周六和小王签了合同"))
    assert dates.query_terms(text.fold("What did we decide in May 2023?")) == ["__m2023_05"]
    assert dates.query_terms(text.fold("2023年5月3日做了什么")) == ["__m2023_05", "__d2023_05_03"]
    assert dates.query_terms(text.fold("what happened in 2022"))[:2] == ["__y2022", "__m2022_01"]
    assert dates.query_terms(text.fold("may I ask about the port")) == []  # "may" the verb is no month


def test_a_query_naming_a_month_finds_that_months_records(vault, cli, monkeypatch):
    at(monkeypatch, "2023-05-10T09:00:00Z")
    may = put(vault, "We decided to use Postgres for the billing service").id
    at(monkeypatch, "2023-08-10T09:00:00Z")
    put(vault, "We decided to use Redis for the session cache")
    at(monkeypatch, "2023-09-01T09:00:00Z")
    out = cli.json("search", "what did we decide in May 2023", "--explain")
    assert out["hits"][0]["id"] == may and out["hits"][0]["explain"]["dates"] == ["__m2023_05"]
    at(monkeypatch, "2023-05-04T09:00:00Z")
    moved = put(vault, "昨天搬到了上海").id
    assert cli.json("search", "2023年5月3日")["hits"][0]["id"] == moved  # "yesterday" resolved


def test_a_month_named_in_a_query_is_no_longer_the_word_may(vault, cli, monkeypatch):
    # "May 2025" asks for May's records: the words of a date the query names are the date, so a
    # later record saying "we may move" does not win on the word and its recency
    at(monkeypatch, "2025-05-14T10:00:00Z")
    postgres = put(vault, "We decided to use Postgres for billing").id
    at(monkeypatch, "2025-06-10T10:00:00Z")
    put(vault, "We decided we may move the office")
    at(monkeypatch, "2025-06-20T10:00:00Z")
    out = cli.json("search", "what did we decide in May 2025", "--explain")
    assert out["hits"][0]["id"] == postgres and out["hits"][0]["explain"]["dates"] == ["__m2025_05"]
    assert "may" in terms_of("may I ask about the port")  # no date named: a word
    # a date is a term: the function words around it are dropped as beside any other term
    now = epoch("2026-06-01")
    assert terms_of("what did I do in May 2023", now) == ["__m2023_05"]
    assert terms_of("what did I do yesterday", now) == ["__m2026_05", "__d2026_05_31"]
    assert terms_of("what did I do") == ["what", "did", "i", "do"]  # nothing else: they stay
    # a relative date's words are that date too: "last Saturday" is no match for "every Saturday"
    assert terms_of("what did I do last Saturday", now) == ["__m2026_05", "__d2026_05_30"]
    assert terms_of("我昨天买了什么", now) == ["买了", "__m2026_05", "__d2026_05_31"]
    assert terms_of("deploy昨天failed", now)[:2] == ["deploy", "fail"]  # not glued into one word


def test_relative_dates_in_a_query_are_resolved_from_now():
    now = epoch("2023-05-04")  # a Thursday
    assert dates.query_terms(text.fold("what did I sign yesterday"), now) == ["__m2023_05", "__d2023_05_03"]
    assert dates.query_terms(text.fold("我昨天签了什么"), now) == ["__m2023_05", "__d2023_05_03"]
    assert "__d2023_04_29" in dates.query_terms(text.fold("who did I meet last Saturday"), now)
    assert dates.query_terms(text.fold("what did I finish last month"), now) == ["__m2023_04"]
    assert dates.query_terms(text.fold("上个月完成了什么"), now) == ["__m2023_04"]
    assert dates.query_terms(text.fold("how many days ago did I sign it"), now) == []  # no count: no day
    assert dates.query_terms(text.fold("what did I sign yesterday")) == []  # no clock given: none
    # a day without its year: the latest such day up to now
    assert dates.query_terms(text.fold("what happened on May 1st"), now) == ["__m2023_05", "__d2023_05_01"]
    assert dates.query_terms(text.fold("5月20日发生了什么"), now) == ["__m2022_05", "__d2022_05_20"]
    assert dates.query_terms(text.fold("what happened on May 20, 2021"), now) == ["__m2021_05", "__d2021_05_20"]
    assert dates.query_terms(text.fold("step 3 may fail"), now) == []  # "may" the verb after a number
    last_week = ["__m2023_04", *(f"__d2023_04_{d}" for d in range(24, 31))]  # Monday to Sunday before
    assert dates.query_terms(text.fold("上周一直在忙什么"), now) == last_week  # 一直: all along, not Monday
    assert dates.query_terms(text.fold("why did the deploy fail last week"), now) == last_week
    assert dates.query_terms(text.fold("上周一开会了吗"), now) == ["__m2023_04", "__d2023_04_24"]
    leap = epoch("2028-01-10")
    assert dates.query_terms(text.fold("what did we sign on Feb 29"), leap) == ["__m2024_02", "__d2024_02_29"]
    for extreme in ("9999-12-31", "0001-01-01"):  # no day to name past the calendar's ends: none, no error
        moment = datetime.fromisoformat(extreme + "T12:00:00+00:00").timestamp()
        assert isinstance(
            dates.query_terms(text.fold("tomorrow, yesterday, next year, last year, 上周六"), moment), list
        )
        assert isinstance(dates.record_terms(moment, text.fold("tomorrow, yesterday, next year, 上周六")), list)
    assert dates.query_terms(text.fold("what is the backend port today"), now) == []  # a present cue
    assert dates.query_terms(text.fold("十三天前做了什么"), now) == ["__m2023_04", "__d2023_04_21"]
    assert dates.query_terms(text.fold("二十天前"), now) == ["__m2023_04", "__d2023_04_14"]
    assert dates.query_terms(text.fold("上周五下午开会"), now) == ["__m2023_04", "__d2023_04_28"]
    assert dates.query_terms(text.fold("本月的开销"), now) == ["__m2023_05"]
    assert dates.query_terms(text.fold("this year's goals"), now)[:2] == ["__y2023", "__m2023_01"]


def test_a_month_named_without_its_year_in_a_query():
    now = epoch("2026-06-01")
    # the latest such month up to now; "may" the verb is not read
    assert dates.query_terms(text.fold("what happened in May"), now) == ["__m2026_05"]
    assert dates.query_terms(text.fold("what did we ship in December?"), now) == ["__m2025_12"]
    assert dates.query_terms(text.fold("since June"), now) == ["__m2026_06"]
    assert dates.query_terms(text.fold("5月份做了什么"), now) == ["__m2026_05"]
    assert dates.query_terms(text.fold("五月做了什么"), now) == ["__m2026_05"]
    assert dates.query_terms(text.fold("十二月的账单"), now) == ["__m2025_12"]
    for none in ("may I ask about the port", "the build may fail in CI", "3个月", "几月份", "岁月"):
        assert dates.query_terms(text.fold(none), now) == [], none
    assert terms_of("what happened in May", now) == ["happen", "__m2026_05"]  # not the verb
    assert terms_of("workshops in April", now) == ["workshop", "april", "__m2026_04"]  # a word too
    # beside a year it is that year's month, never also this year's
    assert dates.query_terms(text.fold("in May of 2023"), now) == ["__m2023_05"]
    assert dates.query_terms(text.fold("2023年 3月"), now) == ["__m2023_03"]
    assert "__m2025_03" in dates.query_terms(text.fold("the dentist in March of last year"), now)
    assert "__m2026_03" not in dates.query_terms(text.fold("the dentist in March of last year"), now)
    assert "__m2025_03" in dates.query_terms(text.fold("去年三月看了牙医"), now)
    # "last May" asked in May is a year ago; 十三月 / 二十月 are no months
    assert dates.query_terms(text.fold("last May"), epoch("2026-05-15")) == ["__m2025_05"]
    assert dates.query_terms(text.fold("十三月"), now) == [] and dates.query_terms(text.fold("二十月"), now) == []
    assert dates.query_terms(text.fold("去年3月做了什么"), now)[-1] == "__m2025_03"
    assert dates.query_terms(text.fold("今年5月做了什么"), now) == ["__m2026_05"]
    # this week's day (Monday to today): 这周一 asked on a Monday is today
    assert dates.query_terms(text.fold("这周一做了什么"), now) == ["__m2026_06", "__d2026_06_01"]
    assert dates.query_terms(text.fold("本周三的会"), epoch("2026-06-04")) == ["__m2026_06", "__d2026_06_03"]
    assert dates.query_terms(text.fold("这周末去哪"), epoch("2026-06-04")) == [
        "__m2026_06",
        "__d2026_06_06",
        "__d2026_06_07",
    ]
    assert dates.query_terms(text.fold("明年三月"), now) == ["__m2027_03"]
    assert dates.query_terms(text.fold("前年三月"), now) == ["__m2024_03"]


def test_a_month_of_a_named_year_is_found_on_both_sides(vault, cli, monkeypatch):
    at(monkeypatch, "2026-06-01T10:00:00Z")
    job = put(vault, "去年3月入职了字节").id
    race = put(vault, "今年五月跑了半马").id
    put(vault, "上上周三修好了打印机")
    at(monkeypatch, "2026-06-05T10:00:00Z")
    assert cli.json("search", "去年3月做了什么")["hits"][0]["id"] == job
    assert cli.json("search", "今年五月")["hits"][0]["id"] == race
    assert "__m2025_03" in dates.record_terms(epoch("2026-06-01"), text.fold("去年3月入职了字节"))


def test_two_steps_back_and_days_said_without_their_year():
    now = epoch("2023-05-04")  # a Thursday; 2023 is no leap year
    # 大前天 is three days back and 前天 inside it is not also read; 上上周 / 上上个月 / 大前年 two back
    assert dates.query_terms(text.fold("大前天做了什么"), now) == ["__m2023_05", "__d2023_05_01"]
    two_weeks = ["__m2023_04", *(f"__d2023_04_{d}" for d in range(17, 24))]  # the week before last
    assert dates.query_terms(text.fold("上上周在忙什么"), now) == two_weeks
    assert dates.query_terms(text.fold("what broke the week before last"), now) == two_weeks
    assert dates.query_terms(text.fold("上上周六见了谁"), now) == ["__m2023_04", "__d2023_04_22"]
    assert dates.query_terms(text.fold("上个礼拜三见了谁"), now) == ["__m2023_04", "__d2023_04_26"]
    assert dates.query_terms(text.fold("上上个月的账单"), now) == ["__m2023_03"]
    assert dates.query_terms(text.fold("the month before last"), now) == ["__m2023_03"]
    assert dates.query_terms(text.fold("大前年"), now)[:2] == ["__y2020", "__m2020_01"]
    assert dates.query_terms(text.fold("前年"), now)[:2] == ["__y2021", "__m2021_01"]
    # in a record, resolved from its own day
    rec = dates.record_terms(epoch("2023-05-04"), text.fold("大前天和上上个月的事"))
    assert "__d2023_05_01" in rec and "__m2023_03" in rec and "__d2023_05_02" not in rec
    # 29 February without its year, in a year that has none: the latest leap day before
    assert dates.query_terms(text.fold("what did we sign on Feb 29"), now) == ["__m2020_02", "__d2020_02_29"]
    assert dates.query_terms(text.fold("2月29日签了什么"), now) == ["__m2020_02", "__d2020_02_29"]
    assert "__d2020_02_29" in dates.record_terms(epoch("2021-03-01"), text.fold("since Feb 29 the door sticks"))
    assert dates.query_terms(text.fold("Feb 29, 2023"), now) == []  # a year written out is kept: no such day
    # "the 3rd of May" without a year is a day; "the 3rd may fail", "step 3 of may fail" are not
    assert dates.query_terms(text.fold("what happened on the 3rd of May"), now) == ["__m2023_05", "__d2023_05_03"]
    assert dates.query_terms(text.fold("the 3rd may fail"), now) == []
    assert dates.query_terms(text.fold("step 3 of may fail"), now) == []
    # 上上周末 is the weekend two weeks back (not last weekend); 上个周三 is a weekday of last week
    assert dates.query_terms(text.fold("上上周末去哪了"), now) == ["__m2023_04", "__d2023_04_22", "__d2023_04_23"]
    assert dates.query_terms(text.fold("上个周末去哪了"), now) == ["__m2023_04", "__d2023_04_29", "__d2023_04_30"]
    assert dates.query_terms(text.fold("上个周三见了谁"), now) == ["__m2023_04", "__d2023_04_26"]
    # three steps back is not read as two (nor as one); "the week before last Friday" is about Friday
    for three in ("上上上周", "上上上个月", "大大前天"):
        assert dates.query_terms(text.fold(three), now) == [], three
    assert dates.query_terms(text.fold("the week before last friday"), now) == ["__m2023_04", "__d2023_04_28"]
    assert dates.query_terms(text.fold("登上月球的那天"), now) == []  # the moon, not last month


def test_last_saturday_is_that_day_not_every_record_saying_saturday(vault, cli, monkeypatch):
    at(monkeypatch, "2026-05-20T10:00:00Z")
    market = put(vault, "The farmers market is open every Saturday").id
    at(monkeypatch, "2026-05-30T16:00:00Z")  # a Saturday
    hike = put(vault, "Went hiking on Mount Tai with Lena").id
    that_day = [hike] + [put(vault, text).id for text in ("Bought new boots", "Cooked dumplings for dinner")]
    at(monkeypatch, "2026-06-01T10:00:00Z")
    hits = cli.json("search", "what did I do last Saturday", "--explain")["hits"]
    # that day's records first; the market (the word "Saturday", said another day) only by its month
    assert sorted(h["id"] for h in hits[:3]) == sorted(that_day) and hits[3]["id"] == market
    zh = cli.json("search", "我上周六做了什么")["hits"]
    assert sorted(h["id"] for h in zh[:3]) == sorted(that_day)


def test_a_query_saying_yesterday_finds_what_happened_that_day(vault, cli, monkeypatch):
    # the day a query names relatively ("yesterday", "上周六") is resolved from now and matches the
    # record of that day — above a newer record that says the same
    at(monkeypatch, "2023-05-03T18:00:00Z")
    signed = put(vault, "Signed the lease for the new office with Dana").id
    at(monkeypatch, "2023-05-04T08:00:00Z")
    put(vault, "Signed the lease for the storage unit with Dana")
    at(monkeypatch, "2023-05-04T09:00:00Z")
    out = cli.json("search", "what lease did I sign yesterday", "--explain")
    assert out["hits"][0]["id"] == signed and "__d2023_05_03" in out["hits"][0]["explain"]["dates"]
    at(monkeypatch, "2023-04-29T18:00:00Z")  # a Saturday
    office = put(vault, "和小王签了办公室的合同").id
    at(monkeypatch, "2023-05-01T09:00:00Z")
    put(vault, "和小王签了仓库的合同")
    at(monkeypatch, "2023-05-02T09:00:00Z")  # Tuesday: 上周六 is the Saturday of last week
    assert cli.json("search", "上周六和小王签了什么合同")["hits"][0]["id"] == office


def test_last_week_in_a_query_is_its_days_not_a_month_ago(vault, cli, monkeypatch):
    at(monkeypatch, "2025-12-03T10:00:00Z")
    put(vault, "The staging deploy failed on the migration step")
    at(monkeypatch, "2026-01-02T10:00:00Z")
    full = put(vault, "The staging deploy failed because the disk was full").id
    at(monkeypatch, "2026-01-05T10:00:00Z")  # a Monday: last week is 29 Dec – 4 Jan
    assert cli.json("search", "why did the staging deploy fail last week")["hits"][0]["id"] == full


def test_session_neighbours_lend_context_only_within_a_session(vault, cli, monkeypatch):
    at(monkeypatch, "2024-03-01T10:00:00Z")
    put(vault, "Caroline: what is your favourite city in Europe?", session="chat-1")
    answer = put(vault, "Melanie: Lisbon, without a doubt — the light there is wonderful.", session="chat-1").id
    put(vault, "Melanie: shall we plan the trip next spring?", session="chat-1")
    put(vault, "Lisbon has many hills", session="other")  # a different conversation
    lone = put(vault, "Porto or Lisbon, hard to say").id  # no session: no context
    out = cli.json("search", "favourite city Europe", "--explain")
    by_id = {h["id"]: h for h in out["hits"]}
    assert answer in by_id and by_id[answer]["explain"]["context"] > 0  # found through its neighbour
    assert lone not in by_id  # no word matched, no context
    assert all(h["explain"]["context"] == 0 for h in out["hits"] if h["text"].startswith("Lisbon has"))


def _answer_store(vault, monkeypatch, session="chat-1"):
    at(monkeypatch, "2024-03-01T10:00:00Z")
    question = put(vault, "Tim: Which spices did you put in the soup?", session=session).id
    answer = put(vault, "John: Some sage, for a nice flavour.", session=session).id
    put(vault, "Tim: I will try it this weekend.", session=session)
    market = put(
        vault,
        "The market stall sells spices and dried herbs in big jars, the soup kitchen next door buys from it every week",
    ).id
    return question, answer, market


def test_the_turn_after_a_question_is_found_through_it(vault, cli, monkeypatch):
    """An answer rarely repeats its question's words: the turn after a question gains a share of
    what the question matched — as much as the question, for an answer no longer than it —
    beyond the ordinary share of a neighbour; --explain names the question."""
    question, answer, market = _answer_store(vault, monkeypatch)
    out = cli.json("search", "spices soup", "--explain")
    by_id = {h["id"]: h["explain"] for h in out["hits"]}
    assert {h["id"] for h in out["hits"][:2]} == {question, answer}  # the market stall after both
    assert by_id[answer]["answers"] == question and by_id[answer]["relevance"] == 0
    assert by_id[answer]["context"] == pytest.approx(by_id[question]["relevance"], rel=1e-3)
    assert all(e["answers"] is None for i, e in by_id.items() if i != answer)
    assert f"(answers {question[-8:]})" in cli("search", "spices soup", "--explain").stdout


def test_without_the_answer_share_an_answer_gets_a_neighbours_share_only(vault, cli, monkeypatch):
    question, answer, market = _answer_store(vault, monkeypatch)
    (vault.root / "optmem.toml").write_text("[ranking]\nanswer_share = 0\n", "utf-8")
    out = cli.json("search", "spices soup", "--explain")
    ids = [h["id"] for h in out["hits"]]
    assert ids.index(market) < ids.index(answer)
    assert out["hits"][ids.index(answer)]["explain"]["answers"] is None


def test_a_statement_lends_its_next_turn_only_a_neighbours_share(vault, cli, monkeypatch):
    at(monkeypatch, "2024-03-01T10:00:00Z")
    put(vault, "Tim: I put spices in the soup.", session="chat-1")
    after = put(vault, "John: Some sage, for a nice flavour.", session="chat-1").id
    hit = {h["id"]: h for h in cli.json("search", "spices soup", "--explain")["hits"]}[after]
    assert hit["explain"]["answers"] is None and hit["explain"]["context"] > 0


def test_what_a_turn_asks_is_its_question_sentences():
    assert questions("i got a dog. what did you name yours? he is cute!") == " what did you name yours?"
    assert questions("no question here.") == ""
    assert questions("你养狗了吗?叫什么名字?我很好奇。") == "你养狗了吗 叫什么名字?"
    assert questions("first line\nwhere is it?") == "where is it?"  # a line ends a sentence
    assert questions("notes at https://cooking.example/soup?topic=spices for later") == ""  # a URL's ?
    assert questions("你去过上海吗，我想去") == "你去过上海吗" and questions("吗啡是药") == ""
    long = "which spices? " + "itemN ok " * 20_000  # read once: anchored at sentence starts
    assert questions(long) == "which spices?"
    both = questions(long + "why?")
    assert both.startswith("which spices? ") and both.endswith("itemN ok why?")


@pytest.mark.long
def test_a_question_that_matched_only_the_present_lends_nothing(vault, cli, monkeypatch):
    """ "now" says when, not what: a question that matched nothing else lends its answer nothing,
    as a record that matched nothing else is no hit."""
    at(monkeypatch, "2024-03-01T10:00:00Z")
    for i in range(6):
        put(vault, f"Alice said the live show in town number {i} was fun")
    put(vault, "Alice lives in Paris with her cat. What are you doing now?", session="chat-1")
    reading = put(vault, "Reading.", session="chat-1").id
    out = {h["id"]: h["explain"] for h in cli.json("search", "where does alice live now", "--explain")["hits"]}
    assert reading in out and out[reading]["answers"] is None  # (a neighbour's share brought it)


def test_only_the_question_sentences_lend_not_what_the_turn_states(vault, cli, monkeypatch):
    at(monkeypatch, "2024-03-01T10:00:00Z")
    put(vault, "Tim: I love spices, and soup with spices most. What did you cook today?", session="chat-1")
    after = put(vault, "John: Pasta.", session="chat-1").id
    hit = {h["id"]: h for h in cli.json("search", "spices soup", "--explain")["hits"]}[after]
    assert hit["explain"]["answers"] is None  # its question matched nothing: a neighbour's share only


def test_a_neighbours_share_wins_when_it_is_more(vault, cli, monkeypatch):
    """The turn after a question that matched little, beside a turn that matched much, gains the
    neighbour's share: the larger of the two."""
    at(monkeypatch, "2024-03-01T10:00:00Z")
    question = put(vault, "Tim: which soup was that?", session="chat-1").id
    reply = put(vault, "John: Tomato.", session="chat-1").id
    strong = put(vault, "Tim: spices in a tomato soup, spices in a bean soup, spices everywhere", session="chat-1").id
    found = cli.json("--set", "ranking.context_share=0.35", "search", "spices soup", "--explain")["hits"]
    out = {h["id"]: h["explain"] for h in found}
    assert out[question]["relevance"] > 0  # it lends something: less than the neighbour's share
    assert out[reply]["answers"] is None
    assert out[reply]["context"] == pytest.approx(0.35 * out[strong]["relevance"], rel=1e-3)


def test_a_long_answer_gains_a_part_of_its_question_in_search(vault, cli, monkeypatch):
    at(monkeypatch, "2024-03-01T10:00:00Z")
    question = put(vault, "Tim: Which spices did you put in the soup?", session="chat-1").id
    answer = put(
        vault, "John: Some sage, for a nice flavour, then I let it simmer for an hour.", session="chat-1"
    ).id  # about twice as long as the question
    out = {h["id"]: h["explain"] for h in cli.json("search", "spices soup", "--explain")["hits"]}
    assert out[answer]["answers"] == question
    share = Ranking().context_share * out[question]["relevance"]
    assert share < out[answer]["context"] < 0.75 * out[question]["relevance"]


def test_the_turn_after_is_the_next_one_of_its_own_domain(vault, cli, monkeypatch):
    """A session name two domains share holds two conversations: another domain's turns between
    a question and its answer are no turns of theirs, and its questions are not theirs."""
    at(monkeypatch, "2024-03-01T10:00:00Z")
    question = put(vault, "Tim: Which spices did you put in the soup?", session="s1", domain="a").id
    put(vault, "Ann: I cooked a stew with spices.", session="s1", domain="b")
    answer = put(vault, "John: Some sage, for a nice flavour.", session="s1", domain="a").id
    other = put(vault, "Bob: Thyme.", session="s1", domain="b").id
    out = {h["id"]: h["explain"] for h in cli.json("search", "spices soup", "--explain")["hits"]}
    assert out[answer]["answers"] == question
    assert out[other]["answers"] is None  # the turn before it in its own conversation states


def test_a_corrected_answer_stands_in_with_what_its_question_lent(vault, cli, monkeypatch):
    question, answer, market = _answer_store(vault, monkeypatch)
    fixed = cli.json("correct", answer, "Actually it was thyme, not sage.")["id"]
    out = {h["id"]: h["explain"] for h in cli.json("search", "spices soup", "--explain")["hits"]}
    assert out[fixed]["stands_for"] == answer and out[fixed]["relevance"] > 0
    # … with --current too: the superseded answer is not shown, but still read as the turn after
    # its question, so its correction is found the same way
    current = {h["id"]: h["explain"] for h in cli.json("search", "spices soup", "--current", "--explain")["hits"]}
    assert answer not in current and current[fixed] == out[fixed]


def test_a_long_answer_gains_less_of_its_question():
    s = Ranking()
    assert ranking.answer_lift(10.0, 20, 20, s) == pytest.approx(10.0 * s.answer_share)
    assert ranking.answer_lift(10.0, 20, 5, s) == pytest.approx(10.0 * s.answer_share)  # shorter: all of it
    assert ranking.answer_lift(10.0, 20, 80, s) == pytest.approx(2.5 * s.answer_share)  # 4x longer: a quarter


def test_a_chinese_answer_is_found_through_its_question(vault, cli, monkeypatch):
    at(monkeypatch, "2024-03-01T10:00:00Z")
    question = put(vault, "小王：你在汤里放了什么香料？", session="对话1").id
    answer = put(vault, "小李：放了一点鼠尾草。", session="对话1").id
    put(vault, "市场上的香料摊每周都给汤馆送货，生意很好，摊主也很热情", session="对话2")
    out = cli.json("search", "汤里放了什么香料", "--explain")
    by_id = {h["id"]: h["explain"] for h in out["hits"]}
    assert {h["id"] for h in out["hits"][:2]} == {question, answer} and by_id[answer]["answers"] == question


def test_a_session_name_reused_in_another_domain_lends_no_context(vault, cli, monkeypatch):
    at(monkeypatch, "2026-01-05T10:00:00Z")
    put(vault, "What is the VPN endpoint?", session="chat1", domain="hermes")
    seeds = put(vault, "Sunflower seeds need full sun", session="chat1", domain="openclaw").id
    answer = put(vault, "It is vpn.corp.example:443", session="chat1", domain="hermes").id
    ids = [h["id"] for h in cli.json("search", "vpn endpoint")["hits"]]
    assert answer in ids and seeds not in ids


def test_b_follows_the_store_and_the_query():
    s = Ranking()
    # notes: by the spread of their lengths
    assert ranking.b_for(0.2, 30.0, 0.0, 5, s) == s.b_min and ranking.b_for(2.0, 30.0, 0.0, 5, s) == s.b_max
    assert s.b_min < ranking.b_for(0.7, 30.0, 0.0, 5, s) < s.b_max
    # conversation turns: by their mean length, whatever their spread
    assert ranking.b_for(2.0, 20.0, 1.0, 5, s) == s.b_min and ranking.b_for(0.2, 300.0, 1.0, 5, s) == s.b_max
    # a long query (a chat turn asked as a query) holds long records back
    assert ranking.b_for(0.2, 20.0, 1.0, 30, s) == s.b_max
    assert s.b_min < ranking.b_for(0.2, 20.0, 1.0, 18, s) < s.b_max
    fixed = Ranking(b_min=0.75, b_max=0.75)
    assert ranking.b_for(0.2, 20.0, 1.0, 5, fixed) == ranking.b_for(2.0, 300.0, 0.0, 30, fixed) == 0.75


@pytest.mark.long
def test_b_in_explain_comes_from_the_store(vault, cli):
    for i in range(6):
        put(vault, f"short note about deploys number {i}")
    uniform = cli.json("search", "deploys", "--explain")["hits"][0]["explain"]["b"]
    put(vault, "deploys " + " ".join(f"word{i}" for i in range(400)))  # one long record: a wide spread
    spread = cli.json("search", "deploys", "--explain")["hits"][0]["explain"]["b"]
    assert uniform == Ranking().b_min and spread > uniform


def test_an_update_goes_first_and_the_old_value_stays_found(vault, cli, monkeypatch):
    at(monkeypatch, "2023-01-10T10:00:00Z")
    old = put(vault, "I have 3 plants on the balcony, all of them basil plants").id
    at(monkeypatch, "2023-06-01T10:00:00Z")
    new = put(vault, "Bought two more, so there are 5 plants").id
    at(monkeypatch, "2023-06-05T10:00:00Z")
    hits = cli.json("search", "How many plants do I have now?", "--explain")["hits"]
    assert [h["id"] for h in hits] == [new, old]
    assert hits[0]["explain"]["updates"] == old
    # without a cue the rule is stricter: a weak newer match does not jump a strong older one
    plain = cli.json("search", "basil plants balcony", "--explain")["hits"]
    assert plain[0]["id"] == old and plain[0]["explain"]["updates"] is None


def test_chinese_update_goes_first_and_the_old_value_stays_found(vault, cli, monkeypatch):
    at(monkeypatch, "2023-01-10T10:00:00Z")
    old = put(vault, "我在阳台上养了 3 盆植物。").id
    at(monkeypatch, "2023-06-01T10:00:00Z")
    new = put(vault, "上周又买了两盆，现在一共 5 盆植物了，都放在阳台。").id
    at(monkeypatch, "2023-06-05T10:00:00Z")
    assert [h["id"] for h in cli.json("search", "阳台现在有几盆植物")["hits"]] == [new, old]


def test_an_update_the_write_gate_flagged_goes_first_without_a_cue_in_the_query(vault, cli, monkeypatch):
    # "现在" inside the newer statement breaks the bigram 我养, so the matched terms differ; but
    # the write gate saw the update (possible_update, kept both) and the ranking uses that link
    at(monkeypatch, "2026-01-05T10:00:00Z")
    old = put(vault, "我养了3盆绿萝，放在阳台上。").id
    at(monkeypatch, "2026-03-05T10:00:00Z")
    res = put(vault, "我现在养了5盆绿萝，放在阳台上。")
    assert [u["id"] for u in res.possible_update] == [old]
    at(monkeypatch, "2026-03-10T10:00:00Z")
    hits = cli.json("search", "我养了几盆绿萝", "--explain")["hits"]
    assert [h["id"] for h in hits] == [res.id, old] and hits[0]["explain"]["updates"] == old
    past = cli.json("search", "我以前养了几盆绿萝")["hits"]
    assert [h["id"] for h in past] == [old, res.id]


@pytest.mark.parametrize(
    "old_text, new_text, query",
    [
        ("小红每天跑步五公里", "小红现在每天跑十公里了", "小红每天跑多少公里"),
        ("我有两只猫", "我现在有三只猫了", "我有几只猫"),
    ],
)
def test_a_chinese_update_ending_in_a_particle_is_seen_and_goes_first(
    vault, cli, monkeypatch, old_text, new_text, query
):
    # the final 了 is no changed word: the gate sees one change (五 → 十) and the ranking uses it
    at(monkeypatch, "2026-01-05T10:00:00Z")
    old = put(vault, old_text).id
    at(monkeypatch, "2026-03-05T10:00:00Z")
    new = put(vault, new_text)
    assert [u["id"] for u in new.possible_update] == [old]
    at(monkeypatch, "2026-03-10T10:00:00Z")
    assert [h["id"] for h in cli.json("search", query)["hits"]] == [new.id, old]


def test_a_flagged_update_that_matches_the_query_much_less_does_not_jump(vault, cli, monkeypatch):
    # the gate's guess (one changed span: the port, and "the frontend" → "it") is no proof: between
    # conversation turns the query's own words still decide when they clearly favour the older
    # record (two notes that give another value read as an update more readily: `updates_first`)
    at(monkeypatch, "2026-01-01T10:00:00Z")
    front = put(vault, "Local dev server for the shop web app: the frontend listens on port 3000", session="s").id
    at(monkeypatch, "2026-01-03T10:00:00Z")
    back = put(vault, "Local dev server for the shop web app: it listens on port 9090", session="s")
    assert [u["id"] for u in back.possible_update] == [front]
    at(monkeypatch, "2026-01-05T10:00:00Z")
    assert cli.json("search", "frontend port of the shop web app dev server")["hits"][0]["id"] == front


def test_today_asks_for_the_present_value(vault, cli, monkeypatch):
    at(monkeypatch, "2025-06-01T10:00:00Z")
    paris = put(vault, "I live in Paris, in a small flat").id
    at(monkeypatch, "2025-09-01T10:00:00Z")
    berlin = put(vault, "I live in Berlin now, moved last week").id
    at(monkeypatch, "2026-01-05T10:00:00Z")
    out = cli.json("search", "where do I live today", "--explain")["hits"]
    assert [h["id"] for h in out] == [berlin, paris] and out[0]["explain"]["asks"] == "present"


def test_a_query_about_the_past_does_not_put_the_update_first(vault, cli, monkeypatch):
    at(monkeypatch, "2026-05-10T10:00:00Z")
    old = put(vault, "I live in Hangzhou, my flat is close to West Lake").id
    at(monkeypatch, "2026-06-01T10:00:00Z")
    new = put(vault, "Moved last month: my flat is in Shanghai now, in Pudong, close to the river and the metro").id
    at(monkeypatch, "2026-06-05T10:00:00Z")
    plain = cli.json("search", "where is my flat", "--explain")["hits"]
    assert [h["id"] for h in plain] == [new, old] and plain[0]["explain"]["updates"] == old
    past = cli.json("search", "where was my flat before", "--explain")["hits"]
    assert [h["id"] for h in past] == [old, new]  # relevance decides: the older one matched better
    assert past[1]["explain"]["updates"] is None and past[0]["explain"]["asks"] == "past"
    assert "asks for the past" in cli("search", "where was my flat before", "--explain").stdout


def test_a_query_about_the_past_gives_the_newer_version_no_edge_on_a_near_tie(vault, cli, monkeypatch):
    at(monkeypatch, "2026-03-01T10:00:00Z")
    old = put(vault, "My flat is in Kreuzberg, third floor.").id
    at(monkeypatch, "2026-06-01T10:00:00Z")
    new = put(vault, "My flat is now in Neukölln, ground floor.").id
    at(monkeypatch, "2026-06-05T10:00:00Z")
    assert [h["id"] for h in cli.json("search", "where is my flat")["hits"]] == [new, old]
    past = cli.json("search", "where was my flat before", "--explain")["hits"]
    assert [h["id"] for h in past] == [old, new] and past[0]["explain"]["recency_bonus"] == 0


def test_a_chinese_query_about_the_past_does_not_put_the_update_first(vault, cli, monkeypatch):
    at(monkeypatch, "2026-05-10T10:00:00Z")
    old = put(vault, "我住在杭州，公寓就在西湖边上。").id
    at(monkeypatch, "2026-06-01T10:00:00Z")
    new = put(vault, "上个月搬家了：公寓现在在上海浦东，离地铁和江边都很近。").id
    at(monkeypatch, "2026-06-05T10:00:00Z")
    assert [h["id"] for h in cli.json("search", "公寓在哪")["hits"]][0] == new
    assert [h["id"] for h in cli.json("search", "我以前的公寓在哪")["hits"]] == [old, new]


def test_a_chinese_question_finds_the_answer_not_another_question(vault, cli):
    asked = put(vault, "那你现在住在哪里呀？平时怎么上班？").id
    answer = put(vault, "我住在浦东，离公司很近，每天骑车上班。").id
    assert [h["id"] for h in cli.json("search", "我住在哪里")["hits"]] == [answer, asked]


def test_a_record_that_matches_only_the_word_now_is_not_a_hit(vault, cli, monkeypatch):
    at(monkeypatch, "2026-03-01T10:00:00Z")
    berlin = put(vault, "Alice lives in Berlin").id
    at(monkeypatch, "2026-05-01T10:00:00Z")
    put(vault, "The staging database now runs on port 6543")
    hits = cli.json("search", "where does Alice live now")["hits"]
    assert [h["id"] for h in hits] == [berlin]
    # beside another matched term the word counts: a statement of the then-current value
    bike = put(vault, "my current road bike has done 2000 miles").id
    assert cli.json("search", "which road bike do I have now")["hits"][0]["id"] == bike
    assert cli.json("search", "now")["total"] >= 1  # a query of nothing else still finds it


def test_the_characters_of_a_chinese_query_break_what_a_boundary_bigram_gets_wrong(vault, cli):
    put(vault, "后端端口改成 9090 了")
    front = put(vault, "前端服务端口改成 3001 了").id
    assert cli.json("search", "前端端口")["hits"][0]["id"] == front  # 端端 matched the back end
    (vault.root / "optmem.toml").write_text("[ranking]\ncjk_unigram = 0\n", "utf-8")
    off = cli.json("search", "前端端口")
    assert off["hits"][0]["id"] != front  # … which is what the bigrams alone chose


def test_update_cues_and_their_terms():
    assert cues.asks_for_now("Where do I live now?") and cues.asks_for_now("我现在住在哪")
    assert cues.asks_for_now("How many tops have I bought so far?")
    assert not cues.asks_for_now("Where did I live in 2020?")
    assert not cues.asks_for_now("the snow fell")  # a word, not a part of one
    assert {"now", "现在"} <= cues.cue_terms()
    assert cues.asks_for("What was my previous address?") == "past" and cues.asks_for("我以前住在哪") == "past"
    assert cues.asks_for("How often do I play now, and previously?") == "present"  # both: the present
    assert cues.asks_for("Where did I live in 2020?") is None
    assert cues.asks_for("Where did I live before?") == "past" and cues.asks_for("what did I say earlier") == "past"
    assert cues.asks_for("How many days before I bought the phone did I go?") is None  # relates two events
    assert cues.asks_for("what did I use to drink") == "past" and cues.asks_for("最初用的什么") == "past"
    assert cues.asks_for("what is used to deploy the app") is None  # the passive, not a habit of old
    assert cues.asks_for("提交之前要跑什么检查") is None and cues.asks_for("上次部署是什么时候") is None
    # the present perfect is no cue of its own: "how long have I had my cat" asks by its words
    assert cues.asks_for("How many projects have I finished since I started classes?") is None
    assert cues.asks_for("我的猫卢娜养了多久了") is None
    assert not cues.asks_for_past("the formerlyish word")  # a word, not a part of one


_CUE_TEXT = st.lists(
    st.sampled_from(
        [
            "now",
            "still",
            "previously",
            "before",
            "have",
            "had",
            "since",
            "how long",
            "changed",
            "no longer",
            "snow",
            "stillness",
            "I've",
            "hasn't",
            "?",
            ".",
            "the",
            # the past cues written as patterns (`cues._NEEDLES`: a word each match holds)
            "did",
            "was",
            "we",
            "used to",
            "use to",
            "first",
            "our",
            "old",
            "in the beginning",
            "earlier",
            "is",
            "现在",
            "以前",
            "自从",
            "以来",
            "已经",
            "实现在",
            "多久了",
            "x",
        ]
    ),
    max_size=8,
).map(" ".join)


@pytest.mark.long
@given(_CUE_TEXT, st.sampled_from(["present", "past", "change"]))
def test_a_cue_is_found_as_by_the_whole_pattern_english_alone_in_ascii(words, kind):
    """An ASCII text is searched by the English cues only (compiling the Chinese ones costs most
    of a cue pattern); the answer is the whole pattern's."""
    english, chinese = cues.cue_sources(kind)
    folded = text.fold(words)
    assert cues._says(kind, folded) == bool(re.search(f"{english}|{chinese}", folded))


def test_each_english_update_cue_has_its_chinese_counterparts(vault, cli, monkeypatch):
    """still, latest, anymore, these days, at the moment, nowadays, today ask for the present in
    Chinese as in English; became, switched to, moved to say a change — with guards where their
    characters belong to other words (最新鲜, 当下载)."""
    for en, zh in (
        ("Do I still live in Shanghai?", "我仍然住在上海吗"),
        ("Do I still own a bike?", "我依然有自行车吗"),
        ("What is my latest address?", "我最新的地址是什么"),
        ("Do I not cook anymore?", "我不再做饭了吗"),
        ("What am I reading these days?", "我这些天在读什么书"),
        ("What project at the moment?", "眼下在做什么项目"),
        ("What do I drink nowadays?", "现今我喝什么"),
        ("What did I eat today?", "今日吃了什么"),
    ):
        assert cues.asks_for(en) == "present" and cues.asks_for(zh) == "present", zh
    assert cues.asks_for("最新鲜的水果是什么") is None and cues.asks_for("当下载完成时通知谁") is None
    for en, zh in (
        ("Xiao Ming became a manager", "小明变成了经理"),
        ("switched to pnpm", "改用 pnpm 了"),
        ("moved to Hangzhou", "调到杭州分部了"),
        ("updated to 9090", "端口更新为 9090"),
    ):
        assert cues.says_change(en) and cues.says_change(zh), zh
    # the cue is no topic: 最新 chooses no records, and the newer value goes first
    at(monkeypatch, "2025-01-10T10:00:00Z")
    old = put(vault, "我的地址是杭州西湖区文三路 1 号").id
    put(vault, "最新消息：项目下周上线")
    at(monkeypatch, "2025-06-10T10:00:00Z")
    new = put(vault, "我的地址是上海徐汇区漕溪路 8 号").id
    at(monkeypatch, "2025-06-20T10:00:00Z")
    ids = [h["id"] for h in cli.json("search", "我最新的地址是什么")["hits"]]
    assert ids[:2] == [new, old]


def test_the_names_a_query_writes():
    assert names_in("what is Alice's phone number now") == {"alic"}
    assert names_in("现在 Alice 的电话号码是多少") == {"alic"}  # Chinese around it: no title case
    assert names_in("Where Does Alice Live Now") == frozenset()  # title case names nothing
    assert names_in("I moved. Where does Bob live?") == {"bob"}
    assert names_in("where do I live") == frozenset()
    # a capitalised possessive is a name wherever it stands, first word or title case
    assert names_in("Alice's phone number now?") == {"alic"}
    assert names_in("What Is Alice's Phone Number Now") == {"alic"}
    # a month or a day of the week is a time, not a name (brief fix-i, item 8)
    assert names_in("what did I change in May") == frozenset()
    assert names_in("what was the port in March 2026") == frozenset()
    assert names_in("What did we decide on Monday about Alice") == {"alic"}
    assert names_in("where did Alice move in September") == {"alic"}
    assert names_in("what is May's phone number") == {"may"}  # (a possessive is someone's)


def test_a_month_or_a_weekday_the_question_names_is_no_name_the_update_rule_reads():
    """What the update rule holds an update to (`Intent.names`, read once at the top of search):
    "what did we pick in March" asks about a time, and a newer record need not say "March"."""
    now = epoch("2026-06-03")
    assert read("what chat did we pick in March", now).names == frozenset()
    assert read("what did Alice change on Friday", now).names == {"alic"}


@pytest.mark.long
def test_an_update_about_someone_else_does_not_go_first(vault, cli, monkeypatch):
    # "Alice" is common in this store, so IDF barely weighs it: the matched-term overlap of Bob's
    # newer number with Alice's is high. A name the query writes (capitalised, not its first word)
    # that the older record matched and the newer one lacks says they are not one fact.
    at(monkeypatch, "2025-01-10T10:00:00Z")
    for i in range(6):
        put(vault, f"Alice reviewed pull request {i} for the search team")
    alice = put(vault, "Alice's phone number is 555-0101").id
    at(monkeypatch, "2025-06-01T10:00:00Z")
    bob = put(vault, "Bob's phone number is 555-0202, he told us on the call this morning").id
    at(monkeypatch, "2025-06-05T10:00:00Z")
    hits = cli.json("search", "what is Alice's phone number now", "--explain")["hits"]
    assert hits[0]["id"] == alice and hits[0]["explain"]["updates"] is None
    assert bob in [h["id"] for h in hits]
    # the same store, her own newer number: that one is an update and goes first
    at(monkeypatch, "2025-07-01T10:00:00Z")
    again = put(vault, "Alice's new phone number is 555-0303, she switched to another carrier in May").id
    at(monkeypatch, "2025-07-05T10:00:00Z")
    hits = cli.json("search", "what is Alice's phone number now", "--explain")["hits"]
    assert [h["id"] for h in hits[:2]] == [again, alice] and hits[0]["explain"]["updates"] == alice


def test_chinese_spans_back_are_read_as_their_english_counterparts():
    """Every relative date English reads, Chinese reads too: weeks, months, half a year and years
    ago, and 前几天 (a few days ago) — in a record, from its own day, and in a query (years ago
    in a record only: a query keeps those words to match)."""
    day = epoch("2026-06-03")
    for zh, en in (
        ("两周前", "two weeks ago"),
        ("三个星期前", "3 weeks ago"),
        ("几周前", "a few weeks ago"),
        ("两个月前", "2 months ago"),
        ("三个多月前", "three months ago"),
        ("几个月前", "a few months ago"),
        ("一个月前", "a month ago"),
        ("半年前", "half a year ago"),
        ("一年前", "a year ago"),
        ("两年前", "two years ago"),
        ("十年前", "10 years ago"),
        ("前几天", "a few days ago"),
        ("前些天", "a few days ago"),
    ):
        said = dates.record_terms(day, text.fold(f"我{zh}买了一辆车"))
        assert said == dates.record_terms(day, text.fold(f"I bought a car {en}")), (zh, en)
        assert dates.query_terms(text.fold(f"{zh}买了什么"), day) == dates.query_terms(
            text.fold(f"what did I buy {en}"), day
        )
    assert "__m2026_05" in dates.record_terms(day, text.fold("两周前搬了家"))
    assert "__m2026_03" in dates.record_terms(day, text.fold("三个月前"))
    assert "__m2025_12" in dates.record_terms(day, text.fold("半年前"))  # six months back, not a year
    assert "__y2024" in dates.record_terms(day, text.fold("两年前")) and "__y2024" in dates.record_terms(
        day, text.fold("two years ago")
    )
    assert dates.query_terms(text.fold("what did Evan start two years ago"), day) == []
    assert "__d2026_05_31" in dates.record_terms(day, text.fold("前几天"))
    # a year written out is that year ("2020年前" is "before 2020"), a month written out that
    # month ("3月前" is "before March"); "前三天" is "the first three days"
    assert "__y2006" not in dates.record_terms(day, text.fold("2020年前完成"))
    assert dates.record_terms(day, text.fold("3月前交稿")) == dates.record_terms(day, text.fold("交稿"))
    assert dates.record_terms(day, text.fold("前三天很忙")) == dates.record_terms(day, text.fold("很忙"))
    # nor 提前几天 ("a few days in advance"), nor an ordinal (第三周前: "before week three")
    for ahead in ("提前几天通知我", "提前些天到", "第三周前交报告", "第十三周前交报告", "第3天前", "第二个月前"):
        assert dates.record_terms(day, text.fold(ahead)) == dates.record_terms(day, text.fold("通知")), ahead


def test_days_around_today_read_alike_in_both_languages():
    """ "the day before yesterday" is 前天 only (not yesterday too), "the day after tomorrow" is 后天
    (not tomorrow), 大后天 the day after that."""
    day = epoch("2026-06-03")  # a Wednesday
    for zh, en, want in (
        ("前天", "the day before yesterday", ["__d2026_06_01"]),
        ("后天", "the day after tomorrow", ["__d2026_06_05"]),
    ):
        for said in (zh, en):
            got = [t for t in dates.record_terms(day, text.fold(f"{said} 见了老王")) if t.startswith("__d")]
            assert got == ["__d2026_06_03", *want], said
            assert [t for t in dates.query_terms(text.fold(f"{said} 见了谁"), day) if t.startswith("__d")] == want, said
    assert "__d2026_06_06" in dates.record_terms(day, text.fold("大后天出发"))
    # 后天 as "acquired" (后天性, 先天和后天) names no day
    assert not [t for t in dates.record_terms(day, text.fold("后天性的习惯")) if t.startswith("__d2026_06_05")]


def test_chinese_days_and_spans_not_read_where_their_characters_mean_something_else():
    """From a Chinese speaker's review: 后天 inside 然后天气 / 以后天天, or meaning "acquired"; 前天
    inside 目前天气 / 以前天天; 前年 inside 年前年后; 前几天 after an event (出发前几天: before
    leaving) — none is a day. A range (五六年前, 两三个月前) is about that many, not one; 以前/之前
    and 多 are spans back too (三个月以前, 一个多星期前, 一年多前); 前两天 is two days ago."""
    day = epoch("2026-06-03")
    plain = dates.record_terms(day, text.fold("天气"))
    for not_a_day in (
        "然后天气变冷了",
        "之后天天加班",
        "以后天天锻炼",
        "最后天黑了才回家",
        "午后天气转晴",
        "雨后天晴",
        "后天因素",
        "后天培养",
        "目前天气不错",
        "以前天天加班",
        "年前年后都很忙",
        "出发前几天要办签证",
        "考试前几天很紧张",
        "生日前几天",
    ):
        assert dates.record_terms(day, text.fold(not_a_day)) == plain, not_a_day
    assert "__y2020" in dates.record_terms(day, text.fold("我五六年前在深圳工作过"))  # five or six: six
    assert "__y2025" not in dates.record_terms(day, text.fold("我五六年前在深圳工作过"))
    assert "__m2026_03" in dates.record_terms(day, text.fold("两三个月前"))
    assert "__y2001" in dates.record_terms(day, text.fold("二三十年前"))  # about 20 to 30: 25
    for zh, en in (
        ("三个月以前", "three months ago"),
        ("两周之前", "two weeks ago"),
        ("几天以前", "a few days ago"),
        ("一个多星期前", "a week ago"),
        ("一年多前", "a year ago"),
        ("前两天", "two days ago"),
    ):
        assert dates.record_terms(day, text.fold(zh)) == dates.record_terms(day, text.fold(en)), zh
    # English without its article
    assert dates.record_terms(day, text.fold("day before yesterday we met")) == dates.record_terms(
        day, text.fold("the day before yesterday we met")
    )


def test_chinese_cues_not_read_inside_other_words():
    for not_a_cue in ("今日头条上看到的新闻", "当下班后做什么", "我们当下午三点见", "眼下巴长了个痘", "眼下方有黑眼圈"):
        assert cues.asks_for(not_a_cue) is None, not_a_cue
    for no_change in ("从此处出发", "变成绩单", "把文件转到另一个文件夹"):
        assert not cues.says_change(no_change), no_change
    for change in ("公司搬迁到上海了", "我调到了新部门", "跳槽到腾讯了"):
        assert cues.says_change(change), change
    # the 的 of 别的, 有的, 真的, 的话, 打的, 的哥 stays in its word: no lone 别, 话, 真 to match
    assert search_terms("别的方案是什么")[0] == "别的" and "话" not in search_terms("下雨的话怎么办")
    assert "真" not in search_terms("真的要搬家吗")


_EARLIER = {
    "en": (
        "I have 3 plants on the balcony",
        "I now have 5 plants on the balcony, and the balcony plants grow well",
        "the balcony plants: repot the balcony plants, water the balcony plants",
        "how many plants do I have on the balcony",
    ),
    "zh": (
        "我在阳台养了三盆花",
        "我现在在阳台养了五盆花，阳台盆花长得很好",
        "阳台盆花换土，阳台盆花浇水，阳台盆花施肥",
        "阳台有几盆花",
    ),
}


def _earlier_store(vault, monkeypatch, lang: str) -> tuple[str, str, str]:
    """An old count, four records about its topic that outrank it and state no count, and a new
    count a month later; the top the rules re-order is four hits."""
    old_text, new_text, talk, query = _EARLIER[lang]
    (vault.root / "optmem.toml").write_text("[ranking]\nreorder_top = 4\n", "utf-8")
    at(monkeypatch, "2026-03-01T10:00:00Z")
    old = put(vault, old_text).id
    for mark in "甲乙丙丁" if lang == "zh" else ("alpha", "beta", "gamma", "delta"):
        put(vault, f"{talk} ({mark})", gate=False)
    at(monkeypatch, "2026-04-01T10:00:00Z")
    new = put(vault, new_text, gate=False).id
    return old, new, query


def test_a_newer_record_goes_first_only_when_it_states_a_value_the_older_does_not():
    day = ranking.DAY
    idfs = {"cluster": 1.0, "search": 1.0, "run": 1.0}
    old = ranking.Match("old", 0.0, 1, 2.0, frozenset({"cluster", "search", "run"}), values=frozenset({"#7.10"}))
    new = ranking.Match("new", 30 * day, 1, 1.9, frozenset({"cluster", "search", "run"}), values=frozenset({"#7.10"}))
    s = Ranking()
    # the same terms, no value the older lacks: the same thing said again, no update
    assert [p.at for p in ranking.updates_first([old, new], idfs, False, s)] == [0, 1]
    # … another value: an update
    other = new._replace(values=frozenset({"#2.11"}))
    assert [(p.at, p.over) for p in ranking.updates_first([old, other], idfs, False, s)] == [(1, "old"), (0, None)]
    # two notes, for a query that asks one thing: a shared subject word and 30 % of the score will do
    thin = other._replace(matched=frozenset({"cluster"}), score=0.7)
    assert [p.at for p in ranking.updates_first([old, thin], idfs, False, s)] == [0, 1]  # turns: not enough
    notes = [old._replace(note=True), thin._replace(note=True)]
    assert [p.at for p in ranking.updates_first(notes, idfs, False, s)] == [1, 0]
    assert [p.at for p in ranking.updates_first(notes, idfs, False, s, question=False)] == [0, 1]
    # … not when the older holds a date the query names
    dated = [notes[0]._replace(matched=notes[0].matched | {"__m2026_03"}), notes[1]]
    assert [p.at for p in ranking.updates_first(dated, idfs | {"__m2026_03": 1.0}, False, s)] == [0, 1]


@pytest.mark.parametrize(
    "session, newer_first",
    [
        (None, True),  # a note that gives the search cluster another value is its update
        ("chat-1", False),  # a conversation turn needs largely the same terms: chat speaks in passing
    ],
)
def test_a_note_with_another_value_is_an_update_a_conversation_turn_needs_more(
    vault, cli, monkeypatch, session, newer_first
):
    at(monkeypatch, "2026-02-01T10:00:00Z")
    put(vault, "We run the nightly backup job at 2am", session=session)
    at(monkeypatch, "2026-03-01T10:00:00Z")
    old = put(vault, "The search cluster runs Elasticsearch 7.10", session=session).id
    at(monkeypatch, "2026-04-01T10:00:00Z")
    new = put(vault, "Switched the search cluster to OpenSearch 2.11", session=session).id
    at(monkeypatch, "2026-04-05T10:00:00Z")
    hits = cli.json("search", "what does the search cluster run", "--explain")["hits"]
    assert [h["id"] for h in hits[:2]] == ([new, old] if newer_first else [old, new])
    assert hits[0]["explain"]["updates"] == (old if newer_first else None)


@pytest.mark.parametrize("switch, newer_first", [(True, True)])
def test_the_update_rule_compares_chinese_by_the_characters_a_record_holds(
    vault, cli, monkeypatch, switch, newer_first
):
    """我爸妈住在哪 pairs 我爸 and 妈住 across words: the newer record lacks those bigrams, not the
    parents — compared by characters it is the same topic, and its newer value goes first."""
    at(monkeypatch, "2026-03-10T10:00:00Z")
    for other in (
        "我姐一家住在郑州。",
        "我爸喜欢钓鱼。",
        "我妈住院检查了一周。",
        "周末和同事去爬山。",
        "公司发布了新产品。",
        "晚上看了一部电影。",
        "下周要交季度报告。",
        "楼下新开了一家面馆。",
    ):
        put(vault, other, session="chat")
    old = put(vault, "我爸妈住在老家洛阳。", session="chat").id
    at(monkeypatch, "2026-05-01T10:00:00Z")
    new = put(vault, "爸妈搬到郑州了，住在我姐家附近。", session="chat").id
    at(monkeypatch, "2026-05-10T10:00:00Z")
    hits = cli.json(
        "--set",
        f"ranking.cjk_characters={str(switch).lower()}",
        "search",
        "我爸妈现在住在哪儿？",  # (conversation turns, a question for now: largely the same terms)
        "--explain",
    )["hits"]
    ids = [h["id"] for h in hits]
    assert ids.index(new) < ids.index(old) if newer_first else ids.index(old) < ids.index(new)


def test_idf_takes_a_term_count_above_the_record_count_as_every_record():
    """A search reads the record count, then the counts of its terms; a process appending in
    between makes a term count larger than the record count it read (seen under load)."""
    assert ranking.idf(10, 12) == ranking.idf(10, 10) > 0


# -- old versions: their own relevance, lowered; below what replaced them (issue 44) ------------
def test_an_old_version_is_scored_by_its_own_relevance_times_the_status_factor():
    from optmem import view
    from optmem.record import Tier

    s = Ranking()
    now = epoch("2026-06-01")
    current = ranking.Candidate(2.0, 0.0, Tier.NORMAL, "note", view.Status.CURRENT, now)
    old = current._replace(status=view.Status.SUPERSEDED)
    cur, sup = ranking.score(current, now, s), ranking.score(old, now, s)
    assert sup.band == cur.band == 1  # no band of its own: it ranks among the current records …
    assert sup.status_factor == s.superseded_factor < 1 and cur.status_factor == 1.0
    assert sup.score == pytest.approx(cur.score * s.superseded_factor)  # … by its relevance, lowered
    # a strong old version goes above a weak current record; one that matches as well goes first
    weak = ranking.score(current._replace(relevance=1.0), now, s)
    assert weak.score < sup.score < cur.score
    # whatever trust and heat give the old version and take from the current one
    best_old = ranking.score(old._replace(kind="correction", importance=2.0), now, s)
    worst_current = ranking.score(
        current._replace(tier=Tier.CHAT, inferred=True, status=view.Status.COLD, was=view.Status.CURRENT), now, s
    )
    assert best_old.score < worst_current.score
    # a cold old version is lowered too (what it was when it cooled), and a redline ranks like any
    cold = ranking.score(old._replace(status=view.Status.COLD, was=view.Status.SUPERSEDED), now, s)
    assert (cold.band, cold.status_factor) == (1, s.superseded_factor)
    red = ranking.score(old._replace(tier=Tier.REDLINE), now, s)
    assert red.band == 1  # a superseded redline is no rule: not in the redlines' band
    # expired and pending records keep their bands below the current ones, not lowered
    for status in (view.Status.EXPIRED, view.Status.PENDING):
        parts = ranking.score(current._replace(status=status), now, s)
        assert parts.band > 1 and parts.status_factor == 1.0
    off = ranking.score(old, now, s._replace(superseded_factor=1.0))
    assert off.score == cur.score


@pytest.mark.parametrize(
    "order, later, expected",
    [
        (["a", "b", "c"], {}, ["a", "b", "c"]),  # nothing superseded: nothing moves
        (["old", "x", "new", "y"], {"old": frozenset({"new"})}, ["x", "new", "old", "y"]),  # right after it
        (["x", "new", "old"], {"old": frozenset({"new"})}, ["x", "new", "old"]),  # already below: stays
        (["old", "x"], {"old": frozenset({"new"})}, ["old", "x"]),  # its successor is no hit: stays
        # a chain a ← b ← c: each below every later version, the nearest first
        (["a", "b", "x", "c"], {"a": frozenset({"b", "c"}), "b": frozenset({"c"})}, ["x", "c", "b", "a"]),
        (["b", "a", "c"], {"a": frozenset({"b", "c"}), "b": frozenset({"c"})}, ["c", "b", "a"]),
        # the middle version is no hit: the oldest still goes below the current one
        (["a", "x", "c"], {"a": frozenset({"b", "c"})}, ["x", "c", "a"]),
        # two old versions of one fact (a key's values), and a cycle no writer makes keeps its order
        (["k1", "k2", "k3"], {"k1": frozenset({"k3"}), "k2": frozenset({"k3"})}, ["k3", "k1", "k2"]),
        (["p", "q"], {"p": frozenset({"q"}), "q": frozenset({"p"})}, ["p", "q"]),
    ],
)
def test_an_old_version_goes_below_the_records_that_replaced_it(order, later, expected):
    assert [order[i] for i in ranking.successors_first(order, later)] == expected


@given(st.permutations(["a", "b", "c", "d", "e", "f"]))
def test_successors_first_keeps_every_hit_and_every_version_below_its_successors(order):
    later = {"a": frozenset({"b", "c"}), "b": frozenset({"c"}), "d": frozenset({"e"})}
    placed = [order[i] for i in ranking.successors_first(order, later)]
    assert sorted(placed) == sorted(order)
    for old, newer in later.items():
        assert all(placed.index(n) < placed.index(old) for n in newer)
    free = [x for x in order if x == "f"]
    assert [x for x in placed if x == "f"] == free


def test_a_superseded_record_updates_nothing_however_new():
    day = ranking.DAY
    idfs = {"stage": 1.0, "python": 1.0}
    older = ranking.Match("current", 0.0, 1, 2.0, frozenset({"stage", "python"}), values=frozenset({"#3.11"}))
    newer = ranking.Match("old-version", 30 * day, 1, 2.0, frozenset({"stage", "python"}), values=frozenset({"#3.9"}))
    s = Ranking()
    assert [p.at for p in ranking.updates_first([older, newer], idfs, True, s)] == [1, 0]  # a newer value …
    gone = newer._replace(replaced=True)
    assert [p.at for p in ranking.updates_first([older, gone], idfs, True, s)] == [0, 1]  # … not when replaced


def test_a_question_about_what_came_before_a_change_asks_for_the_past():
    # "before" a thing or a clause in the past; "used to" of a habit; "the old …" asked in the past
    for query in (
        "Where did Bob work before Google?",
        "What did we deploy with before the switch to Argo?",
        "What car did my sister use to drive?",
        "Which gym used to be the closest?",
        "What was our old office address?",
        "What was the original launch date?",
        "搬家之前我住哪？",
        "升级前数据库是什么版本？",
        "原本打算几点出发？",
        "会议原定几点？",
        # more ways: "prior to", "in the beginning", "back when", someone's "old …", a final "first" in
        # the past tense, "before" a clause in the past; 最早, 一开始, 原计划 …; 还 of 还款 (repay) is no "still"
        "Who did I report to prior to the reorg?",
        "Where did the invoices go in the beginning?",
        "What Python did we pin back when TF was in there?",
        "What language was I learning earlier on?",
        "What was Marco's old mobile number?",
        "Which venue did we book first?",
        "What was the API rate limit before it was raised?",
        "What Node version did the frontend use before this sprint?",
        "测试 redis 最早用的是哪个端口?",
        "新首页一开始灰度多少?",
        "乐乐生日原计划在哪里办?",
        "刚开始二甲双胍的剂量是多少？",
        "上一个线上版本是多少？",
        "改之前还款日是几号？",
    ):
        assert cues.asks_for(query) == "past", query
    # … not where it relates two events, states a rule or asks what is to be done
    for query in (
        "How many days before I bought the phone did I go?",
        "What should I check before the deploy?",
        "How many days before my sister's wedding did I buy the dress?",
        "How many concerts did I go to before the festival?",
        "提交之前要跑什么检查",
        "上线前需要做什么？",
        "what is used to deploy the app",
        "What is the best cafe in the old town?",
        "目前用的什么数据库？",
        "前端用的什么框架？",
        "What was Jolene working on in the beginning of January 2023?",
        "Which trip did I take first, the one to Europe or the road trip?",
        "Who graduated first, second and third?",
        "What time did I go to bed on the day before I had a doctor's appointment?",
        "还款日是几号？",
        "When did Nate win his first video game tournament?",
        # … nor a question of what to do, "first" or "before" a clause in the present
        "What should I do first?",
        "Which step comes first?",
        "On release day, what should we run first?",
        "What to check before I deploy?",
    ):
        assert cues.asks_for(query) != "past", query
    assert cues.asks_for("Which gym did I go to before I moved?") == "past"  # (a clause in the past)


@pytest.mark.long
def test_what_came_after_the_value_asked_for_weighs_nothing(vault, cli, monkeypatch):
    """ "before Fastmail" names the newer value, a landmark in time: the older note, about the
    subject ("email"), comes first though the newer one holds the rarer word; a word the rest of the
    question names too stays the subject; with `landmarks` off, the landmark weighs as any word."""
    at(monkeypatch, "2025-01-10T10:00:00Z")
    old = put(vault, "Personal email is on Gmail.").id
    put(vault, "Email newsletter goes out on Fridays.")
    at(monkeypatch, "2025-06-10T10:00:00Z")
    new = put(vault, "Moved personal mail to Fastmail with a custom domain.").id
    at(monkeypatch, "2025-07-01T10:00:00Z")
    query = "What email service did I use before Fastmail?"
    hits = [h["id"] for h in cli.json("search", query)["hits"]]
    assert hits[:1] == [old] and new in hits  # the note holding the landmark alone: found, below
    assert read(query).after == frozenset({"fastmail"})
    assert read("How long did John practice chess for before winning the chess tournament?").after == frozenset(
        {"win", "tournament"}
    )
    assert read("before Fastmail?").after == frozenset()  # nothing else to find by
    assert read("换 Loki 之前用的什么日志系统？").after == frozenset({"loki", "换"})
    # (the newer says a change, "Moved", and puts Fastmail in place of Gmail: `update_said` reads it as
    # the older's newer value, and a question about the past puts the older above it — off here, so
    # that the landmark alone is measured)
    (vault.root / "optmem.toml").write_text("[ranking]\nlandmarks = false\nupdate_said = false\n", "utf-8")
    assert cli.json("search", query)["hits"][0]["id"] == new


@pytest.mark.long
def test_a_turn_that_names_the_landmark_keeps_its_weight(vault, cli, monkeypatch):
    # in a conversation the landmark relates two events: the turn that tells both is the answer
    at(monkeypatch, "2025-01-10T10:00:00Z")
    told = put(vault, "I invested in an Instant Pot before getting the Air Fryer.", session="s1").id
    put(vault, "Kitchen gadgets are my weakness; every gadget I invest in ends up in a drawer.", session="s2")
    at(monkeypatch, "2025-07-01T10:00:00Z")
    hits = cli.json("search", "What kitchen gadget did I invest in before getting the Air Fryer?")["hits"]
    assert hits[0]["id"] == told


@pytest.mark.long
@pytest.mark.parametrize(
    "old, new, query",
    [
        (
            "Our team chat runs on Slack.",
            "Team chat moved to Mattermost last week.",
            "What did the team chat run on before Mattermost?",
        ),
        ("团队聊天用的是钉钉。", "团队聊天换到飞书了。", "换飞书之前团队聊天用什么？"),
    ],
)
def test_a_question_about_the_past_puts_the_older_value_above_the_newer_one(vault, cli, monkeypatch, old, new, query):
    # the words of what came after ("before Mattermost") match the newer value: it says what the
    # older one was replaced by, so the older goes above it
    at(monkeypatch, "2026-02-01T10:00:00Z")
    old_id = put(vault, old).id
    at(monkeypatch, "2026-04-01T10:00:00Z")
    new_id = put(vault, new).id
    at(monkeypatch, "2026-06-01T10:00:00Z")
    hits = cli.json("search", query, "--explain")["hits"]
    assert [h["id"] for h in hits][:2] == [old_id, new_id], [h["text"] for h in hits]
    assert hits[0]["explain"]["asks"] == "past"


FILLERS = (
    "The team lunch is on Thursday this week",
    "Bought new running shoes at the outlet",
    "The plumber comes on Monday morning",
    "Book club read a novel about a lighthouse keeper",
    "The quarterly review slides are on the shared drive",
    "Dentist reminder: bring the insurance card",
)


def _newer_first(cli, q: str, new: str, old: str) -> list[str]:
    """The ids `search q` ranks, after asserting the newer note comes above the older one it updates
    (its explain names the older)."""
    hits = cli.json("search", q, "--explain")["hits"]
    ids = [h["id"] for h in hits]
    assert new in ids and ids.index(new) < ids.index(old), [h["text"] for h in hits]
    assert hits[ids.index(new)]["explain"]["updates"] == old
    return ids


def _old_first_without(cli, setting: str, q: str, new: str, old: str) -> None:
    """With the rule switched off (`setting`), the newer note is not found and the older answers first."""
    off = [h["id"] for h in cli.json("--set", setting, "search", q)["hits"]]
    assert new not in off and off[0] == old


def _a_car_among_fillers(vault, monkeypatch) -> str:
    """The fillers, then the note that answers "what car does she drive" (its id)."""
    at(monkeypatch, "2025-01-05T10:00:00Z")
    for text_ in FILLERS:
        put(vault, text_)
    at(monkeypatch, "2025-02-01T10:00:00Z")
    return put(vault, "Drives a blue 2012 Vauxhall Corsa").id


@pytest.mark.long
def test_a_newer_note_found_from_the_note_that_answers(vault, cli, monkeypatch):
    # "Sold the Corsa …" shares no word with the question: a person finds it from the note that
    # answers, by the old value it names and the change it says
    old = _a_car_among_fillers(vault, monkeypatch)
    put(vault, "Her brother drives a van for the bakery")
    at(monkeypatch, "2025-06-01T10:00:00Z")
    new = put(vault, "Sold the Corsa, picked up a secondhand Skoda Octavia estate").id
    at(monkeypatch, "2025-06-20T10:00:00Z")
    hits = cli.json("search", "what car does she drive", "--explain")["hits"]
    ids = [h["id"] for h in hits]
    assert ids.index(new) < ids.index(old) and hits[ids.index(new)]["explain"]["updates"] == old
    # asked for the past, the older is what is asked: no newer value is looked for
    past = [h["id"] for h in cli.json("search", "what car did she drive before")["hits"]]
    assert old in past and (new not in past or past.index(old) < past.index(new))
    # Chinese: the old value named (雅阁), the change said (卖了)
    at(monkeypatch, "2025-07-01T10:00:00Z")
    old_zh = put(vault, "老张开本田雅阁").id
    at(monkeypatch, "2025-09-01T10:00:00Z")
    new_zh = put(vault, "雅阁卖了，提了一台理想 L6").id
    at(monkeypatch, "2025-09-10T10:00:00Z")
    ids = [h["id"] for h in cli.json("search", "老张开什么车")["hits"]]
    assert ids.index(new_zh) < ids.index(old_zh)


@pytest.mark.long
def test_a_name_written_in_a_few_notes_still_finds_the_newer_note(vault, cli, monkeypatch):
    # an owner names their things again and again: "LastPass" in four notes is still a rare word
    # of the note that answers, and the newer note that names it is found from it
    at(monkeypatch, "2025-01-05T10:00:00Z")
    for text_ in FILLERS:
        put(vault, text_)
    old = put(vault, "Uses LastPass for passwords.").id
    put(vault, "LastPass family folder holds the streaming logins.")
    put(vault, "LastPass emergency access is set up for Sam.")
    at(monkeypatch, "2025-06-01T10:00:00Z")
    new = put(vault, "Everything is in Bitwarden now; LastPass vault exported and deleted.").id
    at(monkeypatch, "2025-06-20T10:00:00Z")
    _newer_first(cli, "What password manager does the user use?", new, old)


@pytest.mark.long
def test_a_newer_note_that_merely_shares_words_is_not_found_for_the_answer(vault, cli, monkeypatch):
    old = _a_car_among_fillers(vault, monkeypatch)
    at(monkeypatch, "2025-06-01T10:00:00Z")
    # the same rare word, no change said: a remark about it, not its new value
    remark = put(vault, "The Corsa needs new wiper blades before winter").id
    # a change said, sharing only a common word: about something else
    other = put(vault, "Switched the team lunch to Fridays").id
    at(monkeypatch, "2025-06-20T10:00:00Z")
    ids = [h["id"] for h in cli.json("search", "what car does she drive", "--explain")["hits"]]
    assert ids[0] == old and remark not in ids and other not in ids


@pytest.mark.long
def test_the_newer_note_is_looked_for_by_the_rare_words_alone(vault, monkeypatch):
    # a follower must share a rare word of the note that answers: the look-up reads those few
    # records, not every record holding its common words (at 100,000 notes, ranking every match
    # of "drives" cost ~50 ms for each of five notes)
    from optmem import search
    from optmem.index import Index

    old = _a_car_among_fillers(vault, monkeypatch)
    for i in range(30):
        put(vault, f"Drives the kids to swimming on day {i}")
    at(monkeypatch, "2025-06-01T10:00:00Z")
    new = put(vault, "Sold the Corsa, picked up a secondhand Skoda Octavia estate").id
    at(monkeypatch, "2025-06-20T10:00:00Z")
    looked: list[str] = []
    matches = Index.matches

    def spy(self, match, where, *args, **kwargs):
        if "r.ts >= ?" in where:  # (the follower's look-up)
            looked.append(match)
        return matches(self, match, where, *args, **kwargs)

    monkeypatch.setattr(Index, "matches", spy)
    ids = [h.record.id for h in search.search(vault, "what car does she drive").hits]
    assert ids.index(new) < ids.index(old)
    assert looked and all("drive" not in m for m in looked), looked  # (31 records hold it)
    assert any("corsa" in m for m in looked), looked


@pytest.mark.long
def test_no_word_of_a_note_is_counted_whole_when_it_holds_no_rare_word(vault, monkeypatch):
    # which words of the notes that answer are rare is read with bounded work (a word's matches up
    # to follow_rare + 1); a note none of whose words is rare is not looked at further, so no word
    # of it is counted in full (`doc_freq` read the whole list of "drives", "kids" … : at 100,000
    # records ~15 % of a search for a name)
    from optmem import search
    from optmem.index import Index

    at(monkeypatch, "2025-01-05T10:00:00Z")
    words = ["drives", "kids", "swimming", "lessons", "mornings", "pool", "coach", "towels"]
    for i in range(8):  # each note leaves one word out: every word is held by 7 records, none is rare
        put(vault, " ".join(w for w in words if w != words[i] or w == "swimming"), on_similar="store")
    at(monkeypatch, "2025-06-20T10:00:00Z")
    counted: list[list[str]] = []
    doc_freq = Index.doc_freq

    def spy(self, terms):
        counted.append(list(terms))
        return doc_freq(self, terms)

    monkeypatch.setattr(Index, "doc_freq", spy)
    hits = search.search(vault, "swimming").hits
    assert len(hits) == 8
    from optmem.reading.attributes import attribute_tokens
    from optmem.reading.query import read

    kin = [t for t in attribute_tokens(read("swimming").kin) if t != "swim"]  # (its attribute's other words)
    assert counted == [["swim"], kin], counted  # the query's own term and its attribute's, nothing of the notes'


def test_the_holders_of_a_word_are_counted_in_one_look_up_whatever_the_word(vault):
    # `Index.term_counts`: how many records hold each word some record holds — whatever the word
    # (a CJK pair, a quote, an underscore, one no record holds), in chunks past SQLite's limit
    from optmem.index import open_index

    for text_ in (
        "alpha beta gamma",
        "alpha beta",
        'alpha 端口 say "quoted" snake_case',
        "端口 配置",
        'alpha "quoted"',
    ):
        put(vault, text_)
    odd = ["nowhere", '"', "_", "%", "'"]
    with open_index(vault) as idx:
        many = [f"w{i}" for i in range(1200)]  # (more than one statement takes: the words follow them)
        counts = idx.term_counts([*many, "alpha", "beta", "gamma", "端口", "配置", "端", *odd])
        assert {t: counts[t] for t in ("alpha", "beta", "gamma", "端口", "配置", "端")} == {
            "alpha": 4,
            "beta": 2,
            "gamma": 1,
            "端口": 2,
            "配置": 1,
            "端": 2,  # (a CJK character alone is a term too)
        }
        assert not set(odd) & set(counts) and idx.doc_freq(["nowhere"]) == {"nowhere": 0}


def test_a_note_that_says_it_changes_something_gives_a_new_value():
    # two notes: "renamed to main" states no capitalised value, but says it replaces one
    settings = Ranking()
    idfs = {"default": 2.0, "branch": 2.0, "monorepo": 3.0}
    day = 86400.0
    old = ranking.Match(
        "o",
        0.0,
        0,
        10.0,
        frozenset({"default", "branch", "monorepo"}),
        note=True,
        text="Default branch in the monorepo is master",
    )
    for said, moves in (("monorepo default renamed to main", True), ("monorepo default is fine as it is", False)):
        new = ranking.Match("n", 30 * day, 0, 7.0, frozenset({"default", "monorepo"}), note=True, text=said)
        order = ranking.updates_first(
            [old, new], idfs, False, settings, values_of=lambda t: frozenset(), changed=cues.says_change
        )
        assert [r.at for r in order] == ([1, 0] if moves else [0, 1]), said


def test_change_verbs():
    for said in (
        "Upgraded the router to a Fritz!Box",
        "Replaced Jenkins with Buildkite",
        "rent raised to 1,600",
        "宽带升到 1000M 了",
        "服务迁到新机房了",
        "Jenkins 下周下线",
        "房租涨到 4800",
    ):
        assert cues.says_change(said), said
    for said in ("The router is in the hall", "把文件转到另一个文件夹", "宽带是电信的"):
        assert not cues.says_change(said), said


def test_a_note_that_holds_only_the_landmark_is_still_found(vault, cli, monkeypatch):
    """The landmark weighs nothing beside the subject; alone it still finds its note ("no matches"
    hid the only note there is)."""
    at(monkeypatch, "2025-06-10T10:00:00Z")
    fastmail = put(vault, "We switched our mail to Fastmail in March 2024").id
    put(vault, "the deploy pipeline lives in .github/workflows/deploy.yml")
    at(monkeypatch, "2025-07-01T10:00:00Z")
    assert [h["id"] for h in cli.json("search", "what email service did I use before Fastmail?")["hits"]] == [fastmail]


@pytest.mark.long
def test_a_question_about_the_past_does_not_put_a_note_that_only_shares_a_subject_word_first(
    vault, cli, monkeypatch, tmp_path
):
    # the sample vault: "Database is Postgres 16 … backend/migrations" shares "backend" with the
    # port's newer value, but is about the database — no older value of the backend's port
    import shutil
    from pathlib import Path

    sample = tmp_path / "sample"
    shutil.copytree(Path(__file__).parent.parent / "sample_vault", sample, ignore=shutil.ignore_patterns(".cache"))
    at(monkeypatch, "2026-12-01T10:00:00Z")
    first = cli.json("--vault", str(sample), "search", "what was the backend port before")["hits"][0]["text"]
    assert "Postgres" not in first and "FastAPI" not in first, first
    # Chinese: 数据库 is what the older note is about, not 后端
    at(monkeypatch, "2026-07-01T09:00:00Z")
    db_zh = put(vault, "数据库是 Postgres 16，迁移脚本放在后端仓库里。").id
    at(monkeypatch, "2026-08-01T09:00:00Z")
    new_zh = put(vault, "后端端口改成 9090 了。", gate=False).id
    at(monkeypatch, "2026-08-10T09:00:00Z")
    ids = [h["id"] for h in cli.json("search", "后端以前的端口是多少")["hits"]]
    assert ids.index(new_zh) < ids.index(db_zh), ids


def test_names_its_subject():
    from optmem.identifiers import names_its_subject as about

    db = "Database is Postgres 16; migrations live in backend/migrations."
    assert not about(db, "The backend listens on port 9090 behind nginx.")
    assert about("Mom is still in Columbus, renting.", "Mom finally closed on the condo; she lives in Tucson.")
    assert about("Gym plan: Mon/Wed/Fri", "the gym moved me to Tue/Thu")
    assert not about("Gym plan: Mon/Wed/Fri", "Standup moved to Fri")  # the colon ends the subject
    # a subject's nouns in -s, its identifiers and the words inside them
    assert about("Application logs are kept for 14 days.", "Retention on app logs extended to 30 days.")
    assert about("timeout_ms: 3000 (payments client)", "payments client timeout -> 5s")
    assert about("VPN: connect to vpn-us.corp.example.com", "use vpn2.corp.example.com going forward")
    # no content word in the subject: about whatever it shares
    assert about("We lint with flake8 + black + isort.", "Replaced flake8 with ruff.")
    # Chinese: the characters before the copula or preposition, 会 of 会员 included
    assert about("测试环境的 MySQL 端口是 3307", "测试库迁到新机器了，端口改成 13306")
    assert about("爱奇艺会员每月 25 元。", "视频会员涨价，现在 30 一个月。")
    assert not about("数据库是 Postgres 16，迁移脚本放在后端仓库里。", "后端端口改成 9090 了。")


def test_a_record_that_goes_above_an_older_one_keeps_its_own_newer_value_above_it():
    # "dropped duolingo …" (found from the Duolingo note) came before the Duolingo note in score
    # order; the Duolingo note then went above the older podcast note it updates — and took its
    # own newer value along, not leaving it below
    day = ranking.DAY
    idfs = {"spanish": 1.0}
    podcast = ranking.Match("podcast", 0.0, 1, 8.7, frozenset({"spanish"}), values=frozenset({"notes"}), note=True)
    newest = ranking.Match(
        "italki", 200 * day, 1, 6.8, frozenset(), values=frozenset({"lucia"}), note=True, follows="duolingo"
    )
    duo = ranking.Match(
        "duolingo", 100 * day, 1, 6.6, frozenset({"spanish"}), values=frozenset({"duolingo"}), note=True
    )
    order = ranking.updates_first([podcast, newest, duo], idfs, True, Ranking())
    assert [(p.at, p.over) for p in order] == [(1, "duolingo"), (2, "podcast"), (0, None)]


@pytest.mark.long
def test_a_terse_newer_note_naming_the_old_value_is_found(vault, cli, monkeypatch):
    # "cancelled Avenida; …" holds one rare word of the note that answers — a small share of its
    # words (the hotel, the trip, the city; 13 % by rarity): enough, with the change it says
    at(monkeypatch, "2025-01-05T10:00:00Z")
    for text_ in FILLERS:
        put(vault, text_)
    at(monkeypatch, "2025-02-01T10:00:00Z")
    old = put(vault, "Lisbon trip: booked the Avenida Palace hotel").id
    at(monkeypatch, "2025-02-20T10:00:00Z")
    new = put(vault, "cancelled Avenida; we're in an Airbnb in Alfama instead").id
    at(monkeypatch, "2025-03-01T10:00:00Z")
    _newer_first(cli, "where are we staying in Lisbon?", new, old)


@pytest.mark.long
def test_a_newer_note_putting_a_number_in_place_of_the_older_s_is_found_without_a_change_word(vault, cli, monkeypatch):
    # "Boulderhaus membership invoice: 52 a month" says no change and shares no word with the
    # question; it holds two words of the note that answers, one of them rare, and puts a number
    # in place of its number: the same attribute, a new value
    at(monkeypatch, "2025-01-05T10:00:00Z")
    for text_ in FILLERS:
        put(vault, text_)
    at(monkeypatch, "2025-02-01T10:00:00Z")
    old = put(vault, "Climbing gym membership is 45 a month").id
    at(monkeypatch, "2025-04-01T10:00:00Z")
    # the rare word, no number in place of one: a remark, not found from the answer
    remark = put(vault, "Membership card lives in the blue wallet").id
    at(monkeypatch, "2025-06-01T10:00:00Z")
    new = put(vault, "Boulderhaus membership invoice: 52 a month").id
    at(monkeypatch, "2025-06-20T10:00:00Z")
    ids = _newer_first(cli, "how much is my climbing gym?", new, old)
    assert remark not in ids
    # switched off, a newer note must say it changes something
    _old_first_without(cli, "ranking.follow_values=false", "how much is my climbing gym?", new, old)


@pytest.mark.long
def test_a_newer_note_that_says_a_change_is_followed_before_one_that_only_gives_a_number(vault, cli, monkeypatch):
    # both newer notes hold the older's rare word and put a number in place of its number; the
    # one that says it changes something is its new value, the other is someone else's alarm
    at(monkeypatch, "2025-01-05T10:00:00Z")
    for text_ in FILLERS:
        put(vault, text_)
    old = put(vault, "Wake-up alarm set for 6:00 on weekdays").id
    at(monkeypatch, "2025-05-01T10:00:00Z")
    new = put(vault, "Alarm 6:45 now, the new commute is shorter").id
    at(monkeypatch, "2025-05-10T10:00:00Z")
    kids = put(vault, "Kids' alarm 7:00 on weekdays").id
    at(monkeypatch, "2025-06-01T10:00:00Z")
    ids = _newer_first(cli, "what time am I waking up?", new, old)
    assert kids not in ids


@pytest.mark.long
def test_a_newer_note_lacking_the_question_s_name_follows_when_it_names_nobody_else(vault, cli, monkeypatch):
    # "how much should I be feeding Biscuit?": the newer note calls him "the dog" and names nobody
    # the older does not — its new value; "Max's bowl: …" names another dog, and is not
    at(monkeypatch, "2025-01-05T10:00:00Z")
    for text_ in FILLERS:
        put(vault, text_)
    at(monkeypatch, "2025-02-01T10:00:00Z")
    old = put(vault, "Biscuit eats Purina Pro Plan chicken & rice, 2 cups a day.").id
    at(monkeypatch, "2025-05-01T10:00:00Z")
    new = put(vault, "Vet visit: he's getting chunky, so we cut the dog down to 1.5 cups a day, same food.").id
    at(monkeypatch, "2025-05-10T10:00:00Z")
    other = put(vault, "Max's bowl: 3 cups a day, puppy food.").id
    at(monkeypatch, "2025-06-01T10:00:00Z")
    q = "How much should I be feeding Biscuit?"
    ids = _newer_first(cli, q, new, old)
    assert other not in ids
    _old_first_without(cli, "ranking.follow_unnamed=false", q, new, old)


@pytest.mark.long
def test_a_newer_note_saying_a_change_of_value_goes_above_when_the_question_s_words_split(vault, cli, monkeypatch):
    # "which account does my paycheck land in?": the older matched "paycheck", the newer "account";
    # they share no word of their own — the newer says it changes something and puts a name in
    # place of the older's: the value asked for, said later ("account", said often, weighs less)
    at(monkeypatch, "2025-01-05T10:00:00Z")
    for text_ in (*FILLERS, "The streaming account is shared with Sam", "Gym account number is in the drawer"):
        put(vault, text_)
    at(monkeypatch, "2025-02-01T10:00:00Z")
    old = put(vault, "Paycheck goes to Wells Fargo checking").id
    at(monkeypatch, "2025-06-01T10:00:00Z")
    new = put(vault, "Direct deposit switched to the Schwab account").id
    at(monkeypatch, "2025-06-20T10:00:00Z")
    q = "which account does my paycheck land in?"
    hits = cli.json("search", q, "--explain")["hits"]
    ids = [h["id"] for h in hits]
    assert ids.index(new) < ids.index(old), [h["text"] for h in hits]
    assert hits[ids.index(new)]["explain"]["updates"] == old
    off = [h["id"] for h in cli.json("--set", "ranking.update_said=false", "search", q)["hits"]]
    assert off.index(old) < off.index(new)


def test_replaces_a_number_by_a_number():
    assert ranking.replaces_number(frozenset({"#52"}), frozenset({"#45"}))
    assert ranking.replaces_number(frozenset({"#500", "pgbouncer"}), frozenset({"#200", "pg"}))
    assert not ranking.replaces_number(frozenset({"heron", "gitlab"}), frozenset({"falcon", "jenkin"}))  # words
    assert not ranking.replaces_number(frozenset({"#45", "#2"}), frozenset({"#45"}))  # none of the older's replaced
    assert not ranking.replaces_number(frozenset({"#45"}), frozenset({"#45"}))


FILLERS_ZH = (
    "周四团队聚餐，地点待定",
    "下周一水电师傅上门修热水器",
    "季度复盘的材料放在共享盘",
    "看牙记得带医保卡",
    "生产环境的 Kafka 保留 7 天",
)


@pytest.mark.long
def test_a_newer_note_of_the_same_subject_goes_above_though_the_question_names_it_less(vault, cli, monkeypatch):
    # the older note repeats the question's words (环境, 端口) and outscores the newer one more than
    # threefold; the newer names the older's own words (预发, mysql, 账号) and puts one number in
    # place of another: the same attribute of the same subject, said later
    at(monkeypatch, "2025-01-05T10:00:00Z")
    for text_ in FILLERS_ZH:
        put(vault, text_)
    old = put(vault, "预发环境的 MySQL 端口是 3306，只读账号是 app_ro。").id
    at(monkeypatch, "2025-03-01T10:00:00Z")
    # shares the older's words, but states no value in place of one of its own (nor says a change)
    remark = put(vault, "预发 MySQL 慢查询日志每天清理，只读账号查不了").id
    at(monkeypatch, "2025-04-01T10:00:00Z")
    new = put(vault, "预发 mysql 改到 3316 了，只读账号没变").id
    at(monkeypatch, "2025-04-10T10:00:00Z")
    hits = cli.json("search", "现在预发环境的数据库连哪个端口？", "--explain")["hits"]
    ids = [h["id"] for h in hits]
    assert ids.index(new) < ids.index(old), [h["text"] for h in hits]
    assert hits[ids.index(new)]["explain"]["updates"] == old
    assert remark not in ids or ids.index(remark) > ids.index(old), [h["text"] for h in hits]
    # switched off, the older keeps its place above the newer
    # (nor found from it: it puts a number in place of the older's, `follow_values`)
    off = cli.json(
        "--set",
        "ranking.update_overlap_text=0",
        "--set",
        "ranking.follow_values=false",
        "search",
        "现在预发环境的数据库连哪个端口？",
    )
    ids = [h["id"] for h in off["hits"]]
    assert ids.index(old) < ids.index(new)


def test_a_newer_note_naming_the_older_s_subject_in_its_own_words_replaces_its_value():
    # the question's words split between the two ("contact" in the older, "prescription" in the
    # newer): what ties them is the words of the notes themselves, and a value put in place of one
    day = ranking.DAY
    idfs = {"contact": 2.0, "prescript": 2.0}
    old = ranking.Match("old", 0.0, 1, 6.3, frozenset({"contact"}), values=frozenset({"#2.75"}), note=True, text="old")
    new = ranking.Match(
        "new", 90 * day, 1, 6.2, frozenset({"prescript"}), values=frozenset({"#3.00", "#3.25"}), note=True, text="new"
    )
    shares = {("old", "new"): 0.4}

    def share(o: ranking.Match, m: ranking.Match) -> float:
        return shares.get((o.id, m.id), 0.0)

    s = Ranking()
    assert [(p.at, p.over) for p in ranking.updates_first([old, new], idfs, False, s, subject=share)] == [
        (1, "old"),
        (0, None),
    ]
    # without the notes' own words in common: relevance's order
    assert [p.at for p in ranking.updates_first([old, new], idfs, False, s)] == [0, 1]
    shares[("old", "new")] = 0.25  # "port" alone of "orders backend listens on port": not a third
    assert [p.at for p in ranking.updates_first([old, new], idfs, False, s, subject=share)] == [0, 1]
    shares[("old", "new")] = 0.4
    # a value of another shape (a name where the older states numbers), no change said: no update
    named = new._replace(values=frozenset({"dailies"}))
    assert [p.at for p in ranking.updates_first([old, named], idfs, False, s, subject=share)] == [0, 1]
    # two conversation turns, or a query that asks no one thing: relevance's order
    turns = [old._replace(note=False), new._replace(note=False)]
    assert [p.at for p in ranking.updates_first(turns, idfs, False, s, subject=share)] == [0, 1]
    assert [p.at for p in ranking.updates_first([old, new], idfs, False, s, question=False, subject=share)] == [0, 1]
    # switched off
    off = s._replace(update_overlap_text=0.0)
    assert [p.at for p in ranking.updates_first([old, new], idfs, False, off, subject=share)] == [0, 1]


def test_replaces_a_value_by_one_of_its_shape():
    assert ranking.replaces(frozenset({"#9090"}), frozenset({"#8080"}))
    assert ranking.replaces(frozenset({"kafka"}), frozenset({"rocketmq", "#2"}))
    assert not ranking.replaces(frozenset({"飞", "书"}), frozenset({"钉"}))  # Chinese characters: no shape
    assert not ranking.replaces(frozenset({"dailies"}), frozenset({"#2.75"}))
    assert not ranking.replaces(frozenset({"#8080", "#2"}), frozenset({"#8080"}))  # nothing of the older's replaced
