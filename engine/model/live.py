"""Generation with the live model, as pages, the harness and the command line use it.

The entry points over engine/model/decode.py's step loop: build the grammar constraint a
tool_choice asks for, generate one assistant turn for a request, decode it twice (with and
without the constraint) for lesson 6, and `LiveModel`, which plugs the loaded model into the
harness where the scripted model plugs in otherwise.

    model = load_model("tiny")                      # engine/model/loading.py
    generation = generate_turn(model, Request(messages, tools), GenerationSettings(top_k=5))
    for step in generation.steps:
        draw(step.token, step.p, step.top)
"""

from __future__ import annotations

import dataclasses

from ..constrain.masks import advance, make_constraint
from ..core.call_formats import get_format
from ..core.generation import Generation, GenerationSettings, ModelInfo, Turn
from ..core.prompt import Prompt, Request, render, with_prefix
from ..errors import BadInput
from .decode import Constraint, generate
from .loading import LoadedModel
from .remote import GRAMMAR_FIELDS, RemoteEngine, ServerCannot, generate_remote, grammar_problem
from .results import SideBySide


def build_constraint(
    engine: LoadedModel, tools: list[dict], tool_choice: str | None, style: str = "native", thinking: bool = False
) -> Constraint | None:
    """The grammar constraint for `tool_choice` over `tools`, or None when nothing is constrained.

    "none" or no tool_choice: free text. Anything else needs tools and the native style
    (the grammar follows Qwen3's <tool_call> blocks). `thinking`: the request's enable_thinking
    (a <think> block may come before a required or named call).
    """
    if tool_choice in (None, "none"):
        return None
    if not tools:
        raise BadInput(
            f"tool_choice {tool_choice!r} needs tools to choose from: pass --tools T.json, or drop --tool-choice"
        )
    if not get_format(style).constrained:
        raise BadInput(
            f"tool_choice {tool_choice!r} constrains native <tool_call> turns; ReAct turns are not constrained"
        )
    return make_constraint(tools, tool_choice, engine.tokenizer, thinking)


def generate_turn(
    engine: LoadedModel,
    request: Request,
    settings: GenerationSettings | None = None,
    constraint: Constraint | None = None,
    on_step=None,
    prefix: str = "",
) -> Generation:
    """Render `request` as the model sees it and generate the assistant's next turn (here, or on a server:
    engine/model/remote.py).

    `prefix`: the turn's opening words, written for the model; it continues after them. The Generation's text is the
    whole turn, prefix included; its steps are the tokens the model wrote."""
    prompt = render(request, engine.tokenizer)
    if prefix:
        prompt = begin_turn(engine, prompt, prefix, constraint)
    if isinstance(engine, RemoteEngine):
        generation = generate_remote(engine, prompt, settings, constraint, on_step)
    else:
        generation = generate(engine, prompt, settings, constraint, on_step)
    if not prefix:
        return generation
    return dataclasses.replace(
        generation, text=prefix + generation.text, extra={**generation.extra, "prefix": prefix_json(prompt)}
    )


def begin_turn(engine: LoadedModel, prompt: Prompt, prefix: str, constraint: Constraint | None) -> Prompt:
    """The prompt with `prefix` after its assistant header, and the constraint moved on over the prefix's tokens.

    BadInput where the prefix leaves the grammar, or where a server would apply the grammar from the prefix's start."""
    if isinstance(engine, RemoteEngine) and constraint is not None:
        raise BadInput(
            "a prefix with a grammar on a server: the server would hold the prefix's continuation to a whole call "
            "from its first token; drop --tool-choice or --prefix"
        )
    begun = with_prefix(prompt, prefix, engine.tokenizer)
    advance(constraint, begun.ids[prompt.count :], engine.tokenizer)
    return begun


def prefix_json(prompt: Prompt) -> dict:
    """The prefix a begun prompt ends with: its text and ids (the last span, with_prefix's)."""
    span = prompt.spans[-1]
    return {"text": prompt.span_text(span), "ids": prompt.ids[prompt.count - span.tokens :]}


