"""The numbers each of the trained model page's charts plots, as CSV (written when its button is clicked)."""

from __future__ import annotations

from explorer.charts import csv_text
from explorer.probes.trained import TrainedAttention, WritingTrace, pooled_maps

from .figures import OVERVIEW_SIDE


def overview_csv(result: TrainedAttention) -> str:
    pooled = pooled_maps(result.maps, OVERVIEW_SIDE)
    layers, heads, side = pooled.shape[:3]
    return csv_text(
        [
            {"layer": layer, "head": head, "kv_head": head // result.group_size, "query_block": q, "key_block": k}
            | {"mean_weight": f"{pooled[layer, head, q, k]:.5f}"}
            for layer in range(layers)
            for head in range(heads)
            for q in range(side)
            for k in range(side)
        ]
    )


def shares_csv(result: TrainedAttention) -> str:
    layers, heads = result.first_token_share.shape
    return csv_text(
        [
            {
                "layer": layer,
                "head": head,
                "kv_head": head // result.group_size,
                "first_token_share": f"{result.first_token_share[layer, head]:.5f}",
                "previous_token_share": f"{result.previous_token_share[layer, head]:.5f}",
            }
            for layer in range(layers)
            for head in range(heads)
        ]
    )


def head_csv(result: TrainedAttention, layer: int, head: int) -> str:
    weights = result.maps[layer, head]
    return csv_text(
        [
            {"query": q, "query_token": result.labels[q], "key": k, "key_token": result.labels[k]}
            | {"weight": f"{float(weights[q, k]):.5f}"}
            for q in range(len(result.ids))
            for k in range(q + 1)
        ]
    )


def group_rows_csv(result: TrainedAttention, layer: int, head: int, query: int) -> str:
    group = result.group_size
    kv = head // group
    return csv_text(
        [
            {
                "head": h,
                "key": k,
                "key_token": result.labels[k],
                "weight": f"{float(result.maps[layer, h, query, k]):.5f}",
            }
            for h in range(kv * group, kv * group + group)
            for k in range(query + 1)
        ]
    )


def writing_csv(trace: WritingTrace) -> str:
    return csv_text(
        [
            {
                "step": index,
                "token": step.label,
                "cached_tokens": step.cached_tokens,
                "measured_bytes": step.cache_bytes,
                "formula_bytes": step.formula_bytes,
                "mha_bytes": trace.per_token_bytes["mha"] * step.cached_tokens,
                "mqa_bytes": trace.per_token_bytes["mqa"] * step.cached_tokens,
            }
            for index, step in enumerate(trace.steps, start=1)
        ]
    )
