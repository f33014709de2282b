"""The call formats' registry (engine.core.call_formats): exactly the shipped formats, their flags, and each one
round-tripping what it writes; a new format joins every list by its flags alone."""

from __future__ import annotations

import re

import pytest

import engine.core.call_formats as call_formats
from engine.core.call_formats import (
    FORMATS,
    CallFormat,
    check_title,
    constrained_format,
    families,
    family_names,
    find_name_token,
    get_format,
    lesson_format_names,
    other_lesson_format,
    parse_turn,
)
from engine.core.call_formats.registry import Registry
from engine.core.parse import CHECK_TITLES
from engine.core.prompt import Request, render
from engine.core.tokenizer import load_tokenizer
from engine.core.tooldefs import load_tool_set
from engine.errors import BadInput

TOOLS = load_tool_set("strawberry")
CALLS = [
    ("count_letter", {"word": "strawberry", "letter": "r"}),
    ("count_letter", {"word": "Erdbeere – ünïcödé", "letter": "e"}),
    ("tokenize", {"text": 'a "quoted"\nline'}),
]
LESSONS = ("native", "react")


def test_the_registry_lists_exactly_the_shipped_formats_in_order():
    assert FORMATS.names() == (
        "native",
        "react",
        "qwen3-coder",
        "llama3.1",
        "mistral",
        "gpt-oss",
        "deepseek-v3",
        "deepseek-v3.1",
    )
    assert lesson_format_names() == LESSONS
    assert family_names() == ("qwen3", "qwen3-coder", "llama3.1", "mistral", "gpt-oss", "deepseek-v3", "deepseek-v3.1")
    assert [get_format(n).label for n in LESSONS] == ["Native", "ReAct"]
    assert all(
        isinstance(f, CallFormat) and f.label and f.family and f.renderer and f.parser_reference
        for f in FORMATS.values()
    )
    assert all(f.help and f.noun and f.name_marker for f in map(get_format, LESSONS))


def test_flags_say_what_pages_ask():
    # Qwen3 native is the family's own format, held by the Qwen3 grammar; ReAct only the prompt asks for
    native, react = get_format("native"), get_format("react")
    assert native.maker_format and native.constrained and native.special_opener and native.parallel
    assert not react.maker_format and not react.constrained and not react.special_opener and not react.parallel
    assert constrained_format() is native
    # every other family's format is its maker's, held by a structural tag over its own vocabulary
    others = [f for f in FORMATS.values() if not f.in_lessons]
    assert others and all(f.maker_format and f.tag_grammar and not f.constrained for f in others)
    # Qwen3-Coder's arguments are not JSON: its grammar writes the schema as xgrammar's qwen_xml parameters
    assert [f.family for f in FORMATS.values() if f.argument_style != "json"] == ["qwen3-coder"]
    assert [f.family for f in FORMATS.values() if f.special_opener] == [
        "qwen3",
        "qwen3-coder",
        "mistral",
        "deepseek-v3",
        "deepseek-v3.1",
    ]


def test_a_family_name_stands_for_its_makers_format():
    assert get_format("qwen3") is get_format("native") is families()["qwen3"]
    assert get_format("llama3.1") is families()["llama3.1"]


def test_an_unknown_format_is_refused_with_the_names_there_are():
    with pytest.raises(
        BadInput, match="unknown call format 'json'; the call formats are native, react, qwen3-coder, llama3.1"
    ):
        get_format("json")
    with pytest.raises(BadInput, match="unknown call format"):
        render(Request([{"role": "user", "content": "hi"}], TOOLS, "json"))


def test_a_lesson_prompt_is_only_drawn_in_a_lesson_format():
    with pytest.raises(BadInput, match="drawn with its maker's renderer"):
        render(Request([{"role": "user", "content": "hi"}], TOOLS, "llama3.1"))


def test_a_policy_a_format_does_not_have_is_refused():
    assert get_format("native").policies == ("per-block", "vllm", "server")
    # every family has a server reading (the families' names are listed in the registry test above)
    assert [f.family for f in FORMATS.values() if "server" in f.policies] == list(family_names())
    with pytest.raises(BadInput, match="is read under the per-block or server policy, not 'vllm'"):
        parse_turn("{}", TOOLS, "llama3.1", "vllm")
    with pytest.raises(BadInput, match="is read under the per-block or vllm policy, not 'server'"):
        parse_turn("{}", TOOLS, "react", "server")
    with pytest.raises(BadInput, match="not 'lenient'"):
        parse_turn("{}", TOOLS, "native", "lenient")


@pytest.mark.parametrize("name", FORMATS.names())
@pytest.mark.parametrize(("tool", "arguments"), CALLS)
def test_a_written_call_parses_back_to_the_same_call_in_every_format(name, tool, arguments):
    written = get_format(name).write_call(tool, arguments)
    parsed = parse_turn(written, TOOLS, name)
    assert not parsed.errors and not parsed.final
    assert [(c.name, c.arguments) for c in parsed.calls] == [(tool, arguments)]
    assert [get_format(name).written_call(b, written) for b in parsed.blocks] == [(tool, arguments)]


