"""Lesson 6: constrained decoding: the grammar's mask at each step of a call, by tool_choice mode."""

import json

import plotly.graph_objects as go
import streamlit as st

from engine.constrain.masks import inspect_mask, walk
from engine.core.parse import parse_turn
from engine.core.prompt import Request, render
from engine.core.tokenizer import REAL_VOCAB, TOOL_CALL
from engine.core.tooldefs import load_tool_set
from engine.harness.loop import load_scenario
from ui.chart_words import chart_caption
from ui.draw import chart_layout, draw_tokens, notice, show_token
from ui.glossary import show_intro
from ui.literal import draw_reply, plural
from ui.models import TINY_LABEL, current_engine, engine_kind, model_label, tokenizer
from ui.packs import choices, current, find_replay, recorded_label
from ui.state import from_url, style, to_url
from ui.understanding import check_understanding
from ui.words import LESSONS, lesson, words

ID = "constrained-decoding"
DATA = json.loads((LESSONS / f"{ID}.json").read_text(encoding="utf-8"))
TOOLS = load_tool_set("strawberry")
MODES = ["auto", "required", "count_letter", "tokenize", "none"]
TURNS = {t["id"]: t for t in DATA["turns"]}
QUESTION = load_scenario("strawberry").messages

text = lesson(ID)
st.title(text["title"])
show_intro(ID, text["intro"])
(st.warning if style() == "react" else st.caption)(text["native only"])


@st.cache_data(show_spinner="Building the grammar…", max_entries=64)
def walked(turn_id: str, mode: str) -> list:
    return walk(TOOLS, TURNS[turn_id]["text"], mode)


@st.cache_data(show_spinner="Building the grammar…", max_entries=2)
def walked_cut(cut_text: str) -> list:
    return walk(load_scenario("cut-off").tools, cut_text, "auto")


@st.cache_data(show_spinner=False, max_entries=256)
def mask_at(prefix: str, mode: str) -> dict:
    view = inspect_mask(TOOLS, prefix, mode, sample_size=60)
    return {"allowed": view.allowed, "sample": view.sample, "reason": view.reason, "state": view.state}


def allowed_words(n: int | None) -> str:
    return "all" if n is None or n == REAL_VOCAB else f"{n:,}"


def move(by: int, last: int) -> None:
    st.session_state["cd_step"] = min(max(st.session_state["cd_step"] + by, 1), last)


def reset_step() -> None:
    st.session_state["cd_step"] = 1


def bars(rows, title: str, key: str) -> None:
    labels = [show_token(r.token) or "∅" for r in rows]
    figure = go.Figure(go.Bar(x=[r.p for r in rows], y=labels, orientation="h", marker_color="#4a90d9",
                              text=[f"{r.p * 100:.3g}%" for r in rows], textposition="auto"))
    chart_layout(figure, 320, title, yaxis={"autorange": "reversed", "type": "category"}, xaxis={"showticklabels": False})
    st.plotly_chart(figure, key=key)
    chart_caption(figure)


# -- the headline figure, computed now ----------------------------------------------------------
at_name = mask_at(DATA["name_prefix"], "auto")
st.metric("Tokens allowed at the tool's name", f"{at_name['allowed']} of {REAL_VOCAB:,}")
st.markdown(words(ID, "at the name", allowed=at_name["allowed"], vocab=REAL_VOCAB))

# -- the mask, step by step -----------------------------------------------------------------------
st.header("The mask, step by step")
st.markdown(words(ID, "the mask, step by step", vocab=REAL_VOCAB))
with st.expander("The four tool_choice modes", expanded=False):
    st.markdown(text["tool choice"])
mode = from_url("cd_tool_choice", "tool_choice", "auto", str, MODES)
turn_id = from_url("cd_turn", "turn", "call", str, list(TURNS))
# one control per row: five tool_choice buttons beside a select box do not fit a 1024 px projector
st.segmented_control("tool_choice", MODES, key="cd_tool_choice", required=True, on_change=reset_step)
st.selectbox("The reply", list(TURNS), key="cd_turn", format_func=lambda t: TURNS[t]["label"], on_change=reset_step)

steps = walked(turn_id, mode)
total = len(steps)
number = from_url("cd_step", "step", 1, int)
if not 1 <= number <= total:
    st.session_state["cd_step"] = number = min(max(number, 1), total)
to_url(tool_choice=None if mode == "auto" else mode, turn=None if turn_id == "call" else turn_id, step=number)

