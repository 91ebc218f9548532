"""The Mamba-2 mixer and the hybrids around it (attn_core/mamba.py, read by attn_core.hf): the scan against the
recurrence written out token by token here, the cache's bytes against the closed form and the published model's
numbers worked by hand, and every bad field named. HF's own modules are the peers in test_peer_mamba.py."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attn_core import CachedLayer, GroupedQueryAttention, KVCache, describe_model, published_config
from attn_core.hf import build_layer
from attn_core.mamba import Mamba2Config, Mamba2Mixer, cache_bytes_formula, hybrid_layer_types

from .examples import randn

TINY = {
    "model_type": "nemotron_h",
    "hidden_size": 32,
    "num_hidden_layers": 5,
    "hybrid_override_pattern": "M*E-M",
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "mamba_num_heads": 4,
    "mamba_head_dim": 6,
    "ssm_state_size": 5,
    "n_groups": 2,
    "conv_kernel": 3,
    "chunk_size": 8,
    "time_step_min": 1e-9,  # no step clamped in the prompt: then a prompt and its tokens one by one agree
}


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


def tiny_mixer(seed: int = 0, **changes) -> Mamba2Mixer:
    layer = build_layer(TINY | changes, 0, seed=seed)
    assert isinstance(layer, Mamba2Mixer)
    return layer.eval()


def token_by_token_reference(layer: Mamba2Mixer, x: torch.Tensor) -> torch.Tensor:
    """Mamba-2 written out as its recurrence, one token and one head at a time, from the layer's weights."""
    cfg = layer.cfg
    z, xbc, dt_raw = layer.in_proj(x).split([cfg.inner_dim, cfg.conv_channels, cfg.n_heads], dim=-1)
    padded = F.pad(xbc.transpose(1, 2), (cfg.conv_kernel - 1, 0))
    conv = F.silu(F.conv1d(padded, layer.conv1d.weight, layer.conv1d.bias, groups=cfg.conv_channels)).transpose(1, 2)
    xs, b, c = conv.split([cfg.inner_dim, cfg.n_groups * cfg.state_size, cfg.n_groups * cfg.state_size], dim=-1)
    per_group = cfg.n_heads // cfg.n_groups
    batch, length, _ = x.shape
    y = torch.zeros(batch, length, cfg.n_heads, cfg.head_dim)
    for head in range(cfg.n_heads):
        group = head // per_group
        a = -math.exp(layer.A_log[head].item())
        h = torch.zeros(batch, cfg.head_dim, cfg.state_size)
        for t in range(length):
            dt = F.softplus(dt_raw[:, t, head] + layer.dt_bias[head])[:, None, None]  # [B, 1, 1]
            x_t = xs[:, t, head * cfg.head_dim : (head + 1) * cfg.head_dim]
            b_t = b[:, t, group * cfg.state_size : (group + 1) * cfg.state_size]
            c_t = c[:, t, group * cfg.state_size : (group + 1) * cfg.state_size]
            h = torch.exp(dt * a) * h + dt * x_t[:, :, None] * b_t[:, None, :]
            y[:, t, head] = (h @ c_t[:, :, None])[..., 0] + layer.D[head] * x_t
    gated = y.reshape(batch, length, -1) * F.silu(z)
    groups = gated.view(batch, length, cfg.n_groups, -1)
    normed = groups / torch.sqrt(groups.pow(2).mean(-1, keepdim=True) + cfg.norm_eps)
    return layer.out_proj(layer.norm.weight * normed.reshape(batch, length, -1))


def test_the_chunked_scan_is_the_recurrence_over_three_chunks():
    layer = tiny_mixer()
    x = randn(2, 21, 32)
    assert (layer(x)[0] - token_by_token_reference(layer, x)).abs().max() <= 1e-5


def test_a_prompt_then_cached_steps_equal_one_forward():
    layer = tiny_mixer()
    x = randn(2, 30, 32, seed=1)
    cache = layer.new_cache(2)
    pieces = [layer(x[:, :19], cache=cache)[0]] + [layer(x[:, t : t + 1], cache=cache)[0] for t in range(19, 30)]
    assert (torch.cat(pieces, dim=1) - layer(x)[0]).abs().max() <= 1e-5
    assert cache.seq_len == 30


