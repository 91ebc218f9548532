"""Counts in the text agree with their number: no "1 heads", "1 tokens", "each of the 1 query heads", "group(s)"."""

from __future__ import annotations

import json
import re

import pytest

from tests.app.helpers import no_exception

from .helpers import SMALLEST, all_elements, chart_specs, open_page

# The pages others own (trained) are left to their branch; every other page at the smallest settings.
PAGES_CHECKED = ("overview", "mapping", "kv_cache", "heatmaps", "masks")
# The masks page's own counts at their smallest too: a short sequence, a prefill and a chunk of one token each.
SMALLEST_VIEWS = {"masks": {"mk_long": "2", "mk_short": "1", "mk_prefill": "1", "mk_chunk": "1"}}

NOUNS = r"(?:heads|tokens|groups|sequences|layers|ones)"
# "1" as a whole number (not "0.1", "1,024" or "11"), then up to three words, then a plural noun.
WRONG = re.compile(rf"(?<![\d.,])\b1 (?:(?:[A-Za-z]+|KV|K/V) ){{0,3}}{NOUNS}\b|the 1 \w+ heads|\w\(s\)")


def page_text(at) -> str:
    """Everything the page says in words: its elements (markdown, captions, alerts, labels), tables and chart text."""
    parts = [str(node.proto) for node in all_elements(at) if getattr(node, "proto", None) is not None]
    parts += [frame.value.to_string() for frame in [*at.dataframe, *at.table]]
    parts += [json.dumps(spec, ensure_ascii=False) for spec in chart_specs(at)]
    return "\n".join(parts)


@pytest.mark.parametrize("page", PAGES_CHECKED)
def test_no_plural_after_one_at_the_smallest_settings(page):
    at = open_page(page, SMALLEST.to_link() | SMALLEST_VIEWS.get(page, {}))
    no_exception(at)
    wrong = sorted({match.group(0) for match in WRONG.finditer(page_text(at))})
    assert wrong == [], f"{page} says: {wrong}"
