"""What a learner waits for: a key press on the sidebar's sequence-length slider -> a chart redrawn with the new data.
(A page that does not read the sequence length gets its batch or d_model slider pressed instead, and the heatmaps page
its d_model at the largest settings; one that reads no sidebar slider, the trained model and the lab, is listed as
not timed.)

    python benchmarks/browser.py            # every page at default settings (10 presses), then at the largest
    python benchmarks/browser.py --quick    # CI's short mode: 1 press, 1 visit on heatmaps (no untimed one); fails only on a crash
    python benchmarks/browser.py --only-visits   # only a new visit: link -> first chart, per page, vs the bare app

Starts `streamlit run app.py` and a bare Streamlit app (one select slider, two small Plotly charts: Streamlit's own
floor) on free 127.0.0.1 ports and drives Debian's chromium with Playwright. Per press it times, in the page, from the
keydown event to the first frame after a Plotly chart holds figure data that differs from what it held before (a
MutationObserver and a frame loop watch the charts; nothing sleeps). The bare app is measured in the same run, its
presses alternating with the page's one by one, so the ratio holds on a shared machine. Before each timed press the
app gets a fresh seed (untimed), so every press computes at settings the server has not seen: no cache hit flatters
it; and every press starts from an idle page (no script running, and the browser done drawing what the last run
sent). Also counted per press, from the websocket: script runs (ForwardMsg new_session), bytes received, and when the
last run finished (the page idle, no running indicator).
Exit status: 0 unless a page or server crashed or a press never redrew a chart. Timings are reported, never fatal.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from deploy.served import CHARTS_READY, CHROMIUM, CHROMIUM_ARGS, SCRIPT_IDLE, StreamlitServer  # noqa: E402
from explorer.pages import PAGES  # noqa: E402
from explorer.settings import BATCH_CHOICES, D_MODEL_CHOICES, SEQ_LEN_CHOICES, Settings  # noqa: E402
from explorer.state import SLIDER_LABELS  # noqa: E402

SLIDER = SLIDER_LABELS["seq_len"]
# The sidebar slider pressed on each page: the sequence length where the page reads it, else the first of these the
# page reads (its PAGES entry says), so the press changes what its first chart shows. A page that reads none of them
# (the trained model, the lab) has no sidebar slider whose press redraws anything: it is listed, not timed.
SLIDERS = {
    "seq_len": (SLIDER, SEQ_LEN_CHOICES),
    "batch": (SLIDER_LABELS["batch"], BATCH_CHOICES),
    "d_model": (SLIDER_LABELS["d_model"], D_MODEL_CHOICES),
}
BUDGET_RATIO = 1.5  # issue 16: key press -> chart redrawn, every page at default settings, vs the bare app
LARGEST = Settings(
    d_model=8192, heads=128, groups=2, latent=4096, rope_dim=64, seq_len=6144, batch=128, dtype="float32"
)
# At the largest settings the heatmaps page computes a fixed 128 tokens, so a length press redraws nothing there (nor
# does a KV-groups press: the heads shown, 0-15, read KV head 0 at 2 groups and at 4, drawn from the same seeded
# streams): its d_model is pressed instead (8192 <-> 4096, new layers, new maps).
LARGEST_SLIDER = {"heatmaps": "d_model"}
LIMIT_S = 120  # one press, or one page opening (generous: the machine is shared)

BARE_APP = f"""
import plotly.graph_objects as go
import streamlit as st

