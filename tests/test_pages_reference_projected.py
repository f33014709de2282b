"""Page tests (streamlit AppTest) for the reference pages projected (?present=1): the glossary, the sources,
the shipped model and "Measure it" come one screen at a time, each entry whole on exactly one section,
and without presenter mode each page reads as one page, as before. (The browser measures the heights.)"""

from __future__ import annotations

import re

from helpers import BAR, open_page, page_text, walk_sections, where

from engine.settings import BUILTIN_FOLDER
from ui import screens
from ui.glossary import glossary
from ui.sources import heading, load_sources

GLOSSARY = "app_pages/glossary.py"
SOURCES = "app_pages/sources.py"
SHIPPED = "app_pages/shipped_model.py"
EXPERIMENTS = "app_pages/experiments.py"


def test_the_glossary_projected_shows_each_term_once_a_few_to_a_screen_named_by_its_first_and_last():
    terms = [e["term"] for e in glossary()["terms"]]
    sections = walk_sections(GLOSSARY)
    assert sections[0][1] == []  # the first screen: the title, what the glossary is, every term as a link
    seen = []
    for title, shown, _ in sections[1:]:
        assert 1 <= len(shown) <= 4
        assert title == (f"Terms: {shown[0]} – {shown[-1]}" if len(shown) > 1 else f"Term: {shown[0]}")
        seen += shown
    assert seen == terms
    # on a screen: one page, every term under its heading, no bar
    at = open_page(GLOSSARY)
    assert [h.value for h in at.subheader] == terms and not any(BAR.search(m.value) for m in at.markdown)


def test_the_sources_projected_show_each_source_once_named_by_its_labels():
    sources = list(load_sources().values())
    sections = walk_sections(SOURCES)
    seen = []
    for title, shown, _ in sections[1:]:
        group = sources[len(seen) : len(seen) + len(shown)]
        assert shown == [heading(s) for s in group] and title == ", ".join(s.label for s in group)
        seen += shown
    assert seen == [heading(s) for s in sources]
    assert [h.value for h in open_page(SOURCES).subheader] == seen


def test_the_shipped_models_provenance_projected_is_whole_across_its_sections_each_table_drawn_alone():
    sections = walk_sections(SHIPPED)
    first = sections[0][2]
    assert "How its loss fell" in first and "## How it was trained" not in first  # the curve leads, alone
    body = (BUILTIN_FOLDER / "PROVENANCE.md").read_text(encoding="utf-8").split("\n", 1)[1]
    parts = [p.partition("\n")[0] for p in re.split(r"^## ", body, flags=re.MULTILINE)[1:]]
    titles = [title for title, _, _ in sections[1:]]
    for part in parts:
        assert any(t.startswith(part.split(" (")[0]) for t in titles), (part, titles)
    # every paragraph, item and table row of the provenance is on some screen
    text = "\n".join(shown for _, _, shown in sections)
    for block in screens.blocks(body):
        for line in block.splitlines():
            if line.startswith("|") and "---" not in line:
                assert line in text, line
    # a table is drawn on its own, never with the paragraphs that scroll with it in its box
    at = open_page(SHIPPED)
    for markdown in at.markdown:
        if "\n|" in markdown.value or markdown.value.startswith("|"):
            assert all(row.startswith("|") for row in markdown.value.strip().splitlines()), markdown.value[:80]


def test_measure_it_with_no_model_keeps_its_bar_and_its_last_words_each_stop_word_scene_then_its_lesson():
    sections = walk_sections(EXPERIMENTS, model="off")
    titles = [title for title, _, _ in sections]
    assert titles[-1] == "Run it" and "This page runs a model" in sections[-1][2]
    assert "What to notice" in sections[-1][2]  # no st.stop(): the page's end is drawn, and projected its bar
    turn = titles.index("Stop words, case 1: the turn")
    assert titles[turn + 1] == "Stop words, case 1: what it shows"
    assert "Nothing stops the turn" in sections[turn][2] and "invented 2" in sections[turn + 1][2]


def test_packing_fills_screens_evenly_and_splits_a_long_table_under_its_header():
    size = lambda n: n  # noqa: E731
    assert screens.pack([5, 5, 5, 5, 1], size, 18) == [[5, 5], [5, 5, 1]]  # not [5, 5, 5] then [5, 1]
    assert screens.pack([30, 2], size, 18) == [[30], [2]]  # too big alone: a screen of its own
    table = "| a | b |\n| --- | --- |\n" + "\n".join(f"| {i} | {i * i} |" for i in range(14))
    parts = screens.blocks(f"Some words.\n\n{table}\n\n- one\n- two")
    assert parts[0] == "Some words." and parts[-2:] == ["- one", "- two"]
    tables = parts[1:-2]
    assert len(tables) == 2 and all(t.startswith("| a | b |\n| --- | --- |\n") for t in tables)
    assert sum(len(t.splitlines()) - 2 for t in tables) == 14
    assert screens.texts(parts) == ["Some words.", *tables, "- one\n- two"]
    # rows long enough to wrap take two lines of the box: eight of them are two screens' tables, four and four
    label = "held-out words in training phrasings: exactly the right call"
    wide = "| | native | ReAct |\n| --- | --- | --- |\n" + "\n".join(
        f"| {label} {i} | 10 of 20 | 11 of 20 |" for i in range(8)
    )
    assert screens.row_height(wide.splitlines()[2]) == 2 and screens.row_height("| a | b |") == 1
    assert [len(t.splitlines()) - 2 for t in screens.blocks(wide)] == [4, 4]
    assert [len(t.splitlines()) - 2 for t in screens.blocks("\n".join(wide.splitlines()[:7]))] == [5]


def test_a_glossary_link_projected_keeps_presenter_mode_and_opens_its_term_on_the_first_screen():
    terms = glossary()["terms"]
    at = open_page(GLOSSARY, present="1")
    index = page_text(at)
    # every term of the first screen's index: the entry told to the page, presenter mode kept (a link is a new session)
    assert all(f"(glossary?term={t['id']}&present=1#{t['id']})" in index for t in terms)
    assert "](#" not in index  # no bare anchor: projected, it would point at another screen
    last = terms[-1]
    at = open_page(GLOSSARY, present="1", term=last["id"])
    assert where(at)[0] == 1 and f"**{last['term']}**:" in page_text(at)
    # on a screen, the same links without presenter mode
    assert f"(glossary?term={last['id']}#{last['id']})" in page_text(open_page(GLOSSARY))
