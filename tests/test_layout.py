"""The house's layout rules, checked on the source: every import names a module that is there, imports run one
way (engine's layers, then ui/, then app_pages/), torch and xgrammar stay behind their folders, each command's
handler lives in its own module of engine/cli, pages stay short.

Imports are read from the source, never run: `import X`, `from X import Y`, relative imports, and modules
loaded by name (`importlib.import_module("...")`, `__import__("...")`), at a module's top or inside a function.
Every rule has planted offenders below that it must catch, so a rule that reads nothing cannot pass.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib.util
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.layers import LAYERS, layer_of

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"
# the parts whose imports are read, and what each may import from this repository (the engine's own order is
# engine/layers.py's; router.py runs over the pages and app.py serves it, so each may import what the pages may)
MAY_IMPORT = {
    "engine": {"engine"},
    "ui": {"engine", "ui"},
    "app_pages": {"engine", "ui"},
    "app": {"engine", "ui"},
    "router": {"engine", "ui"},
}
# libraries a part never imports: the engine is pure Python, and a page's widgets are ui/'s and app_pages/'s
NEVER_IMPORTS = {"engine": {"streamlit"}}
# what a try block catches when an import inside it may fail (an optional library)
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
# a string that names one of this repository's modules (what a module loads by name holds)
MODULE_STRING = re.compile(r"(engine|ui|app_pages)(\.[A-Za-z_]\w*)+")
# the only engine folders whose files may import these (bench/ and tests/ aside; train/ trains the shipped model)
HEAVY = {"torch": ("model", "constrain", "train"), "xgrammar": ("model", "constrain")}
# packages that must load without torch or xgrammar, and what a page imports
LIGHT_MODULES = (
    "engine.core.tokenizer",
    "engine.core.prompt",
    "engine.core.parse",
    "engine.core.tooldefs",
    "engine.core.generation",
    "engine.harness.loop",
    "engine.harness.playground",
    "engine.packs.pack",
    "engine.packs.reader",
    "engine.packs.checks",
    "engine.packs.replay",
    "engine.packs.trace",
    "engine.wire.formats",
    "engine.wire.openai_tokens",
    "engine.teaching.calculator",
    "engine.teaching.cost",
    "engine.teaching.gallery",
    "engine.teaching.panels",
    "engine.packs.panel_source",
    "engine.model.loading",
    "engine.model.load_jobs",
    "engine.model.availability",
    "engine.model.weights",
    "engine.sandbox.report",
)


# -- reading a file's imports -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Import:
    """One import in a file, resolved to an absolute module name."""

    line: int
    module: str  # "engine.core.parse": what `import`, `from ... import` or a by-name load names
    names: tuple[str, ...] = ()  # what `from module import ...` takes (a submodule or an attribute)
    optional: bool = False  # inside a try that catches ImportError: a library that may be absent


def source_files() -> list[Path]:
    """Every Python file of the parts whose imports are read."""
    return sorted(
        [
            *ENGINE.rglob("*.py"),
            *(ROOT / "ui").rglob("*.py"),
            *(ROOT / "app_pages").rglob("*.py"),
            ROOT / "app.py",
            ROOT / "router.py",
        ]
    )


def module_of(path: Path) -> str:
    """engine/core/parse.py -> 'engine.core.parse'; engine/__init__.py -> 'engine'; app.py -> 'app'; router.py -> 'router'."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(path: Path) -> str:
    """The package a relative import in `path` starts from (a package's __init__ is its own)."""
    return ".".join(path.relative_to(ROOT).parent.parts)


def absolute(package: str, name: str, level: int) -> str:
    """A relative import's module as an absolute name: (engine.core, 'tokenizer', 1) -> engine.core.tokenizer."""
    if level == 0:
        return name
    base = package.split(".")
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, name] if name else base)


def _relative_string(package: str, name: str) -> str:
    """importlib.import_module's reading of a name that starts with dots, inside `package`."""
    level = len(name) - len(name.lstrip("."))
    return absolute(package, name[level:], level)


