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
one thread count and one machine, a run is deterministic, and a run stopped and resumed from its
checkpoint (engine/train/checkpoint.py) ends on the same weights as one that never stopped.

The learning rate warms up, stays flat for as long as the run goes on, and decays over a short last
stretch (warmup-stable-decay): a run can go on for days in parts, and any checkpoint can be finished
off with that short decay, measured, and shipped, while the run itself goes on from where it was.
"""

from __future__ import annotations

import copy as copy_module
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from ..core.tokenizer import END_OF_TEXT, MODEL_VOCAB, QwenTokenizer, load_tokenizer
from ..model.network import build_qwen3, trained_shape
from .data import Sample
from .drills import spelling_candidates
from .mix import Mix, build_samples
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
    min_lr_ratio: float = 0.1  # the final decay ends at lr × this
    warmup: int = 150
    decay_steps: int = 200  # the last so many steps decay the rate (a cosine from lr to lr × min_lr_ratio)
    weight_decay: float = 0.01  # on the layers' matrices; never on the embedding, whose rare rows it would wipe out
    clip: float = 1.0
    drill_share: float = 0.15  # share of samples that are spelling drills
    copy_share: float = 0.25  # share of samples that are copy drills (a count question, then its call)
    pieces_share: float = 0.2  # share of samples that are pieces drills (a made-up word copied into a call)
    untooled_share: float = 0.15  # share of conversations that offer no tool and are answered in words
    # share of count questions phrased from parts (data.count_phrasing)
    composed_share: float = 0.5
    # share of the words a conversation names that are made up of letter pieces (data.Slots.made_up_word)
    made_up_share: float = 0.0
    capitalised: bool = True  # some conversation words written with a capital, kept so in the call
    spelled: bool = True  # word rows built from their pieces' rows while training (engine/train/spelled.py)
    rotate_places: bool = False  # and each later place's piece turned by a fixed rotation of its own
    seed: int = 0
    threads: int = 2
    # "bf16": the forward and the loss under bf16 autocast, "auto": bf16 only where the CPU runs it natively
    # (engine/model/cpu_speed.py), "off": fp32. On an AVX2-only CPU bf16 is emulated and a step several times slower
    autocast: str = "auto"
    # a conversation's target is scored against the drill candidates, its batch's targets and this many other
    # rows drawn at random (their logits raised by log(1/share drawn), so the sum stands for all 151,936);
    # 0: every row, every step. The output layer was most of a step's time.
    sampled_rows: int = 12_000
    log_every: int = 25
    checkpoint_every: int = 0  # >0: every so many steps a loadable copy goes beside `out` (OUT-step-N)
    init_from: str = ""  # a saved model's folder the run started from (its weights, a fresh optimizer), or ""

    def mix(self) -> Mix:
        return Mix(
            self.drill_share,
            self.copy_share,
            self.pieces_share,
            self.untooled_share,
            self.composed_share,
            self.capitalised,
            self.made_up_share,
        )


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
    parts: list[dict] = field(default_factory=list)  # each part of the run: steps, seconds, CPU seconds, machine


def build_network(config: TrainConfig) -> torch.nn.Module:
    """A freshly initialised small Qwen3 (weights from the run's seed; torch's generator left seeded by it)."""
    shape = trained_shape(
        config.hidden, config.intermediate, config.layers, config.heads, config.kv_heads, config.head_dim
    )
    return build_qwen3(shape, config.seed, keep_global_rng=False)


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
    candidates: torch.Tensor,
    targets: torch.Tensor,
    sampled: int,
    generator: torch.Generator | None,
    context: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows a conversation's targets are scored against, and what to add to each row's logit.

    The drill candidates, the batch's own targets and every token of its context are always in, at
    their logit (a model that copies must learn not to write the question's other words); `sampled` of the
    other rows are drawn at random and each stands for the undrawn ones beside it: its logit is
    raised by log(others / sampled), so the softmax's sum estimates the sum over every row. Each
    step draws anew, so every row of the vocabulary is pushed down where the model should not write
    it, at a tenth of the cost. (With no sampling, batch_loss scores against the whole matrix itself.)
    """
    always = torch.unique(torch.cat([candidates, targets, *(() if context is None else (context.flatten(),))]))
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
            rows, bias = scored_rows(candidates, chat_targets, sampled_rows, generator, ids)
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
    """Warm-up, a flat rate, and a cosine decay over the last `decay_steps` of `steps`."""
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    decay_from = max(config.warmup, config.steps - config.decay_steps)
    if step < decay_from:
        return config.lr
    progress = (step - decay_from) / max(1, config.steps - decay_from)
    return config.lr * (config.min_lr_ratio + (1 - config.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def choose_autocast(config: TrainConfig) -> bool:
    if config.autocast == "auto":
        from ..model.cpu_speed import cpu_dtype

        return cpu_dtype().dtype == "bfloat16"
    return config.autocast == "bf16"


@dataclass
class Run:
    """A run in progress: everything its next step depends on, which a checkpoint saves and a resumed run reads back."""

    config: TrainConfig
    network: torch.nn.Module
    spelled: SpelledEmbedding | None
    optimizer: torch.optim.Optimizer
    rng: random.Random  # draws each pool's seed and the batches' order
    generator: torch.Generator  # which rows a step's conversations are scored against
    queue: list[list[Sample]] = field(default_factory=list)  # the batches left of the current pool
    step: int = 0
    curve: list[dict] = field(default_factory=list)
    window: dict = field(default_factory=lambda: new_window())  # the losses summed since the last logged point
    parts: list[dict] = field(default_factory=list)  # each part: steps from and to, seconds, CPU seconds, machine

    @property
    def trained(self) -> list[torch.nn.Parameter]:
        return [*self.network.parameters(), *(self.spelled.parameters() if self.spelled else ())]

    @property
    def seconds(self) -> float:
        return sum(part["seconds"] for part in self.parts)


def new_window() -> dict:
    return {"loss": 0.0, "n": 0, "drill": [0.0, 0], "chat": [0.0, 0]}


def make_optimizer(network: torch.nn.Module, spelled: SpelledEmbedding | None, config: TrainConfig):
    """AdamW with weight decay on the layers' matrices alone: not on the embedding, norms or the spelled places."""
    embedding = network.model.embed_tokens.weight
    trained = [*network.parameters(), *(spelled.parameters() if spelled else ())]
    decay = [p for p in trained if p.ndim >= 2 and p is not embedding]
    no_decay = [p for p in trained if p.ndim < 2 or p is embedding]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=config.lr,
        betas=(0.9, 0.95),
    )


def start_run(config: TrainConfig, tok: QwenTokenizer, init_from: Path | None = None) -> Run:
    """A new run: a network from the seed, or warm-started from a saved model's weights (a fresh optimizer)."""
    torch.set_num_threads(config.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    network = build_network(config)
    if init_from is not None:
        from .warm_start import load_saved_weights

        load_saved_weights(network, init_from)
        # as given when relative (assets/builtin-model); an absolute path would name this machine's folders
        config.init_from = init_from.name if init_from.is_absolute() else str(init_from)
    network.train()
    spelled = None
    if config.spelled:
        # warm-started, each word row keeps the value it was saved with: its free part is what its pieces do not give
        spelled = SpelledEmbedding(
            network.model.embed_tokens.weight,
            spelled_words(tok),
            config.seed,
            config.rotate_places,
            keep_rows=init_from is not None,
        )
    optimizer = make_optimizer(network, spelled, config)
    generator = torch.Generator().manual_seed(config.seed)
    return Run(config, network, spelled, optimizer, random.Random(config.seed), generator)


def advance(
    run: Run,
    tok: QwenTokenizer,
    until: int,
    progress: Callable[[dict], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    save: Callable[[Run], None] | None = None,
    save_every: int = 0,
    out: Path | None = None,
) -> None:
    """Train `run` until its step is `until`, or until `should_stop()` says so after a step; `save(run)` every
    `save_every` steps (a checkpoint to resume from) and a loadable copy beside `out` every `checkpoint_every`."""
    config = run.config
    torch.set_num_threads(config.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    autocast = choose_autocast(config)
    candidates = torch.tensor(spelling_candidates(tok))
    candidate_set = frozenset(candidates.tolist())  # the copy drills' scored tokens, found once for every pool
    part = {"from": run.step, "to": run.step, "seconds": 0.0, "cpu_seconds": 0.0}
    part.update(machine_record(config.threads))
    run.parts.append(part)
    started, cpu_started, before = time.perf_counter(), time.process_time(), run.seconds
    while run.step < until:
        if not run.queue:
            pool = build_samples(config.pool, run.rng.randrange(2**31), tok, config.mix(), candidate_set)
            run.queue = batches(pool, config.batch_tokens, run.rng)
        batch = run.queue.pop()
        for group in run.optimizer.param_groups:
            group["lr"] = schedule(run.step, config)
        loss, parts = batch_loss(
            run.network, batch, autocast, candidates, run.spelled, config.sampled_rows, run.generator
        )
        loss.backward()
        torch.nn.utils.clip_grad_norm_(run.trained, config.clip)
        run.optimizer.step()
        run.optimizer.zero_grad(set_to_none=True)
        run.step += 1
        part["to"] = run.step
        part["seconds"] = round(time.perf_counter() - started, 1)
        part["cpu_seconds"] = round(time.process_time() - cpu_started, 1)
        log_step(run, float(loss.detach()), parts, before + part["seconds"], progress)
        if config.checkpoint_every and out is not None and run.step % config.checkpoint_every == 0:
            if run.step < config.steps:
                checkpoint(run.network, run.spelled, out.parent / f"{out.name}-step-{run.step}")
        stopping = should_stop is not None and should_stop()
        if save is not None and (stopping or run.step == until or (save_every and run.step % save_every == 0)):
            save(run)
        if stopping:
            break


def log_step(run: Run, loss: float, parts: dict, seconds: float, progress) -> None:
    """Add a step's losses to the window, and every `log_every` steps (and at the last) log the window's means."""
    window, config = run.window, run.config
    window["loss"] += loss
    window["n"] += 1
    for kind in ("drill", "chat"):
        window[kind][0] += parts[kind][0]
        window[kind][1] += parts[kind][1]
    if run.step % config.log_every == 0 or run.step == config.steps:
        point = {
            "step": run.step,
            "loss": round(window["loss"] / window["n"], 4),
            "drill_loss": round(window["drill"][0] / max(1, window["drill"][1]), 4),
            "chat_loss": round(window["chat"][0] / max(1, window["chat"][1]), 4),
            "seconds": round(seconds, 1),
        }
        run.curve.append(point)
        run.window = new_window()
        if progress is not None:
            progress(point)


def machine_record(threads: int) -> dict:
    """Which machine a part ran on: its processor, the instruction sets that change bf16's speed, torch's threads."""
    from .provenance import processor

    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        flags = ""
    sets = [name for name in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f" {name}" in flags]
    return {"machine": processor(), "instruction_sets": sets, "threads": threads}


def finish(run: Run, out: Path) -> TrainResult:
    """Write the run's network, its word rows built, into `out` as a plain Qwen3 with its record (training.json)."""
    if run.spelled is not None:
        run.spelled.bake()  # the built rows become the embedding itself: the saved network is a plain Qwen3
    result = TrainResult(
        str(out),
        asdict(run.config),
        run.step,
        round(run.seconds, 1),
        sum(p.numel() for p in run.network.parameters()),
        "bf16" if choose_autocast(run.config) else "off",
        run.curve,
        run.parts,
    )
    save(run.network, out, result)
    return result


def train(
    config: TrainConfig,
    out: Path,
    tok: QwenTokenizer | None = None,
    progress=None,
    init_from: Path | None = None,
) -> TrainResult:
    """Train a network per `config` in one part and save it (bf16 safetensors, config.json, training.json) in `out`."""
    tok = tok or load_tokenizer()
    run = start_run(config, tok, init_from)
    advance(run, tok, config.steps, progress, out=out)
    return finish(run, out)


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
