"""Warm the pieces every page shares, in the background, once per server process.

The first render of a page after a server start paid for imports (torch, transformers,
xgrammar), the tokenizer, xgrammar's view of the vocabulary (0.9 s) and the grammars of the
shipped tool sets: up to 8 s for the first learner of a class. `start_warmup()` (called by
router.py on every run; only the first call in a process does anything) builds them in a
daemon thread, so a page never waits for the warm-up to finish (Home, which needs no torch, draws
while the thread imports it; engine/heavy.py makes a page that needs torch wait for that import
rather than race it): a page that needs a piece
before it is warm builds it as it always did (xgrammar's vocabulary view is built under a
lock, so never twice). `start_warmup(then=...)` runs one more piece first in the same thread (the
shipped model's load), so that only one background thread at a time imports transformers' models.

Each step is timed and any failure is recorded, never raised (the warm-up is only a head
start). At the end what it built is frozen out of the garbage collector's full passes (`gc.freeze`),
which Streamlit runs after every page. QWEN_WARMUP=0 turns it off.
"""

from __future__ import annotations

import gc
import importlib
import threading
import time
from dataclasses import dataclass, field

from ..heavy import guard_imports, heavy_errors, import_heavy
from ..settings import load_settings

# how long the warm-up waits for the first page to be drawn before it starts (when asked to wait)
FIRST_PAGE_WAIT_S = 10.0
# modules the pages import on their first render, imported in the background
MODULES = (
    "jsonschema",
    "engine.constrain.masks",
    "engine.model.decode",
    "engine.harness.loop",
    "engine.teaching.calculator",
    "engine.model.peek",
)


@dataclass
class WarmupReport:
    """What the warm-up did: seconds per step, errors by step, and whether it has finished."""

    seconds: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    finished: bool = False
    started_at: float | None = None
    finished_at: float | None = None


_lock = threading.Lock()
_thread: threading.Thread | None = None
_done = threading.Event()
_first_page = threading.Event()
_report = WarmupReport()


def warmup_steps() -> list[tuple[str, object]]:
    """(name, callable) in the order they run: tokenizer, imports, the grammar engine, every shipped tool set's grammars,
    the other model families' tokenizers and grammars."""
    from ..core.tokenizer import load_tokenizer

    steps: list[tuple[str, object]] = [("tokenizer", load_tokenizer)]
    steps += [(f"import {name}", lambda name=name: importlib.import_module(name)) for name in MODULES]

    def grammar_engine():
        from ..constrain.grammar import compiler, tokenizer_info

        tokenizer_info()
        compiler()

    def tool_sets():
        from ..constrain.grammar import compile_calls
        from ..core.tooldefs import TOOL_SETS, load_tool_set

        for name in TOOL_SETS:
            tools = load_tool_set(name)
            # auto ("body") and required ("calls") over the set, and each tool named on its own ("call")
            compile_calls(tools, "body")
            compile_calls(tools, "calls")
            for tool in tools:
                compile_calls([tool], "call")

    def other_families():
        from ..constrain.families import allowed_at_name
        from ..core.call_formats import family_formats, price_tools
        from ..core.tooldefs import load_tool_set

        # lesson 8's first visit: each family's tokenizer and template (its prices), its vocabulary as the grammar
        # engine reads it, and its grammar at the tool's name (about 9 s over seven families, none of it per page)
        tools = load_tool_set("strawberry")
        question = [{"role": "user", "content": "How many r's are in strawberry?"}]
        for family in family_formats():
            price_tools(family.name, question, tools)
            allowed_at_name(family.name, tools)

    def lesson_4_costs():
        from ..core.call_formats import lesson_format_names
        from ..teaching.cost import malformed_cost_of

        # lesson 4 measures what a malformed call costs by running the scripted conversation's tools in the sandbox
        for style in lesson_format_names():
            malformed_cost_of("missing-brace", style)

    return [
        *steps,
        ("grammar engine", grammar_engine),
        ("tool set grammars", tool_sets),
        ("lesson 4's costs", lesson_4_costs),
        ("other families", other_families),
    ]


def run_warmup(report: WarmupReport) -> WarmupReport:
    """Run every step in this thread, timing each; a failing step is recorded and the rest still run."""
    report.started_at = time.time()
    for name, step in warmup_steps():
        started = time.perf_counter()
        try:
            step()
        except Exception as error:  # a head start only: the page that needs this piece reports its own error
            report.errors[name] = f"{type(error).__name__}: {str(error)[:200]}"
        report.seconds[name] = round(time.perf_counter() - started, 3)
    report.finished, report.finished_at = True, time.time()
    return report


def _background(then, after_page: bool) -> None:
    try:
        if after_page:
            # a fresh server's first page draws first, alone: Home needs none of torch, transformers and xgrammar,
            # and a page that does imports them in its own thread meanwhile (engine/heavy.py lets one thread at a time)
            _first_page.wait(FIRST_PAGE_WAIT_S)
        for name, seconds in import_heavy().items():
            _report.seconds[f"import {name}"] = seconds
        _report.errors.update({f"import {name}": error for name, error in heavy_errors().items()})
        if then is not None:
            started = time.perf_counter()
            try:
                then()  # in this thread, before the modules below: one thread imports transformers' models at a time
            except Exception as error:  # a head start only
                _report.errors["then"] = f"{type(error).__name__}: {str(error)[:200]}"
            _report.seconds["then"] = round(time.perf_counter() - started, 3)
        run_warmup(_report)
        # what the warm-up built lives as long as the server: Streamlit's full collection after every page run
        # (0.2-0.5 s over a few hundred thousand objects) skips it from now on
        gc.freeze()
    finally:
        _done.set()


def start_warmup(then=None, after_page: bool = False) -> bool:
    """Start the warm-up if this process has not yet; True if this call started it. Returns at once.

    The background thread imports torch, transformers and xgrammar (engine/heavy.py; any other
    thread that needs them meanwhile waits for them), runs `then()` if given (the shipped model's
    load, waited for there), then the rest. `after_page`: it starts once the first page has been
    drawn (`page_drawn()`), or after FIRST_PAGE_WAIT_S.
    """
    global _thread
    if not load_settings().warmup:
        return False
    with _lock:
        if _thread is not None:
            return False
        guard_imports()
        _thread = threading.Thread(target=_background, args=(then, after_page), name="engine-warmup", daemon=True)
        _thread.start()
        return True


def page_drawn() -> None:
    """A page has been drawn (the router says so after each run): a warm-up waiting for the first page starts."""
    _first_page.set()


def wait_warmup(timeout: float | None = None) -> bool:
    """Wait for a started warm-up to finish (for a bench or a test); True when it has, False at once if none started."""
    with _lock:
        started = _thread is not None
    return _done.wait(timeout) if started else False


def warmup_report() -> WarmupReport:
    return _report
