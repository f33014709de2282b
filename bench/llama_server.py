"""Start llama.cpp's OpenAI-compatible server (llama-cpp-python's `python -m llama_cpp.server`) on 127.0.0.1 for a GGUF.

    with serve_gguf(Path("tiny.q8_0.gguf")) as url:   # "http://127.0.0.1:PORT/v1"
        ...

Used by the tests against a real server and by bench/bench_remote.py. The start-up wait is
bounded (the server is ready when /v1/models answers); the server is stopped after, its log
kept beside the GGUF (SERVER.log) for a failure's message.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers import free_port  # noqa: E402

START_TIMEOUT = 180.0  # seconds for the server to load the model and answer /v1/models (a loaded 2-core machine)


class ServerError(RuntimeError):
    """The server did not start: its exit code or the wait, with its log's end."""


def wait_ready(url: str, process: subprocess.Popen, log: Path, timeout: float) -> None:
    """Return once GET {url}/models answers; ServerError when the process exits or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerError(
                f"llama_cpp.server exited with {process.returncode}: {log.read_text(errors='replace')[-1500:]}"
            )
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:
                if json.loads(answer.read()).get("data"):
                    return
        except (OSError, ValueError):
            pass
        time.sleep(0.5)
    raise ServerError(
        f"llama_cpp.server did not answer {url}/models within {timeout:.0f} s: "
        f"{log.read_text(errors='replace')[-1500:]}"
    )


@contextlib.contextmanager
def serve_gguf(
    gguf: Path, n_ctx: int = 4096, threads: int = 1, timeout: float = START_TIMEOUT, extra: list | None = None
):
    """The server's API base while it runs; terminated (then killed) after."""
    port = free_port()
    log = Path(f"{gguf}.server-{port}.log")
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        *(extra or []),
    ]
    url = f"http://127.0.0.1:{port}/v1"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
    try:
        wait_ready(url, process, log, timeout)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
