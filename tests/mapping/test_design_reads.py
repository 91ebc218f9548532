"""The kinds' decode_reads (explorer/kinds/): what each decoding step of a design after MLA reads, held against independent
references (a window-and-sinks formula, torch.topk of the indexer's scores, V4's entry schedule, the linear state's
byte formula)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_core import (
    AttentionOptions,
    DeepSeekSparseAttention,
    GatedDeltaNet,
    GatedDeltaNetConfig,
    build_attention,
)
from attn_core.linear import cache_bytes_formula
from explorer.kinds import compressed, dsa, grouped, linear
from explorer.kinds.kind import Design, Twin
from tests.small_designs import GQA, small_dsa, v4_layer

STEPS = 20


def twin(design: Design) -> Twin:
    """The bytes of a float32 cache, as the real layer's (the pages pass the sidebar's dtype)."""
    return Twin(design, 1, "float32")


def inputs(d_model: int = 32, seed: int = 0) -> torch.Tensor:
    return torch.randn(1, STEPS, d_model, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize(("window", "sinks"), [(5, 0), (4, 2), (30, 0)])
def test_a_sliding_layers_step_reads_its_window_and_kept_first_tokens(window, sinks):
    options = AttentionOptions(window=window, sink_tokens=sinks)
    layer = build_attention(GQA, seed=1, options=options)
    result = grouped.grouped_reads(layer, inputs(), twin(Design(grouped.SLIDING, GQA, options)))
    t, j = np.arange(STEPS)[:, None], np.arange(STEPS)[None]
    assert np.array_equal(result.read, (j <= t) & ((t - j < window) | (j < sinks)))
    # held for the next token: the kept first tokens and the window - 1 latest
    assert np.array_equal(result.held, (j <= t) & ((t - j < window - 1) | (j < sinks)))
    per_token = 2 * 2 * GQA.head_dim * 4  # k and v, 2 KV heads, float32
    assert result.held_bytes == tuple(int(row.sum()) * per_token for row in result.held)


DSA = small_dsa(topk=6)


def test_a_dsa_step_reads_the_top_k_of_its_indexer_scores_and_the_cache_holds_every_token():
    layer = DeepSeekSparseAttention(DSA)
    layer.init_from_seed(2)
    x = inputs(seed=3)
    result = dsa.sparse_reads(layer, x, twin(Design(dsa.DSA, DSA)))
    cache = layer.new_cache(1)
    with torch.no_grad():
        for t in range(STEPS):
            scores = layer.index_scores(x[:, t : t + 1], cache=cache)[0, 0]
            expected = set(range(t + 1)) if t + 1 <= 6 else set(torch.topk(scores, 6).indices.tolist())
            assert set(np.flatnonzero(result.read[t]).tolist()) == expected, t
            layer(x[:, t : t + 1], cache=cache)
    assert np.array_equal(result.held, np.tri(STEPS, dtype=bool))
    assert result.read[6:].sum(axis=1).tolist() == [6] * (STEPS - 6)


def test_an_hca_step_reads_its_window_and_every_entry_finished_so_far():
    layer = v4_layer("hca", seed=4)
    result = compressed.compressed_reads(layer, inputs(seed=5), twin(Design(compressed.COMPRESSED, layer.cfg)))
    entries = STEPS // 3
    assert result.kinds == ("token",) * STEPS + ("entry",) * entries
    assert result.spans[STEPS:] == tuple((3 * e, 3 * e + 2) for e in range(entries))
    t, j, e = np.arange(STEPS)[:, None], np.arange(STEPS)[None], np.arange(entries)[None]
    assert np.array_equal(result.read[:, :STEPS], (j <= t) & (t - j < 5))
    assert np.array_equal(result.read[:, STEPS:], e < (t + 1) // 3)  # an entry appears every 3 tokens
    assert np.array_equal(result.held[:, :STEPS], (j <= t) & (t - j < 4))
    assert np.array_equal(result.held[:, STEPS:], e < (t + 1) // 3)


def test_a_csa_step_reads_at_most_top_k_entries():
    layer = v4_layer("csa", seed=4)
    result = compressed.compressed_reads(layer, inputs(seed=6), twin(Design(compressed.COMPRESSED, layer.cfg)))
    finished = (np.arange(STEPS) + 1) // 3
    assert result.read[:, STEPS:].sum(axis=1).tolist() == np.minimum(finished, 2).tolist()


def test_a_linear_layer_holds_and_reads_one_state_of_the_same_bytes_at_every_step():
    cfg = GatedDeltaNetConfig(
        d_model=32, n_key_heads=2, n_value_heads=4, key_head_dim=8, value_head_dim=6, conv_kernel=4
    )
    layer = GatedDeltaNet(cfg)
    layer.init_from_seed(7)
    result = linear.linear_reads(layer, inputs(seed=8), twin(Design(linear.LINEAR, cfg)))
    assert result.kinds == ("state",)
    assert result.read.all()
    assert result.held.all()
    assert set(result.held_bytes) == {cache_bytes_formula(cfg, STEPS, 1, 4)}
