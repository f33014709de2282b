"""A lesson pack in real Chromium: with QWEN_PACK set and the model off, lesson 3 shows each token's
recorded probability and lesson 5 P(<tool_call>), labelled as recorded; a tampered upload gets a message.

Slow-ish (a minute or so): it uses the session's `streamlit run app.py` with the tiny model's pack
(fixture `pack_server`, shared with the pack walks of test_browser_fit.py) and QWEN_ALLOW_RANDOM_PACKS=1,
and drives Debian's chromium through playwright.
"""

from __future__ import annotations

import pytest
from helpers import assert_no_errors, close_dialog, save_shot, settle_run, zipped

pytestmark = pytest.mark.browser


def test_lessons_3_and_5_show_a_packs_figures_with_the_model_off(pack_server, chromium, tiny_pack):
    from playwright.sync_api import expect

    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{pack_server}/the_model_writes_a_call?model=off")
    close_dialog(page)
    expect(page.get_by_text("Its probability")).to_be_visible(timeout=120_000)
    expect(page.get_by_text("Recorded with tiny (fp32, cpu)").first).to_be_visible()
    expect(page.get_by_text("random weights: its words and probabilities mean nothing").first).to_be_visible()
    settle_run(page)
    assert_no_errors(page)
    save_shot(page, "pack-lesson-3")

    page.goto(f"{pack_server}/answer_and_when_not_to_call?model=off")
    close_dialog(page)
    expect(page.get_by_text("P(<tool_call>) as the first token").first).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Recorded with tiny (fp32, cpu)").first).to_be_visible()
    settle_run(page)
    assert_no_errors(page)

    # a tampered pack uploaded on the Set-up page: a message, and the server's pack stays in use
    page.goto(f"{pack_server}/setup?model=off")
    close_dialog(page)
    page.get_by_text("Upload a lesson pack").click()
    tampered = zipped(
        tiny_pack[0], change=lambda n, b: b[:-10] if n == "runs/when-not-to-call.first-token.france.json" else b
    )
    page.locator('[data-testid="stMain"] input[type="file"]').set_input_files(
        files=[{"name": "bad.zip", "mimeType": "application/zip", "buffer": tampered}]
    )
    expect(page.get_by_text("was changed after the pack was made")).to_be_visible(timeout=60_000)
    settle_run(page)
    page.goto(f"{pack_server}/answer_and_when_not_to_call?model=off")
    close_dialog(page)
    expect(page.get_by_text("P(<tool_call>) as the first token").first).to_be_visible(timeout=60_000)
    assert_no_errors(page)
    save_shot(page, "pack-lesson-5-bad-upload")
