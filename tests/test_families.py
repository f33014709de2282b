"""The model families: counts against each family's own renderer, each canonical call read back, each format's errors."""

from __future__ import annotations

import hashlib
import io
import json
import sys

import pytest

from engine.__main__ import main
from engine.core.call_formats import (
    call_tokens,
    deepseek_v3,
    deepseek_v3_1,
    families,
    family_names,
    get_format,
    gpt_oss,
    llama3_1,
    mistral,
    parse_turn,
    price_tools,
    render_tokens,
)
from engine.settings import ASSETS, LESSONS

STRAWBERRY = json.loads((LESSONS / "tools" / "strawberry.json").read_text())
TWELVE = json.loads((LESSONS / "tools" / "coding-agent.json").read_text())
QUESTION = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]
ARGS = {"word": "strawberry", "letter": "r"}
V3_CALL = get_format("deepseek-v3").write_call("count_letter", ARGS)
# every family the registry holds (tests/test_call_formats.py writes the list out once)
NAMES = family_names()


def run_cli(capsys, monkeypatch, *argv, stdin: str = ""):
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out else None), err


def test_each_family_name_stands_for_its_maker_s_format():
    assert list(families()) == list(NAMES) and len(NAMES) > 2
    assert all(get_format(n) is families()[n] and get_format(n).maker_format for n in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_tokens_family_gives_the_tools_price_split_in_two(capsys, monkeypatch, tmp_path, name):
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps(QUESTION))
    code, data, _ = run_cli(
        capsys,
        monkeypatch,
        "tokens",
        "--family",
        name,
        "--tools",
        str(LESSONS / "tools" / "strawberry.json"),
        "--messages",
        str(messages),
    )
    price = price_tools(name, QUESTION, STRAWBERRY)
    assert code == 0 and data["family"] == name
    assert data["tools_tokens"] == price.total == data["definitions_tokens"] + data["instructions_tokens"]
    assert data["prompt_tokens"] == sum(s["tokens"] for s in data["spans"])
    assert [s["label"] for s in data["spans"] if s["label"].startswith("tool ")] == [
        "tool count_letter",
        "tool tokenize",
    ]


def test_qwen3_is_today_s_241():
    assert price_tools("qwen3", QUESTION, STRAWBERRY).total == 241


def _apply_template(folder, template, messages, tools):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    return tok.apply_chat_template(
        messages, tools=tools, chat_template=template, add_generation_prompt=True, tokenize=True, return_dict=False
    )


@pytest.mark.parametrize("tools", [STRAWBERRY, TWELVE], ids=["strawberry", "twelve"])
def test_llama_counts_equal_apply_chat_template(tools):
    family = get_format("llama3.1")
    reference = _apply_template(family.folder, family.chat_template, QUESTION, tools)
    assert family.prompt_ids(QUESTION, tools) == list(reference)
    assert render_tokens("llama3.1", QUESTION, tools).text.startswith("<|begin_of_text|><|start_header_id|>system")


@pytest.mark.parametrize("tools", [STRAWBERRY, TWELVE], ids=["strawberry", "twelve"])
def test_qwen3_coder_counts_equal_apply_chat_template_with_its_own_template(tools):
    family = get_format("qwen3-coder")
    reference = _apply_template(family.folder, family.chat_template, QUESTION, tools)
    assert family.prompt_ids(QUESTION, tools) == list(reference)
    text = render_tokens("qwen3-coder", QUESTION, tools).text
    first = tools[0]["function"]["name"]
    assert f"<tools>\n<function>\n<name>{first}</name>\n<description>" in text
    assert "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\n" in text


