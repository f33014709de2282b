"""Train the shipped model (this package holds its data and measure too; it imports torch to train): a small Qwen3 with Qwen3's tokenizer, on engine/train/data.py's samples, on a CPU.

The network is Qwen3ForCausalLM itself (Qwen3's architecture and vocabulary of 151,936 rows, the
embedding tied to the output layer as in Qwen3-0.6B), so every path of the site (int8, the C decode
step, the grammar's masks, the GGUF export, llama.cpp's server) runs it with no special case.

While it trains, each word token's row is built from the rows of the pieces that spell it
(engine/train/spelled.py), so that a word no conversation names can still be copied into a call;
the built rows are written into the embedding before it is saved.

What keeps a CPU run to about an hour: the output layer (151,936 × hidden) is applied only where
the loss needs it, at the turn's own tokens, never at the prompt's, and there against a sample of its
rows that stands for the rest (`scored_rows`); samples of about one length
are batched together (right padding needs no attention mask: a causal model never looks ahead);
and where the processor runs bfloat16 natively the forward runs under bf16 autocast. Seeded, on
one thread count and one machine, a run is deterministic.
"""

from __future__ import annotations

import copy as copy_module
import json
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from ..core.tokenizer import END_OF_TEXT, IM_END, MODEL_VOCAB, QwenTokenizer, load_tokenizer
from .data import Sample, build_samples, spelling_candidates
from .spelled import SpelledEmbedding, spelled_words


@dataclass
class TrainConfig:
    """One training run's settings; every field is written into the model's provenance."""

    # the network: Qwen3's layout at a small size (the embedding's 151,936 rows dominate its size)
    hidden: int = 128
    layers: int = 4
    intermediate: int = 512
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 32
    # the run
    steps: int = 3000
    batch_tokens: int = 12_000  # padded tokens in one batch
    pool: int = 768  # samples drawn at a time, sorted by length and cut into batches
    lr: float = 3e-3
    min_lr_ratio: float = 0.1  # the cosine schedule ends at lr × this
    warmup: int = 150
    weight_decay: float = 0.01
    clip: float = 1.0
    drill_share: float = 0.2  # share of samples that are spelling drills
    copy_share: float = 0.25  # share of samples that are copy drills (a count question, then its call)
    # share of count questions phrased from parts (data.count_phrasing); 0 in the shipped run
    composed_share: float = 0.0
    spelled: bool = True  # word rows built from their pieces' rows while training (engine/train/spelled.py)
    rotate_places: bool = False  # and each later place's piece turned by a fixed rotation of its own
    seed: int = 0
    threads: int = 2
    # "bf16": the forward and the loss under bf16 autocast (the output layer's logits in bf16 halve its cost
    # even where the CPU has no native bf16), "auto": bf16 only where it runs natively, "off": fp32
    autocast: str = "bf16"
    # a conversation's target is scored against the drill candidates, its batch's targets and this many other
    # rows drawn at random (their logits raised by log(1/share drawn), so the sum stands for all 151,936);
    # 0: every row, every step. The output layer was most of a step's time.
    sampled_rows: int = 12_000
    log_every: int = 25
    checkpoint_every: int = 0  # >0: every so many steps a loadable copy goes beside `out` (OUT-step-N)


@dataclass
class TrainResult:
    """What a run made and measured: the folder, the loss curve, the time."""

    out: str
    config: dict
    steps: int
    seconds: float
    parameters: int
    autocast: str
    curve: list[dict] = field(default_factory=list)  # {"step", "loss", "drill_loss", "chat_loss", "seconds"}


