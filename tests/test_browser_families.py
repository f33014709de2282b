"""The families lesson on a 1024×768 projector in presenter mode: every section fits the screen, in real Chromium.

Slow (a Streamlit server and headless Chromium); marker `browser`.
"""

from __future__ import annotations

import re

import pytest
from helpers import assert_no_errors, settle_run

pytestmark = pytest.mark.browser

# where the section's last element ends, measured from the top of the page (scrolled or not):
# what a projector must show without scrolling
CONTENT_BOTTOM = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const top = main.scrollTop + window.scrollY;
  let bottom = 0;
  for (const el of main.querySelectorAll('[data-testid="stMainBlockContainer"] [data-testid="stElementContainer"]')) {
    if (el.closest('details:not([open])')) continue;  // inside a closed expander: not drawn
    const box = el.getBoundingClientRect();
    if (box.height <= 0) continue;
    let end = box.bottom;
    // a box that scrolls on its own (a fixed-height container) shows only its own height
    for (let up = el.parentElement; up && up !== main; up = up.parentElement) {
      const overflow = getComputedStyle(up).overflowY;
      if (overflow === 'auto' || overflow === 'scroll' || overflow === 'hidden') end = Math.min(end, up.getBoundingClientRect().bottom);
    }
    bottom = Math.max(bottom, end + top);
  }
  for (const el of main.querySelectorAll('[data-testid="stExpander"]')) {
    bottom = Math.max(bottom, el.getBoundingClientRect().bottom + top);
  }
  return Math.round(bottom);
}"""


def test_each_section_of_the_families_lesson_fits_1024_by_768(streamlit_server, chromium):
    from playwright.sync_api import expect

    context = chromium.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    page.goto(f"{streamlit_server}/other_model_families?present=1&model=off")
    bar = page.get_by_text(re.compile(r"Section 1 of \d+"))
    expect(bar).to_be_visible(timeout=120_000)
    settle_run(page)
    count = int(re.search(r"of (\d+)", bar.inner_text()).group(1))
    assert count == 9
    heights, sideways = {}, {}
    for k in range(1, count + 1):
        if k > 1:
            page.evaluate("document.activeElement && document.activeElement.blur()")
            page.keyboard.press("PageDown")
            expect(page.get_by_text(f"Section {k} of {count}")).to_be_visible(timeout=60_000)
            settle_run(page)
        heights[k] = page.evaluate(CONTENT_BOTTOM)
        sideways[k] = page.evaluate("() => document.documentElement.scrollWidth > window.innerWidth")
    assert_no_errors(page)
    assert all(h <= 768 for h in heights.values()), str(heights)
    assert not any(sideways.values()), sideways
    context.close()