@pytest.mark.parametrize("tools", [STRAWBERRY, TWELVE], ids=["strawberry", "twelve"])
def test_deepseek_v3_1_counts_equal_apply_chat_template_with_the_model_card_s_tool_prompt(tools):
    # transformers over V3.1's template and V3's tokenizer, where </think> is three tokens; V3.1 names id 128799 so
    family = get_format("deepseek-v3.1")
    shown = [{"role": "system", "content": "\n\n" + deepseek_v3_1.tool_description(tools)}, *QUESTION]
    reference = list(_apply_template(family.folder, family.chat_template, shown, None))
    split = get_format("deepseek-v3").encode("</think>")
    assert len(split) == 3 and reference[-3:] == split
    assert family.prompt_ids(QUESTION, tools) == [*reference[:-3], 128799]
    assert family.encode("<think></think>") == [128798, 128799]
    first = tools[0]["function"]["name"]
    assert (
        f"## Tools\nYou have access to the following tools:\n\n### {first}\n"
        in render_tokens("deepseek-v3.1", QUESTION, tools).text
    )


@pytest.mark.parametrize("tools", [STRAWBERRY, TWELVE], ids=["strawberry", "twelve"])
def test_deepseek_v3_counts_equal_apply_chat_template_with_v3_s_tool_prompt(tools):
    # V3's template ignores tools: they go into the system message in the words of vLLM's DeepSeek-V3 tool template
    family = get_format("deepseek-v3")
    shown = [{"role": "system", "content": deepseek_v3.tool_description(tools)}, *QUESTION]
    reference = _apply_template(family.folder, None, shown, None)
    assert family.prompt_ids(QUESTION, tools) == list(reference)
    text = render_tokens("deepseek-v3", QUESTION, tools).text
    assert "<tools>\n" + json.dumps(tools[0], ensure_ascii=False) + "\n" in text
    assert "<｜tool▁call▁begin｜>function<｜tool▁sep｜><function_name>\n```json\n" in text


def test_deepseek_s_official_template_alone_ignores_tools():
    family = get_format("deepseek-v3")
    assert _apply_template(family.folder, None, QUESTION, STRAWBERRY) == _apply_template(
        family.folder, None, QUESTION, None
    )


@pytest.mark.parametrize("tools", [STRAWBERRY, TWELVE], ids=["strawberry", "twelve"])
def test_mistral_counts_equal_mistral_common_s_own_v3_tokenizer(tools):
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    reference = MistralTokenizer.v3().encode_chat_completion(
        ChatCompletionRequest.from_openai(messages=QUESTION, tools=tools)
    )
    assert get_format("mistral").prompt_ids(QUESTION, tools) == list(reference.tokens)


def test_the_vendored_mistral_file_is_the_one_mistral_common_ships():
    from pathlib import Path

    import mistral_common

    shipped = Path(mistral_common.__file__).parent / "data" / mistral.TOKENIZER_FILE.name
    assert (
        hashlib.sha256(mistral.TOKENIZER_FILE.read_bytes()).hexdigest()
        == hashlib.sha256(shipped.read_bytes()).hexdigest()
    )


@pytest.mark.parametrize("tools", [STRAWBERRY, TWELVE], ids=["strawberry", "twelve"])
def test_gpt_oss_text_is_harmony_s_own_decoding_of_its_ids(tools):
    # harmony renders the ids; the text drawn from our o200k_base bytes is harmony's own decoding of them
    rendering = render_tokens("gpt-oss", QUESTION, tools)
    assert gpt_oss.load_harmony().decode_utf8(rendering.ids) == rendering.text
    assert "namespace functions {" in rendering.text and f"type {tools[0]['function']['name']} = " in rendering.text


def test_harmony_reads_the_written_gpt_oss_call_as_the_same_call():
    from openai_harmony import Role

    _, ids, _ = call_tokens("gpt-oss", "count_letter", ARGS)
    encoding = gpt_oss.load_harmony()
    messages = encoding.parse_messages_from_completion_tokens(ids, Role.ASSISTANT)
    assert messages[0].recipient == "functions.count_letter"
    assert json.loads(messages[0].content[0].text) == ARGS


