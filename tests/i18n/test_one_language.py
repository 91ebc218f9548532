"""Every page in one language at a time: at lang=zh no English sentence is left (only symbols, variable names, the
abbreviations MHA/MQA/GQA/MLA/KV/RoPE/... and names), at lang=en no Chinese — at default settings and with a garbled
link. The user's own text (and the model's tokens of it) stays as typed."""

from __future__ import annotations

import pytest

from explorer.pages import PAGES
from explorer.settings import DESIGNS, LINK_NAMES
from tests.app.helpers import no_exception, open_page

from .visible import CJK, english_words, user_text, visible_texts

GARBLED = {"heads": "banana", "seq_len": "-3", "groups": "7", "latent": "1e9", "v": "0", "dtype": "float99"}
# Every design after MLA, with a knob off its steps and one unknown design (the link notes name them)
DESIGNED = {"design": "sliding,dsa,compressed,linear,quantised,flash", "window": "100", "bits": "x", "d_model": "64"}
# The language switch names each language in itself, as language menus do.
SELF_NAMED = {"English", "中文"}


def shown(at) -> list[str]:
    theirs = user_text(at)
    return [text for text in visible_texts(at) if text not in SELF_NAMED and not any(text in t for t in theirs)]


@pytest.mark.parametrize("link", [{}, GARBLED, DESIGNED], ids=["default", "garbled", "designs"])
@pytest.mark.parametrize("page", list(PAGES))
def test_chinese_page_has_no_english_left(page, link):
    at = open_page(page, {"lang": "zh"} | link)
    no_exception(at)
    names = frozenset(LINK_NAMES) | frozenset(at.query_params)  # a note about the link names its parameters as written
    left = {text: words for text in shown(at) if (words := english_words(text, names))}
    assert left == {}, f"{page} at lang=zh shows English: {left}"


@pytest.mark.parametrize("link", [{}, GARBLED, DESIGNED], ids=["default", "garbled", "designs"])
@pytest.mark.parametrize("page", list(PAGES))
def test_english_page_has_no_chinese(page, link):
    at = open_page(page, {"lang": "en"} | link)
    no_exception(at)
    left = [text for text in shown(at) if CJK.search(text)]
    assert left == [], f"{page} at lang=en shows Chinese: {left}"


# The designs after MLA's views, each page's own choice of design in the link (the sidebar chooses them all)
DESIGN_VIEWS = {
    "heatmaps-sliding": ("heatmaps", {"hm_design": "sliding"}),
    "heatmaps-learned": ("heatmaps", {"hm_design": "sliding", "hm_sink": "learned"}),
    "heatmaps-dsa": ("heatmaps", {"hm_design": "dsa"}),
    "heatmaps-compressed": ("heatmaps", {"hm_design": "compressed"}),
    "mapping-sliding": ("mapping", {"map_design": "sliding"}),
    "mapping-dsa": ("mapping", {"map_design": "dsa"}),
    "mapping-compressed": ("mapping", {"map_design": "compressed"}),
    "mapping-linear": ("mapping", {"map_design": "linear"}),
    "heatmaps-shared_topk": ("heatmaps", {"hm_design": "shared_topk"}),
    "mapping-shared_topk": ("mapping", {"map_design": "shared_topk"}),
    "mapping-mamba2": ("mapping", {"map_design": "mamba2"}),
    "mapping-lightning": ("mapping", {"map_design": "lightning"}),
    "heatmaps-chunked": ("heatmaps", {"hm_design": "chunked"}),
    "heatmaps-shared": ("heatmaps", {"hm_design": "shared"}),
    "mapping-chunked": ("mapping", {"map_design": "chunked"}),
    "mapping-shared": ("mapping", {"map_design": "shared"}),
}
ALL_DESIGNS = {"design": ",".join(DESIGNS), "seq_len": "32"}


@pytest.mark.parametrize("view", list(DESIGN_VIEWS))
def test_the_designs_views_speak_one_language(view):
    page, link = DESIGN_VIEWS[view]
    for lang in ("zh", "en"):
        at = open_page(page, {"lang": lang} | ALL_DESIGNS | link)
        no_exception(at)
        if lang == "zh":
            names = frozenset(LINK_NAMES) | frozenset(at.query_params)
            left = {text: words for text in shown(at) if (words := english_words(text, names))}
            assert left == {}, f"{view} at lang=zh shows English: {left}"
        else:
            assert [text for text in shown(at) if CJK.search(text)] == [], f"{view} at lang=en shows Chinese"
