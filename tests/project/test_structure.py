"""The shape the code keeps (issue 24, docs/design.md §2): layers, one core, one write path, small modules.

Read from the source with ``ast``, nothing is imported:

- layers: ``hello_memory`` never imports ``rag``, ``tools``, ``apps`` or ``gradio``; ``rag`` never
  imports ``tools`` or ``apps``; ``tools`` never imports ``apps``;
- no runtime import cycle among the product's modules (lazy imports inside functions count:
  they run too; ``if TYPE_CHECKING:`` imports do not);
- the core takes its stores, never the façade: no parameter typed ``MemoryManager`` or
  ``RAGPipeline`` outside the façade modules;
- one write path: no test of embedded vs server mode (``….server``, ``server_mode``) outside the
  stores, where the mode is chosen when they are opened;
- no product module over 400 lines.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("hello_memory", "rag", "tools", "apps")
LAYERS = {"hello_memory": {"rag", "tools", "apps", "gradio"}, "rag": {"tools", "apps"}, "tools": {"apps"}}
FACADES = {
    "hello_memory/manager.py",
    "hello_memory/manager_async.py",
    "hello_memory/api.py",
    "hello_memory/client/remote.py",
    "rag/pipeline.py",
    "rag/pipeline_async.py",
    "rag/api.py",
    "rag/remote.py",
}
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            found[".".join(rel.parts).removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _trees() -> dict[str, ast.Module]:
    return {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


TREES = _trees()


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    return skip


def _imports(name: str, tree: ast.Module) -> set[str]:
    """The product modules ``name`` imports at run time (top level or inside functions)."""
    skip, out = _type_checking_nodes(tree), set()
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_lower_layers_never_import_higher_ones() -> None:
    wrong = []
    for name, tree in TREES.items():
        banned = LAYERS.get(name.split(".")[0], set())
        for node in ast.walk(tree):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                mods = [node.module]
            wrong += [f"{name} imports {m}" for m in mods if m.split(".")[0] in banned]
    assert wrong == []


def test_no_runtime_import_cycles() -> None:
    edges = defaultdict(set, {name: _imports(name, tree) for name, tree in TREES.items()})
    assert _cycles(edges) == []


def test_the_core_never_takes_the_facade() -> None:
    wrong = []
    for name, tree in TREES.items():
        rel = str(MODULES[name].relative_to(ROOT))
        if rel in FACADES:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                    kind = ast.unparse(arg.annotation).strip("'\"").split(".")[-1] if arg.annotation else ""
                    if kind in ("MemoryManager", "RAGPipeline"):
                        wrong.append(f"{rel}:{node.lineno} {node.name}({arg.arg}: {kind})")
    assert wrong == []


def test_the_mode_is_chosen_only_where_stores_are_opened() -> None:
    wrong = []
    for name, tree in TREES.items():
        rel = str(MODULES[name].relative_to(ROOT))
        if "/stores/" in f"/{rel}":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.If | ast.IfExp):
                test = ast.unparse(node.test)
                if test.endswith(".server") or ".server " in test or "server_mode" in test:
                    wrong.append(f"{rel}:{node.lineno} if {test}")
    assert wrong == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_stay_small(name: str) -> None:
    path = MODULES[name]
    if "/testing/" in path.as_posix():
        pytest.skip("test kits are not product modules")
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines (split it along a real seam)"
