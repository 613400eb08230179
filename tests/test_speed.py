"""What the search speed-ups keep: the same settings, the same index, the same output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG
from hypothesis import given
from hypothesis import strategies as st

from optmem import settings
from optmem.vault import SETTINGS_CACHE, Vault


def _with_cache_folder(cli) -> None:
    """A vault whose cache folder exists (the first index build makes it; reading settings never does)."""
    assert cli("append", "a note").exit_code == 0


def _cache_file(vault_path: Path) -> Path:
    (kept,) = (vault_path / ".cache").glob(SETTINGS_CACHE.format(reader="*"))  # this optmem's, the one there
    return kept


def _cached(vault_path: Path) -> dict:
    return json.loads(_cache_file(vault_path).read_text("utf-8"))


def test_settings_read_through_the_cache_are_the_files_own(cli, vault, vault_path):
    _with_cache_folder(cli)
    toml = '[ranking]\ncandidats = 300\ncontext_share = 0.5\n[projects]\nweb = "site"\n'
    (vault_path / "optmem.toml").write_text(toml, "utf-8")
    first = Vault(vault_path).settings
    assert _cached(vault_path)["stamp"][0] == toml  # kept with the text it was read from
    again = Vault(vault_path).settings  # read back from the cache
    assert again == first == settings.load(toml)
    assert again.ranking.context_share == 0.5 and again.projects == {"web": "site"}
    assert any("did you mean candidates?" in w for w in again.warnings)  # the warning stays
    res = cli("search", "note")
    assert "did you mean candidates?" in res.stderr


def test_an_edited_settings_file_is_read_again(cli, vault, vault_path):
    _with_cache_folder(cli)
    (vault_path / "optmem.toml").write_text("[ranking]\ncontext_share = 0.5\n", "utf-8")
    assert Vault(vault_path).settings.ranking.context_share == 0.5
    (vault_path / "optmem.toml").write_text("[ranking]\ncontext_share = 0.25\n", "utf-8")
    assert Vault(vault_path).settings.ranking.context_share == 0.25
    (vault_path / "optmem.toml").write_text('[ranking]\ncandidates = "lots"\n', "utf-8")
    for _ in range(2):  # an invalid file is never kept: it is refused each time
        assert cli.json("search", "note", code=2)["error"]["key"] == "ranking.candidates"
    assert _cached(vault_path)["stamp"][0] == "[ranking]\ncontext_share = 0.25\n"


def test_a_damaged_settings_cache_is_read_past(cli, vault, vault_path):
    _with_cache_folder(cli)
    (vault_path / "optmem.toml").write_text("[ranking]\ncontext_share = 0.5\n", "utf-8")
    assert Vault(vault_path).settings.ranking.context_share == 0.5
    cache = _cache_file(vault_path)
    kept = _cached(vault_path)
    for damaged in ("{not json", json.dumps({**kept, "settings": {"ranking": {"nope": 1}}}), "[]"):
        cache.write_text(damaged, "utf-8")
        assert Vault(vault_path).settings.ranking.context_share == 0.5


def test_two_optmems_reading_one_vault_keep_a_reading_each(cli, vault, vault_path, monkeypatch):
    """A vault read by two installations of optmem in turn (the command line, an agent's
    provider in another environment): each keeps its own reading of optmem.toml, so neither
    parses the TOML again — nor rewrites the cache — on each command after the other's."""
    from optmem import vault as vaultmod

    _with_cache_folder(cli)
    (vault_path / "optmem.toml").write_text("[ranking]\ncontext_share = 0.5\n", "utf-8")
    for version in ("0.1.0", "9.9.9"):  # each reads the file once
        monkeypatch.setattr(vaultmod, "__version__", version)
        assert Vault(vault_path).settings.ranking.context_share == 0.5
    parsed: list[str] = []
    monkeypatch.setattr(settings, "load", lambda text: parsed.append(text))
    for version in ("0.1.0", "9.9.9", "0.1.0"):
        monkeypatch.setattr(vaultmod, "__version__", version)
        assert Vault(vault_path).settings.ranking.context_share == 0.5
    assert parsed == []
    monkeypatch.undo()
    for old in (vault_path / ".cache").glob(SETTINGS_CACHE.format(reader="*")):
        os.utime(old, (0, 0))  # (written long ago)
    for i in range(6):  # many optmems over time (a checkout's edits): the four most recent readings are kept
        monkeypatch.setattr(vaultmod, "__version__", f"1.{i}")
        assert Vault(vault_path).settings.ranking.context_share == 0.5
    kept = sorted(p.name for p in (vault_path / ".cache").glob(SETTINGS_CACHE.format(reader="*")))
    assert len(kept) == 4 and any("1.5-" in name for name in kept) and not any("0.1.0" in name for name in kept)


