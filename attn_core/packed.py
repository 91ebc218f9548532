"""Projections whose weights lie end to end in one storage, so that one matrix product computes them all: a decoder's
q, k and v (or an MLP's gate and up) read the same input, and one call over the stacked rows costs the same arithmetic
as three, with one call's overhead (token-by-token decoding is many small products).

The layers keep their own parameters (q_proj, k_proj, v_proj, ...): the stacked weight is a view over them, found when
they happen to be laid out that way (pack_rows does it, once, as the trained model's converted weights are), never a
copy that could go stale.
"""

from __future__ import annotations

import torch


def pack_rows(*parts: torch.Tensor) -> list[torch.Tensor]:
    """Copies of parts ([rows_i, ...] each, same trailing shape) in one new storage, end to end in order: views of
    one [sum rows_i, ...] tensor, which packed_rows then finds."""
    packed = torch.cat([part.detach() for part in parts])
    return list(packed.split([part.shape[0] for part in parts]))


def packed_rows(*parts: torch.Tensor | None) -> torch.Tensor | None:
    """parts ([rows_i, ...] each) as one [sum rows_i, ...] tensor, a view with no copy, when they lie end to end in
    one storage; None when they do not (or a part is None, or autograd tracks them: a view past a parameter's own
    rows has no gradient to give back)."""
    first = parts[0]
    if first is None:
        return None
    offset = first.storage_offset()
    storage = first.untyped_storage().data_ptr()
    for part in parts:
        if (
            part is None
            or part.untyped_storage().data_ptr() != storage
            or part.storage_offset() != offset
            or part.dtype != first.dtype
            or part.shape[1:] != first.shape[1:]
            or not part.is_contiguous()
        ):
            return None
        offset += part.numel()
    if torch.is_grad_enabled() and any(part is not None and part.requires_grad for part in parts):
        return None
    rows = sum(part.shape[0] for part in parts if part is not None)
    return first.as_strided((rows, *first.shape[1:]), first.stride())


class PackedRows:
    """packed_rows for a module's own parts, asked at every call (every token, when decoding): checked again only when
    a part is another tensor than last time, has moved, or the autograd mode changed."""

    def __init__(self) -> None:
        self._key: tuple[object, ...] = ()
        self._packed: torch.Tensor | None = None

    def __call__(self, *parts: torch.Tensor | None) -> torch.Tensor | None:
        key = (
            torch.is_grad_enabled(),
            torch.is_inference_mode_enabled(),  # a view made in inference mode is unusable outside it
            *((part.data_ptr(), part.shape, part.requires_grad) if part is not None else None for part in parts),
        )
        if key != self._key:
            self._key, self._packed = key, packed_rows(*parts)
        return self._packed
