"""A chart that names its points (the lab's perplexity-against-cache chart) names them at a laptop's width, where a
class has no hover; on a phone, where they are placed for a phone's plot, see test_layout's phone checks."""

from __future__ import annotations

import pytest

from .conftest import browser_context, open_link

NAMED_POINTS = """() => {
    const chart = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(g => g.closest('[data-testid="stMain"]') && g.data && g.data.some(t => t.type === 'scatter')
            && g.layout.yaxis && g.layout.yaxis.type === 'log');
    return chart ? Array.from(chart.querySelectorAll('.textpoint text')).map(t => t.textContent) : null;
}"""


@pytest.mark.parametrize(("width", "named"), [(1400, True)])
def test_the_labs_points_are_named_where_the_names_fit(server, browser, width, named):
    context = browser_context(browser, viewport={"width": width, "height": 900})
    try:
        tab = context.new_page()
        open_link(tab, f"{server.url}/lab")
        names = tab.evaluate(NAMED_POINTS)
        assert names is not None, "the lab draws its perplexity-against-cache chart"
        assert bool(names) == named, names
        if named:
            assert "MHA" in names
    finally:
        context.close()
