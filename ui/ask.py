"""Lesson 3's hands-on runs: a learner's own question under sampling settings, and "what if it had picked this token".

The page draws (with ui/ask_scenes.py); this module keeps the state and runs the model. A run is made in a widget's callback
(before the script draws anything), so the step view near the top of the page already shows it on the
same rerun, wherever the form sits. The engine does the work: engine/model/live.py's generate_turn
(its `prefix` for a what-if) and engine/model/sampling.py's before/after distributions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import streamlit as st

from engine.core.generation import Alternative, Generation, GenerationSettings
from engine.core.markdown_text import escape_markdown
from engine.core.prompt import Request, render
from engine.core.tokenizer import END_OF_TEXT, IM_END
from engine.errors import EngineError
from engine.harness.loop import load_scenario
from engine.packs.panel_source import PanelSource
from ui.models import is_server
from ui.words import words

LESSON = "the-model-writes-a-call"
KEY = "the_model_writes_a_call"  # the page's widget keys start with it
RUN = f"{KEY}_asked"  # this session's Run, if the learner made one
MAX_QUESTION_CHARS = 200  # a question, not a document (the box refuses more)
MAX_QUESTION_TOKENS = 60  # a question of 200 characters of odd Unicode can cut into many tokens
MAX_NEW_TOKENS = 80  # the lesson's own call takes about 30


@dataclass(frozen=True)
class Swap:
    """The token a learner put in place of the model's at one step."""

    at: int  # the step, from 1
    token: Alternative  # the candidate put in (its p: as the model gave it there)
    was: str  # the token the model had picked


@dataclass
class Run:
    """What the step view shows after a learner's action: rows as token_run takes them, and each row's before/after."""

    question: str  # the question the model answered (the lesson's own, when the box was left empty)
    request: Request
    settings: GenerationSettings
    rows: list[tuple]  # (id, token, p, top) per step, as ui/views/step_data.token_run takes them
    sampled: list  # per row: engine.model.sampling.SamplingStep, or None (a server's model, a swapped-in token)
    text: str  # the whole turn
    made_with: tuple[str, str]  # (the source's label, the style): a run made with another model is not shown
    swap: Swap | None = None


# -- what the controls hold --------------------------------------------------------------------------------------
def sampling_settings(base: GenerationSettings) -> GenerationSettings:
    """`base` with the controls' last submitted values (the lesson's own settings before any)."""
    state = st.session_state
    return dataclasses.replace(
        base,
        max_new_tokens=min(base.max_new_tokens, MAX_NEW_TOKENS),
        temperature=float(state.get(f"{KEY}_temperature", base.temperature)),
        sample_top_k=int(state.get(f"{KEY}_top_k", base.sample_top_k)),
        top_p=float(state.get(f"{KEY}_top_p", base.top_p)),
        seed=int(state.get(f"{KEY}_seed", base.seed)),
    )


def question_problem(question: str, tokenizer) -> str | None:
    """Why a question cannot be asked as it is, or None."""
    if len(question) > MAX_QUESTION_CHARS:
        return words(LESSON, "question too long", limit=MAX_QUESTION_CHARS, unit="characters")
    if len(tokenizer.encode(question)) > MAX_QUESTION_TOKENS:
        return words(LESSON, "question too long", limit=MAX_QUESTION_TOKENS, unit="tokens")
    return None


def current_run(source: PanelSource, style: str) -> Run | None:
    """The learner's run, if they made one with this model in this style."""
    run = st.session_state.get(RUN)
    return run if run is not None and run.made_with == (source.label, style) else None


# -- running the model (callbacks: they run before the page draws) ---------------------------------------------------
def with_sampling(engine, prompt_ids: list[int], generation: Generation) -> list:
    """Each step's before/after (engine/model/sampling.py), or None per step where the model is a server's."""
    if is_server(engine):
        return [None] * len(generation.steps)
    from engine.model.sampling import sampling_steps

    return sampling_steps(engine, prompt_ids, [s.id for s in generation.steps], generation.settings)


def ask(source: PanelSource, style: str, tokenizer) -> None:
    """The form's callback: the model writes its turn for the box's question with the lesson's tools."""
    from engine.model.live import generate_turn

    question = (st.session_state.get(f"{KEY}_question") or "").strip()
    problem = question_problem(question, tokenizer)
    st.session_state[f"{KEY}_problem"] = problem
    if problem:
        return
    scenario = load_scenario("strawberry")
    # the lesson's messages with the learner's question in place of its own (an empty box: the lesson's own)
    asked = question or scenario.messages[-1]["content"]
    request = Request([*scenario.messages[:-1], {"role": "user", "content": asked}], scenario.tools, style)
    settings = sampling_settings(source.panel.generation_for(source.engine.info.random_weights))
    try:
        with st.spinner(words(LESSON, "writing")):
            generation = generate_turn(source.engine, request, settings)
            sampled = with_sampling(source.engine, render(request, source.engine.tokenizer).ids, generation)
    except EngineError as error:
        st.session_state[f"{KEY}_problem"] = escape_markdown(str(error))
        return
    rows = [(s.id, s.token, s.p, s.top) for s in generation.steps]
    st.session_state[RUN] = Run(asked, request, settings, rows, sampled, generation.text, (source.label, style))
    st.session_state[f"{KEY}_step"] = 1


