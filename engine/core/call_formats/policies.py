"""Where a family's two policies part: one turn per leniency, read strictly and as the servers read it.

Strict (`per-block`) is the documented format only; `server` is what vLLM's and SGLang's tool
parsers accept, each leniency named by the parser file it follows. Lesson 8 shows these turns
with both verdicts, computed here by parsing each one under both policies.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..parse import ParseResult

COUNT = '{"word": "strawberry", "letter": "r"}'
V3_CALL = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>count_letter\n```json\n" + COUNT + "\n```<｜tool▁call▁end｜>"

CODER_CALL = (
    "<tool_call>\n<function=count_letter>\n<parameter=word>\nstrawberry\n</parameter>\n"
    "<parameter=letter>\nr\n</parameter>\n</function>\n</tool_call>"
)

HARMONY_CALL = " to=functions.count_letter<|channel|>commentary <|constrain|>json<|message|>" + COUNT + "<|call|>"

# (family, turn, the server's parser file whose leniency the turn shows)
LENIENCIES = [
    ("llama3.1", 'Let me count. {"name": "count_letter", "parameters": ' + COUNT + "}", "vLLM llama_tool_parser.py"),
    (
        "llama3.1",
        'Sure. <|python_tag|>{"name": "count_letter", "parameters": ' + COUNT + "}",
        "SGLang llama32_detector.py",
    ),
    ("llama3.1", '[{"name": "count_letter", "parameters": ' + COUNT + "}]", "SGLang llama32_detector.py"),
    (
        "llama3.1",
        '{"name": "count_letter", "parameters": ' + COUNT + '}\n{"name": "tokenize", "parameters": {"text": "r"}}',
        "vLLM llama_tool_parser.py",
    ),
    (
        "mistral",
        '[TOOL_CALLS] [{"name": "count_letter", "arguments": ' + COUNT + "}] Counting.",
        "vLLM mistral_tool_parser.py",
    ),
    ("mistral", "[TOOL_CALLS]count_letter" + COUNT, "vLLM mistral_tool_parser.py"),
    (
        "deepseek-v3",
        "<｜tool▁calls▁begin｜>" + V3_CALL.replace(">function<", ">tool<"),
        "vLLM deepseekv3_tool_parser.py",
    ),
    ("deepseek-v3.1", "Let me look.<｜tool▁calls▁begin｜>count_letter", "vLLM deepseekv31_tool_parser.py"),
    ("qwen3", '<tool_call>\n{"name": "count_letter", "arguments": ' + COUNT + "}", "vLLM hermes_tool_parser.py"),
    ("gpt-oss", HARMONY_CALL.removesuffix("<|call|>"), "vLLM openai_tool_parser.py"),
    ("gpt-oss", "Let me count." + HARMONY_CALL, "vLLM openai_tool_parser.py"),
    ("qwen3-coder", CODER_CALL.removeprefix("<tool_call>\n"), "vLLM qwen3coder_tool_parser.py"),
    (
        "qwen3-coder",
        CODER_CALL.replace("strawberry\n</parameter>", "strawberry"),
        "vLLM qwen3coder_tool_parser.py",
    ),
]


@dataclass(frozen=True)
class PolicyDifference:
    family: str
    turn: str
    strict: str  # the verdict in words
    server: str
    parser_file: str


def verdict(result: ParseResult) -> str:
    """A parse's outcome in a few words, as a table cell shows it."""
    calls = f"{len(result.calls)} call{'s' if len(result.calls) != 1 else ''} run"
    if result.returned_as_text:
        return "handed back as text, no call"
    if result.final:
        return "a final answer, no call"
    if result.errors:
        return f"{calls}; {result.errors[0].error}" if result.calls else result.errors[0].error
    return calls


def policy_differences(tools: list[dict]) -> list[PolicyDifference]:
    """Each turn of LENIENCIES with its strict and its server verdict (they differ on every one)."""
    from . import get_format, parse_turn

    return [
        PolicyDifference(
            get_format(family).display_family,
            turn,
            verdict(parse_turn(turn, tools, family, "per-block")),
            verdict(parse_turn(turn, tools, family, "server")),
            parser_file,
        )
        for family, turn, parser_file in LENIENCIES
    ]
