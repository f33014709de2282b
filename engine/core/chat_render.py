"""The site's own chat templates rendered as transformers renders them, without importing transformers.

`apply_chat_template(..., tokenize=False)` is a jinja2 sandbox with a few settings and helpers
(transformers' `render_jinja_template`). Importing transformers costs about 3 s on a first page; the
templates the site ships (engine/core/template_guard.py's `is_known`) need only jinja2. This module
sets up the same environment (trimmed blocks, the loop-control extension, `tojson` that does not
escape HTML, `raise_exception`, `strftime_now`, a plain `dict`, a namespace that refuses
underscore names) and hands the template the same data (plain JSON copies of the messages, tools and
extra names; a message's reasoning under each name a template reads). tests/test_chat_render.py
checks it against transformers, template by template, conversation by conversation.

A template the site does not ship renders in a child process under limits instead (template_guard).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

# where a message's reasoning may be given; templates read the first (gpt-oss's read "thinking")
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


class _Generation(Extension):
    """`{% generation %}...{% endgeneration %}` (a template marking what the assistant wrote): the body, unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller) -> str:
        return caller()


class _Namespace(jinja2.utils.Namespace):
    """jinja2's `namespace()`, refusing names that start with "_" (the way to CPython's internals)."""

    def __init__(*args, **kwargs):
        self, values = args[0], dict(*args[1:], **kwargs)
        for name in values:
            _Namespace._check(name)
        jinja2.utils.Namespace.__init__(self, values)

    def __setitem__(self, name, value):
        _Namespace._check(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"a chat template cannot store {name!r} on a namespace: names starting with _ are refused, rename it"
            )


class _Dict:
    """`dict(...)` and `dict.fromkeys(...)` in a template, and nothing else of the type."""

    def __call__(self, *args, **kwargs):
        return dict(*args, **kwargs)

    def fromkeys(self, *args, **kwargs):
        return dict.fromkeys(*args, **kwargs)


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # jinja2's own tojson escapes <, > and & for HTML; a prompt wants the characters themselves
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(format):
    return datetime.now().strftime(format)


@functools.lru_cache(maxsize=16)
def compiled(template: str) -> jinja2.Template:
    """The template compiled once in the sandbox a chat template gets."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals.update(raise_exception=_raise_exception, strftime_now=_strftime_now, dict=_Dict(), namespace=_Namespace)
    return env.from_string(template)


def plain(value):
    """A copy of `value` made of JSON's types alone (a str subclass becomes a str; anything else, "<its type>")."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    # subclasses (an enum, a numpy scalar) carry methods a template should not reach: back to the base type
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {plain(key): plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, tuple):
        return tuple(plain(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if callable(getattr(value, "item", None)) and type(value).__module__ == "numpy":
        return plain(value.item())  # np.bool_(False) would otherwise be a truthy "<bool_>"
    if callable(getattr(value, "model_dump", None)):  # a pydantic model, as an API's SDK returns messages
        return plain(value.model_dump())
    return f"<{type(value).__name__}>"


def _with_reasoning_names(message):
    # the reasoning given under any of its names is passed under each name a template may read
    if not isinstance(message, dict):
        raise TypeError(f"a chat message is a dict; got {message!r}")
    reasoning = next((message[key] for key in REASONING_FIELDS if message.get(key) is not None), None)
    return message if reasoning is None else {"thinking": reasoning, **message, "reasoning_content": reasoning}


def render_template(
    template: str,
    messages: list[dict],
    tools: list[dict] | None = None,
    add_generation_prompt: bool = False,
    **names,
) -> str:
    """The prompt text `template` writes for `messages` and `tools` (names such as enable_thinking, bos_token passed on)."""
    chat = [_with_reasoning_names(message) for message in plain(list(messages))]
    return compiled(template).render(
        messages=chat,
        tools=plain(tools),
        documents=None,
        add_generation_prompt=add_generation_prompt,
        **plain(names),
    )
