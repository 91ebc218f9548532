"""What assistive technology reads: the page's language on <html>, a tab title per page and language, and plain-text
names for the sidebar's sliders (not the LaTeX their labels were once written in)."""

from __future__ import annotations

import pytest

from explorer.i18n import _, set_language
from explorer.pages import DESIGN_SETTINGS
from explorer.state import SLIDER_LABELS

from .conftest import COLD_START_SECONDS, wait_for_app, wait_until_idle


@pytest.mark.parametrize(
    ("lang", "html_lang", "title"), [("zh", "zh-Hans", "注意力热力图"), ("en", "en", "Attention heatmaps")]
)
def test_the_document_says_its_language_and_names_the_page(server, page, lang, html_lang, title):
    page.goto(f"{server.url}/heatmaps?lang={lang}")
    wait_for_app(page)
    page.wait_for_function(f"() => document.documentElement.lang === '{html_lang}'", polling=100)
    assert page.title() == f"{title} · Attention Explorer"
    names = page.eval_on_selector_all(
        '[data-testid="stSidebar"] input[type="range"]', "inputs => inputs.map(i => i.getAttribute('aria-label'))"
    )
    set_language(lang)
    try:
        # the designs' knobs are drawn only while a design that reads them is chosen: none is, here
        expected = [_(label) for name, label in SLIDER_LABELS.items() if name not in DESIGN_SETTINGS]
    finally:
        set_language("en")
    assert names == expected
    assert not any("$" in name or "\\" in name for name in names)


@pytest.mark.parametrize(("lang", "title"), [("zh", "找不到页面"), ("en", "Page not found")])
def test_a_link_to_a_missing_page_says_so_in_its_language(own_server, page, lang, title):
    # A fresh server, warmed up as deploy/serve.py warms its replicas: its very first link would otherwise run in
    # Streamlit's pages/ folder mode, which has its own English dialog
    fresh = own_server.fresh()
    assert fresh.warm_up(COLD_START_SECONDS), fresh.log_text()[-2000:]
    page.goto(f"{fresh.url}/nonexistent?lang={lang}&heads=4&groups=2")
    wait_until_idle(page)
    page.locator("h1", has_text=title).wait_for(timeout=90_000)
    assert not page.get_by_role("dialog").count()  # not Streamlit's English dialog
    assert "nonexistent" in page.locator('[data-testid="stMain"] [data-testid="stAlert"]').first.inner_text()
    links = page.locator('[data-testid="stMain"] [data-testid="stPageLink-NavLink"]')
    links.nth(6).wait_for(timeout=90_000)  # the way to every page: seven links


ANIMATED = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .find(g => g._fullLayout.sliders && g._fullLayout.sliders.length)"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_chart_is_a_figure_named_by_its_title_and_caption(server, page, lang):
    page.goto(f"{server.url}/?lang={lang}")
    wait_for_app(page, chart_count=2)
    charts = page.evaluate(
        """() => Array.from(document.querySelectorAll('div.live-chart')).map(div => ({
            role: div.getAttribute('role'), label: div.getAttribute('aria-label') || '',
            title: div._fullLayout && div._fullLayout.title ? div._fullLayout.title.text || '' : '',
            caption: (div.closest('[data-testid="stElementContainer"]')?.nextElementSibling?.innerText || '') }))"""
    )
    assert len(charts) >= 2
    for chart in charts:
        assert chart["role"] == "figure", chart
        title = " ".join(chart["title"].replace("<br>", " ").split())
        assert title, chart
        assert title.replace("<b>", "").replace("</b>", "") in chart["label"], chart
        assert "<" not in chart["label"], chart
        assert "**" not in chart["label"], chart
        first_words = " ".join(chart["caption"].replace("CSV", "").split()[:3])
        assert first_words, chart  # the caption was found
        assert first_words[:8] in chart["label"], chart


def test_the_animations_play_button_is_reached_and_pressed_with_the_keyboard(server, page):
    page.goto(f"{server.url}/mapping")
    wait_for_app(page)
    play = page.locator(".updatemenu-button", has_text="Play")
    play.wait_for()
    assert play.get_attribute("role") == "button"
    assert play.get_attribute("tabindex") == "0"
    assert "Play" in (play.get_attribute("aria-label") or "")
    before = page.evaluate(f"() => ({ANIMATED})()._fullLayout.sliders[0].active")
    play.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        f"before => ({ANIMATED})()._fullLayout.sliders[0].active !== before", arg=before, timeout=20_000, polling=100
    )
