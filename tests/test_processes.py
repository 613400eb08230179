"""Real processes: several writers at once, a crash-torn log tail."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

from optmem import memory
from optmem.vault import Vault

from conftest import run_optmem

APPENDER = textwrap.dedent("""
    import sys
    from optmem import log
    from optmem.vault import Vault
    v = Vault(sys.argv[1])
    me = sys.argv[2]
    for i in range(int(sys.argv[3])):
        res = log.append(v, f"worker {me} record {i} 进程{me}第{i}条", domain="w" + me)
        assert res.status == "stored", res
""")
ADDER = textwrap.dedent("""
    import sys
    from optmem import memory
    from optmem.vault import Vault
    v = Vault(sys.argv[1])
    me = sys.argv[2]
    for i in range(int(sys.argv[3])):
        memory.add(v, f"fact {i} from adder {me}")
""")


def test_six_appenders_and_four_adders_lose_nothing(vault, vault_path):
    per_appender, per_adder = 40, 12
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(vault_path), str(i), str(per_appender)])
             for i in range(6)]
    procs += [subprocess.Popen([sys.executable, "-c", ADDER, str(vault_path), str(i), str(per_adder)])
              for i in range(4)]
    # two more through the real CLI, to include process start-up in the race
    procs += [subprocess.Popen([sys.executable, "-m", "optmem", "--vault", str(vault_path), "append",
                                f"cli append {i}"], stdout=subprocess.DEVNULL) for i in range(2)]
    for p in procs:
        assert p.wait(timeout=300) == 0
    raw = (vault_path / "LOG.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    lines = [json.loads(line) for line in raw.decode("utf-8").splitlines()]  # no torn line
    notes = [r for r in lines if r["kind"] == "note"]
    journal = [r for r in lines if r["kind"] == "memory"]
    assert len(notes) == 6 * per_appender + 2
    assert len(journal) == 4 * per_adder
    assert len({r["id"] for r in lines}) == len(lines)
    for i in range(6):
        assert {r["text"] for r in notes if r["domain"] == f"w{i}"} == {
            f"worker {i} record {n} 进程{i}第{n}条" for n in range(per_appender)}
    entries = memory.load(Vault(vault_path)).entries
    assert sorted(entries) == sorted(f"fact {i} from adder {a}" for a in range(4) for i in range(per_adder))


CRASHER = textwrap.dedent("""
    import os, signal, sys
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
    os.write(fd, b'{"v":1,"id":"01KCRASHED00000000000000","ts":"2026-11-29T00:00:00Z","text":"half a rec')
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_crash_torn_tail_is_tolerated_and_ended_by_the_next_append(vault_path):
    first = json.loads(run_optmem("append", "before the crash", "--json").stdout)["id"]
    crashed = subprocess.run([sys.executable, "-c", CRASHER, str(vault_path / "LOG.jsonl")])
    assert crashed.returncode == -signal.SIGKILL
    got = run_optmem("get", first, "--json")
    assert got.returncode == 0 and json.loads(got.stdout)["record"]["text"] == "before the crash"
    after = run_optmem("append", "after the crash", "--json")
    assert after.returncode == 0
    new_id = json.loads(after.stdout)["id"]
    lines = (vault_path / "LOG.jsonl").read_bytes().split(b"\n")
    assert lines[1].endswith(b'"text":"half a rec')          # the torn bytes are kept as they were
    assert json.loads(lines[2])["id"] == new_id                # and the new record is whole
    assert json.loads(run_optmem("get", new_id, "--json").stdout)["record"]["status"] == "current"
    assert os.path.getsize(vault_path / "LOG.jsonl") == len(b"\n".join(lines))
