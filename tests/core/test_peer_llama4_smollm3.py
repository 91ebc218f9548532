"""Peers: Llama 4's chunked and NoPE layers and SmolLM3's NoPE layers, built by attn_core.hf.build_layer from small
random configs and loaded with HF's own attention module's weights (strict), against that module: a prefill longer
than a chunk (so its mask cuts), then cached decoding steps across chunk boundaries, each with HF's own DynamicCache.

HF's attention modules leave masking to the model: each call gets the additive mask HF's model would build over the
keys its cache returns (causal; the chunk on chunked layers, HF's create_chunked_causal_mask; the window on sliding
ones). Some configs come from a seeded draw no other test uses.
"""

from __future__ import annotations

import random

import pytest
import torch

pytest.importorskip("transformers")
from transformers import DynamicCache, Llama4Config, Llama4TextConfig, SmolLM3Config
from transformers.models.llama4.modeling_llama4 import Llama4TextAttention, Llama4TextRotaryEmbedding
from transformers.models.smollm3.modeling_smollm3 import SmolLM3Attention, SmolLM3RotaryEmbedding

from attn_core.chunked import ChunkedKVCache, chunk_tokens
from attn_core.hf import build_layer, read_layer

from .examples import randn

pytestmark = pytest.mark.slow

TOL = 2e-5
CHUNK = 5
PREFILL = 13  # more than two chunks: the prefill's mask cuts, and the cache drops the chunks before the last
DECODE_STEPS = 7  # positions 13..19: a new chunk starts at 15
SMALL = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_hidden_layers=4)


class Peer:
    """An HF attention module of layer layer_idx with its rotary embedding and cache, driven as its model drives it."""

    def __init__(self, module, rotary, hf_config, layer_idx: int):
        self.module, self.rotary, self.config, self.layer_idx = module.eval(), rotary, hf_config, layer_idx
        self.layer_type = hf_config.layer_types[layer_idx]
        self.cache = DynamicCache(config=hf_config)
        self.seen = 0

    def mask(self, new: int) -> torch.Tensor:
        """[1, 1, L, S] additive over the keys the cache returns: those it held (the latest ones) and the new ones."""
        layer = self.cache.layers[self.layer_idx]
        held = layer.keys.shape[-2] if layer.is_initialized else 0
        queries = torch.arange(self.seen, self.seen + new)[:, None]
        keys = torch.arange(self.seen - held, self.seen + new)[None, :]
        allowed = keys <= queries
        if self.layer_type == "chunked_attention":
            chunk = self.config.attention_chunk_size
            allowed &= keys // chunk == queries // chunk
        elif self.layer_type == "sliding_attention":
            allowed &= queries - keys < self.config.sliding_window
        return torch.zeros(allowed.shape).masked_fill(~allowed, torch.finfo(torch.float32).min)[None, None]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        b, l, _ = x.shape
        positions = torch.arange(self.seen, self.seen + l)[None].expand(b, -1)
        rotary = self.rotary(x, positions)
        out = self.module(x, position_embeddings=rotary, attention_mask=self.mask(l), past_key_values=self.cache)[0]
        self.seen += l
        return out


@torch.no_grad()
def _perturb_biases(module) -> None:
    """Biases away from their initial values, so one that failed to load would show."""
    for name, param in module.named_parameters():
        if name.endswith("bias"):
            param.copy_(0.5 * torch.randn(param.shape))


def _pair(config, attention_class, rotary_class, layer_idx: int, *, hf_dict=None):
    config._attn_implementation = "eager"
    torch.manual_seed(layer_idx)
    module = attention_class(config, layer_idx=layer_idx)
    _perturb_biases(module)
    ours = build_layer(config.to_dict() if hf_dict is None else hf_dict, layer_idx).eval()
    ours.load_state_dict(module.state_dict(), strict=True)
    return ours, Peer(module, rotary_class(config), config, layer_idx)


LLAMA3_ROPE = {
    "rope_type": "llama3",
    "rope_theta": 500000.0,
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 16,
}


def llama4_config(**changes) -> Llama4TextConfig:
    fields = dict(
        SMALL,
        attention_chunk_size=CHUNK,
        attention_bias=True,
        floor_scale=4,  # the temperature changes every 4 positions within the test's 20
        attn_scale=0.5,
        rope_parameters=LLAMA3_ROPE,
    )
    return Llama4TextConfig(**(fields | changes))


def llama4(layer_idx: int, **changes):
    return _pair(llama4_config(**changes), Llama4TextAttention, Llama4TextRotaryEmbedding, layer_idx)


def llama4_wrapped(layer_idx: int):
    """The multimodal config.json (model_type llama4): its text_config is read."""
    config = Llama4Config(text_config=llama4_config().to_dict())
    text = config.text_config
    return _pair(text, Llama4TextAttention, Llama4TextRotaryEmbedding, layer_idx, hf_dict=config.to_dict())


def smollm3(layer_idx: int, **changes):
    config = SmolLM3Config(**(dict(SMALL, attention_bias=True) | changes))
    return _pair(config, SmolLM3Attention, SmolLM3RotaryEmbedding, layer_idx)


