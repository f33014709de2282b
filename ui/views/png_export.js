// Export PNG, shared by the views (prepended to each view's own module): the view is drawn again as a picture in
// the browser, with no network and no library. Its DOM is cloned, the page's CSS rules for the view's classes are
// copied in beside the clone, both go into an SVG <foreignObject>, the SVG is drawn on a canvas at twice the
// screen's pixels or more (crisp on a projector), and the canvas is saved as a .png through an <a download> click.
const PNG_SCALE_MIN = 2;
const PNG_MAX_SIDE = 16000; // a canvas side Chromium still draws; a very tall view is drawn at a smaller scale
const PNG_PAD = 12; // CSS pixels of white around the view

function slugText(text) {
  return String(text).normalize("NFKD").toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 80);
}

// the page the view is on, from its address: /the_model_writes_a_call -> "the-model-writes-a-call", / -> "home"
function pageSlug() {
  let last = "";
  try { last = decodeURIComponent(window.location.pathname).split("/").filter(Boolean).pop() || ""; } catch (e) { last = ""; }
  return slugText(last) || "home";
}

// does a rule's selector match the view or anything in it now (the site's own classes in trusted markup, the
// page's resets); a selector the browser cannot test here (a pseudo-element) counts as no
function selectsInside(view, selector) {
  try { return view.matches(selector) || view.querySelector(selector) !== null; } catch (e) { return false; }
}

// the CSS text of the rules that style the view: those whose selector names a class starting `prefix` (".sv") and
// those that match an element of it, from the document's sheets and the view's shadow root's; media rules are
// unwrapped when they match the page now (inside the picture they would be measured against its own width)
function collectViewCss(view, prefix) {
  const named = new RegExp("\\." + prefix + "\\b");
  const sheets = new Set();
  for (const owner of new Set([view.getRootNode(), document])) {
    for (const sheet of owner.styleSheets || []) sheets.add(sheet);
    for (const sheet of owner.adoptedStyleSheets || []) sheets.add(sheet);
  }
  const out = [];
  const visit = (rules) => {
    for (const rule of rules) {
      if (rule.media && rule.cssRules) {
        if (window.matchMedia(rule.media.mediaText).matches) visit(rule.cssRules);
      } else if (typeof rule.selectorText === "string" && (named.test(rule.selectorText) || selectsInside(view, rule.selectorText))) {
        out.push(rule.cssText);
      }
    }
  };
  for (const sheet of sheets) {
    let rules = null;
    try { rules = sheet.cssRules; } catch (e) { rules = null; } // another origin's sheet cannot be read, nor is it ours
    if (rules) visit(rules);
  }
  return out.join("\n");
}

// the rows of the canvas that hold the drawing: the last one not all white, plus the padding
function usedRows(ctx, width, height, pad) {
  const pixels = ctx.getImageData(0, 0, width, height).data;
  for (let y = height - 1; y >= 0; y--) {
    const row = y * width * 4;
    for (let i = row; i < row + width * 4; i += 4) {
      if (pixels[i] < 250 || pixels[i + 1] < 250 || pixels[i + 2] < 250) return Math.min(height, y + 1 + pad);
    }
  }
  return height;
}

// `view`: the element to draw; `prefix`: its classes' start ("sv"); `name`: the file's name without ".png";
// `prepare(copy)`: edits the clone before it is drawn (drops the buttons)
async function exportViewPng(view, { prefix, name, prepare }) {
  const width = Math.ceil(view.getBoundingClientRect().width);
  const copy = view.cloneNode(true);
  copy.removeAttribute("tabindex");
  if (prepare) prepare(copy);
  const look = getComputedStyle(view);
  // the picture's paper: the palette's (ui/palette.py), set on the view's root with the other colours
  const paper = look.getPropertyValue("--pal-paper").trim() || "Canvas";
  const frame = document.createElement("div");
  frame.setAttribute("style", `width:${width}px; padding:${PNG_PAD}px; background:${paper}; color:${look.color}; ` +
    `font-family:${look.fontFamily}; font-size:${look.fontSize}; line-height:${look.lineHeight}; font-weight:${look.fontWeight}`);
  const style = document.createElement("style");
  style.textContent = collectViewCss(view, prefix);
  frame.append(style, copy);

  // the height as laid out on the page; the picture gets room to spare (its fonts may be a system font's, wider
  // than a web font the page loaded) and the white left under the drawing is cut off afterwards
  const probe = frame.cloneNode(true);
  probe.style.position = "fixed";
  probe.style.left = "-100000px";
  probe.style.top = "0";
  probe.style.visibility = "hidden";
  view.parentNode.appendChild(probe);
  const laid = Math.ceil(probe.getBoundingClientRect().height);
  probe.remove();
  const W = width + 2 * PNG_PAD;
  const H = Math.ceil(laid * 1.4) + 80;
  const scale = Math.min(Math.max(PNG_SCALE_MIN, window.devicePixelRatio || 1), PNG_MAX_SIDE / Math.max(W, H));
  const xhtml = new XMLSerializer().serializeToString(frame);
  // rem inside the picture is measured against its root, the <svg>: give it the page's root font size
  const rootSize = getComputedStyle(document.documentElement).fontSize;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${Math.round(W * scale)}" height="${Math.round(H * scale)}" ` +
    `style="font-size:${rootSize}" ` +
    `viewBox="0 0 ${W} ${H}"><foreignObject x="0" y="0" width="${W}" height="${H}">${xhtml}</foreignObject></svg>`;
  const image = new Image();
  await new Promise((resolve, reject) => {
    image.onload = resolve;
    image.onerror = () => reject(new Error("the browser could not draw the view as an SVG picture"));
    image.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svg);
  });
  const canvas = document.createElement("canvas");
  canvas.width = Math.round(W * scale);
  canvas.height = Math.round(H * scale);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = paper;
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.drawImage(image, 0, 0, canvas.width, canvas.height);
  const rows = usedRows(ctx, canvas.width, canvas.height, Math.round(PNG_PAD * scale));
  const out = document.createElement("canvas");
  out.width = canvas.width;
  out.height = rows;
  out.getContext("2d").drawImage(canvas, 0, 0);
  const link = document.createElement("a");
  link.download = `${slugText(name) || "view"}.png`;
  link.href = out.toDataURL("image/png");
  document.body.appendChild(link);
  link.click();
  link.remove();
}

// a button that runs the export, says so while it works, and says why if it could not
function makeExportButton(cls, run) {
  const button = document.createElement("button");
  button.className = cls;
  button.type = "button";
  const label = "⤓ Export PNG";
  button.textContent = label;
  button.title = "Save what this view shows now as a PNG picture (for slides)";
  button.addEventListener("click", async () => {
    button.disabled = true;
    button.textContent = "Exporting…";
    try {
      await run();
      button.textContent = label;
    } catch (error) {
      console.error("Export PNG:", error);
      button.textContent = "Export failed";
      button.title = String(error && error.message ? error.message : error);
      setTimeout(() => { button.textContent = label; }, 3000);
    } finally {
      button.disabled = false;
    }
  });
  return button;
}