@pytest.mark.parametrize("style", LESSONS)
@pytest.mark.parametrize(("name", "arguments"), CALLS)
def test_the_name_marker_points_at_the_token_where_the_name_starts(style, name, arguments):
    written = get_format(style).write_call(name, arguments)
    pieces = [p.text for p in load_tokenizer().encode_and_show_work(written)]
    index = find_name_token(pieces, style)
    assert index is not None and "".join(pieces[index:]).lstrip().startswith(name[0])


@pytest.mark.parametrize("name", FORMATS.names())
def test_a_written_answer_parses_back_as_the_same_answer(name):
    answer = 'The letter "r" appears 3 times in "strawberry".'
    parsed = parse_turn(get_format(name).write_answer(answer), TOOLS, name)
    assert parsed.final and not parsed.calls and parsed.answer == answer


@pytest.mark.parametrize(
    ("style", "seen"), [("native", "<tool_response>\n3\n</tool_response>"), ("react", "Observation: 3")]
)
def test_a_result_goes_back_as_the_format_says_in_the_rendered_prompt(style, seen):
    call = get_format(style).write_call(*CALLS[0])
    messages = [
        {"role": "user", "content": "How many r?"},
        {"role": "assistant", "content": call},
        {"role": "tool", "content": "3"},
    ]
    assert get_format(style).result_text("3") == seen
    assert seen in render(Request(messages, TOOLS, style)).text


def test_react_reads_a_reply_only_up_to_the_models_own_observation():
    reply = 'Thought: t\nAction: count_letter\nAction Input: {"word": "a", "letter": "a"}\nObservation: 9 (made up)'
    assert get_format("react").read_reply(reply).endswith('"letter": "a"}')
    assert get_format("native").read_reply(reply) == reply


def test_other_lesson_format_cycles_through_the_lesson_formats():
    assert other_lesson_format("native") == "react" and other_lesson_format("react") == "native"


@pytest.mark.parametrize("name", [n for n in FORMATS.names() if n not in LESSONS])
def test_each_family_names_its_own_markers_in_its_checks(name):
    # every marker a checks table names is one the family's own call writes (Qwen3's </tool_call> is not Llama's)
    titles = [check_title(name, c) for c in ("closed", "json", "shape")]
    written = get_format(name).write_call("count_letter", {"word": "a", "letter": "b"})
    for marker in (m for t in titles for m in re.findall(r"<[^\s>]+>", t)):
        assert marker.split("NAME")[0] in written, (name, marker)
    assert check_title(name, "closed") != CHECK_TITLES["closed"] and check_title(name, "types") == CHECK_TITLES["types"]


def test_a_malformed_call_in_a_family_fails_the_check_its_table_names():
    turn = (
        get_format("deepseek-v3")
        .write_call("count_letter", {"word": "a", "letter": "b"})
        .replace("<｜tool▁call▁end｜>", "")
    )
    block = parse_turn(turn, TOOLS, "deepseek-v3").blocks[0]
    failed = next(c for c in block.checks if c.passed is False)
    assert check_title("deepseek-v3", failed.name) == "the call is closed with <｜tool▁call▁end｜>"


def test_a_format_registered_later_joins_every_list_by_its_flags():
    class Plain(CallFormat):
        name, family, label, noun, order = "plain", "qwen3", "Plain", "plain", 5
        in_lessons, maker_format = True, False

    try:
        FORMATS.register(Plain())
        assert FORMATS.names()[2] == "plain"  # order 5: after native and react, before the other families
        assert lesson_format_names() == ("native", "react", "plain")
        assert "plain" not in [f.name for f in call_formats.family_formats()]
        assert other_lesson_format("react") == "plain" and other_lesson_format("plain") == "native"
    finally:
        FORMATS.unregister("plain")
    assert lesson_format_names() == LESSONS


def test_the_registry_refuses_an_entry_without_a_name_and_checks_what_it_is_given():
    registry: Registry[CallFormat] = Registry("thing", key=lambda f: f.name)
    with pytest.raises(BadInput, match="has no name"):
        registry.register(CallFormat())

    def needs_a_label(f):
        if not f.label:
            raise BadInput("a thing needs a label")

    checked: Registry[CallFormat] = Registry("thing", key=lambda f: f.name, check=needs_a_label)
    unlabelled = type("Unlabelled", (CallFormat,), {"name": "x"})()
    with pytest.raises(BadInput, match="needs a label"):
        checked.register(unlabelled)
    assert "x" not in checked and len(checked) == 0
    with pytest.raises(BadInput, match="unknown thing 'x'; the things are "):
        checked.get("x")


def test_a_new_format_is_one_file_found_by_the_registry(tmp_path, monkeypatch):
    # a package with one module that defines FORMAT: loading the folder registers it, nothing else is edited
    package = tmp_path / "more_formats"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "echo.py").write_text(
        "from engine.core.call_formats.base import CallFormat\n\n"
        "class Echo(CallFormat):\n    name, family, label = 'echo', 'echo', 'Echo'\n\n"
        "FORMAT = Echo()\n"
    )
    (package / "helpers.py").write_text("SOMETHING_ELSE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry: Registry[CallFormat] = Registry("call format", key=lambda f: f.name)
    import more_formats

    registry.load("more_formats", more_formats.__path__, "FORMAT", CallFormat)
    assert registry.names() == ("echo",)
