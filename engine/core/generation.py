"""A generated turn as data: the settings it ran with, each step's token and top-k, the model that made it.

What the decode loop (engine/model/decode.py) yields and what a lesson pack records, in plain
dataclasses with their JSON form, so that reading a pack, drawing a step or labelling a panel
never imports torch.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from ..errors import BadInput
from .tokenizer import END_OF_TEXT, IM_END

MAX_NEW_TOKENS = 32_768  # the reply length Qwen3's model card recommends for most queries; a context may allow fewer
MIN_TEMPERATURE = 1e-3  # below it, logits / temperature overflows float32 and every probability is NaN
MAX_TEMPERATURE = 100.0  # above it, every token is about as likely as any other
MAX_SAMPLE_TOP_K = 1_000  # a draw's cut to the most likely tokens; more than this is no cut a lesson shows
# the largest seed: a 32-bit signed int, which every server takes as a seed (llama.cpp reads its
# 32-bit unsigned -1 as "a random seed"), and far inside the 64 bits a torch.Generator takes
MAX_SEED = 2**31 - 1

SHORT_DTYPE = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


@dataclass(frozen=True)
class ModelInfo:
    """What was loaded, from where, and how: enough to label a panel or a recorded trace."""

    name: str  # what was asked for: "tiny", a hub id or a folder
    source: str  # "built in memory", "local folder", "local cache" or "downloaded"
    path: str | None  # the folder the weights came from (None for tiny)
    revision: str | None  # the hub commit hash of a cached snapshot, when known
    dtype: str  # "float32", "bfloat16" or "float16"
    device: str  # "cpu", "cuda" or "mps"
    parameters: int  # number of weights
    random_weights: bool = False  # True for the tiny model, and for a folder whose config.json says so
    note: str | None = None  # TINY_NOTE or RANDOM_FOLDER_NOTE
    quant: str | None = None  # "int8" when every Linear's weight is int8 (engine/model/quant.py); None = as dtype says
    threads: int | None = None  # torch threads on a CPU (engine/model/threads.py); None = not chosen here
    engine_url: str | None = (
        None  # the OpenAI-compatible server that ran it (engine/model/remote.py); None = this process
    )

    def weights(self) -> str:
        """How the weights are held, in a label's words: 'int8 weights', 'bf16', 'fp32'."""
        return "int8 weights" if self.quant == "int8" else SHORT_DTYPE.get(self.dtype, self.dtype)

    def label(self) -> str:
        """A short name for a panel: 'Qwen/Qwen3-1.7B (bf16, cuda)', 'Qwen/Qwen3-1.7B (int8 weights, cpu)'."""
        tail = f"; {self.note}" if self.note else ""
        if self.engine_url:
            return f"{self.name} (server at {self.engine_url}{tail})"
        return f"{self.name} ({self.weights()}, {self.device}{tail})"

    def as_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class GenerationSettings:
    """How one turn is generated; every field is recorded with a trace."""

    # stop after this many new tokens (finish "length")
    max_new_tokens: int = 128
    # 0 = greedy (always the most likely token); above 0, draw from softmax(logits / temperature)
    temperature: float = 0.0
    # sampling only: draw from the smallest set of top tokens whose probabilities add up to top_p
    top_p: float = 1.0
    # how many alternatives each step reports (0 = none); for display, it never narrows the draw
    top_k: int = 5
    # sampling only: draw from the `sample_top_k` most likely tokens, renormalised, before top_p (0 = no cut);
    # written to JSON only when set, so a pack or trace recorded before the field existed still matches
    sample_top_k: int = 0
    # seeds the sampler's own torch.Generator, so a sampled run repeats exactly
    seed: int = 0
    # Qwen3's thinking switch for requests the engine builds itself (the command line); a Request's
    # own enable_thinking decides in generate_turn and LiveModel. Off: the prompt ends with an empty <think></think>
    enable_thinking: bool = False
    # tokens that end the turn (finish "stop"); Qwen3's generation_config lists both
    stop_ids: tuple[int, ...] = (IM_END, END_OF_TEXT)
    # under a mask, also report the model's own view (DecodeStep.p_unmasked, forbidden_mass, top_unmasked):
    # a logsumexp and a top-k over the whole vocabulary per step, so only when a panel shows them
    model_view: bool = False
    # start from the KV cache of the longest prompt prefix an earlier run on this model left (engine/model/prefix_cache.py)
    reuse_prefix: bool = True

    def check(self) -> None:
        """Raise BadInput with what to change when a value cannot work."""
        if self.max_new_tokens < 1:
            raise BadInput(f"max_new_tokens must be at least 1, not {self.max_new_tokens}")
        if self.max_new_tokens > MAX_NEW_TOKENS:
            raise BadInput(
                f"max_new_tokens must be at most {MAX_NEW_TOKENS:,} (the reply length Qwen3's model card recommends), "
                f"not {self.max_new_tokens:,}"
            )
        if self.temperature < 0:
            raise BadInput(f"temperature must be 0 (greedy) or more, not {self.temperature}")
        if not math.isfinite(self.temperature) or (0 < self.temperature < MIN_TEMPERATURE):
            raise BadInput(
                f"temperature must be 0 (greedy) or a number from {MIN_TEMPERATURE:g} to {MAX_TEMPERATURE:g}, "
                f"not {self.temperature}"
            )
        if self.temperature > MAX_TEMPERATURE:
            raise BadInput(
                f"temperature must be at most {MAX_TEMPERATURE:g} (above it every token is about as likely), "
                f"not {self.temperature}"
            )
        if not 0 < self.top_p <= 1:
            raise BadInput(f"top_p must be above 0 and at most 1, not {self.top_p}")
        if not 0 <= self.top_k <= 100:
            raise BadInput(f"top_k must be between 0 and 100, not {self.top_k}")
        if not 0 <= self.sample_top_k <= MAX_SAMPLE_TOP_K:
            raise BadInput(
                f"sample_top_k must be 0 (no cut) or at most {MAX_SAMPLE_TOP_K:,} tokens, not {self.sample_top_k:,}"
            )
        if not 0 <= self.seed <= MAX_SEED:
            raise BadInput(f"seed must be a whole number from 0 to {MAX_SEED:,}, not {self.seed:,}")

    def as_json(self) -> dict:
        data = {**asdict(self), "stop_ids": list(self.stop_ids)}
        if not self.sample_top_k:
            del data["sample_top_k"]
        return data

    @classmethod
    def from_json(cls, data: dict) -> GenerationSettings:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if "stop_ids" in known:
            known["stop_ids"] = tuple(known["stop_ids"])
        return cls(**known)


