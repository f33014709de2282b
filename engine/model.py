"""The live engine, as pages, the harness and the command line use it.

One place to import from: loading (engine/loading.py), the decode loop that shows its work
(engine/decode.py), `LiveModel` (the live model in the harness, where the scripted model
plugs in otherwise), and the `generate` / `download` commands of DESIGN.md's contract.

    engine = load_engine("tiny")                    # or None: QWEN_MODEL, else Qwen/Qwen3-1.7B
    prompt = render(Request(messages, tools))
    for step in stream_steps(engine, prompt.ids, GenerationSettings(top_k=5)):
        draw(step.token, step.p, step.top)
"""

from __future__ import annotations

import sys

from .decode import Alternative, Constraint, Generation, GenerationSettings, Step, generate, stream_steps
from .errors import BadInput
from .loading import (
    TINY,
    TINY_NOTE,
    Engine,
    ModelInfo,
    ModelStatus,
    Progress,
    build_tiny_engine,
    check_model,
    download_weights,
    find_cached_weights,
    hub_reachable,
    load_engine,
)
from .prompt import Request, render

__all__ = [
    "Alternative", "Constraint", "Engine", "Generation", "GenerationSettings", "LiveModel", "ModelInfo", "ModelStatus",
    "Progress", "Step", "TINY", "TINY_NOTE", "build_constraint", "build_tiny_engine", "check_model", "download_command",
    "download_weights",
    "find_cached_weights", "generate", "generate_command", "generate_turn", "hub_reachable", "load_engine",
    "stream_steps",
]


def build_constraint(engine: Engine, tools: list[dict], tool_choice: str | None, style: str = "native") -> Constraint | None:
    """The grammar constraint for `tool_choice` over `tools`, or None when nothing is constrained.

    "none" or no tool_choice: free text. Anything else needs tools and the native style
    (the grammar follows Qwen3's <tool_call> blocks).
    """
    if tool_choice in (None, "none"):
        return None
    if not tools:
        raise BadInput(f"tool_choice {tool_choice!r} needs tools to choose from: pass --tools T.json, or drop --tool-choice")
    if style != "native":
        raise BadInput(f"tool_choice {tool_choice!r} constrains native <tool_call> turns; ReAct turns are not constrained")
    from .constrain import make_constraint

    return make_constraint(tools, tool_choice, engine.tokenizer)


def generate_turn(
    engine: Engine,
    request: Request,
    settings: GenerationSettings | None = None,
    constraint: Constraint | None = None,
    on_step=None,
) -> Generation:
    """Render `request` as the model sees it and generate the assistant's next turn."""
    prompt = render(request, engine.tokenizer)
    return generate(engine, prompt, settings, constraint, on_step)


class LiveModel:
    """The live model behind the harness's `next_turn(request) -> Turn`, in place of the scripted model.

    `tool_choice` constrains every turn with the request's tools (native style only);
    `on_step` sees each token as it is chosen; `generations` keeps every turn's full record.
    """

    def __init__(
        self,
        engine: Engine,
        settings: GenerationSettings | None = None,
        tool_choice: str | None = None,
        on_step=None,
    ):
        self.engine = engine
        self.settings = settings or GenerationSettings()
        self.tool_choice = tool_choice
        self.on_step = on_step
        self.generations: list[Generation] = []

    @property
    def info(self) -> ModelInfo:
        return self.engine.info

    def next_turn(self, request: Request):
        from .harness import Turn

        constraint = build_constraint(self.engine, request.tools, self.tool_choice, request.style)
        generation = generate_turn(self.engine, request, self.settings, constraint, self.on_step)
        self.generations.append(generation)
        return Turn(
            text=generation.text, finish=generation.finish, output_tokens=generation.output_tokens,
            steps=generation.steps,
        )


# -- the command line -----------------------------------------------------------------------
def print_progress(done: int, total: int, desc: str) -> None:
    """A progress line on stderr for the command line (stdout carries the JSON)."""
    if total:
        sys.stderr.write(f"\r{desc}: {done / 1e6:,.1f} / {total / 1e6:,.1f} MB ({100 * done / total:.0f}%)")
        if done >= total:
            sys.stderr.write("\n")
    else:
        sys.stderr.write(f"{desc}\n")
    sys.stderr.flush()


def generate_command(args, messages: list[dict], tools: list[dict]) -> dict:
    """`python -m engine generate`: one turn, token by token, as DESIGN.md's JSON."""
    settings = GenerationSettings(
        max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_p=getattr(args, "top_p", 1.0),
        top_k=args.top_k, seed=args.seed, enable_thinking=getattr(args, "thinking", False),
    )
    settings.check()
    engine = load_engine(args.model, getattr(args, "device", None), getattr(args, "dtype", None), print_progress)
    request = Request(messages, tools, "native", enable_thinking=settings.enable_thinking)
    constraint = build_constraint(engine, tools, args.tool_choice)
    generation = generate_turn(engine, request, settings, constraint)
    result = generation.as_json()
    if getattr(args, "record", None):
        from .trace import record_trace

        result["trace"] = str(record_trace(args.record, generation, request, tool_choice=args.tool_choice))
    return result


def download_command(args) -> dict:
    """`python -m engine download`: fetch a model into the Hugging Face cache, progress on stderr."""
    from pathlib import Path

    from .loading import locate_weights, revision_of
    from .settings import load_settings

    name = args.model or load_settings().model
    if name == TINY:
        raise BadInput("the tiny model is built in memory from a seed; there is nothing to download")
    folder, source = locate_weights(name, print_progress)
    files = sorted(p.name for p in Path(folder).iterdir() if p.is_file())
    size = sum((Path(folder) / f).stat().st_size for f in files)
    return {
        "model": name, "path": str(folder), "source": source, "revision": revision_of(folder), "files": files, "bytes": size,
    }
