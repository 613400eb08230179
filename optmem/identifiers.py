"""Identifiers: whether what changed between two statements names *another thing* rather than
giving the same thing a new value — the write gate's check before it guesses "possible update".

"Ticket 17 is about the login page" and "Ticket 18 is about the login page" differ in one number,
as "the backend runs on port 8080" and "… port 9090" do; only the second is a new value. What
tells them apart is where the number stands, not which word is beside it:

* it is a **label**: written right after the word it names ("ticket 17", "note 2", "python 3.12",
  "customer Acme", 工单17, 客户A, 项目甲), right before a noun in Chinese (8080端口), or marked as
  one by its form (#42, v2.1, app1, /srv/app2, 2024-03-01, a year, 第3期, 3号; without digits a
  path, a dotted name, a snake_case or kebab-case compound: feature/login, api.example.com,
  config.yaml, user_id, feature-login) — not a count or a measure, which stands before what it
  counts or measures ("3 plants", "64 GB", "12 minutes", 五公里, 三只猫, $20, 10%), nor the amount
  after a noun of one ("batch size 64");
* and the label stands in the statement's **subject**: only a bare noun phrase before it (no
  verb, copula, preposition or pronoun: "laptop note", "the staging db host", 工单), and more of
  the shared words after it than before it — the predicate said about the thing it names; or in
  a phrase that modifies the subject's noun: a preposition before it but no verb or pronoun, and
  the statement's verb after it ("the runbook for region eu-west-1 is in the ops repo",
  "interview loop for candidate 14 is on Thursday").

A label after the predicate has begun ("runs on port 8080", "I'm on page 200", 端口是8080) or
ending the statement ("backend port 8080", "the server runs python 3.12") is the value the
statement gives its subject, and changing it is a possible update; so is a changed count or
measure anywhere. A name with no noun before it ("Alice owns billing" → "Bob owns billing") is no
label: the owner may have changed. ("More of the shared words": a Chinese character counts as half
a word, Chinese words being about two characters long — 项目甲用React is said of 项目甲.)

Whether two statements are near duplicates does not depend on where a label stands
(`labels_differ`): "server A runs nginx" and "server B runs nginx", "the api is served from
api.example.com" and "… cdn.example.com" are two statements, whatever else they share.
"""

import functools
import unicodedata
from collections.abc import Iterator, Sequence

from optmem import text as textmod
from optmem.patterns import lazy
from optmem.reading.lexicon import CJK_UNITS, CURRENCY, MEASURE_WORDS, NUMERAL_CHARS, STOPWORDS, YEAR
from optmem.value import NamedTuple

__all__ = ["labels_differ", "names_another_thing", "names_its_subject", "opcodes", "values"]

