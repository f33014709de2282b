"""Lesson 6: constrained decoding: the grammar's mask at each step of a call, by tool_choice mode."""

import json

import streamlit as st

from engine.core.call_formats import constrained_format, find_name_token, get_format, parse_turn
from engine.core.tokenizer import REAL_VOCAB, TOOL_CALL
from engine.harness.loop import load_scenario
from engine.teaching.panels import TOOL_CHOICES, find_panel
from ui.chart_words import chart_caption
from ui.charts import allowed_figure, allowed_legend
from ui.draw import notice
from ui.glossary import show_intro
from ui.mask_walks import TOOLS, before_and_after, lesson_mask_run, mask_at, walked
from ui.models import draw_source, panel_source, show_engine_error, tokenizer
from ui.sections import headline, more, scene
from ui.side_by_side import decoded_pair, explain_identical, show_pair
from ui.state import from_url, reset_to, style, to_url
from ui.understanding import check_understanding
from ui.views.step_view import current_step, step_view
from ui.words import LESSONS, lesson, words

ID = "constrained-decoding"
DATA = json.loads((LESSONS / f"{ID}.json").read_text(encoding="utf-8"))
MODES = list(TOOL_CHOICES)
TURNS = {t["id"]: t for t in DATA["turns"]}

text = lesson(ID)
st.title(text["title"])  # the mask at work comes first, under the title: the opening words follow
if not get_format(style()).constrained:  # one line here, the reason with the opening words
    st.warning(text["native only (short)"])

mode = from_url("constrained_decoding_tool_choice", "tool_choice", "auto", str, MODES)
turn_id = from_url("constrained_decoding_turn", "turn", "call", str, list(TURNS))
# both on one row (projected, without their labels and with smaller buttons, ui/presenter.css: the buttons name
# the modes, the box shows the reply it holds), so the view fits the first screen under the title
with st.container(key="constrained_decoding_pickers"):
    choose_mode, choose_turn = st.columns([3, 2], vertical_alignment="bottom")
    choose_mode.segmented_control(
        "tool_choice",
        MODES,
        key="constrained_decoding_tool_choice",
        required=True,
        on_change=reset_to,
        args=("constrained_decoding_step", 1),
    )
    choose_turn.selectbox(
        "The reply",
        list(TURNS),
        key="constrained_decoding_turn",
        format_func=lambda t: TURNS[t]["label"],
        on_change=reset_to,
        args=("constrained_decoding_step", 1),
    )

steps = walked(TURNS[turn_id]["text"], mode)
total = len(steps)
# projected, the view opens at the tool's name, where the grammar allows fewest tokens (a link's ?step= still wins)
name_at = find_name_token([s.token for s in steps])
number = current_step(
    "constrained_decoding_view", "constrained_decoding_step", total, projected=None if name_at is None else name_at + 1
)
to_url(tool_choice=None if mode == "auto" else mode, turn=None if turn_id == "call" else turn_id, step=number)
mask_panel = find_panel(ID, "mask", turn_id, mode)
source = panel_source(mask_panel)
# every step's before/after bars travel with the view, from a pack or from the model (one pass per reply, cached)
masked_somewhere = mode != "none" and any(s.allowed is not None for s in steps)
before = before_and_after(source, mask_panel, TURNS[turn_id]["text"], mode, masked_somewhere)
shown = lesson_mask_run(steps, TURNS[turn_id]["text"], mode, number, text["forbidden here"], before.rows)
step_view(shown, key="constrained_decoding_view")
if total < len(tokenizer().encode(TURNS[turn_id]["text"])):
    st.caption(f"The reply stops after token {total}: the grammar forbids what came next.")
if mode == "none" and any(s.id == TOOL_CALL for s in steps):
    st.warning(text["none and a call"])
# the lesson's opening words, the headline figure and how to read the view, after the view they explain
scene("What the mask does")
show_intro(ID, text["intro"])
(st.caption if get_format(style()).constrained else st.warning)(text["native only"])
# the headline figure, computed now: how many tokens the grammar allows at the tool's name
at_name = mask_at(DATA["name_prefix"], "auto")
st.metric("Tokens allowed at the tool's name", f"{at_name['allowed']} of {REAL_VOCAB:,}")
st.markdown(words(ID, "at the name", allowed=at_name["allowed"], vocab=REAL_VOCAB))
st.header("The mask, step by step")
st.markdown(words(ID, "the mask, step by step", vocab=REAL_VOCAB))
with st.expander("The four tool_choice modes", expanded=False):
    st.markdown(text["tool choice"])

scene("Tokens allowed, token by token", heading=None)
figure = allowed_figure(steps, number, REAL_VOCAB, 280)
st.plotly_chart(figure, key="constrained_decoding_allowed_chart")
allowed_legend()
chart_caption(figure, "token {}")

scene("Before and after the mask", level="subheader")
if source.kind == "pack":
    draw_source(source)
    st.markdown(text["before and after"])
elif not source.computes:
    draw_source(source, missing=text["needs the model"])
elif not masked_somewhere:
    draw_source(source)
    st.markdown("Nothing is masked in this reply, so at every step the probabilities are the model's own.")
else:
    draw_source(source)
    st.markdown(text["before and after"])
    if before.error is not None:
        show_engine_error(before.error)
        st.caption(text["before and after, none shown"])
    else:
        st.caption(text["before and after, where"])

scene("Free and constrained", "Free and constrained, side by side")
headline(text["side by side, headline"], key="constrained_decoding_pair")
more(text["side by side"], key="constrained_decoding_pair")

pair_panel = find_panel(ID, "side-by-side", mode)
both, who = decoded_pair(pair_panel, mode, text)  # from a pack, or decoded here on a click
if both:
    with st.container(key="constrained_decoding_pair_view"):  # (projected, shorter reply boxes: ui/presenter.css)
        identical = show_pair(mode, TOOLS, text, both, who)
    if identical:
        explain_identical(mode, text)  # (a screen of its own when projected)

scene("What the grammar does not do")
st.markdown(text["what it does not do"])
other = walked(TURNS["other-tool"]["text"], "auto")
st.markdown(words(ID, "wrong tool", allowed=sum(s.ok for s in other), total=len(other)))
scene("It cannot stop a cut-off", level="subheader", anchor="cut-off")
cut = load_scenario("cut-off")
cut_steps = walked(cut_text := cut.turns[constrained_format().name][cut.malformed_turn].text, "auto", "cut-off")
st.markdown(words(ID, "cut off", allowed=sum(s.ok for s in cut_steps), total=len(cut_steps)))
cut_verdict = parse_turn(cut_text, cut.tools, constrained_format().name)
st.code(cut_verdict.errors[0].error if cut_verdict.errors else "(no error)", language=None, wrap_lines=True)
st.caption(text["reported elsewhere"])

scene("What to notice", heading=None)
notice(words(ID, "what to notice", allowed=at_name["allowed"], vocab=REAL_VOCAB))
check_understanding(ID, allowed=at_name["allowed"])
