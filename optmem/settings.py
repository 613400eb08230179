"""Settings: one typed, validated dataclass per section of `optmem.toml`.

Built-in defaults, overridden by the vault's `optmem.toml`, then by `section.name=value` pairs
(`eval --set`). A value of the wrong type (or outside its range) is a usage error naming the key,
the value and what was expected; an unknown section or key is a warning naming the nearest known
one — so a typo is never silently a no-op.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from optmem.errors import UsageError

ON_SIMILAR = ("skip", "store", "supersede")


def _choice(*values: str) -> dict[str, Any]:
    return {"choices": values}


def _at_least(low: float) -> dict[str, Any]:
    return {"min": low}


@dataclass(frozen=True)
class Limits:
    memory: int = field(default=2200, metadata=_at_least(1))       # MEMORY.md characters
    user: int = field(default=1375, metadata=_at_least(1))         # USER.md characters
    project: int = field(default=2200, metadata=_at_least(1))      # projects/<name>/MEMORY.md
    record_bytes: int = field(default=65536, metadata=_at_least(1))  # one record's text, UTF-8 bytes
    warn_percent: int = field(default=90, metadata=_at_least(0))


@dataclass(frozen=True)
class Dedup:
    threshold: float = field(default=0.9, metadata=_at_least(0))  # near-duplicate similarity
    on_similar: str = field(default="store", metadata=_choice(*ON_SIMILAR))  # append's default


@dataclass(frozen=True)
class LogSettings:
    domain: str = "default"


@dataclass(frozen=True)
class Lock:
    timeout: float = field(default=10.0, metadata=_at_least(0))


@dataclass(frozen=True)
class Ranking:
    recency_window: float = field(default=0.10, metadata=_at_least(0))  # the largest recency bonus
    same_topic_window: float = field(default=0.15, metadata=_at_least(0))  # newer same-topic first within this
    candidates: int = field(default=100, metadata=_at_least(1))       # re-scored per query (≥ 5x --limit)
    postings_budget: int = field(default=30000, metadata=_at_least(1))  # above: candidates are chosen
    k1: float = field(default=1.2, metadata=_at_least(0))             # BM25 term-frequency saturation
    b_min: float = field(default=0.3, metadata=_at_least(0))          # BM25 length normalisation, from
    b_max: float = field(default=1.0, metadata=_at_least(0))          # … uniform to widely spread lengths
    context_share: float = field(default=0.35, metadata=_at_least(0))  # of the best session neighbour's relevance
    context_window: int = field(default=2, metadata=_at_least(0))     # neighbours each side, same session
    context_top: int = field(default=10, metadata=_at_least(0))       # hits whose neighbours are fetched
    update_overlap: float = field(default=0.6, metadata=_at_least(0))  # matched-term overlap, update cue in query
    update_ratio: float = field(default=0.5, metadata=_at_least(0))    # score ratio, update cue in query
    update_overlap_plain: float = field(default=0.75, metadata=_at_least(0))  # … without a cue
    update_ratio_plain: float = field(default=0.8, metadata=_at_least(0))


@dataclass(frozen=True)
class TreeSettings:
    run: int = field(default=64, metadata=_at_least(2))
    fanout: int = field(default=8, metadata=_at_least(2))
    summarizer: str = ""
    summarizer_timeout: float = field(default=30.0, metadata=_at_least(0))
    max_chars: int = field(default=1500, metadata=_at_least(100))


SECTIONS: dict[str, type] = {
    "limits": Limits, "dedup": Dedup, "log": LogSettings, "lock": Lock, "ranking": Ranking,
    "tree": TreeSettings,
}
FREE_SECTIONS = ("projects",)  # claude-code hook: folder name → project (any keys, string values)


@dataclass(frozen=True)
class Settings:
    limits: Limits = Limits()
    dedup: Dedup = Dedup()
    log: LogSettings = LogSettings()
    lock: Lock = Lock()
    ranking: Ranking = Ranking()
    tree: TreeSettings = TreeSettings()
    projects: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def load(toml_text: str | None, overrides: list[str] | None = None) -> Settings:
    """Defaults merged with `toml_text` (the vault's optmem.toml) and `section.name=value` pairs."""
    if not toml_text and not overrides:
        return Settings()
    import tomllib

    raw: dict[str, dict[str, tuple[Any, str]]] = {}  # section → name → (value, where it came from)
    warnings: list[str] = []
    if toml_text:
        try:
            data = tomllib.loads(toml_text)
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"optmem.toml is not valid TOML: {exc}; fix the file") from exc
        for section, values in data.items():
            if not isinstance(values, dict):
                warnings.append(f"optmem.toml: {section} = … is not a [section]; it was ignored")
                continue
            for name, value in values.items():
                raw.setdefault(section, {})[name] = (value, "optmem.toml")
    for pair in overrides or []:
        section, name, value = _parse_override(pair)
        raw.setdefault(section, {})[name] = (value, "--set")
    parts: dict[str, Any] = {}
    for section, values in raw.items():
        if section in FREE_SECTIONS:
            parts[section] = _free(section, values)
        elif section in SECTIONS:
            parts[section] = _section(section, SECTIONS[section], values, warnings)
        else:
            origin = next(iter(values.values()))[1]
            warnings.append(f"{origin}: unknown section [{section}]{_nearest(section, [*SECTIONS, *FREE_SECTIONS])}; "
                            "it was ignored")
    return Settings(**parts, warnings=tuple(warnings))


