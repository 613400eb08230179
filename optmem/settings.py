"""Settings: one typed, validated record per section of `optmem.toml`.

Built-in defaults, overridden by the vault's `optmem.toml`, then by `section.name=value` pairs
(`eval --set`). A value of the wrong type (or outside its range) is a usage error naming the key,
the value and what was expected; an unknown section or key is a warning naming the nearest known
one — so a typo is never silently a no-op.
"""

from __future__ import annotations  # a field's Annotated[…] is read only when a file sets it

from optmem.errors import UsageError
from optmem.value import Annotated, Value

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any

ON_SIMILAR = ("skip", "store", "supersede")
ON_UPDATE = ("keep", "supersede", "ask")


class OneOf:
    """A constraint: the value is one of these."""

    def __init__(self, choices: tuple[str, ...]) -> None:
        self.choices = choices


class AtLeast:
    """A constraint: the value is at least this."""

    def __init__(self, low: float) -> None:
        self.low = low


class AtMost:
    """A constraint: the value is at most this."""

    def __init__(self, high: float) -> None:
        self.high = high


class Duration:
    """A constraint: the value is a duration like 2d, 12h, 30m."""


# Sections are `Value`s: a NamedTuple compiled its `__new__` and evaluated each field's
# `Annotated[type, constraint]` in every process (~5 ms for the ten sections); a field's type,
# default and constraint are declared together and read (`typing.get_type_hints`) only when a
# file or `--set` gives a value.
Section = Value

# `[limits] record_bytes`' range. The setting bounds what is written next; every read takes a
# record up to the largest it can be set to (`record.READ_BYTES`): a vault's optmem.toml, which a
# pushed commit can change, never hides or moves a line already stored.
MAX_COUNT = 10**9  # a count asked for (--limit, --history) past this is all of them: SQLite's integers hold it
RECORD_BYTES_MIN = 1024
RECORD_BYTES_MAX = 1 << 20


class Limits(Section):
    memory: Annotated[int, AtLeast(1)] = 2200  # MEMORY.md characters
    user: Annotated[int, AtLeast(1)] = 1375  # USER.md characters
    project: Annotated[int, AtLeast(1)] = 2200  # projects/<name>/MEMORY.md
    # one record's text (and evidence), UTF-8 bytes, as written next (reads: `record.READ_BYTES`)
    record_bytes: Annotated[int, AtLeast(RECORD_BYTES_MIN), AtMost(RECORD_BYTES_MAX)] = 65536
    warn_percent: Annotated[int, AtLeast(0)] = 90


class Dedup(Section):
    threshold: Annotated[float, AtLeast(0), AtMost(1)] = 0.9  # near-duplicate similarity
    on_similar: Annotated[str, OneOf(ON_SIMILAR)] = "store"  # append's default
    on_update: Annotated[str, OneOf(ON_UPDATE)] = "keep"  # … for a possible update of a record


class LogSettings(Section):
    domain: str = "default"


class Lock(Section):
    timeout: Annotated[float, AtLeast(0)] = 10.0


