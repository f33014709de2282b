"""Cost limits on pasted tool definitions and on compiling them: each hostile case is answered
within a couple of seconds with a message that says the limit and what to do."""

from __future__ import annotations

import json
import time

import pytest

from engine.constrain import grammar, schemas
from engine.constrain.masks import make_constraint
from engine.core.tooldefs import MAX_DEFINITIONS_BYTES, find_cost_problem, find_tool_problems
from engine.errors import BadInput
from ui.tool_editor import MAX_EDITOR_CHARS, read_tools


def tool(name: str, parameters: dict, description: str = "A tool.") -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


HOSTILE = {
    "a 20,000-value enum": (
        tool(
            "pick",
            {"type": "object", "properties": {"v": {"type": "string", "enum": [f"value{i}" for i in range(20_000)]}}},
        ),
        "the enum of parameters.properties.v has 20,000 values; the limit is 1,000: "
        "take a plain string and let the tool check the value",
    ),
    "5,000 optional properties": (
        tool("wide", {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(5_000)}}),
        "its parameters have more than 100 properties; split it into smaller tools, each with the arguments it needs",
    ),
    "a 2 MB description": (
        tool("talk", {"type": "object", "properties": {}}, description="x" * 2_000_000),
        "the tool's description is 2,000,000 characters; the limit is 4,000: shorten it (the model reads it in every prompt)",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_pasted_definitions_are_refused_fast_with_the_limit(case):
    bad, message = HOSTILE[case]
    started = time.perf_counter()
    problems = find_tool_problems([bad])
    assert time.perf_counter() - started < 2
    assert problems == [f"tool {bad['function']['name']!r}: {message}"]


@pytest.mark.parametrize("case", list(HOSTILE))
def test_the_editor_answers_fast(case):
    bad, message = HOSTILE[case]
    text = json.dumps([bad], indent=2)
    started = time.perf_counter()
    tools, problems = read_tools(text)
    assert time.perf_counter() - started < 2
    assert tools is None and len(problems) == 1
    if len(text) > MAX_EDITOR_CHARS:
        assert problems == [
            f"The text is {len(text):,} characters; the limit is {MAX_EDITOR_CHARS:,}. "
            "Shorten the descriptions or remove tools, then the definitions are checked."
        ]
    else:
        assert problems == [f"tool {bad['function']['name']!r}: {message}"]


@pytest.mark.parametrize("case", list(HOSTILE))
def test_the_grammar_refuses_to_compile_them_fast(case):
    bad, message = HOSTILE[case]
    name = bad["function"]["name"]
    started = time.perf_counter()
    for mode in ("auto", "required"):
        constraint = make_constraint([bad], mode)
        assert constraint.unconstrained_reason == f"unconstrained: tool {name!r}: {message}"
        assert constraint.next_mask() is None
    with pytest.raises(BadInput, match=f"tool_choice names {name!r}, but its schema cannot be constrained"):
        make_constraint([bad], name)
    assert time.perf_counter() - started < 4


@pytest.mark.parametrize("case", list(HOSTILE))
def test_the_command_line_exits_2_with_one_line(case, tmp_path, capsys):
    from engine.__main__ import main

    bad, message = HOSTILE[case]
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([bad]), encoding="utf-8")
    assert main(["mask", "--tools", str(path), "--prefix", "", "--tool-choice", "required"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_many_tools_together_are_bounded():
    many = [
        tool(f"t{i}", {"type": "object", "properties": {"a": {"type": "string", "description": "d" * 3_000}}})
        for i in range(30)
    ]
    problems = find_tool_problems(many)
    # each is 3,154 bytes: the 21st passes the limit
    assert problems == [
        f"the tools up to tool 't20' are 66,224 bytes of JSON; the limit for all of them is "
        f"{MAX_DEFINITIONS_BYTES:,}: remove tools or shorten their descriptions"
    ]
    assert (
        find_tool_problems([many[0]] * 65)[0]
        == "there are 65 tools; the limit is 64: offer only the tools this task needs"
    )


@pytest.mark.parametrize(
    "label, definition, problem",
    [
        (
            "within every limit",
            tool("ok", {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(100)}}),
            None,
        ),
        (
            "101 properties over two levels",
            tool(
                "two",
                {
                    "type": "object",
                    "properties": {
                        "a": {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(100)}}
                    },
                },
            ),
            "its parameters have more than 100 properties; split it into smaller tools, each with the arguments it needs",
        ),
        (
            "a property named enum is walked like any other",
            tool(
                "named",
                {
                    "type": "object",
                    "properties": {
                        "enum": {
                            "type": "object",
                            "properties": {"description": {"type": "string", "description": "y" * 4_001}},
                        }
                    },
                },
            ),
            "the description of parameters.properties.enum.properties.description is 4,001 characters; the limit is 4,000: "
            "shorten it (the model reads it in every prompt)",
        ),
        (
            "five objects deep",
            tool("deep", json.loads('{"type": "object", "properties": {"a": ' * 5 + "{}" + "}}" * 5)),
            None,
        ),
        (
            "eight objects deep",
            tool("deep", json.loads('{"type": "object", "properties": {"a": ' * 8 + "{}" + "}}" * 8)),
            "it nests deeper than 16 levels; flatten the parameters",
        ),
    ],
)
def test_cost_problem_table(label, definition, problem):
    assert find_cost_problem(definition) == problem


# -- the compile's own time limit --------------------------------------------------------------
def test_a_compile_past_its_time_limit_leaves_the_turn_unconstrained(monkeypatch):
    # 100 optional properties: within the size limits, and about a third of a second to compile
    slow = tool("slow", {"type": "object", "properties": {f"q{i}": {"type": "string"} for i in range(100)}})
    grammar.compiler()
    started = time.perf_counter()
    with pytest.raises(schemas.SchemaUnsupported) as error:
        grammar.compile_calls([slow], "calls", timeout=0.001)
    assert time.perf_counter() - started < 1
    assert error.value.reason == (
        "the grammar took longer than 0.001 s to compile; fewer or smaller tools compile faster "
        "(its result is kept for the next turn)"
    )
    monkeypatch.setattr(grammar, "COMPILE_SECONDS", 0.001)
    constraint = make_constraint([slow], "auto")
    assert constraint is not None and constraint.next_mask() is None
    assert constraint.unconstrained_reason == "unconstrained: " + error.value.reason
    with pytest.raises(
        BadInput, match="tool_choice names 'slow', but its schema cannot be constrained: the grammar took longer"
    ):
        make_constraint([slow], "slow")
    # the compile went on in the background: once done, the next turn takes it from the cache
    monkeypatch.setattr(grammar, "COMPILE_SECONDS", 60.0)
    assert grammar.compile_calls([slow], "calls") is not None
    before = grammar._compile.cache_info()
    assert grammar.compile_calls([slow], "calls", timeout=0.5) is not None
    after = grammar._compile.cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)  # from the cache, not compiled again
