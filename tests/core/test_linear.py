"""The linear-attention layers (attn_core.linear) and Qwen3-Next's gated attention (attn_core.gated) without a peer:
their state's size, their configs read from config.json, seeded weights, the meta device. Their numbers against HF
transformers' modules are in test_peer_linear.py."""

from __future__ import annotations

import pytest
import torch

from attn_core import KVCache, MultiHeadLatentAttention
from attn_core import linear as linear_module
from attn_core.gated import GatedAttention, GatedAttentionConfig
from attn_core.gated import cache_bytes_formula as gated_bytes_formula
from attn_core.hf import build_layer
from attn_core.hybrids import kimi_linear_layer, qwen_hybrid_layer
from attn_core.linear import (
    GatedDeltaNet,
    GatedDeltaNetConfig,
    KimiDeltaAttention,
    KimiDeltaConfig,
    cache_bytes_formula,
    kimi_attention_config,
)

from .examples import randn

SMALL_GDN = GatedDeltaNetConfig(
    d_model=32, n_key_heads=2, n_value_heads=4, key_head_dim=8, value_head_dim=6, conv_kernel=4
)
SMALL_KDA = KimiDeltaConfig(d_model=32, n_heads=2, head_dim=8, conv_kernel=3)

# Qwen3-Next-80B-A3B and Kimi-Linear-48B-A3B as their config.json files lay them out (huggingface.co/Qwen/
# Qwen3-Next-80B-A3B-Instruct, huggingface.co/moonshotai/Kimi-Linear-48B-A3B-Instruct): top-level rope_theta and
# partial_rotary_factor and full_attention_interval instead of layer_types; Kimi's layer lists 1-indexed in a sub-dict.
QWEN3_NEXT = {
    "model_type": "qwen3_next",
    "hidden_size": 2048,
    "num_hidden_layers": 48,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "full_attention_interval": 4,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "linear_value_head_dim": 128,
    "partial_rotary_factor": 0.25,
    "rope_theta": 10000000,
    "rope_scaling": None,
    "rms_norm_eps": 1e-06,
    "hidden_act": "silu",
}
KIMI_FULL_LAYERS = [4, 8, 12, 16, 20, 24, 27]
KIMI_LINEAR = {
    "model_type": "kimi_linear",
    "hidden_size": 2304,
    "num_hidden_layers": 27,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "kv_lora_rank": 512,
    "q_lora_rank": None,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "rms_norm_eps": 1e-05,
    "hidden_act": "silu",
    "linear_attn_config": {
        "full_attn_layers": KIMI_FULL_LAYERS,
        "kda_layers": [n for n in range(1, 28) if n not in KIMI_FULL_LAYERS],
        "head_dim": 128,
        "num_heads": 32,
        "short_conv_kernel_size": 4,
    },
}


def state_bytes(heads, key_dim, value_dim, kernel, channels, batch, element_bytes):
    """Written out here, apart from the module: a float32 matrix per value head, and K - 1 inputs per conv channel."""
    return batch * (heads * key_dim * value_dim * 4 + (kernel - 1) * channels * element_bytes)


def expected_bytes(cfg, batch=1, element_bytes=4):
    if isinstance(cfg, GatedDeltaNetConfig):
        channels = 2 * cfg.n_key_heads * cfg.key_head_dim + cfg.n_value_heads * cfg.value_head_dim
        return state_bytes(
            cfg.n_value_heads, cfg.key_head_dim, cfg.value_head_dim, cfg.conv_kernel, channels, batch, element_bytes
        )
    return state_bytes(
        cfg.n_heads, cfg.head_dim, cfg.head_dim, cfg.conv_kernel, 3 * cfg.n_heads * cfg.head_dim, batch, element_bytes
    )


def seeded(cfg, seed=0):
    layer = (GatedDeltaNet if isinstance(cfg, GatedDeltaNetConfig) else KimiDeltaAttention)(cfg)
    layer.init_from_seed(seed)
    return layer.eval()


LAYERS = {"gated-deltanet": SMALL_GDN, "kimi-delta": SMALL_KDA}


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


