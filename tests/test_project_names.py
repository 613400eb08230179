"""Project names as users meet them: folders named in any script are projects of their own
(tenth stop, item 1: every repository named in Chinese used to be the project `project`, and one
repository's handoff reached the other's sessions)."""

from __future__ import annotations

import json
import unicodedata

import pytest
from conftest import git, run_optmem

from optmem.integrations import hermes
from optmem.vault import project_name


def test_a_folder_name_keeps_its_letters_in_every_script():
    assert project_name("前端") == "前端" and project_name("后端") == "后端"
    assert project_name("repo 项目") == "repo-项目"
    assert project_name("café") == "café"
    assert project_name("हिन्दी") == "हिन्दी"  # vowel signs are marks, not separators
    assert project_name("my app") == "my-app" and project_name("shop-api") == "shop-api"  # ASCII as before
    # a folder listed in decomposed form (macOS) is the same project as the name typed
    assert project_name(unicodedata.normalize("NFD", "café")) == "café"


def test_folders_with_no_letter_get_distinct_names_not_one_shared_project():
    names = {project_name(f) for f in ("🚀", "🔥", "!!!", "★")}
    assert len(names) == 4 and all(n.startswith("project-") for n in names)
    assert project_name("🚀") == project_name("🚀")  # stable


@pytest.mark.parametrize("name", ["前端", "café", "repo-项目", "हिन्दी", "ok"])
def test_a_name_in_any_script_is_a_name_everywhere(cli, vault_path, name):
    assert cli.json("append", "the deploy port is 8276", "--project", name)["ok"]
    assert cli.json("handoff", "write", "-p", name, "--next", "write tests")["ok"]
    assert (vault_path / "projects" / name / "HANDOFF.md").is_file()
    hits = cli.json("search", "deploy port", "--project", name)["hits"]
    assert [h["project"] for h in hits] == [name]


@pytest.mark.parametrize(
    "bad", ["a b", "前端/x", "..", "🚀", "x\u202ey", "a\u200db", "\u0301x", "前端\ufe0f", "x\u3164y", "x" * 65]
)
def test_what_could_confuse_a_path_or_a_reader_is_still_refused(cli, vault_path, bad):
    out = cli.json("append", "a note", "--project", bad, code=2)["error"]
    assert out["code"] == "invalid_name", out


def test_a_decomposed_name_is_refused_with_the_reason(cli):
    out = cli.json("append", "a note", "--project", unicodedata.normalize("NFD", "café"), code=2)["error"]
    assert out["code"] == "invalid_name" and "NFC" in out["message"], out


@pytest.mark.long
def test_commits_in_two_repositories_named_in_chinese_are_two_projects(tmp_path, vault_path):
    for name in ("前端", "后端"):
        repo = tmp_path / name
        repo.mkdir()
        git(repo, "init", "-q")
        assert run_optmem("hooks", "install", "--repo", str(repo)).returncode == 0
        (repo / "f").write_text("a")
        git(repo, "add", "f")
        git(repo, "commit", "-qm", f"commit in {name} 仓库")
    res = run_optmem("search", "仓库", "--json")
    hits = json.loads(res.stdout)["hits"]
    assert sorted((h["project"], h["text"]) for h in hits) == [
        ("前端", "commit in 前端 仓库"),
        ("后端", "commit in 后端 仓库"),
    ]


@pytest.mark.long
def test_a_claude_code_session_in_one_repository_never_gets_the_others_handoff(tmp_path, vault_path):
    repos = {}
    for name in ("前端", "后端"):
        repos[name] = tmp_path / name
        repos[name].mkdir()
        git(repos[name], "init", "-q")
    assert run_optmem("init").returncode == 0
    assert run_optmem("handoff", "write", "-p", "前端", "--next", "ship the login page").returncode == 0
    start = {"hook_event_name": "SessionStart", "session_id": "s", "cwd": str(repos["后端"]), "source": "startup"}
    res = run_optmem("hook", "claude-code", "--json", input=json.dumps(start))
    assert json.loads(res.stdout)["project"] == "后端"
    assert "ship the login page" not in res.stdout
    start["cwd"] = str(repos["前端"])
    res = run_optmem("hook", "claude-code", "--json", input=json.dumps(start))
    assert json.loads(res.stdout)["project"] == "前端" and "ship the login page" in res.stdout


def test_hermes_names_a_terminal_session_by_its_folder_in_any_script(tmp_path, monkeypatch):
    for folder, project in (("repo 项目", "repo-项目"), ("café", "café")):
        repo = tmp_path / folder
        repo.mkdir()
        monkeypatch.setenv("TERMINAL_CWD", str(repo))
        assert hermes.session_project({"platform": "cli"}) == project


def test_a_name_too_long_for_a_folder_name_is_refused_by_its_bytes(cli, vault):
    wide = "\U00020000" * 64  # 64 characters, 256 bytes: over a file system's 255
    err = cli.json("handoff", "write", "-p", wide, "--done", "x", code=2)["error"]
    assert err["code"] == "invalid_name" and "bytes" in err["message"], err
    ok = "\U00020000" * 50  # 200 bytes
    assert cli.json("handoff", "write", "-p", ok, "--done", "x")["ok"]
    assert cli.json("append", "a note", "-p", "前" * 64)["ok"]  # 64 Chinese characters: 192 bytes


def test_a_folder_name_too_long_in_bytes_is_cut_to_a_name():
    name = project_name("\U00020000" * 64)
    assert name == "\U00020000" * 50 and len(name.encode()) <= 200


def test_a_hand_typed_domain_prefix_and_an_import_origin_follow_the_one_name_grammar(cli, vault, vault_path):
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write(
            json.dumps({"ts": "2026-11-01T10:00:00Z", "text": "[前端] 用 pnpm 安装依赖"}, ensure_ascii=False) + "\n"
        )
        fh.write(json.dumps({"ts": "2026-11-01T10:00:01Z", "text": "[a/b] not a domain"}) + "\n")
    hits = cli.json("search", "pnpm", "-d", "前端")["hits"]
    assert [h["domain"] for h in hits] == ["前端"], hits
    assert cli.json("search", "domain", "-d", "default")["hits"]  # '[a/b]' names no domain
    got = cli.json("append", "用 pnpm", "-p", "前端", "--origin", "import:前端工具")
    assert got["ok"]
    err = cli.json("append", "x", "--origin", "import:a b", code=2)["error"]
    assert err["code"] == "usage", err
