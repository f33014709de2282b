"""Model panels end to end in a real browser: from the click to the last token drawn, with the tiny model.

Starts `streamlit run app.py` on a free local port, opens a page in headless Chromium
(Debian's chromium through playwright, as the browser tests do) with `?model=tiny`, presses
the panel's button and times until the page's script has finished and its result is shown.
The first press of a server includes importing torch and building the tiny model; the
others are what a class waits for. Lesson 1's two runs are also timed through the engine
alone, without a page: the difference is what the page adds. Prints one JSON object.

    python bench/bench_live_pages.py [--presses 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
sys.path.insert(0, str(ROOT / "tests"))

from helpers import free_port, start_streamlit, wait_healthy  # noqa: E402

# page, button, the text that the finished panel shows
PANELS = {
    "lesson 1, both runs": ("why_call_a_tool", "Ask without tools, then with tools", "tokens, finish:"),
    "lesson 3, the call": ("the_model_writes_a_call", "Generate the call", "Its probability"),
}


def start_server() -> tuple[subprocess.Popen, str]:
    """The site on a free port (tests/helpers.py's start, the tests' own), once it answers: (process, base URL)."""
    port = free_port()
    server, url = start_streamlit(port), f"http://127.0.0.1:{port}"
    if not wait_healthy(url, server, 180):
        server.kill()
        raise SystemExit("streamlit did not start within 90 s")
    return server, url


def finished(page, timeout_ms: int) -> None:
    """Wait until no script run is in progress (Streamlit's status widget is gone)."""
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout_ms)


def press(page, url: str, path: str, button: str, done_text: str) -> float:
    """Open the page fresh, press the button, and time until the panel's result is drawn and the run has ended."""
    page.goto(f"{url}/{path}?model=tiny")
    page.wait_for_selector("h1", timeout=120_000)
    finished(page, 120_000)
    page.wait_for_timeout(300)
    started = time.perf_counter()
    page.get_by_role("button", name=button).click()
    page.get_by_text(done_text).first.wait_for(timeout=300_000)
    finished(page, 300_000)
    elapsed = time.perf_counter() - started
    errors = page.locator('[data-testid="stException"]')
    if errors.count():
        raise SystemExit(f"the page raised: {errors.first.inner_text()[:500]}")
    return elapsed


def engine_alone() -> float:
    """Lesson 1's two runs without the page: the same requests and settings through the engine, in this process."""
    from engine.core.generation import GenerationSettings
    from engine.core.prompt import Request
    from engine.harness.loop import iterate_episode, load_scenario
    from engine.model.live import LiveModel, generate_turn
    from engine.model.loading import load_model

    engine = load_model("tiny")
    scenario = load_scenario("strawberry")
    started = time.perf_counter()
    generate_turn(engine, Request(scenario.messages, [], "native"), GenerationSettings(max_new_tokens=160, top_k=0))
    live = LiveModel(engine, GenerationSettings(max_new_tokens=80, top_k=0))
    for _ in iterate_episode(live, scenario.messages, scenario.tools, "native", max_turns=3):
        pass
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=3, help="presses per panel after the first (default 3)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    server, url = start_server()
    results = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            for panel, (path, button, done_text) in PANELS.items():
                first = press(page, url, path, button, done_text)
                warm = [press(page, url, path, button, done_text) for _ in range(args.presses)]
                results[panel] = {
                    "first_s": round(first, 2),
                    "warm_s": [round(w, 2) for w in warm],
                    "warm_median_s": round(statistics.median(warm), 2),
                }
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=15)
    sys.path.insert(0, str(ROOT))
    alone = [round(engine_alone(), 2) for _ in range(2)]
    load = os.getloadavg()
    print(
        json.dumps(
            {
                "model": "tiny",
                "panels": results,
                "lesson 1, engine alone_s": alone,
                "machine": {"cpus": os.cpu_count(), "load_1m": round(load[0], 2), "python": platform.python_version()},
            }
        )
    )


if __name__ == "__main__":
    main()
