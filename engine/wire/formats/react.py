"""ReAct's text: the project's ReAct prompt (engine.core.call_formats.react), `Action:` / `Action Input:` lines, `Observation:` in a user turn.

One Action per reply, so parallel calls take one reply each; every call and answer is
written by the ReAct format object, the same writer the calculator uses.
"""

from __future__ import annotations

from ...core.call_formats import get_format
from ...core.prompt import Request, render
from ...core.tokenizer import load_tokenizer
from .base import WireCall, WireExchange, WireFormat, check_exchange


class ReactText(WireFormat):
    key = "react"
    title = "ReAct (Action / Observation in the text)"
    short = "ReAct"
    order = 1
    style = "react"
    differences = {  # noqa: RUF012
        "where the call is written": "Action: and Action Input: lines in the reply's text",
        "arguments": "a JSON object on the Action Input line",
        "how a result finds its call": "by order: the Observation follows its one Action",
        "the result goes back as": "a user turn that starts with Observation:",
        "parallel calls": "no: one Action per reply, one reply per call",
        "the reply says it called a tool": "the text holds an Action: line (the parser decides)",
        "tool_choice: auto / required / none / one tool": "no field: the prompt asks, nothing enforces",
    }

    def write(
        self,
        calls: list[WireCall],
        tools: list[dict],
        messages: list[dict],
        choice: str = "auto",
        answer: str | None = None,
    ) -> WireExchange:
        """One Action per reply, each followed by its Observation turn."""
        check_exchange(calls, messages, answer)
        tok = load_tokenizer()
        style = get_format(self.style)
        prompt = render(Request(messages, tools, self.style), tok)
        if answer is not None:
            text = style.write_answer(answer)
            return WireExchange(
                self.key,
                self.title,
                prompt.text,
                [text],
                [],
                {"request": prompt.count, "replies": [tok.count(text) + 1], "results": []},
            )
        replies, results, reply_tokens, result_tokens = [], [], [], []
        history = list(messages)
        for c in calls:
            text = style.write_call(c.name, c.arguments)
            history += [{"role": "assistant", "content": text}, {"role": "tool", "content": c.result}]
            after = render(Request(history, tools, self.style, add_generation_prompt=False), tok)
            span = next(s for s in reversed(after.spans) if s.kind == "message")
            replies.append(text)
            results.append(after.span_text(span))
            reply_tokens.append(tok.count(text) + 1)
            result_tokens.append(span.tokens)
        tokens = {"request": prompt.count, "replies": reply_tokens, "results": result_tokens}
        return WireExchange(self.key, self.title, prompt.text, replies, results, tokens)


FORMAT = ReactText()
