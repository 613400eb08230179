"""Dates as search terms, so "what did we decide in May 2023" finds the records of that month.

A record contributes date terms for its own day (and month), for the explicit dates in its text ("May 3,
2023", "2023-05-03", "2023年5月3日") and for relative phrases resolved from its own time
("yesterday" in a record of 2023-05-04 is 2023-05-03; "last month", "上周", "去年" …). A query
contributes terms for the explicit dates it names, at the precision it names them: a day asks
for that day (and its month), a month for the month, a year for the year.

Terms live in their own namespace (`__y2023`, `__m2023_05`, `__d2023_05_03`), which the word
tokeniser never produces, so "may" the verb never matches May the month. Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, lru_cache

from optmem import text
from optmem.patterns import lazy
from optmem.stdlib import date, timedelta

PREFIX = "__"
DAY_PREFIX = PREFIX + "d"  # a day's term (`__d2023_05_03`)
_MONTH_NAMES = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
MONTHS = {name: i + 1 for i, name in enumerate(_MONTH_NAMES)}
MONTHS.update({name[:3]: i + 1 for i, name in enumerate(_MONTH_NAMES)})
MONTHS["sept"] = 9
_MONTH_HEADS = tuple(dict.fromkeys(name[:3] for name in MONTHS))  # a month name holds one
_MON = "|".join(sorted(MONTHS, key=len, reverse=True))
_MON_NOT_MAY = "|".join(sorted((m for m in MONTHS if m != "may"), key=len, reverse=True))
_COUNT_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a few": 3,
    "few": 3,
    "a couple of": 2,
    "couple of": 2,
    "several": 4,
    "一": 1,
    "两": 2,
    "二": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
    "几": 3,
}
_COUNT = r"(\d{1,2}|a couple of|couple of|a few|few|several|an|a|one|two|three|four|five|six|seven|eight|nine|ten)"
# a count before 天前, 周前, 个月前, 年前: 三, 十三, 二十五, 几, 3 — all of it (not 三 of 十三), and not
# an ordinal (第三周前 is "before week three")
_CJK_NUMERAL = "一两二三四五六七八九十几"
_CJK_COUNT = rf"(?<![第\d{_CJK_NUMERAL}])(?:\d+|[{_CJK_NUMERAL}]+)"
_CJK_COUNT_SHORT = rf"(?<![第\d{_CJK_NUMERAL}])(?:\d{{1,2}}|[{_CJK_NUMERAL}]+)"  # not a year (2020年)
_BEFORE = "(?:以|之)?前"  # 三天前, 三天以前, 三天之前
# 后天 is not the 后 of 然后, 之后, 以后, 最后, 午后, 雨后 … before a 天 (然后天气, 以后天天), nor
# "acquired" (后天性, 后天因素, 后天培养); 前几天 not "a few days before" an event (出发前几天)
_AFTER = "大然之以今最午雨随此往过前背饭课会节赛事先落滞稍而"
_ACQUIRED = "性因培免形获习养"
_EVENT = "发试日会事赛节婚行走班假业学课术期产目以之提"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# the words that name a month or a day of the week in full: a time, never a person's name
CALENDAR_WORDS = frozenset((*_MONTH_NAMES, "sept", *_WEEKDAYS))

Found = list[tuple[date, str]]  # (day, precision: d | m | y)
Resolve = Callable[[date, re.Match[str]], Found]  # a relative phrase's days, from the day it is said on


def _count(word: str) -> int:
    word = word.strip()
    if word.isdigit():
        return int(word)
    tens, ten, ones = word.partition("十")  # 十三 13, 二十 20, 二十五 25
    if ten and len(word) > 1:
        return int(_about(tens, 1) * 10 + (_about(ones, 0) if ones else 0) + 0.5)
    return int(_about(word, 1) + 0.5)


def _about(word: str, default: float) -> float:
    """A Chinese numeral, or a range of two (两三, 五六: about that many — their middle, rounded up)."""
    if len(word) == 2 and word[0] in _COUNT_WORDS and word[1] in _COUNT_WORDS:
        return (_COUNT_WORDS[word[0]] + _COUNT_WORDS[word[1]]) / 2
    return _COUNT_WORDS.get(word, default)


def _months_before(d: date, k: int) -> date:
    m = d.month - 1 - k
    return date(d.year + m // 12, m % 12 + 1, 1)


def _last_weekday(d: date, weekday: int) -> date:
    return d - timedelta(days=(d.weekday() - weekday) % 7 or 7)


def _last_weekend(d: date, weeks: int = 1) -> Found:
    """The weekend before d (on a Sunday, the one before this one), or `weeks` weekends back."""
    saturday = _last_weekday(d, 5) - timedelta(days=7 * (weeks - 1))
    if d.weekday() == 6 and (d - saturday).days < 2:
        saturday -= timedelta(days=7)
    return [(saturday, "d"), (saturday + timedelta(days=1), "d")]


_CJK_WEEKDAYS = "一二三四五六日天"  # 周一 … 周日 (周天 is Sunday too)


def _this_weeks(d: date, m: re.Match[str]) -> Found:
    """这周三, 本周一, 这个礼拜五: that day of d's own calendar week (Monday to Sunday)."""
    monday = d - timedelta(days=d.weekday())
    return [(monday + timedelta(days=min(_CJK_WEEKDAYS.index(m.group(1)), 6)), "d")]


