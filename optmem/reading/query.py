"""A query, read once: its terms and what it asks, in one value (`Intent`) that every stage of
search reads instead of the raw text.

* its **terms**: words (stemmed) and Chinese bigrams, without function words, the question's own
  form ("how many", 多少, 吗) or a lone pronoun, and the dates it names as date terms;
* what it **asks**: the present ("where do I live now"), the past ("my previous address"), or
  nothing in particular;
* the **names** it writes ("Alice's phone number"), which a newer record must hold to go above an
  older one;
* its **present-asking words** ("now", 现在), which choose no record on their own;
* asking for the past, the words that name **what came after** ("before Fastmail", 换 Loki
  之前): a landmark in time, not the subject, they weigh nothing;
* its Chinese **characters** (its topic, without its dates), which count a little beside bigrams;
* the **attributes** its words name ("teeth": the dentist's), with their other words (dentist,
  牙医) and typical values (MacBook for "laptop"), from a lexicon written blind
  (`reading.attributes`): weaker terms of their own.

Every reading that changes an order has its switch in `[ranking]` (`optmem.settings.Ranking`),
applied here: a reading switched off reads nothing.
"""

from optmem import dates
from optmem.patterns import lazy
from optmem.reading import cues
from optmem.reading.attributes import Kin, named
from optmem.reading.lexicon import STOPWORDS
from optmem.reading.questions import asks_how, topic_runs
from optmem.settings import Ranking
from optmem.text import fold, query_terms, query_terms_of, words_and_runs
from optmem.value import Value

__all__ = ["Intent", "asks_something", "names_in", "read", "search_terms", "terms_of", "with_terms"]

# A Chinese pronoun left alone by a split (我昨天买了 → 我 | 买了) chooses no records while other
# terms remain: it would match every record with 我 — nor does an English one ("what did she say
# about his dog": say, dog), which matches every turn about anyone (the function words that
# are pronouns too — i, me, my, we, you, they, it … — are dropped with them already; "us" is left,
# it may be the US)
_PRONOUNS = frozenset("我你您他她它咱")
_EN_PRONOUNS = frozenset(
    "he him his himself she her hers herself theirs themselves ours ourselves yours "
    "yourself yourselves mine myself itself".split()
)
_DEFAULT = Ranking()


class Intent(Value):
    """What a query asks, read once (`read`)."""

    text: str  # the query as given
    terms: list[str]  # its search terms: words, CJK bigrams, date terms
    asks: str | None = None  # "present", "past", or None
    names: frozenset[str] = frozenset()  # the terms of the names it writes (none when `asks` is past or a day)
    when: frozenset[str] = frozenset()  # its present-asking terms ("now", 现在), when it has others too
    characters: list[str] = []  # the Chinese characters of its terms, not of its dates
    question: bool = True  # it asks (`asks_something`), rather than says (a chat turn as a query)
    after: frozenset[str] = frozenset()  # asking for the past, its terms naming what came after ("before X")
    lone: frozenset[str] = frozenset()  # the characters of its Chinese pairs no record holds (`with_lone`)
    kin: tuple[Kin, ...] = ()  # the attributes its words name, with their other words (`attributes.named`)


def read(
    query: str, now: float | None = None, settings: Ranking = _DEFAULT, *, terms: list[str] | None = None
) -> Intent:
    """A query read once: its terms (`terms_of`, relative dates resolved from `now`; or the
    `terms` given) and what it asks (see the module docstring), with the switches of `settings`."""
    if terms is None:
        terms = terms_of(query, now, settings)
    asks = cues.asks_for(query, settings)
    # (the names hold back the newer-first rule, which a query for the past skips)
    names = names_in(query) if settings.names and asks != "past" else frozenset()
    question = asks_something(query)
    after = landmarks(query, terms, now, settings) if asks == "past" and question else frozenset()
    kin = named([t for t in terms if not t.startswith(dates.PREFIX)]) if settings.attribute_share else ()
    return with_terms(Intent(query, terms, asks, names, question=question, after=after, kin=kin), terms)


