"""The grammar and the schema check agree: what the mask lets a call through is what the parser's
checks accept, for every schema feature the grammar claims to enforce; a schema it cannot hold
as the check does is decoded unconstrained, with the reason beside the tool.

Acceptance by the mask = walking the call's tokens through the compiled grammar, then
<|im_end|>. Acceptance by the check = engine.core.parse finds the call and no error. Calls are
written in the template's form (its separators, the schema's property order), the form the
grammar holds on purpose (engine/constrain/grammar.py's docstring says why).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.constrain import grammar, schemas
from engine.constrain.grammar import compile_calls
from engine.constrain.masks import make_constraint
from engine.core.call_formats import parse_turn
from engine.core.tokenizer import IM_END, load_tokenizer
from engine.core.tooldefs import load_tool_set
from engine.errors import BadInput


@pytest.fixture(scope="module", autouse=True)
def xgr_info():
    return grammar.tokenizer_info()


def fn(name: str, parameters: dict) -> dict:
    return {
        "type": "function",
        "function": {"name": name, "description": f"The {name} tool.", "parameters": parameters},
    }


def call(name: str, arguments: dict) -> str:
    written = json.dumps(arguments, ensure_ascii=False, separators=(", ", ": "))
    return f'<tool_call>\n{{"name": "{name}", "arguments": {written}}}\n</tool_call>'


def mask_accepts(tools: list[dict], text: str, shape: str = "calls", thinking: bool | int = False) -> bool:
    import xgrammar as xgr

    matcher = xgr.GrammarMatcher(compile_calls(tools, shape, thinking))
    for token_id in load_tokenizer().encode(text):
        if not matcher.accept_token(token_id):
            return False
    return matcher.accept_token(IM_END) and matcher.is_terminated()


def check_accepts(tools: list[dict], text: str) -> bool:
    result = parse_turn(text, tools)
    return bool(result.calls) and not result.errors


def raw_xgrammar_accepts(params: dict, arguments: dict) -> bool:
    """What xgrammar's own JSON-schema grammar does with the parameters as they are (no rewriting)."""
    import xgrammar as xgr

    compiled = grammar.compiler().compile_json_schema(
        json.dumps(params), any_whitespace=False, separators=schemas.SEPARATORS
    )
    matcher = xgr.GrammarMatcher(compiled)
    return (
        matcher.accept_string(json.dumps(arguments, ensure_ascii=False, separators=schemas.SEPARATORS))
        and matcher.is_completed()
    )


# what pydantic writes for a model with a nested model
PYDANTIC = {
    "$defs": {
        "Point": {
            "properties": {"x": {"title": "X", "type": "integer"}, "y": {"title": "Y", "type": "integer"}},
            "required": ["x", "y"],
            "title": "Point",
            "type": "object",
        }
    },
    "properties": {"to": {"$ref": "#/$defs/Point"}, "speed": {"default": 1, "title": "Speed", "type": "integer"}},
    "required": ["to"],
    "title": "Move",
    "type": "object",
}
# a tree: "#" is the parameters themselves
RECURSIVE = {"type": "object", "properties": {"v": {"type": "integer"}, "next": {"$ref": "#"}}, "required": ["v"]}
OBJ_A = {"type": "object", "properties": {"a": {"type": "integer"}}}