class Ranking(Section):
    recency_window: Annotated[float, AtLeast(0)] = 0.10  # the largest recency bonus
    candidates: Annotated[int, AtLeast(1)] = 60  # re-scored per query (at least --limit)
    newest: Annotated[int, AtLeast(0)] = 10  # … and the newest matches beside them
    postings_budget: Annotated[int, AtLeast(1)] = 5000  # above: candidates are chosen
    k1: Annotated[float, AtLeast(0)] = 1.2  # BM25 term-frequency saturation
    b_min: Annotated[float, AtLeast(0)] = 0.3  # BM25 length normalisation, from
    b_max: Annotated[float, AtLeast(0)] = 1.0  # … uniform to widely spread lengths
    context_share: Annotated[float, AtLeast(0)] = 0.2  # of the best session neighbour's relevance
    context_window: Annotated[int, AtLeast(0)] = 2  # neighbours each side, same session
    answer_share: Annotated[float, AtLeast(0)] = 1.0  # of the question the turn before it asked
    context_top: Annotated[int, AtLeast(0)] = 10  # hits whose neighbours are fetched
    update_overlap: Annotated[float, AtLeast(0)] = 0.6  # matched-term overlap, update cue in query
    update_ratio: Annotated[float, AtLeast(0)] = 0.5  # score ratio, update cue in query
    update_overlap_plain: Annotated[float, AtLeast(0)] = 0.75  # … without a cue
    update_ratio_plain: Annotated[float, AtLeast(0)] = 0.8
    update_overlap_note: Annotated[float, AtLeast(0)] = 0.3  # … between two notes, for a question: of the older's match
    update_ratio_note: Annotated[float, AtLeast(0)] = 0.3
    update_overlap_text: Annotated[float, AtLeast(0)] = 0.3  # … or of the older's own words, by rarity (0: off)
    update_said: bool = True  # … or, both found by a question, the newer says a change and puts a value for its value
    cjk_unigram: Annotated[float, AtLeast(0)] = 0.3  # weight of a Chinese query's single characters
    follow_share: Annotated[float, AtLeast(0)] = 1.0  # of a matched note's relevance, to its newer value
    follow_top: Annotated[int, AtLeast(0)] = 5  # … of the most relevant notes
    follow_overlap: Annotated[float, AtLeast(0)] = 0.12  # … that holds this share of its words, by rarity
    follow_rare: Annotated[int, AtLeast(0)] = 6  # … one of them a word held by at most this many records
    follow_values: bool = True  # … or, saying no change, puts a number in place of one of its numbers
    follow_unnamed: bool = True  # … lacking the question's name, when it names nobody the older does not
    attribute_share: Annotated[float, AtLeast(0)] = 0.5  # weight of another word of an attribute the question names
    attribute_candidates: Annotated[int, AtLeast(0)] = 10  # … the records holding such words, re-scored
    attribute_follow: bool = True  # … a newer note saying a change in another word of it follows a matched note
    reorder_top: Annotated[int, AtLeast(1)] = 10  # hits the newer-first rules re-order, whatever --limit
    superseded_factor: Annotated[float, AtLeast(0), AtMost(1)] = 0.75  # a superseded record's score ×
    # The language rules (`optmem.reading`), each on or off:
    stopwords: bool = True  # English function words are dropped from a query
    question_words: bool = True  # … and its form: "how many / much / long", 多少, 吗, 的 …
    pronouns: bool = True  # a pronoun (he, her, 我 left alone by a split) chooses no records
    time_words: bool = True  # Chinese time words (现在, 以前 …) split a query's pairs and a record's
    query_dates: bool = True  # the dates a query names are date terms, not words
    present_cues: bool = True  # "now", "currently", 现在 … ask for the present value
    past_cues: bool = True  # "previously", "used to", 以前 … ask what it used to be
    landmarks: bool = True  # … and what came after ("before Fastmail", 换 Loki 之前) weighs nothing
    names: bool = True  # a newer record without the query's name updates no older one
    cjk_characters: bool = True  # the update rule compares Chinese by the query's characters a record holds
    cjk_lone: bool = True  # the characters of a Chinese query's pairs no record holds choose records too
    cjk_fallback: bool = True  # a Chinese query none of whose pairs occurs: the records holding its characters


class Lifecycle(Section):
    """Importance, heat and the cold tier; pending memories (see `optmem.lifecycle`)."""

    importance: Annotated[float, AtLeast(0), AtMost(1)] = 0.5  # a record's default
    importance_evidence: Annotated[float, AtLeast(0), AtMost(1)] = 0.6
    importance_chat: Annotated[float, AtLeast(0), AtMost(1)] = 0.3
    importance_correction: Annotated[float, AtLeast(0), AtMost(1)] = 0.7
    # (bounded: an optmem.toml a pushed commit changes must not cool every record on the next sweep)
    decay: Annotated[float, AtLeast(0), AtMost(1)] = 0.02  # heat lost per day, agent memory (exp.)
    decay_session: Annotated[float, AtLeast(0), AtMost(1)] = 0.08  # … session-type notes (chat tier too)
    session_kinds: str = "handoff,session,chat"  # the kinds that decay as session notes
    cold_below: Annotated[float, AtLeast(0), AtMost(0.5)] = 0.05  # a sweep cools what is colder
    expired_grace_days: Annotated[float, AtLeast(0)] = 30.0  # an expired record cools after this
    pending_threshold: Annotated[float, AtLeast(0), AtMost(1)] = 0.7  # confidence below: pending
    pending_ttl_days: Annotated[float, AtLeast(0)] = 30.0  # an unconfirmed guess cools after this
    agent_confidence: Annotated[float, AtLeast(0), AtMost(1)] = 0.5  # MCP/hook appends' default
    auto_sweep: Annotated[str, OneOf(("daily", "off"))] = "daily"  # on a write, at most once a day
    background_above: Annotated[int, AtLeast(0)] = 100_000  # records: above, that sweep runs detached
    unchecked_days: Annotated[float, AtLeast(0)] = 90.0  # a fact that matters, unchecked this long, is marked (0: off)
    check_importance: Annotated[float, AtLeast(0), AtMost(1)] = 0.8  # importance from which a fact matters


