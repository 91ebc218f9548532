"""Every published model's layers at test size: the published config.json with its widths, head counts, windows,
top-k and compression rates made small, every other field (RoPE and its scaling, biases, norms, layer pattern) as
published, so each layer kind build_layer makes from a published model runs in milliseconds."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from attn_core.hf import build_layer, read_layer, stands_alone
from attn_core.published import PUBLISHED, published_config

_GROUPED = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}
_HEAD = {**_GROUPED, "head_dim": 16}
_LATENT = {
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "kv_lora_rank": 16,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 8,
    "v_head_dim": 8,
}

SMALLER: dict[str, dict[str, Any]] = {
    "Llama 3 8B": _GROUPED,
    "Mistral 7B": {**_GROUPED, "sliding_window": 6},
    "Qwen3-8B": _HEAD,
    "Gemma 3 27B": {"text_config": {**_HEAD, "query_pre_attn_scalar": 16, "sliding_window": 6}},
    "gpt-oss-120b": {**_HEAD, "sliding_window": 6},
    "Qwen3-Next-80B-A3B": {
        **_HEAD,
        "linear_num_key_heads": 2,
        "linear_num_value_heads": 4,
        "linear_key_head_dim": 16,
        "linear_value_head_dim": 16,
    },
    "DeepSeek-V3": {**_LATENT, "q_lora_rank": 24},
    "DeepSeek-V3.2": {**_LATENT, "q_lora_rank": 24, "index_n_heads": 4, "index_head_dim": 16, "index_topk": 6},
    "DeepSeek-V4-Flash": {
        "hidden_size": 64,
        "num_attention_heads": 4,
        "head_dim": 32,
        "q_lora_rank": 16,
        "qk_rope_head_dim": 8,
        "o_groups": 2,
        "o_lora_rank": 8,
        "sliding_window": 6,
        "index_n_heads": 4,
        "index_head_dim": 16,
        "index_topk": 3,
    },
    "Kimi Linear 48B-A3B": {**_LATENT, "linear_attn_config": {"num_heads": 4, "head_dim": 16}},
    "SmolLM2-135M": _GROUPED,
    # top-k past the test's tokens: a pick flipped by bf16's rounding would move the output by a whole entry's share
    # (V3.2's entry covers the sparse path)
    "GLM-5": {**_LATENT, "q_lora_rank": 24, "index_n_heads": 4, "index_head_dim": 16, "index_topk": 64},
    "MiniMax-M1": _HEAD,
    "MiniMax-M2": _HEAD,
    "Gemma 3n E4B": {"text_config": {**_HEAD, "sliding_window": 6}},
    "Gemma 4 31B": {
        "text_config": {**_HEAD, "num_global_key_value_heads": 1, "global_head_dim": 32, "sliding_window": 6}
    },
    "Llama 4 Scout": {"text_config": {**_HEAD, "attention_chunk_size": 6, "floor_scale": 4}},
    "SmolLM3-3B": _HEAD,
    "Nemotron 3 Nano 30B-A3B": {
        **_HEAD,
        "mamba_num_heads": 4,
        "mamba_head_dim": 16,
        "ssm_state_size": 16,
        "n_groups": 2,
        "chunk_size": 8,
    },
}


def small_config(name: str) -> dict[str, Any]:
    """The published config `name` with SMALLER's fields (nested dicts merged)."""
    hf = published_config(name)
    for key, value in SMALLER[name].items():
        hf[key] = {**hf[key], **value} if isinstance(value, dict) else value
    return hf


def _layer_count(hf: dict[str, Any]) -> int:
    return int(hf.get("num_hidden_layers") or hf["text_config"]["num_hidden_layers"])


def layer_kinds() -> list[tuple[str, str, int]]:
    """(model, kind, layer index): the first layer of each kind of every published model."""
    cases = []
    for name in PUBLISHED:
        if name not in SMALLER:  # test_every_published_model_has_a_small_version says so
            continue
        hf, seen = small_config(name), set()
        for index in range(_layer_count(hf)):
            kind, config = read_layer(hf, index)
            if kind not in seen and stands_alone(config):
                seen.add(kind)
                cases.append((name, kind, index))
    return cases


LAYER_KINDS = layer_kinds()
CASE_IDS = [f"{name}:{kind}" for name, kind, _ in LAYER_KINDS]


def small_layer(
    name: str, index: int, *, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu"
) -> nn.Module:
    return build_layer(small_config(name), index, seed=0, device=device, dtype=dtype).eval()


def prefill_then_decode(layer: nn.Module, x: torch.Tensor, prompt: int) -> torch.Tensor:
    """x [B, L, d_model]: the first `prompt` tokens in one call, the rest one by one, through one cache ->
    [B, L, d_model], every call's output in order."""
    cache = layer.new_cache(x.shape[0])
    outs = [layer(x[:, :prompt], cache=cache)[0]]
    outs += [layer(x[:, t : t + 1], cache=cache)[0] for t in range(prompt, x.shape[1])]
    return torch.cat(outs, dim=1)
