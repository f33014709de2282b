"""Runs as the step view takes them: the engine's steps (a generation, a run of the harness, a grammar walk)
turned into ViewSteps. Figures are the engine's; only their wording happens here."""

from __future__ import annotations

import html

from engine.core.tokenizer import TOOL_CALL
from engine.model.results import MaskRow
from ui.draw import call_words, checks_html, inline_markdown, show_token, turn_html
from ui.numbers import format_allowed, format_percent
from ui.views.step_view import Bar, Bars, Sample, StepRun, ViewStep

# what each colour of a strip means, in words for its legend (ui/palette.py has the colours)
TOKEN_WORDS = {"failed": "refused by the grammar"}
CALL_WORDS = {
    "passed": "passed, ran",
    "failed": "a check failed: its error goes back",
    "neutral": "the answer: no call",
}


def token_run(rows, is_special, start: int = 1, marks=(), caption: str = "", allowed=None, vocab: int = 0) -> StepRun:
    """Lesson 3: rows of (id, token, p, top) from a generation, a trace or a pack (p None: no model made them).

    `allowed` (with no model): at each row, how many of `vocab` tokens the tools' grammar allows there
    (engine/constrain/masks.py walk; None where nothing is restricted), shown under each chip as on lesson 6,
    with the probability marked as needing a model."""
    steps = []
    for n, (token_id, token, p, top) in enumerate(rows):
        shown = show_token(token)
        facts, bars = [], []
        sub = str(token_id)
        if p is None and allowed is not None:
            sub = format_allowed(allowed[n], vocab)
            facts.append((f"Allowed by the tools' grammar before token {n + 1}", f"{sub} of {vocab:,}"))
            facts.append(("Probability", "needs a model"))
        if p is not None:
            facts.append(("Its probability", format_percent(p)))
            bars.append(
                Bars(
                    f"Top {len(top)} candidates",
                    [Bar(show_token(a.token) or "(empty)", a.p, a.id == token_id) for a in top],
                )
            )
        steps.append(
            ViewStep(
                chip=shown,
                sub=sub,
                kind="sp" if is_special(token_id) else "",
                title=shown or "(empty)",
                caption=f"id {token_id}" + (f" · {caption}" if caption and p is not None else ""),
                facts=facts,
                bars=bars,
            )
        )
    return StepRun("Token", steps, start=start, marks=list(marks), legend_words=TOKEN_WORDS)


def mask_run(
    walked,
    views,
    start: int,
    vocab: int,
    is_special,
    allowed_words,
    forbidden: str,
    recorded: list[MaskRow] | None = None,
    mode: str = "auto",
) -> StepRun:
    """Lesson 6: each token of a reply with the mask it met (`views[n]`: inspect_mask's allowed, sample and reason
    before token n+1); `recorded`: the model's rows (from the model or a pack), drawn as before/after bars."""
    rows = {row.number: row for row in recorded or []}
    steps = []
    for n, (token, view) in enumerate(zip(walked, views, strict=True), start=1):
        shown = show_token(token.token)
        # under tool_choice none a <tool_call> is allowed as plain text: no call is read from it
        allowed = allowed_words(token.allowed)
        chip_sub = "all · no call" if mode == "none" and token.id == TOOL_CALL else allowed
        sample = None
        if token.allowed is not None and view["sample"]:
            more = (
                f" (the first {len(view['sample'])} of {token.allowed:,})"
                if token.allowed > len(view["sample"])
                else ""
            )
            sample = Sample(f"The allowed tokens{more}:", [show_token(t) for t in view["sample"]])
        row = rows.get(n)
        bars = []
        if row is not None and row.allowed is not None:
            bars = [
                Bars(title, [Bar(show_token(c.token) or "∅", c.p) for c in side])
                for title, side in (
                    ("before: the model's own top 8", row.top_before),
                    ("after: the allowed only, out of 100%", row.top_after),
                )
            ]
        facts = [(f"Allowed before token {n}", f"{allowed} of {vocab:,}")]
        if row is not None and row.forbidden_mass is not None:
            facts.append(("Probability the model put on forbidden tokens", format_percent(row.forbidden_mass)))
        steps.append(
            ViewStep(
                chip=shown,
                sub="✗" if not token.ok else chip_sub,
                kind="bad" if not token.ok else ("sp" if is_special(token.id) else ""),
                title=shown or "∅",
                caption=view["reason"],
                facts=facts,
                bad="" if token.ok else forbidden,
                bars=bars,
                sample=sample,
                text="Nothing is restricted at this step: every token may come next." if token.allowed is None else "",
            )
        )
    return StepRun("Token", steps, start=start, legend_words=TOKEN_WORDS)


