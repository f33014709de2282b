"""Many sessions against one OpenAI-compatible server at once: failures (there must be none) and p50/p95 latency.

    python bench/bench_remote.py --url http://127.0.0.1:8000/v1 [--sessions 30] [--turns 1] [--tokens 24]

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


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the server's API base, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--turns", type=int, default=1, help="turns each session asks for, one after another")
    parser.add_argument("--tokens", type=int, default=24, help="max new tokens per turn")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one request may wait")
    args = parser.parse_args(argv)

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
    print(json.dumps({
        "server": remote.info.label(), "sessions": args.sessions, "turns_per_session": args.turns,
        "requests": args.sessions * args.turns, "failures": len(failures), "failure_messages": sorted(set(failures))[:5],
        "latency_s": {"p50": round(percentile(latencies, 0.5), 3), "p95": round(percentile(latencies, 0.95), 3),
                      "max": round(max(latencies), 3)} if latencies else None,
        "tokens_per_turn": round(sum(tokens) / len(tokens), 1) if tokens else 0,
        "wall_s": round(wall, 2), "load_average": list(os.getloadavg()),
    }, indent=1))


if __name__ == "__main__":
    main()