def test_reading_settings_lays_out_no_vault(tmp_path):
    root = tmp_path / "elsewhere"
    root.mkdir()
    (root / "optmem.toml").write_text("[ranking]\ncontext_share = 0.5\n", "utf-8")
    assert Vault(root).settings.ranking.context_share == 0.5
    assert sorted(p.name for p in root.iterdir()) == ["optmem.toml"]


_PIECES = "ab_1 é①\u0301-、。・゠カ中文한국어𠀀\u3040\u30ff\u4dbf\ud7af\uf900"


_PARTICLE_PIECES = "了啦呢吧啊呀嘛哦 ,.!?;:。！？；：\n中文カ한𠀀\u3040\u30ff\u4dbf\ud7af\uf900\u3041\u309fab1é-"


@pytest.mark.long
@given(st.text(alphabet=st.sampled_from(_PARTICLE_PIECES) | st.characters(), max_size=30))
def test_final_particles_go_where_the_look_behind_pattern_took_them(s):
    """A sentence-final particle goes when a CJK character comes before it (`text.FINAL_PARTICLES`);
    that is checked in Python, not by a look-behind of the CJK class (which made the pattern cost
    ~1.5 ms to compile in each process): the same text is left."""
    import re

    from optmem import text

    look_behind = rf"(?<=[{text._CJK}])[{text.FINAL_PARTICLES}](?=\s*(?:[,.!?;:。！？；：]|$))"
    assert text.without_final_particles(s) == re.sub(look_behind, "", s)


def test_reading_a_chinese_statement_compiles_no_second_cjk_class():
    """The values of a Chinese statement (what a search reads of its top hits) are read without
    compiling the CJK class into a second pattern: the tokeniser's (`text.cjk_runs`) is the only
    one, ~1.5 ms each in a process."""
    from optmem import identifiers, text

    text._CJK_PATTERNS.clear()  # (patterns are compiled again when needed)
    identifiers.values.cache_clear()
    assert identifiers.values("王芳现在养了五盆花了。")
    assert not [p for p in text._CJK_PATTERNS if text._CJK in p]


_CUE_PIECES = (
    "now|previously|before|used to|use to|did|was|first|old|my|in the beginning|earlier|"
    " |?|。|要|得|前|之前|目前|三年|以前|"
    "所以前|现在|实现在|改成|搬到|原来|还原来|了|a|i|é|中"
).split("|")


_KINDS = st.sampled_from(["present", "past", "change"])


@pytest.mark.long
@given(_KINDS, st.lists(st.sampled_from(_CUE_PIECES) | st.text(max_size=2), max_size=8))
def test_a_cue_is_found_as_the_one_pattern_of_both_languages_found_it(kind, pieces):
    """A text is searched with a kind's English cues and with its Chinese ones apart, each only
    when it may hold one (a Latin letter; a word every Chinese match holds): the same answer as
    one pattern of both."""
    import re

    from optmem.reading import cues

    folded = "".join(pieces)
    english, chinese = cues.cue_sources(kind)
    assert cues._says(kind, folded) == bool(re.search(f"{english}|{chinese}", folded))


def test_a_chinese_query_without_a_cue_word_compiles_no_chinese_cue_pattern():
    """Asking whether a Chinese query asks for the present or the past compiles the Chinese cue
    patterns only when it holds a word one of their matches must hold: ~3 ms a process."""
    from optmem.reading import cues

    cues._CUE_PATTERNS.clear()  # (compiled again when needed)
    assert cues.asks_for("孙悦在哪个项目工作") is None
    chinese = [cues.cue_sources(kind)[1] for kind in ("present", "past")]
    assert not [p for p in cues._CUE_PATTERNS.values() if any(c in p.pattern for c in chinese)]
    assert cues.asks_for("孙悦以前在哪个项目工作") == "past"


_QUERY_PIECES = (
    "现在|实现在|以前|所以前|目前|原来|多少|多多少少|很多长辈|多久|几|几盆|这几年|幾|多|长|盆|个|孙悦|在|哪| |?|a"
).split("|")


