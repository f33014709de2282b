"""A first visit with no setting: the site starts on the shipped model and lesson 3 shows its call with probabilities.

Slow (the session's `shipped_server`, shared with test_browser_experiments.py; the shipped model loaded once):
the server runs as the README's quick start does, with no QWEN_MODEL, offline, with an empty Hugging Face cache.
"""

from __future__ import annotations

import pytest
from helpers import reused_tab, save_shot, settle_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LONG = 240_000  # ms: the shipped model's load and a turn on a loaded 2-core machine


def test_a_first_visit_sees_the_shipped_models_call_token_by_token_with_probabilities(chromium, shipped_server):
    from playwright.sync_api import expect

    url = shipped_server
    with reused_tab(chromium, 1440, 900) as page:
        page.goto(f"{url}/the_model_writes_a_call")
        page.wait_for_selector("h1", timeout=LONG)
        settle_run(page, LONG)
        main = page.get_by_test_id("stMain")
        # labelled for what it is, never as Qwen3 or a "Live model"
        expect(main.get_by_text("Shipped model:").first).to_be_visible(timeout=LONG)
        expect(main).to_contain_text("trained by this site to write these lessons' calls; not Qwen3")
        assert page.get_by_text("Live model:").count() == 0
        # the call, without pressing anything: the first token is <tool_call>, with its probability
        expect(page.locator(".sv-title").first).to_have_text("<tool_call>", timeout=LONG)
        expect(page.locator(".sv-bars").first).to_be_visible(timeout=LONG)
        expect(page.get_by_text("Its probability").first).to_be_visible(timeout=LONG)
        assert page.locator('[data-testid="stException"]').count() == 0
        save_shot(page, "shipped-model-lesson-3")
        # the label's link opens the model's provenance
        page.goto(f"{url}/shipped_model")
        page.wait_for_selector("h1", timeout=LONG)
        settle_run(page, LONG)
        expect(page.get_by_test_id("stMain")).to_contain_text("What it does on prompts it never saw")
        expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=LONG)
