"""The sources file: every quoted figure names a source from lessons/sources.json, by title.

Lesson text and engine docstrings cite a source as `[[key]]`; the page shows its title. No file a
reader sees speaks of "seed 000" (a reader has no seeds), and the Sources page lists every entry.
"""

import ast
import json
import re
from pathlib import Path

import pytest
from helpers import open_page, page_text

from ui.sources import CITATION, cite, expand_citations, load_sources
from ui.words import lesson

ROOT = Path(__file__).resolve().parent.parent
LESSON_FILES = sorted((ROOT / "lessons").glob("*.md"))
SEED = re.compile(r"seed\s*0\d\d", re.IGNORECASE)


def reader_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "app.py"]
    for folder in ("engine", "app_pages", "ui", "lessons"):
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md", ".json")]
    return files


def engine_docstrings() -> list[tuple[str, str]]:
    found = []
    for path in (ROOT / "engine").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if doc:
                    found.append((str(path.relative_to(ROOT)), doc))
    return found


def test_every_source_has_a_title_a_publisher_a_date_and_what_it_reports():
    rows = json.loads((ROOT / "lessons" / "sources.json").read_text(encoding="utf-8"))
    keys = [row["key"] for row in rows]
    assert len(keys) == len(set(keys)) == len(load_sources())
    for row in rows:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", row["key"]), row["key"]
        assert all(row.get(field, "").strip() for field in ("title", "by", "date", "reports")), row["key"]


def test_no_file_a_reader_sees_speaks_of_seeds():
    spoken = [f"{p.relative_to(ROOT)}: {m.group(0)!r}" for p in reader_files() for m in SEED.finditer(p.read_text(encoding="utf-8"))]
    assert not spoken


def test_the_seed_check_can_fail():
    assert SEED.search("as seed 003 measured") and SEED.search("Seed001") and not SEED.search("--seed 3")


@pytest.mark.parametrize("path", LESSON_FILES, ids=[p.stem for p in LESSON_FILES])
def test_every_citation_in_the_lessons_names_a_listed_source(path):
    for key in CITATION.findall(path.read_text(encoding="utf-8")):
        assert key in load_sources(), f"{path.name} cites [[{key}]], which lessons/sources.json does not list"


def test_every_citation_in_the_engine_names_a_listed_source():
    cited = [(where, key) for where, doc in engine_docstrings() for key in CITATION.findall(doc) if "-" in key or key.isalpha()]
    assert cited, "the engine's docstrings cite their sources"
    assert [(where, key) for where, key in cited if key not in load_sources()] == []


@pytest.mark.parametrize("path", LESSON_FILES, ids=[p.stem for p in LESSON_FILES])
def test_every_figure_reported_elsewhere_names_its_source(path):
    for name, body in lesson(path.stem).items():
        raw = body.lower()
        if "not measured on this machine" in raw or name == "reported elsewhere":
            titles = [s.title for s in load_sources().values() if s.title in body]
            assert titles, f"{path.name} ## {name}: a quoted figure must name its source, as [[key]]"


def test_a_citation_becomes_the_title_and_an_unknown_key_says_what_to_fix():
    assert expand_citations("as [[bfcl]] checks") == f"as {cite('bfcl')} checks"
    assert cite("bfcl").startswith("*Berkeley Function Calling Leaderboard*")
    with pytest.raises(KeyError, match="no source 'seed-001' in lessons/sources.json"):
        expand_citations("[[seed-001]]")


def test_the_sources_page_lists_every_source_by_title():
    at = open_page("app_pages/sources.py")
    assert at.title[0].value == "Sources"
    assert [h.value for h in at.subheader] == [s.title for s in load_sources().values()]
    assert "tool-calls-cant-come-out-malformed" not in page_text(at)  # keys are for the code, titles for the reader


@pytest.mark.parametrize("name", ["anthropic-tool-overhead.json", "openai-cookbook-example.json"])
def test_quoted_tables_name_their_source_from_the_sources_file(name):
    quoted = json.loads((ROOT / "lessons" / name).read_text(encoding="utf-8"))["source"]
    listed = load_sources()[quoted["key"]]
    assert quoted["page"].startswith(listed.title) and quoted["url"] == listed.url
