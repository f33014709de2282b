"""The experiments page's parts: run a suite under each condition with a progress bar, the table, the chart.

The runs and every count are engine/harness/eval.py's; this module only waits for the model, draws
the progress, and lays the results and the published figures (quoted, named by source) side by side.
"""

from __future__ import annotations

import json

import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from engine.harness.eval import KINDS, EvalResult, EvalSettings, Published, csv_text, model_lock, run_suite
from ui.palette import ink, neutral
from ui.sources import load_sources
from ui.words import words

ID = "experiments"
CONDITIONS = {"free": ("auto", False), "grammar": ("auto", True), "required": ("required", False)}
# every kind of unusable block is a failure, so each is the failed colour, told apart by its pattern (and the legend)
KIND_PATTERNS = {"bad_json": "", "unknown_tool": "/", "bad_arguments": "x", "cut_off": "."}


def source_title(key: str) -> str:
    return load_sources()[key].title


def published_rows(published: list[Published]) -> list[dict]:
    """The published figures as table rows, each with its source's title."""
    return [
        {
            "source": source_title(p.source),
            "model": p.model,
            "condition": p.condition,
            "setting": p.setting,
            "figures": p.quote,
        }
        for p in published
    ]


def run_conditions(engine, suite, conditions: list[str], seeds: int, max_new_tokens: int | None) -> list[EvalResult]:
    """Each condition's eval in turn, on the model's lock (a busy model is waited for, and said to be);
    the finished runs are kept in the session as they come, so a stop keeps them."""
    from engine.model.live import eval_models

    lock = model_lock(engine)
    if not lock.acquire(blocking=False):
        waiting = st.info(words(ID, "busy"))
        while not lock.acquire(timeout=0.5):
            st.session_state.setdefault("experiments_waited", True)  # (an st call: a Stop press ends the wait)
        waiting.empty()
    try:
        settings = [
            EvalSettings(
                seeds=seeds, tool_choice=CONDITIONS[c][0], constrained=CONDITIONS[c][1], max_new_tokens=max_new_tokens
            )
            for c in conditions
        ]
        for setting in settings:
            setting.check(suite)
        total = sum(s.runs(suite) for s in settings)
        bar = st.progress(0.0, text=f"0 of {total} runs")
        done: list[EvalResult] = []
        st.session_state["experiments_results"] = done
        for setting in settings:
            make_model, note = eval_models(engine, setting.tool_choice, setting.constrained)

            def progress(result: EvalResult, setting=setting) -> None:
                ran = sum(len(r.records) for r in done) + len(result.records)
                bar.progress(ran / total, text=f"{ran} of {total} runs ({setting.condition})")
                st.session_state["experiments_partial"] = result

            result = run_suite(suite, setting, make_model, engine.info.as_json(), on_run=progress, note=note)
            st.session_state.pop("experiments_partial", None)
            done.append(result)
        bar.empty()
        return done
    finally:
        lock.release()


def totals_table(results: list[EvalResult]) -> list[dict]:
    """One row per condition: the command line's figures."""
    rows = []
    for result in results:
        data = result.as_json()
        rows.append(
            {
                "condition": result.settings.condition,
                "runs": data["runs"],
                "blocks": data["blocks"],
                "valid": data["valid"],
                **data["unusable"],
                "runs with a call": data["runs_with_call"],
                "right": data["right"],
                "tokens in": data["tokens"]["in"],
                "tokens out": data["tokens"]["out"],
                "seconds": data["seconds"],
                **({"stopped": True} if result.stopped else {}),
            }
        )
    return rows


