// A Plotly chart that is updated in place (Plotly.react) when its figure changes, drawn one chart per frame.
//
// Streamlit's own chart element is keyed by its figure, so every chart whose data changed was mounted anew at each
// key press, and a page's charts were all drawn in the one task that rendered the page: the first chart appeared
// only when the last was drawn. Here each chart keeps its plot, and charts waiting to be drawn are drawn in page
// order, one per frame, so the first shows while the others are still being drawn.
//
// data: the UTF-8 bytes of {"plotly": url of plotly.js, "label": the chart's text alternative (its title and
// caption), "said": {"unloaded", "failed", "fullscreen"} (words in the reader's language), "config": {...}, "narrow":
// null or {"below": px, "layout": {...} or null, "unlabelled": bool, "textposition": [...] or null, "frameLayouts":
// [...] or null}, "figure":
// {"data": [...], "layout": {...}, "frames": [...]}, "leastCellText": px (0: any size)}. A chart narrower than
// "below" px (a phone) is drawn with the narrow layout, its points' text labels placed for it ("textposition") or
// left out ("unlabelled"): only the browser knows the width. In presenter mode "narrow" also has "phone": {
// "screenBelow": px, "layout", "unlabelled", "textposition", "unscale": the projector's font scale}: on a screen
// narrower than that the chart is drawn at its usual size (its traces' fonts divided back), as the page is there.

const state = (window.__attentionExplorerCharts ??= {
  plotly: null, // the promise of plotly.js, loaded once per page
  waiting: new Map(), // plot div -> figure to draw
  drawing: false,
  shown: new WeakMap(), // plot div -> {text, size} of the figure it was last given (size: as it asks, see ownSize)
  enlarged: null, // the plot shown full screen, if any
  margins: new WeakMap(), // plot div -> {key, margins} of its last drawing (see labelsKey)
});

// Full screen for a projector, as Streamlit's own chart offered: the plot takes the whole screen, and gets its own
// width and height back when it leaves.
const FULL_SCREEN_ICON = {
  width: 24,
  height: 24,
  path: "M7 14H5v5h5v-2H7v-3zm-2-4h2V7h3V5H5v5zm12 7h-3v2h5v-5h-2v3zM14 5v2h3v3h2V5h-5z",
};

function fullScreenButton(title) {
  return {
    name: "fullscreen",
    title,
    icon: FULL_SCREEN_ICON,
    click: (plot) => (document.fullscreenElement ? document.exitFullscreen() : plot.requestFullscreen()),
  };
}

function screenSize() {
  return { width: window.innerWidth, height: window.innerHeight };
}

// Taken when the figure is given: Plotly keeps the layout object it draws and changes it when relaid out.
function ownSize(layout) {
  return { width: layout.width ?? null, height: layout.height ?? null }; // null: its column's width, Plotly's height
}

function onFullScreenChange() {
  const Plotly = window.Plotly;
  const left = state.enlarged;
  state.enlarged = document.fullscreenElement?.classList.contains("live-chart") ? document.fullscreenElement : null;
  if (left && left !== state.enlarged && left.data) Plotly.relayout(left, state.shown.get(left).size);
  if (state.enlarged?.data) Plotly.relayout(state.enlarged, screenSize());
}

if (!state.watchesFullScreen) {
  state.watchesFullScreen = true; // once per page, however often this module is evaluated
  document.addEventListener("fullscreenchange", onFullScreenChange);
}

function plotly(url) {
  // Started already, as the page began (explorer.charts.preload_plotly), if app.py ran it
  state.plotly ??= window.__explorerPlotly ?? new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = url;
    script.onload = () => resolve(window.Plotly);
    script.onerror = () => reject(new Error(url));
    document.head.appendChild(script);
  });
  return state.plotly;
}

