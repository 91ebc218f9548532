"""Forward passes run for the app, returning plain numbers and numpy arrays (no UI code).

One module per question the app asks; each function is deterministic in its arguments, so the app can cache it by
settings and a link reproduces it exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# Largest |difference| between two float32 computations of the same numbers (cached vs full pass, padded vs alone,
# absorbed vs naive) that still counts as agreement: float32 round-off on these layers stays orders of magnitude below.
FLOAT32_TOLERANCE = 1e-5


def with_weights(result: tuple[torch.Tensor, torch.Tensor | None]) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, weights) of a layer called with return_weights=True, which always returns its weights: typed so."""
    out, weights = result
    if weights is None:
        raise TypeError("a layer called with return_weights=True returned no weights")
    return out, weights
