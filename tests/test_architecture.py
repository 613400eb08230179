"""The layering, read from the import graph (function-level imports included).

Each module of the package sits in one layer; a module may import its own layer or lower ones,
never a higher one, and no chain of imports leads back to where it started — inside one layer
either. Only the CLI may import Typer or Rich.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import optmem

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "base",
        (
            "optmem",
            "optmem.errors",
            "optmem.clock",
            "optmem.text",
            "optmem.reading",
            "optmem.identifiers",
            "optmem.compare",
            "optmem.dates",
            "optmem.record",
            "optmem.settings",
            "optmem.value",
            "optmem.stdlib",
            "optmem.patterns",
            "optmem.names",
            "optmem.meta",
            "optmem.safety",
            "optmem.redact",
            "optmem.fsio",
            "optmem.spool",
            "optmem.layout",
            "optmem.runner",
            "optmem.terminal",
        ),
    ),
    ("policy", ("optmem.quarantine", "optmem.view", "optmem.ranking")),
    (
        "store",
        (
            "optmem.vault",
            "optmem.gitstate",
            "optmem.trust",
            "optmem.schema",
            "optmem.ingest",
            "optmem.verdicts",
            "optmem.index",
            "optmem.lost",
            "optmem.warm",
        ),
    ),
    (
        "core",
        (
            "optmem.candidates",
            "optmem.gate",
            "optmem.log",
            "optmem.facts",
            "optmem.merging",
            "optmem.memory",
            "optmem.search",
            "optmem.lookup",
            "optmem.review",
            "optmem.context",
            "optmem.handoff",
            "optmem.handoff_file",
            "optmem.lifecycle",
            "optmem.tree",
            "optmem.summary",
            "optmem.doctor",
            "optmem.stats",
            "optmem.purge",
            "optmem.evaluate",
            "optmem.curate",
            "optmem.follow",
            "optmem.share",
            "optmem.neighbours",
            "optmem.transfer",
        ),
    ),
    ("integrations", ("optmem.integrations",)),
    ("cli", ("optmem.cli", "optmem.__main__")),
)
UI_LIBRARIES = ("typer", "rich", "click")


def layer_of(module: str) -> int:
    """The layer of a module: a listed name, or a module inside a listed package."""
    best = None
    for i, (_, names) in enumerate(LAYERS):
        for name in names:
            if module == name or (module.startswith(name + ".") and name != "optmem"):
                best = i
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in tests/test_architecture.py")
    return best


def modules(root: Path) -> dict[str, Path]:
    """Module name → file, for every .py file of the package at `root`."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(path: Path, module: str, known: set[str]) -> list[tuple[str, int]]:
    """(imported module, line) of every import in a file, wherever it is (functions too);
    `from a import b` imports the module a.b when there is one (`known`), else a."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package upwards
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            out += [
                (f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base, node.lineno)
                for alias in node.names
            ]
    return out


def violations(root: Path) -> list[str]:
    found = []
    found_modules = modules(root)
    for module, path in found_modules.items():
        mine = layer_of(module)
        for target, line in imports(path, module, set(found_modules)):
            top = target.split(".")[0]
            if top in UI_LIBRARIES and LAYERS[mine][0] != "cli":
                found.append(f"{path.name}:{line}: {module} imports {target} (only the CLI may)")
            if top != "optmem":
                continue
            theirs = layer_of(target)
            if theirs > mine:
                found.append(f"{path.name}:{line}: {module} ({LAYERS[mine][0]}) imports {target} ({LAYERS[theirs][0]})")
    return found


def graph(root: Path) -> dict[str, set[str]]:
    """Module → the package's modules it imports (a package's own `__init__` counts as a module)."""
    found = modules(root)
    return {
        module: {target for target, _ in imports(path, module, set(found)) if target in found and target != module}
        for module, path in found.items()
    }


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle, as one path around it per strongly connected group of modules
    (Tarjan's algorithm, iteratively); [] when the graph has none."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(group)
    return [_path_around(edges, group) for group in groups]


def _path_around(edges: dict[str, set[str]], group: set[str]) -> list[str]:
    """One closed path through a strongly connected group, from its first module back to it."""
    start = min(group)
    seen, todo = {start: [start]}, [start]
    while todo:
        node = todo.pop(0)
        for target in sorted(edges[node] & group):
            if target == start:
                return [*seen[node], start]
            if target not in seen:
                seen[target] = [*seen[node], target]
                todo.append(target)
    raise AssertionError(f"{sorted(group)} has no path around it")


@pytest.mark.long
def test_no_import_circle():
    root = Path(optmem.__file__).parent
    assert [" → ".join(c) for c in cycles(graph(root))] == []


def test_the_check_finds_a_planted_circle_inside_one_layer(tmp_path):
    """Three core modules importing each other in a ring — one import inside a function — are one
    circle; a diamond (two paths to one module) is none."""
    pkg = tmp_path / "optmem"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "log.py").write_text("from optmem import memory\nfrom optmem import view\n")
    (pkg / "memory.py").write_text("def f():\n    from optmem.lifecycle import sweep\n")
    (pkg / "lifecycle.py").write_text("from optmem import view\ndef g():\n    from optmem import log\n")
    (pkg / "view.py").write_text("")
    (pkg / "search.py").write_text("from optmem import log, memory\n")
    assert violations(pkg) == []  # all in layers that allow it: only the circle is wrong
    assert cycles(graph(pkg)) == [["optmem.lifecycle", "optmem.log", "optmem.memory", "optmem.lifecycle"]]
    (pkg / "lifecycle.py").write_text("from optmem import view\n")
    assert cycles(graph(pkg)) == []


@pytest.mark.long
def test_no_module_imports_a_higher_layer():
    root = Path(optmem.__file__).parent
    assert violations(root) == []


def test_every_module_is_in_a_layer():
    root = Path(optmem.__file__).parent
    for module in modules(root):
        layer_of(module)  # raises for a module nobody placed


def test_the_check_finds_a_planted_violation(tmp_path):
    """A lower layer importing a higher one — even inside a function — is caught."""
    pkg = tmp_path / "optmem"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cli" / "__init__.py").write_text("")
    (pkg / "cli" / "common.py").write_text("from optmem import log\n")  # cli → core: fine
    (pkg / "log.py").write_text("def f():\n    from optmem.cli import common\n")  # core → cli
    (pkg / "text.py").write_text("from optmem import search\n")  # base → core
    (pkg / "search.py").write_text("import rich\n")  # core → a UI library
    found = violations(pkg)
    assert len(found) == 3, found
    assert any("optmem.log (core) imports optmem.cli" in f for f in found)
    assert any("optmem.text (base) imports optmem.search (core)" in f for f in found)
    assert any("imports rich" in f for f in found)


def test_one_table_says_how_second_hand_each_origin_is():
    """Review 11, finding 17: whether an origin is second-hand, how far, and whether its words may
    instruct the reader were three tests in three places (`quarantine._IMPORT`, `quarantine._hand`,
    `record.gives_no_orders` with its own literal "import:"); one table serves them all."""
    from optmem import quarantine, record

    for origin in (None, "user", "agent", "sync", "tool", "import:mem0", "import:hermes", "web"):
        hand = record.hand(origin)
        assert quarantine.secondhand(origin) == (hand > 0), origin
        assert record.gives_no_orders(origin) == (hand >= record.HANDS[record.IMPORT]), origin
    assert [record.hand(o) for o in (None, "user", "agent", "sync", "import:mem0", "tool")] == [0, 0, 0, 1, 2, 3]
    assert record.hand("web") == record.hand("sync")  # an origin of no known name: another store's
    assert set(quarantine.FIRST_HAND) == {o for o, h in record.HANDS.items() if h == 0}
    # an import's origin is spelled in that table only: no module writes the prefix itself
    spelled = []
    for module, path in modules(Path(optmem.__file__).parent).items():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("import:"):
                spelled.append(f"{module}:{node.lineno}")
    assert [where.partition(":")[0] for where in spelled] == ["optmem.record"], spelled


def _direct_writes(root: Path) -> list[str]:
    """Calls that write a file without `optmem.fsio`: `write_text`, `write_bytes`, `open` (or
    `fdopen`) with a mode that writes — each as "path:line"."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "fsio.py":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            mode: object = None
            if name in ("open", "fdopen"):
                given = node.args[1:2] + [k.value for k in node.keywords if k.arg == "mode"]
                mode = given[0].value if given and isinstance(given[0], ast.Constant) else None
            if name in ("write_text", "write_bytes") or (isinstance(mode, str) and set(mode) & set("wax+")):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_only_fsio_writes_files():
    """One place writes files (`optmem.fsio`: atomic replaces, whole-line appends, the checks
    before them) — review 17 #10: sync wrote a merged .gitignore with `write_text`."""
    assert _direct_writes(Path(optmem.__file__).parent) == []


def test_the_check_finds_a_planted_direct_write(tmp_path):
    (tmp_path / "a.py").write_text("from pathlib import Path\nPath('x').write_text('y')\n")
    (tmp_path / "b.py").write_text("f = open('x', 'ab')\ng = open('x', 'rb')\n")
    assert _direct_writes(tmp_path) == ["a.py:2", "b.py:1"]
