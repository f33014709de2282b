"""What several test modules share (tests import from here, never from conftest or from each other)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


# -- the site: a page in streamlit's AppTest -------------------------------------------------------------
def page_of(page_id: str) -> str:
    """The script lessons/index.json gives a page ("why-call-a-tool" -> "app_pages/why_call_a_tool.py"): tests
    name a page by its id, as the site's navigation does, so a renamed script is followed."""
    index = json.loads((ROOT / "lessons" / "index.json").read_text(encoding="utf-8"))
    pages = {entry["id"]: entry["page"] for entry in index}
    if page_id not in pages:
        raise KeyError(f"lessons/index.json has no page {page_id!r}; its pages are {', '.join(pages)}")
    return pages[page_id]


def run_python(code: str, env: dict | None = None, timeout: float = 900) -> dict:
    """`python -c code` in a fresh process at the repository's root, `env` added to this one's; the JSON object its
    last line prints (a test of what a process does once: imports, a warm-up, its threads)."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def open_page(page: str | None = None, timeout: float = 60, **query):
    """An AppTest of router.py (the pages app.py serves), run once, then switched to `page` (a path such as "app_pages/home.py"); `query` seeds the URL."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "router.py"), default_timeout=timeout)
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    if page is not None:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


# -- the live model: a forward pass that fails on purpose -----------------------------------------------
class FailingModel:
    """The tiny model's forward pass, raising `error` on call number `fail_at` (0 = the prompt's pass)."""

    def __init__(self, model, fail_at: int, error: BaseException):
        self.model, self.fail_at, self.error, self.calls = model, fail_at, error, 0
        self.config = model.config

    def __call__(self, **kwargs):
        self.calls += 1
        if self.calls - 1 == self.fail_at:
            raise self.error
        return self.model(**kwargs)


# -- a call and tool definitions for the constrained-decoding tests --------------------------------------------------
def function(name: str, properties: dict, required: list[str] | None = None) -> dict:
    params = {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
    }
    return {"type": "function", "function": {"name": name, "description": f"The {name} tool.", "parameters": params}}


# tools whose every value is bounded, so a random model always finishes the call
BOUNDED = [
    function("set_light", {"room": {"type": "string", "enum": ["kitchen", "hall"]}, "on": {"type": "boolean"}}),
    function("roll", {"sides": {"type": "integer", "minimum": 1, "maximum": 6}}),
    function("set_mode", {"speed": {"const": "fast"}}),
]


# the strawberry call as the Qwen3 template writes it
COUNT_CALL = '<tool_call>\n{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}\n</tool_call>'


