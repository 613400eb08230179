"""Knowledge updates on a set nobody tuned to: does the newer value come first, is the older kept?

    python bench/updates.py                          # both halves, through the CLI (~4 min on 2 cores)
    python bench/updates.py --half tune --jobs 2     # the half you may read failures of
    python bench/updates.py --limit-cases 20         # a quick look
    python bench/updates.py --setting ranking.change_updates=false  # a setting, through optmem.toml
    python bench/updates.py --cmd "optmem --vault {vault} --set ranking.reorder_top=1 search {query} \\
        --limit {k} --until {now} --json"        # any command (once the global --set exists)
    python bench/updates.py --workdir /tmp/upd --reuse --half tune --failures   # again: ~30 s
    python bench/updates.py --json /tmp/updates.json # the figures, and the tune half's rankings

The data is in bench/updates/ (README.md there: the format, how the halves are split). Each case
is a subject whose value changed: an older statement, a newer one days to months later,
distractors (the same kind of statement about another person, ticket, project, server: not an
update of this subject) and a question asking the current value; a third of the cases also ask
for the old one. All cases of one half and that half's filler notes go into ONE vault (a pooled
store, as an agent's memory is), appended in time order through `optmem append` with
OPTMEM_NOW set to each record's time, so the write gate sees every record as it would in use
(its `possible_update` guesses feed ranking). `[lifecycle] auto_sweep = "off"` keeps old
records warm. `--load direct` writes the same records as LOG.jsonl lines instead (seconds, not
minutes; no write gate, so no `may_update` links: a different store, say so when quoting it).

Every question runs through the search command with OPTMEM_NOW = the question's time (after the
newer statement) and `--until` that time, so records of other cases dated later are not in the
store it sees (hits dated later are dropped anyway, and counted, for a command without --until).

The figures mirror ../shared/retrieval (harness/lme_baseline.py, "Knowledge-update ordering"):
  newer-first   the highest-ranked of the two statements in the top 10 is the newer one
  older-first   … is the older one (for a question about the current value: the stale value wins)
  none          neither statement is in the top 10   (newer-first + older-first + none = 100 %)
  newer@10 / older@10 / both@10   that statement (both) in the top 10
For the old-value questions ("where did Alice live before?") older-first is the right answer.

Only the tune half's per-question rankings are printed (--failures) and written (--json): read
failures there. The held-out half is for measuring; --held-out-details exists for the final
report, not for tuning.

Exit status: 0 ok; 2 the command failed on every one of the first queries (argv and stderr printed).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "updates"
SPLIT_SALT = "updates/"  # sha256(SPLIT_SALT + id) even: tune; odd: held-out (see updates/README.md)
TIME_SALT = "updates/time/"
BASE = datetime(2025, 1, 6, tzinfo=UTC)
CASE_SPREAD_DAYS = 240  # a case's first statement falls in the first 240 days of the store
FILLER_SPREAD_DAYS = 600  # filler notes are spread over the whole store
DEPTH = 10
HALVES = ("tune", "held-out")

SEARCH_CMD = "optmem --vault {vault} search {query} --limit {k} --until {now} --json"
ADD_CMD = "optmem --vault {vault} append {text} --json"
INIT_CMD = "optmem --vault {vault} init"
TOML = '[lifecycle]\nauto_sweep = "off"\n'
TIMEOUT_S = 120.0
FAIL_FAST_AFTER = 5


# ------------------------------------------------------------------------------ data


def _h(salt: str, text: str) -> int:
    return int(hashlib.sha256((salt + text).encode("utf-8")).hexdigest(), 16)


def half_of(item_id: str) -> str:
    """The half a case (or filler) belongs to: a stable hash of its id, never of its content."""
    return "tune" if _h(SPLIT_SALT, item_id) % 2 == 0 else "held-out"


def load_cases(path: Path = DATA / "cases.jsonl") -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_fillers(path: Path = DATA / "fillers.jsonl") -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _at(day0: datetime, day: int, key: str, lo_min: int, span_min: int) -> datetime:
    """`day` days after day0, at a time of day fixed by the hash of key (lo_min + [0, span_min))."""
    return day0 + timedelta(days=day, minutes=lo_min + _h(TIME_SALT, key) % span_min)


def timeline(case: dict[str, Any]) -> dict[str, Any]:
    """Absolute times of one case: its records between 08:00 and 19:59, its questions after 20:00
    of the question's day (a day after the newer statement or later, so always after it)."""
    day0 = BASE + timedelta(days=_h(TIME_SALT, case["id"]) % CASE_SPREAD_DAYS)
    cid = case["id"]
    recs = [
        {"role": role, "text": case[role]["text"], "ts": _iso(_at(day0, case[role]["day"], f"{cid}/{role}", 480, 720))}
        for role in ("old", "new")
    ]
    for i, d in enumerate(case["distractors"]):
        recs.append(
            {
                "role": "distractor",
                "kind": d.get("kind", "?"),
                "text": d["text"],
                "ts": _iso(_at(day0, d["day"], f"{cid}/d{i}", 480, 720)),
            }
        )
    now = _iso(_at(day0, case["question"]["day"], cid + "/ask", 1200, 180))
    return {"records": recs, "now": now}


