"""`context` at any size of log (issue 43, item 3): a session start reads what can be in its block
— the redlines that fit, and of the parts the redlines leave no room for, how many items they
have — and the block is the same to the byte as the one made from everything."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import put

from optmem import clock, context
from optmem.context import Section, fit
from optmem.errors import UsageError
from optmem.index import Index
from optmem.safety.fence import TITLES
from optmem.vault import Vault


def _conflicts(vault: Vault, monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """`n` keys with two values written the same day: open conflicts (the article's window)."""
    for i in range(n):
        monkeypatch.setenv("OPTMEM_NOW", f"2026-05-10T0{i % 10}:{i // 10:02d}:00Z")
        put(vault, f"the staging port of service {i} is 80{i:02d}", key=f"svc{i}.port", gate=False)
        monkeypatch.setenv("OPTMEM_NOW", f"2026-05-10T1{i % 10}:{i // 10:02d}:00Z")
        put(vault, f"the staging port of service {i} is 90{i:02d}", key=f"svc{i}.port", gate=False)


def _vault(root: Vault, monkeypatch: pytest.MonkeyPatch, redlines: int, conflicts: int) -> Vault:
    (root.root / "optmem.toml").write_text(
        '[lifecycle]\nauto_sweep = "off"\n[consolidation]\nconflict_window_days = 1\n', "utf-8"
    )
    vault = Vault(root.root)  # (its settings read anew)
    monkeypatch.setenv("OPTMEM_NOW", "2026-05-01T00:00:00Z")
    for i in range(redlines):
        put(vault, f"rule {i}: never deploy on a Friday without a rollback plan and a second reviewer", tier="redline")
    _conflicts(vault, monkeypatch, conflicts)
    monkeypatch.setenv("OPTMEM_NOW", "2026-05-11T00:00:00Z")
    return vault


def _read(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[int]]:
    """Counts what a block reads from the index: the redline rows of each page, and the records of
    conflicts read back to say their values."""
    pages: list[int] = []
    values: list[int] = []
    redlines, view_of = Index.current_redlines, Index.view_of

    def paged(self: Index, *args: object, **kw: object) -> object:
        got = redlines(self, *args, **kw)  # type: ignore[arg-type]
        pages.append(len(got))
        return got

    def viewed(self: Index, *args: object, **kw: object) -> object:
        values.append(1)
        return view_of(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Index, "current_redlines", paged)
    monkeypatch.setattr(Index, "view_of", viewed)
    return pages, values


@pytest.mark.long
def test_a_block_the_redlines_fill_reads_no_more_as_the_log_grows(vault, monkeypatch):
    """Redlines past those that fit are counted, not read; conflicts that cannot be shown are
    counted, not read back and said — twice as many of each cost the block nothing more."""
    vault = _vault(vault, monkeypatch, redlines=120, conflicts=6)
    pages, values = _read(monkeypatch)
    block = context.build(vault, budget=1500)
    assert block.omitted["conflicts"] == 6 and block.omitted["redlines"] + len(block.sections[0]["items"]) == 120
    assert sum(pages) <= context.CHUNK and values == []  # one page of redlines; no conflict's value
    assert "6 conflicts item(s)" in block.text
    # … and with room for them, the conflicts are said
    roomy = context.build(vault, budget=40_000)
    assert "which is right now? Ask the user" in roomy.text
    assert not roomy.omitted and len(values) == 12 and sum(pages) > 120


def _everything(vault: Vault, budget: int) -> str:
    """The block made from every redline and every conflict read and said, then fitted — what
    `context.build` must print whatever it leaves unread."""
    now = clock.now().timestamp()
    ids: list[str] = []  # (each redline's id, as the line naming the ones cut names them)
    rules, more = context._redlines(vault, None, now, 10**9, ids=ids)
    (items, _), (found, _) = context._records(vault, None, None, None, now)
    assert more == 0
    sections = [
        Section("redlines", TITLES["redlines"], rules, ids=ids),
        context._conflicts(vault, None, None),
        Section("memory", TITLES["memory"], context._hot(vault, "memory", None, [], (None, None))),
        Section("user", TITLES["user"], context._hot(vault, "user", None, [], (None, None))),
        Section("records", TITLES["records"], items),
        Section("found", TITLES["found"], found),
    ]
    return fit(sections, budget).text


@pytest.mark.long
def test_the_block_is_the_one_made_from_everything_at_every_budget(vault, monkeypatch):
    vault = _vault(vault, monkeypatch, redlines=9, conflicts=3)
    monkeypatch.setattr(context, "CHUNK", 2)  # the redlines read in pages of 2, 4, 8: their joins checked too
    (vault.root / "MEMORY.md").write_text("Three agents share this vault.\n§\nDeploys go through CI.\n", "utf-8")
    seen_crowded = seen_roomy = False
    for budget in range(200, 2600, 59):  # across the budget where the redlines stop fitting
        try:
            want = _everything(vault, budget)
        except UsageError:
            with pytest.raises(UsageError):
                context.build(vault, budget=budget)
            continue
        got = context.build(vault, budget=budget)
        assert got.text == want, budget
        seen_crowded = seen_crowded or "3 conflicts item(s)" in got.text
        seen_roomy = seen_roomy or "Ask the user" in got.text
    assert seen_crowded and seen_roomy  # both sides of the line were checked


def _split_vault(root: Vault, monkeypatch: pytest.MonkeyPatch, n: int) -> tuple[Vault, list[Any]]:
    """`n` keys each holding one value in `code` and another in `hermes` (every third of project
    webapp, the rest of none: under `-p webapp` two keys of one name are named alike), and two
    keys whose values differ only by a correction's prefix — one written by optmem, one a
    hand-typed line spelling it with a JSON escape: those are one value, no split."""
    (root.root / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    vault = Vault(root.root)
    written = []
    for i in range(n):
        for hour, (domain, port) in enumerate((("code", 8000 + i), ("hermes", 9000 + i))):
            monkeypatch.setenv("OPTMEM_NOW", f"2026-05-{10 + i // 10:02d}T{hour + 10}:{i % 10:02d}:00Z")
            project = "webapp" if i % 3 == 0 else None
            key = f"svc{i // 2 if i % 3 else i}.port"  # (svc0.port of webapp and of none, …)
            written.append(put(vault, f"service {i} listens on port {port}", key=key, domain=domain, project=project))
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-01T10:00:00Z")
    put(vault, "the cache lives in redis", key="cache.where", domain="code")
    put(vault, "[correction] the cache lives in redis", key="cache.where", domain="hermes")
    put(vault, "the queue is rabbitmq", key="queue.what", domain="code")
    line = {"v": 1, "id": "01M9200000000000000000000Q", "ts": "2026-06-01T11:00:00Z", "domain": "hermes"}
    line |= {"kind": "note", "tier": "normal", "key": "queue.what", "text": "\\u005bcorrection] the queue is rabbitmq"}
    with (vault.root / "LOG.jsonl").open("a", encoding="utf-8") as log:  # (typed by hand: `text` escaped)
        log.write(json.dumps(line).replace("\\\\u005b", "\\u005b") + "\n")
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-02T00:00:00Z")
    return vault, written


@pytest.mark.long
def test_keys_split_between_domains_past_the_budget_are_named_not_read(vault, monkeypatch):
    """The keys another domain holds otherwise past what the budget can show are named on the
    summary line and counted, not read back and said (a log of a million records holds
    thousands): the block is the one made from every key said, to the byte, at every budget,
    with and without a project or a domain — and a small budget reads the values of a few keys."""
    vault, _ = _split_vault(vault, monkeypatch, 24)
    full = context._split

    def everything(*args: Any, **kw: Any) -> Section:
        return full(*args, **(kw | {"budget": None}))

    seen_cut = seen_whole = False
    for scope in ({}, {"project": "webapp"}, {"domain": "hermes"}, {"project": "webapp", "domain": "code"}):
        for budget in (*range(700, 6000, 433), 40_000):
            try:
                got = context.build(vault, budget=budget, **scope)
            except UsageError:
                continue
            monkeypatch.setattr(context, "_split", everything)
            try:
                want = context.build(vault, budget=budget, **scope)
            finally:
                monkeypatch.setattr(context, "_split", full)
            assert got == want, (scope, budget)
            split = [s for s in got.sections if s["name"] == "across_domains"][0]
            seen_cut = seen_cut or (bool(split["items"]) and "summary" in split)
            seen_whole = seen_whole or (bool(split["items"]) and not split["omitted"])
    assert seen_cut and seen_whole  # both a part cut to a few keys and one said whole were checked
    _, values = _read(monkeypatch)
    small = context.build(vault, budget=1500)
    read = len(values)
    monkeypatch.setattr(context, "_split", everything)
    assert context.build(vault, budget=1500) == small
    assert small.omitted["across_domains"] > 15 and 0 < read <= 12 and len(values) - read >= 40  # (a few keys' values)


def test_a_key_split_between_domains_reads_as_it_did(vault, monkeypatch):
    """The lines of the part, word for word: a key said with each domain's value, the keys cut
    named on one line, and two values that differ only by a correction's prefix not split."""
    vault, written = _split_vault(vault, monkeypatch, 3)
    block = context.build(vault, budget=900)
    split = [s for s in block.sections if s["name"] == "across_domains"][0]
    code, hermes = written[0], written[1]
    assert split["items"] == [
        f"- svc0.port (project webapp) holds a different current value in 2 domains: “service 0 listens on port "
        f"8000” (code, 2026-05-10, id {code.id[-8:]}) and “service 0 listens on port 9000” (hermes, 2026-05-10, "
        f"id {hermes.id[-8:]}) — each domain keeps its own; if they are one fact, ask the user which is right now, "
        "then `optmem correct ID TEXT` the stale one"
    ]
    assert split["summary"] == (
        "- [2 more key(s) hold a different value in another domain: svc0.port, svc1.port — "
        "`optmem conflicts` lists them]"
    )
    assert "cache.where" not in block.text and "queue.what" not in block.text


def _reference(idx: Index, now: float) -> list[tuple[str, str | None, frozenset[str]]]:
    """The split keys read from every keyed value (`Index.split_rows` of each key), oldest first —
    what the index's kept `split` table must say at any time."""
    pairs = idx.conn.execute("SELECT DISTINCT key, project FROM rec WHERE key IS NOT NULL").fetchall()
    out = []
    for key, project in pairs:
        rows = idx.split_rows(key, project, now)
        if rows:
            out.append((min(r.ts or 0 for r in rows), key, project, frozenset(r.domain for r in rows)))
    out.sort(key=lambda x: (x[0], x[1], x[2] is not None, x[2] or ""))
    return [(k, p, d) for _, k, p, d in out]


def test_the_split_keys_the_index_keeps_as_records_come_in_are_those_its_values_say(vault, monkeypatch):
    """The index keeps the keys another domain holds otherwise as records come in (a session start
    reads them, not every keyed value): after values written, corrected, replaced in their domain,
    expiring, and at times before and after they expire, it says what every value read says — and
    what an index built from the whole log says."""
    from optmem import facts
    from optmem.index import open_index

    vault, written = _split_vault(vault, monkeypatch, 6)
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-03T00:00:00Z")
    put(vault, "service 1 listens on port 9001", key="svc0.port", domain="code")  # agrees with hermes now
    put(vault, "the mail relay is postfix", key="mail.relay", domain="code", ttl="3d")
    put(vault, "the mail relay is exim", key="mail.relay", domain="hermes")
    put(vault, "the db is postgres 15", key="db.version", domain="code", project="webapp")
    put(vault, "the db is postgres 16", key="db.version", domain="hermes", project="webapp", ttl="10d")
    facts.correct(vault, written[3].id, "service 1 listens on port 8001")  # (hermes' value of svc0.port … of none)
    put(vault, "i am on call today", key="oncall", domain="code", state=True)
    put(vault, "bob is on call", key="oncall", domain="hermes")
    seen = []
    for day in ("2026-06-03T01:00:00Z", "2026-06-07T00:00:00Z", "2026-06-20T00:00:00Z"):
        monkeypatch.setenv("OPTMEM_NOW", day)
        now = clock.now().timestamp()
        with open_index(vault) as idx:
            kept, want = facts.split_names(idx, now), _reference(idx, now)
            counts = [facts.split_count(idx, now, p) for p in (None, "webapp", "nosuch")]
        with open_index(vault, rebuild=True) as idx:
            built = facts.split_names(idx, now)
        assert kept == want == built, day
        # (counted in SQL, what a block with no room for them says: as many as are named, of each project and of none)
        mine = [len([k for k, p, _ in kept if p in (None, project)]) for project in ("webapp", "nosuch")]
        assert counts == [len(kept), *mine]
        seen.append({k for k, _, _ in kept})
    assert "mail.relay" in seen[0] and "mail.relay" not in seen[1]  # (its code value expired)
    assert "db.version" in seen[1] and "db.version" not in seen[2]
    assert "oncall" not in seen[0] and "queue.what" not in seen[0] and "cache.where" not in seen[0]


def test_a_block_the_redlines_fill_counts_the_split_keys_without_reading_them(vault, monkeypatch):
    """When the redlines fill the budget, the keys another domain holds otherwise are only counted: in SQL, not read
    and sorted a row each (thousands at a million records) — the block the same to the byte as the one that names
    them all, with and without a project, and under a domain (which compares the domains as shown: read as before)."""
    from optmem import facts

    vault, _ = _split_vault(vault, monkeypatch, 12)
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-02T00:00:00Z")
    for i in range(30):
        put(vault, f"rule {i}: never deploy on a Friday without a rollback plan and a second reviewer", tier="redline")
    names, count = facts.split_names, facts.split_count
    calls: list[int] = []

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return names(*args, **kw)

    def named(idx: Index, now: float, project: str | None = None) -> int:  # (the count from every key named)
        return len([k for k, p, _ in names(idx, now) if not project or p in (None, project)])

    for scope in ({}, {"project": "webapp"}, {"project": "nosuch"}, {"domain": "hermes"}):
        for budget in (300, 800, 1500):
            monkeypatch.setattr(facts, "split_names", counted)
            try:
                got = context.build(vault, budget=budget, **scope)
            except UsageError:
                continue
            finally:
                monkeypatch.setattr(facts, "split_names", names)
            assert got.omitted.get("across_domains", 0) > 0 or scope.get("project") == "nosuch", (scope, budget)
            assert bool(calls) == ("domain" in scope), (scope, budget)  # (counted in SQL, unless a domain is given)
            calls.clear()
            monkeypatch.setattr(facts, "split_count", named)
            try:
                want = context.build(vault, budget=budget, **scope)
            finally:
                monkeypatch.setattr(facts, "split_count", count)
            assert got == want, (scope, budget)


def test_a_session_start_finds_the_split_keys_without_reading_their_values(vault, monkeypatch):
    """Which keys another domain holds otherwise is kept in the index: a block that can say a few
    of them compares the values of those few (`Index.said_as`), not of every such key."""
    vault, _ = _split_vault(vault, monkeypatch, 24)
    calls: list[int] = []
    said_as = Index.said_as

    def counted(self: Index, row: Any) -> str:
        calls.append(row.n)
        return said_as(self, row)

    monkeypatch.setattr(Index, "said_as", counted)
    block = context.build(vault, budget=1500)
    assert block.omitted["across_domains"] > 15
    assert 0 < len(calls) <= 12  # (every such key's two values: 48 and more)


def test_fitting_a_block_renders_each_part_once_however_many_items_it_cuts():
    """`fit` measures the block from its parts' kept lengths after each item it cuts: the parts
    are rendered for the block printed, not once per item cut (quadratic in a long part)."""
    renders: list[str] = []
    render = Section.render

    class Counted(Section):
        def render(self) -> str:
            renders.append(self.name)
            return render(self)

    sections = [
        Counted("redlines", TITLES["redlines"], ["never deploy on a Friday"]),
        Counted(
            "conflicts",
            TITLES["conflicts"],
            [f"conflict {i} — ask" for i in range(300)],
            names=[f"k{i}" for i in range(300)],
        ),
        Counted("records", TITLES["records"], [f"record number {i} says something" for i in range(3000)]),
    ]
    block = fit(sections, 1200)
    assert block.omitted["records"] == 3000 and block.omitted["conflicts"] > 250
    assert block.chars <= 1200 and "and " in block.sections[1]["summary"]
    assert len(renders) <= 2 * len(sections)


def _versions(vault: Vault, first: int, count: int, project: str | None = None) -> None:
    """`count` values of one key written as lines of the log, alternating domains a and b."""
    lines = []
    for i in range(first, first + count):
        ts = f"2026-05-{1 + i // 1440:02d}T{i // 60 % 24:02d}:{i % 60:02d}:00Z"
        line = {"v": 1, "ts": ts, "domain": "ab"[i % 2], "kind": "note", "tier": "normal", "origin": "agent"}
        line |= {"text": f"deploy status is step {i}", "key": "deploy.status", "project": project}
        lines.append(json.dumps(line) + "\n")
    with open(vault.root / "LOG.jsonl", "a", encoding="utf-8") as f:
        f.write("".join(lines))


def _regroups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts each time a key is said again in the index's `split` table (a row taken out of it)."""
    from optmem import index

    said: list[int] = []
    connect = index._connect

    def counted(path: Any) -> Any:
        conn = connect(path)
        conn.create_function("said_again", 0, lambda: said.append(1))
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'split'").fetchone():
            conn.execute("CREATE TEMP TRIGGER said AFTER DELETE ON main.split BEGIN SELECT said_again(); END")
        return conn

    monkeypatch.setattr(index, "_connect", counted)
    return said


@pytest.mark.parametrize("versions", [20, 400])
def test_a_new_value_says_its_key_again_once_however_many_versions_it_has(vault, monkeypatch, versions):
    """A new value of a key re-points every older version; the split table says the key again a
    fixed number of times for it, not once for each version (which made an append to a key of
    thousands of versions take seconds under the vault's lock) — and says what a build says."""
    from optmem import facts
    from optmem.index import open_index

    (vault.root / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    vault = Vault(vault.root)
    _versions(vault, 0, versions)
    with open_index(vault):
        pass
    said = _regroups(monkeypatch)
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-01T00:00:00Z")
    put(vault, "deploy status is final", key="deploy.status", domain="a")
    assert 1 <= len(said) <= 3  # (20 versions and 400: the same few)
    now = clock.now().timestamp()
    with open_index(vault) as idx:
        kept, want = facts.split_names(idx, now), _reference(idx, now)
    with open_index(vault, rebuild=True) as idx:
        built = facts.split_names(idx, now)
    assert kept == want == built == [("deploy.status", None, frozenset({"a", "b"}))]


def test_a_catch_up_of_many_values_of_one_key_says_it_once_as_a_build_does(vault, monkeypatch):
    """Hundreds of values of keys come in at once (another clone's lines): each key is said again
    once, at the end of the catch-up, and the split table says what every value read and a build
    say — for a key of no project, one of a project, and after values that agree again."""
    from optmem import facts
    from optmem.index import open_index

    (vault.root / "optmem.toml").write_text('[lifecycle]\nauto_sweep = "off"\n', "utf-8")
    vault = Vault(vault.root)
    _versions(vault, 0, 10)
    with open_index(vault):
        pass
    said = _regroups(monkeypatch)
    _versions(vault, 10, 300)
    _versions(vault, 0, 301, project="webapp")
    monkeypatch.setenv("OPTMEM_NOW", "2026-06-01T00:00:00Z")
    now = clock.now().timestamp()
    with open_index(vault) as idx:
        kept, want = facts.split_names(idx, now), _reference(idx, now)
    assert len(said) <= 2  # (one for the key that was split before; none a row)
    with open_index(vault, rebuild=True) as idx:
        built = facts.split_names(idx, now)
    assert kept == want == built
    assert {(k, p) for k, p, _ in kept} == {("deploy.status", None), ("deploy.status", "webapp")}
