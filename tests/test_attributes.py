"""The lexicon of attributes (`optmem.reading.attributes`): a question's word of an attribute
brings the attribute's other words and typical values as weaker terms — "teeth" finds "Switched
dentists …", "laptop" finds "IT swapped me onto a MacBook" — never above a record that holds the
question's own word, and nothing changes for a question that names no attribute. Real vaults,
through the CLI."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from test_update_subject import _store as _stored

from optmem.reading import attributes
from optmem.reading.query import terms_of
from optmem.text import query_terms

pytestmark = pytest.mark.usefixtures("no_sweep")

REPO = Path(__file__).resolve().parent.parent

FILLERS = (
    "Lunch with the design team on Friday.",
    "The office plants get watered on Mondays.",
    "Bought a new kettle for the kitchen.",
    "Go to the farmers market on Saturday for eggs.",
    "周末去爬山了，天气很好。",
    "晚上看了一部电影。",
)


def _store(cli, monkeypatch, records: list[tuple[str, str]]) -> list[str]:
    return _stored(cli, monkeypatch, records, fillers=FILLERS)


def _ids(cli, *args: str) -> list[str]:
    return [h["id"] for h in cli.json(*args, "--explain")["hits"]]


@pytest.mark.long
@pytest.mark.parametrize(
    "old, new, query",
    [
        (
            "Dentist: Dr. Alvarez at Maple Street Dental, cleanings every six months.",
            "Switched dentists. Now seeing Dr. Okafor at Riverside Smiles, closer to the office.",
            "Who do I go to for my teeth these days?",
        ),
        (
            "Work laptop: Dell XPS 13, asset tag 4471.",
            "IT swapped me onto a MacBook Pro last week.",
            "what laptop am I using?",
        ),
        ("手机套餐：中国移动 128 元。", "携号转网到联通了，现在 59 元。", "我的运营商是哪家"),
    ],
)
def test_the_newer_note_is_found_through_another_word_of_the_attribute(vault, cli, monkeypatch, old, new, query):
    old_id, new_id = _store(cli, monkeypatch, [("2026-02-01T10:00:00Z", old), ("2026-07-01T10:00:00Z", new)])
    hits = cli.json("search", query, "--explain")["hits"]
    assert hits[0]["id"] == new_id, [h["text"] for h in hits]
    assert old_id in [h["id"] for h in hits]  # the old value is still found
    assert hits[0]["explain"]["attributes"]  # `--explain` names the attribute it matched through
    # without the lexicon, the newer note shares no word with the question: not found
    assert new_id not in _ids(cli, "--set", "ranking.attribute_share=0", "search", query)


@pytest.mark.long
@pytest.mark.parametrize(("holders", "found"), [(1000, True), (1001, False)])
def test_a_word_of_an_attribute_held_by_many_records_brings_none(vault, vault_path, cli, holders, found):
    """The other words of an attribute read at most a fifth of the postings a query may (1,000 of
    5,000): a word held by more records brings no candidates — FTS5 ranks every record holding an
    OR of them, and at 100,000 records common ones tripled a warm search's time (11 → 30 ms).
    The records are lines typed into the log by hand."""
    lines = [json.dumps({"text": f"Dental cleaning {n} booked at the Maple clinic."}) for n in range(holders)]
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    res = cli("search", "who looks after my teeth?", "--json", "--limit", "3")
    hits = json.loads(res.stdout).get("hits", [])
    assert bool(hits) == found and all("Dental cleaning" in h["text"] for h in hits), res.stdout


@pytest.mark.long
def test_a_record_holding_the_questions_word_is_not_outranked_by_one_holding_another_word(vault, cli, monkeypatch):
    # "MacBook" is a laptop, but the record saying "laptop" answers "what laptop" first
    stand, laptop = _store(
        cli,
        monkeypatch,
        [
            ("2026-02-01T10:00:00Z", "Ordered a MacBook stand for the desk at home."),
            ("2026-05-01T10:00:00Z", "Laptop: Dell XPS 13, 32 GB."),
        ],
    )
    hits = cli.json("search", "what laptop do I have?", "--explain")["hits"]
    assert [h["id"] for h in hits] == [laptop, stand]
    assert hits[1]["explain"]["attributes"] == ["laptop"]
    assert hits[1]["score"] < hits[0]["score"] / 2  # well below: half the word's weight at most


@pytest.mark.long
def test_a_question_that_names_no_attribute_is_searched_as_before(vault, cli, monkeypatch):
    _store(
        cli,
        monkeypatch,
        [
            ("2026-02-01T10:00:00Z", "小明住在杭州，在阿里巴巴上班。"),
            ("2026-04-01T10:00:00Z", "小明搬到上海了，现在住在浦东。"),
            ("2026-04-02T10:00:00Z", "Dentist: Dr. Alvarez at Maple Street Dental."),
        ],
    )
    query = "小明现在住在哪里"
    assert attributes.named(terms_of(query)) == ()
    on = cli.json("search", query, "--explain")
    off = cli.json("--set", "ranking.attribute_share=0", "search", query, "--explain")
    assert on == off
    assert all("attributes" not in h["explain"] for h in on["hits"])


def _builder():
    spec = importlib.util.spec_from_file_location("bench_attributes", REPO / "bench" / "attributes.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_lexicon_is_read_as_the_index_reads_text():
    """Every kept term's tokens are what the tokeniser gives it now (the file was built by
    `bench/attributes.py`; a change of the tokeniser or the stemmer must rebuild it), the index
    line lists each name's first token with where its groups are, and every group keeps some words."""
    raw = attributes.PATH.read_bytes()
    header_line, index_line, body = raw.split(b"\n", 2)
    header = json.loads(header_line)
    index = json.loads(index_line)
    assert index.startswith("\t") and index.endswith("\t")
    listed = {e.split(" ")[0]: [int(o) for o in e.split(" ")[1:]] for e in index.strip("\t").split("\t")}
    groups = []
    place = 0
    for row in body.splitlines(keepends=True):
        groups.append((place, json.loads(row)))
        place += len(row)
    sources = [REPO / "bench" / "lexicon" / name for name in header["sources"]]
    assert len(groups) == header["source_groups"] == len(_builder().merged(sources))
    firsts: dict[str, list[int]] = {}
    for at, g in groups:
        for part in ("names", "values"):
            terms = [t for t in g[part].split(attributes.SEP) if t]
            tokens = [t.split(" ") for t in g[f"{part}_tokens"].split(attributes.SEP) if t]
            assert len(terms) == len(tokens)
            for term, toks in zip(terms, tokens):
                assert sorted(toks) == sorted(attributes.content_tokens(term)), term
                if part == "names" and at not in firsts.setdefault(toks[0], []):
                    firsts[toks[0]].append(at)
        assert g["names"], g["id"]
    assert firsts == listed and header["naming_tokens"] == len(listed)
    # the terms removed, by rule, are listed with the reason
    assert "mobile_carrier: AT&T" in header["removed"]["no word of its own"]


