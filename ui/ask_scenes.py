"""Lesson 3's hands-on scenes: the question box and sampling controls, the what-if picker, and the step view's
two charts per step (as the model gave it, what the draw picked from). The runs and their state are ui/ask.py's."""

from __future__ import annotations

import dataclasses

import streamlit as st

from engine.core.markdown_text import escape_markdown
from engine.harness.loop import load_scenario
from engine.packs.panel_source import PanelSource
from ui.ask import KEY, LESSON, MAX_QUESTION_CHARS, Run, ask, candidates, current_run, forget, sample, what_if
from ui.draw import show_token
from ui.model_status import choice_label
from ui.numbers import format_percent
from ui.views.step_view import Bar, Bars, StepRun
from ui.words import words


def with_before_after(view: StepRun, run: Run) -> StepRun:
    """The step view's run with each sampled step's two charts: as the model gave it, and what the draw picked from."""
    s = run.settings
    top_k = s.sample_top_k or "off"
    after_title = words(LESSON, "after title", temperature=f"{s.temperature:g}", top_k=top_k, top_p=f"{s.top_p:g}")
    steps = []
    for n, (step, sampled) in enumerate(zip(view.steps, run.sampled, strict=True), start=1):
        if sampled is None:
            if run.swap is not None and n == run.swap.at:
                # the swapped-in token is not the model's pick: its bar says so, not "(chosen)"
                said = f"{format_percent(run.swap.token.p)} (swapped in)"
                bars = [
                    dataclasses.replace(
                        b, rows=[dataclasses.replace(r, text=said if r.chosen else r.text) for r in b.rows]
                    )
                    for b in step.bars
                ]
                step = dataclasses.replace(step, bad=words(LESSON, "swapped here"), bars=bars)
            steps.append(step)
            continue
        drawn = run.rows[n - 1][0]
        bars = [
            Bars(title, [Bar(show_token(a.token) or "(empty)", a.p, a.id == drawn) for a in side])
            for title, side in ((words(LESSON, "before title"), sampled.before), (after_title, sampled.after))
        ]
        facts = [
            (words(LESSON, "p before"), format_percent(sampled.drawn_before)),
            (words(LESSON, "p after"), format_percent(sampled.drawn_after)),
            (words(LESSON, "kept"), f"{sampled.kept:,}"),
        ]
        steps.append(dataclasses.replace(step, facts=facts, bars=bars))
    marks = list(view.marks) + ([(words(LESSON, "swapped mark"), run.swap.at)] if run.swap else [])
    # two charts side by side need the view's width: the facts go above them, not beside
    return dataclasses.replace(view, steps=steps, marks=marks, wide=any(s is not None for s in run.sampled))


def run_words(run: Run) -> str:
    """The lines above the step view that say what it shows: the question, and a swapped-in token."""
    own = run.question == load_scenario("strawberry").messages[-1]["content"]  # the lesson's own question
    lines = [f"> {run.question}" if own else words(LESSON, "asked", question=escape_markdown(run.question))]
    if run.swap is not None:
        lines.append(
            words(
                LESSON,
                "swapped",
                token=escape_markdown(show_token(run.swap.token.token)),
                p=format_percent(run.swap.token.p),
                was=escape_markdown(show_token(run.swap.was)),
                at=run.swap.at,
            )
        )
    return "\n\n".join(lines)


def needs_model(source: PanelSource, short: bool = False) -> str:
    """What the page says where no model can run: why, and which sidebar choice gives one (`short`: said again)."""
    name = (
        "needs the model again" if short else "needs the model (pack)" if source.kind == "pack" else "needs the model"
    )
    return words(LESSON, name, shipped=choice_label("builtin", ""))


