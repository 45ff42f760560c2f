"""The package's layout holds: parts import downwards only, no cycle, short modules.

docs/architecture.md, "Layout", draws what these tests check: the kernel at the bottom,
then the write side, the read side, the operations, the local stack and the interfaces.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "healthlog"

#: each part's layer: a part imports the kernel and parts of lower layers only. The fold
#: sits above the read side, whose day count it keeps (``counted_days``); ``testing``
#: (fakes of the ports, shipped for tests) above the ports it fakes.
LAYERS = {
    "kernel": 0,
    "hae": 1,
    "archive": 1,
    "applehealth": 2,
    "journal": 2,
    "reads": 3,
    "testing": 3,
    "fold": 4,
    "ingest": 4,
    "ops": 5,
    "local": 6,
    "dashboard": 7,
    "mcp": 7,
    "cli": 8,
}
#: over this many lines a module says why in its docstring (the words "600 lines")
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _part(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "kernel"  # healthlog/__init__.py
    if (
        f"healthlog.{parts[1]}" in MODULES
        and MODULES[f"healthlog.{parts[1]}"].name != "__init__.py"
    ):
        return "testing" if parts[1] == "testing" else "kernel"
    return parts[1]


def _imports(module: str) -> set[str]:
    """The package's modules ``module`` imports, anywhere in it (lazy imports too)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in MODULES}
        elif isinstance(node, ast.ImportFrom) and node.module in MODULES and not node.level:
            subs = {f"{node.module}.{a.name}" for a in node.names} & MODULES.keys()
            found |= subs
            if len(subs) < len(node.names):  # a name of the module itself
                found.add(node.module)
    found.discard(module)
    return found


def test_every_part_imports_the_kernel_and_lower_parts_only() -> None:
    assert {_part(m) for m in MODULES} <= LAYERS.keys(), "a part with no layer"
    wrong = []
    for module in MODULES:
        mine = _part(module)
        for other in _imports(module):
            theirs = _part(other)
            if theirs != mine and LAYERS[theirs] >= LAYERS[mine]:
                wrong.append(f"{module} ({mine}) imports {other} ({theirs})")
    assert wrong == []


def test_no_module_imports_itself_back() -> None:
    graph = {m: _imports(m) for m in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert cycles == []


def test_every_module_says_its_job_in_its_first_line() -> None:
    missing = []
    for module, path in MODULES.items():
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        first = (doc or "").splitlines()[0].strip() if doc else ""
        if not first or len(first) > 100:
            missing.append(module)
    assert missing == []


def test_a_module_over_600_lines_says_why() -> None:
    long = []
    for module, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        doc = ast.get_docstring(ast.parse(text)) or ""
        if text.count("\n") > MAX_LINES and f"{MAX_LINES} lines" not in doc:
            long.append(f"{module}: {text.count(chr(10))} lines")
    assert long == []


#: what everything shares; a new module at the top level is a choice, made here
KERNEL = {"clock", "config", "errors", "files", "ids", "kinds", "log", "model", "priority"}
KERNEL |= {"terminal", "tokens", "urls"}


def test_the_top_level_holds_the_kernel_and_the_parts_folders() -> None:
    by_part = defaultdict(set)
    for module in MODULES:
        by_part[_part(module)].add(module.removeprefix("healthlog."))
    assert by_part["kernel"] == KERNEL | {"healthlog"}
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert folders == LAYERS.keys() - {"kernel", "testing"}
