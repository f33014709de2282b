"""Constrained decoding: the grammar over a request's tools, tool_choice modes, masks, the CLI.

Masks are checked against the grammar engine itself (xgrammar), token by token, with the real
Qwen3 tokenizer. The property tests sample the tiny random-weights model: its near-uniform
choices explore the grammar far more widely than a trained model would.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from helpers import COUNT_CALL, function

from engine.constrain import grammar, schemas
from engine.constrain.grammar import compile_calls
from engine.constrain.masks import (
    MaskView,
    StepConstraint,
    TokenRejected,
    inspect_mask,
    make_constraint,
    normalize_tool_choice,
    walk,
)
from engine.core.tokenizer import IM_END, MODEL_VOCAB, REAL_VOCAB, TOOL_CALL, load_tokenizer
from engine.core.tooldefs import load_tool_set
from engine.errors import BadInput

NAME_PREFIX = '<tool_call>\n{"name": "'


@pytest.fixture(scope="session")
def xgr_info():
    """xgrammar's TokenizerInfo over the model vocabulary: 0.9 s, built once per session."""
    return grammar.tokenizer_info()


@pytest.fixture(scope="session")
def strawberry(xgr_info):
    return load_tool_set("strawberry")


@pytest.fixture(scope="session")
def harness(xgr_info):
    return load_tool_set("harness")


@pytest.fixture(scope="session")
def tok():
    return load_tokenizer()


# -- the figure of tool-calling-step-by-step (lessons/sources.json) ----------------------------------
def test_eight_of_151669_tokens_at_the_name(strawberry, tok):
    view = inspect_mask(strawberry, NAME_PREFIX, "auto")
    # the prefix as the model writes it: <tool_call> is one id
    assert view.prefix_ids == [TOOL_CALL, 198, 4913, 606, 788, 330]
    assert (view.vocab, view.allowed) == (151669, 8)
    assert sorted(view.allowed_tokens()) == sorted(["c", "co", "cou", "count", "t", "to", "tok", "token"])
    # every allowed token starts one of the two names; none is the start of anything else
    assert all("count_letter".startswith(t) or "tokenize".startswith(t) for t in view.allowed_tokens())
    assert inspect_mask(strawberry, NAME_PREFIX, "required").allowed == 8


def test_a_named_tool_leaves_only_its_own_name(strawberry):
    assert sorted(inspect_mask(strawberry, NAME_PREFIX, "tokenize").sample) == ["t", "to", "tok", "token"]
    assert sorted(inspect_mask(strawberry, NAME_PREFIX, "count_letter").sample) == ["c", "co", "cou", "count"]


# measured with xgrammar 0.2.9 and the vendored Qwen3 tokenizer, one entry per token of COUNT_CALL
COUNT_CALL_ALLOWED = [
    1,
    1,
    2,
    4,
    2,
    2,
    8,
    4,
    2,
    2,
    5,
    2,
    3,
    4,
    2,
    121,
    147061,
    147061,
    147061,
    147061,
    2,
    6,
    2,
    113,
    147021,
    147021,
    1,
]


def test_allowed_counts_at_every_step_of_a_whole_call(strawberry):
    steps = walk(strawberry, COUNT_CALL + "<|im_end|>", "required")
    assert all(s.ok for s in steps)
    tokens = [s.token for s in steps]
    assert tokens[:7] == ["<tool_call>", "\n", '{"', "name", '":', ' "', "count"]
    counts = [s.allowed for s in steps]
    assert counts[:-1] == COUNT_CALL_ALLOWED
    assert counts[0] == 1  # required: the opener is the only first token
    assert counts[1] == 1  # after the opener, only its newline
    assert counts[6] == 8  # the name
    assert counts[tokens.index("</tool_call>")] == 1  # the closing tag, as one token
    assert counts[-1] == 2  # after the call: <|im_end|>, or "\n" for another call


def test_auto_walks_the_same_call_and_leaves_the_rest_free(strawberry):
    steps = walk(strawberry, "Let me count.\n" + COUNT_CALL + "\nDone.", "auto")
    counts = [s.allowed for s in steps]
    opener = [s.id for s in steps].index(TOOL_CALL)
    assert counts[: opener + 1] == [None] * (opener + 1)  # prose, and the opener itself, are never masked
    closer = opener + len(COUNT_CALL_ALLOWED)
    assert counts[opener + 1 : closer] == COUNT_CALL_ALLOWED[1:]
    assert counts[closer:] == [None] * (len(counts) - closer)  # free again after </tool_call>


def test_a_forbidden_token_ends_the_walk(strawberry):
    steps = walk(strawberry, NAME_PREFIX + "read_file", "required")
    assert steps[-1].ok is False and steps[-1].token == "read" and steps[-1].allowed == 8


