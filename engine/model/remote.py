"""A remote engine: any OpenAI-compatible server (vLLM, SGLang, llama.cpp's server) runs the model instead of this process.

Follows OpenAI's legacy Completions API as vLLM and llama.cpp's server implement it
(`POST /v1/completions` with `logprobs: N`, answering `choices[0].logprobs` with `tokens`,
`token_logprobs` and `top_logprobs`, and `usage.prompt_tokens`). The site renders the exact
prompt itself (engine/core/prompt.py), so it sends that prompt, not chat messages: the
server's own chat template cannot change it. The prompt goes as token ids (vLLM and llama.cpp
take a list of ints) and, where a server refuses ids, as its text with the special tokens
written out. Either way the server's count of prompt tokens must equal ours, or the turn is
refused with both counts (another model, another tokenizer or template).

What a server can return: each chosen token's log-probability and at most 20 alternatives
(vLLM's default `--max-logprobs`). What it cannot: the whole distribution (a mask's forbidden
mass, before/after over the vocabulary).

tool_choice required or a named tool: the grammar this process would apply
(engine/constrain/server_grammar.py) travels with the same raw request, in the field the
server reads: vLLM's `"structured_outputs": {"grammar": EBNF}` (xgrammar's EBNF; its older
`guided_grammar` was removed in v0.12.0), llama.cpp's `"grammar"` (GBNF; llama.cpp's server has no named
tool_choice of its own). Which server it is comes from /v1/models's `owned_by` ("vllm";
"llamacpp" for llama-server, "me" for llama-cpp-python's server). The reply is walked through the
local grammar afterwards, so a server that ignored the field is refused, not shown as
constrained. tool_choice auto stays unconstrained on a server: its grammar starts only at the
model's own `<tool_call>`, which one grammar per request cannot say.

Requests are independent: no lock, so many sessions' turns go to the server at once and it
batches them. Only the standard library (urllib) is used; every failure is one line.

A server is as untrusted as any input: each request has one deadline and a byte cap sized to what
was asked (engine/model/server_http.py), the JSON must have the shape the Completions API gives it,
at most the tokens asked for come back, and log-probabilities that are not numbers at most 0 are
refused with a message.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field

from ..core.generation import Alternative, DecodeStep, Generation, GenerationSettings, ModelInfo
from ..core.prompt import Prompt
from ..core.tokenizer import END_OF_TEXT, IM_END, QwenTokenizer, load_tokenizer
from ..settings import VENDORED_TOKENIZER, load_settings
from .server_http import Deadline, RemoteError, call_server

MAX_TOP_LOGPROBS = 20  # vLLM's default --max-logprobs; OpenAI's own cap is 5 on completions
MODELS_TIMEOUT = 5.0  # seconds for the model list when connecting
REPLY_BASE_BYTES = 256 * 1024  # a completion's reply: this, plus ENTRY_BYTES per token and alternative asked for
ENTRY_BYTES = 512  # a token or an alternative with its log-probability (the longest Qwen3 token, escaped, and more)
REPLY_BYTES = 64 * 1024 * 1024  # and never more than this, whatever was asked
CANNOT_RETURN = (
    "a server returns each chosen token's probability and at most 20 alternatives, not the whole "
    "distribution: the mask's forbidden mass and the before/after over the vocabulary need the model here"
)
# what /v1/models's owned_by says about the server, and so which field carries a grammar
SERVER_KINDS = {"vllm": "vLLM", "llamacpp": "llama.cpp", "me": "llama.cpp"}
GRAMMAR_FIELDS = {"vLLM": ("xgrammar", "structured_outputs.grammar"), "llama.cpp": ("gbnf", "grammar")}
NO_GRAMMAR_FIELD = (
    "tool_choice {choice!r} is a grammar, and the server at {url} (its /v1/models says owned_by {owned!r}) "
    "is neither vLLM nor llama.cpp's server, so this site does not know which field of a completions "
    "request would carry it: vLLM takes it as structured_outputs.grammar, llama.cpp's server (which has "
    "no named tool_choice) as a GBNF grammar. Use tool_choice auto or none with this server"
)
AUTO_ON_SERVER = (
    "tool_choice auto constrains a call only from the model's own <tool_call> on; a server applies one grammar "
    "to the whole reply, so under auto a server's reply is unconstrained. Choose required or a named tool to "
    "send the grammar to the server, or decode here with the model in this process"
)


class ServerCannot(RemoteError):
    """What no server returns by design (the whole distribution, this process's grammar), as opposed to a failure."""


@dataclass
class RemoteEngine:
    """An OpenAI-compatible server's model, with the Qwen3 tokenizer that renders its prompts (no lock: requests are concurrent)."""

    url: str  # the API's base, ending in /v1
    model: str  # the server's model id, as its /v1/models lists it
    tokenizer: QwenTokenizer
    info: ModelInfo
    timeout: float = 120.0  # seconds a request may wait for the server's answer
    prompt_as: list = field(default_factory=lambda: ["ids"])  # "ids", or "text" once the server refused ids
    owned_by: str | None = None  # what /v1/models says of the model: "vllm", "llamacpp", "me" (llama-cpp-python), ...

    @property
    def server(self) -> str | None:
        """ "vLLM" or "llama.cpp" (the servers whose grammar field this site knows), else None."""
        return SERVER_KINDS.get(self.owned_by or "")


def refuse_remote(engine) -> None:
    """RemoteError saying what a server cannot return, for a panel that needs the whole distribution."""
    if isinstance(engine, RemoteEngine):
        raise ServerCannot(f"{engine.info.label()}: {CANNOT_RETURN}")


def normalize_url(url: str) -> str:
    """The API base: 'http://host:8000' and 'http://host:8000/v1/' both become 'http://host:8000/v1'."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise RemoteError(
            f"the engine URL must start with http:// or https://, not {url!r} (e.g. http://gpu-box:8000/v1)"
        )
    return url if url.endswith("/v1") else url + "/v1"


def reply_bytes(settings: GenerationSettings) -> int:
    """The most bytes a completion's reply may take: enough for every token asked for, each with its alternatives."""
    entries = settings.max_new_tokens * (max(1, min(settings.top_k, MAX_TOP_LOGPROBS)) + 1)
    return min(REPLY_BASE_BYTES + entries * ENTRY_BYTES, REPLY_BYTES)


def connect(url: str | None = None, model: str | None = None, timeout: float | None = None) -> RemoteEngine:
    """The server's model at `url` (default QWEN_ENGINE_URL): its /v1/models is asked which model it serves.

    `model` picks one when the server serves several; a name it does not serve is refused with the names it does."""
    url = normalize_url(url or load_settings().engine_url or "")
    listed = call_server(url, "/models", None, MODELS_TIMEOUT)
    data = listed.get("data")
    rows = {
        row["id"]: row
        for row in (data if isinstance(data, list) else [])
        if isinstance(row, dict) and isinstance(row.get("id"), str)
    }
    names = list(rows)
    if not names:
        raise RemoteError(f"the server at {url} lists no model at /models")
    if model and model not in names:
        raise RemoteError(f"the server at {url} serves {', '.join(names)}, not {model}")
    name = model or names[0]
    info = ModelInfo(
        name=name,
        source="server",
        path=None,
        revision=None,
        dtype="as the server runs it",
        device="server",
        parameters=0,
        engine_url=url,
    )
    owned = rows[name].get("owned_by")
    return RemoteEngine(
        url,
        name,
        load_tokenizer(str(VENDORED_TOKENIZER)),
        info,
        timeout if timeout is not None else load_settings().engine_timeout,
        owned_by=owned if isinstance(owned, str) else None,
    )


def grammar_problem(engine: RemoteEngine, tool_choice) -> str | None:
    """Why this server cannot apply `tool_choice`'s grammar, in words for a panel; None when it can (or none is needed)."""
    choice = tool_choice.get("function", {}).get("name") if isinstance(tool_choice, dict) else tool_choice
    if choice in (None, "none"):
        return None
    if choice == "auto":
        return AUTO_ON_SERVER
    if engine.server is None:
        return NO_GRAMMAR_FIELD.format(choice=choice, url=engine.url, owned=engine.owned_by)
    return None


def server_grammar(engine: RemoteEngine, constraint):
    """The ServerGrammar a required or named constraint becomes for this server; ServerCannot where it has none."""
    from ..constrain.server_grammar import build_server_grammar

    choice = constraint.tool if constraint.mode == "named" else constraint.mode
    problem = grammar_problem(engine, choice)
    if problem:
        raise ServerCannot(problem)
    dialect, _ = GRAMMAR_FIELDS[engine.server]
    return build_server_grammar(constraint.tools, choice, dialect, bool(constraint.thinking))


def completion_body(
    engine: RemoteEngine, prompt: Prompt, settings: GenerationSettings, as_ids: bool, grammar=None
) -> dict:
    """The /v1/completions request for `prompt` under `settings`; `grammar` (a ServerGrammar) in the field its dialect's
    server reads."""
    body = {
        "model": engine.model,
        "prompt": prompt.ids if as_ids else prompt.text,
        "max_tokens": settings.max_new_tokens,
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "seed": settings.seed,
        # at least 1: the chosen token's own probability comes with its alternatives
        "logprobs": max(1, min(settings.top_k, MAX_TOP_LOGPROBS)),
        "stop": [engine.tokenizer.token_text(IM_END), engine.tokenizer.token_text(END_OF_TEXT)],
        "stream": False,
    }
    if settings.sample_top_k:
        body["top_k"] = settings.sample_top_k  # vLLM's and llama.cpp's sampling cut, as the local engine applies it
    if grammar is not None and grammar.dialect == "xgrammar":
        body["structured_outputs"] = {"grammar": grammar.text}
    elif grammar is not None:
        body["grammar"] = grammar.text
    return body


def token_id(tokenizer: QwenTokenizer, text: str) -> int:
    """The id of a token the server names by its text; -1 when that text is not one token of ours."""
    ids = tokenizer.encode(text)
    return ids[0] if len(ids) == 1 else -1


def _probability(engine: RemoteEngine, logprob, where: str) -> float:
    """exp(logprob) for a server's log-probability; RemoteError for one that is not a number at most 0."""
    if isinstance(logprob, bool) or not isinstance(logprob, int | float) or not math.isfinite(logprob):
        raise RemoteError(
            f"the server at {engine.url} sent {str(logprob)[:40]!r} as the log-probability of {where}: "
            "not a number this site can show; check the server"
        )
    if logprob > 1e-6:
        raise RemoteError(
            f"the server at {engine.url} sent {logprob:.4g} as the log-probability of {where}: above 0, "
            "which is a probability over 1; check the server"
        )
    return min(math.exp(logprob), 1.0)


def read_steps(engine: RemoteEngine, choice: dict, settings: GenerationSettings) -> list[DecodeStep]:
    """The server's logprobs as this engine's steps: token, p, top (at most 20), no mask.

    RemoteError for a reply of another shape, more tokens than asked for, or a log-probability that is not one."""
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict) or not logprobs.get("tokens"):
        raise RemoteError(
            f"the server at {engine.url} returned no logprobs: it cannot show each token's probability "
            "(vLLM returns them up to --max-logprobs; check the server supports `logprobs` on /v1/completions)"
        )
    tokens, chosen_logprobs = logprobs["tokens"], logprobs.get("token_logprobs")
    tops = logprobs.get("top_logprobs") or [None] * len(tokens) if isinstance(tokens, list) else None
    if not (isinstance(tokens, list) and isinstance(chosen_logprobs, list) and isinstance(tops, list)):
        raise RemoteError(
            f"the server at {engine.url} sent logprobs whose tokens, token_logprobs and top_logprobs are not lists, "
            "as the Completions API gives them; check the server"
        )
    if len(tokens) > settings.max_new_tokens:
        raise RemoteError(
            f"the server at {engine.url} returned {len(tokens):,} tokens for max_tokens {settings.max_new_tokens:,}: "
            "it did not stop where asked, so its reply is not shown; check the server"
        )
    if not len(tokens) == len(chosen_logprobs) == len(tops):
        raise RemoteError(
            f"the server at {engine.url} returned {len(tokens)} tokens with {len(chosen_logprobs)} log-probabilities "
            f"and {len(tops)} rows of alternatives: they must come one per token; check the server"
        )
    tok = engine.tokenizer
    steps = []
    for index, (text, logprob, top) in enumerate(zip(tokens, chosen_logprobs, tops, strict=True)):
        if not isinstance(text, str) or not (top is None or isinstance(top, dict)):
            raise RemoteError(
                f"the server at {engine.url} sent token {index + 1} as a {type(text).__name__} with alternatives "
                f"as a {type(top).__name__}: not the Completions API's shape; check the server"
            )
        chosen = token_id(tok, text)
        p = _probability(engine, logprob, f"token {index + 1}") if logprob is not None else 0.0
        rows = [(t, _probability(engine, lp, f"an alternative at token {index + 1}")) for t, lp in (top or {}).items()]
        alternatives = sorted(rows, key=lambda row: -row[1])[: settings.top_k]
        steps.append(
            DecodeStep(
                index=index,
                id=chosen,
                token=tok.token_text(chosen) if chosen >= 0 else text,
                text=text,
                p=p,
                top=[
                    Alternative(
                        token_id(tok, t), tok.token_text(token_id(tok, t)) if token_id(tok, t) >= 0 else t, alt_p
                    )
                    for t, alt_p in alternatives
                ],
                allowed=None,
            )
        )
    if steps:
        finish = "length" if choice.get("finish_reason") == "length" else "stop"
        last = steps[-1]
        steps[-1] = DecodeStep(**{**last.__dict__, "finish": finish})
    return steps


