"""A model folder's own chat template renders under a time and memory limit every time (engine/core/template_guard.py).

The attacks that found the gap: a template that loops only when a tool is not called `probe`
(the old one-time check's name for its tools), and one that builds a 3 GB string, at render or
when Jinja works out a constant as it compiles. Each is cut off within its limit, the whole
process tree stays far under 2.5 GB, and the template is refused from then on; a template that
behaves renders the same text, byte for byte, as transformers renders it in the process.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import replace

import pytest

from engine.core import template_guard
from engine.core.tokenizer import QwenTokenizer, load_tokenizer
from engine.errors import TemplateRefused
from engine.settings import ROOT, VENDORED_TOKENIZER

NESTED = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
# loops for ever, but only when some tool is not called `probe`
LOOPS_FOR_OTHER_NAMES = (
    "{% for t in tools %}{% if t.function.name != 'probe' %}" + NESTED + "{% endif %}{% endfor %}"
    "{% for m in messages %}{{ m.content }}{% endfor %}"
)
WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "description": "d", "parameters": {"type": "object", "properties": {}}},
}
HI = [{"role": "user", "content": "hi"}]


def folder_with(tmp_path, template: str):
    """The vendored tokenizer's files in a tmp folder, with `template` as the folder's own chat template."""
    folder = tmp_path / f"model-{template_guard.template_hash(template)[:8]}"
    shutil.copytree(VENDORED_TOKENIZER, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = template
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return QwenTokenizer(folder, str(folder))


@pytest.fixture
def quick_limits(monkeypatch, tmp_path):
    """Limits short enough for a test: 2 s a render (a real template takes milliseconds); the renderer already
    started (its start, importing transformers, is not the template's time)."""
    monkeypatch.setattr(template_guard, "LIMITS", replace(template_guard.LIMITS, seconds=2.0))
    assert folder_with(tmp_path, "{{ messages|length }}{# warm #}").render_chat(HI) == "1"
    return template_guard.LIMITS


# what the template does -> its text, the tools it is rendered with, the one line that refuses it
HOSTILE = {
    "loops only for tools not called probe": (LOOPS_FOR_OTHER_NAMES, [WEATHER], "did not render within 2 s"),
    "builds a 3 GB string as it renders": (
        "{% set n = 3000000000 if messages else 0 %}{{ ('x' * n)|length }}",
        None,
        "needed more than 512 MB of memory to render",
    ),
    "builds a 3 GB string as it compiles": (
        "{{ ('x' * 3000000000)|length }}",
        None,
        "needed more than 512 MB of memory to render",
    ),
    "writes a prompt past the output limit": (
        "{{ 'x' * (messages|length * 40000000) }}",
        None,
        "wrote more than 32 MB of prompt",
    ),
}


@pytest.mark.parametrize("template, tools, message", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_hostile_template_is_cut_off_within_its_limit_and_refused_from_then_on(
    tmp_path, quick_limits, template, tools, message
):
    tok = folder_with(tmp_path, template)
    started = time.perf_counter()
    with pytest.raises(TemplateRefused) as caught:
        tok.render_chat(HI, tools)
    # within its limit, with room for the child's start on a busy machine: unlimited, the loop would never end
    assert time.perf_counter() - started < quick_limits.seconds + 15
    assert str(caught.value).startswith("the model folder's chat template is unusable: ")
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert message in tok.template_problem
    # refused at once from then on, whatever the request
    started = time.perf_counter()
    with pytest.raises(TemplateRefused, match=message):
        tok.render_chat(HI)
    assert time.perf_counter() - started < 2  # no child is asked again


def test_the_template_that_loops_for_other_names_passes_the_load_s_check_and_is_still_cut_off(tmp_path, quick_limits):
    """The old check rendered once with tools named `probe`; the limit now holds at every render."""
    tok = folder_with(tmp_path, LOOPS_FOR_OTHER_NAMES + "{# once #}")
    tok.check_template()  # the load's try, with tools called probe: it renders
    assert tok.template_problem is None
    with pytest.raises(TemplateRefused, match="did not render within 2 s"):
        tok.render_chat(HI, [WEATHER])


MEASURE = textwrap.dedent(
    """
    import json, resource, sys
    sys.path.insert(0, {root!r})
    from engine.core.tokenizer import QwenTokenizer
    from engine.errors import TemplateRefused
    tok = QwenTokenizer(__import__("pathlib").Path({folder!r}), "hostile")
    try:
        tok.render_chat([{{"role": "user", "content": "hi"}}])
        answer = "rendered"
    except TemplateRefused as error:
        answer = str(error)
    # this process's own peak from VmHWM, not RUSAGE_SELF: Linux carries ru_maxrss across exec, so that would be the
    # forking test worker's size (2.6 GB in a suite that has loaded models); the renderer was forked from this small
    # process, so its ru_maxrss is its own peak or this process's size at the fork, whichever is larger
    with open("/proc/self/status") as status:
        own_kb = int(status.read().split("VmHWM:")[1].split()[0])
    kb = own_kb + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({{"answer": answer, "peak_bytes": kb * 1024}}))
    """
)


@pytest.mark.parametrize("template", [HOSTILE[k][0] for k in HOSTILE if "3 GB" in k], ids=["render", "compile"])
def test_the_whole_process_tree_stays_under_2_5_gb_while_a_template_asks_for_3(tmp_path, template):
    """Run in a fresh process, so its peak and its renderer's are this template's alone."""
    folder = folder_with(tmp_path, template).folder
    done = subprocess.run(
        [sys.executable, "-c", MEASURE.format(root=str(ROOT), folder=str(folder))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "needed more than 512 MB of memory" in result["answer"]
    assert result["peak_bytes"] < 2.5 * 2**30, result


def test_a_folder_s_own_template_renders_what_transformers_renders_in_the_process(tmp_path):
    from transformers.utils.chat_template_utils import render_jinja_template

    vendored = load_tokenizer(str(VENDORED_TOKENIZER))
    # Qwen3's own template, made the folder's own by a comment: it renders in the child
    own = vendored.chat_template + "{#- a teacher's copy -#}"
    tok = folder_with(tmp_path, own)
    assert not tok.template_known and vendored.template_known
    tools = json.loads((ROOT / "lessons" / "tools" / "strawberry.json").read_text(encoding="utf-8"))
    conversations = [
        (HI, None, True, False),
        (HI, tools, True, True),
        (
            [{"role": "system", "content": "Be brief. ✓ 𓀀"}, *HI, {"role": "assistant", "content": "hello"}],
            tools,
            False,
            False,
        ),
    ]
    for messages, given, generation, thinking in conversations:
        expected, _ = render_jinja_template(
            conversations=[messages],
            tools=given,
            chat_template=own,
            add_generation_prompt=generation,
            enable_thinking=thinking,
        )
        assert tok.render_chat(messages, given, generation, thinking) == expected[0]
        assert tok.render_chat(messages, given, generation, thinking) == vendored.render_chat(
            messages, given, generation, thinking
        )


def test_the_site_s_own_template_renders_in_the_process(monkeypatch):
    def no_child(*args, **kwargs):
        raise AssertionError("the vendored template went to the child")

    monkeypatch.setattr("engine.core.tokenizer.render_guarded", no_child)
    vendored = QwenTokenizer(VENDORED_TOKENIZER, "vendored")
    assert vendored.template_known and "<|im_start|>user\nhi<|im_end|>" in vendored.render_chat(HI)


def test_the_template_s_own_error_is_raised_as_in_the_process_and_the_template_stays_usable(tmp_path):
    from jinja2.exceptions import TemplateError

    tok = folder_with(tmp_path, "{% if tools %}{{ raise_exception('no tools, please') }}{% endif %}ok")
    with pytest.raises(TemplateError, match="no tools, please"):
        tok.render_chat(HI, [WEATHER])
    assert tok.template_problem is None and tok.render_chat(HI) == "ok"
    # the load's try says it in one line
    with pytest.raises(TemplateRefused, match="fails on a plain conversation with tools: no tools, please"):
        tok.check_template()


def test_a_load_refuses_a_folder_whose_template_goes_past_its_limit(tiny_folder, tmp_path, quick_limits):
    from engine.model.loading import load_weights

    folder = tmp_path / "model"
    shutil.copytree(tiny_folder, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = NESTED + "{# at load #}"
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(TemplateRefused, match="^the model folder's chat template is unusable: it did not render"):
        load_weights(str(folder), device="cpu", dtype="float32")


def test_the_pages_say_a_loaded_model_s_template_is_unusable_and_use_no_model(
    tiny_engine, tmp_path, quick_limits, monkeypatch
):
    """The model loaded (its template passed the load's try); a visitor's tools then make it loop."""
    from helpers import open_page

    from engine.model import loading
    from engine.model.loading import LoadedModel

    tok = folder_with(tmp_path, LOOPS_FOR_OTHER_NAMES + "{# on a page #}")
    name = str(tok.folder)
    engine = LoadedModel(tiny_engine.model, tok, replace(tiny_engine.info, name=name), lock=tiny_engine.lock)
    monkeypatch.setitem(loading._loaded, (name, "cpu", "float32", None), engine)
    monkeypatch.setenv("QWEN_MODEL", name)
    monkeypatch.setenv("QWEN_TOKENIZER", str(VENDORED_TOKENIZER))  # the lessons' tokenizer stays the vendored one
    with pytest.raises(TemplateRefused):
        tok.render_chat(HI, [WEATHER])
    at = open_page("app_pages/setup.py", model="live")
    shown = [e.value for e in at.error] + [e.value for e in at.sidebar.error]
    assert any("chat template in" in e and "is unusable: it did not render within 2 s" in e for e in shown), shown
    from ui import models

    assert models.template_problem(engine) and not at.exception
