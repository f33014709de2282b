"""The site's look and its teacher aids in headless Chromium: no Deploy button, /home opens Home, no
underline hides an underscore, the two resets, the handout's print view, a link that carries an
added tool, and the words fixed where a learner saw them wrong.

Slow-ish (about two minutes): it uses the `streamlit_server` fixture (a real `streamlit run
app.py`; one test starts a fresh one of its own, since only a cold server's first request shows
the old "Page not found") and drives Debian's chromium through Python playwright. Without
chromium the tests skip, except under REQUIRE_BROWSER=1 (CI), where they fail.
"""

from __future__ import annotations

import tomllib
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from helpers import assert_no_errors, close_dialog, reused_tab, settle_run

from engine.harness.loop import list_gallery

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def opened(browser, url: str, width: int = 1440, height: int = 900):
    """A tab at `url`, settled (tests/helpers.py reused_tab: a new page in a tab kept for the next test)."""
    with reused_tab(browser, width, height) as page:
        page.goto(url)
        page.locator("h1").first.wait_for(timeout=90_000)
        settle_run(page)
        yield page


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def query(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


# -- the chrome -----------------------------------------------------------------------------------------
def test_the_theme_hides_the_deploy_button_and_the_developer_menu():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["client"]["toolbarMode"] == "minimal"
    assert config["theme"]["base"] == "light" and config["theme"]["primaryColor"].startswith("#")


def test_home_opens_at_slash_home_on_a_cold_server_with_no_deploy_button(fresh_streamlit_server, chromium):
    from playwright.sync_api import expect

    with opened(chromium, f"{fresh_streamlit_server}/home") as page:
        expect(page.locator("h1").first).to_have_text("Tool calling, token by token")
        assert page.get_by_text("Page not found").count() == 0
        assert page.get_by_role("button", name="Deploy").count() == 0
        # a line for every lesson and page, with its suggested minutes (waited for: Home draws its loop picture first)
        for line in (
            "one call, its reply and its result",
            f"{len(list_gallery())} failures, each replayed here",
            "every term the lessons use",
            "about 10 minutes in class",
        ):
            expect(page.get_by_text(line).first).to_be_visible()
        assert_no_errors(page)


# -- no underline over an underscore -------------------------------------------------------------------
UNDERLINED_WITH_UNDERSCORE = """() => [...document.querySelectorAll('.prompt-view span, .turn-view mark, .tok, .tok .t')]
  .filter(e => e.textContent.includes('_'))
  .map(e => ({text: e.textContent.slice(0, 40), line: getComputedStyle(e).textDecorationLine,
              pad: parseFloat(getComputedStyle(e).paddingBottom), border: parseFloat(getComputedStyle(e).borderBottomWidth),
              inPrompt: !!e.closest('.prompt-view') && e.tagName === 'SPAN' && e.parentElement.classList.contains('prompt-view')}))"""


@pytest.mark.parametrize(
    "path", ["tools_as_schemas", "check_run_return?scenario=made-up-name", "answer_and_when_not_to_call"]
)
def test_no_highlighted_text_with_an_underscore_is_underlined(streamlit_server, chromium, path):
    with opened(chromium, f"{streamlit_server}/{path}") as page:
        page.locator(".prompt-view, .turn-view").first.wait_for(timeout=30_000)
        found = page.evaluate(UNDERLINED_WITH_UNDERSCORE)
        assert found, "no highlighted text with an underscore on the page"
        assert all(f["line"] == "none" for f in found), [f for f in found if f["line"] != "none"]
        # a part's border is drawn below its text, never across the underscores
        assert all(f["pad"] >= 2 for f in found if f["inPrompt"] and f["border"] > 0)
        assert_no_errors(page)


# -- teacher aids -----------------------------------------------------------------------------------------
def open_teacher(page) -> None:
    page.get_by_text("For the teacher").click()
    page.get_by_role("button", name="Reset this page").wait_for(timeout=30_000)


def test_reset_this_page_keeps_the_settings_and_reset_everything_clears_them(streamlit_server, chromium):
    from playwright.sync_api import expect

    with opened(chromium, f"{streamlit_server}/why_call_a_tool?word=hello&style=react") as page:
        box = page.get_by_label("Word or text")
        expect(box).to_have_value("hello")
        open_teacher(page)
        page.get_by_role("button", name="Reset this page").click()
        expect(box).to_have_value(" strawberry", timeout=30_000)
        settle_run(page)
        assert (
            query(page)["word"] == " strawberry" and query(page)["style"] == "react"
        )  # the page's default, the setting kept
        page.get_by_role("button", name="Reset everything").click()
        expect(page.get_by_text("Native").first).to_be_visible()
        # reset reruns the page twice (clear, then draw): wait for the URL the second run writes, not a read
        # between the two (a whole-suite run once read the empty address in between)
        page.wait_for_url("**style=native**", timeout=30_000)
        settle_run(page)
        assert query(page).get("style") == "native"
        assert_no_errors(page)


def test_the_handout_print_view_hides_the_sidebar_and_controls_and_keeps_the_figures(streamlit_server, chromium):
    from playwright.sync_api import expect

    with opened(chromium, f"{streamlit_server}/why_call_a_tool") as page:
        page.locator(".notice").wait_for(timeout=30_000)  # the whole page is drawn, its stylesheet with it
        page.emulate_media(media="print")
        expect(page.locator('[data-testid="stSidebar"]')).to_be_hidden()
        expect(page.get_by_label("Word or text")).to_be_hidden()
        text = main_text(page)
        for kept in (
            "What to notice",
            "is a single token",
            "Check your understanding",
            "How many tokens does it receive",
        ):
            assert kept in text, kept
        expect(page.locator('[data-testid="stMetric"]').first).to_be_visible()  # the key figure: 1 token
        assert page.locator(".notice").is_visible()
        page.pdf(path=str(ROOT / "artifacts" / "handout-why-call-a-tool.pdf")) if (
            ROOT / "artifacts"
        ).is_dir() else None


def test_a_link_carries_an_added_tool_to_a_fresh_browser(streamlit_server, chromium):
    from playwright.sync_api import expect

    with opened(chromium, f"{streamlit_server}/tools_as_schemas") as page:
        page.get_by_role("button", name="Add a tool").click()
        expect(page.get_by_label("Tool definitions (JSON)")).to_contain_text("new_tool_1", timeout=30_000)
        settle_run(page)
        link = page.url
        assert "edits=" in link
    with opened(chromium, link) as fresh:
        expect(fresh.get_by_label("Tool definitions (JSON)")).to_contain_text("new_tool_1", timeout=30_000)
        assert "3 tools cost" in main_text(fresh)
        assert_no_errors(fresh)


def test_edits_past_the_link_limit_leave_the_link_and_say_so(streamlit_server, chromium):
    import json
    import random

    from playwright.sync_api import expect

    # random words do not compress: past 8,000 characters packed, and under the editor's own limit
    rng = random.Random(0)
    words = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)) for _ in range(1400))
    tools = [
        {
            "type": "function",
            "function": {"name": "long", "description": words, "parameters": {"type": "object", "properties": {}}},
        }
    ]
    with opened(chromium, f"{streamlit_server}/calculator") as page:
        box = page.get_by_label("Tool definitions (JSON)")
        box.fill(json.dumps(tools))
        box.blur()
        expect(page.get_by_text("too long to travel in a link")).to_be_visible(timeout=30_000)
        assert "edits=" not in page.url