def own_question(source: PanelSource, style: str, tokenizer) -> None:
    """The question box and the sampling controls; Enter in the box, or Ask, runs the model (ui/ask.py `ask`).
    With no model: what asking needs, and the sidebar's choice that gives it."""
    if not source.computes:
        st.info(needs_model(source))
        return
    st.markdown(words(LESSON, "your own question"))
    with st.form(f"{KEY}_ask_form", border=False):
        st.text_input(
            words(LESSON, "question label"),
            key=f"{KEY}_question",
            max_chars=MAX_QUESTION_CHARS,
            placeholder=words(LESSON, "question placeholder"),
        )
        temperature, k, p, seed = st.columns(4)
        temperature.slider(
            "Temperature", 0.0, 2.0, 0.0, 0.1, key=f"{KEY}_temperature", help=words(LESSON, "temperature help")
        )
        k.slider("Top-k", 0, 50, 0, key=f"{KEY}_top_k", help=words(LESSON, "top-k help"))
        p.slider("Top-p", 0.05, 1.0, 1.0, 0.05, key=f"{KEY}_top_p", help=words(LESSON, "top-p help"))
        seed.number_input("Seed", 0, 9999, 0, key=f"{KEY}_seed", help=words(LESSON, "seed help"))
        st.form_submit_button("Ask", type="primary", on_click=ask, args=(source, style, tokenizer))
    problem_line()
    run = current_run(source, style)
    if run is not None:
        # what the model wrote, here too: projected, the step view is on the lesson's first screen (the caption and
        # the way back share a row, so the screen still fits 1024x768 with the answer under the box)
        said, back = st.columns([3, 1], vertical_alignment="center")
        said.caption(words(LESSON, "wrote", tokens=len(run.rows)))
        back.button(words(LESSON, "back label"), key=f"{KEY}_back", on_click=forget)
        st.code(run.text, language=None, wrap_lines=True)


def what_if_picker(source: PanelSource, base: Run | None, at: int) -> None:
    """At the step the view shows: the model's other candidates there, and a button that makes it write on from one."""
    st.markdown(words(LESSON, "what if"))
    if not source.computes:
        st.caption(needs_model(source, short=True))
        return
    if base is None:
        st.caption(words(LESSON, "no run yet"))
        return
    options = candidates(base.rows, at)
    if not options:
        st.caption(words(LESSON, "no candidates", at=at))
        return
    pick = st.selectbox(
        words(LESSON, "what if label", at=at, token=escape_markdown(show_token(base.rows[at - 1][1]))),
        options,
        format_func=lambda a: f"{show_token(a.token) or '(empty)'}   {format_percent(a.p)}",
        key=f"{KEY}_what_if_{at}",
    )
    st.button(words(LESSON, "what if button"), key=f"{KEY}_what_if_go", on_click=what_if, args=(source, base, at, pick))
    problem_line("what_if_problem")


def problem_line(name: str = "problem") -> None:
    """The last run's problem (a question too long; with "what_if_problem", a token that cannot begin a turn), if any."""
    problem = st.session_state.get(f"{KEY}_{name}")
    if problem:
        st.warning(problem)


def sampled_calls(source: PanelSource, style: str, run: Run | None) -> None:
    """How often a sampled call breaks with the grammar off: a number of turns to sample, a button, and the count."""
    from engine.teaching.sampled_calls import MAX_SAMPLES

    st.markdown(words(LESSON, "malformed"))
    if not source.computes:
        st.caption(needs_model(source, short=True))
        return
    count, press = st.columns([1, 2], vertical_alignment="bottom")
    count.number_input(words(LESSON, "samples label"), 2, MAX_SAMPLES, 10, key=f"{KEY}_samples")
    press.button(words(LESSON, "malformed button"), key=f"{KEY}_sample", on_click=sample, args=(source, style, run))
    result = st.session_state.get(f"{KEY}_sampled")
    if isinstance(result, str):
        st.info(result)
    elif result is not None:
        question, counted = result
        s = counted.settings
        kinds = ", ".join(f"{kind.replace('_', ' ')} {n}" for kind, n in sorted(counted.kinds.items())) or "none"
        st.markdown(
            words(
                LESSON,
                "malformed result",
                malformed=counted.malformed,
                samples=counted.samples,
                low=format_percent(counted.low),
                high=format_percent(counted.high),
                valid=counted.valid,
                no_call=counted.no_call,
                kinds=kinds,
                temperature=f"{s.temperature:g}",
                top_p=f"{s.top_p:g}",
                first=s.seed,
                last=s.seed + counted.samples - 1,
                question=escape_markdown(question),
                seconds=f"{counted.seconds:.0f}",
            )
        )
        if counted.example is not None:
            st.code(counted.example, language=None, wrap_lines=True)