SAME = object()  # LiveModel's later turns: the first turn's tool_choice


class LiveModel:
    """The live model behind the harness's `next_turn(request) -> Turn`, in place of the scripted model.

    `tool_choice` constrains every turn with the request's tools (native style only), or only the
    first when `later_tool_choice` names another for the turns after it (required, then auto);
    `on_step` sees each token as it is chosen; `generations` keeps every turn's full record.
    """

    def __init__(
        self,
        engine: LoadedModel,
        settings: GenerationSettings | None = None,
        tool_choice: str | None = None,
        on_step=None,
        later_tool_choice=SAME,
    ):
        self.engine = engine
        self.settings = settings or GenerationSettings()
        self.tool_choice = tool_choice
        self.later_tool_choice = tool_choice if later_tool_choice is SAME else later_tool_choice
        self.on_step = on_step
        self.generations: list[Generation] = []

    @property
    def info(self) -> ModelInfo:
        return self.engine.info

    def next_turn(self, request: Request):
        choice = self.later_tool_choice if self.generations else self.tool_choice
        constraint = build_constraint(self.engine, request.tools, choice, request.style, request.enable_thinking)
        generation = generate_turn(self.engine, request, self.settings, constraint, self.on_step)
        self.generations.append(generation)
        return Turn(
            text=generation.text,
            finish=generation.finish,
            output_tokens=generation.output_tokens,
            steps=generation.steps,
        )


# -- a suite's runs (engine/harness/eval.py) ---------------------------------------------------
SERVER_LATER_TURNS = (
    "the server applied the grammar to each run's first turn only; its later turns were free "
    "(auto's grammar starts at the model's own <tool_call>, which a server request cannot carry)"
)


def eval_models(engine: LoadedModel, tool_choice: str, constrained: bool):
    """(a fresh LiveModel per run for engine/harness/eval.py, a note on what a server could not constrain, or None).

    required: the first turn must call (a grammar), the later ones run under auto with the grammar, so a
    run can still end with an answer; auto with `constrained`: the grammar on every turn; auto alone: free."""
    first = "required" if tool_choice == "required" else ("auto" if constrained else None)
    later = "auto" if tool_choice == "required" or constrained else None
    note = None
    if isinstance(engine, RemoteEngine):
        problem = grammar_problem(engine, first)
        if problem:
            raise BadInput(problem)
        if later is not None:
            later, note = None, SERVER_LATER_TURNS
    return (lambda settings: LiveModel(engine, settings, first, later_tool_choice=later)), note


# -- constrained and unconstrained, side by side --------------------------------------------
def side_by_side(
    engine: LoadedModel, request: Request, tool_choice: str | dict, settings: GenerationSettings | None = None
) -> SideBySide:
    """Decode `request` twice with the live engine: under `tool_choice`'s constraint, and free.

    With a server (engine/model/remote.py) these are two requests: the free one, and one that carries the grammar,
    which the server applies (required or a named tool; auto's grammar cannot travel, see remote.AUTO_ON_SERVER)."""
    remote = isinstance(engine, RemoteEngine)
    problem = grammar_problem(engine, tool_choice) if remote else None
    if problem:
        raise ServerCannot(problem)
    constraint = make_constraint(request.tools, tool_choice, engine.tokenizer, request.enable_thinking)
    reason = constraint.reason if constraint is not None else "none: no constraint and no call"
    if remote and constraint is not None and constraint.state != "unconstrained":
        reason += f"; the grammar ran on the server ({engine.server}'s {GRAMMAR_FIELDS[engine.server][1]} field)"
    constrained = generate_turn(engine, request, settings, constraint)
    unconstrained = generate_turn(engine, request, settings, None)
    pairs = zip(constrained.steps, unconstrained.steps, strict=False)
    first = next((i for i, (a, b) in enumerate(pairs) if a.id != b.id), None)
    if first is None and len(constrained.steps) != len(unconstrained.steps):
        first = min(len(constrained.steps), len(unconstrained.steps))
    return SideBySide(constrained, unconstrained, reason, first)
