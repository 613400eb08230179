"""The summary tree tells what every other surface tells: a forgotten record leaves its files at
once (and `compact` repairs any node that still quotes one), a quoted record that changed status
is labelled when shown and made again by `compact`, a guess never reads as a fact, and Chinese
key terms are words of the text, not bigrams across words."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import fenced_json, log_lines, put

from optmem import summary, tree
from optmem.vault import Vault

SECRET = "小明搬到了 swordfish 街 4417 号"


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


NOTES = [
    "部署 前端 到 staging — deploy the frontend",
    "后端端口 9090 for the api",
    "每周五 发布 release train",
    "数据库 备份 每天凌晨 backup",
    "监控 告警 发到 oncall 频道",
    "缓存 过期 时间 cache ttl 十分钟",
    "日志 保留 三十天 log retention",
]


def secret_tree(vault: Vault, cli) -> tuple[str, Path]:
    """Eight records (the secret among them) in two level-1 nodes, a level-2 node and the root."""
    small_tree(vault)
    ids = fill(vault, [NOTES[0], SECRET, *NOTES[1:]])
    cli.json("compact")
    folder = vault.root / "tree" / "hermes"
    assert sorted(p.name for p in folder.iterdir()) == ["L1-0001.md", "L1-0002.md", "L2-0001.md", "root.md"]
    assert all(
        "swordfish" in (folder / name).read_text("utf-8")  # quoted all the way up
        for name in ("L1-0001.md", "L2-0001.md", "root.md")
    )
    return ids[1], folder


def tree_text(folder: Path) -> str:
    return "".join(p.read_text("utf-8") for p in sorted(folder.iterdir()))


def summary_hits(cli, query: str) -> list[dict]:
    return cli.json("search", query, "--kind", "summary")["hits"]


# -- a forgotten record leaves the tree ------------------------------------------------------
@pytest.mark.long
def test_forget_takes_the_text_out_of_every_node_and_every_surface_at_once(vault, cli, vault_path):
    secret, folder = secret_tree(vault, cli)
    before = {p.name: tree.parse(p.read_text("utf-8")) for p in folder.iterdir()}
    assert any("swordfish" in h["text"] for h in summary_hits(cli, "swordfish 小明搬到"))
    out = cli.json("forget", secret)
    assert "swordfish" not in tree_text(folder) and "小明搬到" not in tree_text(folder)
    assert out["status"] == "forgotten" and out["warnings"] == []
    after = {p.name: tree.parse(p.read_text("utf-8")) for p in folder.iterdir()}
    # made again in place: the same nodes, the same children, the level-1 node without it
    assert {k: (n.id, n.children, n.count) for k, n in after.items()} == {
        k: (n.id, n.children, n.count) for k, n in before.items()
    }
    assert secret not in after["L1-0001.md"].body and "部署 前端" in after["L1-0001.md"].body
    assert after["L1-0002.md"] == before["L1-0002.md"]  # a node that never covered it is not touched
    for ref in ("hermes/L1-0001", "hermes/L2-0001", "hermes/root"):
        assert "swordfish" not in cli.json("tree", ref)["node"]["body"]
    assert all("swordfish" not in h["text"] for h in summary_hits(cli, "swordfish 小明搬到 部署"))
    assert summary_hits(cli, "swordfish") == []
    # and a second compact leaves it out too (nothing is stale any more)
    again = cli.json("compact")["domains"][0]
    assert again["created"] == [] and again["refreshed"] == [] and "swordfish" not in tree_text(folder)


@pytest.mark.long
def test_the_mcp_search_of_summaries_no_longer_finds_a_forgotten_record(vault, cli, vault_path):
    from conftest import mcp_session

    secret, _ = secret_tree(vault, cli)

    async def script(s) -> dict:
        before = await s.call_tool("search", {"query": "swordfish 小明搬到 部署", "kind": "summary"})
        gone = await s.call_tool("forget", {"id": secret})
        after = await s.call_tool("search", {"query": "swordfish 小明搬到 部署", "kind": "summary"})
        return {"before": before.content[0].text, "gone": gone.content[0].text, "after": after.content[0].text}

    got = mcp_session(vault_path, script)
    assert any("swordfish" in h["text"] for h in fenced_json(got["before"])["hits"])
    assert fenced_json(got["gone"])["status"] == "forgotten"
    hits = fenced_json(got["after"])["hits"]
    assert hits and all("swordfish" not in h["text"] for h in hits)


def test_reject_of_a_pending_guess_takes_it_out_of_the_tree(vault, cli):
    small_tree(vault)
    ids = fill(vault, NOTES[:3])
    guess = fill(vault, ["用户大概 想要 swordfish 主题"], confidence=0.2)[0]
    cli.json("compact")
    folder = vault.root / "tree" / "hermes"
    assert "swordfish" in (folder / "L1-0001.md").read_text("utf-8") and ids
    assert cli.json("reject", guess)["status"] == "rejected"
    assert "swordfish" not in tree_text(folder)


def forget_by_hand(vault_path: Path, rid: str) -> None:
    """A forget line typed by a person (or merged by git): no command ran, the tree knows nothing."""
    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        fh.write(
            json.dumps(
                {
                    "v": 1,
                    "id": "01KHANDTYPEDF0RGET0000000A",
                    "ts": "2026-03-01T13:00:00Z",
                    "domain": "hermes",
                    "kind": "forget",
                    "ref": rid,
                }
            )
            + "\n"
        )


def test_compact_repairs_nodes_after_a_hand_typed_forget_line(vault, cli, vault_path):
    secret, folder = secret_tree(vault, cli)
    forget_by_hand(vault_path, secret)
    assert cli.json("get", secret)["record"]["status"] == "forgotten"
    # shown nodes leave it out at once; the files wait for compact
    assert "swordfish" not in cli.json("tree", "hermes/L1-0001")["node"]["body"]
    assert all("swordfish" not in h["text"] for h in summary_hits(cli, "swordfish 小明搬到 部署"))
    assert "swordfish" in tree_text(folder)
    out = cli.json("compact")["domains"][0]
    assert out["refreshed"] == ["L1-0001", "L2-0001"] and out["root_updated"] and out["created"] == []
    assert "swordfish" not in tree_text(folder) and "小明搬到" not in tree_text(folder)
    assert cli.json("compact")["domains"][0]["refreshed"] == []  # idempotent


def test_nodes_made_before_they_kept_statuses_stay_as_they_are_until_a_record_changes(vault, cli, vault_path):
    secret, folder = secret_tree(vault, cli)
    for path in folder.iterdir():  # as an earlier optmem wrote them: no `view` in the front matter
        path.write_text(
            "".join(x for x in path.read_text("utf-8").splitlines(keepends=True) if not x.startswith("view: ")), "utf-8"
        )
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert cli.json("compact")["domains"][0]["refreshed"] == []
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    forget_by_hand(vault_path, secret)
    assert cli.json("compact")["domains"][0]["refreshed"] == ["L1-0001", "L2-0001"]
    assert "swordfish" not in tree_text(folder)
    assert (folder / "L1-0002.md").read_bytes() == before["L1-0002.md"]
    assert tree.parse((folder / "L1-0001.md").read_text("utf-8")).view is not None


def test_an_edited_node_keeps_the_persons_words_but_not_the_forgotten_lines(vault, cli):
    secret, folder = secret_tree(vault, cli)
    l1 = folder / "L1-0001.md"
    l1.write_text(
        l1.read_text("utf-8").replace("Key terms:", f"Note by a person.\nRemember: {SECRET} (asked twice)\nKey terms:"),
        "utf-8",
    )
    root = folder / "root.md"
    root.write_text(root.read_text("utf-8") + "\nA person's overview.\n", "utf-8")
    res = cli("forget", secret)
    assert res.exit_code == 0 and "edited by hand" in res.stderr and "without the 2 line(s)" in res.stderr
    node = tree.parse(l1.read_text("utf-8"))
    assert node.edited and "Note by a person." in node.body and "部署 前端" in node.body
    assert "A person's overview." in root.read_text("utf-8")
    assert "swordfish" not in tree_text(folder)


@pytest.mark.long
def test_a_summarisers_node_is_summarised_again_without_the_forgotten_record(vault, cli):
    echo = f'{sys.executable} -c "import sys; print(sys.stdin.read())"'  # its body is its input
    small_tree(vault, run=4, fanout=4)
    ids = fill(vault, [NOTES[0], SECRET, "an old plan: meet at the opensesame cafe", NOTES[1]])
    cli.json("forget", ids[2])  # forgotten before it was sealed: no summariser may read it
    cli.json("compact", "--summarizer", echo)
    folder = vault.root / "tree" / "hermes"
    node = tree.parse((folder / "L1-0001.md").read_text("utf-8"))
    assert node.summarizer == echo and "swordfish" in node.body and "opensesame" not in node.body
    res = cli("forget", ids[1])  # forget runs no command: a stand-in until the next compact
    assert res.exit_code == 0 and "summarises it again" in res.stderr
    node = tree.parse((folder / "L1-0001.md").read_text("utf-8"))
    assert node.resummarize and node.summarizer == "extractive" and "swordfish" not in tree_text(folder)
    out = cli.json("compact", "--summarizer", echo)["domains"][0]
    assert "L1-0001" in out["refreshed"]
    node = tree.parse((folder / "L1-0001.md").read_text("utf-8"))
    assert node.summarizer == echo and not node.resummarize and "部署 前端" in node.body
    assert "swordfish" not in tree_text(folder) and "opensesame" not in tree_text(folder)


# -- statuses agree with get ------------------------------------------------------------------
def test_guesses_and_inferences_are_badged_and_a_confirmed_guess_loses_its_badge(vault, cli):
    small_tree(vault)
    fill(vault, NOTES[:2])
    guess = fill(vault, ["用户可能喜欢 vim 键位"], confidence=0.2)[0]
    fill(vault, ["the user seems to work late at night"], basis="inferred")
    cli.json("compact")
    l1 = vault.root / "tree" / "hermes" / "L1-0001.md"
    body = l1.read_text("utf-8")
    assert f"用户可能喜欢 vim 键位 (`{guess}`) [pending]" in body
    assert "the user seems to work late at night (`" in body and "`) [inferred]" in body
    cli.json("confirm", guess)
    shown = cli.json("tree", "hermes/L1-0001")["node"]["body"]
    assert f"用户可能喜欢 vim 键位 (`{guess}`)\n" in shown  # what get says: current
    assert "[pending]" in l1.read_text("utf-8")  # the file, until compact makes it again
    assert cli.json("compact")["domains"][0]["refreshed"] == ["L1-0001"]
    assert "[pending]" not in l1.read_text("utf-8") and "vim 键位" in l1.read_text("utf-8")


def test_a_guess_gives_the_key_terms_no_word_until_it_is_confirmed(vault, cli):
    """Tester 16 item 10j: the tree's "Key terms" held words of a pending record ("maybe", "tea"):
    a guess read as what the records are about. They come from current records only."""
    small_tree(vault)
    fill(vault, ["deploy the frontend to staging", "the backend listens on 9090"])
    guess = fill(vault, ["maybe the user drinks oolong tea"], confidence=0.2)[0]
    fill(vault, ["the staging deploy runs nightly"])
    cli.json("compact")
    body = cli.json("tree", "hermes/L1-0001")["node"]["body"]
    assert f"(`{guess}`) [pending]" in body  # quoted, badged
    terms = key_terms_line(body)
    assert "staging" in terms and not {"maybe", "oolong", "tea", "drinks"} & set(terms), terms
    root = cli.json("tree", "hermes/root")["node"]["body"] if (vault.root / "tree/hermes/root.md").exists() else ""
    assert not {"oolong", "drinks"} & set(key_terms_line(root) if root else []), root
    cli.json("confirm", guess)
    cli.json("compact")
    assert "oolong" in key_terms_line(cli.json("tree", "hermes/L1-0001")["node"]["body"])  # current now


def test_a_superseded_or_expired_quoted_record_is_labelled_then_made_again_by_compact(vault, cli):
    small_tree(vault)
    ids = fill(vault, ["后端端口是 8080 backend port", NOTES[0], NOTES[3]])
    short_lived = fill(vault, ["本周 staging 冻结 freeze"], ttl="2d")[0]
    cli.json("compact")
    l1 = vault.root / "tree" / "hermes" / "L1-0001.md"
    assert ids[0] in l1.read_text("utf-8") and short_lived in l1.read_text("utf-8")
    fixed = cli.json("correct", ids[0], "后端端口改成 9090 了")["record"]["id"]
    os.environ["OPTMEM_NOW"] = "2026-03-05T00:00:00Z"  # past the ttl
    assert cli.json("get", ids[0])["record"]["status"] == "superseded"
    assert cli.json("get", short_lived)["record"]["status"] == "expired"
    shown = cli.json("tree", "hermes/L1-0001")["node"]["body"]
    assert f"(`{ids[0]}`) [superseded by {fixed[-8:]}]" in shown
    assert f"(`{short_lived}`) [expired]" in shown
    hit = next(h for h in summary_hits(cli, "后端端口 backend") if h["id"] == "hermes/L1-0001")
    assert f"[superseded by {fixed[-8:]}]" in hit["text"]
    out = cli.json("compact")["domains"][0]
    assert out["refreshed"] == ["L1-0001"]
    body = tree.parse(l1.read_text("utf-8")).body
    assert ids[0] not in body and short_lived not in body and "部署 前端" in body  # left out, as at sealing
    assert "superseded" not in cli.json("tree", "hermes/L1-0001")["node"]["body"]


# -- Chinese key terms ----------------------------------------------------------------------
DARK = [
    "我喜欢深色主题，眼睛舒服",
    "编辑器请用深色主题",
    "把 IDE 设置为深色主题",
    "终端也设置为深色主题吧",
    "深色主题看着不累",
    "后端端口改成 9090",
    "前端端口是 3000",
    "部署前先备份数据库",
    "数据库每天凌晨备份",
    "部署脚本在 deploy.sh 里",
    "生产数据库的端口是 5432",
]


def key_terms_line(body: str) -> list[str]:
    line = next(x for x in body.splitlines() if x.startswith("Key terms: "))
    return line[len("Key terms: ") :].split(", ")


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
    terms = summary.key_terms(
        [
            "我们用 PostgreSQL 数据库",
            "数据库连接池大小是 20",
            "每天备份数据库一次",
            "数据库迁移脚本放在 migrations",
            "的了是在",
            "一个可以的",
        ]
    )
    assert terms[0] == "数据库" and "postgresql" in terms
    assert not [t for t in terms if t in ("据库", "数据", "的了", "一个", "可以")]


# records written from one template: the words around each slot never change (用户把 X 设置为方案 N)
SETTINGS = ["深色主题", "字体", "语言", "字号", "快捷键", "默认浏览器", "时区", "输入法", "壁纸", "通知声音"]
REASONS = ["次反馈说太刺眼", "次会议后决定", "次试用觉得顺手", "次更新以后", "次尝试成功"]
TEMPLATED = [
    f"用户把{SETTINGS[i % 10]}设置为方案{i * 7 % 9 + 1}，因为第{i * 3 % 5 + 1}{REASONS[i % 5]}" for i in range(70)
]
FUNCTION_CHARS = set("把被给对从向第为在是的了和与及或也都就还又很")
GLUED = {"因为第", "用户把", "设置为方案", "设置为", "为方案", "把深色主题", "次会议后决定", "因为"}


def fragments(terms: list[str]) -> list[str]:
    """The terms a reader would not write for TEMPLATED: a function character at an edge."""
    return [t for t in terms if t in GLUED or t[0] in FUNCTION_CHARS or t[-1] in FUNCTION_CHARS]


def test_key_terms_of_templated_records_are_words_not_words_glued_to_function_characters():
    terms = summary.key_terms(TEMPLATED)
    assert fragments(terms) == []
    assert {"用户", "设置", "方案"} <= set(terms)
    assert all(t in "\n".join(TEMPLATED) for t in terms)


@pytest.mark.long
def test_the_tree_of_templated_records_names_no_word_glued_to_a_function_character(vault, cli):
    small_tree(vault, run=8, fanout=2)
    fill(vault, TEMPLATED)
    cli.json("compact")
    folder = vault.root / "tree" / "hermes"
    nodes = sorted(folder.iterdir())
    assert len(nodes) > 8  # level-1 nodes and the levels above them
    for path in nodes:
        terms = key_terms_line(tree.parse(path.read_text("utf-8")).body)
        assert fragments(terms) == [], path.name
        assert {"用户", "方案"} <= set(terms), path.name


def test_words_that_begin_or_end_with_a_function_character_stay_whole():
    texts = [
        "对象存储用的是阿里云",
        "对象存储的费用每月结算",
        "日志也放在对象存储里",
        "在线教育项目下周上线",
        "在线教育的用户增长很快",
        "在线教育平台需要审核",
        "北京和上海的服务器都要升级",
        "上海的服务器在机房三楼",
        "北京的服务器比较旧",
        "和平协议已经签署",
        "双方讨论和平协议的细节",
        "和平协议生效",
        "参与评审的人很多",
        "他们都参与了评审",
        "积极参与评审",
        "行为准则写在文档里",
        "违反行为准则要警告",
        "行为准则每年更新",
    ]
    terms = summary.key_terms(texts, limit=30)
    assert {"对象存储", "在线教育", "和平协议", "行为准则", "参与", "服务器", "上海"} <= set(terms)
    assert not {"平协议", "象存储", "上海的服务器", "准则"} & set(terms)  # 和平 is a word, 的 is one of its own


# -- a node that cannot be read stops its domain, and compact says so (issue 44, part 2) ---------------
def test_a_broken_tree_node_makes_compact_skip_its_domain_say_so_and_exit_3(vault, cli):
    small_tree(vault)
    fill(vault, [f"deploy note {i}" for i in range(4)], domain="code")
    fill(vault, [f"workflow note {i}" for i in range(4)], domain="hermes")
    assert cli("compact").exit_code == 0
    broken = vault.root / "tree" / "code" / "L1-0001.md"
    broken.write_text("no front matter here\n", "utf-8")  # a hand edit gone wrong
    fill(vault, [f"deploy note {i}" for i in range(4, 8)], domain="code")
    fill(vault, [f"workflow note {i}" for i in range(4, 8)], domain="hermes")
    res = cli("compact", "--json")
    assert res.exit_code == 3, (res.stdout, res.stderr)
    out = json.loads(res.stdout)
    assert out["ok"] is False
    by = {d["domain"]: d for d in out["domains"]}
    assert "L1-0002" in by["hermes"]["created"] and by["hermes"]["not_compacted"] == []  # the others go on
    assert by["code"]["created"] == [] and "L1-0001.md" in by["code"]["not_compacted"][0]
    assert broken.read_text("utf-8") == "no front matter here\n"  # left as it is
    assert not (vault.root / "tree" / "code" / "L1-0002.md").exists()
    human = cli("compact", "--domain", "code")
    assert human.exit_code == 3
    assert "code: not compacted" in human.stdout and "L1-0001.md" in human.stderr, (human.stdout, human.stderr)
    broken.unlink()  # fixed (removed): compact goes on again
    assert cli("compact").exit_code == 0


def test_a_quoted_records_standing_guess_is_badged_as_search_badges_it_and_goes_when_settled(vault, cli):
    """The tree tells what `get` and `search` tell of the write gate's guess: while both records
    are live, each quoted line asks ("may be a new value of …?"); once the older is forgotten, neither."""
    small_tree(vault)
    fill(vault, NOTES[:2])
    old = cli.json("append", "I have 3 monstera plants", "--domain", "hermes")["id"]
    new = cli.json("append", "I now have 5 monstera plants", "--domain", "hermes")["id"]
    assert cli.json("get", new)["record"]["may_update"] == old
    cli.json("compact")
    shown = cli.json("tree", "hermes/L1-0001")["node"]["body"]
    assert f"(`{new}`) [may be a new value of {old[-8:]}?]" in shown, shown
    assert f"(`{old}`) [may have been updated by {new[-8:]}?]" in shown, shown
    # the file as compact wrote it asks too: two values the gate could not order never read there
    # as two facts (review 18 #5)
    assert f"[may be a new value of {old[-8:]}?]" in (vault.root / "tree" / "hermes" / "L1-0001.md").read_text("utf-8")
    cli.json("forget", old)
    shown = cli.json("tree", "hermes/L1-0001")["node"]["body"]
    assert "may be a new value" not in shown and f"(`{new}`)" in shown, shown


def test_a_summarisers_words_are_labelled_on_every_surface_and_it_reads_the_gates_guesses(vault, cli, tmp_path):
    """Review 15, finding 4: a node a model wrote read as a fact — its search hit carried no label
    (status current, no origin), `tree NODE` did not name the summariser, and the summariser's
    input left out the write gate's "may be a new value of …?"."""
    small_tree(vault)
    fill(vault, NOTES[:2])
    old = cli.json("append", "I have 3 monstera plants", "--domain", "hermes")["id"]
    new = cli.json("append", "I now have 5 monstera plants", "--domain", "hermes")["id"]
    assert cli.json("get", new)["record"]["may_update"] == old
    feed = tmp_path / "feed.txt"
    model = tmp_path / "model.sh"
    model.write_text(f"#!/bin/sh\ncat >> {feed}\necho 'The user has 8 monstera plants.'\n", "utf-8")
    model.chmod(0o755)
    cli.json("compact", "--summarizer", str(model))
    said = feed.read_text("utf-8")
    assert f"({new}) [may be a new value of {old}?]" in said, said
    assert f"({old}) [may have been updated by {new}?]" in said, said
    [hit] = [
        h for h in cli.json("search", "monstera plants", "--kind", "summary")["hits"] if h["id"].endswith("L1-0001")
    ]
    assert hit["summarizer"] == str(model)
    shown = cli("search", "monstera plants", "--kind", "summary").stdout
    assert f"[SUMMARY (by {model}: a model's words)]" in shown, shown
    node = cli("tree", "hermes/L1-0001").stdout
    assert f"summarised by: {model} — a model's words, not checked facts" in node, node
    assert cli.json("tree", "hermes/L1-0001")["node"]["summarizer"] == str(model)
