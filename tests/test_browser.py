"""The site in headless Chromium: a teacher's deep link on a fresh server, and a few clicks that must work.

(Every page opening with its key content is checked by the walk in test_browser_fit.py.)
Slow-ish (about a minute): it starts `streamlit run app.py` (the `streamlit_server` fixture)
and drives Debian's chromium through Python playwright. Screenshots go to artifacts/screenshots/.
Without chromium the tests skip, except under REQUIRE_BROWSER=1 (CI), where they fail.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import assert_no_errors, reused_tab, settle_run, shoot_whole_page

from engine.core.prompt import Request, render
from engine.core.tooldefs import load_tool_set

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
QUESTION = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]
PAGES = [
    e for e in json.loads((ROOT / "lessons" / "index.json").read_text(encoding="utf-8")) if (ROOT / e["page"]).exists()
]
URLS = {e["id"]: e["url_path"] for e in PAGES}


@pytest.fixture
def site(chromium, streamlit_server):
    with reused_tab(chromium, 1440, 900) as page:
        yield page, streamlit_server


def settle(page, timeout: float = 60_000) -> None:
    """Wait until Streamlit has finished running the script (its status widget is gone)."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout)
    page.wait_for_selector("h1", timeout=timeout)
    settle_run(page, timeout)


def shoot(page, name: str) -> None:
    """The whole page in artifacts/."""
    shoot_whole_page(page, name)


def test_a_fresh_server_opens_a_teachers_link_directly(site):
    """First in the file on purpose: the server's very first request is a deep link with state in the URL.

    (With a pages/ folder beside app.py, Streamlit answered a fresh server's first request with
    its old pages/-folder routing and popped up "Page not found"; the page scripts live in
    app_pages/ so that st.navigation alone routes every request.)
    """
    from playwright.sync_api import expect

    page, url = site
    page.goto(f"{url}/{URLS['the-model-writes-a-call']}?step=6&style=native")
    settle(page)
    expect(page.get_by_text("Token 6 of 28")).to_be_visible(timeout=30_000)
    assert page.get_by_text("Page not found").count() == 0
    expect(page.get_by_test_id("stSidebarNav")).to_contain_text("2 · Tools are text in the prompt")
    assert_no_errors(page)


def test_lesson_2_switching_to_react_changes_the_count(site):
    from playwright.sync_api import expect

    page, url = site
    native = render(Request(QUESTION, load_tool_set("strawberry"), "native")).count
    react = render(Request(QUESTION, load_tool_set("strawberry"), "react")).count
    page.goto(f"{url}/{URLS['tools-as-schemas']}")
    settle(page)
    prompt_metric = page.get_by_test_id("stMetric").filter(has_text="Tokens in this prompt")
    expect(prompt_metric).to_contain_text(str(native))
    page.get_by_role("button", name="Switch to the ReAct prompt").click()
    expect(prompt_metric).to_contain_text(str(react), timeout=30_000)
    page.wait_for_url("**style=react**", timeout=10_000)
    assert_no_errors(page)
    shoot(page, "tools-as-schemas-react")


def test_lesson_1_typing_a_word_shows_its_tokens(site):
    from playwright.sync_api import expect

    page, url = site
    page.goto(f"{url}/{URLS['why-call-a-tool']}")
    settle(page)
    box = page.get_by_label("Word or text")
    box.fill("tokenization")
    box.press("Enter")
    expect(page.get_by_test_id("stMetric").filter(has_text="Tokens").first).to_contain_text("2", timeout=30_000)
    expect(page.locator(".tok-strip").first).to_contain_text("ization")
    assert_no_errors(page)


def test_lesson_3_steps_with_the_buttons_and_a_link_reproduces_the_step(site):
    from playwright.sync_api import expect

    page, url = site
    page.goto(f"{url}/{URLS['the-model-writes-a-call']}")
    settle(page)
    page.get_by_role("button", name="First token of the name").click()
    expect(page.get_by_text("Token 7 of 28")).to_be_visible(timeout=30_000)
    page.wait_for_url("**step=7**", timeout=10_000)
    page.goto(f"{url}/{URLS['the-model-writes-a-call']}?step=3&style=react")
    settle(page)
    expect(page.get_by_text("Token 3 of")).to_be_visible(timeout=30_000)
    assert_no_errors(page)
