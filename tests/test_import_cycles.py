"""torch_foo's modules import one another without a cycle.

The module graph is read from the sources: every import of a torch_foo
module, at module level or inside a function, is an edge. An import inside
a function may delay a module that is slow to load (dynamo, inductor), but
not hide a cycle: a cycle here fails, wherever its imports are.
"""

import ast
import os

ROOT = "torch_foo"
PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ROOT)


def _modules() -> dict[str, str]:
    """Module name -> source path, for every module of the package."""
    found = {}
    for directory, _, files in os.walk(PACKAGE):
        for f in files:
            if not f.endswith(".py"):
                continue
            parts = os.path.relpath(os.path.join(directory, f), PACKAGE)[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([ROOT, *parts])] = os.path.join(directory, f)
    return found


def _closest(target: str, known: set[str]) -> str:
    """The closest torch_foo module that `target` names (a.b.c -> a.b if c is not a module), or ""."""
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target


def _imports(name: str, path: str, known: set[str]) -> set[str]:
    """The torch_foo modules `name` imports, anywhere in its source.

    A module's own packages are loaded before it, so importing one of them,
    or a module through one, is no edge to it; taking an attribute from one
    (`from torch_foo import RaceError`) is, as it needs that package's code
    to have run.
    """
    is_package = path.endswith("__init__.py")
    package = name if is_package else name.rpartition(".")[0]
    tree = ast.parse(open(path).read(), path)
    edges: set[str] = set()

    def add(target: str, attribute: bool) -> None:
        if target and target != name and (attribute or not name.startswith(target + ".")):
            edges.add(target)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(_closest(alias.name, known), attribute=False)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in known:
                    add(submodule, attribute=False)
                else:
                    add(_closest(base, known), attribute=True)
    return edges


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_module_graph_has_no_cycle():
    modules = _modules()
    # The extension module is a leaf: it imports no torch_foo module.
    known = set(modules) | {f"{ROOT}._C"}
    graph = {name: _imports(name, path, known) for name, path in modules.items()}
    graph[f"{ROOT}._C"] = set()
    assert _cycles(graph) == []


def test_the_check_finds_a_cycle_hidden_in_a_function(tmp_path):
    # The check itself: a cycle through a function-level import is found.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    a = tmp_path / "a.py"
    a.write_text("def f():\n    from torch_foo.foo import memory\n")
    assert _imports("torch_foo.foo._mem_pool", str(a), {"torch_foo.foo", "torch_foo.foo.memory"}) == {
        "torch_foo.foo.memory"}