back, slider, forward = st.columns([2, 7, 2], vertical_alignment="bottom")
with back:
    st.button("◀ Back", key="cd_prev", on_click=move, args=(-1, total), disabled=number <= 1, shortcut="Left", width="stretch")
with forward:
    st.button("Next ▶", key="cd_next", on_click=move, args=(1, total), disabled=number >= total, shortcut="Right",
              width="stretch", type="primary")
with slider:
    st.slider("Token", 1, max(total, 2), key="cd_step", format="token %d", disabled=total < 2)

tok = tokenizer()
draw_tokens(
    [(s.id, s.token) for s in steps], show_ids=False, current=number - 1,
    extra=[("✗" if not s.ok else ("all · no call" if mode == "none" and s.id == TOOL_CALL else allowed_words(s.allowed)))
           for s in steps],
    special=[tok.is_special(s.id) for s in steps],
)
if total < len(tok.encode(TURNS[turn_id]["text"])):
    st.caption(f"The reply stops after token {total}: the grammar forbids what came next.")

if mode == "none" and any(s.id == TOOL_CALL for s in steps):
    st.warning(text["none and a call"])
step = steps[number - 1]
ids = tok.encode(TURNS[turn_id]["text"])
prefix = tok.decode(ids[: number - 1])
view = mask_at(prefix, mode)
count, sample = st.columns([1, 2])
with count:
    st.metric(f"Allowed before token {number}", f"{allowed_words(step.allowed)} of {REAL_VOCAB:,}")
    st.caption(view["reason"])
with sample:
    if step.allowed is None:
        st.markdown("Nothing is restricted at this step: every token may come next.")
    else:
        shown = view["sample"]
        more = f" (the first {len(shown)} of {step.allowed:,})" if step.allowed > len(shown) else ""
        st.markdown(f"**The allowed tokens{more}:**")
        draw_tokens([(0, t) for t in shown], show_ids=False)
if not step.ok:
    st.error(text["forbidden here"])

figure = go.Figure(go.Bar(
    x=list(range(1, total + 1)), y=[REAL_VOCAB if s.allowed is None else s.allowed for s in steps],
    marker_color=["#d62728" if n == number else ("#bbbbbb" if s.allowed is None else "#4a90d9") for n, s in enumerate(steps, 1)],
    hovertext=[s.token for s in steps],
))
# fixed axes: powers of ten from 1 to the whole vocabulary, and room for at least 12 bars (one bar must not fill the chart)
chart_layout(figure, 280, yaxis={"type": "log", "title": "tokens allowed", "range": [-0.4, 5.6],
                                   "tickvals": [10**k for k in range(6)], "ticktext": [f"{10**k:,}" for k in range(6)]},
             xaxis={"title": "token of the reply", "dtick": 1 if total <= 40 else 5, "range": [0.4, max(total, 12) + 0.6]},
             bargap=0.25)
st.plotly_chart(figure, key="cd_allowed_chart")
chart_caption(figure, "token {}")

# -- probabilities before and after the mask -----------------------------------------------------
st.subheader("Before and after the mask")
engine = current_engine()
question_ids = render(Request(QUESTION, TOOLS, "native"), tok).ids
replay = find_replay(f"lesson6-mask-{turn_id}-{mode}") if engine is None else None
if replay is not None:
    recorded_label(replay)
    if current(replay, question_ids + ids, "this reply"):
        row = next((r for r in replay.run.data["steps"] if r["number"] == number), {"allowed": None})
        if row["allowed"] is None:
            st.markdown("Nothing is masked at this step, so the probabilities are the model's own.")
        else:
            st.markdown(text["before and after"])
            st.metric("Probability the model put on forbidden tokens", f"{row['forbidden_mass']:.2%}")
            before, after = st.columns(2)
            with before:
                bars(choices(row["top_before"]), "before: the model's own top 8", "cd_before")
            with after:
                bars(choices(row["top_after"]), "after: renormalised over the allowed", "cd_after")
elif engine is None:
    st.info(text["needs the model"])
elif mode == "none" or step.allowed is None:
    model_label(engine_kind(engine), engine)
    st.markdown("Nothing is masked at this step, so the probabilities are the model's own.")
