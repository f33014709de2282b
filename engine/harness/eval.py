"""Measure how a model calls tools over a suite of tasks: blocks written, valid, unusable by kind.

The measurement the source documents report, made again with any model: [[reading-tool-calls]]
ran Qwen3-0.6B on 40 tasks under 3 seeds (120 runs: 24 call blocks, 8 valid, 10 runs that
called at all), and [[tool-calls-cant-come-out-malformed]] counted unusable calls on a 12-tool
schema (14 of 111 without its grammar, 0 with it, a call cut off by the token limit reported
apart). Suites are data in lessons/suites/ (a tool set, tasks, what a right answer is); each
task runs once per seed through the harness loop (engine/harness/loop.py), and every block of
every turn is judged by the parser's own checks (engine/core/parse.py).

The counting rules, one kind per unusable block, from the first check it fails:

    closed           cut_off (the turn hit max_new_tokens) or not_closed (it stopped without </tool_call>)
    json             bad_json (a raw newline in a string, an empty block, a stray </tool_call> too)
    shape            bad_shape (not exactly "name" and "arguments")
    name             unknown_tool
    arguments, required, no extra, types    bad_arguments
    count            too_many_calls (past the parser's MAX_CALLS in one turn)
    format (ReAct)   bad_format

so valid + every unusable kind == blocks. Under a grammar (tool_choice required, or auto with
the grammar) only cut_off can be unusable: the grammar rules the rest out, never the token limit.

Torch-free: the model comes from a `make_model(settings)` the caller passes (engine/model/live.py's
`eval_models` for a loaded model or a server), so counting, suites and grading load without torch.
"""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

from ..core.generation import GenerationSettings
from ..core.parse import ParseResult
from ..core.tooldefs import load_tool_set
from ..errors import BadInput
from ..settings import LESSONS
from .loop import STOP_LIMIT, Run, TurnModel, iterate_episode, make_workspace

SUITES = LESSONS / "suites"
# the kinds always reported (0 when none), in the order a table shows them; others appear when they happen
KINDS = ("bad_json", "unknown_tool", "bad_arguments", "cut_off")
CHECK_KIND = {
    "json": "bad_json",
    "shape": "bad_shape",
    "name": "unknown_tool",
    "arguments": "bad_arguments",
    "required": "bad_arguments",
    "no extra": "bad_arguments",
    "types": "bad_arguments",
    "count": "too_many_calls",
    "format": "bad_format",
}
MAX_TOKENS = 400_000  # the most new tokens one eval may ask for: runs x turns x max_new_tokens
TOOL_CHOICES = ("auto", "required")


# -- suites --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Task:
    """One task: the conversation the model starts from, and what a right answer is."""

    id: str
    messages: list[dict]
    expect: dict  # "tool": a name, a list of names or null (no call); "answer": strings; "file", "contains"
    right: str  # what a right answer is, in words
    files: dict[str, str] = field(default_factory=dict)  # the workspace's files (relative path -> text)


@dataclass(frozen=True)
class Suite:
    name: str
    title: str
    about: str
    tool_set: str  # a tool set in lessons/tools/
    max_turns: int  # the harness's turn cap
    max_new_tokens: int  # the suite's token limit a turn (--max-new-tokens overrides)
    workspace: bool  # each run gets a fresh sandboxed workspace with its task's files
    tasks: list[Task]

    @property
    def tools(self) -> list[dict]:
        return load_tool_set(self.tool_set)


def suite_names() -> list[str]:
    return sorted(p.stem for p in SUITES.glob("*.json"))


@cache
def load_suite(name: str) -> Suite:
    """A suite from lessons/suites/, or BadInput listing the suites there are."""
    if name not in suite_names():
        raise BadInput(f"unknown suite {name!r}; the suites are {', '.join(suite_names())}")
    data = json.loads((SUITES / f"{name}.json").read_text(encoding="utf-8"))
    history = data.get("history", [])
    tasks = []
    for item in data["tasks"]:
        # a task is a question, or a point in the suite's fixed history (the conversation up to it)
        messages = history[: item["after"]] if "after" in item else [{"role": "user", "content": item["prompt"]}]
        tasks.append(
            Task(
                item["id"],
                [dict(m) for m in messages],
                item.get("expect", {}),
                item.get("right", ""),
                item.get("files", {}),
            )
        )
    return Suite(
        name,
        data["title"],
        data["about"],
        data["tools"],
        int(data.get("max_turns", 1)),
        int(data.get("max_new_tokens", 128)),
        bool(data.get("workspace", False)),
        tasks,
    )


