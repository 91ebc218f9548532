"""What a class can read: every page at a projector's 1024x768 and a phone's 400x800, in the real browser.

For each page and width: nothing is requested from outside the machine (fonts, icons), no "Page not found" dialog,
no two chart titles or axis titles overlap (nor a title the always-visible toolbar covers), and the table columns
that carry the page's point (the ✓ and the ratios) are drawn, not scrolled out of view.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from explorer.pages import PAGES
from explorer.settings import Settings

from .conftest import COLD_START_SECONDS, wait_for_app

SIZES = {"projector": (1024, 768), "phone": (400, 800)}
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
# Columns that carry a page's point: each must be in view wherever its table is drawn.
POINT_COLUMNS = {"overview": ("Agree", "vs MHA"), "kv_cache": ("Agree",)}
PENDING: set[str] = set()  # pages whose layout pass is still open work: none

BOXES = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((plot, index) => {
    const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const texts = Array.from(plot.querySelectorAll(
        '.infolayer text[class$="title"], .annotation-text'))
        .filter(e => (e.textContent || '').trim() && e.getBoundingClientRect().width > 0)
        .map(e => ({text: e.textContent.trim().slice(0, 60), kind: e.getAttribute('class'), box: box(e)}));
    const bar = plot.querySelector('.modebar');
    return {index, texts, modebar: bar ? box(bar) : null};
})"""


def overlap(a, b, slack: float = 1.0) -> bool:
    return a[0] < b[2] - slack and b[0] < a[2] - slack and a[1] < b[3] - slack and b[1] < a[3] - slack


def open_at(browser, server, name: str, size: tuple[int, int]):
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    tab = context.new_page()
    outside: list[str] = []
    tab.on(
        "request",
        lambda request: (
            outside.append(request.url)
            if urlsplit(request.url).scheme in ("http", "https", "ws", "wss")
            and urlsplit(request.url).hostname not in LOCAL_HOSTS
            else None
        ),
    )
    path = "" if name == "overview" else name
    tab.goto(f"{server.url}/{path}?{'&'.join(f'{k}={v}' for k, v in Settings().to_link().items())}")
    wait_for_app(tab, seconds=COLD_START_SECONDS)  # the session's server may be fresh: a cold start
    return context, tab, outside


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
@pytest.mark.parametrize("name", [name for name in PAGES])
def test_each_page_reads_cleanly_at_projector_and_phone_widths(server, browser, name, size):
    if name in PENDING:
        pytest.xfail(f"{name}: layout at 1024/400 px still open (issue #14 items 9, 12)")
    context, tab, outside = open_at(browser, server, name, size)
    try:
        assert not tab.get_by_text("Page not found").count(), "the link opened a 'Page not found' dialog"
        problems = []
        for chart in tab.evaluate(BOXES):
            texts = chart["texts"]
            for i, first in enumerate(texts):
                for second in texts[i + 1 :]:
                    if overlap(first["box"], second["box"]):
                        problems.append(f"chart {chart['index']}: {first['text']!r} overlaps {second['text']!r}")
                if chart["modebar"] and "gtitle" in (first["kind"] or "") and overlap(first["box"], chart["modebar"]):
                    problems.append(f"chart {chart['index']}: the toolbar covers the title {first['text']!r}")
        assert not problems, problems
        # The grid draws (and lists for screen readers) only the columns in view: one scrolled away is not listed.
        shown = tab.evaluate("""() => Array.from(document.querySelectorAll('[data-testid="stDataFrame"]')).map(d =>
            Array.from(d.querySelectorAll('[role=columnheader]')).map(h => h.textContent.trim()))""")
        for column in POINT_COLUMNS.get(name, ()):
            assert any(column in headers for headers in shown), (
                f"the column {column!r} is out of view at {size[0]} px: columns in view {shown}"
            )
        assert not outside, f"requests that left the machine: {sorted(set(outside))}"
    finally:
        context.close()


def test_the_overview_has_a_link_of_its_own_that_opens_cleanly(server, browser):
    """/overview (what a share box may hand out, or typed by hand) opens the overview, with no dialog over it."""
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    try:
        tab = context.new_page()
        tab.goto(f"{server.url}/overview?heads=16")
        wait_for_app(tab, chart_count=2, seconds=COLD_START_SECONDS)
        assert tab.get_by_role("heading", name="Attention Explorer").is_visible()
        assert not tab.get_by_text("Page not found").count()
        assert not tab.get_by_text("version of the explorer").count(), "no v in a typed link: no version note"
    finally:
        context.close()
