"""Every layer meets one contract (attn_core.AttentionLayer): the same methods, options after x by keyword only, and
queries of one shape."""

from __future__ import annotations

import inspect

import pytest
import torch

from attn_core import AttentionLayer, KVCache, Queries, build_attention

from .examples import ALL, EXAMPLES, GROUPED, LATENT, randn


@pytest.mark.parametrize("name", ALL)
def test_every_layer_is_an_attention_layer_and_its_cache_a_kv_cache(name):
    layer = build_attention(EXAMPLES[name], seed=0)
    assert isinstance(layer, AttentionLayer)
    assert isinstance(layer.new_cache(), KVCache)


@pytest.mark.parametrize("name", ALL)
def test_every_option_after_x_is_keyword_only(name):
    parameters = list(inspect.signature(build_attention(EXAMPLES[name]).forward).parameters.values())
    assert parameters[0].name == "x"
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters[1:])


@pytest.mark.parametrize("name", ALL)
def test_an_option_given_by_position_is_refused(name):
    layer = build_attention(EXAMPLES[name], seed=0)
    with pytest.raises(TypeError):
        layer(randn(1, 3, EXAMPLES[name].d_model), layer.new_cache())


@pytest.mark.parametrize("name", ALL)
def test_queries_are_one_tensor_per_head_as_wide_as_a_key(name):
    cfg = EXAMPLES[name]
    queries = build_attention(cfg, seed=0).queries(randn(2, 5, cfg.d_model), 0)
    assert isinstance(queries, Queries)
    assert queries.joined().shape == (2, cfg.n_heads, 5, cfg.qk_head_dim)


@pytest.mark.parametrize("name", GROUPED)
def test_a_grouped_query_is_rotary_throughout(name):
    cfg = EXAMPLES[name]
    queries = build_attention(cfg, seed=0).queries(randn(1, 5, cfg.d_model), 0)
    assert queries.nope.shape[-1] == 0
    assert queries.joined() is queries.rope  # as it is, no copy


@pytest.mark.parametrize("name", LATENT)
def test_a_latent_query_is_its_content_part_then_its_decoupled_rotary_part(name):
    cfg = EXAMPLES[name]
    queries = build_attention(cfg, seed=0).queries(randn(1, 5, cfg.d_model), 0)
    assert queries.nope.shape[-1] == cfg.qk_nope_head_dim
    assert queries.rope.shape[-1] == cfg.qk_rope_head_dim
    assert torch.equal(queries.joined(), torch.cat((queries.nope, queries.rope), dim=-1))
