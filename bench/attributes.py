"""Build optmem's lexicon of attributes (`optmem/reading/attributes.jsonl`) from a lexicon written blind.

    python bench/attributes.py SOURCE/groups.jsonl [--corpus ../shared/retrieval/data/lme-dev/LOG.jsonl.gz]

The source is a file of attribute groups, one a line — `{"id", "domain", "en", "en_values", "zh",
"zh_values"}`: the English and Chinese words that name one attribute (dentist, dental, teeth, 牙医)
and typical values of it (T-Mobile, Verizon, 中国移动) — written by someone who saw no data set,
no code and no question of this project. This script changes no group and adds no word: it reads
every term as the index does (`optmem.text.query_terms`: stemmed words, Chinese pairs) and removes
the terms that name nothing a search can tell apart, by two rules:

* **no word of its own**: every token of the term is an English function word, a single letter or
  a bare number (`A+` → a; `1:1` → 1; `they/them`; `AT&T` → at, t);
* **too common**: more than `--most` (10 %) of the records of a general corpus hold all of its
  tokens — by default LongMemEval's development store, 10,866 turns of chat (`UPS` reads as "up",
  `offer`, `follow-up`, `friend`).

A Chinese term of one character (车, 书, 猫) is kept, but only to name a group in a question: as a
term to look for it would match every word written with it (火车, 车位).

The output's first line says where the lexicon came from, what was removed and why, and lists the
tokens that can name a group (a search reads that line alone unless a query holds one of them);
then one group a line, each term as written with its tokens (the rarest in the corpus first).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optmem import text  # noqa: E402
from optmem.reading.attributes import PATH, SEP, content_tokens  # noqa: E402

CORPUS = Path(
    "../shared/retrieval/data/lme-dev/LOG.jsonl.gz"
)  # (from the repository's root, as ../shared/retrieval/run)
MOST = 0.10


def held_by(corpus: list[frozenset[str]], tokens: list[str], index: dict[str, set[int]]) -> float:
    """The share of the corpus's records that hold every one of `tokens`."""
    if not corpus or not tokens:
        return 0.0
    docs = set.intersection(*(index.get(t, set()) for t in tokens))
    return len(docs) / len(corpus)


def build(source: Path, corpus_path: Path, most: float) -> tuple[dict[str, object], list[dict[str, object]]]:
    groups = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    opener = gzip.open if corpus_path.suffix == ".gz" else open
    with opener(corpus_path, "rt", encoding="utf-8") as f:
        corpus = [frozenset(text.tokens(json.loads(line)["text"])) for line in f if line.strip()]
    index: dict[str, set[int]] = {}
    for n, toks in enumerate(corpus):
        for t in toks:
            index.setdefault(t, set()).add(n)
    removed: dict[str, list[str]] = {"no word of its own": [], "too common": []}
    out = []
    counts: Counter[str] = Counter()
    for g in groups:
        kept: dict[str, list[tuple[str, list[str]]]] = {"names": [], "values": []}
        for field, part in (("en", "names"), ("zh", "names"), ("en_values", "values"), ("zh_values", "values")):
            for term in g[field]:
                tokens = content_tokens(term)
                if not tokens:
                    removed["no word of its own"].append(f"{g['id']}: {term}")
                    continue
                share = held_by(corpus, tokens, index)
                if share > most:
                    removed["too common"].append(f"{g['id']}: {term} ({100 * share:.1f} %)")
                    continue
                # its rarest token first: a query must hold it to name the group (the tokens a search
                # looks for before reading the groups, `triggers`, are these alone)
                tokens.sort(key=lambda t: (len(index.get(t, ())), -len(t), t))
                kept[part].append((term, tokens))
                counts[part] += 1
        out.append(
            {
                "id": g["id"],
                "domain": g["domain"],
                # the terms as written, then as index tokens (a term's tokens space-separated): strings
                # a search splits, read faster than lists of lists
                **{part: SEP.join(term for term, _ in terms) for part, terms in kept.items()},
                **{f"{part}_tokens": SEP.join(" ".join(t) for _, t in terms) for part, terms in kept.items()},
            }
        )
    triggers = sorted({phrase.split(" ")[0] for g in out for phrase in str(g["names_tokens"]).split(SEP) if phrase})
    header = {
        "about": (
            "Attribute groups written blind (from general knowledge, without sight of any data set, code "
            "or question of optmem), read as the index reads text; built by bench/attributes.py"
        ),
        "source_groups": len(groups),
        "corpus": f"{corpus_path.name} ({len(corpus)} records)",
        "most": most,
        "terms": dict(counts),
        "removed": removed,
        "triggers": triggers,
    }
    return header, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", type=Path, help="the blind lexicon's groups.jsonl")
    ap.add_argument(
        "--corpus", type=Path, default=CORPUS, help="a general corpus (LOG.jsonl[.gz]) for the 'too common' rule"
    )
    ap.add_argument(
        "--most", type=float, default=MOST, help="the largest share of its records a kept term may be held by"
    )
    ap.add_argument("--out", type=Path, default=PATH)
    a = ap.parse_args(argv)
    header, groups = build(a.source, a.corpus, a.most)
    lines = [json.dumps(header, ensure_ascii=False)] + [json.dumps(g, ensure_ascii=False) for g in groups]
    a.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    removed = header["removed"]
    assert isinstance(removed, dict)
    print(
        f"{len(groups)} groups, terms {header['terms']}, {len(header['triggers'])} tokens name a group "  # type: ignore[arg-type]
        f"({a.out.stat().st_size // 1024} KB); removed: "
        + "; ".join(f"{rule}: {len(terms)} ({', '.join(terms)})" for rule, terms in removed.items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