def test_the_mistral_call_is_the_one_mistral_common_writes_for_an_assistant_call():
    from mistral_common.protocol.instruct.messages import AssistantMessage, UserMessage
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.protocol.instruct.tool_calls import FunctionCall, ToolCall
    from mistral_common.protocol.instruct.validator import ValidationMode
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    tok = MistralTokenizer.from_file(str(mistral.TOKENIZER_FILE), mode=ValidationMode.finetuning)
    call = ToolCall(id=mistral.EXAMPLE_ID, function=FunctionCall(name="count_letter", arguments=json.dumps(ARGS)))
    with_call = tok.encode_chat_completion(
        ChatCompletionRequest(messages=[UserMessage(content="q"), AssistantMessage(tool_calls=[call])])
    )
    _, ids, _ = call_tokens("mistral", "count_letter", ARGS)
    assert with_call.tokens[-len(ids) - 1 : -1] == ids


def test_the_llama_call_is_the_one_its_template_writes_back():
    family = get_format("llama3.1")
    history = [
        *QUESTION,
        {
            "role": "assistant",
            "tool_calls": [{"type": "function", "function": {"name": "count_letter", "arguments": ARGS}}],
        },
    ]
    from transformers.utils.chat_template_utils import render_jinja_template

    text = render_jinja_template(conversations=[history], chat_template=family.chat_template, bos_token="")[0][0]
    assert text.endswith(family.write_call("count_letter", ARGS) + "<|eot_id|>")


@pytest.mark.parametrize("name", NAMES)
def test_parse_family_reads_each_canonical_call_as_one_valid_call(capsys, monkeypatch, name):
    turn = get_format(name).write_call("count_letter", ARGS)
    code, data, _ = run_cli(
        capsys,
        monkeypatch,
        "parse",
        "--family",
        name,
        "--tools",
        str(LESSONS / "tools" / "strawberry.json"),
        stdin=turn,
    )
    assert code == 0
    assert data == {"calls": [{"name": "count_letter", "arguments": ARGS}], "errors": [], "final": False}


