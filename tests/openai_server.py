"""An OpenAI-compatible completions server over the tiny model, for the remote engine's tests (no llama.cpp needed).

It answers `GET /v1/models` and `POST /v1/completions` as vLLM and llama.cpp's server do
(`logprobs: N` -> `choices[0].logprobs` with `tokens`, `token_logprobs`, `top_logprobs`, and
`usage.prompt_tokens`), computing every figure with the tiny model's real decode loop. `mode`
makes it fail the ways a real server can: "slow" (answers after the client's timeout), "cut"
(closes the connection without an answer), "no-logprobs", "other-tokenizer" (counts the
prompt differently, as another model's server would), "text-only" (refuses token ids). And "vllm": it
says owned_by "vllm" in /v1/models, as vLLM does, and applies a request's `structured_outputs.grammar`
(xgrammar's EBNF) while it decodes, as vLLM's default backend does; "vllm-ignores" says vllm but
ignores the grammar, as a vLLM too old to read structured_outputs would. Every request's body is
kept in `server.requests`.
"""

from __future__ import annotations

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL_ID = "tiny-qwen3-random"


class EbnfConstraint:
    """An EBNF grammar applied to the tiny model's decode, as vLLM's xgrammar backend applies structured_outputs.grammar."""

    def __init__(self, ebnf: str):
        import xgrammar as xgr

        from engine.constrain.grammar import compiler
        from engine.constrain.packed_mask import bitmask_to_bool, new_bitmask

        self.matcher = xgr.GrammarMatcher(compiler().compile_grammar(ebnf))
        self.bitmask, self.unpack = new_bitmask(), bitmask_to_bool

    def next_mask(self):
        self.matcher.fill_next_token_bitmask(self.bitmask)
        return self.unpack(self.bitmask)[0]

    def accept(self, token_id: int) -> None:
        assert self.matcher.accept_token(int(token_id)), token_id


def start_server(mode: str = "ok"):
    """(server, base url) on a free port of 127.0.0.1, served from a daemon thread; call server.shutdown() when done."""
    from engine.core.generation import GenerationSettings
    from engine.model.decode import generate
    from engine.model.loading import load_model

    engine = load_model("tiny")
    tok = engine.tokenizer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def answer(self, code: int, data: dict) -> None:
            body = json.dumps(data).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/v1/models":
                row = {"id": MODEL_ID, "object": "model", **({"owned_by": "vllm"} if mode.startswith("vllm") else {})}
                self.answer(200, {"object": "list", "data": [row]})
            else:
                self.answer(404, {"error": "not found"})

        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.server.requests.append(request)
            if mode == "cut":
                self.connection.close()
                return
            if mode == "slow":
                time.sleep(5)
            prompt = request["prompt"]
            if isinstance(prompt, list) and mode == "text-only":
                time.sleep(0.5)  # as a busy server would: concurrent requests with ids are all refused after the first
                self.answer(400, {"error": "prompt must be a string"})
                return
            ids = prompt if isinstance(prompt, list) else tok.encode(prompt)
            k = int(request.get("logprobs") or 0)
            settings = GenerationSettings(
                max_new_tokens=request["max_tokens"],
                temperature=request.get("temperature", 0),
                top_k=k,
                seed=request.get("seed", 0),
            )
            grammar = (request.get("structured_outputs") or {}).get("grammar") if mode == "vllm" else None
            generation = generate(engine, ids, settings, EbnfConstraint(grammar) if grammar else None)
            # the stop token is not part of an OpenAI completion's text or tokens
            steps = [s for s in generation.steps if not (s.finish == "stop" and s.id in settings.stop_ids)]
            logprobs = {
                "tokens": [tok.decode([s.id]) for s in steps],
                "token_logprobs": [math.log(s.p) for s in steps],
                "top_logprobs": [{tok.decode([a.id]): math.log(a.p) for a in s.top} for s in steps],
                "text_offset": [],
            }
            counted = len(ids) + (1 if mode == "other-tokenizer" else 0)
            self.answer(
                200,
                {
                    "id": "cmpl-1",
                    "object": "text_completion",
                    "model": MODEL_ID,
                    "choices": [
                        {
                            "index": 0,
                            "text": "".join(logprobs["tokens"]),
                            "finish_reason": generation.finish,
                            "logprobs": None if mode == "no-logprobs" else logprobs,
                        }
                    ],
                    "usage": {"prompt_tokens": counted, "completion_tokens": len(steps)},
                },
            )

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.requests = []  # every POST body, in order
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


