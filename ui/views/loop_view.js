// the loop: model -> text -> parser -> checks -> tool -> result -> prompt -> model; `data.lit` names the stage lit,
// or `data.stages` (one per step of a run) animates it, one stage at a time
const NS = "http://www.w3.org/2000/svg";
const W = 104, H = 44, TOP = 30, BOTTOM = 130;

function node(tag, attrs) {
  const n = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  return n;
}

export default function (component) {
  const { data, parentElement } = component;
  if (parentElement.__lvCleanup) parentElement.__lvCleanup();
  const svg = parentElement.querySelector(".lv-svg");
  const caption = parentElement.querySelector(".lv-caption");
  svg.replaceChildren();
  const defs = node("defs", {});
  const marker = node("marker", { id: "lv-head", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto" });
  marker.appendChild(node("path", { d: "M0,0 L10,5 L0,10 z", fill: "#8a8f99" }));
  defs.appendChild(marker);
  svg.appendChild(defs);
  // six stages on the top row left to right, the prompt under them closing the ring back to the model
  const names = data.names;
  const spots = names.map((_, i) => (i < 6 ? [20 + i * 144, TOP] : [20 + 2.5 * 144, BOTTOM]));
  const boxes = names.map((name, i) => {
    const [x, y] = spots[i];
    const g = node("g", { class: "stage", "data-stage": name });
    g.appendChild(node("rect", { x, y, width: W, height: H, rx: 10 }));
    const label = node("text", { x: x + W / 2, y: y + H / 2 });
    label.textContent = name;
    g.appendChild(label);
    svg.appendChild(g);
    return g;
  });
  for (let i = 0; i < 5; i++) {
    const [x, y] = spots[i];
    svg.appendChild(node("path", { class: "arrow", d: `M${x + W + 2},${y + H / 2} L${x + 142},${y + H / 2}` }));
  }
  const [rx, ry] = spots[5], [px, py] = spots[6], [mx, my] = spots[0];
  svg.appendChild(node("path", { class: "arrow", d: `M${rx + W / 2},${ry + H + 2} Q${rx + W / 2},${py + H / 2} ${px + W + 4},${py + H / 2}` }));
  svg.appendChild(node("path", { class: "arrow", d: `M${px - 2},${py + H / 2} Q${mx + W / 2},${py + H / 2} ${mx + W / 2},${my + H + 4}` }));

  let shown = null; // the stage lit now, for the picture's file name
  function light(stage, words) {
    shown = stage;
    const at = names.indexOf(stage);
    boxes.forEach((g, i) => {
      g.classList.toggle("lit", i === at);
      g.classList.toggle("done", at >= 0 && i < at);
    });
    caption.textContent = words || "";
  }

  // the picture as it stands now (the stage lit and its words), without the button
  const view = parentElement.querySelector(".lv");
  for (const old of view.querySelectorAll(".lv-tools")) old.remove();
  const tools = document.createElement("div");
  tools.className = "lv-tools";
  tools.appendChild(makeExportButton("lv-export", () => exportViewPng(view, {
    prefix: "lv",
    name: `${pageSlug()}-loop${shown ? "-" + shown : ""}`,
    prepare: (copy) => copy.querySelectorAll(".lv-tools").forEach((t) => t.remove()),
  })));
  view.appendChild(tools);

  let timer = null;
  const frames = data.frames || [];
  if (frames.length) {
    // a run's own stages, in order: each frame is [stage, words]
    let k = 0;
    const tick = () => { light(...frames[k]); k += 1; if (k >= frames.length) clearInterval(timer); };
    tick();
    timer = setInterval(tick, data.every_ms || 700);
  } else light(data.lit, data.caption);
  const cleanup = () => clearInterval(timer);
  parentElement.__lvCleanup = cleanup;
  return cleanup;
}
