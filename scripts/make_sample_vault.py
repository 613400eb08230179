"""Regenerate sample_vault/ through the real CLI: three agents, Chinese and English.

    python scripts/make_sample_vault.py

Every step runs `optmem` with OPTMEM_NOW set, so the story has a believable timeline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VAULT = ROOT / "sample_vault"


def om(*args: str, now: str, domain: str | None = None, stdin: str | None = None) -> dict:
    """Run optmem with --json at a given moment (and OPTMEM_DOMAIN), returning its output."""
    env = dict(os.environ, OPTMEM_VAULT=str(VAULT), OPTMEM_NOW=now)
    env.pop("OPTMEM_DOMAIN", None)
    if domain:
        env["OPTMEM_DOMAIN"] = domain
    res = subprocess.run([sys.executable, "-m", "optmem", *args, "--json"], capture_output=True,
                         text=True, env=env, input=stdin)
    if res.returncode not in (0, 1):
        raise SystemExit(f"optmem {' '.join(args)} failed: {res.stdout}{res.stderr}")
    return json.loads(res.stdout)


def main() -> None:
    if VAULT.exists():
        shutil.rmtree(VAULT)
    om("init", str(VAULT), now="2026-05-01T08:00:00Z")
    (VAULT / "optmem.toml").write_text(
        "# A small vault: short runs so the summary tree has something to show.\n"
        "# (The defaults are run = 64 records per level-1 node and a fan-out of 8.)\n"
        "[tree]\nrun = 4\nfanout = 2\n"
        "# A demo frozen in June 2026: no daily sweep on a write (run `optmem sweep` to see one); its\n"
        "# guess stays pending whatever the date (`doctor` notes it).\n"
        "[lifecycle]\nauto_sweep = \"off\"\n", "utf-8")

    # hot memory: the agent's notes, the user, one project block
    om("add", "用户的名字叫小明，在杭州做后端开发。", "--target", "user", now="2026-05-01T08:01:00Z")
    om("add", "小明喜欢喝咖啡，尤其是在早上。", "--target", "user", now="2026-05-01T08:02:00Z")
    om("add", "Prefers short answers with code first, explanation after.", "--target", "user",
       now="2026-05-01T08:03:00Z")
    om("replace", "喜欢喝咖啡", "喜欢喝拿铁", "--target", "user", now="2026-06-10T09:00:00Z")
    om("add", "Three agents share this vault: hermes runs workflows, openclaw writes, code writes code.",
       now="2026-05-01T08:05:00Z")
    om("add", "Run `optmem context --project webapp` at the start of every coding session.",
       now="2026-05-01T08:06:00Z")
    om("add", "webapp: FastAPI backend + Vue frontend; deploy with docker compose.", "--project", "webapp",
       now="2026-05-02T10:00:00Z")
    om("add", "blog: 中文技术博客，每周五发布。", "--project", "blog", now="2026-05-02T10:05:00Z")

    # cold memory: three agents
    def append(text: str, domain: str, now: str, *more: str, project: str | None = None) -> str:
        args = ["append", text, "--domain", domain, *more] + (["--project", project] if project else [])
        return om(*args, now=now)["id"]

    port = append("后端服务端口是 8080，前端通过 /api 代理过去。", "code", "2026-05-03T09:00:00Z",
                  "--key", "backend.port", project="webapp")
    append("Database is Postgres 16; migrations live in backend/migrations.", "code",
           "2026-05-03T09:10:00Z", "--tag", "db", project="webapp")
    append("生产环境的端口变更必须先在 staging 验证，再发公告。", "code", "2026-05-03T09:20:00Z",
           "--redline", "--origin", "user", project="webapp")
    append("Never put customer data or credentials into memory.", "hermes", "2026-05-01T08:10:00Z",
           "--redline", "--origin", "user")
    append("每天早上 7:30 汇总 GitHub 通知并发到飞书。", "hermes", "2026-05-04T07:30:00Z")
    append("Weekly report goes out Friday 17:00 to the team channel.", "hermes", "2026-05-07T08:00:00Z")
    append("小明住在杭州。", "hermes", "2026-05-08T10:00:00Z", "--key", "user.city")
    append("文章《记忆系统的三层结构》大纲已定：热记忆、冷日志、摘要树。", "openclaw", "2026-05-05T14:00:00Z",
           project="blog")
    append("Draft style: short paragraphs, one idea each, no emoji.", "openclaw", "2026-05-06T15:00:00Z",
           "--tier", "evidence", project="blog")
    append("本周五 staging 环境冻结，不要部署。", "code", "2026-05-14T09:00:00Z", "--ttl", "3d",
           project="webapp")
    typo = append("The blog publishes on Thursdays.", "openclaw", "2026-05-20T10:00:00Z", project="blog")
    om("forget", typo, "--reason", "wrong: it is Fridays (see the project block)", now="2026-05-20T10:05:00Z")

    # the port moves to 9090 (a correction), the user moves to Shanghai (a keyed fact)
    om("correct", port, "后端服务端口改成 9090 了，/api 代理同步修改。", "--evidence", "deploy/compose.yml",
       now="2026-06-02T11:00:00Z")
    append("小明搬到上海了。", "hermes", "2026-06-15T09:00:00Z", "--key", "user.city")
    append("The backend listens on port 9090 behind nginx.", "code", "2026-06-03T08:00:00Z",
           "--tier", "evidence", "--evidence", "nginx.conf", project="webapp")
    append("Chat: maybe try port 8081 for the debug server?", "code", "2026-06-04T08:00:00Z",
           "--tier", "chat", project="webapp")

    # a line typed by hand, the way the articles' user wrote them: no id, a [domain] prefix
    with open(VAULT / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"ts": "2026-06-20T21:00:00Z",
                             "text": "[openclaw] 下一篇写交接单：每次会话结束写 Done / Blocked / Next。"},
                            ensure_ascii=False) + "\n")
    # session ends: handoffs for two projects (the webapp one twice: history)
    om("handoff", "write", "--project", "webapp", "--done", "后端端口从 8080 改到 9090，compose 已更新",
       "--next", "更新 nginx 反向代理配置", "--blocked", "staging 的 DNS 还没切过去", "--source", "code-agent",
       now="2026-06-02T18:00:00Z", domain="code")
    om("handoff", "write", "--project", "webapp", "--done", "nginx now proxies /api to :9090",
       "--next", "announce the port change in #dev", "--next", "remove the 8080 firewall rule",
       "--source", "code-agent", now="2026-06-03T18:30:00Z", domain="code")
    om("handoff", "write", "--project", "blog", "--done", "《记忆系统的三层结构》初稿完成",
       "--next", "补充摘要树的配图", "--blocked", "等小明确认标题", "--source", "openclaw",
       now="2026-06-20T21:30:00Z", domain="openclaw")

    # the evaluation gate's starter query set (see docs/safety.md: "Keeping a vault healthy")
    queries = [
        {"query": "后端端口", "expect_text": "改成 9090"},
        {"query": "backend port", "expect_text": "9090"},
        {"query": "小明住在哪里", "expect_text": "上海"},
        {"query": "端口变更 staging", "expect_text": "必须先在 staging 验证"},
        {"query": "weekly report", "expect_text": "Friday 17:00"},
        {"query": "文章大纲", "expect_text": "三层结构", "domain": "openclaw"},
        {"query": "database migrations", "expect_text": "Postgres 16"},
        {"query": "GitHub 通知", "expect_text": "飞书"},
        {"query": "customer data", "expect_text": "Never put customer data"},
        {"query": "交接单", "expect_text": "Done / Blocked / Next"},
    ]
    (VAULT / "queries.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), "utf-8")

    lifecycle()
    # roll the log up into the summary tree
    om("compact", now="2026-06-21T00:00:00Z")
    print("sample vault written to", VAULT)


def lifecycle() -> None:
    """A cold record, a pending guess and a confirmed one (see docs/effective-view.md: "The lifecycle")."""
    om("append", "CI ran on Jenkins until January; it moved to GitHub Actions.", "--domain", "code",
       "--project", "webapp", now="2026-01-05T10:00:00Z")
    guess = om("append", "Readers seem to like a bilingual glossary at the end of each post.", "--domain",
               "openclaw", "--project", "blog", "--agent", "--session", "blog-s12", now="2026-06-05T10:00:00Z")
    om("confirm", guess["id"], now="2026-06-06T09:00:00Z")
    om("append", "The user may prefer dark-mode code screenshots in posts.", "--domain", "openclaw",
       "--project", "blog", "--agent", "--session", "blog-s14", now="2026-06-18T10:00:00Z")
    om("sweep", now="2026-06-12T00:00:00Z")  # cools the January note: unused for five months


if __name__ == "__main__":
    main()
