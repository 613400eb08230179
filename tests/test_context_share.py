"""`context` keeps hot memory ahead of open conflicts and across-domain notes (tester17, finding 1):
docs/sessions.md's order of cutting is records, facts, handoff, project block, USER.md, MEMORY.md,
redlines last. Open conflicts keep a share of the budget ahead of hot memory (`context.SHARE`),
the rest of them and the keys another domain holds otherwise go before the handoff, and the
ones cut are named on one line; a conflict of another project names that project."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, put

from optmem.vault import Vault


def _export(path: Path, records: list[dict[str, object]]) -> Path:
    """An export file (`optmem export`'s shape) holding `records`."""
    head = {"format": "optmem-export", "version": 1, "records": len(records), "hot_files": 0, "access": 0}
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in [head, *({"record": r} for r in records)]))
    return path


def _keyed_conflicts(n: int, project: str | None = None) -> list[dict[str, object]]:
    """`n` keys with two values neither of which saw the other (`after: []`): how two machines'
    values of one key arrive — open conflicts."""
    out: list[dict[str, object]] = []
    for i in range(n):
        for day, last in ((1, 1), (2, 2)):
            out.append(
                {
                    "v": 1,
                    "id": f"01M9000000000000000000{2 * i + day:04d}",
                    "ts": f"2026-12-0{day}T10:00:00Z",
                    "domain": "default",
                    "kind": "note",
                    "tier": "normal",
                    "origin": "user",
                    "key": f"host{i}.addr",
                    "text": f"主机 host{i} 的地址是 10.0.{i}.{last}，负责处理第 {i} 组服务的流量转发",
                    "after": [],
                    **({"project": project} if project else {}),
                }
            )
    return out


def _context(cli: Cli, *args: str) -> dict[str, Any]:
    out = cli.json("context", *args)
    assert out["chars"] <= out["budget"]
    return out


def test_open_conflicts_never_push_the_newest_hot_memory_out(cli: Cli, vault: Vault, tmp_path: Path) -> None:
    cli.json("import", str(_export(tmp_path / "x.jsonl", _keyed_conflicts(8))))
    assert cli.json("conflicts")["count"] == 8
    for i in range(1, 37):
        cli.json("add", f"第{i}条长期记忆：用户在项目里偏好使用 TypeScript 严格模式并要求每个函数都写注释说明{i}")
    assert cli.json("show")["files"][0]["usage"]["percent"] >= 80

    out = _context(cli)
    text = str(out["text"])
    assert "memory" not in out["omitted"]  # every entry of MEMORY.md, the newest too
    assert "第36条长期记忆" in text and "第1条长期记忆" in text
    # the conflicts kept what is left after the hot files; those cut are named on one line
    shown = [s for s in out["sections"] if s["name"] == "conflicts"][0]
    assert 0 < out["omitted"]["conflicts"] < 8 and shown["items"]
    said = [k for k in (f"host{i}.addr" for i in range(8)) if any(k in i for i in shown["items"])]
    named = shown["summary"]
    assert f"{out['omitted']['conflicts']} more open conflict(s)" in named
    assert all((k in named) != (k in said) for k in (f"host{i}.addr" for i in range(8)))  # each said or named
    assert "optmem conflicts" in named and named in text


def test_hot_memory_outranks_conflicts_beyond_their_share(cli: Cli, vault: Vault, tmp_path: Path) -> None:
    """A budget too small for both: the conflicts keep their share (a fifth of the budget), hot
    memory the rest; a hot file's cut entries are named by their file."""
    cli.json("import", str(_export(tmp_path / "x.jsonl", _keyed_conflicts(8))))
    for i in range(1, 37):
        cli.json("add", f"第{i}条长期记忆：用户在项目里偏好使用 TypeScript 严格模式并要求每个函数都写注释说明{i}")
    out = _context(cli, "--budget", "2000")
    conflicts = [s for s in out["sections"] if s["name"] == "conflicts"][0]
    lines = ["## " + conflicts["title"], *conflicts["items"], conflicts["summary"]]
    share = len("\n".join(lines))
    assert share <= 2000 // 5 and conflicts["summary"]  # within its share: none of its values, one line naming them
    assert out["omitted"]["memory"] > 0  # hot memory is cut only for what does not fit beside that line
    assert f"the last {out['omitted']['memory']} MEMORY.md entries" in str(out["text"])


