"""What a class can read: every page at a laptop's 1400 px, a projector's 1024x768 and a phone's 400x800, in the real
browser (in Chinese too, at the widest and the narrowest).

For each page and width: nothing is requested from outside the machine (fonts, icons), no "Page not found" dialog,
no two chart titles or axis titles overlap (nor a title the always-visible toolbar covers, nor an axis title its
tick labels), no text of a chart falls outside it (tick labels are not hidden at the edge by Plotly:
explorer.charts.with_unmeasured_tick_labels), no category axis leaves a category unnamed (Plotly skips names on
a plot short for its rows), no chart text is drawn too small to read nor bar labels over each other, no table
scrolls sideways at 1400 px, and at every width each table's first columns and the columns that carry the page's
point (the ✓ and the ratios) are in view without scrolling.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from deploy.served import CHARTS_READY
from explorer import i18n
from explorer.pages import PAGES
from explorer.settings import DESIGNS, Settings

from .conftest import new_tab, open_link

SIZES = {"laptop": (1400, 900), "projector": (1024, 768), "phone": (400, 800)}
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
# Columns that carry a page's point: each must be in view, unscrolled, wherever its table is drawn (as must every
# table's first two columns: what a row is, and its first answer).
POINT_COLUMNS = {
    "overview": ("Agree", "vs MHA"),
    "kv_cache": ("Agree", "vs MHA", "Tokens each", "Users"),
    "axes": ("Held", "Read per step"),
}
# Chart text drawn smaller than this is not read from a desk (Plotly shrinks bar labels to fit their bars: ~6 px at
# 1024 px, issue #28 item 9). Tick labels of heatmap panels are set at 9 px; labels of values (bars, points) at 10.
MIN_TEXT_PX, MIN_VALUE_LABEL_PX = 9, 10
PENDING: set[str] = set()  # pages whose layout pass is still open work: none
MOST_NAMED = 40  # categories an axis names each of (step 13's grid: 22 models); a longer axis is named every few

BOXES = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((plot, index) => {
    const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const texts = Array.from(plot.querySelectorAll(
        '.infolayer text[class$="title"], .annotation-text'))
        .filter(e => (e.textContent || '').trim() && e.getBoundingClientRect().width > 0)
        .map(e => ({text: e.textContent.trim().slice(0, 60), kind: e.getAttribute('class'), box: box(e)}));
    // every subplot's axis tick labels (xtick, x2tick, y3tick, ...; not the colour bars'), not only the first axes'
    const ticks = Array.from(plot.querySelectorAll('g[class$="tick"] > text'))
        .filter(e => /^[xy][0-9]*tick$/.test(e.parentNode.getAttribute('class')))
        .filter(e => (e.textContent || '').trim() && e.getBoundingClientRect().width > 0)
        .map(e => ({text: e.textContent.trim().slice(0, 60), box: box(e)}));
    const bar = plot.querySelector('.modebar');
    return {index, texts, ticks, modebar: bar ? box(bar) : null};
})"""


# Every drawn text of every chart (ticks, titles, legends, colour bars, annotations) that reaches past the chart's own
# box: cut off.
OUTSIDE = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap((plot, index) => {
    const frame = plot.getBoundingClientRect();
    return Array.from(plot.querySelectorAll('svg text'))
        .filter(e => (e.textContent || '').trim() && e.getBoundingClientRect().width > 0)
        .filter(e => { const r = e.getBoundingClientRect();
            return r.left < frame.left - 1 || r.right > frame.right + 1 || r.top < frame.top - 1
                || r.bottom > frame.bottom + 1; })
        .map(e => `chart ${index}: ${e.getAttribute('class')} ${JSON.stringify(e.textContent.trim().slice(0, 40))}`);
})"""

# Every drawn st.dataframe: its content's width against its box's (the grid's scroller), and its columns' widths in
# the order drawn. Streamlit's dataframe is a glide-data-grid canvas: no element per column to measure, and its list of
# columns for screen readers includes columns only partly in view, so the widths are read from the grid's own props
# (found from its canvas through React's fiber). A grid whose props are not found reports null: the test fails.
TABLES = """() => Array.from(document.querySelectorAll('[data-testid="stDataFrame"]'))
    .filter(d => d.getBoundingClientRect().width > 0 && d.querySelector('.dvn-scroller'))
    .map(d => {
        const scroller = d.querySelector('.dvn-scroller');
        const canvas = d.querySelector('canvas[data-testid="data-grid-canvas"]');
        let fiber = canvas && canvas[Object.keys(canvas).find(k => k.startsWith('__reactFiber'))];
        while (fiber && !Array.isArray(fiber.memoizedProps && fiber.memoizedProps.columns)) fiber = fiber.return;
        return {content: scroller.scrollWidth, box: scroller.clientWidth,
            columns: fiber ? fiber.memoizedProps.columns.map(c => [c.title, c.width]) : null};
    })"""

# The rendered size of every chart text (its font size times the scale Plotly draws it at: bar labels are shrunk by a
# transform), but the numbers inside heatmap cells, which Plotly fits to the cells and the hover repeats.
TEXT_SIZES = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap((plot, index) =>
    Array.from(plot.querySelectorAll('svg text'))
        .filter(e => (e.textContent || '').trim() && e.getBoundingClientRect().width > 0)
        .filter(e => !e.closest('.heatmap-label'))
        .map(e => { const m = e.getScreenCTM(); const r = e.getBoundingClientRect();
            return {chart: index, text: e.textContent.trim().slice(0, 40),
                value: e.classList.contains('bartext') || !!e.closest('.textpoint'),
                bar: e.classList.contains('bartext'), point: !!e.closest('.textpoint'),
                px: parseFloat(getComputedStyle(e).fontSize) * Math.hypot(m.a, m.b),
                box: [r.left, r.top, r.right, r.bottom]}; }))"""

