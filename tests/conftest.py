"""Shared pytest fixtures. Tests never need model weights: the live engine's tests use `tiny_engine`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# tests compare a loaded folder's probabilities with the tiny model's exactly: fp32 unless a test asks for int8
# (tests/test_quant.py sets QWEN_QUANT itself)
os.environ.setdefault("QWEN_QUANT", "none")
# and float32 weights: on a CPU that runs bf16 natively, auto would load a float folder in bf16 (engine/model/cpu_speed.py)
# (tests/test_cpu_speed.py clears it where it tests auto)
os.environ.setdefault("QWEN_DTYPE", "float32")
# and one fixed torch thread count: a folder's load would otherwise time 1 thread against 2 and set the
# process-wide count while another test decodes, which moves float32's last digits between runs. Under
# pytest-xdist the cores are shared among the workers (four workers on two cores, each with two threads,
# spent their time waiting on each other's threads)
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
os.environ.setdefault("QWEN_THREADS", str(max(1, (os.cpu_count() or 1) // _WORKERS)))
# and an int8 model's key/value cache in fp32, not chosen by a timing that could go either way between runs
# (tests/test_attention.py asks for auto and bf16 itself)
os.environ.setdefault("QWEN_KV_DTYPE", "float32")
# and prepared int8 weights kept in a folder of the session's own, not the user's cache (engine/model/prepared.py)
if "QWEN_PREPARED_DIR" not in os.environ:
    import atexit
    import tempfile

    os.environ["QWEN_PREPARED_DIR"] = tempfile.mkdtemp(prefix="qwen-prepared-")
    atexit.register(shutil.rmtree, os.environ["QWEN_PREPARED_DIR"], True)
# and the model a page starts on named: without QWEN_MODEL the site starts on the shipped model (engine/model/loading.py
# starting_model); the suite's pages are tested with Qwen3-1.7B named and absent (no model), unless a test asks
# for the shipped model itself (tests/test_builtin_model.py clears it)
os.environ.setdefault("QWEN_MODEL", "Qwen/Qwen3-1.7B")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from helpers import open_page, serve_site  # noqa: E402


@pytest.fixture(scope="session")
def tiny_engine():
    """The tiny random-weights Qwen3 with the real tokenizer, built once per test session (imports torch)."""
    from engine.model.loading import TINY, load_model

    return load_model(TINY)


# -- the site: AppTest pages and a real server for the browser tests --------------------------------------
@pytest.fixture
def page_app():
    """`open_page` as a fixture: page_app("app_pages/tools_as_schemas.py", style="react")."""
    return open_page


@pytest.fixture(scope="session")
def builtin_engine():
    """The shipped model (assets/builtin-model) as the site loads it: fp32 on the CPU. For tests of a trained model's behaviour."""
    from engine.model.loading import load_model
    from engine.settings import BUILTIN

    return load_model(BUILTIN)


@pytest.fixture(scope="session")
def tiny_folder(tmp_path_factory):
    """The tiny model saved as a teacher's model folder: save_pretrained's files plus the vendored tokenizer's."""
    from engine.model.loading import build_tiny_network
    from engine.settings import VENDORED_TOKENIZER

    folder = tmp_path_factory.mktemp("tiny-folder")
    build_tiny_network().save_pretrained(folder)
    for path in VENDORED_TOKENIZER.iterdir():
        if path.is_file():
            shutil.copy(path, folder / path.name)
    return folder


@pytest.fixture(scope="session")
def streamlit_server():
    """A real server for the whole test session; its base URL."""
    yield from serve_site()


@pytest.fixture(scope="module")
def serve_app():
    """Servers with an environment of their own: `serve_app({"QWEN_MODEL": folder})` -> base URL; all stopped after the module."""
    running = []

    def start(env: dict, log_name: str = "streamlit-server-env.log") -> str:
        server = serve_site(log_name, env)
        url = next(server)
        running.append(server)
        return url

    yield start
    for server in running:
        server.close()  # runs serve_site's finally: terminate the server


@pytest.fixture(scope="session")
def shipped_server(tmp_path_factory):
    """A server as the README's quick start runs it: no QWEN_MODEL (the shipped model), offline, an empty
    Hugging Face cache; one for the session, so the shipped model is loaded once for every test that uses it."""
    cache = tmp_path_factory.mktemp("hf-cache")
    yield from serve_site(
        "streamlit-server-shipped.log", {"QWEN_MODEL": None, "HF_HUB_CACHE": str(cache), "QWEN_WARMUP": "1"}
    )


@pytest.fixture(scope="session")
def pack_server(tiny_pack):
    """A server whose model panels show the tiny model's pack, as a teacher's QWEN_PACK does; one for the session."""
    yield from serve_site("streamlit-server-pack.log", {"QWEN_PACK": str(tiny_pack[0]), "QWEN_ALLOW_RANDOM_PACKS": "1"})


@pytest.fixture
def fresh_streamlit_server():
    """A server of its own whose first request is the test's: a cold server behaves differently
    (Streamlit runs a deep-linked page file without the router on its first request)."""
    yield from serve_site("streamlit-server-fresh.log")