def landmarks(query: str, terms: list[str], now: float | None, settings: Ranking) -> frozenset[str]:
    """The terms of a question about the past that name only what came after the value asked for
    ("what email service did I use before Fastmail": fastmail; "换 Loki 之前用的什么日志系统": loki,
    换) — not one the rest of the question names too ("how long did John practice chess before
    winning the chess tournament": chess is its subject), and none when nothing else would be
    left (`ranking.landmarks`)."""
    if not settings.landmarks:
        return frozenset()
    after, rest = cues.came_after(query)
    found = frozenset(terms_of(after, now, settings)) & frozenset(terms)
    subject = frozenset(terms_of(rest, now, settings)) - frozenset(terms_of("before", now, settings))
    found -= subject
    if not any(t in subject and not t.startswith(dates.PREFIX) for t in terms):
        return frozenset()  # nothing but the landmark ("before Fastmail?"): it is all there is to find
    return found


def asks_something(query: str) -> bool:
    """Whether a query asks one thing — a single sentence ending in a question mark (？, 吗, 呢
    too) — or is a search of a few words with no sentence's end ("orders backend port", "小明
    住址"), rather than what someone said: a chat turn used as a query, of statements or of
    several sentences ("我特别期待那天晚上！", "我好难过。我应该怎么办？"), asks for no value, so no
    newer value answers it better."""
    s = fold(query).strip().rstrip("\"'”’)）」 ")
    body = s.rstrip("?？!！.。")
    if any(c in body for c in ".!?。！？;；\n") or s.endswith(("!", "！")):
        return False  # several sentences, or an exclamation ("他还教过我呢！")
    return s == body or s.endswith(("?", "？")) or body.endswith(("吗", "呢", "嗎"))


def with_terms(intent: Intent, terms: list[str]) -> Intent:
    """The same question asked with these terms (a Chinese query whose pairs occur nowhere: its
    characters): what is read from the terms is read again."""
    when = frozenset(terms) & cues.cue_words() if intent.asks == "present" else frozenset()
    characters = list(dict.fromkeys(c for t in terms if not t.isascii() and not t.startswith(dates.PREFIX) for c in t))
    return intent._replace(terms=terms, when=when if when != frozenset(terms) else frozenset(), characters=characters)


def lone_characters(terms: list[str], held: dict[str, int]) -> list[str]:
    """The characters a Chinese query's pairs that no record holds (`held`: records per term) leave
    to search by: 我现在多重 pairs 多重, which no note says — 体重 does, and holds 重; 数据仓库 pairs
    仓库, where the notes say 数仓. A character of no content (多, 的, 在: `identifiers`' function
    characters) is left out, and so is one the query holds as a term already."""
    from optmem.identifiers import function_character

    have = set(terms)  # (a long query holds thousands of pairs: asked of a list, each character costs them all)
    return list(
        dict.fromkeys(
            c
            for t in terms
            if len(t) == 2 and not held.get(t) and not t.isascii() and not t.startswith(dates.PREFIX)
            for c in t
            if c not in have and not function_character(c)
        )
    )


def with_lone(intent: Intent, lone: list[str]) -> Intent:
    """The query searched by these characters too (`lone_characters`): they choose records, and
    weigh as a Chinese query's characters do (`ranking.cjk_unigram`)."""
    return intent._replace(terms=[*intent.terms, *lone], lone=frozenset(lone))


def terms_of(query: str, now: float | None = None, settings: Ranking = _DEFAULT) -> list[str]:
    """A query's search terms: its words and CJK bigrams, and the dates it names (relative ones
    resolved from `now`). The words of a date written out are that date's terms only — "may" in
    "May 2025" is the month, not the verb, "last Saturday" no match for "every Saturday". A
    Chinese date or time word splits the words around it, which pair on their own sides only
    (小明现在住在 → 小明 | 住在: joined, 明住 would straddle two words)."""
    folded = fold(query)
    spans: list[tuple[int, int]] = []
    found = dates.query_terms(folded, now, spans) if settings.query_dates else []
    when = cues.time_word_spans(folded) if settings.time_words else []  # 现在, 以前 … say when
    words, topical = _words_of(folded, spans + when, bool(found), settings)
    if when and not topical:  # nothing but the time word ("现在怎么样"): it is what is asked about
        words, _ = _words_of(folded, spans, bool(found), settings)
    return words + found