# a table of good and bad turns per family: (family, turn, calls, error)
BAD = [
    (
        "llama3.1",
        '{"name": "count_letter", "parameters": {"word": "strawberry", "letter": "r"}}; '
        '{"name": "tokenize", "parameters": {"text": "hi"}}',
        2,
        None,
    ),
    ("llama3.1", '<|python_tag|>{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}', 1, None),
    ("llama3.1", '{"name": "count_letter", "parameters": {"word": "strawberry", "letter": "r"}', 0, llama3_1.NOT_JSON),
    ("llama3.1", '{"name": "count_letter", "args": {"word": "strawberry"}}', 0, llama3_1.BAD_SHAPE),
    (
        "llama3.1",
        '{"name": "count", "parameters": {}}',
        0,
        "error: unknown tool 'count'; the tools are count_letter, tokenize",
    ),
    ("llama3.1", "There are three r's in strawberry.", 0, None),
    (
        "mistral",
        '[TOOL_CALLS] [{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}]</s>',
        1,
        None,
    ),
    ("mistral", '[TOOL_CALLS] [{"name": "count_letter", "arguments": {"word": "strawberry"', 0, mistral.NOT_JSON),
    ("mistral", "[TOOL_CALLS] ", 0, mistral.EMPTY),
    ("mistral", '[TOOL_CALLS] "count_letter"', 0, mistral.NOT_LIST),
    (
        "mistral",
        '[TOOL_CALLS] [{"name": "count_letter", "arguments": {"word": "strawberry"}}]',
        0,
        "error: missing required argument 'letter' for count_letter",
    ),
    (
        "gpt-oss",
        '<|channel|>commentary to=functions.count_letter <|constrain|>json<|message|>{"word": "strawberry", "letter": "r"}',
        0,
        gpt_oss.NOT_CLOSED,
    ),
    (
        "gpt-oss",
        "<|channel|>commentary to=functions.count_letter <|constrain|>json<|message|>{word: strawberry}<|call|>",
        0,
        gpt_oss.NOT_JSON,
    ),
    (
        "gpt-oss",
        '<|channel|>commentary to=functions.spell <|constrain|>json<|message|>{"word": "x"}<|call|>',
        0,
        "error: unknown tool 'spell'; the tools are count_letter, tokenize",
    ),
    (
        "gpt-oss",
        "<|channel|>analysis<|message|>Count the r.<|end|><|start|>assistant<|channel|>commentary to=functions.count_letter "
        '<|constrain|>json<|message|>{"word": "strawberry", "letter": "r"}<|call|>',
        1,
        None,
    ),
    ("gpt-oss", "<|channel|>final<|message|>Three.<|return|>", 0, None),
    ("gpt-oss", "<|channel|>commentary to=functions.count_letter <|constrain|>json", 0, gpt_oss.NOT_CLOSED),
    ("gpt-oss", " " * 100_000 + "to=functions." + " " * 100_000, 0, gpt_oss.NOT_CLOSED),
    ("llama3.1", "{" * 100_000, 0, llama3_1.NOT_JSON),
    ("deepseek-v3", "<｜tool▁calls▁begin｜>" + "<｜tool▁call▁begin｜>x" * 50_000, 0, deepseek_v3.NO_CALL),
    ("deepseek-v3", V3_CALL.replace("<｜tool▁call▁end｜>", ""), 0, deepseek_v3.NOT_CLOSED),
    (
        "deepseek-v3",
        V3_CALL.replace("<｜tool▁calls▁end｜>", ""),
        1,
        None,
    ),  # the template's own single call has no calls-end
    ("deepseek-v3", V3_CALL.replace("```json\n", ""), 0, deepseek_v3.NOT_FENCED),
    ("deepseek-v3", V3_CALL.replace(">function<", ">tool<"), 0, deepseek_v3.NOT_FUNCTION),
    ("deepseek-v3", V3_CALL.replace('"strawberry"', "'strawberry'"), 0, deepseek_v3.NOT_JSON),
    ("deepseek-v3", V3_CALL.replace('"strawberry"', "5"), 0, "error: argument 'word' of count_letter must be a string"),
    ("deepseek-v3", "<｜tool▁calls▁begin｜>count_letter", 0, deepseek_v3.NO_CALL),
    ("deepseek-v3.1", "<｜tool▁calls▁begin｜>" + "<｜tool▁call▁begin｜>x" * 50_000, 0, deepseek_v3_1.NO_CALL),
    (
        "deepseek-v3.1",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>x<｜tool▁call▁begin｜>count_letter<｜tool▁sep｜>"
        '{"word": "strawberry", "letter": "r"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        1,
        None,
    ),
    (
        "deepseek-v3.1",
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>count_letter<｜tool▁sep｜>{"word": "strawberry", "letter": "r"}',
        0,
        deepseek_v3_1.NOT_CLOSED,
    ),
    (
        "deepseek-v3.1",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>count_letter<｜tool▁sep｜>{'word': 'strawberry'}<｜tool▁call▁end｜>",
        0,
        deepseek_v3_1.NOT_JSON,
    ),
    ("deepseek-v3.1", "<｜tool▁calls▁begin｜>count_letter", 0, deepseek_v3_1.NO_CALL),
    (
        "deepseek-v3.1",
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>count_letter<｜tool▁sep｜>{"word": 5, "letter": "r"}<｜tool▁call▁end｜>',
        0,
        "error: argument 'word' of count_letter must be a string",
    ),
]


@pytest.mark.parametrize(("name", "turn", "calls", "error"), BAD)
def test_each_format_s_good_and_bad_turns(name, turn, calls, error):
    result = parse_turn(turn, STRAWBERRY, name)
    assert len(result.calls) == calls
    assert [e.error for e in result.errors] == ([error] if error else [])
    assert result.final == (calls == 0 and error is None)


