"""The one step-through of the site (lessons 3, 4, 6 and the gallery), drawn in the browser.

The page builds every step's figures from the engine (ui/views/step_data.py) and sends them once;
← / →, Home / End, Space (play), the buttons and a click on a chip move through them in the browser.
The step reached comes back after a pause, into the page's own step key (the one its ?step=N
link seeds), so a page reruns once per pause, never once per key press.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Literal

import streamlit as st

from ui.palette import legend_entries, view_palette
from ui.state import from_url
from ui.views import read_asset


@dataclass(frozen=True)
class Bar:
    """One bar: a token and its probability; the view writes the figure (ui/views/numbers.js, the rule of
    ui/numbers.py), with "(chosen)" on the model's own token, unless `text` words it otherwise."""

    label: str
    p: float
    chosen: bool = False
    text: str = ""


@dataclass(frozen=True)
class Bars:
    title: str
    rows: list[Bar]


@dataclass(frozen=True)
class Sample:
    title: str
    tokens: list[str]


@dataclass(frozen=True)
class ViewStep:
    """What the view shows at one step: its chip in the strip, and the facts, bars and detail beside it."""

    chip: str  # the chip's text in the strip (whitespace made visible)
    title: str  # the step's big label
    sub: str = ""  # under the chip: an id, an allowed count
    kind: Literal["sp", "bad", "ok", ""] = ""  # sp: a control token; bad: refused, failed; ok: passed; "": no verdict
    caption: str = ""
    facts: list[tuple[str, str]] = field(default_factory=list)  # (label, value) figures
    bad: str = ""  # a warning at this step
    bars: list[Bars] = field(default_factory=list)  # one chart, or two side by side (before / after)
    sample: Sample | None = None
    text: str = ""
    html: str = ""  # trusted markup from ui/draw.py (a turn with its checks), never a visitor's text


@dataclass(frozen=True)
class StepRun:
    """A whole run for the view: its steps, where to start, and what one step is called ("Token")."""

    unit: str
    steps: list[ViewStep]
    start: int = 1
    note: str = ""
    wide: bool = False  # the detail under the facts rather than beside them
    dim: bool = True  # steps after the current one faded, as a call not written yet
    marks: list[tuple[str, int]] = field(default_factory=list)  # (button label, step) jumps: "First token of the name"
    legend_words: dict[str, str] = field(
        default_factory=dict
    )  # a colour's words in this run's legend, where they differ


_MOUNT = st.components.v2.component(
    "step_view",
    html='<div class="sv"></div>',
    css=read_asset("step_view.css"),
    js=read_asset("png_export.js") + read_asset("numbers.js") + read_asset("step_view.js"),
    isolate_styles=False,
)


def view_data(run: StepRun, keys: bool = True) -> dict:
    """The JSON the component receives (tests read it back from the page)."""
    data = asdict(run)
    data["keys"] = keys
    data["palette"] = view_palette()
    data["legend"] = legend_entries(*run_colours(run), words={"now": "shown now", **run.legend_words})
    # the run's identity, so the browser keeps its step across a rerun that redraws the same run
    digest = hashlib.sha1(json.dumps(data["steps"], sort_keys=True, default=str).encode()).hexdigest()[:12]
    data["id"] = f"{run.unit}-{len(run.steps)}-{digest}"
    return data


def run_colours(run: StepRun) -> list[str]:
    """The meanings this run's chips and bars are coloured by, in the legend's order (only those it uses)."""
    kinds = {step.kind for step in run.steps}
    used = ["now"]
    used += [meaning for kind, meaning in (("ok", "passed"), ("bad", "failed"), ("sp", "control")) if kind in kinds]
    if "" in kinds and run.unit != "Token":  # (a plain token's two shades only show where it ends: no meaning to name)
        used.append("neutral")
    if any(bar.chosen for step in run.steps for bars in step.bars for bar in bars.rows):
        used.append("chosen")
    return used


def adopt_step(key: str, step_key: str) -> None:
    """Copy the step the view reported (after a pause) into the page's step key, once per new report."""
    value = st.session_state.get(key)
    step = value.get("step") if isinstance(value, Mapping) else None
    seen = f"_{key}_reported"
    if isinstance(step, int) and step != st.session_state.get(seen):
        st.session_state[seen] = step
        st.session_state[step_key] = step


def current_step(key: str, step_key: str, total: int, default: int = 1, projected: int | None = None) -> int:
    """The step a page's view shows, from 1 to `total`: the URL's ?step= (else the session's, else `default`,
    or `projected` where one is given and the page is projected), then the step the view last reported, clamped
    so that a link or a switch to a shorter run never points past its end. Kept in `step_key`; the page writes
    it back to the URL with its other parameters."""
    from ui.sections import projected as page_projected

    if projected is not None and page_projected():
        default = projected
    from_url(step_key, "step", default, int)
    adopt_step(key, step_key)
    st.session_state[step_key] = number = min(max(st.session_state[step_key], 1), total)
    return number


def step_view(run: StepRun, key: str, keys: bool = True) -> None:
    """Mount the view; `keys`: this view answers arrow keys pressed anywhere on the page (one per page)."""
    _MOUNT(data=view_data(run, keys), key=key, on_step_change=lambda: None)
