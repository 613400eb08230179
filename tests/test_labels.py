"""What a record is, said the same way on every surface a person reads: an agent's inference is
labelled wherever it is shown (one labelling function, `view.labels`)."""

from __future__ import annotations

FAR = "2027-12-06T00:00:00Z"  # a year on: the sweep cools what nobody used


def test_an_inference_reads_as_one_on_every_human_surface(cli, vault):
    guess = cli.json("append", "Alice works at Acme Corp", "--basis", "inferred")["id"]
    said = cli.json("append", "Carol lives in Paris", "--key", "carol.city")["id"]
    rival = cli.json("append", "Carol lives in Rome", "--key", "carol.city", "--basis", "inferred")["id"]
    unsure = cli.json("append", "Bob likes tea", "--basis", "inferred", "--confidence", "0.3")["id"]

    assert "INFERRED" in cli("search", "Alice").stdout  # (as it was)
    got = cli("get", guess).stdout
    assert got.splitlines()[0] == f"{guess}  [current]  [INFERRED]", got
    assert "[INFERRED]" in cli("history", guess).stdout
    assert "[INFERRED]" not in cli("get", said).stdout  # what was said is no inference

    lines = cli("conflicts").stdout.splitlines()
    assert [line for line in lines if rival[-8:] in line][0].endswith("[INFERRED]"), lines
    assert [line for line in lines if said[-8:] in line][0].endswith("Carol lives in Paris"), lines

    queue = cli("pending").stdout
    assert unsure[-8:] in queue and queue.rstrip().endswith("[INFERRED]"), queue
    assert cli.json("pending")["pending"][0]["basis"] == "inferred"  # (the MCP tool's text is this JSON)

    swept = cli("sweep", "--dry-run", env={"OPTMEM_NOW": FAR}).stdout
    assert [line for line in swept.splitlines() if guess[-8:] in line][0].endswith("[INFERRED]"), swept
    rows = cli.json("sweep", "--dry-run", env={"OPTMEM_NOW": FAR})["records"]
    assert {r["id"]: r.get("basis") for r in rows}[guess] == "inferred"


def test_the_labels_of_a_record_are_one_function_of_its_shape():
    from optmem.view import CONFLICT_LABEL, PENDING_LABEL, STATUS_LABEL, labels

    hit = {"id": "01ABCDEFGH", "status": "cold", "tier": "redline", "pending": True, "conflict": True}
    hit |= {"basis": "inferred", "state": True, "kind": "correction", "origin": "web", "superseded_by": None}
    assert labels(hit) == ["REDLINE", "COLD", "PENDING", "CONFLICT", "INFERRED", "STATE", "CORRECTION", "FROM WEB"]
    assert labels(hit, omit=(STATUS_LABEL, PENDING_LABEL, CONFLICT_LABEL)) == [
        "REDLINE",
        "INFERRED",
        "STATE",
        "CORRECTION",
        "FROM WEB",
    ]
    assert labels({"status": "superseded", "superseded_by": "01ABCDEFGHJKMNPQ"}) == ["SUPERSEDED by GHJKMNPQ"]