else:
    from engine.model.peek import next_logits

    model_label(engine_kind(engine), engine)
    st.markdown(text["before and after"])
    prompt = render(Request(QUESTION, TOOLS, "native"), engine.tokenizer)
    masked = inspect_mask(TOOLS, prefix, mode, logits=next_logits(engine, prompt.ids + ids[: number - 1]), top_k=8)
    st.metric("Probability the model put on forbidden tokens", f"{masked.forbidden_mass:.2%}")
    before, after = st.columns(2)
    with before:
        bars(masked.top_before, "before: the model's own top 8", "cd_before")
    with after:
        bars(masked.top_after, "after: renormalised over the allowed", "cd_after")

# -- constrained vs unconstrained on the same prompt and seed --------------------------------------
st.header("Free and constrained, side by side")
st.markdown(text["side by side"])


def show_pair(turns: dict, who: str | None, limit: int = 48) -> None:
    """The free and the constrained turn in two columns, each with its verdict; `who` labels each reply."""
    for column, (label, (said, finish)) in zip(st.columns(2), turns.items(), strict=True):
        with column:
            st.markdown(f"**{label}** ({'no grammar' if label == 'free' or mode == 'none' else 'tool_choice ' + mode})")
            draw_reply(said, who)
            verdict = parse_turn(said, TOOLS, "native")
            ended = f"hit the token limit ({plural(limit, 'token')})" if finish == "length" else "stopped by itself"
            if mode == "none" and label == "constrained":
                st.markdown(f"tool_choice none: the reply is not read for calls; it comes back as text. It {ended}.")
            elif verdict.final:
                st.markdown(f"No call: a prose reply. It {ended}.")
            else:
                errors = "; ".join(e.error for e in verdict.errors) if verdict.errors else ""
                st.markdown(f"Calls that pass every check: **{len(verdict.calls)}**. It {ended}." + (f" Errors: `{errors}`" if errors else ""))
                if finish == "length" and not verdict.calls:
                    st.warning(text["cut off in decode both"])
    if len({said for said, _ in turns.values()}) == 1 and mode != "none":  # same seed, same tokens: say why
        st.info(text["identical" if mode == "auto" else "identical forced"])


pair = find_replay(f"lesson6-pair-{mode}") if engine is None else None
if pair is not None:
    recorded_label(pair)
    if current(pair, question_ids, "this question"):
        show_pair({k: (pair.run.data[v]["text"], pair.run.data[v]["finish"]) for k, v in (("free", "unconstrained"), ("constrained", "constrained"))}, None)
elif engine is None:
    st.info(text["side by side needs the model"])
else:
    from engine.core.generation import GenerationSettings
    from engine.model.live import side_by_side
    model_label(engine_kind(engine), engine)
    settings = GenerationSettings(max_new_tokens=48, temperature=0.7, seed=0, top_k=0)
    st.caption(f"Sampled at temperature {settings.temperature}, seed {settings.seed}, up to {settings.max_new_tokens} tokens.")
    if st.button("Decode both", key="cd_generate", type="primary"):
        with st.spinner("Decoding the reply twice, free and constrained…"):
            both = side_by_side(engine, Request(QUESTION, TOOLS, "native"), mode, settings)
        st.session_state["cd_pair"] = (engine.info.label(), mode, {"free": both.unconstrained, "constrained": both.constrained})
    stored = st.session_state.get("cd_pair")
    if stored and stored[0] == engine.info.label() and stored[1] == mode:
        show_pair({label: (g.text, g.finish) for label, g in stored[2].items()}, f"Tiny model, {TINY_LABEL}" if engine.info.random_weights else engine.info.label())

# -- what the constraint does not do ---------------------------------------------------------------
st.header("What the grammar does not do")
st.markdown(text["what it does not do"])
other = walked("other-tool", "auto")
st.markdown(words(ID, "wrong tool", allowed=sum(s.ok for s in other), total=len(other)))
st.subheader("It cannot stop a cut-off", anchor="cut-off")
cut = load_scenario("cut-off")
cut_text = cut.turns["native"][cut.malformed_turn].text
cut_steps = walked_cut(cut_text)
st.markdown(words(ID, "cut off", allowed=sum(s.ok for s in cut_steps), total=len(cut_steps)))
cut_verdict = parse_turn(cut_text, cut.tools, "native")
st.code(cut_verdict.errors[0].error if cut_verdict.errors else "(no error)", language=None, wrap_lines=True)
st.caption(text["seed 003"])

notice(words(ID, "what to notice", allowed=at_name["allowed"], vocab=REAL_VOCAB))
check_understanding(ID, allowed=at_name["allowed"])
