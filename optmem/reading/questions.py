"""The form of a question: the words that make a sentence ask, read apart from what it asks about.

* "how many", "how much", "how long" are the question's form (`asks_how`), as 多少 and 多久 are;
* the Chinese question words, particles and the possessive 的 are a question's form, not its
  topic: they are cut out of a query's Chinese runs before the bigrams are formed (`topic_runs`);
* the sentences of a text that ask (`questions`): what a conversation turn asks, without what it
  states.

The Chinese patterns are compiled on first use, for a text with Chinese in it only.
"""

import re

from optmem.reading.lexicon import MEASURES, UNIT_CHARS, UNIT_WORDS
from optmem.text import cjk_compiled

__all__ = ["asks_how", "may_ask", "open_questions", "questions", "topic_runs"]

# The word after "how" that asks for an amount: "how many", "how much", "how long" are the
# question's form as 多少 and 多久 are (a record saying "many" or "long" is no answer to "how many
# plants", "how long have I had Luna"; the answer states a number). Not "how often" ("I often go"
# answers it), "how old", "how far" (the answer says "years old", "far away").
_HOW = frozenset(("many", "much", "long"))

# The Chinese counterpart for queries: the words that make a sentence a question are its form,
# not its topic ("小明住在哪里" asks about 小明住在, not 哪里; "搬家了吗" about 搬家). They are cut
# out of a query's CJK runs before the bigrams are formed, so their neighbours pair with each
# other and no bigram straddles them; 哪 but in 哪吒; 几 only before a measure word (below); the
# particles 吗 呢 吧 only ending a run (not 吗啡), and 吧 呢 not where they end a noun (酒吧, 网吧,
# 贴吧, 氧吧, 毛呢 — not 花呢: "什么花呢" asks about 花); 啊 呀 ending a run
# too. The copula beside a question word is part of its form (端口是多少, 什么是向量 — not the 是
# that ends 但是, 于是, 还是, 就是 …), and so is the existential 有 before one (书有哪些, 有什么 —
# not the 有 that ends 没有, 所有, 现有, 患有 …). Simplified and traditional forms.
#
# The measure words a count is asked in (几盆, 几期, 几家; `lexicon.MEASURES`): after 几 they make
# it a question word (几 in other words is no question: 几乎, 几率, 茶几, nor 好几 / 十几, "several")
# — the measure word stays with what follows (几年级, 几号线, 几分钟: the noun may begin with it)
_CJK_QUESTION = (
    "(?:(?<![但于於还還就可不])是|(?<![没沒还還所只已拥擁具持含占佔现現原享富患唯固特专專])有)?(?:为什么|為什麼|什么时候|什麼時候|什么样|什麼樣|什么|什麼|怎么样|怎麼樣|怎么|怎麼|怎样|怎樣|哪里|哪裡|哪儿|哪兒|哪个|哪個|"
    "哪些|哪天|哪位|哪家|哪种|哪種|谁|誰|啥|如何|为何|為何|是否|多少|多久|多长时间|多長時間|多长|多長|请问|請問|"
    "是不是|有没有|有沒有|干嘛|幹嘛|干吗|幹嗎|咋|(?<![茶庶好十])[几幾](?=["
    + MEASURES
    + UNIT_CHARS
    + "]|"
    + UNIT_WORDS
    + ")"
    "|哪(?!吒))是?|(?:[吗嗎啊呀]|(?<![酒网網贴貼氧])吧|(?<!毛)呢)+$"
)
# a piece of one of these characters left between question words is no topic (部署步骤是怎样的: 的)
_CJK_PARTICLES = frozenset("的了啊呀吗嗎呢吧是在着著得地")
# … and the possessive 的, a function word as "of" and "my" are in English: "小明的手机号" asks
# about 小明 and 手机号, and no bigram may straddle it (明的, 的手 match 我的手表) — not the 的 of
# 目的, 别的, 有的, 真的, 打的, 的确, 的士, 的话, 的哥 (no lone 别, 真, 话 left to match)
_CJK_SPLIT = _CJK_QUESTION + "|(?<![目别有真打])的(?![确士话哥])"

