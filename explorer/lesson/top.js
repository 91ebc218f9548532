// A new step opens at its top: the page is one scrolled area that a rerun keeps where it was, so a step reached
// with ← → (keys or buttons) or the menu from the foot of the last one opened at its question. data: {"step": n}.
const seen = (window.__attentionExplorerLessonTop ??= { step: null });

export default function (component) {
  const step = component.data?.step ?? null;
  if (step === seen.step) return;
  const first = seen.step === null; // a page just opened is at its top already (or where its link's anchor put it)
  seen.step = step;
  if (first) return;
  for (const area of [document.querySelector('[data-testid="stMain"]'), document.scrollingElement]) {
    if (area) area.scrollTop = 0;
  }
}