def test_a_link_carries_the_playgrounds_edited_files_to_a_fresh_browser(streamlit_server, chromium):
    import re

    from playwright.sync_api import expect

    fixed = 'def add(a, b):\n    """Return the sum of a and b."""\n    return a + b  # fixed in class\n'
    with opened(chromium, f"{streamlit_server}/playground") as page:
        first = page.get_by_label("Contents").first
        first.wait_for(timeout=30_000)
        first.fill(fixed)
        first.blur()
        page.wait_for_url(re.compile(r"[?&]files="), timeout=30_000)
        settle_run(page)
        link = page.url
    # a fresh browser (no session of its own) opens the link: the edited file is there, the other one as shipped
    with opened(chromium, link) as fresh:
        boxes = fresh.get_by_label("Contents")
        expect(boxes.first).to_have_value(fixed, timeout=30_000)
        expect(boxes.nth(1)).to_have_value(re.compile(r"import unittest"))
        assert_no_errors(fresh)


def test_playground_files_past_the_link_limit_leave_the_link_and_say_so(streamlit_server, chromium):
    import random

    from playwright.sync_api import expect

    # random words do not compress: past the link's 8,000 characters packed, well under a file's own limit
    rng = random.Random(1)
    words = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)) for _ in range(1400))
    with opened(chromium, f"{streamlit_server}/playground") as page:
        first = page.get_by_label("Contents").first
        first.wait_for(timeout=30_000)
        first.fill(words)
        first.blur()
        expect(page.get_by_text("too long to travel in a link")).to_be_visible(timeout=30_000)
        assert "files=" not in page.url
        assert_no_errors(page)