def results_figure(results: list[EvalResult], published: list[Published]) -> go.Figure:
    """Three panels: the share of blocks valid and unusable by kind (each condition, then the published runs),
    runs that called, tokens."""
    figure = make_subplots(
        rows=1,
        cols=3,
        column_widths=[0.5, 0.25, 0.25],
        subplot_titles=("blocks: valid and unusable, by kind", "runs that called", "tokens"),
    )
    labels = [r.settings.condition for r in results]
    tallies = [r.total() for r in results]
    quoted = [p for p in published if p.blocks]
    quoted_labels = [f"{p.model.split(' ')[0]}, {p.condition} (published)" for p in quoted]
    kinds = list(KINDS) + sorted(
        {k for t in tallies for k in t.unusable if k not in KINDS}
        | {k for p in quoted for k in p.unusable if k not in KINDS}
    )

    def share(count: int | None, blocks: int | None) -> float:
        return (count or 0) / blocks if blocks else 0.0

    rows = [("valid", [t.valid for t in tallies], [p.valid for p in quoted], ink("passed"), "")]
    rows += [
        (
            k,
            [t.unusable.get(k, 0) for t in tallies],
            [p.unusable.get(k) for p in quoted],
            ink("failed"),
            KIND_PATTERNS.get(k, "+"),
        )
        for k in kinds
    ]
    blocks = [t.blocks for t in tallies] + [p.blocks for p in quoted]
    for name, ours, theirs, colour, pattern in rows:
        counts = ours + theirs
        figure.add_trace(
            go.Bar(
                name=name,
                x=labels + quoted_labels,
                y=[share(c, b) for c, b in zip(counts, blocks, strict=True)],
                marker_color=colour,
                # the hatching over the kind's colour ("overlay"): plotly's default replaces the fill with the
                # pattern alone, white lines on nothing, and the bar and its legend swatch vanish on a white page
                marker_pattern={"shape": pattern, "fgcolor": neutral("paper"), "fillmode": "overlay"},
                text=[f"{c} of {b}" if c is not None and b else "" for c, b in zip(counts, blocks, strict=True)],
                textposition="inside",
            ),
            row=1,
            col=1,
        )
    called = [(label, t.runs_with_call, t.runs) for label, t in zip(labels, tallies, strict=True)]
    called += [(f"{p.model.split(' ')[0]} (published)", p.runs_with_call, p.runs) for p in published if p.runs]
    figure.add_trace(
        go.Bar(
            name="runs with a call",
            x=[c[0] for c in called],
            y=[c[1] for c in called],
            marker_color=ink("neutral"),
            text=[f"{c[1]} of {c[2]}" for c in called],
            textposition="auto",
            showlegend=False,
        ),
        row=1,
        col=2,
    )
    spent = [
        (f"{label} {way}", n)
        for label, t in zip(labels, tallies, strict=True)
        for way, n in (("in", t.tokens_in), ("out", t.tokens_out))
    ]
    figure.add_trace(
        go.Bar(
            name="tokens",
            x=[s[0] for s in spent],
            y=[s[1] for s in spent],
            marker_color=ink("neutral"),
            showlegend=False,
        ),
        row=1,
        col=3,
    )
    # the blocks panel stacks its kinds; the other two have one trace each
    # the legend below the tokens panel's slanted labels, not over the other panels' names
    figure.update_layout(
        barmode="stack",
        height=400,
        margin=dict(t=40, b=100, l=40, r=10),
        legend=dict(orientation="h", yanchor="top", y=-0.3),
    )
    figure.update_yaxes(tickformat=".0%", range=[0, 1], row=1, col=1)
    figure.update_xaxes(type="category")
    return figure


def downloads(results: list[EvalResult], suite: str) -> None:
    """CSV (one row per condition and task) and JSON (the command line's object per condition, and every run)."""
    left, right = st.columns(2)
    left.download_button(
        "Download CSV", csv_text(results), file_name=f"{suite}-eval.csv", mime="text/csv", key="experiments_csv"
    )
    body = [{**r.as_json(), "run_records": r.runs_json()} for r in results]
    right.download_button(
        "Download JSON",
        json.dumps(body, ensure_ascii=False, indent=1),
        file_name=f"{suite}-eval.json",
        mime="application/json",
        key="experiments_json",
    )


def stop_word_scene(scene) -> None:
    """One scripted stop-word scene: the turn as written, with or without the stop word, and what the harness reads.

    Its lesson (scene.lesson) is the page's to draw: projected, the two do not fit one screen.
    """
    from engine.teaching.stop_words import cut_turn

    st.subheader(scene.title)
    st.caption(f"Scripted turn (no model); question: {scene.question}" + ("; thinking on" if scene.thinking else ""))
    use = st.toggle(f"Stop word `{scene.stop}`", key=f"experiments_stop_{scene.id}")
    cut = cut_turn(scene, use)
    st.code(cut.kept if use else cut.written, language=None, wrap_lines=True)
    if not use:
        st.warning(
            f"Nothing stops the turn: the model writes {cut.past_stop_tokens} more tokens from `{scene.stop}` on, "
            "and the harness receives all of it."
        )
    elif cut.inside_thinking:
        st.error(f"Cut inside <think>, mid-thought: {cut.past_stop_tokens} tokens never written, and no call.")
    else:
        st.success(f"Cut at the stop word: {cut.past_stop_tokens} tokens never written; the call is what is left.")
    calls = ", ".join(c.name for c in cut.parse.calls) or "none"
    st.caption(
        f"The harness reads: calls {calls}" + (f"; error: {cut.parse.errors[0].error}" if cut.parse.errors else "")
    )
