"""The wire formats' registry (engine.wire.formats): exactly the shipped formats, and a new one seen everywhere once registered."""

from __future__ import annotations

import pytest

from engine.core.tooldefs import load_tool_set
from engine.errors import BadInput
from engine.wire import formats
from engine.wire.formats import (
    ASPECTS,
    REGISTRY,
    WireCall,
    WireExchange,
    WireFormat,
    differences,
    format_names,
    register_format,
    text_format_for,
    write_all,
)
from ui import wire_view

TOOLS = load_tool_set("strawberry")
QUESTION = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]
CALL = WireCall("count_letter", {"word": "strawberry", "letter": "r"}, "3")


class Echo(WireFormat):
    """A format made up for the test: the call as one line of plain text."""

    key, title, short, order = "echo", "Echo (a test format)", "Echo", 99
    tool_choice = {"auto": "any", "required": "some", "none": "no", "named": {"pick": formats.NAME}}  # noqa: RUF012
    differences = {aspect: f"echo: {aspect}" for aspect in ASPECTS}  # noqa: RUF012

    def write(self, calls, tools, messages, choice="auto", answer=None):
        replies = [answer] if answer is not None else [" ".join(f"{c.name}{c.arguments}" for c in calls)]
        return WireExchange(
            self.key, self.title, {"ask": messages}, replies, [] if answer is not None else [c.result for c in calls]
        )


@pytest.fixture
def echo():
    register_format(Echo())
    yield REGISTRY.get("echo")
    REGISTRY.unregister("echo")


def test_the_registry_lists_exactly_the_shipped_formats_in_order():
    assert format_names() == ("qwen3", "react", "openai-chat", "openai-responses", "anthropic")
    assert [f.key for f in formats.tool_choice_formats()] == ["openai-chat", "openai-responses", "anthropic"]
    assert text_format_for("native").key == "qwen3" and text_format_for("react").key == "react"


def test_each_text_format_writes_its_styles_call():
    from engine.core.call_formats import get_format

    for exchange in write_all([CALL], TOOLS, QUESTION):
        fmt = REGISTRY[exchange.format]
        if fmt.is_text:
            assert (
                get_format(fmt.style).parse(exchange.replies[0].removesuffix("<|im_end|>"), TOOLS).calls[0].arguments
                == CALL.arguments
            )


def test_a_registered_format_appears_in_the_engines_tables_and_the_views_data(echo):
    assert format_names()[-1] == "echo"  # order 99: after every shipped format
    assert [e.format for e in write_all([CALL], TOOLS, QUESTION)][-1] == "echo"
    assert all(row["echo"] == f"echo: {row['aspect']}" for row in differences())
    assert formats.tool_choice_for("echo", "count_letter") == {"pick": "count_letter"}
    # the view iterates the registry: a tab, a column of the differences, a column of tool_choice words
    assert "echo" in wire_view.ordered_formats("native")
    assert wire_view.tab_name("echo") == "Echo"
    [(_, table)] = wire_view.differences_screens("native")  # on a screen: one table
    assert "<th>Echo</th>" in table
    assert "echo: parallel calls" in wire_view.differences_screens("react")[0][1]
    assert (
        "<th>Echo</th>" in wire_view.tool_choice_html()
        and "&quot;count_letter&quot;" not in wire_view.tool_choice_html()
    )


def test_a_format_that_leaves_a_question_unanswered_is_refused():
    class Half(Echo):
        key = "half"
        differences = {ASPECTS[0]: "somewhere"}  # noqa: RUF012

    with pytest.raises(BadInput, match="says nothing about: arguments"):
        register_format(Half())
    assert "half" not in REGISTRY


def test_an_unknown_format_is_refused_with_the_names_there_are():
    with pytest.raises(BadInput, match="the formats are qwen3, react, openai-chat, openai-responses, anthropic"):
        formats.write_call("grpc", [CALL], TOOLS, QUESTION)
