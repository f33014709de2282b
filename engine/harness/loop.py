"""The harness loop: render, get a turn, parse, run the valid calls, feed the results back.

It goes on until a turn has no call (a final answer) or a turn limit is hit, and records
every call's input and output tokens in a ledger. Results go back as `<tool_response>` in a
user turn natively (the Qwen3 template's own rendering of a `tool` message) and as
`Observation:` in ReAct. The model is pluggable: `ScriptedModel` replays canned turns from
lessons/scenarios/, and the live engine's `LiveModel` takes its place.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from ..core.call_formats import get_format, parse_turn
from ..core.generation import Turn
from ..core.parse import ParseResult
from ..core.prompt import Prompt, Request, render
from ..core.tokenizer import load_tokenizer
from ..core.tooldefs import load_tool_set
from ..errors import BadInput, EngineError
from ..sandbox.workspace import Workspace
from ..settings import LESSONS
from .ledger import CallCost, Ledger
from .tools import run_tool

ROLES = ("system", "user", "assistant", "tool")


class TurnModel(Protocol):
    def next_turn(self, request: Request) -> Turn: ...


class ScriptedModel:
    """Replays canned turns in order, whatever the prompt: every token cost stays exact."""

    def __init__(self, turns: list[Turn]):
        self.turns = list(turns)
        self.position = 0

    def next_turn(self, request: Request) -> Turn:
        if self.position >= len(self.turns):
            raise EngineError("the scripted model has no more turns")
        turn = self.turns[self.position]
        self.position += 1
        return turn


@dataclass(frozen=True)
class ToolResult:
    block: int
    name: str | None  # None for a malformed block
    arguments: dict | None
    text: str  # what goes back to the model
    ok: bool


@dataclass
class ModelCall:
    """One model call of a run and everything that followed from it."""

    prompt: Prompt
    turn: Turn
    parse: ParseResult
    results: list[ToolResult]
    message_index: int  # where the assistant turn sits in the messages
    result_indices: list[int]  # where its results sit
    cost: CallCost


@dataclass
class Run:
    style: str
    policy: str
    calls: list[ModelCall] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)
    stop_reason: str = ""
    answer: str | None = None


STOP_FINAL = "final answer: the turn has no call"
STOP_AS_TEXT = "returned as text: a block was not valid JSON (vllm policy)"
STOP_LIMIT = "turn limit reached"
STOP_SCRIPT = "the script has no more turns"
STOP_RETRIES = "retry budget spent: too many turns in a row had only failed calls"


def check_messages(data: object) -> list[dict]:
    """Chat messages a user gave, if usable; else BadInput saying what to fix."""
    if not isinstance(data, list):
        raise BadInput('messages must be a JSON list such as [{"role": "user", "content": "..."}]')
    for i, message in enumerate(data, start=1):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise BadInput(f"message {i}: needs a role, one of {', '.join(ROLES)}")
        if not isinstance(message.get("content", ""), str):
            raise BadInput(f"message {i}: content must be a string")
        message.setdefault("content", "")
    return data


def count_output_tokens(turn: Turn) -> int:
    if turn.output_tokens is not None:
        return turn.output_tokens
    return load_tokenizer().count(turn.text) + (1 if turn.finish == "stop" else 0)


def iterate_episode(
    model: TurnModel,
    messages: list[dict],
    tools: list[dict],
    style: str = "native",
    policy: str = "per-block",
    workspace: Workspace | None = None,
    max_turns: int = 8,
    recover_bare: bool = False,
    run: Run | None = None,
    retry_budget: int | None = None,
) -> Iterator[ModelCall]:
    """Run the loop, yielding each model call as it completes; `run` collects the whole record.

    `retry_budget`: how many turns in a row whose calls all failed get their errors sent back
    for another try; the next such turn ends the run (None: no budget, only `max_turns`).
    """
    run = run if run is not None else Run(style, policy)
    run.messages = [dict(m) for m in messages]
    failed_in_a_row = 0
    for _ in range(max_turns):
        request = Request(run.messages, tools, style)
        prompt = render(request)
        try:
            turn = model.next_turn(request)
        except EngineError:
            if isinstance(model, ScriptedModel):
                run.stop_reason = STOP_SCRIPT
                return
            raise
        # the harness reads what the style reads (ReAct stops at the model's own "Observation:")
        text = get_format(style).read_reply(turn.text)
        parsed = parse_turn(text, tools, style, policy, recover_bare)
        run.messages.append({"role": "assistant", "content": text})
        message_index = len(run.messages) - 1
        results = [] if parsed.final else _run_blocks(parsed, workspace)
        result_indices = []
        for result in results:
            run.messages.append({"role": "tool", "content": result.text})
            result_indices.append(len(run.messages) - 1)
        cost = CallCost(
            prompt.count,
            count_output_tokens(turn),
            [{"name": r.name, "arguments": r.arguments} for r in results if r.ok],
            [r.text for r in results if not r.ok],
        )
        run.ledger.record(cost)
        call = ModelCall(prompt, turn, parsed, results, message_index, result_indices, cost)
        run.calls.append(call)
        yield call
        if parsed.final:
            run.stop_reason = STOP_AS_TEXT if parsed.returned_as_text else STOP_FINAL
            run.answer = parsed.answer
            return
        # a turn whose every call failed spends one retry; a turn with a good call earns them back
        failed_in_a_row = failed_in_a_row + 1 if not any(r.ok for r in results) else 0
        if retry_budget is not None and failed_in_a_row > retry_budget:
            run.stop_reason = STOP_RETRIES
            return
    run.stop_reason = STOP_LIMIT


def _run_blocks(parsed: ParseResult, workspace: Workspace | None) -> list[ToolResult]:
    """Run the good calls and report each bad block, in the order the blocks were written."""
    results = []
    for block in parsed.blocks:
        if block.call is not None:
            outcome = run_tool(block.call.name, block.call.arguments, workspace)
            results.append(ToolResult(block.index, block.call.name, block.call.arguments, outcome.text, True))
        else:
            results.append(ToolResult(block.index, None, None, block.error or "error", False))
    return results


def returned_text(run: Run, number: int, tools: list[dict]) -> tuple[str, int]:
    """The exact text the results of call `number` (1-based) add to the next prompt, and its token count."""
    call = run.calls[number - 1]
    if number < len(run.calls):
        prompt = run.calls[number].prompt
    else:
        # no call followed: render the prompt the next call would get
        prompt = render(Request(run.messages[: max(call.result_indices) + 1], tools, run.style))
    return prompt.message_text(call.result_indices), prompt.message_tokens(call.result_indices)


def run_episode(model: TurnModel, messages: list[dict], tools: list[dict], **options) -> Run:
    run = Run(options.get("style", "native"), options.get("policy", "per-block"))
    for _ in iterate_episode(model, messages, tools, run=run, **options):
        pass
    return run


# -- scenarios -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scenario:
    """A scripted run shipped as data in lessons/scenarios/."""

    name: str
    title: str
    summary: str
    tool_set: str
    messages: list[dict]
    files: dict[str, str]
    turns: dict[str, list[Turn]]  # by style
    malformed_turn: int | None  # 0-based index of the turn that goes wrong
    clean: dict[str, Turn | None]  # by style: what that turn is in the run without it (None: dropped)
    lesson: str = ""  # what the scenario shows, one or two sentences
    tool_choice: str = "auto"  # what the request asked for (the gallery's tool_choice: none case)
    retry_budget: int | None = None  # the harness's retry budget for this run, if it has one
    max_turns: int | None = None  # the harness's turn limit for this run, if the scenario sets one
    max_new_tokens: int | None = None  # the token limit a cut-off turn ran into, if the scenario says
    gallery: dict = field(
        default_factory=dict
    )  # failure gallery: "failure", "naive", "prevents", "origin" (kind, text)

    @property
    def styles(self) -> list[str]:
        return list(self.turns)

    @property
    def tools(self) -> list[dict]:
        return load_tool_set(self.tool_set)

    def clean_turn(self, style: str) -> Turn | None:
        return self.clean.get(style)

    def script(self, style: str, clean: bool = False) -> list[Turn]:
        if style not in self.turns:
            raise BadInput(f"scenario {self.name!r} has no {style} version; it has {', '.join(self.turns)}")
        turns = list(self.turns[style])
        if clean and self.malformed_turn is not None:
            replacement = self.clean_turn(style)
            turns[self.malformed_turn : self.malformed_turn + 1] = [replacement] if replacement else []
        return turns


def _turn(data: dict) -> Turn:
    return Turn(data["text"], data.get("finish", "stop"))


def list_scenarios() -> list[str]:
    """The scenarios of lesson 4, in order."""
    order = json.loads((LESSONS / "scenarios" / "index.json").read_text(encoding="utf-8"))
    return list(order)


def list_gallery() -> list[str]:
    """The failure gallery's scenarios (ways a call goes wrong), in order."""
    order = json.loads((LESSONS / "scenarios" / "gallery.json").read_text(encoding="utf-8"))
    return list(order)


