"""The bench's query set: what users ask a memory store, in classes (bench/run.py --only search).

    python bench/queries.py            # prints the set, one `class<TAB>query` a line

Classes (each at least PER_CLASS queries, deterministic for a seed):
* `question` — natural-language questions of 6–15 words, like LoCoMo's or LongMemEval's;
* `chinese` — Chinese questions and Chinese keyword pairs;
* `keywords` — 2–3 English keywords;
* `common` — common words that match a large share of the records;
* `names` — names and identifiers (tickets, hosts, versions, functions, files);
* `nomatch` — words the corpus does not hold.
The words come from the corpus's own lists (bench/vocab.py), drawn with the same Zipf weights
the corpus uses, so a query's words are as common as a user's would be. `OLD` is the search
row's earlier set of seven queries, kept to compare with.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vocab  # noqa: E402
from gen import IDENTIFIERS, _zipf, identifier  # noqa: E402

PER_CLASS = 40
CLASSES = ("question", "chinese", "keywords", "common", "names", "nomatch")
OLD = [
    "后端 端口 部署",
    "docker deploy rollback",
    "小明喜欢拿铁",
    "数据库缓存性能",
    "kubernetes alert",
    "what is the current redis latency",
    "2023-11-20 发布 回滚",
]

_QUESTIONS = [
    "what did {name} say about the {c} {c2}",
    "why did the {c} fail {when}",
    "when are we going to {c} the {c2} for {name}",
    "how many {c} did we have {when}",
    "where did i put the {c} for the {c2} {c3}",
    "did {name} ever fix the {c} {c2} or not",
    "what was the {c} we talked about before the {c2}",
    "who is working on the {c} {c2} this week",
    "what is the current {c} of the {c2}",
    "do you remember what i said about my {c} {when}",
    "which {c} did {name} recommend for the {c2}",
    "can you remind me what we decided about the {c} and the {c2}",
]
_ZH_QUESTIONS = [
    "{n}上周说的{c}{c2}是什么",
    "{c}为什么{w}失败了",
    "我们什么时候{c}{c2}",
    "{n}负责的{c}怎么样了",
    "我之前说过的{c}在哪里",
    "{w}的{c}{c2}有多少",
    "{c}和{c2}的问题解决了吗",
]


def _pick(rng: random.Random, words: list[str], skip: int = 0) -> str:
    """One word drawn with the corpus's Zipf weights (past the `skip` most common)."""
    pool, cum = _zipf(words[skip:])
    return rng.choices(pool, cum_weights=cum)[0]


def _question(rng: random.Random) -> str:
    while True:
        q = rng.choice(_QUESTIONS).format(
            name=_pick(rng, vocab.NAMES),
            c=_pick(rng, vocab.EN_CONTENT, 5),
            c2=_pick(rng, vocab.EN_CONTENT, 5),
            c3=_pick(rng, vocab.EN_CONTENT, 5),
            when=rng.choice(vocab.EN_WHEN),
        )
        if 6 <= len(q.split()) <= 15:
            return q


def _chinese(rng: random.Random, i: int) -> str:
    c, c2 = _pick(rng, vocab.ZH_CONTENT), _pick(rng, vocab.ZH_CONTENT)
    while c2 == c:
        c2 = _pick(rng, vocab.ZH_CONTENT)
    if i % 2:
        return f"{c} {c2}"  # a keyword pair
    return rng.choice(_ZH_QUESTIONS).format(n=_pick(rng, vocab.ZH_NAMES), c=c, c2=c2, w=rng.choice(vocab.ZH_WHEN))


def _keywords(rng: random.Random) -> str:
    words: list[str] = []
    for _ in range(rng.choice((2, 2, 3))):
        w = _pick(rng, vocab.EN_CONTENT, 3)
        if w not in words:
            words.append(w)
    return " ".join(words)


def _common(rng: random.Random, i: int) -> str:
    if i % 4 == 3:
        return "".join(_pick(rng, vocab.ZH_FUNCTION[:12]) for _ in range(rng.randint(2, 3)))
    words = [_pick(rng, vocab.EN_FUNCTION[:40]) for _ in range(rng.randint(2, 5))]
    return " ".join([*words[:-1], vocab.EN_CONTENT[rng.randrange(8)]] if i % 2 else words)


def _names(rng: random.Random, i: int) -> str:
    if i % 4 == 0:
        return _pick(rng, vocab.NAMES)
    if i % 4 == 1:
        return _pick(rng, vocab.ZH_NAMES)
    if i % 4 == 2:
        return identifier(rng.randrange(IDENTIFIERS // 10))  # the more used identifiers
    return f"{_pick(rng, vocab.NAMES)} {identifier(rng.randrange(IDENTIFIERS))}"


def _nomatch(rng: random.Random, i: int) -> str:
    if i % 3 == 2:
        return " ".join(rng.sample(vocab.ABSENT_ZH, 2))
    return " ".join(rng.sample(vocab.ABSENT_EN, rng.randint(1, 3)))


def query_set(seed: int = 43, per_class: int = PER_CLASS) -> list[tuple[str, str]]:
    """(class, query) pairs: `per_class` distinct queries of each class, in class order."""
    rng = random.Random(seed)
    makers = {
        "question": lambda i: _question(rng),
        "chinese": lambda i: _chinese(rng, i),
        "keywords": lambda i: _keywords(rng),
        "common": lambda i: _common(rng, i),
        "names": lambda i: _names(rng, i),
        "nomatch": lambda i: _nomatch(rng, i),
    }
    out: list[tuple[str, str]] = []
    for cls in CLASSES:
        seen: set[str] = set()
        i = 0
        while len(seen) < per_class:
            q = makers[cls](i)
            i += 1
            if q not in seen:
                seen.add(q)
                out.append((cls, q))
    return out


if __name__ == "__main__":
    for cls, q in query_set():
        print(f"{cls}\t{q}")