# Words that may open a noun phrase without ending it: "the ticket 17", "our laptop note 2".
# Every other function word (is, on, to, I, we, …) means the predicate has begun.
_DETERMINERS = frozenset("a an the my our your their its his her this that these those".split())
# The words that begin a clause in English: a form of be, have or do, a modal, a subject pronoun
# (with the verb forms of `_is_verb_form`) — a preposition before them may modify a noun of the
# subject ("the runbook for region …"), one after them belongs to the predicate.
_CLAUSE_WORDS = frozenset(
    """am is are was were be been being m re s has have had do does did will would
can could shall should may might must i we you they he she it""".split()
)
# Chinese characters that make the words around them a predicate (copula, existence, place,
# prepositions, aspect, modal): 端口是8080, 会议室在3楼, 我有3盆 — not a noun naming a label.
_CJK_PREDICATE = frozenset("是有在为為被把给給对對从從到于於向跟和与與要会會能了过過着著让讓将將按")
# … of them, those that begin one wherever they stand (会 of 会员, 要 of 要点 are nouns' too)
_CJK_BEGINS_PREDICATE = frozenset("是有在为為被把给給对對从從到于於向跟和与與")
_CJK_ORDINAL = "第"
_CJK_LABEL_AFTER = frozenset("号號")
# Units that make the number before them a measure ("12 minutes", "64 GB", "5 km"): a measure is
# a value wherever it stands. (Chinese measure words and units: `lexicon.CJK_UNITS`.)
_UNITS = frozenset(
    """ms s sec secs second seconds min mins minute minutes h hr hrs hour hours day days
week weeks month months year years b kb mb gb tb pb kib mib gib tib byte bytes bit bits percent pct
rps qps tps req reqs request requests x times km m cm mm mi mile miles kg g lb lbs pound pounds
dollar dollars euro euros usd eur cny rmb yuan k""".split()
)
# Nouns of an amount: the number after one is how much, not which ("batch size 64", "replica
# count 3", "timeout 30"), as the measures a question asks for are (`lexicon.MEASURE_WORDS`).
_AMOUNT_NOUNS = MEASURE_WORDS | frozenset(
    """size count number limit max maximum min minimum amount
level rate ratio percentage threshold timeout ttl quota capacity interval frequency""".split()
)
# Words that say the number after them is which one, wherever they stand: "record number 1",
# "invoice no. 7" — a label, never a value of the thing before them
_NUMBER_WORDS = frozenset(("number", "no", "nr", "num"))
# Nouns of an entry in a series — minutes of a recurring meeting, a serial number: a whole
# number right after one says which entry ("minutes 4", "周会 23", "编号 12"), wherever it stands —
# never how many, nor a value of the entry. (Not page, chapter, version, sprint: "I'm on page 200",
# "now on python 3.12" give a value where they stand; their labels are read by where they stand,
# `_is_label`.)
_ITEM_NOUNS = frozenset(("minutes",))
_CJK_ITEM_NOUNS = ("纪要", "紀要", "编号", "編號", "序号", "序號", "周会", "週會", "例会", "例會")
# A record, an entry, a note, a log is a series noun only among words that say there is a series
# (`_SERIES`): "体重记录 70", "blood pressure record 120", "our team record 45 wins" hold values;
# "gamma 周会记录 23", "writer 3 record 2" name which entry
_SERIES_NOUNS = frozenset(("record", "entry", "memo", "log"))
_CJK_SERIES_NOUNS = ("记录", "記錄", "笔记", "筆記", "日志", "日誌")
_SERIES_WORDS = frozenset(("meeting", "meetings", "minutes", "standup", "session", "episode"))
_CJK_SERIES = lazy(r"周会|週會|例会|例會|会议|會議|编号|編號|序号|序號|纪要|紀要|第\s*\d+\s*[次期回]")
# … and a record of an achievement holds a value ("best record 120 points", 最高记录 120)
_ACHIEVEMENT = frozenset(("best", "world", "personal", "top", "high", "highest", "fastest", "longest", "new"))

# Chinese labels after a noun, as A, B, C after one in English (项目甲, 甲方): the celestial stems
_CJK_LABELS = frozenset("甲乙丙丁")
_SENTENCE_ENDS = ".!?;:。！？；：\n"


class _Token(NamedTuple):
    unit: str  # what is compared: a stemmed word, a compound as written (folded), a CJK character
    raw: str  # as written (NFKC, case kept)
    gap: str  # what is written between it and the token before it (" #", ": ", " $")
    after: str  # the character written just after it ("%")
    opens: bool  # the first word of its sentence (a capital there names nothing)


# Chinese characters that give no value: pronouns, particles, the copula, prepositions, adverbs
# of degree and the verbs that say a value changed (改成, 换到 …) — what is left of a statement is
# its subject and its value (the person, the place, the thing), there being no capital to say so
_CJK_NO_VALUE = frozenset(
    "我你您他她它们咱这那哪个些的地得了着过吗呢吧啊呀嘛是有在为為被把给給对對从從到于於向跟和与與及或"
    "要会會能让讓将將按也都还還就才又很太更最已经經不没沒别改变變换換调調升降成用"
)


def function_character(c: str) -> bool:
    """A Chinese character of grammar, not content (的, 在, 是, 了, 用 …): it names no value."""
    return c in _CJK_NO_VALUE