class Consolidation(Section):
    """Keeping facts clean: when two values of a key are in conflict."""

    conflict_window_days: Annotated[float, AtLeast(0)] = 0.0  # values of a key this close in time
    state_ttl: Annotated[str, Duration()] = "2d"  # a state's lifetime unless --ttl is given


class Curator(Section):
    """The periodic curation pass: a model command the user configured proposes operations."""

    command: str = ""  # user configuration only (see COMMANDS)
    timeout: Annotated[float, AtLeast(1)] = 300.0  # seconds the command may take
    batch: Annotated[int, AtLeast(1)] = 100  # new records sent per run (at most)
    queries: str = "queries.jsonl"  # the eval gate's query set, in the vault


class McpSettings(Section):
    """`optmem mcp --http`, the hub: where its bearer token is kept and what bounds it (all user
    configuration only: see COMMANDS — a vault must not loosen its own server's limits)."""

    token_file: str = ""  # a file holding the token (else OPTMEM_MCP_TOKEN)
    max_connections: Annotated[int, AtLeast(1)] = 100  # open at once; one more is answered 503 and closed
    header_timeout: Annotated[float, AtLeast(0.1)] = 10.0  # seconds to send a request's headers, whole
    body_timeout: Annotated[float, AtLeast(0.1)] = 30.0  # seconds to send its body, whole
    max_body: Annotated[int, AtLeast(1024)] = 4 << 20  # bytes of one request's body; more: 413
    keep_alive: Annotated[int, AtLeast(1)] = 5  # seconds an idle connection is kept between requests
    workers: Annotated[int, AtLeast(0)] = 0  # processes answering side by side (0: one per CPU; 1: one process)
    allowed_origins: str = ""  # web origins besides localhost's, comma-separated (e.g. https://app.example)
    allowed_hosts: str = ""  # Host names besides the bound address and localhost (name, or name:port)


class TreeSettings(Section):
    run: Annotated[int, AtLeast(2)] = 64
    fanout: Annotated[int, AtLeast(2)] = 8
    summarizer: str = ""
    summarizer_timeout: Annotated[float, AtLeast(0)] = 30.0
    max_chars: Annotated[int, AtLeast(100)] = 1500


FILE_BYTES = 1 << 20  # what is read of an optmem.toml or the user's config.toml: a settings file is small


SECTIONS: dict[str, type[Section]] = {
    "limits": Limits,
    "dedup": Dedup,
    "log": LogSettings,
    "lock": Lock,
    "ranking": Ranking,
    "tree": TreeSettings,
    "lifecycle": Lifecycle,
    "consolidation": Consolidation,
    "curator": Curator,
    "mcp": McpSettings,
}
FREE_SECTIONS = ("projects",)  # claude-code hook: folder name → project (any keys, string values)
# Settings that name a command optmem runs, or the file its HTTP server's token is read from and
# what bounds that server. A vault can arrive through git, so whoever can push to it could run
# code on every machine (or make the token a file anyone can read, or open the hub): these are
# read from the user's own configuration (`~/.config/optmem/config.toml`, the environment, a
# command-line flag), never from a vault.
COMMANDS = (
    "tree.summarizer",
    "curator.command",
    *(f"mcp.{name}" for name in McpSettings._fields),
)


class Settings(Section):
    limits: Limits = Limits()
    dedup: Dedup = Dedup()
    log: LogSettings = LogSettings()
    lock: Lock = Lock()
    ranking: Ranking = Ranking()
    tree: TreeSettings = TreeSettings()
    lifecycle: Lifecycle = Lifecycle()
    consolidation: Consolidation = Consolidation()
    curator: Curator = Curator()
    mcp: McpSettings = McpSettings()
    projects: dict[str, str] = {}  # never mutated: a new Settings is made instead
    warnings: tuple[str, ...] = ()


