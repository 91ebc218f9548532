"""Which language a page speaks: the link's lang, else the browser's, else English; the sidebar switch changes it and
keeps every other setting of the link; a link that names no language we have says so and opens in a valid one."""

from __future__ import annotations

from unittest import mock

import pytest

from explorer import i18n
from explorer.navigation import LANGUAGE_KEY
from tests.app.helpers import LINK_WARNING, no_exception, open_page
from tests.i18n.visible import CJK


def switch(at):
    return next(w for w in at.sidebar.button_group if w.key == LANGUAGE_KEY)


def sidebar_heading(at) -> str:
    return at.sidebar.subheader[0].value


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_link_language_is_spoken_and_kept_in_the_link(lang):
    at = open_page("overview", {"lang": lang, "heads": "16"})
    no_exception(at)
    assert switch(at).value == lang
    assert at.query_params["lang"] == lang
    assert (CJK.search(sidebar_heading(at)) is not None) == (lang == "zh")


@pytest.mark.parametrize(
    ("locale", "lang"), [("zh-CN", "zh"), ("zh-TW", "zh"), ("en-GB", "en"), ("fr-FR", "en"), (None, "en")]
)
def test_without_lang_the_browser_language_decides(locale, lang):
    with mock.patch(
        "streamlit.runtime.context.ContextProxy.locale", new_callable=mock.PropertyMock, return_value=locale
    ):
        at = open_page("overview")
    assert switch(at).value == lang
    assert at.query_params["lang"] == lang


def test_the_switch_changes_the_language_and_keeps_the_other_settings():
    at = open_page("overview", {"lang": "en", "heads": "16", "seq_len": "512"})
    before = {name: value for name, value in at.query_params.items() if name != "lang"}
    switch(at).set_value("zh").run()
    no_exception(at)
    assert at.query_params["lang"] == "zh"
    assert {name: value for name, value in at.query_params.items() if name != "lang"} == before
    assert CJK.search(sidebar_heading(at))
    at.run()  # and it stays
    assert switch(at).value == "zh"


@pytest.mark.parametrize("garbled", ["xx", "", "ZH-cn<script>", "zh,en"])
def test_a_link_with_an_unknown_language_says_so_and_opens(garbled):
    at = open_page("overview", {"lang": garbled})
    no_exception(at)
    assert switch(at).value in i18n.LANGUAGES
    warnings = [w.value for w in at.warning if w.value.startswith(LINK_WARNING)]
    assert warnings
    assert "lang" in warnings[0]


def test_chinese_sets_a_latin_value_apart_from_the_words_around_it():
    """Issue #47: "20 层HCA" in a Chinese caption; a Chinese value keeps no space, an English message is as it was."""
    with i18n.speaking("zh"):
        assert i18n._("{count} {kind}", count=20, kind="HCA") == "20 层 HCA"
        assert i18n._("{count} {kind}", count=20, kind="滑动窗口") == "20 层滑动窗口"
    assert i18n._("{count} {kind}", count=20, kind="HCA") == "20 HCA"
