"""The sources file: every quoted figure names a source from lessons/sources.json, citable.

Lesson text and engine docstrings cite a source as `[[key]]`; a page shows its title in italics, a link to
the source's entry on the Sources page, and its date or "undated", with no stray brackets; the entry gives
who, when and where once. A figure from a source with no address says it was reported there, not measured here. No file a reader
sees speaks of "seed 000" (a reader has no seeds), and code (vLLM's regex) shows literally, asterisks and all.
"""

import ast
import html
import json
import re
from pathlib import Path

import pytest
from helpers import open_page, page_text
from markdown_it import MarkdownIt

from engine.harness.loop import list_gallery, load_scenario
from ui.sources import (
    CITATION,
    UNDATED,
    cite,
    entry_markdown,
    expand_citations,
    heading,
    load_sources,
    source_url,
    when,
)
from ui.words import lesson

ROOT = Path(__file__).resolve().parent.parent
LESSON_FILES = sorted((ROOT / "lessons").glob("*.md"))
SEED = re.compile(r"seed\s*0\d\d", re.IGNORECASE)
# a rendered citation: *[title](sources#key)* (date)
MARKER = re.compile(r"\*\[(.+?)\]\(([^()\s]+#[a-z0-9-]+)\)\* \(([^()]+)\)")
REGEX_LIKE = re.compile(r"\(\.[*+]|\.[*+]\?")  # a regex's (.* or .*?: Markdown eats its asterisks outside a code span


def shown(markdown: str) -> str:
    """The text a reader sees once Markdown is rendered (CommonMark, as Streamlit's renderer follows it)."""
    rendered = MarkdownIt("commonmark").render(markdown)
    return html.unescape(re.sub(r"<[^>]+>", "", rendered))


def shown_page(at) -> str:
    """The text of a page's Markdown elements as a reader sees them, each element rendered on its own."""
    return "\n".join(shown(part.value) for part in [*at.markdown, *at.caption, *at.subheader])


def paren_depth(text: str, at: int) -> int:
    """How many parentheses are open at position `at` of `text`."""
    depth = 0
    for ch in text[:at]:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        depth = max(depth, 0)
    return depth


def reader_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "app.py", ROOT / "router.py", *(ROOT / "docs").glob("*.md")]
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
        assert all(row.get(field, "").strip() for field in ("title", "label", "by", "date", "reports")), row["key"]
        # a date the source states (a year in it), or an explicit "undated (why)"
        assert row["date"].startswith(UNDATED + " (") or re.search(r"\b20\d\d\b", row["date"]), row["key"]
        # an address, or a note that the source gives none (said once, on the Sources page)
        assert bool(row.get("url")) != bool(row.get("no_url")), (
            f"{row['key']}: give a url, or say in no_url why there is none"
        )
        assert not row.get("url") or row["url"].startswith("https://"), row["key"]
        assert all(url.startswith("https://") for _, url in row.get("also", [])), row["key"]
        # the inline marker is short: no run-on, no parentheses
        assert len(row["label"]) <= 30 and not re.search(r"[()\[\];]", row["label"]), row["key"]
    assert len({row["label"] for row in rows}) == len(rows), "two sources share a marker"


def test_no_file_a_reader_sees_speaks_of_seeds():
    spoken = [
        f"{p.relative_to(ROOT)}: {m.group(0)!r}"
        for p in reader_files()
        for m in SEED.finditer(p.read_text(encoding="utf-8"))
    ]
    assert not spoken


def test_the_seed_check_can_fail():
    assert SEED.search("as seed 003 measured") and SEED.search("Seed001") and not SEED.search("--seed 3")


@pytest.mark.parametrize("path", LESSON_FILES, ids=[p.stem for p in LESSON_FILES])
def test_every_citation_in_the_lessons_names_a_listed_source(path):
    for key in CITATION.findall(path.read_text(encoding="utf-8")):
        assert key in load_sources(), f"{path.name} cites [[{key}]], which lessons/sources.json does not list"


