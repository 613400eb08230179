import unicodedata

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from optmem import compare, text
from optmem.reading.query import search_terms, terms_of


def test_cjk_text_is_indexed_as_bigrams_and_single_characters():
    toks = text.tokens("端口改成9090 Port")
    assert "端口" in toks and "口改" in toks and "端" in toks
    assert "9090" in toks and "port" in toks


def test_query_terms_use_bigrams_and_keep_a_lone_character():
    assert text.query_terms("小明喜欢") == ["小明", "明喜", "喜欢"]
    assert text.query_terms("猫") == ["猫"]
    assert text.query_terms("Backend PORT port") == ["backend", "port"]


def test_search_drops_english_function_words_unless_nothing_else_is_left():
    assert search_terms("What is the port of the backend?") == ["port", "backend"]
    assert search_terms("the") == ["the"]
    assert search_terms("后端的端口 is what") == ["后端", "端口"]  # (的 split: no 端的, 的端)


def test_a_chinese_query_drops_the_form_of_its_question_while_a_topic_is_left():
    assert search_terms("小明现在住在哪里") == ["小明", "明现", "现在", "在住", "住在"]
    assert search_terms("小明搬家了吗") == ["小明", "明搬", "搬家", "家了"]
    assert search_terms("怎么部署") == ["部署"] and search_terms("谁负责部署？")[0] == "负责"
    assert "多少" not in search_terms("后端端口是多少")
    assert search_terms("什么") == ["什么"]  # nothing else left: kept
    assert search_terms("哪吒的电影")[0] == "哪吒" and "茶几" in search_terms("茶几放在哪")
    assert search_terms("吗啡") == ["吗啡"]
    # a question word is cut out, not every bigram with one of its characters: topics stay
    assert "家什" in search_terms("家什放在哪里") and "几率" in search_terms("中奖几率多大")
    assert "毛呢" in search_terms("毛呢大衣在哪买") and search_terms("我住几楼") == ["我住", "楼"]
    assert search_terms("卡罗琳什么时候去了") == ["卡罗", "罗琳", "去了"]  # neighbours pair across it
    # a final 吧/呢 that ends a noun (酒吧, 网吧, 毛呢) is the topic, not the question's mood
    assert search_terms("毛呢") == ["毛呢"] and search_terms("去三里屯的酒吧")[-1] == "酒吧"
    assert search_terms("网吧") == ["网吧"] and search_terms("好吧") == ["好"]
    assert search_terms("他在哪里呢") == ["他在"]
    assert search_terms("小红喜欢什么花呢") == ["小红", "红喜", "喜欢", "花"]  # 花呢 the cloth is rarer
    assert search_terms("喝点水吧")[-1] == "点水" and search_terms("有多厚呢") == ["有多", "多厚"]
    assert terms_of("毛呢") == ["毛呢"] and terms_of("走了吗") == ["走了"]
    # the copula beside a question word is the question's form too: 端口是多少 asks about 端口
    assert search_terms("后端端口是多少") == ["后端", "端端", "端口"]
    assert search_terms("什么是向量数据库")[:2] == ["向量", "量数"]
    assert search_terms("但是多少钱")[0] == "但是" and search_terms("于是谁来了")[0] == "于是"
    # a particle left alone, or ending the query, is no topic
    assert "的" not in search_terms("部署步骤是怎样的") and search_terms("我对什么过敏啊") == ["我对", "过敏"]


def test_the_amount_word_after_how_is_the_question_s_form_as_duoshao_is():
    # "how many", "how much", "how long" ask for a number, as 多少 and 多久 do: no topic
    assert search_terms("How many Instagram followers do I have?") == ["instagram", "follow"]
    assert search_terms("How long have I had my cat, Luna?") == ["cat", "luna"]
    assert search_terms("how much did the bike cost") == ["bike", "cost"]
    # … only after "how": "long hair", "much better" keep theirs; "how often" keeps "often"
    assert search_terms("long hair") == ["long", "hair"] and "often" in search_terms("how often do I run")
    assert search_terms("How much is a long ride") == ["long", "ride"]
    assert search_terms("how many") == ["how", "mani"]  # nothing else left: kept


def test_ji_before_a_measure_word_is_a_question_word_and_the_measure_word_stays():
    # 几期, 几家, 几双 ask a count as 几个 does: 几 goes, no 了几 / 几期 left to match
    issues = search_terms("《国家地理》我看完了几期？")
    assert "了几" not in issues and "几期" not in issues and issues[-1] == "期"
    assert "过几" not in search_terms("我一共去过几家韩国餐厅")
    # … and the measure word stays with what follows, which may be a noun it begins (年级, 号线)
    assert search_terms("我上几年级") == ["我上", "年级"] and "号线" in search_terms("坐几号线")
    # … and before a unit a count or a sum is asked in (几小时, 几公里): no 几小 / 几公 left
    assert search_terms("开车要几小时") == ["开车", "车要", "小时"] and search_terms("跑了几公里") == ["跑了", "公里"]
    # 几 in other words is no question word — 茶几 before a measure word too; 多少 takes none
    assert "茶几" in search_terms("茶几套装多少钱") and "套装" in search_terms("茶几套装多少钱")
    assert "几率" in search_terms("中奖几率多大") and "几乎" in search_terms("几乎每天都跑步")
    assert "好几" in search_terms("好几个朋友在上海") and "十几" in search_terms("十几个人来了")
    assert search_terms("我们有多少项目") == ["我们", "项目"] and search_terms("但是多少钱") == ["但是", "钱"]


