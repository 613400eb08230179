"""One list of error codes (`optmem.errors.CODES`): every code the source answers with is in it,
with the exit code its class carries, and docs/files.md shows it as `scripts/error_codes.py`
prints it — so the documented list cannot drift from the code (issue 44, part 2)."""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from optmem import errors

REPO = Path(__file__).resolve().parent.parent
CALLS_WITH_A_CODE_FIRST = ("envelope", "error_payload")


def _name(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


@functools.cache
def source() -> tuple[tuple[str, tuple[ast.AST, ...]], ...]:
    """Every node of every module of optmem/, by its path: parsed once for the module's tests."""
    return tuple(
        (str(path.relative_to(REPO)), tuple(ast.walk(ast.parse(path.read_text("utf-8")))))
        for path in sorted((REPO / "optmem").rglob("*.py"))
    )


@functools.cache
def emitted() -> list[tuple[str, str, str]]:
    """(code, where, the class or function named) for every error code written in optmem/: an
    error class's `code = "…"`, a `code="…"` given when raising (or answering), and the first
    argument of `envelope`/`error_payload`."""
    found = []
    for where, nodes in source():
        for node in nodes:
            if isinstance(node, ast.ClassDef) and node.name != "OptmemError":
                for stmt in node.body:
                    if (
                        isinstance(stmt, ast.Assign)
                        and any(isinstance(t, ast.Name) and t.id == "code" for t in stmt.targets)
                        and isinstance(stmt.value, ast.Constant)
                    ):
                        found.append((str(stmt.value.value), f"{where}:{stmt.lineno}", node.name))
            elif isinstance(node, ast.Call):
                name = _name(node.func)
                for kw in node.keywords:
                    if kw.arg == "code" and isinstance(kw.value, ast.Constant):
                        found.append((str(kw.value.value), f"{where}:{node.lineno}", name))
                if name in CALLS_WITH_A_CODE_FIRST and node.args and isinstance(node.args[0], ast.Constant):
                    found.append((str(node.args[0].value), f"{where}:{node.lineno}", name))
    return found


@pytest.mark.long
@pytest.mark.xdist_group("optmem-source")  # (the parsed source, once a worker)
def test_every_code_the_source_answers_with_is_in_the_one_list_with_its_class_exit_code() -> None:
    found = emitted()
    assert len(found) > 40  # (the scan sees the source: the classes, the raise sites, the hub)
    unlisted = [(code, where) for code, where, _ in found if code not in errors.CODES]
    assert unlisted == []
    for code, where, called in found:
        cls = getattr(errors, called, None)
        if isinstance(cls, type) and issubclass(cls, errors.OptmemError):
            assert errors.CODES[code].exit_code == cls.exit_code, (code, where, called)


@pytest.mark.long
@pytest.mark.xdist_group("optmem-source")  # (the parsed source, once a worker)
def test_the_list_holds_no_code_nothing_answers_with() -> None:
    assert set(errors.CODES) == {code for code, _, _ in emitted()}


@pytest.mark.long
@pytest.mark.xdist_group("optmem-source")  # (the parsed source, once a worker)
def test_a_bare_optmem_error_always_names_its_code() -> None:
    """The base classes' own code ("error") is in no list: raising one names a listed code."""
    bare = []
    for where, nodes in source():
        for node in nodes:
            if isinstance(node, ast.Call) and _name(node.func) in ("OptmemError", "VaultError"):
                if not any(kw.arg == "code" for kw in node.keywords):
                    bare.append(f"{where}:{node.lineno}")
    assert bare == []


def test_an_error_class_with_a_code_not_in_the_list_is_refused_at_import() -> None:
    with pytest.raises(TypeError, match="errors.CODES"):
        type("Invented", (errors.OptmemError,), {"code": "invented_code"})
    with pytest.raises(TypeError, match="errors.CODES"):  # a listed code with another exit code
        type("WrongExit", (errors.OptmemError,), {"code": "no_match", "exit_code": errors.USAGE})


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("error_codes", REPO / "scripts" / "error_codes.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_files_md_shows_the_list_as_the_script_writes_it() -> None:
    script = _script()
    page = (REPO / "docs" / "files.md").read_text("utf-8")
    assert script.placed(page) == page, "run `python scripts/error_codes.py --write`"
    for code in errors.CODES:
        assert f"| `{code}` |" in page
    assert "| `not_current` | 1 |" in page


def test_the_script_prints_the_table_and_refuses_a_page_without_its_markers(capsys) -> None:
    script = _script()
    assert script.main([]) == 0
    printed = capsys.readouterr().out
    assert printed == script.table() and "| `usage` | 2 |" in printed and "| `busy` | — |" in printed
    assert script.main(["--bogus"]) == 2
    with pytest.raises(SystemExit, match="markers"):
        script.placed("# a page without the markers\n")


# -- exit codes as the rule says: 1 when the thing named is not there -------------------------------
def test_resolve_keep_with_an_id_of_no_value_in_conflict_is_not_found_exit_1(cli, vault, vault_path, monkeypatch):
    (vault_path / "optmem.toml").write_text(
        '[lifecycle]\nauto_sweep = "off"\n[consolidation]\nconflict_window_days = 1\n', "utf-8"
    )
    monkeypatch.setenv("OPTMEM_NOW", "2026-05-10T09:00:00Z")
    a = cli.json("append", "editor is vim", "--key", "user.editor")["id"]
    b = cli.json("append", "editor is emacs", "--key", "user.editor")["id"]
    other = cli.json("append", "unrelated note")["id"]
    before = (vault_path / "LOG.jsonl").read_bytes()
    for wrong in (other, "ZZZZZZZZ"):
        err = cli.json("resolve", "user.editor", "--keep", wrong, code=1)["error"]
        assert err["code"] == "not_found", err
        assert "not one of the values in conflict" in err["message"] and a[-8:] in err["message"]
        assert sorted(err["values"]) == sorted([a, b])
    res = cli("resolve", "user.editor", "--keep", other)
    assert res.exit_code == 1 and "error (not_found)" in res.stderr
    assert (vault_path / "LOG.jsonl").read_bytes() == before  # a refusal writes nothing
    # giving neither --keep nor --value is a usage error still
    assert cli.json("resolve", "user.editor", code=2)["error"]["code"] == "usage"


# -- a query of several words, unquoted ----------------------------------------------------------------
def test_an_unquoted_query_of_several_words_is_told_to_quote_it(cli, vault):
    err = cli.json("search", "deploy", "staging", code=2)["error"]
    assert err["code"] == "usage"
    assert 'optmem search "deploy staging"' in err["message"], err
    assert "quote" in err["message"]
    human = cli("search", "deploy", "staging", "now")
    assert human.exit_code == 2
    assert 'optmem search "deploy staging now"' in human.stderr, human.stderr
    text = cli("append", "deploy", "to", "staging")  # any one TEXT argument: the same advice
    assert text.exit_code == 2 and 'optmem append "deploy to staging"' in text.stderr, text.stderr
    quoted = cli.json("search", "deploy staging")  # quoted, it is a search
    assert quoted["hits"] == []


def test_a_file_named_before_the_text_is_pointed_at_target(cli, vault):
    # `optmem add memory "…"` reads as one text with an extra word: name the option too
    err = cli.json("add", "user", "prefers dark mode", code=2)["error"]
    assert 'optmem add "user prefers dark mode"' in err["message"], err
    assert 'optmem add --target user "prefers dark mode"' in err["message"], err
    # a first word that names no file gets only the quoting advice
    assert "--target" not in cli.json("add", "deploy", "to staging", code=2)["error"]["message"]
    assert "--target" not in cli.json("search", "memory", "port", code=2)["error"]["message"]


# -- a configuration that cannot be read, alike whatever is wrong with it -----------------------------
def test_a_config_file_that_cannot_be_read_is_one_error_naming_it_and_a_bad_domain_names_its_variable(
    cli, vault, vault_path, tmp_path, monkeypatch
):
    """Tester 14 #13: optmem.toml with a broken table header was `usage` (exit 2) naming no file,
    the same file with invalid UTF-8 `unreadable` (exit 3) naming it; OPTMEM_DOMAIN=../x was
    refused as "domain '../x'" without naming the variable that said it."""
    toml = vault_path / "optmem.toml"
    for broken in (b"[limits\n", b'[log]\ndomain = "caf\xe9"\n'):
        toml.write_bytes(broken)
        res = cli("search", "x", "--json")
        err = json.loads(res.stdout)["error"]
        assert res.exit_code == 3 and err["code"] == "unreadable", (broken, err)
        assert err["file"] == str(toml) and str(toml) in err["message"], err
    toml.unlink()
    mine = tmp_path / "config.toml"
    mine.write_text("[mcp\n", "utf-8")
    monkeypatch.setenv("OPTMEM_CONFIG", str(mine))
    err = cli.json("compact", code=3)["error"]  # (it reads the user's own file for a summariser)
    assert err["code"] == "unreadable" and err["file"] == str(mine) and "not valid TOML" in err["message"]
    monkeypatch.delenv("OPTMEM_CONFIG")
    monkeypatch.setenv("OPTMEM_DOMAIN", "../x")
    err = cli.json("append", "a note", code=2)["error"]
    assert err["code"] == "invalid_name" and err["variable"] == "OPTMEM_DOMAIN"
    assert err["message"].startswith("OPTMEM_DOMAIN") and "unset it" in err["message"]
    assert not (vault_path / "LOG.jsonl").exists() or "a note" not in (vault_path / "LOG.jsonl").read_text("utf-8")
    assert cli.json("append", "a note", "--domain", "ops")["id"]  # (--domain wins over the variable)
