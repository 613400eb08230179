"""The attributes a question names, and the other words of each: a lexicon written blind.

A question and the note that answers it often name one attribute in different words: "who do I
see for my teeth?" — "Dentist: Dr. Alvarez"; "what laptop do I use at work?" — "IT swapped me onto
a MacBook"; 我的手机套餐 — "换成联通了". The lexicon (`attributes.jsonl`, beside this module) holds
394 groups of English and Chinese words that name the same attribute (dentist, dental, teeth, 牙医,
看牙) and typical values of it (T-Mobile, Verizon, 中国移动; MacBook, ThinkPad). It was written by
someone who saw no data set, no code and no question of this project, from general knowledge;
`bench/attributes.py` reads it as the index reads text and removes the terms that name nothing a
search can tell apart (its first line says which, and why). Nobody fitted it to a question.

A query term that belongs to a group (`named`) brings the group's other terms — its names and its
values — as weaker terms of their own (`Kin`): `optmem.search` weighs them in records that hold
none of the question's words of that group, and the update rule reads two notes holding words of
one group as stating the same attribute. A value counts only through the group the question
names: "MacBook" answers "laptop", not every question.

The file is read only when a query holds a token that can name a group (its first line lists
them: the rarest token of each name), once a process.
"""

from __future__ import annotations

import json
from pathlib import Path

from optmem.reading.lexicon import STOPWORDS
from optmem.value import NamedTuple

__all__ = ["PATH", "Kin", "attribute_tokens", "content_tokens", "named"]

PATH = Path(__file__).with_name("attributes.jsonl")
SEP = "|"  # between the terms of a group in the file (a term's tokens: a space)

Phrase = tuple[str, ...]  # a term as index tokens: a record holds it when it holds all of them


class Kin(NamedTuple):
    """A group a query names: the query terms that name it, and the group's other terms."""

    group: str  # its id (`--explain` names it)
    asked: frozenset[str]  # the query's terms that belong to it
    names: tuple[Phrase, ...]  # its names the query holds (each as the index's tokens)
    phrases: tuple[Phrase, ...]  # its other names and values, each as the index's tokens


class _Lexicon(NamedTuple):
    # (strings, not tuples: a search process reads the file whole, and ~20,000 small containers
    # would wake the cycle collector, which has nothing to find in them)
    names: dict[str, str]  # a name's first token (its rarest) → its names: "group index\ttokens" a line
    groups: dict[
        int, tuple[str, str]
    ]  # line → (id, its names and values to look for: tokens space-separated, `SEP` between)


_triggers: frozenset[str] | None = None
_lexicon: _Lexicon | None = None
_partial = False  # a part of the lexicon was read in this process (`_read`)


def content_tokens(term: str) -> list[str]:
    """A term's tokens as a query reads them (`text.query_terms`), without function words — none
    when none of them is a word of its own (a letter of at least two, or a Chinese character):
    `A+`, `1:1`, `AT&T` (at, t) name nothing a search can tell apart."""
    from optmem.text import query_terms

    tokens = [t for t in query_terms(term) if t not in STOPWORDS]
    if not any(not t.isascii() or (len(t) > 1 and not t.isdigit()) for t in tokens):
        return []
    return tokens


def _read_triggers() -> frozenset[str]:
    global _triggers
    if _triggers is None:
        with PATH.open(encoding="utf-8") as f:
            _triggers = frozenset(json.loads(f.readline())["triggers"])
    return _triggers


def _read(among: frozenset[str] | None = None) -> _Lexicon:
    """The lexicon — or, read once in a process (`among`: the query's tokens that name some
    group), only the lines that hold one of them: a search run as its own process parses a few
    groups, not 394 (~10 ms); a second search in the same process reads the file whole, once."""
    global _lexicon, _partial
    if _lexicon is not None:
        return _lexicon
    if among is not None and _partial:
        among = None  # (a process that searches again: the whole file, kept)
    names: dict[str, list[str]] = {}
    groups: dict[int, tuple[str, str]] = {}
    with PATH.open(encoding="utf-8") as f:
        f.readline()
        for at, line in enumerate(f):
            if among is not None and not any(t in line for t in among):
                continue  # (a line naming a token holds it as written: no group of it is skipped)
            g = json.loads(line)
            own = [p for p in g["names_tokens"].split(SEP) if p]
            for phrase in own:
                names.setdefault(phrase.split(" ", 1)[0], []).append(f"{at}\t{phrase}")
            values = [p for p in g["values_tokens"].split(SEP) if p]
            # a Chinese character alone names a group in a question (我的车), but is no term to
            # look for: every word written with it holds it (火车, 车位)
            looked = SEP.join(p for p in own + values if not (len(p) == 1 and not p.isascii()))
            groups[at] = (g["id"], looked)
    lexicon = _Lexicon({t: "\n".join(entries) for t, entries in names.items()}, groups)
    if among is None:
        _lexicon = lexicon
    _partial = True
    return lexicon


def named(terms: list[str]) -> tuple[Kin, ...]:
    """The groups the query's terms name (a name of the group all of whose tokens are among them),
    each with the group's other terms: those the query does not hold already."""
    held = frozenset(terms)
    naming = held & _read_triggers()
    if not naming:
        return ()  # (most queries: the groups are not read)
    lex = _read(naming)
    asked: dict[int, list[Phrase]] = {}
    for t in held:
        for entry in lex.names[t].split("\n") if t in lex.names else ():
            index, tokens = entry.split("\t")
            phrase = tuple(tokens.split(" "))
            if held.issuperset(phrase):
                asked.setdefault(int(index), []).append(phrase)
    out = []
    for at in sorted(asked):
        group, looked = lex.groups[at]
        phrases = (tuple(p.split(" ")) for p in looked.split(SEP) if p)
        others = tuple(dict.fromkeys(p for p in phrases if not held.issuperset(p)))
        if others:
            names = tuple(sorted(set(asked[at])))
            out.append(Kin(group, frozenset(t for p in names for t in p), names, others))
    return tuple(out)


def attribute_tokens(kin: tuple[Kin, ...]) -> list[str]:
    """Every token of the other words of these groups, once."""
    return list(dict.fromkeys(t for k in kin for p in k.phrases for t in p))