# -- a hostile server: what a stranger's server can send instead of an answer (issue 29) ---------------------------
MiB = 1024 * 1024


def _tokens_reply(tokens: list[str], logprob: str = "-0.5") -> bytes:
    """A Completions reply for `tokens`, each with `logprob` written as is (NaN and Infinity are not JSON)."""
    listed = ", ".join(json.dumps(t) for t in tokens)
    logprobs = ", ".join([logprob] * len(tokens))
    tops = ", ".join("{" + f"{json.dumps(t)}: {logprob}" + "}" for t in tokens)
    return (
        f'{{"choices": [{{"index": 0, "text": "", "finish_reason": "length", "logprobs": {{"tokens": [{listed}], '
        f'"token_logprobs": [{logprobs}], "top_logprobs": [{tops}]}}}}]}}'
    ).encode()


HOSTILE_MODES = (
    "huge",
    "huge-stated",
    "error-500-huge",
    "drip",
    "drip-body",
    "list",
    "models-list",
    "many-tokens",
    "nine-tokens",
    "nan",
    "infinity",
    "positive",
    "choices-of-strings",
    "not-http",
)


def start_hostile_server(mode: str):
    """(server, base url): /v1/models answers as a server would (but "models-list"), /v1/completions as `mode` says.

    "huge" streams 600 MiB of JSON with no length, "huge-stated" states its 600 MiB, "error-500-huge" is an HTTP 500
    with a 600 MiB body, "drip" sends its whole answer a byte every 2 s, headers included, "drip-body" its body, "list"
    answers a JSON list, "models-list" lists its models as a JSON list, "many-tokens" returns 300,000 tokens (for any
    max_tokens), "nine-tokens" 9, "nan", "infinity" and "positive" a log-probability of NaN, -Infinity and 3.0,
    "choices-of-strings" choices that are strings, "not-http" a line that is not HTTP. Nothing is held in memory: the
    big answers are written a MiB at a time until the client hangs up. `server.arrived` is when /completions was asked."""
    assert mode in HOSTILE_MODES, mode

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def send(self, code: int, body: bytes, length: int | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            if length is not None:
                self.send_header("Content-Length", str(length))
            self.end_headers()
            self.wfile.write(body)

        def stream(self, code: int, head: bytes, length: int | None) -> None:
            self.send(code, head, length)
            chunk = b" " * MiB
            for _ in range(600):
                self.wfile.write(chunk)

        def drip(self, data: bytes) -> None:
            started = time.monotonic()
            for byte in data:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(2)
                if time.monotonic() - started > 120:
                    return

        def do_GET(self):
            if mode == "models-list":
                self.send(200, json.dumps([{"id": MODEL_ID}]).encode(), None)
            else:
                body = json.dumps({"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]}).encode()
                self.send(200, body, len(body))

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.server.arrived = time.monotonic()
            try:
                self.answer()
            except OSError:  # the client hung up, as it should
                pass

        def answer(self):
            if mode in ("huge", "huge-stated"):
                self.stream(200, b'{"choices": [{"text": "', 600 * MiB if mode == "huge-stated" else None)
            elif mode == "error-500-huge":
                self.stream(500, b'{"error": "' + b"overloaded " * 100, None)
            elif mode == "drip":
                self.drip(b'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"choices": []}')
            elif mode == "drip-body":
                self.send(200, b"", None)
                self.wfile.flush()
                self.drip(b'{"choices": [{"text": "hello"}]}')
            elif mode == "list":
                self.send(200, b"[1, 2, 3]", 9)
            elif mode == "many-tokens":
                self.send(200, b'{"choices": [{"finish_reason": "length", "logprobs": {"tokens": [', None)
                for _ in range(300):
                    self.wfile.write(b'"a", ' * 1000)
                self.wfile.write(b'"a"], "token_logprobs": []}}]}')
            elif mode == "not-http":
                self.wfile.write(b"hello, this is not HTTP\r\n\r\n")
            else:
                body = {
                    "nine-tokens": lambda: _tokens_reply(["a"] * 9),
                    "nan": lambda: _tokens_reply(["a"], "NaN"),
                    "infinity": lambda: _tokens_reply(["a"], "-Infinity"),
                    "positive": lambda: _tokens_reply(["a"], "3.0"),
                    "choices-of-strings": lambda: b'{"choices": ["a", "b"]}',
                }[mode]()
                self.send(200, body, len(body))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.arrived = None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"