# Links to other pages whose label does not fit its box (Streamlit's own style cuts it with an ellipsis).
CUT_LINKS = """() => Array.from(document.querySelectorAll('[data-testid="stPageLink-NavLink"] p'))
    .filter(p => p.scrollWidth > p.clientWidth + 1 || p.parentElement.scrollWidth > p.parentElement.clientWidth + 1)
    .map(p => p.textContent.trim().slice(0, 60))"""


# Every category axis of names whose ticks Plotly chose (tickmode auto: no dtick or tickvals of the figure's) or
# that asks for every name (dtick 1), with its categories in view and the tick labels it drew. Plotly leaves out
# category names where the plot is short for its rows (issue #47: step 13's 19 models on a 270-px slide, every other
# one unnamed); a figure that picks its ticks itself (every few positions of a narrow heatmap panel) says so with
# dtick or tickvals, and an axis of positions (0, 1, 2, ...: a mask's keys) reads as a number line with every other
# one named.
CATEGORIES = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap((plot, index) => {
    const layout = plot._fullLayout || {};
    return Object.keys(layout).filter(k => /^[xy]axis[0-9]*$/.test(k)).map(k => layout[k])
        .filter(a => a.type === 'category' && a.visible && a.showticklabels
            && (a.tickmode === 'auto' || (a.tickmode === 'linear' && a.dtick === 1)))
        .map(a => {
            const [low, high] = [Math.min(...a.range), Math.max(...a.range)];
            const categories = (a._categories || []).filter((c, i) => i >= low && i <= high).map(String);
            const ticks = Array.from(plot.querySelectorAll(`g.${a._id}tick > text`))
                .filter(e => (e.textContent || '').trim() && e.getBoundingClientRect().width > 0);
            const drawn = ticks.map(e => e.textContent.trim());
            const boxes = ticks.map(e => e.getBoundingClientRect()).map(r => [r.left, r.top, r.right, r.bottom]);
            return {chart: index, axis: a._id, categories, drawn, boxes};
        });
})"""


def in_language(message: str, lang: str) -> str:
    i18n.set_language(lang)
    try:
        return i18n._(message)
    finally:
        i18n.set_language("en")


def overlap(a, b, slack: float = 1.0) -> bool:
    return a[0] < b[2] - slack and b[0] < a[2] - slack and a[1] < b[3] - slack and b[1] < a[3] - slack


def chart_text_problems(tab, *, axis_titles: bool = False) -> list[str]:
    """Every chart's texts that overlap each other, a title under the toolbar, text cut off at a chart's edge, a
    category axis that leaves some of its names out; with axis_titles, an axis title over its ticks too."""
    problems = []
    for chart in tab.evaluate(BOXES):
        texts = chart["texts"]
        for i, first in enumerate(texts):
            for second in texts[i + 1 :]:
                if overlap(first["box"], second["box"]):
                    problems.append(f"chart {chart['index']}: {first['text']!r} overlaps {second['text']!r}")
            if chart["modebar"] and "gtitle" in (first["kind"] or "") and overlap(first["box"], chart["modebar"]):
                problems.append(f"chart {chart['index']}: the toolbar covers the title {first['text']!r}")
            if axis_titles and (first["kind"] or "").endswith("title") and "gtitle" not in first["kind"]:
                problems += [
                    f"chart {chart['index']}: the axis title {first['text']!r} overlaps the tick {tick['text']!r}"
                    for tick in chart["ticks"]
                    if overlap(first["box"], tick["box"])
                ]
    problems += [f"cut off at the chart's edge: {text}" for text in tab.evaluate(OUTSIDE)]
    return problems + category_problems(tab.evaluate(CATEGORIES))


def category_problems(axes: list[dict]) -> list[str]:
    """A category axis names every category it has that is a name: positions among them (1, 2, 3 on a long axis of
    keys where a few are named) read as a number line with some of them drawn."""
    problems = []
    for axis in axes:
        # names drawn into each other (issue #47: a 1024x680 slide's ~12 px heatmap rows under 14 px token names)
        named = list(zip(axis["drawn"], axis["boxes"], strict=True))
        problems += [
            f"chart {axis['chart']}: its {axis['axis']} axis draws {first!r} over {second!r}"
            for i, (first, box) in enumerate(named)
            for second, other in named[i + 1 :]
            if overlap(box, other)
        ]
        if len(axis["categories"]) > MOST_NAMED:
            continue  # a long axis (60 keys of a compressed cache) is named every few, by Plotly's choice
        if len(axis["drawn"]) < len(axis["categories"]):
            # a name's lines (<br>) are drawn as tspans of one text: compared without tags and spaces
            drawn = {re.sub(r"\s", "", text) for text in axis["drawn"]}
            unnamed = [c for c in axis["categories"] if re.sub(r"<[^>]+>|\s", "", c) not in drawn]
            if all(re.fullmatch(r"-?[0-9]+", c) for c in unnamed):
                continue
            problems.append(
                f"chart {axis['chart']}: its {axis['axis']} axis names {len(axis['drawn'])} of its "
                f"{len(axis['categories'])} categories (unnamed: {unnamed[:8]})"
            )
    return problems


def open_at(visits, server, name: str, size: tuple[int, int], lang: str = "en", settings: Settings | None = None):
    tab = new_tab(visits, size)
    outside: list[str] = []
    tab.on(
        "request",
        lambda request: (
            outside.append(request.url)
            if urlsplit(request.url).scheme in ("http", "https", "ws", "wss")
            and urlsplit(request.url).hostname not in LOCAL_HOSTS
            else None
        ),
    )
    path = "" if name == "overview" else name
    link = (settings or Settings()).to_link() | {"lang": lang}
    open_link(tab, f"{server.url}/{path}?{'&'.join(f'{k}={v}' for k, v in link.items())}")
    return tab, outside


# The views that several tests read as they are (none of them clicks, hovers or types): each loaded once per module
# in a tab of its own, read by every test that asks for it, closed when the module ends.
SHARED_VIEWS = {("heatmaps", "phone", "en"), ("heatmaps", "phone", "zh")}
SHARED_VIEWS |= {("lab", size, lang) for size in ("laptop", "phone") for lang in ("en", "zh")}
SHARED_VIEWS |= {("kv_cache", "laptop", "en"), ("kv_cache", "laptop", "zh"), ("kv_cache", "phone", "en")}
SHARED_VIEWS |= {("mapping", "laptop", "en"), ("heatmaps", "laptop", "en"), ("heatmaps", "projector", "en")}


@pytest.fixture(scope="module")
def shown(visits, server):
    """show(name, size, lang) -> (tab, requests that left the machine, what closes the tab when the test is done):
    open_at at the default settings, a view of SHARED_VIEWS loaded once."""
    kept: dict[tuple[str, str, str], tuple] = {}

    def show(name: str, size: str, lang: str = "en"):
        if (name, size, lang) not in SHARED_VIEWS:
            tab, outside = open_at(visits, server, name, SIZES[size], lang)
            return tab, outside, tab.close
        if (name, size, lang) not in kept:
            kept[name, size, lang] = open_at(visits, server, name, SIZES[size], lang)
        return (*kept[name, size, lang], lambda: None)

    yield show
    for tab, _ in kept.values():
        tab.close()


# Chinese at the widest and the narrowest width (its titles and labels differ in length, not its layout's logic)
LAYOUTS = [(size, "en") for size in SIZES] + [("laptop", "zh"), ("phone", "zh")]


@pytest.mark.parametrize(("size", "lang"), LAYOUTS, ids=[f"{size}-{lang}" for size, lang in LAYOUTS])
@pytest.mark.parametrize("name", [name for name in PAGES])
def test_each_page_reads_cleanly_at_laptop_projector_and_phone_widths(shown, name, size, lang):
    if name in PENDING:
        pytest.xfail(f"{name}: layout at 1024/400 px still open (issue #14 items 9, 12)")
    tab, outside, done = shown(name, size, lang)
    try:
        assert not tab.get_by_text("Page not found").count(), "the link opened a 'Page not found' dialog"
        problems = chart_text_problems(tab, axis_titles=True)
        problems += [f"a page link's label cut short: {text!r}" for text in tab.evaluate(CUT_LINKS)]
        problems += text_size_problems(tab.evaluate(TEXT_SIZES))
        problems += table_problems(tab.evaluate(TABLES), name, size, lang)
        assert not problems, problems
        assert not outside, f"requests that left the machine: {sorted(set(outside))}"
    finally:
        done()


# Every design after MLA chosen, at the sidebar's default layer: the overview's bars and table, the KV cache's chart
DESIGNED = Settings(designs=DESIGNS)


@pytest.mark.parametrize(("size", "lang"), LAYOUTS, ids=[f"{size}-{lang}" for size, lang in LAYOUTS])
@pytest.mark.parametrize("name", ["overview", "kv_cache"])
def test_the_designs_after_mla_read_cleanly_at_every_width(server, visits, name, size, lang):
    tab, outside = open_at(visits, server, name, SIZES[size], lang, DESIGNED)
    try:
        section = {"overview": "The designs after MLA beside them", "kv_cache": "The designs after MLA, step by step"}
        tab.get_by_text(in_language(section[name], lang)).wait_for()
        problems = chart_text_problems(tab, axis_titles=True)
        problems += text_size_problems(tab.evaluate(TEXT_SIZES))
        problems += table_problems(tab.evaluate(TABLES), name, size, lang)
        assert not problems, problems
        assert not outside, f"requests that left the machine: {sorted(set(outside))}"
    finally:
        tab.close()


def text_size_problems(texts: list[dict]) -> list[str]:
    """Chart text drawn too small to read, and bar labels or point names that run into each other (point names are
    placed by explorer.labels.apart: this is its check in the browser)."""
    problems = [
        f"chart {t['chart']}: {t['text']!r} drawn at {t['px']:.1f} px"
        for t in texts
        if t["px"] < (MIN_VALUE_LABEL_PX if t["value"] else MIN_TEXT_PX) - 0.05
    ]
    for kind in ("bar", "point"):
        labels = [t for t in texts if t[kind]]
        problems += [
            f"chart {a['chart']}: the {kind} labels {a['text']!r} and {b['text']!r} overlap"
            for i, a in enumerate(labels)
            for b in labels[i + 1 :]
            if a["chart"] == b["chart"] and overlap(a["box"], b["box"])
        ]
    return problems


def table_problems(tables: list[dict], name: str, size: str, lang: str) -> list[str]:
    """At a laptop's width no table scrolls sideways; at every width each table's first two columns and the page's
    point columns end inside the table's box (columns are drawn in the order listed, pinned ones first)."""
    problems = []
    points = {in_language(column, lang) for column in POINT_COLUMNS.get(name, ())}
    for index, table in enumerate(tables):
        assert table["columns"], f"table {index}: the grid's columns were not found (has Streamlit's grid changed?)"
        if size == "laptop" and table["content"] > table["box"] + 1:
            problems.append(f"table {index} is {table['content']} px wide in a {table['box']} px box")
        right = 0
        for position, (title, width) in enumerate(table["columns"]):
            right += width
            if (position < 2 or title in points) and right > table["box"] + 1:
                problems.append(
                    f"table {index}: the column {title!r} ends at {right} px, past its {table['box']} px box"
                )
    return problems


def test_the_overview_has_a_link_of_its_own_that_opens_cleanly(server, visits):
    """/overview (what a share box may hand out, or typed by hand) opens the overview, with no dialog over it."""
    tab = new_tab(visits, (1024, 768))
    try:
        open_link(tab, f"{server.url}/overview?heads=16", chart_count=2)
        assert tab.get_by_role("heading", name="Attention Explorer").is_visible()
        assert not tab.get_by_text("Page not found").count()
        assert not tab.get_by_text("version of the explorer").count(), "no v in a typed link: no version note"
    finally:
        tab.close()


# Each axis's drawn tick labels, with their boxes.
AXIS_TICKS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap((plot, index) =>
    Array.from(plot.querySelectorAll('.xaxislayer-above, .yaxislayer-above')).map(axis =>
        Array.from(axis.querySelectorAll('text'))
            .filter(e => (e.textContent || '').trim() && e.getBoundingClientRect().width > 0)
            .map(e => { const r = e.getBoundingClientRect();
                return {chart: index, text: e.textContent.trim(), box: [r.left, r.top, r.right, r.bottom]}; })))"""


def test_a_short_sequence_keeps_its_tick_labels_apart_on_a_phone(server, visits):
    """Eight tokens: numbers in the cells and a tick on every position. Across four panels a row at 400 px (~30 px
    each) a label per position ran together: narrow panels get a few, and the cells' numbers are fitted by Plotly."""
    tab, _ = open_at(visits, server, "heatmaps", SIZES["phone"], settings=Settings(seq_len=8))
    try:
        together = [
            f"chart {a['chart']}: {a['text']} and {b['text']}"
            for ticks in tab.evaluate(AXIS_TICKS)
            for i, a in enumerate(ticks)
            for b in ticks[i + 1 :]
            if overlap(a["box"], b["box"])
        ]
        assert not together, together
    finally:
        tab.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_steps_axis_titles_clear_their_ticks_at_128_tokens(server, visits, lang):
    """Plotly sets an inner panel's x title at its tick labels' height: at 128 tokens the middle tick ("50") ran into
    "key" under ① to ④ (at 64 the title happened to fall between two ticks). Ticks now mark the two ends only."""
    tab, _ = open_at(visits, server, "heatmaps", SIZES["projector"], lang, Settings(seq_len=128))
    try:
        clear = 3  # px: boxes that merely touch read as one word ("50key")
        problems = [
            f"chart {chart['index']}: {title['text']!r} against the tick {tick['text']!r}"
            for chart in tab.evaluate(BOXES)
            for title in chart["texts"]
            if re.fullmatch(r"x\d*title", title["kind"] or "")
            for tick in chart["ticks"]
            if overlap(title["box"], tick["box"], slack=-clear)
        ]
        assert not problems, problems
    finally:
        tab.close()


