"""What the same tools and messages cost on OpenAI's models: an estimate by OpenAI's published method.

OpenAI ships no chat template, so nobody outside can count a request with tools exactly.
OpenAI's cookbook "How to count tokens with tiktoken"
(https://github.com/openai/openai-cookbook/blob/main/examples/How_to_count_tokens_with_tiktoken.ipynb,
sections 6 and 7) publishes a method instead, checked there against the API's own
`usage.prompt_tokens`:

- messages (`num_tokens_from_messages`): 3 tokens per message, plus the tokens of every
  field's value, plus 1 per `name` field, plus 3 that prime the reply
  (`<|start|>assistant<|message|>`);
- tools (`num_tokens_for_tools`): per function `func_init` + the tokens of
  `name:description` (one trailing "." dropped); if it has properties, `prop_init` once and,
  per property, `prop_key` + the tokens of `key:type:description` (one "." dropped), with
  `enum_init` + `enum_item` and the tokens of each item when it has an enum; `func_end` once
  after all functions. The constants were fitted per model family (below).

On the cookbook's own example this gives 101 tokens for gpt-4o and 105 for gpt-4, the
totals the cookbook reports the API returned (tests/test_openai_tokens.py). Anything else is
an estimate by that method, never a measurement against the API.

Where the cookbook's code would raise on a tool it never tried, this module follows its
rule as closely as the rule allows, and says so: a missing description counts as empty, a
missing type as empty, a type list as its JSON, an enum item that is not a string as its
JSON. Text is encoded as plain text (`encode_ordinary`), so a message that contains
`<|endoftext|>` is counted, not refused.

The encodings are tiktoken's own files, vendored and loaded offline by
engine.core.openai_encodings (gpt-oss's tokenizer is built on the same o200k_base).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from ..core.openai_encodings import load_openai_encoding
from ..core.prompt import Request, count_tools_tokens, render
from ..core.tokenizer import load_tokenizer
from ..errors import BadInput

METHOD = "openai-cookbook"
MAX_CHARS = 2_000_000  # tools and messages together; more is refused, not counted


@dataclass(frozen=True)
class ModelFamily:
    """The cookbook's fitted constants for one family of models."""

    model: str
    encoding: str
    func_init: int
    prop_init: int
    prop_key: int
    enum_init: int
    enum_item: int
    func_end: int
    tokens_per_message: int = 3
    tokens_per_name: int = 1
    reply_priming: int = 3  # every reply is primed with <|start|>assistant<|message|>


# the cookbook's num_tokens_for_tools: gpt-4o and gpt-4o-mini, then gpt-3.5-turbo and gpt-4
MODELS = {
    "gpt-4o": ModelFamily("gpt-4o", "o200k_base", 7, 3, 3, -3, 3, 12),
    "gpt-4o-mini": ModelFamily("gpt-4o-mini", "o200k_base", 7, 3, 3, -3, 3, 12),
    "gpt-4": ModelFamily("gpt-4", "cl100k_base", 10, 3, 3, -3, 3, 12),
    "gpt-3.5-turbo": ModelFamily("gpt-3.5-turbo", "cl100k_base", 10, 3, 3, -3, 3, 12),
}


def count_openai_text(text: str, encoding: str = "o200k_base") -> int:
    """Tokens of plain text in an OpenAI encoding (special-token spellings count as text)."""
    return len(load_openai_encoding(encoding).encode_ordinary(text))


# -- the cookbook's method ----------------------------------------------------------------------
@dataclass(frozen=True)
class ToolLine:
    """One line the method counts, and what it adds."""

    tool: str
    kind: Literal["function", "property", "enum item", "constant"]
    text: str  # the text encoded ("" for a constant)
    tokens: int  # tokens of the text plus the constant added with it


@dataclass(frozen=True)
class OpenAIEstimate:
    """A request's prompt tokens on an OpenAI model, by the cookbook's method."""

    model: str
    encoding: str
    tools_tokens: int
    messages_tokens: int
    lines: list[ToolLine]  # the tools' count, line by line
    method: str = METHOD

    @property
    def total(self) -> int:
        return self.tools_tokens + self.messages_tokens

    def as_json(self) -> dict:
        return {
            "model": self.model,
            "encoding": self.encoding,
            "tools_tokens": self.tools_tokens,
            "messages_tokens": self.messages_tokens,
            "total": self.total,
            "method": self.method,
        }


def find_model(model: str) -> ModelFamily:
    if model not in MODELS:
        raise BadInput(f"the cookbook's method has constants for {', '.join(MODELS)}; not for {model!r}")
    return MODELS[model]


def _drop_one_period(text: str) -> str:
    return text[:-1] if text.endswith(".") else text


def _as_text(value: object) -> str:
    return value if isinstance(value, str) else ("" if value is None else json.dumps(value, ensure_ascii=False))


