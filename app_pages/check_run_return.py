"""Lesson 4: check it, run it, return it: the block the parser found, each check, the tool run, the result going back."""

import streamlit as st

from engine.core.call_formats import get_format, parse_turn
from engine.core.parse import POLICIES
from engine.harness.loop import list_scenarios, load_scenario, returned_text, run_scenario
from engine.teaching.cost import malformed_cost_of
from ui.chart_words import a_bad_parts, chart_caption
from ui.charts import ledger_figure
from ui.draw import draw_reading, notice
from ui.glossary import show_intro
from ui.literal import plural, table_html
from ui.numbers import format_count
from ui.sections import scene
from ui.state import from_url, style, style_button, to_url
from ui.understanding import check_understanding
from ui.views.step_data import harness_run
from ui.views.step_view import current_step, step_view
from ui.words import lesson, words

ID = "check-run-return"

text = lesson(ID)
st.title(text["title"])  # the run itself comes first, under the title: its words follow


@st.cache_resource(show_spinner=False, max_entries=64)
def scripted_run(name: str, chosen_style: str, policy: str):
    return run_scenario(load_scenario(name), chosen_style, policy)


@st.cache_resource(show_spinner=False, max_entries=32)
def malformed_cost(name: str, chosen_style: str):
    return malformed_cost_of(name, chosen_style)


def first_step(name: str) -> int:
    """Open a scenario at the call that goes wrong (1-based), or at the first call."""
    bad = load_scenario(name).malformed_turn
    return 1 if bad is None else bad + 1


def reset_step() -> None:
    st.session_state["check_run_return_step"] = first_step(st.session_state["check_run_return_scenario"])


# -- the scenario, the style, the policy --------------------------------------------------------
names = list_scenarios()
scenario_name = from_url("check_run_return_scenario", "scenario", "missing-brace", str, names)
scenario = load_scenario(scenario_name)
policy = from_url("check_run_return_policy", "policy", "per-block", str, POLICIES)
chosen_style = style()

# the two pickers on one line (projected, without their labels: ui/presenter.css; the box names its scenario)
left, right = st.container(key="check_run_return_pickers").columns([3, 2])
with left:
    st.selectbox(
        "Scenario",
        names,
        key="check_run_return_scenario",
        on_change=reset_step,
        format_func=lambda n: load_scenario(n).title,
    )
with right:
    st.segmented_control(
        "Harness policy",
        POLICIES,
        key="check_run_return_policy",
        required=True,
        help="per-block runs the good calls of a reply; vllm drops them all when one block is not valid JSON.",
    )
if chosen_style not in scenario.styles:
    other = scenario.styles[0]
    st.warning(
        words(ID, "only one style", scenario=scenario.title, have=get_format(other).noun, why=text[f"why {other} only"])
    )
    style_button(f"Show it in the {get_format(other).noun} style", other, key="check_run_return_switch_style")
    to_url(scenario=scenario_name, policy=None if policy == "per-block" else policy, step=None)


