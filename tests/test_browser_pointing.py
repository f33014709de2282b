"""Words that point ("above", "below") point at something that is there, in that direction, on a learner's screen.

A sentence such as "click **Add a tool** above" is right only while the button sits above it; a page
reordered into scenes can leave it pointing at nothing. Each row names a sentence of lessons/, the
page it is on and what it points at; the test opens each page once at 1440×900 with no model (as a learner
first sees it) and compares the two boxes. Projected, a page may put the two in different sections:
there the pointing words of a scene are the presenter walk's concern (tests/test_browser_fit.py).

Slow-ish (one opening per page named): the `streamlit_server` fixture and Debian's chromium through playwright.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import pytest
from helpers import reused_tab, settle_run

pytestmark = pytest.mark.browser


@dataclass(frozen=True)
class Pointer:
    """A sentence on a page and what its pointing word says is above or below it."""

    page: str  # url path and query, the model off
    words: str  # a piece of the sentence, as the page shows it
    where: Literal["above", "below"]
    target: str  # a CSS selector, or "button:NAME" for a button by its name
    why: str


POINTERS = [
    Pointer("why_call_a_tool", "Type the word in the box above", "above", "input[type=text]", "the word's box"),
    Pointer("why_call_a_tool", "Try both above", "above", "input[type=text]", "the word's box"),
    Pointer("tools_as_schemas", "Edit the tool definitions below", "below", "textarea", "the tools' editor"),
    Pointer("tools_as_schemas", "click Add a tool above", "above", "button:Add a tool", "the button"),
    Pointer(
        "the_model_writes_a_call",
        "First token of the name above jumps there",
        "above",
        "button:First token of the name",
        "the jump button",
    ),
    Pointer("check_run_return", "Switch the policy above to compare", "above", "text=Harness policy", "the switch"),
    Pointer("answer_and_when_not_to_call", "Below is the prompt of the model", "below", ".prompt-view", "the prompt"),
    Pointer(
        "answer_and_when_not_to_call", "read off the result above it", "above", ".prompt-view", "the result's prompt"
    ),
    Pointer(
        "constrained_decoding",
        "The allowed counts and tokens in the step view at the start of this lesson need only the grammar",
        "above",
        ".sv-strip",
        "the step view",
    ),
    Pointer("setup", "an upload below", "below", '[data-testid="stFileUploader"]', "the pack upload"),
    Pointer("setup", "its provenance is linked below", "below", 'a[href*="shipped_model"]', "the link"),
]


OPEN_ALL = """() => document.querySelectorAll('[data-testid="stMain"] details:not([open]) > summary')
  .forEach(summary => summary.click())"""
# an element's edges relative to the screen: all taken in one scroll position, so their order is the page's
EDGES = "el => { const r = el.getBoundingClientRect(); return [r.top, r.bottom]; }"


def target_locator(page, target: str):
    main = page.get_by_test_id("stMain")
    if target.startswith("button:"):
        return main.get_by_role("button", name=target.removeprefix("button:"))
    if target.startswith("text="):
        return main.get_by_text(target.removeprefix("text="), exact=True)
    return main.locator(target)


def pointing_fault(page, pointer: Pointer) -> str | None:
    """What is wrong with one sentence's pointing word on the opened page; None when its target is there."""
    # the smallest element holding the sentence (Markdown splits it at bold words: match the text, not a node)
    sentence = (
        page.get_by_test_id("stMain")
        .locator("p, li")
        .filter(has_text=re.compile(r"\s+".join(map(re.escape, pointer.words.split()))))
    )
    if not sentence.count():
        return f"{pointer.words!r} is not on /{pointer.page}"
    target = target_locator(page, pointer.target)
    if not target.count():
        return f"{pointer.words!r} points at {pointer.why} ({pointer.target}), not on /{pointer.page}"
    top, bottom = sentence.first.evaluate(EDGES)
    # any one of the targets in the direction the words point will do
    edges = [t.evaluate(EDGES) for t in target.all()]
    if pointer.where == "above" and not any(end <= top + 1 for _, end in edges):
        return f"{pointer.words!r} says {pointer.why} is above, but it is not: {edges} vs the sentence at {top}"
    if pointer.where == "below" and not any(start >= bottom - 1 for start, _ in edges):
        return f"{pointer.words!r} says {pointer.why} is below, but it is not: {edges} vs the sentence at {bottom}"
    return None


# one test per page, its sentences checked on one opening of it
PAGES = sorted({p.page for p in POINTERS}, key=[p.page for p in POINTERS].index)


@pytest.mark.parametrize("page_path", PAGES)
def test_a_word_that_points_has_its_target_there(chromium, streamlit_server, page_path):
    with reused_tab(chromium, 1440, 900) as page:
        separator = "&" if "?" in page_path else "?"
        page.goto(f"{streamlit_server}/{page_path}{separator}model=off")
        page.locator("h1").first.wait_for(timeout=90_000)
        settle_run(page)
        # a quiz's answers sit in closed expanders, drawn when opened (by a click, no rerun): open them all
        page.evaluate(OPEN_ALL)
        page.wait_for_timeout(300)
        faults = [pointing_fault(page, pointer) for pointer in POINTERS if pointer.page == page_path]
        assert not [fault for fault in faults if fault], [fault for fault in faults if fault]
