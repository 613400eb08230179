"""Cues: the words that say *when* or *that it changed*, not *what*.

* present cues ("now", "currently", 现在, 目前 …) ask for the present value of something that
  changes;
* past cues ("previously", "used to", 以前, 原来 …) ask what it used to be;
* change cues ("moved to", "no longer", 搬到, 改成 …) say a statement replaces an earlier one.

Chinese cues are found without word segmentation, so the ones whose characters also belong to
other words carry guards (`_GUARDS`: 所以|前端 is no 以前). The patterns are compiled on first
use, the Chinese ones only for a text with Chinese in it: an English-only command never pays
for them.
"""

from __future__ import annotations

from collections.abc import Iterable

from optmem.settings import Ranking
from optmem.text import cjk_query_terms, fold, has_cjk, query_terms

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "asks_for",
    "asks_for_now",
    "asks_for_past",
    "came_after",
    "cue_sources",
    "cue_terms",
    "cue_words",
    "says_change",
    "time_terms",
    "time_word_spans",
    "time_words",
    "without_cues",
]

# Words that ask for the present value of something that changes.
UPDATE_CUES = (
    "current",
    "currently",
    "now",
    "still",
    "latest",
    "anymore",
    "these days",
    "so far",
    "to date",
    "at the moment",
    "at present",
    "today",
    "nowadays",
)
UPDATE_CUES_CJK = (
    "现在",
    "目前",
    "最近",
    "还",
    "已经",
    "改成",
    "改为",
    "如今",
    "当前",
    "至今",
    "迄今",
    "今天",
    # still, latest, anymore, these days, at the moment, nowadays, today — each English
    # cue has its Chinese ones
    "仍然",
    "依然",
    "依旧",
    "仍旧",
    "仍",
    "最新",
    "不再",
    "这些天",
    "这几天",
    "近来",
    "眼下",
    "当下",
    "此刻",
    "现今",
    "今日",
)
# Words that ask what something used to be ("what was my previous …", "我以前住在哪"): such a
# query does not want the newest statement put first.
PAST_CUES = (
    "previous",
    "previously",
    "formerly",
    "originally",
    "at first",
    "initially",
    "former",
    # "used to" of a person ("I used to …", "what did I use to …"), not the passive
    # ("what is used to deploy")
    r"(?:i|we|you|he|she|they)(?: all)? used to",
    r"did (?:\w+ ){1,3}use to",
    # "used to" of a habit wherever it stands — not the passive ("what is used to deploy")
    r"(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bbe )(?<!\bwere )(?<!\bbeen )(?<!\bbeing )used to",
    "original",
    "prior to",
    r"in the beginning(?! of)",
    # "first" ending a question in the past tense ("which venue did we book first?"), not ending a
    # clause of a choice ("which trip did I take first, A or B?": both are asked for), nor a
    # question of what to do ("what should I do first?", "which step comes first?")
    r"\b(?:did|was|were|had)\b[^?.!]*\bfirst(?=\s*(?:[?.!]|$))",
    "back when",
    "earlier on",
    # "the old …", "Marco's old …" asked in the past tense ("what was our old office address")
    r"(?:was|were|did)\b[^?.!]*\b(?:the|my|our|your|his|her|their|\w+['’]s) old",
)
# "before" a thing, an -ing or a clause in the past asks for the past too ("before the migration",
# "before Google", "before moving", "before it was raised"; not "before I deploy") — not after a
# length of time or a day ("two days before I bought it", "the day before my appointment": it
# relates two events), nor in a sentence of what is to be done
# ("what should I check before the deploy") or one counting what the asker did ("how many
# events did I join before the marathon": events, not an older value)
PAST_BEFORE = (
    r"(?:^|(?<=[?.!]))(?![^?.!]*\b(?:should|must|need|needs|have to|has to)\b)"
    r"(?!\s*how many\b[^?.!]*\bdid (?:i|we)\b)[^?.!]*?"
    r"(?<!days )(?<!\bday )(?<!weeks )(?<!months )(?<!years )(?<!hours )(?<!minutes )"
    r"(?<!long )(?<!shortly )(?<!right )(?<!just )"
    r"\bbefore (?!then\b)(?!(?:i|we|you|he|she|they|it)\b"
    r"(?! (?:was|were|had|got|went|left|took|bought|sold|began|became|\w+ed)\b))(?=[a-z#])"
)
# "before" and "earlier" ask for the past only ending a clause ("where did I live before?"); with
# something after them they relate two events ("two days before I bought it")
PAST_CUES_FINAL = ("before", "earlier")
# (之前, 过去 and 上次 are left out: "提交之前" relates events, "过去" is also "go over", "上次" the latest)
PAST_CUES_CJK = (
    "以前",
    "原来",
    "原先",
    "曾经",
    "当初",
    "起初",
    "先前",
    "从前",
    "最初",
    "早先",
    "原本",
    "原定",
    "本来",
    "最早",
    "一开始",
    "最开始",
    "刚开始",
    "原计划",
    "上一个",
    "那会儿",
)
# 之前 and a bare 前 after a word ("升级前", "搬家之前") ask for the past in a question about a
# state — not in one of what is to be done (提交之前要跑什么检查, 上线前需要做什么), nor where 前
# belongs to a word (目前, 当前, 以前, 提前, 前端, 前天 …)
_PAST_BEFORE_CJK = (
    r"(?:之前|(?<=[\u3400-\u9fff])(?<![目当以之提眼面跟空从先向往事生])前(?![端台缀面天年往进景途后方排夕沿线锋卫列提辈]))"
    r"(?![^？?。！!]*(?:(?<![主重只想不])要|需|应该|该|(?<![获记觉取值懂晓])得|必须))"
)

