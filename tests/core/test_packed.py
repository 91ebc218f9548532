"""Packed projections (q, k, v end to end in one storage): the same numbers with one matrix product, and never a view
that outlives the parameters it was found over."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attn_core import RepeatedHeadsCache, build_attention
from attn_core.packed import PANEL_COLUMNS, linear, pack_rows, packed_rows

from .examples import EXAMPLES, GROUPED, randn


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a.double() - b.double()).abs().max().item()


def packed_copy(name: str, column_major: bool = False):
    """The seeded layer, and a copy whose q, k and v weights (and biases) are packed."""
    plain = build_attention(EXAMPLES[name], seed=0).eval()
    packed = build_attention(EXAMPLES[name], seed=0).eval()
    for kind in ("weight", "bias"):
        parts = [getattr(getattr(packed, f"{p}_proj"), kind) for p in "qkv"]
        if parts[0] is None:
            continue
        layout = column_major and kind == "weight"
        for p, view in zip("qkv", pack_rows(*parts, column_major=layout), strict=True):
            setattr(getattr(packed, f"{p}_proj"), kind, nn.Parameter(view, requires_grad=False))
    return plain, packed


@pytest.mark.parametrize("column_major", [False, True], ids=["row-major", "column-major"])
@pytest.mark.parametrize("name", GROUPED)
def test_packed_layer_gives_the_plain_layers_output_in_prefill_and_decode(name, column_major):
    plain, packed = packed_copy(name, column_major)
    if column_major:  # each column of the stacked [(H + 2G) * D, d_model] weight is contiguous
        stacked = packed.packed_qkv()
        assert stacked is not None
        assert stacked[0].stride() == (1, stacked[0].shape[0])
    assert packed.packed_qkv() is not None
    assert plain.packed_qkv() is None
    x = randn(2, 7, EXAMPLES[name].d_model)
    with torch.no_grad():
        assert max_diff(packed(x)[0], plain(x)[0]) <= 1e-6
        caches = plain.new_cache(2), packed.new_cache(2)
        for layer, cache in zip((plain, packed), caches, strict=True):
            layer(x[:, :5], cache=cache)
        for step in (5, 6):  # single-token decode steps
            token = x[:, step : step + 1]
            assert max_diff(packed(token, cache=caches[1])[0], plain(token, cache=caches[0])[0]) <= 1e-6


@pytest.mark.parametrize("name", GROUPED)
def test_decode_step_with_a_repeated_heads_cache_gives_the_grouped_caches_output(name):
    cfg = EXAMPLES[name]
    layer = build_attention(cfg, seed=0).eval()
    grouped = layer.new_cache(1)
    repeated = RepeatedHeadsCache(1, cfg.n_heads, cfg.head_dim, cfg.group_size, dtype=torch.float32, device="cpu")
    x = randn(1, 6, cfg.d_model)
    with torch.no_grad():
        for cache in (grouped, repeated):
            layer(x[:, :5], cache=cache)
        assert max_diff(layer(x[:, 5:], cache=repeated)[0], layer(x[:, 5:], cache=grouped)[0]) <= 1e-6


def test_replacing_a_packed_parameter_unpacks_the_layer():
    _, packed = packed_copy("gqa")
    packed.k_proj.weight = nn.Parameter(packed.k_proj.weight.clone(), requires_grad=False)
    assert packed.packed_qkv() is None


def test_a_packed_layer_converted_to_another_dtype_computes_with_the_converted_weights():
    plain, packed = packed_copy("gqa")
    x = randn(1, 4, EXAMPLES["gqa"].d_model, dtype=torch.float64)
    with torch.no_grad():
        packed(x.float())  # the packed view is found and remembered
        assert max_diff(packed.double()(x)[0], plain.double()(x)[0]) == 0.0


@pytest.mark.parametrize("column_major", [False, True], ids=["row-major", "column-major"])
def test_packed_rows_are_views_that_see_edits_in_place(column_major):
    parts = pack_rows(torch.zeros(2, 3), torch.arange(3.0).view(1, 3), column_major=column_major)
    whole = packed_rows(*parts)
    assert whole is not None
    assert whole.shape == (3, 3)
    assert whole[2].tolist() == [0.0, 1.0, 2.0]
    parts[0][1].fill_(1.0)
    assert whole[1].eq(1.0).all()


@pytest.mark.parametrize("column_major", [False, True], ids=["row-major", "column-major"])
def test_rows_in_separate_storages_or_out_of_order_are_not_packed(column_major):
    a, b = pack_rows(torch.zeros(2, 3), torch.zeros(1, 3), column_major=column_major)
    assert packed_rows(b, a) is None
    assert packed_rows(a) is None if column_major else packed_rows(a) is not None  # a's columns hold b's rows too
    assert packed_rows(torch.zeros(2, 3), torch.zeros(1, 3)) is None


def test_parameters_autograd_tracks_are_not_packed():
    parts = [nn.Parameter(view) for view in pack_rows(torch.zeros(2, 3), torch.zeros(1, 3))]
    assert packed_rows(*parts) is None  # a gradient through the view would not reach the parameters
    with torch.no_grad():
        assert packed_rows(*parts) is not None


@pytest.mark.parametrize("with_bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize("outputs", [PANEL_COLUMNS * 2 + 5, 3 * PANEL_COLUMNS // 2], ids=["odd", "even"])
def test_linear_in_panels_gives_f_linear_numbers_for_a_column_major_weight(outputs, with_bias):
    weight = randn(outputs, 48).t().contiguous().t()  # column-major, more outputs than PANEL_COLUMNS
    bias = randn(outputs) if with_bias else None
    x = randn(2, 9, 48)
    expected = F.linear(x, weight, bias)
    assert torch.equal(linear(x, weight, bias), expected)
    one_row = x[:1, :1]  # one token: F.linear itself (a one-row product, streamed column by column)
    assert torch.equal(linear(one_row, weight, bias), F.linear(one_row, weight, bias))


def test_linear_keeps_autograd_where_weights_are_trained():
    weight = nn.Parameter(randn(PANEL_COLUMNS + 1, 8).t().contiguous().t())
    x = randn(3, 8)
    linear(x, weight).square().sum().backward()
    expected = weight.grad.clone()
    weight.grad = None
    F.linear(x, weight).square().sum().backward()
    assert torch.equal(weight.grad, expected)
