"""A page with a fragment (kv_cache's step-by-step decode) opened by one new visitor after another: each sees the
page. Visits went blank, the browser side of Streamlit failing ("Cannot set a node at a delta path"), when the page and
the fragment both drew the share box in one run (explorer.share.shares_link): often where the fragment drew it first,
now and then on a busy server where the page drew it first (a run sent in one batch: tests/app/test_one_batch.py
checks that case without a browser).

Each visit is a new tab of the worker's shared context: a new Streamlit session, as a fresh browser's is, without
loading the bundle again. A visit that fails says what the page showed, its errors and the server's log."""

from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .conftest import Watched, new_tab, wait_for_app


def test_one_new_visitor_after_another_sees_the_kv_cache_page(server, visits):
    for visit in range(5):  # unfixed, about half the visits went blank
        tab = new_tab(visits, (1400, 1000))
        watched = Watched(tab)
        try:
            tab.goto(f"{server.url}/kv_cache")  # no second try: a blank page stays blank
            try:
                wait_for_app(tab, chart_count=4)
            except PlaywrightTimeout:
                pytest.fail(f"visit {visit + 1}: no charts; {watched.report(server)}")
            assert watched.page_errors == [], f"visit {visit + 1}: {watched.report(server)}"
            assert "kv_step=" in tab.locator('[data-testid="stSidebar"] pre.verbatim-text').first.inner_text()
        finally:
            tab.close()
