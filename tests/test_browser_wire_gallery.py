"""Lesson 7 and the failure gallery in headless Chromium, at a laptop's size and projected.

Slow-ish (about a minute): it uses the `streamlit_server` fixture (a real `streamlit run
app.py`) and drives Debian's chromium through Python playwright. Screenshots of the whole
page go to artifacts/screenshots/. Without chromium the tests skip, except under
REQUIRE_BROWSER=1 (CI), where they fail.
"""

from __future__ import annotations

import pytest
from helpers import assert_no_errors, reused_tab, settle_run, shoot_whole_page

pytestmark = pytest.mark.browser

# (width, height, query): a laptop, and a classroom projector in presenter mode
SIZES = [(1440, 900, ""), (1024, 768, "?present=1")]


def settle(page) -> None:
    page.wait_for_function(
        # drawn: its title, or (projected, past section 1) the section bar
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]') && (document.querySelector('h1') "
        "|| /Section \\d+ of \\d+/.test(document.body.innerText))",
        timeout=90_000,
    )
    settle_run(page)


def check_page(page, name: str) -> None:
    """No error box, nothing wider than the page, and a screenshot of the whole page."""
    assert_no_errors(page)
    wide = page.get_by_test_id("stMain").evaluate("m => m.scrollWidth - m.clientWidth")
    assert wide <= 1, f"{name}: the page scrolls sideways by {wide}px"
    shoot_whole_page(page, name)


@pytest.mark.parametrize("width, height, query", SIZES, ids=["1440x900", "1024x768-present"])
def test_lesson_7_opens_and_switches_tabs(streamlit_server, chromium, width, height, query):
    from playwright.sync_api import expect

    with reused_tab(chromium, width, height) as page:
        # projected, the five formats are section 1, under the title (one section at a time)
        page.goto(f"{streamlit_server}/same_call_in_other_apis{query}")
        settle(page)
        if query:
            expect(page.get_by_text("Section 1 of")).to_be_visible(timeout=60_000)
        expect(page.get_by_role("heading", name="7 · The same call in other APIs")).to_be_visible()
        expect(page.get_by_text("264 Qwen3 tokens")).to_be_visible(timeout=90_000)
        settle(page)
        page.get_by_role("tab", name="Anthropic").click()
        expect(page.get_by_text('"stop_reason": "tool_use"').first).to_be_visible(timeout=30_000)
        check_page(page, f"same-call-in-other-apis-{width}")


@pytest.mark.parametrize("width, height, query", SIZES, ids=["1440x900", "1024x768-present"])
def test_gallery_opens_and_steps_to_the_next_case(streamlit_server, chromium, width, height, query):
    from playwright.sync_api import expect

    with reused_tab(chromium, width, height) as page:
        # projected, what prevents it is section 6 (this case's cut inside a string has a screen of its own)
        page.goto(f"{streamlit_server}/gallery{query}{'&section=6' if query else ''}")
        settle(page)
        if query:  # the title is section 1's
            expect(page.get_by_text("Section 6 of")).to_be_visible(timeout=60_000)
        else:
            expect(page.get_by_role("heading", name="Ways a call goes wrong")).to_be_visible()
        # (projected, a paragraph shows its first two lines until pointed at: the section's heading instead)
        expect(
            page.get_by_role("heading", name="4 · What prevents it")
            if query
            else page.get_by_text("the parser is the fix")
        ).to_be_visible(timeout=90_000)
        settle(page)
        check_page(page, f"gallery-tag-in-string-{width}")
        # the next case from the case box (its Back/Next buttons gave way to the one step view)
        page.goto(f"{streamlit_server}/gallery?case=two-calls{'&present=1&section=3' if query else ''}")
        expect(page.get_by_text("never looks at the other 1 block")).to_be_visible(timeout=30_000)
        settle(page)
        page.goto(f"{streamlit_server}/gallery?case=made-up-name{'&present=1&section=6' if query else ''}")
        settle(page)
        expect(page.get_by_text("refuses token 8")).to_be_visible(timeout=30_000)
        check_page(page, f"gallery-made-up-name-{width}")
