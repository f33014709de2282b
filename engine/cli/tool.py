"""`python -m engine tool`: run one of the harness's tools in a workspace folder, its arguments given as a JSON
object; prints its result or its error, as the loop would hand it back to the model."""

from __future__ import annotations

from ..core.json_input import InputProblem, read_json_text
from ..errors import EngineError
from ..harness.tools import run_tool
from ..sandbox.workspace import Workspace


def add_parser(sub) -> None:
    p = sub.add_parser("tool", help="run one tool in a workspace folder")
    p.add_argument("name")
    p.add_argument("--args", required=True)
    p.add_argument("--workspace", required=True)
    p.set_defaults(handler=cmd_tool)


def cmd_tool(args) -> dict:
    try:
        arguments = read_json_text(args.args)
    except InputProblem as problem:
        raise EngineError(f"--args {problem}") from None
    if not isinstance(arguments, dict):
        raise EngineError('--args must be a JSON object, such as \'{"path": "notes.txt"}\'')
    outcome = run_tool(args.name, arguments, Workspace(args.workspace))
    return {"error": outcome.error} if outcome.error is not None else {"result": outcome.result}
