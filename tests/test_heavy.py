"""engine/heavy.py: torch, transformers and xgrammar are imported by one thread while any other that needs them waits."""

from __future__ import annotations

import pytest
from helpers import ROOT, run_python

from engine.heavy import HEAVY, _is_heavy

RACE = r"""
import builtins, json, sys, threading, time
sys.path.insert(0, {root!r})
from engine import heavy
heavy.guard_imports()
heavy.guard_imports()  # once: a second call wraps nothing twice
guarded = builtins.__import__ is heavy._waiting_import
thread = threading.Thread(target=heavy.import_heavy)
thread.start()
while heavy._owner is None and not heavy._done.is_set():
    time.sleep(0.001)
# this thread asks for transformers alone, the way a page's import does, while the other thread imports all three
from transformers import PreTrainedTokenizerBase
# read the moment the import returns: all three were in by then (xgrammar, last, included), or it raced
finished = {{"done": heavy._done.is_set(), "xgrammar": "xgrammar" in sys.modules}}
thread.join()
print(json.dumps({{"guarded": guarded, "restored": builtins.__import__ is heavy._original_import, "seconds": heavy.import_heavy(), "errors": heavy.heavy_errors(),
                   "finished": finished}}))
"""


def test_a_thread_that_needs_transformers_waits_for_the_thread_importing_all_three():
    result = run_python(RACE.format(root=str(ROOT)), timeout=600)
    # the import statement waited while they were imported, and is Python's own again after
    assert result["guarded"] and result["restored"] and result["errors"] == {}
    assert list(result["seconds"]) == list(HEAVY)
    # it waited for the whole import (xgrammar, last, included) rather than racing it
    assert result["finished"] == {"done": True, "xgrammar": True}


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
