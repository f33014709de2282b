"""The house's layout rules, checked on the source: imports run one way, handlers live in __main__, pages stay short."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"


def engine_imports() -> dict[str, set[str]]:
    """Each engine module and the engine modules it imports, at the top or inside a function."""
    graph: dict[str, set[str]] = {}
    for path in ENGINE.glob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    names.add(node.module.split(".")[0])
                else:  # from . import filetools
                    names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine."):
                names.add(node.module.split(".")[1])
        graph[path.stem] = names - {path.stem}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path of module names, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt] if nxt in path else [*path, nxt]
            if state.get(nxt) is None and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if state.get(start) is None and (found := visit(start, [start])):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle_and_passes_a_tree():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_engine_imports_run_one_way():
    graph = engine_imports()
    assert {"harness", "ledger", "live", "constrain"} <= set(graph)
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph))}"


def test_every_command_line_handler_is_in_main():
    for path in ENGINE.glob("*.py"):
        if path.name == "__main__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        handlers = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.endswith("_command")]
        assert handlers == [], f"{path.name} defines command-line handlers {handlers}: they belong in engine/__main__.py"


def test_no_page_file_is_over_250_lines():
    long = {p.relative_to(ROOT).as_posix(): n for p in (ROOT / "pages").rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 250}
    assert long == {}, f"pages should stay short scripts; move logic into engine/ or a pages/common module: {long}"


def test_each_vocabulary_size_is_written_in_one_engine_file():
    for figure in ("151669", "151936"):
        holders = [p.name for p in ENGINE.glob("*.py") if figure in p.read_text(encoding="utf-8")]
        assert holders == ["tokenizer.py"], f"{figure} is written in {holders}"


def test_tests_share_helpers_through_helpers_py_only():
    offenders = []
    for path in (ROOT / "tests").glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # a test module or conftest, under any name (helpers such as local_hub.py are fine)
            last = (node.module or "").split(".")[-1] if isinstance(node, ast.ImportFrom) else ""
            if last == "conftest" or last.startswith("test_"):
                offenders.append(f"{path.name}: from {node.module}")
    assert offenders == [], f"move what tests share into tests/helpers.py: {offenders}"