def _words_of(folded: str, spans: list[tuple[int, int]], dated: bool, settings: Ranking) -> tuple[list[str], bool]:
    """The word terms of a folded query with these spans (its dates and time words) blanked out,
    and whether any of them is a topic (not only question or function words). A pronoun left
    alone by a split chooses no records when other terms remain (我昨天买了 → 买了, not every
    record with 我); any other character stays (最近在读什么书 → 在读, 书)."""
    end_of = len(folded) + 1
    for start, end in sorted(spans, reverse=True):
        end = min(end, end_of)  # spans of two patterns may overlap
        if start < end:
            folded = folded[:start] + " " + folded[end:]
            end_of = start
    terms = search_terms(folded, more=dated, settings=settings)
    kept = [t for t in terms if t not in _PRONOUNS and t not in _EN_PRONOUNS] if settings.pronouns else terms
    return (kept if kept or dated else terms), bool(search_terms(folded, more=True, settings=settings))


def search_terms(text: str, *, more: bool = False, settings: Ranking = _DEFAULT) -> list[str]:
    """`text.query_terms` without English function words (`stopwords`) and the question's own
    form (`question_words`: "how many", 多少, 吗, 的 …), unless nothing else is left (`more`:
    the query has other terms still, its dates — "what did I do in May 2023")."""
    words, runs = words_and_runs(text)
    content = words
    if settings.stopwords or settings.question_words:
        how = asks_how(words) if settings.question_words else [False] * len(words)
        content = [w for w, h in zip(words, how) if not h and not (settings.stopwords and w in STOPWORDS)]
    topical = [piece for cjk in runs for piece in topic_runs(cjk)] if settings.question_words else runs
    if content or topical or more:  # the stop lists apply while something else is left
        words, runs = content, topical
    return query_terms_of(words, runs)


_ASCII_STOPS = str.maketrans("。？！；：", ".?!;:")
_SENTENCE_END = lazy(r"[.?!;:]+(?:\s+|$)")
_WORD = lazy(r"[^\W\d_]\w*")
_POSSESSIVE = lazy(r"\b([A-Z][A-Za-z0-9]*)['’]s\b")


def _sentences(query: str) -> list[str]:
    """A query's sentences, its stops taken off. The Chinese stops are read as ASCII ones (a class
    holding them compiles to a big character set, ~0.2 ms; they are split off, so the pieces are
    the query's), and a query without a stop is one sentence (no pattern to compile)."""
    asked = query.translate(_ASCII_STOPS)
    return _SENTENCE_END.split(asked) if any(map(asked.__contains__, ".?!;:")) else [asked]


def names_in(query: str) -> frozenset[str]:
    """The search terms of the names a query writes: words with a capital letter that do not begin
    a sentence ("what is Alice's phone number now" → alic), "I" and the months and days of the
    week aside ("what did I change in May" asks about a time), and a capitalised
    possessive wherever it stands ("Alice's phone number?"). Two statements that differ in such a
    name are about different things however much else they share — IDF cannot tell, when the
    name is common in the store. Otherwise a query in title case or capitals names nothing (its
    capitals say nothing); Chinese has no capitals, so it names nothing either."""
    if query.islower() or not any("A" <= c <= "Z" for c in query):
        return frozenset()  # no capital letter, no name (and no pattern to compile)
    later = [w for sentence in _sentences(query) for w in _WORD.findall(sentence)[1:]]
    capitals = [w for w in later if w.isascii() and w[0].isupper() and w != "I"]
    if 2 * len(capitals) > len(later):
        capitals = []  # title case or capitals
    names = [w for w in capitals if w.lower() not in dates.CALENDAR_WORDS]  # "in May", "on Monday": when
    if "'" in query or "’" in query:  # (a possessive's pattern compiles for a text that can hold one)
        names += _POSSESSIVE.findall(query)
    return frozenset(t for t in query_terms(" ".join(names)) if len(t) > 1) if names else frozenset()
