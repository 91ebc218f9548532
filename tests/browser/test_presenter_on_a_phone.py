"""A class link opened in presenter mode on a phone (present=1 sent to students by mistake, or a teacher checking a
slide on theirs) reads as the usual page does: no sideways scroll, titles the page's width, charts at their usual
sizes with a plot that keeps its width and every number in its heatmaps' cells. A projector (1024 px and over) keeps
the projector's sizes."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from .conftest import new_tab, open_link

# The window and what the page measured: its widest content against the window, the slide's title's width,
# the largest chart title's font and the narrowest plot area.
MEASURE = """() => {
  const title = document.querySelector('.st-key-lesson-slide h2') || document.querySelector('h1, h2');
  const titleBox = title ? title.getBoundingClientRect() : {width: 0, height: 0};
  const chartTitles = Array.from(document.querySelectorAll('.js-plotly-plot .gtitle'))
    .map(t => parseFloat(getComputedStyle(t).fontSize) || parseFloat(t.style.fontSize) || 0);
  const plots = Array.from(document.querySelectorAll('.js-plotly-plot .nsewdrag'))
    .map(d => d.getBoundingClientRect().width);
  return {window: window.innerWidth, content: document.documentElement.scrollWidth,
          titleWidth: titleBox.width,
          chartTitle: Math.max(0, ...chartTitles), narrowestPlot: plots.length ? Math.min(...plots) : null,
          rootFont: parseFloat(getComputedStyle(document.documentElement).fontSize),
          cellNumbers: document.querySelectorAll('.js-plotly-plot g.heatmap-label text').length};
}"""

PHONE = {"width": 400, "height": 800}
PROJECTOR = {"width": 1024, "height": 768}


def measured(visits, server, path: str, query: dict, viewport: dict) -> dict:
    tab = new_tab(visits, (viewport["width"], viewport["height"]))
    try:
        open_link(tab, f"{server.url}/{path}?{urlencode(query)}")
        return tab.evaluate(MEASURE)
    finally:
        tab.close()


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("lesson", {"step": "5", "lang": "en"}),
        ("lesson", {"step": "13", "lang": "en"}),
        ("lesson", {"step": "14", "lang": "zh"}),
        ("axes", {"lang": "zh"}),
    ],
    ids=["lesson-5-en", "lesson-13-en", "lesson-14-zh", "axes-zh"],
)
def test_presenter_mode_on_a_phone_reads_as_the_usual_page(server, visits, path, query):
    phone = measured(visits, server, path, query | {"present": "1"}, PHONE)
    usual = measured(visits, server, path, query, PHONE)
    assert phone["content"] <= phone["window"] + 1, f"sideways scroll: {phone}"
    assert phone["rootFont"] == usual["rootFont"], f"the projector's doubled text on a phone: {phone}"
    assert phone["titleWidth"] >= 0.6 * PHONE["width"], f"the title squeezed beside the arrows: {phone}"
    assert phone["chartTitle"] == usual["chartTitle"], f"a chart at the projector's sizes: {phone} vs {usual}"
    assert phone["narrowestPlot"] >= usual["narrowestPlot"] - 2, f"a plot squeezed: {phone} vs {usual}"
    assert phone["cellNumbers"] == usual["cellNumbers"], f"heatmap cells' numbers taken away: {phone} vs {usual}"


def test_a_projector_keeps_the_projector_s_sizes(server, visits):
    query = {"step": "5", "lang": "en"}
    projector = measured(visits, server, "lesson", query | {"present": "1"}, PROJECTOR)
    usual = measured(visits, server, "lesson", query, PROJECTOR)
    assert projector["rootFont"] == 2 * usual["rootFont"]
    assert projector["chartTitle"] > usual["chartTitle"]
