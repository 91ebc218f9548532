"""A real Streamlit server and Debian's chromium (driven by Playwright, never a downloaded browser).

The server is started once per session on a free localhost port and stopped at the end. A test that reads a page as a
new visitor sees it opens a new tab of the worker's one browser context (`visits`, `new_tab`): a new tab is a new
Streamlit session, and the context's cache spares each load compiling Streamlit's bundle and plotly.js again. A test
that needs a browser of its own (a reload, a restart, a classmate's link) takes `page`, a fresh context. A view that
several tests of a module read is loaded once for them (`views`); a module whose tests restart a server, or need one
no visitor has seen, shares one of its own (`own_server`).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import warnings
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from deploy.served import CHARTS_READY, SCRIPT_IDLE, StreamlitServer

STARTUP_SECONDS = 90  # until the server answers its health check (streamlit alone: torch is imported by a page's run)
VIEW_SECONDS = 90  # first chart of a page, and a rerun after a control moved (generous: the machine is shared)
# Streamlit's runs as a tab's websocket carries them, so that a wait is on a run, not on time: each rerun the page asks
# for (a BackMsg holding rerun_script, field 11) and each run that ends (a ForwardMsg holding script_finished, field 6,
# but for 2: ended early for a rerun, which follows) take the next number of one count. A click's or a key's rerun is
# counted as it leaves, before the server has started it, when Streamlit's own marks (its status widget, half a second
# into a run; stApp's script state) show nothing yet. Installed in every context the tests open (browser_context).
RUN_COUNTER = """(() => {
    if (window.__streamlitRuns) return;
    const runs = (window.__streamlitRuns = { count: 0, asked: 0, ended: 0, requests: 0 });
    // A protobuf message's top-level fields: number -> its value (varints) or true
    const fields = bytes => {
        const found = new Map();
        let at = 0;
        const varint = () => {
            let value = 0, shift = 0, byte;
            do { byte = bytes[at++]; value += (byte & 0x7f) * 2 ** shift; shift += 7; } while (byte & 0x80);
            return value;
        };
        while (at < bytes.length) {
            const tag = varint(), wire = tag & 7;
            if (wire === 0) found.set(Math.floor(tag / 8), varint());
            else if (wire === 2) { const length = varint(); at += length; found.set(Math.floor(tag / 8), true); }
            else if (wire === 1 || wire === 5) at += wire === 1 ? 8 : 4;
            else break;
        }
        return found;
    };
    const Socket = window.WebSocket;
    window.WebSocket = class extends Socket {
        constructor(...args) {
            super(...args);
            this.addEventListener('message', event => {
                if (!(event.data instanceof ArrayBuffer)) return;
                const status = fields(new Uint8Array(event.data)).get(6);
                if (status !== undefined && status !== true && status !== 2) runs.ended = ++runs.count;
            });
        }
        send(data) {
            if (ArrayBuffer.isView(data) && fields(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)).has(11))
                runs.asked = ++runs.count, runs.requests++;
            return super.send(data);
        }
    };
})()"""
# Settled: a run ended after the last one the tab asked for, none runs (a server's own rerun), and no page waits to
# draw what it deferred (deploy.served.SCRIPT_IDLE).
SETTLED = f"""() => {{
    const runs = window.__streamlitRuns;
    const state = document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state');
    return runs.ended > runs.asked && state !== 'running' && state !== 'rerunRequested' && ({SCRIPT_IDLE})();
}}"""
# A page's first run on a fresh server imports torch and builds its layers in the session's thread: ~22 s at a load
# of 4 on 2 cores, so several times that when the whole suite and other work share the machine. Waits after a
# (re)start are on conditions, with this much room, and fail with the server's log.
COLD_START_SECONDS = 360


@pytest.fixture(scope="session")
def log_dir():
    path = Path(tempfile.mkdtemp(prefix="explorer-browser-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def server(log_dir):
    running = StreamlitServer(log_dir)
    running.start(STARTUP_SECONDS)
    running.warm_up(COLD_START_SECONDS)  # as deploy/serve.py's replicas are: the first test does not pay a cold start
    yield running
    running.stop()


class OwnServer:
    """A module's own server, for tests that restart it or need one no visitor has seen yet (the shared one stays up
    for the others): one server for the module's tests, not one each, spares a start and a cold first run where a
    test can take the server as the test before left it."""

    def __init__(self, log_dir: Path) -> None:
        self.running = StreamlitServer(log_dir)
        self.lent = False

    def fresh(self) -> StreamlitServer:
        """The server as no visitor has seen it yet: started, or restarted if a test had it before."""
        if self.lent:
            self.running.restart(STARTUP_SECONDS)
        else:
            self.running.start(STARTUP_SECONDS)
        self.lent = True
        return self.running

    def as_left(self) -> StreamlitServer:
        """The server as the test before left it (started if none had it), for a test that restarts it."""
        if not self.running.alive():
            self.running.start(STARTUP_SECONDS)
        self.lent = True
        return self.running


@pytest.fixture(scope="module")
def own_server(log_dir):
    """The module's own server (OwnServer), stopped when the module ends."""
    own = OwnServer(log_dir)
    yield own
    own.running.stop()


