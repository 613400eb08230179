"""Settings: built-in defaults, overridden by the vault's `optmem.toml` and by `--set` pairs."""

from __future__ import annotations

import copy
from typing import Any

from optmem.errors import UsageError

DEFAULTS: dict[str, dict[str, Any]] = {
    "limits": {
        "memory": 2200,        # MEMORY.md characters
        "user": 1375,          # USER.md characters
        "project": 2200,       # projects/<name>/MEMORY.md characters
        "record_bytes": 65536,  # one record's text, UTF-8 bytes
        "warn_percent": 90,
    },
    "dedup": {
        "threshold": 0.9,      # normalised similarity at or above which texts are near duplicates
        "on_similar": "store",  # append: skip | store | supersede
    },
    "log": {
        "domain": "default",
    },
    "lock": {
        "timeout": 10.0,
    },
    "ranking": {
        "recency_window": 0.10,   # the largest recency bonus: re-orders hits within ~10 %
        "same_topic_window": 0.15,  # a newer same-topic record goes first within 15 % relevance
        "candidates": 100,        # records re-scored per query (at least 5x --limit)
        "postings_budget": 30000,  # above this many term matches, candidates are chosen, not all ranked
    },
    "tree": {
        "run": 64,
        "fanout": 8,
        "summarizer": "",
        "summarizer_timeout": 30.0,
        "max_chars": 1500,
    },
    "projects": {},  # claude-code hook: folder name → project
}


def load(toml_text: str | None, overrides: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Defaults merged with `toml_text` (the vault's optmem.toml) and `section.name=value` pairs."""
    merged = copy.deepcopy(DEFAULTS)
    if not toml_text and not overrides:
        return merged
    import tomllib

    if toml_text:
        try:
            data = tomllib.loads(toml_text)
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"optmem.toml is not valid TOML: {exc}; fix the file") from exc
        for section, values in data.items():
            if isinstance(values, dict):
                merged.setdefault(section, {}).update(values)
    for pair in overrides or []:
        section, name, value = _parse_override(pair)
        merged.setdefault(section, {})[name] = value
    return merged


def _parse_override(pair: str) -> tuple[str, str, Any]:
    if "=" not in pair or "." not in pair.split("=", 1)[0]:
        raise UsageError(f"--set {pair!r}: use section.name=value, e.g. ranking.candidates=300")
    import tomllib

    dotted, raw = pair.split("=", 1)
    section, name = dotted.strip().split(".", 1)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw  # a bare word is a string
    return section, name, value