def _section(section: str, cls: type, values: dict[str, tuple[Any, str]], warnings: list[str]) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    known: dict[str, Any] = {}
    for name, (value, origin) in values.items():
        f = fields.get(name)
        if f is None:
            warnings.append(f"{origin}: unknown setting {section}.{name}{_nearest(name, list(fields))}; "
                            "it was ignored")
            continue
        known[name] = _coerce(section, f, value, origin)
    return cls(**known)


def _coerce(section: str, f: dataclasses.Field[Any], value: Any, origin: str) -> Any:
    """The value as the field's type, or a usage error naming key, value and expected type."""
    expected = {"int": "an integer", "float": "a number", "str": "a string"}[str(f.type)]
    ok = (isinstance(value, int) and not isinstance(value, bool)) if f.type == "int" else \
        (isinstance(value, (int, float)) and not isinstance(value, bool)) if f.type == "float" else \
        isinstance(value, str)
    key = f"{section}.{f.name}"
    if not ok:
        raise UsageError(f"{origin}: {key} = {value!r} is not valid: expected {expected} "
                         f"(the default is {f.default!r})", key=key, value=_plain(value),
                         expected=expected)
    if f.type == "float":
        value = float(value)
    choices = f.metadata.get("choices")
    if choices and value not in choices:
        raise UsageError(f"{origin}: {key} = {value!r} is not valid: expected one of "
                         f"{', '.join(choices)}", key=key, value=value, expected=list(choices))
    low = f.metadata.get("min")
    if low is not None and value < low:
        raise UsageError(f"{origin}: {key} = {value!r} is not valid: expected at least {low:g}",
                         key=key, value=value, expected=f">= {low:g}")
    return value


def _free(section: str, values: dict[str, tuple[Any, str]]) -> dict[str, str]:
    out = {}
    for name, (value, origin) in values.items():
        if not isinstance(value, str):
            raise UsageError(f"{origin}: {section}.{name} = {value!r} is not valid: expected a string",
                             key=f"{section}.{name}", value=_plain(value), expected="a string")
        out[name] = value
    return out


def _plain(value: Any) -> Any:
    """A value as JSON can carry it (TOML dates and the like become text)."""
    return value if isinstance(value, (str, int, float, bool, list, dict)) or value is None else str(value)


def _nearest(name: str, known: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else f" (known: {', '.join(known)})"


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
