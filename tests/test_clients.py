"""Smaller findings of driving optmem as its users do (issue 11, items 14–18)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import docs_text, log_lines, put, run_readme_block

from optmem import memory


def test_history_shows_both_branches_of_a_record_corrected_on_two_clones(cli, vault, vault_path, monkeypatch):
    monkeypatch.setenv("OPTMEM_NOW", "2025-12-01T00:00:00Z")
    target = put(vault, "the office is on floor 3").id
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:  # what git's union merge leaves
        for n, floor in ((1, 4), (2, 5)):
            fh.write(
                json.dumps(
                    {
                        "v": 1,
                        "id": f"01KCLONE{n}000000000000000000"[:26],
                        "ts": f"2026-0{n}-01T00:00:00Z",
                        "domain": "default",
                        "kind": "correction",
                        "corrects": [target],
                        "text": f"〔更正〕the office is on floor {floor}",
                    }
                )
                + "\n"
            )
    texts = [v["text"] for v in cli.json("history", target)["versions"]]
    assert texts[0] == "the office is on floor 3"
    assert {"〔更正〕the office is on floor 4", "〔更正〕the office is on floor 5"} <= set(texts)


@pytest.mark.long
def test_a_replaced_or_removed_hot_entry_is_one_hit(cli, vault):
    memory.add(vault, "Package manager is npm")
    memory.replace(vault, "npm", "pnpm")
    hits = [h for h in cli.json("search", "package manager")["hits"] if h["text"] == "Package manager is npm"]
    assert len(hits) == 1 and hits[0]["status"] == "superseded" and hits[0]["superseded_by"]
    memory.add(vault, "Editor is emacs")
    memory.remove(vault, "emacs")
    gone = [h for h in cli.json("search", "editor emacs")["hits"] if "emacs" in h["text"]]
    assert len(gone) == 1
    assert gone[0]["status"] == "removed" and gone[0]["superseded_by"] is None  # a removal has no successor
    assert "[REMOVED by optmem remove]" in cli("search", "editor emacs").stdout


def test_get_names_the_tombstone_and_its_reason(cli, vault):
    old = put(vault, "the staging host is stage-a").id
    cli.json("correct", old, "the staging host is stage-b")
    tomb = cli.json("forget", old, "--reason", "wrong environment")["tombstone"]
    rec = cli.json("get", old)["record"]
    assert rec["status"] == "forgotten" and rec["forgotten_by"] == tomb
    assert rec["forget_reason"] == "wrong environment"
    assert f"FORGOTTEN by {tomb[-8:]}: wrong environment" in cli("get", old).stdout


def test_apply_says_which_operation_failed(cli, vault):
    out = cli.json(
        "apply",
        "-",
        input=json.dumps([{"op": "add", "text": "fine"}, {"op": "remove", "old": "nothing like this"}]),
        code=1,
    )
    assert out["error"]["code"] == "no_match" and out["error"]["operation"] == 2
    assert out["error"]["message"].startswith("operation 2 (remove):")
    assert memory.load(vault).entries == []  # all or nothing


def test_a_summary_hit_shows_its_whole_node_id(cli, vault, vault_path):
    (vault_path / "optmem.toml").write_text("[tree]\nrun = 2\nfanout = 2\n")
    for i in range(4):
        put(vault, f"deploy note {i}", domain="hermes")
    cli.json("compact")
    out = cli("search", "deploy", "--kind", "summary").stdout
    assert "hermes/L1-0001" in out or "hermes/L2-0001" in out or "hermes/root" in out


def test_vault_after_the_command_gets_a_hint(cli, vault):
    res = cli("search", "x", "--vault", "elsewhere")
    assert res.exit_code == 2 and "global option" in res.stderr and "before" in res.stderr


def test_json_before_the_command_gets_a_hint(cli, vault):
    res = cli("--json", "append", "x")  # (a --json anywhere: the refusal is JSON)
    message = json.loads(res.stdout)["error"]["message"]
    assert res.exit_code == 2 and "after the command" in message and "--version" not in message
    # after another global option too (`optmem --vault V --json get …`)
    res = cli("--vault", str(vault.root), "--json", "get", "ZZZZZZ")
    message = json.loads(res.stdout)["error"]["message"]
    assert res.exit_code == 2 and "after the command" in message and "--version" not in message, message


def test_writing_into_a_plain_folder_adds_the_git_files(cli, tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    assert cli("--vault", str(folder), "append", "first").exit_code == 0
    assert (folder / ".gitattributes").is_file() and (folder / ".gitignore").is_file()
    assert log_lines(folder)[0]["text"] == "first"


def test_a_write_never_undoes_what_the_user_changed_in_the_git_files(cli, tmp_path):
    folder = tmp_path / "mine"
    assert cli("--vault", str(folder), "append", "first").exit_code == 0
    (folder / ".gitignore").write_text(".cache/\n", "utf-8")  # the user's own choice
    (folder / ".gitattributes").write_text("", "utf-8")
    assert cli("--vault", str(folder), "append", "second").exit_code == 0
    assert cli("--vault", str(folder), "add", "an entry").exit_code == 0
    assert (folder / ".gitignore").read_text("utf-8") == ".cache/\n"
    assert (folder / ".gitattributes").read_text("utf-8") == ""


# (the README's tour runs block by block in tests/test_docs.py, with what each block prints)


def readme_example(marker: str, tmp_path: Path) -> tuple[str, str]:
    """(what the ```sh block of the README or a docs page holding `marker` prints, run as printed
    in a clean environment; the output block the page shows right after it, dedented)."""
    import os
    import re
    import textwrap

    repo = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k not in ("OPTMEM_VAULT", "OPTMEM_NOW")}
    res = run_readme_block(marker, {**env, "TMPDIR": str(tmp_path)}, repo)
    assert res.returncode == 0, res.stderr
    readme = docs_text()
    shown = re.search(re.escape(marker) + r".*?```\n\n( *)```\n(.*?)\1```", readme, re.S)
    assert shown, marker
    return res.stdout, textwrap.dedent(shown.group(2))


@pytest.mark.long
def test_the_context_example_prints_what_the_docs_show(tmp_path):
    repo = Path(__file__).resolve().parent.parent
    out, shown = readme_example('copy="$(mktemp -d)/sample"', tmp_path)
    assert out == shown
    assert not subprocess.run(
        ["git", "status", "--porcelain", "sample_vault"], cwd=repo, capture_output=True, text=True
    ).stdout  # the copy, not the vault, was touched


@pytest.mark.long
def test_the_update_example_prints_what_the_docs_show(tmp_path):
    # the Chinese implicit-update example, run as printed: the new value first, the old one still
    # found, the figures docs/search.md quotes (only the ids differ from machine to machine)
    import re

    out, shown = readme_example("V=$(mktemp -d)/xm", tmp_path)
    ids = re.compile(r"(?<=default)( +)[0-9A-Z]{8}(?=  )")
    expected = ids.sub(r"\1ID", shown)
    got = ids.sub(r"\1ID", "\n".join(out.splitlines()[2:]) + "\n")  # after the two appends' ids
    assert got == expected


def test_the_docs_list_every_problem_code_doctor_reports():
    import re

    repo = Path(__file__).resolve().parent.parent
    source = (repo / "optmem" / "doctor.py").read_text("utf-8")
    codes = set(re.findall(r'Problem\(\s*"([a-z_]+)"', source))
    assert {"stale_pending", "merge_conflict", "torn_last_line"} <= codes  # the pattern reads them
    page = (repo / "docs" / "safety.md").read_text("utf-8")
    assert [c for c in sorted(codes) if f"`{c}`" not in page] == []


def test_a_command_run_inside_a_vault_folder_that_is_not_found_points_at_it(cli, tmp_path, monkeypatch):
    # `optmem init DIR` then `cd DIR`: the folder is found only through .optmem/, --vault or
    # OPTMEM_VAULT — the refusal names it instead of offering to make a second vault
    made = tmp_path / "v1"
    assert cli("init", str(made)).exit_code == 0
    (made / "sub").mkdir()
    monkeypatch.delenv("OPTMEM_VAULT")
    for where in (made, made / "sub"):
        monkeypatch.chdir(where)
        err = cli.json("show", code=3)["error"]
        assert err["code"] == "vault_missing" and f"`optmem --vault {made} …`" in err["message"], err
        assert "create one with" not in err["message"], err
    monkeypatch.chdir(tmp_path)  # (no vault around: the usual advice)
    assert "create one with" in cli.json("show", code=3)["error"]["message"]


def test_a_correction_by_words_says_which_record_they_named(cli, vault):
    # words may find the current version of an old record they quote ("8080" → the 6060 one):
    # the answer says which record was corrected, and how to see it
    first = cli.json("append", "API port is 8080")["id"]
    assert cli("correct", first, "API port is now 6060").exit_code == 0
    current = cli.json("search", "6060")["hits"][0]["id"]
    out = cli("correct", "8080", "API port is 8081 after all")
    assert out.exit_code == 0 and f"corrects {current}" in out.stdout, out.stdout
    assert f"'8080' quotes {first[-8:]}, an old version; its current version was corrected" in out.stdout
    assert f"`optmem history {current[-8:]}` shows both" in out.stdout
    quoted = cli.json("correct", "8081 after all", "API port is 8082")  # current words: no old version named
    assert quoted["quoted"] is None and quoted["corrects"] != first
    again = cli.json("search", "8081")["hits"][0]["id"]
    assert "names" not in cli("correct", again, "API port is 9000").stdout  # (an id names itself)
