"""The whole site in headless Chromium: every page of the navigation opens with no error, and a few clicks work.

Slow-ish (about a minute): it starts `streamlit run app.py` (the `streamlit_server` fixture)
and drives Debian's chromium through Python playwright. Screenshots go to
artifacts/screenshots/, and also to assets/screenshots/ (for the README) with SAVE_SCREENSHOTS=1.
Without chromium the tests skip, except under REQUIRE_BROWSER=1 (CI), where they fail.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import assert_no_errors, shoot_whole_page

from engine.prompt import Request, render
from engine.tools import load_tool_set

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
README_PAGES = {"home", "why-call-a-tool", "tools-as-schemas", "the-model-writes-a-call", "calculator", "same-call-five-ways", "gallery"}
QUESTION = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]
PAGES = [e for e in json.loads((ROOT / "lessons" / "index.json").read_text(encoding="utf-8")) if (ROOT / e["page"]).exists()]
URLS = {e["id"]: e["url_path"] for e in PAGES}
# what each of these pages must show on opening (the other pages: their title and no error)
KEY_CONTENT = {
    "home": "Tool calling, token by token",
    "why-call-a-tool": "count_letter",
    "tools-as-schemas": "Tokens in this prompt",
    "the-model-writes-a-call": "Token 1 of 28",
    "calculator": "Input tokens, whole run",
    "same-call-five-ways": "264 Qwen3 tokens",
    "gallery": "the parser is the fix",
}


@pytest.fixture
def site(chromium, streamlit_server):
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    yield page, streamlit_server
    context.close()


def settle(page, timeout: float = 60_000) -> None:
    """Wait until Streamlit has finished running the script (its status widget is gone)."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]') && document.querySelector('h1')",
        timeout=timeout,
    )
    page.wait_for_load_state("networkidle", timeout=timeout)
    page.wait_for_timeout(500)


def shoot(page, name: str) -> None:
    """The whole page in artifacts/, and the first screen for the README when `name` is one of its pages."""
    shoot_whole_page(page, name, name if name in README_PAGES else None)


def test_a_fresh_server_opens_a_teachers_link_directly(site):
    """First in the file on purpose: the server's very first request is a deep link with state in the URL.

    (With a pages/ folder beside app.py, Streamlit answers a fresh server's first request with
    its old pages/-folder routing; a url_path that is not the file's own name then pops up
    "Page not found". The url_paths in lessons/index.json avoid that.)
    """
    from playwright.sync_api import expect

    page, url = site
    page.goto(f"{url}/{URLS['the-model-writes-a-call']}?step=6&style=native")
    settle(page)
    expect(page.get_by_text("Token 6 of 28")).to_be_visible(timeout=30_000)
    assert page.get_by_text("Page not found").count() == 0
    expect(page.get_by_test_id("stSidebarNav")).to_contain_text("2 · Tools are text in the prompt")
    assert_no_errors(page)


@pytest.mark.parametrize("entry", PAGES, ids=[e["id"] for e in PAGES])
def test_every_page_opens_with_its_key_content_and_no_error(site, entry):
    from playwright.sync_api import expect

    page, url = site
    page.goto(f"{url}/{'' if entry.get('default') else entry['url_path']}")
    settle(page)
    assert_no_errors(page)
    expect(page.get_by_test_id("stSidebarNav")).to_contain_text(entry["title"])
    wanted = KEY_CONTENT.get(entry["id"])
    if wanted:
        expect(page.get_by_text(wanted).first).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("stSidebar").get_by_text("Tool-call style")).to_be_visible()
    shoot(page, entry["id"])


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