# (a search reads the values of its top hits: a process that searches again — the MCP server,
# the hub, the Hermes provider — meets the same records often)
@functools.lru_cache(maxsize=4096)
def values(text: str, ignore: frozenset[str] = frozenset()) -> frozenset[str]:
    """The values a statement gives — what a newer statement of the same attribute changes: its
    numbers ("#8080", "#5" for 五盆), its names (a capitalised word inside a sentence: Bristol,
    GitHub, March), its identifiers by form (api.example.com, feature/login), and, in Chinese
    text, where no capital marks a name, its Latin words and every character that is neither a
    function character nor a word of `ignore` (the cue words: 现在, 改成): the place, the person,
    the thing (上海, 赵磊). An English statement of only common words gives none ("the support
    group has been so helpful")."""
    cjk = textmod.has_cjk(text)
    out = {"#" + n for n in textmod.numbers(text)}
    for t in _tokens(text, ignore):
        if _is_cjk(t):
            if t.raw not in _CJK_NO_VALUE and t.raw not in NUMERAL_CHARS:
                out.add(t.raw)
        elif any(map(str.isdigit, t.raw)):
            continue  # a number is read above ("#8080"); app1, python3.12 are labels of their own
        elif (
            _is_name(t)
            or _has_identifier_form(t)
            or (t.raw[:1].isupper() and t.after in "'’")  # a possessive names someone, first word too: Bob's
            or (cjk and t.raw.isascii() and _word(t) not in STOPWORDS)
        ):
            out.add(t.unit)
    return frozenset(out)


def names_its_subject(old: str, new: str, ignore: frozenset[str] = frozenset()) -> bool:
    """Whether `new` names what `old` is about: a content word (a Chinese character of no
    function; a word inside an identifier too: vpn of vpn2.corp.example.com) of `old`'s subject —
    its words before its predicate begins (`_begins_predicate`: a function word, a Chinese copula
    or preposition) or before a colon ("Gym plan: Mon/Wed/Fri"). "The backend listens on port
    9090" does not name what "Database is Postgres 16; migrations live in backend/migrations" is
    about (the database), though both say "backend"; "Mom finally closed on the condo" names Mom
    of "Mom is still in Columbus". A statement whose subject has no content word ("We lint with
    flake8", "Replaced …") is about whatever it shares: True."""
    subject = _subject(old, ignore)
    return not subject or not subject.isdisjoint(_named(new, ignore))


@functools.lru_cache(maxsize=4096)
def _named(text: str, ignore: frozenset[str]) -> frozenset[str]:
    """What a statement names: its units, and the words inside its identifiers (vpn of
    vpn2.corp.example.com, backup of s3://acme-backups-prod)."""
    out: set[str] = set()
    for t in _tokens(text, ignore):
        out.add(t.unit)
        out.update(_inside(t))
    return frozenset(out)


def _inside(t: _Token) -> list[str]:
    """The words inside an identifier, stemmed, their digits off (vpn of vpn2.corp.example.com):
    none for a word or a Chinese character."""
    if _is_cjk(t) or t.unit.isalpha():
        return []
    parts = [p.rstrip("0123456789") for p in textmod.compiled(r"[./_:-]").split(_word(t))]
    words = [p for p in parts if p.isalpha() and p not in STOPWORDS]
    return textmod.stem_words(words) if words else []


@functools.lru_cache(maxsize=4096)
def _subject(text: str, ignore: frozenset[str]) -> frozenset[str]:
    """The content units of a statement's subject (see `names_its_subject`)."""
    out: set[str] = set()
    for i, t in enumerate(_tokens(text, ignore)):
        if (i and t.opens) or _begins_predicate(t) or (i and any(map(":：".__contains__, t.gap))):
            break
        if _is_cjk(t):
            if t.raw not in _CJK_NO_VALUE and t.raw not in NUMERAL_CHARS:
                out.add(t.unit)
        elif any(map(str.isalpha, t.unit)) and _word(t) not in STOPWORDS:
            out.add(t.unit)  # a word, an identifier (staging-api, api_backend), a label (5k)
            out.update(_inside(t))  # … and the words inside an identifier (timeout of timeout_ms)
    return frozenset(out)


