"""engine/startup/warmup.py: the start-up warm-up runs once per process, in the background, and warms what pages share."""

from __future__ import annotations

from helpers import ROOT, run_python

CHILD = r"""
import json, sys, threading, time
sys.path.insert(0, {root!r})
import engine.startup.warmup as warmup
from engine.constrain.grammar import _compile, _tokenizer_info, canonical
from engine.core.tooldefs import TOOL_SETS, load_tool_set
# a gate before the first background step: the thread cannot finish until this thread opens it,
# so what start_warmup() left undone when it returned is seen without timing anything
gate = threading.Event()
real_steps = warmup.warmup_steps
warmup.warmup_steps = lambda: [("gate", lambda: gate.wait(60)), *real_steps()]
first, second = warmup.start_warmup(), warmup.start_warmup()
at_return = {{"finished": warmup.warmup_report().finished, "alive": [t.name for t in threading.enumerate()]}}
gate.set()
finished = warmup.wait_warmup(600)
report = warmup.warmup_report()
info = _tokenizer_info.cache_info().currsize
compiled = _compile.cache_info().currsize
# every grammar a page can ask of a shipped set: auto and required over it, each tool named alone
expected = len({{(canonical(load_tool_set(n)), shape) for n in TOOL_SETS for shape in ("body", "calls")}}
               | {{(canonical([t]), "call") for n in TOOL_SETS for t in load_tool_set(n)}})
threads = [t.name for t in threading.enumerate()]
print(json.dumps({{"first": first, "second": second, "at_return": at_return, "finished": finished,
                   "report_finished": report.finished, "errors": report.errors, "steps": list(report.seconds),
                   "seconds": report.seconds,
                   "tokenizer_info_built": info, "grammars_compiled": compiled, "grammars_expected": expected, "threads": threads}}))
"""


def run_child(env_extra: dict) -> dict:
    return run_python(CHILD.format(root=str(ROOT)), env_extra)


def test_the_warm_up_starts_once_returns_at_once_and_builds_the_shared_pieces():
    result = run_child({"QWEN_WARMUP": "1"})
    assert result["first"] is True and result["second"] is False  # once per process
    # starting it returns while the background thread still has its work ahead: the page never waits for it
    assert result["at_return"]["finished"] is False and "engine-warmup" in result["at_return"]["alive"]
    assert result["finished"] and result["report_finished"] and result["errors"] == {}
    # torch, transformers and xgrammar first, in the thread (engine/heavy.py: never by two threads at once)
    assert result["steps"][:5] == ["import torch", "import transformers", "import xgrammar", "gate", "tokenizer"]
    assert result["steps"][-4:] == ["grammar engine", "tool set grammars", "lesson 4's costs", "other families"]
    assert result["tokenizer_info_built"] == 1
    assert result["grammars_compiled"] == result["grammars_expected"] > 6


def test_qwen_warmup_0_turns_it_off():
    result = run_child({"QWEN_WARMUP": "0"})
    assert result["first"] is False and result["second"] is False and result["finished"] is False
    assert "engine-warmup" not in result["threads"] and result["tokenizer_info_built"] == 0


THEN = r"""
import json, sys, threading
sys.path.insert(0, {root!r})
import engine.startup.warmup as warmup
seen = []
warmup.warmup_steps = lambda: [("step", lambda: seen.append("step"))]
warmup.start_warmup(then=lambda: seen.append(["then", threading.current_thread().name]))
warmup.wait_warmup(600)
import gc
print(json.dumps({{"seen": seen, "seconds": list(warmup.warmup_report().seconds), "frozen": gc.get_freeze_count()}}))
"""


def test_then_runs_in_the_warm_up_thread_before_its_steps():
    result = run_python(THEN.format(root=str(ROOT)), {"QWEN_WARMUP": "1"})
    # the shipped model's load goes here: one background thread imports transformers' models at a time
    assert result["seen"] == [["then", "engine-warmup"], "step"]
    assert result["seconds"][-2:] == ["then", "step"]
    # what it built is set aside from the full collection Streamlit runs after every page
    assert result["frozen"] > 10_000


AFTER_PAGE = r"""
import json, sys, time
sys.path.insert(0, {root!r})
import engine.startup.warmup as warmup
warmup.warmup_steps = lambda: [("step", lambda: None)]
warmup.start_warmup(after_page=True)
time.sleep(0.5)
before = dict(warmup.warmup_report().seconds)
heavy_before = "torch" in sys.modules
warmup.page_drawn()
warmup.wait_warmup(600)
print(json.dumps({{"before": before, "heavy_before": heavy_before, "after": list(warmup.warmup_report().seconds)}}))
"""


def test_a_server_s_warm_up_waits_for_its_first_page_before_it_imports_torch():
    result = run_python(AFTER_PAGE.format(root=str(ROOT)), {"QWEN_WARMUP": "1"})
    # nothing ran while the first page drew (it had half a second); then everything did
    assert result["before"] == {} and result["heavy_before"] is False
    assert result["after"] == ["import torch", "import transformers", "import xgrammar", "step"]
