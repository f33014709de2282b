"""Ways a call goes wrong: scripted cases (each reported against a server, or built to show it), each with its turn, the naive parser, ours, what prevents it, and the cost."""

import streamlit as st

from engine.core.call_formats import get_format
from engine.core.parse import POLICIES
from engine.core.tokenizer import REAL_VOCAB
from engine.harness.loop import list_gallery, load_scenario
from ui.draw import notice, turn_html
from ui.gallery_view import draw_case_cost, draw_malformed_cost, draw_naive, draw_verdict, plain, step_through
from ui.scenario_runs import case_cost, gallery_case, grammar_check, scripted_run
from ui.sections import more, scene
from ui.sources import expand_citations
from ui.state import from_url, style, to_url
from ui.words import lesson, words

ID = "gallery"

text = lesson(ID)
st.title(text["title"])

# -- the case ---------------------------------------------------------------------------------------
names = list_gallery()
name = from_url("gallery_case", "case", names[0], str, names)
scenario = load_scenario(name)
chosen_style = style() if style() in scenario.styles else scenario.styles[0]
to_url(case=name)
VIEW = f"gallery_view_{name}"  # the grammar's step view, one per case

# the key visual first, on a screen and projected alike: the case's failing turn; its story follows
# (a "…_pickers" container: projected, ui/presenter.css keeps it clear of the title's last pixels)
st.container(key="gallery_pickers").selectbox(
    "Case",
    names,
    key="gallery_case",
    label_visibility="collapsed",
    format_func=lambda n: f"{names.index(n) + 1} of {len(names)}: {load_scenario(n).gallery['failure']}",
)
case = gallery_case(name, chosen_style)

# -- 1. the turn ----------------------------------------------------------------------------------------
st.header(f"1 · The turn (reply {case.turn_index + 1} of the script)")
st.markdown(turn_html(case.text, case.ours["per-block"].blocks), unsafe_allow_html=True)
# the gallery's opening words and this case's story, after the turn they explain
scene("The case")
st.markdown(words(ID, "intro", cases=len(list_gallery())))
more(text["pick a case"], key="gallery_pick")
st.markdown(f"**{plain(scenario.summary)}** {plain(scenario.lesson)}")
# the report this case reproduces, or a plain word that it was constructed
st.markdown(expand_citations(scenario.gallery["origin"]["text"]))
if chosen_style != style():
    st.info(
        f"This case is scripted in the {get_format(chosen_style).noun} style only, "
        "so it is shown that way whatever the sidebar says."
    )
st.markdown(text["the turn"])
if case.cut is not None and case.cut.inside_string:
    scene("Where the block ends", heading=None)
    st.markdown(words(ID, "the cut", cut_at=case.cut.cut_at, length=len(case.text)))
    st.code(case.cut.left_over, language=None, wrap_lines=True)

# -- 2. the naive parser --------------------------------------------------------------------------------
scene("A naive parser", "2 · What a naive parser does")
if case.naive is None:
    st.markdown(text["the naive parser in react"])
else:
    st.markdown(text["the naive parser"])
    draw_naive(case.naive)
st.markdown(plain(scenario.gallery["naive"]))

# -- 3. ours ------------------------------------------------------------------------------------------------
scene("Ours, under both policies", "3 · What ours does, under both policies")
st.markdown(text["ours, under both policies"])
for column, policy in zip(st.columns(2), POLICIES, strict=True):
    with column:
        draw_verdict(policy, case.ours[policy], scripted_run(name, chosen_style, policy))

# -- 4. what prevents it ----------------------------------------------------------------------------------
scene("What prevents it", "4 · What prevents it")
st.markdown(plain(scenario.gallery["prevents"]))
check = grammar_check(name, chosen_style)
if check is not None:  # the grammar's walk through the turn is a screen of its own
    scene("The grammar, token by token", heading=None)
if check is None:
    st.markdown(text["no grammar in react"])
elif check.tool_choice == "none":
    st.markdown(text["no grammar under none"])
    step_through(check.steps, None, VIEW)
elif check.stopped:
    refused = check.steps[check.at]
    st.markdown(
        words(
            ID,
            "the grammar stops it",
            at=check.at + 1,
            token=refused.token,
            allowed=f"{check.allowed:,}",
            vocab=f"{REAL_VOCAB:,}",
        )
    )
    step_through(check.steps, check.at, VIEW, refused=True, sample=check.sample, allowed=check.allowed)
    if check.unbounded_steps is not None and all(s.ok for s in check.unbounded_steps):
        st.markdown(words(ID, "the number's bound", unbounded=len(check.unbounded_steps)))
elif check.tag_allowed is not None:
    st.markdown(
        words(
            ID,
            "the tag inside a string",
            at=check.at + 1,
            allowed=f"{check.allowed:,}",
            vocab=f"{REAL_VOCAB:,}",
            verdict="**allowed**" if check.tag_allowed else "refused",
        )
    )
    step_through(check.steps, check.at, VIEW, sample=check.sample, allowed=check.allowed)
else:
    st.markdown(words(ID, "the grammar lets it through", n=len(check.steps), tool_choice=check.tool_choice))
    step_through(check.steps, None, VIEW)

# -- 5. the cost --------------------------------------------------------------------------------------------------
cost = case_cost(name, chosen_style)
if cost is not None:
    scene("The cost", "5 · The cost")
    if cost.kind != "malformed":
        draw_case_cost(cost)
    else:  # lesson 4's formula, in this lesson's words
        st.markdown(text["cost of a broken turn"])
        draw_malformed_cost(cost.figures)
        terms = cost.figures
        st.markdown(words(ID, "the terms", c_bad=terms.c_bad, a_bad=terms.a_bad, e=terms.e, n_later=terms.n_later))

scene("What to notice", heading=None)
notice(text["what to notice"])
