"""What a teacher takes away: the settings as JSON, the shareable link, and a CSV beside every chart."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from attn_core import kv_cache_bytes
from explorer.charts import LIVE_CHART_NAME, PLOTLY_WORDS
from explorer.pages import PAGES
from explorer.settings import Settings
from tests.app.helpers import no_exception

from .helpers import all_elements, chart_payload, chart_specs, charts, open_page, verbatim

LINKED = Settings(
    variants=("mha", "gqa", "mla"),
    d_model=256,
    heads=8,
    groups=2,
    latent=64,
    rope_dim=16,
    seq_len=32,
    batch=4,
    dtype="float32",
    seed=42,
)


def element_key(node) -> str | None:
    """The user key of an element ('$$ID-<hash>-<key>'), or None."""
    element_id = getattr(getattr(node, "proto", None), "id", "") or ""
    return element_id.split("-", 2)[2] if element_id.startswith("$$ID-") and element_id.count("-") >= 2 else None


def read_csv(text: bytes) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text.decode("utf-8"))))


@pytest.mark.parametrize("page", PAGES)
def test_the_json_download_holds_everything_the_link_holds(page, media):
    """The settings and the page's own view settings: the JSON reproduces what the link reproduces."""
    at = open_page(page, LINKED.to_link())
    button = next(b for b in at.sidebar.get("download_button") if b.label == "Settings as JSON")
    assert media.file(button).filename.endswith(".json")
    saved = json.loads(media.content(button))
    assert saved == dict(at.query_params)
    assert saved.items() >= LINKED.to_link().items()
    if page != "overview":
        assert set(saved) > set(LINKED.to_link()), "the page's own choices are saved too"


@pytest.mark.parametrize("page", PAGES)
def test_the_share_box_shows_a_link_with_every_setting(page):
    at = open_page(page, LINKED.to_link())
    link = verbatim(at.sidebar)[0]
    query = dict(part.split("=", 1) for part in link.split("?", 1)[1].split("&"))
    for name, value in LINKED.to_link().items():
        assert query[name] == value.replace(",", "%2C")


@pytest.mark.parametrize("page", PAGES)
def test_every_chart_has_a_csv_download_right_after_it(page, media):
    at = open_page(page, LINKED.to_link())
    order = [
        (node.type, element_key(node), node)
        for node in all_elements(at)
        if getattr(node, "type", None) in ("bidi_component", "download_button")
        # the charts, not other components (the lesson's arrow keys)
        and (node.type != "bidi_component" or node.proto.component_name == LIVE_CHART_NAME)
    ]
    placed = [(index, key) for index, (kind, key, _) in enumerate(order) if kind == "bidi_component"]
    assert placed, "the page draws charts"
    for position, (index, key) in enumerate(placed):
        assert key, f"chart drawn outside show_chart: {key}"
        assert key.startswith("chart_"), f"chart drawn outside show_chart: {key}"
        name = key.removeprefix("chart_")
        end = placed[position + 1][0] if position + 1 < len(placed) else len(order)
        following = [(k, node) for kind, k, node in order[index + 1 : end] if kind == "download_button"]
        assert following, f"no CSV beside chart {name}"
        assert following[0][0] == f"csv_{name}", f"no CSV beside chart {name}"
        button = following[0][1]
        assert media.file(button).filename == f"{name}.csv"
        rows = read_csv(media.content(button))
        assert rows, f"the CSV of {name} is empty"


def test_the_overview_csv_holds_the_plotted_cache_bytes(media):
    at = open_page("overview", LINKED.to_link())
    button = at.get("download_button")[0]
    assert media.file(button).filename == "overview-cache-bytes.csv"
    rows = read_csv(media.content(button))
    bars = chart_specs(at)[0]["data"][0]
    assert [row["variant"].upper() for row in rows] == bars["y"]  # horizontal bars: names on the y axis
    assert [int(row["cache_bytes_measured"]) for row in rows] == bars["x"]
    assert [int(row["cache_bytes_formula"]) for row in rows] == [
        kv_cache_bytes(cfg, LINKED.batch, LINKED.seq_len, LINKED.dtype) for cfg in LINKED.configs().values()
    ]


@pytest.mark.parametrize("page", PAGES)
def test_every_chart_keeps_the_png_toolbar(page):
    at = open_page(page, LINKED.to_link())
    for chart in charts(at):
        config = chart_payload(chart)["config"]
        assert config["displayModeBar"] is True
        assert config["toImageButtonOptions"]["format"] == "png"
        assert config["showSendToCloud"] is False  # plotly.js's default would offer an upload to Plotly's cloud


def test_the_share_box_link_includes_the_page_s_own_view_settings():
    at = open_page("mapping", {"map_variant": "mla"})
    (box,) = verbatim(at.sidebar)
    query = parse_qs(urlparse(box).query)
    assert query["map_variant"] == ["mla"]
    assert "map_store" in query