@pytest.mark.parametrize("name", NAMES)
def test_each_family_has_an_opener_or_says_it_has_none(name):
    opener = get_format(name).opener
    assert opener.note
    turn = get_format(name).write_call("count_letter", ARGS)
    assert (opener.text is None) == (name == "llama3.1")
    assert opener.text is None or turn.startswith(opener.text)


def test_the_vendored_files_match_their_provenance():
    for folder in (
        "llama3.1-tokenizer",
        "deepseek-v3-tokenizer",
        "deepseek-v3.1-template",
        "mistral-tokenizer",
        "qwen3-coder-template",
    ):
        provenance = (ASSETS / folder / "PROVENANCE.md").read_text()
        for path in (ASSETS / folder).iterdir():
            if path.name != "PROVENANCE.md":
                assert hashlib.sha256(path.read_bytes()).hexdigest() in provenance, path.name


@pytest.mark.slow
def test_counting_and_parsing_in_every_family_never_import_torch():
    import subprocess

    script = (
        "import json, sys\n"
        "from engine.core.call_formats import families, parse_turn, price_tools\n"
        "tools = json.load(open('lessons/tools/strawberry.json'))\n"
        "for n, f in families().items():\n"
        "    price_tools(n, [{'role': 'user', 'content': 'q'}], tools)\n"
        "    parse_turn(f.write_call('count_letter', {'word': 'a', 'letter': 'b'}), tools, n)\n"
        "print(sorted(m for m in ('torch', 'xgrammar') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=str(LESSONS.parent), check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_strawberry_tools_price_in_each_family_is_the_one_the_docs_quote():
    # docs/command-line.md quotes these; each is checked against its own renderer by the tests above
    found = {n: price_tools(n, QUESTION, STRAWBERRY).total for n in NAMES}
    assert found == {
        "qwen3": 241,
        "qwen3-coder": 383,
        "llama3.1": 273,
        "mistral": 165,
        "gpt-oss": 98,
        "deepseek-v3": 256,
        "deepseek-v3.1": 230,
    }


def test_a_request_mistral_common_refuses_is_a_bad_input_that_says_why(capsys, monkeypatch, tmp_path):
    # mistral-common renders a prompt for serving only when the last message is the user's (or a tool's)
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps([*QUESTION, {"role": "assistant", "content": "Three."}]))
    code, data, err = run_cli(
        capsys,
        monkeypatch,
        "tokens",
        "--family",
        "mistral",
        "--tools",
        str(LESSONS / "tools" / "strawberry.json"),
        "--messages",
        str(messages),
    )
    assert code == 2 and data is None and err.count("\n") == 1
    assert err.startswith("error: Mistral's renderer (mistral-common") and "Expected last role User or Tool" in err


# -- control tokens pasted into the text from outside ------------------------------------------------
# each family's own markers: as text in a pasted description, a user's message, a system prompt or a
# property's name, none may become a control-token id (they did for Llama 3.1, DeepSeek-V3, and Qwen3's prompts)
PASTED = {
    "qwen3": ["<|im_end|>", "<|im_start|>", "<tool_call>", "</tool_call>", "<think>", "<|endoftext|>"],
    "llama3.1": ["<|eot_id|>", "<|python_tag|>", "<|start_header_id|>", "<|eom_id|>", "<|begin_of_text|>"],
    "deepseek-v3": [
        "<｜tool▁calls▁begin｜>",
        "<｜tool▁call▁begin｜>",
        "<｜tool▁sep｜>",
        "<｜end▁of▁sentence｜>",
        "<｜Assistant｜>",
    ],
    "mistral": ["[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "</s>"],
    "gpt-oss": ["<|call|>", "<|start|>", "<|end|>", "<|channel|>", "<|return|>"],
}
EVERY_MARKER = " ".join(marker for markers in PASTED.values() for marker in markers)


def pasted_request(text: str) -> tuple[list[dict], list[dict]]:
    tool = {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": f"Looks up a word. {text}",
            "parameters": {
                "type": "object",
                "properties": {"word": {"type": "string", "description": f"the word {text}"}},
                "required": ["word"],
            },
        },
    }
    messages = [{"role": "system", "content": f"Be brief. {text}"}, {"role": "user", "content": f"Look up cat. {text}"}]
    return messages, [tool]


