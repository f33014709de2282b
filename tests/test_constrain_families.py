"""The grammar of a call in each family's format, over that family's own vocabulary (xgrammar)."""

from __future__ import annotations

import io
import json
import sys

import pytest

from engine.__main__ import main
from engine.constrain.families import _compiled, allowed_at_name, family_tokenizer_info, inspect_family_mask
from engine.core.call_formats import family_formats, get_format
from engine.errors import BadInput
from engine.settings import LESSONS

STRAWBERRY = json.loads((LESSONS / "tools" / "strawberry.json").read_text())
# the families whose calls a structural tag holds, over their own vocabulary, with JSON arguments (Qwen3's own
# grammar is engine/constrain/grammar.py's; Qwen3-Coder's XML arguments are tested in tests/test_qwen3_coder.py)
OTHERS = tuple(f.family for f in family_formats() if f.tag_grammar and not f.constrained and f.argument_style == "json")
ARGS = {"word": "strawberry", "letter": "r"}


@pytest.mark.parametrize("name", OTHERS)
def test_at_the_name_the_grammar_allows_exactly_the_tokens_that_start_a_tool_s_name(name):
    family = get_format(name)
    mask = allowed_at_name(name, STRAWBERRY)
    # worked out without the grammar: a token is allowed when its bytes start what a call writes after the prefix
    rests = [family.call_tag(t["function"]["name"])[0][len(family.name_prefix) :].encode() for t in STRAWBERRY]
    vocab = family.vocab_bytes()
    expected = sorted(i for i, raw in enumerate(vocab) if raw and any(rest.startswith(raw) for rest in rests))
    assert mask.constrained and mask.vocab == len(vocab) == family.vocab_size
    assert mask.allowed == len(expected)
    assert (
        sorted(mask.sample) == sorted(family.token_text(i) for i in expected)[: len(mask.sample)] or mask.allowed > 50
    )


@pytest.mark.parametrize("name", OTHERS)
def test_the_grammar_accepts_the_family_s_call_and_ends_there(name):
    import xgrammar as xgr

    family = get_format(name)
    begin, end = family.call_tag("count_letter")
    matcher = xgr.GrammarMatcher(_compiled(name, json.dumps(STRAWBERRY)))
    for token_id in family.encode(begin + json.dumps(ARGS) + end):
        assert matcher.accept_token(token_id), family.token_text(token_id)
    assert family_tokenizer_info(name).vocab_size == family.vocab_size


def test_before_the_opener_prose_is_free():
    mask = inspect_family_mask("mistral", STRAWBERRY, "There are three")
    assert not mask.constrained and mask.allowed == mask.vocab == 32768


def test_a_prefix_outside_the_format_is_refused_with_the_format_s_start():
    with pytest.raises(BadInput, match=r"its calls start '\{\"name\": \"'"):
        inspect_family_mask("llama3.1", STRAWBERRY, '{"name": "spell')


def test_mask_family_on_the_command_line(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code = main(
        [
            "mask",
            "--family",
            "gpt-oss",
            "--tools",
            str(LESSONS / "tools" / "strawberry.json"),
            "--prefix",
            "<|channel|>commentary to=functions.",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["family"] == "gpt-oss" and data["vocab"] == 199_998 + 1_091
    assert data["allowed"] == allowed_at_name("gpt-oss", STRAWBERRY).allowed and "count" in data["sample"]
    code = main(
        [
            "mask",
            "--family",
            "gpt-oss",
            "--tools",
            str(LESSONS / "tools" / "strawberry.json"),
            "--prefix",
            "x",
            "--tool-choice",
            "required",
        ]
    )
    assert code == 2 and "only under --tool-choice auto" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "builtin"),
    [("llama3.1", "llama"), ("gpt-oss", "harmony"), ("deepseek-v3", "deepseek_r1"), ("deepseek-v3.1", "deepseek_v3_1")],
)
def test_xgrammar_s_own_tag_for_the_format_agrees(name, builtin):
    # xgrammar ships structural tags for these formats: each accepts the family's call and allows as many tokens at the name
    import numpy as np
    import xgrammar as xgr

    family = get_format(name)
    info = family_tokenizer_info(name)
    tag = xgr.get_model_structural_tag(builtin, tools=STRAWBERRY, tool_choice="auto", reasoning="disabled")
    grammar = xgr.GrammarCompiler(info, max_threads=1).compile_structural_tag(tag)
    matcher = xgr.GrammarMatcher(grammar)
    assert all(matcher.accept_token(i) for i in family.encode(family.write_call("count_letter", ARGS)))
    matcher = xgr.GrammarMatcher(grammar)
    assert all(matcher.accept_token(i) for i in family.encode(family.name_prefix))
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    theirs = int(np.unpackbits(bitmask.numpy().view(np.uint8), bitorder="little")[: info.vocab_size].sum())
    assert theirs == allowed_at_name(name, STRAWBERRY).allowed