AGREE = {
    "additionalProperties true: an extra argument": ({**OBJ_A, "additionalProperties": True}, {"a": 1, "x": "y"}, True),
    "additionalProperties schema: a fitting extra": (
        {**OBJ_A, "additionalProperties": {"type": "integer"}},
        {"a": 1, "x": 2},
        True,
    ),
    "additionalProperties schema: an unfitting extra": (
        {**OBJ_A, "additionalProperties": {"type": "integer"}},
        {"a": 1, "x": "s"},
        False,
    ),
    "additionalProperties false: an extra": ({**OBJ_A, "additionalProperties": False}, {"a": 1, "x": 2}, False),
    "nothing said: an extra": (OBJ_A, {"a": 1, "x": 2}, False),
    "a nested object refuses an unlisted property": (
        {"type": "object", "properties": {"p": {"type": "object", "properties": {"x": {"type": "integer"}}}}},
        {"p": {"x": 1, "y": 2}},
        False,
    ),
    "a nested object with no properties takes any": (
        {"type": "object", "properties": {"p": {"type": "object"}}},
        {"p": {"y": 2}},
        True,
    ),
    "a oneOf of disjoint types": (
        {"type": "object", "properties": {"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}},
        {"v": 3},
        True,
    ),
    "a oneOf told apart by a const": (
        {
            "type": "object",
            "properties": {
                "v": {
                    "oneOf": [
                        {
                            "type": "object",
                            "properties": {"kind": {"const": "a"}, "n": {"type": "integer"}},
                            "required": ["kind"],
                        },
                        {
                            "type": "object",
                            "properties": {"kind": {"const": "b"}, "n": {"type": "integer"}},
                            "required": ["kind"],
                        },
                    ]
                }
            },
        },
        {"v": {"kind": "b", "n": 2}},
        True,
    ),
    "format is asserted by neither": (
        {"type": "object", "properties": {"d": {"type": "string", "format": "date"}}},
        {"d": "not a date"},
        True,
    ),
    "pydantic $defs: a good point": (PYDANTIC, {"to": {"x": 1, "y": 2}}, True),
    "pydantic $defs: a string inside": (PYDANTIC, {"to": {"x": "1", "y": 2}}, False),
    "pydantic $defs: a missing field inside": (PYDANTIC, {"to": {"x": 1}}, False),
    'a "#" reference: a tree': (RECURSIVE, {"v": 1, "next": {"v": 2, "next": {"v": 3}}}, True),
    'a "#" reference points at the parameters, not the call': (
        RECURSIVE,
        {"v": 1, "next": {"name": "t", "arguments": {"v": 1}}},
        False,
    ),
}


@pytest.mark.parametrize("label", list(AGREE))
@pytest.mark.parametrize("company", ["alone", "with other tools"])
def test_mask_and_check_agree(label, company):
    params, arguments, expected = AGREE[label]
    tools = [fn("t", params)] + (load_tool_set("strawberry") if company != "alone" else [])
    text = call("t", arguments)
    assert make_constraint(tools, "required").unconstrained_reason is None
    assert (mask_accepts(tools, text), check_accepts(tools, text)) == (expected, expected)


def test_references_used_to_point_at_the_call():
    # the call schema puts the parameters under "arguments": unrewritten, "#" meant the whole call
    wrapped = {
        "type": "object",
        "properties": {"name": {"const": "t"}, "arguments": RECURSIVE},
        "required": ["name", "arguments"],
    }
    inner_call = {"name": "t", "arguments": {"v": 1}}
    assert raw_xgrammar_accepts(wrapped, {"name": "t", "arguments": {"v": 1, "next": inner_call}}) is True
    assert mask_accepts([fn("t", RECURSIVE)], call("t", {"v": 1, "next": inner_call})) is False


HELD_APART = {
    "pattern is a search": (
        {"type": "object", "properties": {"s": {"type": "string", "pattern": "b"}}},
        {"s": "abc"},
        True,
        "parameters.properties.s uses 'pattern', which the grammar (xgrammar) cannot hold as the schema check does",
    ),
    "patternProperties is a search too": (
        {**OBJ_A, "patternProperties": {"^x": {"type": "integer"}}},
        {"a": 1, "xy": 2},
        True,
        "parameters uses 'patternProperties', which the grammar (xgrammar) cannot hold as the schema check does",
    ),
    "dependentRequired": (
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "dependentRequired": {"a": ["b"]},
        },
        {"a": 1},
        False,
        "parameters uses 'dependentRequired', which the grammar engine (xgrammar) does not enforce",
    ),
    "a oneOf whose branches overlap": (
        {"type": "object", "properties": {"v": {"oneOf": [{"type": "integer"}, {"type": "number"}]}}},
        {"v": 1},
        False,
        "parameters.properties.v uses oneOf (branches that may overlap), which the grammar (xgrammar) cannot hold as the schema check does",
    ),
    "multipleOf on a number": (
        {"type": "object", "properties": {"v": {"type": "number", "multipleOf": 0.5}}},
        {"v": 0.3},
        False,
        "parameters.properties.v uses multipleOf (on a number that is not an integer), which the grammar (xgrammar) cannot hold "
        "as the schema check does",
    ),
    "a bounded string with an escape": (
        {"type": "object", "properties": {"v": {"type": "string", "maxLength": 5}}},
        {"v": "a\nb"},
        True,
        "parameters.properties.v uses maxLength (the grammar's bounded strings cannot hold an escape such as \\n or \\\"), "
        "which the grammar (xgrammar) cannot hold as the schema check does",
    ),
    "a bounded number with seven decimals": (
        {"type": "object", "properties": {"v": {"type": "number", "minimum": 0}}},
        {"v": 1.5703125},
        True,
        "parameters.properties.v uses minimum on a number (the grammar's bounded numbers take at most 6 decimals and no exponent), "
        "which the grammar (xgrammar) cannot hold as the schema check does",
    ),
    "a bounded number with an exponent": (
        {"type": "object", "properties": {"v": {"type": "number", "maximum": 1}}},
        {"v": 1e-05},
        True,
        "parameters.properties.v uses maximum on a number (the grammar's bounded numbers take at most 6 decimals and no exponent), "
        "which the grammar (xgrammar) cannot hold as the schema check does",
    ),
}


@pytest.mark.parametrize("label", list(HELD_APART))
def test_keywords_the_grammar_would_hold_differently_leave_the_turn_unconstrained(label):
    params, arguments, checked, reason = HELD_APART[label]
    tools = [fn("t", params), *load_tool_set("strawberry")]
    # xgrammar on its own disagrees with the check here: that is why the grammar is not used
    assert raw_xgrammar_accepts(params, arguments) is not checked
    assert check_accepts(tools, call("t", arguments)) is checked
    for mode in ("auto", "required"):
        constraint = make_constraint(tools, mode)
        assert constraint.unconstrained_reason == f"unconstrained: tool 't': {reason}"
        assert constraint.next_mask() is None
    with pytest.raises(BadInput, match="tool_choice names 't', but its schema cannot be constrained"):
        make_constraint(tools, "t")


@pytest.mark.parametrize(
    "ref, reason",
    [
        (
            "#foo",
            "parameters.properties.p uses $ref '#foo' (only references into the same schema, '#' or '#/...', can be followed)",
        ),
        (
            "other.json#/x",
            "parameters.properties.p uses $ref 'other.json#/x' (only references into the same schema, '#' or '#/...', can be followed)",
        ),
    ],
)
def test_references_that_cannot_be_followed_are_said(ref, reason):
    tools = [fn("t", {"type": "object", "properties": {"p": {"$ref": ref}}})]
    assert make_constraint(tools, "required").unconstrained_reason == (
        f"unconstrained: tool 't': {reason}, which the grammar (xgrammar) cannot hold as the schema check does"
    )


def test_pydantic_schemas_work_from_the_command_line(tmp_path, capsys):
    from engine.__main__ import main

    path = tmp_path / "tools.json"
    path.write_text(json.dumps([fn("move", PYDANTIC)]), encoding="utf-8")
    prefix = '<tool_call>\n{"name": "move", "arguments": {"to": {'
    assert main(["mask", "--tools", str(path), "--prefix", prefix, "--tool-choice", "move"]) == 0
    out = json.loads(capsys.readouterr().out)
    # inside Point: only its first property, x, may start
    assert (out["constrained"], out["allowed"], sorted(out["sample"])) == (True, 2, ['"', '"x'])


# -- generated schemas: mask acceptance equals check acceptance -----------------------------------
CHARS = st.sampled_from(["a", "b", "Z", " ", "é", '"', "\\", "\n", "0", "/", "<", "😀"])
TEXT = st.lists(CHARS, max_size=4).map("".join)
JUNK = st.sampled_from(["x", "", "abcdef", 0, 7, -3, 1.5, True, False, None, [], [1], {}, {"k": 1}])

LEAVES = st.one_of(
    st.just({"type": "string"}),
    st.lists(TEXT, min_size=1, max_size=3, unique=True).map(lambda values: {"type": "string", "enum": values}),
    st.just({"type": "integer"}),
    st.builds(
        lambda lo, span: {"type": "integer", "minimum": lo, "maximum": lo + span},
        st.integers(-5, 5),
        st.integers(0, 10),
    ),
    st.just({"type": "number"}),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.sampled_from([{"const": "on"}, {"const": 3}, {"const": True}]),
    st.just({"type": ["string", "null"]}),
)
SCHEMAS = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.builds(
            lambda items, lo: {"type": "array", "items": items, "minItems": lo, "maxItems": lo + 2},
            inner,
            st.integers(0, 1),
        ),
        st.builds(lambda branch: {"anyOf": [branch, {"type": "null"}]}, inner),
        st.just({"oneOf": [{"type": "string"}, {"type": "integer"}]}),
        st.dictionaries(st.sampled_from(["p", "q"]), inner, min_size=1, max_size=2).map(
            lambda props: {"type": "object", "properties": props, "required": sorted(props)[:1]}
        ),
    ),
    max_leaves=4,
)


