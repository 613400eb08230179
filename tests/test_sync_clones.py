"""Three machines on one bare remote, real git, git speaking German (issue 45 §3): a sync killed
mid-merge (optmem alone, or git with it), a hot entry edited on two machines, and lifecycle
decisions that disagree — every outcome reported on every machine.

The three clones are built once per module and copied per test (`shutil.copytree`): their remote
is named by a relative path, so each copy syncs with its own copy of the bare remote.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG, Cli, optmem_cmd, wait_until
from test_git import GIT_ENV

# every test uses the machines built once per module (a German locale compiled, three clones
# synced): on one worker, so they are built once a run, not once a worker
pytestmark = pytest.mark.xdist_group("machines")

CLI = Cli()
MACHINES = ("a", "b", "c")
ENTRY = "the database host is db1, port 5432"


def _german(base: Path) -> dict[str, str]:
    """An environment in which git speaks German: a de_DE.UTF-8 locale built with `localedef`
    into a folder of the test's own (`LOCPATH`) when the machine can (most machines carry no
    compiled German locale, only its source), else the C.UTF-8 locale with `LANGUAGE=de`, which
    gettext honours outside the plain C locale. Checked: git's own words must come out German."""
    env = {"LANG": "de_DE.UTF-8", "LC_ALL": "de_DE.UTF-8", "LANGUAGE": "de"}
    where = base / "locales"
    where.mkdir()
    made = (
        subprocess.run(
            ["localedef", "-i", "de_DE", "-f", "UTF-8", str(where / "de_DE.UTF-8")],
            capture_output=True,
            timeout=HANG,
            check=False,
        )
        if shutil.which("localedef")
        else None
    )
    if made is not None and (where / "de_DE.UTF-8").exists():
        env["LOCPATH"] = str(where)
    else:
        env.update({"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"})
    said = subprocess.run(
        ["git", "-C", str(base), "rev-parse", "--verify", "no-such-ref"],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=HANG,
        check=False,
    )
    assert "Schwerwiegend" in said.stderr or "Fehler" in said.stderr, said.stderr  # else the test proves nothing
    return env


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(
        ["git", "-C", str(cwd), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV, **(env or {})},
        timeout=HANG,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    return res


class Net:
    """A copy of the three machines: `om(machine, args…)` runs optmem there, in German."""

    def __init__(self, root: Path, german: dict[str, str]) -> None:
        self.root = root
        self.german = german

    def vault(self, machine: str) -> Path:
        return self.root / machine

    def env(self, machine: str) -> dict[str, str]:
        return {
            **GIT_ENV,
            **self.german,
            "HOME": str(self.root / "home"),
            "OPTMEM_WRITER": f"machine-{machine}",
            "OPTMEM_VAULT": str(self.vault(machine)),
        }

    def om(self, machine: str, *args: str, code: int = 0) -> dict:
        res = CLI("--vault", str(self.vault(machine)), *args, "--json", env=self.env(machine))
        assert res.exit_code == code, (args, res.stdout, res.stderr)
        return json.loads(res.stdout)

    def sync(self, machine: str) -> dict:
        return self.om(machine, "sync")

    def text(self, machine: str, *args: str) -> str:
        res = CLI("--vault", str(self.vault(machine)), *args, env=self.env(machine))
        assert res.exit_code == 0, (args, res.stdout, res.stderr)
        return res.stdout

    def ids(self, machine: str) -> set[str]:
        root = self.vault(machine)
        files = [root / "LOG.jsonl", *sorted((root / "log").glob("*/????-??.jsonl"))]
        return {json.loads(x)["id"] for f in files if f.exists() for x in f.read_text("utf-8").splitlines() if x}


@pytest.fixture(scope="module")
def machines(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A bare remote and three clones that share one history (a record and a hot entry), built
    once; git speaks German throughout."""
    base = tmp_path_factory.mktemp("machines")
    german = _german(base)
    (base / "net" / "home").mkdir(parents=True)
    _git(base / "net", "init", "-q", "--bare", "-b", "main", "origin.git")
    for m in MACHINES:
        _git(base / "net", "clone", "-q", "origin.git", m)
        _git(base / "net" / m, "config", "remote.origin.url", "../origin.git")  # a copy syncs with its copy
    net = Net(base / "net", german)
    net.om("a", "append", "the team deploys on Fridays")
    net.om("a", "add", ENTRY)
    first = net.sync("a")  # the first sync: the remote has no branch yet, and git says so in German
    assert first["pushed"] and first["records_out"] >= 2
    for m in ("b", "c"):
        net.sync(m)
    return base / "net", german


@pytest.fixture
def net(machines: tuple[Path, dict[str, str]], tmp_path: Path) -> Net:
    root = tmp_path / "net"
    shutil.copytree(machines[0], root, symlinks=True)
    return Net(root, machines[1])


def hot_entries(vault: Path) -> list[str]:
    return [e.strip() for e in (vault / "MEMORY.md").read_text("utf-8").split("\n§\n") if e.strip()]


BLOCKER = """
import os, subprocess, sys
here, args = sys.argv[1], sys.argv[2:]
armed = os.path.join(here, "armed")
if os.path.exists(armed):  # once: a merge done again passes through
    os.unlink(armed)
    with open(os.path.join(here, "pgid.tmp"), "w") as fh:
        fh.write(str(os.getpgid(0)))
    os.rename(os.path.join(here, "pgid.tmp"), os.path.join(here, "pgid"))
    with open(os.path.join(here, "go")) as fh:  # a FIFO: blocks until the test opens it
        fh.read()
sys.exit(subprocess.call([sys.executable, "-m", "optmem", "merge-driver", *args]))
"""


def _block_hot_merges(vault: Path, here: Path) -> None:
    """Git's own attribute file of the clone (it outranks .gitattributes) sends MEMORY.md to a
    driver that stops on a FIFO — a deterministic point inside git's merge — then runs optmem's."""
    here.mkdir()
    (here / "blocker.py").write_text(BLOCKER, "utf-8")
    (here / "armed").write_text("", "utf-8")
    os.mkfifo(here / "go")
    (vault / ".git" / "info").mkdir(exist_ok=True)
    (vault / ".git" / "info" / "attributes").write_text("MEMORY.md merge=blocked\n", "utf-8")
    _git(vault, "config", "merge.blocked.driver", f"{sys.executable} {here / 'blocker.py'} {here} %O %A %B %P")


def _conflict_names(report: list[dict]) -> set[str]:
    return {c["name"] if "name" in c else (c["key"] or c["fact"]) for c in report}


@pytest.mark.long
@pytest.mark.parametrize("killed", ["optmem", "optmem and git"])
def test_a_sync_killed_mid_merge_is_finished_and_reports_what_came_in_on_every_machine(net, tmp_path, killed):
    # a and b each set db.host and edit the same hot entry, neither having seen the other
    net.om("a", "append", "db.host is db-a.internal", "--key", "db.host")
    net.om("a", "replace", "port 5432", "port 6432")
    net.om("b", "append", "db.host is db-b.internal", "--key", "db.host")
    net.om("b", "replace", "port 5432", "port 7432")
    # and a line typed into b's own folder on a (optmem never writes there but on b)
    typed = net.vault("a") / "log" / "machine-b" / "2020-01.jsonl"
    typed.parent.mkdir(parents=True, exist_ok=True)
    typed.write_text('{"v":1,"id":"01M0TYPEDBYHANDONAXXXXXXXX","ts":"2020-01-02T00:00:00Z","text":"typed on a"}\n')
    assert net.sync("a")["pushed"]
    coming = net.ids("a") - net.ids("b")  # what b's sync is to bring in
    here = tmp_path / "blocker"
    _block_hot_merges(net.vault("b"), here)
    proc = subprocess.Popen(
        [*optmem_cmd(), "--vault", str(net.vault("b")), "sync", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **net.env("b")},
    )
    wait_until(lambda: (here / "pgid").exists(), "the merge reaching the hot file's driver")
    os.kill(proc.pid, signal.SIGKILL)  # mid-merge: git is inside the driver
    assert proc.wait(timeout=HANG) == -signal.SIGKILL
    if killed == "optmem":
        with open(here / "go", "w") as fh:  # git, in a session of its own, goes on without it
            fh.write("go")
    else:
        os.killpg(int((here / "pgid").read_text()), signal.SIGKILL)  # git dies with it, index lock held
    report = net.sync("b")
    assert report["merged"] and report["records_in"] == len(coming) and report["into_own_folder"] == 1, report
    hot = next(c for c in report["new_conflicts"] if c["name"].startswith("hot:"))
    assert {"db.host"} <= _conflict_names(report["new_conflicts"]) and hot["file"] == "MEMORY.md"
    assert (
        not (net.vault("b") / ".git" / "index.lock").exists() and not (net.vault("b") / ".git" / "MERGE_HEAD").exists()
    )
    both = {"the database host is db1, port 6432", "the database host is db1, port 7432"}
    # the other two machines hear of both conflicts from their own sync
    for m in ("a", "c"):
        got = net.sync(m)
        assert {"db.host", hot["name"]} <= _conflict_names(got["new_conflicts"]), (m, got)
    for m in MACHINES:
        listed = net.om(m, "conflicts")["conflicts"]
        assert {c["key"] for c in listed} == {"db.host", hot["name"]}, (m, listed)
        hot_listed = next(c for c in listed if c["key"] == hot["name"])
        assert {v["text"] for v in hot_listed["values"]} == both
        asked = net.text(m, "context")
        assert f"optmem resolve {hot['name']}" in asked and "port 6432" in asked and "port 7432" in asked
        assert "db.host" in asked and "which is right now" in asked
    # one command settles each, on any machine; the others follow by syncing
    kept = next(v for v in hot_listed["values"] if "6432" in v["text"])
    net.om("c", "resolve", hot["name"], "--keep", kept["id"])
    db = next(c for c in listed if c["key"] == "db.host")
    net.om("c", "resolve", "db.host", "--keep", db["values"][0]["id"])
    for m in ("c", "a", "b", "c"):
        net.sync(m)
    for m in MACHINES:
        assert net.om(m, "conflicts")["conflicts"] == [], m
        entries = hot_entries(net.vault(m))
        assert "the database host is db1, port 6432" in entries and "the database host is db1, port 7432" not in entries
    assert net.ids("a") == net.ids("b") == net.ids("c")


@pytest.mark.long
def test_the_first_sync_to_an_empty_remote_works_while_git_speaks_german(machines, tmp_path):
    german = machines[1]
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", "origin.git")
    _git(tmp_path, "clone", "-q", "origin.git", "solo", env=german)
    said = subprocess.run(
        ["git", "-C", str(tmp_path / "solo"), "fetch", "origin", "main"],
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV, **german},
        timeout=HANG,
        check=False,
    )
    assert said.returncode != 0 and "main" in said.stderr and "find remote ref" not in said.stderr  # German
    net = Net(tmp_path, german)
    net.om("solo", "append", "a first record")
    report = net.sync("solo")
    assert report["pushed"] and report["records_out"] == 1


def _decision_conflict(net: Net, machine: str, rid: str) -> dict:
    (found,) = [c for c in net.om(machine, "conflicts")["conflicts"] if c["fact"] == rid]
    return found


@pytest.mark.long
def test_confirm_on_one_machine_and_reject_on_another_is_a_conflict_on_both(net):
    rid = net.om("a", "append", "the staging cluster runs k3s", "--confidence", "0.3")["id"]
    net.sync("a"), net.sync("b")
    net.om("a", "confirm", rid)
    net.om("b", "reject", rid, "--reason", "it runs k8s")
    net.sync("a")
    reported = net.sync("b")["new_conflicts"]
    assert [c["name"] for c in reported] == [rid[-8:]]
    assert [c["name"] for c in net.sync("a")["new_conflicts"]] == [rid[-8:]]
    for m in ("a", "b"):
        found = _decision_conflict(net, m, rid)
        assert sorted(v["kind"] for v in found["values"]) == ["confirm", "forget"], found
        asked = net.text(m, "context")
        assert rid[-8:] in asked and "forgotten on another" in asked
        assert f"kept on one machine, forgotten on another: {rid[-8:]}" in net.text(m, "conflicts")
    refused = net.om("b", "resolve", rid[-8:], "--value", "it runs nomad", code=2)["error"]
    assert "--keep" in refused["message"]  # a decision is kept, not rewritten
    # settled with one command: keep the confirmation — the record is current on both
    keep = next(v["id"] for v in _decision_conflict(net, "b", rid)["values"] if v["kind"] == "confirm")
    net.om("b", "resolve", rid[-8:], "--keep", keep)
    net.sync("b"), net.sync("a")
    for m in ("a", "b"):
        assert net.om(m, "conflicts")["conflicts"] == []
        assert net.om(m, "get", rid)["record"]["status"] == "current"


@pytest.mark.long
def test_forget_against_a_correct_is_a_conflict_and_keeping_the_forget_forgets_both(net):
    rid = net.om("a", "append", "the api lives at api.example.com")["id"]
    net.sync("a"), net.sync("b")
    fixed = net.om("a", "correct", rid, "the api lives at api.example.net")["id"]
    net.om("b", "forget", rid, "--reason", "the api is gone")
    net.sync("a")
    assert [c["name"] for c in net.sync("b")["new_conflicts"]] == [rid[-8:]]
    net.sync("a")
    found = _decision_conflict(net, "a", rid)
    assert sorted(v["kind"] for v in found["values"]) == ["correction", "forget"]
    forget = next(v["id"] for v in found["values"] if v["kind"] == "forget")
    net.om("a", "resolve", rid[-8:], "--keep", forget)
    net.sync("a"), net.sync("b")
    for m in ("a", "b"):
        assert net.om(m, "conflicts")["conflicts"] == []
        assert net.om(m, "get", fixed)["record"]["status"] == "forgotten"
        assert not [h for h in net.om(m, "search", "api lives")["hits"] if h["status"] == "current"]


@pytest.mark.long
def test_decisions_made_one_after_the_other_are_no_conflict(net):
    rid = net.om("a", "append", "the queue is rabbitmq", "--confidence", "0.3")["id"]
    net.sync("a"), net.sync("b")
    net.om("a", "confirm", rid)
    net.sync("a"), net.sync("b")
    net.om("b", "forget", rid, "--reason", "moved to kafka")  # b had seen the confirmation
    net.sync("b"), net.sync("a")
    for m in ("a", "b"):
        assert net.om(m, "conflicts")["conflicts"] == []
        assert net.om(m, "get", rid)["record"]["status"] == "forgotten"


@pytest.mark.long
def test_a_hot_entry_edited_on_two_machines_settles_with_a_new_value(net):
    net.om("a", "replace", "port 5432", "port 6432")
    net.om("b", "replace", "port 5432", "port 7432")
    net.sync("a")
    (hot,) = [c for c in net.sync("b")["new_conflicts"] if c["name"].startswith("hot:")]
    assert sorted(hot_entries(net.vault("b"))) == [
        "the database host is db1, port 6432",
        "the database host is db1, port 7432",
    ]
    # every surface agrees it is a conflict (tester 19 F7): search, get, history mark both
    # versions as `conflicts` lists them, and `get` names the other
    (found,) = net.om("b", "conflicts")["conflicts"]
    versions = sorted(v["id"] for v in found["values"])
    hits = [h for h in net.om("b", "search", "database host")["hits"] if h["id"] in versions]
    assert sorted(h["id"] for h in hits) == versions and all(h.get("conflict") for h in hits), hits
    assert "[CONFLICT]" in net.text("b", "search", "database host")
    for one, other in (versions, versions[::-1]):
        got = net.om("b", "get", one)["record"]
        assert got["conflict"] and got["conflict_with"] == [other], got
    assert "CONFLICT" in net.text("b", "history", versions[0])
    marked = [e for e in net.om("b", "show", "--target", "memory")["files"][0]["entries"] if e.get("conflict")]
    assert sorted(e["text"] for e in marked) == sorted(hot_entries(net.vault("b"))), marked
    assert net.text("b", "show").count("[CONFLICT]") == 2
    net.om("b", "resolve", hot["name"], "--value", "the database host is db2, port 5432")
    net.sync("b"), net.sync("a")
    for m in ("a", "b"):
        assert net.om(m, "conflicts")["conflicts"] == []
        assert sorted(hot_entries(net.vault(m))) == ["the database host is db2, port 5432"]
        assert not any(h.get("conflict") for h in net.om(m, "search", "database host")["hits"])


@pytest.mark.long
@pytest.mark.parametrize("keep", ["removal", "edit", "value"])
def test_a_hot_entry_removed_on_one_machine_and_edited_on_another_is_a_conflict_on_both(net, keep):
    edited = "the database host is db1, port 7432"
    net.om("a", "remove", "port 5432")
    net.om("b", "replace", "port 5432", "port 7432")
    net.sync("a")
    (hot,) = [c for c in net.sync("b")["new_conflicts"] if c["name"].startswith("hot:")]
    assert [c["name"] for c in net.sync("a")["new_conflicts"]] == [hot["name"]] and hot["file"] == "MEMORY.md"
    for m in ("a", "b"):
        assert hot_entries(net.vault(m)) == [edited]  # the edit stays until someone decides
        (found,) = net.om(m, "conflicts")["conflicts"]
        assert found["key"] == hot["name"] and found["file"] == "MEMORY.md"
        assert sorted(v["text"] for v in found["values"]) == [f"removed ({ENTRY})", edited], found
        assert f"optmem resolve {hot['name']}" in net.text(m, "context")
        assert "removed on one machine and edited on another" in net.text(m, "context")
        assert f"removed on one machine, edited on another: {hot['name']}" in net.text(m, "conflicts")
        # doctor reads it as `conflicts` does, from the journal every machine has
        (problem,) = [p for p in net.om(m, "doctor", code=1)["problems"] if p["code"] == "merge_conflict"]
        assert f"optmem resolve {hot['name']}" in problem["message"] and "removed on one clone" in problem["message"]
    removal = next(v["id"] for v in found["values"] if v["text"].startswith("removed"))
    edit = next(v["id"] for v in found["values"] if v["text"] == edited)
    how = {"removal": ["--keep", removal], "edit": ["--keep", edit], "value": ["--value", "the db host is db3"]}
    net.om("b", "resolve", hot["name"], *how[keep])
    net.sync("b"), net.sync("a"), net.sync("b")
    left = {"removal": [], "edit": [edited], "value": ["the db host is db3"]}[keep]
    for m in ("a", "b"):
        assert net.om(m, "conflicts")["conflicts"] == [], m
        assert "merge_conflict" not in [p["code"] for p in net.om(m, "doctor")["problems"]], m
        assert hot_entries(net.vault(m)) == left, m


@pytest.mark.long
def test_a_hot_entry_removed_then_added_back_and_edited_elsewhere_is_no_conflict(net):
    net.om("a", "remove", "port 5432")
    net.sync("a"), net.sync("b")
    net.om("b", "add", ENTRY)  # b saw the removal, and wants the entry back, edited
    net.om("b", "replace", "port 5432", "port 7432")
    net.sync("b"), net.sync("a")
    for m in ("a", "b"):
        assert net.om(m, "conflicts")["conflicts"] == []
        assert hot_entries(net.vault(m)) == ["the database host is db1, port 7432"]


def _outline(net: Net, machine: str, domain: str) -> list[dict]:
    """Every node of a domain's tree on a machine, from the outline (root left out), with its children."""
    out: list[dict] = []

    def walk(node: dict) -> None:
        if not node["id"].endswith("/root"):
            out.append({**node, "kids": net.om(machine, "tree", node["id"])["node"]["children"]})
        for kid in node.get("children", []):
            walk(kid)

    for root in net.om(machine, "tree", "--domain", domain)["roots"]:
        walk(root)
    return out


@pytest.mark.long
def test_records_another_clone_wrote_earlier_keep_the_tree_in_time_order_at_every_level(net):
    """Review 11, finding 8: a record that comes in by sync dated among sealed nodes was sealed in
    a node of its own, whose parent reached across its elders (L2 11-03 → 11-09 beside L3 11-01 →
    11-08). A record inside a node's range joins that node; one between two nodes is sealed where
    it stands and joins the parent of the node before it; the nodes above are made again."""
    (net.vault("a") / "optmem.toml").write_text('[tree]\nrun = 2\nfanout = 2\n[lifecycle]\nauto_sweep = "off"\n')

    def at(machine: str, when: str, text: str) -> str:
        res = CLI("--vault", str(net.vault(machine)), "append", text, "-d", "ops", "--json",
                  env={**net.env(machine), "OPTMEM_NOW": when})  # fmt: skip
        assert res.exit_code == 0, res.stderr
        return json.loads(res.stdout)["id"]

    mine = [at("a", f"2026-11-{d:02d}T10:00:00Z", f"ops note r{d} about host{d}") for d in range(1, 10)]
    net.om("a", "compact", "--domain", "ops")
    net.sync("a"), net.sync("b")
    late = [  # written on b, dated among what a sealed: inside L1 (r3 r4), between (r4 r5) nodes, after
        at("b", "2026-11-03T12:00:00Z", "ops note from b inside the third and fourth"),
        at("b", "2026-11-04T12:00:00Z", "ops note from b between the fourth and fifth"),
        at("b", "2026-11-09T12:00:00Z", "ops note from b after the ninth"),
    ]
    net.sync("b"), net.sync("a")
    net.om("a", "compact", "--domain", "ops")
    order = sorted(mine + late, key=lambda i: net.om("a", "get", i)["record"]["ts"])
    nodes = _outline(net, "a", "ops")
    by_id = {n["id"].rpartition("/")[2]: n for n in nodes}
    for level in sorted({n["level"] for n in nodes}):
        mine_level = sorted((n for n in nodes if n["level"] == level), key=lambda n: (n["from"], n["to"]))
        for x, y in zip(mine_level, mine_level[1:]):
            assert x["to"] < y["from"], (level, x["id"], x["from"], x["to"], y["id"], y["from"], y["to"])
    for n in nodes:
        if n["level"] == 1:  # consecutive records
            at_ = order.index(n["kids"][0])
            assert n["kids"] == order[at_ : at_ + len(n["kids"])], (n["id"], n["kids"])
        else:  # its children in time order, their ranges within its own
            kids = [by_id[k] for k in n["kids"]]
            assert [k["from"] for k in kids] == sorted(k["from"] for k in kids), n["id"]
            assert n["from"] == kids[0]["from"] and n["to"] == max(k["to"] for k in kids), n["id"]
    covered = [k for n in nodes if n["level"] == 1 for k in n["kids"]]
    assert set(covered) == set(order) - {order[-1]} or set(covered) == set(order), covered  # at most the tail raw
    assert net.om("a", "compact", "--domain", "ops")["domains"][0]["created"] == []  # idempotent