def _loads_by_name(node: ast.Call) -> bool:
    """Whether a call is importlib.import_module(...), import_module(...) or __import__(...)."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("import_module", "__import__")


def _catches_import_errors(node: ast.Try) -> bool:
    for handler in node.handlers:
        caught = handler.type
        kinds = caught.elts if isinstance(caught, ast.Tuple) else [caught]
        if caught is None or any(isinstance(k, ast.Name) and k.id in IMPORT_ERRORS for k in kinds):
            return True
    return False


def read_imports(path: Path, source: str) -> list[Import]:
    """Every import in one file's source, at its top or inside a function, by statement or by name."""
    tree = ast.parse(source)
    package = package_of(path)
    optional: set[int] = set()  # ids of the import statements inside a try that catches ImportError
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and _catches_import_errors(node):
            optional.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    found: list[Import] = []
    dynamic = False  # a load by a name held in a variable: then every module name the file writes counts
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(node.lineno, a.name, optional=id(node) in optional) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = absolute(package, node.module or "", node.level)
            names = tuple(a.name for a in node.names)
            found.append(Import(node.lineno, module, names, optional=id(node) in optional))
        elif isinstance(node, ast.Call) and _loads_by_name(node) and node.args:
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                dynamic = True
                continue
            # import_module("..loop", package) / import_module(".loop", package="engine.harness"): the package
            # is a literal or this module's own __package__; __import__ reads its level, the fifth argument
            where = [k.value for k in node.keywords if k.arg == "package"] + node.args[1:2]
            level = [k.value for k in node.keywords if k.arg == "level"] + node.args[4:5]
            name = first.value
            if isinstance(func := node.func, ast.Name) and func.id == "__import__":
                depth = level[0].value if level and isinstance(level[0], ast.Constant) else 0
                name = "." * depth + name if depth else name
                where = []
            if name.startswith("."):
                holder = where[0] if where else None
                if isinstance(holder, ast.Constant) and isinstance(holder.value, str):
                    name = _relative_string(holder.value, name)
                else:  # __package__, or __import__'s level: the importing module's own package
                    name = _relative_string(package, name)
            found.append(Import(node.lineno, name, optional=id(node) in optional))
    if dynamic:
        found += [
            Import(node.lineno, node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_STRING.fullmatch(node.value)
        ]
    return found


@functools.cache
def module_path(name: str) -> Path | None:
    """The file (or folder, for a package) of one of this repository's modules, or None where there is none."""
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return base if base.is_dir() and any(base.glob("*.py")) else None  # a folder of scripts (app_pages/)


def ours(name: str) -> bool:
    """Whether a module name is this repository's (its first part is a folder or file at the top)."""
    top = name.split(".")[0]
    return (ROOT / top).is_dir() or (ROOT / f"{top}.py").is_file()


@functools.cache
def top_level_names(path: Path) -> frozenset[str] | None:
    """The names a module defines at its top (in its if and try blocks too); None when it may define any
    (a module __getattr__, a star import, or a folder of scripts)."""
    if path.is_dir():
        return None
    names: set[str] = set()
    body = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while body:
        node = body.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name == "*" for a in node.names):
                return None
            names.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            targets += [i.optional_vars for i in getattr(node, "items", []) if i.optional_vars]
            names.update(n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name))
        for block in ("body", "orelse", "finalbody", "handlers"):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                body += getattr(node, block, [])
    return None if "__getattr__" in names else frozenset(names)


def loaded(imp: Import) -> list[str]:
    """The modules of this repository an import loads: `from pkg import sub` loads pkg.sub, `from mod import
    name` loads mod."""
    if not ours(imp.module):
        return []
    subs = [f"{imp.module}.{n}" for n in imp.names if module_path(f"{imp.module}.{n}") is not None]
    return subs if subs and len(subs) == len(imp.names) else [*subs, imp.module]


def missing(imp: Import) -> list[str]:
    """What an import names that is not there: a module (ours on disk, a library installed) or a name in one."""
    if not ours(imp.module):
        top = imp.module.split(".")[0]
        if imp.optional or top in sys.stdlib_module_names or _installed(top):
            return []
        return [f"no library {top}"]
    path = module_path(imp.module)
    if path is None:
        return [f"no module {imp.module}"]
    defined = top_level_names(path)
    return [
        f"{imp.module} has no {n}"
        for n in imp.names
        if n != "*" and defined is not None and n not in defined and module_path(f"{imp.module}.{n}") is None
    ]


@functools.cache
def _installed(library: str) -> bool:
    return importlib.util.find_spec(library) is not None


def all_imports() -> dict[str, list[Import]]:
    """Each module of engine/, ui/, app_pages/, app.py and router.py, and its imports, read from the files on disk."""
    return {module: list(found) for module, found in _imports_on_disk().items()}


