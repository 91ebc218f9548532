"""MiniMax's lightning attention (attn_core.LightningAttention), MiniMax-Text-01's and M1's linear layers: per head a
decayed state K^T V of D x D in the layer's dtype, whatever the length. Its place in MiniMax-Text-01's 80 layers (the
first, whose heads forget fastest) sets the decay rates, not the cache; fixed here and said in a page's caption."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from attn_core import LightningAttention, LightningConfig
from attn_core.hf import DESIGNS
from explorer.messages import N_

from .kind import DecodeReads, Design, Kind, Twin
from .states import state_reads

if TYPE_CHECKING:
    from explorer.settings import Settings

# MiniMax-Text-01's layer count, and the layer shown (its slopes: the fastest decay of the model)
LAYERS, LAYER = 80, 0


class Lightning(Kind):
    def design(self, settings: Settings) -> Design:
        s = settings
        config = LightningConfig(
            d_model=s.d_model, n_heads=s.heads, head_dim=s.head_dim, layer_idx=LAYER, n_layers=LAYERS
        )
        return Design(self, config)

    def layer_class(self) -> Any:
        return LightningAttention

    def decode_reads(self, design: Design, layer: Any, x: torch.Tensor, twin: Twin) -> DecodeReads:
        return state_reads(layer, x, twin)

    def formula_bytes(self, design: Design, tokens: int, batch: int, element: int, new_tokens: int) -> tuple[int, int]:
        """attn_core.lightning's closed form: each head's D x D state in the layer's dtype, read whole by every
        step."""
        config = design.config
        assert isinstance(config, LightningConfig)
        held = DESIGNS[LightningConfig].cache_bytes(config, tokens, batch, element)
        return held, held


LIGHTNING = Lightning(
    key="lightning",
    name=N_("Lightning state"),
    help=N_("Linear attention with a decayed D × D state per head (MiniMax-Text-01 and M1's lightning layers)."),
    color="#7a5195",
    knobs=(),
    decodes=True,
)