# -- the counting rules ----------------------------------------------------------------------------
@dataclass(frozen=True)
class BlockVerdict:
    kind: str | None  # None: a valid call; else the unusable kind (KINDS and the rest)
    error: str | None  # the error the harness sent back
    name: str | None  # the valid call's tool


@dataclass(frozen=True)
class TurnVerdict:
    finish: str  # "stop" or "length"
    blocks: list[BlockVerdict]


def block_kind(checks, finish: str, style: str = "native") -> str | None:
    """The kind of an unusable block from its checks (None: every check passed)."""
    failed = next((c.name for c in checks if c.passed is False), None)
    if failed is None:
        return None
    if failed == "closed" or (style == "react" and finish == "length"):
        return "cut_off" if finish == "length" else "not_closed"
    return CHECK_KIND.get(failed, failed.replace(" ", "_"))


def judge_turn(parsed: ParseResult, finish: str) -> TurnVerdict:
    """Each block of a parsed turn, valid or its kind."""
    return TurnVerdict(
        finish,
        [
            BlockVerdict(block_kind(b.checks, finish, parsed.style), b.error, b.call.name if b.call else None)
            for b in parsed.blocks
        ],
    )


@dataclass
class Tally:
    """Counts over runs: what the command line prints for a suite and for each task."""

    runs: int = 0
    turns: int = 0
    blocks: int = 0
    valid: int = 0
    unusable: Counter = field(default_factory=Counter)
    runs_with_call: int = 0  # runs with at least one block, valid or not
    right: int = 0  # runs whose answer was right by the task's own measure
    tokens_in: int = 0
    tokens_out: int = 0
    errors: Counter = field(default_factory=Counter)  # the error strings sent back, and how often

    def add(self, record: RunRecord) -> None:
        self.runs += 1
        self.turns += len(record.turns)
        blocks = [b for t in record.turns for b in t.blocks]
        self.blocks += len(blocks)
        self.valid += sum(b.kind is None for b in blocks)
        self.unusable.update(b.kind for b in blocks if b.kind is not None)
        self.errors.update(b.error for b in blocks if b.error)
        self.runs_with_call += bool(blocks)
        self.right += record.right
        self.tokens_in += record.tokens_in
        self.tokens_out += record.tokens_out

    def as_json(self) -> dict:
        unusable = {k: self.unusable.get(k, 0) for k in KINDS} | {
            k: n for k, n in sorted(self.unusable.items()) if k not in KINDS
        }
        return {
            "runs": self.runs,
            "turns": self.turns,
            "blocks": self.blocks,
            "valid": self.valid,
            "unusable": unusable,
            "runs_with_call": self.runs_with_call,
            "right": self.right,
            "tokens": {"in": self.tokens_in, "out": self.tokens_out},
        }


# -- grading -------------------------------------------------------------------------------------
def _mentions(text: str, wanted: str) -> bool:
    """Whether `text` holds `wanted` as a whole word or number ("3" is not in "13"), ignoring case."""
    return re.search(rf"(?<![\w.]){re.escape(wanted)}(?![\w])", text, re.IGNORECASE) is not None


def grade(task: Task, called: list[str], any_block: bool, answer: str | None, files: dict[str, str]) -> bool:
    """Whether a run did what its task calls right: the tool, the answer, the file."""
    expect = task.expect
    if "tool" in expect:
        tool = expect["tool"]
        if tool is None and any_block:
            return False
        wanted = [tool] if isinstance(tool, str) else (tool or [])
        if wanted and not set(wanted) & set(called):
            return False
    if expect.get("answer") and not any(_mentions(answer or "", a) for a in expect["answer"]):
        return False
    if "file" in expect and (expect["file"] not in files or expect.get("contains", "") not in files[expect["file"]]):
        return False
    return True


