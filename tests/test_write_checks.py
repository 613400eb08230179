"""What a write takes is checked where it is taken, the same on every way in (findings of
tester 8: F13 a hand-typed correction through `append`, F10 keys, F5/F6 names and flags, F9
`merge --fact`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import log_lines


def test_a_hand_typed_correction_through_append_meets_the_checks_correct_makes(cli, vault_path: Path):
    """`append "〔更正〕#ID …"` is a correction of ID as every reader takes it: it is refused as
    `correct` refuses it — a redline only by a redline (`redline_locked`), an old version of a
    fact (`superseded`, naming the current one: one fact never has two current corrections on
    one clone), an id no record has (`not_found`) — and otherwise stored as the correction."""
    rule = cli.json("append", "生产发布必须两人批准", "--redline")["id"]
    before = log_lines(vault_path)
    for text in (f"〔更正〕#{rule} 生产发布一人批准即可", f"[correction] #{rule[-8:]} release needs one approval only"):
        out = cli.json("append", text, code=1)["error"]
        assert out["code"] == "redline_locked" and rule in out["message"]
    assert log_lines(vault_path) == before  # nothing stored
    assert cli.json("append", f"〔更正〕#{rule} 生产发布三人批准", "--redline")["status"] == "stored"

    fact = cli.json("append", "数据库是 MySQL 5.7")["id"]
    fixed = cli.json("correct", fact, "数据库是 MySQL 8.0")["id"]
    out = cli.json("append", f"〔更正〕#{fact} 数据库其实是 Postgres", code=1)["error"]
    assert out["code"] == "superseded" and fixed in out["message"]
    out = cli.json("append", "〔更正〕#0123456789ABCDEF 数据库其实是 Postgres", code=1)["error"]
    assert out["code"] == "not_found" and "0123456789ABCDEF" in out["message"]
    stored = cli.json("append", f"〔更正〕#{fixed} 数据库其实是 Postgres")
    assert cli.json("get", stored["id"])["record"]["corrects"] == [fixed]
    assert cli.json("conflicts")["conflicts"] == []
    res = cli("doctor")
    assert res.exit_code == 0, res.stdout