def forget() -> None:
    """Back to the lesson's own run."""
    st.session_state.pop(RUN, None)
    st.session_state.pop(f"{KEY}_problem", None)
    st.session_state.pop(f"{KEY}_what_if_problem", None)
    st.session_state[f"{KEY}_step"] = 1


def what_if(source: PanelSource, base: Run, at: int, candidate: Alternative) -> None:
    """The what-if button's callback: the turn begun with the steps before `at` and `candidate` in place of the model's
    token there; the model writes the rest (generate_turn's prefix, as `generate --prefix` does)."""
    from engine.model.live import generate_turn

    tok = source.engine.tokenizer
    ids = [row[0] for row in base.rows[: at - 1]] + [candidate.id]
    try:
        # the turn's opening words as text: a token that is half of a character cannot begin one
        prefix = b"".join(tok.token_bytes(i) for i in ids).decode("utf-8")
        with st.spinner(words(LESSON, "writing")):
            generation = generate_turn(source.engine, base.request, base.settings, prefix=prefix)
            read = generation.extra["prefix"]["ids"]
            prompt_ids = render(base.request, tok).ids + read
            sampled = with_sampling(source.engine, prompt_ids, generation)
    except UnicodeDecodeError:
        st.session_state[f"{KEY}_what_if_problem"] = words(LESSON, "half a character")
        return
    except EngineError as error:
        st.session_state[f"{KEY}_what_if_problem"] = escape_markdown(str(error))
        return
    # the prefix as the model read it: the run's own rows when its text cut into the same tokens, else plain tokens
    if read == ids:
        swapped = (candidate.id, candidate.token, candidate.p, base.rows[at - 1][3])
        before, before_sampled = [*base.rows[: at - 1], swapped], [*base.sampled[: at - 1], None]
    else:
        before = [(i, tok.token_text(i), None, None) for i in read]
        before_sampled = [None] * len(read)
    rows = before + [(s.id, s.token, s.p, s.top) for s in generation.steps]
    swap = Swap(at, candidate, base.rows[at - 1][1])
    st.session_state[RUN] = Run(
        base.question,
        base.request,
        base.settings,
        rows,
        before_sampled + sampled,
        generation.text,
        base.made_with,
        swap,
    )
    st.session_state[f"{KEY}_what_if_problem"] = None
    st.session_state[f"{KEY}_step"] = min(at, len(rows))


def candidates(run_rows: list[tuple], at: int) -> list[Alternative]:
    """The model's other candidates at step `at` that a turn can go on after (not the tokens that end it)."""
    if not 1 <= at <= len(run_rows) or not run_rows[at - 1][3]:
        return []
    chosen = run_rows[at - 1][0]
    return [a for a in run_rows[at - 1][3] if a.id != chosen and a.id not in (IM_END, END_OF_TEXT)]


def lesson_run(source: PanelSource, style: str, generation: Generation | None) -> Run | None:
    """The lesson's own generated call as a Run, the base of a what-if before the learner asked anything (None: the
    model has not written it yet)."""
    if generation is None:
        return None
    scenario = load_scenario("strawberry")
    rows = [(s.id, s.token, s.p, s.top) for s in generation.steps]
    request = source.panel.request
    return Run(
        scenario.messages[-1]["content"],
        request,
        generation.settings,
        rows,
        [None] * len(rows),
        generation.text,
        (source.label, style),
    )


def sample(source: PanelSource, style: str, run: Run | None) -> None:
    """The estimate button's callback: sample the box's number of turns at the controls' settings, grammar off, and
    count the malformed calls (engine/teaching/sampled_calls.py)."""
    from engine.teaching.sampled_calls import sample_calls

    request = run.request if run is not None else source.panel.request
    settings = sampling_settings(source.panel.generation_for(source.engine.info.random_weights))
    samples = int(st.session_state.get(f"{KEY}_samples", 10))
    if settings.temperature == 0:
        st.session_state[f"{KEY}_sampled"] = words(LESSON, "greedy samples")
        return
    try:
        with st.spinner(words(LESSON, "sampling", samples=samples)):
            counted = sample_calls(source.engine, request, settings, samples)
    except EngineError as error:
        st.session_state[f"{KEY}_sampled"] = escape_markdown(str(error))
        return
    question = run.question if run is not None else load_scenario("strawberry").messages[-1]["content"]
    st.session_state[f"{KEY}_sampled"] = (question, counted)
