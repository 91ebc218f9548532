"""The mapping page's animation along the token axis in a real browser: ← and → move the token shown (and the link),
▶ Play runs through the tokens in the browser, and the GIF downloads with one frame per token."""

from __future__ import annotations

from urllib.parse import urlencode

from PIL import Image

from explorer.settings import Settings

from .conftest import url_params, wait_for_app

DESIGNS = {"design": "sliding,dsa,compressed,linear", "map_design": "compressed", "map_tokens": "32"}
TITLE = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .map(p => p.layout && p.layout.title && p.layout.title.text || '')
    .find(t => t.includes('Token ')) || ''"""


# The reads chart's ▶ Play / ❚❚ Pause buttons and its slider (rail, grip, steps' names, current value): their boxes
BUTTONS_AND_SLIDER = """() => {
    const plot = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(p => p.layout && p.layout.yaxis2 && p.layout.sliders);
    const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    return {buttons: Array.from(plot.querySelectorAll('.updatemenu-button')).map(box),
        slider: Array.from(plot.querySelectorAll('.slider-container')).flatMap(c => Array.from(
            c.querySelectorAll('.slider-rail, .slider-grip, .slider-label, .slider-current-value')).map(box))};
}"""


def overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def mapping_link(token: int) -> str:
    return f"mapping?{urlencode(Settings().to_link() | DESIGNS | {'map_token': str(token)})}"


SIZE = (1400, 900)


def test_the_arrow_keys_move_the_token_shown(views):
    tab = views.take(mapping_link(10), SIZE, chart_count=3)
    try:
        assert "Token 10 " in tab.evaluate(TITLE)
        tab.evaluate("() => document.activeElement && document.activeElement.blur()")
        tab.keyboard.press("ArrowRight")
        tab.wait_for_function("() => new URLSearchParams(location.search).get('map_token') === '11'", polling=100)
        wait_for_app(tab, 3)
        tab.wait_for_function(f"() => ({TITLE})().includes('Token 11 ')", polling=100)
        tab.keyboard.press("ArrowLeft")
        tab.wait_for_function("() => new URLSearchParams(location.search).get('map_token') === '10'", polling=100)
        assert url_params(tab)["map_design"] == "compressed"
    finally:
        tab.close()


def test_the_gif_downloads_with_a_frame_per_token(views):
    """The GIF (drawn on the server on the click, with no rerun) from the view the next test plays."""
    tab = views.read(mapping_link(0), SIZE, chart_count=3)
    with tab.expect_download(timeout=180_000) as download:
        tab.get_by_role("button", name="GIF for slides").click()
    image = Image.open(download.value.path())
    assert download.value.suggested_filename == "after-mla-compressed-en.gif"
    assert (image.n_frames, image.size) == (32, (1024, 768))


def test_play_runs_through_the_tokens_in_the_browser(views):
    tab = views.take(mapping_link(0), SIZE, chart_count=3)
    try:
        assert "Token 0 " in tab.evaluate(TITLE)
        drawn = tab.evaluate(BUTTONS_AND_SLIDER)  # issue 47: the buttons lay over the slider's rail and first names
        assert len(drawn["buttons"]) == 2
        assert drawn["slider"]
        assert not [(b, s) for b in drawn["buttons"] for s in drawn["slider"] if overlap(b, s)]
        tab.get_by_text("▶ Play").last.click()
        # at every frame: a token is shown for 350 ms only
        tab.wait_for_function(f"() => ({TITLE})().includes('Token 3 ')", timeout=30_000)
        assert url_params(tab)["map_token"] == "0"  # played in the browser: no rerun
    finally:
        tab.close()
