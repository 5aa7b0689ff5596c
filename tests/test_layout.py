"""The house rules of the code base, checked by walking the source: floors (which part may import
which, and within the planner which sub-package), no import cycles, no private name imported from
another module, modules of a bounded length (a function's complexity is ruff's: C90, PLR0912,
PLR0915 in pyproject.toml), benchmarks that stand on the package alone, and an installed package
list that matches the folders. See `fleetplan/__init__.py` for the floors."""

from __future__ import annotations

import ast
import functools
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import ROOT

# Installed name -> folder in the checkout (pyproject.toml's package-dir says the same).
PACKAGE_DIRS = {
    "fleetplan": ROOT / "fleetplan",
    "fleetplan.app": ROOT / "app",
    "fleetplan.collectors": ROOT / "collectors",
    "fleetplan.warehouse": ROOT / "warehouse",
    "fleetplan.planner": ROOT / "planner",
}
# Each part, and the parts it may import (besides itself).
MAY_IMPORT = {
    "core": set(),
    "planner": {"core"},
    "warehouse": {"core"},
    "collectors": {"core", "warehouse"},
    "services": {"core", "planner", "warehouse"},
    "app": {"core", "planner", "warehouse", "services"},
    "cli": {"core", "planner", "warehouse", "services", "collectors", "app"},
}
# The planner's sub-packages, each with those it may import (besides itself and `core`); `plan`
# (planner/plan.py) runs the steps in order and the package's `__init__` names the entry points.
PLANNER_MAY_IMPORT = {
    "scenario": set(),
    "curve": set(),
    "solve": set(),
    "paper": set(),
    "capacity": {"scenario", "curve"},
    "estimate": {"capacity"},
    "peak": {"scenario", "curve", "capacity", "solve"},
    "report": {"scenario", "capacity", "peak"},
    "availability": {"scenario", "capacity", "solve", "peak"},
    # a day's spares for the attainment use availability's arithmetic (day/spares.py)
    "day": {"scenario", "capacity", "solve", "peak", "report", "availability"},
    "replay": {"estimate"},
    "plan": {
        "scenario",
        "curve",
        "capacity",
        "estimate",
        "solve",
        "peak",
        "report",
        "day",
        "availability",
    },
}
PLANNER_MAY_IMPORT["__init__"] = {*PLANNER_MAY_IMPORT, "plan"}
MAX_MODULE_LINES = 600


def parsed(path: Path) -> ast.Module:
    """A source file's syntax tree, parsed once a session (several checks walk every file)."""
    return _parsed(path.resolve())


