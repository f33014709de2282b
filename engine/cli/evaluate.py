"""`python -m engine eval`: a suite's tasks run once per seed, the calls counted: blocks, valid, unusable by
kind, runs that called, tokens (progress on stderr). The module is named for what it does: `eval` is Python's."""

from __future__ import annotations

import sys

from . import models
from .common import whole_number


def add_parser(sub) -> None:
    p = sub.add_parser(
        "eval", help="run a suite of tasks and count the calls: valid, unusable by kind, runs that called"
    )
    models.add_model_flags(p, "an OpenAI-compatible server instead of a local model")
    p.add_argument("--suite", required=True, help="a suite in lessons/suites: strawberry, harness, twelve-tools")
    p.add_argument("--seeds", type=whole_number, default=3, help="runs per task (seeds 0..N-1; default 3)")
    p.add_argument(
        "--tool-choice",
        choices=["auto", "required"],
        default="auto",
        help="required: a grammar forces a call on each run's first turn (later turns: auto with the grammar)",
    )
    p.add_argument(
        "--constrained",
        action="store_true",
        help="auto with the grammar: free until <tool_call>, then only a well-formed call",
    )
    p.add_argument("--max-new-tokens", type=whole_number, default=None, help="new tokens a turn (default: the suite's)")
    p.add_argument(
        "--temperature",
        type=float,
        default=0.7,
        help="sampling temperature (default 0.7; 0 = greedy, every seed alike)",
    )
    p.add_argument("--limit", type=whole_number, default=None, help="run only the suite's first N tasks")
    models.add_device_flags(p)
    p.set_defaults(handler=cmd_eval)


def cmd_eval(args) -> dict:
    """A suite's tasks, once per seed: blocks, valid, unusable by kind, runs that called, tokens (progress on stderr)."""
    from ..harness.eval import EvalSettings, load_suite, run_suite

    suite = load_suite(args.suite)
    settings = EvalSettings(
        seeds=args.seeds,
        tool_choice=args.tool_choice,
        constrained=args.constrained,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        limit=args.limit,
    )
    # refuse a bad setting or an eval past the cap before a load that can take minutes
    settings.check(suite)
    from ..model.live import eval_models

    model = models.open_engine(args)
    make_model, note = eval_models(model, settings.tool_choice, settings.constrained)

    def progress(result) -> None:
        sys.stderr.write(f"\r{args.suite} ({settings.condition}): {len(result.records)} / {result.planned} runs")
        sys.stderr.write("\n" if len(result.records) == result.planned else "")
        sys.stderr.flush()

    return run_suite(suite, settings, make_model, model.info.as_json(), on_run=progress, note=note).as_json()