@pytest.mark.long
@given(st.lists(st.sampled_from(_QUERY_PIECES) | st.text(max_size=2), max_size=8))
def test_a_chinese_query_is_read_as_its_patterns_read_it(pieces):
    """A query's Chinese time words are looked for with their pattern only when it holds a word
    every match holds: the same answers."""
    import re

    from optmem.reading import cues
    from optmem.text import has_cjk

    folded = "".join(pieces)
    words = cues._guarded(w for w in (*cues.UPDATE_CUES_CJK, *cues.PAST_CUES_CJK) if len(w) > 1)
    spans = [m.span() for m in re.finditer(words, folded)] if has_cjk(folded) else []
    assert cues.time_word_spans(folded) == spans


def test_a_chinese_query_without_time_words_compiles_no_pattern_of_them():
    """The pattern of Chinese time words is compiled only for a query holding a word every one of
    its matches holds (~1 ms a process)."""
    from optmem import text
    from optmem.reading import cues, query

    cues._CJK_TIME_WORDS = None  # (compiled again when needed)
    text._CJK_PATTERNS.clear()
    query.read("孙悦在哪个项目工作")
    assert cues._CJK_TIME_WORDS is None
    query.read("孙悦现在养了几盆花")
    assert cues._CJK_TIME_WORDS is not None


@pytest.mark.long
@given(st.text(alphabet=st.sampled_from(_PIECES) | st.characters(), max_size=40))
def test_chinese_runs_and_words_are_what_the_two_class_pattern_finds(s):
    """The tokeniser splits a text with CJK by one CJK class (compiling a second, of the other
    letters, cost each process ~1.5 ms): the same CJK runs and words, in the same order."""
    import re

    from optmem import text

    two = re.compile(rf"([{text._CJK}]+)|([^\W_{text._CJK}]+)")
    assert text._split_cjk(s) == two.findall(s)
    # found character by character, as the first texts of a command are, and by the class
    few = text._FEW_CJK
    try:
        text._FEW_CJK = 10**9
        runs = text.cjk_runs()
        by_char = runs.split(s), [(m.span(), m.group()) for m in runs.finditer(s)], runs.findall(s)
        text._FEW_CJK = 0
        by_class = runs.split(s), [(m.span(), m.group()) for m in runs.finditer(s)], runs.findall(s)
    finally:
        text._FEW_CJK = few
    assert by_char == by_class
    assert by_class[0] == text._cjk_class().split(s)


def test_the_values_of_a_chinese_text_without_numerals_compile_no_chinese_pattern():
    from optmem import text

    text._CJK_PATTERNS.clear()  # (what earlier tests compiled)
    assert text.numbers("端口是8080，备用的是8.5") == ["8080", "8.5"]
    assert text.without_final_particles("我们在上海见面") == "我们在上海见面"
    assert text._CJK_PATTERNS == {}
    assert text.numbers("端口改成了三号") == ["3"] and text.without_final_particles("好吧。") == "好。"
    # (neither a numeral nor a particle compiles a pattern of Chinese classes: `number_spans`,
    # `without_final_particles` read them with patterns of ASCII classes)
    assert text._CJK_PATTERNS == {}


@pytest.mark.long
@given(
    st.text(
        alphabet=st.sampled_from([*_PIECES, "了", "吧", "。", "十", "万", "一", "〇", "个", "3", ".", "5"]), max_size=30
    )
)
def test_numbers_and_final_particles_of_a_text_without_numerals_or_particles_are_the_patterns(s):
    """A Chinese text without a Chinese numeral has only digits for numbers, and one without a
    final particle has none to drop: neither compiles its Chinese pattern (~1 ms together, in
    every search whose hits' values hold Chinese). What they give is what the patterns give."""
    import re

    from optmem import text

    spans = list(text.number_spans(s))
    every = re.compile(text._CJK_NUMBER_OR_DIGITS)
    if not any(c in s for c in text._ANY_NUMERAL):  # the short way: the full pattern finds the same
        assert spans == [(m[1], (m.end(), m.end())) for m in every.finditer(s)]
    kept = text.without_final_particles(s)

    def drop(m: re.Match[str]) -> str:
        return "" if m.start() and text._is_cjk_char(s[m.start() - 1]) else m.group()

    assert kept == re.sub(text._FINAL_PARTICLE, drop, s)


