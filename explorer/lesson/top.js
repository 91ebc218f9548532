// A new step opens at its top: the page is one scrolled area that a rerun keeps where it was, so a step reached
// with ← → (keys or buttons) or the menu from the foot of the last one opened at its question.
// In presenter mode it also reports the window's height while it is shorter than the screen a slide is laid out for
// (a projector's 768 px less the browser's toolbars), so that the server draws the slide's chart to fit; and null
// again once the window is that tall. data: {"step": n, "shorterThan": px or null, "screen": the height last reported}.
const seen = (window.__attentionExplorerLessonTop ??= { step: null, report: null, timer: null });

function toTop(step) {
  if (step === seen.step) return;
  const first = seen.step === null; // a page just opened is at its top already (or where its link's anchor put it)
  seen.step = step;
  if (first) return;
  for (const area of [document.querySelector('[data-testid="stMain"]'), document.scrollingElement]) {
    if (area) area.scrollTop = 0;
  }
}

function onResize() {
  // a window dragged taller fires many events: one report once it rests
  clearTimeout(seen.timer);
  seen.timer = setTimeout(() => seen.report?.(), 250);
}

export default function (component) {
  const data = component.data ?? {};
  toTop(data.step ?? null);
  const below = data.shorterThan ?? null;
  const report = () => {
    const height = below !== null && window.innerHeight < below ? window.innerHeight : null;
    if (height !== (data.screen ?? null)) component.setStateValue("screen", height);
  };
  seen.report = report;
  window.removeEventListener("resize", onResize);
  window.addEventListener("resize", onResize);
  report();
  return () => {
    if (seen.report === report) {
      seen.report = null;
      window.removeEventListener("resize", onResize);
    }
  };
}
