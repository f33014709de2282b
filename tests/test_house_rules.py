"""Rules of the house that hold across files: each helper public where it is shared, each set of kinds written once
and typed, one stepper for the step views, names that say what they hold, pages as short scripts of scenes. Each check
is shown able to fail."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

from helpers import ROOT, open_page, view_step

import engine.model
from engine.packs import checks, pack, panel_source, prepare
from engine.teaching import panels

SOURCES = [
    *(ROOT / "engine").rglob("*.py"),
    *(ROOT / "ui").rglob("*.py"),
    *(ROOT / "app_pages").rglob("*.py"),
    *(ROOT / "bench").rglob("*.py"),
    ROOT / "app.py",
    ROOT / "router.py",
]


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


# -- shared helpers are public ------------------------------------------------------------------------------------
def private_imports(module: ast.Module) -> list[str]:
    """The private names (`_name`, not `__name__`) a module imports from another."""
    return [
        alias.name
        for node in ast.walk(module)
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]


def test_no_module_imports_another_modules_private_helper():
    found = {p.relative_to(ROOT).as_posix(): names for p in SOURCES if (names := private_imports(tree(p)))}
    assert found == {}, f"a helper used by another module is public, under a name that says what it does: {found}"
    # the check can fail
    assert private_imports(ast.parse("from ui.draw import _inline_markdown as inline_markdown")) == ["_inline_markdown"]


# -- kinds: written once, typed --------------------------------------------------------------------------------------
def test_the_panel_kinds_are_written_once_and_a_pack_reads_the_same_set():
    assert (
        panels.KINDS == get_args(panels.PanelKind) == ("generation", "episode", "first_token", "masks", "side_by_side")
    )
    assert checks.KINDS is panels.KINDS  # the pack's check of a run's kind uses the registry's own
    for module in (pack, checks, prepare, panels):
        source = Path(module.__file__).read_text(encoding="utf-8")
        assert module is panels or not re.search(r'"generation",\s*"episode"', source), module.__name__
    assert pack.PackRun.__annotations__["kind"] == prepare.PlannedRun.__annotations__["kind"] == "PanelKind"


def free_string_kinds(module: ast.Module) -> list[str]:
    """The dataclasses whose `kind` field is a bare `str` (a fixed set of values is a Literal)."""
    found = []
    for node in ast.walk(module):
        if isinstance(node, ast.ClassDef) and any("dataclass" in ast.unparse(d) for d in node.decorator_list):
            for item in node.body:
                if (
                    isinstance(item, ast.AnnAssign)
                    and isinstance(item.target, ast.Name)
                    and item.target.id == "kind"
                    and ast.unparse(item.annotation) == "str"
                ):
                    found.append(node.name)
    return found


def test_a_dataclass_kind_is_a_literal_of_its_values():
    # engine/core/ and engine/wire/ keep their own (their kinds are each format's)
    mine = [
        p
        for p in SOURCES
        if not p.is_relative_to(ROOT / "engine" / "core") and not p.is_relative_to(ROOT / "engine" / "wire")
    ]
    found = {p.relative_to(ROOT).as_posix(): names for p in mine if (names := free_string_kinds(tree(p)))}
    assert found == {}, f"a kind with a fixed set of values is a typing.Literal of them: {found}"
    assert free_string_kinds(ast.parse("@dataclass\nclass A:\n    kind: str\n")) == ["A"]
    assert panel_source.PanelSource.__annotations__["kind"].startswith("Literal[")


# -- one stepper -----------------------------------------------------------------------------------------------------
CLAMP = re.compile(r"min\(max\(st\.session_state\[")


def test_no_page_clamps_its_step_itself():
    found = [p.name for p in (ROOT / "app_pages").glob("*.py") if CLAMP.search(p.read_text(encoding="utf-8"))]
    assert found == [], f"pages take their step from ui.views.step_view.current_step: {found}"
    assert CLAMP.search('n = min(max(st.session_state["x_step"], 1), total)')


def test_a_step_past_the_end_or_before_the_start_is_clamped_on_each_stepping_page():
    at = open_page("app_pages/the_model_writes_a_call.py", model="off", step="999")
    where, _ = view_step(at, "the_model_writes_a_call_view")
    last = at.session_state["the_model_writes_a_call_step"]
    assert where == f"Token {last} of {last}" and at.query_params["step"] == str(last)
    at = open_page("app_pages/constrained_decoding.py", model="off", step="0")
    assert at.session_state["constrained_decoding_step"] == 1
    assert view_step(at, "constrained_decoding_view")[0].startswith("Token 1 of ")
    at = open_page("app_pages/check_run_return.py", step="99")
    calls = at.session_state["check_run_return_step"]
    assert view_step(at, "check_run_return_view")[0].endswith(f"{calls} of {calls}")


# -- names that say what they hold ------------------------------------------------------------------------------------
def test_the_sidebar_style_names_are_called_style_names():
    pages = [*(ROOT / "ui").rglob("*.py"), *(ROOT / "app_pages").rglob("*.py")]
    found = [p.name for p in pages if re.search(r"\bSTYLES\b", p.read_text(encoding="utf-8"))]
    assert found == [], f"ui.state.STYLE_NAMES is a tuple of names: {found}"


def test_the_model_package_says_which_of_its_modules_need_no_torch():
    doc = engine.model.__doc__
    assert "Everything that imports torch" not in doc
    for name in ("remote.py", "results.py", "weights.py"):
        assert name in doc and "torch" not in {n.split(".")[0] for n in heavy(ROOT / "engine" / "model" / name)}


def heavy(path: Path) -> set[str]:
    return {a.name for node in ast.walk(tree(path)) if isinstance(node, ast.Import) for a in node.names} | {
        node.module
        for node in ast.walk(tree(path))
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
    }


# -- a page is a short script of scenes --------------------------------------------------------------------------------
PAGES = sorted((ROOT / "app_pages").glob("*.py"))
PAGE_LINES = 150  # a page read top to bottom: its scenes, its lesson's words, its widgets
PAGE_FUNCTIONS = 20  # function definitions in all of app_pages/ together
FUNCTION_LINES = 100  # the longest function in engine/, app_pages/ or ui/
MODULE_LINES = 500  # the longest module in engine/ or ui/
MOVE = (
    "move runners, caches (st.cache_* wrappers), state helpers and drawings into ui/ (a module per concern, with a "
    "docstring saying what it is for), or into engine/teaching/ when they are pure logic without streamlit"
)


def functions(module: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function a module defines, nested ones included."""
    return [n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def long_functions(module: ast.Module, limit: int) -> list[str]:
    """The functions longer than `limit` lines, with their length."""
    return [f"{f.name} ({n} lines)" for f in functions(module) if (n := f.end_lineno - f.lineno + 1) > limit]


def called(module: ast.Module) -> list[str]:
    """The names of the functions a module calls (`scene(...)`, `st.header(...)`: scene, header)."""
    return [getattr(n.func, "id", getattr(n.func, "attr", "")) for n in ast.walk(module) if isinstance(n, ast.Call)]


def test_each_page_is_at_most_150_lines():
    long = {p.name: n for p in PAGES if (n := len(p.read_text(encoding="utf-8").splitlines())) > PAGE_LINES}
    assert long == {}, (
        f"a page is a short script of scenes, at most {PAGE_LINES} lines: {MOVE}; the page keeps its scene "
        f"headings, its lesson's words and which widgets appear: {long}"
    )


def test_the_pages_define_at_most_20_functions_together():
    found = {p.name: [f.name for f in functions(tree(p))] for p in PAGES}
    found = {name: defs for name, defs in found.items() if defs}
    count = sum(len(defs) for defs in found.values())
    assert count <= PAGE_FUNCTIONS, (
        f"app_pages/ defines {count} functions, at most {PAGE_FUNCTIONS} together (a page is a script, not a module): "
        f"{MOVE}: {found}"
    )
    # the check can fail: nested and async definitions count too
    assert len(functions(ast.parse("def a():\n    def b():\n        pass\nasync def c():\n    pass\n"))) == 3


def test_no_function_in_the_engine_the_pages_or_ui_is_over_100_lines():
    files = [*PAGES, *(ROOT / "ui").rglob("*.py"), *(ROOT / "engine").rglob("*.py")]
    found = {p.relative_to(ROOT).as_posix(): names for p in files if (names := long_functions(tree(p), FUNCTION_LINES))}
    assert found == {}, (
        f"a function over {FUNCTION_LINES} lines holds several ideas: cut it where its comments say a new step "
        "begins, each step a function of its own named for what it does (in engine/, beside it or in a module of its "
        f"own; for a page, in a ui/ module, a page's scenes staying at the page's top level): {found}"
    )
    assert long_functions(ast.parse("def f():\n" + "    x = 1\n" * FUNCTION_LINES), FUNCTION_LINES) == ["f (101 lines)"]


def long_modules(paths: list[Path], limit: int) -> dict[str, int]:
    """The files of `paths` longer than `limit` lines, with their length."""
    counts = {p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines()) for p in paths}
    return {name: n for name, n in counts.items() if n > limit}


