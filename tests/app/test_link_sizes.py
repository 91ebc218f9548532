"""A size in a link that is no size (zero or less) falls back to the default with a note; a size out of the offered
range snaps to the nearest offered one with a note (issue #37: d_model=-5 gave a 16-wide layer)."""

from __future__ import annotations

import pytest

from explorer.i18n import set_language
from explorer.settings import D_MODEL_CHOICES, SEQ_LEN_CHOICES, Settings, from_link


@pytest.fixture(autouse=True)
def english():
    set_language("en")


@pytest.mark.parametrize(("name", "value"), [("d_model", "-5"), ("d_model", "0"), ("heads", "-2"), ("seq_len", "0")])
def test_a_size_of_zero_or_less_falls_back_to_the_default_and_says_so(name, value):
    settings, notes = from_link({name: value})
    assert settings == Settings()
    assert len(notes) == 1
    assert name in notes[0]
    assert str(getattr(Settings(), name)) in notes[0]


@pytest.mark.parametrize(
    ("name", "value", "nearest"),
    [("d_model", "100000", D_MODEL_CHOICES[-1]), ("d_model", "20", 16), ("seq_len", "100000", SEQ_LEN_CHOICES[-1])],
)
def test_a_size_out_of_range_snaps_to_the_nearest_offered_one_and_says_so(name, value, nearest):
    settings, notes = from_link({name: value})
    assert getattr(settings, name) == nearest
    assert any(f"{value} → {nearest}" in note for note in notes)


def test_a_negative_seed_is_a_seed_out_of_range_not_a_garbled_one():
    settings, notes = from_link({"seed": "-3"})
    assert settings.seed == 0
    assert len(notes) == 1
    assert "seed -3 → 0" in notes[0]
