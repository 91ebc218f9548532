"""Peers: HF transformers' LlamaAttention (MHA/MQA/GQA), DeepseekV3Attention (MLA), and the fused q/k/v checkpoints
of FalconAttention (MHA/MQA/GQA) and GPT2Attention (MHA, no RoPE): same weights, same numbers.

HF's attention modules leave masking to the model: called alone, eager attention with attention_mask=None is not
causal. Prefill and chunks therefore get an explicit additive causal mask, aligned to the end of the cache.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")
from transformers import DeepseekV3Config, DynamicCache, FalconConfig, GPT2Config, LlamaConfig
from transformers.models.deepseek_v3.modeling_deepseek_v3 import (
    DeepseekV3Attention,
    DeepseekV3RotaryEmbedding,
)
from transformers.models.falcon.modeling_falcon import FalconAttention, FalconRotaryEmbedding
from transformers.models.gpt2.modeling_gpt2 import GPT2Attention
from transformers.models.llama.modeling_llama import LlamaAttention, LlamaRotaryEmbedding

from attn_core import AttentionConfig, build_attention, falcon_attention_state, gpt2_attention_state

from .examples import randn

TOL = 2e-5


def additive_causal_mask(q_len: int, k_len: int) -> torch.Tensor:
    """[1, 1, L, S]: 0 where query i (position S - L + i) may look, the most negative float elsewhere."""
    query_pos = torch.arange(k_len - q_len, k_len)[:, None]
    blocked = torch.arange(k_len)[None, :] > query_pos
    return torch.zeros(q_len, k_len).masked_fill(blocked, torch.finfo(torch.float32).min)[None, None]


def max_diff(a, b) -> float:
    return (a - b).abs().max().item()


class Peer:
    """An HF attention module with its rotary embedding and cache, driven the way its model drives it."""

    def __init__(self, module, rotary, hf_config, drive=None):
        self.module, self.rotary, self.config = module.eval(), rotary, hf_config
        self.cache = DynamicCache(config=hf_config)
        self.seen = 0
        self.drive = drive or rotary_drive  # how this model calls its attention module

    def __call__(self, x: torch.Tensor, *, cached: bool) -> torch.Tensor:
        b, l, _ = x.shape
        start = self.seen if cached else 0
        positions = torch.arange(start, start + l)[None].expand(b, -1)
        mask = additive_causal_mask(l, start + l)  # all zeros for one new token: it may see everything
        out = self.drive(self, x, positions, mask, self.cache if cached else None)
        if cached:
            self.seen += l
        return out


def rotary_drive(peer: Peer, x, positions, mask, cache):
    """Llama and DeepSeek-V3: rotary embeddings and the mask come from the model, the cache as past_key_values."""
    return peer.module(x, position_embeddings=peer.rotary(x, positions), attention_mask=mask, past_key_values=cache)[0]


def falcon_drive(peer: Peer, x, positions, mask, cache):
    return peer.module(x, None, mask, layer_past=cache, position_embeddings=peer.rotary(x, positions))[0]


def gpt2_drive(peer: Peer, x, positions, mask, cache):
    return peer.module(x, past_key_values=cache, attention_mask=mask)[0]


def llama_pair(n_heads, n_kv_heads, *, d_model=64, head_dim=None, bias=False, theta=10000.0):
    hf_config = LlamaConfig(
        hidden_size=d_model,
        num_attention_heads=n_heads,
        num_key_value_heads=n_kv_heads,
        head_dim=head_dim,
        attention_bias=bias,
        rope_theta=theta,
        num_hidden_layers=1,
    )
    hf_config._attn_implementation = "eager"
    torch.manual_seed(0)
    module = LlamaAttention(hf_config, layer_idx=0)
    variant = "mha" if n_kv_heads == n_heads else "mqa" if n_kv_heads == 1 else "gqa"
    cfg = AttentionConfig(
        variant,
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=n_kv_heads if variant == "gqa" else None,
        head_dim=head_dim,
        bias=bias,
        rope_theta=theta,
    )
    ours = build_attention(cfg).eval()
    ours.load_state_dict(module.state_dict())  # strict: every name must match
    return ours, Peer(module, LlamaRotaryEmbedding(hf_config), hf_config)


def deepseek_pair(*, q_lora_rank, interleave, bias=False, d_model=64, n_heads=4):
    dims = dict(kv_lora_rank=24, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=12)
    hf_config = DeepseekV3Config(
        hidden_size=d_model,
        num_attention_heads=n_heads,
        num_key_value_heads=n_heads,
        q_lora_rank=q_lora_rank,
        rope_interleave=interleave,
        attention_bias=bias,
        rope_theta=10000.0,
        rope_scaling=None,
        num_hidden_layers=1,
        **dims,
    )
    hf_config._attn_implementation = "eager"
    torch.manual_seed(0)
    module = DeepseekV3Attention(hf_config, layer_idx=0)
    with torch.no_grad():  # norm scales away from 1, so a norm weight that failed to load would show
        for name, param in module.named_parameters():
            if "layernorm" in name:
                param.copy_(1 + 0.3 * torch.randn(param.shape))
    cfg = AttentionConfig(
        "mla", d_model=d_model, n_heads=n_heads, q_lora_rank=q_lora_rank, rope_interleave=interleave, bias=bias, **dims
    )
    ours = build_attention(cfg).eval()
    ours.load_state_dict(module.state_dict())
    return ours, Peer(module, DeepseekV3RotaryEmbedding(hf_config), hf_config)


def falcon_pair(*, n_heads, n_kv_heads, new_decoder_architecture, bias=False, d_model=64):
    """Falcon stores q, k and v as one fused weight, grouped: Falcon-7B (multi_query: one KV head), Falcon-40B (new
    decoder architecture: KV groups), and the original MHA layout (a query, key and value per head)."""
    hf_config = FalconConfig(
        hidden_size=d_model,
        num_attention_heads=n_heads,
        num_kv_heads=n_kv_heads,
        bias=bias,
        alibi=False,
        multi_query=n_kv_heads == 1 and not new_decoder_architecture,
        new_decoder_architecture=new_decoder_architecture,
        rope_theta=10000.0,
        num_hidden_layers=1,
    )
    hf_config._attn_implementation = "eager"
    torch.manual_seed(0)
    module = FalconAttention(hf_config, layer_idx=0)
    variant = "mha" if n_kv_heads == n_heads else "mqa" if n_kv_heads == 1 else "gqa"
    cfg = AttentionConfig(
        variant, d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads if variant == "gqa" else None, bias=bias
    )
    ours = build_attention(cfg).eval()
    ours.load_state_dict(falcon_attention_state(cfg, module.state_dict()), strict=True)
    return ours, Peer(module, FalconRotaryEmbedding(hf_config), hf_config, falcon_drive)


def gpt2_pair(*, d_model=64, n_heads=4):
    """GPT-2: fused, stacked q/k/v as a Conv1D, biases everywhere, no rotary embedding (positions are added to the
    input before the first layer)."""
    hf_config = GPT2Config(n_embd=d_model, n_head=n_heads, n_layer=1, n_positions=64)
    hf_config._attn_implementation = "eager"
    torch.manual_seed(0)
    module = GPT2Attention(hf_config, layer_idx=0)
    with torch.no_grad():  # GPT-2 starts its biases at zero: make them count
        module.c_attn.bias.normal_(0, 0.5)
        module.c_proj.bias.normal_(0, 0.5)
    cfg = AttentionConfig("mha", d_model=d_model, n_heads=n_heads, bias=True, rope=False)
    ours = build_attention(cfg).eval()
    ours.load_state_dict(gpt2_attention_state(cfg, module.state_dict()), strict=True)
    return ours, Peer(module, None, hf_config, gpt2_drive)


FALCON_SHAPES = {
    "7b-mqa": dict(n_heads=4, n_kv_heads=1, new_decoder_architecture=False),
    "40b-gqa": dict(n_heads=8, n_kv_heads=2, new_decoder_architecture=True),
    "mha-bias": dict(n_heads=4, n_kv_heads=4, new_decoder_architecture=False, bias=True),
}
LLAMA_SHAPES = {
    "mha": dict(n_heads=4, n_kv_heads=4),
    "mqa": dict(n_heads=4, n_kv_heads=1),
    "gqa": dict(n_heads=8, n_kv_heads=2),
    "gqa-bias-theta5e5": dict(n_heads=8, n_kv_heads=4, bias=True, theta=500000.0),
    "gqa-wide-head_dim": dict(n_heads=4, n_kv_heads=2, head_dim=32),
}
DEEPSEEK_SHAPES = {
    "full-rank-q": dict(q_lora_rank=None, interleave=False),
    "full-rank-q-interleaved": dict(q_lora_rank=None, interleave=True),
    "low-rank-q": dict(q_lora_rank=20, interleave=False),
    "low-rank-q-interleaved": dict(q_lora_rank=20, interleave=True),
    "low-rank-q-interleaved-bias": dict(q_lora_rank=20, interleave=True, bias=True),
}


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


@pytest.mark.parametrize("shape", LLAMA_SHAPES)
def test_llama_attention_weights_load_strictly(shape):
    ours, peer = llama_pair(**LLAMA_SHAPES[shape])
    result = build_attention(ours.cfg).load_state_dict(peer.module.state_dict(), strict=True)
    assert (result.missing_keys, result.unexpected_keys) == ([], [])


@pytest.mark.parametrize("shape", DEEPSEEK_SHAPES)
def test_deepseek_v3_attention_weights_load_strictly(shape):
    ours, peer = deepseek_pair(**DEEPSEEK_SHAPES[shape])
    result = build_attention(ours.cfg).load_state_dict(peer.module.state_dict(), strict=True)
    assert (result.missing_keys, result.unexpected_keys) == ([], [])


# Every peer in every shape: LlamaAttention, FalconAttention and GPT2Attention for the grouped variants, DeepseekV3Attention for MLA.
PEERS = (
    {f"llama-{shape}": (llama_pair, kwargs) for shape, kwargs in LLAMA_SHAPES.items()}
    | {f"deepseek-{shape}": (deepseek_pair, kwargs) for shape, kwargs in DEEPSEEK_SHAPES.items()}
    | {f"falcon-{shape}": (falcon_pair, kwargs) for shape, kwargs in FALCON_SHAPES.items()}
    | {"gpt2": (gpt2_pair, {})}
)


def peer_pair(peer: str):
    make_pair, kwargs = PEERS[peer]
    return make_pair(**kwargs)


@pytest.mark.parametrize("peer", PEERS)
def test_prefill_matches_the_peer(peer):
    ours, theirs = peer_pair(peer)
    x = randn(2, 11, ours.cfg.d_model)
    assert max_diff(ours(x)[0], theirs(x, cached=False)) <= TOL


@pytest.mark.parametrize("shape", DEEPSEEK_SHAPES)
def test_absorbed_prefill_matches_deepseek_v3_attention(shape):
    ours, peer = deepseek_pair(**DEEPSEEK_SHAPES[shape])
    x = randn(2, 11, ours.cfg.d_model)
    assert max_diff(ours(x, absorb=True)[0], peer(x, cached=False)) <= TOL


@pytest.mark.parametrize("peer", PEERS)
def test_token_by_token_decode_matches_the_peer_with_its_cache(peer):
    ours, theirs = peer_pair(peer)
    x = randn(2, 10, ours.cfg.d_model)
    cache = ours.new_cache(2)
    diffs = [max_diff(ours(x[:, t : t + 1], cache=cache)[0], theirs(x[:, t : t + 1], cached=True)) for t in range(10)]
    assert max(diffs) <= TOL


@pytest.mark.parametrize("peer", PEERS)
def test_prompt_then_chunks_then_tokens_match_the_peer_with_its_cache(peer):
    ours, theirs = peer_pair(peer)
    x = randn(1, 12, ours.cfg.d_model)
    cache, diffs, start = ours.new_cache(1), [], 0
    for size in (5, 3, 1, 1, 2):
        chunk = x[:, start : start + size]
        diffs.append(max_diff(ours(chunk, cache=cache)[0], theirs(chunk, cached=True)))
        start += size
    assert max(diffs) <= TOL


@pytest.mark.parametrize("shape", DEEPSEEK_SHAPES)
def test_mla_cache_holds_what_deepseek_v3_attention_caches(shape):
    # HF's cache keeps MLA compressed too: the normalised latent and the rotated shared key, [B, 1, S, width].
    ours, peer = deepseek_pair(**DEEPSEEK_SHAPES[shape])
    x = randn(2, 7, ours.cfg.d_model)
    cache = ours.new_cache(2)
    ours(x, cache=cache)
    peer(x, cached=True)
    assert max_diff(cache.c_kv, peer.cache.layers[0].keys) <= TOL
    assert max_diff(cache.k_rope, peer.cache.layers[0].values) <= TOL