def test_no_module_in_the_engine_or_ui_is_over_500_lines():
    found = long_modules([*(ROOT / "engine").rglob("*.py"), *(ROOT / "ui").rglob("*.py")], MODULE_LINES)
    assert found == {}, (
        f"a module holds one idea in at most {MODULE_LINES} lines: split it where its ideas part (its `# --` sections "
        "are a guide), give each new module a docstring saying what it is for, and import each name from the module "
        f"that now holds it: {found}"
    )
    # the check can fail
    assert list(long_modules([ROOT / "engine" / "layers.py"], 10)) == ["engine/layers.py"]


def hidden_scenes(module: ast.Module) -> str | None:
    """Why a page's scenes are not its own to read, or None: it marks a section without its heading's helper, or it
    draws several headings and never calls scene()."""
    calls = called(module)
    if "section" in calls:
        return "calls section(): a page begins each scene with ui.sections.scene(title), the section and its heading"
    headings = sum(calls.count(name) for name in ("header", "subheader", "scene"))
    if headings > 1 and "scene" not in calls:
        return f"draws {headings} headings and calls no scene(): each scene after the first begins with scene(title)"
    return None


def test_a_page_of_several_scenes_begins_each_with_scene():
    found = {p.name: why for p in PAGES if (why := hidden_scenes(tree(p)))}
    assert found == {}, (
        "a page shows its scenes top to bottom, each begun by ui.sections.scene() in the page itself (presenter mode "
        "makes each a screen), so that a reader sees them without opening ui/: keep each scene's scene() call and its "
        f"lesson words in the page, and move only what draws inside a scene: {found}"
    )
    # the check can fail, both ways
    assert hidden_scenes(ast.parse('st.header("A")\nst.header("B")\n')).startswith("draws 2 headings")
    assert hidden_scenes(ast.parse('section("A")\nst.header("A")\n')).startswith("calls section()")
    assert hidden_scenes(ast.parse('st.header("A")\nscene("B")\n')) is None