def test_every_citation_in_the_engine_names_a_listed_source():
    cited = [
        (where, key)
        for where, doc in engine_docstrings()
        for key in CITATION.findall(doc)
        if "-" in key or key.isalpha()
    ]
    assert cited, "the engine's docstrings cite their sources"
    assert [(where, key) for where, key in cited if key not in load_sources()] == []


@pytest.mark.parametrize("path", LESSON_FILES, ids=[p.stem for p in LESSON_FILES])
def test_every_figure_reported_elsewhere_names_its_source(path):
    for name, body in lesson(path.stem).items():
        raw = body.lower()
        if "not measured on this machine" in raw or "not measured here" in raw or name == "reported elsewhere":
            cited = [s.key for s in load_sources().values() if cite(s.key) in body]
            assert cited, f"{path.name} ## {name}: a quoted figure must name its source, as [[key]]"


def test_a_citation_becomes_its_title_linked_to_its_entry_with_its_date_and_an_unknown_key_says_what_to_fix():
    bfcl, issue = load_sources()["bfcl"], load_sources()["vllm-issue-45167"]
    assert expand_citations("as [[bfcl]] checks") == f"as *[{bfcl.title}]({source_url('bfcl')})* (undated) checks"
    # rendered: the title is the link, in italics, and no bracket is left on the page
    rendered = MarkdownIt("commonmark").render(expand_citations("as [[bfcl]] checks"))
    assert f'as <em><a href="{source_url("bfcl")}">{html.escape(bfcl.title)}</a></em> (undated) checks' in rendered
    assert shown(expand_citations("as [[bfcl]] checks")) == f"as {bfcl.title} (undated) checks\n"
    # a dated source gives its date; a tag in a title stays a tag, as code
    assert shown(cite(issue.key)).strip() == f"{issue.title} (2026-06-10)" and when(issue) == "2026-06-10"
    assert source_url("bfcl").endswith("#bfcl")
    with pytest.raises(KeyError, match="no source 'seed-001' in lessons/sources.json"):
        expand_citations("[[seed-001]]")


@pytest.mark.parametrize("path", LESSON_FILES, ids=[p.stem for p in LESSON_FILES])
def test_inline_citations_are_titles_with_dates_never_nested_run_ons_or_brackets(path):
    sources = load_sources()
    for name, body in lesson(path.stem).items():
        seen = " ".join(shown(body).split())
        for found in MARKER.finditer(body):
            title, target, date = found.groups()
            key = target.rsplit("#", 1)[-1]
            assert key in sources and target == source_url(key), (path.name, name, found.group(0))
            assert title == heading(sources[key]) and date == when(sources[key]), (path.name, name, found.group(0))
            # never inside a parenthesis that is itself inside one: "(a lesson (Agents · Tools); undated) (not measured)"
            before = MARKER.sub("M", body[: found.start()])
            assert paren_depth(before, len(before)) <= 1, (path.name, name)
            # who and the date's explanation are said once, on the Sources page, not at every citation
            assert sources[key].by not in seen, (path.name, name, key)
            assert sources[key].date == when(sources[key]) or sources[key].date not in seen, (path.name, name, key)
            # a source that has no address is one this site was built from: its figures were reported there
            if not sources[key].url:
                assert "reported there, not measured here" in seen.lower(), (path.name, name, key)
        # no marker of the old kind: a short label in brackets
        for source in sources.values():
            assert f"[{source.label}]" not in seen, (path.name, name, source.key)


def test_the_run_on_check_can_fail():
    run_on = "in (a step-by-step lesson (Agents · Tools); undated) *[Tool Calling](sources#x)* (undated)"
    at = MARKER.search(run_on).start()
    assert paren_depth(run_on, at) == 0 and paren_depth(run_on, run_on.index("Agents")) == 2


def test_the_sources_page_lists_every_source_with_its_fields_and_anchors():
    at = open_page("app_pages/sources.py")
    assert at.title[0].value == "Sources"
    sources = list(load_sources().values())
    assert [h.value for h in at.subheader] == [heading(s) for s in sources]
    # each heading carries its key as anchor, where a lesson's marker links
    assert [h.proto.anchor for h in at.subheader] == [s.key for s in sources]
    text = page_text(at)
    for source in sources:
        assert entry_markdown(source) in text
        assert (source.url in text) if source.url else (f"No web address: {source.no_url}" in text)
    # the no-address note is said once per source that has no address, nowhere else
    assert text.count("No web address:") == sum(not s.url for s in sources) > 0
    assert "tool-calls-cant-come-out-malformed" not in shown_page(at)  # keys are for the code, titles for the reader


