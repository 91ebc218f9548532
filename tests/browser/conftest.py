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


@pytest.fixture(scope="session")
def visits(browser):
    """The worker's browser context that new_tab opens tabs in (downloads accepted, as `page` does)."""
    context = browser.new_context(accept_downloads=True)
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
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
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
    """Until Streamlit shows no running script (its status widget is gone) for a moment."""
    page.wait_for_function(
        SCRIPT_IDLE,
        timeout=seconds * 1000,
        polling=200,
    )
    page.wait_for_timeout(300)
    page.wait_for_function(
        SCRIPT_IDLE,
        timeout=seconds * 1000,
        polling=200,
    )


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
