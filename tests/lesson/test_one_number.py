"""One fact, one number (issue 47): the choosing step's slide and the axes page its "Explore this" opens quote the
same models' extremes at the same length, and both say on screen which models they compare."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from attn_core import PUBLISHED, context_length
from explorer.i18n import format_bytes, set_language, sig
from explorer.lesson import after_mla_views as chapter
from explorer.lesson import steps
from tests.app.helpers import no_exception, open_page


def number_of(key: str) -> int:
    return next(i for i, step in enumerate(steps.STEPS, 1) if step.key == key)


def shown_text(at) -> str:
    return " ".join(m.value for m in at.markdown) + " " + " ".join(c.value for c in at.caption)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_choosing_slide_and_the_page_it_opens_quote_one_pair_of_numbers(lang):
    slide = open_page("lesson", {"step": str(number_of("choose2026")), "lang": lang})
    no_exception(slide)
    (button,) = [b for b in slide.get("link_button")]
    target = urlsplit(button.proto.url)
    assert target.path == "axes"
    page = open_page("axes", dict(parse_qsl(target.query)))
    no_exception(page)
    # independently: the published configs whose context reaches 128K, their bf16 caches measured by the probe
    T = chapter.TOKENS
    made_for = {name for name, config in PUBLISHED.items() if (context_length(config) or T) >= T}
    held = {m.name: m.held[m.at(T)] for m in chapter._curves().values() if m.name in made_for}
    largest, smallest = max(held, key=held.__getitem__), min(held, key=held.__getitem__)
    set_language(lang)
    try:
        figures = [largest, smallest, format_bytes(held[largest]), format_bytes(held[smallest])]
        figures.append(sig(held[largest] / held[smallest]))
    finally:
        set_language("en")
    for text in (shown_text(slide), shown_text(page)):
        for figure in [*figures, str(len(made_for))]:
            assert figure in text, (lang, figure)
    # the condition is said on both: the slide's lead and the page's caption name the models made for 128K
    condition = "made for" if lang == "en" else "上下文长度达到"
    assert condition in shown_text(slide)
    assert condition in shown_text(page)
