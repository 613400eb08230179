"""`optmem import --from` on the neighbours' real formats (issue 45 §1): Claude Code's auto memory
and CLAUDE.md files, Codex's `~/.codex/memories`, Mem0's exports; input in another tool's format
refused; an export carries the recall history. The sample files are in tests/data/import/ (its
README names where each shape was read)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "import"
CLAUDE = DATA / "claude-code" / "dot-claude"
CODEX = DATA / "codex" / "memories"
MEM0 = DATA / "mem0"


def records(cli) -> list[dict]:
    """Every record of the vault, as `export` writes them."""
    out = cli("export")
    assert out.exit_code == 0, out.stderr
    return [x["record"] for x in map(json.loads, out.stdout.splitlines()) if "record" in x]


def snapshot(vault: Path) -> dict[str, bytes]:
    """Every file of the vault but its cache, with what it holds."""
    return {
        str(p.relative_to(vault)): p.read_bytes() for p in vault.rglob("*") if p.is_file() and ".cache" not in p.parts
    }


def status(cli, rid: str) -> str:
    return cli.json("get", rid)["record"]["status"]


# -- Claude Code --------------------------------------------------------------------------------
@pytest.mark.long
def test_claude_code_keeps_each_project_reads_both_front_matter_shapes_and_warns_of_a_yaml_slip(cli):
    done = cli.json("import", "--from", "claude-code", str(CLAUDE))
    assert done["bad"] == []
    recs = records(cli)
    assert done["records"] == len(recs) == 9
    testing = {r["project"]: r for r in recs if r.get("key", "").endswith("/feedback_testing")}
    # the same file name in two projects: two records, each its project's, neither superseding the other
    assert set(testing) == {"webapp", "home-ana-src-billing-api"}  # (webapp: read from its transcript's cwd)
    assert all(status(cli, r["id"]) == "current" for r in testing.values())
    assert "real database" in testing["webapp"]["text"] and "SQLite" in testing["home-ana-src-billing-api"]["text"]
    # the nested shape (`metadata: type:`, as Claude Code writes it now) and the top-level one
    assert testing["webapp"]["tags"] == ["feedback"]
    assert testing["webapp"]["ts"] == "2026-03-02T09:14:05Z"  # metadata.modified, not the file's mtime
    role = next(r for r in recs if r.get("key") == "claude-code:-home-ana-src-webapp/user_role")
    assert role["tags"] == ["user"] and role["project"] == "webapp"
    # a YAML slip: the body goes in, and a warning names the file and the line
    commits = [r for r in recs if r.get("key", "").endswith("/feedback_commits")]
    assert len(commits) == 1 and "imperative mood" in commits[0]["text"]
    assert any("feedback_commits.md" in w and "line 3" in w for w in done["warnings"])
    human = cli("import", "--from", "claude-code", str(CLAUDE))
    assert human.exit_code == 0 and "feedback_commits.md" in human.stderr and "line 3" in human.stderr
    # ~/.claude/CLAUDE.md is no project's; a project's CLAUDE.md is its folder's
    mine = [r for r in recs if r.get("key") == "claude-code:CLAUDE.md§testing"]
    assert [r.get("project") for r in mine] == [None]
    done = cli.json("import", "--from", "claude-code", str(DATA / "claude-code" / "webapp" / "CLAUDE.md"))
    assert done["records"] == 2
    both = [r for r in records(cli) if r.get("key") == "claude-code:CLAUDE.md§testing"]
    assert sorted(str(r.get("project")) for r in both) == ["None", "webapp"]
    assert all(status(cli, r["id"]) == "current" for r in both)


def test_an_edited_claude_code_topic_file_supersedes_its_own_project_only(cli, tmp_path):
    root = tmp_path / "dot-claude"
    shutil.copytree(CLAUDE, root)
    cli.json("import", "--from", "claude-code", str(root))
    for project in ("-home-ana-src-webapp", "-home-ana-src-billing-api"):
        topic = root / "projects" / project / "memory" / "feedback_testing.md"
        topic.write_text(topic.read_text("utf-8").replace("**Why:**", "(Still true.)\n\n**Why:**"), "utf-8")
    webapp = root / "projects" / "-home-ana-src-webapp" / "memory"
    assert cli.json("import", "--from", "claude-code", str(webapp))["records"] == 1  # one memory folder
    testing = [r for r in records(cli) if r.get("key", "").endswith("/feedback_testing")]
    by = {(r.get("project"), "Still true" in r["text"]): status(cli, r["id"]) for r in testing}
    assert by == {
        ("webapp", False): "superseded",
        ("webapp", True): "current",
        ("home-ana-src-billing-api", False): "current",
    }


# -- Codex --------------------------------------------------------------------------------------
@pytest.mark.long
def test_codex_memories_become_statements_dated_by_their_thread_with_headings_as_context(cli):
    done = cli.json("import", "--from", "codex", str(CODEX))
    assert done["bad"] == []
    recs = records(cli)
    texts = [r["text"] for r in recs]
    assert done["records"] == len(recs) == 13, texts
    labels = ("v1", "Key steps", "Reusable knowledge:", "Preference signals:", "rollout_summary_files", "scope:")
    assert not [t for t in texts if any(t.startswith(x) or t.endswith(x) for x in labels)]
    assert not [t for t in texts if "cargo dist, release, changelog" in t]  # a keywords line
    assert not [t for t in texts if "rollout_summaries/" in t or "rollout_path" in t or "Memory context" in t]
    assert not [t for t in texts if "zsh -xv" in t or "git push origin" in t]  # key steps, references
    # a thread's statements are dated by its updated_at, and its cwd names the project when it can
    prompt = next(r for r in recs if "git diff --quiet" in r["text"])
    assert prompt["ts"] == "2026-10-02T08:31:12Z" and prompt.get("project") is None  # cwd: the home folder
    assert "reusable-knowledge" in prompt["tags"] and "raw-memories" in prompt["tags"]
    tag = next(r for r in recs if "no tag found" in r["text"] and "raw-memories" in r["tags"])
    assert tag["ts"] == "2026-11-20T10:12:03Z" and tag["project"] == "tally"
    assert tag["text"].startswith("Cut the 0.9.0 release: ")  # the task it came from, as context
    handbook = [r for r in recs if "memory" in r["tags"]]
    assert len(handbook) == 3 and {r["project"] for r in handbook} == {"tally"}
    assert {r["ts"] for r in handbook} == {"2026-11-20T10:12:03Z"}  # its rollout's updated_at
    assert not [r for r in handbook if "[Task 1]" in r["text"]]
    summary = [r for r in recs if "memory-summary" in r["tags"]]
    assert {t for r in summary for t in r["tags"]} >= {"user-profile", "user-preferences", "general-tips"}
    assert len(summary) == 4 and not [r for r in summary if "desc:" in r["text"] or "learnings:" in r["text"]]


# -- Mem0 ---------------------------------------------------------------------------------------
def test_a_folder_of_mem0_exports_maps_every_field_and_reports_what_it_did_not(cli):
    done = cli.json("import", "--from", "mem0", str(MEM0))
    assert done["records"] == 5
    assert [(b["file"], b["line"]) for b in done["bad"]] == [("platform-v1-list.json", 2)]
    recs = {r["mem0_id"]: r for r in records(cli)}
    hiking = recs["5b0e3f0c-2b6d-4a8e-9a51-0f2c7d3e9b14"]
    assert hiking["domain"] == "travel-planner" and hiking["tags"] == ["hobbies"]  # agent_id, categories
    assert hiking["session"] == "trip-2026-06" and hiking["user_id"] == "alice"  # run_id, user_id
    assert hiking["ts"] == "2026-06-03T17:30:00Z" and hiking["created_at"] == "2026-06-01T15:00:00Z"
    assert hiking["metadata"] == {"source_app": "travel-bot"}
    job = recs["f4cbdb08-7062-4f3e-8eb2-9f5c80dfe64c"]
    assert job["project"] == "careers" and job["tags"] == ["professional_details"]  # app_id
    assert job["domain"] == "default" and job["metadata"] == {"type": "professional"}
    trip = recs["a2b8c3d4-5e6f-4a8b-9c0d-1e2f3a4b5c6d"]
    assert trip["session"] == "trip-2026-09" and trip["expires"] == "2026-09-18T00:00:00Z"
    assert recs["9c2d7e41-6f1a-4b3c-8d5e-2a9b0c1d3e4f"]["ts"] == "2026-05-20T12:00:00Z"  # created_at
    assert done["unmapped"] == {
        "hash": 2,
        "lifecycle_state": 1,
        "role": 1,
        "structured_attributes": 3,
        "synthesized": 2,
    }
    human = cli("import", "--from", "mem0", str(MEM0))
    assert human.exit_code == 0 and "structured_attributes" in human.stderr


# -- wrong input --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "path", "says"),
    [
        ("hermes", CODEX, "§"),
        ("codex", DATA / "hermes", "v1"),
        ("claude-code", CODEX, "front matter"),
        ("mem0", CODEX, "JSON"),
        ("codex", CLAUDE / "projects" / "-home-ana-src-webapp" / "memory", "Task Group"),
    ],
)
def test_files_in_another_format_are_refused_with_what_was_expected_and_nothing_is_written(
    cli, vault_path, source, path, says
):
    cli.json("init")
    before = snapshot(vault_path)
    err = cli.json("import", "--from", source, str(path), code=2)["error"]
    assert err["code"] == "wrong_format" and err["expected"] and says in err["message"]
    assert "nothing was imported" in err["message"]
    assert snapshot(vault_path) == before and records(cli) == []


def test_hermes_refusal_names_the_tool_the_files_look_like(cli):
    err = cli.json("import", "--from", "hermes", str(CODEX), code=2)["error"]
    assert err["looks_like"] == "codex" and "--from codex" in err["message"]


def test_hermes_takes_only_its_own_two_files(cli, vault_path, tmp_path):
    """A Mem0 export or a text file given to --from hermes was one hot entry holding the whole file."""
    cli.json("init")
    notes = tmp_path / "README.txt"
    notes.write_text("just some notes\nline two\n", "utf-8")
    exported = tmp_path / "export.json"
    exported.write_text(json.dumps({"results": [{"id": "m1", "memory": "Prefers tea"}]}), "utf-8")
    before = snapshot(vault_path)
    for path, seen in ((notes, None), (exported, "mem0")):
        err = cli.json("import", "--from", "hermes", str(path), code=2)["error"]
        assert err["code"] == "wrong_format" and "neither MEMORY.md nor USER.md" in err["message"]
        assert err.get("looks_like") == seen
    assert snapshot(vault_path) == before


# -- the recall history -------------------------------------------------------------------------
@pytest.mark.long
def test_an_export_carries_the_recall_history_so_a_moved_vault_keeps_its_heat(cli, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    used = cli.json("--vault", str(first), "append", "the staging port is 8081")["id"]
    cli.json("--vault", str(first), "append", "deploys go out on Thursday")
    cli.json("--vault", str(first), "touch", used)
    recalled = cli.json("--vault", str(first), "get", used)["record"]["life"]["recalled"]
    assert recalled is not None
    dump = cli("--vault", str(first), "export").stdout
    assert any("access" in json.loads(x) for x in dump.splitlines())
    (tmp_path / "dump.jsonl").write_text(dump, "utf-8")
    cli.json("--vault", str(second), "import", "--origin", "user", str(tmp_path / "dump.jsonl"))
    assert cli.json("--vault", str(second), "get", used)["record"]["life"]["recalled"] == recalled
    assert cli("--vault", str(second), "export").stdout == dump  # the import's own marks are not exported
    again = cli.json("--vault", str(second), "import", "--origin", "user", str(tmp_path / "dump.jsonl"))
    assert again["records"] == 0 and cli("--vault", str(second), "export").stdout == dump


@pytest.mark.parametrize(
    ("path", "count", "projects"),
    [
        (CLAUDE / "projects", 7, {"webapp", "home-ana-src-billing-api"}),
        (CLAUDE / "projects" / "-home-ana-src-billing-api", 1, {"home-ana-src-billing-api"}),
        (CLAUDE / "projects" / "-home-ana-src-webapp" / "memory" / "user_role.md", 1, {"webapp"}),
    ],
)
def test_claude_code_takes_any_folder_of_its_tree(cli, path, count, projects):
    assert cli.json("import", "--from", "claude-code", str(path))["records"] == count
    assert {r.get("project") for r in records(cli)} == projects


def test_a_checkouts_claude_md_files_are_its_projects(cli, tmp_path):
    shop = tmp_path / "shop"
    (shop / ".claude").mkdir(parents=True)
    (shop / ".claude" / "CLAUDE.md").write_text("# Build\n\n- `make` builds it.\n", "utf-8")
    (shop / "CLAUDE.local.md").write_text("My local port is 3000.\n\n```\n# not a heading\n```\n", "utf-8")
    (shop / "README.md").write_text("# Shop\n\nNot a memory.\n", "utf-8")
    assert cli.json("import", "--from", "claude-code", str(shop))["records"] == 2
    got = {r["key"]: r for r in records(cli)}
    assert set(got) == {"claude-code:.claude/CLAUDE.md§build", "claude-code:CLAUDE.local.md§"}
    assert {r["project"] for r in got.values()} == {"shop"} and "# not a heading" in got[
        "claude-code:CLAUDE.local.md§"
    ]["text"]


@pytest.mark.parametrize(
    ("cwd", "project"),
    [
        ("/home/ana/src/tally", "tally"),
        ("/Users/ana/work/My App", "My-App"),
        ("/Users/ana", None),
        ("/home/ana/src", None),
        ("/tmp/scratch", None),
        ("/", None),
        ("/root", None),
        ("unknown", None),
        ("src/tally", None),
    ],
)
def test_a_codex_cwd_is_a_project_only_when_it_names_one(cwd, project):
    from optmem.neighbours import codex_project

    assert codex_project(cwd, {}) == project


@pytest.mark.parametrize(("name", "text"), [("notes.json", '{"foo": 1}'), ("broken.json", "{not json")])
def test_a_json_file_that_is_no_mem0_export_is_refused(cli, tmp_path, name, text):
    (tmp_path / name).write_text(text, "utf-8")
    err = cli.json("import", "--from", "mem0", str(tmp_path / name), code=2)["error"]
    assert err["code"] == "wrong_format" and "get_all" in err["message"]


def test_a_plain_line_after_an_index_link_is_a_record_of_its_own(cli, tmp_path):
    """MEMORY.md's `- [Deploy](deploy.md)` then a line at the margin: the line was joined to the
    link bullet and dropped with it, silently."""
    memory = tmp_path / ".claude" / "projects" / "-home-ana-src-app" / "memory"
    memory.mkdir(parents=True)
    (memory / "deploy.md").write_text(
        "---\nname: deploy\ndescription: how we deploy\ntype: project\n---\nDeploys go out on Thursdays.\n", "utf-8"
    )
    (memory / "MEMORY.md").write_text("- [Deploy](deploy.md) — how we deploy\nThe user likes short answers.\n", "utf-8")
    done = cli.json("import", "--from", "claude-code", str(memory))
    texts = [r["text"] for r in records(cli)]
    assert done["records"] == 2 and any("short answers" in t for t in texts) and any("Thursdays" in t for t in texts)


# -- dates ahead of the clock -----------------------------------------------------------------
def test_every_import_path_refuses_a_date_in_the_future_as_the_export_import_does(cli, tmp_path):
    """A neighbour's memory dated years ahead would stay the newest value of its fact, every later
    write losing to it (tester 14 #2): the same `future_time` refusal as an export's line."""
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(
        json.dumps(
            [
                {"id": "k1", "memory": "Dentist is Dr. Lee", "user_id": "u", "updated_at": "2099-06-01T00:00:00Z"},
                {"id": "k2", "memory": "Dentist is Dr. Kim", "user_id": "u", "updated_at": "2026-12-06T00:00:00Z"},
            ]
        ),
        encoding="utf-8",
    )
    done = cli.json("import", "--from", "mem0", str(mem0))
    assert done["records"] == 1 and done["partial"] is True
    [bad] = done["bad"]
    assert bad["code"] == "future_time" and "2099-06-01" in bad["message"] and bad["file"] == "mem0.json"
    assert [r["text"] for r in records(cli)] == ["Dentist is Dr. Kim"]
    topic = tmp_path / "claude" / "memory" / "port.md"
    topic.parent.mkdir(parents=True)
    topic.write_text(
        "---\nname: port\ndescription: port\nmetadata:\n  type: project\n  modified: 2099-01-01T00:00:00Z\n---\n"
        "The port is 1111\n",
        encoding="utf-8",
    )
    err = cli.json("import", "--from", "claude-code", str(tmp_path / "claude"), code=1)["error"]
    assert err["code"] == "nothing_imported" and "2099-01-01" in err["message"]
    assert not [r for r in records(cli) if "1111" in r["text"]]
    # the export's line: refused as it always was, with the same words
    header = {"format": "optmem-export", "version": 1, "records": 1}
    line = {"record": {"v": 1, "id": "01ZZZZZZZZZZZZZZZZZZZZZZZZ", "ts": "2099-01-01T00:00:00Z", "text": "port 2222"}}
    (tmp_path / "fut.jsonl").write_text(f"{json.dumps(header)}\n{json.dumps(line)}\n", encoding="utf-8")
    out = cli("import", str(tmp_path / "fut.jsonl"), "--json")
    assert "future_time" in out.stdout and "more than a day ahead of this clock" in out.stdout