@lru_cache(maxsize=32)
def load_scenario(name: str) -> Scenario:
    path = LESSONS / "scenarios" / f"{name}.json"
    known = [*list_scenarios(), *list_gallery()]
    if name not in known or not path.exists():
        raise BadInput(f"unknown scenario {name!r}; the scenarios are {', '.join(known)}")
    data = json.loads(path.read_text(encoding="utf-8"))
    return Scenario(
        name=name,
        title=data["title"],
        summary=data["summary"],
        tool_set=data["tools"],
        messages=data["messages"],
        files=data.get("files", {}),
        turns={style: [_turn(t) for t in turns] for style, turns in data["turns"].items()},
        malformed_turn=data.get("malformed_turn"),
        clean={style: (_turn(t) if t else None) for style, t in data.get("clean", {}).items()},
        lesson=data.get("lesson", ""),
        tool_choice=data.get("tool_choice", "auto"),
        retry_budget=data.get("retry_budget"),
        max_turns=data.get("max_turns"),
        max_new_tokens=data.get("max_new_tokens"),
        gallery=data.get("gallery", {}),
    )


def make_workspace(files: dict[str, str], folder: str | Path) -> Workspace:
    """A workspace holding `files` (relative path -> text)."""
    root = Path(folder)
    for relative, text in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return Workspace(root)


def run_scenario(
    scenario: Scenario,
    style: str = "native",
    policy: str = "per-block",
    clean: bool = False,
    max_turns: int | None = None,
    retry_budget: int | None = None,
    use_retry_budget: bool = True,
) -> Run:
    """A scripted scenario from start to end, in a fresh temporary workspace.

    The turn limit and retry budget are the scenario's own unless given; `use_retry_budget`
    False runs it with no budget at all (to measure what the budget saved).
    """
    limit = max_turns if max_turns is not None else (scenario.max_turns or 12)
    budget = retry_budget if retry_budget is not None else scenario.retry_budget
    with tempfile.TemporaryDirectory(prefix="workspace-") as folder:
        workspace = make_workspace(scenario.files, folder)
        model = ScriptedModel(scenario.script(style, clean))
        return run_episode(
            model,
            scenario.messages,
            scenario.tools,
            style=style,
            policy=policy,
            workspace=workspace,
            max_turns=limit,
            retry_budget=budget if use_retry_budget else None,
        )
