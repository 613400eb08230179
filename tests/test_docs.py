"""The docs cannot drift from the code: every ```sh runnable block of README.md and docs/*.md runs
as printed, on a fresh vault, and prints what the un-marked block right after it shows; every
relative link between the pages resolves; the documented optmem.toml is the settings' defaults.

A runnable block is a fence whose info string is `sh runnable` (GitHub highlights it as `sh` and
shows nothing of the second word). It runs with `bash -euo pipefail` in an empty folder holding a
copy of `sample_vault/` when the block names it, with HOME, TMPDIR and OPTMEM_VAULT inside
tmp_path and the `optmem` installed beside this interpreter first on PATH, and stdin from
/dev/null — what a script or an agent's shell gets, with no terminal to take a command as a
person's (a step only a person may take says `--origin user`); the README's tour runs again
block after block in one shell at a terminal, as a reader pastes it (tester 16 #9: a tour step
passed only at a terminal)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import NamedTuple

import pytest
from conftest import HANG, in_terminal

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUNNABLE = "sh runnable"


class Block(NamedTuple):
    page: Path
    line: int  # of the opening fence, 1-based
    info: str  # the fence's info string ("sh runnable", "toml", "" …)
    text: str  # dedented by the fence's indentation


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, in order (a fence may be indented, inside a list item, and
    longer than three backticks, to show a fence inside it)."""
    return [b for b, _ in _fenced(page)]