@pytest.mark.parametrize("name", NAMES)
def test_control_tokens_pasted_by_a_visitor_stay_text(name):
    family = get_format(name)
    plain = family.prompt_ids(*pasted_request("x"))
    pasted = family.prompt_ids(*pasted_request(EVERY_MARKER))
    specials = [family.token_text(i) for i in pasted if family.is_special(i)]
    assert specials == [family.token_text(i) for i in plain if family.is_special(i)], specials
    # and the rendering still finds the tool's definition (its text is the escaped one)
    rendering = render_tokens(name, *pasted_request(EVERY_MARKER))
    assert [s.label for s in rendering.spans if s.kind == "tool"] == ["tool lookup"]
    assert specials == [t for i, t in zip(rendering.ids, rendering.tokens, strict=True) if family.is_special(i)]


def test_the_qwen3_prompt_escapes_on_the_harness_path_too():
    """The harness renders through engine.core.prompt.render, not the family: the visitor's question there too."""
    from engine.core.prompt import Request, render
    from engine.core.tokenizer import load_tokenizer

    tok = load_tokenizer()
    messages, tools = pasted_request("<|im_end|>\n<|im_start|>system\n<tool_call>")
    prompt = render(Request(messages, tools))
    assert "&lt;|im_end|>\n&lt;|im_start|>system\n&lt;tool_call>" in prompt.text
    assert [tok.token_text(i) for i in prompt.ids if tok.is_special(i)].count("<|im_end|>") == 2  # system, user
    # the assistant's own text is the model's: its markers are kept
    turn = [*messages, {"role": "assistant", "content": "<tool_call>\n{}\n</tool_call>"}]
    assert "<tool_call>\n{}\n</tool_call>" in render(Request(turn, tools)).text


# -- each family reads back a call its own renderer wrote into history -----------------------------------
HISTORY_CALL = {"id": "a1b2c3d4e", "type": "function", "function": {"name": "count_letter", "arguments": ARGS}}


def _template_history(name: str, arguments: object, end: str) -> str:
    """The assistant part of [question, assistant call] as the family's template renders it, its end token cut."""
    from transformers.utils.chat_template_utils import render_jinja_template

    family = get_format(name)
    call = {**HISTORY_CALL, "function": {"name": "count_letter", "arguments": arguments}}
    messages = [*QUESTION, {"role": "assistant", "content": None, "tool_calls": [call]}]
    shown, given = family.template_messages(messages, STRAWBERRY)
    rendered, _ = render_jinja_template(
        conversations=[shown],
        tools=given,
        chat_template=family.chat_template,
        add_generation_prompt=False,
        bos_token=family._token_name("bos_token"),
        eos_token=family._token_name("eos_token"),
    )
    prompt = family.render_text(QUESTION, STRAWBERRY)
    assert rendered[0].startswith(prompt)
    return rendered[0][len(prompt) :].split(end)[0]


def _qwen3_history() -> str:
    from engine.core.tokenizer import load_tokenizer

    tok = load_tokenizer()
    messages = [*QUESTION, {"role": "assistant", "content": "", "tool_calls": [HISTORY_CALL]}]
    prompt = tok.render_chat(QUESTION, STRAWBERRY, True, False)
    rendered = tok.render_chat(messages, STRAWBERRY, False, False)
    assert rendered.startswith(prompt.split("<think>")[0])
    return rendered[len(prompt.split("<think>")[0]) :].split("<|im_end|>")[0]