def build_network(config: TrainConfig) -> torch.nn.Module:
    """A freshly initialised small Qwen3 (weights from the run's seed)."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    qwen = Qwen3Config(
        vocab_size=MODEL_VOCAB,
        hidden_size=config.hidden,
        intermediate_size=config.intermediate,
        num_hidden_layers=config.layers,
        num_attention_heads=config.heads,
        num_key_value_heads=config.kv_heads,
        head_dim=config.head_dim,
        tie_word_embeddings=True,
        max_position_embeddings=8192,
        rope_theta=1_000_000.0,
        eos_token_id=IM_END,
        pad_token_id=END_OF_TEXT,
        bos_token_id=END_OF_TEXT,
    )
    torch.manual_seed(config.seed)
    return Qwen3ForCausalLM(qwen)


def batches(samples: list[Sample], budget: int, rng: random.Random) -> list[list[Sample]]:
    """Samples of about one length grouped so each batch pads to at most `budget` tokens, in a shuffled order."""
    ordered = sorted(samples, key=lambda s: len(s.ids))
    out, current = [], []
    for sample in ordered:
        longest = max([len(sample.ids), *(len(s.ids) for s in current)])
        if current and longest * (len(current) + 1) > budget:
            out.append(current)
            current = []
        current.append(sample)
    if current:
        out.append(current)
    rng.shuffle(out)
    return out


def scored_rows(
    candidates: torch.Tensor, targets: torch.Tensor, sampled: int, generator: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows a conversation's targets are scored against, and what to add to each row's logit.

    The drill candidates and the batch's own targets are always in, at their logit; `sampled` of the
    other rows are drawn at random and each stands for the undrawn ones beside it: its logit is
    raised by log(others / sampled), so the softmax's sum estimates the sum over every row. Each
    step draws anew, so every row of the vocabulary is pushed down where the model should not write
    it, at a tenth of the cost. (With no sampling, batch_loss scores against the whole matrix itself.)
    """
    always = torch.unique(torch.cat([candidates, targets]))
    is_other = torch.ones(MODEL_VOCAB, dtype=torch.bool)
    is_other[always] = False
    others = is_other.nonzero().squeeze(1)
    drawn = others[torch.randperm(len(others), generator=generator)[:sampled]]
    rows = torch.cat([always, drawn])
    raise_by = math.log(len(others) / max(1, len(drawn)))
    bias = torch.cat([torch.zeros(len(always)), torch.full((len(drawn),), raise_by)])
    return rows, bias


def batch_loss(
    network: torch.nn.Module,
    batch: list[Sample],
    autocast: bool,
    candidates: torch.Tensor,
    spelled: SpelledEmbedding | None = None,
    sampled_rows: int = 0,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, dict]:
    """Mean cross-entropy over the batch's target tokens, with the output layer applied at those positions only.

    A conversation's target is scored against all 151,936 rows, or with `sampled_rows` against an
    estimate of them (`scored_rows`); a drill's against `candidates` (the pieces a spelling can be
    made of, engine/train/data.py), ten times fewer.
    """
    width = max(len(s.ids) for s in batch)
    ids = torch.full((len(batch), width), END_OF_TEXT, dtype=torch.long)
    wanted = torch.zeros((len(batch), width), dtype=torch.bool)
    for row, sample in enumerate(batch):
        ids[row, : len(sample.ids)] = torch.tensor(sample.ids)
        wanted[row, : len(sample.ids)] = torch.tensor(sample.targets)
    drill_rows = torch.tensor([s.kind in ("drill", "copy") for s in batch])[:, None]
    # position i's hidden state predicts token i+1: the states before each target
    chat = wanted[:, 1:] & ~drill_rows
    drill = wanted[:, 1:] & drill_rows
    # the embedding the network reads its input with and scores its output against (tied), spelled or plain
    weight = network.model.embed_tokens.weight if spelled is None else spelled.weight()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        embedded = torch.nn.functional.embedding(ids, weight)
        states = network.model(inputs_embeds=embedded).last_hidden_state[:, :-1]
        chat_targets = ids[:, 1:][chat]
        if sampled_rows > 0:
            rows, bias = scored_rows(candidates, chat_targets, sampled_rows, generator)
            # each target renumbered as its place among the scored rows
            places = torch.full((MODEL_VOCAB,), -1, dtype=torch.long)
            places[rows] = torch.arange(len(rows))
            chat_logits = (states[chat] @ weight[rows].T).float() + bias
            chat_targets = places[chat_targets]
        else:
            # every row: the whole matrix as it is, no copy of it gathered
            chat_logits = (states[chat] @ weight.T).float()
        chat_losses = torch.nn.functional.cross_entropy(chat_logits, chat_targets, reduction="none")
        # a drill's targets, renumbered as places in the candidate list
        drill_targets = torch.searchsorted(candidates, ids[:, 1:][drill])
        drill_losses = torch.nn.functional.cross_entropy(
            states[drill] @ weight[candidates].T, drill_targets, reduction="none"
        )
    losses = torch.cat([chat_losses.float(), drill_losses.float()])
    parts = {
        "drill": (float(drill_losses.detach().float().sum()), int(drill.sum())),
        "chat": (float(chat_losses.detach().float().sum()), int(chat.sum())),
    }
    return losses.mean(), parts