def values_for(schema: dict):
    """Values the schema allows, mostly (the test compares verdicts, so a few misses are fine)."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    if "anyOf" in schema or "oneOf" in schema:
        return st.one_of(*[values_for(b) for b in schema.get("anyOf") or schema["oneOf"]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of(TEXT, st.none())
    if kind == "string":
        return TEXT
    if kind == "integer":
        return st.integers(schema.get("minimum", -50), schema.get("maximum", 50))
    if kind == "number":
        return st.one_of(
            st.integers(-100, 100), st.floats(-1e6, 1e6, allow_nan=False).filter(lambda f: not f.is_integer())
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(
            values_for(schema["items"]), min_size=schema.get("minItems", 0), max_size=schema.get("maxItems", 3)
        )
    props = schema["properties"]
    drawn = st.fixed_dictionaries({}, optional={k: st.one_of(values_for(v), JUNK) for k, v in props.items()})
    # in the schema's order, as the template writes a dict it was given in that order
    return drawn.map(lambda d: {k: d[k] for k in props if k in d})


@st.composite
def tool_and_arguments(draw):
    props = draw(st.dictionaries(st.sampled_from(["a", "b", "c"]), SCHEMAS, min_size=1, max_size=3))
    required = draw(st.lists(st.sampled_from(sorted(props)), unique=True, max_size=len(props)))
    params = {"type": "object", "properties": props, "required": required}
    arguments = draw(values_for(params))
    return params, arguments


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(tool_and_arguments())
def test_generated_schemas_mask_equals_check(case):
    params, arguments = case
    tools = [fn("t", params)]
    text = call("t", arguments)
    assert make_constraint(tools, "required").unconstrained_reason is None
    assert mask_accepts(tools, text, "call") == check_accepts(tools, text), (
        params,
        arguments,
        parse_turn(text, tools).errors,
    )


# a character below 256 before a hex digit: xgrammar prints "éa" as "\\xe9a" and reads that back as one character,
# U+0E9A; the grammar's text is rewritten with four-digit escapes (schemas.ebnf_text), so each value is writable
LATIN_BEFORE_HEX = ["éa", "ça", "ÿf0", "é", "naïve", "Ωa", "日本", "\u0001a", "a\\b", 'x"y']


@pytest.mark.parametrize("value", LATIN_BEFORE_HEX)
@pytest.mark.parametrize("keyword", ["enum", "const"])
def test_a_value_with_a_latin_1_character_before_a_hex_digit_is_writable(value, keyword):
    params = {
        "type": "object",
        "properties": {"a": {"type": "string", keyword: [value] if keyword == "enum" else value}},
    }
    tools = [fn("t", params)]
    assert mask_accepts(tools, call("t", {"a": value}), "call") and check_accepts(tools, call("t", {"a": value}))
    assert not mask_accepts(tools, call("t", {"a": value + "x"}), "call")


def test_the_grammar_text_reads_back_as_the_same_grammar():
    import xgrammar as xgr

    source = xgr.Grammar.from_ebnf('root ::= "\\u00e9a" | "\\\\x41"')  # é then a; or a backslash, then x41
    # xgrammar's own printed text reads back as another grammar (U+0E9A)...
    assert "\\u0e9a" in str(xgr.Grammar.from_ebnf(str(source)))
    # ...ebnf_text's reads back as the same one, and leaves a literal backslash before an x alone
    text = schemas.ebnf_text(source)
    assert str(xgr.Grammar.from_ebnf(text)) == str(source) and "\\\\x41" in text


# -- xgrammar's own Qwen3 tag ----------------------------------------------------------------------
COUNT = call("count_letter", {"word": "strawberry", "letter": "r"})
TOKENIZE = call("tokenize", {"text": "strawberry"})
# text -> (ours, xgrammar's) for required; the rows where they differ are the two differences
# grammar.py's docstring gives
REQUIRED_CORPUS = {
    "one call": (COUNT, True, True),
    "two calls": (f"{COUNT}\n{TOKENIZE}", True, True),
    "an unknown tool": (call("count_letters", {"word": "a", "letter": "r"}), False, False),
    "a wrong type": (call("count_letter", {"word": 3, "letter": "r"}), False, False),
    "a missing argument": (call("count_letter", {"word": "a"}), False, False),
    "an extra argument": (call("count_letter", {"word": "a", "letter": "r", "x": 1}), False, False),
    "prose only": ("Three.", False, False),
    "prose, then the call": (f"Let me check. {COUNT}", False, False),
    "compact JSON": (
        COUNT.replace('{"name": "count_letter", "arguments": ', '{"name":"count_letter","arguments":'),
        False,
        False,
    ),
    "not closed": (COUNT[: -len("\n</tool_call>")], False, False),
    "space inside the arguments": (COUNT.replace('{"word"', '{ "word"'), False, True),
    "a newline inside the arguments": (COUNT.replace('"r"}}', '"r"\n}}'), False, True),
    "text after the call": (f"{COUNT} Done.", False, True),
}
NAMED_CORPUS = {
    "one call": (COUNT, True, True),
    "two calls": (f"{COUNT}\n{COUNT}", False, False),
    "another tool": (TOKENIZE, False, False),
    "text after the call": (f"{COUNT} Done.", False, False),
    "space inside the arguments": (COUNT.replace('{"word"', '{ "word"'), False, True),
}


def xgrammar_qwen3_accepts(tools: list[dict], tool_choice, text: str, reasoning: str = "disabled") -> bool:
    import xgrammar as xgr

    tag = xgr.get_model_structural_tag("qwen_3", tools=tools, tool_choice=tool_choice, reasoning=reasoning)
    matcher = xgr.GrammarMatcher(grammar.compiler().compile_structural_tag(tag))
    for token_id in load_tokenizer().encode(text):
        if not matcher.accept_token(token_id):
            return False
    return matcher.accept_token(IM_END) and matcher.is_terminated()


@pytest.mark.parametrize(
    "mode, label", [("required", k) for k in REQUIRED_CORPUS] + [("named", k) for k in NAMED_CORPUS]
)
def test_ours_and_xgrammars_qwen3_tag(mode, label):
    strawberry = load_tool_set("strawberry")
    text, ours, theirs = (REQUIRED_CORPUS if mode == "required" else NAMED_CORPUS)[label]
    choice = "required" if mode == "required" else {"type": "function", "function": {"name": "count_letter"}}
    subset = strawberry if mode == "required" else strawberry[:1]
    assert mask_accepts(subset, text, "calls" if mode == "required" else "call") is ours
    assert xgrammar_qwen3_accepts(strawberry, choice, text) is theirs
    if ours != theirs:
        # only whitespace in the arguments, or text after a required call: what the template never writes
        assert label in {"space inside the arguments", "a newline inside the arguments", "text after the call"}


def test_xgrammars_normalize_tool_choice_agrees_with_ours():
    from xgrammar.builtin_structural_tag import normalize_tool_choice as theirs

    from engine.constrain.masks import normalize_tool_choice as ours

    strawberry = load_tool_set("strawberry")
    for choice, simplified in [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "auto"),
        ({"type": "function", "function": {"name": "tokenize"}}, "forced"),
    ]:
        functions, _, mode = theirs(strawberry, choice)
        mine, name = ours(choice, strawberry)
        assert mode == simplified
        assert {"named": "forced", "none": "auto"}.get(mine, mine) == mode
        # "none" keeps no tools there; here it is no constraint at all, which is the same turn
        assert [f.function.name for f in functions] == (
            [name] if name else [] if choice == "none" else ["count_letter", "tokenize"]
        )


@pytest.mark.parametrize(
    "text, expected",
    [
        (f"<think>\nI should count.\n</think>\n\n{COUNT}", True),
        (f"<think>\n{TOKENIZE}\n</think>\n\n{COUNT}", True),
        (f"<think>\n</think>\n\n{COUNT}", True),
        (COUNT, True),
        (f"<think>\nhm\n</think>{COUNT}", False),
        ("<think>\nhm\n</think>\n\n", False),
    ],
)
def test_with_thinking_ours_and_xgrammars_agree(text, expected):
    strawberry = load_tool_set("strawberry")
    assert mask_accepts(strawberry, text, "calls", thinking=True) is expected
    assert xgrammar_qwen3_accepts(strawberry, "required", text, reasoning="auto") is expected
