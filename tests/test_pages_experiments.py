"""Page test (streamlit AppTest) for "Measure it": a suite run free and constrained with the tiny model, its
table and chart, the published figures named by source, and the downloads."""

from __future__ import annotations

import json

from helpers import open_page, page_text

from engine.harness.eval import EvalSettings, load_suite, model_lock
from ui.sources import cite

PAGE = "app_pages/experiments.py"


def test_without_a_run_the_page_quotes_the_published_figures_by_source():
    at = open_page(PAGE, suite="harness")
    shown = page_text(at)
    assert cite("reading-tool-calls") in shown  # [[reading-tool-calls]], its title linked to its entry
    table = at.dataframe[-1].value
    assert "24 tool-call blocks, 8 valid" in " ".join(
        table["figures"]
    ) and "Reading tool calls out of free text" in list(table["source"])
    assert not at.exception


def test_a_run_free_and_constrained_with_the_tiny_model(tiny_engine):
    at = open_page(PAGE, timeout=240, suite="twelve-tools")
    at.radio(key="model").set_value("tiny").run(timeout=120)
    assert any("random weights" in w.value for w in at.warning)
    at.number_input(key="experiments_tokens_twelve-tools").set_value(8)
    at.button(key="experiments_run").click().run(timeout=600)
    assert not at.exception, [e.value for e in at.exception]
    totals = at.dataframe[-1].value
    assert list(totals["condition"]) == ["free", "grammar"]
    runs = len(load_suite("twelve-tools").tasks)
    assert list(totals["runs"]) == [runs, runs]
    for _, row in totals.iterrows():
        assert (
            row["valid"] + sum(row[k] for k in ("bad_json", "unknown_tool", "bad_arguments", "cut_off"))
            == row["blocks"]
        )
    grammar = totals[totals["condition"] == "grammar"].iloc[0]
    assert grammar["bad_json"] == grammar["unknown_tool"] == grammar["bad_arguments"] == 0
    assert len(at.get("plotly_chart")) == 1
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    names = {trace.get("name") for trace in chart["data"]}
    assert {"valid", "cut_off", "runs with a call", "tokens"} <= names
    # the published runs stand beside ours, labelled as published
    assert any("(published)" in str(x) for trace in chart["data"] for x in trace.get("x", []))
    assert "In words:" in page_text(at)
    assert [b.proto.label for b in at.get("download_button")] == ["Download CSV", "Download JSON"]


def test_a_busy_model_says_so(tiny_engine, monkeypatch):
    """One experiment at a time on a model: the lock another holds makes the page say the model is busy."""
    from ui import experiments

    lock = model_lock(tiny_engine)
    lock.acquire()
    told = []
    monkeypatch.setattr(experiments.st, "info", lambda message: told.append(message) or _Empty())
    # the page's wait loop ends when the lock is released: release it on the first wait
    real_acquire = lock.acquire

    class Released:
        def acquire(self, blocking=True, timeout=-1):
            if not blocking:
                return False
            lock.release()
            return real_acquire()

        def release(self):
            lock.release()

    monkeypatch.setattr(experiments, "model_lock", lambda engine: Released())
    monkeypatch.setattr(experiments.st, "progress", lambda *a, **k: _Empty())
    monkeypatch.setattr(experiments, "run_suite", lambda *a, **k: _Empty())
    monkeypatch.setattr(EvalSettings, "check", lambda self, suite: None)
    experiments.run_conditions(tiny_engine, load_suite("strawberry"), ["free"], 1, 8)
    assert told and "running another experiment" in told[0]
    assert real_acquire(blocking=False)
    lock.release()


class _Empty:
    def empty(self):
        pass

    def progress(self, *args, **kwargs):
        pass


def test_the_stop_word_scenes_need_no_model_and_follow_their_toggle():
    at = open_page(PAGE)
    assert "Nothing stops the turn" in page_text(at) and "Observation: 2" in page_text(at)
    at.toggle(key="experiments_stop_thinking-cut-mid-thought").set_value(True).run()
    assert any("mid-thought" in e.value for e in at.error)
    at.toggle(key="experiments_stop_react-writes-its-own-observation").set_value(True).run()
    assert any("the call is what is left" in s.value for s in at.success)
    assert "calls count_letter" in page_text(at)
