"""Page render times without the model, first (a cold process: imports, tokenizer, caches) and warm (reruns).

Each page runs in its own fresh Python process through streamlit's AppTest (router.py, then
switch_page), so "first" is what the first visitor after a server start waits for, minus the
browser. "warm" is the median of a few reruns of the same page. Prints one JSON object.

    python bench/bench_pages.py [--reruns 5] [--warmup off|concurrent|wait] [app_pages/calculator.py ...]

--warmup says what the start-up warm-up (engine/startup/warmup.py, started by router.py) has done when
the first render starts:
    off         none (QWEN_WARMUP=0): the site before the warm-up existed
    concurrent  it starts with the first render, as when a learner opens a page the moment the server is up
    wait        it has finished: a learner who arrives after the server has been up a little while
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ONE_PAGE = r"""
import json, statistics, sys, time
sys.path.insert(0, {root!r})
from streamlit.testing.v1 import AppTest
page, reruns, wait = {page!r}, {reruns}, {wait!r}
warmup_s = None
if wait:
    from engine.startup.warmup import start_warmup, wait_warmup
    t = time.perf_counter(); start_warmup(); wait_warmup(600); warmup_s = round(time.perf_counter() - t, 3)
started = time.perf_counter()
at = AppTest.from_file({app!r}, default_timeout=120)
at.query_params["model"] = "off"
at.run()
if page != "app_pages/home.py":
    at.switch_page(page).run()
first = time.perf_counter() - started
warm = []
for _ in range(reruns):
    t = time.perf_counter(); at.run(); warm.append(time.perf_counter() - t)
print(json.dumps({{"first_s": round(first, 3), "warm_s": round(statistics.median(warm), 3),
                  "warmup_s": warmup_s, "errors": [e.value for e in at.exception]}}))
"""


def measure(page: str, reruns: int, warmup: str = "concurrent") -> dict:
    code = ONE_PAGE.format(root=str(ROOT), page=page, reruns=reruns, app=str(ROOT / "router.py"), wait=warmup == "wait")
    env = {**os.environ, "QWEN_WARMUP": "0" if warmup == "off" else "1"}
    wall = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = round(time.perf_counter() - wall, 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", help="page files (default: every page in lessons/index.json)")
    parser.add_argument("--reruns", type=int, default=5)
    parser.add_argument(
        "--warmup",
        choices=("off", "concurrent", "wait"),
        default="concurrent",
        help="the start-up warm-up: off, started with the first render, or finished before it",
    )
    args = parser.parse_args()
    index = json.loads((ROOT / "lessons" / "index.json").read_text(encoding="utf-8"))
    pages = args.pages or [e["page"] for e in index if (ROOT / e["page"]).exists()]
    load_before = [round(x, 2) for x in os.getloadavg()]
    results = {page: measure(page, args.reruns, args.warmup) for page in pages}
    warm = [r["warm_s"] for r in results.values() if "warm_s" in r]
    first = [r["first_s"] for r in results.values() if "first_s" in r]
    print(
        json.dumps(
            {
                "what": "page render time without the model (streamlit AppTest, one fresh process per page)",
                "warmup": args.warmup,
                "reruns": args.reruns,
                "pages": results,
                "first_max_s": max(first) if first else None,
                "warm_median_s": round(statistics.median(warm), 3) if warm else None,
                "load_average_before_after": [load_before, [round(x, 2) for x in os.getloadavg()]],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
