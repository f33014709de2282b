"""Against llama.cpp itself: the tiny model as a GGUF (bench/make_sized_model.py --gguf), in llama_cpp.Llama and behind
llama.cpp's OpenAI-compatible server (`python -m llama_cpp.server`), through the remote engine, the command line and lesson 3,
and tool_choice required and named through that server, their grammar sent as GBNF.

llama-cpp-python is pinned in requirements-dev.txt and scripts/test.sh builds it for this CPU. Without it
these tests skip with the reason, and fail under REQUIRE_LLAMA_CPP=1 (scripts/test.sh sets it after
installing), so a run that should have tested a real server never passes without one.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import replace

import pytest
from helpers import BOUNDED, ROOT

sys.path.insert(0, str(ROOT / "bench"))

from engine.core.call_formats import parse_turn  # noqa: E402
from engine.core.generation import GenerationSettings  # noqa: E402
from engine.core.prompt import Request, render  # noqa: E402

REQUEST = Request(
    [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}],
    json.loads((ROOT / "lessons" / "tools" / "strawberry.json").read_text()),
)


def require_llama_cpp():
    """llama_cpp and gguf, or a skip (a failure under REQUIRE_LLAMA_CPP=1) that says how to install them."""
    try:
        import gguf  # noqa: F401
        import llama_cpp  # noqa: F401
        import llama_cpp.server  # noqa: F401
    except ImportError as error:
        reason = (
            f"{error.name} is not installed: scripts/test.sh installs requirements-dev.txt's "
            "llama-cpp-python[server] and gguf, built for this CPU"
        )
        if os.environ.get("REQUIRE_LLAMA_CPP") == "1":
            pytest.fail(f"REQUIRE_LLAMA_CPP=1 but {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    """The tests' tiny model written by `make_sized_model.py --arch tiny --gguf q8_0`: (folder, GGUF path, printed JSON)."""
    require_llama_cpp()
    out = tmp_path_factory.mktemp("gguf") / "tiny"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "make_sized_model.py"),
            "--arch",
            "tiny",
            "--out",
            str(out),
            "--gguf",
            "q8_0",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    printed = json.loads(done.stdout)
    return out, printed["gguf"], printed


@pytest.fixture(scope="module")
def llama(tiny_gguf):
    import llama_cpp

    return llama_cpp.Llama(tiny_gguf[1], n_ctx=4096, n_threads=1, logits_all=True, verbose=False)


@pytest.fixture(scope="module")
def llama_server(tiny_gguf):
    """llama.cpp's server serving the tiny GGUF on a free port of 127.0.0.1: its API base; stopped after the module."""
    from llama_server import serve_gguf

    with serve_gguf(tiny_gguf[1]) as url:
        yield url


def shipped_prompts():
    """Every prompt the site renders for a shipped scenario and the gallery, in both styles, with and without thinking."""
    from engine.harness.loop import list_gallery, list_scenarios, load_scenario

    prompts = []
    for name in [*list_scenarios(), *list_gallery()]:
        scenario = load_scenario(name)
        for style in ("native", "react"):
            for thinking in (False, True):
                prompts.append(
                    render(Request(scenario.messages, scenario.tools, style=style, enable_thinking=thinking))
                )
    return prompts


def test_the_gguf_is_printed_beside_the_folder_and_loads(tiny_gguf, llama):
    folder, path, printed = tiny_gguf
    assert path == str(folder.with_name("tiny.q8_0.gguf")) and printed["gguf_kind"] == "q8_0"
    assert printed["gguf_bytes"] == os.path.getsize(path) and printed["random_weights"] is True
    assert llama.n_vocab() == 151936 and llama.n_ctx() == 4096


def test_llama_cpps_tokenizer_gives_our_token_ids_for_every_rendered_prompt(llama):
    prompts = shipped_prompts()
    assert len(prompts) >= 8
    for prompt in prompts:
        assert llama.tokenize(prompt.text.encode("utf-8"), add_bos=False, special=True) == prompt.ids, prompt.text[:200]


def test_the_gguf_gives_the_tiny_models_next_token_probabilities(llama, tiny_engine):
    import torch

    prompt = render(REQUEST, tiny_engine.tokenizer)
    llama.reset()
    llama.eval(prompt.ids)
    theirs = torch.log_softmax(torch.tensor(llama.scores[len(prompt.ids) - 1]), -1)
    with torch.no_grad():
        ours = torch.log_softmax(tiny_engine.model(torch.tensor([prompt.ids])).logits[0, -1].float(), -1)
    # Q8_0 rounds each weight to 8 bits: the distributions agree to a few thousandths of a nat
    assert float((theirs - ours).abs().max()) < 0.05
    assert int(theirs.argmax()) in torch.topk(ours, 5).indices.tolist()