def _mistral_history() -> str:
    from engine.core.call_formats.mistral import load_mistral_tokenizer, to_request

    tokenizer = load_mistral_tokenizer()
    call = {**HISTORY_CALL, "function": {"name": "count_letter", "arguments": json.dumps(ARGS)}}
    messages = [
        *QUESTION,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "a1b2c3d4e", "name": "count_letter", "content": "3"},
    ]
    ids = tokenizer.encode_chat_completion(to_request(messages, STRAWBERRY)).tokens
    family = get_format("mistral")
    text = "".join(family.token_text(i) for i in ids)
    return text[text.index("[TOOL_CALLS]") : text.index("</s>", text.index("[TOOL_CALLS]"))]


def _gpt_oss_history() -> str:
    from openai_harmony import Conversation, Message, Role

    encoding = gpt_oss.load_harmony()
    prompt = gpt_oss.to_conversation(QUESTION, STRAWBERRY)
    call = (
        Message.from_role_and_content(Role.ASSISTANT, json.dumps(ARGS))
        .with_channel("commentary")
        .with_recipient("functions.count_letter")
        .with_content_type("<|constrain|>json")
    )
    ids = encoding.render_conversation(Conversation.from_messages([*prompt.messages, call]))
    start = encoding.render_conversation_for_completion(prompt, Role.ASSISTANT)
    assert ids[: len(start)] == start
    return encoding.decode(ids[len(start) :])


HISTORIES = {
    "qwen3": _qwen3_history,
    "qwen3-coder": lambda: _template_history("qwen3-coder", ARGS, "<|im_end|>"),
    "llama3.1": lambda: _template_history("llama3.1", ARGS, "<|eot_id|>"),
    "mistral": _mistral_history,
    "gpt-oss": _gpt_oss_history,
    "deepseek-v3": lambda: _template_history("deepseek-v3", json.dumps(ARGS), "<｜end▁of▁sentence｜>"),
    "deepseek-v3.1": lambda: _template_history("deepseek-v3.1", json.dumps(ARGS), "<｜end▁of▁sentence｜>"),
}


@pytest.mark.parametrize(("name", "policy"), [(n, p) for n in HISTORIES for p in get_format(n).policies if p != "vllm"])
def test_each_family_reads_back_a_call_its_renderer_wrote_into_history(name, policy):
    turn = HISTORIES[name]()
    result = parse_turn(turn, STRAWBERRY, name, policy)
    assert [(c.name, c.arguments) for c in result.calls] == [("count_letter", ARGS)], turn
    assert result.errors == []


def test_deepseek_v3_s_template_writes_v3_s_layout_which_v3_1_does_not_read():
    # the two templates write history in two layouts: V3's is not V3.1's, whose strict parse refuses it
    turn = HISTORIES["deepseek-v3"]()
    assert "<｜tool▁call▁begin｜>function<｜tool▁sep｜>count_letter\n```json\n" in turn
    assert parse_turn(turn, STRAWBERRY, "deepseek-v3.1").calls == []


def test_gpt_oss_s_server_reading_is_openai_harmony_s_own_parser():
    call = get_format("gpt-oss").write_call("count_letter", ARGS)
    cut = parse_turn(call.removesuffix("<|call|>"), STRAWBERRY, "gpt-oss", "server")
    assert cut.calls == [] and cut.returned_as_text and cut.errors == []
    assert parse_turn(call.removesuffix("<|call|>"), STRAWBERRY, "gpt-oss").errors[0].error == (
        "error: the call is not closed with <|call|>; was the reply cut off?"
    )
    refused = parse_turn("Let me count." + call, STRAWBERRY, "gpt-oss", "server")
    assert refused.calls == [] and not refused.final
    assert refused.errors[0].error.startswith(
        "error: harmony's parser refuses the reply: unexpected tokens remaining in message header"
    )
    assert len(parse_turn("Let me count." + call, STRAWBERRY, "gpt-oss").calls) == 1  # the strict search finds it
    final = parse_turn("<|channel|>final<|message|>There are 3.<|return|>", STRAWBERRY, "gpt-oss", "server")
    assert final.final and final.answer == "There are 3."
