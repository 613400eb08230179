"""The summary tree tells what every other surface tells: Chinese key terms are words of the
text, not bigrams across words."""

from __future__ import annotations

import os

import pytest

from conftest import log_lines, put
from optmem import tree
from optmem.vault import Vault


@pytest.fixture(autouse=True)
def _clock(monkeypatch):
    monkeypatch.setenv("OPTMEM_NOW", "2026-03-01T00:00:00Z")


def small_tree(vault: Vault, run: int = 4, fanout: int = 2) -> None:
    (vault.root / "optmem.toml").write_text(f"[tree]\nrun = {run}\nfanout = {fanout}\n", "utf-8")


def fill(vault: Vault, texts: list[str], domain: str = "hermes", **fields) -> list[str]:
    """One record per text, a minute apart (so the tree's time order is the list's)."""
    ids = []
    for text in texts:
        n = len(log_lines(vault.root)) if vault.log_path.exists() else 0
        os.environ["OPTMEM_NOW"] = f"2026-03-01T{n // 60:02d}:{n % 60:02d}:00Z"
        ids.append(put(vault, text, domain=domain, gate=False, **fields).id)
    os.environ["OPTMEM_NOW"] = "2026-03-01T12:00:00Z"
    return ids


# -- Chinese key terms ----------------------------------------------------------------------
DARK = ["我喜欢深色主题，眼睛舒服", "编辑器请用深色主题", "把 IDE 设置为深色主题", "终端也设置为深色主题吧",
        "深色主题看着不累", "后端端口改成 9090", "前端端口是 3000", "部署前先备份数据库", "数据库每天凌晨备份",
        "部署脚本在 deploy.sh 里", "生产数据库的端口是 5432"]


def key_terms_line(body: str) -> list[str]:
    line = next(x for x in body.splitlines() if x.startswith("Key terms: "))
    return line[len("Key terms: "):].split(", ")


def test_chinese_key_terms_are_words_of_the_text_not_bigrams_across_words(vault, cli):
    small_tree(vault, run=len(DARK))
    fill(vault, DARK)
    cli.json("compact")
    terms = key_terms_line(cli.json("tree", "hermes/L1-0001")["node"]["body"])
    assert "深色主题" in terms
    assert {"端口", "数据库", "部署"} <= set(terms)
    assert not {"色主", "置为", "为深", "色主题", "设置为", "库每"} & set(terms)
    joined = "\n".join(DARK)
    assert all(t in joined.lower() for t in terms)  # every term is in the text as written
    assert "deploy" in terms  # English words as before


def test_key_terms_say_the_same_thing_said_several_ways():
    terms = tree.key_terms(["我们用 PostgreSQL 数据库", "数据库连接池大小是 20", "每天备份数据库一次",
                            "数据库迁移脚本放在 migrations", "的了是在", "一个可以的"])
    assert terms[0] == "数据库" and "postgresql" in terms
    assert not [t for t in terms if t in ("据库", "数据", "的了", "一个", "可以")]
