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


def _zipf(words: list[str]) -> tuple[list[str], list[float]]:
    """`words` and the cumulative weights that draw the word of rank r about 1/r as often as the first."""
    total, cum = 0.0, []
    for r in range(len(words)):
        total += 1 / (r + 1)
        cum.append(total)
    return words, cum


def identifier(i: int) -> str:
    """The i-th identifier of the corpus: a ticket, a host, a version, a function or a file name."""
    from vocab import FUNCS, HOSTS, ID_PREFIXES, OBJECTS

    kind = i % 5
    if kind == 0:
        return f"{ID_PREFIXES[i % len(ID_PREFIXES)]}-{1000 + i * 7 % 9000}"
    if kind == 1:
        return f"{HOSTS[i % len(HOSTS)]}-prod-{i % 97:02d}"
    if kind == 2:
        return f"v{i % 7}.{i % 13}.{i % 29}"
    if kind == 3:
        return f"{FUNCS[i % len(FUNCS)]}_{OBJECTS[(i // 10) % len(OBJECTS)]}_{i % 41}"
    return f"{OBJECTS[i % len(OBJECTS)]}_{i % 83}.yaml"


IDENTIFIERS = 3000  # distinct identifiers in a corpus (drawn with Zipf weights)


def _lists():  # type: ignore[no-untyped-def]
    import vocab

    return {
        "en_f": _zipf(vocab.EN_FUNCTION),
        "en_c": _zipf(vocab.EN_CONTENT),
        "en_o": _zipf(vocab.EN_OPENERS),
        "names": _zipf(vocab.NAMES),
        "zh_f": _zipf(vocab.ZH_FUNCTION),
        "zh_c": _zipf(vocab.ZH_CONTENT),
        "zh_o": _zipf(vocab.ZH_OPENERS),
        "zh_n": _zipf(vocab.ZH_NAMES),
        "ids": _zipf([identifier(i) for i in range(IDENTIFIERS)]),
        "en_w": (vocab.EN_WHEN, None),
        "zh_w": (vocab.ZH_WHEN, None),
    }


_LISTS: dict = {}


def _draw(rng: random.Random, name: str, k: int = 1) -> list[str]:
    if not _LISTS:
        _LISTS.update(_lists())
    words, cum = _LISTS[name]
    return rng.choices(words, cum_weights=cum, k=k)


def chat_for(rng: random.Random) -> str:
    """One chat turn: English (two in three) or Chinese, an opener, words drawn with Zipf weights
    (function words between content words), now and then a name, an identifier, a time, a number."""
    if rng.random() < 0.67:
        sentences = []
        for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
            n = rng.randint(4, 14)
            fn, content = _draw(rng, "en_f", n), _draw(rng, "en_c", n)
            words = _draw(rng, "en_o") + [fn[i] if rng.random() < 0.5 else content[i] for i in range(n)]
            r = rng.random()
            if r < 0.15:
                words.insert(rng.randint(1, len(words)), _draw(rng, "names")[0])
            elif r < 0.25:
                words.insert(rng.randint(1, len(words)), _draw(rng, "ids")[0])
            elif r < 0.35:
                words.append(rng.choice(_LISTS["en_w"][0]))
            elif r < 0.40:
                words.append(str(rng.randint(2, 500)))
            sentences.append(" ".join(words) + rng.choice((".", ".", "?", "!", "")))
        return " ".join(sentences)
    n = rng.randint(3, 10)
    fn, content = _draw(rng, "zh_f", n), _draw(rng, "zh_c", n)
    words = _draw(rng, "zh_o") + [fn[i] if rng.random() < 0.4 else content[i] for i in range(n)]
    r = rng.random()
    if r < 0.15:
        words.insert(rng.randint(1, len(words)), _draw(rng, "zh_n")[0])
    elif r < 0.22:
        words.insert(rng.randint(1, len(words)), _draw(rng, "ids")[0])
    elif r < 0.32:
        words.insert(1, rng.choice(_LISTS["zh_w"][0]))
    elif r < 0.37:
        words.append(f"{rng.randint(2, 500)}个")
    return "".join(words) + rng.choice(("。", "？", "！", "", "吧"))


def text_for(rng: random.Random) -> str:
    if rng.random() < 0.5:
        words = rng.sample(ZH, rng.randint(4, 9))
        return "".join(words) + f"，编号{rng.randint(1, 99999)}。"
    words = rng.sample(EN, rng.randint(5, 12))
    return " ".join(words).capitalize() + f" #{rng.randint(1, 99999)}."


SESSION_RUN = 12  # consecutive records of one conversation
START, STEP = 1_700_000_000.0, 40  # the first record's time, and seconds between records


CHAT_SHARE = 0.75  # of a chat corpus's records: chat turns (`chat_for`); the rest notes (`text_for`)


def records(n: int, seed: int = 7, start: float = START, chat: bool = False):
    """n record dicts, one per ~40 s, with keys, corrections and redlines sprinkled in; every
    other run of SESSION_RUN records is one conversation (a `session`), as an agent's turns are.
    `chat`: three records in four are chat turns (`chat_for`: realistic term frequencies), the
    rest generated notes; else all are notes."""
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
            "text": chat_for(rng) if chat and rng.random() < CHAT_SHARE else text_for(rng),
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


def write_log(path: Path, n: int, seed: int = 7, chat: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records(n, seed, chat=chat):
            fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
