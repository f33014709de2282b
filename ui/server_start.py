"""What the server loads before it answers anyone: what Home needs, so that a class's first page draws at once.

Streamlit runs nothing of a plain script before its first visitor, so the first learner of a fresh server
used to pay for Python importing the site's modules (about 1 s), pandas and pyarrow (about 1 s: Streamlit's
views import them to look for dataframes) and the tokenizer's 11 MB of JSON. app.py serves the site as an
`st.App` whose lifespan runs `preload()` before the server takes a request, as llama.cpp's server reads
its model before it answers: the start is that much longer, Home's first visit that much shorter.

Torch, the shipped model and the grammars are not loaded here: they stay the background warm-up's
(engine/startup/warmup.py), which starts once the first page is drawn. A step that fails is recorded and
the server starts anyway; the page that needs it then fails in its own words.
"""

from __future__ import annotations

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


_report: PreloadReport | None = None


def last_report() -> PreloadReport | None:
    """What this process's preload did (None before the server started, or in a process that never served)."""
    return _report


@contextlib.asynccontextmanager
async def lifespan(app):
    """st.App's lifespan: preload before the server answers, then serve until it stops."""
    global _report
    _report = preload()
    failed = f"; failed: {', '.join(sorted(_report.errors))}" if _report.errors else ""
    print(f"Loaded what Home needs in {_report.total:.1f} s{failed}", file=sys.stderr, flush=True)
    yield
