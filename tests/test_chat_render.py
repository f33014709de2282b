"""The site's chat-template renderer against transformers' own: every shipped template, a table of conversations."""

import enum
import json
from dataclasses import dataclass

import jinja2
import pytest
from transformers.utils.chat_template_utils import render_jinja_template

from engine.core.chat_render import compiled, plain, render_template
from engine.core.template_guard import is_known, shipped_templates
from tests.helpers import ROOT

TEMPLATES = shipped_templates()
TOOLS = json.loads((ROOT / "lessons" / "tools" / "strawberry.json").read_text(encoding="utf-8"))
ASK = {"role": "user", "content": "How many r's are in strawberry?"}
CALL = {"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}
CONVERSATIONS = {
    "one question": ([ASK], None),
    "one question, tools": ([ASK], TOOLS),
    "a system prompt, odd characters": (
        [
            {"role": "system", "content": "Be brief. ✓ 𓀀 <b>&amp;</b>"},
            {"role": "user", "content": 'say "hi" \\ \n twice'},
        ],
        TOOLS,
    ),
    "a call, its result, the answer": (
        [
            ASK,
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": CALL}]},
            {"role": "tool", "name": "count_letter", "content": '{"count": 3}'},
            {"role": "assistant", "content": "There are 3 r's in strawberry."},
            {"role": "user", "content": "And in raspberry?"},
        ],
        TOOLS,
    ),
    "a call whose arguments are text": (
        [
            ASK,
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"type": "function", "function": {**CALL, "arguments": json.dumps(CALL["arguments"])}}],
            },
            {"role": "tool", "content": "3"},
        ],
        TOOLS,
    ),
    "reasoning under another name": (
        [ASK, {"role": "assistant", "content": "Three.", "reasoning": "s-t-r-a-w-b-e-r-r-y"}, ASK],
        None,
    ),
    "reasoning_content": (
        [ASK, {"role": "assistant", "content": "Three.", "reasoning_content": "count them"}, ASK],
        TOOLS,
    ),
    "no messages": ([], None),
}


def transformers_render(template, messages, tools, generation, **names):
    rendered, _ = render_jinja_template(
        conversations=[messages], tools=tools, chat_template=template, add_generation_prompt=generation, **names
    )
    return rendered[0]


def outcome(render, *args, **names):
    """The text, or the error's type and first line: both renderers must agree on either."""
    try:
        return render(*args, **names)
    except Exception as error:
        return (type(error).__name__, str(error).splitlines()[0] if str(error) else "")


def test_every_shipped_template_is_one_the_site_renders_in_the_process():
    assert {"qwen3-tokenizer", "qwen3-coder-template", "deepseek-v3.1-template", "llama3.1-tokenizer"} <= set(TEMPLATES)
    assert all(is_known(template) for template in TEMPLATES.values())


@pytest.mark.parametrize("family", sorted(TEMPLATES))
@pytest.mark.parametrize("case", sorted(CONVERSATIONS))
def test_the_text_equals_transformers_for_every_shipped_template(family, case):
    template = TEMPLATES[family]
    messages, tools = CONVERSATIONS[case]
    for generation in (True, False):
        for names in (
            {},
            {"enable_thinking": False},
            {"enable_thinking": True, "bos_token": "<s>", "eos_token": "</s>"},
        ):
            ours = outcome(render_template, template, messages, tools, generation, **names)
            theirs = outcome(transformers_render, template, messages, tools, generation, **names)
            assert ours == theirs, (family, case, generation, names)


def test_the_caller_s_messages_are_not_changed():
    messages = [ASK, {"role": "assistant", "content": "Three.", "reasoning": "r, r, r"}]
    before = json.dumps(messages)
    render_template(TEMPLATES["qwen3-tokenizer"], messages, TOOLS)
    assert json.dumps(messages) == before


class Colour(enum.StrEnum):
    RED = "red"


@dataclass
class Note:
    text: str


@pytest.mark.parametrize(
    "value, expected",
    [
        (None, None),
        ("text", "text"),
        (3, 3),
        (2.5, 2.5),
        (True, True),
        (Colour.RED, "red"),
        ([1, (2, 3)], [1, (2, 3)]),
        ({"a": Note("n")}, {"a": {"text": "n"}}),
        (object(), "<object>"),
        ({1, 2}, "<set>"),
    ],
)
def test_a_template_sees_plain_json_types_only(value, expected):
    seen = plain(value)
    assert seen == expected and type(seen) is type(expected)


def test_tojson_writes_the_characters_themselves_not_html_escapes():
    assert compiled("{{ x | tojson }}").render(x="<b> & é") == '"<b> & é"'
    assert compiled("{{ x | tojson(indent=2) }}").render(x={"a": 1}) == '{\n  "a": 1\n}'


@pytest.mark.parametrize(
    "template",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ messages.__class__ }}",
        "{% set ns = namespace(_secret=1) %}",
        "{% set ns = namespace() %}{% set ns._x = 1 %}",
        "{{ dict.__class__ }}",
        "{{ raise_exception.__globals__ }}",
    ],
)
def test_a_template_cannot_reach_python_s_internals(template):
    ours = outcome(render_template, template, [ASK])
    theirs = outcome(transformers_render, template, [ASK], None, False)
    # the same outcome (the words of a refusal are the site's own)
    assert ours == theirs if isinstance(theirs, str) else ours[0] == theirs[0]
    # the sandbox refuses the name, or reads it as undefined: nothing of Python's comes out
    assert ours == "" or ours[0] == "SecurityError", ours


def test_a_template_s_own_exception_and_helpers():
    with pytest.raises(jinja2.exceptions.TemplateError, match="no tools here"):
        render_template("{{ raise_exception('no tools here') }}", [ASK])
    text = "{{ dict(a=1) | tojson }} {{ strftime_now('%Y') | length }} {% for m in messages %}{% break %}{% endfor %}"
    assert render_template(text, [ASK]) == '{"a": 1} 4 '
    assert render_template("{% generation %}said{% endgeneration %}", [ASK]) == "said"