# -- the union grammar against the one-tool grammars -----------------------------------------
def accepts(compiled, ids: list[int]) -> bool:
    import xgrammar as xgr

    matcher = xgr.GrammarMatcher(compiled)
    return all(matcher.accept_token(i) for i in ids) and matcher.is_terminated()


def call(name: str, arguments: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call><|im_end|>'


UNION_CASES = [
    ("read_file", call("read_file", '{"path": "notes.txt"}'), True),
    ("list_files", call("list_files", '{"dir": "."}'), True),
    ("grep", call("grep", '{"pattern": "TODO", "path": "src"}'), True),
    ("run_tests, no arguments", call("run_tests", "{}"), True),
    ("run_tests, optional argument", call("run_tests", '{"pattern": "test_*.py"}'), True),
    ("an escaped newline in a string", call("write_file", '{"path": "a.py", "content": "x = 1\\n"}'), True),
    ("not a name: read_fil", call("read_fil", '{"path": "notes.txt"}'), False),
    ("not a name: read_files", call("read_files", '{"path": "notes.txt"}'), False),
    ("not a name: git_commit", call("git_commit", '{"message": "wip"}'), False),
    ("list_files arguments under read_file", call("read_file", '{"dir": "."}'), False),
    ("read_file arguments under list_files", call("list_files", '{"path": "notes.txt"}'), False),
    ("grep arguments under write_file", call("write_file", '{"pattern": "x", "path": "a"}'), False),
    ("missing required argument", call("grep", '{"pattern": "TODO"}'), False),
    ("unlisted argument", call("read_file", '{"path": "a", "mode": "r"}'), False),
    ("wrong type", call("read_file", '{"path": 3}'), False),
    ("arguments not an object", call("read_file", '"notes.txt"'), False),
    ("a raw newline in a string", call("write_file", '{"path": "a.py", "content": "x = 1\n"}'), False),
    ("properties out of the schema's order", call("grep", '{"path": "src", "pattern": "TODO"}'), False),
    (
        "no space after the colon",
        '<tool_call>\n{"name":"read_file", "arguments": {"path": "a"}}\n</tool_call><|im_end|>',
        False,
    ),
    (
        "arguments before the name",
        '<tool_call>\n{"arguments": {"path": "a"}, "name": "read_file"}\n</tool_call><|im_end|>',
        False,
    ),
    ("no closing tag", '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}<|im_end|>', False),
]


@pytest.mark.parametrize("label, text, expected", UNION_CASES, ids=[c[0] for c in UNION_CASES])
def test_union_accepts_exactly_what_the_single_tool_grammars_accept(harness, tok, label, text, expected):
    ids = tok.encode(text)
    union = accepts(compile_calls(harness, "calls"), ids)
    singles = [accepts(compile_calls([tool], "calls"), ids) for tool in harness]
    assert union == any(singles) == expected
    assert sum(singles) <= 1  # a call belongs to one tool at most


def test_the_template_renders_what_the_grammar_accepts(strawberry, tok):
    # the chat template's own rendering of a call, byte for byte, is a path through the grammar
    messages = [
        {"role": "user", "content": "x"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}},
                }
            ],
        },
    ]
    rendered = tok.render_chat(messages, strawberry, add_generation_prompt=False)
    assert COUNT_CALL in rendered
    assert all(s.ok for s in walk(strawberry, COUNT_CALL, "required"))


def test_compiled_once_per_tool_set(strawberry):
    first = compile_calls(strawberry, "calls")
    again = compile_calls(json.loads(json.dumps(strawberry)), "calls")
    assert first is again
    described = json.loads(json.dumps(strawberry))
    described[0]["function"]["description"] = "another description"
    assert compile_calls(described, "calls") is first  # descriptions do not change the grammar


# -- tool_choice modes ------------------------------------------------------------------------
def test_none_is_no_constraint(strawberry):
    assert make_constraint(strawberry, "none", None) is None
    view = inspect_mask(strawberry, NAME_PREFIX, "none")
    assert (view.allowed, view.constrained, view.state) == (REAL_VOCAB, False, "none")


def test_auto_is_free_until_the_opener_and_constrains_each_call(strawberry, tok):
    c = make_constraint(strawberry, "auto", tok)
    for token_id in tok.encode("I will count."):
        assert c.next_mask() is None
        c.accept(token_id)
    assert c.state == "free"
    for text in (COUNT_CALL, "\n" + COUNT_CALL.replace("strawberry", "raspberry")):
        for token_id in tok.encode(text):
            mask = c.next_mask()
            assert mask is None or bool(mask[token_id])
            c.accept(token_id)
        assert c.state == "free"
    assert c.calls == 2
    c.accept(TOOL_CALL)
    mask = c.next_mask()
    assert mask.shape == (MODEL_VOCAB,) and mask.dtype == torch.bool
    assert mask.nonzero().flatten().tolist() == [198]  # "\n"
    assert not mask[REAL_VOCAB:].any()  # padding is never allowed


