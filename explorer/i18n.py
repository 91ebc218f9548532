"""The explorer's two languages: English in the source, Chinese in a gettext catalog read with Babel.

    from explorer.i18n import _, n_, N_
    st.title(_("Attention heatmaps"))
    st.caption(_("{share} of the attention lands on token 0.", share=percent(0.42)))
    st.write(n_("{n} head", "{n} heads", heads))          # "3 heads" / "3 个头"; n is formatted for the language
    format_bytes(2**20), sig(14.236), difference(0.0)     # "1.00 MiB", "14.2", "exactly (bit for bit)"
    LABELS = {"seq_len": N_("Sequence length")}            # marked where defined, translated where shown: _(LABELS[k])

Which language a run speaks: the sidebar's switch once drawn, else the link's `lang`, else the browser's
(st.context.locale), else English. `use_language()` decides it at the start of every run and holds it for that run's
thread, so the core and the probes never see a language. Text in a cached value would keep the language it was cached
in: cache numbers and arrays and translate where they are shown, or take the language as an argument and make the
words in it (`with speaking(lang):`).

The catalog is `explorer/locales/zh/LC_MESSAGES/messages.po`, compiled in memory when first used (no build step, no
stale .mo). `python -m explorer.locales` re-extracts the messages and updates it; tests/i18n fail on a message
without its translation.
"""

from __future__ import annotations

import gettext
import io
import re
import string
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache, lru_cache
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import format_decimal, format_percent

from explorer.messages import N_

LANGUAGES = {"en": "English", "zh": "中文"}  # each named in itself, as a language menu does
DEFAULT = "en"
LOCALES = Path(__file__).parent / "locales"
DOMAIN = "messages"
LINK_PARAM = "lang"
_BABEL_LOCALE = {"en": "en_US", "zh": "zh_Hans_CN"}
_current: ContextVar[str | None] = ContextVar("language", default=None)
_session_language: Callable[[], str | None] | None = (
    None  # set by the app: where a run that did not decide yet (a fragment's) finds its language
)


@cache
def _translations(lang: str) -> gettext.NullTranslations:
    if lang == DEFAULT:
        return gettext.NullTranslations()  # the source strings are English
    with open(LOCALES / lang / "LC_MESSAGES" / f"{DOMAIN}.po", "rb") as po:
        catalog = read_po(po, locale=_BABEL_LOCALE[lang])
    compiled = io.BytesIO()
    write_mo(compiled, catalog)
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


def language() -> str:
    """The language of this run: "en" or "zh"."""
    lang = _current.get()
    if lang is None and _session_language is not None:
        lang = _session_language()  # a fragment rerun runs in a thread of its own, without the run's decision
    return lang or DEFAULT


def ask_session_with(lookup: Callable[[], str | None]) -> None:
    """Where language() looks when this thread has not been told: the app passes a reader of the session's choice."""
    global _session_language
    _session_language = lookup


def set_language(lang: str) -> None:
    """Speak `lang` for the rest of this thread's run (the app calls use_language(); tests and scripts call this)."""
    _current.set(lang if lang in LANGUAGES else DEFAULT)


@contextmanager
def speaking(lang: str) -> Iterator[None]:
    """Speak `lang` inside the block, then this run's language again: a cached function whose value holds words takes
    the language as an argument and makes them in it, so its cache is keyed by the language its words are in."""
    token = _current.set(lang if lang in LANGUAGES else DEFAULT)
    try:
        yield
    finally:
        _current.reset(token)


def language_from_locale(locale: str | None) -> str:
    """A browser locale ("zh-CN", "zh_TW", "en-US", None) -> the language we have for it."""
    primary = re.split(r"[-_]", locale or "")[0].lower()
    return primary if primary in LANGUAGES else DEFAULT


def _(message: str, **values: object) -> str:
    """The message in this run's language; with values, its {placeholders} filled (numbers formatted by fmt)."""
    text = _translations(language()).gettext(message)
    return _filled(text, values) if values else text


def n_(singular: str, plural: str, n: int, **values: object) -> str:
    """A count with its noun: n_("{n} head", "{n} heads", 3) -> "3 heads". Chinese has one form for every n."""
    return _filled(_translations(language()).ngettext(singular, plural, n), {"n": n, **values})