def _last_weeks(d: date, m: re.Match[str]) -> Found:
    """上周六, 上星期一, 上礼拜天, 上上周五: that day of the calendar week (Monday to Sunday) before
    d's, or the one before that."""
    return [_last_week_days(d, m)[min(_CJK_WEEKDAYS.index(m.group(1)), 6)]]


def _leap_year(year: int) -> int:
    """`year` if it has a 29 February, else the latest year before it that does."""
    while year > 1 and not (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)):
        year -= 1
    return year


def _year_before(d: date) -> date:
    """The same day in the latest year before d's that has it (29 February: a leap year)."""
    for year in range(d.year - 1, max(d.year - 9, 0), -1):
        try:
            return d.replace(year=year)
        except ValueError:
            continue
    return d


def _days(k: int) -> Callable[[date, re.Match[str]], Found]:
    return lambda d, m: [(d + timedelta(days=k), "d")]


def _weeks_back(m: re.Match[str]) -> int:
    """How many weeks back a phrase goes: two for 上上周 and "the week before last", else one."""
    return 2 if m.group().startswith("上上") or "before last" in m.group() else 1


def _last_week_days(d: date, m: re.Match[str]) -> Found:
    """The seven days of the calendar week (Monday to Sunday) the phrase names: the week before
    d's, or the one before that (上上周)."""
    monday = d - timedelta(days=d.weekday() + 7 * _weeks_back(m))
    return [(monday + timedelta(days=k), "d") for k in range(7)]


# "last week" in a record: the month a week before (a record holds few terms); in a query: the
# seven days of the week before (a month's term matched a record a month old at a month's turn)
# 上周, 上星期, 上个星期, 上礼拜, 上个礼拜 — and 上上周 … (the week before last); not the 上周 inside 上上周
_CJK_WEEK = "(?<!上)上上?个?(?:周|星期|礼拜)"
_WEEK_WORDS = ("week", "上周", "上个周", "上星期", "上个星期", "上礼拜", "上个礼拜")
_THIS_WEEK_WORDS = ("这周", "这个周", "本周", "这星期", "这个星期", "本星期", "这礼拜", "这个礼拜", "本礼拜")
# "the week before last", not "the week before last Friday" (the week before that day)
_EN_WEEK = (
    r"\blast week\b|\ba week ago\b|\bthe other week\b|"
    rf"\bthe week before last\b(?! (?:{'|'.join(_WEEKDAYS)}|year|month|week)\b)"
)
_WEEK_SOURCE: tuple[tuple[str, ...], str, Resolve] = (
    _WEEK_WORDS,
    rf"{_EN_WEEK}|{_CJK_WEEK}",
    lambda d, m: [(d - timedelta(days=7 * _weeks_back(m)), "m")],
)
# a weekday after 上周: 二 … 六 always; 一, 天, 日 unless they begin a word (上周一直 "all along",
# 上周天天 "every day", 上周日常 "daily")
_WEEKDAY = "(?:[二三四五六]|一(?![直起次些样般定共切半下个点])|天(?!天)|日(?![常子期程记]))"
_QUERY_WEEK_SOURCE: tuple[tuple[str, ...], str, Resolve] = (
    _WEEK_WORDS,
    rf"{_EN_WEEK}|{_CJK_WEEK}(?!{_WEEKDAY}|末)",
    _last_week_days,
)


