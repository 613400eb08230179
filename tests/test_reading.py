"""Every language rule in one home (optmem/reading): a query is read once into an `Intent`, and
each rule that changes an order has a switch in [ranking] — off, it reads nothing."""

from __future__ import annotations

import ast
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import put

import optmem
from optmem import dates, settings, text
from optmem.errors import UsageError
from optmem.reading import cues
from optmem.reading.query import Intent, lone_characters, read, search_terms, terms_of
from optmem.settings import Ranking

pytestmark = pytest.mark.usefixtures("no_sweep")

SATURDAY_AFTER = datetime(2026, 5, 4, 12, tzinfo=UTC).timestamp()  # a Monday


def off(name: str) -> Ranking:
    return Ranking()._replace(**{name: False})


def test_a_query_is_read_once_into_what_it_asks():
    assert read("How many plants do I have now?")._replace(kin=()) == Intent(
        "How many plants do I have now?", ["plant", "now"], "present", frozenset(), frozenset({"now"}), [], True
    )
    zh = read("小明现在住在哪里")
    assert zh.terms == ["小明", "住在"] and zh.asks == "present" and zh.characters == ["小", "明", "住", "在"]
    # a query that asks one thing, or a few words; not what someone said in a chat
    assert read("orders backend port").question and read("小明住在哪里？").question
    assert not read("我好难过。我应该怎么办？").question and not read("我特别期待那天晚上！").question
    assert not read("对了，舅舅会做蛋糕，他还教过我呢！").question  # an exclamation, though 呢 ends it
    assert read("What was Alice's previous address?").asks == "past"
    assert read("What was Alice's previous address?").names == frozenset()  # the past: no newer-first rule to hold back
    assert read("what is Alice's phone number now").names == {"alic"}
    # a day named is a date to match, not a question of its own
    assert read("what did we sign last Saturday", SATURDAY_AFTER).asks is None


@pytest.mark.parametrize(
    "switch, query, on, off_",
    [
        ("stopwords", "what is the port", ["port"], ["what", "is", "the", "port"]),
        ("question_words", "how many plants", ["plant"], ["mani", "plant"]),
        ("question_words", "小明住在哪里", ["小明", "明住", "住在"], ["小明", "明住", "住在", "在哪", "哪里"]),
    ],
)
def test_the_words_a_query_drops_have_switches(switch, query, on, off_):
    assert search_terms(query) == on
    assert search_terms(query, settings=off(switch)) == off_


def test_the_splits_of_a_query_have_switches():
    assert terms_of("我昨天买了什么", SATURDAY_AFTER)[:1] == ["买了"]
    assert "我" in terms_of("我昨天买了什么", SATURDAY_AFTER, off("pronouns"))
    assert terms_of("小明现在住在哪里") == ["小明", "住在"]
    assert terms_of("小明现在住在哪里", None, off("time_words")) == ["小明", "明现", "现在", "在住", "住在"]
    dated = terms_of("what did I do in May 2023")
    assert "may" not in dated and any(t.startswith("__") for t in dated)
    assert terms_of("what did I do in May 2023", None, off("query_dates")) == ["may", "2023"]


@pytest.mark.parametrize(
    "switch, query, on, off_",
    [
        ("present_cues", "Where do I live now?", "present", None),
        ("present_cues", "我现在住在哪", "present", None),
        ("past_cues", "What was my previous address?", "past", None),
        ("past_cues", "How often do I play now, and previously?", "present", "present"),  # the present wins anyway
    ],
)
def test_what_a_query_asks_has_switches(switch, query, on, off_):
    assert cues.asks_for(query) == on and read(query).asks == on
    assert cues.asks_for(query, off(switch)) == off_ and read(query, None, off(switch)).asks == off_


def test_the_other_readings_have_switches():
    assert read("what is Alice's phone number now", None, off("names")).names == frozenset()


def test_a_switch_is_true_or_false():
    assert settings.load(None, ["ranking.stopwords=false"]).ranking.stopwords is False
    assert settings.load("[ranking]\nnames = false\n").ranking.names is False
    assert Ranking().stopwords and Ranking().cjk_lone  # every rule on by default
    with pytest.raises(UsageError, match="expected true or false"):
        settings.load("[ranking]\nstopwords = 1\n")


def _switch(vault, name: str) -> None:
    (vault.root / "optmem.toml").write_text(f'[lifecycle]\nauto_sweep = "off"\n[ranking]\n{name} = false\n', "utf-8")


def test_switching_off_the_names_lets_someone_elses_newer_number_go_first(vault, cli, monkeypatch):
    monkeypatch.setenv("OPTMEM_NOW", "2025-01-10T10:00:00Z")
    for i in range(6):
        put(vault, f"Alice reviewed pull request {i} for the search team")
    alice = put(vault, "Alice's phone number is 555-0101").id
    monkeypatch.setenv("OPTMEM_NOW", "2025-06-01T10:00:00Z")
    bob = put(vault, "Bob's phone number is 555-0202, he told us on the call this morning").id
    monkeypatch.setenv("OPTMEM_NOW", "2025-06-05T10:00:00Z")
    assert cli.json("search", "what is Alice's phone number now")["hits"][0]["id"] == alice
    _switch(vault, "names")
    hits = cli.json("search", "what is Alice's phone number now", "--explain")["hits"]
    assert hits[0]["id"] == bob and hits[0]["explain"]["updates"] == alice


