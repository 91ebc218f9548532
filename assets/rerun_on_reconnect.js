// A session whose websocket comes back on another replica (deploy/serve.py: its replica died, the balancer sent the
// tab elsewhere) finds a new, empty session there: Streamlit's frontend keeps showing the page but does not rerun it
// (it expects its own server to have kept the session), so buttons such as a deferred download would find nothing.
// When the connection comes back, this asks for a rerun the way the app's "Rerun" key (R) does: the frontend sends
// its link and every widget's value, and the new replica draws the same view. Installed once per page.
(() => {
  const w = window.parent && window.parent.document ? window.parent : window;
  if (w.__explorerRerunOnReconnect) return;
  w.__explorerRerunOnReconnect = true;
  let seen = null;
  const check = () => {
    const app = w.document.querySelector('[data-testid="stApp"]');
    if (!app) return;
    const state = app.getAttribute("data-test-connection-state");
    if (seen !== null && seen !== "CONNECTED" && state === "CONNECTED") {
      const key = { key: "r", code: "KeyR", keyCode: 82, which: 82, bubbles: true };
      w.document.body.dispatchEvent(new KeyboardEvent("keydown", key));
      w.document.body.dispatchEvent(new KeyboardEvent("keyup", key));
    }
    seen = state;
  };
  new MutationObserver(check).observe(w.document.body, { attributes: true, subtree: true, attributeFilter: ["data-test-connection-state"] });
  check();
})();
