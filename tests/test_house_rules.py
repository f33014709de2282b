"""Rules of the house that hold across files: each helper public where it is shared, each set of kinds written once
and typed, one stepper for the step views, names that say what they hold. Each check is shown able to fail."""

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
