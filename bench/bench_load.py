"""Many users at once on one shared model: every session's output equals what it gets alone.

Each session is a thread with its own conversation and its own seed (sampled at
temperature 1, so any mixing of caches or random generators would change its tokens). All
sessions start together on the one shared engine, as a classroom's browsers do on one
server; one of them reads its stream slowly, as a page drawing each token does. The
outputs are compared with the same requests run one at a time. In process, no network.
Prints one JSON object: sessions, requests, failures, mismatches, latency median and max.

With --hostile, 8 sessions at once: 6 ordinary ones (model requests, then the playground's
run_tests on a passing test) and 2 that run hostile playground tests for as long as the
others last (a test that hides its output and spins; a test that writes 100 MB). The
figures: when the last ordinary session finished with the hostile pair beside them, against
the same crowd without them (and each session's own ratio), how far past its limit each killed run lasted, and the
processes left afterwards.

    python bench/bench_load.py [--sessions 6] [--requests 3] [--max-new-tokens 16] [--model tiny]
    python bench/bench_load.py --hostile [--test-seconds 5] [--eight-only] [--landlock-only]

--hostile also runs EIGHT_HOSTILE at once (a fork bomb, a 2 GB allocation, spinners, a 400 MiB
shared-memory segment, a daemon that double-forks, 100 MB of writes) and times the home page
rendered idle and while they run; afterwards it counts what is left: processes of the runs'
users, SysV and POSIX shared memory, the runs' cgroups and scratch folders.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

QUESTIONS = [
    "How many r are in strawberry?",
    "What is 2 + 2?",
    "Name a prime number.",
    "Spell banana backwards.",
    "Which tool counts letters?",
    "Say hello in French.",
    "What day comes after Monday?",
    "Count the vowels in queue.",
]
SLOW_READER_SECONDS = 0.01  # the slow session's pause after each token, as a page drawing it would


def session_requests(session: int, requests: int) -> list[tuple[list[dict], int]]:
    """(messages, seed) of each request one session makes: its own questions and seeds."""
    return [
        ([{"role": "user", "content": QUESTIONS[(session + r) % len(QUESTIONS)]}], 1000 * session + r)
        for r in range(requests)
    ]


def one_request(engine, messages: list[dict], seed: int, max_new_tokens: int, slow: bool = False) -> list[int]:
    from engine.core.generation import GenerationSettings
    from engine.core.prompt import Request, render
    from engine.model.decode import stream_steps

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


# -- ordinary sessions beside hostile playground tests -------------------------------------------------
PASSING_TEST = "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_sum(self):\n        self.assertEqual(sum([1, 2]), 3)\n"
HOSTILE_TESTS = {
    # moves its output away (os.dup2), then spins: only the deadline stops it
    "spin": (
        "import os\nimport unittest\n\n\nclass T(unittest.TestCase):\n    def test_spin(self):\n"
        "        fd = os.open('hidden.log', os.O_WRONLY | os.O_CREAT)\n        os.dup2(fd, 1)\n        os.dup2(fd, 2)\n"
        "        while True:\n            pass\n"
    ),
    # 100 MB in 64 KiB files
    "write": (
        "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_write(self):\n"
        "        for i in range(1600):\n            with open(f'f{i}.bin', 'wb') as f:\n                f.write(b'x' * 65536)\n"
    ),
}


# what stopped a hostile run, by the words of its result
STOPPED_BY = {
    "killed at the time limit": "were killed",
    "disk full (the tmpfs)": "No space left on device",
    "cap on new files": "may make at most",
    "cap on one file's size": "File too large",
}


def ordinary_session(engine, session: int, requests: int, max_new_tokens: int, marker: str) -> float:
    """A learner's session: model requests, then run_tests on a passing test; its wall time."""
    from engine.harness.playground import fresh_workspace
    from engine.harness.tools import run_tool

    started = time.perf_counter()
    for messages, seed in session_requests(session, requests):
        one_request(engine, messages, seed, max_new_tokens)
    name = f"test_ok_{marker}_{session}.py"
    with fresh_workspace({name: PASSING_TEST}) as ws:
        outcome = run_tool("run_tests", {"pattern": name}, ws)
    # the harness's verdict is its first line (the tests' own output follows, marked, and cannot forge it)
    if not (outcome.result or "").startswith("[run_tests: exit code 0 (passed)"):
        raise RuntimeError(f"the passing test did not pass: {outcome.text[-300:]}")
    return time.perf_counter() - started