n = st.sidebar.select_slider({SLIDER!r}, options={list(SEQ_LEN_CHOICES)!r}, value=64)
xs = list(range(16))
st.plotly_chart(go.Figure(go.Bar(x=xs, y=[(i * n) % 17 for i in xs]), layout_title_text=f"{{n}} tokens"))
st.plotly_chart(go.Figure(go.Scatter(x=xs, y=[(i + n) % 13 for i in xs]), layout_title_text=f"{{n}} tokens"))
"""

# Installed once per page load. arm() records the charts' figures; the keydown that follows starts the clock, and
# the first frame after any chart holds a figure unlike the recorded one stops it.
WATCHER = r"""() => {
  const charts = () => Array.from(document.querySelectorAll('.js-plotly-plot'));
  const digest = (value, depth) => {  // a cheap fingerprint of a figure's data and layout (typed arrays summed)
    if (value === null || value === undefined) return 'n';
    if (typeof value === 'number') return value.toPrecision(7);
    if (typeof value === 'string' || typeof value === 'boolean') return String(value);
    if (ArrayBuffer.isView(value) || (Array.isArray(value) && value.length && typeof value[0] === 'number')) {
      let s = 0; for (let i = 0; i < value.length; i++) s += (value[i] || 0) * ((i % 7) + 1);
      return `#${value.length}:${s.toPrecision(9)}`;
    }
    if (depth > 8) return '?';
    if (Array.isArray(value)) return '[' + value.map(v => digest(v, depth + 1)).join(',') + ']';
    if (typeof value === 'object') return '{' + Object.keys(value).filter(k => k !== 'template' && k[0] !== '_')
        .sort().map(k => k + ':' + digest(value[k], depth + 1)).join(',') + '}';
    return '';
  };
  const w = window.__lat = {seen: new Map(), before: new Map(), pressed: null, drawn: null, resolve: null};
  const fingerprint = g => digest(g.data, 0) + '|' + digest(g.layout, 0);
  w.arm = limit => {
    w.before = new Map(charts().map(g => [g, fingerprint(g)]));
    w.seen = new Map(charts().map(g => [g, [g.data, g.layout]]));
    w.pressed = null; w.drawn = null;
    return new Promise(resolve => { w.resolve = resolve; setTimeout(() => resolve(null), limit); });
  };
  const check = () => {
    if (w.pressed === null || w.drawn !== null) return;
    for (const g of charts()) {
      const last = w.seen.get(g);
      if (last && last[0] === g.data && last[1] === g.layout) continue;  // same objects: nothing new
      w.seen.set(g, [g.data, g.layout]);
      if (!g.data || !g._fullData || w.before.get(g) === fingerprint(g)) continue;
      w.drawn = -1;
      requestAnimationFrame(() => { w.drawn = performance.now(); w.resolve(w.drawn - w.pressed); });
      return;
    }
  };
  window.addEventListener('keydown', e => { if (w.resolve && w.pressed === null) w.pressed = performance.now(); }, true);
  new MutationObserver(check).observe(document.body, {subtree: true, childList: true, attributes: true});
  const loop = () => { check(); requestAnimationFrame(loop); };
  requestAnimationFrame(loop);
}"""
# The browser's main thread idle too: a run's last message can leave seconds of drawing behind it (the heatmaps page's
# charts ~1 s of CPU here), and a press made meanwhile would be timed behind that drawing. Resolves when the browser
# has had two idle periods in a row.
BROWSER_IDLE = """() => new Promise(resolve => requestIdleCallback(() => requestIdleCallback(() => resolve(true))))"""


# --- one tab ---------------------------------------------------------------------------------------------------------
@dataclass
class Wire:
    """What the websocket carried since the last reset: script runs started and finished, bytes, when."""

    runs: int = 0
    finished: list[float] = field(default_factory=list)
    bytes: int = 0
    rerun_requests: int = 0
    requested: float | None = None  # the browser asked for a rerun (after the slider's own debounce)
    started: float | None = None  # the first run's new_session arrived
    chart: float | None = None  # the first chart's data arrived

    def reset(self) -> None:
        self.runs, self.finished, self.bytes, self.rerun_requests = 0, [], 0, 0
        self.requested = self.started = self.chart = None


def watch_wire(tab, wire: Wire) -> None:
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    def received(payload) -> None:
        data = payload if isinstance(payload, bytes) else payload.encode()
        wire.bytes += len(data)
        msg = ForwardMsg()
        try:
            msg.ParseFromString(data)
        except Exception:
            return
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            wire.runs += 1
            wire.started = wire.started or time.perf_counter()
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element" and wire.chart is None:
            if msg.delta.new_element.WhichOneof("type") in ("plotly_chart", "bidi_component"):
                wire.chart = time.perf_counter()
        elif kind == "script_finished":
            wire.finished.append(time.perf_counter())

    def sent(payload) -> None:
        msg = BackMsg()
        try:
            msg.ParseFromString(payload if isinstance(payload, bytes) else payload.encode())
        except Exception:
            return
        if msg.WhichOneof("type") == "rerun_script":
            wire.rerun_requests += 1
            wire.requested = wire.requested or time.perf_counter()

    tab.on("websocket", lambda ws: (ws.on("framereceived", received), ws.on("framesent", sent)))


def settle(tab, wire: Wire, quiet: float = 0.4) -> float:
    """Wait until no script runs (no running indicator, and nothing finished for `quiet` s); the last finish time."""
    deadline = time.perf_counter() + LIMIT_S
    while time.perf_counter() < deadline:
        tab.wait_for_function(SCRIPT_IDLE, polling=50, timeout=LIMIT_S * 1000)
        last = wire.finished[-1] if wire.finished else 0.0
        if wire.runs and len(wire.finished) >= wire.runs and time.perf_counter() - last >= quiet:
            tab.evaluate(BROWSER_IDLE)
            return last
        tab.wait_for_timeout(50)
    raise TimeoutError("the page did not go idle")


def set_seed(tab, wire: Wire, seed: int) -> None:
    box = tab.locator('[data-testid="stSidebar"] [data-testid="stNumberInput"] input')
    box.fill(str(seed))
    wire.reset()
    box.press("Enter")
    settle(tab, wire)


@dataclass
class Presses:
    drawn_ms: list[float] = field(default_factory=list)  # key press -> chart redrawn with new data
    idle_ms: list[float] = field(default_factory=list)  # key press (sent) -> last script run finished
    runs: list[int] = field(default_factory=list)
    rerun_requests: list[int] = field(default_factory=list)
    bytes: list[int] = field(default_factory=list)
    phases: list[tuple[float, float, float]] = field(default_factory=list)  # press->request->run->chart data, ms


def page_slider(page: str) -> str | None:
    """The setting whose sidebar slider is pressed on page, or None when the page reads none of SLIDERS."""
    return next((name for name in SLIDERS if name in PAGES[page].uses), None)


class Slider:
    """One open tab of url whose setting's slider is pressed, ArrowRight/ArrowLeft alternately from its value in
    settings (ArrowLeft first at the last option), so it moves between two neighbouring values."""

    def __init__(
        self, browser, url: str, charts: int, fresh_seed: int | None, settings: Settings, setting: str = "seq_len"
    ) -> None:
        self.label, self.choices = SLIDERS[setting]
        self.start_index = self.index = self.choices.index(getattr(settings, setting))
        self.first = "ArrowLeft" if self.start_index == len(self.choices) - 1 else "ArrowRight"
        self.fresh_seed = fresh_seed
        self.presses = 0
        self.result = Presses()
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            self.tab = self.context.new_page()
            self.tab.set_default_timeout(LIMIT_S * 1000)
            self.wire = Wire()
            watch_wire(self.tab, self.wire)
            self.tab.goto(url)
            self.tab.wait_for_function(CHARTS_READY, arg=charts, polling=100)
            settle(self.tab, self.wire)
            self.tab.evaluate(WATCHER)
        except Exception:
            self.context.close()
            raise
        self.thumb = self.tab.locator(f'[data-testid="stSidebar"] input[type="range"][aria-label="{self.label}"]')

    def press(self) -> None:
        """One timed press (after an untimed fresh seed, if asked for), added to self.result."""
        tab, wire, result = self.tab, self.wire, self.result
        if self.fresh_seed is not None:
            set_seed(tab, wire, self.fresh_seed + self.presses)
        self.presses += 1
        opposite = {"ArrowLeft": "ArrowRight", "ArrowRight": "ArrowLeft"}[self.first]
        key = self.first if self.index == self.start_index else opposite
        self.index += 1 if key == "ArrowRight" else -1
        self.thumb.focus()
        tab.evaluate("limit => { window.__lat.done = window.__lat.arm(limit); }", LIMIT_S * 1000)
        wire.reset()
        sent = time.perf_counter()
        tab.keyboard.press(key)
        drawn = tab.evaluate("() => window.__lat.done")
        if drawn is None:
            raise TimeoutError(f"no chart showed new data within {LIMIT_S} s of the press")
        last = settle(tab, wire)
        if tab.locator('[data-testid="stException"]').count():
            raise RuntimeError(
                f"the page shows an exception: {tab.locator('[data-testid=stException]').first.inner_text()[:300]}"
            )
        shown = self.thumb.get_attribute("aria-valuetext")
        if shown != str(self.choices[self.index]):
            raise RuntimeError(f"the slider shows {shown}, expected {self.choices[self.index]}")
        result.drawn_ms.append(drawn)
        result.idle_ms.append((last - sent) * 1000)
        result.runs.append(wire.runs)
        result.rerun_requests.append(wire.rerun_requests)
        result.bytes.append(wire.bytes)
        if wire.requested and wire.started and wire.chart:
            result.phases.append(
                (
                    (wire.requested - sent) * 1000,
                    (wire.started - wire.requested) * 1000,
                    (wire.chart - wire.started) * 1000,
                )
            )

    def close(self) -> None:
        self.context.close()


def measure(*sliders: Slider, presses: int) -> None:
    """presses timed presses on each slider, taken in turn (bare app, page, bare app, ...), so that a busy spell of
    the shared machine falls on both alike; then the tabs are closed."""
    try:
        for _ in range(presses):
            for slider in sliders:
                slider.press()
    finally:
        for slider in sliders:
            slider.close()


# --- a fresh visit ---------------------------------------------------------------------------------------------------
FIRST_CHART_BUDGET = 1.3  # issue 28: a new browser session on a warm server, link -> first chart, vs the bare app
# Installed before the page's own scripts: the first frame after a Plotly chart holds figure data, in ms from the
# navigation's start (performance.now()'s zero).
FIRST_CHART = r"""(() => {
  const w = window.__first = {chart: null};
  const check = () => {
    if (w.chart !== null) return;
    const drawn = Array.from(document.querySelectorAll('.js-plotly-plot')).some(g => g._fullData && g._fullData.length);
    if (drawn) { w.chart = -1; requestAnimationFrame(() => { w.chart = performance.now(); }); return; }
    requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
})()"""
# What the visit spent before it: the plotly.js bundle fetched (the app loads plotly.min.js; the bare app's chart
# comes with Streamlit's own bundle) and every script's bytes.
SCRIPTS = """() => performance.getEntriesByType('resource').filter(e => e.initiatorType === 'script' || /\\.js$/.test(e.name))
    .map(e => ({name: e.name.split('/').pop(), end: e.responseEnd, bytes: e.encodedBodySize}))"""


@dataclass
class Visits:
    chart_ms: list[float] = field(default_factory=list)  # navigation start -> first chart drawn
    data_ms: list[float] = field(default_factory=list)  # goto -> the first chart's data arrived on the websocket
    plotly_ms: list[float] = field(default_factory=list)  # navigation start -> plotly.min.js fetched (the app only)
    script_kb: list[float] = field(default_factory=list)


def visit(browser, url: str, result: Visits) -> None:
    """One new browser session (cold browser cache, as a student's first visit) opening url, until its first chart."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        tab = context.new_page()
        tab.set_default_timeout(LIMIT_S * 1000)
        tab.add_init_script(FIRST_CHART)
        wire = Wire()
        watch_wire(tab, wire)
        sent = time.perf_counter()
        tab.goto(url)
        tab.wait_for_function("() => window.__first && window.__first.chart > 0", polling=50)
        result.chart_ms.append(tab.evaluate("() => window.__first.chart"))
        if wire.chart is not None:
            result.data_ms.append((wire.chart - sent) * 1000)
        scripts = tab.evaluate(SCRIPTS)
        result.script_kb.append(sum(s["bytes"] for s in scripts) / 1e3)
        result.plotly_ms += [s["end"] for s in scripts if s["name"].startswith("plotly")][:1]
        settle(tab, wire)
    finally:
        context.close()


def first_chart_line(name: str, ours: Visits, bare: Visits) -> str:
    ratio = statistics.median(ours.chart_ms) / statistics.median(bare.chart_ms)
    text = (
        f"{name:<9} {spread(ours.chart_ms)}  bare {statistics.median(bare.chart_ms):5,.0f} ms  ratio {ratio:4.2f}x "
        f"{'ok' if ratio <= FIRST_CHART_BUDGET else 'OVER'}"
    )
    if ours.data_ms:
        text += f"  | first chart's data on the wire {statistics.median(ours.data_ms):,.0f} ms after the link opened"
    if ours.plotly_ms:
        text += f"; plotly.js fetched at {statistics.median(ours.plotly_ms):,.0f} ms"
    return text + (
        f"; scripts {statistics.median(ours.script_kb):,.0f} kB (bare app {statistics.median(bare.script_kb):,.0f} kB)"
    )


def measure_visits(browser, app_url: str, bare_url: str, pages: list[str], visits: int, untimed: bool = True) -> bool:
    """Each page opened `visits` times in new sessions, alternating with the bare app; a page's first opening (its
    server-side caches filled, as the class's first student fills them) is not timed, unless `untimed` is False (a
    check's one visit, which then computes too). Returns False on a failure."""
    ok = True
    print(
        f"== a new visit: link -> first chart drawn, {visits} fresh browser sessions per page on a warm server "
        f"(budget: <= {FIRST_CHART_BUDGET}x the bare app, measured alongside) =="
    )
    for name in pages:
        try:
            url = link(app_url, name, Settings())
            if untimed:
                visit(browser, url, Visits())  # the server's caches for this link
            ours, bare = Visits(), Visits()
            for _ in range(visits):
                visit(browser, bare_url, bare)
                visit(browser, url, ours)
            print(first_chart_line(name, ours, bare), flush=True)
        except Exception as error:
            ok = False
            print(f"{name:<9} FAILED: {type(error).__name__}: {str(error).splitlines()[0][:300]}", flush=True)
    return ok


# --- report ----------------------------------------------------------------------------------------------------------
def row_name(page: str, setting: str) -> str:
    """The page's row in the printout, naming the slider pressed when it is not the sequence length."""
    return page + ("" if setting == "seq_len" else f" ({setting})")


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):6,.0f} ms ({min(values):,.0f}-{max(values):,.0f})"


