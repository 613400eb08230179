"""The word lists several readers share, and the tokeniser's statement comparison with them.

Data only — this module imports nothing — so that `optmem.text` (fingerprints, `numbers`,
`similarity`) takes its few lists from here without importing the readers, which import it.
A list used by one reader alone lives beside the rule that uses it (`cues`, `questions`,
`amounts`, `query`); the gate's label rules keep theirs in `optmem.identifiers`.
"""

# English function words: they match nearly every record, so a search drops them when the
# query has other terms (`query.search_terms`; they still count for the write gate and in the
# index); a capitalised one names nothing (`compare.looks_like_update`, `identifiers`).
STOPWORDS = frozenset(
    """a about an and are as at be been but by can could did do does for from had
has have how i if in into is it its me my of on or our so that the their them then there these
they this to was we were what when where which who whom why will with would you your""".split()
)

# Dropped by `text.normalize` (what a fingerprint compares): words that intensify without
# changing the fact ("很喜欢" and "非常喜欢", "really like" and "like" say the same thing).
EN_INTENSIFIERS = frozenset("very really extremely quite truly super so totally".split())
CJK_INTENSIFIERS = "非常|特别|十分|极其|超级|相当|真的|很"

# The particles that end a Chinese sentence (现在有五盆花了, 好啦, 是吧): how it is said, not what
# — left out when two statements are compared (`text.without_final_particles`).
FINAL_PARTICLES = "了啦呢吧啊呀嘛哦"

# The Chinese numerals (`text.numbers` reads their value; `text.holds_number`, the gate's label
# rules and `amounts` tell a number by them).
CJK_NUMERALS = "零一二两兩三四五六七八九十百千万萬亿億半"
NUMERAL_CHARS = frozenset(CJK_NUMERALS)
CJK_DIGIT_VALUES = {
    c: i for i, cs in enumerate(("〇零", "一", "二两兩", "三", "四", "五", "六", "七", "八", "九")) for c in cs
}
CJK_TENS = {"十": 10, "百": 100, "千": 1000}
CJK_MYRIADS = {"万": 10**4, "萬": 10**4, "亿": 10**8, "億": 10**8}

# The measure words a count is asked in (几盆, 几期, 几家): after 几 they make it a question word
# (`questions`); after a numeral, a number (`text.numbers`: 三号, 五盆) and an amount (`amounts`).
MEASURES = (
    "个個点點号號月天日次年岁歲位件楼樓层層本只隻条條张張盆口台臺辆輛种種期集家双雙趟遍回场場幅篇首部"
    "门門份杯瓶块塊斤周週颗顆把支根片袋包盒箱顿頓餐项項款座栋棟间間套架艘名届屆季章页頁课課节節所圈局"
    "盘盤轮輪封句段枚头頭匹株棵朵笔筆顶頂分秒"
)
# … and the units a count or a sum is asked in beside them (几小时, 几公里, 几元, 几人, 几倍)
UNIT_CHARS = "元人亿億倍"
UNIT_WORDS = "小时|小時|公里|公斤|千克|厘米|公分|英里|美元|星期|礼拜|禮拜|分钟|分鐘"
# The unit of a Chinese amount (a pattern source): a measure word — not one that names a month or
# a day (五月, 6号: "几号" asks a date, not an amount) —, a unit, or 个月
CJK_UNITS = (
    "(?:[" + "".join(c for c in MEASURES if c not in "月日号號") + UNIT_CHARS + "]|" + UNIT_WORDS + "|个月|個月)"
)

# The measures whose number says how much, not which (`identifiers`: "batch size 64", "the
# price is 40" state an amount, not a label).
MEASURE_WORDS = frozenset(
    """time price cost score weight distance age total budget salary rent
height pace speed temperature balance mileage duration length""".split()
)

# Currency signs: the number after one is an amount ("$300": `amounts`, `identifiers`).
CURRENCY = "$€£¥₹"
# A year of the last two centuries, written in digits (a pattern source): "since 2019" places a
# number in time (`amounts`), "the 2024 roadmap" labels a thing (`identifiers`).
YEAR = r"1[89]\d\d|20\d\d"
