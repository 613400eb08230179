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

    # cold memory: three domains
    notes = [
        ("code", "webapp", "2026-05-03T09:00:00Z", "后端服务端口是 8080，前端通过 /api 代理。"),
        ("code", "webapp", "2026-05-03T09:10:00Z", "Database is Postgres 16; migrations live in backend/migrations."),
        ("hermes", None, "2026-05-04T07:30:00Z", "每天早上 7:30 汇总 GitHub 通知并发到飞书。"),
        ("openclaw", "blog", "2026-05-05T14:00:00Z", "文章《记忆系统的三层结构》大纲已定：热记忆、冷日志、摘要树。"),
        ("openclaw", "blog", "2026-05-06T15:00:00Z", "Draft style: short paragraphs, one idea each, no emoji."),
        ("hermes", None, "2026-05-07T08:00:00Z", "Weekly report goes out Friday 17:00 to the team channel."),
    ]
    ids = {}
    for domain, project, now, text in notes:
        args = ["append", text, "--domain", domain] + (["--project", project] if project else [])
        ids[text] = om(*args, now=now)["id"]
    print("sample vault written to", VAULT)


if __name__ == "__main__":
    main()
