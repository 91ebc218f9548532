"""The grouped layer with KIVI's quantised cache (attn_core.quant through GroupedQueryAttention.new_cache(bits=)):
bits per number, a scale and zero point per group. It reads every token as a plain cache does, so the heatmaps and
mapping pages leave it to the variants."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from attn_core import AttentionConfig, CacheBits, GroupedQueryAttention, build_attention
from attn_core.quant import cache_bytes_formula
from explorer.messages import N_

from .kind import Design, Kind

if TYPE_CHECKING:
    from explorer.settings import Settings

# Largest KIVI group (numbers per scale and zero point) tried; the group is the largest power of two up to it that
# divides the head width, so that per-token groups tile a head
MAX_QUANT_GROUP = 32


def quant_group(head_dim: int) -> int:
    """Numbers per scale and zero point: the largest power of two up to MAX_QUANT_GROUP that divides head_dim."""
    return math.gcd(head_dim, MAX_QUANT_GROUP)


class Quantised(Kind):
    def design(self, settings: Settings) -> Design:
        s = settings
        return Design(
            self,
            AttentionConfig("gqa", d_model=s.d_model, n_heads=s.heads, n_kv_heads=s.groups),
            # residual 0: every whole group is quantised, so a short trace shows the saving (KIVI keeps 128 exact)
            bits=CacheBits(s.bits, group_size=quant_group(s.head_dim), residual=0),
        )

    def layer_class(self) -> Any:
        return GroupedQueryAttention

    def build(
        self, design: Design, seed: int | None, device: torch.device | str | None, dtype: torch.dtype | None
    ) -> nn.Module:
        config = design.config
        assert isinstance(config, AttentionConfig)  # as design() makes it
        return build_attention(config, seed, device=device, dtype=dtype)

    def new_cache(self, design: Design, layer: Any, batch: int) -> Any:
        b = design.bits
        assert b is not None  # as design() makes it
        return layer.new_cache(batch, bits=b.bits, group_size=b.group_size, residual=b.residual, keys=b.keys)

    def formula_bytes(self, design: Design, tokens: int, batch: int, element: int, new_tokens: int) -> tuple[int, int]:
        """attn_core.quant's closed form (codes, a scale and a zero point per group, the rest exact); a call reads
        what was held before it, and its own new tokens exact (KIVI quantises them after reading)."""
        config, bits = design.config, design.bits
        assert isinstance(config, AttentionConfig)
        assert bits is not None
        held = cache_bytes_formula(tokens, batch, config.n_kv_heads, config.head_dim, element, bits)
        before = cache_bytes_formula(tokens - new_tokens, batch, config.n_kv_heads, config.head_dim, element, bits)
        return held, before + batch * config.cache_elements_per_token * new_tokens * element

    def falls_with(self, design: Design) -> dict[str, int]:
        bits = design.bits
        assert bits is not None
        assert (bits.keys, bits.residual) == ("channel", 0)  # as design() makes it: what `falls` says
        return {"group": bits.group_size, "bits": bits.bits}


QUANTISED = Quantised(
    key="quantised",
    name=N_("Quantised"),
    help=N_("GQA with its cache stored in fewer bits (KIVI)."),
    color="#264653",
    knobs=("bits",),
    falls=N_(
        "its values become {bits}-bit codes as they arrive, its keys per channel {group} tokens at a time: each "
        "time {group} more tokens have arrived, the {group} keys held exact until then become codes too"
    ),
)
