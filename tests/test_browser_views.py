"""The step view in real Chromium: keys, the play button and Space move "Token N of M" in the browser, without a rerun.

Slow (a Streamlit server and headless Chromium); marker `browser`.
"""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

import pytest
from helpers import ARTIFACTS, assert_no_errors, press_section_key, reused_tab, settle_run

pytestmark = pytest.mark.browser

# counts the script runs the page starts from now on (Streamlit marks stApp while a run is going)
WATCH_RUNS = """() => {
  window.__runs = 0;
  const app = document.querySelector('[data-testid="stApp"]');
  new MutationObserver(() => { if (app.getAttribute('data-test-script-state') === 'running') window.__runs += 1; })
    .observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""


@pytest.fixture
def lesson_3(streamlit_server, chromium):
    from playwright.sync_api import expect

    with reused_tab(chromium, 1440, 900) as page:
        page.goto(f"{streamlit_server}/the_model_writes_a_call?step=1")
        expect(page.locator(".sv-where")).to_have_text("Token 1 of 28", timeout=90_000)
        settle_run(page)
        page.evaluate("document.activeElement && document.activeElement.blur()")
        yield page


def test_arrow_keys_home_and_end_step_without_a_rerun(lesson_3):
    from playwright.sync_api import expect

    page = lesson_3
    where = page.locator(".sv-where")
    page.evaluate(WATCH_RUNS)
    for key, shown in (
        ("ArrowRight", 2),
        ("ArrowRight", 3),
        ("ArrowLeft", 2),
        ("End", 28),
        ("Home", 1),
        ("ArrowRight", 2),
    ):
        page.keyboard.press(key)
        expect(where).to_have_text(f"Token {shown} of 28", timeout=2_000)
    # the chip of the step reached is outlined, and the figures beside it are that token's
    # (with no model each chip's second line is how many tokens the tools' grammar allows there: 1 after <tool_call>)
    assert page.locator(".sv-chip.now .t").inner_text() == "↵" and page.locator(".sv-chip.now .i").inner_text() == "1"
    assert page.locator(".sv-caption").first.inner_text() == "id 198"
    assert page.evaluate("window.__runs") == 0  # every step above was drawn in the browser
    # after a pause the step goes back to the page once, for a link that reopens it
    page.wait_for_url("**step=2**", timeout=30_000)
    assert_no_errors(page)


def test_space_plays_to_the_end_and_stops(lesson_3):
    from playwright.sync_api import expect

    page = lesson_3
    page.locator(".sv-speed").select_option(label="fast")
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press(" ")
    expect(page.locator(".sv-play")).to_have_text("❚❚ Pause")
    expect(page.locator(".sv-where")).to_have_text("Token 28 of 28", timeout=15_000)
    expect(page.locator(".sv-play")).to_have_text("▶ Play")  # it stopped by itself at the last token
    page.wait_for_url("**step=28**", timeout=30_000)


def test_the_play_button_writes_the_call_token_by_token_and_pauses(lesson_3):
    from playwright.sync_api import expect

    page = lesson_3
    page.evaluate(WATCH_RUNS)
    page.locator(".sv-play").click()
    # watched on every frame, not by a locator's polling (every 100 ms to 1 s), which can miss a token going by
    page.wait_for_function(
        "parseInt(document.querySelector('.sv-where').textContent.split(' ')[1]) >= 3", timeout=5_000
    )
    page.locator(".sv-play").click()  # pause
    reached = int(page.locator(".sv-where").inner_text().split()[1])
    assert 3 <= reached < 28 and page.evaluate("window.__runs") == 0
    page.wait_for_timeout(500)
    assert page.locator(".sv-where").inner_text() == f"Token {reached} of 28"  # paused: it stays
    page.get_by_role("button", name="First token of the name").click()
    expect(page.locator(".sv-where")).to_have_text("Token 7 of 28")
    expect(page.locator(".sv-title")).to_have_text("count")


def test_lesson_6_view_shows_the_allowed_count_at_the_name(streamlit_server, chromium):
    from playwright.sync_api import expect

    with reused_tab(chromium, 1440, 900) as page:
        page.goto(f"{streamlit_server}/constrained_decoding")
        where = page.locator(".sv-where")
        expect(where).to_have_text("Token 1 of 27", timeout=120_000)
        settle_run(page)
        page.evaluate("document.activeElement && document.activeElement.blur()")
        for n in range(2, 8):
            page.keyboard.press("ArrowRight")
            expect(where).to_have_text(f"Token {n} of 27")
        expect(page.locator(".sv-fact").first).to_contain_text("8 of 151,669")
        assert page.locator(".sv-sample span").count() == 8
        assert_no_errors(page)


def test_presenter_mode_pages_down_to_the_last_section(streamlit_server, chromium):
    from playwright.sync_api import expect

    with reused_tab(chromium, 1024, 768) as page:
        page.goto(f"{streamlit_server}/check_run_return?present=1")
        expect(page.get_by_text("Section 1 of 8")).to_be_visible(timeout=120_000)
        settle_run(page)
        # the first screen is the run itself: the step view at the broken call, its checks beside its reply
        expect(page.locator(".sv-where")).to_have_text("Call 2 of 7", timeout=60_000)
        expect(page.locator(".sv-cols table.checks").first).to_contain_text("valid JSON")
        assert page.get_by_role("heading", name="The token ledger").count() == 0  # one section at a time
        press_section_key(page, "PageDown")
        expect(page.get_by_role("heading", name="The harness and this run")).to_be_visible(timeout=60_000)
        expect(page.get_by_test_id("stMain")).to_contain_text("Each scenario is a short run played from a script")
        settle_run(page)
        for k in range(3, 9):
            press_section_key(page, "PageDown")
            expect(page.get_by_text(f"Section {k} of 8")).to_be_visible(timeout=60_000)
            settle_run(page)
        expect(page.get_by_role("heading", name="Check your understanding")).to_be_visible()
        assert "section=8" in page.url
        press_section_key(page, "PageUp")
        expect(page.get_by_text("Section 7 of 8")).to_be_visible(timeout=60_000)
        assert_no_errors(page)


# -- a presenter's clicker (issue 45): PageDown / PageUp reach the sections from inside every view --------------------
FOCUSED = """() => { let at = document.activeElement;
  while (at && at.shadowRoot && at.shadowRoot.activeElement) at = at.shadowRoot.activeElement;
  return at && at.tagName; }"""


@pytest.mark.parametrize(
    ("address", "view", "next_button", "first"),
    [
        ("the_model_writes_a_call", ".sv-where", ".sv-next", "Token 1 of 28"),
        ("", ".lv-where", ".lv-next", None),  # Home's loop (it plays once; Next works at any stage)
    ],
    ids=["lesson-3-step-view", "home-loop-view"],
)
def test_page_down_after_a_views_next_button_moves_to_the_next_section(
    streamlit_server, chromium, address, view, next_button, first
):
    """Projected at 1024×768: a click on the view's Next, then PageDown with no other click, shows the next section
    within 5 s; PageUp comes back; the view's own arrow keys still step it."""
    from playwright.sync_api import expect

    with reused_tab(chromium, 1024, 768) as page:
        page.goto(f"{streamlit_server}/{address}?present=1")
        bar = page.get_by_text(re.compile(r"^Section 1 of \d+"))
        expect(bar).to_be_visible(timeout=120_000)
        count = int(re.search(r"of (\d+)", bar.inner_text()).group(1))
        if first:
            expect(page.locator(view)).to_have_text(first, timeout=60_000)
        settle_run(page)
        page.wait_for_function("() => document.documentElement.dataset.sectionKeys === 'on'", timeout=60_000)
        page.locator(next_button).click()  # the focus is now on a button inside the view
        if first:
            expect(page.locator(view)).to_have_text("Token 2 of 28")
            page.keyboard.press("ArrowRight")  # the view keeps its own keys
            expect(page.locator(view)).to_have_text("Token 3 of 28")
            assert page.get_by_text(re.compile(r"^Section 1 of ")).is_visible()  # (an arrow is not a section key)
        # (the loop view draws in a shadow root: its host has the page's focus, the button the root's)
        assert page.evaluate(FOCUSED) == "BUTTON"
        page.keyboard.press("PageDown")
        expect(page.get_by_text(re.compile(rf"^Section 2 of {count}"))).to_be_visible(timeout=5_000)
        settle_run(page)
        press_section_key(page, "PageUp")
        expect(page.get_by_text(re.compile(rf"^Section 1 of {count}"))).to_be_visible(timeout=60_000)
        assert_no_errors(page)


