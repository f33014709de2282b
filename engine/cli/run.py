"""`python -m engine run`: a scripted harness run (canned assistant turns from lessons/scenarios) in a call
format, and its token ledger: each call's input and output tokens, its tool calls and errors, the totals."""

from __future__ import annotations

from ..core.call_formats import lesson_format_names
from ..harness.loop import load_scenario, run_scenario
from .common import add_format_flag


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="a scripted harness run and its token ledger")
    p.add_argument("--scenario", required=True)
    p.add_argument("--style", choices=lesson_format_names(), default=None)
    add_format_flag(p, takes_style=True, takes_family=False)
    p.set_defaults(handler=cmd_run)


def cmd_run(args) -> dict:
    run = run_scenario(load_scenario(args.scenario), args.style)
    return run.ledger.as_json()
