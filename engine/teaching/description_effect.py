"""What a tool's description does to the first token: lesson 5's what-if, measured by the model in use.

The model decides whether to call at its first token, and the tools' descriptions are part of the prompt
it reads. `description_effect` renders each of a lesson's requests twice, once as it is and once with one
tool's description replaced by a learner's words, and reads P(`<tool_call>`) as the first token of each
(engine/model/peek.py first_token: one forward pass a prompt). Nothing is estimated: both figures come
from the same model, and the prompts differ only in that description.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ..core.prompt import Request, render
from ..core.tokenizer import TOOL_CALL
from ..errors import BadInput

MAX_DESCRIPTION_CHARS = 300  # a sentence or two, as the lessons' own descriptions are


@dataclass(frozen=True)
class FirstCallChance:
    """One request's P(<tool_call>) as the first token, with the lesson's description and with the learner's."""

    label: str
    before: float
    after: float
    prompt_tokens_before: int
    prompt_tokens_after: int


def with_description(request: Request, tool: str, description: str) -> Request:
    """`request` with the description of its tool named `tool` replaced (a copy; the lesson's request is untouched)."""
    description = description.strip()
    if not description:
        raise BadInput("write a description for the tool (an empty one says nothing to the model)")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise BadInput(f"a description here is at most {MAX_DESCRIPTION_CHARS} characters, not {len(description)}")
    tools = copy.deepcopy(request.tools)
    found = [t for t in tools if t.get("function", {}).get("name") == tool]
    if not found:
        raise BadInput(f"no tool named {tool!r} in this request's tools")
    found[0]["function"]["description"] = description
    return Request(request.messages, tools, request.style, request.enable_thinking, request.add_generation_prompt)


def description_effect(
    engine, requests: list[tuple[str, Request]], tool: str, description: str
) -> list[FirstCallChance]:
    """For each (label, request): P(<tool_call>) first with the request's own description of `tool`, then with
    `description` in its place."""
    from ..model.peek import first_token

    found = []
    for label, request in requests:
        changed = with_description(request, tool, description)
        before_ids = render(request, engine.tokenizer).ids
        after_ids = render(changed, engine.tokenizer).ids
        before = first_token(engine, before_ids).p[TOOL_CALL]
        after = first_token(engine, after_ids).p[TOOL_CALL]
        found.append(FirstCallChance(label, before, after, len(before_ids), len(after_ids)))
    return found
