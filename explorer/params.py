"""A page's own view settings (a head picker, a toggle, ...), declared once with their link name and valid values.

Pure Python: each kind parses untrusted link text into a valid value plus, when it had to change something, a
sentence saying what. Pages bind them to widgets with ``explorer.link.bound``.
"""

from __future__ import annotations

import base64
import unicodedata
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote_plus

from .i18n import _


class _InTheLink:
    """What every kind shares: its name in the link, and from it its widget's key."""

    name: str

    @property
    def key(self) -> str:
        """The key of the parameter's widget in st.session_state (explorer.link.bound draws it under this key)."""
        return f"view_{self.name}"


@dataclass(frozen=True)
class Choice(_InTheLink):
    """One of a fixed list of options (strings or ints). Options may depend on the settings: pass them at bind time.
    aliases: (old text, option) pairs for options renamed since links were shared; an old text opens its option
    without a note (it is the same choice) and the link is written with today's text."""

    name: str
    options: tuple
    default: object
    aliases: tuple[tuple[str, object], ...] = ()

    def parse(self, text: str, options: tuple | None = None) -> tuple[object, str | None]:
        options = self.options if options is None else options
        text = str(dict(self.aliases).get(text.strip(), text))
        for option in options:
            if str(option) == text.strip():
                return option, None
        fallback = self.default if self.default in options else options[0]
        return fallback, _(
            "{name}: {value} is not one of the choices here, so {fallback} is used.",
            name=self.name,
            value=shown(text),
            fallback=str(fallback),
        )

    def to_text(self, value: object) -> str:
        return str(value)


@dataclass(frozen=True)
class Flag(_InTheLink):
    name: str
    default: bool

    def parse(self, text: str, options: tuple | None = None) -> tuple[bool, str | None]:
        lowered = text.strip().lower()
        if lowered in ("1", "true", "on", "yes"):
            return True, None
        if lowered in ("0", "false", "off", "no"):
            return False, None
        if self.default:
            return True, _("{name}: {value} is not on/off, so on is used.", name=self.name, value=shown(text))
        return False, _("{name}: {value} is not on/off, so off is used.", name=self.name, value=shown(text))

    def to_text(self, value: object) -> str:
        return "1" if value else "0"


@dataclass(frozen=True)
class IntRange(_InTheLink):
    name: str
    low: int
    high: int
    default: int

    def parse(self, text: str, options: tuple | None = None) -> tuple[int, str | None]:
        low, high = options if options is not None else (self.low, self.high)
        try:
            value = int(text.strip())
        except ValueError:
            fallback = min(max(self.default, low), high)
            return fallback, _(
                "{name}: {value} is not a whole number, so {fallback} is used.",
                name=self.name,
                value=shown(text),
                fallback=str(fallback),
            )
        if value < low or value > high:
            clamped = min(max(value, low), high)
            return clamped, _(
                "{name}: {value} is outside {low}…{high}, so {clamped} is used.",
                name=self.name,
                value=str(value),
                low=str(low),
                high=str(high),
                clamped=str(clamped),
            )
        return value, None

    def to_text(self, value: object) -> str:
        return str(value)


# Every free-text parameter's name, as its Text is made: a link too long to scan is offered without them
TEXT_NAMES: set[str] = set()


@dataclass(frozen=True)
class Text(_InTheLink):
    """Free text in the link: control characters dropped and the length capped, so any link value is usable."""

    name: str
    default: str
    max_chars: int

    def __post_init__(self) -> None:
        TEXT_NAMES.add(self.name)

    def parse(self, text: str, options: tuple | None = None) -> tuple[str, str | None]:
        text = expand_text(text)
        cleaned = clean_text(text, self.max_chars)
        if cleaned != text:
            return cleaned, _(
                "{name}: the text was cleaned (control characters removed, at most {limit} characters).",
                name=self.name,
                limit=self.max_chars,
            )
        return cleaned, None

    def to_text(self, value: object) -> str:
        return compact_text(str(value))

    def typed_note(self, typed: str, kept: str) -> str | None:
        """What the page says when what a reader typed or pasted is not what is kept: where a long text was cut,
        or that line breaks became spaces. None when nothing changed."""
        if kept == typed:
            return None
        if len(clean_text(typed, len(typed))) > self.max_chars:
            return _(
                "Your text had {typed} characters; the first {limit} are used, up to “…{end}”.",
                typed=len(typed),
                limit=self.max_chars,
                end=kept[-24:],
            )
        return _("Line breaks and control characters in your text became spaces or were removed.")


# A long text travels compressed: deflate, then URL-safe base64, behind a control character that a cleaned text never
# holds, so a link written before (plain text) still opens as it did. 2,000 characters of Chinese, sent plain, are
# ~18,000 characters of percent-escapes: longer than any QR code holds.
COMPRESSED = "\x01"
COMPRESS_FROM = 120  # characters of escaped text below which a link stays readable as it is


def compact_text(text: str) -> str:
    """text as a link carries it: as it is, or compressed when that is shorter and the text is long."""
    if len(quote_plus(text)) < COMPRESS_FROM:
        return text
    packed = COMPRESSED + base64.urlsafe_b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii").rstrip("=")
    return packed if len(quote_plus(packed)) < len(quote_plus(text)) else text


def expand_text(text: str) -> str:
    """The text a link carries, from compact_text's form (anything else is returned as it is, to be cleaned)."""
    if not text.startswith(COMPRESSED):
        return text
    body = text[len(COMPRESSED) :]
    try:
        # a cap on the inflated size, so a crafted link cannot make the server inflate gigabytes
        inflater = zlib.decompressobj()
        raw = inflater.decompress(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)), MAX_EXPANDED_BYTES)
        return raw.decode("utf-8", errors="replace")
    except (ValueError, zlib.error):
        return text  # not ours after all: cleaned as any other text


MAX_EXPANDED_BYTES = 64 * 1024


def clean_text(text: str, max_chars: int) -> str:
    """text without control or format characters (newlines become spaces), at most max_chars long."""
    text = text.replace("\n", " ").replace("\t", " ")
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith("C"))[:max_chars]


def shown(text: str, limit: int = 24) -> str:
    """Echo untrusted link text safely: shortened, with characters that markdown or HTML would act on removed."""
    cleaned = "".join(ch for ch in text if ch.isalnum() or ch in " ._-+")
    return "'" + (cleaned[:limit] + "…" if len(cleaned) > limit else cleaned) + "'"


# Any of a page's link parameters, as explorer.link.bound takes them.
Param = Choice | Flag | IntRange | Text


def view_link(view: Mapping[Param, object]) -> dict[str, str]:
    """A page's view values as its link carries them: a link to another page is built from that page's Params."""
    return {param.name: param.to_text(value) for param, value in view.items()}
