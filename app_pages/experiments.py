"""Measure it: run a suite with the model in use, free and constrained, beside the published figures."""

import streamlit as st

from engine.errors import EngineError
from engine.harness.eval import load_suite, published_figures, suite_names
from engine.teaching.stop_words import load_stop_scenes
from ui.chart_words import chart_caption
from ui.draw import notice
from ui.experiments import (
    CONDITIONS,
    downloads,
    published_rows,
    results_figure,
    run_conditions,
    stop_word_scene,
    totals_table,
)
from ui.models import current_engine, random_label
from ui.sections import scene
from ui.state import from_url, to_url
from ui.words import lesson, words

ID = "experiments"
text = lesson(ID)
st.title(text["title"])
st.markdown(text["intro"])

names = suite_names()
suite_name = from_url("experiments_suite", "suite", "strawberry", str, names)
to_url(suite=suite_name)
published = [p for p in published_figures() if p.suite == suite_name]

scene("The suite", "Suite")
st.markdown(text["suite"])
st.selectbox("Suite", names, key="experiments_suite", format_func=lambda n: f"{n}: {load_suite(n).title}")
suite = load_suite(suite_name)
st.caption(f"{suite.about} {len(suite.tasks)} tasks, at most {suite.max_turns} turns a run.")
with st.expander("The tasks, and what a right answer is"):
    st.dataframe(
        [{"task": t.id, "asks": t.messages[-1]["content"][:120], "right": t.right} for t in suite.tasks],
        hide_index=True,
    )
scene("Conditions, seeds, tokens", heading=None)
st.markdown(text["conditions"])
left, middle, right = st.columns(3)
# pills wrap on a narrow projected column, where a multiselect's chips scroll
conditions = (
    left.pills(
        "Conditions",
        list(CONDITIONS),
        selection_mode="multi",
        default=["free", "grammar"],
        key="experiments_conditions",
    )
    or []
)
seeds = middle.number_input("Seeds (runs per task)", 1, 5, 1, key="experiments_seeds")
tokens = right.number_input(
    "New tokens a turn", 8, 1024, suite.max_new_tokens, step=8, key=f"experiments_tokens_{suite_name}"
)

if published:
    scene("Published figures", "Published", level="subheader")
    st.markdown(text["published"])
    st.dataframe(published_rows(published), hide_index=True)

scene("Stop words")
st.markdown(text["stop words"])
# projected, each scene's turn on one screen and what it shows on the next: the two do not fit one
for number, case in enumerate(load_stop_scenes(), 1):
    scene(f"Stop words, case {number}: the turn", heading=None)
    stop_word_scene(case)
    scene(f"Stop words, case {number}: what it shows", heading=None)
    st.markdown(case.lesson)

scene("Run it")
engine = current_engine()
if engine is None:
    # no st.stop(): the page's last part, and projected its section bar, are still drawn
    st.info(text["no model"])
elif engine.info.random_weights:
    st.warning(random_label(engine.info))
else:
    st.caption(f"Model: {engine.info.label()}")

if engine is not None:
    run, stop = st.columns([1, 4])
    pressed = run.button("Run the experiment", type="primary", key="experiments_run", disabled=not conditions)
    if stop.button("Stop", key="experiments_stop"):
        # a press ends the run in progress; the runs that finished stay
        partial = st.session_state.pop("experiments_partial", None)
        if partial is not None:
            partial.stopped = True
            st.session_state.setdefault("experiments_results", []).append(partial)
    if pressed:
        try:
            st.session_state["experiments_suite_run"] = suite_name
            run_conditions(engine, suite, conditions, int(seeds), int(tokens))
        except EngineError as error:
            st.error(str(error))

results = st.session_state.get("experiments_results") or []
if results:
    ran = st.session_state.get("experiments_suite_run", suite_name)
    scene("Results")
    st.markdown(text["results"])
    st.caption(f"Suite {ran}, model {results[0].model.get('name')}; " + "; ".join(r.note for r in results if r.note))
    st.dataframe(totals_table(results), hide_index=True)
    scene("Results: chart", "Chart", level="subheader")
    figure = results_figure(results, [p for p in published_figures() if p.suite == ran])
    # "beside the published runs" only where the chart draws one
    drawn = any(str(x).endswith("(published)") for trace in figure.data[:1] for x in trace.x)
    beside = text["chart, beside published" if drawn else "chart, none published"].strip()
    st.markdown(words(ID, "chart", beside=beside))
    st.plotly_chart(figure, key="experiments_chart")
    chart_caption(figure)
    downloads(results, ran)
    scene("What to notice", heading=None)

notice(text["what to notice"])
