"""A lesson's identity lives in lessons/index.json: id, url_path, page file, title, section.

Its number ("4 · Check it, run it, return it") is its position among the Lessons section,
computed, never written: inserting a lesson renumbers the ones after it and renames no file.
"""

import re

import pytest
from helpers import ROOT

from ui.words import lesson, lesson_index, lesson_number, page_title

INDEX = lesson_index()


def test_every_entry_is_whole_and_unique():
    for field in ("id", "url_path", "page", "title"):
        values = [e[field] for e in INDEX]
        assert len(values) == len(set(values)), field
    for entry in INDEX:
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", entry["id"]), entry["id"]
        assert (ROOT / entry["page"]).exists() and entry["section"] in ("Start", "Lessons", "Tools")
        assert not re.search(r"\d", entry["page"].rsplit("/", 1)[-1]), f"{entry['page']}: page files carry no numbers"


def test_titles_carry_no_number_and_the_site_numbers_the_lessons_in_order():
    assert not [e["title"] for e in INDEX if re.match(r"\d", e["title"])]
    lessons = [e["id"] for e in INDEX if e["section"] == "Lessons"]
    assert [lesson_number(i) for i in lessons] == list(range(1, len(lessons) + 1))
    assert page_title("check-run-return") == "4 · Check it, run it, return it"
    assert page_title("calculator") == "Token-cost calculator" and lesson_number("calculator") is None


def test_inserting_a_lesson_renumbers_the_ones_after_it():
    new = {
        "id": "new-lesson",
        "section": "Lessons",
        "title": "A new lesson",
        "page": "app_pages/new.py",
        "url_path": "new",
    }
    at = next(i for i, e in enumerate(INDEX) if e["id"] == "tools-as-schemas")
    grown = [*INDEX[: at + 1], new, *INDEX[at + 1 :]]
    assert page_title("new-lesson", grown) == "3 · A new lesson"
    assert page_title("check-run-return", grown) == "5 · Check it, run it, return it"
    assert page_title("why-call-a-tool", grown) == "1 · Why call a tool"


@pytest.mark.parametrize(
    "entry", [e for e in INDEX if (ROOT / "lessons" / f"{e['id']}.md").exists()], ids=lambda e: e["id"]
)
def test_a_title_is_written_once(entry):
    first = (ROOT / "lessons" / f"{entry['id']}.md").read_text(encoding="utf-8").split("\n", 1)[0]
    if entry["id"] == "home":  # the home page's heading is the site's name, not its menu title
        assert first == "# Tool calling, token by token"
        return
    assert not first.startswith("# "), f"lessons/{entry['id']}.md repeats its title; it comes from lessons/index.json"
    assert lesson(entry["id"])["title"] == page_title(entry["id"])


def test_a_renamed_pages_old_address_is_kept_and_names_no_current_page():
    # teachers' links to lesson 7 under its earlier name (ui/chrome.py sends such a visit on to the page)
    old = {path: entry["id"] for entry in INDEX for path in entry.get("old_url_paths", [])}
    assert old["same_call_five_ways"] == "same-call-in-other-apis"
    assert not set(old) & {e["url_path"] for e in INDEX}
    assert sum(len(e.get("old_url_paths", [])) for e in INDEX) == len(old)
