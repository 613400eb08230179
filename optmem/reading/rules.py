"""The rules that change the order of search hits, one row each: the switch that turns it off,
what it is for, and what it was measured to add on each development set.

A rule earns its place on more than the questions it was made for: switched off (`off`, through
`optmem --set ranking.NAME=VALUE search …`), it must move some set by more than one question. The
sets: LoCoMo (the 8 development conversations, 1,680 questions), LongMemEval pooled (its
development half, 223 questions scored; `KU` is its 31 knowledge-update questions, the newer
value ranked first), MADial (Chinese associative recall, 168 queries) — all three through
`../shared/retrieval/run` — and the update set of `bench/updates.py` (188 update cases in English
and Chinese: newer value first on the tune / held-out half, or for "what was it before"
questions the older first), and the blind update pairs of `bench/updates_blind` (178 cases
written by someone who never saw the code: current value first, one store). Each figure is
what the rule adds: the set with the rule on minus
the set with it off, MRR@10 unless it says otherwise; "0" means no question moved.

`docs/search.md` prints this table (`markdown`); a test holds the two together, and every
switch of `[ranking]` has its row.
"""

from typing import NamedTuple

__all__ = ["RULES", "Rule", "markdown"]


class Rule(NamedTuple):
    name: str
    switch: str  # the `[ranking]` setting …
    off: str  # … and the value that turns the rule off
    does: str  # what it is for
    locomo: str  # what it adds on each set (see the module docstring)
    lme: str
    madial: str
    updates: str