# -- running a suite ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class EvalSettings:
    """How a suite is run; every field goes into the result."""

    # runs per task, with seeds 0 .. seeds-1 (different draws only when temperature > 0)
    seeds: int = 3
    # the first turn's tool_choice: "auto" (the model decides) or "required" (a grammar forces a call);
    # under required the later turns run under auto with the grammar, so a run can end with an answer
    tool_choice: str = "auto"
    # auto with the grammar: free until the model writes <tool_call>, then only a well-formed call
    constrained: bool = False
    # new tokens a turn; None = the suite's own
    max_new_tokens: int | None = None
    # sampling temperature (0.7 as the grammar server's sampled requests); 0 = greedy, the same for every seed
    temperature: float = 0.7
    # run only the suite's first N tasks (None = all)
    limit: int | None = None

    @property
    def condition(self) -> str:
        """The condition's short name in a table: free, grammar or required."""
        return "required" if self.tool_choice == "required" else ("grammar" if self.constrained else "free")

    def check(self, suite: Suite) -> None:
        if self.tool_choice not in TOOL_CHOICES:
            raise BadInput(f"--tool-choice must be auto or required, not {self.tool_choice!r}")
        if self.seeds < 1:
            raise BadInput(f"--seeds must be at least 1, not {self.seeds}")
        if self.limit is not None and self.limit < 1:
            raise BadInput(f"--limit must be at least 1, not {self.limit}")
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise BadInput(
                f"--max-new-tokens must be at least 1, not {self.max_new_tokens} (leave it out for the suite's)"
            )
        GenerationSettings(max_new_tokens=self.tokens(suite), temperature=self.temperature).check()
        worst = self.runs(suite) * suite.max_turns * self.tokens(suite)
        if worst > MAX_TOKENS:
            raise BadInput(
                f"this eval could ask for {worst:,} new tokens ({self.runs(suite)} runs x {suite.max_turns} turns x "
                f"{self.tokens(suite)} tokens), over the cap of {MAX_TOKENS:,}: lower --seeds, --max-new-tokens or --limit"
            )

    def tokens(self, suite: Suite) -> int:
        # None, not 0, means "the suite's": a 0 given is refused by check, never read as not given
        return suite.max_new_tokens if self.max_new_tokens is None else self.max_new_tokens

    def tasks(self, suite: Suite) -> list[Task]:
        return suite.tasks if self.limit is None else suite.tasks[: self.limit]

    def runs(self, suite: Suite) -> int:
        return len(self.tasks(suite)) * self.seeds

    def generation(self, suite: Suite, seed: int) -> GenerationSettings:
        return GenerationSettings(max_new_tokens=self.tokens(suite), temperature=self.temperature, top_k=0, seed=seed)


@dataclass
class RunRecord:
    task: str
    seed: int
    turns: list[TurnVerdict]
    right: bool
    answer: str | None
    stop: str  # why the run ended (the harness's stop reason)
    tokens_in: int
    tokens_out: int
    texts: list[str] = field(default_factory=list)  # each turn's text, as the model wrote it


@dataclass
class EvalResult:
    suite: str
    settings: EvalSettings
    model: dict  # the model's ModelInfo, as JSON
    records: list[RunRecord] = field(default_factory=list)
    planned: int = 0  # runs asked for
    seconds: float = 0.0
    stopped: bool = False  # stopped before every planned run had run
    note: str | None = None  # what the grammar did where it could not do all (a server's later turns)

    def total(self) -> Tally:
        tally = Tally()
        for record in self.records:
            tally.add(record)
        return tally

    def by_task(self) -> dict[str, Tally]:
        tallies: dict[str, Tally] = {}
        for record in self.records:
            tallies.setdefault(record.task, Tally()).add(record)
        return tallies

    def as_json(self) -> dict:
        """The command line's JSON: the totals at the top, then each task's, then what ran with what."""
        total = self.total()
        return {
            "suite": self.suite,
            **total.as_json(),
            "tasks": [{"id": task, **tally.as_json()} for task, tally in self.by_task().items()],
            "condition": self.settings.condition,
            "tool_choice": self.settings.tool_choice,
            "constrained": self.settings.constrained or self.settings.tool_choice == "required",
            "seeds": self.settings.seeds,
            "max_new_tokens": self.settings.tokens(load_suite(self.suite)),
            "temperature": self.settings.temperature,
            "errors": dict(total.errors.most_common(10)),
            "model": self.model,
            "planned": self.planned,
            "stopped": self.stopped,
            "seconds": round(self.seconds, 2),
            **({"note": self.note} if self.note else {}),
        }

    def csv_rows(self) -> list[dict]:
        """One row per task and one for the whole suite, with every kind as a column."""
        rows = [("all", self.total()), *self.by_task().items()]
        kinds = list(KINDS) + sorted({k for _, t in rows for k in t.unusable if k not in KINDS})
        out = []
        for task, tally in rows:
            row = {
                "condition": self.settings.condition,
                "task": task,
                "runs": tally.runs,
                "turns": tally.turns,
                "blocks": tally.blocks,
                "valid": tally.valid,
            }
            row |= {k: tally.unusable.get(k, 0) for k in kinds}
            row |= {
                "runs_with_call": tally.runs_with_call,
                "right": tally.right,
                "tokens_in": tally.tokens_in,
                "tokens_out": tally.tokens_out,
            }
            out.append(row)
        return out

    def runs_json(self) -> list[dict]:
        return [asdict(r) for r in self.records]