_YEARS_BACK = {"前年": 2, "去年": 1, "last": 1, "今年": 0, "this": 0, "明年": -1, "next": -1}


def _month_of_year(d: date, m: re.Match[str]) -> Found:
    """ "March of last year", 去年三月, 今年五月, 明年3月: that month of that year (from d's)."""
    if m.group(1):
        month, year = MONTHS[m.group(1)], m.group(2)
    else:
        month, year = _count(m.group(4)), m.group(3)
    return [(date(d.year - _YEARS_BACK[year], month, 1), "m")] if 1 <= month <= 12 else []


_CJK_MONTH = r"(1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])月"
# a month of a named year, in a record as in a query: "March of last year", 去年三月, 明年3月
_MONTH_OF_YEAR_SOURCE: tuple[tuple[str, ...], str, Resolve] = (
    ("last year", "this year", "next year", "前年", "去年", "今年", "明年"),
    rf"\b({_MON})(?: of)? (last|this|next) year\b|(前年|去年|今年|明年){_CJK_MONTH}",
    _month_of_year,
)


# "two years ago", 两年前: that year, in a record only — a query keeps the words to match ("what did
# Evan start a few years ago" asks for the record saying so, not for whatever was said in that
# calendar year). Not a year written out (2020年前 is "before 2020"), nor 半年前 (half a year).
_YEARS_AGO_SOURCE: tuple[tuple[str, ...], str, Resolve] = (
    ("ago", "年前", "年以前", "年之前", "年多"),
    rf"(?<!half )\b{_COUNT} years? ago\b|(?<!半)({_CJK_COUNT_SHORT})年多?{_BEFORE}",
    lambda d, m: [(date(d.year - _count(m.group(1) or m.group(2)), 1, 1), "y")],
)


