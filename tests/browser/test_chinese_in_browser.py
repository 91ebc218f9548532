"""The explorer in Chinese, in a real browser: two pages open in Chinese from their link, their charts' Chinese
titles are drawn with real glyphs (no empty boxes: Debian's fonts-noto-cjk), and the language switch changes the
language while the link keeps every other setting."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest

from .conftest import url_params, wait_for_app, wait_until_idle

SETTINGS = {"heads": "16", "groups": "4", "seq_len": "512", "batch": "2"}
SIDEBAR_HEADING = '[data-testid="stSidebar"] [data-testid="stHeading"]'

# Draws each of the first characters of the text alone, in the font the chart title uses, and compares the pixels:
# a missing font draws every character as the same empty box, so distinct characters give identical images.
DISTINCT_GLYPHS = """([text, font]) => {
    const canvas = document.createElement('canvas');
    canvas.width = 64; canvas.height = 64;
    const pen = canvas.getContext('2d');
    pen.font = font;
    const image = ch => { pen.clearRect(0, 0, 64, 64); pen.fillText(ch, 8, 48);
                          return pen.getImageData(0, 0, 64, 64).data.join(','); };
    const chars = Array.from(new Set(Array.from(text).filter(ch => /[\\u4e00-\\u9fff]/.test(ch)))).slice(0, 4);
    return {chars: chars.join(''), distinct: new Set(chars.map(image)).size};
}"""


def chart_titles_and_font(page) -> tuple[list[str], str]:
    titles = page.locator(".js-plotly-plot .gtitle").all_text_contents()
    font = page.locator(".js-plotly-plot .gtitle").first.evaluate(
        "el => { const s = getComputedStyle(el); return `${s.fontSize} ${s.fontFamily}`; }"
    )
    return titles, font


@pytest.mark.parametrize("path", ["", "kv_cache"])
def test_a_chinese_link_opens_in_chinese_with_real_glyphs(server, views, path):
    page = views.read(f"{path}?{urlencode(SETTINGS | {'lang': 'zh'})}")
    assert page.locator(SIDEBAR_HEADING).first.inner_text() == "层设置"
    titles, font = chart_titles_and_font(page)
    chinese = "".join(titles)
    found = page.evaluate(DISTINCT_GLYPHS, [chinese, font])
    assert len(found["chars"]) >= 2, f"no Chinese in the chart titles: {titles}"
    assert found["distinct"] == len(found["chars"]), f"{found['chars']} drawn as empty boxes in {font}"
    toolbar = page.locator(".js-plotly-plot .modebar-btn").first.get_attribute("data-title")
    assert re.search("[\u4e00-\u9fff]", toolbar), f"the chart's toolbar speaks English: {toolbar}"
    page.screenshot(path=str(server.log_dir / f"zh-{path or 'overview'}.png"))


def test_the_language_switch_keeps_the_link_settings(server, page):
    # A fresh context (`page`), not a tab of the worker's shared one: the sidebar's stored state (folded by a phone-
    # sized visit of another test) left the switch unclickable there (a full run's timeout).
    page.goto(f"{server.url}/?{urlencode(SETTINGS | {'lang': 'zh'})}")
    wait_for_app(page)
    for switch, lang, heading in (("English", "en", "Layer settings"), ("中文", "zh", "层设置")):
        page.locator('[data-testid="stSidebar"]').get_by_role("radio", name=switch, exact=True).click()
        page.wait_for_function(f"() => new URLSearchParams(location.search).get('lang') === '{lang}'", polling=100)
        wait_until_idle(page)
        assert page.locator(SIDEBAR_HEADING).first.inner_text() == heading
        params = url_params(page)
        assert {name: params.get(name) for name in SETTINGS} == SETTINGS