# -- a real streamlit server for the browser tests ---------------------------------------------------------
def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_streamlit(port: int, env: dict | None = None, log=subprocess.DEVNULL) -> subprocess.Popen:
    """`streamlit run app.py` headless on 127.0.0.1:`port` (no file watcher, no usage stats), in server_env(env):
    the process, not answering yet (wait_healthy). The tests' servers and bench/'s start here."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
            "--client.toolbarMode",
            "minimal",
        ],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=server_env(env),
    )


def wait_healthy(url: str, server: subprocess.Popen, timeout: float) -> bool:
    """Whether the server at `url` answered its health check with ok before `timeout` s passed or it exited."""
    import time
    import urllib.request

    deadline = time.monotonic() + timeout
    while server.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as answer:
                if answer.read().strip() == b"ok":
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def serve_site(log_name: str = "streamlit-server.log", env: dict | None = None):
    """`streamlit run app.py` on a free local port, healthy before it is handed out; its base URL. Stopped after.

    `env` adds to (or, with None values, removes from) the server's environment: QWEN_MODEL, HF_ENDPOINT...
    The warm-up is off (QWEN_WARMUP=0) unless `env` turns it on: a test's pages build what they use when they
    first need it, as they would before the warm-up ends, and the server answers in about 5 s rather than 20-25
    on a busy machine (the warm-up builds all seven families' grammars and lesson 4's costs, whatever the test
    opens). The warm-up itself is tests/test_warmup.py's and test_server_start.py's; the shipped model's server
    keeps it, as the README's quick start runs it.
    """
    env = {"QWEN_WARMUP": "0", **(env or {})}
    port = free_port()
    # one log per pytest-xdist worker (each starts servers of its own)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    log_name = f"{worker}-{log_name}" if worker else log_name
    log = open(ROOT / ".pytest_cache" / log_name, "w") if (ROOT / ".pytest_cache").is_dir() else subprocess.DEVNULL  # noqa: SIM115
    server = start_streamlit(port, env, log)
    url = f"http://127.0.0.1:{port}"
    # the server answers once its warm-up is done (ui/server_start.py): on a busy machine, tens of seconds
    if not wait_healthy(url, server, 180):
        server.kill()
        pytest.fail(f"streamlit did not start on port {port} (exit code {server.poll()})")
    try:
        yield url
    finally:
        stop_server(server)
        if log is not subprocess.DEVNULL:
            log.close()


def stop_server(server: subprocess.Popen) -> None:
    """Ask a server to stop, and kill it if it has not within 10 s."""
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()


def server_env(extra: dict | None) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for name, value in (extra or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


# -- what the browser tests share ------------------------------------------------------------------------
ARTIFACTS = ROOT / "artifacts" / "screenshots"


FINISHED_AND_STILL = """() => { const main = document.querySelector('[data-testid="stMain"]');
    const app = document.querySelector('[data-testid="stApp"]');
    if (!main || !app || app.getAttribute('data-test-script-state') !== 'notRunning') { window.__shown = undefined; return false; }
    // an element whose code is still loading is drawn as a skeleton: not still yet
    const n = main.querySelector('[data-testid="stSkeleton"]') ? '' : main.querySelectorAll('*').length + ':' + main.innerText.length;
    const now = performance.now();
    if (window.__shown !== n || !n) { window.__shown = n; window.__since = now; return false; }
    return now - window.__since >= 600; }"""


def settle_run(page, timeout: float = 120_000) -> None:
    """Wait until Streamlit has finished the script run and the page has stopped changing.

    Only stApp's data-test-script-state "notRunning" counts as finished: "initial" (no run yet) and
    "rerunRequested" (a click sent, the run not started) leave the page as it was, as still as a
    finished one. The status widget alone is not enough: on a loaded machine a run can start after
    the first look, and a page seen then is half drawn."""
    page.wait_for_timeout(300)
    page.evaluate("window.__shown = undefined")
    # looked at every 250 ms (each look reads the whole page's text: more often costs the browser CPU the suite lacks):
    # the page counts as still once it has not changed for 600 ms
    page.wait_for_function(FINISHED_AND_STILL, polling=250, timeout=timeout)


def press_section_key(page, key: str = "PageDown") -> None:
    """Press PageDown / PageUp as a presenter does, once the page listens for them (the script that hears them
    loads after the run; a key pressed before it is lost, as it would be for a person)."""
    page.wait_for_function("() => document.documentElement.dataset.sectionKeys === 'on'", polling=100, timeout=60_000)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press(key)


def close_dialog(page) -> None:
    """Close Streamlit's "Page not found" notice, shown when a cold server's first request is a deep link
    (the router has not run yet; the page itself then opens normally)."""
    dialog = page.get_by_role("dialog")
    if dialog.count():
        page.keyboard.press("Escape")
        dialog.wait_for(state="detached", timeout=10_000)


def assert_no_errors(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, page.locator(
        '[data-testid="stException"]'
    ).all_inner_texts()


# -- a tab per screen size, kept for a worker's later tests ----------------------------------------------
# chromium spends about 4 CPU-s opening the site in a new tab (it compiles Streamlit's scripts again) and 1–2 s
# in a tab that has shown it before; on a 2-core machine the browser tests are short of CPU, not of waiting
_TABS: dict = {}


@contextlib.contextmanager
def reused_tab(browser, width: int, height: int):
    """A tab at width×height, the one this worker's last test of that size used when it ended well.

    Each test loads its own address into it, so the page, its Streamlit session and its scripts' state are
    new; only chromium's caches carry over (the size and emulated media are set back, the site's storage
    cleared). A test that fails takes its tab with it. Tests that need a browser of their own (cookies,
    downloads, a second visitor) make a context themselves."""
    key = (id(browser), width, height)
    page = _TABS.pop(key, None)
    if page is None or page.is_closed():
        page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    else:
        # what a test may have changed in the tab itself: its size, and the media it emulates (a handout's print)
        page.set_viewport_size({"width": width, "height": height})
        page.emulate_media(media="null")
    try:
        yield page
    except BaseException:
        page.context.close()
        raise
    # Streamlit keeps the sidebar's state and the theme in the site's localStorage: a sidebar a test opened
    # would stay open for the next test's page (the test's last address is the origin it used)
    try:
        page.evaluate("() => { try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} }")
    except Exception:  # a tab that crashed or closed: the next test makes a new one
        page.context.close()
        return
    # (a test that opened a second tab of one size inside the first keeps one of them)
    if key in _TABS:
        page.context.close()
    else:
        _TABS[key] = page


README_SHOTS = ROOT / "assets" / "screenshots"


def shoot_whole_page(page, name: str, readme_name: str | None = None) -> None:
    """artifacts/<name>.png of the whole page (Streamlit scrolls inside stMain, so the viewport grows to show it
    all); with SAVE_SCREENSHOTS=1, also the first screen as the README's assets/screenshots/<readme_name>.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    if readme_name and os.environ.get("SAVE_SCREENSHOTS") == "1":
        README_SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(README_SHOTS / f"{readme_name}.png"))
    size = page.viewport_size
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    if height <= size["height"]:
        # it all fits (a presenter's section): the screen is the whole page, no resize and redraw to wait for
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
        return
    # (capped: the longest page, lesson 7 projected at 1024 wide, is about 9,700 px)
    page.set_viewport_size({"width": size["width"], "height": min(max(height, size["height"]), 12000)})
    page.wait_for_timeout(1200)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
    page.set_viewport_size(size)


