"""`stats` at scale counts in the index what it once computed record by record: the figures
agree with the slow, obvious computation.

The duplicate rate: the fast candidate path finds what comparing every pair finds.

A small vault with near duplicates planted among ordinary notes — texts holding a number (rare
and common ones), texts holding none, English and Chinese — and decoys that must not count (the
same words with another number, a copy in another domain or project). The rate `stats` reports
is checked against a brute-force computation: each current record compared with every other
current record of its domain and project."""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path
from typing import Any

import pytest

from optmem import compare
from optmem.record import new_id

SYLLABLES = "ka lo mi ne ru sa to vi be do fu ga hi ja ko".split()
HANZI = (
    "端口部署数据库缓存用户文章大纲发布测试接口配置日志服务器前端后端索引"
    + "搜索记忆会话交接错误修复需求设计评审上线回滚监控告警性能延迟并发"
)
DOMAINS = ("code", "hermes")
PROJECTS = (None, "webapp")
START = 1_760_000_000.0


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))


def _text(rng: random.Random, number: str | None) -> str:
    if rng.random() < 0.5:
        words = " ".join(_word(rng) for _ in range(rng.randint(6, 10))).capitalize()
        return f"{words} #{number}." if number else words + "."
    chars = "".join(rng.choice(HANZI) for _ in range(rng.randint(8, 14)))
    return f"{chars}，编号{number}。" if number else chars + "。"


def _near(rng: random.Random, text: str) -> str:
    """A near duplicate of `text`: a word or character more, or punctuation and case changed."""
    if text.isascii():
        words = text.rstrip(".").split(" ")
        words.insert(rng.randint(1, len(words) - 1), rng.choice(["really", "also", "still"]))
        return " ".join(words) + "!"
    return text[:3] + rng.choice(HANZI) + text[3:]


def planted_log(path: Path) -> None:
    rng = random.Random(44)
    texts: list[tuple[str, str | None, str]] = []  # (domain, project, text)
    for _ in range(200):  # ordinary notes: a rare number, a common one ("2024"), or none
        number = rng.choice([str(rng.randint(100, 99999)), "2024", None])
        texts.append((rng.choice(DOMAINS), rng.choice(PROJECTS), _text(rng, number)))
    for domain, project, text in rng.sample(texts, 40):
        texts.append((domain, project, _near(rng, text)))  # a near duplicate in the same place
    numbered = [t for t in texts[:200] if re.search(r"\d", t[2])]
    for domain, project, text in rng.sample(numbered, 15):  # the same words, another number: no duplicate
        texts.append((domain, project, re.sub(r"\d+", str(rng.randint(100_000, 999_999)), text)))
    for n, (domain, project, text) in enumerate(rng.sample(texts[:200], 20)):  # a copy elsewhere: none here
        other = DOMAINS[1 - DOMAINS.index(domain)]
        texts.append((other, project, text) if n % 2 else (domain, "blog", text))
    rng.shuffle(texts)
    with open(path, "w", encoding="utf-8") as fh:
        for i, (domain, project, text) in enumerate(texts):
            ts = START + i * 60
            rec: dict[str, Any] = {
                "v": 1,
                "id": new_id(ts),
                "ts": f"2025-10-09T{(i * 60) // 3600:02d}:{(i * 60) % 3600 // 60:02d}:00Z",
                "domain": domain,
                "kind": "note",
                "tier": "normal",
                "text": text,
            }
            if project:
                rec["project"] = project
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def brute_force(path: Path, threshold: float) -> tuple[int, int]:
    """(records with a near duplicate among the others of their domain and project, records)."""
    recs = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    dups = 0
    for i, a in enumerate(recs):
        if any(
            j != i
            and b["domain"] == a["domain"]
            and b.get("project") == a.get("project")
            and compare.similarity(a["text"], b["text"], least=threshold) >= threshold
            for j, b in enumerate(recs)
        ):
            dups += 1
    return dups, len(recs)


