"""Command-line conventions: --json everywhere, exit codes, stdin, help with examples, version."""

from __future__ import annotations

import json

import pytest
from conftest import HANG, run_optmem

from optmem import __version__
from optmem.cli import fast
from optmem.cli.spec import COMMANDS, REGISTRY


def declared():
    import importlib

    for module, _ in set(COMMANDS.values()):
        importlib.import_module(f"optmem.cli.{module.lstrip('@')}")
    return {name: cmd for name, cmd in REGISTRY.items() if name.split(" ")[0] in COMMANDS}


def typer_kwargs(cmd, args):
    """What the declared function receives when Typer parses `args`."""
    from optmem.cli.app import to_click

    got = {}
    click_cmd = to_click(cmd._replace(fn=lambda **kw: got.update(kw)))
    click_cmd.main(list(args), prog_name="optmem", standalone_mode=False)
    return got


@pytest.mark.long
def test_every_command_has_json_and_help_with_an_example(cli):
    for name in declared():
        res = cli(*name.split(" "), "--help")
        assert res.exit_code == 0 and "Example:" in res.stdout and "optmem " in res.stdout, name
        assert "--json" in res.stdout, name


def test_exports_help_says_its_json_is_jsonl(cli):
    said = " ".join(cli("export", "--help").stdout.split())
    assert "--json Changes nothing: the export is JSONL either way" in said
    assert "one JSON document on stdout" not in said
    assert "--json Print one JSON document on stdout." in " ".join(cli("search", "--help").stdout.split())


def test_command_table_matches_each_commands_help():
    for name, cmd in declared().items():
        if " " not in name:
            assert cmd.help.strip().splitlines()[0] == COMMANDS[name][1], name


def test_fast_parser_reads_arguments_exactly_as_typer_does():
    """The fast path and Typer must agree on every invocation the fast path accepts."""
    samples = {
        "add": [
            ["x"],
            ["x", "--target", "user", "--force"],
            ["-t", "user", "y", "--json"],
            ["--project=webapp", "z"],
            ["-"],
        ],
        "replace": [["a", "b"], ["--id", "abc123", "new"], ["a", "b", "--first", "-p", "p1"]],
        "remove": [["a"], ["--id", "abc123"], ["a", "--first", "--target", "user"]],
        "append": [
            ["t"],
            ["t", "--tag", "a", "--tag", "b", "--key", "k", "--ttl", "7d"],
            ["--redline", "t", "-d", "code", "-p", "web", "--kind", "decision"],
            ["--", "-starts-with-dash"],
            ["t", "--on-similar", "skip", "--json"],
        ],
        "get": [["ABCDEF12"], ["ABCDEF12", "--json"]],
        "forget": [["ABCDEF12", "--reason", "why"]],
        "show": [[], ["--ids", "--target", "user"]],
        "apply": [["-"], ["ops.json", "--allow-unsafe"]],
        "init": [[], ["some/path"]],
        "purge": [[], ["A1B2C3D4"], ["A1B2C3D4", "E5F6G7H8", "--yes"], ["--domain", "x", "--yes"]],
        "search": [
            ["q"],
            ["q", "-d", "a", "-d", "b", "--limit", "3", "--current", "--explain"],
            ["q", "--since", "2026-01-01", "--until=2026-02-01", "--kind", "note", "--tag", "t"],
        ],
        "handoff write": [["-p", "w", "--done", "a", "--done", "b", "--next", "c"]],
        "context": [["-p", "w", "--budget", "1500", "-q", "deploy"]],
        "eval": [["q.jsonl", "--k", "3", "--set", "a.b=1", "--set", "c.d=2"]],
    }
    for name, cases in samples.items():
        cmd = declared().get(name)
        for args in cases:
            assert cmd is not None, name
            mine = fast.parse(cmd.params, args)
            assert mine is not None, (name, args)
            assert mine == typer_kwargs(cmd, args), (name, args)


def generated_invocations(cmd):
    """For one declared command: only what is required, then every parameter set (options as
    `--opt value` and as `--opt=value`, repeatable ones twice)."""
    required, everything, inline = [], [], []
    for p in cmd.params:
        value = "3" if p.type in (int, float) else "v-" + p.name
        if p.is_argument:
            vals = [value + "1", value + "2"] if p.multiple else [value]
            everything += vals
            inline += vals
            if p.required:
                required += vals
        elif p.is_flag:
            everything.append(p.decls[0])
            inline.append(p.decls[-1])
        else:
            for _ in range(2 if p.multiple else 1):
                everything += [p.decls[0], value]
                inline.append(f"{p.decls[0]}={value}" if p.decls[0].startswith("--") else p.decls[0])
                if not p.decls[0].startswith("--"):
                    inline.append(value)
    return [required, everything, inline]


