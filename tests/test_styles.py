"""The styles registry (engine.core.styles): exactly the shipped styles, each one round-tripping what it writes."""

from __future__ import annotations

import pytest

from engine.core.prompt import STYLES as PROMPT_STYLES
from engine.core.prompt import Request, render
from engine.core.styles import (
    STYLES,
    Style,
    find_name_token,
    get_style,
    other_style,
    parse_turn,
    register_style,
    style_names,
)
from engine.core.tokenizer import load_tokenizer
from engine.core.tooldefs import load_tool_set
from engine.errors import BadInput

TOOLS = load_tool_set("strawberry")
CALLS = [
    ("count_letter", {"word": "strawberry", "letter": "r"}),
    ("count_letter", {"word": "Erdbeere – ünïcödé", "letter": "e"}),
    ("tokenize", {"text": 'a "quoted"\nline'}),
]


def test_the_registry_lists_exactly_the_shipped_styles_in_order():
    assert style_names() == ("native", "react")
    assert list(STYLES) == ["native", "react"]
    assert PROMPT_STYLES is STYLES  # one definition, read by prompt.py and the sidebar alike
    assert [get_style(n).label for n in style_names()] == ["Native", "ReAct"]
    assert all(isinstance(s, Style) and s.help and s.noun and s.name_marker for s in STYLES.values())


def test_an_unknown_style_is_refused_with_the_names_there_are():
    with pytest.raises(BadInput, match="style must be 'native' or 'react', not 'json'"):
        get_style("json")
    with pytest.raises(BadInput, match="style must be"):
        render(Request([{"role": "user", "content": "hi"}], TOOLS, "json"))


@pytest.mark.parametrize("style", ["native", "react"])
@pytest.mark.parametrize(("name", "arguments"), CALLS)
def test_a_written_call_parses_back_to_the_same_call(style, name, arguments):
    written = get_style(style).write_call(name, arguments)
    parsed = parse_turn(written, TOOLS, style)
    assert not parsed.errors and not parsed.final
    assert [(c.name, c.arguments) for c in parsed.calls] == [(name, arguments)]
    # the name marker points at the token where the name starts
    pieces = [p.text for p in load_tokenizer().encode_and_show_work(written)]
    index = find_name_token(pieces, style)
    assert index is not None and "".join(pieces[index:]).lstrip().startswith(name[0])


@pytest.mark.parametrize("style", ["native", "react"])
def test_a_written_answer_parses_back_as_the_same_answer(style):
    answer = 'The letter "r" appears 3 times in "strawberry".'
    parsed = parse_turn(get_style(style).write_answer(answer), TOOLS, style)
    assert parsed.final and not parsed.calls and parsed.answer == answer


def test_the_styles_write_several_calls_as_they_can_carry_them():
    native, react = get_style("native"), get_style("react")
    both = native.write_calls(CALLS[:2])
    assert len(both) == 1 and [c.arguments for c in parse_turn(both[0], TOOLS, "native").calls] == [a for _, a in CALLS[:2]]
    assert len(react.write_calls(CALLS[:2])) == 2  # ReAct: one Action per reply


@pytest.mark.parametrize(("style", "seen"), [("native", "<tool_response>\n3\n</tool_response>"), ("react", "Observation: 3")])
def test_a_result_goes_back_as_the_style_says_in_the_rendered_prompt(style, seen):
    call = get_style(style).write_call(*CALLS[0])
    messages = [{"role": "user", "content": "How many r?"}, {"role": "assistant", "content": call}, {"role": "tool", "content": "3"}]
    assert get_style(style).result_text("3") == seen
    assert seen in render(Request(messages, TOOLS, style)).text


def test_react_reads_a_reply_only_up_to_the_models_own_observation():
    reply = 'Thought: t\nAction: count_letter\nAction Input: {"word": "a", "letter": "a"}\nObservation: 9 (made up)'
    assert get_style("react").read_reply(reply).endswith('"letter": "a"}')
    assert get_style("native").read_reply(reply) == reply


def test_other_style_cycles_through_the_registry():
    assert other_style("native") == "react" and other_style("react") == "native"


def test_a_style_registered_later_joins_the_registry_in_its_order(monkeypatch):
    monkeypatch.setattr("engine.core.styles.STYLES", dict(STYLES))  # restored after the test
    from engine.core import styles

    class Plain(Style):
        name, label, noun, order = "plain", "Plain", "plain", 50

    register_style(Plain())
    assert styles.style_names() == ("native", "react", "plain")
    with pytest.raises(BadInput, match="has no name"):
        register_style(Style())
