// The lesson's arrow keys: ← the previous step, → the next, sent to the server as a trigger value ("previous" or
// "next"). Keys meant for something else are left alone: with a modifier held, or while a text box, a slider, a
// menu or a chart has the focus.
const keys = (window.__attentionExplorerLessonKeys ??= { send: null, listening: false });

const ELSEWHERE =
  'input, textarea, select, [contenteditable="true"], [role="slider"], [role="combobox"], [role="listbox"], ' +
  '[role="radiogroup"], [role="tablist"], [role="menu"], .live-chart';

function onKey(event) {
  if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
  if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
  if (event.target instanceof Element && event.target.closest(ELSEWHERE)) return;
  if (!keys.send) return;
  event.preventDefault();
  // The element last clicked (a ← → button, a fold) would keep its focus frame on the next slide
  if (document.activeElement instanceof HTMLElement) document.activeElement.blur();
  keys.send("key", event.key === "ArrowLeft" ? "previous" : "next");
}

export default function (component) {
  const send = component.setTriggerValue;
  keys.send = send;
  if (!keys.listening) {
    document.addEventListener("keydown", onKey);
    keys.listening = true;
  }
  return () => {
    // Left the lesson (or mounted again): the newest mount keeps the keys.
    if (keys.send === send) {
      keys.send = null;
      document.removeEventListener("keydown", onKey);
      keys.listening = false;
    }
  };
}
