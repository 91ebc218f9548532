"""The numbers the KV cache page's step charts plot, as CSV rows (the whole-model figures return their own)."""

from __future__ import annotations

from explorer.probes.kv_cache import DecodeTrace


def cache_size_rows(traces: dict[str, DecodeTrace]) -> list[dict]:
    return [
        {
            "cache": name,
            "step": s,
            "tokens_held": trace.tokens_held[s],
            "bytes_measured": trace.nbytes[s],
            "bytes_formula": trace.formula_nbytes[s],
            "bytes_preallocated": trace.capacity_nbytes[s],
            "max_abs_diff_vs_full_recompute": trace.max_abs_diff[s],
        }
        for name, trace in traces.items()
        for s in range(len(trace.nbytes))
    ]
