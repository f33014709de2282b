"""Lesson 3 takes a learner's own question in a real browser: typed, Enter pressed, and its turn in the step view.

Slow (the session's `shipped_server`, shared with test_browser_shipped_model.py; the shipped model loaded once).
The page tests of the same controls are tests/test_pages_ask.py.
"""

from __future__ import annotations

import re
import time

import pytest
from helpers import reused_tab, save_shot, settle_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LONG = 240_000  # ms: the shipped model's load on a loaded 2-core machine
ANSWER = 150_000  # ms: from Enter to the question's turn in the step view (the bound)


def test_a_learner_types_a_question_presses_enter_and_steps_through_its_turn(chromium, shipped_server):
    from playwright.sync_api import expect

    with reused_tab(chromium, 1440, 900) as page:
        page.goto(f"{shipped_server}/the_model_writes_a_call")
        page.wait_for_selector("h1", timeout=LONG)
        settle_run(page, LONG)
        main = page.get_by_test_id("stMain")
        expect(page.locator(".sv-where").first).to_have_text(re.compile(r"Token 1 of \d+"), timeout=LONG)
        for label in ("Temperature", "Top-k", "Top-p"):
            expect(main.get_by_text(label, exact=True).first).to_be_visible()
        box = main.get_by_role("textbox", name=re.compile("question", re.I))
        box.fill("How many e's are in cheeseburger?")
        began = time.monotonic()
        box.press("Enter")
        asked = main.get_by_test_id("stMarkdownContainer").filter(has_text="Your question:")
        expect(asked.first).to_contain_text("cheeseburger", timeout=ANSWER)  # outside the box
        expect(page.locator(".sv-where").first).to_have_text(re.compile(r"Token 1 of \d+"), timeout=ANSWER)
        # each step: the candidates as the model gave them, and what the draw picked from
        expect(page.get_by_text("What the draw picked from").first).to_be_visible(timeout=ANSWER)
        assert time.monotonic() - began < ANSWER / 1000
        assert page.locator('[data-testid="stException"]').count() == 0
        save_shot(page, "lesson-3-own-question")


def test_projected_a_question_asked_fits_its_screen_and_page_down_leaves_the_box(chromium, shipped_server):
    """At 1024×768 in presenter mode: the question's screen, with the model's answer under the box, fits with
    nothing cut off, and PageDown pressed while the box still has the focus (after Enter) moves to the next section."""
    from playwright.sync_api import expect

    from ui.words import lesson

    heading = lesson("the-model-writes-a-call")["your own question heading"].strip()
    with reused_tab(chromium, 1024, 768) as page:
        page.goto(f"{shipped_server}/the_model_writes_a_call?present=1")
        bar = page.get_by_text(re.compile(r"^Section 1 of \d+"))
        expect(bar).to_be_visible(timeout=LONG)
        count = int(re.search(r"of (\d+)", bar.inner_text()).group(1))
        settle_run(page, LONG)
        main = page.get_by_test_id("stMain")
        # to the question's screen, a section at a time, as a presenter's clicker goes
        for k in range(2, count + 1):
            if main.get_by_role("heading", name=heading).count():
                break
            page.wait_for_function("() => document.documentElement.dataset.sectionKeys === 'on'", timeout=60_000)
            page.evaluate("document.activeElement && document.activeElement.blur()")
            page.keyboard.press("PageDown")
            expect(page.get_by_text(re.compile(rf"^Section {k} of {count}"))).to_be_visible(timeout=60_000)
            settle_run(page)
        at = int(re.search(r"Section (\d+) of", page.get_by_text(re.compile(r"^Section \d+ of")).inner_text()).group(1))
        box = main.get_by_role("textbox", name=re.compile("question", re.I))
        box.fill("How many e's are in cheeseburger?")
        box.press("Enter")
        expect(main.get_by_text(re.compile(r"The model wrote \d+ tokens")).first).to_be_visible(timeout=ANSWER)
        settle_run(page, ANSWER)
        height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
        save_shot(page, "lesson-3-own-question-projected")
        assert height <= 768, f"the question's screen with its answer is {height} px tall, past 768"
        # the focus in the box (where a teacher who typed and pressed Enter is): PageDown is the presenter's
        box.click()
        assert page.evaluate("() => document.activeElement && document.activeElement.tagName") == "INPUT"
        page.wait_for_function("() => document.documentElement.dataset.sectionKeys === 'on'", timeout=60_000)
        page.keyboard.press("PageDown")
        expect(page.get_by_text(re.compile(rf"^Section {at + 1} of {count}"))).to_be_visible(timeout=5_000)
        assert page.locator('[data-testid="stException"]').count() == 0
