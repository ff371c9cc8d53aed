"""Static checks of the code's shape, read with `ast` (nothing imported): stages stand alone, the
graphfreeze modules import each other without cycles, modules stay small, and TensorFlow is
imported only inside the functions that need it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"graphfreeze": ROOT / "converters", "graphfreeze_cli": ROOT / "cli"}
MAX_LINES = 320


def _format_requires() -> tuple[str, ...]:
    """Every built-in format's `requires` (its FORMAT's keyword, read with `ast`): a format named
    here by its folder only."""
    found = []
    for path in sorted((PACKAGES["graphfreeze"] / "formats").glob("*/export.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "requires":
                found += [e.value.split(".")[0] for e in getattr(node.value, "elts", [])
                          if isinstance(e, ast.Constant)]
    return tuple(found)


HEAVY = ("tensorflow", "tf_keras", "keras", "ray", "tensorflow_model_optimization",
         *_format_requires())  # and every format's optional `requires`


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of both packages."""
    found = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()
TREES = {name: ast.parse(path.read_text(), str(path)) for name, path in MODULES.items()}


def _is_type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or \
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _imports(tree: ast.AST, top_level_only: bool = False, typing: bool = False):
    """(import node, whether at module level) for every import that runs: inside functions too
    unless `top_level_only`; those under `if TYPE_CHECKING:` (they never run) only if `typing`
    (a module naming another's types depends on it: the cycle check counts them)."""

    def walk(node, top: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.body if typing else []:
                    yield from walk_one(sub, False)
                for sub in child.orelse:
                    yield from walk_one(sub, top)
                continue
            yield from walk_one(child, top)

    def walk_one(child, top: bool):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, top
            return
        inner = top and not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        if top_level_only and not inner:
            return
        yield from walk(child, inner)

    yield from walk(tree, True)


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute package a `from ... import` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")
    base = base[:len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(module: str, node) -> list[str]:
    """The graphfreeze modules an import statement loads (a `from X import y` loads X.y when y
    is a module, else X)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = _resolve(module, node)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    return sorted({n for n in names if n in MODULES})


def _graph(typing: bool = False) -> dict[str, dict[str, int]]:
    """module -> {imported module: line of the first import} (`typing`: TYPE_CHECKING's too)."""
    graph: dict[str, dict[str, int]] = {}
    for module, tree in TREES.items():
        edges: dict[str, int] = {}
        for node, _ in _imports(tree, typing=typing):
            for target in _targets(module, node):
                if target != module:
                    edges.setdefault(target, node.lineno)
        graph[module] = edges
    return graph


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan), each
    reported as a path a -> b -> ... -> a."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    cycles = []
    for component in components:
        start = min(component)
        path, seen = [start], {start}
        while True:  # follow edges inside the component until we return to a visited module
            nxt = min(w for w in graph[path[-1]] if w in component)
            if nxt in seen:
                cycles.append(path[path.index(nxt):] + [nxt])
                break
            path.append(nxt)
            seen.add(nxt)
    return cycles


def test_the_checks_see_every_module():
    assert "graphfreeze.convert" in MODULES and "graphfreeze.formats.tflite.export" in MODULES
    assert "graphfreeze_cli.main" in MODULES and "graphfreeze.sources.detect" in MODULES
    graph = _graph()
    assert "graphfreeze.registry" in graph["graphfreeze.convert"]
    # function-level imports count: registry loads the built-ins only inside Registry.default
    assert "graphfreeze.stages" in graph["graphfreeze.registry"]
    # TYPE_CHECKING imports do not run, so they do not count, but for the cycle check
    assert "graphfreeze.registry" not in graph["graphfreeze.state"]
    assert "graphfreeze.sources.base" in _graph(typing=True)["graphfreeze.state"]


def test_cycle_finder_reports_the_cycle():
    graph = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1, "d": 1}, "d": {}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b": 1}, "b": {}}) == []


ALLOWED_ACROSS: set[tuple[str, str]] = set()  # imports across rooms the architecture allows


def _room(module: str) -> str | None:
    """A stage (a module or a folder), or a format's folder: the rooms that must not import
    each other."""
    parts = module.split(".")
    if parts[1:2] == ["stages"] and len(parts) > 2:
        return ".".join(parts[:3])
    if parts[1:2] == ["formats"] and len(parts) > 2:
        return ".".join(parts[:3])
    return None


def test_stages_and_formats_do_not_import_each_other():
    offenders = []
    for module, tree in TREES.items():
        room = _room(module)
        if room is None:
            continue  # the packages' __init__ list the built-ins; they are no room
        for node, _ in _imports(tree):
            for target in _targets(module, node):
                other = _room(target)
                if other is not None and other != room and \
                        (room, target) not in ALLOWED_ACROSS:
                    offenders.append(f"{MODULES[module].relative_to(ROOT)}:{node.lineno} imports "
                                     f"{target}")
    assert not offenders, "a stage or format imports only its own room and the floor:\n" + \
        "\n".join(offenders)


def test_no_import_cycles():
    """Not even through `if TYPE_CHECKING:` (tflite's convert named export's options type while
    export imported convert)."""
    graph = _graph(typing=True)
    cycles = _cycles(graph)
    lines = []
    for cycle in cycles:
        hops = [f"{a} ({MODULES[a].relative_to(ROOT)}:{graph[a][b]})"
                for a, b in zip(cycle, cycle[1:], strict=False)]
        lines.append(" -> ".join([*hops, cycle[-1]]))
    assert not cycles, "import cycles among graphfreeze modules (module- or function-level):\n" + \
        "\n".join(lines)


def test_no_module_over_the_line_limit():
    sizes = {path.relative_to(ROOT): len(path.read_text().splitlines())
             for path in MODULES.values()}
    over = sorted((n, p) for p, n in sizes.items() if n > MAX_LINES)
    assert not over, f"modules over {MAX_LINES} lines (split them): " + \
        ", ".join(f"{p} ({n})" for n, p in reversed(over))


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_top_level_tensorflow_import(package):
    offenders = []
    for module, tree in TREES.items():
        if module.split(".")[0] != package:
            continue
        for node, top in _imports(tree, top_level_only=True):
            if not top:
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if not node.level else []
            for name in names:
                if name.split(".")[0] in HEAVY:
                    offenders.append(f"{MODULES[module].relative_to(ROOT)}:{node.lineno} "
                                     f"imports {name}")
    assert not offenders, "import these inside the functions that need them (the CLI and " \
        "`prepare` must start without them):\n" + "\n".join(offenders)


def test_top_level_check_sees_module_level_blocks():
    tree = ast.parse("import os\ntry:\n    import tensorflow\nexcept ImportError:\n    pass\n"
                     "if TYPE_CHECKING:\n    import tensorflow as tf\n"
                     "def f():\n    import tensorflow\n"
                     "class C:\n    import keras\n")
    found = [(n.names[0].name, n.lineno) for n, top in _imports(tree, top_level_only=True)]
    assert found == [("os", 1), ("tensorflow", 3), ("keras", 11)]
    every = [(n.names[0].name, top) for n, top in _imports(tree)]
    assert ("tensorflow", False) in every  # the function-level one, for the cycle check


MAX_ROOT_MODULES = 12


def test_few_modules_at_the_package_root():
    """Everything else lives in a folder named for what it is (io/, inspect/, stages/verify/...)."""
    root = sorted(p.name for p in PACKAGES["graphfreeze"].glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, f"{len(root)} modules at the root: {', '.join(root)}"


def test_the_registry_names_executors_without_importing_batch():
    graph = _graph()
    assert not [m for m in graph["graphfreeze.registry"] if m.startswith("graphfreeze.batch")]


FORMATS = sorted(p for p in (PACKAGES["graphfreeze"] / "formats").iterdir()
                 if (p / "__init__.py").exists())


@pytest.mark.parametrize("folder", FORMATS, ids=lambda p: p.name)
def test_a_format_is_its_folder(folder):
    """export.py (the stage and the FORMAT record), runtime.py (its sessions), targets/*.toml;
    the runtime (the reader) never imports the export (the writer)."""
    assert (folder / "export.py").exists() and (folder / "runtime.py").exists()
    assert list((folder / "targets").glob("*.toml")), f"{folder.name} has no targets/*.toml"
    package = f"graphfreeze.formats.{folder.name}"
    assert f"{package}.export" not in _graph()[f"{package}.runtime"]
    assert "FORMAT" in (folder / "export.py").read_text()


# docs/ARCHITECTURE.md, "The other targets": a built-in target that freezes a graph runs the
# graph stages in this order (onnx's optimize_for_inference twice: its own passes after the
# shared ones), its format's export (web's a second export of one it reads), verify, then
# benchmark or its format's own last stage (npu-*: compile_npu)
STAGE_ORDER = (r"freeze_variables strip_training (optimize_for_inference )+export_\w+ "
               r"(export_\w+ )?verify( benchmark| compile_npu)?")


def test_built_in_targets_run_the_stages_in_the_order_the_docs_say():
    import re

    import tomllib

    off = []
    for path in sorted((PACKAGES["graphfreeze"] / "formats").glob("*/targets/*.toml")):
        uses = [s["use"] for s in tomllib.loads(path.read_text())["stages"]]
        if uses[0] == "freeze_variables" and not re.fullmatch(STAGE_ORDER, " ".join(uses)):
            off.append(f"{path.relative_to(ROOT)}: {' -> '.join(uses)}")
    assert not off, "targets out of the documented stage order:\n" + "\n".join(off)