@functools.cache
def _imports_on_disk() -> dict[str, tuple[Import, ...]]:
    # read once per test run: the planted tests add to a copy
    return {module_of(p): tuple(read_imports(p, p.read_text(encoding="utf-8"))) for p in source_files()}


def part_of(module: str) -> str:
    """engine, ui, app_pages or app: the part a module belongs to."""
    return module.split(".")[0]


def import_graph(imports: dict[str, list[Import]]) -> dict[str, set[str]]:
    """Each module and the modules of this repository it loads (those that are there)."""
    return {
        m: {d for imp in found for d in loaded(imp) if module_path(d) is not None} - {m} for m, found in imports.items()
    }


def engine_layer(module: str) -> int:
    return layer_of(module.removeprefix("engine").lstrip("."))


def problems(imports: dict[str, list[Import]]) -> dict[str, list[str]]:
    """Every break of the layout's rules, by rule: imports of what is not there, imports up engine's layers,
    imports out of what a part may import, and import cycles."""
    graph = import_graph(imports)
    found: dict[str, list[str]] = {"missing": [], "upward": [], "out of bounds": [], "cycle": []}
    for module, deps in sorted(imports.items()):
        for imp in deps:
            found["missing"] += [f"{module}:{imp.line}: {why}" for why in missing(imp)]
            if imp.module.split(".")[0] in NEVER_IMPORTS.get(part_of(module), ()):
                found["out of bounds"].append(f"{module}:{imp.line} -> {imp.module}")
    for module, deps in sorted(graph.items()):
        for dep in sorted(deps):
            if part_of(dep) not in MAY_IMPORT[part_of(module)]:
                found["out of bounds"].append(f"{module} -> {dep}")
            elif part_of(module) == part_of(dep) == "engine" and engine_layer(dep) > engine_layer(module):
                found["upward"].append(f"{module} -> {dep}")
    if cycle := find_cycle(graph):
        found["cycle"].append(" -> ".join(cycle))
    return found


def planted(where: str, line: str) -> dict[str, list[str]]:
    """The problems the site would have with `line` added to the file `where` (not written to disk)."""
    imports = all_imports()
    path = ROOT / where
    imports[module_of(path)] = [*imports[module_of(path)], *read_imports(path, line)]
    return problems(imports)


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path of module names, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt] if nxt in path else [*path, nxt]
            if state.get(nxt) is None and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if state.get(start) is None and (found := visit(start, [start])):
            return found
    return None


