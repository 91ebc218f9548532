"""The four variants side by side: sizes and costs measured from real modules."""

from __future__ import annotations

from dataclasses import dataclass

from attn_core import AttentionConfig, ConfigWarning, decode_flops_per_token, kv_cache_bytes, parameter_count

from .measured import measure_cache


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