def browser_context(browser, **options):
    """A new context of the browser (Playwright's options), its pages' Streamlit runs counted (RUN_COUNTER) for
    wait_until_idle. The caller closes it."""
    context = browser.new_context(**options)
    context.add_init_script(RUN_COUNTER)
    return context


@pytest.fixture(scope="session")
def visits(browser):
    """The worker's browser context that new_tab opens tabs in (downloads accepted, as `page` does)."""
    context = browser_context(browser, accept_downloads=True)
    yield context
    context.close()


def new_tab(visits, size: tuple[int, int]):
    """A new tab of the size (width, height) in the shared context: a new visitor to the server, with a warm cache.
    The caller closes it."""
    tab = visits.new_page()
    tab.set_viewport_size({"width": size[0], "height": size[1]})
    return tab


class Views:
    """Links that several tests of a module open at one size: each loaded once, in a tab of `visits`, and kept."""

    def __init__(self, visits, server) -> None:
        self.visits, self.server = visits, server
        self.kept: dict[tuple[str, tuple[int, int]], object] = {}

    def read(self, link: str, size: tuple[int, int] = (1400, 1000), chart_count: int = 1):
        """The tab showing server.url/link at size (width, height), for a test that reads it and leaves it as it
        found it; loaded by the first test that asks."""
        if (link, size) not in self.kept:
            tab = new_tab(self.visits, size)
            tab.set_default_timeout(VIEW_SECONDS * 1000)
            try:
                open_link(tab, f"{self.server.url}/{link}", chart_count)
            except Exception:  # not kept: the next test that asks loads it again
                tab.close()
                raise
            self.kept[link, size] = tab
        return self.kept[link, size]

    def take(self, link: str, size: tuple[int, int] = (1400, 1000), chart_count: int = 1):
        """The same tab, no longer kept, for a test that changes what it shows (a click, a key): the test closes it."""
        self.read(link, size, chart_count)
        return self.kept.pop((link, size))


@pytest.fixture(scope="module")
def views(visits, server):
    """The module's kept views (Views): a tab loaded once serves every test of the module that reads it."""
    kept = Views(visits, server)
    yield kept
    for tab in kept.kept.values():
        tab.close()