# -- Export PNG (issue 17): the views draw themselves as a picture in the browser -------------------------------------
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def read_png(data: bytes) -> tuple[int, int, set[int]]:
    """(width, height, the distinct RGBA colours) of an 8-bit RGB or RGBA PNG, decoded with zlib alone
    (the five row filters of the PNG standard undone in Python)."""
    assert data[:8] == PNG_SIGNATURE
    at, idat, width = 8, bytearray(), 0
    while at < len(data):
        (length,), kind = struct.unpack(">I", data[at : at + 4]), data[at + 4 : at + 8]
        body = data[at + 8 : at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
            per = 4 if colour == 6 else 3
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw = zlib.decompress(bytes(idat))
    stride = width * per
    assert len(raw) == height * (stride + 1)
    colours: set[int] = set()
    prev = bytearray(stride)
    for y in range(height):
        kind, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(per, stride):
                row[i] = (row[i] + row[i - per]) & 255
        elif kind == 2:
            row = bytearray((a + b) & 255 for a, b in zip(row, prev))
        elif kind == 3:
            for i in range(stride):
                row[i] = (row[i] + ((row[i - per] if i >= per else 0) + prev[i]) // 2) & 255
        elif kind == 4:
            for i in range(stride):
                a, b, c = (row[i - per], prev[i], prev[i - per]) if i >= per else (0, prev[i], 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if per == 3:
            colours.update(int.from_bytes(row[i : i + 3] + b"\xff", "big") for i in range(0, stride, 3))
        else:
            colours.update(int.from_bytes(row[i : i + 4], "big") for i in range(0, stride, 4))
        prev = row
    return width, height, colours


def rgba(hex_colour: str) -> int:
    return int(hex_colour.lstrip("#") + "ff", 16)


def export_png(page, button, name: str) -> tuple[str, bytes]:
    """Click an Export PNG button; the downloaded file's suggested name and bytes (kept in artifacts/ too)."""
    with page.expect_download(timeout=30_000) as info:
        button.click()
    download = info.value
    data = Path(download.path()).read_bytes()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / name).write_bytes(data)
    return download.suggested_filename, data


def test_png_export_of_the_step_view_on_lesson_3(lesson_3):
    from playwright.sync_api import expect

    page = lesson_3
    page.get_by_role("button", name="First token of the name").click()
    expect(page.locator(".sv-where")).to_have_text("Token 7 of 28")
    page.wait_for_url("**step=7**", timeout=30_000)  # the pause's one report and its rerun are over
    settle_run(page)
    page.evaluate(WATCH_RUNS)
    view = page.locator(".sv").first.bounding_box()
    shown = page.locator(".sv-strip").bounding_box()["height"] + page.locator(".sv-body").bounding_box()["height"]
    name, data = export_png(page, page.get_by_role("button", name="Export PNG"), "export-step-view.png")
    assert name == "the-model-writes-a-call-token-7.png"
    assert data[:8] == PNG_SIGNATURE
    width, height, colours = read_png(data)
    # drawn at twice the screen's pixels or more, for a projector
    assert width >= 2 * view["width"] and height >= 2 * shown, (width, height, view, shown)
    # the view's own colours came into the picture with its CSS: the chips' two neutral shades, the outline of
    # token 7 (the token shown now), all from ui/palette.py
    from ui.palette import NEUTRALS, fill, ink

    for colour in (fill("neutral"), NEUTRALS["shade"], ink("now")):
        assert rgba(colour) in colours, colour
    assert len(colours) > 50
    # the picture was drawn in the browser: no rerun, and the view is still at token 7
    assert page.evaluate("window.__runs") == 0
    assert page.locator(".sv-where").inner_text() == "Token 7 of 28"
    assert_no_errors(page)


def test_png_export_of_the_loop_view_on_home(streamlit_server, chromium):
    from playwright.sync_api import expect

    context = chromium.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.goto(f"{streamlit_server}/")
    button = page.locator(".lv-export")
    expect(button).to_be_visible(timeout=90_000)
    settle_run(page)
    page.locator(".lv-back").click()  # a stage lit, whether the picture still plays or has ended unlit
    view = page.locator(".lv").bounding_box()
    name, data = export_png(page, button, "export-loop-view.png")
    assert re.fullmatch(r"home-loop-(model|text|parser|checks|tool|result|prompt)\.png", name), name
    width, height, colours = read_png(data)
    assert width >= 2 * view["width"] and height >= 2 * (view["height"] - button.bounding_box()["height"])
    # the stages' neutral boxes and the halo of the one the run is at (ui/palette.py)
    from ui.palette import fill, ink

    for colour in (fill("neutral"), ink("now")):
        assert rgba(colour) in colours, colour
    assert_no_errors(page)
    context.close()
