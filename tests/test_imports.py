"""No import circle in the package: no two modules of fastatari import each other, directly or
through others, wherever the import stands (at the top, in a function, under TYPE_CHECKING). The
layers import downward only (docs/architecture.md); a circle is a rule with two owners."""
from __future__ import annotations

import ast
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import fastatari

PACKAGE = Path(fastatari.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set) -> set:
    """The fastatari modules ``path`` imports (a name imported from a package is its submodule
    where there is one, else the package)."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
    return {name for name in found if name in modules and name != here}


def graph() -> dict:
    paths = [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {module_name(p) for p in paths}
    # the compiled modules: imported, not read (.pyx in a checkout, extension files installed)
    compiled = [p for p in PACKAGE.rglob("*") if p.name.endswith((".pyx", *EXTENSION_SUFFIXES))]
    modules |= {module_name(p.with_name(p.name.split(".")[0] + ".py")) for p in compiled}
    return {module_name(p): imports_of(p, modules) for p in paths}


def find_cycle(edges: dict) -> list:
    state: dict = {}
    stack: list = []

    def visit(node: str) -> list:
        state[node] = "open"
        stack.append(node)
        for after in sorted(edges.get(node, ())):
            if state.get(after) == "open":
                return stack[stack.index(after):] + [after]
            if after not in state:
                cycle = visit(after)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = "done"
        return []

    for node in sorted(edges):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return []


def test_no_import_circle():
    assert find_cycle(graph()) == []


def test_a_circle_is_found():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(edges) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []
