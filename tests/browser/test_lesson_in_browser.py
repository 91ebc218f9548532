"""The lesson in a real browser: the arrow keys move between steps, presenter mode reads cleanly at every step on a
1400 px screen and on a 1024x768 projector (there on the slides' walk, test_lesson_slides.py), in English and
Chinese, and the slides' GIF downloads and decodes."""

from __future__ import annotations

import io
from urllib.parse import urlencode

import pytest
from PIL import Image, ImageChops

from explorer import gif, i18n
from explorer.lesson import steps as lesson_steps
from explorer.lesson import views
from explorer.pages import PAGES
from explorer.present import MIN_TEXT_PX as PRESENTED_TEXT_PX
from explorer.probes.mapping import morph_configs
from explorer.settings import DESIGNS, Settings

from .conftest import VIEW_SECONDS, new_tab, open_fold, open_link, url_params, wait_for_app
from .test_layout import TEXT_SIZES, chart_text_problems, in_language

PROJECTOR = (1024, 768)

# Words or labels drawn cut short (Streamlit ends a label too long for its box with an ellipsis, a menu's value is
# clipped), anywhere in the page's main part.
CUT_TEXT = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] *'))
    .filter(e => e.children.length === 0 && (e.textContent || '').trim() && e.getBoundingClientRect().width > 0)
    .filter(e => { const style = getComputedStyle(e);
        return (style.textOverflow === 'ellipsis' || ['hidden', 'clip'].includes(style.overflowX))
            && e.scrollWidth > e.clientWidth + 1; })
    .map(e => e.textContent.trim().slice(0, 60))"""
# A text box or menu whose value runs past the box that shows it (an input's own width may reach beyond it).
CUT_VALUES = """() => { const ruler = document.createElement('canvas').getContext('2d');
    return Array.from(document.querySelectorAll('[data-testid="stMain"] input'))
        .filter(e => e.value && ['text', 'search', 'number'].includes(e.type) && e.getBoundingClientRect().width > 0)
        .filter(e => { const s = getComputedStyle(e);
            ruler.font = `${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
            const end = e.getBoundingClientRect().left + parseFloat(s.paddingLeft) + ruler.measureText(e.value).width;
            let edge = Infinity;
            for (let a = e.parentElement; a && a !== document.body; a = a.parentElement)
                if (['hidden', 'clip'].includes(getComputedStyle(a).overflowX))
                    edge = Math.min(edge, a.getBoundingClientRect().right);
            return end > edge + 1; })
        .map(e => e.value.slice(0, 60)); }"""
# What presenter mode promises, read off the page.
PRESENTER = """() => {
    const main = document.querySelector('[data-testid="stMainBlockContainer"]');
    const sidebar = document.querySelector('[data-testid="stSidebar"]');
    const shown = sel => Array.from(document.querySelectorAll(sel)).some(e => e.getBoundingClientRect().width > 0);
    const text = document.querySelector('[data-testid="stMain"] [data-testid="stMarkdownContainer"] p');
    return {
        overflow: main.scrollWidth - main.clientWidth,
        pageOverflow: document.documentElement.scrollWidth - window.innerWidth,
        sidebarWidth: sidebar ? sidebar.getBoundingClientRect().width : 0,
        toolbar: shown('[data-testid="stToolbarActions"]') || shown('[data-testid="stMainMenu"]'),
        footer: shown('footer'),
        bodyText: text ? parseFloat(getComputedStyle(text).fontSize) : 0,
    };
}"""


def open_lesson(visits, server, query: dict[str, str], size=PROJECTOR):
    tab = new_tab(visits, size)
    open_link(tab, f"{server.url}/lesson?{urlencode(query)}")
    return tab


def heading(tab) -> str:
    return tab.locator('[data-testid="stMain"] h2').first.inner_text().strip()


def title(number: int, lang: str) -> str:
    i18n.set_language(lang)
    try:
        return i18n._(lesson_steps.STEPS[number - 1].title)
    finally:
        i18n.set_language("en")


def wait_for_step(tab, number: int, lang: str = "en") -> None:
    """Until the link holds the step and the page shows its title: the link changes before the rerun has begun,
    and a loaded machine has been seen to let the idle check pass on the step before (CI: step 18's title at 19)."""
    tab.wait_for_function(f"() => new URLSearchParams(location.search).get('step') === '{number}'", polling=100)
    tab.wait_for_function(
        """expected => {
            const h = document.querySelector('[data-testid="stMain"] h2');
            return h !== null && h.innerText.trim() === expected;
        }""",
        arg=title(number, lang),
        timeout=VIEW_SECONDS * 1000,
        polling=100,
    )
    wait_for_app(tab)


def test_the_arrow_keys_move_between_steps(server, visits):
    tab = open_lesson(visits, server, {"step": "2", "lang": "en"}, size=(1400, 900))
    try:
        assert heading(tab) == title(2, "en")
        tab.evaluate("() => document.activeElement && document.activeElement.blur()")
        tab.keyboard.press("ArrowRight")
        wait_for_step(tab, 3)
        assert heading(tab) == title(3, "en")
        tab.keyboard.press("ArrowRight")
        wait_for_step(tab, 4)
        tab.keyboard.press("ArrowLeft")
        wait_for_step(tab, 3)
        assert heading(tab) == title(3, "en")
        assert url_params(tab)["lang"] == "en"
    finally:
        tab.close()


def test_the_arrow_keys_stop_at_the_first_step(server, visits):
    tab = open_lesson(visits, server, {"step": "1", "lang": "zh"}, size=(1400, 900))
    try:
        tab.keyboard.press("ArrowLeft")
        tab.wait_for_timeout(1500)
        wait_for_app(tab)
        assert url_params(tab)["step"] == "1"
        assert heading(tab) == title(1, "zh")
    finally:
        tab.close()


# At 1024x768 the slides' walk (test_lesson_slides.py) reaches every step in presenter mode already: it reads these
# checks there, step by step, rather than a second walk of its own.
@pytest.mark.parametrize("size", [(1400, 900)], ids=["1400"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_presenter_mode_reads_cleanly_on_a_projector_at_every_step(server, visits, lang, size):
    tab = open_lesson(visits, server, {"step": "1", "lang": lang, "present": "1"}, size=size)
    try:
        for number in range(1, len(lesson_steps.STEPS) + 1):
            if number > 1:
                tab.evaluate("() => document.activeElement && document.activeElement.blur()")
                tab.keyboard.press("ArrowRight")
                wait_for_step(tab, number, lang)
            assert heading(tab) == title(number, lang)
            problems = presenter_problems(tab)
            assert not problems, f"step {number} ({lang}): {problems}"
    finally:
        tab.close()


def presenter_problems(tab) -> list[str]:
    """What keeps a page in presenter mode from reading cleanly on a projector."""
    problems = []
    if url_params(tab).get("present") != "1":
        problems.append("presenter mode left the link")
    facts = tab.evaluate(PRESENTER)
    if facts["overflow"] > 1 or facts["pageOverflow"] > 1:
        problems.append(f"wider than the screen: {facts}")
    if facts["sidebarWidth"] > 1:
        problems.append("the sidebar is open")
    if facts["toolbar"] or facts["footer"]:
        problems.append("Streamlit's toolbar or footer is shown")
    if facts["bodyText"] < 28:
        problems.append(f"body text of {facts['bodyText']} px: not about twice Streamlit's 16 px")
    problems += chart_text_problems(tab)
    problems += [f"label cut short: {text!r}" for text in tab.evaluate(CUT_TEXT)]
    problems += [f"value cut short: {text!r}" for text in tab.evaluate(CUT_VALUES)]
    return problems


# The download has been seen not to come when the button was clicked while its fold was still opening (the click
# landed on the fold's text): open_fold waits until the fold has grown to its content.
def test_the_slides_gif_downloads_and_decodes(server, visits):
    tab = open_lesson(visits, server, {"step": "4", "lang": "zh", "present": "1"})
    try:
        i18n.set_language("zh")
        label = i18n._("GIF for slides")
        fold = i18n._("More: the step menu, the step's whole text, the chart's caption and links")
        i18n.set_language("en")
        open_fold(tab, fold)  # a slide folds its links below the question
        with tab.expect_download() as download:
            tab.get_by_role("button", name=label).click()
        with open(download.value.path(), "rb") as downloaded:
            data = downloaded.read()
        assert download.value.suggested_filename.endswith(".gif")
        image = Image.open(io.BytesIO(data))
        settings = views.SHARING
        assert image.n_frames == len(
            morph_configs(settings.d_model, settings.heads, settings.latent, settings.rope_dim)
        )
        assert image.size == gif.SIZE
        image.seek(0)
        first = image.convert("RGB")
        image.seek(image.n_frames - 1)
        assert ImageChops.difference(first, image.convert("RGB")).getbbox() is not None
    finally:
        tab.close()


@pytest.mark.parametrize("name", [name for name in PAGES if name != "lesson"])
def test_presenter_mode_reads_cleanly_on_a_projector_on_every_page(server, visits, name):
    tab = new_tab(visits, PROJECTOR)
    try:
        path = "" if name == "overview" else name
        open_link(tab, f"{server.url}/{path}?{urlencode(Settings().to_link() | {'present': '1'})}")
        problems = presenter_problems(tab)
        assert not problems, f"{name}: {problems}"
    finally:
        tab.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", ["overview", "kv_cache"])
def test_presenter_mode_reads_cleanly_with_the_designs_after_mla(server, visits, name, lang):
    """Every design chosen, as a link from the lesson's "explore this" would carry them: nothing cut, no chart text
    under presenter mode's least size."""
    tab = new_tab(visits, PROJECTOR)
    try:
        path = "" if name == "overview" else name
        query = Settings(designs=DESIGNS).to_link() | {"present": "1", "lang": lang}
        open_link(tab, f"{server.url}/{path}?{urlencode(query)}")
        section = {"overview": "The designs after MLA beside them", "kv_cache": "The designs after MLA, step by step"}
        tab.get_by_text(in_language(section[name], lang)).wait_for()
        wait_for_app(tab)
        problems = presenter_problems(tab)
        problems += [
            f"chart {t['chart']}: {t['text']!r} drawn at {t['px']:.1f} px"
            for t in tab.evaluate(TEXT_SIZES)
            if t["px"] < PRESENTED_TEXT_PX - 0.05
        ]
        assert not problems, f"{name} ({lang}): {problems}"
    finally:
        tab.close()
