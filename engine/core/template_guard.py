"""A model folder's own chat template, rendered in a child process under a time and a memory limit, every time.

A chat template is code from whoever made the model folder: Jinja loops, string arithmetic,
branches on the tools' names. The templates the site ships (assets/, known by their sha256)
render in this process, as transformers' `apply_chat_template` renders them. Any other template
renders in a long-lived child process, with transformers' same `render_jinja_template`, so the
text is the same byte for byte:

- its address space is capped with RLIMIT_AS at what the renderer holds after its imports plus
  `memory_bytes`, so a template that builds a 3 GB string (at render, or when Jinja works out a
  constant like `'x' * 3000000000` as it compiles) gets a MemoryError, not the machine's memory;
- each render, compile included, must answer within `seconds`, or the child is killed;
- its answer is read only up to `output_bytes`.

The limits hold for every render, whatever the request's tools are called, so a template that
passes one check and loops for other tool names is still cut off. A template that goes past a
limit is refused from then on (TemplateRefused, one line); the next template starts a fresh child.
The cap is Linux's RLIMIT_AS; where the system has none (macOS), only the time limit holds.
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from ..errors import TemplateRefused, TokenizerUnavailable
from ..settings import ASSETS

MB = 1024 * 1024


@dataclass(frozen=True)
class TemplateLimits:
    """What one render of a model folder's own template may take."""

    # seconds for one render, compile included (a real template takes milliseconds, even for a 40k-token chat)
    seconds: float = 5.0
    # bytes of address space the renderer may add to what it holds once it has imported transformers
    memory_bytes: int = 512 * MB
    # bytes of the rendered prompt (as UTF-8 JSON) read back; a 40,960-token context is about 160 kB
    output_bytes: int = 32 * MB
    # seconds the child may take to start (import transformers' renderer); not the template's time
    start_seconds: float = 120.0


LIMITS = TemplateLimits()

CHILD = r"""
import json, resource, sys
from transformers.utils.chat_template_utils import render_jinja_template

budget = int(sys.argv[1])
capped = "capped"
try:
    # the cap starts after the imports: the template gets `budget` bytes over what the renderer already holds
    with open("/proc/self/statm") as statm:
        held = int(statm.read().split()[0]) * resource.getpagesize()
    # never above a hard limit the server was started under: asked for more, setrlimit would refuse and leave the
    # template uncapped (a worker that had lowered its own limit ran a 3 GB template to 3.1 GB that way)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = held + budget if hard == resource.RLIM_INFINITY else min(held + budget, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
except (OSError, ValueError):
    capped = "uncapped"
source, sink = sys.stdin.buffer, sys.stdout.buffer
sink.write(capped.encode() + b"\n")
sink.flush()
while True:
    size = source.readline()
    if not size:
        break
    request = json.loads(source.read(int(size)).decode("utf-8", "surrogatepass"))
    try:
        rendered, _ = render_jinja_template(
            conversations=[request["messages"]], tools=request["tools"], chat_template=request["template"],
            **request["options"],
        )
        reply = json.dumps({"text": rendered[0]}, ensure_ascii=False).encode("utf-8", "surrogatepass")
    except MemoryError:
        reply = b'{"limit": "memory"}'
    except Exception as error:
        reply = json.dumps(
            {"error": type(error).__name__, "module": type(error).__module__, "message": str(error)[:2000]}
        ).encode("utf-8", "surrogatepass")
    sink.write(b"%d\n" % len(reply) + reply)
    sink.flush()
"""


class _Cut(Exception):
    """The child went past a limit (its argument: "time", "memory" or "output") and was killed."""


@functools.lru_cache(maxsize=1)
def shipped_templates() -> dict[str, str]:
    """Every chat template the site ships, by its assets/ folder: its chat_template.jinja, and its
    tokenizer_config.json's (named "folder/tokenizer_config.json" where the folder has both)."""
    found = {}
    for folder in sorted(p for p in ASSETS.iterdir() if p.is_dir()):
        jinja, config = folder / "chat_template.jinja", folder / "tokenizer_config.json"
        if config.is_file():
            template = json.loads(config.read_text(encoding="utf-8")).get("chat_template")
            if isinstance(template, str):
                found[folder.name] = template
        if jinja.is_file():
            # a folder with both ships both (llama3.1's): the .jinja is the one its tokenizer renders
            if folder.name in found:
                found[f"{folder.name}/tokenizer_config.json"] = found[folder.name]
            found[folder.name] = jinja.read_text(encoding="utf-8")
    return found


def known_hashes() -> frozenset[str]:
    """The sha256 of every chat template the site ships (assets/*/): these render in the process."""
    return frozenset(template_hash(t) for t in shipped_templates().values())


def template_hash(template: str) -> str:
    return hashlib.sha256(template.encode("utf-8", "surrogatepass")).hexdigest()


def is_known(template: str) -> bool:
    """Whether `template` is one the site ships (it renders in the process, with no child)."""
    return template_hash(template) in known_hashes()