# relative phrases, resolved from the record's own time (compiled on first use: most commands
# never need them), each with the words one of which it needs (a substring test spares a long
# text the pattern: conversation turns run to kilobytes)
_WEEKDAY_NEEDS = (*_WEEKDAYS,)
_RELATIVE_SOURCES: tuple[tuple[tuple[str, ...], str, Resolve], ...] = (
    (("大前天",), r"(?<!大)大前天", _days(-3)),
    # (not the 前天 of 目前天气, 以前天天, 之前, 提前)
    (("yesterday", "前天"), r"\b(?:the )?day before yesterday\b|(?<![大目以之提])前天", _days(-2)),
    # (not the yesterday of "the day before yesterday", nor the tomorrow of "the day after")
    (("yesterday", "last night", "昨"), r"(?<!day before )\byesterday\b|\blast night\b|昨天|昨日|昨晚", _days(-1)),
    (("tomorrow", "明天"), r"(?<!day after )\btomorrow\b|明天", _days(1)),
    # 后天 — not 大后天, nor "acquired" (后天性, 先天和后天)
    (
        ("after tomorrow", "后天"),
        r"\b(?:the )?day after tomorrow\b|"
        rf"(?<!先天和)(?<![{_AFTER}])后天(?![{_ACQUIRED}])",
        _days(2),
    ),
    (("大后天",), r"大后天", _days(3)),
    (
        ("ago", "天前", "天以前", "天之前", "前几天", "前两天", "前些"),
        rf"\b{_COUNT} days? ago\b|({_CJK_COUNT})天{_BEFORE}|(?<![{_EVENT}])前(?:(几|两)|些)天|(?<![{_EVENT}])前些日子",
        lambda d, m: [(d - timedelta(days=_count(m.group(1) or m.group(2) or m.group(3) or "几")), "d")],
    ),
    (
        ("weekend", "周末"),
        r"\b(?:last|this past|past) weekend\b|(?<!上)上(上)?个?周末",
        lambda d, m: _last_weekend(d, 2 if m.group(1) else 1),
    ),
    (
        _WEEKDAY_NEEDS,
        r"\b(?:last|this past) (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
        lambda d, m: [(_last_weekday(d, _WEEKDAYS.index(m.group(1))), "d")],
    ),
    (
        _WEEK_WORDS[1:],  # not 上周一直, 上周天天, 上周日常: words, not days
        rf"{_CJK_WEEK}({_WEEKDAY})",
        _last_weeks,
    ),
    (_THIS_WEEK_WORDS, rf"(?:这个?|本)(?:周|星期|礼拜)({_WEEKDAY})", _this_weeks),
    (_THIS_WEEK_WORDS, r"(?:这个?|本)周末", lambda d, m: _last_weekend(d + timedelta(days=7 - d.weekday()))),
    _WEEK_SOURCE,
    (
        ("ago", "周前", "期前", "拜前", "周以前", "期以前", "拜以前", "周之前", "期之前", "拜之前", "半个月"),
        rf"\b{_COUNT} weeks? ago\b|({_CJK_COUNT})个?多?(?:周|星期|礼拜){_BEFORE}|(半个月){_BEFORE}",
        lambda d, m: [(d - timedelta(days=7 * (2 if m.group(3) else _count(m.group(1) or m.group(2)))), "m")],
    ),
    (
        ("next week", "下周", "下星期", "下个星期"),
        r"\bnext week\b|下周|下星期|下个星期",
        lambda d, m: [(d + timedelta(days=7), "m")],
    ),
    # not 登上月球 (the moon)
    (
        ("month", "上个月", "上月"),
        r"\blast month\b|\ba month ago\b|(?<!上)上个?月(?!球)",
        lambda d, m: [(_months_before(d, 1), "m")],
    ),
    (
        ("before last", "上上"),
        r"\bthe month before last\b|(?<!上)上上个?月",
        lambda d, m: [(_months_before(d, 2), "m")],
    ),
    # (个 required: 3月前 is "before March"); half a year is six months
    (
        ("ago", "月前", "月以前", "月之前", "半年"),
        rf"\b{_COUNT} months? ago\b|({_CJK_COUNT})个多?月{_BEFORE}|"
        rf"(half a year ago|半年{_BEFORE})",
        lambda d, m: [(_months_before(d, 6 if m.group(3) else _count(m.group(1) or m.group(2))), "m")],
    ),
    (("next month", "下个月", "下月"), r"\bnext month\b|下个月|下月", lambda d, m: [(_months_before(d, -1), "m")]),
    (("year", "去年"), r"\blast year\b|去年", lambda d, m: [(date(d.year - 1, 1, 1), "y")]),
    _YEARS_AGO_SOURCE,
    (("前年",), r"(?<![大年目])前年", lambda d, m: [(date(d.year - 2, 1, 1), "y")]),
    (("大前年",), r"(?<!大)大前年", lambda d, m: [(date(d.year - 3, 1, 1), "y")]),
    (("next year", "明年"), r"\bnext year\b|明年", lambda d, m: [(date(d.year + 1, 1, 1), "y")]),
    _MONTH_OF_YEAR_SOURCE,
)


# … and for a query only: "last week" as its days (above), the month or year itself ("本月的开销")
# — a record holds its own month's terms anyway ("today" asks for the present value: a cue, not
# a day to match)
def _latest_month(d: date, m: re.Match[str]) -> Found:
    """A month named without its year ("in May", 5月份, 十二月): the latest such month up to d's
    ("last May" asked in May: a year ago)."""
    month = MONTHS[m.group(1)] if m.group(1) else _count(m.group(2))
    this_year = month < d.month or (month == d.month and not m.group().startswith("last"))
    return [(date(d.year if this_year else d.year - 1, month, 1), "m")] if 1 <= month <= 12 else []


# a month without its year: after a word that says when ("in May", not "may I"), or a numeral
# before 月 (not 3个月, 几月, nor the 12月 of 12月20日). Its words stay words to match as well: a
# record says "the workshop in April" without a year (only "may", also a verb, is taken out)
_WHEN = r"\b(?:in|during|since|from|until|till|through|last|this past) "
_NO_YEAR = r"(?!\.?,?\s*(?:of\s+)?(?:\d|last year|this year|next year|the year))"  # not "May of 2023"
_MONTH_WORD_SOURCE = (
    rf"{_WHEN}({_MON_NOT_MAY})\b{_NO_YEAR}|"
    rf"(?<![\d年个几上下这本每第〇零一二三四五六七八九十两])(?<!年 ){_CJK_MONTH}(?![\d日号])"
)
_WORDS_KEPT = frozenset({_MONTH_WORD_SOURCE})


