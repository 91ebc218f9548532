"""Numbers as shown: one significant-digits formatter for every page (explorer.i18n.sig), in both languages."""

from __future__ import annotations

import pytest

from explorer import i18n
from explorer.axes import text as axes_text


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (14.236, "14.2"),
        (0.0156, "0.0156"),
        (2.25, "2.25"),
        (128, "128"),
        (99.96, "100"),
        (1234.5, "1,234"),  # the whole digits kept: one page said 1,230, another 1,234
        (163_840.4, "163,840"),
    ],
)
def test_sig_keeps_three_significant_digits_and_every_whole_digit(value, shown):
    with i18n.speaking("en"):
        assert i18n.sig(value) == shown


def test_the_axes_page_formats_with_the_same_function():
    assert axes_text.sig is i18n.sig
