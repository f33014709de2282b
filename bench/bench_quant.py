"""How far int8 weights move the model's probabilities: KL divergence and top-1 agreement per token, fp32 against int8.

    python bench/bench_quant.py [--model tiny|PATH] [--scenarios all|NAME,NAME] [--threads 1]

For each shipped scenario (lessons/scenarios/*.json, lesson 4's and the gallery's), the prompt
the harness renders for its first call (native style) followed by its first scripted turn is
read once by the fp32 model and once by the same weights quantized to int8
(engine/model/quant.py). At every token of the turn, both models' next-token distributions are
compared: KL(fp32 || int8) in nats, and whether their most likely tokens agree. This is
teacher forcing (both read the same text), so the figures measure the weights, not a drift of
two different generations. Prints one JSON object with the mean, 95th percentile and maximum
KL, the top-1 agreement and the time per token of each; `all_with_bf16_kv_cache` gives the same
figures for the int8 weights read through the compact forward with a bf16 key/value cache (the
site's setting where its timing chooses that cache), and `all_prepared_int8_rows` the figures for the
weights as an int8 load of a folder now runs them: prepared once, a scale per row, each product's
input rounded to int8 per row (engine/model/int8_prepared.py). The tiny and the sized folders are
random weights: their figures say how int8 moves a distribution of that shape, not how a
trained model answers.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def scenario_texts(names: list[str] | None) -> list[tuple[str, list[int], int]]:
    """(name, token ids of prompt + turn, where the turn starts) for each scenario with a native turn."""
    from engine.core.prompt import Request, render
    from engine.core.tokenizer import load_tokenizer
    from engine.harness.loop import list_gallery, list_scenarios, load_scenario
    from engine.settings import VENDORED_TOKENIZER

    tokenizer = load_tokenizer(str(VENDORED_TOKENIZER))
    rows = []
    for name in names or [*list_scenarios(), *list_gallery()]:
        scenario = load_scenario(name)
        turns = scenario.turns.get("native") or []
        if not turns:
            continue
        prompt = render(Request(scenario.messages, scenario.tools), tokenizer)
        turn_ids = tokenizer.encode(turns[0].text)
        rows.append((name, prompt.ids + turn_ids, len(prompt.ids)))
    return rows


def next_token_logprobs(model, ids: list[int], start: int):
    """log softmax of the model's logits at each position that predicts a turn token (from start - 1)."""
    import torch

    with torch.no_grad():
        # only the positions that predict the turn: all of a long prompt's logits would take GBs
        keep = len(ids) - start + 1
        logits = model(torch.tensor([ids]), logits_to_keep=keep).logits[0, :-1].float()
    return torch.log_softmax(logits, dim=-1)


def compare(reference, quantized) -> dict:
    """Per-token KL(reference || quantized) and top-1 agreement of two [tokens, vocab] log-probability tensors."""
    import torch

    kl = (reference.exp() * (reference - quantized)).sum(dim=-1).clamp_min(0)
    agree = reference.argmax(dim=-1) == quantized.argmax(dim=-1)
    return {"kl": kl.tolist(), "agree": agree.tolist(), "p_ref_top": torch.softmax(reference, -1).amax(-1).tolist()}


def compare_all(texts, references, others) -> tuple[dict, list[float], list[bool]]:
    """Each scenario's summary, and every token's KL and top-1 agreement, of `others` against `references`."""
    per_scenario, kls, agrees = {}, [], []
    for (name, _, _), ref, other in zip(texts, references, others, strict=True):
        row = compare(ref, other)
        per_scenario[name] = summarize(row["kl"], row["agree"])
        kls += row["kl"]
        agrees += row["agree"]
    return per_scenario, kls, agrees


def summarize(kls: list[float], agrees: list[bool]) -> dict:
    ordered = sorted(kls)
    return {
        "tokens": len(kls),
        "kl_mean_nats": round(sum(kls) / len(kls), 6),
        "kl_p95_nats": round(ordered[int(0.95 * (len(ordered) - 1))], 6),
        "kl_max_nats": round(ordered[-1], 6),
        "top1_agreement": round(sum(agrees) / len(agrees), 4),
    }


