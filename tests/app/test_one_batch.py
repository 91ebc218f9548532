"""A new visit to a page whose fragment draws the share box (explorer.share.shares_link) builds in the browser even
when the server sends the whole run in one batch (tests/app/browser_tree.py): the batch a loaded server sends. The
page redrawing the box before its fragment took it over once left such a visit blank, now and then
(tests/browser/test_fragment_pages.py)."""

from __future__ import annotations

import pytest

from explorer.kv_cache import link

from .browser_tree import build, one_batch, recorded
from .helpers import no_exception, open_page, run_fragment


@pytest.mark.parametrize("name", ["lesson", "axes"])
def test_a_new_visit_builds_in_the_browser_from_one_batch(name):
    with recorded() as messages:
        at = open_page(name)
    no_exception(at)
    build(messages)  # sent one by one, the browser builds it
    sidebar = build(one_batch(messages)).children[1]
    assert sidebar.children, "the run drew no sidebar"


def test_kv_cache_builds_in_the_browser_from_one_batch_and_so_does_a_step_rerun():
    """The step slider (or ▶ Play's tick) reruns the step's fragment alone: it redraws the share box too."""
    with recorded() as first:
        at = open_page("kv_cache")
    no_exception(at)
    build(one_batch(first))
    page = build(first)
    at.slider(key=link.STEP.key).set_value(3)
    with recorded() as rerun:
        run_fragment(at, "kv_step")
    no_exception(at, nor_error=True)
    build(one_batch(rerun), onto=page)