@dataclass(frozen=True)
class Alternative:
    """One of the most likely tokens at a step."""

    id: int
    token: str  # the token shown on its own (tokenizer.token_text)
    p: float  # its probability under the same distribution as DecodeStep.p


@dataclass(frozen=True)
class DecodeStep:
    """One generated token and what the model thought at that step."""

    index: int  # 0 for the first new token
    id: int
    token: str  # the token shown on its own (<0xNN> for bytes of a split character)
    text: str  # what it adds to the turn's text: "" for the stop token, held back while a character is split
    p: float  # its probability: softmax after temperature, renormalised under the mask if any (before top-p trims the draw)
    top: list[Alternative]  # the top_k tokens of that distribution, most likely first
    allowed: int | None  # how many of the 151,669 real tokens the constraint allowed; None = no constraint this step
    p_unmasked: float | None = (
        None  # with a mask and settings.model_view: the same token's probability had nothing been forbidden
    )
    forbidden_mass: float | None = (
        None  # with a mask and settings.model_view: the probability the model put on the forbidden tokens
    )
    top_unmasked: list[Alternative] | None = (
        None  # with a mask and settings.model_view: the top_k the model wanted before masking
    )
    finish: str | None = None  # on the last step: "stop" (a stop token) or "length" (max_new_tokens)

    def as_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> DecodeStep:
        def alternatives(rows):
            return None if rows is None else [Alternative(int(r["id"]), str(r["token"]), float(r["p"])) for r in rows]

        return cls(
            index=int(data["index"]),
            id=int(data["id"]),
            token=str(data["token"]),
            text=str(data.get("text", "")),
            p=float(data["p"]),
            top=alternatives(data.get("top") or []),
            allowed=None if data.get("allowed") is None else int(data["allowed"]),
            p_unmasked=data.get("p_unmasked"),
            forbidden_mass=data.get("forbidden_mass"),
            top_unmasked=alternatives(data.get("top_unmasked")),
            finish=data.get("finish"),
        )


@dataclass
class Generation:
    """A finished turn: its text, why it stopped, and every step."""

    text: str  # the turn's text, without the stop token
    finish: str  # "stop" or "length"
    steps: list[DecodeStep]
    prompt_tokens: int
    model: ModelInfo
    settings: GenerationSettings
    prompt_text: str | None = None
    seconds: float = 0.0  # wall time of the whole loop
    first_token_seconds: float = 0.0  # from the call to the first step (the prompt's forward pass)
    extra: dict = field(default_factory=dict)  # anything a caller wants recorded with it

    @property
    def output_tokens(self) -> int:
        """Generated ids, the stop token included."""
        return len(self.steps)

    def as_json(self) -> dict:
        return {
            "text": self.text,
            "finish": self.finish,
            "steps": [s.as_json() for s in self.steps],
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "model": self.model.as_json(),
            "settings": self.settings.as_json(),
            "seconds": round(self.seconds, 4),
            "first_token_seconds": round(self.first_token_seconds, 4),
        }


@dataclass
class Turn:
    """What a model wrote for one call."""

    text: str
    finish: str = "stop"  # "stop" at <|im_end|>, or "length" at the token limit
    output_tokens: int | None = None  # generated ids, <|im_end|> included; counted from text if None
    steps: list | None = None  # the live engine's per-token steps, when there are any
