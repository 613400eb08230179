"""`context` at any size of log (issue 43, item 3): a session start reads what can be in its block
— the redlines that fit, and of the parts the redlines leave no room for, how many items they
have — and the block is the same to the byte as the one made from everything."""

from __future__ import annotations

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
    rules, more = context._redlines(vault, None, now, 10**9)
    (items, _), (found, _) = context._records(vault, None, None, None, now)
    assert more == 0
    sections = [
        Section("redlines", TITLES["redlines"], rules),
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