def the_run() -> bool:
    """The scenario's run in this style: stepped through, its ledger, the two policies, what a broken call costs.

    True when the vllm policy stopped the run at a broken reply (the lesson's last words then say so)."""
    run = scripted_run(scenario_name, chosen_style, policy)
    total = len(run.calls)
    # a link or a policy switch can point past the end of this run: current_step clamps it
    number = current_step("check_run_return_view", "check_run_return_step", total, first_step(scenario_name))
    to_url(scenario=scenario_name, policy=None if policy == "per-block" else policy, step=number)

    # -- stepping through the run (in the browser: every call is sent once) ---------------------------
    parts = {
        k: text[k]
        for k in (
            "the turn",
            "cut off",
            "returned as text",
            "final turn",
            "the checks",
            "the checks (dropped)",
            "the tool runs",
        )
    }
    parts["what goes back"] = text[f"what goes back ({chosen_style})"]
    step_view(
        harness_run(run, parts, lambda n: returned_text(run, n, scenario.tools), number),
        key="check_run_return_view",
    )
    # the lesson's opening words and the scenario's story, after the run they explain
    scene("The harness and this run")
    with st.container(key="check_run_return_whole_story"):  # (every line shown: these words are the section)
        show_intro(ID, text["intro"])
        st.markdown(text["scenario"])
        st.markdown(f"**{scenario.summary}** {scenario.lesson}")

    # -- the ledger ----------------------------------------------------------------------------------
    scene("The token ledger")
    st.markdown(text["the token ledger"])
    calls = run.ledger.calls
    rows = [
        {
            "call": n,
            "input": format_count(c.input_tokens),
            "output": format_count(c.output_tokens),
            "tools run": ", ".join(t["name"] for t in c.tool_calls) or "—",
            "errors": len(c.errors),
        }
        for n, c in enumerate(calls[:number], start=1)
    ]
    chart, table = st.columns([1, 1])
    with table:
        st.markdown(table_html(rows), unsafe_allow_html=True)
        so_far = sum(c.input_tokens for c in calls[:number])
        st.metric("Input tokens so far", f"{so_far:,}", help="the sum of every prompt sent up to this call")
    with chart:
        figure = ledger_figure(calls[:number], 340)
        figure.update_layout(
            xaxis={"range": [0.5, total + 0.5]}, yaxis={"range": [0, max(c.input_tokens for c in calls) * 1.1]}
        )
        st.plotly_chart(figure, key="check_run_return_ledger_chart")
        chart_caption(figure, "call {}")

    # -- the two policies side by side ------------------------------------------------------------------
    scene("Forgiving or all-or-nothing")
    if not get_format(chosen_style).parallel:
        # one call per reply: the two policies cannot differ
        st.markdown(text["policies in react"])
    else:
        st.markdown(text["forgiving or all-or-nothing"])
        bad_index = scenario.malformed_turn if scenario.malformed_turn is not None else number - 1
        bad_text = scenario.script(chosen_style)[bad_index].text
        columns = st.columns(2)
        for column, name in zip(columns, POLICIES, strict=True):
            with column:
                st.subheader(name)
                verdict = parse_turn(bad_text, scenario.tools, chosen_style, name)
                whole = scripted_run(scenario_name, chosen_style, name)
                draw_reading(verdict)
                st.markdown(
                    f"Reply {bad_index + 1} of the script. The whole run: **{plural(len(whole.calls), 'call')}**, "
                    f"{whole.ledger.input_tokens:,} input tokens; it ended with *{whole.stop_reason}*."
                )

    # -- what the broken call costs -------------------------------------------------------------------
    scene("What a broken call costs")
    if scenario.malformed_turn is None:
        st.markdown(text["no broken call"])
    elif any(s.parse.returned_as_text for s in run.calls):
        # the vllm policy stopped this run at the broken reply: show that run, not the per-block one
        stopped = next(n for n, s in enumerate(run.calls, start=1) if s.parse.returned_as_text)
        forgiving = scripted_run(scenario_name, chosen_style, "per-block")
        st.markdown(
            words(
                ID,
                "cost when the run stopped",
                stopped=stopped,
                calls=plural(len(run.calls), "call"),
                tokens=f"{run.ledger.input_tokens:,}",
                forgiving_calls=plural(len(forgiving.calls), "call"),
                forgiving_tokens=f"{forgiving.ledger.input_tokens:,}",
            )
        )
        a, b = st.columns(2)
        a.metric(
            "vllm: input tokens, whole run",
            f"{run.ledger.input_tokens:,}",
            help=f"{plural(len(run.calls), 'call')}; ended: {run.stop_reason}",
        )
        b.metric(
            "per-block: input tokens, whole run",
            f"{forgiving.ledger.input_tokens:,}",
            help=f"{plural(len(forgiving.calls), 'call')}; ended: {forgiving.stop_reason}",
        )
    else:
        st.markdown(text["what a broken call costs"])
        cost = malformed_cost(scenario_name, chosen_style)
        st.latex(r"\Delta_{\text{in}} = C_{\text{bad}} + (a_{\text{bad}} + e)\times n_{\text{later}}")
        measured, equal, formula = st.columns([5, 2, 5])
        with measured:
            st.metric("Measured: input with it − input without it", f"{cost.measured_in:,}")
            st.markdown(
                f"{cost.with_bad['input_tokens']:,} − {cost.without_bad['input_tokens']:,} = **{cost.measured_in:,}** tokens"
            )
        with equal:
            mark = "= ✓" if cost.agrees else "≠"
            st.markdown(f'<div class="equal">{mark}</div>', unsafe_allow_html=True)
            st.caption("equal" if cost.agrees else "not equal")
        with formula:
            st.metric("Formula: C_bad + (a_bad + e) × n_later", f"{cost.formula_in:,}")
            st.markdown(f"{cost.formula_text} tokens")
        scene("The formula's terms", heading=None)
        st.markdown(
            words(
                ID,
                "the terms",
                c_bad=cost.c_bad,
                a_bad=cost.a_bad,
                e=cost.e,
                n_later=cost.n_later,
                a_bad_parts=a_bad_parts(cost, ID),
            )
        )
        st.caption(text["reported elsewhere"])
    return any(s.parse.returned_as_text for s in run.calls)


# (a scenario this style lacks: only the warning above; the page still ends normally, so projected its section bar is drawn)
stopped = chosen_style in scenario.styles and the_run()
scene("What to notice", heading=None)
notice(text["what to notice (stopped)" if stopped else "what to notice"])
check_understanding(ID)
