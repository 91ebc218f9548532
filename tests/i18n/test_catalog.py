"""The catalog is complete: every message the app asks for has its Chinese translation, none is fuzzy or stale, and
each translation keeps its message's placeholders (a missing {name} would fail at the click that shows it)."""

from __future__ import annotations

import re

import pytest

from explorer import i18n
from explorer.locales import extract, problems, read_catalog

CATALOG = read_catalog()
SOURCE = extract()


def placeholders(text: str) -> set[str]:
    """The {name} fields str.format fills (LaTeX groups such as {\\mathrm{MHA}} and doubled braces are not)."""
    return set(re.findall(r"(?<!\{)\{([A-Za-z_]\w*)\}(?!\})", text))


def test_every_message_has_its_translation_and_nothing_is_stale():
    assert problems(CATALOG, SOURCE) == []


def test_a_new_message_without_translation_is_found():
    source = extract()
    source.add("A message nobody translated yet")
    assert problems(CATALOG, source) == ["missing: 'A message nobody translated yet'"]


@pytest.mark.parametrize("message", [m for m in CATALOG if m.id], ids=lambda m: str(m.id)[:40])
def test_translation_keeps_the_placeholders(message):
    ids = message.id if isinstance(message.id, tuple) else (message.id,)
    strings = message.string if isinstance(message.string, tuple) else (message.string,)
    wanted = placeholders(ids[-1])
    for translated in strings:
        assert placeholders(translated) == wanted, (message.id, translated)


def test_the_app_speaks_the_catalog():
    i18n.set_language("zh")
    try:
        assert i18n._("Language") == CATALOG.get("Language").string
        # Chinese has one form for every count: a plural message with only {n} to fill
        plural = next(m for m in CATALOG if m.id and m.pluralizable and placeholders(m.id[1]) == {"n"})
        assert i18n.n_(*plural.id, 3) == plural.string[0].format(n="3")
    finally:
        i18n.set_language("en")
    assert i18n._("Language") == "Language"
    assert i18n.n_("{n} head", "{n} heads", 1) == "1 head"  # English: the source's own forms
    assert i18n.n_("{n} head", "{n} heads", 1024) == "1,024 heads"


def test_numbers_are_written_for_the_language():
    i18n.set_language("zh")
    try:
        assert i18n.fmt(1234567) == "1,234,567"
        assert i18n.fmt(0.5, 2) == "0.50"
        assert i18n.percent(0.423) == "42%"
    finally:
        i18n.set_language("en")