# -- what was seen, fixed ------------------------------------------------------------------------------------
def test_lesson_1_shows_the_leading_space_and_counts_bytes_not_label_letters(streamlit_server, chromium):
    with opened(chromium, f"{streamlit_server}/why_call_a_tool") as page:
        minutes = page.locator(".minutes")  # atop the lesson, above its title
        minutes.wait_for(timeout=30_000)
        assert minutes.inner_text() == "⏱ Suggested: about 10 minutes in class"
        assert minutes.bounding_box()["y"] < page.locator("h1").first.bounding_box()["y"]
        text = main_text(page)
        assert "The box holds ␣strawberry" in text
        assert '"␣strawberry" (with its leading space): 1 token' in text
        assert '"strawberry" (without a space): 3 tokens' in text
    with opened(chromium, f"{streamlit_server}/why_call_a_tool?word=%EA%99%AE") as page:  # ꙮ, cut into byte tokens
        page.locator(".tok-strip .tok").first.wait_for(timeout=30_000)
        chips = page.locator(".tok-strip").first.locator(".tok").all_inner_texts()
        # the label <0xAE> holds no letters: the chip counts the bytes it carries
        assert [c.split("\n")[0] for c in chips] == ["<0xEA><0x99>", "<0xAE>"]
        assert [c.split(" · ")[1] for c in chips] == [
            "0 letters + 2 bytes of a character",
            "0 letters + 1 byte of a character",
        ]


def test_lesson_2_in_react_does_not_set_its_figure_beside_the_native_241(streamlit_server, chromium):
    with opened(chromium, f"{streamlit_server}/tools_as_schemas?style=react") as page:
        text = main_text(page)
        assert (
            "In the ReAct prompt these 2 tools cost" in text and "not the same measure as the native prompt's" in text
        )
        assert "with the Qwen3 template, computed just now" not in text


def test_lesson_3_with_the_tiny_model_points_to_the_generate_button(streamlit_server, chromium):
    from playwright.sync_api import expect

    with opened(chromium, f"{streamlit_server}/the_model_writes_a_call?model=tiny") as page:
        # the tiny model is built on the first visit: wait for the page to finish
        expect(page.locator('[data-testid="stMain"]')).to_contain_text("press Generate the call above", timeout=120_000)
        page.get_by_role("button", name="Generate the call").wait_for()
        assert "none is loaded" not in main_text(page)


@pytest.mark.parametrize(
    ("path", "present", "absent"),
    [
        pytest.param("check_run_return", "checks it one check after another", "checks it three", id="lesson-4-checks"),
        pytest.param(
            "answer_and_when_not_to_call",
            "folded into the box under it",
            "This is the whole prompt",
            id="lesson-5-folded",
        ),
        pytest.param(
            "same_call_in_other_apis", "inside tool_choice", "claude-3-opus", id="lesson-7-parallel-and-model"
        ),
        pytest.param(
            "same_call_in_other_apis",
            "lists the Claude 3 models only",
            "in three public APIs: OpenAI Chat Completions",
            id="lesson-7-anthropic-table",
        ),
        pytest.param(
            "gallery?case=tag-in-string",
            "Hermes tool parser drops tool calls when a literal",  # the report's own title, with its date
            "a known bug report",
            id="gallery-names-the-report",
        ),
        pytest.param(
            "gallery?case=retry-loop",
            "1,722 input and 57 output tokens (1,779 in all)",
            "Tokens, budget",
            id="gallery-retry-figures",
        ),
        pytest.param("glossary", "sampler", "A call the harness cannot use: not valid JSON", id="glossary-terms"),
    ],
)
def test_words_fixed_where_a_learner_saw_them(streamlit_server, chromium, path, present, absent):
    from playwright.sync_api import expect

    with opened(chromium, f"{streamlit_server}/{path}") as page:
        close_dialog(page)
        # a long page may still be drawing its end
        expect(page.locator('[data-testid="stMain"]')).to_contain_text(present, timeout=60_000)
        text = main_text(page)
        assert present in text
        assert absent not in text
        assert_no_errors(page)


def test_lesson_6_headings_sit_over_their_own_paragraphs(streamlit_server, chromium):
    with opened(chromium, f"{streamlit_server}/constrained_decoding") as page:
        text = main_text(page)
        choose, cut = text.index("It cannot choose the right tool"), text.index("It cannot stop a cut-off")
        assert (
            choose < text.index("It does not choose the right tool") < cut < text.index("It does not prevent a cut-off")
        )


def test_glossary_has_thinking_sampler_and_parallel_calls_and_cut_off_replies(streamlit_server, chromium):
    with opened(chromium, f"{streamlit_server}/glossary") as page:
        headings = page.locator("h3").all_inner_texts()
        assert {"thinking", "sampler", "parallel calls"} <= {h.strip() for h in headings}
        assert "a block cut off by the token limit" in main_text(page)
