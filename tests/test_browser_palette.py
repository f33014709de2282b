"""The colour language and the projected playground in headless Chromium: the playground's Run and the loop it
lights on one 1024×768 screen, a run adding no section; Home's loop ending unlit with a Replay; the legends drawn
in the palette's colours; the browser's percent rule the same as Python's.

Slow (a minute or two: a real server and a browser). Screenshots go to artifacts/screenshots/palette-*.png.
Without chromium the tests skip, except under REQUIRE_BROWSER=1 (CI), where they fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import PERCENTS, assert_no_errors, press_section_key, save_shot, settle_run

from ui.palette import MEANINGS

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
WHERE = re.compile(r"Section (\d+) of (\d+)")
MAIN = "document.querySelector('[data-testid=\"stMain\"]')"


def rgb(hex_colour: str) -> str:
    """A palette colour as getComputedStyle writes it."""
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def section_shown(page) -> tuple[int, int]:
    found = WHERE.search(page.locator('[data-testid="stMain"]').inner_text())
    assert found, "no 'Section k of n' on the page"
    return int(found.group(1)), int(found.group(2))


def test_projected_playground_runs_and_lights_its_loop_on_one_screen(chromium, streamlit_server):
    from playwright.sync_api import expect

    context = chromium.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    try:
        page.goto(f"{streamlit_server}/playground?present=1&model=off")
        run = page.get_by_role("button", name="Run the episode")
        expect(run).to_be_visible(timeout=90_000)
        settle_run(page)
        before = section_shown(page)
        assert before[0] == 1
        svg = page.locator(".lv-svg")
        expect(svg).to_be_visible()
        run.click()
        expect(page.get_by_text(re.compile(r"Done: \d+ calls"))).to_be_visible(timeout=60_000)
        settle_run(page)
        # the run is played in the loop on the same screen: a stage lit, Run and the picture both in view
        expect(page.locator(".lv-svg .stage.lit")).to_have_count(1)
        assert section_shown(page) == before  # a run of 7 calls adds no section
        for element in (run, svg, page.locator(".lv-where")):
            box = element.bounding_box()
            assert box and box["y"] >= 0 and box["y"] + box["height"] <= 768, box
        assert page.evaluate(f"() => {MAIN}.scrollHeight") <= 768
        save_shot(page, "palette-playground-projected-run")
        # the loop plays once and comes to rest unlit, saying how the run ended
        expect(page.locator(".lv-caption")).to_contain_text("Replay to watch it again", timeout=60_000)
        assert page.locator(".lv-svg .stage.lit").count() == 0
        # the calls: one section, one call at a time (PageDown as a presenter does: a reload would be a new session)
        for number in range(2, 5):
            press_section_key(page, "PageDown")
            expect(page.get_by_text(f"Section {number} of {before[1]}")).to_be_visible(timeout=60_000)
            settle_run(page)
        expect(page.get_by_role("heading", name="The calls")).to_be_visible()
        assert section_shown(page) == (4, before[1])
        expect(page.locator("strong", has_text=re.compile(r"^Call 1$"))).to_be_visible()
        assert page.evaluate(f"() => {MAIN}.scrollHeight") <= 768
        save_shot(page, "palette-playground-projected-calls")
        assert_no_errors(page)
    finally:
        context.close()


def test_home_loop_rests_unlit_and_replays(chromium, streamlit_server):
    from playwright.sync_api import expect

    page = chromium.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(f"{streamlit_server}/")
        replay = page.locator(".lv-play")
        expect(replay).to_be_visible(timeout=90_000)
        expect(page.locator(".lv-caption")).to_contain_text("The run is over", timeout=60_000)
        assert page.locator(".lv-svg .stage.lit").count() == 0 and replay.inner_text() == "▶ Replay"
        replay.click()
        expect(page.locator(".lv-svg .stage.lit")).to_have_count(1)
        # the legend under the picture, each swatch in its meaning's colour
        swatches = page.locator(".lv-legend .pal-item").evaluate_all(
            "items => items.map(i => [i.dataset.meaning, getComputedStyle(i.querySelector('.pal-swatch')).backgroundColor])"
        )
        assert swatches and all(colour == rgb(MEANINGS[meaning].ink) for meaning, colour in swatches), swatches
        # the lit stage's place and its halo's colour (that of now), read with the loop held still: it plays on at
        # 700 ms a stage and comes to rest unlit, so a stage found lit could be unlit a moment later (stroke none,
        # once in a whole run). Back stops it on a lit stage, wherever it was
        page.locator(".lv-back").click()
        expect(page.locator(".lv-play")).to_have_text("▶ Replay")
        expect(page.locator(".lv-svg .stage.lit")).to_have_count(1)
        assert page.locator(".lv-where").inner_text().startswith("Stage ")
        halo = page.locator(".lv-svg .stage.lit .halo").evaluate("e => getComputedStyle(e).stroke")
        assert halo == rgb(MEANINGS["now"].ink)
        assert_no_errors(page)
    finally:
        page.close()


def test_lesson_4_calls_and_legend_in_the_palettes_colours(chromium, streamlit_server):
    from playwright.sync_api import expect

    page = chromium.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(f"{streamlit_server}/check_run_return")
        expect(page.locator(".sv-legend")).to_be_visible(timeout=90_000)
        settle_run(page)
        chips = page.locator(".sv-chip").evaluate_all(
            "cs => cs.map(c => [c.className, getComputedStyle(c).backgroundColor])"
        )
        expected = {"bad": MEANINGS["failed"].fill, "ok": MEANINGS["passed"].fill}
        for classes, colour in chips:
            kind = next((k for k in expected if k in classes.split()), None)
            assert colour == rgb(expected[kind] if kind else MEANINGS["neutral"].fill), (classes, colour)
        assert {k for c, _ in chips for k in ("bad", "ok") if k in c.split()} == {"bad", "ok"}
        legend = page.locator(".sv-legend .pal-item").evaluate_all(
            "items => items.map(i => [i.dataset.meaning, getComputedStyle(i.querySelector('.pal-swatch')).backgroundColor])"
        )
        assert [m for m, _ in legend] == ["now", "passed", "failed", "neutral"]
        assert all(colour == rgb(MEANINGS[m].ink) for m, colour in legend), legend
        # a failed check in the checks table is the failed colour, the verdicts beside it the passed one
        verdicts = page.locator("table.checks tr.fail td.v, table.checks tr.pass td.v").evaluate_all(
            "cells => cells.map(c => [c.parentElement.className, getComputedStyle(c).color])"
        )
        assert verdicts and all(
            colour == rgb(MEANINGS["failed" if kind == "fail" else "passed"].ink) for kind, colour in verdicts
        )
        save_shot(page, "palette-lesson-4")
        assert_no_errors(page)
    finally:
        page.close()


def test_the_browsers_percent_rule_is_pythons(chromium):
    page = chromium.new_page()
    try:
        script = (ROOT / "ui" / "views" / "numbers.js").read_text(encoding="utf-8")
        shown = page.evaluate(f"(ps) => {{ {script}\n return ps.map(formatPercent); }}", [p for p, _ in PERCENTS])
        assert shown == [s for _, s in PERCENTS]
    finally:
        page.close()
