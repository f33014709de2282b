"""A teacher loads the live model with the sidebar's button; every model panel and every session then uses it.

Slow (several minutes on a busy 2-core machine): the server runs with QWEN_MODEL pointing at a
folder (the tiny model saved with save_pretrained, the vendored tokenizer, and config.json's
`"random_weights": true`), or at a repo of a hub served from 127.0.0.1 (tests/local_hub.py).
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from helpers import save_shot, settle_run
from local_hub import LocalHub

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LONG = 420_000  # ms: a model panel of the tiny model on a loaded 2-core machine
REPO = "local/tiny-qwen3"


@pytest.fixture(scope="module")
def random_folder(tiny_folder, tmp_path_factory):
    """The tiny model's folder, marked as random weights the way bench/make_sized_model.py marks its folders."""
    folder = tmp_path_factory.mktemp("teacher") / "qwen3-random"
    shutil.copytree(tiny_folder, folder, copy_function=os.link)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").unlink()
    (folder / "config.json").write_text(json.dumps({**config, "random_weights": True}))
    return folder


def settle(page, timeout: float = LONG) -> None:
    """Wait until the page's script has run (Streamlit's status widget is gone) and a title is drawn."""
    page.wait_for_selector("h1", timeout=timeout)
    settle_run(page, timeout)


def open_page(page, url: str, path: str) -> None:
    page.goto(f"{url}/{path}")
    settle(page)
    assert_clean(page)


def press(page, name: str, done_text: str) -> None:
    """Press a button of the main area and wait for its result and the end of the run."""
    page.get_by_test_id("stMain").get_by_role("button", name=name).click()
    page.get_by_text(done_text).first.wait_for(timeout=LONG)
    settle(page)
    assert_clean(page)


def assert_clean(page) -> None:
    """No exception on the page, and a random-weights model never called a live model."""
    errors = page.locator('[data-testid="stException"]')
    assert errors.count() == 0, errors.first.inner_text()
    assert page.get_by_text("Live model:").count() == 0


def sidebar(page):
    return page.get_by_test_id("stSidebar")


def load_from_sidebar(page, button: str) -> None:
    sidebar(page).get_by_role("button", name=button).click()
    sidebar(page).get_by_text("Loaded for everyone on this site").wait_for(timeout=LONG)
    settle(page)


def test_a_folder_loaded_with_the_sidebar_button_serves_every_panel_and_every_session(
    chromium, serve_app, random_folder
):
    from playwright.sync_api import expect

    url = serve_app({"QWEN_MODEL": str(random_folder)}, "streamlit-server-folder.log")
    teacher = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = teacher.new_page()
    open_page(page, url, "the_model_writes_a_call")
    expect(sidebar(page)).to_contain_text(f"{random_folder}: on this machine, not loaded yet")
    load_from_sidebar(page, "Load the model")
    expect(sidebar(page)).to_contain_text(
        f"Loaded for everyone on this site: {random_folder} (fp32, cpu; random weights"
    )
    expect(sidebar(page)).to_contain_text("Random weights:")
    # the decode step's small operations in C (engine/model/native_step.c), said on the Set-up page as the other engine lines are
    open_page(page, url, "setup")
    expect(page.get_by_test_id("stMain")).to_contain_text(
        "Decode steps: norms, attention and the MLP's gate in C between torch's products"
    )
    open_page(page, url, "the_model_writes_a_call")
    assert_clean(page)

    # lesson 3: the call, token by token, with each token's probability
    expect(page.get_by_text(f"Random weights: {random_folder} (fp32, cpu)").first).to_be_visible(timeout=LONG)
    press(page, "Generate the call", "Its probability")
    # lesson 1: both runs, streamed
    open_page(page, url, "why_call_a_tool")
    press(page, "Ask without tools, then with tools", "tokens, finish:")
    expect(page.get_by_test_id("stMain").locator(".tok-strip").last).to_be_visible()
    # lesson 5: P(<tool_call>) for both questions, computed when the page opens
    open_page(page, url, "answer_and_when_not_to_call")
    expect(page.get_by_test_id("stMetric").filter(has_text="P(<tool_call>) as the first token")).to_have_count(
        2, timeout=LONG
    )
    # lesson 6: the model's own view before and after the mask, then free and constrained decodes
    open_page(page, url, "constrained_decoding?tool_choice=required&step=7")
    # the view carries every step's bars, so stepping in the browser shows the next step's at once
    expect(page.locator(".sv-fact").filter(has_text="Probability the model put on forbidden tokens")).to_be_visible(
        timeout=LONG
    )
    expect(page.locator(".sv-bars")).to_have_count(2)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("ArrowRight")
    expect(page.locator(".sv-where")).to_have_text("Token 8 of 27")
    expect(page.locator(".sv-bars")).to_have_count(2)
    page.wait_for_timeout(1000)  # the view reports the step reached after a pause: let that rerun end before pressing
    settle(page)
    press(page, "Decode both", "(tool_choice required)")
    # the playground's live run
    open_page(page, url, "playground?mode=live")
    press(page, "Run the episode", f"Turns written by: {random_folder} (fp32, cpu; random weights")
    teacher.close()

    # a learner on another laptop: a new session finds the model loaded, and uses it
    learner = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = learner.new_page()
    open_page(page, url, "")
    expect(page.get_by_test_id("stMain").get_by_text(f"Random weights: {random_folder} (fp32, cpu)")).to_be_visible(
        timeout=LONG
    )
    open_page(page, url, "the_model_writes_a_call")
    expect(sidebar(page)).to_contain_text("Loaded for everyone on this site")
    expect(sidebar(page).get_by_role("button", name="Load the model")).to_have_count(0, timeout=30_000)
    press(page, "Generate the call", "Its probability")
    learner.close()


