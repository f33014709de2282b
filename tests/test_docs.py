"""The README is a map and docs/ holds the rest: every path and link they name exists, and the figures they quote are the recorded ones."""

from __future__ import annotations

import json
import re

import pytest
from helpers import ROOT

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
# a path into the repository written in prose, a code span or a command: engine/core/parse.py, lessons/tools/
REPO_PATH = re.compile(r"(?<![\w./~-])(?:engine|ui|app_pages|lessons|tests|bench|docs|assets|scripts|\.ci)/[\w./-]*")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """A heading's anchor as GitHub writes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def named_paths(text: str) -> list[str]:
    found = []
    for match in REPO_PATH.finditer(text):
        if text[match.end() : match.end() + 1] in ("<", "{"):  # a placeholder: lessons/<id>.md
            continue
        found.append(match.group(0).rstrip("."))
    return found


def map_paths() -> list[str]:
    """The paths of the README's module map: a top-level name, or a name under engine/ when indented."""
    block = README.read_text(encoding="utf-8").split("## Where things are", 1)[1].split("\n\n", 2)[1]
    paths = []
    for line in block.splitlines():
        indent, name = len(line) - len(line.lstrip()), line.split()[0]
        if indent <= 6:  # deeper lines continue the description above them
            paths.append(f"engine/{name}" if indent == 6 else name)
    return paths


def test_the_readme_is_a_map_of_at_most_200_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


def test_the_quick_start_is_two_commands_and_ci_runs_the_second():
    text = README.read_text(encoding="utf-8")
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [line.strip() for line in quick.splitlines() if line.startswith("    ")]
    assert commands == ["pip install -r requirements.txt && streamlit run app.py", "bash scripts/test.sh"]
    assert "\nbash scripts/test.sh\n" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_path_a_page_names_exists(page):
    missing = [p for p in named_paths(page.read_text(encoding="utf-8")) if not (ROOT / p).exists()]
    assert not missing, f"{page.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_every_entry_of_the_readme_s_module_map_exists():
    paths = map_paths()
    assert "engine/core/" in paths and "docs/" in paths
    assert not [p for p in paths if not (ROOT / p).exists()]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_leads_to_a_file_and_a_heading_there(page):
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://")):
            continue
        file, _, anchor = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        assert linked.is_file(), f"{page.name} links to {target}, which does not exist"
        if anchor:
            headings = [slug(h) for h in re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), re.M)]
            assert anchor in headings, f"{page.name} links to {target}: {linked.name} has no such heading"


def test_the_path_and_link_checks_can_fail():
    assert named_paths("see `engine/sandbox_guard.py`, and lessons/<id>.md.") == ["engine/sandbox_guard.py"]
    assert not (ROOT / "engine" / "sandbox_guard.py").exists()
    assert LINK.findall("[a](docs/engines.md#benchmarks)") == ["docs/engines.md#benchmarks"]
    assert slug("A model server") == "a-model-server" and slug("int8 weights on a CPU") == "int8-weights-on-a-cpu"


def test_the_shipped_model_s_held_out_table_is_what_heldout_json_records():
    recorded = json.loads((ROOT / "assets" / "builtin-model" / "heldout.json").read_text(encoding="utf-8"))
    text = (ROOT / "docs" / "shipped-model.md").read_text(encoding="utf-8")
    rows = {
        "count_exact": "count_letter: exactly the right call",
        "tool_exact": "other tools: exactly the right call",
        "well_formed": "turns that called: every block well-formed",
        "no_call": "no tool helps: answered without a call",
    }
    for key, label in rows.items():
        (n_right, n_of), (r_right, r_of) = recorded[key]["native"], recorded[key]["react"]
        assert f"| {label} | {n_right} of {n_of} | {r_right} of {r_of} |" in text, key
