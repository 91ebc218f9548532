"""Every registered page renders through a link, from the smallest to the largest settings the sidebar offers."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer.pages import PAGES
from explorer.settings import Settings
from tests.app.helpers import no_exception

from .helpers import LARGEST_BY_GROUPS, REPO, SMALLEST, TIMEOUT, chart_specs, link_warnings, open_page, sidebar_settings

CASES = {"default": Settings(), "smallest": SMALLEST} | {f"largest-groups{g}": s for g, s in LARGEST_BY_GROUPS.items()}


@pytest.mark.parametrize("settings", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("page", PAGES)
def test_page_renders_through_a_link(page, settings):
    at = open_page(page, settings.to_link())

    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    assert link_warnings(at) == []  # these settings are valid: nothing to warn about
    assert sidebar_settings(at) == settings
    shared = {name: at.query_params.get(name) for name in settings.to_link()}
    assert shared == settings.to_link(), "the URL after the run is a link to what is shown"
    assert at.title or at.header or at.subheader, "the page shows a heading"


@pytest.mark.parametrize("page", PAGES)
def test_page_draws_at_least_one_chart(page):
    at = open_page(page, Settings().to_link())
    assert chart_specs(at), f"{page} sends no plotly chart"


def test_every_page_file_exists_and_is_registered_with_its_own_url():
    paths = [entry.path for entry in PAGES.values()]
    assert len(set(paths)) == len(paths)
    for name, entry in PAGES.items():
        assert (REPO / entry.path).is_file(), entry.path
        assert name.replace("-", "").replace("_", "").isalnum(), f"url path {name!r} is a clean slug"
        assert name == name.lower(), f"url path {name!r} is a clean slug"


def test_app_entry_opens_the_overview_with_every_page_in_the_menu():
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT).run()
    no_exception(at)
    assert at.title[0].value == "Attention Explorer"
    assert chart_specs(at)
    # st.navigation registered one page per PAGES entry (AppTest keeps that registry to switch pages with).
    # Private: AppTest has no public view of the pages st.navigation registered.
    registered = {Path(info["script_path"]).resolve() for info in at._registered_pages.values()}
    assert registered == {(REPO / entry.path).resolve() for entry in PAGES.values()}


@pytest.mark.parametrize("page", [name for name in PAGES if name != "overview"])
def test_overview_links_to_every_other_page(page):
    at = open_page("overview")
    targets = [link.proto.page for link in at.get("page_link")]
    assert page in targets, targets  # the URL path app.py gives the page, not a file name