# Words with which a statement says it replaces an earlier one ("moved to", "搬到", "改成").
CHANGE_CUES = (
    "now",
    "no longer",
    "anymore",
    "instead",
    "moved",
    "switched",
    "changed",
    "updated",
    "became",
    "from now on",
    # what replaces a value says so in its verb: a new tool, a new price, a new home
    "replaced",
    "upgraded",
    "downgraded",
    "migrated",
    "swapped",
    "renamed",
    "raised",
    "lowered",
    "increased",
    "decreased",
    "reduced",
    "bumped",
    "dropped",
    "sold",
    "relocated",
    "transferred",
    "promoted",
    "gave up",
    "went up",
    "went down",
    "rolled out",
    "ditched",
)
CHANGE_CUES_CJK = (
    "现在",
    "改成",
    "改为",
    "换成",
    "换了",
    "搬到",
    "搬去",
    "搬家",
    "不再",
    "已经",
    "如今",
    "从今",
    "变成",
    "改用",
    "换到",
    "更新为",
    "更新成",
    "从此",
    "搬迁",
    "调到",
    "跳槽",
    "升级",
    "迁到",
    "迁移",
    "涨到",
    "涨价",
    "降到",
    "降价",
    "升到",
    "加到",
    "减到",
    "增加到",
    "提高到",
    "降低到",
    "卖了",
    "下线",
    "停用",
    "不用了",
    "放弃",
    "入职",
    "离职",
    "调成",
    "换掉",
)

# where a time word's characters belong to other words (no word segmentation: the common traps):
# 所以|前端, 实现|在, 项目|前端, 修改|成本, 最近邻, 以前缀, 还原|来 — and no more: 问题|目前,
# 以前|面试, 原来|源码, 今天|气温, 已经|理解 read as the time word
_GUARDS = {
    "还": ("", "(?![款钱书贷原])"),  # 还款, 还钱, 还书, 还贷, 还原: to give back, not "still"
    "从此": ("", "(?![处地])"),
    "变成": ("", "(?!绩)"),
    "以前": ("(?<![所可足难得加予])", "(?![端台缀])"),
    "从前": ("", "(?![端台])"),
    "现在": ("(?<![实出表体发呈展兑显重涌再])", ""),
    "目前": ("(?<!项)", ""),
    "改成": ("(?<![修更])", "(?![本功])"),
    "最近": ("", "(?![邻似])"),
    "原来": ("(?<![还复])", ""),
    "当前": ("(?<!相)", ""),
    "先前": ("(?<!首)", "(?![往进])"),
    "最新": ("", "(?!鲜)"),
    "当下": ("", "(?![载班午])"),
    "今日": ("", "(?!头条|说法)"),
    "眼下": ("", "(?![巴方])"),
}

_CUE_PATTERNS: dict[str, Any] = {}
_CJK_CUES = None
_CJK_TIME_WORDS = None
_CUE_TERMS: frozenset[str] | None = None
_CUE_WORDS: frozenset[str] | None = None
_TIME_TERMS: frozenset[str] | None = None
_DEFAULT = Ranking()


def asks_for_now(query: str) -> bool:
    """Whether the query asks for the present value in so many words ("where do I live now",
    "现在住在哪")."""
    return _says("present", fold(query))


