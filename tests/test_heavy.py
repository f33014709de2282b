"""engine/heavy.py: torch, transformers and xgrammar are imported by one thread while any other that needs them waits."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import ROOT

from engine.heavy import HEAVY, _is_heavy

RACE = r"""
import builtins, json, sys, threading, time
sys.path.insert(0, {root!r})
from engine import heavy
heavy.guard_imports()
heavy.guard_imports()  # once: a second call wraps nothing twice
guarded = builtins.__import__ is heavy._waiting_import
ended = {{}}
def background():
    heavy.import_heavy()
    ended["background"] = time.perf_counter()
thread = threading.Thread(target=background)
thread.start()
while heavy._owner is None and not heavy._done.is_set():
    time.sleep(0.001)
# this thread asks for transformers alone, the way a page's import does, while the other thread imports all three
from transformers import PreTrainedTokenizerBase
ended["page"] = time.perf_counter()
thread.join()
print(json.dumps({{"guarded": guarded, "restored": builtins.__import__ is heavy._original_import, "seconds": heavy.import_heavy(), "errors": heavy.heavy_errors(),
                   "page_after_background": ended["page"] >= ended["background"],
                   "xgrammar_loaded": "xgrammar" in sys.modules}}))
"""


def test_a_thread_that_needs_transformers_waits_for_the_thread_importing_all_three():
    done = subprocess.run(
        [sys.executable, "-c", RACE.format(root=str(ROOT))],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ},
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # the import statement waited while they were imported, and is Python's own again after
    assert result["guarded"] and result["restored"] and result["errors"] == {}
    assert list(result["seconds"]) == list(HEAVY)
    # it waited for the whole import (xgrammar, last, included) rather than racing it
    assert result["page_after_background"] and result["xgrammar_loaded"]


@pytest.mark.parametrize(
    "name, heavy",
    [
        ("torch", True),
        ("torch.nn.functional", True),
        ("transformers.tokenization_utils_base", True),
        ("xgrammar", True),
        ("safetensors.torch", True),
        ("safetensors", False),
        ("tokenizers", False),
        ("torchvision_like", False),
        ("jinja2", False),
        ("engine.model.decode", False),
    ],
)
def test_which_imports_wait(name, heavy):
    assert _is_heavy(name) is heavy
