"""Lesson 3: a call is tokens the model chose one at a time, each with a probability."""

import streamlit as st

from engine.core.call_formats import find_name_token, get_format
from engine.core.tokenizer import IM_END, REAL_VOCAB, TOOL_CALL, TOOL_CALL_END
from engine.harness.loop import load_scenario
from engine.settings import BUILTIN
from engine.teaching.panels import find_panel
from engine.teaching.quiz import word_pieces
from ui import ask, ask_scenes
from ui.draw import notice
from ui.glossary import show_intro
from ui.models import TINY_LABEL, draw_source, panel_source, tokenizer
from ui.sections import scene
from ui.state import style, to_url
from ui.stream import TokenStream
from ui.understanding import check_understanding
from ui.views.step_data import token_run
from ui.views.step_view import current_step, step_view
from ui.words import for_format, lesson, words

text = lesson("the-model-writes-a-call")
tok = tokenizer()
st.title(text["title"])
show_intro("the-model-writes-a-call", text["intro"])
scenario = load_scenario("strawberry")

# -- where the tokens come from: a model, a recorded run, or the scripted call's tokens -------------------
panel = find_panel("the-model-writes-a-call", "call", style())
source = panel_source(panel)
kind = source.kind
run = ask.current_run(source, style()) if source.computes else None  # the learner's own question, or a what-if
st.markdown(ask_scenes.run_words(run) if run else f"> {scenario.messages[0]['content']}")
if kind != "none":
    draw_source(source)
generation = None  # the call as a model or a recording made it
if source.computes:
    made = st.session_state.get("the_model_writes_a_call_generation")
    wanted = (source.label, style())
    # the shipped model writes its call in well under a second: a first visit sees it without pressing anything
    shipped = source.engine.info.name == BUILTIN
    pressed = not shipped and st.button("Generate the call", key="the_model_writes_a_call_generate", type="primary")
    if pressed or (not (made and made["key"] == wanted) and shipped):
        from engine.model.live import generate_turn

        stream = TokenStream(is_special=tok.is_special)
        settings = panel.generation_for(source.engine.info.random_weights)
        generation = generate_turn(source.engine, panel.request, settings, on_step=stream.add)
        stream.clear()  # the step-through strip below shows every token
        made = {"key": wanted, "generation": generation}
        st.session_state["the_model_writes_a_call_generation"] = made
        st.session_state["the_model_writes_a_call_step"] = 1
    generation = made["generation"] if made and made["key"] == wanted else None
elif kind == "pack":
    generation = source.run.generation()
steps = None if generation is None else [(s.id, s.token, s.p, s.top) for s in generation.steps]
steps = run.rows if run else steps


@st.cache_data(show_spinner="Building the tools' grammar…", max_entries=4)
def grammar_counts(call: str) -> list[tuple[int, int | None]]:
    """At each token of the scripted call and its closing <|im_end|>: (id, how many tokens the tools' grammar
    allows there), lesson 6's walk under tool_choice auto (None: nothing restricted). Needs no weights."""
    from engine.constrain.masks import walk

    return [(s.id, s.allowed) for s in walk(load_scenario("strawberry").tools, call + tok.token_text(IM_END), "auto")]


allowed = None  # with no model: each token's allowed count under the tools' grammar (native calls only)
if steps is None:  # the scripted call's tokens, drawn as text after the step-through
    call = scenario.turns[style()][0].text
    pieces = tok.encode_and_show_work(call)
    rows = [(p.id, p.text, None, None) for p in pieces] + [(IM_END, tok.token_text(IM_END), None, None)]
    if kind == "none" and get_format(style()).constrained:
        counts = grammar_counts(call)
        allowed = [n for _, n in counts] if [i for i, _ in counts] == [r[0] for r in rows] else None
else:
    rows = steps

# (no section mark above: in presenter mode the step-through is in the first screen, the lesson's key visual)
# -- step through it (in the browser: the whole run is sent once) -------------------------------------------------
with st.container(
    key="the_model_writes_a_call_step__more"
):  # projected, the view's own controls say it (ui/presenter.css)
    st.header("Step through")
    st.markdown(text["step through"])
# tokens are numbered from 1, as on lessons 4 and 6
last = len(rows)
step = current_step("the_model_writes_a_call_view", "the_model_writes_a_call_step", last)
to_url(step=step)

name_at = find_name_token([r[1] for r in rows], style())
marks = [("First token", 1)] + ([("First token of the name", name_at + 1)] if name_at is not None else [])
view = token_run(
    rows,
    tok.is_special,
    start=step,
    marks=marks,
    caption=TINY_LABEL if kind == "random" else "",
    allowed=allowed,
    vocab=REAL_VOCAB,
)
step_view(ask_scenes.with_before_after(view, run) if run else view, key="the_model_writes_a_call_view")
# what the numbers under the tokens mean, and the word of lesson 1 cut differently inside the call's JSON string
# (no leading space there): a section of their own when there is something to say (a pack's call may not spell it)
under = [words("the-model-writes-a-call", "allowed counts", vocab=f"{REAL_VOCAB:,}")] if allowed is not None else []
# a learner's run: what its two charts mean (and, projected, the sections keep their numbers when it is asked)
under += [words("the-model-writes-a-call", "two charts")] if run else []
spelled = word_pieces([r[1] for r in rows], "strawberry")
if spelled:
    pieces = " | ".join(f"`{piece}`" for piece in spelled)
    under.append(words("the-model-writes-a-call", "word inside the call", count=len(spelled), pieces=pieces))
if under:
    # (projected, the view fills the first screen: what its numbers mean comes next)
    scene("Under the tokens", heading=None)
    with st.container(key="the_model_writes_a_call_under"):  # (projected, in the room's type size: ui/presenter.css)
        for caption in under:
            st.caption(caption)
if steps is None:  # (projected, the two decisive tokens open the screen of the call's text)
    scene("The call", heading=None)
if rows[0][2] is None:
    st.markdown(for_format(text, "decisive moments", style()))

if steps is None:
    st.header("The call")
    st.markdown(for_format(text, "the call", style()).format(tool_call=TOOL_CALL, tool_call_end=TOOL_CALL_END))
    st.code(call, language=None, wrap_lines=True)
    if kind == "none":
        draw_source(source)
    st.markdown(text["not generated yet" if kind in ("live", "random") else "no probabilities"])

# -- the learner's turn: their own question under the sampling settings, another token at a step, sampled calls ----
scene("Your own question", text["your own question heading"])
ask_scenes.own_question(source, style(), tok)  # (with no model: what it needs, and how to get it)

scene("What if", text["what if heading"])
ask_scenes.what_if_picker(source, run or ask.lesson_run(source, style(), generation), step)

scene("How often a call breaks", text["malformed heading"])
ask_scenes.sampled_calls(source, style(), run)

scene("What to notice", heading=None)
notice(text["what to notice"])
check_understanding("the-model-writes-a-call")
