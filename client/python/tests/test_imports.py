"""The package's modules import one another without a circle.

Every import of a package module counts: at module level, inside a function (an import moved into
a function to break a circle still closes it when the function runs) and under ``if
TYPE_CHECKING:`` (a module that needs another's types only to annotate is still tied to it both
ways). The graph of all of them must have no circle."""

from __future__ import annotations

import ast
import pathlib
from typing import Dict, List, Optional, Set, Tuple

import distarray

# (importing module, imported module, line, inside a function)
Edge = Tuple[str, str, int, bool]


def _module_name(root: pathlib.Path, path: pathlib.Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.AST, module: str, is_package: bool, known: Set[str]) -> List[str]:
    """The package modules an import statement of ``module`` imports."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in known]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    found = []
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        if submodule in known:  # from . import _transfer
            found.append(submodule)
        elif source in known:  # from ._rpc import Rpc
            found.append(source)
    return found


def import_edges(root: pathlib.Path) -> List[Edge]:
    """Every import of one module of the package at ``root`` by another."""
    files = {_module_name(root, path): path for path in sorted(root.rglob("*.py"))}
    known = set(files)
    edges: List[Edge] = []
    for module, path in files.items():
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST, in_function: bool) -> None:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, module, is_package, known):
                    if target != module:
                        edges.append((module, target, node.lineno, in_function))
                return
            inside = in_function or isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
            )
            for child in ast.iter_child_nodes(node):
                visit(child, inside)

        visit(ast.parse(path.read_text(), str(path)), False)
    return edges


def find_cycle(edges: List[Edge]) -> Optional[List[Edge]]:
    """A circle of imports, as its edges; None when there is none."""
    graph: Dict[str, List[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge[0], []).append(edge)
    done: Set[str] = set()
    stack: List[str] = []  # the modules on the current path
    path: List[Edge] = []  # path[i] leads from stack[i] to stack[i + 1]

    def walk(module: str) -> Optional[List[Edge]]:
        stack.append(module)
        for edge in graph.get(module, []):
            if edge[1] in stack:
                return path[stack.index(edge[1]):] + [edge]
            if edge[1] not in done:
                path.append(edge)
                cycle = walk(edge[1])
                if cycle:
                    return cycle
                path.pop()
        stack.pop()
        done.add(module)
        return None

    for module in sorted(graph):
        if module not in done:
            cycle = walk(module)
            if cycle:
                return cycle
    return None


def _describe(cycle: List[Edge]) -> str:
    return " -> ".join(
        f"{a} (line {line}{', in a function' if lazy else ''})" for a, _, line, lazy in cycle
    ) + f" -> {cycle[-1][1]}"


def test_the_package_imports_no_circle():
    root = pathlib.Path(distarray.__file__).parent
    edges = import_edges(root)
    # The parse found the imports (a checker that sees none would pass anything).
    pairs = {(a, b) for a, b, _, _ in edges}
    assert ("distarray._client", "distarray._rpc") in pairs
    assert ("distarray._array", "distarray._transfer") in pairs
    cycle = find_cycle(edges)
    assert cycle is None, f"import circle: {_describe(cycle)}"


def _reaches(edges: List[Edge], start: str, goal: str) -> bool:
    graph: Dict[str, List[str]] = {}
    for a, b, _, _ in edges:
        graph.setdefault(a, []).append(b)
    seen, todo = {start}, [start]
    while todo:
        for target in graph.get(todo.pop(), []):
            if target == goal:
                return True
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return start == goal


def test_no_function_imports_a_module_that_imports_its_own():
    """The lazy form of a circle, named as such: a function importing a module that imports (at
    module level, directly or not) the function's own module."""
    root = pathlib.Path(distarray.__file__).parent
    edges = import_edges(root)
    eager = [e for e in edges if not e[3]]
    lazy = [e for e in edges if e[3] and _reaches(eager, e[1], e[0])]
    assert not lazy, "imports inside functions that close a circle: " + "; ".join(
        f"{a} imports {b} at line {line}" for a, b, line, _ in lazy
    )


def _package(tmp_path: pathlib.Path, modules: Dict[str, str]) -> pathlib.Path:
    root = tmp_path / "pkg"
    root.mkdir(parents=True)
    for name, text in modules.items():
        (root / f"{name}.py").write_text(text)
    return root


def test_the_check_sees_circles_lazy_or_not(tmp_path):
    """The checker itself: it finds a circle closed inside a function, one of plain module-level
    imports, one closed under TYPE_CHECKING, and none where there is none."""
    lazy = _package(tmp_path / "lazy", {
        "__init__": "from . import a\n",
        "a": "from .b import g\n",
        "b": "def g():\n    from .a import x\n    return x\n",
    })
    cycle = find_cycle(import_edges(lazy))
    assert cycle is not None and {e[0] for e in cycle} == {"pkg.a", "pkg.b"}
    assert any(e[3] for e in cycle)  # the lazy edge is part of it

    eager = _package(tmp_path / "eager", {
        "__init__": "",
        "a": "import pkg.b\n",
        "b": "from . import c\n",
        "c": "from pkg import a\n",
    })
    assert find_cycle(import_edges(eager)) is not None

    typed = _package(tmp_path / "typed", {
        "__init__": "",
        "a": "from .b import g\n",
        "b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n"
             "def g():\n    pass\n",
    })
    assert find_cycle(import_edges(typed)) is not None

    tree = _package(tmp_path / "tree", {
        "__init__": "from . import a, b\n",
        "a": "from .b import g\nfrom . import c\n",
        "b": "from . import c\ndef g():\n    from .c import h\n",
        "c": "def h():\n    pass\n",
    })
    assert find_cycle(import_edges(tree)) is None