_NOW_SOURCES: tuple[tuple[tuple[str, ...], str, Resolve], ...] = (
    (("this month", "本月", "这个月"), r"\bthis month\b|本月|这个月", lambda d, m: [(d, "m")]),
    (("this year", "今年"), r"\bthis year\b|今年", lambda d, m: [(date(d.year, 1, 1), "y")]),
    ((*_MONTH_HEADS, "月"), _MONTH_WORD_SOURCE, _latest_month),
    (("may",), rf"{_WHEN}(may)\b{_NO_YEAR}", _latest_month),
)


_QUERY_SOURCES = (
    *(s for s in _RELATIVE_SOURCES if s is not _WEEK_SOURCE and s is not _YEARS_AGO_SOURCE),
    _QUERY_WEEK_SOURCE,
    *_NOW_SOURCES,
)


def _resolved(
    sources: tuple[tuple[tuple[str, ...], str, Resolve], ...],
    folded: str,
    day: date,
    spans: list[tuple[int, int]] | None = None,
) -> Found:
    """The days the relative phrases of a folded text name, resolved from `day`; the spans they
    were read from go into `spans` when given."""
    out: Found = []
    for needs, source, resolve in sources:
        if any(n in folded for n in needs):
            for m in _pattern(source).finditer(folded):
                try:
                    out += resolve(day, m)
                except (OverflowError, ValueError):
                    continue  # before year 1 or after 9999: no date to name
                if spans is not None and source not in _WORDS_KEPT:
                    spans.append(m.span())
    return out


@cache
def _pattern(source: str) -> re.Pattern[str]:
    """A date pattern, compiled the first time a text needs it (each costs up to a millisecond:
    a search pays only for the ones its texts hint at)."""
    return re.compile(source)


# every relative phrase holds one of these: a cheap test before the patterns run
_RELATIVE_WORDS = (
    "yesterday|tomorrow|ago|weekend|last|past|next|other week|this year|前天|昨|明天|天前|"
    "前几天|前两天|前些|周前|期前|拜前|月前|年前|年多|后天|以前|之前|半个月|"
    "上周|上星期|上个|上礼拜|下周|下星期|下个|上月|下月|去年|前年|明年|今年|这周|这个周|本周|"
    "这星期|这个星期|本星期|这礼拜|这个礼拜|本礼拜"
)

Explicit = Callable[[re.Match[str]], tuple[int | None, int, int, str]]
# explicit dates in folded (lower-case) text: (year — None when not written —, month, day, precision). Each
# pattern names what a text must hold for it to match at all (a cheap test first):
# "ymd" digits-dash as in 2023-05-03, "年"/"月" that character, "mon" a month name, "year" a year
# of this or the last century
_EXPLICIT_SOURCES: tuple[tuple[str, str, Explicit], ...] = (
    ("ymd", r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", lambda m: (int(m[1]), int(m[2]), int(m[3]), "d")),
    ("月", r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]", lambda m: (int(m[1]), int(m[2]), int(m[3]), "d")),
    ("月", r"(\d{4})\s*年\s*(\d{1,2})\s*月", lambda m: (int(m[1]), int(m[2]), 1, "m")),
    ("月", r"(?<![\d年])(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]", lambda m: (None, int(m[1]), int(m[2]), "d")),
    (
        "mon",
        rf"\b({_MON})\.? (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b",
        lambda m: (int(m[3]), MONTHS[m[1]], int(m[2]), "d"),
    ),
    (
        "mon",
        rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?({_MON})\.?,? (\d{{4}})\b",
        lambda m: (int(m[3]), MONTHS[m[2]], int(m[1]), "d"),
    ),
    ("mon", rf"\b({_MON})\.?,?(?: of)? (\d{{4}})\b", lambda m: (int(m[2]), MONTHS[m[1]], 1, "m")),
    ("mon", rf"\b({_MON})\.? (\d{{1,2}})(?:st|nd|rd|th)?\b(?!,? \d)", lambda m: (None, MONTHS[m[1]], int(m[2]), "d")),
    # a day before a month without a year: "may" only after an ordinal and "of" ("the 3rd of May";
    # "step 3 may fail", "the 2nd may break", "step 3 of may fail" are the verb)
    (
        "mon",
        rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?({_MON_NOT_MAY})|(\d{{1,2}})(?:st|nd|rd|th) of (may))\b"
        r"(?!\.?,? \d)",
        lambda m: (None, MONTHS[m[2] or m[4]], int(m[1] or m[3]), "d"),
    ),
    ("年", r"(?<!\d)((?:19|20)\d{2})\s*年(?!\s*\d{1,2}\s*月)", lambda m: (int(m[1]), 1, 1, "y")),
    ("year", r"\b(?:in|of|since|during|year) ((?:19|20)\d{2})\b(?!-)", lambda m: (int(m[1]), 1, 1, "y")),
)


_YMD = lazy(r"\d{4}-")
_DIGIT = re.compile(r"\d")
_YEAR = lazy(r"(?:19|20)\d\d")
_MONTH_NAME = lazy(rf"\b(?:{'|'.join(MONTHS)})\b")
# `_hinted` asks whether a text holds a relative phrase's word, a year of this or the last century,
# 月 or a month name. Every English one a pattern reads is a whole word (`\b` on both sides), so
# it asks the text's words, a set look-up each, where a substring test per hint scanned the text
# ~20 times (a twentieth of indexing); one alternation of them all was slower still. The two
# English phrases and the Chinese words are substrings (Chinese has no word boundaries).
_HINT_ALL = (*_RELATIVE_WORDS.split("|"), "月")
_HINT_WORDS = frozenset({*(w for w in _HINT_ALL if w.isascii() and " " not in w), *MONTHS})
_HINT_PHRASES = tuple(w for w in _HINT_ALL if w.isascii() and " " in w)
_HINT_CJK = tuple(w for w in _HINT_ALL if not w.isascii())
# … by the character each ends in, one of a few: a test for it first, then for its words (not a
# character class: compiling one of CJK characters costs half a millisecond of every start-up)
_HINT_CJK_BY_END = {end: tuple(w for w in _HINT_CJK if w[-1] == end) for end in sorted({w[-1] for w in _HINT_CJK})}


def _hinted(folded: str, words: list[str]) -> bool:
    """Whether a folded text may name a date at all: a relative phrase's word, a year of this or
    the last century, 月 or a month name (the cheap test before any date pattern runs). `words`:
    the text's words as the tokeniser splits them (`text.words`), unstemmed."""
    if not _HINT_WORDS.isdisjoint(words):
        return True
    for phrase in _HINT_PHRASES:
        if phrase in folded:
            return True
    if not folded.isascii():
        for end, ending in _HINT_CJK_BY_END.items():
            if end in folded:
                for word in ending:
                    if word in folded:
                        return True
    return _names_year(folded)


def _names_year(folded: str) -> bool:
    """Whether a folded text holds a year of this or the last century (a substring test first)."""
    return ("19" in folded or "20" in folded) and _YEAR.search(folded) is not None


def _names_month(folded: str) -> bool:
    """Whether a folded text holds a month name (a substring test first)."""
    for head in _MONTH_HEADS:  # a loop, not any(): a tenth of indexing's date cost
        if head in folded:
            return _MONTH_NAME.search(folded) is not None
    return False


def _explicit(folded: str, year: int | None, spans: list[tuple[int, int]] | None = None) -> Found:
    """The dates written in a folded text (`year` for those written without one); the spans they
    were read from go into `spans` when given."""
    out: Found = []
    if _DIGIT.search(folded) is None:
        return out  # every explicit date has digits
    held = {
        "ymd": _YMD.search(folded) is not None,
        "年": "年" in folded,
        "月": "月" in folded,
        "mon": _names_month(folded),
        "year": _names_year(folded),
    }
    if not (held["year"] or held["月"] or held["mon"]):
        return out  # none names a date without a year, 月 or a month name
    taken: list[tuple[int, int]] = []  # a span read by one pattern is not read again
    for need, source, read in _EXPLICIT_SOURCES:
        if not held[need]:
            continue
        for m in _pattern(source).finditer(folded):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            y, month, day, precision = read(m)
            if y is None:  # written without its year
                if year is None:
                    continue
                y = year if (month, day) != (2, 29) else _leap_year(year)
            try:
                out.append((date(y, month, day), precision))
            except ValueError:
                continue
            taken.append((m.start(), m.end()))
    if spans is not None:
        spans += taken
    return out