// Plotly grows a chart's margins to fit its tick labels, titles and colour bars (automargin) and lays the chart out
// again when they grow: from the figure's own margins, at every update. A chart updated with labels like those of its
// last drawing, at the same width, starts from that drawing's margins instead (benchmarks/MEASUREMENTS.md); Plotly
// still grows them if the new labels need more, and other labels start from the figure's own margins again.
function labelsKey(figure, width) {
  const { data = [], layout = {} } = figure;
  const text = (title) => (title && typeof title === "object" ? title.text : title) ?? null;
  // A chart's and an axis's title take their lines' height from the margins, whatever they say (a title naming the
  // sequence length changes at every press of its slider)
  const lines = (title) => (text(title) ? String(text(title)).split("<br>").length : 0);
  // strings as they are; numbers (positions, counts) by their widest count of digits
  const labels = (values) => {
    if (!Array.isArray(values) || !values.length) return null;
    if (typeof values[0] === "string") return values;
    return values.reduce((widest, v) => Math.max(widest, String(v).length), 0);
  };
  const axes = Object.keys(layout)
    .filter((name) => /^([xy]axis|coloraxis|legend)/.test(name))
    .sort()
    .map((name) => {
      const axis = layout[name] ?? {};
      return [name, axis.ticktext, lines(axis.title), axis.showticklabels, axis.tickangle, text(axis.colorbar?.title)];
    });
  const traces = data.map((t) => [t.type, t.name, t.showlegend, labels(t.x), labels(t.y), text(t.colorbar?.title)]);
  return JSON.stringify([width, lines(layout.title), layout.showlegend, axes, traces]);
}

function withMarginsOf(drawing, layout) {
  const own = layout.margin ?? {};
  const margin = { ...own };
  for (const side of ["l", "r", "t", "b"]) margin[side] = Math.max(own[side] ?? 0, drawing[side]);
  return { ...layout, margin };
}

// A presented chart on a phone's screen (spec.narrow.phone), else the chart's narrow layout where it is narrow, or
// null: its own figure.
function variantFor(spec, div) {
  const phone = spec.narrow?.phone;
  if (phone && window.innerWidth < phone.screenBelow) return phone;
  if (spec.narrow && div.clientWidth > 0 && div.clientWidth < spec.narrow.below) return spec.narrow;
  return null;
}

function isNarrow(spec, div) {
  return variantFor(spec, div) !== null;
}

// The figure's own layout, or its narrow one where the chart is narrow.
function layoutFor(spec, div) {
  return variantFor(spec, div)?.layout ?? spec.figure.layout;
}

// --- titles broken to the chart's width ----------------------------------------------------------------------------
// Plotly does not wrap a title, and only the browser knows the chart's width: the server sends each title whole,
// hung below the toolbar with a top margin for its own lines (explorer.charts.title_below_toolbar), and here each
// title (an animation's frames' too) is broken into as few lines as fit the chart, of about one length, the margin
// grown to hold the most lines any frame has. Broken on the server at a fixed 48 letters, a title took two lines of
// a few words beside a 1,100 px plot.
const TITLE_SLACK = 12; // px kept clear at the chart's right edge
const PHRASE_SLACK = 0.5; // a phrase's break may be this share of a line off where an even break would fall
let measurer = null;

function textWidth(text, font) {
  measurer ??= document.createElement("canvas").getContext("2d");
  measurer.font = font;
  return measurer.measureText(text.replace(/<[^>]+>/g, "")).width;
}

function isWide(ch) {
  return /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/.test(ch);
}

// Where a line may break in `line` (indices outside Plotly's tags): at a space, before a bracket, or between two
// Chinese characters (Chinese puts no spaces between words); "phrase" breaks (before a bracket, after a comma or a
// colon) are taken first when near enough the even place: a break between two characters may be inside a word.
function breaks(line) {
  const out = [];
  let inTag = false;
  let previous = "";
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (ch === "<") inTag = true;
    if (!inTag && i && previous) {
      const next = line.slice(i + 1).replace(/<[^>]+>/g, "")[0] ?? "";
      const phrase = "（(".includes(ch) || "，、：；,:;".includes(previous) || (ch === " " && "(（".includes(next));
      if (ch === " " || ch === "（" || (isWide(previous) && isWide(ch))) out.push({ at: i, phrase });
    }
    if (!inTag) previous = ch;
    if (ch === ">") inTag = false;
  }
  return out;
}

// One line of a title in as few lines as fit `room` px, each about as long as the others.
function inLines(line, font, room) {
  const whole = textWidth(line, font);
  if (whole <= room) return [line];
  const cuts = breaks(line);
  for (let count = Math.ceil(whole / room); count <= 8; count++) {
    const lines = [];
    let start = 0;
    for (let left = count; left > 1; left--) {
      const rest = textWidth(line.slice(start), font);
      const even = rest / left;
      const width = (cut) => textWidth(line.slice(start, cut.at), font);
      const fitting = cuts.filter((cut) => cut.at > start && width(cut) <= room);
      if (!fitting.length) break;
      const off = (cut) => Math.abs(width(cut) - even);
      const near = fitting.filter((cut) => cut.phrase && off(cut) <= PHRASE_SLACK * even);
      const cut = (near.length ? near : fitting).reduce((best, c) => (off(c) < off(best) ? c : best));
      lines.push(line.slice(start, cut.at));
      start = line[cut.at] === " " ? cut.at + 1 : cut.at;
    }
    lines.push(line.slice(start));
    if (lines.length === count && lines.every((l) => textWidth(l, font) <= room)) return lines;
  }
  return [line]; // no break fits (one long word): as it is
}