def test_a_turn_from_llama_cpps_server_has_our_prompt_and_each_tokens_probability(llama_server, tiny_engine):
    import torch

    from engine.model.live import generate_turn
    from engine.model.remote import connect

    remote = connect(llama_server)
    settings = GenerationSettings(max_new_tokens=6, top_k=5, temperature=0.0, reuse_prefix=False)
    turn = generate_turn(remote, REQUEST, settings)
    prompt = render(REQUEST, tiny_engine.tokenizer)
    # llama-cpp-python's server takes the prompt as text (its request model has no token ids): the remote engine
    # falls back to the rendered text, special tokens written out, and the server's usage count equals ours
    assert turn.extra["prompt_as"] == "text" and turn.prompt_tokens == prompt.count
    assert len(turn.steps) == 6 and turn.finish == "length"
    for step in turn.steps:
        assert 0 < step.p <= 1 and len(step.top) == 5 and step.allowed is None
        assert step.top[0].p >= step.top[-1].p
    # the first token's probability is the tiny model's for that token after our prompt (Q8_0: within 5%)
    first = turn.steps[0]
    with torch.no_grad():
        ours = torch.softmax(tiny_engine.model(torch.tensor([prompt.ids])).logits[0, -1].float(), -1)
    assert first.id >= 0 and math.isclose(first.p, float(ours[first.id]), rel_tol=0.05)


def test_the_command_line_returns_steps_from_llama_cpps_server(llama_server, tmp_path):
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps(REQUEST.messages))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "generate",
            "--engine-url",
            llama_server,
            "--messages",
            str(messages),
            "--tools",
            "lessons/tools/strawberry.json",
            "--max-new-tokens",
            "4",
            "--top-k",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["model"]["engine_url"] == llama_server and result["model"]["name"].endswith("tiny.q8_0.gguf")
    assert result["prompt_tokens"] == render(REQUEST).count
    assert len(result["steps"]) == 4
    for step in result["steps"]:
        assert {"token", "p", "top"} <= set(step) and 0 < step["p"] <= 1 and len(step["top"]) == 3
    # a named tool_choice: llama.cpp's server has none of its own, so the call's grammar goes as GBNF with the prompt
    tools = tmp_path / "t.json"
    tools.write_text(json.dumps(BOUNDED))
    named = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "generate",
            "--engine-url",
            llama_server,
            "--messages",
            str(messages),
            "--tools",
            str(tools),
            "--tool-choice",
            "roll",
            "--max-new-tokens",
            "80",
            "--top-k",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        env={**os.environ, "QWEN_ENGINE_TIMEOUT": "800"},
    )
    assert named.returncode == 0, named.stderr
    result = json.loads(named.stdout)
    assert result["grammar"] == {
        "ran_on": "server",
        "server": "llama.cpp",
        "dialect": "gbnf",
        "field": "grammar",
        "tool_choice": "roll",
    }
    verdict = parse_turn(result["text"], BOUNDED, "native")
    assert result["steps"] and not verdict.errors and [c.name for c in verdict.calls] == ["roll"]
    assert 1 <= verdict.calls[0].arguments["sides"] <= 6


# -- tool_choice required through llama.cpp's server: the grammar as GBNF (a named one: the command line's test above) --
def test_required_tool_choice_through_llama_cpps_server_writes_well_formed_calls(llama_server):
    from engine.model.live import build_constraint, generate_turn
    from engine.model.remote import connect

    # the grammar costs the server time at every step (it checks the vocabulary against it): a long timeout
    remote = connect(llama_server, timeout=800)
    assert (
        remote.owned_by == "me" and remote.server == "llama.cpp"
    )  # llama-cpp-python's server; llama-server says "llamacpp"
    request = Request(REQUEST.messages, BOUNDED)
    settings = GenerationSettings(max_new_tokens=80, top_k=3, temperature=0.0, reuse_prefix=False)
    # free, the tiny model's random weights write junk: no call (16 tokens show it; the server is slow per token)
    free = generate_turn(remote, request, replace(settings, max_new_tokens=16))
    assert "grammar" not in free.extra and not parse_turn(free.text, BOUNDED, "native").calls
    required = generate_turn(remote, request, settings, build_constraint(remote, BOUNDED, "required"))
    verdict = parse_turn(required.text, BOUNDED, "native")
    assert verdict.calls and {c.name for c in verdict.calls} <= {"roll", "set_light", "set_mode"}
    # required may call again: only a further call cut by the token limit may be unfinished
    assert all("was the reply cut off?" in e.error for e in verdict.errors) and (
        required.finish == "length" or not verdict.errors
    )