# How many steps one comparison of two statements may take (`opcodes`): difflib's inner loop
# visits, for each unit of one text, every place of the other text holding it — nothing for
# ordinary statements (a 2,000-character note against another takes ~20,000), but the square of a
# run of one repeated unit (大 × 8,000: 64 million, seconds under the vault's lock)
DIFF_STEPS = 200_000


class _TooLong(Exception):
    """A comparison would take more than its steps."""


def opcodes(a: Sequence[str], b: Sequence[str], steps: int = DIFF_STEPS) -> list[tuple[str, int, int, int, int]] | None:
    """How `b` differs from `a`, unit by unit (difflib's opcodes), in at most about `steps` steps
    (`DIFF_STEPS`) — or None when that cannot be told within them. difflib's result whenever it
    fits; when it does not, the beginning and end the two share are taken out (a long text said
    again with a change inside: linear) and what lies between is compared within the steps.
    Every caller reads None as "cannot tell" and leaves the two statements apart: no possible
    update, no near duplicate. (difflib is imported here: a search reads its hits' values and
    rarely compares two statements.)"""
    try:
        return _budgeted(a, b, steps)
    except _TooLong:
        pass
    n = min(len(a), len(b))
    head = next((i for i in range(n) if a[i] != b[i]), n)
    tail = next((i for i in range(n - head) if a[-1 - i] != b[-1 - i]), n - head)
    if not head and not tail:
        return None  # nothing shared to take out: the same comparison again
    try:
        middle = _budgeted(a[head : len(a) - tail], b[head : len(b) - tail], steps)
    except _TooLong:
        return None
    ops = [("equal", 0, head, 0, head)] if head else []
    ops += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in middle]
    if tail:
        ops.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    return ops