def asks_for_past(query: str) -> bool:
    """Whether the query asks what something used to be ("my previous address", "以前住在哪")."""
    return _says("past", fold(query))


def asks_for(query: str, settings: Ranking = _DEFAULT) -> str | None:
    """ "present" when the query asks for the present value (even if it names the past too: "how
    often now, and previously?"), "past" when it asks only what something used to be, else None.
    Each reading has its switch (`present_cues`, `past_cues`): one switched off finds nothing."""
    if settings.present_cues and asks_for_now(query):
        return "present"
    return "past" if settings.past_cues and asks_for_past(query) else None


def came_after(query: str) -> tuple[str, str]:
    """A question about the past, split into the words that name what came after the value asked
    for — "before Fastmail", "before the upgrade", "换 Loki 之前", "升级前" — and the rest: the
    first describe the newer value, a landmark in time, not the subject both values are of."""
    import re

    folded = fold(query)
    spans = []
    for m in re.finditer(PAST_BEFORE, folded):
        spans.append((m.end(), m.end() + len(re.split(r"[?.!,;:]", folded[m.end() :], maxsplit=1)[0])))
    if has_cjk(folded):
        for m in re.finditer(_PAST_BEFORE_CJK, folded):
            spans.append((m.start() - len(re.split(r"[，,。？?！!；;：:]", folded[: m.start()])[-1]), m.start()))
    after = " ".join(folded[a:b] for a, b in spans)
    rest = "".join(" " if any(a <= i < b for a, b in spans) else c for i, c in enumerate(folded))
    return after, rest


def says_change(text: str) -> bool:
    """Whether a statement says it is a change ("小明搬到上海了", "now uses pnpm"): two values of a
    key written close together are then ordered by time, not put to the user; between two notes,
    a newer one that says so gives a new value though no capital marks it (`ranking.updates_first`)."""
    return _says("change", fold(text))


def _guarded(words: Iterable[str]) -> str:
    """An alternation of Chinese time words, each with its guards, longest first."""
    return "|".join(_GUARDS.get(w, ("", ""))[0] + w + _GUARDS.get(w, ("", ""))[1] for w in _longest_first(words))


def _longest_first(words: Iterable[str]) -> list[str]:
    """Distinct words, longest first, then in code point order: one pattern in every process (a
    set's order changes with each process's string hashing). Two words of one length never match
    at the same place, so their order changes no match."""
    return sorted(set(words), key=lambda w: (-len(w), w))


def cue_sources(kind: str) -> tuple[str, str]:
    """The (English, Chinese) patterns of a kind of cue: "present", "past", "change"."""
    english = {
        "present": r"\b(?:" + "|".join(UPDATE_CUES) + r")\b",
        "past": r"\b(?:"
        + "|".join(PAST_CUES)
        + r")\b|\b(?:"
        + "|".join(PAST_CUES_FINAL)
        + r")\b(?=\s*(?:[?.!,;:]|$))|"
        + PAST_BEFORE,
        "change": r"\b(?:" + "|".join(CHANGE_CUES) + r")\b",
    }[kind]
    chinese = {
        "present": _guarded(UPDATE_CUES_CJK),
        "past": _guarded(PAST_CUES_CJK) + "|" + _PAST_BEFORE_CJK,
        "change": _guarded(CHANGE_CUES_CJK),
    }[kind]
    return english, chinese


def _says(kind: str, folded: str) -> bool:
    """Whether a folded text holds a cue of `kind` (`cue_sources`): a match of its English
    pattern or of its Chinese one, each searched only where it may match — in a text holding a
    word every one of its matches holds (`_NEEDLES`, `_CJK_NEEDLES`). A pattern is compiled the
    first time a text may match it: compiling the Chinese ones took a Chinese query ~3 ms, the
    English past cues an English one ~1 ms (9M instructions), in every process."""
    if any(word in folded for word in _NEEDLES[kind]) and _compiled(kind).search(folded):
        return True
    if folded.isascii() or not any(word in folded for word in _CJK_NEEDLES[kind]):
        return False
    return _compiled(f"{kind} cjk").search(folded) is not None


