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

A search reads the file's second line, an index: each token that can begin a name (a name's
rarest token) with where its groups are. Only a query holding one of them reads groups — those
groups alone, in a process's first search; the whole file, once, in a process that searches again.
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


# the second line as written: a JSON string, "\t" + "token offset offset …" entries + "\t", whose only
# escapes are its tabs (`bench/attributes.py` writes no other) — looked through as its bytes are (`_find`)
_index: bytes | None = None
_base = 0  # where the groups begin in the file (an entry's offsets count from there)
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


def _read_index() -> bytes:
    global _index, _base
    if _index is None:
        with PATH.open("rb") as f:
            f.readline()  # (where the lexicon came from)
            _index = f.readline()
            _base = f.tell()
    return _index


def _find(index: bytes, token: str) -> list[int]:
    """Where the groups are one of whose names begins with `token`: its entry in the index line,
    found in the line's JSON text — each tab written `\\t` — not in the string JSON's scanner
    would read from it, character by character (~4M instructions for the 116 KB line, in every
    search). A token holding a character JSON escapes (a quote, a backslash, a control character)
    names no group: no entry holds one (the tokeniser splits at white space and punctuation)."""
    if '"' in token or "\\" in token or (token and min(token) < " "):
        return []
    entry = b"\\t" + token.encode("utf-8") + b" "
    i = index.find(entry)
    return [int(o) for o in index[i + len(entry) : index.index(b"\\t", i + 1)].split(b" ")] if i >= 0 else []


def _naming(held: frozenset[str]) -> list[int]:
    """Where the groups are (offsets from `_base`) one of whose names begins with a token of
    `held` — its rarest token, which a query must hold for the name to be among its words."""
    index = _read_index()
    at: set[int] = set()
    for t in held:
        at.update(_find(index, t))
    return sorted(at)


def _read(at: list[int] | None = None) -> _Lexicon:
    """The lexicon — or, read once in a process (`at`: where the groups its query names are),
    only those groups: a search run as its own process parses a few groups, not 800 (~1 ms); a
    second search in the same process reads the file whole, once."""
    global _lexicon, _partial
    if _lexicon is not None:
        return _lexicon
    if at is not None and _partial:
        at = None  # (a process that searches again: the whole file, kept)
    _read_index()
    names: dict[str, list[str]] = {}
    groups: dict[int, tuple[str, str]] = {}
    with PATH.open("rb") as f:
        found = []
        if at is None:
            f.seek(_base)
            place = 0
            for line in f:
                found.append((place, line))
                place += len(line)
        else:
            for place in at:
                f.seek(_base + place)
                found.append((place, f.readline()))
    for place, line in found:
        g = json.loads(line)
        own = [p for p in g["names_tokens"].split(SEP) if p]
        for phrase in own:
            names.setdefault(phrase.split(" ", 1)[0], []).append(f"{place}\t{phrase}")
        values = [p for p in g["values_tokens"].split(SEP) if p]
        # a Chinese character alone names a group in a question (我的车), but is no term to
        # look for: every word written with it holds it (火车, 车位)
        looked = SEP.join(p for p in own + values if not (len(p) == 1 and not p.isascii()))
        groups[place] = (g["id"], looked)
    lexicon = _Lexicon({t: "\n".join(entries) for t, entries in names.items()}, groups)
    if at is None:
        _lexicon = lexicon
    _partial = True
    return lexicon


def named(terms: list[str]) -> tuple[Kin, ...]:
    """The groups the query's terms name (a name of the group all of whose tokens are among them),
    each with the group's other terms: those the query does not hold already."""
    held = frozenset(terms)
    where = _naming(held)
    if not where:
        return ()  # (most queries: the groups are not read)
    lex = _read(where)
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
