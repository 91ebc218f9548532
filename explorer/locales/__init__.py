"""The explorer's message catalog: extract the messages from the app's source and update the Chinese catalog.

    python -m explorer.locales          # after adding or changing a message: new ones arrive untranslated
    python -m explorer.locales --check  # what tests/i18n checks: every message translated, nothing stale
    python -m explorer.locales --fill translations.json   # {"English message": "中文", ...} into the catalog

Messages are the first argument of _() and N_(), and the first two of n_() (explorer.i18n), in app.py, pages/ and
explorer/. A comment starting "TRANSLATORS:" on the line before a message goes into the catalog beside it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[2]
CATALOG = Path(__file__).parent / "zh" / "LC_MESSAGES" / "messages.po"
# Fixed header fields, so that updating the catalog changes only the messages (no date churn, no merge conflicts).
HEADER: dict[str, Any] = dict(
    project="Attention Explorer",
    version="wave 2",
    copyright_holder="the Attention Explorer authors",
    last_translator="the Attention Explorer authors",
    language_team="中文",
    creation_date=datetime(2026, 11, 23, tzinfo=UTC),
    revision_date=datetime(2026, 11, 23, tzinfo=UTC),
    fuzzy=False,
)
KEYWORDS = {"_": None, "n_": (1, 2), "N_": None}
SOURCES = [("app.py", "python"), ("pages/**.py", "python"), ("explorer/**.py", "python")]


def extract() -> Catalog:
    """Every message the app's source asks for, with where it is used."""
    template = Catalog(**HEADER)
    for filename, lineno, message, comments, context in extract_from_dir(
        ROOT, method_map=SOURCES, keywords=KEYWORDS, comment_tags=("TRANSLATORS:",), strip_comment_tags=True
    ):
        template.add(message, None, [(filename, lineno)], auto_comments=comments, context=context)
    return template


def read_catalog() -> Catalog:
    with open(CATALOG, "rb") as po:
        return read_po(po, locale="zh_Hans_CN")


def write_catalog(catalog: Catalog) -> None:
    for name, value in HEADER.items():
        setattr(catalog, name, value)
    with open(CATALOG, "wb") as po:
        # Sorted by message and without source lines: a message moving in the code leaves the catalog as it is.
        write_po(po, catalog, width=120, sort_output=True, no_location=True, ignore_obsolete=True)


def fill(translations: dict[str, str | list[str]]) -> list[str]:
    """Put translations into the catalog (a plural message takes one string: Chinese has one form). Returns the
    messages it did not find in the catalog (run update() first)."""
    catalog = read_catalog()
    unknown = []
    for msgid, text in translations.items():
        message = catalog.get(msgid)
        if message is None:
            unknown.append(msgid)
            continue
        forms = [text] if isinstance(text, str) else list(text)
        message.string = tuple(forms) if message.pluralizable else forms[0]
        message.flags.discard("fuzzy")
    write_catalog(catalog)
    return unknown


def update() -> Catalog:
    """The catalog with the source's messages: new ones empty, changed ones empty (no fuzzy guesses), gone ones gone."""
    catalog = read_catalog() if CATALOG.exists() else Catalog(locale="zh_Hans_CN", **HEADER)
    catalog.update(extract(), no_fuzzy_matching=True)
    catalog.obsolete.clear()
    write_catalog(catalog)
    return catalog


def problems(catalog: Catalog, source: Catalog) -> list[str]:
    """What keeps the catalog from being complete: missing, untranslated or fuzzy messages, and stale ones."""
    wanted = {message.id for message in source if message.id}
    found = {message.id: message for message in catalog if message.id}
    out = [f"missing: {msgid!r}" for msgid in wanted - set(found)]
    out += [f"stale (no longer in the source): {msgid!r}" for msgid in set(found) - wanted]
    for msgid, message in found.items():
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if not all(strings):
            out.append(f"untranslated: {msgid!r}")
        elif message.fuzzy:
            out.append(f"fuzzy: {msgid!r}")
    return sorted(out)
