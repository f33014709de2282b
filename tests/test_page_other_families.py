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