@pytest.mark.long
def test_fast_parser_agrees_with_typer_on_every_declared_command():
    """Generated from the registry, so a new command or option is covered without a new test."""
    commands = declared()
    assert set(commands) >= {"search", "append", "handoff write", "hooks install", "mcp"}
    for name, cmd in commands.items():
        for args in generated_invocations(cmd):
            mine = fast.parse(cmd.params, args)
            assert mine is not None, (name, args)
            assert mine == typer_kwargs(cmd, args), (name, args)


def test_fast_parser_declines_what_it_does_not_know():
    cmd = declared()["append"]
    for args in (
        ["t", "--bogus"],
        ["t", "--help"],
        [],
        ["a", "b"],
        ["t", "--ttl"],
        ["t", "-x"],
        ["--redline=yes", "t"],
    ):
        assert fast.parse(cmd.params, args) is None, args


def test_root_help_lists_every_command(cli):
    out = cli("--help").stdout
    for name in COMMANDS:
        assert f"  {name} " in out


def test_version(cli):
    res = cli("--version")
    assert res.exit_code == 0 and res.stdout.strip() == f"optmem {__version__}"


def test_json_is_utf8_without_escapes(cli):
    res = cli("append", "端口是9090", "--json")
    assert "端口是9090" in res.stdout and "\\u" not in res.stdout
    assert json.loads(res.stdout)["ok"] is True


def test_an_unknown_setting_given_with_set_is_refused_not_ignored(cli):
    """`--set limits.memroy=5` asks for something that does not exist: a usage error naming the
    nearest setting, nothing run (it was ignored in silence) — an optmem.toml's typo stays a warning."""
    cli.json("init")
    said = cli.json("--set", "limits.memroy=5", "show", code=2)["error"]["message"]
    assert "did you mean memory?" in said and "nothing was run" in said
    said = cli.json("--set", "limts.memory=5", "show", code=2)["error"]["message"]
    assert "unknown section [limts]" in said and "limits" in said
    assert cli.json("--set", "limits.memory=5000", "show")["ok"] is True


def test_usage_errors_exit_2_and_are_json_with_json(cli):
    res = cli("append", "--json")
    assert res.exit_code == 2
    assert json.loads(res.stdout)["error"]["code"] == "usage"
    res = cli("append", "x", "--no-such-flag")
    assert res.exit_code == 2 and "no-such-flag" in res.stderr
    assert cli("nosuchcommand").exit_code == 2


def test_a_malformed_command_line_reads_in_human_output_as_every_refusal_does(cli):
    """`search --limit abc` without --json says what was wrong and what to do, as its JSON error
    and every other refusal do — not Click's own usage block (brief fix-i, item 5)."""
    cli.json("append", "the backend port is 9090")
    for args in (("search", "port", "--limit", "abc"), ("search", "port", "--nope"), ("search",)):
        res, said = cli(*args), cli.json(*args, code=2)["error"]
        assert res.exit_code == 2 and res.stdout == "", args
        assert res.stderr == f"error (usage): {said['message']}\n", args
        assert "`optmem search --help` lists its options" in res.stderr and "Try '" not in res.stderr, args
    assert "'abc' is not a valid int" in cli("search", "port", "--limit", "abc").stderr
    # a group named alone is no mistake to refuse: it prints its help, as Click does
    for group in ("handoff", "hooks"):
        res = cli(group)
        assert res.stderr.startswith(f"Usage: optmem {group} ") and "error (usage)" not in res.stderr, group
        assert "Commands:" in res.stderr and "lists its options" not in res.stderr, group


def test_refusals_exit_1_and_successes_exit_0(cli):
    assert cli("append", "fine").exit_code == 0
    assert cli("add", "dup").exit_code == 0
    assert cli("add", "dup").exit_code == 0  # an idempotent no-op is success
    assert cli("remove", "nothing like this").exit_code == 1


