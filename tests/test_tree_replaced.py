"""A summary node none of whose records holds now (tenth stop, item 8) says what it covered and
that its records were replaced — not "Key terms: —" over an empty body."""

from __future__ import annotations


def test_a_node_whose_records_were_all_replaced_says_so(cli, vault, vault_path):
    (vault_path / "optmem.toml").write_text('[tree]\nrun = 4\n[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    for k in "abcd":
        cli.json("append", f"service {k} listens on port 1000", "-d", "code", "--key", f"svc.{k}")
    cli.json("compact")
    for k in "abcd":
        cli.json("append", f"service {k} now listens on port 2000", "-d", "code", "--key", f"svc.{k}")
    cli.json("compact")
    body = cli.json("tree", "code/L1-0001")["node"]["body"]
    assert "Key terms: —" not in body and "Key terms: listens, port, service" in body
    assert "None of these 4 records holds now (4 superseded)" in body, body


def test_a_forgotten_records_words_are_never_its_key_terms(cli, vault, vault_path):
    (vault_path / "optmem.toml").write_text('[tree]\nrun = 2\n[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    kept = cli.json("append", "the staging cluster runs on kubernetes", "-d", "ops", "--key", "staging.k8s")["id"]
    secret = cli.json("append", "zanzibar quokka pineapple", "-d", "ops")["id"]
    cli.json("compact")
    cli.json("append", "the staging cluster runs on nomad now", "-d", "ops", "--key", "staging.k8s")
    cli.json("forget", secret)
    cli.json("compact")
    body = cli.json("tree", "ops/L1-0001")["node"]["body"]
    assert "1 superseded" in body and "1 forgotten" in body, body
    assert "zanzibar" not in body and "quokka" not in body
    assert kept not in body