def line(name: str, ours: Presses, bare: Presses | None) -> str:
    text = f"{name:<9} {spread(ours.drawn_ms)}"
    if bare is not None:
        ratio = statistics.median(ours.drawn_ms) / statistics.median(bare.drawn_ms)
        text += f"  bare {statistics.median(bare.drawn_ms):5,.0f} ms  ratio {ratio:4.2f}x {'ok' if ratio <= BUDGET_RATIO else 'OVER'}"
    runs = sorted(set(ours.runs))
    text += (
        f"  | idle {statistics.median(ours.idle_ms):,.0f} ms after the press; script runs per press "
        f"{'/'.join(map(str, runs))} (rerun requests {'/'.join(map(str, sorted(set(ours.rerun_requests))))}); "
        f"{statistics.median(ours.bytes) / 1e3:,.0f} kB received"
    )
    for who, run in (("", ours), ("bare: ", bare)):
        if run is not None and run.phases:
            request, start, chart = (statistics.median(p[i] for p in run.phases) for i in range(3))
            text += (
                f"\n{'':<9} {who}press -> rerun requested {request:,.0f} ms (the slider's debounce) -> run started "
                f"{start:,.0f} ms -> first chart's data sent {chart:,.0f} ms; then the browser draws (medians)"
            )
    return text