def hostile_session(kind: str, marker: str, test_seconds: float, stop: threading.Event) -> list[dict]:
    """Run one hostile test again and again until `stop`; for each run, how long past its limit it lasted."""
    from dataclasses import replace

    from engine.harness.playground import fresh_workspace
    from engine.harness.tools import run_tool
    from engine.sandbox import child

    runs = []
    while not stop.is_set():
        name = f"test_{kind}_{marker}_{len(runs)}.py"
        with fresh_workspace({name: HOSTILE_TESTS[kind]}) as ws:
            ws.limits = replace(ws.limits, test_seconds=test_seconds)
            started = time.perf_counter()
            outcome = run_tool("run_tests", {"pattern": name}, ws)
            seconds = time.perf_counter() - started
        stopped_by = next((why for why, said in STOPPED_BY.items() if said in outcome.text), "not stopped")
        runs.append(
            {
                "seconds": round(seconds, 3),
                "past_limit_s": round(max(0.0, seconds - test_seconds), 3),
                "left": len(child.processes_with(name)),
                "stopped_by": stopped_by,
            }
        )
    return runs


def run_crowd(
    engine,
    sessions: int,
    requests: int,
    max_new_tokens: int,
    marker: str,
    hostile: tuple[str, ...],
    test_seconds: float,
    timeout: float,
) -> dict:
    """`sessions` ordinary sessions at once, with the `hostile` ones running beside them until they end."""
    times: dict[int, float] = {}
    failures: list[str] = []
    stop = threading.Event()
    hostile_runs: dict[str, list[dict]] = {}
    start = threading.Barrier(sessions + len(hostile))

    def ordinary(s: int) -> None:
        start.wait()
        try:
            times[s] = ordinary_session(engine, s, requests, max_new_tokens, marker)
        except Exception as error:  # counted, never raised: the figures say what failed
            failures.append(f"session {s}: {type(error).__name__}: {error}")

    def bad(kind: str) -> None:
        start.wait()
        hostile_runs[kind] = hostile_session(kind, marker, test_seconds, stop)

    threads = [threading.Thread(target=ordinary, args=(s,), daemon=True) for s in range(sessions)]
    others = [threading.Thread(target=bad, args=(k,), daemon=True) for k in hostile]
    for thread in threads + others:
        thread.start()
    began = time.perf_counter()
    for thread in threads:
        thread.join(max(0.0, timeout - (time.perf_counter() - began)))
    stop.set()
    for thread in others:
        thread.join(test_seconds + 10)
    failures += [f"session {s} did not finish within {timeout:g} s" for s in range(sessions) if s not in times]
    return {"times": times, "failures": failures, "hostile": hostile_runs}


def run_hostile_load(
    engine,
    sessions: int = 6,
    requests: int = 2,
    max_new_tokens: int = 12,
    test_seconds: float = 5.0,
    timeout: float = 300.0,
) -> dict:
    """The ordinary sessions alone (one by one), in a crowd of their own, and in the crowd with the hostile pair."""
    from engine.sandbox import child, modes

    marker = f"load{os.getpid()}x{time.monotonic_ns()}"
    solo = {s: ordinary_session(engine, s, requests, max_new_tokens, marker) for s in range(sessions)}
    crowd = run_crowd(engine, sessions, requests, max_new_tokens, marker, (), test_seconds, timeout)
    hostile = run_crowd(engine, sessions, requests, max_new_tokens, marker, tuple(HOSTILE_TESTS), test_seconds, timeout)
    time.sleep(0.5)
    ratios = {s: hostile["times"][s] / crowd["times"][s] for s in hostile["times"] if s in crowd["times"]}
    runs = [r for kind in hostile["hostile"].values() for r in kind]
    return {
        "model": engine.info.label(),
        "confinement": modes.choose_confinement().mode,
        "sessions": sessions + len(HOSTILE_TESTS),
        "ordinary_sessions": sessions,
        "requests_per_session": requests,
        "test_seconds": test_seconds,
        "solo_s": {s: round(t, 3) for s, t in solo.items()},
        "crowd_without_hostile_s": {s: round(t, 3) for s, t in crowd["times"].items()},
        "crowd_with_hostile_s": {s: round(t, 3) for s, t in hostile["times"].items()},
        # when the last ordinary session finished, with the hostile pair beside them against without
        "finish_ratio_with_to_without_hostile": (
            round(max(hostile["times"].values()) / max(crowd["times"].values()), 3)
            if hostile["times"] and crowd["times"]
            else None
        ),
        "session_ratio_max": round(max(ratios.values()), 3) if ratios else None,
        # each session's time beside the hostile pair against its time alone (one session at a time)
        "solo_ratio_max": round(max(hostile["times"][s] / solo[s] for s in hostile["times"]), 3)
        if hostile["times"]
        else None,
        "hostile_runs": {kind: rs for kind, rs in hostile["hostile"].items()},
        "hostile_past_limit_max_s": round(max((r["past_limit_s"] for r in runs), default=0.0), 3),
        "failures": crowd["failures"] + hostile["failures"],
        "processes_left": len(child.processes_with(marker)),
    }