# A Chinese character (not its punctuation) beside a Latin letter or digit where a value meets the message's words:
# "20 层" + "HCA" is written "20 层 HCA", as Chinese sets Latin text apart.
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z0-9]")
_FORMATTER = string.Formatter()


def _filled(text: str, values: dict[str, object]) -> str:
    shown = {name: fmt(value) for name, value in values.items()}
    pieces: list[str] = []
    for literal, field, spec, conversion in _FORMATTER.parse(text):
        pieces.append(literal)
        if field is not None:
            value = _FORMATTER.convert_field(_FORMATTER.get_field(field, (), shown)[0], conversion)
            pieces.append(format(value, _FORMATTER.vformat(spec or "", (), shown)))
    out = ""
    for piece in pieces:
        if out and piece and _apart(out[-1], piece[0]):
            out += " "
        out += piece
    return out


def _apart(before: str, after: str) -> bool:
    return bool((_HAN.match(before) and _LATIN.match(after)) or (_LATIN.match(before) and _HAN.match(after)))


def sentences(*parts: str) -> str:
    """Whole translated sentences one after another, as the language writes them: a space between English ones, none
    between Chinese ones (each ends in 。). Empty parts are left out."""
    text = ""
    for part in parts:
        if part:
            # TRANSLATORS: two sentences one after the other; Chinese needs no space between them.
            text = _("{first} {second}", first=text, second=part) if text else part
    return text


# --- numbers, as this run's language writes them, with their units -----------------------------------------------
def fmt(value: object, digits: int | None = None) -> str:
    """A number as this run's language writes it (ints with group separators, floats as given digits or up to 3);
    anything else as str()."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    locale = _BABEL_LOCALE[language()]
    if isinstance(value, int):
        return _decimal(value, "#,##0", locale)
    pattern = "#,##0." + ("0" * digits if digits is not None else "###") if digits != 0 else "#,##0"
    return _decimal(value, pattern, locale)


# A page writes the same numbers at every rerun (its settings, a table's figures), and babel parses the pattern anew
# each time: remembered, by type too (an int and the float equal to it are kept apart).
@lru_cache(maxsize=4096, typed=True)
def _decimal(value: float, pattern: str, locale: str) -> str:
    return format_decimal(value, format=pattern, locale=locale)


def percent(share: float, digits: int = 0) -> str:
    """0.423 -> "42%" in this run's language."""
    pattern = "#,##0" + ("." + "0" * digits if digits else "") + "%"
    return format_percent(share, format=pattern, locale=_BABEL_LOCALE[language()])


def difference(value: float) -> str:
    """How closely two computations agree, for a caption: exactly equal is worth saying as such."""
    return _("exactly (bit for bit)") if value == 0 else _("to within {value}", value=f"{value:.1e}")


def format_bytes(n: float) -> str:
    """Bytes in binary units, as memory is sold and reported (KiB, MiB, GiB)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def format_flops(n: float) -> str:
    """A count of floating-point operations with an SI prefix that keeps 1-3 digits before the point:
    2,200 -> '2.20 kFLOP', 17.9e9 -> '17.92 GFLOP'. FLOPs are counts, so the prefixes are powers of 1000."""
    for unit in ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP"):
        if abs(n) < 1000 or unit == "TFLOP":
            return f"{n:,.0f} {unit}" if unit == "FLOP" else f"{n:,.2f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def sig(value: float, digits: int = 3) -> str:
    """value to `digits` significant digits (as :.3g writes it) in the run's language: 14.2, 0.0156, 2.25; a value of
    `digits` whole digits or more keeps them all (1234.5 -> "1,234", not "1,230"): the one formatter of the app."""
    if abs(value) >= 10 ** (digits - 1):
        return fmt(round(value))
    text = f"{value:.{digits}g}"
    return fmt(float(text), len(text.split(".")[1]) if "." in text else 0)


__all__ = [
    "DEFAULT",
    "LANGUAGES",
    "LINK_PARAM",
    "N_",
    "_",
    "difference",
    "fmt",
    "format_bytes",
    "format_flops",
    "language",
    "language_from_locale",
    "n_",
    "percent",
    "sentences",
    "set_language",
    "sig",
    "speaking",
]