def test_lesson_6_with_llama_cpps_server_says_the_grammar_goes_as_gbnf_and_offers_both_halves(
    llama_server, monkeypatch
):
    from helpers import open_page

    monkeypatch.setenv("QWEN_ENGINE_URL", llama_server)
    at = open_page("app_pages/constrained_decoding.py", timeout=180, tool_choice="count_letter")
    assert any(
        "llama.cpp's server has no named tool_choice of its own" in c.value and "as GBNF" in c.value for c in at.caption
    )
    assert [b for b in at.button if b.key == "constrained_decoding_generate"]
    # the mask's before/after still need the whole distribution, which no server returns
    assert any("not the whole distribution" in e.value for e in at.error)


GRAMMAR_CHECK = """
import json, sys
import llama_cpp
llm = llama_cpp.Llama(sys.argv[1], n_ctx=512, n_threads=1, verbose=False)
for text in json.load(sys.stdin):
    out = llm.create_completion("<|im_start|>assistant\\n", max_tokens=1, temperature=0.0,
                                grammar=llama_cpp.LlamaGrammar.from_string(text, verbose=False))
    print(json.dumps(out["choices"][0]["text"]))
"""


def test_llama_cpp_reads_the_gbnf_of_every_shipped_tool_set_and_of_a_schema_full_of_escapes(tiny_gguf):
    from engine.constrain.server_grammar import build_server_grammar
    from engine.core.tooldefs import tool_name

    hostile = [
        {
            "type": "function",
            "function": {
                "name": "odd-name_2",
                "parameters": {
                    "type": "object",
                    "properties": {
                        'quote"d': {"type": "string", "enum": ["\\", "]", "-^[", "tab\tnew\nline", "ünï ✓"]},
                        "count": {"type": "integer", "minimum": -3, "maximum": 40},
                        "items": {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3},
                        "flag": {"type": ["boolean", "null"]},
                    },
                    "required": ['quote"d', "count"],
                },
            },
        }
    ]
    grammars = []
    for tools in [*(json.loads(p.read_text()) for p in sorted((ROOT / "lessons" / "tools").glob("*.json"))), hostile]:
        for choice in ["required", *(tool_name(t) for t in tools)]:
            for thinking in (False, True):
                grammars.append(build_server_grammar(tools, choice, "gbnf", thinking).text)
    # a grammar llama.cpp cannot read ends its process (a segmentation fault in llama-cpp-python 0.3): one process for all
    done = subprocess.run(
        [sys.executable, "-c", GRAMMAR_CHECK, tiny_gguf[1]],
        input=json.dumps(grammars),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    firsts = [json.loads(line) for line in done.stdout.splitlines()]
    # every grammar starts the reply with the call's opener, or with the reasoning where thinking is on
    assert len(firsts) == len(grammars) and all(
        f and ("<tool_call>".startswith(f) or "<think>".startswith(f) or f.startswith(("<tool_call>", "<think>")))
        for f in firsts
    ), firsts


def test_llama_cpp_reads_the_gbnf_written_from_random_hostile_schemas(tiny_gguf):
    from hostile_schemas import hostile_grammars

    # 200 seeds: 335 grammars (65 more refused, as a visitor's would be), a few seconds in llama.cpp
    grammars, refused = hostile_grammars(range(200), "gbnf")
    assert len(grammars) > 250 and refused > 0
    done = subprocess.run(
        [sys.executable, "-c", GRAMMAR_CHECK, tiny_gguf[1]],
        input=json.dumps(grammars),
        capture_output=True,
        text=True,
        timeout=600,
    )
    # a grammar llama.cpp could not read would have ended the process (or raised): every one was read
    assert done.returncode == 0, done.stderr[-2000:]
    firsts = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(firsts) == len(grammars)
    assert all(
        f and ("<tool_call>".startswith(f) or "<think>".startswith(f) or f.startswith(("<tool_call>", "<think>")))
        for f in firsts
    ), firsts


@pytest.mark.browser
@pytest.mark.slow
def test_lesson_3_in_a_browser_shows_the_servers_probabilities(llama_server, chromium, serve_app):
    from playwright.sync_api import expect

    url = serve_app({"QWEN_ENGINE_URL": llama_server}, "streamlit-server-llama-cpp.log")
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.goto(f"{url}/the_model_writes_a_call")
    main = page.get_by_test_id("stMain")
    expect(main.get_by_text(f"server at {llama_server}").first).to_be_visible(timeout=300_000)
    expect(page.get_by_test_id("stSidebar")).to_contain_text("Model server:")
    scripted = main.get_by_text("These are the scripted call's tokens, so no probabilities yet")
    expect(scripted).to_be_visible()  # nothing generated yet: the scripted call's tokens, without probabilities
    main.get_by_role("button", name="Generate the call").click()
    # the step view: the server's tokens, each with its probability
    expect(scripted).to_have_count(0, timeout=300_000)
    expect(page.get_by_text("Its probability").first).to_be_visible(timeout=300_000)
    errors = page.locator('[data-testid="stException"]')
    assert errors.count() == 0, errors.first.inner_text()
    context.close()