def first_token_remote(engine: RemoteEngine, prompt_ids: list[int], watch: tuple[int, ...], top_k: int):
    """(P of each watched id, the top alternatives) of the reply's first token, from one one-token request with the
    server's 20 alternatives. A watched id outside those 20 is refused with the bound a server can give."""
    tok = engine.tokenizer
    prompt = Prompt(
        style="native", text=tok.decode(prompt_ids), ids=list(prompt_ids), pieces=[], spans=[], token_spans=[]
    )
    settings = GenerationSettings(max_new_tokens=1, temperature=0.0, top_k=MAX_TOP_LOGPROBS, reuse_prefix=False)
    turn = generate_remote(engine, prompt, settings)
    if not turn.steps:
        raise RemoteError(f"the server at {engine.url} returned no first token")
    step = turn.steps[0]
    known = {a.id: a.p for a in step.top if a.id >= 0}
    known.setdefault(step.id, step.p)
    missing = [i for i in watch if i not in known]
    if missing:
        floor = min(a.p for a in step.top) if step.top else step.p
        raise ServerCannot(
            f"{tok.token_text(missing[0])} is not among the server's {len(step.top)} most likely first tokens, "
            f"so its probability is below {floor * 100:.3g}%; a server returns no more of the distribution than that"
        )
    return {i: known[i] for i in watch}, step.top[:top_k]


