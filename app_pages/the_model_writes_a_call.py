"""Lesson 3: a call is tokens the model chose one at a time, each with a probability."""

import plotly.graph_objects as go
import streamlit as st

from engine.core.parse import find_name_token
from engine.core.prompt import Request, render
from engine.core.tokenizer import IM_END
from engine.harness.loop import load_scenario
from ui.chart_words import chart_caption
from ui.draw import chart_layout, draw_tokens, notice, show_token
from ui.glossary import show_intro
from ui.models import TINY_LABEL, model_label, model_source, no_model_box, tokenizer
from ui.packs import current
from ui.state import from_url, style, to_url
from ui.stream import TokenStream
from ui.understanding import check_understanding
from ui.words import lesson

text = lesson("the-model-writes-a-call")
tok = tokenizer()
st.title(text["title"])
show_intro("the-model-writes-a-call", text["intro"])
scenario = load_scenario("strawberry")
st.markdown(f"> {scenario.messages[0]['content']}")

# -- where the tokens come from: a model, a recorded run, or the scripted call's tokens -------------------
kind, source = model_source(f"the-model-writes-a-call-{style()}", f"lesson3-{style()}")
model_label(kind, source)
steps = None  # rows of (id, token, p, top) when a model or a recording made them
if kind in ("live", "random"):
    made = st.session_state.get("call_generation")
    wanted = (source.info.label(), style())
    if st.button("Generate the call", key="call_generate", type="primary"):
        from engine.core.generation import GenerationSettings
        from engine.model.live import generate_turn

        stream = TokenStream(is_special=tok.is_special)
        settings = GenerationSettings(max_new_tokens=40 if kind == "random" else 80, top_k=8)
        generation = generate_turn(source, Request(scenario.messages, scenario.tools, style()), settings, on_step=stream.add)
        stream.clear()  # the step-through strip below shows every token
        made = {"key": wanted, "steps": generation.steps}
        st.session_state["call_generation"] = made
        st.session_state["call_step"] = 1
    if made and made["key"] == wanted:
        steps = [(s.id, s.token, s.p, s.top) for s in made["steps"]]
elif kind == "trace":
    steps = [(s.id, s.token, s.p, s.top) for s in source.steps]
elif kind == "pack" and current(source, render(Request(scenario.messages, scenario.tools, style()), tok).ids, "the call"):
    steps = [(s.id, s.token, s.p, s.top) for s in source.run.steps]

if steps is None:
    st.header("The call")
    st.markdown(text["the call" if style() == "native" else "the call (react)"])
    call = scenario.turns[style()][0].text
    st.code(call, language=None, wrap_lines=True)
    pieces = tok.encode_and_show_work(call)
    rows = [(p.id, p.text, None, None) for p in pieces] + [(IM_END, tok.token_text(IM_END), None, None)]
    if kind == "none":
        no_model_box()
    st.markdown(text["not generated yet" if kind in ("live", "random") else "no probabilities"])
else:
    rows = steps

# -- step through it ------------------------------------------------------------------------------------------
st.header("Step through")
st.markdown(text["step through"])
# tokens are numbered from 1, as on lessons 4 and 6
last = len(rows)
from_url("call_step", "step", 1, int)
st.session_state["call_step"] = min(max(st.session_state["call_step"], 1), last)


def move(delta: int) -> None:
    st.session_state["call_step"] = max(1, min(last, st.session_state["call_step"] + delta))


def jump(where: int) -> None:
    st.session_state["call_step"] = where


name_at = find_name_token([r[1] for r in rows], style())

controls = st.columns([1, 1, 2, 2, 2])
controls[0].button("◀ Back", key="call_prev", on_click=move, args=(-1,), width="stretch", shortcut="Left")
controls[1].button("Next ▶", key="call_next", on_click=move, args=(1,), width="stretch", shortcut="Right")
controls[2].number_input("Token number", 1, last, key="call_step")
controls[3].button("First token", key="call_first", on_click=jump, args=(1,), width="stretch")
if name_at is not None:
    controls[4].button("First token of the name", key="call_name", on_click=jump, args=(name_at + 1,), width="stretch")
step = st.session_state["call_step"]
to_url(step=step)

token_id, token, p, top = rows[step - 1]
draw_tokens([(r[0], r[1]) for r in rows], current=step - 1, special=[tok.is_special(r[0]) for r in rows])
facts, chart = st.columns([1, 2], gap="large")
facts.metric(f"Token {step} of {last}", show_token(token) or "(empty)")
facts.caption(f"id {token_id}")
if p is not None:
    facts.metric("Its probability", f"{p:.1%}" if p >= 0.001 else f"{p:.2e}")
    if kind == "random":
        facts.caption(TINY_LABEL)
    labels = [show_token(a.token) or "(empty)" for a in reversed(top)]
    figure = go.Figure(
        go.Bar(
            x=[a.p for a in reversed(top)], y=labels, orientation="h",
            marker_color=["#d62728" if a.id == token_id else "#9ecae1" for a in reversed(top)],
            text=[(f"{a.p:.1%}" if a.p >= 0.001 else f"{a.p:.1e}") + (" (chosen)" if a.id == token_id else "") for a in reversed(top)],
            textposition="auto",
        )
    )
    chart_layout(figure, 80 + 42 * len(top), f"Top {len(top)} candidates at token {step} (red: the one chosen)",
                 xaxis_title="probability")
    chart.plotly_chart(figure, width="stretch")
    chart_caption(figure, where=chart)
else:
    chart.markdown(text["decisive moments" if style() == "native" else "decisive moments (react)"])

notice(text["what to notice"])
check_understanding("the-model-writes-a-call")