def csv_text(results: list[EvalResult]) -> str:
    """Every result's rows in one CSV (a free and a constrained run side by side), columns the union of theirs."""
    rows = [row for result in results for row in result.csv_rows()]
    columns = list(dict.fromkeys(k for row in rows for k in row))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns, restval=0, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def _files_after(workspace) -> dict[str, str]:
    found = {}
    for path in Path(workspace.root).rglob("*"):
        if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts:
            try:
                found[path.relative_to(workspace.root).as_posix()] = path.read_text(encoding="utf-8")[:65536]
            except (OSError, UnicodeDecodeError):
                continue
    return found


def run_task(suite: Suite, task: Task, model: TurnModel, max_turns: int) -> tuple[Run, dict[str, str]]:
    """One run of one task through the harness loop, in a fresh workspace when the suite has one; (run, files after)."""
    run = Run("native", "per-block")
    if not suite.workspace:
        for _ in iterate_episode(model, task.messages, suite.tools, workspace=None, max_turns=max_turns, run=run):
            pass
        return run, {}
    with tempfile.TemporaryDirectory(prefix="eval-") as folder:
        workspace = make_workspace(task.files, folder)
        for _ in iterate_episode(model, task.messages, suite.tools, workspace=workspace, max_turns=max_turns, run=run):
            pass
        return run, _files_after(workspace)


def record_run(task: Task, seed: int, run: Run, files: dict[str, str]) -> RunRecord:
    """A finished run as the counting rules see it."""
    turns = [judge_turn(call.parse, call.turn.finish) for call in run.calls]
    called = [b.name for t in turns for b in t.blocks if b.name]
    any_block = any(t.blocks for t in turns)
    right = grade(task, called, any_block, run.answer, files)
    return RunRecord(
        task.id,
        seed,
        turns,
        right,
        run.answer,
        run.stop_reason or STOP_LIMIT,
        run.ledger.input_tokens,
        run.ledger.output_tokens,
        [call.turn.text for call in run.calls],
    )


def run_suite(
    suite: Suite,
    settings: EvalSettings,
    make_model: Callable[[GenerationSettings], TurnModel],
    model_info: dict,
    on_run: Callable[[EvalResult], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    note: str | None = None,
) -> EvalResult:
    """Every task once per seed (seed by seed, so a stopped eval has covered every task as far as it got)."""
    settings.check(suite)
    result = EvalResult(suite.name, settings, model_info, planned=settings.runs(suite), note=note)
    start = time.monotonic()
    for seed in range(settings.seeds):
        for task in settings.tasks(suite):
            if should_stop is not None and should_stop():
                result.stopped = True
                result.seconds = time.monotonic() - start
                return result
            model = make_model(settings.generation(suite, seed))
            run, files = run_task(suite, task, model, suite.max_turns)
            result.records.append(record_run(task, seed, run, files))
            result.seconds = time.monotonic() - start
            if on_run is not None:
                on_run(result)
    return result


# -- one experiment at a time on a model, and the published figures beside it -------------------------
_locks_guard = threading.Lock()
_model_locks: dict[int, threading.Lock] = {}


def model_lock(engine: object) -> threading.Lock:
    """The lock an experiment holds on `engine` while it runs: a second experiment on the same model waits for it."""
    with _locks_guard:
        return _model_locks.setdefault(id(engine), threading.Lock())


@dataclass(frozen=True)
class Published:
    """A measurement a source document reports, quoted (never run here)."""

    source: str  # a key of lessons/sources.json
    model: str
    suite: str  # the suite here that is closest to what it ran
    condition: str  # free or grammar
    setting: str
    quote: str  # the figures in the source's own terms
    runs: int | None = None
    blocks: int | None = None
    valid: int | None = None
    unusable: dict = field(default_factory=dict)
    runs_with_call: int | None = None


@cache
def published_figures() -> tuple[Published, ...]:
    rows = json.loads((LESSONS / "published-figures.json").read_text(encoding="utf-8"))
    return tuple(Published(**row) for row in rows)
