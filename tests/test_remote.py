"""engine/model/remote.py against an OpenAI-compatible server over the tiny model (tests/openai_server.py): same steps, clear failures."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from engine.core.generation import GenerationSettings
from engine.core.prompt import Request
from engine.model.live import generate_turn
from engine.model.loading import load_model
from engine.model.remote import RemoteError, connect, normalize_url
from tests.openai_server import MODEL_ID, start_server

REQUEST = Request([{"role": "user", "content": "How many times does the letter r appear in strawberry?"}])
SETTINGS = GenerationSettings(max_new_tokens=6, top_k=5, reuse_prefix=False)


@pytest.fixture
def server():
    servers = []

    def start(mode="ok"):
        server, url = start_server(mode)
        servers.append(server)
        return url

    yield start
    for running in servers:
        running.shutdown()


def test_a_server_turn_has_the_local_models_tokens_and_probabilities(server):
    url = server()
    remote = connect(url)
    assert remote.model == MODEL_ID and remote.info.engine_url == url
    assert remote.info.label() == f"{MODEL_ID} (server at {url})"
    there = generate_turn(remote, REQUEST, SETTINGS)
    here = generate_turn(load_model("tiny"), REQUEST, SETTINGS)
    # the server's tokens are the local model's, without the stop token (not part of an OpenAI completion)
    local = [s for s in here.steps if s.token != "<|im_end|>"]
    assert len(there.steps) == len(local) > 0 and there.prompt_tokens == here.prompt_tokens
    for a, b in zip(there.steps, local, strict=True):
        if a.id >= 0:
            assert a.id == b.id
        assert abs(a.p - b.p) < 1e-6 and len(a.top) == 5 and a.allowed is None
    assert there.steps[-1].finish == there.finish == here.finish


def test_the_command_line_gives_the_same_json_keys_from_a_server(server, tmp_path):
    url = server()
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps(REQUEST.messages))
    done = subprocess.run([sys.executable, "-m", "engine", "generate", "--engine-url", url, "--messages", str(messages),
                           "--max-new-tokens", "4", "--top-k", "3"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert {"text", "finish", "steps"} <= set(result) and result["model"]["engine_url"] == url
    step = result["steps"][0]
    assert {"id", "token", "p", "top", "allowed"} <= set(step) and 0 < step["p"] <= 1 and len(step["top"]) == 3
    named = subprocess.run([sys.executable, "-m", "engine", "generate", "--engine-url", url, "--messages", str(messages),
                            "--tools", "lessons/tools/strawberry.json", "--tool-choice", "count_letter"],
                           capture_output=True, text=True, timeout=300)
    assert named.returncode == 2 and "llama.cpp's server has no named tool_choice" in named.stderr


@pytest.mark.parametrize(("mode", "message"), [
    ("no-logprobs", "returned no logprobs"),
    ("other-tokenizer", "read the prompt as 15 tokens and this site as 14"),
    ("cut", "was cut"),
    ("slow", "did not answer /completions within 1 s"),
])
def test_each_failure_is_one_clear_line_and_nothing_hangs(server, mode, message):
    # a short timeout for the slow server only: on a busy machine the tiny model itself can take seconds
    remote = connect(server(mode), timeout=1.0 if mode == "slow" else 120.0)
    started = time.perf_counter()
    with pytest.raises(RemoteError) as caught:
        generate_turn(remote, Request([{"role": "user", "content": "Say hi"}]), SETTINGS)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert time.perf_counter() - started < 60


def test_a_server_that_takes_no_token_ids_gets_the_prompt_as_text(server):
    remote = connect(server("text-only"))
    generation = generate_turn(remote, REQUEST, SETTINGS)
    assert generation.extra["prompt_as"] == "text" and generation.steps


def test_no_server_wrong_model_and_bad_urls_say_what_to_fix(server):
    with pytest.raises(RemoteError, match="cannot reach the server at http://127.0.0.1:9/v1"):
        connect("http://127.0.0.1:9")
    with pytest.raises(RemoteError, match=f"serves {MODEL_ID}, not Qwen/Qwen3-1.7B"):
        connect(server(), "Qwen/Qwen3-1.7B")
    with pytest.raises(RemoteError, match="must start with http"):
        normalize_url("gpu-box:8000")
    assert normalize_url("http://h:8000/") == normalize_url("http://h:8000/v1/") == "http://h:8000/v1"


def test_requests_to_a_server_run_at_once_without_a_lock(server):
    remote = connect(server())
    assert not hasattr(remote, "lock")
    results, errors = [], []

    def one():
        try:
            results.append(generate_turn(remote, REQUEST, SETTINGS).text)
        except Exception as error:  # collected for the assertion below
            errors.append(error)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors and len(results) == 6 and len(set(results)) == 1


@pytest.mark.slow
def test_lesson_3_with_qwen_engine_url_shows_each_tokens_probability_from_the_server(server, monkeypatch):
    from helpers import open_page, view_step

    url = server()
    monkeypatch.setenv("QWEN_ENGINE_URL", url)
    at = open_page("app_pages/the_model_writes_a_call.py", timeout=120)
    assert any(f"server at {url}" in s.value for s in at.success)
    assert any("Model server:" in c.value for c in at.sidebar.caption)
    at.button(key="the_model_writes_a_call_generate").click().run(timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    # the step view carries every token's probability and top alternatives, as the server returned them
    _, first = view_step(at, "the_model_writes_a_call_view")
    assert first["facts"][0][0] == "Its probability"
    bars = first["bars"][0]["rows"]
    assert bars and all(0 <= b["p"] <= 1 for b in bars)