# What every match of a kind's English pattern holds (`cue_sources`): the cue words themselves —
# of the past cues written as patterns, a word each of their matches holds ("use" of "used to" and
# "did … use to", "first", "old", "in the beginning"; `PAST_BEFORE`'s "before"). An English
# pattern that could match without one of its needles would go unsearched: keep each in step with
# its pattern.
_NEEDLES = {
    "present": UPDATE_CUES,
    "past": (
        "previous",
        "former",
        "original",
        "initially",
        "first",
        "use",
        "prior to",
        "in the beginning",
        "back when",
        "earlier",
        "old",
        "before",
    ),
    "change": CHANGE_CUES,
}
# What every match of a kind's Chinese pattern holds (`cue_sources`): its cue words — and 前, which
# `_PAST_BEFORE_CJK` matches (之前 too). A Chinese pattern that could match without one of its
# needles would go unsearched: keep each in step with its pattern.
_CJK_NEEDLES = {
    "present": UPDATE_CUES_CJK,
    "past": (*PAST_CUES_CJK, "前"),
    "change": CHANGE_CUES_CJK,
}


def _compiled(name: str) -> Any:
    """A pattern of `_says`, compiled once: a kind's English cues ("past"), its Chinese cues
    ("past cjk")."""
    pattern = _CUE_PATTERNS.get(name)
    if pattern is None:
        import re

        kind, _, cjk = name.partition(" ")
        source = cue_sources(kind)[1 if cjk else 0]
        pattern = _CUE_PATTERNS[name] = re.compile(source)
    return pattern


def time_word_spans(folded: str) -> list[tuple[int, int]]:
    """Where a folded query's Chinese time words stand — the present and past cues (现在, 目前,
    以前, 原来 …; not 还, which begins other words): they say when, not what, and a query's
    bigrams must not straddle them (我现在住哪 asks about 我住)."""
    global _CJK_TIME_WORDS
    if not has_cjk(folded):
        return []  # (before compiling: an English query — curly quotes too — never pays for it)
    words = [w for w in (*UPDATE_CUES_CJK, *PAST_CUES_CJK) if len(w) > 1]
    if not any(w in folded for w in words):
        return []  # (each match holds one of the words: a query with none never compiles it, ~0.6 ms)
    if _CJK_TIME_WORDS is None:
        import re

        _CJK_TIME_WORDS = re.compile(_guarded(words))
    return [m.span() for m in _CJK_TIME_WORDS.finditer(folded)]


def without_cues(folded: str) -> str:
    """A folded CJK text with its update and change cue words taken out, so the words around
    them pair again ("我现在养了" → "我养了")."""
    global _CJK_CUES
    if _CJK_CUES is None:
        import re

        _CJK_CUES = re.compile("|".join(_longest_first((*UPDATE_CUES_CJK, *CHANGE_CUES_CJK))))
    return _CJK_CUES.sub("", folded)


def time_words() -> frozenset[str]:
    """Every word or phrase that says *when* or *that it changed*, not *what* (the update and
    change cues): left out when comparing two statements' content."""
    return frozenset((*UPDATE_CUES, *UPDATE_CUES_CJK, *CHANGE_CUES, *CHANGE_CUES_CJK))


def cue_words() -> frozenset[str]:
    """The search terms of the one-word update cues ("now", "currently", "现在"): a phrase's words
    ("these days", "so far") mean something on their own and stay."""
    global _CUE_WORDS
    if _CUE_WORDS is None:
        _CUE_WORDS = _terms_of_cues(cue for cue in (*UPDATE_CUES, *UPDATE_CUES_CJK) if " " not in cue)
    return _CUE_WORDS


def time_terms() -> frozenset[str]:
    """`cue_words` and the one-word change cues ("moved", "switched", "搬到"): the terms that say
    *when* or *that it changed* (`time_words`), not *what*."""
    global _TIME_TERMS
    if _TIME_TERMS is None:
        _TIME_TERMS = cue_words() | _terms_of_cues(cue for cue in (*CHANGE_CUES, *CHANGE_CUES_CJK) if " " not in cue)
    return _TIME_TERMS


def cue_terms() -> frozenset[str]:
    """The search terms the update cues make ("now", "现在", …): they say *when*, not *what*, so
    they do not count when comparing what two records are about (`ranking.updates_first`)."""
    global _CUE_TERMS
    if _CUE_TERMS is None:
        _CUE_TERMS = _terms_of_cues((*UPDATE_CUES, *UPDATE_CUES_CJK))
    return _CUE_TERMS


def _terms_of_cues(cues: Iterable[str]) -> frozenset[str]:
    """The query terms of cue words; the CJK ones (all CJK) as their bigrams directly, so that an
    English-only command never compiles the CJK tokeniser for them."""
    return frozenset(t for cue in cues for t in (query_terms(cue) if cue.isascii() else cjk_query_terms(cue)))