@pytest.mark.parametrize("kind", LAYERS)
def test_state_bytes_are_the_same_at_10_and_10000_tokens_and_equal_the_formula(kind):
    cfg = LAYERS[kind]
    held = {}
    for tokens in (10, 10_000):
        layer, cache = seeded(cfg), None
        cache = layer.new_cache(2)
        layer(randn(2, tokens, cfg.d_model), cache=cache)
        held[tokens] = cache.nbytes
    assert held[10] == held[10_000] == expected_bytes(cfg, batch=2)


@pytest.mark.parametrize("kind", LAYERS)
def test_cache_bytes_formula_is_what_the_cache_holds_after_any_prefill(kind):
    cfg = LAYERS[kind]
    layer = seeded(cfg)
    for tokens in (0, 1, 3, 64, 1_000_000):
        for dtype in (torch.float32, torch.bfloat16):
            held = layer.cache_after(tokens, batch_size=3, dtype=dtype).nbytes
            assert held == cache_bytes_formula(cfg, tokens, 3, dtype.itemsize)
    assert cache_bytes_formula(cfg, 5, 3, 2) == expected_bytes(cfg, batch=3, element_bytes=2)


@pytest.mark.parametrize("kind", LAYERS)
def test_an_empty_cache_holds_nothing_and_has_read_nothing(kind):
    cache = seeded(LAYERS[kind]).new_cache(1)
    assert (cache.nbytes, cache.read_nbytes, cache.seq_len) == (0, 0, 0)


@pytest.mark.parametrize("kind", LAYERS)
def test_a_decoding_step_reads_the_state_and_the_conv_tail(kind):
    cfg = LAYERS[kind]
    layer = seeded(cfg)
    cache = layer.new_cache(1)
    x = randn(1, 20, cfg.d_model)
    layer(x[:, :19], cache=cache)
    layer(x[:, 19:], cache=cache)
    shapes = cache.shapes()
    assert shapes["conv"] == (1, layer.cfg.conv_channels, cfg.conv_kernel - 1)
    assert cache.read_nbytes == cache.nbytes == expected_bytes(cfg)


@pytest.mark.parametrize("kind", LAYERS)
def test_the_state_cache_meets_the_cache_contract(kind):
    cache = seeded(LAYERS[kind]).cache_after(5)
    assert isinstance(cache, KVCache)
    assert cache.capacity_nbytes == cache.nbytes


@pytest.mark.parametrize("kind", LAYERS)
def test_seq_len_counts_the_tokens_seen(kind):
    cfg = LAYERS[kind]
    layer = seeded(cfg)
    cache = layer.new_cache(1)
    for size in (70, 1, 5):
        layer(randn(1, size, cfg.d_model), cache=cache)
    assert cache.seq_len == 76
    assert layer.cache_after(76).seq_len == 76


@pytest.mark.parametrize("kind", LAYERS)
def test_cached_decoding_gives_the_full_forward_numbers(kind):
    cfg = LAYERS[kind]
    layer = seeded(cfg)
    x = randn(2, 80, cfg.d_model)
    cache = layer.new_cache(2)
    pieces = [layer(x[:, :70], cache=cache)[0]] + [layer(x[:, t : t + 1], cache=cache)[0] for t in range(70, 80)]
    assert (torch.cat(pieces, dim=1) - layer(x)[0]).abs().max() <= 1e-5


@pytest.mark.parametrize("kind", LAYERS)
def test_a_long_prompt_computed_in_segments_gives_the_same_numbers(kind, monkeypatch):
    cfg = LAYERS[kind]
    layer = seeded(cfg)
    x = randn(1, 300, cfg.d_model)
    whole = layer(x)[0]
    monkeypatch.setattr(linear_module, "SEGMENT_ELEMENTS", 1)  # one chunk per segment
    assert (layer(x)[0] - whole).abs().max() <= 1e-5


@pytest.mark.parametrize("kind", LAYERS)
def test_cache_after_a_million_tokens_holds_no_memory(kind):
    """On the meta device: shapes without storage (its time is printed by benchmarks/describe.py)."""
    cache = seeded(LAYERS[kind]).cache_after(1_000_000, batch_size=8)
    assert cache.state is not None
    assert cache.state.device.type == "meta"


