"""The shipped model's load and turn times, and its held-out figures, on this machine.

Load: a fresh process per run (`python -m engine generate --model builtin`, one token), so each
figure includes what a server pays when it starts: the import of torch and the read of the folder.
Turn: the strawberry question's call (about 30 tokens) and a 60-token turn, greedy, timed in one
process after a warm-up, median of --runs. Held-out: engine/train/heldout.py's figures (slow:
about a hundred greedy turns), and whether they are exactly what assets/builtin-model/heldout.json
records (`heldout_matches_record`; the suite re-judges a third of the prompts). With --words, the same
held-out words asked in the training's own phrasings (`count_exact_training_phrasings`): right there
and wrong in the held-out figure, the model cannot read a new phrasing; wrong in both, it cannot copy
a word it never named. Prints one JSON object.

    python bench/bench_builtin.py [--runs 5] [--heldout] [--words]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

QUESTION = "How many times does the letter r appear in strawberry?"


def load_seconds(runs: int) -> list[float]:
    """Wall time of a fresh `generate --model builtin` of one token: start, import, load, one step."""
    with tempfile.TemporaryDirectory() as folder:
        messages = Path(folder) / "m.json"
        messages.write_text(json.dumps([{"role": "user", "content": QUESTION}]))
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "engine",
                    "generate",
                    "--model",
                    "builtin",
                    "--messages",
                    str(messages),
                    "--max-new-tokens",
                    "1",
                ],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
            times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--heldout", action="store_true", help="also measure the held-out figures (slow)")
    parser.add_argument(
        "--words", action="store_true", help="also the held-out words in the training's phrasings (40 turns)"
    )
    args = parser.parse_args()

    from engine.core.generation import GenerationSettings
    from engine.core.prompt import Request
    from engine.model.live import generate_turn
    from engine.model.loading import load_model
    from engine.settings import BUILTIN, BUILTIN_FOLDER, LESSONS

    tools = json.loads((LESSONS / "tools" / "strawberry.json").read_text())
    started = time.perf_counter()
    engine = load_model(BUILTIN)
    in_process = time.perf_counter() - started
    request = Request([{"role": "user", "content": QUESTION}], tools)
    call_times, long_times, call = [], [], None
    for index in range(args.runs + 1):
        started = time.perf_counter()
        call = generate_turn(engine, request, GenerationSettings(max_new_tokens=60, top_k=5))
        if index:  # the first is the warm-up
            call_times.append(time.perf_counter() - started)
        # 60 tokens whatever the model writes: no stop token
        started = time.perf_counter()
        generate_turn(engine, request, GenerationSettings(max_new_tokens=60, top_k=5, stop_ids=()))
        if index:
            long_times.append(time.perf_counter() - started)
    result = {
        "model": engine.info.label(),
        "parameters": engine.info.parameters,
        "folder_bytes": sum(p.stat().st_size for p in BUILTIN_FOLDER.iterdir() if p.is_file()),
        "load_in_process_seconds": round(in_process, 3),
        "fresh_process_generate_seconds": {"median": round(statistics.median(load_seconds(args.runs)), 2)},
        "strawberry_call": call.text,
        "strawberry_call_tokens": len(call.steps),
        "strawberry_call_seconds": {
            "median": round(statistics.median(call_times), 3),
            "max": round(max(call_times), 3),
        },
        "sixty_token_turn_seconds": {
            "median": round(statistics.median(long_times), 3),
            "max": round(max(long_times), 3),
        },
    }
    if args.heldout:
        from engine.train.heldout import measure

        figures = measure(engine).as_json()
        recorded = json.loads((ROOT / "assets" / "builtin-model" / "heldout.json").read_text())
        # the whole re-measure (the suite judges a third of the prompts, one by one): it must give the record
        result["heldout_matches_record"] = figures == recorded
        figures.pop("mistakes")
        result["heldout"] = figures
    if args.words:
        from engine.train.heldout import measure_words

        result["count_exact_training_phrasings"] = measure_words(engine)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
