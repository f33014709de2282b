"""Many sessions against one OpenAI-compatible server at once: failures (there must be none) and p50/p95 latency.

    python bench/bench_remote.py --url http://127.0.0.1:8000/v1 [--sessions 30] [--turns 1] [--tokens 24]
    python bench/bench_remote.py --gguf tiny.q8_0.gguf [--server-threads 1] ...   # starts llama.cpp's server itself

With `--gguf` it starts llama.cpp's OpenAI-compatible server (`python -m llama_cpp.server`,
bench/llama_server.py) on a free port of 127.0.0.1 for that file (make one with
`bench/make_sized_model.py --arch tiny --out DIR --gguf q8_0`), and stops it after.
llama-cpp-python's server answers one request at a time (it holds one model behind a lock), so
its latencies are queueing behind the others; vLLM and SGLang batch concurrent requests.

Each simulated session renders lesson 3's request (the strawberry question with its two tools,
native style) and asks the server for its turn with 8 alternatives per token, as the lesson 3
panel does, `--turns` times, all sessions in their own threads started together. The remote
engine holds no lock (engine/model/remote.py), so the requests reach the server concurrently
and the server batches them. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="the server's API base, e.g. http://127.0.0.1:8000/v1")
    where.add_argument("--gguf", type=Path, help="start llama.cpp's server for this GGUF and bench it")
    parser.add_argument("--server-threads", type=int, default=1, help="with --gguf: the server's threads")
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--turns", type=int, default=1, help="turns each session asks for, one after another")
    parser.add_argument("--tokens", type=int, default=24, help="max new tokens per turn")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one request may wait")
    args = parser.parse_args(argv)
    if args.gguf:
        from llama_server import serve_gguf

        with serve_gguf(args.gguf, threads=args.server_threads) as url:
            args.url = url
            bench_sessions(args, f"llama_cpp.server for {args.gguf.name}, {args.server_threads} thread(s)")
    else:
        bench_sessions(args, None)


def bench_sessions(args, started: str | None) -> None:
    """Run the sessions against args.url and print the JSON (`started`: the server this run started, if any)."""

    from engine.core.generation import GenerationSettings
    from engine.core.prompt import Request
    from engine.harness.loop import load_scenario
    from engine.model.live import generate_turn
    from engine.model.remote import connect

    remote = connect(args.url, timeout=args.timeout)
    scenario = load_scenario("strawberry")
    request = Request(scenario.messages, scenario.tools, "native")
    settings = GenerationSettings(max_new_tokens=args.tokens, top_k=8)
    latencies, failures, tokens = [], [], []
    guard = threading.Lock()
    start = threading.Barrier(args.sessions)

    def session() -> None:
        start.wait()
        for _ in range(args.turns):
            began = time.perf_counter()
            try:
                generation = generate_turn(remote, request, settings)
            except Exception as error:  # every failure is counted, with its message
                with guard:
                    failures.append(f"{type(error).__name__}: {error}")
                continue
            with guard:
                latencies.append(time.perf_counter() - began)
                tokens.append(len(generation.steps))

    began = time.perf_counter()
    threads = [threading.Thread(target=session) for _ in range(args.sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    print(
        json.dumps(
            {
                "server": remote.info.label(),
                "started": started,
                "sessions": args.sessions,
                "turns_per_session": args.turns,
                "requests": args.sessions * args.turns,
                "failures": len(failures),
                "failure_messages": sorted(set(failures))[:5],
                "latency_s": {
                    "p50": round(percentile(latencies, 0.5), 3),
                    "p95": round(percentile(latencies, 0.95), 3),
                    "max": round(max(latencies), 3),
                }
                if latencies
                else None,
                "tokens_per_turn": round(sum(tokens) / len(tokens), 1) if tokens else 0,
                "wall_s": round(wall, 2),
                "load_average": list(os.getloadavg()),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