def test_switching_off_the_past_cues_puts_the_newer_value_first(vault, cli, monkeypatch):
    monkeypatch.setenv("OPTMEM_NOW", "2025-01-10T10:00:00Z")
    old = put(vault, "My address is 12 Elm Street").id
    monkeypatch.setenv("OPTMEM_NOW", "2025-06-10T10:00:00Z")
    new = put(vault, "My address is 8 Oak Avenue").id
    monkeypatch.setenv("OPTMEM_NOW", "2025-06-20T10:00:00Z")
    hits = cli.json("search", "what was my previous address", "--explain")["hits"]
    assert [h["id"] for h in hits] == [old, new] and hits[0]["explain"]["asks"] == "past"
    _switch(vault, "past_cues")
    hits = cli.json("search", "what was my previous address", "--explain")["hits"]
    assert [h["id"] for h in hits] == [new, old] and hits[0]["explain"]["asks"] is None


def test_switching_off_the_chinese_fallback_finds_no_pair(vault, cli):
    put(vault, "我养了一只猫，叫咪咪")
    put(vault, "同事说养猫很解压", domain="work")
    # 养猫 occurs only outside the filter: the characters within it do
    assert len(cli.json("search", "养猫", "--domain", "default")["hits"]) == 1
    _switch(vault, "cjk_fallback")
    assert cli.json("search", "养猫", "--domain", "default")["hits"] == []


def test_a_chinese_pair_no_record_holds_searches_by_its_characters(vault, cli):
    # 多重 is no word any note writes: its 重 is the 重 of 体重 (多 is held by none); 现在 says when
    weight = put(vault, "体检体重 72 公斤，医生说要控制").id
    put(vault, "体检报告放在抽屉里")
    hits = cli.json("search", "我现在多重？")["hits"]
    assert [h["id"] for h in hits] == [weight]
    _switch(vault, "cjk_lone")
    # (without the lexicon of attributes too: 多重 asks about weight, which 体重 states)
    assert cli.json("--set", "ranking.attribute_share=0", "search", "我现在多重？")["hits"] == []


def test_the_characters_a_missing_pair_leaves():
    held = {"多重": 0, "称了": 3, "上次": 5}
    assert lone_characters(["称了", "多重", "上次"], held) == ["多", "重"]
    assert lone_characters(["称了", "上次"], held) == []  # every pair occurs: nothing more
    # a character of grammar, one the query holds as a term, a date's, a word's: none
    assert lone_characters(["的人", "人"], {}) == []
    assert lone_characters(["db", dates.PREFIX + "m2"], {}) == []


@pytest.mark.parametrize(
    "name",
    ["change_cues", "change_updates", "cjk_common", "amount_share"],
)
def test_a_retired_rule_s_switch_is_told_it_is_no_longer_read(name):
    loaded = settings.load(f"[ranking]\n{name} = false\n")
    assert any(f"ranking.{name} is no longer read" in w for w in loaded.warnings), loaded.warnings
    assert not hasattr(loaded.ranking, name)


# -- the layout --------------------------------------------------------------------------------------
def _imports(module: str) -> set[str]:
    """The optmem modules a module imports, anywhere in it (functions too)."""
    root = Path(optmem.__file__).parent
    path = root.joinpath(*module.split(".")[1:]).with_suffix(".py")
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("optmem"):
            found |= {f"{node.module}.{a.name}" if node.module == "optmem.reading" else node.module for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("optmem")}
    return found


def test_the_tokeniser_and_the_scorer_read_no_question():
    """The tokeniser takes its few word lists from the lexicon and imports no reader (nor dates:
    the text ↔ dates circle is gone); the scorer imports no reading at all — it is handed what the
    query asks. The lexicon imports nothing."""
    assert {m for m in _imports("optmem.text") if m.startswith("optmem.reading")} == {"optmem.reading.lexicon"}
    assert "optmem.dates" not in _imports("optmem.text")
    assert not {m for m in _imports("optmem.ranking") if m.startswith("optmem.reading")}
    assert _imports("optmem.reading.lexicon") == set()
    for name in ("asks_amount", "search_terms", "questions"):
        assert not hasattr(text, name), name
    from optmem import ranking

    for name in ("UPDATE_CUES", "asks_for", "names_in", "says_change", "cue_terms"):
        assert not hasattr(ranking, name), name


def test_a_querys_pronouns_are_no_terms():
    from optmem.reading.query import terms_of
    from optmem.settings import Ranking

    assert terms_of("What did he say about his dog?") == ["say", "dog"]
    assert terms_of("did she move to Paris?") == ["move", "pari"]
    # switched off, the query reads as it did
    off = Ranking(pronouns=False)
    assert "he" in terms_of("What did he say about his dog?", settings=off)


def test_every_rule_has_a_switch_and_a_row_and_the_docs_print_the_table():
    from pathlib import Path

    from optmem.reading import rules

    fields = Ranking._fields
    switches = {name.strip() for r in rules.RULES for name in r.switch.split(",")}
    assert switches <= set(fields)  # every row names real settings …
    # … and every on/off switch has its row
    assert {f for f in fields if isinstance(getattr(Ranking(), f), bool)} <= switches
    assert all(r.locomo and r.lme and r.madial and r.updates and "…" not in r[4:] for r in rules.RULES)
    docs = (Path(__file__).resolve().parent.parent / "docs" / "search.md").read_text("utf-8")
    assert rules.markdown() in docs


def test_the_characters_a_missing_pair_leaves_are_found_without_searching_the_terms_per_character():
    """A long Chinese query is thousands of pairs: `lone_characters` asked "is this character a
    term?" of the list of terms once per character — N² steps (a 60,000-character query searched
    for ten minutes). It asks a set: the list is never searched."""

    class Terms(list):  # (counts how often the list itself is searched)
        searched = 0

        def __contains__(self, item: object) -> bool:
            Terms.searched += 1
            return super().__contains__(item)

    pairs = Terms(["称了", "多重", "上次", "人"])
    assert lone_characters(pairs, {"称了": 3, "上次": 5}) == ["多", "重"]
    assert Terms.searched == 0
