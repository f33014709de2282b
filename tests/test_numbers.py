"""The one percent formatter every page uses for a probability, in Python and in the step view's JavaScript."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import PERCENTS

from ui.numbers import format_percent

NUMBERS_JS = Path(__file__).resolve().parent.parent / "ui" / "views" / "numbers.js"


@pytest.mark.parametrize("p, shown", PERCENTS)
def test_format_percent(p, shown):
    assert format_percent(p) == shown


def test_no_probability_is_written_in_e_notation():
    for exponent in range(0, 40):
        for mantissa in (1, 2.5, 7.64, 9.99):
            assert "e" not in format_percent(mantissa * 10.0**-exponent)


def test_the_step_views_javascript_formats_by_the_same_rule():
    # the step view writes its bars' figures in the browser (ui/views/numbers.js): the same table, the same words
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("no node to run ui/views/numbers.js (tests/test_browser_palette.py runs it in Chromium)")
    probabilities = [p for p, _ in PERCENTS] + [
        mantissa * 10.0**-e for e in range(0, 12) for mantissa in (1, 2.5, 7.64, 9.995)
    ]
    script = (
        NUMBERS_JS.read_text(encoding="utf-8")
        + f"\nconsole.log(JSON.stringify({json.dumps(probabilities)}.map(formatPercent)));"
    )
    shown = json.loads(
        subprocess.run([node, "-e", script], capture_output=True, text=True, check=True, timeout=60).stdout
    )
    assert shown[: len(PERCENTS)] == [s for _, s in PERCENTS]
    assert shown == [format_percent(p) for p in probabilities]