def test_auto_sees_an_opener_spelled_in_pieces(strawberry, tok):
    c = make_constraint(strawberry, "auto", tok)
    pieces = [tok.token_id("<"), tok.encode("tool")[0], tok.encode("_call")[0], tok.token_id(">")]
    for token_id in pieces:
        assert c.next_mask() is None
        c.accept(token_id)
    assert c.state == "call" and c.next_mask().nonzero().flatten().tolist() == [198]


def test_required_starts_with_the_opener_and_may_call_again(strawberry, tok):
    c = make_constraint(strawberry, "required", tok)
    assert c.next_mask().nonzero().flatten().tolist() == [TOOL_CALL]
    with pytest.raises(TokenRejected):
        c.accept(tok.encode("Hello")[0])
    for token_id in tok.encode(COUNT_CALL):
        c.next_mask()
        c.accept(token_id)
    assert sorted(c.next_mask().nonzero().flatten().tolist()) == [198, IM_END]
    c.accept(IM_END)
    assert c.state == "done" and c.next_mask() is None


@pytest.mark.parametrize("choice", ["count_letter", {"type": "function", "function": {"name": "count_letter"}}])
def test_a_named_tool_is_called_once(strawberry, tok, choice):
    c = make_constraint(strawberry, choice, tok)
    assert (c.mode, c.tool) == ("named", "count_letter")
    for token_id in tok.encode(COUNT_CALL):
        c.next_mask()
        c.accept(token_id)
    assert c.next_mask().nonzero().flatten().tolist() == [IM_END]


@pytest.mark.parametrize(
    "choice, message",
    [
        (
            "read_file",
            "tool_choice names 'read_file', which is not one of the request's tools (count_letter, tokenize)",
        ),
        (
            {"type": "function", "function": {"name": "git_commit"}},
            "'git_commit', which is not one of the request's tools",
        ),
        ({"type": "function"}, 'tool_choice as an object needs {"type": "function", "function": {"name": ...}}'),
        (3, "tool_choice must be auto, required, none or a tool name"),
    ],
)
def test_bad_tool_choice_is_bad_input(strawberry, choice, message):
    with pytest.raises(
        BadInput,
        match=message.replace("(", r"\(")
        .replace(")", r"\)")
        .replace("{", r"\{")
        .replace("}", r"\}")
        .replace("[", r"\["),
    ):
        make_constraint(strawberry, choice, None)


def test_required_needs_a_tool():
    with pytest.raises(BadInput, match="needs at least one tool"):
        normalize_tool_choice("required", [])
    assert make_constraint([], "auto", None) is None


# -- schemas the grammar cannot hold --------------------------------------------------------
NOT_ENFORCED = function("tag", {"label": {"type": "string", "not": {"const": "x"}}})
NOT_COMPILED = function("find", {"query": {"type": "array", "minItems": 3, "maxItems": 1}})


@pytest.mark.parametrize(
    "bad, why",
    [
        (
            NOT_ENFORCED,
            "tool 'tag': parameters.properties.label uses 'not', which the grammar engine (xgrammar) does not enforce",
        ),
        (
            NOT_COMPILED,
            "tool 'find': the grammar engine (xgrammar) cannot compile its parameters: minItems is greater than maxItems: 3 > 1",
        ),
    ],
)
@pytest.mark.parametrize("mode", ["auto", "required"])
def test_uncompilable_schema_decodes_unconstrained_with_the_reason(strawberry, tok, bad, why, mode):
    c = make_constraint([*strawberry, bad], mode, tok)
    assert isinstance(c, StepConstraint)
    assert c.unconstrained_reason == "unconstrained: " + why
    assert c.state == "unconstrained" and c.reason == c.unconstrained_reason
    for token_id in tok.encode("Hello " + COUNT_CALL):
        assert c.next_mask() is None
        c.accept(token_id)
    view = inspect_mask([*strawberry, bad], NAME_PREFIX, mode)
    assert (view.allowed, view.constrained, view.unconstrained_reason) == (REAL_VOCAB, False, "unconstrained: " + why)


@pytest.mark.parametrize("bad", [NOT_ENFORCED, NOT_COMPILED], ids=["not enforced", "not compiled"])
def test_uncompilable_schema_refuses_a_named_tool_choice(strawberry, bad):
    name = bad["function"]["name"]
    with pytest.raises(
        BadInput, match=f"tool_choice names '{name}', but its schema cannot be constrained: tool '{name}'"
    ):
        make_constraint([*strawberry, bad], name, None)
    # another tool of the same request can still be named: only its own schema matters
    assert make_constraint([*strawberry, bad], "tokenize", None).next_mask() is not None