@pytest.mark.parametrize("kind", LAYERS)
def test_the_layer_builds_on_the_meta_device(kind):
    cfg = LAYERS[kind]
    layer = (GatedDeltaNet if kind == "gated-deltanet" else KimiDeltaAttention)(cfg, device="meta")
    out, weights = layer(torch.empty(1, 5, cfg.d_model, device="meta"))
    assert (out.shape, out.device.type, weights) == ((1, 5, cfg.d_model), "meta", None)


@pytest.mark.parametrize("kind", LAYERS)
def test_the_same_seed_gives_the_same_weights_and_another_seed_others(kind):
    cfg = LAYERS[kind]
    first, again, other = seeded(cfg, 3).state_dict(), seeded(cfg, 3).state_dict(), seeded(cfg, 4).state_dict()
    assert all(torch.equal(first[name], again[name]) for name in first)
    assert not torch.equal(first["conv1d.weight"], other["conv1d.weight"])


def test_seeded_decay_parameters_are_drawn_as_hf_draws_them():
    gdn, kda = seeded(SMALL_GDN), seeded(SMALL_KDA)
    a = gdn.A_log.exp()
    assert torch.equal(gdn.dt_bias, torch.ones_like(gdn.dt_bias))
    assert ((a >= 0.01) & (a <= 16)).all()
    a = kda.forget_gate.A_log.exp()
    dt = torch.nn.functional.softplus(kda.forget_gate.dt_bias)
    assert ((a >= 1) & (a <= 16.0001)).all()
    assert ((dt >= 1e-3 * 0.999) & (dt <= 0.1001)).all()


def test_gated_attention_cache_is_two_kv_heads_per_token():
    cfg = GatedAttentionConfig(d_model=32, n_heads=4, n_kv_heads=2, head_dim=8, rotary_dim=4)
    layer = GatedAttention(cfg)
    layer.init_from_seed(0)
    cache = layer.new_cache(2)
    layer(randn(2, 9, 32), cache=cache)
    assert cache.nbytes == cache.read_nbytes == 2 * 2 * 2 * 8 * 9 * 4 == gated_bytes_formula(cfg, 9, 2, 4)
    assert layer.cache_after(1_000_000).nbytes == gated_bytes_formula(cfg, 1_000_000, 1, 4)


def test_gated_attention_weights_are_causal_and_sum_to_one():
    cfg = GatedAttentionConfig(d_model=32, n_heads=4, n_kv_heads=2, head_dim=8, rotary_dim=4)
    layer = GatedAttention(cfg)
    layer.init_from_seed(0)
    _, weights = layer(randn(1, 6, 32), return_weights=True)
    assert torch.allclose(weights.sum(-1), torch.ones(1, 4, 6))
    assert (weights.triu(1) == 0).all()


# --- config.json ------------------------------------------------------------------------------------------------


def test_qwen3_next_config_json_gives_three_linear_layers_per_full_one():
    kinds = []
    for layer in range(48):
        try:
            GatedDeltaNetConfig.from_hf(QWEN3_NEXT, layer)
            kinds.append("linear")
        except ValueError:
            GatedAttentionConfig.from_hf(QWEN3_NEXT, layer)
            kinds.append("full")
    assert kinds == ["linear", "linear", "linear", "full"] * 12


def test_qwen3_next_config_json_gives_the_published_shapes():
    assert GatedDeltaNetConfig.from_hf(QWEN3_NEXT, 0) == GatedDeltaNetConfig(2048, 16, 32, 128, 128, 4, 1e-6)
    assert GatedAttentionConfig.from_hf(QWEN3_NEXT, 3) == GatedAttentionConfig(
        2048, 16, 2, 256, rotary_dim=64, rope_theta=1e7, bias=False, norm_eps=1e-6
    )


