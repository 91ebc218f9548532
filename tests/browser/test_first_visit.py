"""What a new visit's browser is spared before its first chart (issue 28, item 17): Streamlit's syntax highlighter (a
1.5 MB script st.code loads, for text with no syntax) and the glossary's typeset symbols (drawn only when opened). And
that what replaced them still works: the link's copy button, the glossary."""

from __future__ import annotations

import pytest

from explorer.i18n import _, set_language
from explorer.pages import PAGES

from .conftest import VIEW_SECONDS, browser_context, new_tab, wait_for_app

LOADED_SCRIPTS = "() => performance.getEntriesByType('resource').map(e => e.name.split('/').pop())"
# The trace types the page's charts use that the served plotly.js (built with only some: assets/plotly-build) lacks
UNKNOWN_TRACES = """() => {
  const known = new Set(Object.keys(window.Plotly.PlotSchema.get().traces));
  const used = Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap(g => g.data.map(t => t.type || 'scatter'));
  return used.filter(type => !known.has(type));
}"""


def test_no_page_loads_the_syntax_highlighter_or_draws_the_glossary_unasked(server, visits):
    """And the served plotly.js knows every trace type the page draws. Each page in a new tab of the worker's one
    browser context: a new visit (a new session and document), its scripts listed whether the cache or the server
    served them (a resource timing entry either way)."""
    for name in PAGES:
        tab = new_tab(visits, (1400, 1000))
        try:
            tab.set_default_timeout(VIEW_SECONDS * 1000)
            tab.goto(f"{server.url}/{'' if name == 'overview' else name}")
            wait_for_app(tab)
            loaded = tab.evaluate(LOADED_SCRIPTS)
            assert not [script for script in loaded if "SyntaxHighlighter" in script], name
            assert tab.locator('[data-testid="stSidebar"] .katex').count() == 0, name
            assert tab.locator('[data-testid="stSidebar"] pre.verbatim-text').count() == 1, name  # the link
            assert tab.evaluate(UNKNOWN_TRACES) == [], name
        finally:
            tab.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_copy_button_copies_the_link_shown(server, browser, lang):
    context = browser_context(browser, viewport={"width": 1400, "height": 1000})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    try:
        tab = context.new_page()
        tab.set_default_timeout(VIEW_SECONDS * 1000)
        tab.goto(f"{server.url}/mapping?heads=16&groups=4&lang={lang}")
        wait_for_app(tab)
        box = tab.locator('[data-testid="stSidebar"] .verbatim')
        shown = box.locator("pre").inner_text()
        assert "heads=16" in shown
        assert "groups=4" in shown
        set_language(lang)
        try:
            copy, copied = _("Copy"), _("Copied")
        finally:
            set_language("en")
        button = box.get_by_role("button", name=copy)
        button.click()
        tab.wait_for_function(
            "(word) => document.querySelector('.verbatim-copy').textContent === word", arg=copied, polling=100
        )
        assert tab.evaluate("() => navigator.clipboard.readText()") == shown
    finally:
        context.close()


def test_the_glossary_opens_with_its_symbols_typeset(server, page):
    page.goto(f"{server.url}/kv_cache")
    wait_for_app(page)
    page.locator('[data-testid="stSidebar"]').get_by_role("button", name="Symbols: what each letter means").click()
    glossary = page.locator('[data-testid="stPopoverBody"]')
    glossary.locator(".katex").first.wait_for()
    assert glossary.locator(".katex").count() >= 20
    assert "latent width (kv_lora_rank)" in glossary.inner_text()
