"""`eval`: the evaluation gate — a fixed set of queries, run before and after a change, kept only
if it really helped ("拿一组固定的查询考，动完记忆前后各跑一遍，确实见好才留").

Queries run on a temporary copy of the vault (the live one is never touched), with `--set`
overrides applied to the copy only. Per query: recall@k, the rank of the first expected hit,
and whether it was *stale* (a forbidden or superseded record ranked above the expected one).
Overall: mean recall, MRR and the stale rate.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from optmem import fsio
from optmem.errors import UsageError
from optmem.record import names
from optmem.vault import Vault

EPS = 1e-9


@dataclass(frozen=True)
class Evaluation:
    k: int
    overall: dict[str, Any]
    queries: list[dict[str, Any]]
    regressions: list[dict[str, Any]] | None = None
    saved: str | None = None
    settings: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # unknown settings in --set or optmem.toml

    @property
    def ok(self) -> bool:
        return not self.regressions

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"k": self.k, "overall": self.overall, "queries": self.queries}
        if self.regressions is not None:
            out["regressions"] = self.regressions
        if self.warnings:
            out["warnings"] = self.warnings
        return out


def load_queries(path: Path) -> list[dict[str, Any]]:
    raw = fsio.read_text(path)
    if raw is None:
        raise UsageError(f"no such file: {path}")
    out = []
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            q = json.loads(line)
        except ValueError as exc:
            raise UsageError(f"{path}:{n} is not JSON: {exc}") from exc
        if not isinstance(q, dict) or not isinstance(q.get("query"), str) or not q["query"].strip():
            raise UsageError(f'{path}:{n}: each line needs a "query" string')
        expect, text = q.get("expect"), q.get("expect_text")
        if not (isinstance(expect, list) and expect and all(isinstance(e, str) for e in expect)) and not (
            isinstance(text, str) and text
        ):
            raise UsageError(f'{path}:{n}: give "expect": [ids] or "expect_text": "…"')
        out.append(q)
    if not out:
        raise UsageError(f"{path} holds no queries")
    return out


def _matches(hit: dict[str, Any], q: dict[str, Any]) -> bool:
    if q.get("expect"):
        return any(names(e, hit["id"]) for e in q["expect"])
    return q["expect_text"] in hit["text"]


def _score(q: dict[str, Any], hits: list[dict[str, Any]]) -> dict[str, Any]:
    found = [i for i, h in enumerate(hits) if _matches(h, q)]
    if q.get("expect"):
        got = {e for e in q["expect"] for h in hits if _matches(h, {"expect": [e]})}
        recall = len(got) / len(q["expect"])
    else:
        recall = 1.0 if found else 0.0
    first = found[0] if found else len(hits)
    forbid = q.get("forbid") or []
    old = ("superseded", "removed")  # no longer what holds
    stale = any(h["status"] in old or any(names(f, h["id"]) for f in forbid) for h in hits[:first])
    return {"query": q["query"], "recall": round(recall, 4), "rank": found[0] + 1 if found else None, "stale": stale}


def run(
    vault: Vault,
    queries_path: Path,
    *,
    k: int = 5,
    save: Path | None = None,
    baseline: Path | None = None,
    overrides: list[str] | None = None,
) -> Evaluation:
    """Score every query on a throw-away copy of the vault; compare with a baseline if given."""
    from optmem import search

    if k < 1:
        raise UsageError("--k must be at least 1")
    queries = load_queries(queries_path)
    base = _load_baseline(baseline, k) if baseline else None
    vault.require()
    with tempfile.TemporaryDirectory(prefix="optmem-eval-") as tmp:
        copy = Path(tmp) / "vault"
        shutil.copytree(vault.root, copy, ignore=shutil.ignore_patterns("lock"))
        trial = Vault(copy, overrides=list(overrides or []))
        warnings = list(trial.settings.warnings)  # a bad --set fails here, before any query runs
        scored = []
        for q in queries:
            filters = search.make_filters(domains=[q["domain"]] if q.get("domain") else None)
            hits = search.search(trial, q["query"], limit=k, filters=filters).to_json()["hits"]
            scored.append(_score(q, hits))
        from optmem import clock
        from optmem.index import open_index
        from optmem.stats import hygiene

        with open_index(trial) as idx:  # the store's hygiene, beside the answers' quality
            rates = hygiene(idx, clock.now().timestamp())
            # an expected id no record has (a typo) scores recall 0 whatever the ranking: said
            missing = sorted({e for q in queries for e in q.get("expect") or [] if not idx.resolve(e)})
    if missing:
        warnings.append(
            f"{len(missing)} expected id(s) name no record of the vault ({', '.join(missing[:10])}"
            + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
            + "): the queries expecting them score recall 0 whatever is found — check them (`optmem get ID`)"
        )
    n = len(scored)
    overall = {
        "recall": round(sum(s["recall"] for s in scored) / n, 4),
        "mrr": round(sum(1 / s["rank"] for s in scored if s["rank"]) / n, 4),
        "stale_rate": round(sum(s["stale"] for s in scored) / n, 4),
        "n": n,
        "duplicate_rate": rates["duplicate_rate"],
        "contradiction_rate": rates["contradiction_rate"],
        "duplicates": rates["duplicates"],
        "contradictions": rates["contradictions"],
    }
    result = Evaluation(
        k,
        overall,
        scored,
        _compare(base, overall, scored) if base else None,
        settings=list(overrides or []),
        warnings=warnings,
    )
    if save:
        fsio.atomic_write(
            save, json.dumps(result.to_dict() | {"settings": result.settings}, ensure_ascii=False, indent=2) + "\n"
        )
        result = replace(result, saved=str(save))
    return result


def _load_baseline(path: Path, k: int) -> dict[str, Any]:
    raw = fsio.read_text(path)
    if raw is None:
        raise UsageError(f"no such baseline: {path}")
    try:
        base = json.loads(raw)
        base_k, overall, queries = base["k"], base["overall"], base["queries"]
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path} is not a saved evaluation (use --save to make one)") from exc
    if base_k != k:
        raise UsageError(
            f"the baseline {path} was measured at k={base_k}, not k={k}; compare like "
            f"with like (--k {base_k}) or save a new baseline"
        )
    return {"overall": overall, "queries": queries}


def _compare(base: dict[str, Any], overall: dict[str, Any], scored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Everything that got worse than the baseline."""
    worse: list[dict[str, Any]] = []
    # the store's hygiene is gated on counts: deleting clean records must not make a rate "worse"
    for metric, higher_is_better in (
        ("recall", True),
        ("mrr", True),
        ("stale_rate", False),
        ("duplicates", False),
        ("contradictions", False),
    ):
        if metric not in base["overall"]:
            continue  # a baseline saved before the metric existed
        before, now = base["overall"][metric], overall[metric]
        if (now < before - EPS) if higher_is_better else (now > before + EPS):
            worse.append({"query": None, "metric": metric, "before": before, "after": now})
    earlier = {q["query"]: q for q in base["queries"]}
    for s in scored:
        b = earlier.get(s["query"])
        if b is None:
            continue
        if s["recall"] < b["recall"] - EPS:
            worse.append({"query": s["query"], "metric": "recall", "before": b["recall"], "after": s["recall"]})
        if (b["rank"] or 10**9) < (s["rank"] or 10**9):
            worse.append({"query": s["query"], "metric": "rank", "before": b["rank"], "after": s["rank"]})
        if s["stale"] and not b["stale"]:
            worse.append({"query": s["query"], "metric": "stale", "before": False, "after": True})
    return worse
