"""Projections whose weights are row blocks of one matrix in one storage, so that one matrix product computes them all: a decoder's
q, k and v (or an MLP's gate and up) read the same input, and one call over the stacked rows costs the same arithmetic
as three, with one call's overhead (token-by-token decoding is many small products).

The layers keep their own parameters (q_proj, k_proj, v_proj, ...): the stacked weight is a view over them, found when
they happen to be laid out that way (pack_rows does it, once, as the trained model's converted weights are), never a
copy that could go stale.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def pack_rows(*parts: torch.Tensor, column_major: bool = False) -> list[torch.Tensor]:
    """Copies of parts ([rows_i, cols] each, same cols) in one new storage, end to end in order: views of one
    [sum rows_i, cols] tensor, which packed_rows then finds. Row-major by default; column_major stores that tensor
    column by column (a one-token product with a matrix of more rows than columns streams faster so, see
    attn_core.pretrained.checkpoint.decode_layout)."""
    if column_major:
        packed = torch.cat([part.detach().t() for part in parts], dim=1).contiguous().t()
    else:
        packed = torch.cat([part.detach() for part in parts])
    return list(packed.split([part.shape[0] for part in parts]))


def packed_rows(*parts: torch.Tensor | None) -> torch.Tensor | None:
    """parts ([rows_i, ...] each) as one [sum rows_i, ...] tensor, a view with no copy, when they are consecutive row
    blocks of one row-major tensor (any dims) or one column-major matrix, in one storage; None when they are not (or a
    part is None, or autograd tracks them: a view past a parameter's own rows has no gradient to give back)."""
    present = [part for part in parts if part is not None]
    if not present or len(present) != len(parts):
        return None
    if torch.is_grad_enabled() and any(part.requires_grad for part in present):
        return None
    first, rows = present[0], sum(part.shape[0] for part in present)
    rest = first.shape[1:]
    if first.is_contiguous():
        stride = _row_major_strides((rows, *rest))  # part i starts where part i-1's rows end
    elif first.dim() == 2 and first.stride() == (1, rows):
        stride = (1, rows)  # column-major: each column holds every part's rows, part after part
    else:
        return None
    offset = first.storage_offset()
    storage = first.untyped_storage().data_ptr()
    for part in present:
        if (
            part.untyped_storage().data_ptr() != storage
            or part.storage_offset() != offset
            or part.dtype != first.dtype
            or part.shape[1:] != rest
            or any(
                size > 1 and step != want for size, step, want in zip(part.shape, part.stride(), stride, strict=True)
            )
        ):
            return None
        offset += part.shape[0] * stride[0]
    return first.as_strided((rows, *rest), stride)


# Output columns per panel when a column-major weight meets many input rows (see linear): MKL's product over the
# whole width is slower there than the row-major layout's, and as fast in panels of 1024-4096 columns
# (benchmarks/MEASUREMENTS.md).
PANEL_COLUMNS = 2048


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """F.linear(x, weight, bias), the same numbers, faster for a column-major weight (stored so for one-token
    products, attn_core.pretrained.checkpoint) with more than PANEL_COLUMNS outputs and several input rows: the
    product is written in panels of outputs, each small enough to stay in cache while it is computed."""
    rows = x.numel() // x.shape[-1]
    outputs = weight.shape[0]
    tracked = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, weight, bias))
    if rows == 1 or outputs <= PANEL_COLUMNS or weight.stride() != (1, outputs) or tracked:  # out= has no autograd
        return F.linear(x, weight, bias)
    out = x.new_empty(*x.shape[:-1], outputs)
    flat_x, flat_out, columns = x.reshape(rows, x.shape[-1]), out.view(rows, outputs), weight.t()
    panels = -(-outputs // PANEL_COLUMNS)
    width = -(-outputs // panels)  # even panels: 3072 outputs as 2 x 1536, not 2048 + 1024
    for start in range(0, outputs, width):
        stop = min(start + width, outputs)
        if bias is None:
            torch.mm(flat_x, columns[:, start:stop], out=flat_out[:, start:stop])
        else:
            torch.addmm(bias[start:stop], flat_x, columns[:, start:stop], out=flat_out[:, start:stop])
    return out


def _row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


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
