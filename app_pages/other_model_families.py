"""Lesson 8: the same tools and the same call in five model families, each with its own tokenizer and renderer."""

import html
import json

import streamlit as st

from engine.core.families import FAMILIES, call_tokens, get_family, parse_family, price_tools, render_family
from engine.core.tooldefs import load_tool_set
from ui.draw import notice, token_strip
from ui.glossary import show_intro
from ui.literal import table_html
from ui.sections import section
from ui.state import from_url, to_url
from ui.understanding import check_understanding
from ui.words import lesson, words

ID = "other-model-families"
ARGUMENTS = {"word": "strawberry", "letter": "r"}
TOOL_SETS = {"strawberry": "The two strawberry tools", "coding-agent": "A coding agent's 12 tools"}
QUESTION = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]

text = lesson(ID)
st.title(text["title"])
show_intro(ID, text["intro"])


@st.cache_data(show_spinner="Rendering the tools in each family…", max_entries=8)
def prices(tool_set: str) -> dict:
    tools = load_tool_set(tool_set)
    return {name: price_tools(name, QUESTION, tools) for name in FAMILIES}


@st.cache_data(show_spinner=False, max_entries=8)
def written_call(name: str) -> tuple[str, list[int], list[str], list[bool], int, list[str]]:
    family = get_family(name)
    turn, ids, tokens = call_tokens(name, "count_letter", ARGUMENTS)
    verdict = parse_family(name, turn, load_tool_set("strawberry"))
    return turn, ids, tokens, [family.is_special(i) for i in ids], len(verdict.calls), [e.error for e in verdict.errors]


@st.cache_data(show_spinner="Rendering the prompt…", max_entries=16)
def rendering(name: str, tool_set: str):
    return render_family(name, QUESTION, load_tool_set(tool_set))


st.markdown(text["the families"])

section("What the tools cost")
st.header("What the tools cost")
tool_set = from_url("other_model_families_tools", "tools", "strawberry", str, list(TOOL_SETS))
st.radio("Tools", list(TOOL_SETS), key="other_model_families_tools", format_func=TOOL_SETS.get, horizontal=True)
to_url(tools=None if tool_set == "strawberry" else tool_set)
priced = prices(tool_set)
strawberry = prices("strawberry")
st.markdown(words(ID, "what the tools cost", qwen3=strawberry["qwen3"].total, llama=strawberry["llama3.1"].total,
                  gpt_oss=strawberry["gpt-oss"].total))
rows = [{"Family": FAMILIES[n].label, "Tools cost (tokens)": f"{p.total:,}", "Definitions": f"{p.definitions:,}",
         "Template's instructions": f"{p.instructions:,}", "Rendered by": FAMILIES[n].renderer} for n, p in priced.items()]
st.markdown(table_html(rows), unsafe_allow_html=True)
st.caption("Each count is the family's own tokenizer over its own renderer's prompt, with and without the tools, "
           "beside one user question.")

section("The same call")
st.header("The same call, five ways")
st.markdown(text["the same call"])
for tab, name in zip(st.tabs([f.label for f in FAMILIES.values()]), FAMILIES, strict=True):
    with tab:
        turn, ids, tokens, special, calls, errors = written_call(name)
        st.markdown(token_strip(list(zip(ids, tokens, strict=True)), special=special), unsafe_allow_html=True)
        verdict = "one valid call" if calls == 1 and not errors else f"{calls} calls, errors: {'; '.join(errors)}"
        st.caption(f"{len(ids)} tokens · read back as the {FAMILIES[name].parser_reference} reads it: {verdict}")

section("The opener")
st.header("The opener")
st.markdown(text["the opener"])
rows = [{"Family": f.label, "Opener": f.opener.text or "none", "What announces a call": f.opener.note} for f in FAMILIES.values()]
st.markdown(table_html(rows), unsafe_allow_html=True)

section("Where the tools go")
st.header("Where the tools go")
st.markdown(text["where the tools go"])
names = list(FAMILIES)
shown = from_url("other_model_families_family", "family", "llama3.1", str, names)
st.selectbox("Family", names, key="other_model_families_family", format_func=lambda n: FAMILIES[n].label)
to_url(family=None if shown == "llama3.1" else shown)
prompt = rendering(shown, tool_set)
parts = [f'<span class="k-{s.kind}" title="{html.escape(s.label)}: {s.tokens} tokens">'
         f'{html.escape(prompt.text[s.start:s.end])}</span>' for s in prompt.spans]
with st.container(height=340):
    st.markdown(f'<div class="prompt-view">{"".join(parts)}</div>', unsafe_allow_html=True)
st.caption(f"{prompt.count:,} tokens in all; the tool definitions are underlined. "
           f"{json.dumps(QUESTION[0]['content'])} is the user's question.")

section("What to notice")
notice(text["what to notice"])
check_understanding(ID)