# Each chart's panels (its x axes) as drawn: their width in px, and every panel title's box.
PANELS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((plot, index) => {
    const layout = plot._fullLayout;
    const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    return {chart: index,
        widths: Object.keys(layout).filter(name => /^xaxis[0-9]*$/.test(name)).map(name => layout[name]._length),
        titles: Array.from(plot.querySelectorAll('.annotation-text'))
            .filter(e => (e.textContent || '').trim() && e.getBoundingClientRect().width > 0)
            .map(e => ({text: e.textContent.trim(), box: box(e)}))};
})"""
PHONE_PANEL_PX = 100  # a 64x64 map at ~1.5 px a cell: its diagonal and first column can be seen


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_heatmap_panels_are_readably_wide_on_a_phone_and_their_titles_apart(shown, lang):
    """Issue #28 item 10: at 400 px four 64x64 maps a row were ~35 px wide beside a colour bar a quarter of the width,
    and the step-by-step titles ran together ("softmax[64×64]"). On a phone each panel is at least PHONE_PANEL_PX
    wide and no two panel titles meet."""
    tab, _, done = shown("heatmaps", "phone", lang)
    try:
        tab.wait_for_function(CHARTS_READY, arg=4, polling=100)
        charts = tab.evaluate(PANELS)
        grids = [chart for chart in charts if len(chart["widths"]) > 1]
        assert len(grids) >= 3, f"the grids of panels (every head, the variants, inside one head): {charts}"
        narrow = [f"chart {c['chart']}: {min(c['widths']):.0f} px" for c in grids if min(c["widths"]) < PHONE_PANEL_PX]
        assert not narrow, f"panels narrower than {PHONE_PANEL_PX} px: {narrow}"
        together = [
            f"chart {c['chart']}: {a['text']!r} and {b['text']!r}"
            for c in grids
            for i, a in enumerate(c["titles"])
            for b in c["titles"][i + 1 :]
            if overlap(a["box"], b["box"], slack=-2)  # and 2 px apart at least
        ]
        assert not together, together
    finally:
        done()


# The lab's models table: its grid's scroller (its whole height and its box's), its columns and the width of each
# model's name in the grid's own font.
LAB_TABLE = """names => { const d = document.querySelector('[data-testid="stDataFrame"]');
    const scroller = d.querySelector('.dvn-scroller');
    const canvas = d.querySelector('canvas[data-testid="data-grid-canvas"]');
    let fiber = canvas[Object.keys(canvas).find(k => k.startsWith('__reactFiber'))];
    while (fiber && !Array.isArray(fiber.memoizedProps && fiber.memoizedProps.columns)) fiber = fiber.return;
    const props = fiber.memoizedProps, measure = document.createElement('canvas').getContext('2d');
    measure.font = props.theme.baseFontFull;
    return {height: scroller.scrollHeight, box: scroller.clientHeight, rows: props.rows,
        columns: props.columns.map(c => [c.title, c.width]),
        widest: Math.max(...names.map(name => measure.measureText(name).width))};
}"""
GRID_CELL_PADDING = 8  # px each side of a glide-data-grid cell's text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_lab_table_shows_every_row_and_whole_names_at_a_laptops_width(shown, lang):
    """Item 7 of #37: at 1400 px the healed rows (the main result) came last inside an inner scroll area, their names
    cut. Every row is in view without scrolling the table, and the model column is wide enough for every name."""
    from explorer.lab import stored, tables

    i18n.set_language(lang)
    try:
        rows = tables.models_table(
            stored.table_rows(stored.load_table()), stored.healed_rows(stored.load_heal_table()), 8192
        )
        model = i18n._("model")
    finally:
        i18n.set_language("en")
    tab, _, done = shown("lab", "laptop", lang)
    try:
        # the table follows the first chart (explorer.lab.first_view): under load it came after the page first settled
        tab.wait_for_selector('[data-testid="stDataFrame"] canvas[data-testid="data-grid-canvas"]', timeout=120_000)
        table = tab.evaluate(LAB_TABLE, [row[model] for row in rows])
        assert table["rows"] == len(rows)
        assert table["height"] <= table["box"] + 1, f"the table scrolls inside: {table['height']} px in {table['box']}"
        width = dict(table["columns"])[model]
        assert width >= table["widest"] + 2 * GRID_CELL_PADDING, f"{width} px for names {table['widest']:.0f} px wide"
    finally:
        done()


# Every chart that names its points: the names its traces hold, and those drawn
POINT_NAMES = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .filter(g => g.data && g.data.some(t => typeof t.mode === 'string' && t.mode.includes('text')))
    .map(g => ({held: g.data.filter(t => typeof t.mode === 'string' && t.mode.includes('text'))
            .flatMap(t => t.text || []).filter(text => String(text).trim()).length,
        drawn: Array.from(g.querySelectorAll('.textpoint text')).filter(e => e.textContent.trim()
            && e.getBoundingClientRect().width > 0).length}))"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_labs_charts_name_their_points_apart_on_a_phone(shown, lang):
    """Item 8 of #37: at 400 px the lab's two Pareto charts left their points unnamed. Each names every point, the
    names placed for a phone's plot (explorer.labels.apart), none over another."""
    tab, _, done = shown("lab", "phone", lang)
    try:
        charts = tab.evaluate(POINT_NAMES)
        assert len(charts) >= 2, f"the lab's Pareto charts and the healed close-up: {charts}"
        assert all(chart["drawn"] == chart["held"] > 0 for chart in charts), charts
        overlaps = [p for p in text_size_problems(tab.evaluate(TEXT_SIZES)) if "labels" in p]
        assert not overlaps, overlaps
    finally:
        done()


