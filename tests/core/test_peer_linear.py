"""Peers: HF transformers' own modules for the linear-attention hybrids, run on the CPU in float32 with their torch
fallbacks: Qwen3NextGatedDeltaNet and Qwen3NextAttention (Qwen3-Next), Qwen3_5GatedDeltaNet, Qwen3_5MoeGatedDeltaNet
and Qwen3_5Attention (Qwen3.5, dense and MoE), KimiLinearDeltaAttention and KimiLinearAttention (Kimi Linear). Same weights (HF's state_dict loaded strictly), same numbers: a prompt longer than
a chunk of the delta rule (64 tokens), then five decoding steps through each side's own cache.

HF's softmax attention modules leave masking to the model: they get the additive causal mask the model would build.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")
from transformers import DynamicCache, KimiLinearConfig, Qwen3_5Config, Qwen3_5MoeConfig, Qwen3NextConfig
from transformers.models.kimi_linear.modeling_kimi_linear import KimiLinearAttention, KimiLinearDeltaAttention
from transformers.models.qwen3_5.modeling_qwen3_5 import (
    Qwen3_5Attention,
    Qwen3_5GatedDeltaNet,
    Qwen3_5TextRotaryEmbedding,
)
from transformers.models.qwen3_5_moe.modeling_qwen3_5_moe import Qwen3_5MoeGatedDeltaNet
from transformers.models.qwen3_next.modeling_qwen3_next import (
    Qwen3NextAttention,
    Qwen3NextGatedDeltaNet,
    Qwen3NextRotaryEmbedding,
)

from attn_core import MultiHeadLatentAttention
from attn_core.gated import GatedAttention, GatedAttentionConfig
from attn_core.linear import (
    CHUNK,
    GatedDeltaNet,
    GatedDeltaNetConfig,
    KimiDeltaAttention,
    KimiDeltaConfig,
    kimi_attention_config,
)

from .examples import randn
from .test_peers_hf import additive_causal_mask, max_diff

pytestmark = pytest.mark.slow

LINEAR_TOL = 1e-4
SOFTMAX_TOL = 2e-5
PROMPT = 2 * CHUNK + 22  # three chunks, the last one padded
STEPS = 5


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


def _randomise(module, names: tuple[str, ...], *, around: float) -> None:
    """Parameters HF starts at a constant (norm scales, ...), drawn around it, so one that failed to load would show."""
    generator = torch.Generator().manual_seed(1)
    for name, param in module.named_parameters():
        if any(part in name for part in names):
            param.copy_(around + 0.3 * torch.randn(param.shape, generator=generator))


class Peer:
    """An HF module with the cache its model would give it, driven as its decoder layer drives it."""

    def __init__(self, module, hf_config, drive):
        self.module, self.config, self.drive = module.eval(), hf_config, drive
        self.cache = DynamicCache(config=hf_config)
        self.seen = 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        out = self.drive(self, x)
        self.seen += x.shape[1]
        return out


def linear_drive(peer: Peer, x):
    return peer.module(x, cache_params=peer.cache)


def qwen_attention_drive(peer: Peer, x):
    b, l, _ = x.shape
    positions = torch.arange(peer.seen, peer.seen + l)[None].expand(b, -1)
    rotary = Qwen3NextRotaryEmbedding if isinstance(peer.config, Qwen3NextConfig) else Qwen3_5TextRotaryEmbedding
    embeddings = rotary(peer.config)(x, positions)
    mask = additive_causal_mask(l, peer.seen + l)
    return peer.module(x, position_embeddings=embeddings, attention_mask=mask, past_key_values=peer.cache)[0]


def kimi_attention_drive(peer: Peer, x):
    mask = additive_causal_mask(x.shape[1], peer.seen + x.shape[1])
    return peer.module(x, attention_mask=mask, past_key_values=peer.cache)[0]


QWEN_SHAPE = dict(
    hidden_size=64,
    num_hidden_layers=4,  # layers 0-2 linear, 3 full (full_attention_interval 4)
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,
    linear_num_key_heads=2,
    linear_num_value_heads=4,
    linear_key_head_dim=16,
    linear_value_head_dim=12,
    linear_conv_kernel_dim=4,
    rms_norm_eps=1e-6,
)


def qwen3_next_config(**overrides) -> Qwen3NextConfig:
    hf_config = Qwen3NextConfig(**(QWEN_SHAPE | overrides))
    hf_config._attn_implementation = "eager"
    return hf_config


def qwen3_5_config(moe=False, **overrides):
    """Qwen3.5's config nests the text model's: the modules take text_config, from_hf reads the whole to_dict()."""
    whole = (Qwen3_5MoeConfig if moe else Qwen3_5Config)(text_config=QWEN_SHAPE | overrides)
    whole.text_config._attn_implementation = "eager"
    return whole


def kimi_config(**overrides) -> KimiLinearConfig:
    shape = dict(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        kv_lora_rank=24,
        qk_nope_head_dim=16,
        qk_rope_head_dim=8,
        v_head_dim=12,
        linear_attn_config={
            "kda_layers": [1],
            "full_attn_layers": [2],
            "num_heads": 4,
            "head_dim": 16,
            "short_conv_kernel_size": 4,
        },
    )
    hf_config = KimiLinearConfig(**(shape | overrides))
    hf_config._attn_implementation = "eager"
    return hf_config


def gated_delta_net_pair(**overrides):
    hf_config = qwen3_next_config(**overrides)
    torch.manual_seed(0)
    module = Qwen3NextGatedDeltaNet(hf_config, layer_idx=0)
    _randomise(module, ("norm.weight", "dt_bias"), around=1.0)
    ours = GatedDeltaNet(GatedDeltaNetConfig.from_hf(hf_config.to_dict(), 0))
    ours.load_state_dict(module.state_dict(), strict=True)
    return ours.eval(), Peer(module, hf_config, linear_drive)


def qwen3_5_delta_net_pair(moe=False, **overrides):
    whole = qwen3_5_config(moe, **overrides)
    torch.manual_seed(0)
    module = (Qwen3_5MoeGatedDeltaNet if moe else Qwen3_5GatedDeltaNet)(whole.text_config, layer_idx=1)
    _randomise(module, ("norm.weight", "dt_bias"), around=1.0)
    ours = GatedDeltaNet(GatedDeltaNetConfig.from_hf(whole.to_dict(), 1))
    ours.load_state_dict(module.state_dict(), strict=True)
    return ours.eval(), Peer(module, whole.text_config, linear_drive)


def qwen3_5_attention_pair(**overrides):
    whole = qwen3_5_config(**overrides)
    torch.manual_seed(0)
    module = Qwen3_5Attention(whole.text_config, layer_idx=3)
    _randomise(module, ("q_norm", "k_norm"), around=0.0)
    ours = GatedAttention(GatedAttentionConfig.from_hf(whole.to_dict(), 3))
    ours.load_state_dict(module.state_dict(), strict=True)
    return ours.eval(), Peer(module, whole.text_config, qwen_attention_drive)


def kimi_delta_pair(strong_decay=False, **overrides):
    hf_config = kimi_config(**overrides)
    torch.manual_seed(0)
    module = KimiLinearDeltaAttention(hf_config, layer_idx=0)
    gate = module.forget_gate  # left uninitialised by __init__: drawn as HF's _init_weights draws them
    gate.A_log.copy_(torch.empty_like(gate.A_log).uniform_(1.0, 16.0).log())
    dt = torch.empty_like(gate.dt_bias).uniform_(-7.0, -2.0).exp()
    gate.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))
    if strong_decay:  # A = 16 and softplus ~ 5: about 80 nats per token and channel, past float32's exp range
        gate.A_log.fill_(torch.tensor(16.0).log())
        gate.dt_bias.fill_(5.0)
    _randomise(module, ("o_norm",), around=1.0)
    ours = KimiDeltaAttention(KimiDeltaConfig.from_hf(hf_config.to_dict(), 0))
    ours.load_state_dict(module.state_dict(), strict=True)
    return ours.eval(), Peer(module, hf_config, linear_drive)


def gated_attention_pair(**overrides):
    hf_config = qwen3_next_config(**overrides)
    torch.manual_seed(0)
    module = Qwen3NextAttention(hf_config, layer_idx=3)
    _randomise(module, ("q_norm", "k_norm"), around=0.0)
    ours = GatedAttention(GatedAttentionConfig.from_hf(hf_config.to_dict(), 3))
    ours.load_state_dict(module.state_dict(), strict=True)
    return ours.eval(), Peer(module, hf_config, qwen_attention_drive)


def kimi_attention_pair(**overrides):
    hf_config = kimi_config(**overrides)
    torch.manual_seed(0)
    module = KimiLinearAttention(hf_config, layer_idx=1)
    _randomise(module, ("layernorm",), around=1.0)
    ours = MultiHeadLatentAttention(kimi_attention_config(hf_config.to_dict(), 1))
    ours.load_state_dict(module.state_dict(), strict=True)
    return ours.eval(), Peer(module, hf_config, kimi_attention_drive)


LINEAR = {
    "gated-deltanet-grouped-values": (gated_delta_net_pair, {}),
    "gated-deltanet-one-value-head-per-key": (
        gated_delta_net_pair,
        dict(linear_num_value_heads=2, linear_value_head_dim=16, linear_conv_kernel_dim=3),
    ),
    "qwen3.5-gated-deltanet": (qwen3_5_delta_net_pair, {}),
    "qwen3.5-moe-gated-deltanet": (qwen3_5_delta_net_pair, dict(moe=True)),
    "kimi-delta": (kimi_delta_pair, {}),
    "kimi-delta-strong-decay": (kimi_delta_pair, dict(strong_decay=True)),
    "kimi-delta-kernel-2": (
        kimi_delta_pair,
        dict(
            linear_attn_config={
                "kda_layers": [1],
                "full_attn_layers": [2],
                "num_heads": 2,
                "head_dim": 24,
                "short_conv_kernel_size": 2,
            }
        ),
    ),
}
SOFTMAX = {
    "qwen3-next-gated": (gated_attention_pair, {}),
    "qwen3-next-gated-bias-half-rotary": (
        gated_attention_pair,
        dict(
            attention_bias=True,
            rope_parameters={"rope_type": "default", "rope_theta": 5e5, "partial_rotary_factor": 0.5},
        ),
    ),
    "qwen3-next-gated-yarn": (  # YaRN over the partial rotary's frequencies, as HF computes them
        gated_attention_pair,
        dict(
            max_position_embeddings=4096,
            rope_parameters={
                "rope_type": "yarn",
                "rope_theta": 1e4,
                "partial_rotary_factor": 0.25,
                "factor": 4.0,
                "original_max_position_embeddings": 1024,
            },
        ),
    ),
    "qwen3.5-gated": (qwen3_5_attention_pair, {}),
    "kimi-mla-nope": (kimi_attention_pair, {}),
    "kimi-mla-nope-low-rank-q-bias": (kimi_attention_pair, dict(q_lora_rank=20, attention_bias=True)),
}
PEERS = {
    **{name: (*pair, LINEAR_TOL) for name, pair in LINEAR.items()},
    **{name: (*pair, SOFTMAX_TOL) for name, pair in SOFTMAX.items()},
}


def peer_pair(name):
    make, kwargs, _ = PEERS[name]
    return make(**kwargs)


@pytest.mark.parametrize("peer", PEERS)
def test_prefill_longer_than_a_chunk_then_five_cached_steps_match_hf(peer):
    ours, theirs = peer_pair(peer)
    tol = PEERS[peer][2]
    x = randn(2, PROMPT + STEPS, ours.cfg.d_model)
    cache = ours.new_cache(2)
    diffs = [max_diff(ours(x[:, :PROMPT], cache=cache)[0], theirs(x[:, :PROMPT]))]
    for t in range(PROMPT, PROMPT + STEPS):
        diffs.append(max_diff(ours(x[:, t : t + 1], cache=cache)[0], theirs(x[:, t : t + 1])))
    assert max(diffs) <= tol, diffs


@pytest.mark.parametrize("peer", PEERS)
def test_prompt_in_two_pieces_then_steps_match_hf(peer):
    # the second piece starts from a state and a tail: the chunked rule with an initial state
    ours, theirs = peer_pair(peer)
    x = randn(1, CHUNK + 40 + 3, ours.cfg.d_model, seed=1)
    cache, diffs, start = ours.new_cache(1), [], 0
    for size in (CHUNK + 5, 35, 1, 1, 1):
        piece = x[:, start : start + size]
        diffs.append(max_diff(ours(piece, cache=cache)[0], theirs(piece)))
        start += size
    assert max(diffs) <= PEERS[peer][2], diffs


@pytest.mark.parametrize("peer", LINEAR)
def test_state_and_conv_tail_are_what_hf_caches(peer):
    # HF keeps the last K convolution inputs; the oldest is never read again, so ours keeps K - 1
    ours, theirs = peer_pair(peer)
    x = randn(2, PROMPT, ours.cfg.d_model)
    cache = ours.new_cache(2)
    ours(x, cache=cache)
    theirs(x)
    layer = theirs.cache.layers[theirs.module.layer_idx]
    assert max_diff(cache.state, layer.recurrent_states[0]) <= LINEAR_TOL
    assert max_diff(cache.conv, layer.conv_states[0][..., 1:]) == 0


@pytest.mark.parametrize("peer", LINEAR)
def test_prefill_without_a_cache_matches_hf(peer):
    ours, theirs = peer_pair(peer)
    x = randn(2, PROMPT, ours.cfg.d_model, seed=2)
    assert max_diff(ours(x)[0], theirs.module(x)) <= LINEAR_TOL