def test_optmem_now_sets_timestamps(cli):
    out = cli.json("append", "then", env={"OPTMEM_NOW": "2025-01-02T03:04:05+08:00"})
    assert out["record"]["ts"] == "2025-01-01T19:04:05Z"
    bad = cli.json("append", "x", env={"OPTMEM_NOW": "yesterday"}, code=2)
    assert "OPTMEM_NOW" in bad["error"]["message"]


@pytest.mark.long
def test_python_dash_m_and_exit_codes_in_a_real_process(tmp_path):
    res = run_optmem("append", "真实进程", "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["status"] == "stored"
    res = run_optmem("get", "ZZZZZZZZ", "--json")
    assert res.returncode == 1 and json.loads(res.stdout)["error"]["code"] == "not_found"
    res = run_optmem("--vault", str(tmp_path / "missing"), "show")
    assert res.returncode == 3 and "optmem init" in res.stderr and res.stdout == ""


def test_version_starts_without_heavy_imports():
    code = (
        "import atexit, sys, runpy\n"
        "sys.argv = ['optmem', '--version']\n"
        "heavy = ('rich', 'rapidfuzz', '_sqlite3', 'yaml', 'frontmatter', 'optmem.cli.hot', 'optmem.index')\n"
        "atexit.register(lambda: print('HEAVY', [m for m in heavy if m in sys.modules]))\n"  # (main ends the process)
        "runpy.run_module('optmem', run_name='__main__')\n"
    )
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG)
    assert res.returncode == 0, res.stderr
    assert f"optmem {__version__}" in res.stdout
    assert "HEAVY []" in res.stdout


def test_group_returns_none_for_unknown_commands():
    import typer.main

    from optmem.cli.app import app

    assert typer.main.get_command(app).get_command(None, "bogus") is None


@pytest.mark.long
def test_commands_run_without_importing_typer():
    code = (
        "import sys\n"
        "from optmem.cli import run\n"
        "rc = run(['append', 'fast path', '--json'])\n"
        "rc2 = run(['search', 'fast path', '--json'])\n"
        # an English question for an amount, a curly quote: no Chinese pattern either
        "run(['append', 'I\u2019ve 3 fast paths', '--json'])\n"
        "run(['search', 'how many fast paths', '--json'])\n"
        "run(['search', 'what\u2019s the fast path', '--json'])\n"
        # two notes of one subject and another value: the update rule reads their values
        "run(['append', 'The backend port is 8080', '--json']); run(['append', 'The backend port is 9090', '--json'])\n"
        "run(['search', 'backend port', '--json'])\n"
        "from optmem import text\n"
        "from optmem.reading import cues, query\n"
        "print('RC', rc, rc2, 'TYPER', 'typer' in sys.modules, 'INSPECT', 'inspect' in sys.modules,\n"
        "      'CJK', text._SPLIT_RE is not None or bool(text._CJK_PATTERNS)\n"
        "      or any(text._CJK in p for p in text._PATTERNS)\n"
        "      or cues._CJK_TIME_WORDS is not None, 'NAMES', 'findall' in vars(query._WORD))\n"
    )
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG)
    # neither Typer nor dataclasses' inspect/ast (~9 ms) on the paths agents call most, nor, for
    # English text, the CJK tokeniser's pattern (~4 ms to compile) and the Chinese question and
    # intensifier patterns (~2 ms), the Chinese time words (~1 ms); nor, for a query without a
    # capital letter, the patterns that read names
    assert "RC 0 0 TYPER False INSPECT False CJK False NAMES False" in res.stdout, res.stdout + res.stderr


@pytest.mark.long
def test_the_tuple_types_an_append_and_a_search_load_read_no_field_type():
    """typing.NamedTuple compiles a field type written as a string (what `from __future__ import
    annotations` makes of every one) at each start-up: ~20 µs a field, ~5 ms over the few hundred
    fields an append and a search load. A tuple type they load is an `optmem.value.NamedTuple`,
    which reads its fields' names alone (their types, strings or not, are mypy's), or declares
    real types (an append's few typing.NamedTuples: the sweep's, the scanner's)."""
    code = (
        "import sys, typing\n"
        "from optmem.cli import run\n"
        "from optmem.value import _Tuple\n"
        "run(['append', 'typed fields', '--json']); run(['search', 'typed fields', '--json'])\n"
        "for name, m in sorted(sys.modules.items()):\n"
        "    for v in list(vars(m).values()) if name.startswith('optmem') else ():\n"
        "        if isinstance(v, type) and issubclass(v, tuple) and hasattr(v, '_fields') and v.__module__ == name:\n"
        "            strings = [f for f, t in v.__annotations__.items() if isinstance(t, (str, typing.ForwardRef))]\n"
        "            print('TUPLE', name, v.__name__, 'OWN' if issubclass(v, _Tuple) else strings)\n"
    )
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG)
    tuples = [line for line in res.stdout.splitlines() if line.startswith("TUPLE")]
    assert len(tuples) > 10, res.stdout + res.stderr  # Row, Parts, Record … were looked at
    assert any(t.endswith(" OWN") for t in tuples), tuples
    assert [t for t in tuples if not t.endswith((" OWN", "[]"))] == []