def test_a_download_cut_mid_file_says_what_failed_and_pressing_again_loads(chromium, serve_app, tiny_folder, tmp_path):
    from playwright.sync_api import expect

    with LocalHub(tiny_folder, REPO, cut_after=1_000_000) as hub:
        url = serve_app(
            {"QWEN_MODEL": REPO, "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": None},
            "streamlit-server-hub.log",
        )
        context = chromium.new_context(viewport={"width": 1440, "height": 900})
        page = context.new_page()
        open_page(page, url, "the_model_writes_a_call")
        expect(sidebar(page)).to_contain_text(f"{REPO}: not on this machine")
        sidebar(page).get_by_role("button", name="Try to download and load").click()
        error = sidebar(page).get_by_test_id("stAlertContentError")
        error.wait_for(timeout=LONG)
        expect(error).to_contain_text("the download failed: RemoteProtocolError: peer closed connection")
        expect(error).to_contain_text(f"python -m engine download --model {REPO}")
        assert_clean(page)

        hub.cut_after = None  # the network is back: the same button now downloads and loads
        load_from_sidebar(page, "Try to download and load")
        expect(sidebar(page)).to_contain_text(f"Loaded for everyone on this site: {REPO} (fp32, cpu)")
        expect(sidebar(page).get_by_test_id("stAlertContentError")).to_have_count(0, timeout=30_000)
        # a model from the hub with trained-looking (unmarked) weights is the live model
        expect(page.get_by_text(f"Live model: {REPO} (fp32, cpu)")).to_be_visible(timeout=60_000)
        context.close()


def test_two_sessions_share_one_download_one_draws_the_bar_the_other_waits_then_both_have_the_model(
    chromium, serve_app, tiny_folder, tmp_path
):
    from playwright.sync_api import expect

    # 39 MB in 64 kB chunks, 10 ms apart: about 6 s of download to watch
    with LocalHub(tiny_folder, REPO, chunk_delay=0.01) as hub:
        url = serve_app(
            {"QWEN_MODEL": REPO, "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": None},
            "streamlit-server-shared.log",
        )
        contexts = [chromium.new_context(viewport={"width": 1440, "height": 900}) for _ in range(2)]
        teacher, learner = (context.new_page() for context in contexts)
        open_page(teacher, url, "the_model_writes_a_call")
        open_page(learner, url, "why_call_a_tool")
        sidebar(teacher).get_by_role("button", name="Try to download and load").click()
        # the session that pressed draws the bar, with the bytes so far
        bar = sidebar(teacher).get_by_test_id("stProgress")
        expect(bar).to_contain_text(f"downloading {REPO}:", timeout=LONG)
        expect(bar).to_contain_text(" MB")
        # another session, opened meanwhile, is told that a load runs and gets no second button
        learner.reload()
        expect(sidebar(learner)).to_contain_text(f"{REPO} is being loaded on this server", timeout=LONG)
        expect(sidebar(learner).get_by_role("button", name="Try to download and load")).to_have_count(0)
        # both end with the one model, the waiting session without a reload
        for page in (teacher, learner):
            expect(sidebar(page)).to_contain_text(f"Loaded for everyone on this site: {REPO} (fp32, cpu)", timeout=LONG)
        expect(learner.get_by_text(f"Live model: {REPO} (fp32, cpu)")).to_be_visible(timeout=60_000)
        assert (
            hub.requests.count(f"GET /{REPO}/resolve/0123456789abcdef0123456789abcdef01234567/model.safetensors") == 1
        )
        for context in contexts:
            context.close()


def test_a_bf16_folder_loaded_in_int8_with_the_sidebar_button_writes_a_call(chromium, serve_app, tmp_path):
    # as a published Qwen3 is stored (bf16) on a laptop's CPU (int8): read tensor by tensor (engine/model/int8_load.py)
    import torch
    from playwright.sync_api import expect

    from engine.model.loading import build_tiny_network
    from engine.settings import VENDORED_TOKENIZER

    folder = tmp_path / "qwen3-bf16"
    build_tiny_network().to(torch.bfloat16).save_pretrained(folder)
    for path in VENDORED_TOKENIZER.iterdir():
        if path.is_file():
            shutil.copy(path, folder / path.name)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "random_weights": True}))
    url = serve_app({"QWEN_MODEL": str(folder), "QWEN_QUANT": "int8"}, "streamlit-server-int8.log")
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    open_page(page, url, "the_model_writes_a_call")
    load_from_sidebar(page, "Load the model")
    expect(sidebar(page)).to_contain_text(
        f"Loaded for everyone on this site: {folder} (int8 weights, cpu; random weights"
    )
    open_page(page, url, "setup")  # how the model runs here is the Set-up page's
    expect(page.get_by_test_id("stMain")).to_contain_text("int8 weights: QWEN_QUANT=int8")
    # a plain folder's int8 weights are prepared once and mapped (engine/model/int8_prepared.py)
    expect(page.get_by_test_id("stMain")).to_contain_text(
        "Decode steps: norms, attention, the MLP's gate and the int8 products in C"
    )
    open_page(page, url, "the_model_writes_a_call")
    press(page, "Generate the call", "Its probability")
    expect(page.get_by_text(f"Random weights: {folder} (int8 weights, cpu)").first).to_be_visible()
    save_shot(page, "int8-folder-lesson-3")
    context.close()