def heavy_imports(path: Path) -> set[str]:
    """The heavy libraries (HEAVY's keys) a file imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.add((node.module or "").split(".")[0])
    return found & set(HEAVY)


def test_the_cycle_finder_finds_a_cycle_and_passes_a_tree():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize(
    ("where", "line", "expected"),
    [
        ("engine/core/prompt.py", "from .tokenizer import load_tokenizer", ["engine.core.tokenizer"]),
        ("engine/core/prompt.py", "from ..errors import BadInput", ["engine.errors"]),
        ("engine/harness/tools.py", "from . import filetools", ["engine.harness.filetools"]),
        ("engine/__main__.py", "from .cli import main", ["engine.cli"]),
        ("engine/cli/download.py", "from ..model.loading import TINY", ["engine.model.loading"]),
        ("engine/cli/prepare.py", "from ..packs import prepare", ["engine.packs.prepare"]),
        ("engine/constrain/masks.py", "from ..model.decode import Alternative", ["engine.model.decode"]),
        ("engine/core/__init__.py", "from .parse import parse", ["engine.core.parse"]),  # a package's own
        ("ui/models.py", "import engine.model.live", ["engine.model.live"]),
        ("engine/core/prompt.py", "importlib.import_module('engine.model.decode')", ["engine.model.decode"]),
        ("engine/core/prompt.py", "import_module('.loop', package='engine.harness')", ["engine.harness.loop"]),
        ("engine/core/prompt.py", "import_module('..teaching.quiz', __package__)", ["engine.teaching.quiz"]),
        ("engine/core/prompt.py", "__import__('ui.words')", ["ui.words"]),
        # a load by a name held elsewhere: the module names the file writes
        (
            "engine/core/prompt.py",
            "NAMES = ('engine.harness.loop',)\nfor n in NAMES: import_module(n)",
            ["engine.harness.loop"],
        ),
        ("engine/core/prompt.py", "import json", []),  # not ours
    ],
)
def test_imports_resolve_to_modules(where, line, expected):
    assert [d for imp in read_imports(ROOT / where, line) for d in loaded(imp)] == expected


def test_the_parts_are_read_and_the_graph_holds_what_they_import():
    graph = import_graph(all_imports())
    assert {"engine.harness.loop", "engine.constrain.masks", "ui.models", "app_pages.home", "app", "router"} <= set(
        graph
    )
    assert "engine.core.tokenizer" in graph["engine.core.prompt"]
    assert "engine.model.loading" in graph["engine.model.decode"]
    assert "ui.packs" in graph["ui.models"] and "ui.words" in graph["app_pages.home"]
    # the warm-up loads modules of four layers by name: each is read
    warmed = {"engine.model.decode", "engine.harness.loop", "engine.teaching.calculator", "engine.constrain.masks"}
    assert warmed <= graph["engine.startup.warmup"]


def test_every_engine_package_has_a_layer():
    engine = [m for m in all_imports() if part_of(m) == "engine"]
    assert {engine_layer(m) for m in engine} == set(range(len(LAYERS)))


def test_every_import_names_a_module_that_is_there():
    assert problems(all_imports())["missing"] == []


def test_no_engine_import_runs_up_a_layer():
    assert problems(all_imports())["upward"] == []


def test_each_part_imports_only_the_parts_below_it():
    """The engine imports neither ui/ nor app_pages/ nor streamlit; ui/ imports the engine; pages import both."""
    assert problems(all_imports())["out of bounds"] == []


def test_no_imports_form_a_cycle():
    """Among engine's modules, among ui's, or across them."""
    assert problems(all_imports())["cycle"] == []


@pytest.mark.parametrize(
    ("where", "line", "rule"),
    [
        ("engine/core/prompt.py", "from ..harness.loop import run_scenario", "upward"),  # at the top
        ("engine/core/parse.py", "def later():\n    from ..packs.pack import Pack", "upward"),  # inside a function
        ("engine/model/live.py", "import engine.teaching.quiz", "upward"),
        ("engine/constrain/masks.py", "from ..wire.formats import write_all", "upward"),
        # by name: a literal, a relative name with its package, a name held in a tuple
        ("engine/core/prompt.py", "import importlib\nimportlib.import_module('engine.harness.loop')", "upward"),
        ("engine/core/prompt.py", "import_module('..harness.loop', package=__package__)", "upward"),
        ("engine/core/prompt.py", "import_module('.loop', 'engine.harness')", "upward"),
        ("engine/core/prompt.py", "__import__('engine.teaching.calculator')", "upward"),
        (
            "engine/constrain/masks.py",
            "MODULES = ('engine.model.decode',)\n[import_module(m) for m in MODULES]",
            "upward",
        ),
        # what is not there: a module moved away, a relative one, a name, a library, by name
        ("engine/train/training.py", "from .cpu_speed import cpu_dtype", "missing"),
        ("engine/core/prompt.py", "from ..model import no_such_module", "missing"),
        ("engine/core/prompt.py", "from .tokenizer import no_such_name", "missing"),
        ("ui/models.py", "import ui.no_such_module", "missing"),
        ("app_pages/home.py", "from ui.words import no_such_name", "missing"),
        ("engine/core/prompt.py", "import no_such_library_at_all", "missing"),
        ("engine/core/prompt.py", "importlib.import_module('engine.core.no_such_module')", "missing"),
        # out of bounds: the engine importing the pages' parts, the pages or streamlit; ui importing a page
        ("engine/core/prompt.py", "from ui.words import words", "out of bounds"),
        ("engine/core/prompt.py", "def later():\n    import ui.models", "out of bounds"),
        ("engine/harness/loop.py", "importlib.import_module('app_pages.home')", "out of bounds"),
        ("engine/model/live.py", "import streamlit as st", "out of bounds"),
        ("ui/draw.py", "import app", "out of bounds"),
        # a circle among ui's modules
        ("ui/packs.py", "def later():\n    from ui.models import draw_source", "cycle"),
    ],
)
def test_a_planted_offender_is_caught(where, line, rule):
    assert planted(where, line)[rule], f"{where}: {line!r} was not caught as {rule}"


def test_core_model_and_constrain_import_nothing_from_the_layers_above_harness():
    graph = import_graph(all_imports())
    above = {"harness", "wire", "packs", "teaching", "train", "startup"}
    assert [
        f"{m} -> {d}"
        for m, deps in graph.items()
        if m.split(".")[:2][-1] in ("core", "model", "constrain") and part_of(m) == "engine"
        for d in deps
        if d.split(".")[:2][-1] in above
    ] == []


def test_only_the_model_and_constrain_folders_import_torch_or_xgrammar():
    files = [
        *ENGINE.rglob("*.py"),
        *(ROOT / "app_pages").rglob("*.py"),
        *(ROOT / "ui").rglob("*.py"),
        ROOT / "app.py",
        ROOT / "router.py",
    ]
    offenders = {}
    for path in files:
        folder = path.relative_to(ENGINE).parts[0] if path.is_relative_to(ENGINE) else None
        wrong = {lib for lib in heavy_imports(path) if folder not in HEAVY[lib]}
        if wrong:
            offenders[path.relative_to(ROOT).as_posix()] = sorted(wrong)
    assert offenders == {}, f"torch and xgrammar belong in engine/model/ and engine/constrain/: {offenders}"
    # the check can fail: the folders it allows do import them
    assert "torch" in heavy_imports(ENGINE / "model" / "decode.py")
    assert "xgrammar" in heavy_imports(ENGINE / "constrain" / "grammar.py")


def test_the_torch_free_modules_and_the_pages_helpers_load_without_torch():
    code = (
        "import sys, importlib\n"
        f"for name in {LIGHT_MODULES!r}: importlib.import_module(name)\n"
        "import ui.models, ui.packs, ui.draw, ui.understanding\n"
        "import ui.wire_view, ui.glossary, ui.elsewhere, ui.tool_editor\n"
        "print(sorted(m for m in ('torch', 'xgrammar') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def command_handlers(path: Path) -> list[str]:
    """The command-line handlers (`cmd_...` functions) a file defines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("cmd_")]