# eight hostile runs at once: what a classroom's worst visitors might try together
EIGHT_HOSTILE = {
    "fork_bomb": "while True:\n    os.fork()",
    "allocate_2gb": "blob = bytearray(2 << 30)\nblob[::4096] = b'x' * len(blob[::4096])",
    "spin_1": "while True:\n    pass",
    "spin_2": "fd = os.open('hidden.log', os.O_WRONLY | os.O_CREAT)\nos.dup2(fd, 1)\nwhile True:\n    pass",
    "shared_memory": (
        "from multiprocessing import shared_memory\n"
        "segment = shared_memory.SharedMemory(create=True, size=400 << 20)\nsegment.buf[::4096] = b'x' * (100 << 8)\n"
        "import time\ntime.sleep(60)"
    ),
    "daemon": (
        "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        import time\n        time.sleep(600)\n"
        "    os._exit(0)\nimport time\ntime.sleep(60)"
    ),
    "write_100mb": "for i in range(1600):\n    with open(f'f{i}.bin', 'wb') as f:\n        f.write(b'x' * 65536)",
    "threads": "import threading\nfor _ in range(200):\n    threading.Thread(target=lambda: [0 for _ in iter(int, 1)]).start()",
}


def hostile_test_source(body: str) -> str:
    indented = "\n".join("        " + line for line in body.splitlines())
    return f"import os\nimport unittest\n\n\nclass T(unittest.TestCase):\n    def test_it(self):\n{indented}\n"


def render_home_seconds(times: int = 5) -> float:
    """The median time to render the home page once in-process (streamlit's AppTest), as a server would
    (five renders: on a 2-core machine one render varies by 2× from one moment to the next, idle or not)."""
    from streamlit.testing.v1 import AppTest

    found = []
    for _ in range(times):
        started = time.perf_counter()
        AppTest.from_file(str(ROOT / "router.py"), default_timeout=120).run()
        found.append(time.perf_counter() - started)
    return statistics.median(found)


