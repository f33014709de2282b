"""A page's earlier address, from a teacher's old link, lands on the page under its own address, query kept.

Uses the `streamlit_server` fixture (a real `streamlit run app.py`) and headless chromium; skipped without
chromium, except under REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
from helpers import ROOT, assert_no_errors, reused_tab, settle_run

from engine.harness.loop import load_scenario

pytestmark = pytest.mark.browser

INDEX = json.loads((ROOT / "lessons" / "index.json").read_text(encoding="utf-8"))


def test_lesson_7s_old_address_lands_on_the_renamed_page_with_its_query(streamlit_server, chromium):
    from playwright.sync_api import expect

    old = "same_call_five_ways"
    entry = next(e for e in INDEX if old in e.get("old_url_paths", []))

    with reused_tab(chromium, 1440, 900) as page:
        page.goto(f"{streamlit_server}/{old}?scenario=missing-brace")
        landed = lambda url: urlsplit(url).path.endswith(f"/{entry['url_path']}")  # noqa: E731
        page.wait_for_url(landed, timeout=90_000)
        expect(page.get_by_role("heading", name=entry["title"]).first).to_be_visible(timeout=90_000)
        settle_run(page)
        assert_no_errors(page)
        assert landed(page.url) and "scenario=missing-brace" in urlsplit(page.url).query
        # the page read the query it was sent on with
        expect(page.get_by_label("Scenario").first).to_have_value(load_scenario("missing-brace").title)
