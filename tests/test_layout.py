"""The house's layout rules, checked on the source: imports run one way, torch and xgrammar stay behind
their folders, handlers live in __main__, pages stay short."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from engine.layers import LAYERS, layer_of

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"
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
    "engine.packs.trace",
    "engine.wire.formats",
    "engine.wire.openai_tokens",
    "engine.teaching.calculator",
    "engine.teaching.cost",
    "engine.teaching.gallery",
    "engine.teaching.panels",
    "engine.packs.panel_source",
    "engine.model.loading",
    "engine.model.weights",
)


def module_name(path: Path) -> str:
    """engine/core/parse.py -> 'core.parse'; engine/__main__.py -> '__main__'."""
    parts = path.relative_to(ENGINE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(path: Path, node: ast.ImportFrom) -> list[str]:
    """The engine modules an `from ... import ...` names, as module_name() spells them; [] outside engine."""
    if node.level == 0:
        if not (node.module or "").startswith("engine."):
            return []
        base = node.module.removeprefix("engine.")
    else:
        package = path.relative_to(ENGINE).parent.parts
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, node.module] if node.module else package)
    if node.module is None or base in PACKAGES:  # from . import filetools; from .packs import prepare
        return [f"{base}.{alias.name}".strip(".") for alias in node.names]
    return [base]


PACKAGES = {p.name for p in ENGINE.iterdir() if (p / "__init__.py").exists()}


def imports_of(path: Path, source: str) -> set[str]:
    """The engine modules one file's source imports, at the top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            names.update(resolve(path, node))
        elif isinstance(node, ast.Import):  # import engine.model.live
            names.update(a.name.removeprefix("engine.") for a in node.names if a.name.startswith("engine."))
    return names


def engine_imports() -> dict[str, set[str]]:
    """Each engine module and the engine modules it imports, at the top or inside a function."""
    graph: dict[str, set[str]] = {}
    for path in ENGINE.rglob("*.py"):
        name = module_name(path)
        graph[name] = imports_of(path, path.read_text(encoding="utf-8")) - {name}
    return graph


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import that runs up engine/layers.py's order, as "importer -> imported"."""
    return sorted(f"{m} -> {d}" for m, deps in graph.items() for d in deps if layer_of(d) > layer_of(m))


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
        ("core/prompt.py", "from .tokenizer import load_tokenizer", ["core.tokenizer"]),
        ("core/prompt.py", "from ..errors import BadInput", ["errors"]),
        ("harness/tools.py", "from . import filetools", ["harness.filetools"]),
        ("__main__.py", "from .model.loading import TINY", ["model.loading"]),
        ("__main__.py", "from .packs import prepare", ["packs.prepare"]),
        ("constrain/masks.py", "from ..model.decode import Alternative", ["model.decode"]),
    ],
)
def test_imports_resolve_to_engine_modules(where, line, expected):
    assert resolve(ENGINE / where, ast.parse(line).body[0]) == expected


def test_engine_imports_run_one_way():
    graph = engine_imports()
    assert {"harness.loop", "harness.ledger", "model.live", "constrain.masks", "core.parse"} <= set(graph)
    assert "core.tokenizer" in graph["core.prompt"] and "model.loading" in graph["model.decode"]
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph))}"


def test_every_engine_package_has_a_layer():
    assert {layer_of(m) for m in engine_imports()} == set(range(len(LAYERS)))


def test_no_engine_import_runs_up_a_layer():
    assert upward_imports(engine_imports()) == []


@pytest.mark.parametrize(
    ("where", "line"),
    [
        ("core/prompt.py", "from ..harness.loop import run_scenario"),  # at the top
        ("core/parse.py", "def later():\n    from ..packs.pack import Pack"),  # inside a function
        ("model/live.py", "import engine.teaching.quiz"),
        ("constrain/masks.py", "from ..wire.formats import write_all"),
    ],
)
def test_a_planted_upward_import_is_caught(where, line):
    graph = engine_imports()
    name = module_name(ENGINE / where)
    graph[name] = graph[name] | imports_of(ENGINE / where, line)
    assert upward_imports(graph), f"{where}: {line!r} was not caught"


def test_core_model_and_constrain_import_nothing_from_the_layers_above_harness():
    graph = engine_imports()
    above = {"harness", "wire", "packs", "teaching", "train"}
    assert [
        f"{m} -> {d}"
        for m, deps in graph.items()
        if m.split(".")[0] in ("core", "model", "constrain")
        for d in deps
        if d.split(".")[0] in above
    ] == []


def test_only_the_model_and_constrain_folders_import_torch_or_xgrammar():
    files = [*ENGINE.rglob("*.py"), *(ROOT / "app_pages").rglob("*.py"), *(ROOT / "ui").rglob("*.py"), ROOT / "app.py"]
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


def test_every_command_line_handler_is_in_main():
    def handlers(path: Path) -> list[str]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        return [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("cmd_")]

    # the check can fail: __main__ names its handlers so
    assert {"cmd_tokens", "cmd_parse", "cmd_mask", "cmd_generate"} <= set(handlers(ENGINE / "__main__.py"))
    elsewhere = {
        p.relative_to(ROOT).as_posix(): h
        for p in ENGINE.rglob("*.py")
        if p.name != "__main__.py" and (h := handlers(p))
    }
    assert elsewhere == {}, f"command-line handlers belong in engine/__main__.py: {elsewhere}"


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
