"""The "Measure it" page in Chromium with the shipped model: a suite run free and constrained, its table and chart.

Slow (the session's `shipped_server`, shared with test_browser_shipped_model.py; the shipped model loaded once,
20 short runs on a loaded 2-core machine): the server runs as the README's quick start does, with no QWEN_MODEL,
offline, with an empty Hugging Face cache.
"""

from __future__ import annotations

import pytest
from helpers import assert_no_errors, reused_tab, save_shot, settle_run

from ui.sources import load_sources

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LONG = 600_000  # ms: the shipped model's load and 20 runs of one short turn each


def test_the_shipped_model_runs_a_suite_free_and_constrained_and_the_chart_shows(chromium, shipped_server):
    from playwright.sync_api import expect

    url = shipped_server
    with reused_tab(chromium, 1440, 900) as page:
        page.goto(f"{url}/experiments?suite=twelve-tools")
        page.wait_for_selector("h1", timeout=LONG)
        settle_run(page, LONG)
        main = page.get_by_test_id("stMain")
        # the published figures, by source: the intro names it by title, with its date
        expect(main).to_contain_text(f"{load_sources()['tool-calls-cant-come-out-malformed'].title} (")
        tokens = main.get_by_label("New tokens a turn")
        tokens.fill("48")
        tokens.press("Enter")
        settle_run(page, LONG)
        main.get_by_role("button", name="Run the experiment").click()
        settle_run(page, LONG)
        expect(main.get_by_role("heading", name="Results")).to_be_visible(timeout=LONG)
        expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=LONG)
        expect(main).to_contain_text("(published)")
        expect(main.get_by_text("In words:").first).to_be_visible()
        assert_no_errors(page)
        save_shot(page, "experiments-shipped-model")