def schedule(step: int, config: TrainConfig) -> float:
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    progress = (step - config.warmup) / max(1, config.steps - config.warmup)
    return config.lr * (config.min_lr_ratio + (1 - config.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def choose_autocast(config: TrainConfig) -> bool:
    if config.autocast == "auto":
        from .cpu_speed import cpu_dtype

        return cpu_dtype().dtype == "bfloat16"
    return config.autocast == "bf16"


def train(config: TrainConfig, out: Path, tok: QwenTokenizer | None = None, progress=None) -> TrainResult:
    """Train a network per `config` and save it (bf16 safetensors, config.json, training.json) in `out`."""
    tok = tok or load_tokenizer()
    torch.set_num_threads(config.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    network = build_network(config)
    network.train()
    autocast = choose_autocast(config)
    spelled = None
    if config.spelled:
        spelled = SpelledEmbedding(
            network.model.embed_tokens.weight, spelled_words(tok), config.seed, config.rotate_places
        )
    trained = [*network.parameters(), *(spelled.parameters() if spelled else ())]
    decay = [p for p in trained if p.ndim >= 2]
    no_decay = [p for p in trained if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=config.lr,
        betas=(0.9, 0.95),
    )
    rng = random.Random(config.seed)
    candidates = torch.tensor(spelling_candidates(tok))
    candidate_set = frozenset(candidates.tolist())  # the copy drills' scored tokens, found once for every pool
    generator = torch.Generator().manual_seed(config.seed)  # which rows a step's conversations are scored against
    queue: list[list[Sample]] = []
    curve: list[dict] = []
    window = {"loss": 0.0, "n": 0, "drill": [0.0, 0], "chat": [0.0, 0]}
    started = time.perf_counter()
    for step in range(config.steps):
        if not queue:
            pool = build_samples(
                config.pool,
                rng.randrange(2**31),
                tok,
                config.drill_share,
                config.copy_share,
                candidate_set,
                config.composed_share,
            )
            queue = batches(pool, config.batch_tokens, rng)
        batch = queue.pop()
        for group in optimizer.param_groups:
            group["lr"] = schedule(step, config)
        loss, parts = batch_loss(network, batch, autocast, candidates, spelled, config.sampled_rows, generator)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, config.clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        window["loss"] += float(loss.detach())
        window["n"] += 1
        for kind in ("drill", "chat"):
            window[kind][0] += parts[kind][0]
            window[kind][1] += parts[kind][1]
        if (step + 1) % config.log_every == 0 or step + 1 == config.steps:
            point = {
                "step": step + 1,
                "loss": round(window["loss"] / window["n"], 4),
                "drill_loss": round(window["drill"][0] / max(1, window["drill"][1]), 4),
                "chat_loss": round(window["chat"][0] / max(1, window["chat"][1]), 4),
                "seconds": round(time.perf_counter() - started, 1),
            }
            curve.append(point)
            window = {"loss": 0.0, "n": 0, "drill": [0.0, 0], "chat": [0.0, 0]}
            if progress is not None:
                progress(point)
        if config.checkpoint_every and (step + 1) % config.checkpoint_every == 0 and step + 1 < config.steps:
            checkpoint(network, spelled, out.parent / f"{out.name}-step-{step + 1}")
    seconds = time.perf_counter() - started
    if spelled is not None:
        spelled.bake()  # the built rows become the embedding itself: the saved network is a plain Qwen3
    result = TrainResult(
        str(out),
        asdict(config),
        config.steps,
        round(seconds, 1),
        sum(p.numel() for p in network.parameters()),
        "bf16" if autocast else "off",
        curve,
    )
    save(network, out, result)
    return result


def checkpoint(network: torch.nn.Module, spelled: SpelledEmbedding | None, folder: Path) -> None:
    """A loadable copy of the network as it stands, its word rows built: to measure a long run part-way."""
    copy = copy_module.deepcopy(network)
    if spelled is not None:
        with torch.no_grad():
            copy.model.embed_tokens.weight.copy_(spelled.weight())
    save_weights(copy, folder)


def save(network: torch.nn.Module, out: Path, result: TrainResult) -> None:
    """The folder a Qwen3 loader reads, with training.json beside it (without the folder's own path: it is where
    the record lies, and the shipped copy's record would otherwise name the machine it was trained on)."""
    save_weights(network, out)
    record = {key: value for key, value in asdict(result).items() if key != "out"}
    (out / "training.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def save_weights(network: torch.nn.Module, folder: Path) -> None:
    """config.json and model.safetensors in bf16 (the network itself becomes bf16: save a copy to keep training)."""
    folder.mkdir(parents=True, exist_ok=True)
    network.eval()
    network.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True)
