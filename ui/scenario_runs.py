"""Scripted runs of lessons/ scenarios and what is measured on them, computed once per scenario, style and policy
and kept for every page that draws them: lesson 4 and the failure gallery show the same runs."""

from __future__ import annotations

import streamlit as st

from engine.harness.loop import Run, load_scenario, run_scenario
from engine.teaching.case_cost import CaseCost, measure_case_cost
from engine.teaching.gallery import GalleryCase, GrammarCheck, check_grammar, show_gallery_case


@st.cache_resource(show_spinner=False, max_entries=64)
def scripted_run(name: str, chosen_style: str, policy: str) -> Run:
    """The scenario's script played through the harness under `policy` (its tools run in the sandbox)."""
    return run_scenario(load_scenario(name), chosen_style, policy)


def first_step(name: str) -> int:
    """Where a scenario's run opens (1-based): at the call that goes wrong, or at the first call."""
    bad = load_scenario(name).malformed_turn
    return 1 if bad is None else bad + 1


def open_at_first_step(scenario_key: str, step_key: str) -> None:
    """A scenario picker's on_change: the newly picked scenario opens at its first step (first_step)."""
    st.session_state[step_key] = first_step(st.session_state[scenario_key])


@st.cache_resource(show_spinner=False, max_entries=32)
def gallery_case(name: str, chosen_style: str) -> GalleryCase:
    """The gallery case's failing turn, read by a naive parser and by ours under both policies."""
    return show_gallery_case(load_scenario(name), chosen_style)


@st.cache_resource(show_spinner="Walking the turn through the grammar…", max_entries=16)
def grammar_check(name: str, chosen_style: str) -> GrammarCheck | None:
    """The gallery case's turn walked through the grammar, token by token (None in a style with no grammar)."""
    return check_grammar(load_scenario(name), chosen_style)


@st.cache_resource(show_spinner=False, max_entries=32)
def case_cost(name: str, chosen_style: str) -> CaseCost | None:
    """What the gallery case's failure costs (engine.teaching.case_cost)."""
    return measure_case_cost(load_scenario(name), chosen_style)