# Every st.table's header cells: text, the width its text has (the cell's less its padding), its font's size; and
# whether the table is cut at its box
TABLE_HEADERS = """() => Array.from(document.querySelectorAll('[data-testid="stTable"]'))
    .filter(d => d.getBoundingClientRect().width > 0)
    .map(d => ({wider: d.scrollWidth > d.clientWidth + 1 && getComputedStyle(d).overflowX !== 'auto',
        heads: Array.from(d.querySelectorAll('th')).map(h => { const s = getComputedStyle(h);
            return {text: h.textContent.trim(), font: parseFloat(s.fontSize),
                room: h.getBoundingClientRect().width - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)}; })}))"""
HEADER_CHARACTERS = 3  # a header wraps by words at this many characters a line, not one at a time


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_heatmaps_tables_headers_wrap_by_words_on_a_phone(shown, lang):
    """Item 8b of #37: at 400 px the heatmaps page's tables wrapped their Chinese headers one character a line. Each
    header cell has room for HEADER_CHARACTERS Chinese characters, and no table is cut at its box."""
    tab, _, done = shown("heatmaps", "phone", lang)
    try:
        tables = tab.evaluate(TABLE_HEADERS)
        assert len(tables) >= 2, "the heatmaps page draws its comparison and cache tables"
        narrow = [
            f"{head['text']!r}: {head['room']:.0f} px"
            for table in tables
            for head in table["heads"]
            if head["room"] < HEADER_CHARACTERS * head["font"] - 1
        ]
        assert not narrow, f"headers with room for fewer than {HEADER_CHARACTERS} characters a line: {narrow}"
        assert not any(table["wider"] for table in tables), "a table is cut at its box"
    finally:
        done()


# The copy buttons of text shown as it is (explorer/verbatim.py), and the toolbar of each table, once drawn in full
COPY_AND_TOOLBARS = """() => { const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    return {copy: Array.from(document.querySelectorAll('.verbatim-copy')).filter(e => e.offsetParent).map(box),
        toolbars: Array.from(document.querySelectorAll('[data-testid="stDataFrame"]'))
            .map(d => d.closest('[data-testid="stElementContainer"]').querySelector('[data-testid="stElementToolbar"]'))
            .filter(e => e && getComputedStyle(e).opacity === '1' && !e.getAnimations({subtree: true}).length)
            .map(box)}; }"""


@pytest.mark.parametrize("size", ["phone", "laptop"])
def test_a_tables_toolbar_leaves_the_copy_button_above_it_free(server, visits, size):
    """Item 8c of #37: at 400 px the toolbar of kv_cache's step table (shown on a tap or hover, above the table's top
    edge) covered the copy button of the step's log right above it."""
    tab, _ = open_at(visits, server, "kv_cache", SIZES[size])
    try:
        tables = tab.locator('[data-testid="stDataFrame"]')
        assert tables.count(), "kv_cache draws its tables"
        for index in range(tables.count()):
            tables.nth(index).hover()
            # Streamlit fades and slides the toolbar in: until it is drawn where it stays
            tab.wait_for_function(f"() => ({COPY_AND_TOOLBARS})().toolbars.length > 0", polling=100)
            drawn = tab.evaluate(COPY_AND_TOOLBARS)
            assert drawn["copy"], "kv_cache shows the step's log with its copy button"
            covered = [(bar, copy) for bar in drawn["toolbars"] for copy in drawn["copy"] if overlap(bar, copy)]
            assert not covered, f"table {index}'s toolbar covers a copy button: {covered}"
    finally:
        tab.close()


