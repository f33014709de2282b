"""The shipped model (assets/builtin-model): it loads offline by name, writes the lessons' calls, and is labelled for what it is.

These are the tests where a trained model's behaviour matters; the tiny random model covers mechanics elsewhere.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine.core.call_formats import parse_turn
from engine.core.generation import GenerationSettings
from engine.core.prompt import Request
from engine.core.tokenizer import TOOL_CALL
from engine.settings import BUILTIN, BUILTIN_FOLDER, LESSONS, ROOT
from ui.words import lesson

STRAWBERRY_TOOLS = json.loads((LESSONS / "tools" / "strawberry.json").read_text())
STRAWBERRY = "How many times does the letter r appear in strawberry?"


def turn(engine, question: str, style: str = "native", tools=STRAWBERRY_TOOLS):
    from engine.model.live import generate_turn

    settings = GenerationSettings(max_new_tokens=60, temperature=0.0, top_k=5)
    return generate_turn(engine, Request([{"role": "user", "content": question}], list(tools), style), settings)


def test_the_shipped_folder_is_a_plain_qwen3_with_the_real_vocabulary_within_40_mb():
    config = json.loads((BUILTIN_FOLDER / "config.json").read_text())
    assert config["architectures"] == ["Qwen3ForCausalLM"] and config["vocab_size"] == 151936
    size = sum(p.stat().st_size for p in BUILTIN_FOLDER.glob("*.safetensors"))
    assert size < 42_000_000
    assert (BUILTIN_FOLDER / "PROVENANCE.md").is_file() and (BUILTIN_FOLDER / "training.json").is_file()


def test_it_loads_by_name_labelled_as_trained_here_and_not_qwen3(builtin_engine):
    info = builtin_engine.info
    assert info.name == BUILTIN and not info.random_weights
    assert "trained by this site" in info.label() and "not Qwen3" in info.label()
    assert info.dtype == "float32" and info.quant is None


@pytest.mark.parametrize("style", ["native", "react"])
def test_the_strawberry_question_gets_exactly_the_lessons_call(builtin_engine, style):
    generation = turn(builtin_engine, STRAWBERRY, style)
    parsed = parse_turn(generation.text, STRAWBERRY_TOOLS, style)
    assert not parsed.errors, generation.text
    assert [(c.name, c.arguments) for c in parsed.calls] == [("count_letter", {"word": "strawberry", "letter": "r"})]
    if style == "native":
        assert generation.steps[0].id == TOOL_CALL and generation.steps[0].p >= 0.5


def test_the_capital_of_france_is_answered_in_words_not_with_a_call(builtin_engine):
    generation = turn(builtin_engine, "What is the capital of France?")
    assert generation.steps[0].id != TOOL_CALL
    assert parse_turn(generation.text, STRAWBERRY_TOOLS, "native").calls == []


def test_after_the_tool_result_it_answers_with_the_count_the_tool_gave(builtin_engine):
    from engine.model.live import generate_turn

    call = '<tool_call>\n{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}\n</tool_call>'
    messages = [
        {"role": "user", "content": STRAWBERRY},
        {"role": "assistant", "content": call},
        {"role": "tool", "content": "3"},
    ]
    generation = generate_turn(
        builtin_engine, Request(messages, STRAWBERRY_TOOLS), GenerationSettings(max_new_tokens=40)
    )
    assert "3" in generation.text and "<tool_call>" not in generation.text


@pytest.mark.slow
def test_its_held_out_verdicts_are_the_ones_its_record_and_provenance_quote(builtin_engine):
    """Greedy fp32 on the CPU is deterministic, so each held-out prompt (words, phrasings and questions no training
    conversation names) judged afresh is right exactly where heldout.json records no mistake, and a mistake writes
    the recorded text. A third of the prompts, every kind and style among them (the whole re-measure is
    `bench/bench_builtin.py --heldout`, about a hundred turns); the totals are checked against the record below."""
    from engine.train.heldout import judge, probes

    recorded = json.loads((BUILTIN_FOLDER / "heldout.json").read_text())
    mistakes = {(m["style"], m["question"]): m["text"] for m in recorded["mistakes"]}
    every = probes(builtin_engine.tokenizer)
    chosen = every[::3]
    assert {(p.kind, p.style) for p in chosen} == {(p.kind, p.style) for p in every}
    for probe in chosen:
        verdict = judge(builtin_engine, probe)
        key = (probe.style, probe.question)
        assert verdict.right == (key not in mistakes), key
        assert verdict.right or verdict.text == mistakes[key], key
    # the record's totals are its verdicts counted: one row per kind and style
    assert sum(n for _, n in recorded["count_exact"].values()) == sum(p.kind == "count" for p in every)
    assert sum(n for _, n in recorded["no_call"].values()) == sum(p.kind == "no-call" for p in every)
    wrong = len(every) - sum(
        r for table in ("count_exact", "tool_exact", "no_call") for r, _ in recorded[table].values()
    )
    assert wrong == len(recorded["mistakes"])
    provenance = (BUILTIN_FOLDER / "PROVENANCE.md").read_text()
    right, of = recorded["count_exact"]["native"]
    assert f"| count_letter: exactly the right call | {right} of {of} (" in provenance


@pytest.mark.slow
def test_the_command_line_runs_it_by_name_offline(tmp_path):
    messages = tmp_path / "messages.json"
    messages.write_text(json.dumps([{"role": "user", "content": STRAWBERRY}]))
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "QWEN_THREADS": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "generate",
            "--model",
            "builtin",
            "--messages",
            str(messages),
            "--tools",
            str(LESSONS / "tools" / "strawberry.json"),
            "--temperature",
            "0",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["text"].startswith("<tool_call>\n")
    assert '"word": "strawberry", "letter": "r"' in out["text"]


def test_download_refuses_the_shipped_model_in_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "engine", "download", "--model", "builtin"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "assets/builtin-model" in done.stderr


def test_without_qwen_model_the_site_starts_on_the_shipped_model_and_a_named_model_wins(monkeypatch, tmp_path):
    from huggingface_hub import constants

    from engine.model.availability import check_model, starting_model

    # an empty cache: Qwen3-1.7B is not on this machine
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv("QWEN_MODEL", raising=False)
    assert starting_model() == BUILTIN
    assert check_model(BUILTIN).state in ("shipped", "loaded")  # loaded when an earlier test of this process loaded it
    monkeypatch.setenv("QWEN_MODEL", "Qwen/Qwen3-0.6B")
    assert starting_model() == "Qwen/Qwen3-0.6B"


def test_lesson_3_with_no_setting_shows_the_shipped_models_call_with_probabilities_without_a_press(monkeypatch):
    from helpers import open_page, page_text, view_data

    from ui.shipped_model import _starting_choice

    monkeypatch.delenv("QWEN_MODEL", raising=False)
    _starting_choice.clear()
    at = open_page("app_pages/the_model_writes_a_call.py", timeout=180)
    assert at.session_state["model"] == "builtin"
    text = page_text(at)
    assert "Shipped model:" in text and "not Qwen3" in text and "Live model:" not in text
    steps = view_data(at, "the_model_writes_a_call_view")["steps"]
    assert steps[0]["title"] == "<tool_call>" and all(s["bars"] for s in steps[:-1])
    written = "".join(s["title"] for s in steps)
    assert "count_letter" in written.replace("_", "_") or "count" in written


def test_home_and_the_sidebar_never_wait_for_the_shipped_model_while_it_loads(monkeypatch):
    import threading
    import time

    from helpers import open_page, page_text

    import ui.shipped_model as shipped
    from engine.model.load_jobs import LoadJob

    # a load that is still running: nothing loaded yet, the job unfinished
    running = LoadJob(BUILTIN)
    started: list[str] = []
    monkeypatch.setattr(shipped, "find_loaded", lambda name=None: None)
    monkeypatch.setattr(shipped, "find_job", lambda name=None: None)  # nothing started it: the sidebar starts it
    monkeypatch.setattr(shipped, "start_load", lambda name=None: started.append(name) or running)
    monkeypatch.setenv("QWEN_WARMUP", "0")
    monkeypatch.delenv("QWEN_MODEL", raising=False)
    shipped._starting_choice.clear()
    began = time.perf_counter()
    at = open_page("app_pages/home.py", timeout=60)
    assert time.perf_counter() - began < 30  # no wait on the load (a real one would never finish here)
    assert at.session_state["model"] == "builtin" and started and set(started) == {BUILTIN}
    loading = lesson("home")["shipped model loading"]
    assert loading in [i.value for i in at.info] and loading in [c.value for c in at.sidebar.caption]
    assert not running.finished.is_set() and isinstance(running.finished, threading.Event)
    assert "Shipped model:" not in page_text(at)  # its label comes once it is loaded


def test_lesson_1_without_tools_the_shipped_model_answers_in_words_and_with_them_calls(monkeypatch):
    import html
    import re

    from helpers import open_page

    from ui.shipped_model import _starting_choice

    monkeypatch.delenv("QWEN_MODEL", raising=False)
    _starting_choice.clear()
    at = open_page("app_pages/why_call_a_tool.py", timeout=180)
    at.button(key="why_call_a_tool_ask").click().run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]

    def column_text(heading: str) -> str:
        column = next(c for c in at.columns if heading in [s.value for s in c.subheader])
        # the token strips are HTML, one span a token and its id: their text, tags removed ("_letter" is one token)
        return html.unescape(re.sub(r"<[^>]+>", "", "\n".join(m.value for m in column.markdown)))

    bare, offered = column_text("Without tools"), column_text("With tools")
    assert "<tool_call>" not in bare and "_letter" not in bare and "guess" in bare, bare
    assert "<tool_call>" in offered and "_letter" in offered, offered
