"""What the state kinds (Mamba-2's mixer, MiniMax's lightning attention) share: a decode's reads drawn as the cache
holds them, one fixed-size matrix per head, read and rewritten whole at every step."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .kind import STATE, DecodeReads, Twin


@torch.no_grad()
def state_reads(layer: Any, x: torch.Tensor, twin: Twin) -> DecodeReads:
    """x [1, N, d_model] decoded token by token: one column per head's state matrix, held and read as the cache says
    (what it holds is what the step read), shaped as the cache's state [B, H, rows, columns]."""
    steps = x.shape[1]
    cache = layer.new_cache(1)
    heads, rows, columns = (int(n) for n in cache.state_shape[1:])
    read, held = np.zeros((steps, heads), bool), np.zeros((steps, heads), bool)
    for t in range(steps):
        layer(x[:, t : t + 1], cache=cache)
        twin.call(x[:, t : t + 1])
        held[t] = cache.nbytes > 0
        read[t] = cache.read_nbytes > 0
    return DecodeReads(
        (STATE,) * heads,
        ((0, steps - 1),) * heads,
        read,
        held,
        tuple(twin.held),
        tuple(twin.read),
        twin.dtype_name,
        twin.batch,
        state_shape=(rows, columns),
    )
