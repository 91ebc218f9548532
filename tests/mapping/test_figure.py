"""explorer.mapping: the animated figure says what the probe found, at the size of what is cached."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from explorer.mapping import computed as mapping_computed
from explorer.mapping import figures as mapping_figures
from explorer.mapping import frames as mapping_frames
from explorer.mapping import tables as mapping_tables
from explorer.probes.mapping import morph_configs, read_morph
from explorer.settings import Settings, heads_choices

SETTINGS = Settings(d_model=64, heads=8, groups=2, latent=16, rope_dim=4, seq_len=32, batch=2, dtype="float16")


@pytest.fixture(scope="module")
def frames():
    s = SETTINGS
    return read_morph(s.d_model, s.heads, s.latent, s.rope_dim, seed=s.seed)


def query_trace(data):
    return data[-1]


def kv_trace(data):
    return data[-2]


def test_the_figure_has_one_named_frame_per_step_and_a_slider_step_for_each(frames):
    fig = mapping_figures.mapping_figure(frames, 2, SETTINGS, None)
    assert [f.name for f in fig.frames] == ["mha", "gqa:4", "gqa:2", "mqa", "mla"]
    slider = fig.layout.sliders[0]
    assert slider.active == 2
    assert [list(step.args[0]) for step in slider.steps] == [[name] for name in ["mha", "gqa:4", "gqa:2", "mqa", "mla"]]
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == ["▶ Play", "❚❚ Pause"]
    assert all(len(f.data) == len(fig.data) for f in fig.frames), "every frame updates the same traces"


def test_each_frame_carries_the_per_head_mapping_the_probe_read(frames):
    fig = mapping_figures.mapping_figure(frames, 0, SETTINGS, None)
    for frame, probe in zip(fig.frames, frames, strict=True):
        meta = query_trace(frame.data).meta
        assert meta["stores"] == probe.stores
        expected = [[s for s in range(len(probe.stores)) if probe.reads[s, h]] for h in range(SETTINGS.heads)]
        assert meta["reads"] == expected


def test_edges_join_each_query_head_to_the_stores_it_reads(frames):
    fig = mapping_figures.mapping_figure(frames, 0, SETTINGS, None)
    for frame, probe in zip(fig.frames, frames, strict=True):
        queries, stores = query_trace(frame.data), kv_trace(frame.data)
        segments = set()
        for trace in frame.data[: mapping_figures.EDGE_SLOTS + 1]:
            xs = list(trace.x or [])
            for i in range(0, len(xs), 3):
                segments.add((round(xs[i], 9), round(xs[i + 1], 9)))
        expected = {
            (round(queries.x[h], 9), round(stores.x[s], 9))
            for s in range(len(probe.stores))
            for h in range(SETTINGS.heads)
            if probe.reads[s, h]
        }
        assert segments == expected, frame.name


def test_the_kv_row_is_as_wide_as_the_cache_relative_to_mha(frames):
    fig = mapping_figures.mapping_figure(frames, 0, SETTINGS, None)
    configs = dict(morph_configs(SETTINGS.d_model, SETTINGS.heads, SETTINGS.latent, SETTINGS.rope_dim))
    mha = configs["mha"].cache_elements_per_token
    for frame in fig.frames:
        drawn = sum(kv_trace(frame.data).width)
        assert drawn == pytest.approx(configs[frame.name].cache_elements_per_token / mha), frame.name
    assert list(kv_trace(fig.frames[-1].data).text) == ["c<sup>KV</sup>", "k<sup>R</sup>"]


def test_the_hover_gives_group_shapes_and_bytes_read(frames):
    fig = mapping_figures.mapping_figure(frames, 2, SETTINGS, None)
    text = query_trace(fig.data).hovertext[5]  # GQA with 2 groups of 4: head 5 reads KV head 1
    assert "query head 5" in text
    assert "KV head 1" in text
    assert "[2, 32, 8]" in text  # batch, cached tokens, head_dim
    assert "2.00 KiB" in text  # K and V x batch 2 x 32 tokens x 8 numbers x 2 bytes (float16) = 2048 B
    mla = query_trace(fig.frames[-1].data).hovertext[0]
    assert "c<sup>KV</sup> [2, 32, 16]" in mla
    assert "k<sup>R</sup> [2, 32, 4]" in mla
    assert "2.50 KiB" in mla


def test_highlighting_a_store_lights_exactly_its_readers(frames):
    fig = mapping_figures.mapping_figure(frames, 2, SETTINGS, "kv1")
    opacity = query_trace(fig.data).marker.opacity
    assert [o == 1.0 for o in opacity] == [h >= 4 for h in range(8)]
    assert list(kv_trace(fig.data).marker.opacity) == [0.25, 1.0]
    assert all(o == 1.0 for o in query_trace(fig.frames[0].data).marker.opacity), "other steps are not highlighted"


def test_frame_key_maps_gqa_with_every_or_one_group_to_mha_or_mqa():
    assert mapping_frames.frame_key(replace(SETTINGS, groups=8), "gqa") == "mha"
    assert mapping_frames.frame_key(replace(SETTINGS, groups=1), "gqa") == "mqa"
    assert mapping_frames.frame_key(SETTINGS, "gqa") == "gqa:2"
    assert mapping_frames.frame_key(SETTINGS, "mla") == "mla"


@pytest.mark.parametrize("heads", sorted({h for d in (768, 5120, 6144, 7168, 8192) for h in heads_choices(d)}))
def test_bundles_cover_every_head_once_in_at_most_32_consecutive_ranges(heads):
    ranges = mapping_frames.bundles(heads)
    assert len(ranges) <= mapping_frames.MAX_DRAWN
    assert ranges[0][0] == 0
    assert ranges[-1][1] == heads
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    assert all(stop > start for start, stop in ranges)
    if heads <= mapping_frames.MAX_DRAWN:
        assert len(ranges) == heads


def test_at_128_heads_the_figure_stays_light_and_exact():
    settings = Settings(d_model=256, heads=128, groups=8, latent=16, rope_dim=2)
    frames = read_morph(256, 128, 16, 2, seed=0, input_width=mapping_computed.NARROW_WIDTH)
    fig = mapping_figures.mapping_figure(frames, 4, settings, "kv3")
    assert len(fig.frames) == 9
    assert len(query_trace(fig.data).x) == 32  # bundles of 4 heads
    assert len(fig.to_json()) < 400_000
    assert query_trace(fig.frames[4].data).meta["reads"] == [[h // 16] for h in range(128)]


def test_ranges_text_joins_consecutive_heads():
    assert mapping_frames.ranges_text([0, 1, 2, 5, 7, 8]) == "0–2, 5, 7–8"
    assert mapping_frames.ranges_text([3]) == "3"


def test_the_formula_check_agrees_with_every_step(frames):
    assert all(mapping_tables.formula_agrees(frame) for frame in frames)
    broken = replace(frames[1], reads=frames[1].reads[::-1])
    assert not mapping_tables.formula_agrees(broken)


def test_mlas_rotary_key_is_labelled_beside_its_sliver_and_every_other_store_inside(frames):
    """k^R is a sliver next to the latent (issue #14 item 13): its name is drawn above it, unshrunk; the other
    stores' names stay inside their bars."""
    fig = mapping_figures.mapping_figure(frames, 0, SETTINGS, None)
    for frame in fig.frames:
        stores = kv_trace(frame.data)
        assert stores.constraintext == "inside", "an outside label is not shrunk to the sliver's width"
        expected = ["outside" if name == "k<sup>R</sup>" else "inside" for name in stores.text]
        assert list(stores.textposition) == expected
    assert "k<sup>R</sup>" in kv_trace(fig.frames[-1].data).text


def test_the_notes_sit_under_the_plot_above_the_slider_in_every_frame_and_on_a_phone(frames):
    """Issue #47: the cache text, in data coordinates, ran onto the play slider; the buttons onto the slider."""
    spec = mapping_figures.mapping_spec(frames, 0, SETTINGS, None)
    lines = mapping_figures.CACHE_LINES
    for layout in [spec["layout"], *(frame["layout"] for frame in spec["frames"])]:
        notes = layout["annotations"]
        assert {(n["yref"], n["y"], n["yanchor"]) for n in notes} == {("paper", 0, "top")}
        assert all(n["text"].count("<br>") == lines - 1 for n in notes), "each column as many lines as room is kept"
    (slider,), (buttons,) = spec["layout"]["sliders"], spec["layout"]["updatemenus"]
    text_px = lines * 1.3 * mapping_figures.CACHE_FONT
    assert slider["pad"]["t"] >= text_px
    assert buttons["pad"]["t"] >= text_px
    assert buttons["x"] < slider["x"], "the buttons beside the slider, left of it"
    phone = spec["narrow"]
    assert len(phone["frameLayouts"]) == len(spec["frames"])
    (stacked,) = {n["yshift"] for n in phone["layout"]["annotations"] if n["yshift"] < -4}
    assert -stacked >= text_px, "on a phone the whole-cache column goes under the per-token one"
    assert phone["layout"]["sliders"][0]["pad"]["t"] > phone["layout"]["updatemenus"][0]["pad"]["t"] + 30