@pytest.fixture
def page(browser):
    context = browser_context(browser, viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    tab = context.new_page()
    tab.set_default_timeout(VIEW_SECONDS * 1000)
    yield tab
    context.close()


# --- reading the page back ------------------------------------------------------------------------------------------
def wait_for_app(page, chart_count: int = 1, *, seconds: float = VIEW_SECONDS) -> None:
    """Until the script finished (no running indicator) and chart_count plotly charts hold data. Checked every 100 ms,
    not at every frame (Playwright's default): the check then asks the browser for no frame of its own."""
    page.wait_for_function(CHARTS_READY, arg=chart_count, timeout=seconds * 1000, polling=100)
    wait_until_idle(page, seconds=seconds)


# What the page showed when its charts did not come: enough to tell a lost connection, a script still running, an
# exception or a chart that failed to draw apart.
PAGE_STATE = """() => ({
    connection: document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-connection-state'),
    running: !!document.querySelector('[data-testid="stStatusWidget"]'),
    plots: document.querySelectorAll('.js-plotly-plot').length,
    liveCharts: Array.from(document.querySelectorAll('div.live-chart')).map(c => c.innerText.slice(0, 80)),
    exceptions: Array.from(document.querySelectorAll('[data-testid="stException"]')).map(e => e.innerText.slice(0, 300)),
    main: (document.querySelector('[data-testid="stMain"]')?.innerText || '').slice(0, 300),
})"""


class Watched:
    """A tab's page errors and console errors as they come, for a failure to report with what the page showed."""

    def __init__(self, tab) -> None:
        self.tab = tab
        self.page_errors: list[str] = []
        self.console_errors: list[str] = []
        tab.on("pageerror", lambda error: self.page_errors.append(str(error)))
        tab.on("console", lambda message: self._console(message))

    def _console(self, message) -> None:
        if message.type == "error":
            self.console_errors.append(message.text[:300])

    def report(self, server, log_chars: int = 3000) -> str:
        """What the page showed (PAGE_STATE), its errors and the server log's tail: what a failure needs to be told
        apart (a lost connection, a run still going or stuck, an exception, a frontend that failed to draw)."""
        try:
            state = self.tab.evaluate(PAGE_STATE)
        except Exception as error:  # a crashed tab: say so, and report the rest
            state = f"unreadable ({error})"
        return (
            f"the page showed {state}; page errors {self.page_errors}; console errors {self.console_errors[-10:]}; "
            f"server log's tail:\n{server.log_text()[-log_chars:]}"
        )


def open_link(tab, url: str, chart_count: int = 1) -> None:
    """Open a link as a visitor does and wait for its charts, the server perhaps cold. A page that shows no chart
    within half the cold-start time is loaded once more, as a visitor would, and what it showed is reported as a
    warning: once seen in CI (a kv_cache link waited 360 s for a chart and passed on every other run), so the report
    says what to look at next time; a page that fails twice fails the test."""
    tab.goto(url)
    try:
        wait_for_app(tab, chart_count, seconds=COLD_START_SECONDS / 2)
    except PlaywrightTimeout:
        state = tab.evaluate(PAGE_STATE)
        warnings.warn(
            f"{url}: no chart after {COLD_START_SECONDS / 2:.0f} s, loaded again; the page showed {state}", stacklevel=2
        )
        tab.reload()
        wait_for_app(tab, chart_count, seconds=COLD_START_SECONDS)


def wait_until_idle(page, *, seconds: float = VIEW_SECONDS) -> None:
    """Until the last run the page asked for (a click's, a key's, its first) has ended and none runs (SETTLED). The
    page's context counts its runs (browser_context)."""
    counted = page.evaluate("() => !!window.__streamlitRuns")
    assert counted, "a page whose runs are not counted: open its context with browser_context"
    page.wait_for_function(SETTLED, timeout=seconds * 1000, polling=100)


def runs_asked(page) -> int:
    """The runs the page has asked for so far (its first included)."""
    return page.evaluate("() => window.__streamlitRuns.requests")


def open_fold(page, label: str) -> None:
    """Open an expander by its label and wait until it has stopped growing: a click on what it holds while it opens
    lands where that thing was a frame ago (seen in CI on a loaded machine: the slides' GIF button, clicked while its
    fold was still opening, left the click on the fold's text and no download came)."""
    page.get_by_text(label).click()
    page.wait_for_function(
        """label => {
            const fold = Array.from(document.querySelectorAll('[data-testid="stExpander"] details'))
                .find(d => d.querySelector('summary').innerText.includes(label));
            // Streamlit grows the fold's height in script, not in CSS: open once its box holds all its content
            return fold && fold.open && fold.getBoundingClientRect().height >= fold.scrollHeight - 1;
        }""",
        arg=label,
        polling=100,
    )


def url_params(page) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(page.url).query, keep_blank_values=True))


def sidebar_sliders(page) -> dict[str, str]:
    """Label -> shown value of every slider in the sidebar."""
    pairs = page.locator('[data-testid="stSidebar"] input[type="range"]').evaluate_all(
        "els => els.map(e => [e.getAttribute('aria-label'), e.getAttribute('aria-valuetext')])"
    )
    return dict(pairs)


def chart_data(page) -> list[dict]:
    """Every plotly chart's traces and title as the browser holds them (typed arrays as plain lists)."""
    return json.loads(
        page.evaluate(
            """() => JSON.stringify(Array.from(document.querySelectorAll('.js-plotly-plot')).map(g => ({
                title: ((g._fullLayout && g._fullLayout.title && g._fullLayout.title.text) || '').replace(/<br>/g, ' ').replace(/<[^>]*>/g, ''),
                traces: g._fullData.map(t => ({type: t.type, name: t.name || '',
                    x: t.x ? Array.from(t.x) : null, y: t.y ? Array.from(t.y) : null,
                    z: t.z ? Array.from(t.z, row => (row && row.length !== undefined) ? Array.from(row) : row) : null})),
            })))"""
        )
    )


def press_on_slider(page, label: str, key: str = "ArrowRight") -> None:
    thumb = page.locator(f'[data-testid="stSidebar"] input[type="range"][aria-label="{label}"]')
    thumb.focus()
    page.keyboard.press(key)