def test_across_domain_notes_and_other_projects_conflicts_leave_hot_memory_and_handoff_in(
    cli: Cli, vault: Vault, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The year-long vault's shape: many keys with another value in another domain, and a record
    of no project corrected two ways in another project. Under `-p webapp` the hot files, the
    project block and the handoff come whole; the across-domain keys are named on one line; the
    other project's conflict names its project."""
    monkeypatch.setenv("OPTMEM_NOW", "2026-11-20T10:00:00Z")
    for i in range(40):
        for domain, value in (("code", 1000 + i), ("hermes", 2000 + i)):
            put(vault, f"服务 svc{i}.port 的端口是 {value}", key=f"svc{i}.port", domain=domain, project="webapp")
    target = put(vault, "把模块103拆成了更小的文件").id
    records = [
        {
            "v": 1,
            "id": f"01M9100000000000000000000{n}",
            "ts": f"2026-12-0{n}T10:00:00Z",
            "domain": domain,
            "kind": "correction",
            "tier": "normal",
            "origin": "agent",
            "project": "数据平台",
            "corrects": [target],
            "text": text,
            "after": [target],
            "decided_after": [],
        }
        for n, domain, text in (
            (1, "code", "〔更正〕第112次部署使用了蓝绿发布"),
            (2, "default", "〔更正〕压测711显示 p95 延迟为 135 毫秒"),
        )
    ]
    monkeypatch.setenv("OPTMEM_NOW", "2026-12-07T10:00:00Z")
    with (vault.root / "LOG.jsonl").open("a", encoding="utf-8") as log:  # (as `git pull` brings them)
        log.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    assert cli.json("conflicts")["count"] == 1
    cli.json("add", "deploys go through staging first")
    cli.json("add", "用户偏好中文回答", "--target", "user")
    cli.json("add", "webapp 用 FastAPI", "--project", "webapp")
    cli.json("handoff", "write", "--project", "webapp", "--next", "修复登录 bug", "--done", "升级 FastAPI")

    for budget in ("4000", "12000"):
        out = _context(cli, "-p", "webapp", "--budget", budget)
        text = str(out["text"])
        for part in ("memory", "user", "project", "handoff"):
            assert part not in out["omitted"], (budget, out["omitted"])
        assert "修复登录 bug" in text and "webapp 用 FastAPI" in text and "用户偏好中文回答" in text
        split = [s for s in out["sections"] if s["name"] == "across_domains"][0]
        assert out["omitted"]["across_domains"] > 0 and "svc" in split["summary"]
        line = next(i for i in text.splitlines() if target[-8:] in i and "corrected two ways" in i)
        assert "(project 数据平台)" in line


def test_a_long_redline_does_not_push_out_a_shorter_one_that_fits_and_the_cut_ones_are_named(
    cli: Cli, vault_path: Path
) -> None:
    """tester19's F5: redlines are kept in their order, one that does not fit is skipped (not every
    one after it), and the line saying what was left out names the redlines it cut by id."""
    short = cli.json("append", "redline: never deploy on friday", "--redline", "--origin", "user")["id"]
    long = cli.json("append", "生产发布必须双人复核，" * 30, "--redline", "--origin", "user")["id"]
    block = cli.json("context", "--budget", "400")
    text = block["context"] if "context" in block else block["text"]
    assert "never deploy on friday" in text and "双人复核" not in text
    assert block["omitted"]["redlines"] == 1
    assert f"1 redlines (id {long[-8:]})" in text and short[-8:] in text
    full = cli.json("context", "--budget", "2000")
    both = full["context"] if "context" in full else full["text"]
    assert "never deploy on friday" in both and "双人复核" in both and "left out" not in both