def left_behind() -> dict:
    """What runs may leave: live processes of the slots' users, shared memory, cgroups, scratch folders.

    A zombie is not counted: it is dead, and waits only for init to reap it. Without a pid namespace
    (Landlock alone) a run's killed daemon is reparented to init, which may reap it a moment later."""
    from engine.sandbox import child

    slot_uids = {child.slot_uid(n) for n in range(child.SLOT_UIDS_PER_SERVER)}
    processes = zombies = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = dict(
                    line.split(":", 1) for line in Path(f"/proc/{entry}/status").read_text().splitlines() if ":" in line
                )
                uid = int(status["Uid"].split()[0])
            except (OSError, KeyError, ValueError):
                continue
            if uid in slot_uids:
                dead = status.get("State", "").split()[:1] == ["Z"]
                zombies += dead
                processes += not dead
    try:
        sysv = len(Path("/proc/sysvipc/shm").read_text().splitlines()) - 1
    except OSError:
        sysv = None
    cgroups = (
        sum(
            1
            for base in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup")
            for _ in Path(base).rglob("run-tests-*")
        )
        if Path("/sys/fs/cgroup").exists()
        else 0
    )
    return {
        "slot_user_processes": processes,
        "slot_user_zombies": zombies,
        "sysv_shm_segments": sysv,
        "posix_shm_files": len(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else None,
        "run_cgroups": cgroups,
        "scratch_folders": len(list(Path("/tmp").glob("run-tests-*"))),
    }


def left_changed(eight: dict) -> dict:
    """What the eight runs left that was not there before (zombies aside: they are dead, and init reaps them)."""
    before = eight["left_before"]
    return {k: v for k, v in eight["left_after"].items() if k != "slot_user_zombies" and v != before[k]}


def run_eight_hostile(test_seconds: float) -> dict:
    """The eight hostile runs at once, the home page timed beside them, and what is left afterwards."""
    from dataclasses import replace

    from engine.harness.playground import fresh_workspace
    from engine.harness.tools import run_tool
    from engine.sandbox import cgroup, modes, slots
    from engine.startup.warmup import wait_warmup

    render_home_seconds(1)  # the first render imports the pages: not part of either figure
    # ...and starts the server's warm-up (the shipped model's load among it): idle means after it, or the idle
    # renders share the interpreter with a load and both figures measure the load's progress instead
    wait_warmup(300)
    idle = render_home_seconds()
    before = left_behind()
    results: dict[str, dict] = {}

    def one(kind: str) -> None:
        name = f"test_{kind}.py"
        with fresh_workspace({name: hostile_test_source(EIGHT_HOSTILE[kind])}) as ws:
            ws.limits = replace(ws.limits, test_seconds=test_seconds)
            started = time.perf_counter()
            outcome = run_tool("run_tests", {"pattern": name}, ws)
            results[kind] = {
                "seconds": round(time.perf_counter() - started, 3),
                "said": (outcome.text.strip().splitlines() or [""])[-1][:120],
            }

    threads = [threading.Thread(target=one, args=(kind,), daemon=True) for kind in EIGHT_HOSTILE]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    busy = render_home_seconds()
    for thread in threads:
        thread.join(test_seconds * 3 + 60)
    time.sleep(0.5)
    after = left_behind()
    return {
        "confinement": modes.choose_confinement().mode,
        "slots": slots.slot_count(),
        "cgroup": cgroup.cgroup_status(),
        "home_render_idle_s": round(idle, 3),
        "home_render_beside_eight_s": round(busy, 3),
        "render_ratio": round(busy / idle, 3),
        "runs": results,
        "left_before": before,
        "left_after": after,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--requests", type=int, default=3, help="requests per session")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--model", default="tiny", help="tiny (default), a hub id or a local folder")
    parser.add_argument("--hostile", action="store_true", help="add two sessions running hostile playground tests")
    parser.add_argument("--test-seconds", type=float, default=5.0, help="run_tests's time limit in the hostile load")
    parser.add_argument(
        "--landlock-only",
        action="store_true",
        help="run the tests under Landlock alone, the fallback where bubblewrap cannot run (no pid namespace)",
    )
    parser.add_argument(
        "--eight-only", action="store_true", help="with --hostile: only the eight hostile runs and the page"
    )
    parser.add_argument(
        "--without-hook",
        action="store_true",
        help="run the tests without the audit hook, so that only the kernel's layers stop them",
    )
    args = parser.parse_args()
    from engine.model.loading import load_model

    if args.landlock_only:
        from engine.sandbox import modes

        modes.MODES = ("landlock",)  # the fallback where bubblewrap cannot run: no pid namespace
    if args.without_hook:
        from engine.sandbox import child

        child.LAYERS = tuple(layer for layer in child.LAYERS if layer != "hook")
    if args.hostile and args.eight_only:
        eight = run_eight_hostile(args.test_seconds)
        print(json.dumps(eight, indent=2))
        return 0 if not left_changed(eight) and eight["render_ratio"] <= 2.0 else 1
    if args.hostile:
        figures = run_hostile_load(
            load_model(args.model), args.sessions, args.requests, args.max_new_tokens, args.test_seconds
        )
        figures["eight_hostile"] = eight = run_eight_hostile(args.test_seconds)
        print(json.dumps(figures, indent=2))
        left = left_changed(eight)
        good = (
            not figures["failures"]
            and figures["processes_left"] == 0
            and not left
            and figures["hostile_past_limit_max_s"] <= 2.0
            and figures["finish_ratio_with_to_without_hostile"] <= 2.0
            and eight["render_ratio"] <= 2.0
        )
        return 0 if good else 1
    figures = run_load(load_model(args.model), args.sessions, args.requests, args.max_new_tokens)
    print(json.dumps(figures, indent=2))
    return 0 if figures["failures"] == 0 and not figures["mismatches"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