@lru_cache(maxsize=4096)
def terms_for(day: date, precision: str) -> tuple[str, ...]:
    """The terms of a date at a precision: its year, month and day as far as it is known."""
    out = [f"{PREFIX}y{day.year}"]
    if precision in ("m", "d"):
        out.append(f"{PREFIX}m{day.year}_{day.month:02d}")
    if precision == "d":
        out.append(f"{DAY_PREFIX}{day.year}_{day.month:02d}_{day.day:02d}")
    return tuple(out)


def _held(day: date, precision: str) -> tuple[str, ...]:
    """The terms a record holds for a date it is about: its month and day, as far as known — not
    its year (a year term in nearly every record makes a posting list as long as the log; a query
    for a year asks for its twelve months) unless only the year is known."""
    found = terms_for(day, precision)
    return found if precision == "y" else found[1:]


@lru_cache(maxsize=4096)
def _day(days: int) -> date | None:
    """The UTC date `days` after 1970-01-01 (None when out of range)."""
    try:
        return date(1970, 1, 1) + timedelta(days=days)
    except OverflowError:
        return None


def _specific(found: Found) -> Found:
    """A month or day of a year named ("去年三月", "March of last year") is what is meant, not
    that whole year: the year's own entry goes."""
    named = {day.year for day, precision in found if precision != "y"}
    return [(day, precision) for day, precision in found if precision != "y" or day.year not in named]


def day_terms(epoch: float | None) -> list[str]:
    """The date terms of a record's own day (its month and day): all of a record's date terms
    when its text names no date (`record_terms`)."""
    own = _day(int(epoch // 86400)) if epoch is not None else None
    return [] if own is None else list(_held(own, "d"))


def record_terms(epoch: float | None, folded: str, words: list[str] | None = None) -> list[str]:
    """A record's date terms: its own day, the relative phrases in its text resolved from that
    day, and the explicit dates in its text (each term once). `words`: the text's words, when
    the caller split them already (as `_hinted` takes them)."""
    if epoch is None:
        return []
    own = _day(int(epoch // 86400))
    if own is None:
        return []
    own_terms = _held(own, "d")
    if not _hinted(folded, text.words(folded) if words is None else words):
        return list(own_terms)  # most records: nothing in the text names a date
    found = _specific(_resolved(_RELATIVE_SOURCES, folded, own) + _explicit(folded, own.year))
    return list(dict.fromkeys([*own_terms, *(t for day, precision in found for t in _held(day, precision))]))


def query_terms(folded: str, now: float | None = None, spans: list[tuple[int, int]] | None = None) -> list[str]:
    """The date terms a query asks about, at the precision it names: a day asks for its day and
    month terms, a month for the month term, a year for the year term and its twelve months.
    With `now`, relative phrases ("yesterday", "last month", "上周六") are resolved from it, as a
    record's are from its own time, and a day written without its year ("May 14", "5月20日") is
    the latest such day up to now. The spans of the dates written out ("May 2025", "2025-05-14",
    "last Saturday", 昨天) go into `spans` when given: their words are the date, not words to match
    ("last Saturday" is not every record saying "every Saturday")."""
    today = _day(int(now // 86400)) if now is not None else None
    if today is None:
        found = _explicit(folded, None, spans)
    else:
        dated = set(_explicit(folded, None))
        found = [
            d if d in dated or d[0] <= today else (_year_before(d[0]), d[1])
            for d in _explicit(folded, today.year, spans)
        ]
        found += _resolved(_QUERY_SOURCES, folded, today, spans)
    found = _specific(found)
    out: list[str] = []
    for day, precision in found:
        terms = terms_for(day, precision)
        if precision == "y":
            out += [*terms, *(terms_for(date(day.year, m, 1), "m")[1] for m in range(1, 13))]
        else:
            out += terms[1:]
    return list(dict.fromkeys(out))
