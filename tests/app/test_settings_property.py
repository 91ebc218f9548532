"""explorer.settings.from_link on any input: always valid settings, a note for every change, and exact round trips."""

from __future__ import annotations

from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from attn_core import VARIANTS, AttentionConfig
from explorer.settings import (
    BATCH_CHOICES,
    D_MODEL_CHOICES,
    DESIGNS,
    DTYPE_CHOICES,
    LATENT_CHOICES,
    LINK_NAMES,
    MAX_SEED,
    RATE_CHOICES,
    SEQ_LEN_CHOICES,
    SINK_CHOICES,
    STATE_DIM_CHOICES,
    TOPK_CHOICES,
    WINDOW_CHOICES,
    Settings,
    bits_choices,
    from_link,
    groups_choices,
    heads_choices,
    normalize,
    rope_dim_choices,
)

PROFILE = hypothesis_settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text that looks like what a link might carry: numbers (in and out of range, signed, padded), names, and noise.
number_text = st.integers(min_value=-(10**12), max_value=10**12).map(str)
padded_number = st.tuples(
    st.sampled_from(["", " ", "0", "+", "\t"]), number_text, st.sampled_from(["", " ", "\n"])
).map("".join)
name_text = st.lists(
    st.sampled_from([*VARIANTS, *DTYPE_CHOICES, *DESIGNS, "MHA", "Gqa", "DSA", "flash", "", " "]), max_size=6
).map(",".join)
link_text = st.one_of(st.text(max_size=40), number_text, padded_number, name_text)
link_value = st.one_of(link_text, st.lists(link_text, max_size=3))
link_params = st.dictionaries(st.one_of(st.sampled_from(LINK_NAMES), st.text(max_size=10)), link_value, max_size=20)


def assert_valid(settings: Settings) -> None:
    assert normalize(settings) == (settings, [])
    for variant, cfg in settings.configs().items():  # every layer the pages will build constructs
        assert isinstance(cfg, AttentionConfig)
        assert cfg.variant == variant
    assert settings.variants
    assert set(settings.variants) <= set(VARIANTS)
    assert 0 <= settings.seed <= MAX_SEED
    assert set(settings.designs) <= set(DESIGNS)


@PROFILE
@given(link_params)
def test_any_link_gives_valid_settings_and_sentences_never_an_exception(params):
    settings, notes = from_link(params)
    assert_valid(settings)
    assert all(isinstance(note, str) and note for note in notes)


def read_as_written(name: str, raw) -> object:
    """What a link value says, read literally (no repair): the value the parser must keep when it writes no note."""
    text = (raw[-1] if raw else "") if isinstance(raw, list) else raw
    text = text.strip()
    if name in ("variant", "design"):
        return {part.strip().lower() for part in text.split(",") if part.strip()}
    if name == "dtype":
        return text.lower()
    return int(text)


@PROFILE
@given(link_params)
def test_without_a_note_nothing_in_the_link_was_changed(params):
    settings, notes = from_link(params)
    if notes:
        return
    for name in LINK_NAMES:
        if name in params:
            written = read_as_written(name, params[name])
            field = {"variant": "variants", "design": "designs"}.get(name, name)
            kept = set(getattr(settings, field)) if name in ("variant", "design") else getattr(settings, field)
            assert kept == written, (name, params[name], kept)


@st.composite
def valid_settings(draw) -> Settings:
    d_model = draw(st.sampled_from(D_MODEL_CHOICES))
    heads = draw(st.sampled_from(heads_choices(d_model)))
    chosen = draw(st.sets(st.sampled_from(VARIANTS), min_size=1))
    return Settings(
        variants=tuple(v for v in VARIANTS if v in chosen),
        d_model=d_model,
        heads=heads,
        groups=draw(st.sampled_from(groups_choices(heads))),
        latent=draw(st.sampled_from(LATENT_CHOICES)),
        rope_dim=draw(st.sampled_from(rope_dim_choices(d_model // heads))),
        seq_len=draw(st.sampled_from(SEQ_LEN_CHOICES)),
        batch=draw(st.sampled_from(BATCH_CHOICES)),
        dtype=draw(st.sampled_from(DTYPE_CHOICES)),
        seed=draw(st.integers(0, MAX_SEED)),
        designs=tuple(d for d in DESIGNS if d in draw(st.sets(st.sampled_from(DESIGNS)))),
        window=draw(st.sampled_from(WINDOW_CHOICES)),
        sinks=draw(st.sampled_from(SINK_CHOICES)),
        topk=draw(st.sampled_from(TOPK_CHOICES)),
        rate=draw(st.sampled_from(RATE_CHOICES)),
        state_dim=draw(st.sampled_from(STATE_DIM_CHOICES)),
        bits=draw(st.sampled_from(bits_choices(d_model // heads))),
    )


@PROFILE
@given(valid_settings())
def test_a_link_round_trips_exactly_without_notes(settings):
    assert_valid(settings)
    assert from_link(settings.to_link()) == (settings, [])


@PROFILE
@given(valid_settings(), st.sampled_from(LINK_NAMES), link_text)
def test_one_bad_value_leaves_the_other_settings_alone(settings, name, text):
    params = settings.to_link() | {name: text}
    repaired, _notes = from_link(params)
    assert_valid(repaired)
    # Only d_model, heads and groups/rope_dim depend on each other; the rest are independent of any other value.
    independent = ("variant", "latent", "seq_len", "batch", "dtype", "seed", "design", "window", "sinks", "topk")
    for other in (*independent, "rate", "state_dim"):
        if other != name:
            field = {"variant": "variants", "design": "designs"}.get(other, other)
            assert getattr(repaired, field) == getattr(settings, field)