def test_the_lexicon_is_its_sources_words_and_no_others():
    """The built lexicon holds the groups of the files written blind (`bench/lexicon/`, merged in
    the order its header names them) and, of each, every term kept or removed — none added."""
    header_line, _, body = attributes.PATH.read_bytes().split(b"\n", 2)
    header = json.loads(header_line)
    sources = [REPO / "bench" / "lexicon" / name for name in header["sources"]]
    written = _builder().merged(sources)
    removed = {
        item.rsplit(" (", 1)[0] if rule == "too common" else item
        for rule, items in header["removed"].items()
        for item in items
    }
    built = [json.loads(row) for row in body.splitlines()]
    assert [g["id"] for g in built] == [g["id"] for g in written]
    for g, source in zip(built, written):
        kept = [t for part in ("names", "values") for t in g[part].split(attributes.SEP) if t]
        terms = [t for field in ("en", "zh", "en_values", "zh_values") for t in source[field]]
        assert set(kept) <= set(terms)
        assert {t for t in terms if t not in kept} <= {
            t.split(": ", 1)[1] for t in removed if t.startswith(g["id"] + ": ")
        }


def test_a_value_counts_only_through_the_attribute_the_question_names():
    laptop = attributes.named(query_terms("what laptop do I use"))
    assert [k.group for k in laptop] == ["laptop"]
    assert ("macbook",) in laptop[0].phrases
    assert laptop[0].asked == {"laptop"}
    # "MacBook" names no attribute: a value brings nothing of its own
    assert attributes.named(query_terms("MacBook")) == ()
    # a Chinese character alone names an attribute in a question, but is no term to look for
    car = attributes.named(query_terms("车"))
    assert car and all(p != ("车",) for k in car for p in k.phrases)


