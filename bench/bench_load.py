"""Many users at once on one shared model: every session's output equals what it gets alone.

Each session is a thread with its own conversation and its own seed (sampled at
temperature 1, so any mixing of caches or random generators would change its tokens). All
sessions start together on the one shared engine, as a classroom's browsers do on one
server; one of them reads its stream slowly, as a page drawing each token does. The
outputs are compared with the same requests run one at a time. In process, no network.
Prints one JSON object: sessions, requests, failures, mismatches, latency median and max.

    python bench/bench_load.py [--sessions 6] [--requests 3] [--max-new-tokens 16] [--model tiny]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

QUESTIONS = [
    "How many r are in strawberry?", "What is 2 + 2?", "Name a prime number.", "Spell banana backwards.",
    "Which tool counts letters?", "Say hello in French.", "What day comes after Monday?", "Count the vowels in queue.",
]
SLOW_READER_SECONDS = 0.01  # the slow session's pause after each token, as a page drawing it would


def session_requests(session: int, requests: int) -> list[tuple[list[dict], int]]:
    """(messages, seed) of each request one session makes: its own questions and seeds."""
    return [
        ([{"role": "user", "content": QUESTIONS[(session + r) % len(QUESTIONS)]}], 1000 * session + r)
        for r in range(requests)
    ]


def one_request(engine, messages: list[dict], seed: int, max_new_tokens: int, slow: bool = False) -> list[int]:
    from engine.decode import GenerationSettings, stream_steps
    from engine.prompt import Request, render

    prompt = render(Request(messages), engine.tokenizer)
    settings = GenerationSettings(max_new_tokens=max_new_tokens, temperature=1.0, seed=seed, top_k=5)
    ids = []
    for step in stream_steps(engine, prompt.ids, settings):
        ids.append(step.id)
        if slow:
            time.sleep(SLOW_READER_SECONDS)
    return ids


def run_load(engine, sessions: int = 6, requests: int = 3, max_new_tokens: int = 16, timeout: float = 300.0) -> dict:
    """Run every session's requests alone, then all sessions at once; the figures and the comparison."""
    plan = {s: session_requests(s, requests) for s in range(sessions)}
    solo: dict[tuple[int, int], list[int]] = {}
    solo_latency = []
    for s, reqs in plan.items():
        for r, (messages, seed) in enumerate(reqs):
            started = time.perf_counter()
            solo[(s, r)] = one_request(engine, messages, seed, max_new_tokens)
            solo_latency.append(time.perf_counter() - started)

    together: dict[tuple[int, int], list[int]] = {}
    latency: list[float] = []
    failures: list[str] = []
    guard = threading.Lock()
    start = threading.Barrier(sessions)

    def session(s: int) -> None:
        start.wait()
        for r, (messages, seed) in enumerate(plan[s]):
            started = time.perf_counter()
            try:
                ids = one_request(engine, messages, seed, max_new_tokens, slow=s == 0)
            except Exception as error:  # counted, never raised: the figures say what failed
                with guard:
                    failures.append(f"session {s} request {r}: {type(error).__name__}: {error}")
                continue
            with guard:
                together[(s, r)] = ids
                latency.append(time.perf_counter() - started)

    began = time.perf_counter()
    threads = [threading.Thread(target=session, args=(s,), name=f"session {s}", daemon=True) for s in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, timeout - (time.perf_counter() - began)))
    wall = time.perf_counter() - began
    unfinished = [t.name for t in threads if t.is_alive()]
    mismatches = sorted(f"session {s} request {r}" for (s, r), ids in together.items() if ids != solo[(s, r)])
    tokens = sum(len(ids) for ids in together.values())
    return {
        "model": engine.info.label(),
        "sessions": sessions,
        "requests": sessions * requests,
        "completed": len(together),
        "failures": len(failures) + len(unfinished),
        "failure_messages": failures + [f"{name} did not finish within {timeout:g} s" for name in unfinished],
        "mismatches": mismatches,
        "max_new_tokens": max_new_tokens,
        "latency_s": {
            "median": round(statistics.median(latency), 3) if latency else None,
            "max": round(max(latency), 3) if latency else None,
        },
        "alone_latency_s": {"median": round(statistics.median(solo_latency), 3), "max": round(max(solo_latency), 3)},
        "wall_s": round(wall, 3),
        "tokens_per_s": round(tokens / wall, 1) if wall else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--requests", type=int, default=3, help="requests per session")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--model", default="tiny", help="tiny (default), a hub id or a local folder")
    args = parser.parse_args()
    from engine.loading import load_model

    figures = run_load(load_model(args.model), args.sessions, args.requests, args.max_new_tokens)
    print(json.dumps(figures, indent=2))
    return 0 if figures["failures"] == 0 and not figures["mismatches"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