def test_each_command_has_a_module_of_its_own_in_cli_that_holds_its_handler():
    from engine.cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    handlers = {name: p.get_default("handler") for name, p in commands.choices.items()}
    # the check can fail: the contract's commands are there, each with a handler
    assert {"tokens", "parse", "mask", "generate", "run", "tool", "prepare", "eval", "train-builtin"} <= set(handlers)
    where = {name: (h.__module__, h.__name__) for name, h in handlers.items()}
    assert all(m.startswith("engine.cli.") and f.startswith("cmd_") for m, f in where.values()), where
    modules = [m for m, _ in where.values()]
    assert len(set(modules)) == len(modules), f"one module per command: {where}"
    # no handler outside engine/cli, and `python -m engine` only calls the command line
    assert "cmd_tokens" in command_handlers(ENGINE / "cli" / "tokens.py")
    elsewhere = {
        p.relative_to(ROOT).as_posix(): h
        for p in ENGINE.rglob("*.py")
        if not p.is_relative_to(ENGINE / "cli") and (h := command_handlers(p))
    }
    assert elsewhere == {}, f"command-line handlers belong in engine/cli/, a module per command: {elsewhere}"
    main = ast.parse((ENGINE / "__main__.py").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(main) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


def test_no_page_file_is_over_250_lines():
    long = {
        p.relative_to(ROOT).as_posix(): n
        for p in [*(ROOT / "app_pages").glob("*.py"), *(ROOT / "ui").glob("*.py")]
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 250
    }
    assert long == {}, f"pages should stay short scripts; move logic into engine/ or a ui/ module: {long}"


def test_each_vocabulary_size_is_written_in_one_engine_file():
    for figure in ("151669", "151936"):
        holders = [
            p.relative_to(ENGINE).as_posix() for p in ENGINE.rglob("*.py") if figure in p.read_text(encoding="utf-8")
        ]
        assert holders == ["core/tokenizer.py"], f"{figure} is written in {holders}"


def test_tests_share_helpers_through_helpers_py_only():
    offenders = []
    for path in (ROOT / "tests").glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # a test module or conftest, under any name (helpers such as local_hub.py are fine)
            last = (node.module or "").split(".")[-1] if isinstance(node, ast.ImportFrom) else ""
            if last == "conftest" or last.startswith("test_"):
                offenders.append(f"{path.name}: from {node.module}")
    assert offenders == [], f"move what tests share into tests/helpers.py: {offenders}"