def load(
    toml_text: str | None, overrides: list[str] | None = None, *, commands: bool = False, where: str = "optmem.toml"
) -> Settings:
    """Defaults merged with `toml_text` (the vault's optmem.toml) and `section.name=value` pairs.

    Without `commands` (a vault's own file), settings that name a command are ignored with a
    warning; `--set` pairs come from the user and may set them. Text that is no TOML is a file
    that cannot be read, as one that is no UTF-8 (`Unreadable`, naming `where`: the file)."""
    if not toml_text and not overrides:
        return Settings()
    import tomllib

    raw: dict[str, dict[str, tuple[Any, str]]] = {}  # section → name → (value, where it came from)
    warnings: list[str] = []
    if toml_text:
        try:
            data = tomllib.loads(toml_text)
        except tomllib.TOMLDecodeError as exc:
            from optmem.errors import Unreadable

            raise Unreadable(
                f"{where} is not valid TOML ({exc}); fix or move it, nothing was changed",
                file=where,
                reason=f"is not valid TOML ({exc})",
            ) from exc
        for section, values in data.items():
            if not isinstance(values, dict):
                warnings.append(f"optmem.toml: {section} = … is not a [section]; it was ignored")
                continue
            for name, value in values.items():
                if f"{section}.{name}" in COMMANDS and not commands:
                    warnings.append(
                        f"optmem.toml: {section}.{name} was ignored — commands optmem runs, and its hub's "
                        "token and bounds ([mcp]), come from your own configuration (~/.config/optmem/config.toml, "
                        "the environment or a flag), never from a vault, which can arrive through git"
                    )
                    continue
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
            origin = next((o for _, o in values.values() if o == "--set"), next(iter(values.values()))[1])
            if origin == "--set":
                raise UsageError(
                    f"--set {section}.…: unknown section [{section}]"
                    f"{_nearest(section, [*SECTIONS, *FREE_SECTIONS])}; nothing was run"
                )
            warnings.append(
                f"{origin}: unknown section [{section}]{_nearest(section, [*SECTIONS, *FREE_SECTIONS])}; it was ignored"
            )
    return Settings(**parts, warnings=tuple(warnings))


def to_plain(s: Settings) -> dict[str, Any]:
    """Loaded settings as JSON can carry them (`from_plain` reads them back): what the vault's
    cache of its optmem.toml holds (`Vault.settings`)."""
    return {
        **{name: getattr(s, name)._asdict() for name in SECTIONS},
        "projects": s.projects,
        "warnings": list(s.warnings),
    }


def from_plain(data: dict[str, Any]) -> Settings:
    """`to_plain`'s dict as Settings again (a value of a wrong type or an unknown field raises
    TypeError or KeyError: the caller reads the file instead)."""
    if not isinstance(data, dict):
        raise TypeError("not a dict")
    sections: dict[str, Any] = {name: cls(**data[name]) for name, cls in SECTIONS.items()}
    return Settings(
        **sections,
        projects=dict(data["projects"]),
        warnings=tuple(data["warnings"]),
    )


# Settings of rules that were removed: a vault that still sets one is told so, not that it is unknown.
RETIRED = {
    "ranking.same_topic_window": "the same-topic rule is gone: newer records go first through the update rule",
    "ranking.earlier_heads": "the earlier-statement rule is gone: it moved no development question set",
    "ranking.named_day": "a query naming a day is ranked as any other: the rule moved no development question",
    "ranking.perfect_tense": (
        'the present perfect ("how long have I had …") is no present cue: the rule moved no question'
    ),
    "ranking.measure_questions": '"what is my best time" no longer asks an amount: the rule moved one question',
    "ranking.amount_share": (
        'a record stating a number gains nothing for "how many": the rule helped only its development split'
        " (LongMemEval dev +0.012, held-out -0.004; LoCoMo 0) and cost the blind update pairs"
    ),
    "ranking.change_cues": (
        'a newer record that says it changed ("anymore", 改成) is no newer count: it moved no question on six sets'
    ),
    "ranking.cjk_common": (
        "a Chinese term weighs by BM25's positive idf as every term does: weighing common ones at nothing helped"
        " only the development set it was written on (MemoryBank-zh -0.010, MADial held-out -0.001)"
    ),
    "ranking.change_updates": (
        "a note that says it changed is no longer read as an update more readily: two notes that give another"
        " value of the same subject are (the update rule); it moved no question of the blind update pairs"
    ),
    "ranking.contractions": (
        "a query's 's, n't, 're are searched as any word: dropping them moved as many questions up as down"
        " (blind update pairs 1-15: 12 better, 10 worse; LoCoMo 73 questions, mixed)"
    ),
    "ranking.change_arrows": (
        'an arrow ("pw -> new") says no change of its own: the rule moved one question on each of three sets it'
        " was written on, and none of the sets it was checked on nor of held-out set 9"
    ),
}