def refuses_ids(message: str) -> bool:
    """Whether a server's error refuses the prompt as token ids: an HTTP 4xx, or llama-cpp-python's HTTP 500 whose
    validation says the prompt should be a string (its request model takes text only)."""
    return "HTTP 4" in message or ("HTTP 500" in message and "'prompt'" in message and "string" in message)


def generate_remote(
    engine: RemoteEngine, prompt: Prompt, settings: GenerationSettings | None = None, constraint=None, on_step=None
) -> Generation:
    """One turn for `prompt` from the server, as the same Generation the local decode loop returns."""
    settings = settings or GenerationSettings()
    settings.check()
    grammar = None
    if constraint is not None and constraint.mode == "auto":
        raise ServerCannot(AUTO_ON_SERVER)
    if constraint is not None and constraint.state != "unconstrained":
        grammar = server_grammar(engine, constraint)
    started = time.perf_counter()
    # what this request sends: another session's request may switch the engine to text meanwhile
    as_ids = engine.prompt_as[0] == "ids"
    # one deadline for the turn, the retry as text included
    deadline, most = Deadline(engine.timeout), reply_bytes(settings)
    try:
        answer = call_server(
            engine.url,
            "/completions",
            completion_body(engine, prompt, settings, as_ids, grammar),
            engine.timeout,
            most,
            deadline,
        )
    except RemoteError as error:
        if not as_ids or not refuses_ids(str(error)):
            deadline.cancel()
            raise
        # a server that takes no token ids: the same prompt as text, special tokens written out
        engine.prompt_as[0] = "text"
        try:
            answer = call_server(
                engine.url,
                "/completions",
                completion_body(engine, prompt, settings, False, grammar),
                engine.timeout,
                most,
                deadline,
            )
        finally:
            deadline.cancel()
    deadline.cancel()
    seconds = time.perf_counter() - started
    choices = answer.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise RemoteError(f"the server at {engine.url} answered with no choices: {json.dumps(answer)[:200]}")
    usage = answer.get("usage")
    served = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if served is not None and served != prompt.count:
        raise RemoteError(
            f"the server read the prompt as {served} tokens and this site as {prompt.count}: it serves another "
            f"model or tokenizer ({engine.model}); point QWEN_ENGINE_URL at a Qwen3 server"
        )
    steps = read_steps(engine, choices[0], settings)
    text = "".join(s.text for s in steps)
    extra = {"engine_url": engine.url, "prompt_as": engine.prompt_as[0]}
    if grammar is not None:
        check_reply(engine, constraint, grammar, text)
        extra["grammar"] = {
            "ran_on": "server",
            "server": engine.server,
            "dialect": grammar.dialect,
            "field": GRAMMAR_FIELDS[engine.server][1],
            "tool_choice": grammar.tool_choice,
        }
    elif constraint is not None:
        extra["grammar"] = {"ran_on": None, "reason": constraint.unconstrained_reason}
    for step in steps:
        if on_step is not None:
            on_step(step)
    return Generation(
        text=text,
        finish=steps[-1].finish if steps else "stop",
        steps=steps,
        prompt_tokens=prompt.count,
        model=engine.info,
        settings=settings,
        prompt_text=prompt.text,
        seconds=seconds,
        first_token_seconds=seconds,
        extra=extra,
    )


def check_reply(engine: RemoteEngine, constraint, grammar, text: str) -> None:
    """RemoteError unless the server's reply stays inside the local grammar (a server that ignored the grammar field
    would send free text, which must not be shown as constrained). A reply cut off by max_tokens is a prefix: it passes."""
    from ..constrain.masks import walk

    steps = walk(constraint.tools, text, grammar.tool_choice, bool(constraint.thinking))
    if steps and not steps[-1].ok:
        bad = steps[-1]
        field_name = GRAMMAR_FIELDS[engine.server][1]
        raise RemoteError(
            f"the server at {engine.url} sent a reply that leaves tool_choice {grammar.tool_choice!r}'s grammar "
            f"at token {bad.index + 1} ({bad.token!r}), so it did not apply the grammar sent as {field_name} "
            "(a vLLM old enough to read only guided_grammar ignores structured_outputs: upgrade the server)"
        )
