"""A page with a fragment (kv_cache's step-by-step decode) opened by one new visitor after another: each sees the
page. The second visit once went blank: the browser side of Streamlit failed ("Cannot set a node at a delta path")
when the fragment and the page both redrew the share box in one run (explorer.share.shares_link)."""

from __future__ import annotations

from .conftest import wait_for_app


def test_one_new_visitor_after_another_sees_the_kv_cache_page(server, browser):
    for visit in range(5):  # unfixed, about half the visits went blank
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            tab = context.new_page()
            errors: list[str] = []
            tab.on("pageerror", lambda error, errors=errors: errors.append(str(error)))
            tab.goto(f"{server.url}/kv_cache")  # no second try: a blank page stays blank
            wait_for_app(tab, chart_count=4)
            assert errors == [], f"visit {visit + 1}: {errors}"
            assert "kv_step=" in tab.locator('[data-testid="stSidebar"] pre.verbatim-text').first.inner_text()
        finally:
            context.close()