class _Renderer:
    """The child process that renders unknown templates, one render at a time, started again after a cut."""

    def __init__(self):
        self.child: subprocess.Popen | None = None
        self.lock = threading.Lock()

    def _start(self, limits: TemplateLimits) -> subprocess.Popen:
        child = subprocess.Popen(
            # -P: the server's working folder is not on the child's import path
            [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []), "-c", CHILD, str(limits.memory_bytes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        try:
            self._read_line(child, time.monotonic() + limits.start_seconds)
        except _Cut:
            self._kill(child)
            raise TokenizerUnavailable(
                "the process that renders a model folder's chat template did not start: check that transformers is installed"
            ) from None
        return child

    @staticmethod
    def _kill(child: subprocess.Popen) -> None:
        child.kill()
        child.wait()
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()

    @staticmethod
    def _read(child: subprocess.Popen, deadline: float) -> bytes:
        # a raw read that waits no later than `deadline`; b"" when the child has gone
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([child.stdout], [], [], remaining)[0]:
            raise _Cut("time")
        return os.read(child.stdout.fileno(), 1 << 16)

    def _read_line(self, child: subprocess.Popen, deadline: float) -> tuple[bytes, bytearray]:
        # the first line the child writes, and what came after it in the same reads
        buffer = bytearray()
        while b"\n" not in buffer:
            chunk = self._read(child, deadline)
            if not chunk:
                raise _Cut("memory")
            buffer += chunk
        line, _, rest = bytes(buffer).partition(b"\n")
        return line, bytearray(rest)

    def render(self, request: bytes, limits: TemplateLimits) -> dict:
        """The child's answer to `request`; _Cut (the child killed) past a limit."""
        with self.lock:
            if self.child is None or self.child.poll() is not None:
                self.child = self._start(limits)
            child = self.child
            try:
                try:
                    message = memoryview(b"%d\n" % len(request) + request)
                    while message:
                        message = message[child.stdin.write(message) :]
                except BrokenPipeError:
                    raise _Cut("memory") from None
                deadline = time.monotonic() + limits.seconds
                head, data = self._read_line(child, deadline)
                size = int(head)
                if size > limits.output_bytes:
                    raise _Cut("output")
                while len(data) < size:
                    chunk = self._read(child, deadline)
                    if not chunk:
                        raise _Cut("memory")
                    data += chunk
                answer = json.loads(bytes(data).decode("utf-8", "surrogatepass"))
                if answer.get("limit"):
                    raise _Cut(answer["limit"])
                return answer
            except BaseException:
                # a child that went past a limit (or whose answer was cut short) is not trusted with the next render
                self._kill(child)
                self.child = None
                raise


_renderer = _Renderer()
_refused: dict[str, str] = {}  # template sha256 -> why it is not rendered again


def problem_of(template: str) -> str | None:
    """Why `template` is refused (it went past a limit before), or None."""
    return _refused.get(template_hash(template))


def probe_request() -> tuple[list[dict], list[dict]]:
    """A plain conversation with tools, longer than a lesson's: what a model's load renders once to try a template."""
    tool = {
        "type": "function",
        "function": {
            "name": "probe",
            "description": "d",
            "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
        },
    }
    messages = [{"role": "system", "content": "s"}] + [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"message {n}"} for n in range(16)
    ]
    return messages, [tool] * 8


def _why(cut: str, limits: TemplateLimits) -> str:
    return {
        "time": f"it did not render within {limits.seconds:g} s (a loop that does not end?)",
        "memory": f"it needed more than {limits.memory_bytes / MB:,.0f} MB of memory to render",
        "output": f"it wrote more than {limits.output_bytes / MB:,.0f} MB of prompt",
    }.get(cut, f"its renderer stopped ({cut})")


def _raise_render_error(answer: dict) -> None:
    # the template's own failure (raise_exception, a syntax error) is raised as rendering it here would raise it
    name, message = answer["error"], answer["message"]
    if answer["module"].startswith("jinja2"):
        from jinja2.exceptions import TemplateError

        raise TemplateError(message)
    builtin = getattr(builtins, name, None)
    if isinstance(builtin, type) and issubclass(builtin, Exception):
        raise builtin(message)
    raise ValueError(f"{name}: {message}")


def render_guarded(template: str, messages: list[dict], tools: list[dict] | None, **options) -> str:
    """The prompt `template` renders for `messages` and `tools` (options: add_generation_prompt, enable_thinking,
    bos_token...), rendered in the limited child; TemplateRefused when it goes past a limit, now or before."""
    limits = LIMITS
    key = template_hash(template)
    if key in _refused:
        raise TemplateRefused(f"the model folder's chat template is unusable: {_refused[key]}")
    request = json.dumps(
        {"template": template, "messages": messages, "tools": tools, "options": options}, ensure_ascii=False
    ).encode("utf-8", "surrogatepass")
    try:
        answer = _renderer.render(request, limits)
    except _Cut as cut:
        _refused[key] = f"{_why(cut.args[0], limits)}, so it is not run again"
        raise TemplateRefused(f"the model folder's chat template is unusable: {_refused[key]}") from None
    if "error" in answer:
        _raise_render_error(answer)
    return answer["text"]