def test_what_kind_and_the_existential_you_beside_a_question_word_are_its_form():
    # 什么样 is one question word (no lone 样 left to match every 一样); 有 before 哪些 / 什么 /
    # 多少 says "there are", as 是 beside a question word is the copula — not 没有, 还有, 所有
    assert search_terms("内特喜欢什么样的书") == ["内特", "特喜", "喜欢", "书"]
    assert search_terms("乔琳最喜欢的书有哪些？")[-1] == "书"
    assert search_terms("你有什么建议") == ["你", "建议"]
    assert search_terms("没有什么问题") == ["没有", "问题"] and search_terms("所有什么") == ["所有"]
    assert search_terms("现有多少用户")[0] == "现有" and search_terms("患有什么病")[0] == "患有"


def test_latin_words_are_nfkc_folded():
    assert text.tokens("ＰＯＲＴ　８０８０") == ["port", "8080"]


def test_fingerprint_folds_spacing_punctuation_case_and_intensifiers():
    assert text.fingerprint("小明非常喜欢喝咖啡！") == text.fingerprint("小明 很喜欢喝咖啡")
    assert text.fingerprint("I REALLY like tea.") == text.fingerprint("i like tea")
    assert text.fingerprint("小明喜欢喝咖啡") != text.fingerprint("小明喜欢喝拿铁")


def test_texts_without_letters_or_digits_are_not_similar():
    assert compare.similarity("！！！", "???") == 0.0


def test_numbers_that_differ_are_never_similar():
    assert compare.similarity("端口是8080", "端口是9090") == 0.0
    assert compare.similarity("port is 8080", "the port is 8080") > 0.8


@pytest.mark.long
@given(st.text(alphabet="abc 端口喜欢", min_size=1, max_size=30))
def test_fingerprint_ignores_extra_whitespace_and_case(s):
    assert text.fingerprint(s) == text.fingerprint("  " + s.upper().replace(" ", "  ") + " ")


@pytest.mark.long
@given(st.text(max_size=60))
def test_every_query_term_of_a_text_is_among_its_index_tokens(s):
    assert set(text.query_terms(s)) <= set(text.tokens(s))


def test_english_words_are_stemmed_alike_in_index_query_and_fingerprint():
    assert text.tokens("Deployments deploying 部署") == ["deploy", "deploy", "部", "署", "部署"]
    assert search_terms("What deployments are running?") == ["deploy", "run"]
    assert search_terms("the") == ["the"]  # the stop list is applied to words as written
    assert text.fingerprint("The servers restarted.") == text.fingerprint("the server restarts")
    assert text.fingerprint("port 8080") != text.fingerprint("port 9090")
    assert text.tokens("memories", stem=False) == ["memories"]  # for people: key terms as written


def test_a_stemmed_query_finds_other_forms_of_the_word(cli):
    rid = cli.json("append", "The deployments were rolled back twice")["id"]
    cli.json("append", "An unrelated note about lunch")
    assert [h["id"] for h in cli.json("search", "deploying rollbacks")["hits"]] == [rid]


CJK_RANGES = [
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xAC00, 0xD7AF),
    (0x20000, 0x2FFFF),
]  # kana, Han (extensions too), compatibility Han, hangul


def _reference_runs(s: str) -> list[tuple[str, str]]:
    """What the tokeniser's runs mean, spelt out a character at a time: maximal runs of CJK, and
    maximal runs of other letters and digits (no underscore)."""
    out: list[tuple[str, str]] = []
    kind, run = None, ""
    for ch in s + "\0":
        k = "cjk" if any(lo <= ord(ch) <= hi for lo, hi in CJK_RANGES) else "word" if ch.isalnum() else None
        if k != kind and run:
            out.append((run, "") if kind == "cjk" else ("", run))
            run = ""
        kind = k
        if k:
            run += ch
    return out


@pytest.mark.long
@given(st.text(max_size=40))
def test_the_tokeniser_splits_text_into_cjk_runs_and_word_runs(s):
    assert text.script_runs(s) == _reference_runs(s)
    assert text.script_runs("x_y 端口_ok") == [("", "x"), ("", "y"), ("端口", ""), ("", "ok")]


@pytest.mark.long
@given(st.text(max_size=40))
def test_indexing_splits_a_folded_text_as_the_tokeniser_does(s):
    """`_split`, indexing's faster path (no CJK: words alone, without the CJK pattern), finds the
    same runs and words in a folded text."""
    folded = text.fold(s)
    runs, words = text._split(folded)
    expected = _reference_runs(folded)
    assert words == [w for _, w in expected if w]
    assert runs is None if max(folded, default="") < "\u3040" else runs == expected