def filler_ts(filler: dict[str, Any]) -> str:
    return _iso(_at(BASE, _h(TIME_SALT, filler["id"]) % FILLER_SPREAD_DAYS, filler["id"] + "/t", 420, 900))


def build_half(
    half: str, cases: list[dict[str, Any]], fillers: list[dict[str, Any]], limit_cases: int | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(records in time order, questions) of one half's pooled store."""
    mine = [c for c in cases if half in ("all", half_of(c["id"]))][:limit_cases]
    records: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for c in mine:
        tl = timeline(c)
        for r in tl["records"]:
            records.append({**r, "case": c["id"], "lang": c["lang"]})
        base = {
            "case": c["id"],
            "lang": c["lang"],
            "topic": c.get("topic", "?"),
            "update_cue": c.get("cue", "?"),
            "now": tl["now"],
        }
        questions.append(
            {
                **base,
                "qid": c["id"] + "#current",
                "asks": "current",
                "text": c["question"]["text"],
                "query_cue": c["question"].get("cue", "?"),
            }
        )
        if c.get("past_question"):
            questions.append(
                {**base, "qid": c["id"] + "#past", "asks": "past", "text": c["past_question"], "query_cue": "past"}
            )
    for f in fillers:
        if half in ("all", half_of(f["id"])):
            records.append(
                {
                    "role": "filler",
                    "case": None,
                    "lang": f["lang"],
                    "text": f["text"],
                    "ts": filler_ts(f),
                    "filler": f["id"],
                }
            )
    # Time order; equal times (none today) keep the file's order.
    records.sort(key=lambda r: r["ts"])
    return records, questions


# ------------------------------------------------------------------------------ running the CLI


def run_cmd(
    template: str, env_now: str, timeout: float = TIMEOUT_S, **ph: str
) -> tuple[int, str, str, float, list[str]]:
    # Split first, then fill each argument: a query with quotes, $ or ; stays one argument.
    argv = [a.format(**ph) for a in shlex.split(template)]
    env = dict(os.environ, OPTMEM_NOW=env_now)
    env.pop("OPTMEM_VAULT", None)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.perf_counter() - t0, argv
    except subprocess.TimeoutExpired as e:
        return -1, "", f"timeout after {timeout}s: {e}", time.perf_counter() - t0, argv
    except OSError as e:
        return -1, "", f"cannot run {argv[0]!r}: {e}", time.perf_counter() - t0, argv


def search_in_process(vault: Path, query: str, now: str, k: int) -> tuple[int, str, str, float, list[str]]:
    """The search the default command runs, called in this process (`--in-process`): the same
    hits without a process start per query — for ranking work on a busy machine."""
    from optmem.index import make_filters
    from optmem.search import search
    from optmem.vault import Vault

    os.environ["OPTMEM_NOW"] = now
    t0 = time.perf_counter()
    try:
        res = search(Vault(vault), query, limit=k, filters=make_filters(until=now))
    except Exception as e:  # reported as a failed query, as a failed command is
        return 1, "", repr(e), time.perf_counter() - t0, ["search", query]
    out = json.dumps({"hits": [{"id": h.record.id} for h in res.hits]})
    return 0, out, "", time.perf_counter() - t0, ["search", query]


def _stable_id(rec: dict[str, Any]) -> str:
    return "u" + hashlib.sha256((rec["ts"] + "\0" + rec["text"]).encode("utf-8")).hexdigest()[:25].upper()


# a write the store refuses by design (a secret in the text): counted, not fatal
REFUSED_WRITES = frozenset({"unsafe_content"})


def load_vault(vault: Path, records: list[dict[str, Any]], mode: str, add_cmd: str, log: Any) -> dict[str, Any]:
    """Create the vault and put the records in; each record gets its `id`. Returns load stats."""
    vault.parent.mkdir(parents=True, exist_ok=True)
    rc, _, err, _, argv = run_cmd(INIT_CMD, records[0]["ts"], vault=str(vault))
    if rc != 0:
        raise SystemExit(f"init failed rc={rc}: {argv}\n{err[-2000:]}")
    (vault / "optmem.toml").write_text(TOML, encoding="utf-8")
    stats: dict[str, Any] = {"mode": mode, "records": len(records), "status": {}}
    t0 = time.perf_counter()
    if mode == "direct":
        with open(vault / "LOG.jsonl", "a", encoding="utf-8") as f:
            for r in records:
                r["id"] = _stable_id(r)
                f.write(
                    json.dumps(
                        {
                            "v": 1,
                            "id": r["id"],
                            "ts": r["ts"],
                            "domain": "default",
                            "kind": "note",
                            "tier": "normal",
                            "text": r["text"],
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
    else:
        for n, r in enumerate(records, 1):
            rc, out, err, _, argv = run_cmd(add_cmd, r["ts"], vault=str(vault), text=r["text"], ts=r["ts"])
            try:
                res = json.loads(out)
            except ValueError as exc:
                raise SystemExit(f"append failed rc={rc}: {argv}\n{err[-2000:]}\n{out[:500]}") from exc
            code = (res.get("error") or {}).get("code")
            if code in REFUSED_WRITES:
                # the store refuses what a user could not store either (a password in the note):
                # the record is missing from the vault, its questions count it as not found
                log(f"[load] refused ({code}): {r['text']!r}")
                stats["refused"] = stats.get("refused", 0) + 1
                r["id"] = f"(refused {n})"
                r["possible_update"] = []
                continue
            if not res.get("ok", rc == 0) or not res.get("id"):
                raise SystemExit(f"append stored nothing: {argv}\n{json.dumps(res, ensure_ascii=False)[:1000]}")
            status = res.get("status", "?")
            stats["status"][status] = stats["status"].get(status, 0) + 1
            if status == "duplicate":  # the same statement twice in the data: a data error, say so
                log(f"[load] duplicate: {r['text']!r} is {res.get('duplicate_of')}")
            r["id"] = res["id"]
            r["possible_update"] = [p["id"] for p in res.get("possible_update") or []]
            if n % 100 == 0:
                log(f"[load] {vault.name}: {n}/{len(records)} records")
    stats["load_s"] = round(time.perf_counter() - t0, 2)
    return stats


def data_key(a: argparse.Namespace) -> str:
    """What a built vault depends on: the data, the split and times, how it was loaded."""
    h = hashlib.sha256()
    for path in (Path(a.data) / "cases.jsonl", Path(a.data) / "fillers.jsonl"):
        h.update(path.read_bytes())
    h.update(
        json.dumps(
            [
                SPLIT_SALT,
                TIME_SALT,
                str(BASE),
                CASE_SPREAD_DAYS,
                FILLER_SPREAD_DAYS,
                TOML,
                a.load,
                a.add_cmd if a.load == "cli" else None,
                a.limit_cases,
            ]
        ).encode()
    )
    return h.hexdigest()


def reuse_vault(vault: Path, manifest: Path, key: str, records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The load stats of a vault built before from the same data the same way, its records' ids
    assigned; None when there is none. Its search index is deleted: it is derived, and the
    code under test (the tokeniser) may have changed since."""
    if not (vault.is_dir() and manifest.is_file()):
        return None
    doc = json.loads(manifest.read_text(encoding="utf-8"))
    if doc.get("key") != key or len(doc.get("records", [])) != len(records):
        return None
    for r, m in zip(records, doc["records"]):
        r["id"] = m["id"]
        if "possible_update" in m:
            r["possible_update"] = m["possible_update"]
    for idx in vault.rglob("index.sqlite3*"):
        idx.unlink()
    return {**doc["load"], "load_s": 0.0, "reused": True}


def write_manifest(manifest: Path, key: str, records: list[dict[str, Any]], load: dict[str, Any]) -> None:
    recs = [{k: r[k] for k in ("id", "possible_update") if k in r} for r in records]
    manifest.write_text(json.dumps({"key": key, "load": load, "records": recs}), encoding="utf-8")


def search_toml(settings: list[str]) -> str:
    """The vault's optmem.toml for the searches: TOML plus `section.name=value` pairs (a TOML value:
    0, 0.5, "off") — settings overrides that work with any optmem, before `--set` exists."""
    sections: dict[str, list[str]] = {}
    for item in settings:
        name, sep, value = item.partition("=")
        section, dot, key = name.strip().partition(".")
        if not (sep and dot and section and key and value.strip()):
            raise SystemExit(f"--setting wants section.name=value, not {item!r}")
        sections.setdefault(section, []).append(f"{key} = {value.strip()}")
    # TOML is one [lifecycle] table, which may not be opened twice: its pairs go right after it
    lines = [TOML.rstrip("\n"), *sections.pop("lifecycle", [])]
    for section, pairs in sections.items():
        lines += [f"[{section}]", *pairs]
    return "\n".join(lines) + "\n"


def gate_stats(records: list[dict[str, Any]]) -> dict[str, Any]:
    """How the write gate saw the data: the newer statement flagged as an update of the older
    (recall), a distractor flagged as an update of a case's older statement (a false flag)."""
    by_case: dict[str, dict[str, Any]] = {}
    for r in records:
        if r["case"]:
            by_case.setdefault(r["case"], {})
            if r["role"] in ("old", "new"):
                by_case[r["case"]][r["role"]] = r
    olds = {c["old"]["id"]: cid for cid, c in by_case.items() if "old" in c}
    text_of = {r["id"]: r["text"] for r in records}
    new_flagged = sum(1 for c in by_case.values() if c["old"]["id"] in c["new"].get("possible_update", []))
    false_flags: dict[str, int] = {}
    examples = []
    for r in records:
        wrong = [
            p
            for p in r.get("possible_update", [])
            if olds.get(p) not in (None, r["case"]) or (r["role"] != "new" and p in olds)
        ]
        if wrong:
            role = r["role"] if r["role"] != "new" else "newer statement of another case"
            false_flags[role] = false_flags.get(role, 0) + 1
            examples.append({"text": r["text"], "flagged_as_update_of": [text_of[p] for p in wrong]})
    return {
        "cases": len(by_case),
        "new_flagged_as_update_of_old": new_flagged,
        "false_flags_of_an_older_statement": false_flags,
        "false_flag_examples": examples,
    }


def parse_hits(out: str) -> list[dict[str, Any]]:
    doc = json.loads(out)
    hits = doc.get("hits") if isinstance(doc, dict) else doc
    if not isinstance(hits, list):
        raise ValueError("no 'hits' list in the output")
    return [h if isinstance(h, dict) else {"id": h} for h in hits]


# ------------------------------------------------------------------------------ scoring

KEYS = ("newer_first", "older_first", "none", "newer@10", "older@10", "both@10")


def score(ranked: list[str], new_id: str, old_id: str) -> dict[str, float]:
    """The ordering of one question's two statements in its top 10 (lme_baseline.score_ranking's
    KU part, with one newer and one older evidence record)."""
    top = ranked[:DEPTH]
    first = next((x for x in top if x in (new_id, old_id)), None)
    new_in, old_in = new_id in top, old_id in top
    return {
        "newer_first": float(first == new_id),
        "older_first": float(first == old_id),
        "none": float(first is None),
        "newer@10": float(new_in),
        "older@10": float(old_in),
        "both@10": float(new_in and old_in),
    }


def aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"n": 0}
    return {"n": len(rows), **{k: sum(r["m"][k] for r in rows) / len(rows) for k in KEYS}}


def groups(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    cur = [r for r in rows if r["asks"] == "current"]
    past = [r for r in rows if r["asks"] == "past"]
    out = {
        "current": aggregate(cur),
        "current EN": aggregate([r for r in cur if r["lang"] == "en"]),
        "current ZH": aggregate([r for r in cur if r["lang"] == "zh"]),
        "current, present cue": aggregate([r for r in cur if r["query_cue"] == "present"]),
        "current, plain": aggregate([r for r in cur if r["query_cue"] == "plain"]),
        "current, plain restatement": aggregate([r for r in cur if r["update_cue"] == "restate"]),
        "old value": aggregate(past),
        "old value EN": aggregate([r for r in past if r["lang"] == "en"]),
        "old value ZH": aggregate([r for r in past if r["lang"] == "zh"]),
    }
    return out


def by_update_cue(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    cues = sorted({r["update_cue"] for r in rows if r["asks"] == "current"})
    return {c: aggregate([r for r in rows if r["asks"] == "current" and r["update_cue"] == c]) for c in cues}


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def table(title: str, gs: dict[str, dict[str, Any]]) -> str:
    lines = [
        f"### {title}",
        "",
        "| questions | n | newer-first | older-first | none in top 10 | newer@10 | older@10 | both@10 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, a in gs.items():
        if a["n"]:
            lines.append(f"| {name} | {a['n']} | " + " | ".join(pct(a[k]) for k in KEYS) + " |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ one half


def run_half(
    half: str, cases: list[dict[str, Any]], fillers: list[dict[str, Any]], a: argparse.Namespace, log: Any
) -> dict[str, Any]:
    records, questions = build_half(half, cases, fillers, a.limit_cases)
    base = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="optmem-updates-"))
    vault = base / f"vault-{half}"
    manifest = base / f"vault-{half}.manifest.json"
    key = data_key(a)
    info: dict[str, Any] = {"half": half, "records": len(records), "questions": len(questions)}
    try:
        reused = reuse_vault(vault, manifest, key, records) if a.reuse else None
        if reused is not None:
            info["load"] = reused
        else:
            if vault.exists():
                shutil.rmtree(vault)
            manifest.unlink(missing_ok=True)
            info["load"] = load_vault(vault, records, a.load, a.add_cmd, log)
            if a.workdir:
                write_manifest(manifest, key, records, info["load"])
        if a.load == "cli":
            info["gate"] = gate_stats(records)
        # written after loading: the settings change the searches, never what the gate stored
        (vault / "optmem.toml").write_text(search_toml(a.setting), encoding="utf-8")
        log(
            f"[{half}] {len(records)} records "
            + ("reused" if reused else f"loaded in {info['load']['load_s']} s ({a.load})")
        )
        ids = {(r["case"], r["role"]): r["id"] for r in records if r["role"] in ("old", "new")}
        role_of = {r["id"]: (r["case"], r["role"]) for r in records}
        ts_of = {r["id"]: r["ts"] for r in records}

        def one(q: dict[str, Any]) -> tuple[dict[str, Any], tuple[int, str, str, float, list[str]]]:
            if a.in_process:
                return q, search_in_process(vault, q["text"], q["now"], a.fetch_k)
            return q, run_cmd(
                a.cmd,
                q["now"],
                vault=str(vault),
                query=q["text"],
                k=str(a.fetch_k),
                now=q["now"],
                date=q["now"][:10],
                qid=q["qid"],
            )

        rows: list[dict[str, Any]] = []
        times: list[float] = []
        failures: list[dict[str, Any]] = []
        future = foreign = failed = 0
        t0 = time.perf_counter()
        ex = ThreadPoolExecutor(max_workers=1 if a.in_process else max(1, a.jobs))  # (OPTMEM_NOW is per process)
        try:
            for n, (q, (rc, out, err, secs, argv)) in enumerate(ex.map(one, questions), 1):
                times.append(secs)
                ranked: list[str] = []
                try:
                    if rc != 0:
                        raise ValueError(f"rc={rc}")
                    for h in parse_hits(out):
                        hid = str(h.get("id"))
                        if hid not in role_of:
                            foreign += 1
                        elif ts_of[hid] > q["now"]:
                            future += 1
                            continue
                        ranked.append(hid)
                except ValueError as e:
                    failed += 1
                    if len(failures) < 3:
                        failures.append(
                            {
                                "qid": q["qid"],
                                "problem": str(e),
                                "argv": argv,
                                "stderr": err[-1500:],
                                "stdout": out[:300],
                            }
                        )
                    if n == FAIL_FAST_AFTER and failed == n:
                        print(json.dumps(failures, indent=2, ensure_ascii=False), file=sys.stderr)
                        raise SystemExit(2) from e
                m = score(ranked, ids[(q["case"], "new")], ids[(q["case"], "old")])
                labels = []
                for x in ranked[:DEPTH]:
                    c, role = role_of.get(x, (None, "?"))
                    labels.append(role if c == q["case"] else ("filler" if role == "filler" else "other-case"))
                rows.append({**q, "m": m, "ranked": labels})
        finally:
            ex.shutdown(wait=True, cancel_futures=True)  # after a failure, the queued queries are not run
        info["search_s"] = round(time.perf_counter() - t0, 2)
        info["ms_per_query"] = (
            {
                "mean": round(1000 * statistics.mean(times), 1),
                "p50": round(1000 * statistics.median(times), 1),
                "max": round(1000 * max(times), 1),
            }
            if times
            else {}
        )
        info["failed_queries"], info["future_hits_dropped"], info["unknown_ids"] = failed, future, foreign
        info["failures"] = failures
        info["groups"] = groups(rows)
        info["by_update_cue"] = by_update_cue(rows)
        info["rows"] = rows
        return info
    finally:
        if not a.workdir and not a.keep:
            shutil.rmtree(base, ignore_errors=True)
        elif a.keep:
            log(f"[{half}] vault kept at {vault}")


def failure_lines(rows: list[dict[str, Any]], cases: dict[str, dict[str, Any]]) -> list[str]:
    """The tune half's questions whose wanted statement did not come first, with their top hits."""
    lines = []
    for r in rows:
        want = "newer_first" if r["asks"] == "current" else "older_first"
        if r["m"][want]:
            continue
        c = cases[r["case"]]
        lines += [
            f"- {r['qid']} ({r['update_cue']}, {r['query_cue']}): {r['text']}",
            f"    old: {c['old']['text']}",
            f"    new: {c['new']['text']}",
            f"    top: {' '.join(r['ranked']) or '(nothing)'}",
        ]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--data",
        default=str(DATA),
        help="the data folder (cases.jsonl, fillers.jsonl; default bench/updates); `topic` and the "
        "cues may be missing (a set written elsewhere, e.g. bench/updates_blind: run it with --half all)",
    )
    ap.add_argument(
        "--half",
        choices=("tune", "held-out", "both", "all"),
        default="both",
        help="both: the two halves, each its own store; all: every case in one store (a set nobody tunes on)",
    )
    ap.add_argument("--limit-cases", type=int, help="only the first N cases of each half (file order)")
    ap.add_argument(
        "--cmd",
        default=os.environ.get("OPTMEM_SEARCH_CMD", SEARCH_CMD),
        help="search command template; placeholders {vault} {query} {k} {now} {date} {qid} "
        f"(default: {SEARCH_CMD!r})",
    )
    ap.add_argument(
        "--add-cmd",
        default=ADD_CMD,
        help="append command template for --load cli; placeholders {vault} {text} {ts} "
        f"(default: {ADD_CMD!r}); it must print the append's JSON",
    )
    ap.add_argument(
        "--load",
        choices=("cli", "direct"),
        default="cli",
        help="cli: every record through the append command (the write gate runs; minutes); "
        "direct: LOG.jsonl lines with their ts (seconds; no gate, no may_update links)",
    )
    ap.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="SECTION.NAME=VALUE",
        help="a setting for the searches, written into each vault's optmem.toml after loading "
        "(repeatable; a TOML value: --setting ranking.change_updates=false)",
    )
    ap.add_argument(
        "--in-process",
        action="store_true",
        help="search through optmem.search in this process, one query at a time (the optmem this Python "
        "imports; --cmd is not used, --setting is): the default "
        "command's hits without a process start per query",
    )
    ap.add_argument("--fetch-k", type=int, default=DEPTH, help="{k}: hits asked for (default 10)")
    ap.add_argument("--jobs", type=int, default=1, help="parallel searches, and both halves loaded at once when > 1")
    ap.add_argument("--workdir", help="build the vaults here (vault-tune, vault-held-out) and keep them")
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="with --workdir: reuse the vaults built there before from the same data, load mode and "
        "add command (their search index is rebuilt), else build them anew. For ranking work "
        "only: a change to the write path (the gate) needs a fresh load",
    )
    ap.add_argument("--keep", action="store_true", help="keep the temporary vaults")
    ap.add_argument("--json", dest="json_out", help="write the figures (and the tune half's rankings) here")
    ap.add_argument(
        "--failures",
        action="store_true",
        help="print the tune half's questions whose wanted statement did not come first",
    )
    ap.add_argument(
        "--held-out-details",
        action="store_true",
        help="also write the held-out half's per-question rankings to --json (for the final report: not for tuning)",
    )
    a = ap.parse_args(argv)
    if a.reuse and not a.workdir:
        ap.error("--reuse needs --workdir")
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731

    cases, fillers = load_cases(Path(a.data) / "cases.jsonl"), load_fillers(Path(a.data) / "fillers.jsonl")
    halves = HALVES if a.half == "both" else (a.half,)
    t0 = time.perf_counter()
    if a.jobs > 1 and len(halves) > 1:
        with ThreadPoolExecutor(max_workers=len(halves)) as ex:
            results = list(ex.map(lambda h: run_half(h, cases, fillers, a, log), halves))
    else:
        results = [run_half(h, cases, fillers, a, log) for h in halves]
    wall = time.perf_counter() - t0

    print(f"## Knowledge updates, {a.data} ({len(cases)} cases, {a.load} load)\n")
    print(
        f"Search: `{a.cmd}`"
        + (f", settings {' '.join(a.setting)}" if a.setting else "")
        + f"  \nWall time {wall:.1f} s (jobs={a.jobs}).\n"
    )
    for info in results:
        print(table(f"{info['half']}: {info['records']} records, {info['questions']} questions", info["groups"]))
        ms = info["ms_per_query"]
        load = "vault reused" if info["load"].get("reused") else f"load {info['load']['load_s']} s"
        notes = [
            f"{load}, search {info['search_s']} s ({ms.get('p50', 0)} ms/query p50)",
            f"failed queries {info['failed_queries']}, later hits dropped {info['future_hits_dropped']}, "
            f"unknown ids {info['unknown_ids']}",
        ]
        if info["load"].get("refused"):
            refused = info["load"]["refused"]
            notes.append(f"writes the store refused (missing; their questions count them not found): {refused}")
        if "gate" in info:
            g = info["gate"]
            notes.append(
                "write gate: newer statement flagged as an update of the older "
                f"{g['new_flagged_as_update_of_old']}"
                f"/{g['cases']}; records flagged as an update of another subject's older statement, by role: "
                f"{g['false_flags_of_an_older_statement'] or 0}; store statuses {info['load']['status']}"
            )
        notes.append(
            "newer-first by how the newer statement is phrased: "
            + ", ".join(
                f"{cue} {round(g['newer_first'] * g['n'])}/{g['n']}" for cue, g in info["by_update_cue"].items()
            )
        )
        print("\n".join(f"* {n}" for n in notes) + "\n")
        if info["failures"]:
            shown = json.dumps(info["failures"], indent=2, ensure_ascii=False)[:3000]
            print(f"First failures:\n```\n{shown}\n```\n")
    tune = next((i for i in results if i["half"] == "tune"), None)
    if a.failures and tune:
        print("### tune: questions whose wanted statement is not first\n")
        print("\n".join(failure_lines(tune["rows"], {c["id"]: c for c in cases})) or "(none)")
    if a.json_out:
        doc = {
            "cmd": a.cmd,
            "settings": a.setting,
            "add_cmd": a.add_cmd if a.load == "cli" else None,
            "load": a.load,
            "limit_cases": a.limit_cases,
            "wall_s": round(wall, 1),
            "halves": {},
        }
        for info in results:
            keep_rows = info["half"] == "tune" or a.held_out_details
            half_doc = {k: v for k, v in info.items() if k != "rows" or keep_rows}
            if not keep_rows and "gate" in half_doc:
                half_doc["gate"] = {k: v for k, v in half_doc["gate"].items() if k != "false_flag_examples"}
            doc["halves"][info["half"]] = half_doc
        Path(a.json_out).write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