function titleOf(layout) {
  const title = layout?.title;
  const text = title && typeof title === "object" ? title.text : title;
  return text ? String(text) : "";
}

function titleFont(layout) {
  const own = (typeof layout.title === "object" && layout.title?.font) || {};
  const usual = layout.template?.layout?.title?.font ?? {};
  const font = { size: 17, family: "sans-serif", weight: "normal", ...usual, ...own };
  return { size: font.size, css: `${font.weight} ${font.size}px ${font.family}` };
}

// The layout and frames with every title broken to `width` px, the top margin holding the most lines.
function titlesBroken(layout, frames, width) {
  if (!titleOf(layout) || !(width > 0)) return { layout, frames };
  const font = titleFont(layout);
  const room = width - TITLE_SLACK;
  const broken = (text) => text.split(/<br\s*\/?>/).flatMap((line) => inLines(line, font.css, room)).join("<br>");
  const withTitle = (own) => {
    const text = titleOf(own);
    if (!text) return own;
    const title = typeof own.title === "object" ? own.title : {};
    return { ...own, title: { ...title, text: broken(text) } };
  };
  const out = withTitle(layout);
  const outFrames = frames?.map((frame) => (frame.layout ? { ...frame, layout: withTitle(frame.layout) } : frame));
  const lines = Math.max(
    ...[out, ...(outFrames ?? []).map((f) => f.layout)].map((l) => titleOf(l).split("<br>").length),
  );
  // as explorer.charts.title_below_toolbar reckons: the title hung `below` px from the top, lines of 1.3 its size
  const height = layout.height ?? 450;
  const below = Math.round((1 - (out.title.y ?? 1)) * height);
  const need = below + Math.round(lines * font.size * 1.3) + 12;
  const margin = { ...(layout.margin ?? {}) };
  margin.t = Math.max(margin.t ?? 0, need);
  return { layout: { ...out, margin }, frames: outFrames };
}

// --- y axis titles broken to their plot's height -------------------------------------------------------------------
// A y axis title longer than its plot is tall ran up past the plot into the chart's title (a slide's 190-px plot in a
// 680-px window, in Chinese); only the drawn plot knows its height, so once drawn each such title is broken into as
// few lines as fit it (as chart titles are to the chart's width) and laid out again.

function yTitlesBroken(div) {
  const full = div._fullLayout;
  const update = {};
  for (const name of Object.keys(full).filter((key) => /^yaxis\d*$/.test(key))) {
    const axis = full[name];
    // the figure's own title: Plotly's full layout holds a placeholder ("Click to enter Y axis title") where it has none
    const text = titleOf(div.layout?.[name]);
    if (!text || !(axis._length > 0)) continue;
    const font = axis.title.font;
    const css = `${font.weight ?? "normal"} ${font.size}px ${font.family}`;
    const broken = String(text)
      .split(/<br\s*\/?>/)
      .flatMap((line) => inLines(line, css, axis._length))
      .join("<br>");
    if (broken !== text) update[`${name}.title.text`] = broken;
  }
  return Object.keys(update).length ? window.Plotly.relayout(div, update) : null;
}

// A value with every font size divided by `by` (presenter mode's scaling undone: explorer/present.py _scaled).
function unscaled(value, by, font = false) {
  if (Array.isArray(value)) return value.map((item) => unscaled(item, by));
  if (value === null || typeof value !== "object") return value;
  const out = {};
  for (const [key, item] of Object.entries(value)) {
    if (font && key === "size") {
      const divide = (size) => (typeof size === "number" ? size / by : size);
      out[key] = Array.isArray(item) ? item.map(divide) : divide(item);
    } else {
      const isFont = key.endsWith("font") && item !== null && typeof item === "object" && !Array.isArray(item);
      out[key] = unscaled(item, by, isFont);
    }
  }
  return out;
}

// The animation's frames as drawn: with the narrow layout's own frame layouts ("frameLayouts": one per frame, over
// its layout: a frame's notes placed for a phone), at their usual size on a phone's screen in presenter mode.
function framesFor(spec, div) {
  const variant = variantFor(spec, div);
  const frames = variant?.unscale && spec.figure.frames ? unscaled(spec.figure.frames, variant.unscale) : spec.figure.frames;
  const own = variant?.frameLayouts; // at their usual size already
  return frames && own ? frames.map((frame, i) => ({ ...frame, layout: { ...frame.layout, ...own[i] } })) : frames;
}

