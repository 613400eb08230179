"""Build optmem's lexicon of attributes (`optmem/reading/attributes.jsonl`) from a lexicon written blind.

    python bench/attributes.py bench/lexicon/groups_*.jsonl [--corpus ../shared/retrieval/data/lme-dev/LOG.jsonl.gz]

A source is a file of attribute groups, one a line — `{"id", "domain", "en", "en_values", "zh",
"zh_values"}`: the English and Chinese words that name one attribute (dentist, dental, teeth, 牙医)
and typical values of it (T-Mobile, Verizon, 中国移动) — written by someone who saw no data set,
no code and no question of this project (`bench/lexicon/README.md` says who wrote each file, and
how). Sources are read in the order given: a line whose `id` an earlier file holds adds its terms
to that group (a term the group holds already is skipped), any other line is a new group. This
script changes no group and adds no word of its own: it reads
every term as the index does (`optmem.text.query_terms`: stemmed words, Chinese pairs) and removes
the terms that name nothing a search can tell apart, by two rules:

* **no word of its own**: every token of the term is an English function word, a single letter or
  a bare number (`A+` → a; `1:1` → 1; `they/them`; `AT&T` → at, t);
* **too common**: more than `--most` (10 %) of the records of a general corpus hold all of its
  tokens — by default LongMemEval's development store, 10,866 turns of chat (`UPS` reads as "up",
  `offer`, `follow-up`, `friend`).

A Chinese term of one character (车, 书, 猫) is kept, but only to name a group in a question: as a
term to look for it would match every word written with it (火车, 车位).

The output's first line says where the lexicon came from and what was removed, and why; its second
line is an index — each token that can begin a name (its rarest) with where its groups are in the
file (a search reads that line alone unless a query holds one of them, then those groups alone);
then one group a line, each term as written with its tokens (the rarest in the corpus first).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

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


FIELDS = ("en", "zh", "en_values", "zh_values")


def merged(sources: list[Path]) -> list[dict[str, Any]]:
    """The groups of every source, in order: a later line of a known `id` adds its new terms."""
    groups: dict[str, dict[str, Any]] = {}
    for source in sources:
        for line in source.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            g = json.loads(line)
            if g["id"] not in groups:
                groups[g["id"]] = {"id": g["id"], "domain": g["domain"], **{f: [] for f in FIELDS}}
            known = groups[g["id"]]
            for field in FIELDS:
                held = {t.casefold() for t in known[field]}
                for term in g.get(field, []):
                    if term.casefold() not in held:
                        known[field].append(term)
                        held.add(term.casefold())
    return list(groups.values())


def build(sources: list[Path], corpus_path: Path, most: float) -> tuple[dict[str, object], list[dict[str, object]]]:
    groups = merged(sources)
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
                # looks for before reading the groups, the second line's index, are these alone)
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
    firsts = {phrase.split(" ")[0] for g in out for phrase in str(g["names_tokens"]).split(SEP) if phrase}
    header = {
        "about": (
            "Attribute groups written blind (from general knowledge, without sight of any data set, code "
            "or question of optmem), read as the index reads text; built by bench/attributes.py"
        ),
        "sources": [source.name for source in sources],
        "source_groups": len(groups),
        "corpus": f"{corpus_path.name} ({len(corpus)} records)",
        "most": most,
        "terms": dict(counts),
        "removed": removed,
        "naming_tokens": len(firsts),
    }
    return header, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sources", type=Path, nargs="+", help="the blind lexicon's group files, in order")
    ap.add_argument(
        "--corpus", type=Path, default=CORPUS, help="a general corpus (LOG.jsonl[.gz]) for the 'too common' rule"
    )
    ap.add_argument(
        "--most", type=float, default=MOST, help="the largest share of its records a kept term may be held by"
    )
    ap.add_argument("--out", type=Path, default=PATH)
    a = ap.parse_args(argv)
    header, groups = build(a.sources, a.corpus, a.most)
    rows = [(json.dumps(g, ensure_ascii=False) + "\n").encode("utf-8") for g in groups]
    # the second line: each token that can begin a name, with where its groups are (byte offsets
    # from the first group): a search seeks to the groups its query names and parses those alone
    starts: dict[str, list[int]] = {}
    place = 0
    for g, row in zip(groups, rows):
        for first in dict.fromkeys(p.split(" ")[0] for p in str(g["names_tokens"]).split(SEP) if p):
            starts.setdefault(first, []).append(place)
        place += len(row)
    index = "\t" + "".join(f"{t} {' '.join(map(str, at))}\t" for t, at in sorted(starts.items()))
    written = json.dumps(index, ensure_ascii=False)
    if "\\" in written.replace("\\t", ""):  # (a search looks through the line as written: `attributes._find`)
        raise SystemExit("bench/attributes.py: a naming token holds a character JSON escapes besides the tabs")
    head = json.dumps(header, ensure_ascii=False) + "\n" + written + "\n"
    a.out.write_bytes(head.encode("utf-8") + b"".join(rows))
    removed = header["removed"]
    assert isinstance(removed, dict)
    print(
        f"{len(groups)} groups, terms {header['terms']}, {header['naming_tokens']} tokens name a group "  # type: ignore[arg-type]
        f"({a.out.stat().st_size // 1024} KB); removed: "
        + "; ".join(f"{rule}: {len(terms)} ({', '.join(terms)})" for rule, terms in removed.items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
