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


def _typed(vault_path, *recs: dict) -> None:
    """Lines typed by hand into the log (no write gate saw them)."""
    import json

    with open(vault_path / "LOG.jsonl", "a", encoding="utf-8") as fh:
        for rec in recs:
            fh.write(json.dumps(rec) + "\n")


KEY1 = "sk_live_51QzX8kLm2Pq9RtY7uWv3Xn5Ab6Cd8Ef0Gh2Jk4Lm"
KEY2 = "sk_live_51AbC8kLm2Pq9RtY7uWv3Xn5Ab6Cd8Ef0Gh2Jk4Zz"


def test_a_replaced_nodes_key_terms_never_quote_a_hand_typed_secret(cli, vault, vault_path):
    (vault_path / "optmem.toml").write_text('[tree]\nrun = 2\n[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    _typed(
        vault_path,
        {"ts": "2026-11-01T10:00:00Z", "domain": "code", "text": f"stripe key is {KEY1}", "key": "stripe.key"},
        {"ts": "2026-11-02T10:00:00Z", "domain": "code", "text": f"stripe key is {KEY2}", "key": "stripe.key"},
    )
    cli.json("append", "stripe key lives in the vault now", "-d", "code", "--key", "stripe.key")
    cli.json("compact", "-d", "code")
    raw = "\n".join(p.read_text("utf-8") for p in (vault_path / "tree" / "code").glob("*.md"))
    assert "sk_live" not in raw.lower() and "51qzx8" not in raw.lower(), raw
    assert "None of these 2 records holds now" in raw, raw


def test_a_current_hand_typed_secret_is_never_written_in_clear_into_a_node(cli, vault, vault_path):
    (vault_path / "optmem.toml").write_text('[tree]\nrun = 2\n[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    _typed(
        vault_path,
        {"ts": "2026-11-01T10:00:00Z", "domain": "code", "text": f"billing env: {KEY1}"},
        {"ts": "2026-11-02T10:00:00Z", "domain": "code", "text": "the billing worker runs hourly"},
    )
    cli.json("compact", "-d", "code")
    raw = "\n".join(p.read_text("utf-8") for p in (vault_path / "tree" / "code").glob("*.md"))
    assert "sk_live" not in raw.lower() and "51qzx8" not in raw.lower(), raw
    assert "[BLOCKED: stripe_key]" in raw and "billing worker runs hourly" in raw, raw