def test_long_prompts_in_segments_give_the_same_numbers(monkeypatch):
    layer = tiny_mixer()
    x = randn(1, 40, 32, seed=2)
    whole = layer(x)[0]
    monkeypatch.setattr("attn_core.mamba.SEGMENT_ELEMENTS", 1)  # one chunk per segment
    assert (layer(x)[0] - whole).abs().max() <= 1e-6


def test_the_chunk_size_changes_no_number():
    x = randn(1, 37, 32, seed=3)
    by_8, by_64 = tiny_mixer(), tiny_mixer(chunk_size=64)
    assert (by_8(x)[0] - by_64(x)[0]).abs().max() <= 1e-5


def test_the_state_is_float32_and_the_conv_tail_in_the_layer_dtype():
    layer = build_layer(TINY, 0, seed=0, dtype="bfloat16")
    cache = layer.new_cache(1)
    layer(randn(1, 9, 32, dtype=torch.bfloat16), cache=cache)
    cfg = layer.cfg
    assert cache.shapes() == {"state": (1, 4, 6, 5), "conv": (1, cfg.conv_channels, 2)}  # [B, H, P, N], [B, C, K - 1]
    assert (cache.state.dtype, cache.conv.dtype) == (torch.float32, torch.bfloat16)
    assert cache.nbytes == 4 * 6 * 5 * 4 + 2 * (4 * 6 + 2 * 2 * 5) * 2


def test_the_cache_holds_the_same_bytes_at_any_length_and_equals_the_formula():
    layer = build_layer(TINY, 4, device="meta")
    for tokens in (1, 4096, 131072):
        cache = layer.cache_after(tokens, batch_size=3)
        assert cache.nbytes == cache.read_nbytes == cache_bytes_formula(layer.cfg, tokens, 3, 4)
        assert cache.nbytes == 3 * (4 * 6 * 5 * 4 + 2 * 44 * 4)
    assert layer.cache_after(0).nbytes == cache_bytes_formula(layer.cfg, 0, 1, 4) == 0


def test_a_real_prompt_leaves_what_cache_after_says():
    layer = tiny_mixer()
    cache = layer.new_cache(2)
    layer(randn(2, 13, 32), cache=cache)
    meta = layer.cache_after(13, batch_size=2)
    assert (cache.nbytes, cache.read_nbytes, cache.shapes()) == (meta.nbytes, meta.read_nbytes, meta.shapes())


def test_the_layers_are_cached_layers_and_their_caches_kv_caches():
    for index, layer_class in ((0, Mamba2Mixer), (1, GroupedQueryAttention)):
        layer = build_layer(TINY, index, device="meta")
        assert type(layer) is layer_class
        assert isinstance(layer, CachedLayer)
        assert isinstance(layer.cache_after(7), KVCache)