@pytest.mark.long
def test_a_search_that_reads_back_chinese_compiles_no_cjk_class(cli, vault, vault_path):
    """The CJK class (~40,000 code points) took 23M instructions (~7 ms) to compile in every
    process that split a text holding CJK into runs — a Chinese search, or any search whose
    candidates hold some. A command's first texts (`text._FEW_CJK` characters) are split
    character by character; an index build, which splits many, compiles it (the same runs)."""
    for note in ("我们计划把数据库迁移到新服务器", "Bob 说 the deploy moved to 周二", "部署 时间 是 下午三点"):
        assert cli("append", note).exit_code == 0
    code = (
        "import sys\n"
        "from optmem.cli import run\n"
        "from optmem import text\n"
        "queries = ('数据库 迁移', 'Bob deploy', '部署时间')\n"
        "rcs = [run(['--vault', sys.argv[1], 'search', q, '--json']) for q in queries]\n"
        "split = getattr(text, '_FEW_CJK', 100_000) < 100_000\n"
        "print('RC', rcs, 'COMPILED', text._SPLIT_RE is not None, 'SPLIT', split)\n"
    )
    res = subprocess.run([sys.executable, "-c", code, str(vault_path)], capture_output=True, text=True, timeout=HANG)
    assert "RC [0, 0, 0] COMPILED False SPLIT True" in res.stdout, res.stdout + res.stderr
    assert '"hits": []' not in res.stdout  # (each found its note)


@pytest.mark.long
def test_a_search_process_spends_no_time_collecting_cycles(cli, vault, vault_path):
    """A command is one short process that allocates much (modules, classes, records read back)
    and frees little: at Python's default threshold (700 allocations) the cycle collector ran
    ~25 times in a search, 3–8 ms of its ~60. The console entry point raises the threshold, so a
    search collects nothing — a long-running server still does, every 20,000 allocations."""

    for i in range(5):
        assert cli("append", f"deploy note {i} on the staging server").exit_code == 0
    res = _search_in_a_child(
        vault_path,
        "runs = []\n"
        "gc.callbacks.append(lambda phase, info: runs.append(info['generation']) if phase == 'start' else None)\n"
        "atexit.register(lambda: print('COLLECTIONS', len(runs), 'THRESHOLD', gc.get_threshold()[0]))\n",
        "main()\n",
    )
    assert "COLLECTIONS 0 THRESHOLD 20000" in res.stdout, res.stdout


def _search_in_a_child(vault_path: Path, before: str, run: str) -> subprocess.CompletedProcess[str]:
    """`optmem search 'deploy staging server' --json` in a fresh interpreter: `before` runs after
    `import atexit, gc, sys`, `run` calls `main()` (imported from optmem.cli); it must succeed."""
    code = (
        "import atexit, gc, sys\n" + before + "from optmem.cli import main\n"
        "sys.argv = ['optmem', '--vault', sys.argv[1], 'search', 'deploy staging server', '--json']\n" + run
    )
    res = subprocess.run([sys.executable, "-c", code, str(vault_path)], capture_output=True, text=True, timeout=HANG)
    assert res.returncode == 0, res.stderr
    return res


@pytest.mark.long
def test_a_command_leaves_the_interpreter_no_cycles_to_collect_at_exit(cli, vault, vault_path):
    """At exit the interpreter runs one last full cycle collection over every object still alive
    (every module, class and function a search loaded: ~8 % of a no-match search's instructions).
    A finished command has nothing there to free, so the console entry point freezes what is
    alive (`gc.freeze`) and that collection has nothing to traverse; exit handlers still run, and
    what was printed is all there."""

    assert cli("append", "deploy the staging server").exit_code == 0
    res = _search_in_a_child(
        vault_path,
        "atexit.register(lambda: print('AT EXIT, FROZEN', gc.get_freeze_count(), file=sys.stderr))\n",
        "main()\n",
    )
    assert json.loads(res.stdout)["hits"][0]["text"] == "deploy the staging server"
    frozen = int(res.stderr.split("AT EXIT, FROZEN ")[1].split()[0])
    assert frozen > 10_000, res.stderr  # the modules, classes and functions of a search, all of them


