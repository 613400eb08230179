"""The corrupted-file matrix: each damage × each command, in a real process.

    python bench/corrupt_matrix.py

For every scenario a fresh vault is made (records, hot memory, a handoff, a tree), damaged one
way, and every command is run on it. A command may succeed or refuse with a clear error (exit 0,
1, 2 or 3); it may never crash (exit 4, an internal error) nor hang, and it may never damage what
is stored: the log's bytes before the command stay its first bytes after it (appends only), and
hot files change only by the command's own edit. Prints a table and the count of crashes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

COMMANDS = [
    ["search", "端口"],
    ["get", "01KA00000000000000000000AA"],
    ["append", "after the damage"],
    ["add", "an entry after the damage"],
    ["show"],
    ["context", "--project", "webapp"],
    ["doctor"],
    ["stats"],
    ["compact"],
    ["handoff", "list"],
    ["history", "--key", "port"],
]


def damage_scenarios() -> dict[str, object]:
    big = "x" * 3_000_000
    return {
        "torn last line": lambda v: _append(v / "LOG.jsonl", b'{"v":1,"id":"01KTORN","ts":"2026'),
        "garbage line": lambda v: _append(v / "LOG.jsonl", b"not json at all\n"),
        "nested line": lambda v: _append(v / "LOG.jsonl", b"[" * 200_000 + b"\n"),
        "lone surrogate": lambda v: _append(v / "LOG.jsonl", b'{"ts":"2026-01-01T00:00:00Z","text":"\\ud800"}\n'),
        "invalid UTF-8 line": lambda v: _append(v / "LOG.jsonl", b'{"text":"\xff\xfe"}\n'),
        "huge line": lambda v: _append(v / "LOG.jsonl", json.dumps({"text": big}).encode() + b"\n"),
        "bad timestamp": lambda v: _append(v / "LOG.jsonl", b'{"ts":"soon","text":"when?"}\n'),
        "bad domain": lambda v: _append(
            v / "LOG.jsonl", b'{"ts":"2026-01-01T00:00:00Z","domain":"a b/../c","text":"x"}\n'
        ),
        "log is a folder": lambda v: (os.remove(v / "LOG.jsonl"), os.mkdir(v / "LOG.jsonl")),
        "index is garbage": lambda v: (v / ".cache" / "index.sqlite3").write_bytes(b"garbage"),
        ".cache is a file": lambda v: (shutil.rmtree(v / ".cache"), (v / ".cache").write_text("x")),
        "lock is a folder": lambda v: (os.remove(v / ".cache" / "lock"), os.mkdir(v / ".cache" / "lock")),
        "MEMORY.md not UTF-8": lambda v: (v / "MEMORY.md").write_bytes(b"ok\n\xc2\xa7\n\xff\xfe\n"),
        "MEMORY.md over limit": lambda v: (v / "MEMORY.md").write_text("y" * 5000),
        "MEMORY.md conflict markers": lambda v: (v / "MEMORY.md").write_text(
            "<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> other\n"
        ),
        "bad handoff front matter": lambda v: (v / "projects" / "webapp" / "HANDOFF.md").write_text("---\n: [\n---\nx"),
        "bad tree node": lambda v: next((v / "tree").rglob("L1-*.md")).write_text("no front matter"),
        "optmem.toml invalid": lambda v: (v / "optmem.toml").write_text("[limits\n"),
        "optmem.toml wrong type": lambda v: (v / "optmem.toml").write_text('[ranking]\ncandidates = "lots"\n'),
        "project folder bad name": lambda v: (
            os.makedirs(v / "projects" / "a b"),
            (v / "projects" / "a b" / "HANDOFF.md").write_text("x"),
        ),
    }


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def make_vault(root: Path) -> Path:
    v = root / "v"

    def run(*a: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "optmem", "--vault", str(v), *a], capture_output=True, text=True, check=True
        )

    v.mkdir(parents=True)
    (v / "optmem.toml").write_text("[tree]\nrun = 2\nfanout = 2\n")
    for i in range(6):
        run("append", f"端口 record {i}", "--key", "port", "--domain", "code", "--project", "webapp")
    run("add", "a hot entry")
    run("handoff", "write", "-p", "webapp", "--done", "something")
    run("compact")
    (v / "optmem.toml").unlink()
    return v


def snapshot(v: Path) -> dict[str, bytes]:
    out = {}
    for name in ("LOG.jsonl", "MEMORY.md"):
        p = v / name
        if p.is_file():
            out[name] = p.read_bytes()
    return out


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="optmem-matrix-"))
    template = make_vault(work / "template")
    crashes, damaged, cells = 0, 0, 0
    rows = ["| damage | " + " | ".join(c[0] for c in COMMANDS) + " |", "| --- |" + " ---: |" * len(COMMANDS)]
    try:
        for name, hurt in damage_scenarios().items():
            codes = []
            for cmd in COMMANDS:
                case = work / "case"
                shutil.rmtree(case, ignore_errors=True)
                shutil.copytree(template.parent, case)
                v = case / "v"
                hurt(v)  # type: ignore[operator]
                before = snapshot(v)
                try:
                    res = subprocess.run(
                        [sys.executable, "-m", "optmem", "--vault", str(v), *cmd, "--json"],
                        capture_output=True,
                        text=True,
                        timeout=120,
                    )
                    code = res.returncode
                except subprocess.TimeoutExpired:
                    code = -1
                after = snapshot(v)
                cells += 1
                crashes += code in (4, -1) or code < 0
                lost = [
                    f
                    for f, data in before.items()
                    if not after.get(f, b"").startswith(data) and not (f == "MEMORY.md" and cmd[0] == "add")
                ]
                damaged += bool(lost)
                codes.append(str(code) + ("!" if lost else ""))
            rows.append(f"| {name} | " + " | ".join(codes) + " |")
        print("\n".join(rows))
        print(
            f"\n{len(damage_scenarios())} damages x {len(COMMANDS)} commands = {cells} runs; "
            f"crashes (exit 4 or hang): {crashes}; stored data damaged: {damaged}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.pop("OPTMEM_NOW", None)
    main()