def _section(section: str, cls: type[Section], values: dict[str, tuple[Any, str]], warnings: list[str]) -> Any:
    from typing import get_type_hints

    hints = get_type_hints(cls, include_extras=True)
    defaults = cls._field_defaults
    known: dict[str, Any] = {}
    for name, (value, origin) in values.items():
        if f"{section}.{name}" in RETIRED:
            warnings.append(f"{origin}: {section}.{name} is no longer read ({RETIRED[f'{section}.{name}']}); remove it")
            continue
        if name not in hints:
            said = f"unknown setting {section}.{name}{_nearest(name, list(hints))}"
            if origin == "--set":  # (asked for on this command line: refused, not ignored in silence)
                raise UsageError(f"--set {section}.{name}: {said}; nothing was run")
            warnings.append(f"{origin}: {said}; it was ignored")
            continue
        hint = hints[name]
        kind = getattr(hint, "__origin__", hint)
        rules = getattr(hint, "__metadata__", ())
        known[name] = _coerce(f"{section}.{name}", kind, rules, defaults[name], value, origin)
    return cls(**known)


def _coerce(key: str, kind: type, rules: tuple[Any, ...], default: Any, value: Any, origin: str) -> Any:
    """The value as the field's type, or a usage error naming key, value and expected type."""
    expected = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}[kind]
    ok = (
        (isinstance(value, int) and not isinstance(value, bool))
        if kind is int
        else (isinstance(value, (int, float)) and not isinstance(value, bool))
        if kind is float
        else isinstance(value, bool)
        if kind is bool
        else isinstance(value, str)
    )
    if not ok:
        raise UsageError(
            f"{origin}: {key} = {value!r} is not valid: expected {expected} (the default is {default!r})",
            key=key,
            value=_plain(value),
            expected=expected,
        )
    if kind is float:
        value = float(value)
        if value != value or value in (float("inf"), float("-inf")):  # (TOML's nan, inf, 1e400)
            raise UsageError(
                f"{origin}: {key} = {value!r} is not valid: expected a finite number{_fix(origin, default)}",
                key=key,
                value=repr(value),
                expected="a finite number",
            )
    for rule in rules:
        if isinstance(rule, OneOf) and value not in rule.choices:
            raise UsageError(
                f"{origin}: {key} = {value!r} is not valid: expected one of {', '.join(rule.choices)}",
                key=key,
                value=value,
                expected=list(rule.choices),
            )
        if isinstance(rule, AtLeast) and value < rule.low:
            raise UsageError(
                f"{origin}: {key} = {value!r} is not valid: expected at least {_num(rule.low)}{_fix(origin, default)}",
                key=key,
                value=value,
                expected=f">= {_num(rule.low)}",
            )
        if isinstance(rule, Duration):
            from optmem.clock import parse_ttl

            try:
                parse_ttl(value)
            except UsageError:
                raise UsageError(
                    f"{origin}: {key} = {value!r} is not valid: expected a duration such as 2d, 12h or 30m",
                    key=key,
                    value=value,
                    expected="a duration",
                ) from None
        if isinstance(rule, AtMost) and value > rule.high:
            raise UsageError(
                f"{origin}: {key} = {value!r} is not valid: expected at most {_num(rule.high)}{_fix(origin, default)}",
                key=key,
                value=value,
                expected=f"<= {_num(rule.high)}",
            )
    return value


def _num(bound: float) -> str:
    """A bound as written in a settings file: 1048576, 0.5 (not 1.04858e+06)."""
    return str(int(bound)) if bound == int(bound) else repr(bound)


def _fix(origin: str, default: Any) -> str:
    """What to do about a value out of range: where to change it, and the default."""
    where = "change it in optmem.toml or remove it" if origin == "optmem.toml" else f"change it ({origin})"
    return f"; {where} (the default is {default!r})"


def _free(section: str, values: dict[str, tuple[Any, str]]) -> dict[str, str]:
    out = {}
    for name, (value, origin) in values.items():
        if not isinstance(value, str):
            raise UsageError(
                f"{origin}: {section}.{name} = {value!r} is not valid: expected a string",
                key=f"{section}.{name}",
                value=_plain(value),
                expected="a string",
            )
        out[name] = value
    return out


def _plain(value: Any) -> Any:
    """A value as JSON can carry it (TOML dates and the like become text, and so do inf and nan,
    which JSON has no number for)."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return repr(value)
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