# the presenter walks that run (tests/test_browser_fit.py, section 12): every page with the shipped model, projected at
# 1024×768 and on a 1440×900 screen; the pages with model panels and the page that measures models with a pack and
# with no model. Other browser tests check what only a browser shows: sizes, keys, clicks, links, drawn views.
# browser files whose tests share no module fixture: each test, and each of its parameters (a page's walk), may go to
# any worker; the walks are the suite's longest chain, so spreading them is what keeps it short
# (test_browser_live_model: each test starts its own server and model folder; one worker ran all four, 231 s)
SPLIT_BY_TEST = {"test_browser_fit", "test_browser_live_model"}
# session servers with an environment of their own: the other tests that use one stay on one worker, which starts it
# once (each start with its first pages costs the server about 10 CPU-s: the import of torch, the shipped model's
# load or the pack's read). The walks of test_browser_fit spread even so: the shipped model walks every page, 23
# walks and screens of 15-30 s, too long a chain for one worker, so each worker starts the shipped server once
# (the pack's walks, seven of 7-12 s, stay together on the worker that starts the pack's server for test_browser_pack:
# spread, each of three workers started one)
SHARED_SERVERS = ("pack_server", "shipped_server")
# files that are not browser tests but whose module fixtures cost tens of CPU-seconds: each stays on one worker
# (spread, each of three workers wrote the tiny GGUF and started llama.cpp's server for test_llama_cpp's tests:
# 94-115 s of setup each on a busy machine, twice more than once; lesson 8's page tests built every family's figures
# on each of three workers, 31-33 s each)
ONE_WORKER_FILES = {"test_llama_cpp", "test_page_other_families", "test_pages_setup"}
# files whose tests are slow (marked `slow`, left out of `scripts/test.sh --quick`): each test loads or builds a
# model, starts a server or a child that imports torch, samples many turns or trains; on a busy 2-core machine each
# took 10-400 s, and together about three quarters of the non-browser tests' time
SLOW_FILES = {
    "test_attention",
    "test_constrain_decode",
    "test_download_hub",
    "test_fast_forward",
    "test_heavy",
    "test_int8_load",
    "test_lean",
    "test_llama_cpp",
    "test_native",
    "test_prefix_cache",
    "test_prepared",
    "test_template_guard",
    "test_train",
    "test_train_resume",
    "test_warmup",
}


# first: pytest-xdist's worker reads the xdist_group marks in a hook of its own (it adds "@group" to each test's id),
# and that hook runs before a conftest's unless the conftest's asks to go first; without it no group was kept together
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Under pytest-xdist (scripts/test.sh runs its workers with --dist loadgroup), a browser test file
    stays on one worker (its module fixtures are made once), and the files spread over the workers: each
    starts its own streamlit server and chromium when its first browser test asks for them. The browser
    tests mostly wait on those processes, so several of them at once overlap their waits."""
    for item in items:
        module = item.module.__name__.rpartition(".")[2]
        if module in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if module in ONE_WORKER_FILES:
            item.add_marker(pytest.mark.xdist_group(module))
        elif item.get_closest_marker("browser"):
            shared = next((name for name in SHARED_SERVERS if name in item.fixturenames), None)
            if module in SPLIT_BY_TEST and shared != "pack_server":
                # each page's walk on its own: a worker that takes one starts the server it needs, once
                group = f"{module}::{item.name}"
            elif shared:
                group = shared
            else:
                group = module
            item.add_marker(pytest.mark.xdist_group(f"browser-{group}"))


# -- headless Chromium (Debian's chromium, driven by Python playwright; never `playwright install`) --
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _browser_missing(reason: str):
    """Skip a browser test, except under REQUIRE_BROWSER=1 (CI), where a missing browser is a failure."""
    if os.environ.get("REQUIRE_BROWSER") == "1":
        pytest.fail(f"REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium():
    """One headless Chromium for every browser test of the session."""
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        _browser_missing(f"no chromium at {CHROMIUM} (install Debian's chromium: apt-get install chromium)")
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        _browser_missing(
            "the playwright Python package is not installed (pip install playwright; never `playwright install`)"
        )
    # a page redraws after each run; on a loaded 2-core machine that can take longer than expect's 5 s default
    expect.set_options(timeout=30_000)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


# -- a lesson pack recorded with the tiny model (engine/packs/prepare.py), shared by the pack tests ----------------
@pytest.fixture(scope="session")
def tiny_pack(tiny_engine, tmp_path_factory):
    """`python -m engine prepare --model tiny --allow-random-weights --out DIR`, run once per test run through
    the command line's own handler: (DIR, the JSON it printed, its progress lines on stderr).

    Under pytest-xdist the first worker to ask records it and the others read the same folder (tests
    that change a pack work on a copy)."""
    import contextlib
    import fcntl
    import io
    import json

    from engine.__main__ import main

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's base folder, above each worker's own
    out, printed, progress = root / "packs" / "tiny", root / "packs" / "printed.json", root / "packs" / "progress.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(root / "packs" / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not printed.exists():  # written last, once the pack is whole
            stdout, stderr = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = main(["prepare", "--model", "tiny", "--allow-random-weights", "--out", str(out)])
            assert code == 0, stderr.getvalue()
            progress.write_text(stderr.getvalue(), encoding="utf-8")
            printed.write_text(stdout.getvalue(), encoding="utf-8")
    return out, json.loads(printed.read_text(encoding="utf-8")), progress.read_text(encoding="utf-8")


# -- the sandbox's modes, one at a time (tests/test_sandbox.py and test_sandbox_attack.py) ----------------
@pytest.fixture
def one_mode(monkeypatch):
    """Make run_tests use one mode and only the given layers inside it (so each layer is seen alone).

    The namespaces and the unprivileged user every mode has stay: they come with the mode."""
    from engine.sandbox import child, modes

    def use(mode: str, layers: tuple[str, ...]) -> None:
        monkeypatch.setattr(modes, "MODES", (mode,))
        monkeypatch.setattr(child, "LAYERS", layers)
        monkeypatch.setattr(modes, "_CHOSEN", {})
        monkeypatch.setenv("QWEN_SANDBOX_WEAK", "1")

    return use
