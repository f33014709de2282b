"""The tools' implementations: the strawberry pair and the harness's file tools, run on a checked call.

The strawberry pair (`count_letter`, `tokenize`), and the five harness tools (`read_file`,
`list_files`, `grep`, `write_file`, `run_tests`) working inside a sandboxed `Workspace`
(engine/harness/filetools.py). A tool never raises: it returns a result or a short error string
that goes back to the model. Their definitions are in engine/core/tooldefs.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..core.tokenizer import load_tokenizer
from ..sandbox.workspace import ToolRefusal, Workspace
from . import filetools


@dataclass(frozen=True)
class ToolOutcome:
    """What running one call gave: a result, or an error for the model."""

    result: str | None = None
    error: str | None = None

    @property
    def text(self) -> str:
        """What goes back to the model as the call's result."""
        return self.error if self.error is not None else str(self.result)


# -- the strawberry tools -----------------------------------------------------------------
def count_letter(word: str, letter: str) -> str:
    if len(letter) != 1:
        raise ToolRefusal(f"error: letter must be a single character, not {letter!r}")
    return str(word.casefold().count(letter.casefold()))


def tokenize(text: str) -> str:
    tok = load_tokenizer()
    return json.dumps([tok.token_text(i) for i in tok.encode(text)], ensure_ascii=False)


# the chat templates' own markers: written in a result, they would pass for the template's tokens
# once the result is fed back (a test printing "<|im_end|>" would end the tool's turn); Qwen's and
# Llama's <|name|>, DeepSeek's <｜name｜>. The prompt's renderer escapes each family's full list again
# (engine.core.control_text); this is what a page shows of the result
CONTROL_MARKERS = re.compile(r"<(/?)(\|[A-Za-z0-9_]+\||｜[^｜<>\n]{1,64}｜|tool_call|tool_response|think)>")


def escape_control_tokens(text: str) -> str:
    """`text` with each chat-control marker's "<" written as "&lt;": shown and fed back as plain text."""
    return CONTROL_MARKERS.sub(r"&lt;\1\2>", text) if isinstance(text, str) else text


def run_tool(name: str, arguments: dict, workspace: Workspace | None = None) -> ToolOutcome:
    """Run one checked call. Refusals and failures become an error string, never an exception."""
    plain = {"count_letter": count_letter, "tokenize": tokenize}
    try:
        if name in plain:
            return ToolOutcome(result=escape_control_tokens(plain[name](**arguments)))
        if name in filetools.FILE_TOOLS:
            if workspace is None:
                return ToolOutcome(error=f"error: {name} needs a workspace, and none is open")
            return ToolOutcome(result=escape_control_tokens(filetools.FILE_TOOLS[name](workspace, **arguments)))
        return ToolOutcome(error=f"error: the tool {name!r} is described but has no implementation here")
    except ToolRefusal as refusal:
        return ToolOutcome(error=str(refusal))
    except TypeError:
        return ToolOutcome(error=f"error: wrong arguments for {name}")
    except (OSError, ValueError, RecursionError) as error:
        return ToolOutcome(error=f"error: {name} failed: {type(error).__name__}")