@pytest.mark.long
def test_a_redline_is_matched_by_the_questions_own_words_only(vault, cli, monkeypatch):
    # a redline ranks above every hit: another word of the attribute ("端口" of "port") does not
    # make it match the question
    monkeypatch.setenv("OPTMEM_NOW", "2026-02-01T10:00:00Z")
    assert (
        cli("append", "生产环境的端口变更必须先在 staging 验证，再发公告。", "--redline", "--origin", "user").exit_code
        == 0
    )
    note = cli.json("append", "The backend listens on port 9090 behind nginx.")["id"]
    hits = cli.json("search", "backend port")["hits"]
    assert [h["id"] for h in hits] == [note]


@pytest.mark.parametrize(
    "query", ["Who do I go to for my teeth these days?", "what laptop am I using?", "我的运营商是哪家"]
)
def test_a_process_that_searches_once_reads_only_the_groups_its_words_name(monkeypatch, query):
    """A search run as its own process parses only the groups its words name (the index line says
    where they are), not all of them: what it finds is what the whole lexicon gives."""
    terms = terms_of(query)
    monkeypatch.setattr(attributes, "_lexicon", None)
    monkeypatch.setattr(attributes, "_partial", False)
    part = attributes._read(attributes._naming(frozenset(terms)))
    assert 0 < len(part.groups) < 30 and attributes._lexicon is None  # (a part, not kept as the lexicon)
    monkeypatch.setattr(attributes, "_partial", False)
    once = attributes.named(terms)
    assert once and attributes._lexicon is None
    whole = attributes.named(terms)  # the second search of the process reads the file whole
    assert attributes._lexicon is not None and len(attributes._lexicon.groups) > 800
    assert once == whole


def test_the_index_line_read_as_written_finds_what_its_json_string_says():
    """The index line is looked through as its bytes are written (its tabs escaped), not decoded
    by JSON's scanner: its only escapes are its tabs (what `bench/attributes.py` writes), and
    every token finds the groups the decoded string names; a token no entry begins with, or one
    holding a character JSON escapes, finds none."""
    with attributes.PATH.open("rb") as f:
        f.readline()
        line = f.readline()
    text = line.decode("utf-8").strip()
    assert "\\" not in text.replace("\\t", "")  # (no other escape: no quote, backslash or control character)
    decoded = json.loads(line)
    assert attributes._read_index() == line

    def groups(token: str) -> list[int]:  # (the entry as the decoded string has it)
        i = decoded.find(f"\t{token} ")
        return [int(o) for o in decoded[i + len(token) + 2 : decoded.index("\t", i + 1)].split(" ")] if i >= 0 else []

    tokens = [entry.split(" ")[0] for entry in decoded.split("\t") if entry]
    assert len(tokens) > 5000 and any(not t.isascii() for t in tokens)
    for token in [*tokens, "zzzq", "1", "10", "部", 'ab"c', "x\\y", "a\tb", ""]:
        assert attributes._find(line, token) == groups(token), token