// The traces as drawn: where the chart is narrow and the figure asks, without their points' text labels (names of
// points close together pile up on a phone, while the legend, a tap and the table beside the chart still name them),
// or with them where the figure placed them for a phone ("textposition": per trace, a list or null).
function dataFor(spec, div) {
  const variant = variantFor(spec, div);
  if (!variant) return spec.figure.data;
  const data = variant.unscale ? unscaled(spec.figure.data, variant.unscale) : spec.figure.data;
  const places = variant.textposition;
  if (places) return data.map((trace, i) => (places[i] ? { ...trace, textposition: places[i] } : trace));
  if (!variant.unlabelled) return data;
  return data.map((trace) =>
    typeof trace.mode === "string" && trace.mode.includes("text")
      ? { ...trace, mode: trace.mode.replace(/\+?text/, "").replace(/^\+/, "") || "markers" }
      : trace,
  );
}

function draw(div, spec) {
  state.waiting.delete(div); // re-inserted at the end: charts are drawn in the order their figures came
  state.waiting.set(div, spec);
  plotly(spec.plotly).then(
    (Plotly) => {
      if (!state.drawing) {
        state.drawing = true;
        drawNext(Plotly);
      }
    },
    () => {
      div.textContent = spec.said.unloaded;
    },
  );
}

function drawNext(Plotly) {
  const next = state.waiting.entries().next();
  if (next.done) {
    state.drawing = false;
    return;
  }
  const [div, spec] = next.value;
  state.waiting.delete(div);
  if (div.isConnected) {
    try {
      const config = { ...spec.config, modeBarButtonsToAdd: [fullScreenButton(spec.said.fullscreen)] };
      const usual = layoutFor(spec, div);
      const shown = state.shown.get(div);
      shown.size = ownSize(usual);
      shown.narrow = isNarrow(spec, div);
      const titled = titlesBroken(usual, framesFor(spec, div), div.clientWidth);
      const own = titled.layout;
      shown.title = titleOf(own);
      let layout = div === state.enlarged ? { ...own, ...screenSize() } : own; // new data while full screen
      const data = dataFor(spec, div);
      const key = labelsKey({ ...spec.figure, data, layout: own }, div.clientWidth);
      const last = state.margins.get(div);
      if (last?.key === key) layout = withMarginsOf(last.margins, layout);
      const frames = titled.frames;
      Plotly.react(div, { ...spec.figure, data, layout, frames, config }) // frames too: the animated charts
        .then(() => yTitlesBroken(div))
        .then(() => {
          const { l, r, t, b } = div._fullLayout._size;
          state.margins.set(div, { key, margins: { l, r, t, b } });
          reachableByKeyboard(div);
          keepCellTextReadable(div);
          keepBarTitlesClear(div);
        });
    } catch (error) {
      div.textContent = spec.said.failed.replace("{error}", error.message); // and the charts after it still are
    }
  }
  // After this frame is painted: the chart just drawn shows before the next one is started.
  afterPaint(() => drawNext(Plotly));
}

// Presenter mode ("leastCellText": px): numbers Plotly fits into heatmap cells too small to read from the back row are
// taken away, at every drawing (a resize draws them again); the hover still gives each cell's value.
function keepCellTextReadable(div) {
  if (!state.shown.get(div)?.spec?.leastCellText) return;
  if (!div.__cellTextWatched) {
    div.__cellTextWatched = true;
    div.on("plotly_afterplot", () => dropSmallCellText(div));
  }
  dropSmallCellText(div);
}

function dropSmallCellText(div) {
  const spec = state.shown.get(div)?.spec;
  // Not on a phone's screen, where a presented chart is drawn at its usual sizes and read at arm's length: there
  // every cell's 13-px number was taken away (the lesson's step 13 and /axes showed a grid of bare colours)
  const least = spec && !variantFor(spec, div)?.unscale ? (spec.leastCellText ?? 0) : 0;
  for (const label of div.querySelectorAll("g.heatmap-label")) {
    const text = label.querySelector("text");
    if (text && parseFloat(text.style.fontSize || getComputedStyle(text).fontSize) < least) label.remove();
  }
}

// A flat colour bar (explorer/grid.py with_flat_colorbars: a phone's bars under the panels, placed in the chart's
// pixels) has its title above it, where Plotly misplaces it: off by the bar's thickness times the chart's height over
// the plot's (on the decode step's 306-px chart the title lay on its bar, on the others 2-3 px into it). Only the drawn
// chart knows the plot's height: each such title is lifted to stand BAR_TITLE_GAP px above its bar, at every drawing.
const BAR_TITLE_GAP = 3;