def harness_run(run, texts: dict, returned, start: int, compact: bool | None = None) -> StepRun:
    """Lesson 4: each call of a harness run with the reply, each block's checks, the tools run and what goes back.

    `texts` holds the lesson's words for each part; `returned(n)` is loop.returned_text for call n.
    `compact` (projected): the parts' headings without their paragraphs, the reply and what goes back on
    the left, the checks and the tools run on the right, so a call fits one screen with the lesson's title;
    by default, compact when the page is projected.
    """
    if compact is None:
        from ui.sections import projected

        compact = projected()
    steps, so_far = [], 0
    part = (lambda title, _words: f'<h4 class="sv-h">{html.escape(title)}</h4>') if compact else _part
    for n, call in enumerate(run.calls, start=1):
        parsed, turn_text = call.parse, run.messages[call.message_index]["content"]
        so_far += call.cost.input_tokens
        parts = [
            part("The model wrote", texts["the turn"]),
            turn_html(turn_text, parsed.blocks, dropped=parsed.returned_as_text),
        ]
        if call.turn.finish == "length":
            parts.append(f'<div class="sv-bad">{inline_markdown(texts["cut off"])}</div>')
        if parsed.returned_as_text:
            parts.append(f'<div class="sv-bad">{inline_markdown(texts["returned as text"])}</div>')
        elif parsed.final:
            parts.append(f'<div class="sv-ok">{inline_markdown(texts["final turn"])}</div>')
        checks, back = [], []
        if parsed.blocks:
            checks.append(
                part("The checks", texts["the checks (dropped)" if parsed.returned_as_text else "the checks"])
            )
            for block in parsed.blocks:
                if len(parsed.blocks) > 1:
                    checks.append(f"<p><b>Block {block.index + 1}</b></p>")
                checks.append(
                    checks_html(block, parsed.style, errors=not (compact and call.results))
                )  # (compact: the error is in what goes back)
        if call.results and not compact:  # (compact: the step's title names the tools run)
            checks.append(part("The tool runs", texts["the tool runs"]))
            checks.append(
                "".join(
                    inline_markdown(
                        f"Block {r.block + 1}: ran `{call_words(r.name, r.arguments)}`"
                        if r.ok
                        else f"Block {r.block + 1}: not run; its error goes back instead"
                    )
                    for r in call.results
                )
            )
        if call.results:
            back_text, back_tokens = returned(n)
            back.append(part("What goes back to the model", texts["what goes back"]))
            back.append(
                f'<pre class="sv-pre">{html.escape(back_text)}</pre>'
                f'<div class="sv-caption">{back_tokens} tokens, read again by every later call of this run</div>'
            )
        if compact:
            parts = [f'<div class="sv-cols"><div>{"".join(parts + back)}</div><div>{"".join(checks)}</div></div>']
        else:
            parts += checks + back
        ran = [r.name for r in call.results if r.ok]
        verdict = (
            "✗"
            if any(not r.ok for r in call.results) or parsed.returned_as_text
            else ("answer" if parsed.final else "✓")
        )
        steps.append(
            ViewStep(
                chip=f"call {n}",
                sub=verdict,
                kind={"✗": "bad", "✓": "ok"}.get(verdict, ""),
                title=", ".join(ran) or ("the answer" if parsed.final else "no tool run"),
                facts=[
                    ("Input tokens", f"{call.cost.input_tokens:,}"),
                    ("Output tokens", f"{call.cost.output_tokens:,}"),
                    ("Input tokens so far", f"{so_far:,}"),
                ],
                html="".join(parts),
            )
        )
    return StepRun("Call", steps, start=start, wide=True, dim=False, legend_words=CALL_WORDS)


def _part(title: str, words: str) -> str:
    return f'<h4 class="sv-h">{html.escape(title)}</h4>{inline_markdown(words)}'


def walk_run(walked, at: int | None, vocab: int, refused: str = "", sample: Sample | None = None) -> StepRun:
    """The gallery: a failing turn walked through lesson 6's grammar, opening at the token discussed (`at`, 0-based)."""
    steps = []
    for n, token in enumerate(walked):
        shown = show_token(token.token)
        allowed = "all" if token.allowed is None else f"{token.allowed:,}"
        steps.append(
            ViewStep(
                chip=shown,
                sub="✗" if not token.ok else allowed,
                kind="bad" if not token.ok else "",
                title=shown or "∅",
                facts=[(f"Allowed before token {n + 1}", f"{allowed} of {vocab:,}")],
                bad="" if token.ok else refused,
                sample=sample if n == at else None,
            )
        )
    return StepRun("Token", steps, start=1 if at is None else at + 1, dim=False, legend_words=TOKEN_WORDS)
