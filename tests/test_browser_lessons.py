"""Click through lesson 4 and the harness playground in headless Chromium, as a learner would.

Slow-ish (about half a minute): it uses the `streamlit_server` fixture (a real `streamlit run
app.py`) and drives Debian's chromium through Python playwright. Screenshots go to
artifacts/screenshots/. Without chromium the tests skip, except under REQUIRE_BROWSER=1
(CI), where they fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import assert_no_errors, close_dialog, reused_tab, save_shot, settle_run

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent


def _query(page) -> dict[str, str]:
    from urllib.parse import parse_qs, urlparse

    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def _press(page, key: str) -> None:
    """Press a keyboard shortcut with the page body focused, once the page has settled."""
    settle_run(page)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press(key)


def test_lesson_4_click_through_the_missing_brace_run(streamlit_server, chromium):
    from playwright.sync_api import expect

    with reused_tab(chromium, 1400, 2400) as page:
        page.goto(f"{streamlit_server}/check_run_return")
        expect(page.get_by_text("Call 2 of 7")).to_be_visible(timeout=90_000)
        settle_run(page)
        close_dialog(page)
        page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
        expect(page.get_by_text("is not valid JSON").first).to_be_visible()
        assert_no_errors(page)
        save_shot(page, "check-run-return-call-2")

        # turn 3 repairs the call: every check passes and read_file runs
        page.get_by_role("button", name="Next").click()
        expect(page.get_by_text("Call 3 of 7")).to_be_visible(timeout=30_000)
        settle_run(page)
        expect(page.get_by_text("ran read_file(path='calc.py')")).to_be_visible()
        page.wait_for_url("**step=3**", timeout=30_000)  # the view reports the call reached after a pause
        assert_no_errors(page)
        save_shot(page, "check-run-return-call-3")

        # back again with the keyboard's left arrow (shortcuts act when no widget holds the focus)
        _press(page, "ArrowLeft")
        expect(page.get_by_text("Call 2 of 7")).to_be_visible(timeout=30_000)
        page.wait_for_url("**step=2**", timeout=30_000)
        assert _query(page) == {"style": "native", "scenario": "missing-brace", "step": "2"}

        # a prepared link opens the mixed turn under the vllm policy
        page.goto(f"{streamlit_server}/check_run_return?scenario=mixed-turn&policy=vllm&step=1")
        expect(page.get_by_text("Call 1 of 1")).to_be_visible(timeout=60_000)
        settle_run(page)
        expect(page.get_by_text("comes back as plain text").first).to_be_visible()
        assert_no_errors(page)


def test_lesson_4_cold_link_keeps_its_scenario_while_stepping(fresh_streamlit_server, chromium):
    """A fresh server's first request runs the page without the router; its widgets must keep their
    values through the runs that follow (the scenario once jumped to "strawberry" on Next, then Back)."""
    from playwright.sync_api import expect

    with reused_tab(chromium, 1400, 2400) as page:
        page.goto(f"{fresh_streamlit_server}/check_run_return")
        expect(page.get_by_text("Call 2 of 7")).to_be_visible(timeout=90_000)
        settle_run(page)
        close_dialog(page)
        for press, number in (("Next", 3), ("Back", 2), ("ArrowRight", 3), ("ArrowLeft", 2), ("ArrowLeft", 1)):
            if press.startswith("Arrow"):
                _press(page, press)
            else:
                page.get_by_role("button", name=press).click()
            expect(page.get_by_text(f"Call {number} of 7")).to_be_visible(timeout=30_000)
            page.wait_for_url(f"**step={number}**", timeout=30_000)  # reported after a pause, then a rerun
            settle_run(page)
            assert _query(page) == {"style": "native", "scenario": "missing-brace", "step": str(number)}, press
        assert_no_errors(page)


def test_playground_runs_an_episode_and_refuses_a_bad_path(streamlit_server, chromium):
    from playwright.sync_api import expect

    with reused_tab(chromium, 1400, 2400) as page:
        page.goto(f"{streamlit_server}/playground")
        expect(page.get_by_role("heading", name="Harness playground")).to_be_visible(timeout=90_000)
        settle_run(page)
        close_dialog(page)

        # a path that leaves the workspace gets a message beside it, and keeps its text
        name = page.get_by_label("File name").first
        name.fill("../outside.py")
        name.press("Enter")
        expect(page.get_by_text("the path '../outside.py' leaves the workspace")).to_be_visible(timeout=30_000)
        settle_run(page)
        assert page.get_by_label("File name").first.input_value() == "../outside.py"

        # the scripted turns were written for calc.py: with it left out the script would stop at once
        name.fill("calc.py")
        name.press("Enter")
        settle_run(page)
        page.get_by_role("button", name="Run the episode").click()
        expect(page.get_by_text("The run stopped").first).to_be_visible(timeout=60_000)
        settle_run(page)
        # the calls one at a time: the first shown, the last a click away
        expect(page.locator("strong", has_text="Call 1")).to_be_visible()
        page.get_by_role("radio", name="call 7").click()
        settle_run(page)
        expect(page.locator("strong", has_text="Call 7")).to_be_visible(timeout=30_000)
        # plotly draws after the page settles; wait for the ledger chart itself
        page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
        assert_no_errors(page)
        save_shot(page, "playground-run")