@functools.cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def modules() -> dict[str, Path]:
    """Every module of the installed package, by its dotted name."""
    found: dict[str, Path] = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(folder).with_suffix("")
            if package == "fleetplan" and relative.parts[0] in ("app", "collectors"):
                continue
            parts = [p for p in relative.parts if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def part(module: str) -> str:
    """The floor a module belongs to: core, planner, ..., or "root" for `fleetplan` itself."""
    pieces = module.split(".")
    if len(pieces) == 1 or pieces[1] == "__main__":
        return "root"
    return pieces[1]


def imported(module: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """The fleetplan modules `module` imports anywhere in its file (functions and
    TYPE_CHECKING blocks included), each with the line it is imported on."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names]
            names = [n if n in known else base for n in names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name.startswith("fleetplan") and name != module:
                yield name, node.lineno


@functools.cache
def graph() -> dict[str, dict[str, int]]:
    known = modules()
    return {module: dict(imported(module, path, known)) for module, path in sorted(known.items())}


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_every_part_imports_only_from_the_floors_below_it():
    wrong = []
    for module, targets in graph().items():
        mine = part(module)
        for target, line in targets.items():
            theirs = part(target)
            if mine == "root" or target == "fleetplan":
                continue  # `fleetplan/__init__` (the version) and `python -m fleetplan`
            if theirs != mine and theirs not in MAY_IMPORT.get(mine, set()):
                wrong.append(f"{module}:{line} imports {target} ({mine} -> {theirs})")
    assert not wrong, "imports against the floors:\n" + "\n".join(wrong)


def planner_part(module: str) -> str:
    """The planner sub-package a `fleetplan.planner` module belongs to (`plan` for
    planner/plan.py, `__init__` for the package itself)."""
    pieces = module.split(".")
    return pieces[2] if len(pieces) > 2 else "__init__"


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_planner_sub_packages_import_only_from_the_floors_below_them():
    edges = graph()
    planner = [m for m in edges if part(m) == "planner"]
    assert {planner_part(m) for m in planner} == set(PLANNER_MAY_IMPORT), "a sub-package unlisted"
    wrong = []
    for module in planner:
        mine = planner_part(module)
        for target, line in edges[module].items():
            if part(target) != "planner":
                continue
            theirs = planner_part(target)
            if theirs != mine and theirs not in PLANNER_MAY_IMPORT[mine]:
                wrong.append(f"{module}:{line} imports {target} ({mine} -> {theirs})")
    assert not wrong, "imports against the planner's floors:\n" + "\n".join(wrong)


def test_every_planner_sub_package_says_what_it_is_for():
    folders = sorted(p for p in (ROOT / "planner").iterdir() if p.is_dir())
    assert len(folders) > 0  # a loop over nothing asserts nothing
    for folder in folders:
        if folder.name == "__pycache__":
            continue
        init = folder / "__init__.py"
        assert init.exists(), f"planner/{folder.name} is not a package"
        tree = parsed(init)
        doc = ast.get_docstring(tree) or ""
        assert len(doc.split("\n\n")[0]) > 40, f"planner/{folder.name}: no purpose in its docstring"
        # it names its modules, and holds no code of its own (no re-exports)
        modules_here = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
        unnamed = {m for m in modules_here if f"`{m}`" not in doc}
        assert not unnamed, f"planner/{folder.name}/__init__ does not name {sorted(unnamed)}"
        assert tree.body and all(isinstance(n, ast.Expr) for n in tree.body), folder.name


def private_imports(folders: tuple[str, ...], root: Path = ROOT) -> list[str]:
    """`from fleetplan... import _name` (or from tests...): a private name taken from another
    module."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(parsed(path)):
                if not isinstance(node, ast.ImportFrom):
                    continue
                ours = node.level or (node.module or "").startswith(
                    ("fleetplan", "tests", "benchmarks")
                )
                for alias in node.names if ours else ():
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{path.relative_to(root)}:{node.lineno} {alias.name}")
    return found


def private_attributes(folders: tuple[str, ...], root: Path = ROOT) -> list[str]:
    """`module._name` where `module` is another module of the package, imported whole
    (`from fleetplan.planner import plan as base` ... `base._rows`): the same private name
    taken, by attribute."""
    known = set(modules())
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            tree = parsed(path)
            aliases = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    aliases |= {a.asname for a in node.names if a.asname and a.name in known}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    aliases |= {
                        a.asname or a.name for a in node.names if f"{node.module}.{a.name}" in known
                    }
                elif _imports_a_module(node, known):  # base = importlib.import_module("...")
                    aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            found += [
                f"{path.relative_to(root)}:{node.lineno} {node.value.id}.{node.attr}"
                for node in ast.walk(tree)
                if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ]
    return found


def _imports_a_module(node: ast.AST, known: set[str]) -> bool:
    """`name = importlib.import_module("fleetplan....")` of a module of the package."""
    if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
        return False
    call = node.value
    named = isinstance(call.func, ast.Attribute) and call.func.attr == "import_module"
    argument = call.args[0] if call.args else None
    return named and isinstance(argument, ast.Constant) and argument.value in known


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_no_private_name_is_imported_from_another_module():
    folders = ("fleetplan", "app", "collectors", "warehouse", "planner", "benchmarks", "tests")
    assert not private_imports(folders), "\n".join(private_imports(folders))
    # by attribute too, in the product (tests reach a private seam to replace it: monkeypatch)
    product = ("fleetplan", "app", "collectors", "warehouse", "planner", "benchmarks")
    assert not private_attributes(product), "\n".join(private_attributes(product))


def test_the_private_import_check_finds_one(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "m.py").write_text(
        "from fleetplan.planner.plan import _steps, public\nfrom os import _exit\n"
    )
    assert private_imports(("x",), tmp_path) == ["x/m.py:1 _steps"]
    (tmp_path / "x" / "n.py").write_text(
        "from fleetplan.planner import plan as base\nimport os\nbase._rows(os._exit)\n"
        "import importlib\nplan = importlib.import_module('fleetplan.planner.plan')\n"
        "plan._steps()\n"
    )
    found = private_attributes(("x",), tmp_path)
    assert found == ["x/n.py:3 base._rows", "x/n.py:6 plan._steps"]


def test_benchmarks_stand_on_the_package_alone():
    """A benchmark script imports fleetplan and its own folder, never the tests' helpers."""
    wrong = []
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        for node in ast.walk(parsed(path)):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            wrong += [f"{path.name}:{node.lineno} {n}" for n in names if n.split(".")[0] == "tests"]
    assert not wrong, "\n".join(wrong)


def test_nothing_imports_the_command_line():
    wrong = [
        f"{module}:{line} imports {target}"
        for module, targets in graph().items()
        for target, line in targets.items()
        if part(target) == "cli" and part(module) not in ("cli", "root")
    ]
    assert not wrong, "\n".join(wrong)


def _cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), i.e. import cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in edges:
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles():
    assert _cycles(graph()) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [
        ["a", "b", "c"]
    ]


def source_files() -> Iterator[Path]:
    for folder in ("fleetplan", "app", "collectors", "warehouse", "planner", "benchmarks"):
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_modules_stay_readable():
    too_big = []
    for path in source_files():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            too_big.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert not too_big, "\n".join(too_big)


def test_ruff_bounds_each_functions_complexity():
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert {"C90", "PLR0912", "PLR0915"} <= set(lint["select"])
    assert lint["mccabe"]["max-complexity"] <= 15


def test_no_formatter_escapes_outside_tests():
    escapes = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in source_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "fmt: skip" in line or "fmt: off" in line
    ]
    assert not escapes, escapes


def test_installed_packages_match_the_folders():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert {
        k: ROOT / v for k, v in config["package-dir"].items() if k != "fleetplan.sample_data"
    } == {k: v for k, v in PACKAGE_DIRS.items()}
    folders = {module for module, path in modules().items() if path.name == "__init__.py"}
    assert set(config["packages"]) - {"fleetplan.sample_data"} == folders


@pytest.mark.parametrize("module", sorted(modules()))
def test_every_module_has_a_docstring(module):
    tree = parsed(modules()[module])
    assert ast.get_docstring(tree), f"{module} says nothing about what it is for"


def _settings(path: Path) -> dict:
    return tomllib.loads(path.read_text())


def test_the_streamlit_settings_are_at_the_top_and_the_same_in_the_wheel():
    # Streamlit reads .streamlit/ in the folder it starts in: the checkout's top when started
    # from there, app/ (shipped as fleetplan/app/.streamlit/) when `fleetplan app` starts it
    top, shipped = ROOT / ".streamlit" / "config.toml", ROOT / "app" / ".streamlit" / "config.toml"
    assert _settings(top) == _settings(shipped) and _settings(top)["server"]["maxUploadSize"]
    packaged = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert ".streamlit/config.toml" in packaged["package-data"]["fleetplan.app"]