def save_shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


# -- lesson packs ------------------------------------------------------------------------------------------
def zipped(folder: Path, extra: dict[str, bytes] | None = None, drop: tuple[str, ...] = (), change=None) -> bytes:
    """The pack folder as a zip's bytes, with files added, dropped or changed (name -> bytes -> bytes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*.json")):
            name = path.relative_to(folder).as_posix()
            if name in drop:
                continue
            body = path.read_bytes()
            archive.writestr(name, change(name, body) if change else body)
        for name, body in (extra or {}).items():
            archive.writestr(name, body)
    return buffer.getvalue()


# -- what a page shows, as one text -----------------------------------------------------------------------
def page_text(at) -> str:
    """Every piece of text an AppTest page shows: markdown, code, captions, info, warnings, errors, successes."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.code] + [c.value for c in at.caption]
    parts += [x.value for x in at.info] + [x.value for x in at.warning] + [x.value for x in at.error]
    parts += [x.value for x in at.success]
    parts += views_text(at)
    return "\n".join(parts)


def views_text(at) -> list[str]:
    """What the page's step views show: each step's allowed sample as the page once listed it (`token` `token`),
    and the current step's markup, both as markup and as the text a reader sees."""
    import html
    import json

    parts = []
    for element in at.get("bidi_component"):
        proto = element.proto
        try:
            data = json.loads(proto.mixed.json if proto.HasField("mixed") else proto.json)
        except ValueError:  # a view mounted without data (the presenter's key listener)
            continue
        steps = data.get("steps") if isinstance(data, dict) else None
        if not steps:
            continue
        for step in steps:
            if step.get("sample"):
                parts.append(step["sample"]["title"] + " " + " ".join(f"`{t}`" for t in step["sample"]["tokens"]))
        shown = steps[data.get("start", 1) - 1].get("html")
        if shown:
            parts += [shown, html.unescape(shown)]
    return parts


# -- the browser-drawn views: the data a page handed to one (ui/views/) -----------------------------------------
def view_data(at, key: str) -> dict:
    """The JSON a page mounted a ui/views component with (found by its key, e.g. "call_view")."""
    import json

    for element in at.get("bidi_component"):
        if element.key == key or element.proto.id.endswith(f"-{key}"):
            proto = element.proto
            return json.loads(proto.mixed.json if proto.HasField("mixed") else proto.json)
    raise AssertionError(f"no view with key {key!r} on the page")


def view_step(at, key: str) -> tuple[str, dict]:
    """("Token N of M", that step's data) as the view opens: what the browser shows first."""
    data = view_data(at, key)
    return f"{data['unit']} {data['start']} of {len(data['steps'])}", data["steps"][data["start"] - 1]


def report_step(at, key: str, step: int):
    """What the browser does after a pause on step `step`: report it to the page, which reruns."""
    at.session_state[key] = {"step": step}
    return at.run()