def count_tools_lines(tools: list[dict], model: str = "gpt-4o") -> list[ToolLine]:
    """The cookbook's `num_tokens_for_tools`, line by line (the message part is separate)."""
    family = find_model(model)
    enc = load_openai_encoding(family.encoding)
    lines: list[ToolLine] = []
    for tool in tools:
        function = tool.get("function", {}) if isinstance(tool, dict) else {}
        name = _as_text(function.get("name"))
        line = f"{name}:{_drop_one_period(_as_text(function.get('description')))}"
        lines.append(ToolLine(name, "function", line, family.func_init + len(enc.encode_ordinary(line))))
        params = function.get("parameters") if isinstance(function.get("parameters"), dict) else {}
        properties = params.get("properties") if isinstance(params.get("properties"), dict) else {}
        if properties:
            lines.append(ToolLine(name, "constant", "", family.prop_init))
        for key, schema in properties.items():
            schema = schema if isinstance(schema, dict) else {}
            added = family.prop_key
            if "enum" in schema:
                added += family.enum_init
                for item in schema["enum"] if isinstance(schema["enum"], list) else []:
                    item_text = _as_text(item)
                    lines.append(
                        ToolLine(name, "enum item", item_text, family.enum_item + len(enc.encode_ordinary(item_text)))
                    )
            p_desc = _drop_one_period(_as_text(schema.get("description")))
            line = f"{key}:{_as_text(schema.get('type'))}:{p_desc}"
            lines.append(ToolLine(name, "property", line, added + len(enc.encode_ordinary(line))))
    if tools:
        lines.append(ToolLine("", "constant", "", family.func_end))
    return lines


def count_openai_messages(messages: list[dict], model: str = "gpt-4o") -> int:
    """The cookbook's `num_tokens_from_messages`: every string field of every message, plus the framing."""
    family = find_model(model)
    enc = load_openai_encoding(family.encoding)
    total = 0
    for number, message in enumerate(messages, start=1):
        total += family.tokens_per_message
        for key, value in message.items():
            if not isinstance(value, str):
                raise BadInput(
                    f"message {number}: the cookbook's method counts text fields only, and {key!r} is not a string; "
                    "write tool calls and results as text for this estimate"
                )
            total += len(enc.encode_ordinary(value))
            if key == "name":
                total += family.tokens_per_name
    return total + family.reply_priming


def estimate_openai_tokens(tools: list[dict], messages: list[dict], model: str = "gpt-4o") -> OpenAIEstimate:
    """Tools and messages on `model`, by OpenAI's published method (an estimate, not the API's count)."""
    family = find_model(model)
    size = len(json.dumps(tools, ensure_ascii=False, default=str)) + len(
        json.dumps(messages, ensure_ascii=False, default=str)
    )
    if size > MAX_CHARS:
        raise BadInput(f"the tools and messages are {size:,} characters; the estimate counts up to {MAX_CHARS:,}")
    lines = count_tools_lines(tools, model)
    return OpenAIEstimate(
        model=model,
        encoding=family.encoding,
        tools_tokens=sum(line.tokens for line in lines),
        messages_tokens=count_openai_messages(messages, model),
        lines=lines,
    )


@dataclass(frozen=True)
class CostRow:
    """One column of the calculator's comparison: the same tools and messages on one model."""

    label: str  # "Qwen3 native", "Qwen3 ReAct", "gpt-4o", "gpt-4"
    tokenizer: str  # "Qwen3" or the OpenAI encoding
    tools_tokens: int
    prompt_tokens: int
    exact: bool  # True: counted on the real prompt; False: estimated by OpenAI's published method
    method: str  # how the figure was made, in words


def compare_tool_costs(
    tools: list[dict], messages: list[dict], models: tuple[str, ...] = ("gpt-4o", "gpt-4")
) -> list[CostRow]:
    """Qwen3's exact counts (native and ReAct) beside OpenAI's published estimate for each model."""
    tok = load_tokenizer()
    rows = []
    for style, label in (("native", "Qwen3 native"), ("react", "Qwen3 ReAct")):
        request = Request(messages, tools, style)
        rows.append(
            CostRow(
                label,
                "Qwen3",
                count_tools_tokens(request, tok),
                render(request, tok).count,
                True,
                "counted on the prompt the chat template renders",
            )
        )
    for estimate in compare_with_openai(tools, messages, models):
        rows.append(
            CostRow(
                estimate.model,
                estimate.encoding,
                estimate.tools_tokens,
                estimate.total,
                False,
                "estimated by OpenAI's cookbook method, not measured against the API",
            )
        )
    return rows


def compare_with_openai(
    tools: list[dict], messages: list[dict], models: tuple[str, ...] = ("gpt-4o", "gpt-4")
) -> list[OpenAIEstimate]:
    """The calculator's OpenAI column: one estimate per model, to show beside Qwen3's exact counts."""
    return [estimate_openai_tokens(tools, messages, model) for model in models]