def link(base: str, page: str, settings: Settings) -> str:
    return f"{base}/{'' if page == 'overview' else page}?{urlencode(settings.to_link())}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI's short mode: 1 press, heatmaps")
    parser.add_argument("--presses", type=int, default=None, help="timed presses per page (default 10, --quick 1)")
    parser.add_argument("--page", choices=list(PAGES), action="append", default=[], help="only this page (repeatable)")
    parser.add_argument("--skip-largest", action="store_true")
    parser.add_argument("--visits", type=int, default=None, help="fresh sessions per page (default 5, --quick 1)")
    parser.add_argument("--only-visits", action="store_true", help="only the fresh visits, no key presses")
    args = parser.parse_args()
    visits = args.visits or (1 if args.quick else 5)  # --quick: each thing once (a check; medians need the full run)
    presses = args.presses or (1 if args.quick else 10)
    # --quick: the page whose press computes most (the overview is visited and pressed once already, as the
    # first measure below, which pays the imports)
    pages = args.page or (["heatmaps"] if args.quick else list(PAGES))
    largest = not (args.quick or args.skip_largest)

    from playwright.sync_api import sync_playwright

    def interrupted(signum, frame):  # a SIGTERM stops the servers too (the finally below)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)

    work = Path(tempfile.mkdtemp(prefix="explorer-browser-bench-"))
    servers: list[StreamlitServer] = []
    failed = False
    try:
        (work / "bare").mkdir()
        (work / "bare" / "bare_app.py").write_text(BARE_APP)
        shutil.copytree(REPO / ".streamlit", work / "bare" / ".streamlit")  # same theme and server settings
        app = StreamlitServer(work)
        servers.append(app)
        bare = StreamlitServer(work, script=work / "bare" / "bare_app.py")
        servers.append(bare)
        app.start(LIMIT_S)
        bare.start(LIMIT_S)
        print(
            f"Key press on '{SLIDER}' (on a page that does not read it: the first sidebar slider it reads) -> first "
            f"chart redrawn with new data: median (range) of {presses} presses, "
            f"chromium headless on {os.cpu_count()} cores (load average {os.getloadavg()[0]:.1f})."
        )
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                measure(
                    Slider(browser, link(app.url, "overview", Settings()), 1, None, Settings()), presses=1
                )  # imports
                # --quick: each thing once (a visit's chromium work is most of a quick run's)
                failed = not measure_visits(browser, app.url, bare.url, pages, visits, untimed=not args.quick)
                if args.only_visits:
                    return 1 if failed else 0
                print(f"== default settings (budget: <= {BUDGET_RATIO}x the bare app, measured alongside) ==")
                for seed_base, name in enumerate(pages):
                    if (setting := page_slider(name)) is None:
                        print(f"{name:<9} not timed: it reads no sidebar slider (a press redraws nothing here)")
                        continue
                    try:
                        bare_tab = Slider(browser, bare.url, 2, None, Settings())
                        page_tab = Slider(
                            browser, link(app.url, name, Settings()), 1, 1000 * (seed_base + 1), Settings(), setting
                        )
                        measure(bare_tab, page_tab, presses=presses)
                        print(
                            line(
                                row_name(name, setting),
                                page_tab.result,
                                bare_tab.result,
                            ),
                            flush=True,
                        )
                    except Exception as error:
                        failed = True
                        print(
                            f"{name:<9} FAILED: {type(error).__name__}: {str(error).splitlines()[0][:300]}", flush=True
                        )
                    if not app.alive():
                        raise RuntimeError(f"the app's server died: {app.log_text()[-2000:]}")
                if largest:
                    start = replace(LARGEST)
                    index = SEQ_LEN_CHOICES.index(start.seq_len)
                    print(
                        f"== largest settings (d_model {start.d_model}, {start.heads} heads, {start.groups} KV groups, "
                        f"latent {start.latent}, seq_len {start.seq_len} <-> {SEQ_LEN_CHOICES[index + 1]}, batch "
                        f"{start.batch}, {start.dtype}; no ratio budget) =="
                    )
                    for seed_base, name in enumerate(pages):
                        if (setting := LARGEST_SLIDER.get(name, page_slider(name))) is None:
                            continue
                        try:
                            page_tab = Slider(
                                browser, link(app.url, name, start), 1, 5000 + 1000 * seed_base, start, setting
                            )
                            measure(page_tab, presses=presses)
                            print(
                                line(row_name(name, setting), page_tab.result, None),
                                flush=True,
                            )
                        except Exception as error:
                            failed = True
                            print(
                                f"{name:<9} FAILED: {type(error).__name__}: {str(error).splitlines()[0][:300]}",
                                flush=True,
                            )
                        if not app.alive():
                            raise RuntimeError(f"the app's server died: {app.log_text()[-2000:]}")
            finally:
                browser.close()
    except (Exception, KeyboardInterrupt) as error:
        failed = True
        print(f"!! {type(error).__name__}: {error}")
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
