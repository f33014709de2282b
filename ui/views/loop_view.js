// the loop: model -> text -> parser -> checks -> tool -> result -> prompt -> model. `data.lit` names the stage lit,
// or `data.frames` (a run's stages in order: [stage, words, verdict]) plays it one stage at a time, with Back / Next
// to step and Replay; the picture ends unlit (no stage is "now" once the run is over), its last words saying how it ended
const NS = "http://www.w3.org/2000/svg";
const W = 104, H = 44, TOP = 30, BOTTOM = 130;

function node(tag, attrs) {
  const n = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  return n;
}

function button(cls, text) {
  const b = document.createElement("button");
  b.className = cls;
  b.textContent = text;
  return b;
}

export default function (component) {
  const { data, parentElement } = component;
  if (parentElement.__lvCleanup) parentElement.__lvCleanup();
  const view = parentElement.querySelector(".lv");
  // the site's palette (ui/palette.py) on the view's own root, so a copy exported as a PNG keeps its colours
  for (const [name, value] of Object.entries(data.palette || {})) view.style.setProperty(name, value);
  const svg = parentElement.querySelector(".lv-svg");
  const caption = parentElement.querySelector(".lv-caption");
  svg.replaceChildren();
  const defs = node("defs", {});
  const marker = node("marker", { id: "lv-head", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto" });
  marker.appendChild(node("path", { class: "lv-head", d: "M0,0 L10,5 L0,10 z" }));
  defs.appendChild(marker);
  svg.appendChild(defs);
  // six stages on the top row left to right, the prompt under them closing the ring back to the model
  const names = data.names;
  const spots = names.map((_, i) => (i < 6 ? [20 + i * 144, TOP] : [20 + 2.5 * 144, BOTTOM]));
  const boxes = names.map((name, i) => {
    const [x, y] = spots[i];
    const g = node("g", { class: "stage", "data-stage": name });
    // the halo marks the stage the run is at now, whatever its verdict's colour
    g.appendChild(node("rect", { class: "halo", x: x - 5, y: y - 5, width: W + 10, height: H + 10, rx: 14 }));
    g.appendChild(node("rect", { class: "box", x, y, width: W, height: H, rx: 10 }));
    const label = node("text", { x: x + W / 2, y: y + H / 2 });
    label.textContent = name;
    g.appendChild(label);
    svg.appendChild(g);
    return g;
  });
  for (let i = 0; i < 5; i++) {
    const [x, y] = spots[i];
    svg.appendChild(node("path", { class: "arrow", d: `M${x + W + 6},${y + H / 2} L${x + 138},${y + H / 2}` }));
  }
  const [rx, ry] = spots[5], [px, py] = spots[6], [mx, my] = spots[0];
  svg.appendChild(node("path", { class: "arrow", d: `M${rx + W / 2},${ry + H + 6} Q${rx + W / 2},${py + H / 2} ${px + W + 8},${py + H / 2}` }));
  svg.appendChild(node("path", { class: "arrow", d: `M${px - 6},${py + H / 2} Q${mx + W / 2},${py + H / 2} ${mx + W / 2},${my + H + 8}` }));

  // what each colour means (only those this picture uses), under the caption
  for (const old of view.querySelectorAll(".lv-legend")) old.remove();
  const legend = document.createElement("div");
  legend.className = "lv-legend";
  for (const [meaning, words] of data.legend || []) {
    const item = document.createElement("span");
    item.className = "pal-item";
    item.dataset.meaning = meaning;
    const swatch = document.createElement("span");
    swatch.className = "pal-swatch";
    swatch.style.background = `var(--pal-${meaning})`;
    item.append(swatch, document.createTextNode(words));
    legend.appendChild(item);
  }
  view.appendChild(legend);

  let shown = null; // the stage lit now, for the picture's file name
  function light(stage, words, verdict) {
    shown = stage || null;
    const at = names.indexOf(stage);
    boxes.forEach((g, i) => {
      g.classList.toggle("lit", i === at);
      g.classList.remove("passed", "failed");
      if (i === at && verdict) g.classList.add(verdict);
    });
    caption.textContent = words || "";
  }

  // the controls (a run's frames only) and the picture's export, under it
  for (const old of view.querySelectorAll(".lv-tools")) old.remove();
  const tools = document.createElement("div");
  tools.className = "lv-tools";
  const frames = data.frames || [];
  const last = frames.length;
  let k = 0; // frames shown so far: 0 before the first, last + 1 once the run is over and the picture unlit
  let timer = null;
  const back = button("lv-back", "◀ Back"), play = button("lv-play", "▶ Replay"), next = button("lv-next", "Next ▶");
  const where = document.createElement("span");
  where.className = "lv-where";
  if (last) tools.append(back, play, next, where);
  tools.appendChild(makeExportButton("lv-export", () => exportViewPng(view, {
    prefix: "lv",
    name: `${pageSlug()}-loop${shown ? "-" + shown : ""}`,
    prepare: (copy) => copy.querySelectorAll(".lv-tools").forEach((t) => t.remove()),
  })));
  view.appendChild(tools);

  function draw() {
    if (k >= 1 && k <= last) light(...frames[k - 1]);
    else light(null, k > last ? data.end || "" : data.caption || "");
    where.textContent = k >= 1 && k <= last ? `Stage ${k} of ${last}` : (k > last ? "The run is over" : "");
    back.disabled = k <= 1;
    next.disabled = k > last;
  }
  function stop() {
    clearInterval(timer);
    timer = null;
    play.textContent = "▶ Replay";
  }
  function go(to) {
    stop();
    k = Math.min(Math.max(to, 1), last + 1);
    draw();
  }
  function start() {
    stop();
    k = 0;
    play.textContent = "❚❚ Pause";
    const tick = () => { k += 1; draw(); if (k > last) stop(); };
    tick();
    timer = setInterval(tick, data.every_ms || 700);
  }
  back.addEventListener("click", () => go(k - 1));
  next.addEventListener("click", () => go(k + 1));
  play.addEventListener("click", () => (timer ? stop() : start()));
  if (last && data.autoplay !== false) start();
  else draw();
  if (!last) light(data.lit, data.caption);
  const cleanup = () => clearInterval(timer);
  parentElement.__lvCleanup = cleanup;
  return cleanup;
}
