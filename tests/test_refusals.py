"""A refusal says what was wrong and what to do instead, and creates or damages nothing.

Each test sets up a vault the way a person (or a crash) can leave it, runs the command through
the CLI, and checks the error's exit code and words, and that the files are as they were.
"""

from __future__ import annotations

from pathlib import Path

from conftest import put


def _files(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` (folders as None), to compare before and after a refusal."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))}


def test_doctor_fix_on_a_log_that_is_a_folder_is_a_vault_error_and_leaves_no_half_built_index(
        cli, vault, vault_path):
    (vault_path / "LOG.jsonl").mkdir()
    (vault_path / "LOG.jsonl" / "kept.txt").write_text("mine")
    out = cli.json("doctor", "--fix", code=3)["error"]
    assert out["code"] == "unreadable"
    assert "LOG.jsonl" in out["message"] and "folder" in out["message"]
    assert (vault_path / "LOG.jsonl" / "kept.txt").read_text() == "mine"
    assert not list((vault_path / ".cache").glob("index*"))
    assert not (vault_path / "LOG.quarantine.jsonl").exists()
