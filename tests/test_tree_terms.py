"""The summary tree's "Key terms" are what the node's records state: never a guess's words, nor
an agent's inference's (tester 18 #4: "green, looks, result" of an unquoted `--basis inferred`
record stood among the key terms with no `[inferred]` badge anywhere near them)."""

from __future__ import annotations


def test_key_terms_come_from_no_guess_and_no_inference(cli, vault_path):
    for i in range(8):
        cli.json("append", f"staging deploy {i} finished")
    cli.json("append", "staging deploy result: looks green", "--basis", "inferred")
    cli.json("append", "maybe the staging deploy was sluggish", "--confidence", "0.3")
    for i in range(55):
        cli.json("append", f"lunch note number {i}, unrelated")
    cli.json("compact")
    node = next((vault_path / "tree" / "default").glob("L1-*.md")).read_text("utf-8")
    terms = next(line for line in node.splitlines() if line.startswith("Key terms: "))
    assert "staging" in terms and "deploy" in terms and "lunch" in terms
    for word in ("green", "looks", "result", "sluggish", "maybe"):
        assert word not in terms, (word, terms)
