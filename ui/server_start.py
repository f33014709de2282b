"""What the server loads before it answers anyone: what Home needs, then what the pages share, so first visits draw at once.

Streamlit runs nothing of a plain script before its first visitor, so the first learner of a fresh server
used to pay for Python importing the site's modules (about 1 s), pandas and pyarrow (about 1 s: Streamlit's
views import them to look for dataframes) and the tokenizer's 11 MB of JSON. app.py serves the site as an
`st.App` whose lifespan runs `preload()` before the server takes a request, as llama.cpp's server reads
its model before it answers: the start is that much longer, Home's first visit that much shorter.

Then the lifespan runs the warm-up (engine/startup/warmup.py: transformers and xgrammar, the shipped model,
the grammars, lesson 4's measured costs, the other families' tokenizers) and waits for it, at most
WARMUP_WAIT_S: a page's first visit then finds what it shares built, rather than waiting for a warm-up
that started with the first page. QWEN_WARMUP=0 leaves the warm-up out. A step that fails is recorded and
the server starts anyway; the page that needs it then fails in its own words.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import pkgutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

UI = Path(__file__).resolve().parent
# what Home's first run imports beside the site's own modules
THIRD_PARTY = ("pandas", "pyarrow", "jsonschema")
ENGINE_MODULES = ("engine.harness.loop", "engine.core.prompt", "engine.core.call_formats")
# the longest the server waits for the warm-up before it answers anyway (the warm-up then goes on behind it)
WARMUP_WAIT_S = 180.0


@dataclass
class PreloadReport:
    """Seconds per step, errors by step, and the modules that were already in (nothing to do)."""

    seconds: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


def ui_modules() -> list[str]:
    """Every module of ui/ and its subpackages, by name (ui.chrome, ui.views.loop_view, …)."""
    return sorted(m.name for m in pkgutil.walk_packages([str(UI)], prefix="ui.") if not m.ispkg)


def preload_steps() -> list[tuple[str, object]]:
    """(name, callable) in order: the third-party modules, the engine's and ui's modules, then the tokenizer."""

    def tokenizer():
        from engine.core.tokenizer import load_tokenizer

        load_tokenizer()

    names = [*THIRD_PARTY, *ENGINE_MODULES, *ui_modules()]
    steps: list[tuple[str, object]] = [(f"import {n}", lambda n=n: importlib.import_module(n)) for n in names]
    return [*steps, ("tokenizer", tokenizer)]


def preload() -> PreloadReport:
    """Run every step, timing each; a failure is recorded, never raised (the server must start regardless)."""
    report = PreloadReport()
    for name, step in preload_steps():
        started = time.perf_counter()
        try:
            step()
        except Exception as error:  # noqa: BLE001 - a head start only: the page that needs it reports the error
            report.errors[name] = f"{type(error).__name__}: {error}"
        report.seconds[name] = round(time.perf_counter() - started, 4)
    return report


def warm_up(wait_s: float = WARMUP_WAIT_S) -> float | None:
    """Start the warm-up now and wait for it: its seconds, or None where QWEN_WARMUP=0 turns it off."""
    from engine.startup.warmup import start_warmup, wait_warmup
    from ui.shipped_model import builtin_first, load_builtin_in_background

    started = time.perf_counter()
    if not start_warmup(then=load_builtin_in_background if builtin_first() else None, after_page=False):
        return None
    wait_warmup(wait_s)
    return time.perf_counter() - started


_report: PreloadReport | None = None


def last_report() -> PreloadReport | None:
    """What this process's preload did (None before the server started, or in a process that never served)."""
    return _report


@contextlib.asynccontextmanager
async def lifespan(app):
    """st.App's lifespan: preload and warm up before the server answers, then serve until it stops."""
    global _report
    _report = preload()
    failed = f"; failed: {', '.join(sorted(_report.errors))}" if _report.errors else ""
    print(f"Loaded what Home needs in {_report.total:.1f} s{failed}", file=sys.stderr, flush=True)
    # in a thread of its own: the event loop stays free while the warm-up imports and builds
    seconds = await asyncio.to_thread(warm_up)
    if seconds is not None:
        from engine.startup.warmup import warmup_report

        warmed = warmup_report()
        failed = f"; failed: {', '.join(sorted(warmed.errors))}" if warmed.errors else ""
        state = "warmed up" if warmed.finished else f"still warming up after {WARMUP_WAIT_S:.0f} s, serving anyway"
        print(f"The shared pieces {state} in {seconds:.1f} s{failed}", file=sys.stderr, flush=True)
    yield
