"""The designs after MLA in the settings: their link values read from any text, and every design built and run at any
settings the sidebar offers (explorer/kinds/)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from explorer.kinds.registry import design
from explorer.settings import (
    DESIGNS,
    LINK_NAMES,
    Settings,
    bits_choices,
    from_link,
)
from tests.app.helpers import offered_settings

NEW_NAMES = ("design", "window", "sinks", "topk", "rate", "state_dim", "bits")


def test_a_link_made_before_the_designs_opens_with_none_and_no_note():
    old = {name: value for name, value in Settings(heads=16, groups=4).to_link().items() if name not in NEW_NAMES}
    settings, notes = from_link(old)
    assert notes == []
    assert settings == Settings(heads=16, groups=4)
    assert settings.designs == ()


def test_the_design_names_are_read_in_any_case_and_order_and_unknown_ones_are_reported():
    settings, notes = from_link({"design": " Linear,DSA,,flash "})
    assert settings.designs == ("dsa", "linear")
    assert len(notes) == 1
    assert "flash" in notes[0]


@pytest.mark.parametrize(("name", "text"), [("window", "-3"), ("sinks", "-1"), ("topk", "0")])
def test_a_knob_below_any_count_falls_back_to_its_default_with_a_note(name, text):
    settings, notes = from_link({name: text})
    assert getattr(settings, name) == getattr(Settings(), name)
    assert len(notes) == 1
    assert name in notes[0]


def test_no_kept_first_token_is_a_choice_a_link_keeps():
    settings, notes = from_link({"sinks": "0"})
    assert (settings.sinks, notes) == (0, [])


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("window", "100", 128),
        ("window", "10" * 30, 4096),
        ("sinks", "3", 4),
        ("topk", "3000", 2048),
        ("rate", "1", 2),
        ("rate", "5", 4),
        ("state_dim", "1000", 256),
        ("bits", "16", 8),
        ("bits", "3", 4),
    ],
)
def test_a_knob_off_its_steps_moves_to_the_nearest_with_a_note(name, text, expected):
    settings, notes = from_link({name: text})
    assert getattr(settings, name) == expected
    assert len(notes) == 1
    assert name in notes[0]


@pytest.mark.parametrize("name", ["window", "sinks", "topk", "rate", "state_dim", "bits"])
def test_a_garbled_knob_falls_back_to_its_default_with_a_note(name):
    settings, notes = from_link({name: "<b>12a</b>"})
    assert getattr(settings, name) == getattr(Settings(), name)
    assert len(notes) == 1
    assert name in notes[0]


def test_two_bits_are_offered_only_where_a_head_packs_them_into_whole_bytes():
    assert bits_choices(64) == [8, 4, 2]
    assert bits_choices(6) == [8, 4]  # 6 numbers of 2 bits are 12 bits
    settings, notes = from_link({"d_model": "384", "heads": "64", "rope_dim": "4", "bits": "2"})  # head_dim 6
    assert settings.head_dim == 6
    assert settings.bits == 4
    assert len(notes) == 1


def test_every_new_setting_has_a_link_name_and_round_trips():
    chosen = Settings(designs=DESIGNS, window=64, sinks=0, topk=2, rate=128, state_dim=8, bits=2)
    assert set(NEW_NAMES) <= set(LINK_NAMES)
    assert from_link(chosen.to_link()) == (chosen, [])


PROFILE = hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROFILE
@given(offered_settings(), st.sampled_from(DESIGNS))
def test_every_design_builds_and_caches_at_any_offered_settings(settings, name):
    """On the meta device: any size, shapes and dtypes exact, nothing allocated."""
    chosen = design(settings, name)
    layer = chosen.build(device="meta")
    cache = chosen.new_cache(layer, 2)
    out, _ = layer(torch.empty(2, 5, settings.d_model, device="meta"), cache=cache)
    assert out.shape == (2, 5, settings.d_model)
    assert cache.seq_len == 5


@PROFILE
@given(offered_settings(d_models=(16, 32, 64, 128)), st.sampled_from(DESIGNS))
def test_every_design_decodes_real_numbers_at_small_offered_settings(settings, name):
    """Seeded weights, a prefill and two decoded tokens: finite outputs, the same for the same seed."""
    chosen = design(settings, name)
    x = torch.randn(1, 7, settings.d_model, generator=torch.Generator().manual_seed(0))
    outs = []
    for _ in range(2):
        layer = chosen.build(seed=3)
        cache = chosen.new_cache(layer, 1)
        steps = [layer(x[:, :5], cache=cache)[0]] + [layer(x[:, t : t + 1], cache=cache)[0] for t in (5, 6)]
        outs.append(torch.cat(steps, dim=1))
    assert torch.isfinite(outs[0]).all()
    assert torch.equal(outs[0], outs[1])
    assert cache.seq_len == 7


def test_an_unknown_design_is_a_value_error_naming_the_choices():
    with pytest.raises(ValueError, match="sliding"):
        design(Settings(), "flash")
