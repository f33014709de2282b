"""engine/constrain/server_grammar.py: the call's grammar as text for a server, checked against xgrammar and the local grammar.

llama.cpp's reading of the GBNF is tested against llama.cpp itself in tests/test_llama_cpp.py."""

from __future__ import annotations

import json

import pytest
from helpers import COUNT_CALL, ROOT, function

from engine.constrain.grammar import compiler
from engine.constrain.masks import walk
from engine.constrain.schemas import SchemaUnsupported
from engine.constrain.server_grammar import build_server_grammar, to_gbnf
from engine.core.tokenizer import load_tokenizer
from engine.core.tooldefs import tool_name

STRAWBERRY = json.loads((ROOT / "lessons" / "tools" / "strawberry.json").read_text())
TOKENIZE_CALL = '<tool_call>\n{"name": "tokenize", "arguments": {"text": "strawberry"}}\n</tool_call>'


def accepts(grammar_text: str, text: str) -> bool:
    """Whether xgrammar, compiled over the Qwen3 vocabulary as vLLM compiles it, takes `text` as a whole reply."""
    import xgrammar as xgr

    matcher = xgr.GrammarMatcher(compiler().compile_grammar(grammar_text))
    return all(matcher.accept_token(i) for i in load_tokenizer().encode(text)) and matcher.is_completed()


def shipped_tool_sets() -> list[list[dict]]:
    return [json.loads(p.read_text()) for p in sorted((ROOT / "lessons" / "tools").glob("*.json"))]


def test_vllms_grammar_compiles_in_xgrammar_for_every_shipped_tool_set_and_choice():
    count = 0
    for tools in shipped_tool_sets():
        for choice in ["required", *(tool_name(t) for t in tools)]:
            for thinking in (False, True):
                grammar = build_server_grammar(tools, choice, "xgrammar", thinking)
                compiler().compile_grammar(grammar.text)
                assert grammar.dialect == "xgrammar" and grammar.text.startswith("root ::= ")
                count += 1
    assert count >= 30


@pytest.mark.parametrize(
    ("choice", "text", "expected"),
    [
        ("count_letter", COUNT_CALL, True),
        ("count_letter", TOKENIZE_CALL, False),  # the named tool only
        ("count_letter", COUNT_CALL + "\n" + COUNT_CALL, False),  # a named tool is called once
        ("required", COUNT_CALL + "\n" + TOKENIZE_CALL, True),  # required may call again
        ("required", COUNT_CALL.replace('": "', '":"'), False),  # the template's separators only
        ("required", "The answer is 3.", False),  # no prose under required
        ("required", "<think>\nr, r, r\n</think>\n\n" + COUNT_CALL, False),  # reasoning only with thinking on
    ],
)
def test_the_servers_grammar_accepts_what_the_local_grammar_accepts(choice, text, expected):
    grammar = build_server_grammar(STRAWBERRY, choice, "xgrammar")
    assert accepts(grammar.text, text) is expected
    # the local grammar's walk over the same text agrees (it stops at the first token it forbids)
    steps = walk(STRAWBERRY, text, choice)
    assert all(s.ok for s in steps) is expected


def test_with_thinking_the_reasoning_may_come_first_but_cannot_hold_a_closing_tag():
    grammar = build_server_grammar(STRAWBERRY, "required", "xgrammar", thinking=True)
    assert accepts(grammar.text, "<think>\nThe word has 3 r's; a < b.\n</think>\n\n" + COUNT_CALL)
    assert accepts(grammar.text, COUNT_CALL)
    assert not accepts(grammar.text, "<think>\nsee </b>\n</think>\n\n" + COUNT_CALL)


def test_gbnf_has_no_lookahead_no_underscore_in_rule_names_and_only_escapes_llama_cpp_reads():
    ebnf = (
        'root ::= (("\\"" basic_sub) | ([^\\0-\\x1f\\"\\\\] basic_sub)) (=([ \\n]* [,}\\]:]))\n'
        'basic_sub ::= ([+\\-] basic_x{0, -1} basic_x{1, 3} "\\/")\nbasic_x ::= [a-z]'
    )
    assert to_gbnf(ebnf) == (
        'root ::= (("\\"" basic-sub) | ([^\\u0000-\\u001F"\\\\] basic-sub)) \n'
        'basic-sub ::= ([+\\u002D] basic-x{0,} basic-x{1,3} "/")\nbasic-x ::= [a-z]'
    )
    text = build_server_grammar(STRAWBERRY, "required", "gbnf").text
    names = [line.split(" ::= ")[0] for line in text.splitlines() if " ::= " in line]
    assert "root" in names and all("_" not in n for n in names) and "(=" not in text
    # the tool names inside literals keep their underscores
    assert '"\\"count_letter\\""' in text


def test_a_schema_the_grammar_cannot_hold_is_refused_as_locally():
    with pytest.raises(SchemaUnsupported, match="pattern"):
        build_server_grammar([function("find", {"q": {"type": "string", "pattern": "^a"}})], "required", "gbnf")
    with pytest.raises(ValueError, match="names no tool"):
        build_server_grammar(STRAWBERRY, "missing", "xgrammar")


def test_vllms_grammar_compiles_in_xgrammar_for_random_hostile_schemas():
    import xgrammar as xgr
    from hostile_schemas import hostile_grammars

    grammars, refused = hostile_grammars(range(200), "xgrammar")
    assert len(grammars) > 250 and refused > 0
    for text in grammars:
        xgr.Grammar.from_ebnf(text)  # raises on a grammar vLLM's backend could not read