# A sentence that asks: from a sentence start to a question mark that ends it (not one inside a
# URL or code: "soup?topic=spices"), or to a 吗 / 嗎 that ends it (Chinese often leaves the mark out:
# 你去过上海吗，…). Anchored at a sentence start, so a long text without stops is read once.
_ENDS = ".!?。！？\n"
_QUESTION = rf"(?<![^{_ENDS}])[^{_ENDS}]*?(?:[?？](?![a-z0-9_=&/%])|[吗嗎](?=\s*(?:[{_ENDS},，;；]|$)))"
# … run as this pattern of ASCII classes over the text with its Chinese stops, marks and 吗 made
# ASCII, a character for a character (the spans are the text's; a \x01 it holds becomes \x02,
# which reads as the \x01 did): a class holding CJK characters compiled to a big character set,
# ~0.6 ms of every search that scored a question — the ASCII one, ~0.15 ms
_QUESTION_ASCII = r"(?<![^.!?\n])[^.!?\n]*?(?:\?(?![a-z0-9_=&/%])|\x01(?=\s*(?:[.!?\n,;]|$)))"
_AS_ASCII = str.maketrans(
    {"。": ".", "！": "!", "？": "?", "，": ",", "；": ";", "吗": "\x01", "嗎": "\x01", "\x01": "\x02"}
)
_QUESTION_RE: re.Pattern[str] | None = None  # compiled on first use: most commands ask nothing
_ASK_MARKS = ("?", "？", "吗", "嗎")


def asks_how(words: list[str]) -> list[bool]:
    """For each word, whether it is the amount word of "how many / much / long"."""
    return [w in _HOW and i > 0 and words[i - 1] == "how" for i, w in enumerate(words)]


# What every match of `_CJK_SPLIT` holds: a character of each question word (什, 怎, 哪, 何, 否, 多,
# 问, 不 of 是不是, 没 of 有没有 …), a final particle, 的. A run without any is not split, and the
# pattern (~17M instructions to compile, ~5 ms: a Chinese keyword query paid it in every process)
# is not compiled. A question word that could match without one of these would go uncut: keep
# them in step with the pattern.
_SPLIT_NEEDLES = frozenset("什么麼怎哪谁誰啥何否多问問不没沒嘛吗嗎咋几幾啊呀吧呢的")


def topic_runs(cjk: str) -> list[str]:
    """A query's CJK run without its question words and its 的: the pieces left, in order (a lone
    particle left over dropped)."""
    pieces = cjk_compiled(_CJK_SPLIT).split(cjk) if not _SPLIT_NEEDLES.isdisjoint(cjk) else [cjk]
    return [piece for piece in pieces if piece and not (len(piece) == 1 and piece in _CJK_PARTICLES)]


def may_ask(text: str) -> bool:
    """Whether a text may hold a question (`questions`): the cheap test before folding it."""
    return any(mark in text for mark in _ASK_MARKS)


def questions(folded: str) -> str:
    """The sentences of a folded text that ask (end in a question mark, or a Chinese 吗), joined —
    what a turn asks, without what it states ("I got a dog. What did you name yours?" asks about
    a name)."""
    return " ".join(folded[a:b] for a, b in _spans(folded)) if may_ask(folded) else ""


def _spans(folded: str) -> list[tuple[int, int]]:
    """Where the question sentences of a folded text stand (read on its ASCII image: the same length)."""
    global _QUESTION_RE
    if _QUESTION_RE is None:
        _QUESTION_RE = re.compile(_QUESTION_ASCII)
    text = folded if folded.isascii() and "\x01" not in folded else folded.translate(_AS_ASCII)
    return [m.span() for m in _QUESTION_RE.finditer(text)]


def open_questions(folded: str) -> tuple[str, str]:
    """The question sentences a folded text ends with — those no statement follows, what it leaves
    for the next turn to answer — and what it states after its last question ("" when it ends
    asking). A turn that holds both sides of an exchange ("Asked: What port does the api use? —
    Answered: The api listens on port 8080.") leaves nothing open: ("", "— answered: …")."""
    if not may_ask(folded):
        return "", ""
    spans = _spans(folded)
    if not spans:
        return "", ""
    after = folded[spans[-1][1] :]
    if any(ch.isalnum() for ch in after):
        return "", after
    first = len(spans) - 1  # the run of questions it ends with ("I got a dog. Is it yours? Its name?")
    while first and not any(ch.isalnum() for ch in folded[spans[first - 1][1] : spans[first][0]]):
        first -= 1
    return " ".join(folded[a:b] for a, b in spans[first:]), ""


_ANSWER_LABEL: re.Pattern[str] | None = None


def answered(after: str) -> bool:
    """Whether what a folded text states after its question is labelled as the answer: "… ? —
    Answered: …" (a Hermes turn), "Q: … ? A: …", "…？ 答：…"."""
    global _ANSWER_LABEL
    if _ANSWER_LABEL is None:
        _ANSWER_LABEL = re.compile(r"[\s\-—–|:：]*(?:answered|answer|a|回答|答|答复|答覆)\s*[:：]")
    return _ANSWER_LABEL.match(after) is not None
