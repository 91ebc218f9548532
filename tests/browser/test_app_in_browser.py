"""The app as a student meets it: a real server, a real browser, links, keyboard, reloads and a server restart."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from attn_core import kv_cache_bytes
from explorer import i18n
from explorer.pages import DESIGN_SETTINGS, PAGES
from explorer.settings import SEQ_LEN_CHOICES, Settings
from explorer.state import SLIDER_LABELS

from .conftest import (
    COLD_START_SECONDS,
    VIEW_SECONDS,
    browser_context,
    chart_data,
    press_on_slider,
    sidebar_sliders,
    url_params,
    wait_for_app,
    wait_until_idle,
)
from .test_layout import OUTSIDE

SEQ_LEN_LABEL = SLIDER_LABELS["seq_len"]
START = Settings(d_model=1024, heads=16, groups=4, latent=256, rope_dim=32, seq_len=128, batch=2)


def link(server, settings: Settings, page: str = "", **view) -> str:
    return f"{server.url}/{page}?{urlencode(settings.to_link() | view)}"


def cache_bars(page) -> dict[str, float]:
    chart = next(c for c in chart_data(page) if c["title"].startswith("KV cache of one layer"))
    return dict(zip(chart["traces"][0]["y"], chart["traces"][0]["x"], strict=True))  # horizontal bars


def expected_cache_bars(settings: Settings) -> dict[str, int]:
    return {
        v.upper(): kv_cache_bytes(cfg, settings.batch, settings.seq_len, settings.dtype)
        for v, cfg in settings.configs().items()
    }


def shown_link(settings: Settings) -> dict[str, str]:
    """The link the address bar holds for these settings, in English (the test browser's language)."""
    return settings.to_link() | {"lang": "en"}


def shown_settings(page) -> dict[str, str]:
    """The shared settings as the page shows them: sidebar slider values, keyed like the link."""
    sliders = sidebar_sliders(page)
    # the designs' knobs are drawn only while a design that reads them is chosen: these tests choose none
    return {name: sliders[label] for name, label in SLIDER_LABELS.items() if name not in DESIGN_SETTINGS}


# The app's root: the overview at the default settings, loaded once for this test and the CSV and full-screen ones
ROOT = ""


def test_the_app_loads_and_shows_the_overview_chart(views):
    page = views.read(ROOT, chart_count=2)
    assert page.get_by_role("heading", name="Attention Explorer").is_visible()
    assert cache_bars(page) == expected_cache_bars(Settings())
    assert url_params(page) == shown_link(Settings()), "the address bar holds a link to the view"


def test_a_slider_moved_with_the_keyboard_updates_the_chart_and_the_url(server, page):
    page.goto(link(server, START))
    wait_for_app(page, chart_count=2)
    assert cache_bars(page) == expected_cache_bars(START)

    press_on_slider(page, SEQ_LEN_LABEL, "ArrowRight")
    moved = Settings(**(START.as_dict() | {"seq_len": SEQ_LEN_CHOICES[SEQ_LEN_CHOICES.index(START.seq_len) + 1]}))
    page.wait_for_function(
        f"() => new URLSearchParams(location.search).get('seq_len') === '{moved.seq_len}'", polling=100
    )
    page.wait_for_function(
        f"""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
                 .some(g => (g._fullLayout.title.text || '').replace(/<br>/g, ' ').includes('{moved.seq_len:,} tokens'))""",
        polling=100,
    )
    wait_until_idle(page)
    assert url_params(page) == shown_link(moved)
    assert shown_settings(page)["seq_len"] == str(moved.seq_len)
    assert cache_bars(page) == expected_cache_bars(moved)


def test_reloading_that_url_restores_the_same_view(server, browser, page):
    page.goto(link(server, START))
    wait_for_app(page, chart_count=2)
    for _ in range(2):
        press_on_slider(page, SLIDER_LABELS["batch"], "ArrowRight")
        wait_until_idle(page)
    page.wait_for_function("() => new URLSearchParams(location.search).get('batch') === '8'", polling=100)
    wait_until_idle(page)
    url, settings, charts = page.url, shown_settings(page), chart_data(page)

    page.reload()
    wait_for_app(page, chart_count=2)
    assert (page.url, shown_settings(page), chart_data(page)) == (url, settings, charts)

    other = browser_context(browser, viewport={"width": 1400, "height": 1000})  # a classmate opening the shared link
    try:
        tab = other.new_page()
        tab.set_default_timeout(VIEW_SECONDS * 1000)
        tab.goto(url)
        wait_for_app(tab, chart_count=2)
        assert (tab.url, shown_settings(tab), chart_data(tab)) == (url, settings, charts)
    finally:
        other.close()


def test_a_garbled_link_shows_the_warning_and_a_valid_view(server, page):
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(f"{server.url}/?d_model=abc&heads=7&variant=<script>alert(1)</script>&seq_len=&seq_len=64")
    wait_for_app(page, chart_count=2)
    alert = page.locator('[data-testid="stAlert"]', has_text="This link had settings")
    assert alert.count() == 1
    assert alert.is_visible()
    assert "<script" not in alert.inner_html()
    assert not dialogs, "nothing in the link ran as script"
    assert url_params(page) == shown_link(Settings()), "the URL is repaired to the view shown"
    assert cache_bars(page) == expected_cache_bars(Settings())


@pytest.mark.skipif(len(PAGES) < 2, reason="only the overview is registered: there is no other page to go to")
def test_the_settings_follow_the_user_to_another_page(server, page):
    name = page_under_test()
    page.goto(link(server, START))
    wait_for_app(page, chart_count=2)
    settings = shown_settings(page)
    page.locator('[data-testid="stSidebarNav"] a', has_text=PAGES[name].title).click()
    page.wait_for_url(f"**/{name}?**")
    wait_for_app(page)
    assert shown_settings(page) == settings
    assert {key: url_params(page)[key] for key in START.to_link()} == START.to_link()


def page_under_test() -> str:
    """A page other than the overview when one is registered: its link must survive a fresh server too."""
    return next((name for name in PAGES if name != "overview"), "overview")


STARTING_UP = "Starting up: the server's first visit loads PyTorch and builds the layers (a few seconds)."


def test_a_fresh_servers_first_link_says_it_is_starting_in_the_links_language(own_server, page):
    """The first link a fresh server gets: a note says what the blank seconds are (torch's import, the first
    layers), in the link's language, and the menu is the app's own, not the pages/ folder's file names."""
    i18n.set_language("zh")
    try:
        note, titles = i18n._(STARTING_UP), [i18n._(entry.title) for entry in PAGES.values()]
    finally:
        i18n.set_language("en")
    page.goto(f"{own_server.fresh().url}/heatmaps?lang=zh")
    page.get_by_text(note).wait_for(timeout=COLD_START_SECONDS * 1000)
    wait_for_app(page, seconds=COLD_START_SECONDS)
    menu = page.locator('[data-testid="stSidebarNav"] a').all_inner_texts()
    assert all(any(title in item for item in menu) for title in titles), menu


def test_a_server_restart_in_the_middle_of_a_session_loses_nothing(own_server, page):
    running = own_server.as_left()  # as the test above left it: warm, a visitor's session on it
    name = page_under_test()
    path = "" if name == "overview" else name
    page.goto(link(running, START, path))
    wait_for_app(page)
    press_on_slider(page, SEQ_LEN_LABEL, "ArrowLeft")
    page.wait_for_function("() => new URLSearchParams(location.search).get('seq_len') === '96'", polling=100)
    wait_until_idle(page)
    url, settings, charts = page.url, shown_settings(page), chart_data(page)

    running.restart()  # every session on the server is gone; only the URL remains
    # The open tab reconnects by itself and reruns its page on the new server. Reloading in the middle of that cold
    # first run (torch imported, layers built) would abandon it and start a second one beside it: twice the work of
    # a cold start on a loaded machine, the cause of the 90-second time-outs. Let the reconnected run finish (it
    # shows the same view), then reload; both waits give a cold start the time it takes.
    try:
        wait_for_app(page, chart_count=len(charts), seconds=COLD_START_SECONDS)
        page.reload()
        wait_for_app(page, chart_count=len(charts), seconds=COLD_START_SECONDS)
    except Exception as error:  # say what the server was doing
        raise AssertionError(
            f"the restarted server did not show the page: {error}\n{running.log_text()[-3000:]}"
        ) from error
    assert page.url == url
    assert shown_settings(page) == settings
    assert chart_data(page) == charts
    # The link went through app.py's navigation even as the new server's first run: page titles, not file names.
    menu = page.locator('[data-testid="stSidebarNav"] a').all_inner_texts()
    assert all(any(entry.title in item for item in menu) for entry in PAGES.values()), menu


@pytest.mark.skipif("mapping" not in PAGES, reason="pages/mapping.py is not registered in explorer/pages.PAGES yet")
def test_the_mapping_play_button_changes_the_animation_frame(server, page):
    page.goto(link(server, Settings(), "mapping"))
    wait_for_app(page)
    animated = "Array.from(document.querySelectorAll('.js-plotly-plot')).find(g => g._fullLayout.sliders && g._fullLayout.sliders.length)"
    before = page.evaluate(
        f"() => {{ const g = {animated}; return [g._fullLayout.sliders[0].active, g._fullLayout.title.text]; }}"
    )
    play = page.locator(".updatemenu-button", has_text="Play")
    assert play.count() == 1, "the animated chart has a play button"
    play.click()
    page.wait_for_function(
        f"""before => {{ const g = {animated};
                 return g._fullLayout.sliders[0].active !== before[0] || g._fullLayout.title.text !== before[1]; }}""",
        arg=before,
        timeout=20_000,
        polling=100,
    )
    after = page.evaluate(
        f"() => {{ const g = {animated}; return [g._fullLayout.sliders[0].active, g._fullLayout.title.text]; }}"
    )
    assert after != before


def test_a_chart_csv_is_written_when_its_button_is_clicked(views):
    """CSVs are generated on click (deferred), not on every rerun: the click must still save the chart's numbers."""
    page = views.read(ROOT, chart_count=2)
    with page.expect_download() as download:
        page.locator('[data-testid="stDownloadButton"] button', has_text="CSV").first.click()
    saved = download.value
    assert saved.suggested_filename == "overview-cache-bytes.csv"
    with open(saved.path(), encoding="utf-8") as csv_file:
        lines = csv_file.read().splitlines()
    header = lines[0].split(",")
    assert "cache_bytes_measured" in header
    assert len(lines) == 1 + len(Settings().variants)
    measured = {
        row.split(",")[0].upper(): int(row.split(",")[header.index("cache_bytes_measured")]) for row in lines[1:]
    }
    assert measured == expected_cache_bars(Settings())


def test_when_plotly_js_cannot_load_each_chart_says_so_and_the_rest_of_the_page_stays(server, page):
    page.route("**/plotly*.min.js", lambda route: route.abort())
    page.goto(server.url)
    charts = page.locator("div.live-chart")
    charts.filter(has_text="did not load").nth(1).wait_for(timeout=VIEW_SECONDS * 1000)
    wait_until_idle(page)
    assert charts.count() == 2
    assert all("reload the page" in text for text in charts.all_inner_texts())
    assert not page.locator('[data-testid="stException"]').count()
    assert page.get_by_role("heading", name="Attention Explorer").is_visible()
    assert page.get_by_role("button", name="CSV").count() >= 2  # each chart's numbers can still be taken away


def test_a_chart_goes_full_screen_for_a_projector_and_comes_back_to_its_own_size(views):
    page = views.take(ROOT, chart_count=2)
    try:
        plot = page.locator(".js-plotly-plot").first
        size = "g => [g._fullLayout.width, g._fullLayout.height]"
        own = plot.evaluate(size)
        button = plot.locator('.modebar-btn[data-title="Full screen"]')
        button.click()
        page.wait_for_function(
            """() => { const g = document.fullscreenElement;
                       return g && g._fullLayout.width === window.innerWidth
                           && g._fullLayout.height === window.innerHeight; }""",
            polling=100,
        )
        assert own != plot.evaluate(size)
        button.click()
        page.wait_for_function(
            "([g, own]) => !document.fullscreenElement && g._fullLayout.height === own[1]",
            arg=[plot.element_handle(), own],
            polling=100,
        )
        assert plot.evaluate(size) == own
    finally:
        page.close()


LONG_WORDS = "internationalization characteristically incomprehensibilities"
MARGINS = "g => ({given: g.layout.margin, drawn: g._fullLayout._size})"


def test_an_updated_chart_starts_from_its_last_margins_and_they_still_fit_its_labels(server, page):
    """A chart updated with labels like those of its last drawing is given that drawing's margins (explorer/live_chart.js:
    Plotly then need not lay it out again to grow them, the benchmark's gain); other labels get margins of their own,
    wider or narrower."""
    page.goto(link(server, Settings(), "heatmaps"))
    wait_for_app(page, chart_count=4)
    plot = page.locator(".js-plotly-plot").first
    drawn = plot.evaluate(MARGINS)["drawn"]
    assert drawn["r"] > plot.evaluate(MARGINS)["given"]["r"]  # Plotly grew the figure's own margins (colour bar)
    positions = plot.evaluate("g => g._fullData[0].y.length")
    press_on_slider(page, SEQ_LEN_LABEL, "ArrowRight")
    page.wait_for_function(
        "([g, n]) => g._fullData[0].y.length !== n", arg=[plot.element_handle(), positions], polling=100
    )
    wait_until_idle(page)
    given = plot.evaluate(MARGINS)["given"]
    assert {side: given[side] for side in "lrtb"} == {side: drawn[side] for side in "lrtb"}
    numbers = plot.evaluate(MARGINS)["drawn"]["l"]

    page.get_by_text("Your text", exact=True).click()
    box = page.get_by_label("Text (at most", exact=False)
    box.fill(LONG_WORDS)
    box.press("Enter")
    page.wait_for_function(
        "g => String(g._fullData[0].y[0]).startsWith('0 international')", arg=plot.element_handle(), polling=100
    )
    wait_until_idle(page)
    assert plot.evaluate(MARGINS)["drawn"]["l"] > numbers + 40  # room for the long words on the y axis
    assert not page.evaluate(OUTSIDE)

    page.get_by_text("Random vectors", exact=True).click()
    page.wait_for_function("g => g._fullData[0].y[0] === 0", arg=plot.element_handle(), polling=100)
    wait_until_idle(page)
    assert abs(plot.evaluate(MARGINS)["drawn"]["l"] - numbers) <= 1  # narrower again: the words' room is not kept
