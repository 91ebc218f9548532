"""The four variants side by side: sizes and costs measured from real modules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch.utils.flop_counter import FlopCounterMode

from attn_core import (
    AttentionConfig,
    ConfigWarning,
    as_dtype,
    bytes_per_element,
    decode_flops_per_token,
    kv_cache_bytes,
    parameter_count,
)

from .measured import measure_cache

if TYPE_CHECKING:
    from explorer.kinds.kind import Design


@dataclass(frozen=True)
class VariantRow:
    """One variant at the settings: sizes and costs, measured from its real layer and by closed form."""

    variant: str
    parameters: int  # counted on the built layer
    parameters_formula: int
    cache_elements_per_token: int  # numbers one token leaves in the cache
    cache_bytes_per_token: int
    cache_bytes_measured: int  # the cache's tensors after a prefill of the settings' tokens
    cache_bytes_formula: int
    cache_shapes: dict[str, tuple[int, ...]]
    cache_ratio_to_mha: float
    decode_flops_per_token: int
    warnings: list[ConfigWarning]  # values: explorer.overview words them in the run's language


def compare_variants(configs: dict[str, AttentionConfig], *, batch: int, seq_len: int, dtype: str) -> list[VariantRow]:
    """One row per variant: parameters, cache bytes (measured and by formula), FLOPs per decoded token, ratios to MHA.

    The MHA reference is built from the first config's width and heads, so ratios exist even when MHA is not shown.
    """
    first = next(iter(configs.values()))
    mha = AttentionConfig("mha", d_model=first.d_model, n_heads=first.n_heads)
    mha_bytes = kv_cache_bytes(mha, batch, seq_len, dtype)
    rows = []
    for variant, cfg in configs.items():
        measured = measure_cache(cfg, batch=batch, tokens=seq_len, dtype=dtype)
        formula = kv_cache_bytes(cfg, batch, seq_len, dtype)
        rows.append(
            VariantRow(
                variant=variant,
                parameters=measured.parameters,
                parameters_formula=parameter_count(cfg),
                cache_elements_per_token=cfg.cache_elements_per_token,
                cache_bytes_per_token=kv_cache_bytes(cfg, 1, 1, dtype),
                cache_bytes_measured=measured.nbytes,
                cache_bytes_formula=formula,
                cache_shapes=measured.shapes,
                cache_ratio_to_mha=formula / mha_bytes,
                decode_flops_per_token=decode_flops_per_token(cfg, seq_len),
                warnings=cfg.warnings(),
            )
        )
    return rows


# --- the designs after MLA beside them ----------------------------------------------------------------------------
@dataclass(frozen=True)
class DesignRow:
    """One design after MLA at the settings, measured from its real layer on the meta device: what its cache holds
    after the settings' tokens, what the next decoding step reads and its FLOPs, each beside its closed form."""

    design: str
    parameters: int
    cache_bytes_measured: int  # after a prefill of seq_len tokens, batch sequences
    cache_bytes_formula: int
    cache_bytes_per_token: float  # one sequence: held / seq_len
    read_bytes_measured: int  # by the decoding step of token seq_len + 1 (batch sequences)
    read_bytes_formula: int
    decode_flops_per_token: int  # that step's matrix products, counted by torch's FlopCounterMode, per sequence
    cache_ratio_to_mha: float


@torch.inference_mode()
def compare_designs(
    designs: dict[str, Design], mha: AttentionConfig, *, batch: int, seq_len: int, dtype: str
) -> list[DesignRow]:
    """One row per design (its cache against mha's, the MHA layer of the same width and heads): the real layer prefilled with seq_len tokens on the meta device (shapes and dtypes exact,
    no memory), then one decoding step, whose matrix products FlopCounterMode counts (2 FLOPs a multiply-add, as
    attn_core.decode_flops_per_token counts the variants'; norms, RoPE and softmax left out as there)."""
    element = bytes_per_element(dtype)
    rows = []
    for name, design in designs.items():
        layer = design.build(device="meta", dtype=as_dtype(dtype))
        cache = design.new_cache(layer, batch)
        d_model = int(design.config.d_model)
        layer(torch.empty(batch, seq_len, d_model, device="meta", dtype=as_dtype(dtype)), cache=cache)
        held = cache.nbytes
        with FlopCounterMode(display=False) as counter:
            layer(torch.empty(batch, 1, d_model, device="meta", dtype=as_dtype(dtype)), cache=cache)
        rows.append(
            DesignRow(
                design=name,
                parameters=sum(p.numel() for p in layer.parameters()),
                cache_bytes_measured=held,
                cache_bytes_formula=design.kind.formula_bytes(design, seq_len, batch, element, seq_len)[0],
                cache_bytes_per_token=held / (seq_len * batch),
                read_bytes_measured=cache.read_nbytes,
                read_bytes_formula=design.kind.formula_bytes(design, seq_len + 1, batch, element, 1)[1],
                decode_flops_per_token=counter.get_total_flops() // batch,
                cache_ratio_to_mha=held / kv_cache_bytes(mha, batch, seq_len, dtype),
            )
        )
    return rows