@pytest.mark.parametrize(
    "keyword, value",
    [
        ("not", {"const": 3}),
        ("if", {"minimum": 2}),
        ("uniqueItems", True),
        ("contains", {"const": 1}),
        ("propertyNames", {"maxLength": 1}),
        ("dependentSchemas", {"a": {"required": ["b"]}}),
        ("unevaluatedProperties", False),
        ("minContains", 2),
    ],
)
def test_keywords_called_unenforced_really_change_nothing_in_xgrammar(keyword, value):
    import xgrammar as xgr

    assert keyword in schemas.UNENFORCED

    def ebnf(schema):
        return str(xgr.Grammar.from_json_schema(schema, any_whitespace=False, separators=schemas.SEPARATORS))

    base = {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "integer"}}, "b": {"type": "integer"}},
    }
    assert ebnf({**base, keyword: value}) == ebnf(base)


def test_a_property_named_like_a_keyword_is_fine(tok):
    tool = function("negate", {"not": {"type": "boolean"}, "if": {"type": "integer"}})
    assert make_constraint([tool], "required", tok).unconstrained_reason is None


# -- what the model wanted, before and after ------------------------------------------------
def test_mask_view_with_logits_renormalises_over_the_allowed(strawberry):
    logits = torch.randn(MODEL_VOCAB, generator=torch.Generator().manual_seed(1)) * 3
    view = inspect_mask(strawberry, NAME_PREFIX, "auto", logits=logits, top_k=5)
    assert isinstance(view, MaskView)
    probs = torch.softmax(torch.cat([logits[:REAL_VOCAB], torch.full((MODEL_VOCAB - REAL_VOCAB,), float("-inf"))]), -1)
    allowed = view.mask
    assert view.allowed_mass == pytest.approx(float(probs[allowed].sum()), rel=1e-5)
    assert view.forbidden_mass == pytest.approx(float(probs[~allowed].sum()), rel=1e-5)
    assert [t.p for t in view.top_before] == pytest.approx(probs.topk(5).values.tolist())
    assert {t.id for t in view.top_after} <= set(view.allowed_ids())
    for t in view.top_after:  # each allowed token keeps its share, scaled up to fill the whole
        assert t.p == pytest.approx(float(probs[t.id]) / view.allowed_mass, rel=1e-4)
    assert len(view.top_after) == 5 and view.top_after[0].p >= view.top_after[-1].p


def test_mask_view_before_the_opener_changes_nothing(strawberry):
    logits = torch.randn(MODEL_VOCAB, generator=torch.Generator().manual_seed(2))
    view = inspect_mask(strawberry, "The answer is", "auto", logits=logits)
    assert view.forbidden_mass == 0.0 and view.top_after == view.top_before and view.allowed == REAL_VOCAB


def test_a_prefix_outside_the_grammar_is_bad_input(strawberry):
    with pytest.raises(BadInput, match=r"the prefix leaves the grammar at token 1 'Sure'"):
        inspect_mask(strawberry, "Sure, ", "required")
    with pytest.raises(BadInput, match=r"at token 7 'read'"):
        inspect_mask(strawberry, NAME_PREFIX + "read_file", "auto")


# -- the command line -------------------------------------------------------------------------
@pytest.mark.slow
def test_mask_command_line(tmp_path, strawberry):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(strawberry), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "engine", "mask", "--tools", str(tools), "--prefix", NAME_PREFIX],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=grammar.__file__.rsplit("/engine/", 1)[0],
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert (out["vocab"], out["allowed"]) == (151669, 8)
    assert sorted(out["sample"]) == sorted(["c", "co", "cou", "count", "t", "to", "tok", "token"])


@pytest.mark.parametrize(
    "choice, allowed, sample",
    [
        ("auto", 151669, 50),
        ("none", 151669, 50),
        ("required", 1, 1),
        ("tokenize", 1, 1),
    ],
)
def test_mask_at_the_start_of_a_turn(strawberry, choice, allowed, sample):
    view = inspect_mask(strawberry, "", choice)
    assert (view.vocab, view.allowed, len(view.sample)) == (151669, allowed, sample)


def test_mask_command_line_refuses_a_tool_not_in_the_request(tmp_path, strawberry, capsys):
    from engine.__main__ import main

    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(strawberry), encoding="utf-8")
    assert main(["mask", "--tools", str(tools), "--prefix", "", "--tool-choice", "git_commit"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "git_commit" in err
