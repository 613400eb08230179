"""Deterministic synthetic vault data for the benchmarks (Chinese and English, three agents)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from optmem.record import new_id  # noqa: E402

ZH = (
    "端口 部署 数据库 缓存 用户 文章 大纲 发布 测试 接口 配置 日志 服务器 前端 后端 索引 "
    "搜索 记忆 会话 交接 错误 修复 需求 设计 评审 上线 回滚 监控 告警 性能 延迟 并发 "
    "小明 喜欢 拿铁 咖啡 杭州 上海 北京 周末 爬山 游泳 会议 周报 预算 合同"
).split()
EN = (
    "port deploy database cache user article outline release test api config log server "
    "frontend backend index search memory session handoff error fix requirement design review "
    "rollout rollback monitor alert latency throughput concurrency docker kubernetes redis "
    "postgres nginx webhook token budget meeting report draft publish schedule"
).split()
DOMAINS = ("hermes", "code", "openclaw")
PROJECTS = (None, "webapp", "blog", "infra")


def text_for(rng: random.Random) -> str:
    if rng.random() < 0.5:
        words = rng.sample(ZH, rng.randint(4, 9))
        return "".join(words) + f"，编号{rng.randint(1, 99999)}。"
    words = rng.sample(EN, rng.randint(5, 12))
    return " ".join(words).capitalize() + f" #{rng.randint(1, 99999)}."


SESSION_RUN = 12  # consecutive records of one conversation
START, STEP = 1_700_000_000.0, 40  # the first record's time, and seconds between records


def records(n: int, seed: int = 7, start: float = START):
    """n record dicts, one per ~40 s, with keys, corrections and redlines sprinkled in; every
    other run of SESSION_RUN records is one conversation (a `session`), as an agent's turns are."""
    rng = random.Random(seed)
    ids: list[str] = []
    for i in range(n):
        ts = start + i * STEP
        rid = new_id(ts)
        rec = {
            "v": 1,
            "id": rid,
            "ts": __import__("time").strftime("%Y-%m-%dT%H:%M:%SZ", __import__("time").gmtime(ts)),
            "domain": rng.choice(DOMAINS),
            "kind": "note",
            "tier": "normal",
            "text": text_for(rng),
        }
        project = rng.choice(PROJECTS)
        if project:
            rec["project"] = project
        if (i // SESSION_RUN) % 2 == 0:
            rec["session"] = f"conv-{i // SESSION_RUN}"
        r = rng.random()
        if r < 0.01 and ids:
            rec["kind"] = "correction"
            rec["corrects"] = [rng.choice(ids[-500:])]
            rec["text"] = "〔更正〕" + rec["text"]
        elif r < 0.03:
            rec["key"] = f"fact.{rng.randint(1, 2000)}"
        elif r < 0.031:
            rec["tier"] = "redline"
        ids.append(rid)
        yield rec


def write_log(path: Path, n: int, seed: int = 7) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records(n, seed):
            fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
