"""Qwen3's own text: the chat template's prompt (engine.core.prompt / tokenizer.render_chat), `<tool_call>` JSON in the reply, `<tool_response>` in a user turn."""

from __future__ import annotations

from ...core.call_formats import get_format
from ...core.prompt import Request, render
from ...core.tokenizer import load_tokenizer
from .base import WireCall, WireExchange, WireFormat, check_exchange


class Qwen3Text(WireFormat):
    key = "qwen3"
    title = "Qwen3 native (<tool_call> in the text)"
    short = "Qwen3 native"
    order = 0
    style = "native"
    differences = {  # noqa: RUF012
        "where the call is written": "JSON inside <tool_call> … </tool_call> in the reply's text",
        "arguments": "a JSON object, in the text",
        "how a result finds its call": "by order: the n-th <tool_response> answers the n-th <tool_call>",
        "the result goes back as": "a user turn with one <tool_response> per result",
        "parallel calls": "several <tool_call> blocks in one reply",
        "the reply says it called a tool": "the text holds a <tool_call> block (the parser decides)",
        "tool_choice: auto / required / none / one tool": "no field: a server maps OpenAI's tool_choice onto the template and a grammar",
    }

    def write(
        self,
        calls: list[WireCall],
        tools: list[dict],
        messages: list[dict],
        choice: str = "auto",
        answer: str | None = None,
    ) -> WireExchange:
        """The template's own text: the prompt, the reply it writes for these calls, the results' turn."""
        check_exchange(calls, messages, answer)
        tok = load_tokenizer()
        prompt = render(Request(messages, tools, self.style), tok)
        if answer is not None:
            text = get_format(self.style).write_answer(answer)
            return WireExchange(
                self.key,
                self.title,
                prompt.text,
                [text + "<|im_end|>"],
                [],
                {"request": prompt.count, "replies": [tok.count(text) + 1], "results": []},
            )
        assistant = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls],
        }
        # the template writes the calls itself, so the reply is byte for byte what Qwen3 was trained on
        written = tok.render_chat([*messages, assistant], tools, add_generation_prompt=False)
        # what the model writes: everything after the generation prompt, <|im_end|> included
        reply = written[len(prompt.text) :].rstrip("\n")
        turn = reply.removesuffix("<|im_end|>")
        after = render(
            Request(
                [
                    *messages,
                    {"role": "assistant", "content": turn},
                    *({"role": "tool", "content": c.result} for c in calls),
                ],
                tools,
                self.style,
                add_generation_prompt=False,
            ),
            tok,
        )
        results = range(len(messages) + 1, len(messages) + 1 + len(calls))
        result = after.message_text(results)
        tokens = {"request": prompt.count, "replies": [tok.count(turn) + 1], "results": [after.message_tokens(results)]}
        return WireExchange(self.key, self.title, prompt.text, [reply], [result], tokens)


FORMAT = Qwen3Text()