def _fenced(page: Path) -> list[tuple[Block, range]]:
    out: list[tuple[Block, range]] = []
    lines = page.read_text("utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^( *)(`{3,})([^`]*)$", lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, start = len(opening.group(1)), opening.group(2), i
        body = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        out.append((Block(page, start + 1, opening.group(3).strip(), "\n".join(body) + "\n"), range(start, i + 1)))
        i += 1
    return out


def runnable() -> list[tuple[Block, Block | None]]:
    """Each runnable block with the output block shown right after it (blank lines between), if any."""
    found = []
    for page in PAGES:
        fenced = _fenced(page)
        lines = page.read_text("utf-8").splitlines()
        for n, (b, where) in enumerate(fenced):
            if b.info != RUNNABLE:
                continue
            after = fenced[n + 1] if n + 1 < len(fenced) else None
            shown = None
            if after and after[0].info == "" and all(not line.strip() for line in lines[where.stop : after[1].start]):
                shown = after[0]
            found.append((b, shown))
    return found


# Masks applied to what a block printed and to what the page shows alike: what differs from run
# to run (ids, ages, column alignment) must not decide, everything else must.
MASKS = [
    (re.compile(r"\b[0-9A-Z]{26}\b"), "<ID>"),  # a record id
    (re.compile(r"\b[0-9A-Z]{8}\b"), "<ID>"),  # … as human output shows it (its last 8)
    (re.compile(r"\b[0-9a-f]{8}\b"), "<ID>"),  # a hot-memory entry id
    (re.compile(r"\b\d+(?:s|m|h|d|w|mo|y) ago\b"), "<AGE> ago"),
]


def normal(line: str) -> str:
    for pattern, mask in MASKS:
        line = pattern.sub(mask, line)
    return " ".join(line.split())


def shown_in(expected: str, printed: str) -> str | None:
    """None when every line of `expected` is a line of `printed`, in order; else the first line
    missing. A line `…` stands for any lines; `…` ending a line stands for any end of it, and
    beginning one for any beginning."""
    out = [normal(line) for line in printed.splitlines()]
    at = 0
    for raw in expected.splitlines():
        want = normal(raw)
        if want in ("", "…"):
            continue
        pattern = re.compile("^" + ".*".join(re.escape(part.strip()) for part in want.split("…")) + "$")
        while at < len(out) and not pattern.match(out[at]):
            at += 1
        if at == len(out):
            return raw
        at += 1
    return None


def run_block(text: str, tmp_path: Path, *, terminal: bool = False) -> subprocess.CompletedProcess[str]:
    """`text` run as the module's docstring says: stdin from /dev/null, or a terminal (`terminal`)."""
    home, work, tmp = tmp_path / "home", tmp_path / "work", tmp_path / "tmp"
    for folder in (home, work, tmp):
        folder.mkdir(exist_ok=True)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Reader\n\temail = reader@example.com\n[init]\n\tdefaultBranch = main\n", "utf-8"
    )
    if "sample_vault" in text:  # a copy: no block may change the sample vault itself
        shutil.copytree(REPO / "sample_vault", work / "sample_vault", ignore=shutil.ignore_patterns(".cache"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPTMEM_", "GIT_", "XDG_", "VIRTUAL_ENV"))}
    env.update(
        HOME=str(home),
        TMPDIR=str(tmp),
        OPTMEM_VAULT=str(tmp_path / "vault"),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    )
    if terminal:
        return in_terminal(text, env, work, merged=True)  # (the reader's shell: what they type is theirs)
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", text],
        stdin=subprocess.DEVNULL,  # (no terminal: a command is an agent's unless it says --origin user)
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=str(work),
        timeout=HANG,
    )


CASES = runnable()


@pytest.mark.long
@pytest.mark.parametrize(("block", "shown"), CASES, ids=[f"{b.page.relative_to(REPO)}:{b.line}" for b, _ in CASES])
def test_a_runnable_block_runs_and_prints_what_the_page_shows(
    block: Block, shown: Block | None, tmp_path: Path
) -> None:
    res = run_block(block.text, tmp_path)
    where = f"{block.page.relative_to(REPO)}:{block.line}"
    assert res.returncode == 0, f"{where} exited {res.returncode}:\n{res.stdout[-4000:]}"
    if shown is not None:
        missing = shown_in(shown.text, res.stdout)
        assert missing is None, f"{where}: the output shown has {missing!r}; the block printed:\n{res.stdout}"


def test_every_page_has_runnable_blocks_and_the_marker_is_spelled_one_way() -> None:
    counts = {str(p.relative_to(REPO)): 0 for p in PAGES}
    for page in PAGES:
        for b in blocks(page):
            name = str(page.relative_to(REPO))
            assert "runnable" not in b.info or b.info == RUNNABLE, f"{name}:{b.line}: {b.info!r}"
            counts[name] += b.info == RUNNABLE
    # the index holds no commands and the benchmarks take minutes; every other page runs some
    assert sorted(name for name, n in counts.items() if n == 0) == ["docs/README.md", "docs/performance.md"], counts
    assert counts["README.md"] >= 6, counts


def test_the_masks_tell_a_different_line_from_an_id() -> None:
    assert shown_in("added [c4f40e4e] 用户的名字叫小明。", "added [1ac802d0] 用户的名字叫小明。") is None
    assert shown_in("7mo ago  code/webapp  P3G00148  a", " 2d ago  code/webapp      X15WV674  a") is None
    assert shown_in("added [c4f40e4e] 用户的名字叫小红。", "added [1ac802d0] 用户的名字叫小明。") is not None
    assert shown_in("one\n…\nthree", "one\ntwo\nthree") is None
    assert shown_in("three\none", "one\ntwo\nthree") == "one"  # in order
    assert shown_in("a long line …", "a long line that goes on") is None
    assert shown_in("… that goes on", "a long line that goes on") is None
    assert shown_in("a … on", "a long line that goes on") is None
    assert shown_in("a … off", "a long line that goes on") == "a … off"


# -- links ------------------------------------------------------------------------------------------
LINK = re.compile(r"\[[^\]]*\]\(([^()\s]+)\)")


def outside_blocks(page: Path) -> str:
    inside = {n for _, lines in _fenced(page) for n in lines}
    return "\n".join(line for n, line in enumerate(page.read_text("utf-8").splitlines()) if n not in inside)


def prose(page: Path) -> str:
    """The page without its fenced blocks and code spans (a link inside them is no link)."""
    return re.sub(r"(`+).*?\1", "", outside_blocks(page))


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as dashes."""
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", outside_blocks(page), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in PAGES:
        for target in LINK.findall(prose(page)):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert broken == []


def test_every_command_a_page_names_exists() -> None:
    """A command named in a page (`optmem NAME …` in backticks) is one optmem has — tester 12,
    finding 10: the Hermes import paragraph sent the reader to `optmem review`, no command (a
    line optmem prints, `optmem hub: …`, is a program's name, not a command)."""
    from optmem.cli.spec import COMMANDS

    names = {n.split()[0] for n in COMMANDS}
    named = [
        (page.name, m.group())
        for page in PAGES
        for m in re.finditer(r"`optmem ([a-z][a-z-]*)\b(?![:-])", page.read_text("utf-8"))
        if m.group(1) not in names
    ]
    assert named == []


def test_the_index_and_the_readme_link_every_docs_page() -> None:
    docs = REPO / "docs"
    index = set(LINK.findall(prose(docs / "README.md")))
    readme = set(LINK.findall(prose(REPO / "README.md")))
    for page in sorted(docs.glob("*.md")):
        if page.name != "README.md":
            assert page.name in index, page.name
            assert f"docs/{page.name}" in readme, page.name


# -- settings ---------------------------------------------------------------------------------------
def test_the_documented_optmem_toml_is_every_setting_at_its_default() -> None:
    from optmem import settings

    [block] = [b for b in blocks(REPO / "docs" / "files.md") if b.info == "toml" and "[limits]" in b.text]
    documented = tomllib.loads(block.text)
    commands = {tuple(c.split(".")) for c in settings.COMMANDS}  # named in your own configuration only
    expected = {
        section: {name: default for name, default in kind()._asdict().items() if (section, name) not in commands}
        for section, kind in settings.SECTIONS.items()
    }
    assert documented == expected


# -- the tour, as a reader runs it: every block in one shell, one vault ----------------------------
def tour() -> list[tuple[Block, Block | None]]:
    """The README's tour: its runnable blocks from "## A tour" to the next section, in order."""
    page = REPO / "README.md"
    lines = page.read_text("utf-8").splitlines()
    inside = {n for _, where in _fenced(page) for n in where}  # ("## " in an output block is no heading)
    start = lines.index("## A tour") + 1
    end = next((n + 1 for n in range(start, len(lines)) if lines[n].startswith("## ") and n not in inside), len(lines))
    return [(b, shown) for b, shown in CASES if b.page.name == "README.md" and start < b.line < end]


@pytest.mark.long
def test_the_tour_run_block_after_block_in_one_shell_prints_what_the_readme_shows(tmp_path: Path) -> None:
    """A reader pastes the tour's blocks one after another into one shell at a terminal (the first
    one points OPTMEM_VAULT at a scratch vault for all of them): each block prints what the README
    shows after it — the counts too — as it does alone on a fresh vault with no terminal (the test
    above)."""
    steps = tour()
    assert len(steps) >= 6
    marker = "@@ optmem tour block {} @@"
    script = "".join(f"echo '{marker.format(n)}'\n{b.text}" for n, (b, _) in enumerate(steps))
    res = run_block(script, tmp_path, terminal=True)
    assert res.returncode == 0, res.stdout[-4000:]
    printed = res.stdout.split("\n")
    for n, (b, shown) in enumerate(steps):
        begin = printed.index(marker.format(n))
        stop = printed.index(marker.format(n + 1)) if n + 1 < len(steps) else len(printed)
        if shown is not None:
            out = "\n".join(printed[begin + 1 : stop])
            missing = shown_in(shown.text, out)
            assert missing is None, (
                f"README.md:{b.line}: the output shown has {missing!r}; after the blocks above it, it printed:\n{out}"
            )
