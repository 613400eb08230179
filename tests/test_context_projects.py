"""`context` where records of several projects meet names each record's project (tenth stop,
item 5): two projects' deploy ports read as two contradictory current facts without it."""

from __future__ import annotations

import re

from conftest import mcp_session


def two_projects(cli) -> None:
    cli.json("append", "the deploy port is 8276", "--domain", "code", "--project", "zeta")
    cli.json("append", "the deploy port is 8080", "--domain", "code", "--project", "beta")


def test_context_with_a_query_names_each_records_project(cli, vault_path):
    two_projects(cli)
    text = cli("context", "--query", "deploy port").stdout
    assert re.search(r"code/zeta, id \w+\] the deploy port is 8276", text), text
    assert re.search(r"code/beta, id \w+\] the deploy port is 8080", text), text


def test_context_without_a_project_names_each_records_project(cli, vault_path):
    two_projects(cli)
    cli.json("append", "a note of no project", "--domain", "code")
    text = cli("context").stdout
    assert "code/zeta, id" in text and "code/beta, id" in text
    assert re.search(r"\[now, code, id \w+\] a note of no project", text), text


def test_one_projects_context_needs_no_project_on_each_line(cli, vault_path):
    two_projects(cli)
    text = cli("context", "-p", "zeta").stdout
    assert re.search(r"\[now, code, id \w+\] the deploy port is 8276", text), text
    assert "8080" not in text


def test_a_redline_of_a_project_says_which(cli, vault_path):
    cli.json(
        "append", "never force-push main", "--redline", "--origin", "user", "--domain", "code", "--project", "beta"
    )
    assert "[code/beta] never force-push main" in cli("context", "-p", "zeta").stdout


def test_an_open_conflict_says_its_project_where_projects_meet(cli, vault, vault_path, monkeypatch):
    (vault_path / "optmem.toml").write_text(
        '[lifecycle]\nauto_sweep = "off"\n[consolidation]\nconflict_window_days = 1\n', "utf-8"
    )
    for hour, port in (("09", "8276"), ("15", "8277")):
        monkeypatch.setenv("OPTMEM_NOW", f"2026-05-10T{hour}:00:00Z")
        cli.json("append", f"the deploy port is {port}", "-p", "zeta", "--key", "deploy.port")
    text = cli("context").stdout
    assert "deploy.port (project zeta): you were told" in text, text
    assert "(project zeta)" not in cli("context", "-p", "zeta").stdout


def test_the_mcp_context_tool_names_the_projects_too(vault_path, cli):
    two_projects(cli)

    async def script(s):
        return await s.call_tool("context", {"query": "deploy port"})

    text = mcp_session(vault_path, script).content[0].text
    assert "code/zeta, id" in text and "code/beta, id" in text