def test_same_seed_same_weights_and_hf_initial_decays():
    first, second = tiny_mixer(seed=5), tiny_mixer(seed=5)
    for (name, a), (_, b) in zip(first.state_dict().items(), second.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    assert not torch.equal(first.in_proj.weight, tiny_mixer(seed=6).in_proj.weight)
    assert torch.allclose(first.A_log.exp(), torch.arange(1.0, 5.0))  # HF's A = 1..H
    steps = F.softplus(first.dt_bias)
    assert ((steps >= 1e-3 - 1e-7) & (steps <= 0.1 + 1e-7)).all()  # dt drawn in [time_step_min, time_step_max]


def test_pattern_letters_name_each_layer_kind():
    model = describe_model(TINY)
    assert model.layer_kinds == ["mamba", "full", "moe", "mlp", "mamba"]
    assert hybrid_layer_types(TINY) == ["linear_attention", "full_attention", "moe", "mlp", "linear_attention"]


def test_layers_block_type_with_legacy_names_reads_as_the_pattern():
    listed = {k: v for k, v in TINY.items() if k != "hybrid_override_pattern"}
    listed["layers_block_type"] = ["mamba", "attention", "moe", "mlp", "linear_attention"]
    assert describe_model(listed).layer_kinds == describe_model(TINY).layer_kinds


def test_layers_with_no_cache_count_zero_bytes_and_say_so():
    kinds = {k.kind: k for k in describe_model(TINY).kinds(tokens=1000, dtype="float32")}
    assert (kinds["moe"].count, kinds["moe"].nbytes, kinds["moe"].read_nbytes) == (1, 0, 0)
    assert (kinds["mlp"].count, kinds["mlp"].nbytes) == (1, 0)
    assert "no tokens" in kinds["moe"].formula
    assert "MoE" in kinds["moe"].formula
    assert "MLP" in kinds["mlp"].formula


def test_a_layer_with_no_cache_is_not_built():
    with pytest.raises(ValueError, match="moe layer: it mixes no tokens"):
        build_layer(TINY, 2)


NANO = "Nemotron 3 Nano 30B-A3B"


def test_nemotron_3_nano_has_23_mamba_6_attention_and_23_moe_layers():
    model = describe_model(published_config(NANO))
    kinds = model.layer_kinds
    assert (kinds.count("mamba"), kinds.count("full"), kinds.count("moe")) == (23, 6, 23)
    assert [i for i, kind in enumerate(kinds) if kind == "full"] == [5, 12, 19, 26, 33, 42]


def test_nemotron_3_nano_state_bytes_are_the_same_at_4k_and_128k():
    model = describe_model(published_config(NANO))
    # per Mamba layer: 64 heads x 64 x 128 float32 state, 3 conv inputs of 4096 + 2 x 8 x 128 channels in bf16
    per_layer = 64 * 64 * 128 * 4 + 3 * (64 * 64 + 2 * 8 * 128) * 2
    at = {t: {k.kind: k.nbytes for k in model.kinds(tokens=t)} for t in (4096, 131072)}
    assert at[4096]["mamba"] == at[131072]["mamba"] == 23 * per_layer == 49_082_368
    assert at[4096]["moe"] == at[131072]["moe"] == 0
    # the 6 attention layers grow: 2 KV heads of 128, keys and values, bf16
    assert at[131072]["full"] == 6 * 2 * 2 * 128 * 131072 * 2
    assert model.cache_bytes(tokens=131072) == model.formula_bytes(tokens=131072) == 854_388_736


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"hybrid_override_pattern": "M*X-M"}, "hybrid_override_pattern"),
        ({"hybrid_override_pattern": "M*E-"}, "hybrid_override_pattern"),
        ({"hybrid_override_pattern": "M*E-MM"}, "hybrid_override_pattern"),
        ({"hybrid_override_pattern": 5}, "hybrid_override_pattern"),
        ({"num_hidden_layers": 6}, "hybrid_override_pattern"),
        ({"layers_block_type": ["mamba"] * 4}, "layers_block_type"),
        ({"ssm_state_size": 0}, "ssm_state_size"),
        ({"ssm_state_size": -4}, "ssm_state_size"),
        ({"conv_kernel": 0}, "conv_kernel"),
        ({"conv_kernel": 2.5}, "conv_kernel"),
        ({"mamba_num_heads": 0}, "mamba_num_heads"),
        ({"mamba_head_dim": -1}, "mamba_head_dim"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"mamba_hidden_act": "gelu"}, "mamba_hidden_act"),
        ({"time_step_min": -1.0}, "time_step_min"),
        ({"time_step_min": "0.001"}, "time_step_min"),
        ({"ssm_state_size": 2**40}, "state_size"),  # a typo, refused before torch is asked for the tensor
        ({"hidden_size": 10**12}, "hidden_size"),
    ],
)
def test_a_bad_field_is_a_value_error_naming_it(change, field):
    with pytest.raises(ValueError, match=field):
        describe_model(TINY | change)


def test_heads_not_in_whole_groups_are_refused():
    with pytest.raises(ValueError, match="n_groups"):
        describe_model(TINY | {"n_groups": 3})


def test_granite_head_width_must_split_the_inner_width():
    granite = {
        "model_type": "granitemoehybrid",
        "hidden_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "layer_types": ["mamba", "attention"],
        "mamba_n_heads": 6,
        "mamba_d_head": 10,
    }
    with pytest.raises(ValueError, match="mamba_d_head"):
        describe_model(granite)
    with pytest.raises(ValueError, match="time_step_limit"):
        describe_model(granite | {"mamba_d_head": "auto", "time_step_limit": [0.5, 0.1]})
    model = describe_model(granite | {"mamba_d_head": "auto"})
    assert model.layer_kinds == ["mamba", "full"]
    assert model.layer_configs[0] == Mamba2Config(
        d_model=48, n_heads=6, head_dim=16, state_size=256, chunk_size=256, norm_eps=1e-6
    )
