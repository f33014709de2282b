"""The site's plotly charts: one layout every chart shares (readable at the back of a room), the ledger of a
run's calls, and lesson 6's count of allowed tokens; colours from ui/palette.py."""

from __future__ import annotations

import plotly.graph_objects as go

from ui.palette import fill, ink, legend, neutral


def chart_layout(figure, height: int, title: str | None = None, **layout) -> None:
    """The layout every chart shares (readable at the back of a room, no wasted margin), then draw it."""
    figure.update_layout(
        title=title,
        height=height,
        font={"size": 15},
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        **layout,
    )
    # the axes' labels in the page's text colour: Streamlit's chart theme greys them (about 3.7:1 on white),
    # below the 4.5:1 a label needs; a page's own size for them stays
    for axes in (figure.update_xaxes, figure.update_yaxes):
        axes(tickfont={"color": neutral("text")}, title_font={"color": neutral("text")})
    # and a bar's figure written beside it (a thin bar's), where the theme's grey would be as faint
    figure.update_traces(outsidetextfont={"color": neutral("text")}, selector={"type": "bar"})


def ledger_figure(calls, height: int):
    """Grouped bars of each call's input and output tokens (anything with input_tokens and output_tokens)."""
    figure = go.Figure()
    xs = list(range(1, len(calls) + 1))
    # input has no verdict (the prompt read again); output is what the model wrote
    figure.add_bar(x=xs, y=[c.input_tokens for c in calls], name="input (read)", marker_color=ink("neutral"))
    figure.add_bar(
        x=xs, y=[c.output_tokens for c in calls], name="output (written by the model)", marker_color=ink("written")
    )
    chart_layout(
        figure,
        height,
        barmode="group",
        xaxis={"title": "call", "dtick": 1},
        yaxis={"title": "tokens"},
        legend={"orientation": "h", "y": 1.12},
    )
    return figure


def allowed_figure(steps, number: int, vocab: int, height: int):
    """Lesson 6: how many tokens the grammar allowed before each token of a reply (`steps`: masks.walk's), the one
    the step view is at (`number`, 1-based) in the colour of now."""
    figure = go.Figure(
        go.Bar(
            x=list(range(1, len(steps) + 1)),
            y=[vocab if s.allowed is None else s.allowed for s in steps],
            marker_color=[
                ink("now") if n == number else (fill("neutral") if s.allowed is None else ink("neutral"))
                for n, s in enumerate(steps, 1)
            ],
            hovertext=[s.token for s in steps],
        )
    )
    # fixed axes: powers of ten from 1 to the whole vocabulary, and room for at least 12 bars (one bar must not fill the chart)
    chart_layout(
        figure,
        height,
        yaxis={
            "type": "log",
            "title": "tokens allowed",
            "range": [-0.4, 5.6],
            "tickvals": [10**k for k in range(6)],
            "ticktext": [f"{10**k:,}" for k in range(6)],
        },
        xaxis={
            "title": "token of the reply",
            "dtick": 1 if len(steps) <= 40 else 5,
            "range": [0.4, max(len(steps), 12) + 0.6],
        },
        bargap=0.25,
    )
    return figure


def allowed_legend() -> None:
    """What allowed_figure's colours mean."""
    legend(
        "now",
        "neutral",
        "neutral-fill",
        words={
            "now": "the token the step-through is at",
            "neutral": "tokens the grammar allows",
            "neutral-fill": "nothing restricted: every token allowed",
        },
    )