def test_qwen3_5_config_json_is_read_from_its_text_config_with_separate_projections():
    qwen3_5 = {"model_type": "qwen3_5", "text_config": QWEN3_NEXT | {"model_type": "qwen3_5_text"}}
    assert GatedDeltaNetConfig.from_hf(qwen3_5, 0) == GatedDeltaNetConfig(
        2048, 16, 32, 128, 128, 4, 1e-6, fused_projections=False
    )
    assert GatedAttentionConfig.from_hf(qwen3_5, 3) == GatedAttentionConfig.from_hf(QWEN3_NEXT, 3)
    layer = GatedDeltaNet(GatedDeltaNetConfig.from_hf(qwen3_5, 0), device="meta")
    assert {name for name, _ in layer.named_children()} >= {"in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"}


def test_kimi_config_json_numbers_its_full_attention_layers_from_one():
    for number in range(1, 28):
        if number in KIMI_FULL_LAYERS:
            assert kimi_attention_config(KIMI_LINEAR, number - 1).rope is False
        else:
            assert KimiDeltaConfig.from_hf(KIMI_LINEAR, number - 1) == KimiDeltaConfig(2304, 32, 128, 4, 1e-5)


def test_kimi_full_attention_is_mla_without_rope():
    cfg = kimi_attention_config(KIMI_LINEAR, 3)
    layer = MultiHeadLatentAttention(cfg, device="meta")
    assert (cfg.variant, cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.rope) == ("mla", 512, 64, False)
    assert layer.kv_a_proj_with_mqa.weight.shape == (512 + 64, 2304)


def test_kimi_linear_attn_config_wins_over_the_flat_fields_as_in_transformers():
    hf = KIMI_LINEAR | {"linear_num_heads": 7, "linear_head_dim": 9}
    assert KimiDeltaConfig.from_hf(hf, 0).n_heads == 32


