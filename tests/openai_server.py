"""An OpenAI-compatible completions server over the tiny model, for the remote engine's tests (no llama.cpp needed).

It answers `GET /v1/models` and `POST /v1/completions` as vLLM and llama.cpp's server do
(`logprobs: N` -> `choices[0].logprobs` with `tokens`, `token_logprobs`, `top_logprobs`, and
`usage.prompt_tokens`), computing every figure with the tiny model's real decode loop. `mode`
makes it fail the ways a real server can: "slow" (answers after the client's timeout), "cut"
(closes the connection without an answer), "no-logprobs", "other-tokenizer" (counts the
prompt differently, as another model's server would), "text-only" (refuses token ids).
"""

from __future__ import annotations

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL_ID = "tiny-qwen3-random"


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
                self.answer(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]})
            else:
                self.answer(404, {"error": "not found"})

        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
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
            settings = GenerationSettings(max_new_tokens=request["max_tokens"], temperature=request.get("temperature", 0),
                                          top_k=k, seed=request.get("seed", 0))
            generation = generate(engine, ids, settings)
            # the stop token is not part of an OpenAI completion's text or tokens
            steps = [s for s in generation.steps if not (s.finish == "stop" and s.id in settings.stop_ids)]
            logprobs = {
                "tokens": [tok.decode([s.id]) for s in steps],
                "token_logprobs": [math.log(s.p) for s in steps],
                "top_logprobs": [{tok.decode([a.id]): math.log(a.p) for a in s.top} for s in steps],
                "text_offset": [],
            }
            counted = len(ids) + (1 if mode == "other-tokenizer" else 0)
            self.answer(200, {
                "id": "cmpl-1", "object": "text_completion", "model": MODEL_ID,
                "choices": [{"index": 0, "text": "".join(logprobs["tokens"]), "finish_reason": generation.finish,
                             "logprobs": None if mode == "no-logprobs" else logprobs}],
                "usage": {"prompt_tokens": counted, "completion_tokens": len(steps)},
            })

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"
