"""`import --from claude-code` keys (review 15, finding 2): a key says which section or file a
record is — never its place in the file, never a folder name two checkouts share — so a re-import
supersedes only what the same section of the same source said before; an older optmem's keys are
re-keyed by the section's heading, and the import names each record it supersedes."""

from __future__ import annotations

import json
import os
from pathlib import Path

V1 = "# 项目说明\n\n## 测试\n用 pytest -x 运行测试。\n\n## 部署\n用 docker compose 部署到 staging。\n"
V2 = V1.replace("## 测试", "## 代码风格\n用 ruff 格式化代码。\n\n## 测试")  # a section inserted above the others


def _write(path: Path, text: str, days_ago: int) -> None:
    import time

    path.write_text(text, "utf-8")
    when = time.time() - days_ago * 86400
    os.utime(path, (when, when))  # (a later edit: a later time)


def _current(cli, query: str) -> list[str]:
    return [h["text"] for h in cli.json("search", query, "--current", "--limit", "20")["hits"]]


def test_a_section_inserted_above_supersedes_no_other_section(cli, tmp_path):
    shop = tmp_path / "shop"
    shop.mkdir()
    _write(shop / "CLAUDE.md", V1, 3)
    assert cli.json("import", "--from", "claude-code", str(shop), "--origin", "user")["records"] == 2
    _write(shop / "CLAUDE.md", V2, 2)
    done = cli.json("import", "--from", "claude-code", str(shop), "--origin", "user")
    assert done["records"] == 1 and done["already"] == 2 and done["superseded"] == []
    assert _current(cli, "pytest") == ["测试: 用 pytest -x 运行测试。"]
    assert _current(cli, "staging") == ["部署: 用 docker compose 部署到 staging。"]
    assert _current(cli, "ruff") == ["代码风格: 用 ruff 格式化代码。"]
    ctx = cli("context", "-p", "shop")
    assert "pytest -x" in ctx.stdout and "docker compose" in ctx.stdout and "ruff" in ctx.stdout
    # an edit of one section supersedes that section only, and the import says which
    _write(shop / "CLAUDE.md", V2.replace("pytest -x", "pytest -x -n 2"), 1)
    done = cli.json("import", "--from", "claude-code", str(shop), "--origin", "user")
    [said] = done["superseded"]
    assert said["key"] == "claude-code:CLAUDE.md§测试" and len(said["supersedes"]) == 1
    assert _current(cli, "pytest") == ["测试: 用 pytest -x -n 2 运行测试。"]
    assert len(_current(cli, "staging")) == 1 and len(_current(cli, "ruff")) == 1
    human = cli("import", "--from", "claude-code", str(shop), "--origin", "user")
    assert human.exit_code == 0 and "already here" in human.stdout


def _claude_folder(root: Path, name: str, ran_in: str, testing: str) -> None:
    folder = root / "projects" / name
    (folder / "memory").mkdir(parents=True)
    line = {"type": "user", "cwd": ran_in, "message": {"role": "user", "content": "hi"}}
    (folder / "s.jsonl").write_text(json.dumps(line) + "\n", "utf-8")
    (folder / "memory" / "testing.md").write_text(f"---\nname: testing\ntype: feedback\n---\n{testing}\n", "utf-8")


def test_two_checkouts_of_one_folder_name_are_one_project_and_never_one_fact(cli, tmp_path):
    root = tmp_path / "dot-claude"
    _claude_folder(root, "-home-u-old-api", "/home/u/old/api", "Run the tests with nose.")
    _claude_folder(root, "-home-u-work-api", "/home/u/work/api", "Run the tests with pytest.")
    done = cli.json("import", "--from", "claude-code", str(root))
    assert done["records"] == 2 and done["superseded"] == []
    hits = cli.json("search", "run the tests", "-p", "api", "--current")["hits"]
    assert sorted(h["text"] for h in hits) == ["Run the tests with nose.", "Run the tests with pytest."]


def test_an_older_optmems_positional_keys_are_re_keyed_by_heading_never_by_place(cli, tmp_path):
    """A vault an older optmem imported V1 into: 测试 keyed `#top`, 部署 `#top-2`. V2 inserts a
    section above both: by place, 代码风格 would be `#top` and supersede 测试. By heading, each
    older record is superseded by its own section's, and nothing else."""
    then = {"OPTMEM_NOW": "2026-01-05T10:00:00Z"}  # (when the older optmem imported it)
    for text, key in (("测试: 用 pytest -x 运行测试。", "top"), ("部署: 用 docker compose 部署到 staging。", "top-2")):
        key = f"claude-code:CLAUDE.md#{key}"
        cli.json(
            "append",
            text,
            "-p",
            "shop",
            "--key",
            key,
            "--source",
            "claude-code",
            "--origin",
            "import:claude-code",
            env=then,
        )
    cli.json("append", "Deploy: by hand on Fridays.", "-p", "shop", "--key", "claude-code:CLAUDE.md#deploy", env=then)
    shop = tmp_path / "shop"
    shop.mkdir()
    _write(shop / "CLAUDE.md", V2, 1)
    done = cli.json("import", "--from", "claude-code", str(shop), "--origin", "user")
    by_key = {s["key"]: len(s["supersedes"]) for s in done["superseded"]}
    assert by_key == {"claude-code:CLAUDE.md§测试": 1, "claude-code:CLAUDE.md§部署": 1}
    assert _current(cli, "pytest") == ["测试: 用 pytest -x 运行测试。"]
    assert _current(cli, "staging") == ["部署: 用 docker compose 部署到 staging。"]
    assert _current(cli, "ruff") == ["代码风格: 用 ruff 格式化代码。"]
    assert _current(cli, "Fridays") == ["Deploy: by hand on Fridays."]  # (not the tool's: never touched)


def test_sections_of_one_name_under_other_parents_read_apart_in_their_one_record(cli, tmp_path):
    """Tester 15 #8: `# 前端 / ## 测试` and `# 后端 / ## 测试` were one record that read "测试: …
    测试: …", their parents dropped. They stay one record (a key never says where a section sits),
    each part opening with the headings it sits under; a heading used once reads as before."""
    shop = tmp_path / "shop"
    shop.mkdir()
    text = "# 前端\n\n## 测试\n前端测试用 vitest。\n\n# 后端\n\n## 测试\n后端测试用 pytest。\n\n## 部署\n用 docker。\n"
    _write(shop / "CLAUDE.md", text, 1)
    cli.json("import", "--from", "claude-code", str(shop), "--origin", "user")
    [tests] = _current(cli, "vitest")
    assert tests == "前端 › 测试: 前端测试用 vitest。\n\n后端 › 测试: 后端测试用 pytest。"
    assert _current(cli, "docker") == ["部署: 用 docker。"]
