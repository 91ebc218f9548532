"""attn_core.fused: one fused q/k/v weight, in either layout, is the three projections with their rows reordered."""

from __future__ import annotations

import pytest
import torch

from attn_core import LAYOUTS, AttentionConfig, build_attention, fuse_qkv, fused_blocks, split_qkv

from .examples import EXAMPLES, GROUPED, randn


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", GROUPED)
def test_fusing_then_splitting_gives_the_projections_back(name, layout):
    layer = build_attention(EXAMPLES[name], seed=4)
    weight, bias = fuse_qkv(layer, layout=layout)
    cfg = layer.cfg
    assert weight.shape == ((cfg.n_heads + 2 * cfg.n_kv_heads) * cfg.head_dim, cfg.d_model)
    state = split_qkv(cfg, weight, bias, layout=layout)
    for key, value in state.items():
        assert torch.equal(value, layer.state_dict()[key]), key


@pytest.mark.parametrize("layout", LAYOUTS)
def test_one_fused_product_holds_every_heads_query_key_and_value(layout):
    """x · W_qkvᵀ, cut into head_dim columns, is each head's q, k, v in the order fused_blocks names them."""
    cfg = EXAMPLES["gqa"]  # 6 heads in 2 groups, with biases
    layer = build_attention(cfg, seed=1)
    x = randn(1, 5, cfg.d_model)
    weight, bias = fuse_qkv(layer, layout=layout)
    with torch.no_grad():
        fused = torch.nn.functional.linear(x, weight, bias).unflatten(-1, (-1, cfg.head_dim))  # [1, 5, blocks, d_h]
        separate = {name: getattr(layer, f"{name}_proj")(x).unflatten(-1, (-1, cfg.head_dim)) for name in "qkv"}
    for index, (name, head) in enumerate(fused_blocks(cfg, layout)):
        torch.testing.assert_close(fused[:, :, index], separate[name][:, :, head], rtol=1e-6, atol=1e-6)


def test_the_grouped_layout_puts_each_groups_queries_before_its_key_and_value():
    cfg = AttentionConfig("gqa", d_model=32, n_heads=4, n_kv_heads=2)
    assert fused_blocks(cfg, "grouped") == [
        ("q", 0),
        ("q", 1),
        ("k", 0),
        ("v", 0),
        ("q", 2),
        ("q", 3),
        ("k", 1),
        ("v", 1),
    ]
    assert fused_blocks(cfg, "stacked") == [
        ("q", 0),
        ("q", 1),
        ("q", 2),
        ("q", 3),
        ("k", 0),
        ("k", 1),
        ("v", 0),
        ("v", 1),
    ]


def test_a_weight_of_the_wrong_shape_or_layout_is_refused():
    cfg = EXAMPLES["mha"]
    with pytest.raises(ValueError, match="fused q/k/v weight for this config is"):
        split_qkv(cfg, torch.zeros(3 * cfg.d_model + 1, cfg.d_model), layout="stacked")
    with pytest.raises(ValueError, match="layout="):
        fused_blocks(cfg, "interleaved")
    with pytest.raises(ValueError, match="MLA has no fused"):
        fused_blocks(EXAMPLES["mla"], "stacked")
