"""Text shown as it is (explorer.verbatim): whatever a reader typed or a model wrote stays text, exactly."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.app.helpers import no_exception

from .helpers import verbatim


def show(text: str) -> None:
    from explorer.verbatim import show_verbatim

    show_verbatim(text)


def test_odd_text_is_shown_exactly_and_never_runs():
    odd = '<script>alert("x")</script> &amp; <b>bold</b>\n  indented 注意力 `code` $d_h$'
    at = AppTest.from_function(show, args=(odd,)).run()
    no_exception(at)
    assert verbatim(at) == [odd]
    (body,) = [element.value for element in at.get("html")]
    assert '<script>alert("x")' not in body  # escaped: only the copy button's own script is a script
    assert body.count("<script>") == 1
