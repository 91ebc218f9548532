"""The masks page through app.py (as a link opens it): the charts carry the real layer's numbers, every variant
renders, MLA says it has no cross-attention here, and garbled link values give a warning, never a traceback."""

import numpy as np
import pytest
import torch

from attn_core import build_attention
from explorer.masks import link
from explorer.probes.masks import token_vectors
from explorer.settings import Settings, normalize
from tests.app.helpers import chart_payload, chart_specs, charts, no_exception, open_page, payload_bytes

PAYLOAD_BUDGET = 1_000_000


def heatmap_z(spec: dict) -> list[np.ndarray]:
    return [np.asarray(trace["z"], dtype=np.float64) for trace in spec["data"] if trace["type"] == "heatmap"]


def test_default_view_shows_the_real_layers_numbers():
    at = open_page("masks")
    no_exception(at)
    specs = chart_specs(at)
    assert len(specs) == 4  # padding, causal masks, chunk weights, cross-attention
    settings = Settings()  # defaults: first variant mha, head 0, long 12, short 7, prefill 8, chunk 4, 6 x 10 cross
    layer = build_attention(settings.config("mha"), seed=settings.seed)
    d = settings.d_model
    with torch.no_grad():
        _, alone = layer(token_vectors(d, 0, "short", 7), return_weights=True)
        _, full = layer(token_vectors(d, 0, "context", 12), return_weights=True)
        _, cross = layer(
            token_vectors(d, 0, "queries", 6), kv_input=token_vectors(d, 0, "memory", 10), return_weights=True
        )
    allowed, short_weights = heatmap_z(specs[0])
    assert short_weights.shape == (12, 12)
    assert (short_weights[:, 7:] == 0).all()  # padded keys: exactly zero
    np.testing.assert_allclose(short_weights[:7, :7], alone[0, 0].numpy(), atol=1e-5)
    assert allowed.tolist() == [[float(j <= i and j < 7) for j in range(12)] for i in range(12)]
    full_mask, chunk_mask = heatmap_z(specs[1])
    assert chunk_mask.shape == (4, 12)
    assert (chunk_mask == full_mask[8:]).all()
    full_weights, chunk_weights = heatmap_z(specs[2])
    np.testing.assert_allclose(full_weights, full[0, 0].numpy(), atol=1e-6)
    np.testing.assert_allclose(chunk_weights, full[0, 0, 8:].numpy(), atol=1e-5)
    (cross_weights,) = heatmap_z(specs[3])
    np.testing.assert_allclose(cross_weights, cross[0, 0].numpy(), atol=1e-6)
    text = " ".join(m.value for m in at.markdown)
    assert text.count("✓") >= 4
    assert "✗" not in text
    assert payload_bytes(at)[0] < PAYLOAD_BUDGET


@pytest.mark.parametrize("variant", ["mha", "mqa", "gqa", "mla"])
def test_every_variant_renders(variant):
    at = open_page("masks", {"variant": variant, "d_model": "64", "heads": "4", "groups": "2", "mk_head": "3"})
    no_exception(at)
    specs = chart_specs(at)
    info = " ".join(i.value for i in at.info)
    if variant == "mla":
        assert len(specs) == 3
        assert "self-attention only" in info
    else:
        assert len(specs) == 4
        assert heatmap_z(specs[3])[0].shape == (6, 10)
    assert at.selectbox(key=link.VARIANT.key).value == variant
    assert at.selectbox(key=link.HEAD.key).value == 3
    assert "✗" not in " ".join(m.value for m in at.markdown)
    settings, _ = normalize(Settings(d_model=64, heads=4, groups=2))  # as the page snaps the link
    with torch.no_grad():  # head 3 of the whole layer, built and run here without the page
        _, full = build_attention(settings.config(variant), seed=0)(
            token_vectors(64, 0, "context", 12), return_weights=True
        )
    np.testing.assert_allclose(heatmap_z(specs[2])[0], full[0, 3].numpy(), atol=1e-6)


def test_link_lengths_are_used():
    at = open_page(
        "masks",
        {
            "variant": "gqa",
            "d_model": "64",
            "heads": "4",
            "mk_long": "20",
            "mk_short": "3",
            "mk_prefill": "25",
            "mk_chunk": "7",
            "mk_queries": "2",
            "mk_memory": "31",
        },
    )
    no_exception(at)
    specs = chart_specs(at)
    assert heatmap_z(specs[0])[1].shape == (20, 20)
    assert heatmap_z(specs[1])[1].shape == (7, 32)
    assert heatmap_z(specs[3])[0].shape == (2, 31)


def test_garbled_link_values_warn_and_fall_back():
    at = open_page(
        "masks",
        {
            "mk_variant": "zzz<b>",
            "mk_head": "99",
            "mk_long": "abc",
            "mk_short": "500",
            "mk_causal": "maybe",
            "mk_prefill": "-4",
            "mk_chunk": "1e9",
            "mk_memory": "0",
        },
    )
    no_exception(at)
    warnings = " ".join(w.value for w in at.warning)
    for name in ("mk_variant", "mk_head", "mk_long", "mk_short", "mk_causal", "mk_prefill", "mk_chunk", "mk_memory"):
        assert name in warnings
    assert "<b>" not in warnings
    assert len(chart_specs(at)) == 4


def test_short_cannot_reach_long_when_long_shrinks():
    at = open_page("masks", {"mk_long": "2", "mk_short": "1", "mk_prefill": "31", "mk_chunk": "1"})
    no_exception(at)
    assert heatmap_z(chart_specs(at)[0])[1].shape == (2, 2)


def test_every_head_at_default_settings_reruns_cleanly():
    # Rerun timings are benchmarks/app.py's (against the budget): here only that each head's rerun works
    at = open_page("masks")
    for head in (1, 2, 3, 4, 5, 0):
        at.selectbox(key=link.HEAD.key).set_value(head)
        at.run()
        no_exception(at)


def test_every_figure_sent_is_valid_plotly():
    """The figures are built as plain dicts and handed over without Plotly's validation: validate them here."""

    import plotly.graph_objects as go

    at = open_page("masks", {"variant": "gqa"})
    for chart in charts(at):
        go.Figure(chart_payload(chart)["figure"])  # raises on any property Plotly does not know


@pytest.mark.parametrize(
    ("moved", "to", "kept", "value"),
    [(link.LONG, 13, link.SHORT, 7), (link.PREFILL, 9, link.CHUNK, 4)],
)
def test_a_value_that_stays_valid_stays_when_its_range_follows_another_slider(moved, to, kept, value):
    """Long 12 -> 13 must leave Short at 7 (its range 1..long-1 grew); P 8 -> 9 must leave C at 4 (1..32-P shrank)."""
    at = open_page("masks")
    assert at.slider(key=kept.key).value == value
    at.slider(key=moved.key).set_value(to).run()
    no_exception(at)
    assert at.slider(key=moved.key).value == to
    assert at.slider(key=kept.key).value == value
    assert at.query_params[kept.name] == str(value)
    assert not [info.value for info in at.info if "is not available" in info.value], "nothing moved, nothing said"
