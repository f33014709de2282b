"""Lesson 8: the same tools and the same call in each model family, with its own tokenizer, renderer and parsers."""

import streamlit as st

from engine.core.call_formats import constrained_format
from engine.core.call_formats.policies import policy_differences
from engine.core.tooldefs import load_tool_set
from engine.teaching.quiz import figure_the_model_writes_a_call
from ui.draw import notice, token_strip
from ui.families import FAMILIES, allowed_at_names, draw_prices, prices, rendering, spans_html, written_call
from ui.glossary import show_intro
from ui.literal import table_html
from ui.numbers import format_count
from ui.sections import scene
from ui.state import from_url, to_url
from ui.understanding import check_understanding
from ui.words import lesson, words

ID = "other-model-families"
text = lesson(ID)
st.title(text["title"])
show_intro(ID, text["intro"])

# the key visual first: the same two tools priced in each family (presenter mode's first screen)
st.header("What two tools cost")
strawberry = prices("strawberry")
st.markdown(
    words(
        ID,
        "what the tools cost",
        qwen3=strawberry["qwen3"].total,
        llama=strawberry["llama3.1"].total,
        gpt_oss=strawberry["gpt-oss"].total,
        coder=strawberry["qwen3-coder"].total,
    )
)
draw_prices("strawberry", "other_model_families_two_chart", text["how the price is counted"])

scene("The families")
st.markdown(text["the families"])
with st.expander("Who renders each prompt"):
    st.markdown(text["who renders each"])
    st.markdown(
        table_html(
            [
                {
                    "Family": f.display_family,
                    "Rendered by": f.renderer,
                    "Read back as": f.parser_reference,
                    "Its opener": f.opener.note,
                }
                for f in FAMILIES.values()
            ]
        ),
        unsafe_allow_html=True,
    )

scene("What twelve tools cost")
st.markdown(text["twelve tools"])
draw_prices("coding-agent", "other_model_families_twelve_chart", text["how the price is counted"])

scene("The same call", "The same call in each family")
# lesson 3 counts the same call with the <|im_end|> that ends its turn: both figures from the engine
st.markdown(
    words(
        ID,
        "the same call",
        qwen_call=format_count(len(written_call(constrained_format().family)[0])),
        with_end=format_count(figure_the_model_writes_a_call(constrained_format().name).call_tokens),
    )
)
for tab, name in zip(st.tabs([f.display_family for f in FAMILIES.values()]), FAMILIES, strict=True):
    with tab:
        ids, tokens, special, calls, errors = written_call(name)
        # no ids under the boxes: five strips of a call each fit a projector's screen that way
        st.markdown(
            token_strip(list(zip(ids, tokens, strict=True)), show_ids=False, special=special), unsafe_allow_html=True
        )
        verdict = "one valid call" if calls == 1 and not errors else f"{calls} calls, errors: {'; '.join(errors)}"
        st.caption(
            f"{format_count(len(ids))} tokens · read back as the {FAMILIES[name].parser_reference} reads it: {verdict}"
        )

scene("The opener")
st.markdown(text["the opener"])
at_name = allowed_at_names()
st.markdown(
    table_html(
        [
            {
                "Family": f.display_family,
                "Opener": f.opener.text or f.opener.note,
                "Allowed at the name": f"{at_name[n][0]} of {at_name[n][1]:,}",
            }
            for n, f in FAMILIES.items()
        ]
    ),
    unsafe_allow_html=True,
)

scene("Where the tools go")
names = list(FAMILIES)
# it opens on the first family the other lessons do not show (their own family's prompt is lesson 2's)
first_other = next(n for n, f in FAMILIES.items() if not f.in_lessons)
shown = from_url("other_model_families_family", "family", first_other, str, names)
st.selectbox("Family", names, key="other_model_families_family", format_func=lambda n: FAMILIES[n].display_family)
to_url(family=None if shown == first_other else shown)
prompt = rendering(shown)
with st.container(height=200):
    st.markdown(spans_html(prompt), unsafe_allow_html=True)
st.caption(words(ID, "where the tools go", count=f"{prompt.count:,}"))

scene("Strict and server")
st.markdown(text["strict and server"])
# one tab per family: a family's few turns fit a projected screen whole, where all of them would scroll
differences = policy_differences(load_tool_set("strawberry"))
lenient = list(dict.fromkeys(d.family for d in differences))
policies = st.container(key="other_model_families_policies")  # (projected, in smaller type: ui/presenter.css)
for tab, family in zip(policies.tabs(lenient), lenient, strict=True):
    with tab:
        st.markdown(
            table_html(
                [
                    {"The turn": d.turn, "Strict": d.strict, "Server": f"{d.server} ({d.parser_file})"}
                    for d in differences
                    if d.family == family
                ]
            ),
            unsafe_allow_html=True,
        )

check_understanding(ID)  # a section of its own

# last, so that the "Next lesson" link the router adds below fits on the same screen
scene("What to notice", heading=None)
notice(text["what to notice"])
