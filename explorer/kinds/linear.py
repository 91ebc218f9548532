"""Gated DeltaNet (attn_core.GatedDeltaNet), Qwen3-Next's linear layers: a fixed state of d_k x D per value head
instead of a cache. g key heads and h value heads of head_dim, and Qwen3-Next's conv kernel, fixed here and said in a
page's caption."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from attn_core import GatedDeltaNet, GatedDeltaNetConfig
from attn_core.hf import DESIGNS
from explorer.messages import N_

from .kind import STATE, DecodeReads, Design, Kind, Twin

if TYPE_CHECKING:
    from explorer.settings import Settings

# The conv kernel of Qwen3-Next's linear layers (linear_conv_kernel_dim)
CONV_KERNEL = 4


@torch.no_grad()
def linear_reads(layer: GatedDeltaNet, x: torch.Tensor, twin: Twin) -> DecodeReads:
    """A linear layer decoded token by token: one column, its state, held and read whole at every step (the cache
    says so: what it holds is what the step read)."""
    steps = x.shape[1]
    cache = layer.new_cache(1)
    read, held = np.zeros((steps, 1), bool), np.zeros((steps, 1), bool)
    for t in range(steps):
        layer(x[:, t : t + 1], cache=cache)
        twin.call(x[:, t : t + 1])
        held[t, 0] = cache.nbytes > 0
        read[t, 0] = cache.read_nbytes > 0
    return DecodeReads(
        (STATE,), ((0, steps - 1),), read, held, tuple(twin.held), tuple(twin.read), twin.dtype_name, twin.batch
    )


class Linear(Kind):
    def design(self, settings: Settings) -> Design:
        s = settings
        return Design(
            self,
            GatedDeltaNetConfig(
                d_model=s.d_model,
                n_key_heads=s.groups,
                n_value_heads=s.heads,
                key_head_dim=s.state_dim,
                value_head_dim=s.head_dim,
                conv_kernel=CONV_KERNEL,
            ),
        )

    def layer_class(self) -> Any:
        return GatedDeltaNet

    def decode_reads(self, design: Design, layer: Any, x: torch.Tensor, twin: Twin) -> DecodeReads:
        return linear_reads(layer, x, twin)

    def formula_bytes(self, design: Design, tokens: int, batch: int, element: int, new_tokens: int) -> tuple[int, int]:
        """attn_core.linear's closed form: a float32 state per value head and the convolution's last K − 1 inputs,
        read whole by every step."""
        config = design.config
        assert isinstance(config, GatedDeltaNetConfig)
        held = DESIGNS[GatedDeltaNetConfig].cache_bytes(config, tokens, batch, element)
        return held, held


LINEAR = Linear(
    key="linear",
    name=N_("Linear state"),
    help=N_("A fixed state instead of a cache (Gated DeltaNet, Qwen3-Next's linear layers)."),
    color="#e09f3e",
    knobs=("state_dim",),
    decodes=True,
)
