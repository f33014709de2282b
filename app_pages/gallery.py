"""Ways a call goes wrong: scripted cases (each reported against a server, or built to show it), each with its turn, the naive parser, ours, what prevents it, and the cost."""

import streamlit as st

from engine.core.call_formats import get_format
from engine.core.parse import POLICIES
from engine.core.tokenizer import REAL_VOCAB
from engine.harness.loop import list_gallery, load_scenario, run_scenario
from engine.teaching.cost import malformed_cost_of
from engine.teaching.gallery import (
    check_grammar,
    find_length_cut,
    measure_retry_loop,
    measure_schema_cost,
    show_gallery_case,
)
from ui.draw import notice, show_token, turn_html
from ui.gallery_view import (
    draw_length_cut,
    draw_malformed_cost,
    draw_naive,
    draw_retry_cost,
    draw_schema_cost,
    draw_verdict,
)
from ui.sections import more, scene
from ui.sources import expand_citations
from ui.state import from_url, style, to_url
from ui.views.step_data import walk_run
from ui.views.step_view import Sample, step_view
from ui.words import lesson, words

ID = "gallery"

text = lesson(ID)
st.title(text["title"])


@st.cache_resource(show_spinner=False, max_entries=32)
def case_of(name: str, chosen_style: str):
    return show_gallery_case(load_scenario(name), chosen_style)


@st.cache_resource(show_spinner=False, max_entries=64)
def scripted_run(name: str, chosen_style: str, policy: str):
    return run_scenario(load_scenario(name), chosen_style, policy)


@st.cache_resource(show_spinner="Walking the turn through the grammar…", max_entries=16)
def grammar_of(name: str, chosen_style: str):
    return check_grammar(load_scenario(name), chosen_style)


@st.cache_resource(show_spinner=False, max_entries=32)
def cost_of(name: str, chosen_style: str):
    scenario = load_scenario(name)
    if scenario.tool_choice == "none":
        return "schemas", measure_schema_cost(scenario, chosen_style)
    if scenario.retry_budget is not None:
        return "retries", measure_retry_loop(scenario, chosen_style)
    if any(t.finish == "length" for t in scenario.script(chosen_style)):
        return "length", find_length_cut(scenario, chosen_style)
    if scenario.malformed_turn is not None:
        return "malformed", malformed_cost_of(scenario.name, chosen_style)
    return None, None


def plain(data_text: str) -> str:
    """Scenario text as Markdown shows it: a backslash (JSON's escaped slash, <\\/tool_call>) stays visible."""
    return data_text.replace("\\", "\\\\")


def step_through(walked, at, refused: bool = False, sample=None, allowed=None) -> None:
    """The turn token by token in the step view, with lesson 6's allowed count under each; `at` is the token discussed."""
    shown = None
    if sample and allowed is not None:
        more = f" (the first {len(sample)} of {allowed:,})" if allowed > len(sample) else ""
        shown = Sample(f"The allowed tokens at that step{more}:", [show_token(t) for t in sample])
    step_view(
        walk_run(walked, at, REAL_VOCAB, "The grammar refuses this token." if refused else "", shown),
        key=f"gallery_view_{name}",
    )
    st.caption(
        f"Under each token: how many of the {REAL_VOCAB:,} tokens the grammar allowed at that step (all: nothing "
        "restricted)" + ("; ✗ marks the token it refused." if refused else ".")
    )


# -- the case ---------------------------------------------------------------------------------------
names = list_gallery()
name = from_url("gallery_case", "case", names[0], str, names)
scenario = load_scenario(name)
chosen_style = style() if style() in scenario.styles else scenario.styles[0]
to_url(case=name)

# the key visual first, on a screen and projected alike: the case's failing turn; its story follows
# (a "…_pickers" container: projected, ui/presenter.css keeps it clear of the title's last pixels)
st.container(key="gallery_pickers").selectbox(
    "Case",
    names,
    key="gallery_case",
    label_visibility="collapsed",
    format_func=lambda n: f"{names.index(n) + 1} of {len(names)}: {load_scenario(n).gallery['failure']}",
)


def about_case() -> None:
    st.markdown(f"**{plain(scenario.summary)}** {plain(scenario.lesson)}")
    # the report this case reproduces, or a plain word that it was constructed
    st.markdown(expand_citations(scenario.gallery["origin"]["text"]))
    if chosen_style != style():
        st.info(
            f"This case is scripted in the {get_format(chosen_style).noun} style only, "
            "so it is shown that way whatever the sidebar says."
        )


case = case_of(name, chosen_style)

# -- 1. the turn ----------------------------------------------------------------------------------------
st.header(f"1 · The turn (reply {case.turn_index + 1} of the script)")
st.markdown(turn_html(case.text, case.ours["per-block"].blocks), unsafe_allow_html=True)
# the gallery's opening words and this case's story, after the turn they explain
scene("The case")
st.markdown(words(ID, "intro", cases=len(list_gallery())))
more(text["pick a case"], key="gallery_pick")
about_case()
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
check = grammar_of(name, chosen_style)
if check is not None:  # the grammar's walk through the turn is a screen of its own
    scene("The grammar, token by token", heading=None)
if check is None:
    st.markdown(text["no grammar in react"])
elif check.tool_choice == "none":
    st.markdown(text["no grammar under none"])
    step_through(check.steps, None)
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
    step_through(check.steps, check.at, refused=True, sample=check.sample, allowed=check.allowed)
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
    step_through(check.steps, check.at, sample=check.sample, allowed=check.allowed)
else:
    st.markdown(words(ID, "the grammar lets it through", n=len(check.steps), tool_choice=check.tool_choice))
    step_through(check.steps, None)

# -- 5. the cost --------------------------------------------------------------------------------------------------
kind, cost = cost_of(name, chosen_style)
if kind is not None:
    scene("The cost", "5 · The cost")
    if kind == "schemas":
        draw_schema_cost(cost)
    elif kind == "retries":
        draw_retry_cost(cost)
    elif kind == "length":
        draw_length_cut(cost)
    else:
        st.markdown(text["cost of a broken turn"])
        draw_malformed_cost(cost)
        st.markdown(words(ID, "the terms", c_bad=cost.c_bad, a_bad=cost.a_bad, e=cost.e, n_later=cost.n_later))

scene("What to notice", heading=None)
notice(text["what to notice"])