RULES: tuple[Rule, ...] = (
    # how a query is read (optmem.reading)
    Rule(
        "function words",
        "stopwords",
        "false",
        "English function words (the, is, what …) are no terms while the query has others",
        "+0.031 (566 q)",
        "+0.020; KU +6.5 pts",
        "0 (English only)",
        "+2.4 / +3.9 pts",
    ),
    Rule(
        "question form",
        "question_words",
        "false",
        '"how many / much / long", 多少, 什么, 吗, 的 … are the question\'s form, not its topic',
        "0 (21 q, mixed)",
        "+0.014 (16 q)",
        "+0.005",
        "+1.2 / +3.9 pts",
    ),
    Rule(
        "pronouns",
        "pronouns",
        "false",
        "he, her, theirs …, and 我 left alone by a split, choose no records",
        "+0.010 (88 q)",
        "0",
        "0",
        "0; off against on, blind sets 1–16 (the 291 of 5,584 questions whose terms it changes: the others"
        " search alike): current first 8 questions better / 10 worse, old in the top ten 13 kept / 4 lost,"
        " past questions 0",
    ),
    Rule(
        "dates in a query",
        "query_dates",
        "false",
        'the dates a query names ("last Saturday", 2023-05-03, 昨天) are date terms, not words',
        "+0.017 (113 q)",
        "+0.013",
        "0",
        "0",
    ),
    Rule(
        "Chinese time words",
        "time_words",
        "false",
        "现在, 以前 … split a Chinese query's pairs (小明现在住在哪里 looks for 小明, 住在)",
        "0 (no Chinese)",
        "0 (no Chinese)",
        "+0.001 (R@5 +0.6, R@10 +0.6)",
        "off against on, blind sets 1–15 pooled: current first +0.4 pts (21 questions better / 8 worse), old "
        "first −0.1, old in the top ten +0.5, past questions old first +0.1 pts; the sets it was not "
        "developed on (2–15): current first +0.5 pts (21 / 8); update set current first 0, past 0 pts",
    ),
    Rule(
        "asks for now",
        "present_cues",
        "false",
        '"now", "currently", "still", 现在, 目前 … ask for the present value: the update rule reads'
        " newer records readily",
        "+0.001",
        "−0.002; KU +12.9 pts",
        "+0.007",
        "0 / +1.9 pts",
    ),
    Rule(
        "asks for the past",
        "past_cues",
        "false",
        '"previously", "used to", "before" a thing, 以前, 原来, 之前, 升级前 … ask what it used to be: no recency'
        " bonus, the older value above the newer note that updates it — when the older is about what the newer"
        ' or the question names (its subject, before its verb or colon: not "Database is Postgres 16 …'
        " backend/migrations\" for the backend's port)",
        "0",
        "0",
        "0",
        "old value first +57.9 / +31.8 pts; blind pairs' past questions +63.5 pts (20.2 → 83.7 %); more ways of"
        ' asking ("prior to", "in the beginning", "Marco\'s old …", a final "first", "before it was raised", 最早,'
        ' 一开始, 原计划 …; 还款 no "still"): past questions +1.1 / +7.8 / +1.2 pts on the first three sets, the'
        " held-out fourth 77.8 → 82.7 %; the older's subject named: past questions −0.5 / −0.8 / −0.6 / 0 / 0 pts"
        " (sets 1–5), the sample vault's past port question no longer answered by the database note",
    ),
    Rule(
        "what came after",
        "landmarks",
        "false",
        'asking for the past, the words naming what came after the value ("before Fastmail", "before the'
        ' upgrade", 换 Loki 之前) weigh nothing in a note that matches the subject (a tenth in one that holds'
        " only them: still found, below), unless the rest of the question names them too",
        "0 (turns keep their weight; weighing nothing in turns too: R@5 −0.1)",
        "0 (turns keep their weight; weighing nothing in turns too cost an answer: KU current-first −3.2 pts)",
        "0 (its 2 past readings are no questions)",
        "blind pairs' past questions, old value first: +6.2 / +0.8 / +1.2 pts (first three sets), the held-out"
        " fourth 82.7 → 86.4 %; current questions 0",
    ),
    Rule(
        "names",
        "names",
        "false",
        'a newer record that lacks a name the query writes ("Alice\'s phone"; a month or a weekday, "in May",'
        " is a time, no name) updates nothing",
        "+0.003 (59 q)",
        "−0.004 (1 q)",
        "0 (no capitals)",
        "0",
    ),
    Rule(
        "Chinese compared by characters",
        "cjk_characters",
        "false",
        "the update rule compares a Chinese query's hits by the characters they hold, not its bigrams",
        "0 (no Chinese)",
        "0 (no Chinese)",
        "+0.005 (R@1 +0.6)",
        "+6.0 / +1.9 pts; blind pairs +1.1 pts (Chinese +2.2)",
    ),
    Rule(
        "Chinese single characters",
        "cjk_unigram",
        "0",
        "a Chinese query's characters count at 0.3 beside its bigrams (前端端口: only the front end holds 前)",
        "0 (no Chinese)",
        "0 (no Chinese)",
        "+0.033 (R@1 +3.0)",
        "+8.3 / +4.8 pts (cjk_characters needs it); blind pairs +2.8 pts (Chinese +5.6)",
    ),
    Rule(
        "Chinese pairs no record holds",
        "cjk_lone",
        "false",
        "a Chinese query's pair that no record holds leaves its characters of content to choose records, at the"
        " weight of a query's characters (我现在多重: 重 of 体重; 养猫 against 养了一只猫)",
        "0 (no Chinese)",
        "0 (no Chinese)",
        "+0.005 (R@1 −0.6, R@5 +2.4, R@10 +4.8)",
        "0 / 0; blind pairs current first 0 / −0.8 / +4.2 / +1.2 / +2.4 / +1.3 pts, old in the top ten +0.5 / +0.8"
        " / +4.9 / +1.3 / +1.9 / 0 pts, past questions old first +1.2 / 0 / +2.5 / −0.7 / +1.2 / +0.7 pts (sets"
        " 1–6)",
    ),
    Rule(
        "Chinese fallback",
        "cjk_fallback",
        "false",
        "a Chinese query none of whose pairs occurs within its filters (养猫 only in another domain) finds the"
        " records there holding every one of its characters, instead of “no matches”",
        "0 (no Chinese)",
        "0 (no Chinese)",
        "0",
        "0 on all six blind sets since the pairs no record holds search by their characters (before: current"
        " first 0 / +0.8 / +0.6 / 0 pts, sets 1–4); it answers a filtered search",
    ),
    # how hits are scored and ordered (optmem.ranking, optmem.search)
    Rule(
        "length normalisation from the store",
        "b_min, b_max",
        "0.75, 0.75",
        "BM25's b follows the store and the query: short turns little, long answers and long queries much",
        "+0.026",
        "+0.076",
        "+0.010",
        "+3.6 / +1.9 pts",
    ),
    Rule(
        "recency",
        "recency_window",
        "0",
        "a bonus of at most 10 %, shrinking with days unused: it re-orders near-equals only",
        "0",
        "+0.010; KU +3.3 pts",
        "0",
        "+2.4 / +1.9 pts",
    ),
    Rule(
        "conversation context",
        "context_share",
        "0",
        "a turn gains 0.2 of its best session neighbour's relevance (0.35 fitted the development sets; on"
        " held-out and unseen questions 0.2 gives +0.007 MRR pooled over 1,913); a turn it alone brings"
        " (matching no word) stays below the turn it borrowed from and every hit matching the words"
        " (moves no question on either set)",
        "0 at 0.2 against 0.35",
        "−0.003 (R@10 +1.8) at 0.2 against 0.35",
        "0 (no sessions)",
        "0 (no sessions)",
    ),
    Rule(
        "answers through their question",
        "answer_share",
        "0",
        "the turn after a question gains what the question matched — not after a turn that states its"
        ' answer itself (Hermes\' "Asked: … ? — Answered: …"; LoCoMo −0.0005, 8 q up, 5 down; LongMemEval'
        " +0.005, 5 up, 1 down), and never above that question",
        "+0.027",
        "+0.005",
        "0 (no sessions)",
        "0 (no sessions)",
    ),
    Rule(
        "updates first",
        "update_overlap, update_overlap_plain, update_overlap_note",
        "2, 2, 2",
        "inside the top ten, a record a day newer (or newer at all, when the key or the write gate links them)"
        " goes above an older one of the same subject (the same key, the same subject words, or — two notes —"
        " a third of what the older matched) that states a value the older does not",
        "−0.003 (0.5676 on, 0.5704 off; R@1 −0.2, R@5 −0.7, R@10 0; 41 questions better with it, 102 worse;"
        " searched in process, 2026-12-08)",
        "+0.014 (0.593 on, 0.579 off; R@10 82.5 both); KU current-first 80.6 % on, 54.8 % off, stale-first"
        " 12.9 % / 38.7 % (in process, 2026-12-08)",
        "+0.005 off against on (2, 2, 2; R@1 47.0, R@5 75.6 → 76.2, R@10 82.7: 7 queries up, 7 down)",
        "+38.1 / +34.7 pts; blind pairs current first +43.8 pts (25.3 → 69.1 %), the note share +34.8;"
        " a note that says it changes something gives a new value: blind pairs +1.1 pts, second blind set"
        " +2.4 pts; a record that goes above an older one takes its own newer value along: current first 0 / 0 /"
        " +1.2 / 0 / +1.2 pts (sets 1–5)",
    ),
    Rule(
        "the same subject in the notes' own words",
        "update_overlap_text",
        "0",
        "between two notes, for a question: the newer holds a third of the older's own words (by rarity) and"
        " puts a number for its number or a word for its word (or says a change): it goes above it whatever"
        " the scores — the question's words split between them, or the older repeats them",
        "0 (turns)",
        "0 (turns)",
        "0 (its queries are chat turns)",
        "off against on, blind sets 7–15 (none developed on) pooled: current first +0.5 pts (10 questions "
        "better / 0 worse), old first −0.5, old in the top ten 0, past questions old first +0.1 pts; update "
        "set current first 0, past 0 pts",
    ),
    Rule(
        "a change said beside a value in its place",
        "update_said",
        "false",
        "between two notes a question found, the newer says it changes something (the older says none) and puts"
        " a value in place of one of the older's: it goes above it though they share no word of their own — the"
        " question's words split between them (“paycheck goes to Wells Fargo checking” — “direct deposit switched"
        " to the Schwab account”)",
        "0 (turns)",
        "0 (turns)",
        "0 (with the three rules of 2026-12-07 on: R@1 47.0, MRR 0.582, as without them)",
        "off against on, blind sets 2, 4, 6, 9–15 (none developed on) pooled: current first +0.6 pts (12 "
        "questions better / 0 worse), old first −0.6, old in the top ten 0, past questions old first +0.1 "
        "pts; update set current first 0, past 0 pts",
    ),
    Rule(
        "newer values found from the answer",
        "follow_share",
        "0",
        "a newer note that shares no word with the query, but holds a rare word of a matched note (at least"
        " 12 % of its words, by rarity) and says it changes something (replaced, now, 换了, 涨到 …), stands in"
        ' for that note and goes above it: the old value named, or the subject ("Sold the Corsa, …")',
        "0 (turns)",
        "0 (turns)",
        "−0.006 (2 q, R@1 −1.2: an event told with 换成 shares a rare word)",
        "blind pairs current first +8.5 pts (70.2 → 78.7 %), old first −8.5 pts; second blind set +8.6 pts"
        " (68.0 → 76.6 %), old first −9.4 pts; a rare word held by up to 6 records, not 3: current first +1.6 /"
        " +0.7 pts (first, second blind set), +3.6 pts on the third (53.7 → 57.3 %); 12 % of its words, not 15 %:"
        " current first 0 / +0.8 / +1.2 / +2.5 / +1.2 pts, old first 0 / −0.8 / −1.2 / −2.4 / −1.3 pts (sets 1–5;"
        " none asked: +1.6 pts more on 2, 3, 4, but the sample vault's eval MRR 0.933 → 0.825)",
    ),
    Rule(
        "a newer number found from the answer",
        "follow_values",
        "false",
        "a newer note found from the note that answers (its rare word, 12 % of its words) need not say it"
        " changes something when it holds two of its words and puts a number in place of one of the older's (“prod pg"
        " max_connections=500” after “… max_connections 是 200”); a note that says a change is chosen first",
        "0 (turns)",
        "0 (turns)",
        "+0.006 (R@1 +0.6, R@10 +0.5)",
        "off against on, blind sets 2, 4, 6, 8–15 (none developed on) pooled: current first +1.6 pts (40 "
        "questions better / 13 worse), old first −1.7, old in the top ten −0.3, past questions old first −0.2 "
        "pts; update set current first +0.5, past 0 pts",
    ),
    Rule(
        "an attribute in other words",
        "attribute_share",
        "0",
        "a question's word of an attribute (teeth, cell provider, laptop, 运营商) brings the attribute's other words"
        " and typical values from a lexicon written blind (dentist, 牙医; Mint Mobile; MacBook) as terms of half its"
        " weight, counted only in records holding none of its question words, with ten candidates of their own; the"
        " update rule reads them as the question's word",
        "+0.002 (R@1 45.2 → 45.3, R@5 72.0 → 72.2, R@10 80.4 → 80.6)",
        "−0.002 (R@10 82.1 → 81.6: one question); KU 80.6 / 12.9 % unchanged",
        "+0.006 (R@5 73.8 → 76.2, R@10 81.5 → 82.7)",
        "blind pairs current first +5.6 / +7.0 / +7.9 / +3.1 / +6.1 / +5.6 / +5.0 / +5.4 / +5.9 / +6.0 / +6.5 pts"
        " (sets 1–11, developed on: 120 questions better, 13 worse; English +2.5 to +12.9, Chinese −1.1 to +4.9),"
        " old first −1.7 / −3.9 / −1.2 / −1.9 / −3.7 / −1.9 / −1.7 / −1.6 / 0 / −1.6 / −2.2 pts, old in the top ten"
        " +1.9 to +7.3 pts, past questions old first 0 to +4.3 pts; set 12, held out: current first 57.1 → 64.7 %"
        " (English 45.7 → 55.4, Chinese 68.5 → 73.9), old first 19.6 → 20.7 % (an old note found where neither"
        " was), old in the top ten 68.5 → 78.8 %, past questions 83.2 → 84.2 %; update set tune −1.2 pts (one"
        " Chinese question) / held-out 0, its past questions +4.5 pts (direct load)",
    ),
    Rule(
        "a newer value said in another word of the attribute",
        "attribute_follow",
        "false",
        "a newer note that says a change in another word of an attribute the question names (“Switched dentists."
        " Now seeing Dr. Okafor” for “teeth”) and states a value the older lacks stands in for a matched note of"
        " that attribute and goes above it",
        "0 (turns)",
        "0 (turns)",
        "not measured off (0.588 with it)",
        "off against on, blind sets 12–15 (none developed on) pooled: current first +0.4 pts (4 questions "
        "better / 1 worse), old first −0.5, old in the top ten −0.3, past questions old first 0 pts; update "
        "set current first −0.5, past 0 pts",
    ),
    Rule(
        "a follower that names nobody else",
        "follow_unnamed",
        "false",
        "a newer note found from the answer that lacks a name the question writes and the older holds still"
        " follows it when it names nobody the older does not (“Vet visit: … we cut the dog down to 1.5 cups a day”"
        " for “how much should I be feeding Biscuit?”); “Bob's phone number is 555-0202” still does not follow"
        " Alice's",
        "0 (turns)",
        "0 (turns)",
        "0 (with the three rules of 2026-12-07 on: R@1 47.0, MRR 0.582, as without them)",
        "off against on, blind sets 2, 4, 6, 9–15 (none developed on) pooled: current first +0.3 pts (5 "
        "questions better / 0 worse), old first −0.3, old in the top ten 0, past questions old first 0 pts; "
        "update set current first 0, past 0 pts; blind sets 1, 3, 5, 7, 8, 16 (the 127 of 2,100 searches that"
        " read it: the others search alike): current first 2 questions better / 0 worse (set 8), old in the top"
        " ten 0, past questions 0; it is a condition of `follow_values` (read only in its branch: with that"
        " off, it reads nothing)",
    ),
)


def markdown() -> str:
    """The table as `docs/search.md` prints it."""
    rows = [
        "| rule | switch (off) | what it is for | LoCoMo | LongMemEval | MADial | update set |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in RULES:
        rows.append(
            f"| {r.name} | `{r.switch}` ({r.off}) | {r.does} | {r.locomo} | {r.lme} | {r.madial} | {r.updates} |"
        )
    return "\n".join(rows)
