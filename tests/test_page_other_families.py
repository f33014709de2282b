"""The families lesson in AppTest: each family's price as the engine computes it, each call's tokens, the openers."""

from __future__ import annotations

import html

import pytest
from helpers import open_page, page_text

from engine.core.call_formats import call_tokens, families, price_tools
from engine.core.tooldefs import load_tool_set

PAGE = "app_pages/other_model_families.py"
QUESTION = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]


@pytest.fixture(scope="module")
def page():
    return open_page(PAGE, timeout=120)


def test_the_page_prices_the_strawberry_tools_in_every_family(page):
    shown = page_text(page)
    tools = load_tool_set("strawberry")
    for name, family in families().items():
        price = price_tools(name, QUESTION, tools)
        assert family.display_family in shown
        assert (
            f"<td>{family.display_family}</td><td>{price.total:,}</td><td>{price.definitions:,}</td>"
            f"<td>{price.instructions:,}</td>"
        ) in shown
    assert f"Qwen3 pays **{price_tools('qwen3', QUESTION, tools).total}** tokens" in shown


def test_the_twelve_tools_are_priced_too(page):
    shown = page_text(page)
    tools = load_tool_set("coding-agent")
    for name, family in families().items():
        price = price_tools(name, QUESTION, tools)
        assert f"<td>{family.display_family}</td><td>{price.total:,}</td><td>{price.definitions:,}</td>" in shown


def test_every_family_s_call_is_drawn_and_reads_back_as_one_valid_call(page):
    captions = [c.value for c in page.caption]
    for name in families():
        _, ids, _ = call_tokens(name, "count_letter", {"word": "strawberry", "letter": "r"})
        assert (
            f"{len(ids)} tokens · read back as the {families()[name].parser_reference} reads it: one valid call"
            in captions
        )


def test_the_openers_and_llama_s_none(page):
    shown = page_text(page)
    for family in families().values():
        assert f"<td>{family.opener.note}</td></tr>" in shown
    assert "<td>Llama 3.1</td><td>none: a call is bare JSON</td>" in shown
    assert "<td>[TOOL_CALLS]</td>" in shown and "<td>&lt;tool_call&gt;</td>" in shown
    from engine.constrain.families import allowed_at_name

    for name, family in families().items():
        mask = allowed_at_name(name, load_tool_set("strawberry"))
        opener = html.escape(family.opener.text or family.opener.note, quote=False)
        assert f"<td>{family.display_family}</td><td>{opener}</td><td>{mask.allowed} of {mask.vocab:,}</td>" in shown


def test_the_chosen_family_s_prompt_is_shown(page):
    page.selectbox(key="other_model_families_family").set_value("gpt-oss").run()
    assert not page.exception
    assert "namespace functions {" in page_text(page)


def test_strict_and_server_shows_each_difference_with_both_verdicts(page):
    from engine.core.call_formats.policies import policy_differences
    from ui.literal import cell

    shown = page_text(page)
    rows = policy_differences(load_tool_set("strawberry"))
    assert rows and all(r.strict != r.server for r in rows)
    for row in rows:
        # one tab per family, a row per turn: the server's verdict with the parser file that gives it
        cells = [cell(c) for c in (row.turn, row.strict, f"{row.server} ({row.parser_file})")]
        assert "".join(cells) in shown, row.turn
    # a turn of several lines keeps them: its cell wraps as written, not folded into one line
    assert any('<td class="lines">' in cell(r.turn) for r in rows)


def test_the_docs_say_where_gpt_oss_s_server_reading_is_stricter_than_its_strict_one():
    # docs/command-line.md and the lesson state these verdicts; each is computed here by the real parsers
    from pathlib import Path

    from engine.core.call_formats import parse_turn
    from engine.core.call_formats.gpt_oss import MAX_HEADER_CHARS, MAX_MESSAGES
    from engine.core.call_formats.policies import HARMONY_CALL, policy_differences, verdict
    from ui.words import lesson

    docs = " ".join((Path(__file__).resolve().parent.parent / "docs" / "command-line.md").read_text().split())
    tools = load_tool_set("strawberry")

    def both(turn: str, tools: list[dict] = tools) -> tuple[str, str]:
        return tuple(verdict(parse_turn(turn, tools, "gpt-oss", p)) for p in ("per-block", "server"))

    # stricter: text where harmony allows none is one error and no call, where the strict search runs each call
    led = "Let me count." + HARMONY_CALL
    row = next(d for d in policy_differences(tools) if d.turn == led)
    assert (row.strict, row.server) == both(led)
    assert f"row `{led}`" in docs and "stricter than its strict one" in docs
    refused = "error: harmony's parser refuses the reply: "
    for turn, calls in ((led, 1), (HARMONY_CALL + " Done.", 1), (HARMONY_CALL + HARMONY_CALL, 2)):
        strict, server = both(turn)
        assert strict == f"{calls} call{'s' if calls > 1 else ''} run" and server.startswith(refused), turn
    assert "a call followed by text, and two calls with no `<|start|>assistant` between them" in docs
    # and the bounds of this site's, under server only
    many = "<|channel|>analysis<|message|>x<|end|><|start|>assistant" * MAX_MESSAGES + HARMONY_CALL
    long = HARMONY_CALL.replace("<|channel|>", " x" * (MAX_HEADER_CHARS // 2) + "<|channel|>")
    for turn, bound in ((many, "harmony messages"), (long, "headers run past")):
        strict, server = both(turn)
        assert strict == "1 call run" and server.startswith("error: ") and bound in server
    assert f"more than {MAX_MESSAGES} messages, or of more than {MAX_HEADER_CHARS:,} characters of headers" in docs
    assert "the strict reading finds the call and runs it" in " ".join(
        lesson("other-model-families")["strict and server"].split()
    )