def _budgeted(a: Sequence[str], b: Sequence[str], steps: int) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes, or `_TooLong` before the steps run out: each search for the longest
    matching block (`find_longest_match`, where all the work is) is counted before it runs — the
    units of `a` it reads and every place of `b` holding each."""
    import difflib

    class Matcher(difflib.SequenceMatcher):  # type: ignore[type-arg]
        def find_longest_match(
            self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
        ) -> difflib.Match:
            nonlocal steps
            top = len(a) if ahi is None else ahi
            steps -= top - alo + visits[top] - visits[alo]
            if steps < 0:
                raise _TooLong
            return super().find_longest_match(alo, top, blo, bhi)

    from collections import Counter

    held = Counter(b)
    visits = [0]  # visits[i]: the places of b that the units a[:i] hold
    for unit in a:
        visits.append(visits[-1] + held[unit])
    ops: list[tuple[str, int, int, int, int]] = list(Matcher(a=a, b=b, autojunk=False).get_opcodes())
    return ops


def names_another_thing(old: str, new: str, ignore: frozenset[str] = frozenset()) -> bool:
    """Whether the first thing that changed from `old` to `new` is an identifier in the
    statement's subject: a label that names which thing the statement is about (see the module
    docstring), so the two statements are about two things, not two values of one.
    `ignore`: words that only say *when* ("now", "现在"), left out as `looks_like_update` does.
    Two statements too long to compare within `DIFF_STEPS` count as two things."""
    a, b = _tokens(old, ignore), _tokens(new, ignore)
    ops = opcodes([t.unit for t in a], [t.unit for t in b])
    if ops is None:
        return True
    first = next((op for op in ops if op[0] != "equal"), None)
    if first is None or first[0] != "replace":
        return False
    _, i1, i2, j1, j2 = first
    if _numbered(a, i1, i2) and _numbered(b, j1, j2):
        return True  # "record number 1" → "record number 2": another record, wherever it stands
    # (before the first change every unit is shared: `i1` of them)
    after = sum(_weight(t) for tag, x1, x2, _, _ in ops if tag == "equal" and x1 >= i2 for t in a[x1:x2])
    if any(map(_is_predicate, a[:i1])):
        if not _in_modifier(a, i1, i2):
            return False  # the label (if it is one) stands in the predicate: the value said of the subject
    elif after <= sum(map(_weight, a[:i1])):
        return False  # … or ends the statement: "backend port 8080"
    return _is_label(a, i1, i2) and _is_label(b, j1, j2)


def changes_subject(old: str, new: str, ignore: frozenset[str] = frozenset()) -> bool:
    """Whether the first thing that changed from `old` to `new` stands in the statement's subject:
    before any predicate word (`_is_predicate`: a verb in -s, a function word, a Chinese copula or
    preposition). "numpy is pinned to 1.26" → "pandas is pinned to 2.1" changed its subject; "the
    server restarts at 4am on sundays" → "… at 3am every night" changed what is said of it.
    Two statements too long to compare within `DIFF_STEPS` count as a changed subject."""
    a, b = _tokens(old, ignore), _tokens(new, ignore)
    ops = opcodes([t.unit for t in a], [t.unit for t in b])
    if ops is None:
        return True
    first = next((op for op in ops if op[0] != "equal"), None)
    if first is None:
        return False
    _, i1, i2, _, _ = first
    # (a preposition may still be in the subject: "1:1 with Maria is every Monday" — `_in_modifier`)
    return not any(map(_is_predicate, a[:i1])) or _in_modifier(a, i1, i2)


def _numbered(tokens: list[_Token], i: int, j: int) -> bool:
    """Whether tokens[i:j] is one number right after a word that says it numbers what is named
    (`_NUMBER_WORDS`: "number 1", "no. 7"), or a whole number right after the noun of an entry in
    a series with no unit after it: one that is always (`_ITEM_NOUNS`: 周会 23, 编号 12), or a
    record, note or log among words that say there is a series (`_series`: 周会记录 23, "writer 3
    record 2") — and then, in English, with no word after the number to make it a quantity
    ("record 45 wins")."""
    if j - i != 1 or i == 0 or not any(map(str.isdigit, _word(tokens[i]))):
        return False
    if _word(tokens[i - 1]) in _NUMBER_WORDS:
        return True
    if not _word(tokens[i]).isdigit() or _is_measure_unit(tokens, j):
        return False
    before = "".join(t.raw for t in tokens[max(0, i - 2) : i])
    word = _word(tokens[i - 1])
    cjk = _is_cjk(tokens[i - 1])
    if word in _ITEM_NOUNS or (cjk and before.endswith(_CJK_ITEM_NOUNS)):
        series = True
    elif word in _SERIES_NOUNS:
        worded = j < len(tokens) and not _is_cjk(tokens[j]) and _word(tokens[j]).isalpha()  # "record 45 wins"
        series = _series(tokens, i - 1) and not worded
    elif cjk and before.endswith(_CJK_SERIES_NOUNS):
        series = _series(tokens, i - 2)
    else:
        return False
    noun = i - 1 if not cjk else i - 2
    ahead = tokens[max(0, noun - 2) : noun]
    return series and not any(_word(t) in _ACHIEVEMENT or t.raw == "最" for t in ahead)


def _series(tokens: list[_Token], noun: int) -> bool:
    """Whether the words say the entry named at `noun` is one of a series: a meeting, minutes, a
    serial number, 第…次 — or a numbered name before it ("writer 3 record 2")."""
    text = "".join(t.gap + t.raw for t in tokens)
    if _CJK_SERIES.search(text) or any(_word(t) in _SERIES_WORDS for t in tokens):
        return True
    return any(
        _word(tokens[k]).isdigit() and not _is_cjk(tokens[k - 1]) and _word(tokens[k - 1]).isalpha()
        for k in range(1, noun)
    )


def _in_modifier(tokens: list[_Token], i: int, j: int) -> bool:
    """Whether tokens[i:j], after a preposition, is still in the subject: in a phrase that
    modifies its noun ("the runbook for region eu-west-1 is in the ops repo", "interview loop for
    candidate 14 is on Thursday") — no verb or subject pronoun before it, and one after it (the
    statement's verb comes later). After a verb it is the value ("the backend listens on port
    8080", "I'm on page 200", "the uploads live in /srv/app1"), and so it is after a Chinese
    predicate word (会议室在3楼: a Chinese sentence has no verb in -s to look for)."""
    before = tokens[:i]
    return (
        not any(_is_cjk(t) and t.raw in _CJK_PREDICATE for t in before)
        and not any(_begins_clause(t) for t in before if not _is_cjk(t))
        and any(_begins_clause(t) for t in tokens[j:] if not _is_cjk(t))
    )


def _begins_clause(t: _Token) -> bool:
    """A verb (a form of be, have, do, a modal, a verb in -s or -ed) or a subject pronoun."""
    return _word(t) in _CLAUSE_WORDS or _is_verb_form(t)


def labels_differ(a: str, b: str) -> bool:
    """Whether something that changed from `a` to `b` holds a label by its form, wherever it
    stands (`_has_label_form`: server A → server B, 项目甲 → 项目乙, feature/login → feature/signup,
    api.example.com → cdn.example.com), so the two texts name two things and are no near
    duplicates (`compare.similarity`). Compounds are compared by their parts, so a change of spelling
    is none ("follow-up" and "followup", "user_id" and "user-id", "docker compose" and
    "docker-compose files"). Two texts too long to compare within `DIFF_STEPS` count as
    differing."""
    pa, pb = _label_parts(a), _label_parts(b)
    ops = opcodes([p for p, _ in pa], [p for p, _ in pb])
    if ops is None:
        return True
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal" or "".join(p for p, _ in pa[i1:i2]) == "".join(p for p, _ in pb[j1:j2]):
            continue
        if any(label for _, label in pa[i1:i2]) or any(label for _, label in pb[j1:j2]):
            return True
    return False


def _label_parts(text: str) -> list[tuple[str, bool]]:
    """A text's words split at their inner dots, dashes, underscores and slashes (folded,
    unstemmed) and CJK characters, each with whether the token it is part of is a label by its
    form."""
    out = []
    for t in _tokens(text, frozenset()):
        label = _has_label_form(t)
        out += [(part, label) for part in "".join(c if c.isalnum() else " " for c in _word(t)).split()]
    return out


def _has_label_form(t: _Token) -> bool:
    """Whether a token is a label by its form alone: a lone capital letter inside a sentence
    (server A, 服务器B; not I, nor an A opening one: the article), one of 甲乙丙丁, or a word
    written as an identifier (`_has_identifier_form`)."""
    if _is_cjk(t):
        return t.raw in _CJK_LABELS
    if _is_letter(t):
        return not (t.raw == "A" and t.opens)
    return _has_identifier_form(t)


def _has_identifier_form(t: _Token) -> bool:
    """Whether a word is written as an identifier, no prose word being so: a path (feature/login,
    /srv), a dotted name (api.example.com, config.yaml, os.path — not an abbreviation of single
    letters: e.g, U.S), a snake_case or kebab-case compound (user_id, feature-login, us-east-1),
    holding a letter (2024-03-01, 1.2.3 are numbers)."""
    if t.raw.isalpha() and t.raw.isascii():  # a plain word (most tokens): one only after a slash
        return t.gap.endswith("/")
    w = _word(t)
    if not any(map(str.isalpha, w)):
        return False
    return (
        t.gap.endswith("/")
        or any(map(w.__contains__, "/_-"))
        or ("." in w and any(len(part) > 1 for part in w.split(".")))
    )


def _weight(t: _Token) -> float:
    """How much of a word a token is: a Chinese character half of one (most Chinese words have
    two), any other token one."""
    return 0.5 if _is_cjk(t) else 1.0


def _tokens(text: str, ignore: frozenset[str]) -> list[_Token]:
    """The statement's tokens in order: CJK characters one by one, other words whole with their
    inner dots, dashes, underscores and slashes, and colons between digits (python3.12,
    2024-03-01, srv/app1, web-07, user_id, api.example.com, 14:30) — the cue words of `ignore`
    and the particles ending a Chinese sentence left out, as `text._units` does."""
    s = unicodedata.normalize("NFKC", text)
    if not s.isascii():  # (an English text holds no Chinese cue word: nothing to take out)
        for phrase in ignore:
            if not phrase.isascii():
                s = s.replace(phrase, " ")
    if textmod.has_cjk(s):
        s = textmod.without_final_particles(s)
    found: list[tuple[str, str, str, str, bool]] = []
    last = 0  # where the token before ended
    ascii = s.isascii()  # (then a word folds as `textmod.fold` folds ASCII: its case alone)
    for start, end, cjk in _spans(s):
        raw = s[start:end]
        folded = raw if cjk else raw.casefold() if ascii else textmod.fold(raw)
        if folded in ignore:
            continue
        gap = s[last:start]
        opens = not found or any(map(_SENTENCE_ENDS.__contains__, gap))
        found.append((folded, raw, gap, s[end : end + 1], opens))
        last = end
    words = [f for f, *_ in found if f.isascii() and f.isalpha()]
    stems = iter(textmod.stem_words(words) if words else [])
    return [
        _Token(next(stems) if f.isascii() and f.isalpha() else f, raw, gap, after, opens)
        for f, raw, gap, after, opens in found
    ]


def _spans(s: str) -> Iterator[tuple[int, int, bool]]:
    """(start, end, is CJK) of each token of `s`, in order: a CJK character alone, or a word with
    its inner joiners. The CJK runs come from the tokeniser's one-class pattern (`text.cjk_runs`),
    the words between them from a pattern without a CJK class (one with both takes ~5 ms to
    compile; a search would pay it for the values of its top hits)."""
    words = textmod.compiled(r"[^\W_]+(?:(?:[./_-]|(?<=\d):(?=\d))[^\W_]+)*")
    pos = 0
    if textmod.has_cjk(s):
        for run in textmod.cjk_runs().finditer(s):
            for m in words.finditer(s, pos, run.start()):
                yield m.start(), m.end(), False
            for i in range(run.start(), run.end()):
                yield i, i + 1, True
            pos = run.end()
    for m in words.finditer(s, pos):
        yield m.start(), m.end(), False


def _word(t: _Token) -> str:
    """A token's word, folded and unstemmed."""
    return textmod.fold(t.raw)


def _is_cjk(t: _Token) -> bool:
    return len(t.raw) == 1 and textmod.has_cjk(t.raw)


def _is_predicate(t: _Token) -> bool:
    """Whether a token begins or carries a predicate (a function word other than a determiner, a
    verb in -s, a Chinese copula or preposition): no noun phrase naming a thing holds one ("CI
    uses node 18 for …": node 18 is what CI uses)."""
    if _is_cjk(t):
        return t.raw in _CJK_PREDICATE
    w = _word(t)
    return (w in STOPWORDS and w not in _DETERMINERS) or _is_verb_form(t, past=False)


def _begins_predicate(t: _Token) -> bool:
    """A function word other than a determiner, or a Chinese copula or preposition: a subject
    read up to it keeps its nouns in -s ("Application logs are kept …")."""
    if _is_cjk(t):
        return t.raw in _CJK_BEGINS_PREDICATE
    w = _word(t)
    return w in STOPWORDS and w not in _DETERMINERS


def _is_name(t: _Token) -> bool:
    """A capitalised word inside a sentence (Acme, Okta) or a lone capital letter there (客户A,
    option B; not "I")."""
    if t.opens or not t.raw.isalpha() or not t.raw[0].isupper() or _is_cjk(t):
        return False
    return t.raw != "I" if len(t.raw) == 1 else _word(t) not in STOPWORDS


def _is_verb_form(t: _Token, past: bool = True) -> bool:
    """Whether a word has a verb's ending: -s (takes, runs) or, with `past`, -ed (finished) — the
    number after it is its object's count ("runs 12 nodes", "finished 10 videos"), not a label of
    it. Not -ss, -us, -is, -os (class, bus, redis, macos), nor a name, nor -s opening a sentence:
    a note has no verb in -s without a subject before it, but often a name there (Postgres 16,
    Windows 11). (-ing is left out: staging, billing, meeting name things as often.)"""
    w = _word(t)
    if len(w) < 4 or not w.isalpha() or _is_name(t):
        return False
    return (w.endswith("s") and not w.endswith(("ss", "us", "is", "os")) and not t.opens) or (
        past and w.endswith("ed") and not w.endswith("eed")
    )


def _names_before(t: _Token) -> bool:
    """Whether a token is a noun a label after it can name: a content word (no function word, no
    verb form, no noun of an amount, no number) or a Chinese character that is none of the
    predicate ones or a numeral."""
    if _is_cjk(t):
        return t.raw not in _CJK_PREDICATE and t.raw not in NUMERAL_CHARS
    w = _word(t)
    return w.isalpha() and w not in STOPWORDS and w not in _AMOUNT_NOUNS and not _is_verb_form(t)


def _is_measure_unit(tokens: list[_Token], j: int) -> bool:
    """Whether the tokens from j on begin with a unit or a measure word, making the number before
    them a measure or a count (12 minutes, 64 GB, 3盆, 5公里)."""
    if j >= len(tokens):
        return False
    if _is_cjk(tokens[j]):
        return bool(textmod.cjk_compiled(CJK_UNITS).match("".join(t.raw for t in tokens[j : j + 2])))
    return _word(tokens[j]) in _UNITS


def _is_label(tokens: list[_Token], i: int, j: int) -> bool:
    """Whether tokens[i:j] (up to three) is a label: numbers or names that name a thing, glued to
    the noun they name or marked as labels, and no count or measure."""
    span = tokens[i:j]
    if not 1 <= len(span) <= 3:
        return False
    prev = tokens[i - 1] if i else None
    nxt = tokens[j] if j < len(tokens) else None
    ordinal = prev is not None and prev.raw == _CJK_ORDINAL  # 第3期, 第三阶段
    numbered = nxt is not None and nxt.raw in _CJK_LABEL_AFTER  # 3号会议室
    # glued: nothing but a space (or a "#") between the noun and its label ("Retries: 3" is a key
    # and its value)
    glued = prev is not None and _names_before(prev) and span[0].gap.strip() in ("", "#")
    if all(_is_cjk(t) and t.raw in NUMERAL_CHARS for t in span):
        return ordinal or numbered  # 三只猫, 五公里 are counts; 第三期, 三号 labels
    marked = False
    for t in span:
        w = _word(t)
        if any(map(str.isdigit, w)):
            if w[0].isdigit() and any(map(str.isalpha, w)):
                return False  # 50gb, 12ms, 3-year: a number with its unit
            if any(map(CURRENCY.__contains__, t.gap)) or t.after == "%":
                return False  # $20, 10%: an amount
            # python3, v2.1, #42, /srv/app2, 1.2.3, 2024-03-01, 14:30, a year (the 2024 roadmap)
            marked = marked or (
                w[0].isalpha()
                or "#" in t.gap
                or t.gap.endswith("/")
                or w.count(".") > 1
                or any(map(w.__contains__, "-/:"))
                or bool(textmod.compiled(YEAR).fullmatch(w))
            )
        elif _has_identifier_form(t):
            marked = True  # feature/login, api.example.com, user_id, feature-login
        elif _is_cjk(t) and t.raw in _CJK_LABELS:
            if not glued:  # 项目甲 is one; 甲方 opening a statement has no noun before it
                return False
        elif not (_is_name(t) or (len(span) == 1 and _is_letter(t) and _before_cjk_noun(nxt))):
            return False  # (A组 names a group even opening the statement, as 8080端口 names a port)
    if not (ordinal or numbered) and _is_measure_unit(tokens, j):
        return False
    if ordinal or numbered or marked or glued:
        return True
    # digits or a capital letter right before a Chinese noun with no measure word between name it
    # (8080端口, A组)
    return _before_cjk_noun(nxt) and (span[-1].raw.isdigit() or _is_letter(span[-1]))


def _is_letter(t: _Token) -> bool:
    """A lone capital letter (A, B; not I)."""
    return len(t.raw) == 1 and t.raw.isascii() and t.raw.isupper() and t.raw != "I"


def _before_cjk_noun(nxt: _Token | None) -> bool:
    """Whether the token after a span is a Chinese character that may begin a noun (none of the
    predicate ones): the span is then written before a noun, as a label of it (8080端口)."""
    return nxt is not None and _is_cjk(nxt) and nxt.raw not in _CJK_PREDICATE
