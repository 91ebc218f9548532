"""The designs after MLA at the sidebar's settings: each design's layer, built from the layer shape the four variants
share (d_model, heads, groups, latent, rope_dim) and the design's own knobs (window, sinks, top-k, rate, state width,
bits), with weights drawn from the seed as the variants' are.

    sliding     GQA (g groups) seeing a window of W tokens and the first n_s (Mistral; StreamingLLM's kept tokens)
    dsa         MLA (d_c, d_h^R) whose queries read the top k tokens a lightning indexer scores (DeepSeek-V3.2)
    compressed  DeepSeek-V4's heavily compressed attention: one entry per m tokens, plus a window of W
    linear      Gated DeltaNet: a fixed state of d_k x D per value head (Qwen3-Next's linear layers)
    quantised   GQA with KIVI's quantised cache: bits per number, a scale and zero point per group

The choices that are not the sidebar's are fixed here and said in a page's caption: DSA's indexer has one head per
query head, each head_dim wide; DSA and V4 compress queries to d_c (q_lora_rank) and V4 its output through g groups
of rank d_c; Gated DeltaNet has g key heads and h value heads of head_dim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from attn_core import (
    AttentionConfig,
    AttentionOptions,
    CacheBits,
    CompressedAttention,
    CompressedConfig,
    DeepSeekSparseAttention,
    DSAConfig,
    GatedDeltaNet,
    GatedDeltaNetConfig,
    build_attention,
)

from .settings import DESIGNS, Settings

# The conv kernel of Qwen3-Next's linear layers (linear_conv_kernel_dim)
CONV_KERNEL = 4
# Largest KIVI group (numbers per scale and zero point) tried; the group is the largest power of two up to it that
# divides the head width, so that per-token groups tile a head
MAX_QUANT_GROUP = 32

LayerConfig = AttentionConfig | DSAConfig | CompressedConfig | GatedDeltaNetConfig


@dataclass(frozen=True)
class Design:
    """One design at given settings: its layer's config, and what the layer takes beside it (a grouped layer's window
    and sinks; a quantised cache's bits)."""

    name: str
    config: LayerConfig
    options: AttentionOptions | None = None
    bits: CacheBits | None = None

    def build(
        self, seed: int | None = None, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> nn.Module:
        """The layer; with a seed, its weights drawn from it (attn_core's seeded init), as build_attention does for
        the four variants. On the meta device nothing is allocated."""
        if isinstance(self.config, AttentionConfig):
            return build_attention(self.config, seed, device=device, dtype=dtype, options=self.options)
        target = torch.device(device) if device is not None else torch.get_default_device()
        layer_class: Any = {
            DSAConfig: DeepSeekSparseAttention,
            CompressedConfig: CompressedAttention,
            GatedDeltaNetConfig: GatedDeltaNet,
        }[type(self.config)]
        if seed is None or target.type == "meta":
            return layer_class(self.config, device=target, dtype=dtype)
        layer = layer_class(self.config, device="meta", dtype=dtype).to_empty(device=target)
        layer.init_from_seed(seed)
        return layer

    def new_cache(self, layer: Any, batch: int) -> Any:
        """An empty cache of this design for layer (quantised as `bits` says)."""
        if self.bits is not None:
            b = self.bits
            return layer.new_cache(batch, bits=b.bits, group_size=b.group_size, residual=b.residual, keys=b.keys)
        return layer.new_cache(batch)


def design(settings: Settings, name: str) -> Design:
    """The design `name` (one of settings.DESIGNS) at these settings: ValueError for an unknown name."""
    s = settings
    if name == "sliding":
        return Design(
            name,
            AttentionConfig("gqa", d_model=s.d_model, n_heads=s.heads, n_kv_heads=s.groups),
            options=AttentionOptions(window=s.window, sink_tokens=s.sinks),
        )
    if name == "dsa":
        return Design(
            name,
            DSAConfig(
                d_model=s.d_model,
                n_heads=s.heads,
                q_lora_rank=s.latent,
                kv_lora_rank=s.latent,
                qk_nope_head_dim=s.head_dim,
                qk_rope_head_dim=s.rope_dim,
                v_head_dim=s.head_dim,
                index_n_heads=s.heads,
                index_head_dim=s.head_dim,
                index_topk=s.topk,
            ),
        )
    if name == "compressed":
        return Design(
            name,
            CompressedConfig(
                kind="hca",
                d_model=s.d_model,
                n_heads=s.heads,
                head_dim=s.head_dim,
                q_lora_rank=s.latent,
                qk_rope_head_dim=s.rope_dim,
                o_groups=s.groups,
                o_lora_rank=s.latent,
                sliding_window=s.window,
                compress_rate=s.rate,
            ),
        )
    if name == "linear":
        return Design(
            name,
            GatedDeltaNetConfig(
                d_model=s.d_model,
                n_key_heads=s.groups,
                n_value_heads=s.heads,
                key_head_dim=s.state_dim,
                value_head_dim=s.head_dim,
                conv_kernel=CONV_KERNEL,
            ),
        )
    if name == "quantised":
        return Design(
            name,
            AttentionConfig("gqa", d_model=s.d_model, n_heads=s.heads, n_kv_heads=s.groups),
            # residual 0: every whole group is quantised, so a short trace shows the saving (KIVI keeps 128 exact)
            bits=CacheBits(s.bits, group_size=quant_group(s.head_dim), residual=0),
        )
    raise ValueError(f"design={name!r}: choose one of {', '.join(DESIGNS)}.")


def quant_group(head_dim: int) -> int:
    """Numbers per scale and zero point: the largest power of two up to MAX_QUANT_GROUP that divides head_dim."""
    return math.gcd(head_dim, MAX_QUANT_GROUP)


def chosen(settings: Settings) -> dict[str, Design]:
    """The designs the settings choose, in their usual order."""
    return {name: design(settings, name) for name in settings.designs}