def test_an_internal_error_exits_4_and_leaves_its_traceback_in_the_vault(cli, vault, vault_path, monkeypatch):
    from optmem import search

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(search, "ranked", broken)
    out = cli.json("search", "anything", code=4)
    assert out["error"]["code"] == "internal" and "ZeroDivisionError: a bug" in out["error"]["message"]
    logged = (vault_path / ".cache" / "optmem.log").read_text("utf-8")
    assert "Traceback" in logged and "in broken" in logged and out["error"]["log"].endswith("optmem.log")
    res = cli("search", "anything", env={"OPTMEM_DEBUG": "1"})
    assert res.exit_code == 4 and "Traceback" in res.stderr and "this is a bug in optmem" in res.stderr


def test_a_mistyped_command_gets_the_nearest_name(cli):
    res = cli("serch", "port")
    assert res.exit_code == 2 and "Did you mean search?" in res.stderr
    err = cli.json("zzzz", code=2)["error"]
    assert err["code"] == "usage" and "optmem --help" in err["message"]


@pytest.mark.long
def test_a_global_set_changes_a_setting_for_one_command_only(cli, vault, vault_path):
    for i in range(8):
        cli.json("append", f"deploy note {i} about the release train")
    assert len(cli.json("search", "deploy release")["hits"]) == 8
    # (the fast path reads it, and Typer does when it parses: a help request goes through Typer)
    assert len(cli.json("--set", "ranking.candidates=3", "search", "deploy release", "--limit", "3")["hits"]) == 3
    explained = cli.json("--set=ranking.cjk_unigram=0", "search", "deploy", "--explain")
    assert explained["hits"] and not (vault_path / "optmem.toml").exists()  # nothing written
    bad = cli.json("--set", "ranking.candidates=abc", "search", "deploy", code=2)["error"]
    assert bad["code"] == "usage" and "ranking.candidates" in bad["message"]
    assert "--set SECTION.NAME=VALUE" in cli("--help").stdout


def test_search_says_in_its_json_what_it_warned_of(cli, vault_path):
    """The warnings a search prints on stderr are in its JSON too: an agent reading --json learns
    that its hits were not recorded as recalled (a read-only ACCESS.jsonl), or that no record has
    the project it filtered on (tester 2, finding 6)."""
    cli.json("append", "the deploy runs on Fridays", "--project", "web")
    access = vault_path / "ACCESS.jsonl"
    access.touch()
    access.chmod(0o444)
    got = cli.json("search", "deploy", "--touch")
    assert got["hits"] and any("not recorded as recalled" in w for w in got["warnings"]), got
    access.chmod(0o644)
    got = cli.json("search", "deploy", "--project", "wbe")
    assert any("no record has project 'wbe'" in w for w in got["warnings"]), got
    assert "warnings" not in cli.json("search", "deploy")


def test_a_query_that_starts_with_a_dash_is_told_to_use_double_dash(cli):
    """`optmem search -port` read `-p ort` and then missed QUERY: the refusal says to put `--`
    before the text, and `optmem search -- -port` searches for it."""
    cli("init")
    for args in (("search", "-port"), ("search", "-xyz")):
        res = cli(*args, "--json")
        message = json.loads(res.stdout)["error"]["message"]
        assert res.exit_code == 2 and f"optmem search -- {args[1]}" in message, message
    assert cli("search", "--", "-port").exit_code == 0


def test_a_value_from_a_fixed_set_is_read_in_any_case(cli, vault_path):
    cli("init")
    assert cli.json("add", "-t", "USER", "likes green tea")["target"] == "user"
    assert "likes green tea" in (vault_path / "USER.md").read_text("utf-8")
    assert cli.json("show", "-t", "User")
    assert cli("add", "-t", "nobody", "x").exit_code == 2  # (what is not in the set is refused, naming it)
