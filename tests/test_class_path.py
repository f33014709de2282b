"""The 50-minute class path (lessons/teaching.json): its minutes, the screens it names on each page, and the
same path on Home and in docs/classroom.md."""

from __future__ import annotations

import re

import pytest
from helpers import open_page, page_text, walk_sections

from ui.teacher import class_path
from ui.words import ROOT, lesson_index, page_title

PAGES = {e["id"]: e["page"] for e in lesson_index()}


def test_the_path_lasts_fifty_minutes_over_pages_that_exist_each_with_a_question():
    path = class_path()
    assert sum(stop.minutes for stop in path) == 50
    assert len({stop.page for stop in path}) == len(path)
    for stop in path:
        assert (ROOT / PAGES[stop.page]).is_file(), stop.page
        assert stop.screens and stop.show and stop.ask.endswith("?") and stop.minutes > 0


@pytest.mark.parametrize("stop", class_path(), ids=[stop.page for stop in class_path()])
def test_every_screen_the_path_names_is_a_section_of_its_page_in_that_order(stop):
    """Projected with the model off (the sections every condition has): each screen named is a section's title or
    its heading, and the screens come in the order PageDown reaches them."""
    screens = walk_sections(PAGES[stop.page], model="off")
    found = []
    for name in stop.screens:
        at = [k for k, (title, _, text) in enumerate(screens) if title == name or name in text.splitlines()]
        assert at, (name, [title for title, _, _ in screens])
        found.append(at[0])
    assert found == sorted(found), (stop.page, found)


def test_home_shows_the_path_and_docs_classroom_repeats_it():
    path = class_path()
    at = open_page("app_pages/home.py")
    text = page_text(at)
    assert "A 50-minute class" in [h.value for h in at.header]
    labels = [link.label for link in at.get("page_link")]
    doc = (ROOT / "docs" / "classroom.md").read_text(encoding="utf-8")
    listed = doc.split("## A 50-minute class", 1)[1]
    for number, stop in enumerate(path, 1):
        assert f"{page_title(stop.page)} · {stop.minutes} min" in labels
        assert stop.ask in text and " → ".join(stop.screens) in text
        title = next(e["title"] for e in lesson_index() if e["id"] == stop.page)
        item = re.search(rf"^{number}\. \*\*(.+?)\*\* \((\d+) min\)(.*?)(?=^\d+\. |\Z)", listed, re.S | re.M)
        assert item and item[1] == title and int(item[2]) == stop.minutes, (number, item and item[0])
        assert " ".join(item[3].split()).count(stop.ask) == 1 and " → ".join(stop.screens) in " ".join(item[3].split())
