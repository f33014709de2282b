"""What a teacher waits for moving between pages, in a real browser: the first page of a fresh server, then each page warm.

Starts `streamlit run app.py` on a free local port, opens Home in headless Chromium (Debian's
chromium through playwright, as the browser tests do) and times until the script has finished and
the page's title is drawn: that is "fresh", the first visitor after a start. Then it clicks through
the sidebar's links, page after page, `--rounds` times: the first round is each page's first visit
on this server (its caches still cold), the later rounds are "warm", what a class waits for when
the teacher goes back and forth. Medians per page; prints one JSON object.

    python bench/bench_navigation.py [--rounds 3] [--model off|builtin|tiny] [--present] [--settle 0]

--model is the sidebar's model choice, set in the first page's link (the site's default is the
shipped model); --present times presenter mode (?present=1), where each page is cut into screens;
--settle waits that many seconds after Home before the first round, as a class does while the teacher
introduces the site (the server's warm-up, engine/startup/warmup.py, goes on meanwhile: 0 clicks at once).
"fresh_home_loaded_s" is the part of "fresh_home_s" before the browser had loaded the page's own code.
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
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from helpers import free_port, start_streamlit, wait_healthy  # noqa: E402

from ui.words import LESSONS, lesson, lesson_index  # noqa: E402

# finished: the script is not running and the page's own title is drawn (a click leaves the old page up
# until the new run starts, so "not running" alone could be the old page)
DRAWN = """(title) => { const app = document.querySelector('[data-testid="stApp"]');
    const h1 = document.querySelector('[data-testid="stMain"] h1');
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning' && !!h1 && h1.innerText.includes(title); }"""


def start_server(port: int) -> subprocess.Popen:
    """The site on `port` (tests/helpers.py's start, the tests' own), once it answers."""
    server = start_streamlit(port)
    if not wait_healthy(f"http://127.0.0.1:{port}", server, 180):
        server.kill()
        raise SystemExit("streamlit did not start")
    return server


def title_of(entry: dict) -> str:
    """Words of a page's h1: its lesson file's title (Home's is its own), else the index's, without a lesson number."""
    own = lesson(entry["id"]).get("title") if (LESSONS / f"{entry['id']}.md").is_file() else None
    return (own or entry["title"]).split(" · ")[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", choices=["off", "builtin", "tiny"], default=None)
    parser.add_argument("--present", action="store_true")
    parser.add_argument("--settle", type=float, default=0.0)
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    pages = [e for e in lesson_index() if e["id"] != "home"]
    port = free_port()
    query = "&".join(q for q in (f"model={args.model}" if args.model else "", "present=1" if args.present else "") if q)
    started = time.perf_counter()
    server = start_server(port)
    server_s = time.perf_counter() - started
    times: dict[str, list[float]] = {e["id"]: [] for e in pages}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            t = time.perf_counter()
            page.goto(f"http://127.0.0.1:{port}/" + (f"?{query}" if query else ""))
            loaded_s = time.perf_counter() - t
            home = title_of(next(e for e in lesson_index() if e["id"] == "home"))
            page.wait_for_function(DRAWN, arg=home, polling="raf", timeout=300_000)
            fresh_s = time.perf_counter() - t
            time.sleep(args.settle)
            for _ in range(args.rounds):
                for entry in pages:
                    link = page.locator(f'[data-testid="stSidebarNav"] a[href$="/{entry["url_path"]}"]').first
                    t = time.perf_counter()
                    link.click()
                    page.wait_for_function(DRAWN, arg=title_of(entry), polling="raf", timeout=300_000)
                    times[entry["id"]].append(time.perf_counter() - t)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=20)
    first = {k: round(v[0], 3) for k, v in times.items() if v}
    warm = {k: round(statistics.median(v[1:]), 3) for k, v in times.items() if len(v) > 1}
    print(
        json.dumps(
            {
                "machine": {
                    "cpu": platform.processor() or platform.machine(),
                    "cores": os.cpu_count(),
                    "load": os.getloadavg(),
                },
                "model": args.model or "default",
                "present": args.present,
                "rounds": args.rounds,
                "settle_s": args.settle,
                "server_start_s": round(server_s, 3),
                "fresh_home_s": round(fresh_s, 3),
                "fresh_home_loaded_s": round(loaded_s, 3),
                "first_visit_s": first,
                "warm_s": warm,
                "warm_median_s": round(statistics.median(warm.values()), 3) if warm else None,
                "warm_max_s": max(warm.values()) if warm else None,
                "pages_over_1s_warm": sorted(k for k, v in warm.items() if v > 1.0),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