BAD = {
    "model_type": (lambda: GatedDeltaNetConfig.from_hf(QWEN3_NEXT | {"model_type": "llama"}, 0), "model_type"),
    "qwen3_5 without text_config": (
        lambda: GatedDeltaNetConfig.from_hf(QWEN3_NEXT | {"model_type": "qwen3_5"}, 0),
        "text_config",
    ),
    "missing field": (
        lambda: GatedDeltaNetConfig.from_hf({k: v for k, v in QWEN3_NEXT.items() if k != "linear_key_head_dim"}, 0),
        "linear_key_head_dim",
    ),
    "full layer as linear": (lambda: GatedDeltaNetConfig.from_hf(QWEN3_NEXT, 3), "layer_types"),
    "linear layer as full": (lambda: GatedAttentionConfig.from_hf(QWEN3_NEXT, 0), "layer_types"),
    "layer out of range": (lambda: GatedDeltaNetConfig.from_hf(QWEN3_NEXT, 48), "layer_idx"),
    "value heads not a multiple": (
        lambda: GatedDeltaNetConfig.from_hf(QWEN3_NEXT | {"linear_num_value_heads": 24, "linear_num_key_heads": 16}, 0),
        "n_value_heads",
    ),
    "zero conv kernel": (
        lambda: GatedDeltaNetConfig.from_hf(QWEN3_NEXT | {"linear_conv_kernel_dim": 0}, 0),
        "linear_conv_kernel_dim",
    ),
    "kimi zero heads": (
        lambda: KimiDeltaConfig.from_hf(
            KIMI_LINEAR | {"linear_attn_config": KIMI_LINEAR["linear_attn_config"] | {"num_heads": 0}}, 0
        ),
        "linear_attn_config.num_heads",
    ),
    "fractional head count": (
        lambda: GatedAttentionConfig.from_hf(QWEN3_NEXT | {"num_key_value_heads": 1.5}, 3),
        "num_key_value_heads",
    ),
    "activation": (lambda: KimiDeltaConfig.from_hf(KIMI_LINEAR | {"hidden_act": "gelu"}, 0), "hidden_act"),
    "rope scaling": (
        lambda: GatedAttentionConfig.from_hf(QWEN3_NEXT | {"rope_scaling": {"rope_type": "dynamic", "factor": 4.0}}, 3),
        "rope_type",
    ),
    "rotary factor": (
        lambda: GatedAttentionConfig.from_hf(QWEN3_NEXT | {"partial_rotary_factor": 1.5}, 3),
        "partial_rotary_factor",
    ),
    "layer_types length": (
        lambda: GatedDeltaNetConfig.from_hf(QWEN3_NEXT | {"layer_types": ["linear_attention"] * 3}, 0),
        "layer_types",
    ),
    "kimi layer numbers": (
        lambda: KimiDeltaConfig.from_hf(
            KIMI_LINEAR | {"linear_attn_config": KIMI_LINEAR["linear_attn_config"] | {"full_attn_layers": [0]}}, 1
        ),
        "full_attn_layers",
    ),
    "kimi kv groups": (
        lambda: kimi_attention_config(KIMI_LINEAR | {"num_key_value_heads": 8}, 3),
        "num_key_value_heads",
    ),
    "negative tokens": (lambda: GatedDeltaNet(SMALL_GDN, device="meta").cache_after(-1), "tokens"),
    "zero head dim": (lambda: KimiDeltaConfig(d_model=8, n_heads=2, head_dim=0), "head_dim"),
    "cache of another batch": (
        lambda: seeded(SMALL_KDA)(randn(2, 3, 32), cache=seeded(SMALL_KDA).new_cache(1)),
        "batch_size",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_config_raises_a_value_error_naming_the_field(case):
    make, field = BAD[case]
    with pytest.raises(ValueError, match=field):
        make()


def test_kda_decayed_products_match_the_written_out_sum_even_under_strong_decay():
    # sum_c x_i[c] k_j[c] exp(cum_i[c] - cum_j[c]) for j <= i, written out as HF does; decay of up to 80 nats per
    # token, where exp(-cum_j) alone would overflow float32
    generator = torch.Generator().manual_seed(0)
    q, k_beta, k = (torch.randn(1, 2, 3, linear_module.CHUNK, 8, generator=generator) for _ in range(3))
    cum = (-80 * torch.rand(1, 2, 3, linear_module.CHUNK, 8, generator=generator)).cumsum(3)
    above = torch.ones(linear_module.CHUNK, linear_module.CHUNK, dtype=torch.bool).triu(1)
    decay = (cum.unsqueeze(4) - cum.unsqueeze(3)).masked_fill(above[..., None], float("-inf")).exp()
    qk, kk = linear_module._channel_decayed_products(q, k_beta, k, cum)
    assert torch.isfinite(qk).all()
    assert (qk - (q.unsqueeze(4) * k.unsqueeze(3) * decay).sum(-1)).abs().max() <= 1e-5
    strictly_lower = (kk - (k_beta.unsqueeze(4) * k.unsqueeze(3) * decay).sum(-1)).tril(-1)
    assert strictly_lower.abs().max() <= 1e-5


@pytest.mark.parametrize("kind", LAYERS)
def test_seeded_projections_and_conv_are_uniform_within_one_over_root_fan_in(kind):
    layer = seeded(LAYERS[kind])
    for name, module in layer.named_modules():
        if isinstance(module, torch.nn.Linear | torch.nn.Conv1d):
            bound = module.weight[0].numel() ** -0.5  # in_features, or K for the depthwise conv
            assert module.weight.abs().max() <= bound, name
            assert module.weight.abs().max() > 0.8 * bound, name


def test_the_hybrids_registry_entries_give_every_layer_a_kind_and_a_class():
    qwen = [qwen_hybrid_layer(QWEN3_NEXT, i) for i in range(48)]
    kimi = [kimi_linear_layer(KIMI_LINEAR, i) for i in range(27)]
    assert [kind for kind, _ in qwen] == ["linear", "linear", "linear", "full"] * 12
    assert [i + 1 for i, (kind, _) in enumerate(kimi) if kind == "mla"] == KIMI_FULL_LAYERS
    # Kimi's MLA layer is MultiHeadLatentAttention's (test above)
    for hf, index, (kind, cfg) in [(QWEN3_NEXT, i, qwen[i]) for i in range(4)] + [
        (KIMI_LINEAR, i, kimi[i]) for i in range(3)
    ]:
        layer = build_layer(hf, index, device="meta", dtype=torch.bfloat16)
        expected = (cache_bytes_formula if kind == "linear" else gated_bytes_formula)(cfg, 10**6, 1, 2)
        assert layer.cache_after(10**6).nbytes == expected