# The designs after MLA's views: every design a page draws, chosen in the sidebar and opened by the page's own choice
DESIGN_LINK = {"design": "sliding,dsa,compressed,linear,chunked,shared", "seq_len": "64"}
DESIGN_VIEWS = {
    "heatmaps-sliding": ("heatmaps", {"hm_design": "sliding"}),
    "heatmaps-learned-sink": ("heatmaps", {"hm_design": "sliding", "hm_sink": "learned"}),
    "heatmaps-dsa": ("heatmaps", {"hm_design": "dsa"}),
    "heatmaps-compressed": ("heatmaps", {"hm_design": "compressed"}),
    "mapping-sliding": ("mapping", {"map_design": "sliding"}),
    "mapping-dsa": ("mapping", {"map_design": "dsa"}),
    "mapping-compressed": ("mapping", {"map_design": "compressed"}),
    "mapping-linear": ("mapping", {"map_design": "linear"}),
    "heatmaps-chunked": ("heatmaps", {"hm_design": "chunked"}),
    "heatmaps-shared": ("heatmaps", {"hm_design": "shared"}),
    "mapping-chunked": ("mapping", {"map_design": "chunked"}),
    "mapping-shared": ("mapping", {"map_design": "shared"}),
}


def open_design_view(visits, server, view: str, size: tuple[int, int], query: dict[str, str]):
    name, own = DESIGN_VIEWS[view]
    tab = new_tab(visits, size)
    link = Settings().to_link() | DESIGN_LINK | own | query
    open_link(tab, f"{server.url}/{name}?{'&'.join(f'{k}={v}' for k, v in link.items())}")
    return tab


@pytest.mark.parametrize(("size", "lang"), LAYOUTS, ids=[f"{size}-{lang}" for size, lang in LAYOUTS])
@pytest.mark.parametrize("view", list(DESIGN_VIEWS))
def test_the_designs_views_read_cleanly_at_laptop_projector_and_phone_widths(server, visits, view, size, lang):
    tab = open_design_view(visits, server, view, SIZES[size], {"lang": lang})
    try:
        problems = chart_text_problems(tab, axis_titles=True) + text_size_problems(tab.evaluate(TEXT_SIZES))
        assert not problems, problems
    finally:
        tab.close()


@pytest.mark.parametrize("view", list(DESIGN_VIEWS))
def test_the_designs_views_read_cleanly_in_presenter_mode(server, visits, view):
    from .test_lesson_in_browser import presenter_problems

    tab = open_design_view(visits, server, view, SIZES["projector"], {"present": "1"})
    try:
        problems = presenter_problems(tab)
        assert not problems, f"{view}: {problems}"
    finally:
        tab.close()