def test_every_page_s_url_path_is_its_file_name():
    # A freshly started server resolves the first link it is given by file name, before app.py registers pages.
    assert all(Path(page.path).stem == name for name, page in PAGES.items())


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_plotly_s_own_words_on_a_chart_are_in_the_reader_s_language(lang):
    at = open_page("overview", LINKED.to_link() | {"lang": lang})
    for chart in charts(at):
        config = chart_payload(chart)["config"]
        if lang == "en":
            assert "locale" not in config  # plotly.js's own English
            continue
        dictionary = config["locales"][config["locale"]]["dictionary"]
        assert set(dictionary) == set(PLOTLY_WORDS)
        assert all(re.search("[\u4e00-\u9fff]", said) for said in dictionary.values()), dictionary


def qr_text(at) -> str:
    """The share dialog's QR code, decoded by zxing-cpp (an independent reader) from the PNG the page sent."""
    import base64

    import zxingcpp
    from PIL import Image

    body = next(h.proto.body for h in at.get("html") if 'class="share-qr"' in h.proto.body)
    png = base64.b64decode(re.search(r'src="data:image/png;base64,([^"]+)"', body).group(1))
    (code,) = zxingcpp.read_barcodes(Image.open(io.BytesIO(png)))
    return code.text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_qr_code_opens_the_link_shown(lang):
    at = open_page("trained", LINKED.to_link() | {"lang": lang, "tm_text": "注意力 " * 10})
    assert not [h for h in at.get("html") if 'class="share-qr"' in h.proto.body]  # made only when asked for
    next(b for b in at.sidebar.button if "qr_code" in (b.proto.icon or "")).click().run()
    no_exception(at)
    shown = verbatim(at.sidebar)[0]
    assert qr_text(at) == shown
    query = parse_qs(urlparse(shown).query)
    assert query["lang"] == [lang]
    assert query["d_model"] == ["256"]


def test_a_link_too_long_to_scan_is_said_to_be_and_offered_without_its_text():
    """A 2,000-character link's code had ~3 px squares on a projector: the dialog says so, and its code opens the same
    view without the page's free text."""
    from explorer.share import scannable

    scattered = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(700))  # a text the link cannot compact
    at = open_page("trained", LINKED.to_link() | {"tm_text": scattered})
    next(b for b in at.sidebar.button if "qr_code" in (b.proto.icon or "")).click().run()
    no_exception(at)
    whole = verbatim(at.sidebar)[0]
    assert len(whole) > 2000
    assert not scannable(whole)
    assert any("too long to scan" in info.value for info in at.info)
    query = parse_qs(urlparse(qr_text(at)).query)
    assert "tm_text" not in query
    assert query["d_model"] == ["256"], "the same view, without its text"


def test_a_link_with_every_setting_scans():
    from explorer.share import scannable

    link = "https://attention-explorer.example.org/kv_cache?" + "&".join(
        f"{k}={v}" for k, v in (LINKED.to_link() | {"lang": "zh"}).items()
    )
    assert scannable(link)


@pytest.mark.parametrize(
    ("link", "local"),
    [
        ("http://localhost:8501/?a=1", True),
        ("http://127.0.0.1:8501/", True),
        ("http://127.3.2.1/", True),
        ("http://[::1]:8501/", True),
        ("https://attention.example.org/?lang=zh", False),
        ("http://192.168.1.20:8501/", False),
    ],
)
def test_a_link_to_this_computer_is_told_apart(link, local):
    from explorer.share import points_at_this_machine

    assert points_at_this_machine(link) is local


@pytest.mark.parametrize("page", ["lesson", "axes"])
def test_a_class_link_from_presenter_mode_opens_the_usual_page(page):
    """Students open the class link on their phones: presenter mode's projector sizes are not theirs. The link shown,
    its QR code and the JSON carry the language, the step and the settings, never present=1."""
    at = open_page(
        page, LINKED.to_link() | {"present": "1", "lang": "zh"} | ({"step": "14"} if page == "lesson" else {})
    )
    assert at.query_params["present"] in ("1", ["1"]), "the presenter's own address keeps presenter mode"
    shown = verbatim(at.sidebar)[0]
    query = parse_qs(urlparse(shown).query)
    assert "present" not in query
    assert query["lang"] == ["zh"]
    assert query["d_model"] == ["256"]
    if page == "lesson":
        assert query["step"] == ["14"]
        return  # AppTest cannot rerun the lesson's step menu after a click in Chinese (its options are worded)
    next(b for b in at.sidebar.button if "qr_code" in (b.proto.icon or "")).click().run()
    no_exception(at)
    assert "present" not in parse_qs(urlparse(qr_text(at)).query)