# -- the tiny network's forward passes (the compact forward's tests) ----------------------------------------
def tiny_network(kind: str):
    """A fresh tiny random-weights Qwen3 network: "float32", "bfloat16" or "int8" (torch's dynamic quantization)."""
    import torch

    from engine.model.loading import build_tiny_network
    from engine.model.quant import quantize_network

    model = build_tiny_network()
    if kind == "bfloat16":
        return model.to(torch.bfloat16)
    return quantize_network(model) if kind == "int8" else model


def chunks_through(call, ids: list[int], split: int, cache):
    """Logits of every position: the first `split` ids in one pass, then one id a call (as the decode loop reads them)."""
    import torch

    rows = [call(input_ids=torch.tensor([ids[:split]]), cache=cache, logits_to_keep=0).logits[0]]
    for n in range(split, len(ids)):
        rows.append(call(input_ids=torch.tensor([[ids[n]]]), cache=cache, logits_to_keep=1).logits[0])
    return torch.cat(rows)


def int8_state(model) -> dict:
    """Every quantized Linear's int8 values and scales, and every float parameter, by name."""
    import torch

    state = {}
    for name, module in model.named_modules():
        if isinstance(module, torch.ao.nn.quantized.dynamic.Linear):
            weight = module.weight()
            state[name] = (weight.int_repr(), torch.tensor(weight.q_scale()))
    state.update({name: (param.detach(),) for name, param in model.named_parameters()})
    return state


# -- the percent rule (ui/numbers.py, ui/views/numbers.js): one table for Python and the browser -------------------
# (probability, as a page shows it): plain decimals a 16-year-old reads, never e-notation
PERCENTS = [
    (0.0, "0%"),
    (1.0, "100%"),
    (0.5, "50%"),
    (0.997, "99.7%"),
    (0.12345, "12.3%"),
    (0.0123456, "1.23%"),
    (0.01125, "1.13%"),  # a tie rounds up, in both languages
    (0.00042, "0.042%"),
    (5.44e-6, "0.000544%"),
    (6.6e-6, "0.00066%"),  # a random model's near-uniform 1 in 151,669
    (1e-5, "0.001%"),  # a tiny probability never reads as 0.0%
    (2e-6, "0.0002%"),
    (1e-6, "0.0001%"),  # one in a million: the smallest figure written out
    (7.64e-7, "<0.0001%"),  # never "7.64e-05%"
    (3.4e-7, "<0.0001%"),
    (3.1e-9, "<0.0001%"),
    (1e-12, "<0.0001%"),
    (0.99996, "99.996%"),  # just under 1 never reads as 100%
    (0.9999999, "99.99999%"),
]


def small_train_config(**changes):
    """A training run's settings at a size a test can run in seconds: the real vocabulary, a tiny network."""
    from engine.train.training import TrainConfig

    settings = dict(
        hidden=32,
        layers=1,
        intermediate=64,
        heads=2,
        kv_heads=1,
        head_dim=16,
        batch_tokens=3000,
        lr=1e-2,
        threads=1,
        autocast="off",
    )
    return TrainConfig(**{**settings, **changes})


# the presenter's bar above a projected page: "**Section 2 of 5** · Its title · PageDown"
BAR = re.compile(r"\*\*Section (\d+) of (\d+)\*\*(?: · (.*?))? · PageDown")


def where(at) -> tuple[int, int, str]:
    """The section shown, the count and its title, from the bar above the page."""
    for markdown in at.markdown:
        if found := BAR.search(markdown.value):
            return int(found[1]), int(found[2]), found[3] or ""
    raise AssertionError("no 'Section k of n' bar on the page")


def walk_sections(page: str, **query) -> list[tuple[str, list[str], str]]:
    """Each section of a projected page in turn (PageDown's button): (its title, its subheaders, its text and
    headers)."""
    at = open_page(page, present="1", **query)
    current, count, title = where(at)
    assert current == 1 and count > 1

    def shown(title: str) -> tuple[str, list[str], str]:
        return title, [h.value for h in at.subheader], "\n".join([page_text(at), *(h.value for h in at.header)])

    screens = [shown(title)]
    for k in range(2, count + 1):
        at.button(key="present_next").click().run()
        assert not at.exception, [e.value for e in at.exception]
        current, total, title = where(at)
        assert (current, total) == (k, count)
        screens.append(shown(title))
    return screens
