// the step view: every step of a run arrives once in `data`; stepping, hovering and playing redraw here,
// and the step reached goes back to python only when the learner pauses (so a link can carry ?step=N)
const REPORT_AFTER_MS = 600;
const SPEEDS = [["slow", 700], ["normal", 300], ["fast", 90]];
const kept = new Map(); // view id -> {n, reported}: a rerun that redraws the same run keeps the step reached

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function drawBars(block) {
  const box = el("div", "sv-bars");
  box.appendChild(el("div", "sv-bars-title", block.title));
  const top = Math.max(...block.rows.map((r) => r.p), 1e-12);
  for (const row of block.rows) {
    const line = el("div", "sv-bar" + (row.chosen ? " chosen" : ""));
    line.appendChild(el("span", "l", row.label));
    const track = el("span", "track");
    const fill = el("span", "fill");
    // bars are scaled to the largest shown, so a near-uniform random model's bars stay visible
    fill.style.width = `${Math.max(0.5, (100 * row.p) / top)}%`;
    track.appendChild(fill);
    // the figure by the site's one percent rule (numbers.js), unless the page worded it
    track.appendChild(el("span", "v", row.text || formatPercent(row.p) + (row.chosen ? " (chosen)" : "")));
    line.appendChild(track);
    box.appendChild(line);
  }
  return box;
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  if (parentElement.__svCleanup) parentElement.__svCleanup();
  const steps = data.steps || [];
  const last = steps.length;
  const root = parentElement.querySelector(".sv");
  root.replaceChildren();
  if (!last) return;
  // the site's palette (ui/palette.py) on the view's own root, so a copy exported as a PNG keeps its colours
  for (const [name, value] of Object.entries(data.palette || {})) root.style.setProperty(name, value);

  const was = kept.get(data.id);
  let n = was && was.reported === data.start ? was.n : Math.min(Math.max(data.start || 1, 1), last);
  let reported = data.start;
  let timer = null, playing = null;

  // -- the controls and the frame, built once per mount
  const controls = el("div", "sv-controls");
  const back = el("button", "sv-back", "◀ Back");
  const play = el("button", "sv-play", "▶ Play");
  const next = el("button", "sv-next", "Next ▶");
  const speed = el("select", "sv-speed");
  for (const [name, ms] of SPEEDS) {
    const option = el("option", "", name);
    option.value = String(ms);
    if (name === "normal") option.selected = true;
    speed.appendChild(option);
  }
  const speedLabel = el("label", "", "speed ");
  speedLabel.appendChild(speed);
  const where = el("strong", "sv-where");
  controls.append(back, play, next, speedLabel);
  for (const [label, to] of data.marks || []) {
    const jump = el("button", "sv-mark", label);
    jump.addEventListener("click", () => go(to));
    controls.appendChild(jump);
  }
  controls.append(where, el("span", "sv-keys", "← → step · Home / End · Space plays"));
  // the step shown now as a picture: the strip and the step's figures, "Token N of M" over them, no buttons
  controls.appendChild(makeExportButton("sv-export", () => exportViewPng(root, {
    prefix: "sv",
    name: `${pageSlug()}-${slugText(data.unit || "step")}-${n}`,
    prepare: (copy) => {
      // the picture keeps "Token N of M" and the legend, not the buttons
      const stays = [el("div", "sv-png-where", where.textContent), ...copy.querySelectorAll(".sv-legend")];
      copy.querySelector(".sv-controls").replaceWith(...stays);
    },
  })));
  const strip = el("div", "sv-strip" + (data.unit === "Token" ? "" : " calls"));
  const chips = steps.map((step, i) => {
    const chip = el("span", "sv-chip" + (step.kind ? " " + step.kind : ""));
    chip.appendChild(el("span", "t", step.chip));
    if (step.sub) chip.appendChild(el("span", "i", step.sub));
    chip.title = `${data.unit} ${i + 1}`;
    chip.addEventListener("click", () => go(i + 1));
    strip.appendChild(chip);
    return chip;
  });
  const body = el("div", "sv-body");
  const facts = el("div", "sv-facts");
  const side = el("div", "sv-side");
  body.append(facts, side);
  if (data.wide) body.classList.add("wide");
  // what each colour of the strip and the bars means (only the colours this run uses)
  const legend = el("div", "sv-legend");
  for (const [meaning, words] of data.legend || []) {
    const item = el("span", "pal-item");
    item.dataset.meaning = meaning;
    const swatch = el("span", "pal-swatch");
    swatch.style.background = `var(--pal-${meaning})`;
    item.append(swatch, document.createTextNode(words));
    legend.appendChild(item);
  }
  // (in the controls' row, beside "Token N of M": it takes no line of its own where the row has room)
  controls.insertBefore(legend, controls.querySelector(".sv-keys"));
  root.append(controls, strip, body);
  if (data.note) root.appendChild(el("div", "sv-caption", data.note));

  function draw() {
    const step = steps[n - 1];
    where.textContent = `${data.unit} ${n} of ${last}`;
    chips.forEach((chip, i) => {
      chip.classList.toggle("now", i === n - 1);
      chip.classList.toggle("later", !!data.dim && i > n - 1);
    });
    back.disabled = n <= 1;
    next.disabled = n >= last;
    facts.replaceChildren();
    facts.appendChild(el("div", "sv-title", step.title || "(empty)"));
    if (step.caption) facts.appendChild(el("div", "sv-caption", step.caption));
    for (const [label, value] of step.facts || []) {
      const fact = el("div", "sv-fact");
      fact.append(el("div", "l", label), el("div", "v", value));
      facts.appendChild(fact);
    }
    if (step.bad) facts.appendChild(el("div", "sv-bad", step.bad));
    side.replaceChildren();
    const bars = step.bars || [];
    if (bars.length > 1) {
      const pair = el("div", "sv-pair");
      bars.forEach((b) => pair.appendChild(drawBars(b)));
      side.appendChild(pair);
    } else if (bars.length === 1) side.appendChild(drawBars(bars[0]));
    if (step.sample) {
      side.appendChild(el("div", "sv-bars-title", step.sample.title));
      const sample = el("div", "sv-sample");
      step.sample.tokens.forEach((t) => sample.appendChild(el("span", "", t)));
      side.appendChild(sample);
    }
    if (step.text) side.appendChild(el("div", "sv-caption", step.text));
    if (step.html) {
      // trusted markup built by the page from the engine's verdicts (ui/draw.py), not from a visitor
      const detail = el("div", "sv-html");
      detail.innerHTML = step.html;
      side.appendChild(detail);
    }
    kept.set(data.id, { n, reported });
  }

  function report() {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (playing || n === reported) return;
      reported = n;
      kept.set(data.id, { n, reported });
      setStateValue("step", n);
    }, REPORT_AFTER_MS);
  }

  function go(to) {
    const target = Math.min(Math.max(to, 1), last);
    if (target === n) return;
    n = target;
    draw();
    report();
  }

  function stop() {
    clearInterval(playing);
    playing = null;
    play.textContent = "▶ Play";
    report();
  }

  function toggle() {
    if (playing) return stop();
    if (n >= last) { n = 0; }
    play.textContent = "❚❚ Pause";
    const tick = () => { if (n >= last) return stop(); n += 1; draw(); };
    tick();
    playing = setInterval(tick, Number(speed.value));
  }

  function onKey(event) {
    const moves = { ArrowRight: () => go(n + 1), ArrowLeft: () => go(n - 1), Home: () => go(1), End: () => go(last), " ": toggle };
    if (!moves[event.key] || event.altKey || event.ctrlKey || event.metaKey) return;
    // the page-wide listener leaves typing, sliders and menus alone
    const target = event.target;
    if (target !== root && target.closest && target.closest("input, textarea, select, [contenteditable], [role=slider], [role=combobox], [role=listbox]")) return;
    if (target !== root && target.closest && target.closest("button") && event.key === " ") return;
    event.preventDefault();
    moves[event.key]();
  }

  back.addEventListener("click", () => go(n - 1));
  next.addEventListener("click", () => go(n + 1));
  play.addEventListener("click", toggle);
  speed.addEventListener("change", () => { if (playing) { stop(); toggle(); } });
  root.tabIndex = 0;
  // the view's own keys stop at the view; any other (PageDown / PageUp: presenter mode's sections) goes on to the page
  root.addEventListener("keydown", (e) => { onKey(e); if (e.defaultPrevented) e.stopPropagation(); });
  // one view per page answers keys pressed anywhere on it (the first, main step-through)
  const listener = data.keys ? (e) => { if (!e.defaultPrevented) onKey(e); } : null;
  if (listener) document.addEventListener("keydown", listener);
  draw();

  const cleanup = () => {
    clearTimeout(timer);
    clearInterval(playing);
    if (listener) document.removeEventListener("keydown", listener);
  };
  parentElement.__svCleanup = cleanup;
  return cleanup;
}