# Every chart's title as drawn: the width of each of its lines and of the chart.
TITLE_LINES = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')).map((plot, index) => {
    const title = plot.querySelector('.infolayer .gtitle');
    const lines = title ? Array.from(title.querySelectorAll('tspan.line')) : [];
    const widths = (lines.length ? lines : title ? [title] : []).map(e => e.getBoundingClientRect().width);
    return {chart: index, text: title ? title.textContent.slice(0, 60) : '', widths,
        chart_px: plot.getBoundingClientRect().width};
})"""
# A title broken to its chart's width fills at least this share of it on each line but its last (balanced lines of
# a title that does not fit one line are over half the room each); broken at 48 letters they filled about a quarter.
TITLE_LINE_SHARE = 0.4


@pytest.mark.parametrize(
    ("name", "size", "lang"),
    [
        ("kv_cache", "laptop", "en"),
        ("kv_cache", "laptop", "zh"),
        ("mapping", "laptop", "en"),
        ("kv_cache", "phone", "en"),
    ],
)
def test_chart_titles_break_at_the_charts_own_width(shown, name, size, lang):
    """Issue 47: titles broken on the server at 48 letters took two lines of a few words beside a 1,100 px plot. The
    browser breaks each title where its chart's width needs it (explorer/live_chart.js): no line but the last is much
    shorter than the chart, and none is cut off at its edge."""
    tab, _, done = shown(name, size, lang)
    try:
        tab.wait_for_function(CHARTS_READY, arg=1)
        titles = [t for t in tab.evaluate(TITLE_LINES) if t["widths"]]
        assert titles, "the page's charts have titles"
        short = [
            f"chart {t['chart']} {t['text']!r}: lines {[round(w) for w in t['widths']]} px in {t['chart_px']:.0f} px"
            for t in titles
            if any(w < TITLE_LINE_SHARE * t["chart_px"] for w in t["widths"][:-1])
        ]
        wide = [f"chart {t['chart']} {t['text']!r}" for t in titles if max(t["widths"]) > t["chart_px"]]
        assert not short, short
        assert not wide, f"titles wider than their chart: {wide}"
    finally:
        done()


# The decode step's chart (one heatmap, one row per head): its texts' drawn sizes but its cells' numbers, and its
# colour bar's tick labels' boxes.
DECODE_TEXT = """() => {
    const plot = Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')).find(p => p.data
        && p.data.length === 1 && p.data[0].type === 'heatmap' && typeof p.data[0].y[0] === 'string');
    if (!plot) return null;
    const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const shown = e => (e.textContent || '').trim() && e.getBoundingClientRect().width > 0;
    const sizes = Array.from(plot.querySelectorAll('svg text')).filter(shown).filter(e => !e.closest('.heatmap-label'))
        .map(e => { const m = e.getScreenCTM();
            return {text: e.textContent.trim(), px: parseFloat(getComputedStyle(e).fontSize) * Math.hypot(m.a, m.b)}; });
    const ticks = Array.from(plot.querySelectorAll('.colorbar .cbaxis text, .colorbar [class*="tick"] text'))
        .filter(shown).map(e => ({text: e.textContent.trim(), box: box(e)}));
    return {sizes, ticks};
}"""
DECODE_PHONE_PX = 11  # px of text a phone reads at arm's length


@pytest.mark.parametrize(("size", "lang"), [("laptop", "en"), ("projector", "en"), ("phone", "en"), ("phone", "zh")])
def test_the_decode_steps_labels_read_and_its_colour_bars_ticks_stand_apart(shown, size, lang):
    """Issue 47: the decode step's colour bar had five tick labels on a 50 px bar, touching, and a phone drew its
    head names and positions at 9 px (MIN_TEXT_PX, the other heatmaps' ticks): there they are at least 11 px."""
    tab, _, done = shown("heatmaps", size, lang)
    try:
        tab.wait_for_function(CHARTS_READY, arg=4)
        found = tab.evaluate(DECODE_TEXT)
        assert found is not None, "the heatmaps page draws the decode step"
        assert len(found["ticks"]) >= 2, f"the colour bar is ticked: {found['ticks']}"
        touching = [
            f"{a['text']!r} and {b['text']!r}"
            for i, a in enumerate(found["ticks"])
            for b in found["ticks"][i + 1 :]
            if overlap(a["box"], b["box"], slack=-4)  # 4 px apart at least
        ]
        assert not touching, touching
        least = DECODE_PHONE_PX if size == "phone" else MIN_TEXT_PX
        small = [f"{t['text']!r} at {t['px']:.1f} px" for t in found["sizes"] if t["px"] < least - 0.05]
        assert not small, small
    finally:
        done()


# Each flat colour bar on the page (a phone's heatmaps: explorer/grid.py with_flat_colorbars): its title's box and its
# bar's, as drawn.
FLAT_BARS = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')).flatMap((g, chart) =>
    Array.from(g.querySelectorAll('.colorbar')).map(bar => {
        const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
        const title = bar.querySelector('.cbtitle text'), fill = bar.querySelector('.cbfills');
        return {chart, title: title ? title.textContent : '', titleBox: title ? box(title) : null, bar: box(fill)};
    }).filter(b => b.bar[2] - b.bar[0] > b.bar[3] - b.bar[1]))"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_flat_colour_bars_titles_stand_clear_above_their_bars_on_a_phone(shown, lang):
    """Issue 47: on a phone the heatmaps' flat colour bars drew their titles onto their bars (the decode step's wholly,
    the others by 2-3 px). Each title lies above its bar, 2 px clear at least."""
    tab, _, done = shown("heatmaps", "phone", lang)
    try:
        tab.wait_for_function(CHARTS_READY, arg=4, polling=100)
        bars = tab.evaluate(FLAT_BARS)
        assert len({b["chart"] for b in bars}) >= 4, f"the heatmaps' flat colour bars: {bars}"
        onto = [
            f"chart {b['chart']}: {b['title']!r} at {b['titleBox']}, its bar at {b['bar']}"
            for b in bars
            if not b["title"] or b["titleBox"][3] > b["bar"][1] - 2
        ]
        assert not onto, onto
    finally:
        done()
