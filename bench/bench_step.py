"""A step on lesson 3 in Chromium: ArrowRight, from the key press to "Token N+1 of M" shown (the step view, no rerun).

    python bench/bench_step.py [--url http://localhost:8501] [--steps 15]

starts its own server unless --url names one, then prints one JSON object: each step's milliseconds and their median.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers import serve_site  # noqa: E402

# the time from the key press to the new words, measured inside the page (no round trip to this process)
MEASURE = """async (target) => {
  const start = performance.now();
  document.dispatchEvent(new KeyboardEvent("keydown", {key: "ArrowRight", bubbles: true}));
  while (!document.body.innerText.includes(target)) await new Promise(requestAnimationFrame);
  return performance.now() - start;
}"""


def measure(url: str, steps: int, chromium: str) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{url}/the_model_writes_a_call?step=1")
        page.get_by_text("Token 1 of ").first.wait_for(timeout=120_000)
        total = int(page.locator(".sv-where").inner_text().rsplit(" ", 1)[1])
        times = []
        for n in range(1, min(steps, total - 1) + 1):
            times.append(page.evaluate(MEASURE, f"Token {n + 1} of {total}"))
        browser.close()
    return {
        "page": "the_model_writes_a_call",
        "action": "ArrowRight",
        "steps": len(times),
        "ms": [round(t, 2) for t in times],
        "median_ms": round(statistics.median(times), 2),
        "goal_ms": 50,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url")
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    if args.url:
        print(json.dumps(measure(args.url, args.steps, args.chromium)))
        return
    server = serve_site("bench-step-server.log")
    try:
        print(json.dumps(measure(next(server), args.steps, args.chromium)))
    finally:
        server.close()


if __name__ == "__main__":
    main()