function keepBarTitlesClear(div) {
  if (div.__barTitlesWatched) return; // each later drawing ends in plotly_afterplot, which lifts them
  div.__barTitlesWatched = true;
  div.on("plotly_afterplot", () => liftBarTitles(div));
  liftBarTitles(div);
  // and again once the page's fonts have come: a title measured in a fallback font stood 3 px lower in the real one
  document.fonts?.ready.then(() => liftBarTitles(div));
}

function liftBarTitles(div) {
  for (const bar of div.querySelectorAll(".colorbar")) {
    const title = bar.querySelector(".cbtitle");
    const fill = bar.querySelector(".cbfills")?.getBoundingClientRect();
    if (!title?.textContent || !fill || fill.width <= fill.height) continue; // a standing bar: Plotly's own place
    const lifted = Number(title.dataset.lifted ?? 0); // px this title was lifted at its last drawing
    const natural = title.getBoundingClientRect().bottom + lifted; // where Plotly put it
    const lift = Math.max(0, natural - (fill.top - BAR_TITLE_GAP));
    title.dataset.lifted = String(lift);
    title.setAttribute("transform", lift ? `translate(0,${-lift})` : "");
  }
}

// Plotly draws its buttons (an animation's ▶ Play and ❚❚ Pause) as SVG shapes that Tab passes by: each becomes a
// button a keyboard reaches and presses with Enter or Space, named by the text it shows.
function reachableByKeyboard(div) {
  for (const button of div.querySelectorAll(".updatemenu-button")) {
    if (button.hasAttribute("tabindex")) continue;
    button.setAttribute("tabindex", "0");
    button.setAttribute("role", "button");
    button.setAttribute("aria-label", button.textContent.trim());
    button.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" && event.key !== " ") return;
      event.preventDefault();
      button.dispatchEvent(new MouseEvent("click", { bubbles: true }));
    });
  }
}

// A browser paints no frame for a page it does not show (a tab opened behind others, a hidden window), so waiting
// for one alone would leave the page's other charts undrawn until it is looked at: a timer takes over then.
function afterPaint(run) {
  let done = false;
  const once = () => {
    if (!done) {
      done = true;
      run();
    }
  };
  requestAnimationFrame(() => setTimeout(once, 0));
  setTimeout(once, 200);
}

// Whether the chart's title breaks otherwise at its width now than where it was drawn: it is drawn again.
function titleMoved(shown, div) {
  const layout = layoutFor(shown.spec, div);
  return titleOf(titlesBroken(layout, null, div.clientWidth).layout) !== (shown.title ?? titleOf(layout));
}

export default function (component) {
  const { data, parentElement } = component;
  const text = new TextDecoder().decode(data);
  let div = parentElement.querySelector(":scope > div.live-chart");
  if (div && state.shown.get(div)?.text === text) return; // the same figure again: nothing to draw
  if (!div) {
    div = document.createElement("div");
    div.className = "live-chart";
    div.setAttribute("role", "figure"); // named below by its title and caption: what a screen reader says of it
    parentElement.appendChild(div);
    // The plot follows its column's width (a sidebar opened or closed, a window resized); its own height changing
    // when it is drawn is no reason to lay it out again, nor is being hidden for a moment (width 0: Streamlit hides a
    // keyed element while a rerun has not yet placed it) and shown again at the width it was drawn at.
    // Crossing the narrow layout's width (a phone turned, a window resized) draws the chart again in the other layout.
    let width = null;
    new ResizeObserver(([entry]) => {
      const now = Math.round(entry.contentRect.width);
      if (now === 0) return;
      const shown = state.shown.get(div);
      if (shown?.spec && div.data && (shown.narrow !== isNarrow(shown.spec, div) || titleMoved(shown, div))) {
        div.style.minHeight = `${layoutFor(shown.spec, div).height ?? 450}px`;
        draw(div, shown.spec);
      } else if (width !== null && now !== width && div.data) window.Plotly.Plots.resize(div);
      width = now;
    }).observe(div);
  }
  const spec = JSON.parse(text);
  div.setAttribute("aria-label", spec.label);
  state.shown.set(div, { text, spec, size: ownSize(spec.figure.layout), narrow: null });
  // The chart's height is taken at once: what follows it does not jump while it waits its turn to be drawn.
  div.style.minHeight = `${layoutFor(spec, div).height ?? 450}px`;
  draw(div, spec);
}