@pytest.mark.long
def test_the_duplicate_rate_agrees_with_comparing_every_pair(cli, vault_path, no_sweep):
    planted_log(vault_path / "LOG.jsonl")
    dups, total = brute_force(vault_path / "LOG.jsonl", 0.9)
    assert total < 400  # every current record is in the sample: the figures can be compared exactly
    assert dups >= 60  # the planted pairs (and exact repeats among the copies) are there to be found
    s = cli.json("stats")
    assert s["status"]["current"] == total
    assert s["duplicates"] == dups
    assert s["duplicate_rate"] == round(dups / total, 4)


@pytest.mark.long
def test_the_lifecycle_census_agrees_with_reading_every_record(cli, vault_path, no_sweep, monkeypatch):
    """Heat bands, importance and pending ages, counted by SQLite (a time of last access per
    importance and decay), are those of each record's own heat and age."""
    from optmem import clock, lifecycle, view
    from optmem.index import open_index
    from optmem.vault import Vault

    rng = random.Random(45)
    day = 86400
    with open(vault_path / "LOG.jsonl", "w", encoding="utf-8") as fh:
        for i in range(300):
            ts = START + rng.uniform(0, 90) * day
            rec: dict[str, Any] = {
                "v": 1,
                "id": new_id(ts),
                "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts)),
                "domain": rng.choice(DOMAINS),
                "kind": rng.choice(["note", "note", "chat", "preference", "session"]),
                "tier": rng.choice(["normal", "normal", "chat", "evidence", "redline"]),
                "text": f"note {i} about {rng.choice(SYLLABLES)}",
            }
            if rng.random() < 0.3:
                rec["importance"] = rng.choice([0.1, 0.3, 0.5, 0.9, 1.0, 0.0])
            if rng.random() < 0.2:
                rec["confidence"], rec["pending"] = 0.3, True  # a guess, waiting
            fh.write(json.dumps(rec) + "\n")
    monkeypatch.setenv("OPTMEM_NOW", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(START + 95 * day)))
    life = cli.json("stats")["lifecycle"]

    vault = Vault(vault_path)
    s = vault.settings.lifecycle
    now = clock.now().timestamp()
    bands = {f">={b:g}": 0 for b in lifecycle.HEAT_BANDS} | {f"<{lifecycle.HEAT_BANDS[-1]:g}": 0}
    ages = {f"<{d}d": 0 for d in lifecycle.PENDING_AGES} | {f">={lifecycle.PENDING_AGES[-1]}d": 0}
    imps: list[float] = []
    with open_index(vault) as idx:
        for row in idx.coolable():
            st = view.status(row, now)
            if st in view.LIVE:
                imps.append(lifecycle.importance(s, row.kind, row.tier, row.imp))
                h = lifecycle.heat_of(s, row, now)
                bands[next((k for k, b in zip(bands, lifecycle.HEAT_BANDS, strict=False) if h >= b), "<0.05")] += 1
            if st == view.Status.PENDING:
                days = (now - (row.ts or now)) / day
                ages[next((f"<{d}d" for d in lifecycle.PENDING_AGES if days < d), ">=30d")] += 1
    assert sum(ages.values()) > 20 and len([b for b in bands.values() if b]) >= 3  # the figures vary
    assert life["heat"] == bands and life["heat_of"] == len(imps)
    assert life["pending_by_age"] == ages
    assert life["importance"]["mean"] == round(sum(imps) / len(imps), 3)


@pytest.mark.long
def test_a_large_log_is_sampled_evenly_and_each_sampled_duplicate_found(cli, vault_path, no_sweep):
    """Past 400 current records the rate is a sample's: 400 of them, evenly spread over the log —
    here every record has its near duplicate, so every sampled one is found with it."""
    rng = random.Random(46)
    texts = [_text(rng, str(1000 + i)) for i in range(260)]
    lines = []
    for i, text in enumerate(texts):
        for j, variant in enumerate((text, _near(rng, text))):
            ts = START + (2 * i + j) * 60
            lines.append(
                {
                    "v": 1,
                    "id": new_id(ts),
                    "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts)),
                    "domain": "code",
                    "kind": "note",
                    "tier": "normal",
                    "text": variant,
                }
            )
    with open(vault_path / "LOG.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(rec, ensure_ascii=False) + "\n" for rec in lines)
    s = cli.json("stats")
    assert s["status"]["current"] == 520
    assert s["duplicates"] == 400 and s["duplicate_rate"] == 1.0
