// A session whose websocket comes back on another replica (deploy/serve.py: its replica died, the balancer sent the
// tab elsewhere) finds a new, empty session there: Streamlit's frontend keeps showing the page but does not rerun it
// (it expects its own server to have kept the session), so buttons such as a deferred download would find nothing.
// When the connection comes back, this loads the page again from its address, which holds the whole view (page,
// settings, language): the new replica runs it as a fresh link. (A rerun by the "Rerun" key sent the old server's
// page hash, which a fresh server, before its first st.navigation, read through the pages/ folder: the menu showed
// file names.) Installed once per page.
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
      // Not at once: a restarted server reruns the page itself, and its first run (Streamlit's pages/ folder mode,
      // then app.py's menu) must finish before a reload starts another beside it. Reload once no script has run
      // for half a second.
      let idle = 0;
      const wait = w.setInterval(() => {
        idle = w.document.querySelector('[data-testid="stStatusWidget"]') ? 0 : idle + 1;
        if (idle >= 2) {
          w.clearInterval(wait);
          w.location.reload();
        }
      }, 250);
    }
    seen = state;
  };
  new MutationObserver(check).observe(w.document.body, { attributes: true, subtree: true, attributeFilter: ["data-test-connection-state"] });
  check();
})();
