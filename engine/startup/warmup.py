"""Warm the pieces every page shares, in the background, once per server process.

The first render of a page after a server start paid for imports (torch, transformers,
xgrammar), the tokenizer, xgrammar's view of the vocabulary (0.9 s) and the grammars of the
shipped tool sets: up to 8 s for the first learner of a class. `start_warmup()` (called by
app.py on every run; only the first call in a process does anything) builds them in a
daemon thread, so a page never waits for the warm-up to finish: a page that needs a piece
before it is warm builds it as it always did (xgrammar's vocabulary view is built under a
lock, so never twice). `start_warmup(then=...)` runs one more piece first in the same thread (the
shipped model's load), so that only one background thread at a time imports transformers' models.

Each step is timed and any failure is recorded, never raised (the warm-up is only a head
start). QWEN_WARMUP=0 turns it off.
"""

from __future__ import annotations

import importlib
import threading
import time
from dataclasses import dataclass, field

from ..settings import load_settings

# imported in the calling thread, before the background thread starts: two threads importing
# transformers' lazy modules at once can hand one of them a half-initialised module
# ("cannot import name 'PreTrainedTokenizerBase' from 'transformers'"), so a page must never
# import them while the warm-up thread does
FIRST = ("torch", "transformers", "xgrammar")
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
_report = WarmupReport()


def warmup_steps() -> list[tuple[str, object]]:
    """(name, callable) in the order they run: tokenizer, imports, the grammar engine, every shipped tool set's grammars."""
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

    return [*steps, ("grammar engine", grammar_engine), ("tool set grammars", tool_sets)]


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


def _background(then) -> None:
    try:
        if then is not None:
            started = time.perf_counter()
            try:
                then()  # in this thread, before the modules below: one thread imports transformers' models at a time
            except Exception as error:  # a head start only
                _report.errors["then"] = f"{type(error).__name__}: {str(error)[:200]}"
            _report.seconds["then"] = round(time.perf_counter() - started, 3)
        run_warmup(_report)
    finally:
        _done.set()


def _import(name: str) -> None:
    started = time.perf_counter()
    try:
        importlib.import_module(name)
    except Exception as error:  # the page that needs it reports its own error
        _report.errors[f"import {name}"] = f"{type(error).__name__}: {str(error)[:200]}"
    _report.seconds[f"import {name}"] = round(time.perf_counter() - started, 3)


def start_warmup(then=None) -> bool:
    """Start the warm-up if this process has not yet; True if this call started it.

    The first call imports FIRST in its own thread (a few seconds, once per process; other
    sessions' first runs wait for it here), then starts the background thread: `then()` if
    given (the shipped model's load, waited for there), then the rest.
    """
    global _thread
    if not load_settings().warmup:
        return False
    with _lock:
        if _thread is not None:
            return False
        for name in FIRST:
            _import(name)
        _thread = threading.Thread(target=_background, args=(then,), name="engine-warmup", daemon=True)
        _thread.start()
        return True


def wait_warmup(timeout: float | None = None) -> bool:
    """Wait for a started warm-up to finish (for a bench or a test); True when it has, False at once if none started."""
    with _lock:
        started = _thread is not None
    return _done.wait(timeout) if started else False


def warmup_report() -> WarmupReport:
    return _report