_TEARDOWN = (  # (the process ended by os._exit says so, to stderr, first)
    "import os\n"
    "real = os._exit\n"
    "def left(code):\n"
    "    sys.stderr.write(f'LEFT WITHOUT TEARDOWN {code}\\n')\n"
    "    sys.stderr.flush()\n"
    "    real(code)\n"
    "os._exit = left\n"
    "atexit.register(lambda: print('AT EXIT', file=sys.stderr))\n"
)


@pytest.mark.long
def test_a_command_ends_without_tearing_the_interpreter_down(cli, vault, vault_path):
    """After its exit handlers, `sys.exit` empties every module and frees every object a command
    made (~6M instructions, ~3 % of a search) for nothing a finished command needs: the console
    entry point runs the handlers, flushes the standard streams and ends the process
    (`cli.leave`). What was printed is all there — a result longer than the stream's buffer (8 KiB) — the exit
    code is the command's, and the handlers ran."""
    for i in range(40):
        assert cli("append", f"deploy note {i} on the staging server, " + "with a long tail " * 20).exit_code == 0
    code = "import atexit, sys\n" + _TEARDOWN + "from optmem.cli import main\n" + "main()\n"
    res = subprocess.run(
        [sys.executable, "-c", code, "--vault", str(vault_path), "search", "deploy staging", "-n", "40", "--json"],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert res.returncode == 0, res.stderr
    assert len(res.stdout) > 8192 and len(json.loads(res.stdout)["hits"]) == 40
    assert "AT EXIT\nLEFT WITHOUT TEARDOWN 0" in res.stderr, res.stderr
    res = subprocess.run(
        [sys.executable, "-c", code, "--vault", str(vault_path), "get", "ZZZZZZZZ", "--json"],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert res.returncode == 1 and json.loads(res.stdout)["error"]["code"] == "not_found", res.stdout + res.stderr
    assert "AT EXIT\nLEFT WITHOUT TEARDOWN 1" in res.stderr, res.stderr


@pytest.mark.long
def test_a_command_that_started_a_thread_ends_as_sys_exit_ends_it(cli, vault, vault_path):
    """A thread may still be running when the command returns: the process then ends through
    `sys.exit`, which waits for it, and the interpreter is torn down as before."""
    assert cli("append", "deploy the staging server").exit_code == 0
    code = (
        "import atexit, sys, threading, time\n" + _TEARDOWN + "done = []\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), done.append(1), print('THREAD DONE'))).start()\n"
        "from optmem.cli import main\n"
        "main()\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, "--vault", str(vault_path), "search", "deploy staging"],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert res.returncode == 0 and "THREAD DONE" in res.stdout, res.stdout + res.stderr
    assert "AT EXIT" in res.stderr and "LEFT WITHOUT TEARDOWN" not in res.stderr, res.stderr


@pytest.mark.long
def test_a_search_loads_no_module_it_does_not_use(cli, vault, vault_path):
    """What a search (after the first, which keeps optmem.toml's reading) does not import: the
    threading module (the vault lock names its thread with `_thread.get_ident`, ~1 ms), the TOML
    parser and what writing a file atomically pulls in (tempfile, shutil, random: ~5 ms), and
    difflib (~1 ms: only comparing two statements word by word needs it; a search reads the
    values its hits state, `identifiers.values`, without it)."""
    import subprocess
    import sys

    assert cli("append", "deploy the staging server").exit_code == 0
    (vault_path / "optmem.toml").write_text("[ranking]\ncontext_share = 0.5\n", "utf-8")
    code = (
        "import sys\n"
        "from optmem.cli import run\n"
        "rc = run(['--vault', sys.argv[1], 'search', 'deploy staging server', '--json'])\n"
        "print('RC', rc, 'LOADED', sorted(m for m in ('threading', 'tomllib', 'tempfile', 'shutil', 'random',\n"
        "      'dataclasses', 'inspect', 'typer', 'difflib') if m in sys.modules),\n"
        "      'VALUES READ', 'optmem.identifiers' in sys.modules)\n"
    )
    command = [sys.executable, "-c", code, str(vault_path)]
    for _ in range(2):  # (the first keeps the settings it read)
        res = subprocess.run(command, capture_output=True, text=True, timeout=HANG)
    assert "RC 0 LOADED [] VALUES READ True" in res.stdout, res.stdout + res.stderr


@pytest.mark.long
def test_a_search_that_checks_a_hot_file_loads_no_hashing_library_nor_scanner(cli, vault, vault_path):
    """A hit journalled from MEMORY.md is checked against the file (is the entry still there?):
    that reads the file's entry ids, nothing more. It loaded OpenSSL's hashlib (~3 ms: the ids
    are SHA-256, which the built-in module computes alike), the content scanner and the
    near-duplicate comparison (used to show a file, and to add to it); and `dataclasses`, which
    imports `inspect` and `ast` (~40M instructions, ~12 ms): the hot file's types are plain classes."""
    import hashlib

    assert cli("add", "the staging server deploys from the release branch").exit_code == 0
    code = (
        "import sys\n"
        "from optmem.cli import run\n"
        "rc = run(['--vault', sys.argv[1], 'search', 'staging server deploys', '--json'])\n"
        "print('RC', rc, 'LOADED', sorted(m for m in ('hashlib', '_hashlib', 'optmem.safety.scan',\n"
        "      'optmem.compare', 'dataclasses', 'inspect') if m in sys.modules),\n"
        "      'CHECKED', 'optmem.memory' in sys.modules)\n"
    )
    res = subprocess.run([sys.executable, "-c", code, str(vault_path)], capture_output=True, text=True, timeout=HANG)
    assert "RC 0 LOADED [] CHECKED True" in res.stdout, res.stdout + res.stderr
    # (the ids are the same SHA-256 ids)
    from optmem import memory

    entry = "the staging server deploys from the release branch"
    assert memory.entry_id(entry) == hashlib.sha256(entry.encode("utf-8")).hexdigest()[:8]


def test_the_index_columns_are_the_row_annotations_as_typing_reads_them():
    """The index's columns are read from `Row`'s annotations as written (get_type_hints, which
    reads them the same, cost each process ~0.1 ms): the same columns, in the same order."""
    from typing import get_type_hints

    from optmem import schema

    hints = get_type_hints(schema.Row, include_extras=True)
    assert list(schema.COLUMNS.items()) == [(name, hint.__metadata__[0]) for name, hint in hints.items()]
    assert list(schema.COLUMNS) == list(schema.Row._fields)


def test_printing_text_without_control_characters_compiles_no_escape_sequence_pattern():
    """The pattern of terminal escape sequences is compiled when a text holds a control
    character, not in every process that prints (~0.3 ms): text without one comes back as it is."""
    from optmem import terminal

    terminal._SEQUENCES = None  # (compiled again when needed)
    assert terminal.printable("deploy the staging server\tport 8080\n") == "deploy the staging server\tport 8080\n"
    assert terminal._SEQUENCES is None
    assert (
        terminal.printable("red \x1b[31mtext\x1b[0m, a title \x1b]0;owned\x07 and a bell \x07")
        == "red text, a title  and a bell "
    )


_ACCENT_SOURCES = (
    "[\u00c0-\u024f\u1e00-\u1eff][\u0300-\u036f]*|(?<=[a-z])[\u0300-\u036f]+",
    "[\u00c0-\u036f\u1e00-\u1eff]",
)


def test_folding_text_without_accents_compiles_no_accent_pattern():
    """The accent patterns cost ~1.5 ms to compile (the first look, a class of three ranges, twice
    what one of two takes): they are compiled when a text that is not ASCII is folded (the first
    look) and when the first look finds a letter to fold — not at import."""
    code = (
        "import re, sys\n"
        "from optmem import text\n"
        "def held(): return [s for s in sys.argv[1:] if any(k[1] == s for k in re._cache)]\n"
        "print('ASCII', text.fold('Deploy the Staging server') == 'deploy the staging server', held())\n"
        "print('CJK', text.fold('数据库 迁移，计划') == '数据库 迁移,计划', len(held()))\n"
        "print('ACCENT', text.fold('José’s café') == 'jose’s cafe', len(held()))\n"
    )
    res = subprocess.run([sys.executable, "-c", code, *_ACCENT_SOURCES], capture_output=True, text=True, timeout=HANG)
    assert "ASCII True []\nCJK True 1\nACCENT True 2\n" in res.stdout, res.stdout + res.stderr


@given(st.text(alphabet=st.sampled_from("aeJo é\u0301\u00e9\u0250\u02bc\u02c6\u0300\u1e9e\u1ea1ß数")))
def test_the_accents_fold_as_the_class_of_three_ranges_found_them(s):
    """The first look's class holds the IPA and modifier letters between the Latin ones and the
    marks: a false alarm, which changes nothing — the text folds as before."""
    import re
    import unicodedata

    from optmem import text

    before = unicodedata.normalize("NFKC", s).casefold()
    if re.search("[\u00c0-\u024f\u1e00-\u1eff\u0300-\u036f]", before):
        before = re.sub(_ACCENT_SOURCES[0], text._unaccent, before)
    assert text.fold(s) == before


def test_pathlib_is_imported_without_urllib():
    """optmem imports pathlib without `urllib.parse` and `ipaddress` (~6M instructions a process,
    for `Path.as_uri` alone): a stand-in serves pathlib's import, `as_uri` still answers, and a
    later `import urllib.parse` is the real module. (`-S`: no site, whose editable-install hook
    imports pathlib before optmem.)"""
    import optmem

    code = (
        "import sys, optmem, pathlib\n"
        "print(sorted(m for m in ('urllib.parse', 'ipaddress') if m in sys.modules))\n"
        "print(pathlib.Path('/a b').as_uri())\n"
        "import urllib.parse\n"
        "print(urllib.parse.urlsplit('http://h/p?q=1').netloc, urllib.parse.quote_from_bytes(b'a b'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(optmem.__file__).parent.parent)}
    res = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, timeout=HANG)
    assert res.stdout.splitlines() == ["[]", "file:///a%20b", "h a%20b"], res.stdout + res.stderr


_VALIDATION_SOURCES = (r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", r"#([0-9A-Za-z]{6,26})\b", "[\x7f-\x9f]")


@given(st.sampled_from(_VALIDATION_SOURCES), st.text(alphabet="aZ9._-# \x7f\x9fé", max_size=12))
def test_a_lazy_pattern_answers_as_the_compiled_one(source, s):
    import re

    from optmem.patterns import lazy

    lazily, compiled = lazy(source), re.compile(source)
    for method in ("match", "fullmatch", "search"):
        got, want = getattr(lazily, method)(s), getattr(compiled, method)(s)
        assert (got and got.span()) == (want and want.span())
    assert lazily.findall(s) == compiled.findall(s)
    assert lazily.sub("?", s) == compiled.sub("?", s)
    assert lazily.pattern == source


def test_a_validation_pattern_is_compiled_when_first_used():
    """The modules a search loads keep their validation patterns (names, ids, durations …)
    uncompiled until one is used (~6M instructions a process)."""
    code = (
        "import optmem.search, optmem.cli.common\n"
        "from optmem import vault, names, record, clock, layout\n"
        "pats = (names.ASCII_NAME, record.ID_RE, clock._TTL, layout.WRITER_RE)\n"
        "print([type(p).__name__ for p in pats], ['fullmatch' in vars(p) for p in pats])\n"
        "name = vault.NAME_RE  # (the name grammar: its ASCII pattern first, compiled at its first use)\n"
        "print(bool(name.fullmatch('ok')), 'fullmatch' in vars(names.ASCII_NAME), name.fullmatch('-no'))\n"
    )
    import optmem

    env = {**os.environ, "PYTHONPATH": str(Path(optmem.__file__).parent.parent)}  # (this checkout's)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=HANG)
    assert res.stdout.splitlines() == [
        "['_Lazy', '_Lazy', '_Lazy', '_Lazy'] [False, False, False, False]",
        "True True None",
    ], res.stdout + res.stderr


_QUESTION_PIECES = (
    "为什么|為什麼|什么时候|什么样|什么|什麼|怎么样|怎么|怎樣|哪里|哪儿|哪个|哪吒|哪|谁|誰|啥|如何|为何|是否|多少|"
    "多久|多长时间|多长|请问|請問|是不是|有没有|有沒有|干嘛|幹嘛|干吗|幹嗎|咋|几盆|几乎|茶几|十几|幾|吗|嗎|啊|呀|吧|"
    "酒吧|呢|毛呢|的|目的|的确|是|有|没有|所有|但是|部署|时间|小明|住在|端口|搬家|了|在"
).split("|")


@given(st.lists(st.sampled_from(_QUESTION_PIECES), max_size=6))
def test_a_chinese_run_without_a_question_character_is_cut_as_the_pattern_cuts_it(pieces):
    """A query's Chinese run is split at its question words only when it holds one of their
    characters (`questions._SPLIT_NEEDLES`): the same pieces as the pattern's split."""
    import re

    from optmem.reading import questions

    run = "".join(pieces)
    by_pattern = [
        p for p in re.split(questions._CJK_SPLIT, run) if p and not (len(p) == 1 and p in questions._CJK_PARTICLES)
    ]
    assert questions.topic_runs(run) == by_pattern


def test_a_chinese_keyword_query_compiles_no_question_word_pattern():
    """Chinese keywords without a question word are read without compiling the question words'
    pattern (~17M instructions, in every process)."""
    from optmem import text
    from optmem.reading import questions
    from optmem.reading.query import read

    text._CJK_PATTERNS.clear()  # (compiled again when needed)
    assert read("部署 时间", 0.0).terms
    assert questions._CJK_SPLIT not in text._CJK_PATTERNS
    assert read("部署是什么时间", 0.0).terms
    assert questions._CJK_SPLIT in text._CJK_PATTERNS


_ASKING = list("ab z?？!！.。\n,，;；吗嗎 \t=/%\x01\x02") + ["what", "好", "http://x.io/a", "去过上海"]


@given(st.lists(st.sampled_from(_ASKING), max_size=14))
def test_the_sentences_that_ask_are_the_question_patterns_matches(pieces):
    """`questions.questions` runs a pattern of ASCII classes over the text with its Chinese stops,
    marks and 吗 made ASCII (cheaper to compile): the sentences are those the pattern over the
    text itself finds (`questions._QUESTION`), the same characters — a \\x01 the text holds too."""
    import re

    from optmem.reading import questions

    folded = "".join(pieces)
    assert questions.questions(folded) == " ".join(re.findall(questions._QUESTION, folded))


@given(st.lists(st.sampled_from(list("Ab z.?!;:。？！；：\n") + ["Alice", "Bob's", "Eve’s", "bob"]), max_size=12))
def test_a_querys_sentences_split_at_its_stops_as_the_pattern_of_every_stop_splits_them(pieces):
    """`names_in` splits a query into sentences at its stops read as ASCII ones (a class of the
    Chinese stops is costlier to compile): each sentence's words are those the pattern of every
    stop, Chinese ones too, leaves."""
    import re

    from optmem.reading import query

    text = "".join(pieces)
    ours = [query._WORD.findall(s) for s in query._sentences(text)]
    assert ours == [query._WORD.findall(s) for s in re.split(r"[.?!;:。？！；：]+(?:\s+|$)", text)]
    # (a possessive's pattern is run only on a text holding an apostrophe: none matches in another)
    if "'" not in text and "’" not in text:
        assert query._POSSESSIVE.findall(text) == []


def _number_spans_by_the_chinese_patterns(s: str) -> list[tuple[str, tuple[int, int]]]:
    """`text.number_spans` as its patterns of Chinese classes read a text with a numeral."""
    import re

    from optmem import text

    after, out = re.compile(text._AFTER_CJK_NUMERAL), []
    for m in re.finditer(text._CJK_NUMBER_OR_DIGITS, s):
        digits, magnitude, run = m.groups()
        if digits:
            out.append((text._times(digits, magnitude), m.span(2)) if magnitude else (digits, (m.end(), m.end())))
            continue
        start, end = m.span()
        ordinal = start > 0 and s[start - 1] == "第"
        unit = after.match(s, end)
        if len(run) == 1 and not ordinal:
            if not unit or (run == "一" and unit.group() not in "号號月日"):
                continue
            if run == "十" and s[end] == "分" and s[end + 1 : end + 2] not in ("钟", "鐘"):
                continue
        out.append((text._cjk_value(run), (start, end)))
    return out


_NUMERAL_PIECES = [*"一二两十百千万亿〇零半三第分钟号月日个盆元人小时公里年.5 \x10\x11"]
_NUMERAL_PIECES += ["3", "42", "12.5", "分钟", "小时"]


@given(st.lists(st.sampled_from(_NUMERAL_PIECES), max_size=12))
def test_the_numbers_of_a_chinese_text_are_those_its_patterns_of_chinese_classes_read(pieces):
    """A text's Chinese numbers are read by a pattern of ASCII classes over the text with its
    numerals made control characters, and a look-up of what follows them (the patterns of Chinese
    classes took ~0.9 ms to compile): the same numbers, at the same places."""
    from optmem import text

    s = "".join(pieces)
    if any(c in s for c in text._ANY_NUMERAL):
        assert list(text.number_spans(s)) == _number_spans_by_the_chinese_patterns(s)
