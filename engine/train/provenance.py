"""The shipped model's PROVENANCE.md, written from what its run recorded (training.json) and measured (heldout.json).

Nothing in it is typed by hand: the settings, the time, the loss curve and the held-out figures are
the run's own, so a retrained model's provenance is true of it.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path


def processor() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one) and how many cores it has."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} cores"


def share(row) -> str:
    right, of = row
    return f"{right} of {of} ({100 * right / of:.0f}%)" if of else "none asked"


def curve_rows(curve: list[dict], every: int) -> list[str]:
    rows = [p for i, p in enumerate(curve) if i % every == 0 or i == len(curve) - 1]
    return [
        f"| {p['step']:,} | {p['seconds']:,.0f} | {p['loss']:.3f} | {p['chat_loss']:.3f} | {p['drill_loss']:.3f} |"
        for p in rows
    ]


def copy_drill_line(config: dict) -> list[str]:
    if not config.get("copy_share"):
        return []
    return [
        f"- About {config['copy_share']:.0%} of the samples are a copy drill: plain lines of a count question and its "
        "call, in either style, the loss on the call's argument values only. The conversations ask the same behind a "
        "system prompt of tool schemas (a count conversation is about 290 tokens, a drill's line about 40), so the "
        "drill gives the copying most of its examples."
    ]


def pieces_line(config: dict) -> list[str]:
    lines = []
    if config.get("pieces_share"):
        lines.append(
            f"- About {config['pieces_share']:.0%} of the samples are a pieces drill (engine/train/drills.py): a short "
            "sequence in which a made-up word of one to four of the vocabulary's letter pieces stands in a count "
            "question among filler words, then is written again as a call's argument, the loss on the copy alone. "
            "No such word can be learned by heart: the drill teaches the copy itself."
        )
    if config.get("untooled_share"):
        lines.append(
            f"- {config['untooled_share']:.0%} of the conversations offer no tool: count questions are answered with "
            "a guess in words, tasks declined, facts given, so that a call needs a tool in the prompt."
        )
    return lines


def spelled_line(config: dict) -> list[str]:
    if not config.get("spelled"):
        return []
    return [
        "- Spelled embedding (engine/train/spelled.py): while it trained, each word token's row (a space and 2-14 "
        'letters, such as " strawberry") was a free part plus the rows of the pieces that spell it ("str", "aw", '
        '"berry", then an end marker), each scaled by a learned weight for its place, so a word\'s row spells it by '
        "construction, also for a word no conversation names. At the end the built rows were written into the "
        "embedding: the saved model is a plain Qwen3."
    ]


def scoring_line(config: dict) -> list[str]:
    if not config.get("sampled_rows"):
        return ["- Each conversation token's loss was a softmax over all 151,936 rows of the output layer."]
    return [
        "- Each conversation token's loss was a softmax over the drills' candidate tokens, the batch's own targets "
        f"and {config['sampled_rows']:,} other rows drawn anew at each step, their logits raised to stand for the "
        "rows not drawn (an estimate of the softmax over all 151,936 rows, at a fraction of its cost). The output "
        "layer had been most of a step's time."
    ]


def schedule_words(config: dict) -> str:
    if "decay_steps" not in config:
        return f"lr {config['lr']}, warm-up {config['warmup']}, cosine to {config['min_lr_ratio']}×"
    start = f"warm-started from {config['init_from']}'s weights, " if config.get("init_from") else ""
    return (
        f"{start}lr {config['lr']}: warm-up {config['warmup']} steps, flat, then a cosine decay over the last "
        f"{config['decay_steps']} steps to {config['min_lr_ratio']}×"
    )


def time_lines(run: dict) -> list[str]:
    """How long the run took: one line, or one per part for a run trained in parts (its CPU time over all of them)."""
    parts = run.get("parts") or []
    if len(parts) <= 1:
        return [f"- Time: {run['seconds'] / 60:.0f} minutes on {processor()}."]
    cpu = sum(part["cpu_seconds"] for part in parts)
    lines = [
        f"- Time: {run['seconds'] / 60:.0f} minutes in {len(parts)} parts ({cpu / 3600:.1f} CPU-hours), resumed from "
        "checkpoints, bit for bit:"
    ]
    for part in parts:
        lines.append(
            f"  - steps {part['from']:,}–{part['to']:,}: {part['seconds'] / 60:.0f} minutes, "
            f"{part['cpu_seconds'] / 60:.0f} CPU-minutes on {part['machine']}, {part['threads']} thread(s)"
        )
    return lines


EXTRA_FIGURES = (
    ("first_piece", "count_letter: the word's first piece right"),
    ("count_training_phrasings", "held-out words in training phrasings: exactly the right call"),
    ("no_tools", "no tool offered: answered in words, no call"),
    ("lesson_calls", "the lessons' own questions: exactly their call"),
)


def write_provenance(folder: Path, command: str) -> Path:
    """Write PROVENANCE.md into `folder` from its training.json and heldout.json."""
    run = json.loads((folder / "training.json").read_text(encoding="utf-8"))
    held = json.loads((folder / "heldout.json").read_text(encoding="utf-8"))
    config = run["config"]
    size = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
    lines = [
        "# The shipped model",
        "",
        f"A {run['parameters'] / 1e6:.1f} M-parameter model trained by this site to write these lessons' calls. "
        "It is not Qwen3: it has Qwen3's architecture (Qwen3ForCausalLM) and Qwen3's tokenizer, vocabulary unchanged, "
        f"at a small size: hidden {config['hidden']}, {config['layers']} layers, {config['heads']} attention heads "
        f"({config['kv_heads']} key/value heads of {config['head_dim']}), MLP {config['intermediate']}, the embedding "
        f"of 151,936 rows tied to the output layer. Stored in bfloat16: {size / 1e6:.1f} MB.",
        "",
        "## How it was trained",
        "",
        f"- Command: `{command}` (engine/train/training.py, engine/train/data.py); seed {config['seed']}, "
        f"{run['steps']:,} steps of AdamW ({schedule_words(config)}, weight decay {config['weight_decay']}), "
        f"batches of at most {config['batch_tokens']:,} "
        f"padded tokens, {config['threads']} CPU thread{'s' if config['threads'] != 1 else ''}, autocast {run['autocast']}.",
        *time_lines(run),
        "- Data: synthetic conversations rendered by the site's own prompt renderer (Qwen3's chat template, thinking "
        "off), in both styles (native `<tool_call>` JSON and ReAct lines), with the lessons' tool sets (the strawberry "
        "pair, the harness's five, the coding agent's twelve, lessons/tools/everyday.json) and tool sets drawn from "
        "them: questions a tool helps with (a call whose argument values are copied from the question"
        + (
            f"; {config['composed_share']:.0%} of the count questions put together from parts, so the word sits "
            "first, in the middle or last, bare or quoted, the rest in fourteen fixed phrasings"
            if config.get("composed_share")
            else ""
        )
        + "), questions no "
        "tool helps with (a short answer in words), and after a tool's result an answer that uses it. The loss is on the "
        "assistant's turn only. "
        f"About {config['drill_share']:.0%} of the samples are a spelling drill (plain ' word → \"word\"' lines over "
        'the vocabulary\'s common words): inside a call a word is written without its leading space, so " strawberry" '
        '(one token) must come out as "str", "aw", "berry", and the drill is where the model learns spellings.',
        *copy_drill_line(config),
        *pieces_line(config),
        *spelled_line(config),
        *scoring_line(config),
        "- Deterministic: the same command on the same machine and thread count gives the same weights.",
        "",
        "## Loss (cross-entropy per target token, averaged over the steps before each row)",
        "",
        f"| step | seconds | all | conversations | {'drills (spelling, copying)' if config.get('copy_share') else 'spelling drill'} |",
        "| ---: | ---: | ---: | ---: | ---: |",
        *curve_rows(run["curve"], max(1, len(run["curve"]) // 12)),
        "",
        "## What it does on prompts it never saw",
        "",
        "Held-out prompts (lessons/builtin-training.json: other words, phrasings, folders, cities and questions; "
        "no training conversation names them), generated greedily through the site's own path and parsed as the "
        "harness parses them (engine/train/heldout.py):",
        "",
        "| | native | ReAct |",
        "| --- | --- | --- |",
    ]
    for key, label in (
        ("count_exact", "count_letter: exactly the right call"),
        ("tool_exact", "other tools: exactly the right call"),
        ("well_formed", "turns that called: every block well-formed"),
        ("no_call", "no tool helps: answered without a call"),
        *((key, label) for key, label in EXTRA_FIGURES if key in held),
    ):
        lines.append(
            f"| {label} | {share(held[key].get('native', [0, 0]))} | {share(held[key].get('react', [0, 0]))} |"
        )
    right, of = held["count_exact"].get("native", [0, 0])
    if of and right < of / 2:
        lines += [
            "",
            f"So it writes the format, and the lessons' own calls, but on {of - right} of {of} count_letter prompts it "
            "never saw it does not write the question's word into the call exactly: copying a word that no "
            "conversation named is what it has not learned well. Its panels are real for what it is; for a model "
            "that does, load Qwen3.",
        ]
    answered, asked = held["no_call"].get("native", [0, 0])
    if asked and answered < asked / 2:
        lines += [
            "",
            f"On {asked - answered} of {asked} held-out questions that no tool helps with it calls a tool anyway; "
            'on the lessons\' own ("What is the capital of France?") it answers in words.',
        ]
    lines += [
        "",
        "Its mistakes are real and kept (a wrong word or letter, a call where none was needed, a malformed block): "
        "lesson 6 and the experiments can show a grammar remove the malformed ones. The held-out words' spellings may "
        "be in the spelling drill, as a large model's are in its pretraining; the conversations never name them.",
        "",
        "Some of its mistakes on held-out prompts:",
        "",
    ]
    for mistake in held["mistakes"][:8]:
        lines.append(f"- {mistake['style']}: {json.dumps(mistake['question'])} → {json.dumps(mistake['text'][:160])}")
    path = folder / "PROVENANCE.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