def test_the_sources_page_shows_vllm_s_regex_with_its_asterisks():
    at = open_page("app_pages/sources.py")
    regex = "<tool_call>(.*?)</tool_call>|<tool_call>(.*)"
    assert regex in shown_page(at)
    assert "<tool_call>(.?)</tool_call>|<tool_call>(.)" not in shown_page(at)
    # the check can fail: the same words without a code span lose their asterisks
    assert regex not in shown(f"The block regex {regex} and its policy")
    # and a title with a tag in it keeps the tag
    issue = load_sources()["vllm-issue-45167"]
    assert "</tool_call>" in shown(heading(issue))


def reader_texts() -> list[tuple[str, str]]:
    """Every Markdown text a reader sees from lessons/: the lessons, the sources, the gallery's and scenarios' words."""
    texts = [(p.name, p.read_text(encoding="utf-8")) for p in LESSON_FILES]
    texts += [(f"sources.json {s.key}", s.reports) for s in load_sources().values()]
    for path in sorted((ROOT / "lessons" / "scenarios").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            texts += [(path.name, data.get(k, "")) for k in ("summary", "lesson")]
            texts += [(path.name, v if isinstance(v, str) else v["text"]) for v in data.get("gallery", {}).values()]
    return texts


def test_the_code_check_can_fail():
    assert REGEX_LIKE.search("The block regex <tool_call>(.*?)</tool_call>") and not REGEX_LIKE.search(
        "a sentence.**Bold**"
    )


def test_code_in_the_lessons_sits_in_code_spans():
    prose = [(where, re.sub(r"`[^`]*`", "", text)) for where, text in reader_texts()]
    loose = [
        (where, text[max(0, m.start() - 30) : m.end() + 10]) for where, text in prose for m in REGEX_LIKE.finditer(text)
    ]
    assert loose == [], "a regex outside backticks loses its asterisks to Markdown: write it as `code`"


@pytest.mark.parametrize("name", list_gallery())
def test_every_gallery_case_names_its_report_or_says_it_was_constructed(name):
    origin = load_scenario(name).gallery["origin"]
    keys = CITATION.findall(origin["text"])
    assert all(k in load_sources() for k in keys), name
    if origin["kind"] == "reported":
        assert keys, f"{name}: a reported case names the report it reproduces, as [[key]]"
    else:
        assert origin["kind"] == "constructed" and origin["text"].startswith("Constructed to show the failure"), name


@pytest.mark.parametrize("name", ["anthropic-tool-overhead.json", "openai-cookbook-example.json"])
def test_quoted_tables_name_their_source_from_the_sources_file(name):
    quoted = json.loads((ROOT / "lessons" / name).read_text(encoding="utf-8"))["source"]
    listed = load_sources()[quoted["key"]]
    assert quoted["page"].startswith(listed.title) and quoted["url"] == listed.url


def test_pages_cite_by_title_and_date_and_goinfer_s_dates_print_once():
    at = open_page("app_pages/constrained_decoding.py")
    caption = next(c.value for c in at.caption if "14 of 111" in c.value)
    goinfer = load_sources()["tool-calls-cant-come-out-malformed"]
    assert cite(goinfer.key) in caption
    seen = " ".join(shown(caption).split())
    assert seen.count("2026-09-23") == 1 and f"{goinfer.title} ({goinfer.date})" in seen and goinfer.by not in seen
    at = open_page("app_pages/why_call_a_tool.py")
    seen = " ".join(shown_page(at).split())
    lesson_source = load_sources()["tool-calling-step-by-step"]
    assert f"In {lesson_source.title} (undated), Qwen3-1.7B" in seen
    assert "reported there, not measured here" in seen.lower()
    assert lesson_source.by not in seen and f"[{lesson_source.label}]" not in seen
