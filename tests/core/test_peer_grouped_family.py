"""Peers: every layer kind of the grouped family and DeepSeek-V3's MLA, built by attn_core.hf.build_layer from a
random small config and loaded with HF's own attention module's weights (strict), against that module: a prefill
longer than the window, then five cached decoding steps, each with HF's own DynamicCache (sliding layers keep
window - 1 tokens there too).

HF's attention modules leave masking to the model: each call gets the additive mask HF's model would build (causal,
and the window on sliding layers) over the keys its cache returns.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")
from transformers import (
    DeepseekV3Config,
    DynamicCache,
    Gemma3TextConfig,
    GptOssConfig,
    LlamaConfig,
    MistralConfig,
    Qwen2Config,
    Qwen3Config,
)
from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention, DeepseekV3RotaryEmbedding
from transformers.models.gemma3.modeling_gemma3 import Gemma3Attention, Gemma3RotaryEmbedding
from transformers.models.gpt_oss.modeling_gpt_oss import GptOssAttention, GptOssRotaryEmbedding
from transformers.models.llama.modeling_llama import LlamaAttention, LlamaRotaryEmbedding
from transformers.models.mistral.modeling_mistral import MistralAttention, MistralRotaryEmbedding
from transformers.models.qwen2.modeling_qwen2 import Qwen2Attention, Qwen2RotaryEmbedding
from transformers.models.qwen3.modeling_qwen3 import Qwen3Attention, Qwen3RotaryEmbedding

from attn_core.cache import WindowedKVCache
from attn_core.hf import build_layer, read_layer

from .examples import randn

pytestmark = pytest.mark.slow

TOL = 2e-5
WINDOW = 5
PREFILL = 13  # longer than the window: the prefill's mask cuts, and the cache evicts
DECODE_STEPS = 5
SMALL = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_hidden_layers=2)


class Peer:
    """An HF attention module of layer layer_idx with its rotary embedding and cache, driven as its model drives it."""

    def __init__(self, module, rotary, hf_config, layer_idx: int, window: int | None, layer_type: str | None = None):
        self.module, self.rotary, self.config = module.eval(), rotary, hf_config
        self.layer_idx, self.window, self.layer_type = layer_idx, window, layer_type
        self.cache = DynamicCache(config=hf_config)
        self.seen = 0

    def mask(self, new: int) -> torch.Tensor:
        """[1, 1, L, S] additive: the keys the cache returns are those it held (the latest ones) and the new ones."""
        layer = self.cache.layers[self.layer_idx]
        held = layer.keys.shape[-2] if layer.is_initialized else 0
        queries = torch.arange(self.seen, self.seen + new)[:, None]
        keys = torch.arange(self.seen - held, self.seen + new)[None, :]
        allowed = keys <= queries
        if self.window is not None:
            allowed &= queries - keys < self.window
        return torch.zeros(allowed.shape).masked_fill(~allowed, torch.finfo(torch.float32).min)[None, None]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        b, l, _ = x.shape
        positions = torch.arange(self.seen, self.seen + l)[None].expand(b, -1)
        rotary = self.rotary(x, positions) if self.layer_type is None else self.rotary(x, positions, self.layer_type)
        out = self.module(x, position_embeddings=rotary, attention_mask=self.mask(l), past_key_values=self.cache)[0]
        self.seen += l
        return out


@torch.no_grad()
def _perturb(module) -> None:
    """Norm scales, biases and sink logits away from their initial values, so one that failed to load would show."""
    for name, param in module.named_parameters():
        if "norm" in name:
            param.copy_(0.3 * torch.randn(param.shape) + (0.0 if "gemma" in type(module).__name__.lower() else 1.0))
        elif name.endswith("bias") or name == "sinks":
            param.copy_(0.5 * torch.randn(param.shape))


def _pair(config, attention_class, rotary, layer_idx: int, *, window: int | None, layer_type: str | None = None):
    config._attn_implementation = "eager"
    torch.manual_seed(layer_idx)
    module = attention_class(config, layer_idx=layer_idx)
    _perturb(module)
    ours = build_layer(config.to_dict(), layer_idx).eval()
    ours.load_state_dict(module.state_dict(), strict=True)
    return ours, Peer(module, rotary, config, layer_idx, window, layer_type)


def llama():
    config = LlamaConfig(
        **SMALL,
        attention_bias=True,
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 16,
        },
    )
    return _pair(config, LlamaAttention, LlamaRotaryEmbedding(config), 0, window=None)


def mistral():
    config = MistralConfig(**SMALL, sliding_window=WINDOW, rope_parameters={"rope_type": "linear", "factor": 4.0})
    return _pair(config, MistralAttention, MistralRotaryEmbedding(config), 1, window=WINDOW)


def qwen2(layer_idx: int):
    config = Qwen2Config(**SMALL, use_sliding_window=True, sliding_window=WINDOW, max_window_layers=1)
    window = WINDOW if layer_idx >= 1 else None
    return _pair(config, Qwen2Attention, Qwen2RotaryEmbedding(config), layer_idx, window=window)


def qwen3():
    config = Qwen3Config(
        **SMALL,
        rope_parameters={
            "rope_type": "yarn",
            "rope_theta": 1000000.0,
            "factor": 4.0,
            "original_max_position_embeddings": 16,
        },
    )
    return _pair(config, Qwen3Attention, Qwen3RotaryEmbedding(config), 0, window=None)


def qwen3_sliding():
    config = Qwen3Config(**SMALL, use_sliding_window=True, sliding_window=WINDOW, max_window_layers=0)
    return _pair(config, Qwen3Attention, Qwen3RotaryEmbedding(config), 1, window=WINDOW)


def gemma3(layer_idx: int):
    config = Gemma3TextConfig(
        **SMALL,
        query_pre_attn_scalar=24,
        sliding_window=WINDOW,
        layer_types=["sliding_attention", "full_attention"],
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
        },
    )
    layer_type = config.layer_types[layer_idx]
    window = WINDOW if layer_type == "sliding_attention" else None
    rotary = Gemma3RotaryEmbedding(config)
    return _pair(config, Gemma3Attention, rotary, layer_idx, window=window, layer_type=layer_type)


def gpt_oss(layer_idx: int):
    config = GptOssConfig(**SMALL, sliding_window=WINDOW)  # layer 0 sliding, layer 1 full; YaRN by default
    window = WINDOW if config.layer_types[layer_idx] == "sliding_attention" else None
    return _pair(config, GptOssAttention, GptOssRotaryEmbedding(config), layer_idx, window=window)


def deepseek_v3():
    config = DeepseekV3Config(
        hidden_size=64,
        num_attention_heads=4,
        num_key_value_heads=4,
        num_hidden_layers=1,
        q_lora_rank=20,
        kv_lora_rank=24,
        qk_nope_head_dim=16,
        qk_rope_head_dim=8,
        v_head_dim=12,
        max_position_embeddings=640,
        rope_scaling={
            "type": "yarn",
            "factor": 40.0,
            "beta_fast": 32,
            "beta_slow": 1,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
            "original_max_position_embeddings": 16,
        },
    )
    return _pair(config, DeepseekV3Attention, DeepseekV3RotaryEmbedding(config), 0, window=None)


PEERS = {
    "llama-llama3-rope-bias": llama,
    "mistral-sliding-linear-rope": mistral,
    "qwen2-full": lambda: qwen2(0),
    "qwen2-sliding": lambda: qwen2(1),
    "qwen3-yarn-qk-norm": qwen3,
    "qwen3-sliding": qwen3_sliding,
    "gemma3-sliding": lambda: gemma3(0),
    "gemma3-full": lambda: gemma3(1),
    "gpt-oss-sliding-sinks": lambda: gpt_oss(0),
    "gpt-oss-full-sinks": lambda: gpt_oss(1),
    "deepseek-v3-yarn": deepseek_v3,
}


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


def max_diff(a, b) -> float:
    return (a - b).abs().max().item()


@pytest.mark.parametrize("peer", PEERS)
def test_prefill_then_five_cached_steps_match_hf(peer):
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


@pytest.mark.parametrize("peer", [name for name in PEERS if "sliding" in name])
def test_sliding_cache_holds_what_hfs_cache_holds(peer):
    ours, theirs = PEERS[peer]()
    x = randn(1, PREFILL + DECODE_STEPS, ours.cfg.d_model, seed=2)
    cache = ours.new_cache(1)
    ours(x[:, :PREFILL], cache=cache)
    theirs(x[:, :PREFILL])
    for t in range(PREFILL, PREFILL + DECODE_STEPS):
        ours(x[:, t : t + 1], cache=cache)
        theirs(x[:, t : t + 1])
    assert isinstance(cache, WindowedKVCache)
    hf_layer = theirs.cache.layers[theirs.layer_idx]
    assert cache.k.shape == hf_layer.keys.shape == (1, 2, WINDOW - 1, 16)
    assert max_diff(cache.k, hf_layer.keys) <= TOL
    assert max_diff(cache.v, hf_layer.values) <= TOL
    assert cache.seq_len == PREFILL + DECODE_STEPS


@pytest.mark.parametrize(
    ("peer", "kind"),
    [("mistral-sliding-linear-rope", "sliding"), ("gemma3-full", "full"), ("gpt-oss-sliding-sinks", "sliding")],
)
def test_the_layers_kind_is_read_from_the_config(peer, kind):
    _, theirs = PEERS[peer]()
    assert read_layer(theirs.config.to_dict(), theirs.layer_idx)[0] == kind