@pytest.mark.long
@given(st.text(st.characters(max_codepoint=0x303F), max_size=40))
def test_a_text_without_cjk_is_tokenised_as_the_cjk_pattern_would(s):
    """Dashes, curly quotes, accents, Cyrillic: no CJK pattern is compiled for them (~4 ms a
    process), and the tokens and the fingerprinted form are what it would give."""
    folded = text.fold(s)
    assume(max(folded, default="") < "\u3040")  # (NFKC makes a Kangxi radical a Han character)
    full = text._split_cjk(folded)
    words = [w for _, w in full if w]
    assert text._split(folded) == (None, words)
    assert text.script_runs(folded) == full
    stems = text.stem_words(words)
    assert text._normal(None, stems, words) == text._normal(full, stems, words)
    assert text._tokens(None, words, words) == text._tokens(full, words, words)
    assert text._split("deploy_v2 PORT 8080".casefold()) == (None, ["deploy", "v2", "port", "8080"])


def test_stems_come_from_a_bounded_cache_with_snowballs_answers(monkeypatch):
    """Stemming looks words up in a cache first (an index build stems millions of words); the
    cache never outgrows its bound, and a word stems the same whether cached or not."""
    import Stemmer

    snowball = Stemmer.Stemmer("english").stemWords
    words = "deployments deploying running runs ran cats cat's fairly happiness".split()
    monkeypatch.setattr(text, "_STEMS_MAX", 4)
    monkeypatch.setattr(text, "_STEMS", {})
    assert text.stem_words(words) == snowball(words)
    assert 0 < len(text._STEMS) <= 4
    assert text.stem_words(words[::-1]) == snowball(words[::-1])  # cached and evicted words alike
    assert len(text._STEMS) <= 4
    assert text.stem_words([]) == []
    long_word = "x" * 200  # hash-like tokens never repeat: not kept, so the bound holds in bytes too
    assert text.stem_words([long_word]) == snowball([long_word]) and long_word not in text._STEMS
    numbers = ["8080", "2023", "٣٤", "12"]  # numbers pass as they are, and never fill the cache
    assert text.stem_words(numbers) == snowball(numbers) == numbers
    assert not set(numbers) & set(text._STEMS)


# text mixing the full-width punctuation `fold` shortcuts with what may compose beside it
_WIDE = st.text(
    alphabet=st.sampled_from("，．：；！？（）,.A a\u0301\u0308\u00e9端口Ｈｉ①㎡ﬁ\u3000。ÉøŁ\u1ec7がガ한"), max_size=12
)


def _without_latin_accents(s: str) -> str:
    """Every Latin letter as its base letter(s), without the diacritics that follow it; whatever
    else as it was."""
    out, after_latin = [], False
    for c in s:
        if "LATIN" in unicodedata.name(c, ""):
            out.append("".join(d for d in unicodedata.normalize("NFD", c) if not unicodedata.combining(d)))
            after_latin = True
        elif not (after_latin and "\u0300" <= c <= "\u036f"):
            out.append(c)
            after_latin = False
    return "".join(out)


@given(_WIDE)
def test_folding_is_nfkc_case_folding_then_latin_accents_dropped(s):
    assert text.fold(s) == _without_latin_accents(unicodedata.normalize("NFKC", s).casefold())
    assert text.fold(text.fold(s)) == text.fold(s)


def test_a_word_of_letters_and_digits_is_indexed_and_searched_by_its_parts_too():
    """ "python3" holds python, "iPhone15" iphone and 15 — as well as the whole word; a part of one
    character (the 3 of python3, the k of 5k) is none, nor are the parts of a hash."""
    assert {"python3", "python", "11"} <= set(text.tokens("Use Python3.11")) and "3" not in text.tokens("python3")
    assert {"iphone15", text.stem_words(["iphone"])[0], "15"} <= set(text.query_terms("iPhone15"))
    assert text.tokens("a 5k run on api v2") == ["a", "5k", "run", "on", "api", "v2"]
    assert text.tokens("gt350r") == ["gt350r", "gt", "350"]
    assert text.tokens("commit 3f9a0c41d2") == ["commit", "3f9a0c41d2"]
    assert text.tokens("plain words and 42") == ["plain", "word", "and", "42"]  # nothing mixed: no parts


def test_an_accented_word_and_its_plain_spelling_are_one_term():
    """ "café" finds "cafe" and back, in the index, the query and the fingerprint; kana's voicing
    marks and letters of their own (ø, ł) are not accents."""
    assert text.tokens("Café in São Paulo, NAÏVE") == text.tokens("cafe in sao paulo, naive")
    assert text.fingerprint("Met José at the café") == text.fingerprint("met jose at the cafe")
    assert sorted(text.tokens("ガがø")) == sorted(["ガ", "が", "ガが", "ø"]) and text.fold("Łódź") == "łodz"