def unseen(seed: int):
    """A Llama 4 config drawn from `seed`: shapes, chunk, NoPE pattern and temperature no other test uses."""
    draw = random.Random(seed)
    kv_heads = draw.choice([1, 2, 3])
    layers = draw.randint(2, 6)
    interval = draw.randint(2, layers)
    config = llama4_config(
        hidden_size=draw.choice([24, 40, 56]),
        num_attention_heads=kv_heads * draw.choice([1, 2, 4]),
        num_key_value_heads=kv_heads,
        head_dim=draw.choice([4, 8, 12]),
        num_hidden_layers=layers,
        no_rope_layer_interval=interval,
        attention_chunk_size=draw.randint(2, 7),
        attention_bias=draw.random() < 0.5,
        use_qk_norm=draw.random() < 0.5,
        floor_scale=draw.randint(1, 9),
        attn_scale=draw.uniform(0.05, 1.0),
        rms_norm_eps=draw.choice([1e-5, 1e-6]),
        rope_parameters={"rope_type": "default", "rope_theta": draw.choice([10000.0, 500000.0])},
    )
    layer_idx = draw.choice([interval - 1, 0])  # a NoPE layer or a chunked one
    return _pair(config, Llama4TextAttention, Llama4TextRotaryEmbedding, layer_idx)


PEERS = {
    "llama4-chunked-qk-norm-bias": lambda: llama4(0),
    "llama4-nope-temperature": lambda: llama4(3),
    "llama4-nope-no-temperature": lambda: llama4(3, attn_temperature_tuning=False),
    "llama4-chunked-no-qk-norm": lambda: llama4(1, use_qk_norm=False),
    "llama4-multimodal-wrapper-chunked": lambda: llama4_wrapped(2),
    "smollm3-rope": lambda: smollm3(0),
    "smollm3-nope": lambda: smollm3(3),
    "smollm3-nope-sliding": lambda: smollm3(3, use_sliding_window=True, sliding_window=4),
    **{f"llama4-unseen-seed-{seed}": (lambda seed=seed: unseen(seed)) for seed in (11, 23, 37, 41)},
}


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


def max_diff(a, b) -> float:
    return (a - b).abs().max().item()


@pytest.mark.parametrize("peer", PEERS)
def test_prefill_then_cached_steps_across_a_chunk_boundary_match_hf(peer):
    ours, theirs = PEERS[peer]()
    x = randn(2, PREFILL + DECODE_STEPS, ours.cfg.d_model)
    cache = ours.new_cache(2)
    diffs = [max_diff(ours(x[:, :PREFILL], cache=cache)[0], theirs(x[:, :PREFILL]))]
    for t in range(PREFILL, PREFILL + DECODE_STEPS):
        diffs.append(max_diff(ours(x[:, t : t + 1], cache=cache)[0], theirs(x[:, t : t + 1])))
    assert max(diffs) <= TOL, diffs


@pytest.mark.parametrize("peer", PEERS)
def test_prefill_without_a_cache_matches_hf(peer):
    ours, theirs = PEERS[peer]()
    x = randn(2, PREFILL, ours.cfg.d_model, seed=1)
    assert max_diff(ours(x)[0], theirs(x)) <= TOL


def test_chunks_of_several_tokens_match_hf():
    # prompts fed in pieces that start mid-chunk and span a chunk boundary: the held part of a chunk meets new keys
    ours, theirs = llama4(0)
    x = randn(1, 17, ours.cfg.d_model, seed=3)
    cache = ours.new_cache(1)
    for a, b in ((0, 3), (3, 9), (9, 10), (10, 17)):
        assert max_diff(ours(x[:, a:b], cache=cache)[0], theirs(x[:, a:b])) <= TOL


def test_the_chunked_cache_holds_hfs_keys_of_the_latest_chunk_only():
    ours, theirs = llama4(0)
    seen = 18  # the chunk of positions 15..19 begun: HF's cache also holds 14, from the chunk before
    x = randn(1, seen, ours.cfg.d_model, seed=2)
    cache = ours.new_cache(1)
    ours(x[:, :PREFILL], cache=cache)
    theirs(x[:, :PREFILL])
    for t in range(PREFILL, seen):
        ours(x[:, t : t + 1], cache=cache)
        theirs(x[:, t : t + 1])
    assert isinstance(cache, ChunkedKVCache)
    held = chunk_tokens(CHUNK, seen)  # positions 15..17
    assert held == 3
    assert theirs.cache.layers[0].keys.shape[2] == CHUNK - 1
    assert cache.k.shape == (1, 2, held, 16)
    # HF keeps the chunk - 1 latest keys as they are rotated (interleaved pairs); ours are kept evens-then-odds
    hf_keys, hf_values = (t[:, :, -held:] for t in (theirs.cache.layers[0].keys, theirs.cache.layers[0].values))
    assert max_diff(cache.k, torch.cat((hf_keys[..., 0::2], hf_keys[..., 1::2]), dim=-1)) <= TOL
    assert max_diff(cache.v, hf_values) <= TOL


@pytest.mark.parametrize(
    ("peer", "kind"),
    [
        ("llama4-chunked-qk-norm-bias", "chunked"),
        ("llama4-nope-temperature", "nope"),
        ("smollm3-rope", "full"),
        ("smollm3-nope", "nope"),
        ("smollm3-nope-sliding", "sliding_nope"),
    ],
)
def test_the_layers_kind_is_read_from_the_config(peer, kind):
    _, theirs = PEERS[peer]()
    assert read_layer(theirs.config.to_dict(), theirs.layer_idx)[0] == kind