def load_fp32(name: str):
    from engine.model.loading import build_tiny_network

    if name == "tiny":
        return build_tiny_network()
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(name, dtype=torch.float32, local_files_only=True).eval()


def prepared_rows(name: str):
    """The same weights as an int8 load of a folder runs them (prepared int8 rows), prepared in a scratch cache;
    the tiny model is written to a scratch folder first. Its keys and values are kept in fp32, so the figure is the
    weights' alone."""
    import os
    import tempfile

    global _ROWS
    if _ROWS is None:
        from engine.model.int8_prepared import read_prepared_int8
        from engine.model.loading import build_tiny_network

        os.environ["QWEN_KV_DTYPE"] = "float32"
        scratch = tempfile.mkdtemp(prefix="bench-quant-")
        os.environ["QWEN_PREPARED_DIR"] = os.path.join(scratch, "prepared")
        folder = name
        if name == "tiny":
            folder = os.path.join(scratch, "tiny")
            build_tiny_network().save_pretrained(folder)
        _ROWS = read_prepared_int8(Path(folder))
    return _ROWS


_ROWS = None


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default="tiny", help="tiny or a model folder (a sized folder from bench/make_sized_model.py)"
    )
    parser.add_argument("--scenarios", default="all", help="all, or names separated by commas")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    import torch

    from engine.model.quant import quantize_network

    torch.set_num_threads(args.threads)
    names = None if args.scenarios == "all" else args.scenarios.split(",")
    texts = scenario_texts(names)
    model = load_fp32(args.model)
    started = time.perf_counter()
    references = [next_token_logprobs(model, ids, start) for _, ids, start in texts]
    fp32_seconds = time.perf_counter() - started
    quantize_network(model)
    started = time.perf_counter()
    quantized = [next_token_logprobs(model, ids, start) for _, ids, start in texts]
    int8_seconds = time.perf_counter() - started
    # the same int8 weights through the compact forward with keys and values kept in bf16, as the
    # site runs them where its timing chooses a bf16 cache (engine/model/attention.py)
    import os

    from engine.model.fast_build import build_fast_forward

    os.environ["QWEN_KV_DTYPE"] = "bfloat16"
    compact = build_fast_forward(model)
    cached = [next_token_logprobs(compact, ids, start) for _, ids, start in texts]
    rows = [next_token_logprobs(prepared_rows(args.model), ids, start) for _, ids, start in texts]
    per_scenario, kls, agrees = compare_all(texts, references, quantized)
    _, rows_kls, rows_agrees = compare_all(texts, references, rows)
    _, cache_kls, cache_agrees = compare_all(texts, references, cached)
    tokens = sum(len(ids) for _, ids, _ in texts)
    print(
        json.dumps(
            {
                "model": args.model,
                "random_weights": True
                if args.model == "tiny"
                else json.loads((Path(args.model) / "config.json").read_text()).get("random_weights", False),
                "method": "teacher forcing: prompt + first scripted native turn of each scenario; KL(fp32 || int8) per turn token",
                "quantization": "torch.ao.quantization.quantize_dynamic on every nn.Linear, qint8, per-tensor scale",
                "scenarios": len(texts),
                "all": summarize(kls, agrees),
                "all_with_bf16_kv_cache": summarize(cache_kls, cache_agrees),
                "all_prepared_int8_rows": summarize(rows_kls, rows_agrees),
                "per_scenario": per_scenario,
                "forward_seconds": {
                    "float32": round(fp32_seconds, 2),
                    "int8": round(int8_seconds, 2),
                    "tokens_read": tokens,
                },
                "threads": args.threads,
                "machine": {
                    "cpu": platform.processor() or platform.machine(),
                    "load_average": list(__import__("os").getloadavg()),
                },
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
