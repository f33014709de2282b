"""Model text on the pages is literal: the HTML a page builds shows render()'s text character for character.

st.markdown reads HTML through Markdown, where a blank line ends the HTML block; these tests read
the HTML back the way a browser's text content would (html.parser, entities decoded) and compare.
The browser tests (test_browser_fit.py) compare what Chromium shows.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.call_formats import lesson_format_names
from engine.core.prompt import Request, render
from engine.harness.loop import load_scenario, run_scenario
from engine.settings import ROOT
from ui.draw import prompt_html, token_strip, turn_html
from ui.literal import literal, plural, reply_html, table_html


class TextOf(HTMLParser):
    """The text content of an HTML fragment (what the browser shows in a white-space: pre-wrap box), and its tags."""

    def __init__(self, fragment: str):
        super().__init__(convert_charrefs=True)
        self.parts, self.tags = [], []
        self.feed(fragment)
        self.close()
        self.text = "".join(self.parts)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.parts.append(data)


STRAWBERRY = load_scenario("strawberry")


@pytest.mark.parametrize("style", lesson_format_names())
def test_the_prompt_box_shows_renders_text_character_for_character(style):
    prompt = render(Request(STRAWBERRY.messages, STRAWBERRY.tools, style))
    built = prompt_html(prompt)
    assert TextOf(built).text == prompt.text
    # one line of HTML: Markdown cannot end the block early and turn the rest into paragraphs
    assert "\n" not in built and "<p>" not in built and "&quot;" not in built
    assert "\n\n" in prompt.text and prompt.text.endswith("<think>\n\n</think>\n\n")
    # the colouring goes on past every blank line: the last span (the generation prompt) holds </think>
    spans = [attrs.get("class") for tag, attrs in TextOf(built).tags if tag == "span"]
    assert spans[-1] == "k-generation"


def test_lesson_4s_raw_newline_reply_keeps_its_quotes_and_indentation():
    run = run_scenario(load_scenario("raw-newline"), "native")
    call = run.calls[1]
    text = run.messages[call.message_index]["content"]
    built = turn_html(text, call.parse.blocks)
    assert TextOf(built).text == text
    assert '\\"\\"\\"Return the product of a and b.\\"\\"\\"' in TextOf(built).text
    assert "&quot;" not in built and "\n" not in built
    # the red block covers the whole call, blank lines included
    assert built.count('<mark class="bad">') == 1 and built.index("</mark>") > built.index("a * b")


def test_a_dropped_good_block_is_not_green_and_the_bad_one_stays_red():
    run = run_scenario(load_scenario("mixed-turn"), "native", "vllm")
    call = run.calls[0]
    assert call.parse.returned_as_text
    text = run.messages[call.message_index]["content"]
    built = turn_html(text, call.parse.blocks, dropped=True)
    assert 'class="ok"' not in built and built.count('class="dropped"') == 1 and built.count('class="bad"') == 1


@given(st.text(max_size=300))
@settings(max_examples=200, deadline=None)
def test_literal_keeps_every_character_on_one_line(text):
    shown = literal(text)
    assert "\n" not in shown and "\r" not in shown
    assert TextOf(f"<div>{shown}</div>").text == text


@pytest.mark.parametrize(
    "reply, shown, collapsed",
    [
        # (reply text, text a reader sees, how many collapsed runs)
        ("a\n\nb", "a\n\nb", 0),  # a blank line stays a blank line
        ("def f():\n        return 1", "def f():\n        return 1", 0),  # indentation stays
        ("x" + "\n" * 212 + "y", "x↵ × 212 newlinesy", 1),
        ("\n" * 256, "↵ × 256 newlines", 1),
        ("a" + " " * 50 + "b", "a␣ × 50 spacesb", 1),
        ("", "(empty)", 0),
    ],
    ids=["blank-line", "indent", "212-newlines", "only-newlines", "50-spaces", "empty"],
)
def test_a_reply_collapses_long_whitespace_runs_with_a_count(reply, shown, collapsed):
    built = reply_html(reply, "Tiny model, random weights")
    assert TextOf(built).text == "Tiny model, random weights" + shown
    assert built.count('title="collapsed') == collapsed


def test_token_strip_collapses_a_run_of_whitespace_tokens_but_not_the_current_one():
    pieces = [(1, "Hi")] + [(198, "\n")] * 200 + [(2, "!")]
    strip = token_strip(pieces)
    assert strip.count('class="tok ') == 3 and "↵ ×200" in strip and "200 tokens" in strip
    # stepping through: the run holding the current token is drawn whole, so the outline has a box
    stepping = token_strip(pieces, current=5)
    assert stepping.count('class="tok ') == 202 and stepping.count(" now") == 1
    # a short run (a blank line) is left alone, shown as ↵ boxes
    assert token_strip([(198, "\n"), (198, "\n")]).count("↵") == 2


@pytest.mark.parametrize(
    "n, word, expected",
    [(1, "call", "1 call"), (2, "call", "2 calls"), (0, "call", "0 calls"), (1200, "token", "1,200 tokens")],
)
def test_plural_agrees(n, word, expected):
    assert plural(n, word) == expected


def test_a_table_wraps_its_cells_and_escapes_them():
    built = table_html([{"call": 1, "error sent back": "error: <tool_call> is not closed"}])
    assert (
        'class="plain"' in built
        and "&lt;tool_call&gt;" in built
        and TextOf(built).text.endswith("error: <tool_call> is not closed")
    )


def test_a_table_cell_of_several_lines_keeps_its_line_breaks_and_a_one_line_cell_stays_plain():
    built = table_html([{"turn": '<tool_call>\n{"name": "x"}\n</tool_call>', "verdict": "ok"}])
    assert '<td class="lines">&lt;tool_call&gt;&#10;{"name": "x"}&#10;&lt;/tool_call&gt;</td><td>ok</td>' in built
    assert "table.plain td.lines {white-space:pre-wrap}" in (ROOT / "ui" / "style.css").read_text(encoding="utf-8")
