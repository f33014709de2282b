"""Lesson 6's grammar walks, kept per reply and tool_choice so that stepping through a view never builds a grammar
or runs the model again: each reply walked token by token, the mask after a prefix, and the model's probabilities
before and after the mask at every step."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from engine.constrain.masks import inspect_mask, walk
from engine.core.prompt import render
from engine.core.tokenizer import REAL_VOCAB
from engine.core.tooldefs import load_tool_set
from engine.errors import EngineError
from engine.harness.loop import load_scenario
from engine.model.results import MaskRow
from engine.packs.panel_source import PanelSource
from ui.models import tokenizer
from ui.numbers import format_allowed
from ui.views.step_data import mask_run
from ui.views.step_view import StepRun

TOOLS = load_tool_set("strawberry")  # the lesson's two tools


@st.cache_data(show_spinner="Building the grammar…", max_entries=64)
def walked(turn_text: str, mode: str, scenario: str | None = None) -> list:
    """The reply walked through the grammar of the lesson's tools (or of `scenario`'s), one step per token."""
    return walk(load_scenario(scenario).tools if scenario else TOOLS, turn_text, mode)


@st.cache_data(show_spinner=False, max_entries=256)
def mask_at(prefix: str, mode: str) -> dict:
    """The mask after `prefix`: how many tokens it allows, a sample of them, and why."""
    view = inspect_mask(TOOLS, prefix, mode, sample_size=60)
    return {"allowed": view.allowed, "sample": view.sample, "reason": view.reason, "state": view.state}


@st.cache_data(show_spinner="Running the model over the reply…", max_entries=32)
def before_after(turn_text: str, mode: str, model: str, _engine, _panel) -> list[MaskRow]:
    """Every step's before/after top-k and forbidden mass, the rows a pack's run gives, from one forward pass
    over the prompt and the reply; kept per reply, tool_choice and model (`model`: the engine's label)."""
    from engine.model.peek import logits_at_each_position

    steps, tok = walked(turn_text, mode), tokenizer()
    reply = tok.encode(turn_text)[: len(steps)]
    logits = logits_at_each_position(_engine, render(_panel.request, _engine.tokenizer).ids, reply)
    rows = []
    for number, step in enumerate(steps, start=1):
        if step.allowed is None:
            rows.append(MaskRow(number, None))
            continue
        view = inspect_mask(TOOLS, tok.decode(reply[: number - 1]), mode, logits=logits[number - 1], top_k=_panel.top_k)
        rows.append(MaskRow.from_view(number, view))
    return rows


@dataclass(frozen=True)
class BeforeAfter:
    """The model's probabilities before and after the mask at each step of a reply, for the view's bars."""

    rows: list[MaskRow] | None  # None: none to draw (no model, nothing masked, or the model failed)
    error: EngineError | None = None  # why the model gave none (a model server returns no whole distribution)


def before_and_after(source: PanelSource, panel, turn_text: str, mode: str, masked_somewhere: bool) -> BeforeAfter:
    """Every step's before/after bars, from a pack's run or from the model (one pass per reply, cached)."""
    if source.kind == "pack":
        return BeforeAfter(source.run.mask_rows())
    if not (source.computes and masked_somewhere):
        return BeforeAfter(None)
    try:
        return BeforeAfter(before_after(turn_text, mode, source.engine.info.label(), source.engine, panel))
    except EngineError as error:
        return BeforeAfter(None, error)


def lesson_mask_run(steps: list, turn_text: str, mode: str, number: int, forbidden: str, rows) -> StepRun:
    """The reply's walk as the step view takes it, opened at step `number`: the mask each token met, and the
    model's before/after bars where there are `rows`."""
    tok = tokenizer()
    ids = tok.encode(turn_text)
    views = [mask_at(tok.decode(ids[:n]), mode) for n in range(len(steps))]
    return mask_run(
        steps, views, number, REAL_VOCAB, tok.is_special, lambda n: format_allowed(n, REAL_VOCAB), forbidden, rows, mode
    )
