"""The numbers the lab's Pareto chart plots, as CSV rows."""

from __future__ import annotations

from .stored import HealedRow, LabRow, healed_as_rows, pareto_frontier


def pareto_rows(rows: list[LabRow], context: int) -> list[dict]:
    """Every stored model: its cache per token and at `context` tokens, its perplexity, and whether it is on the
    frontier."""
    frontier = pareto_frontier(rows)
    return [
        {
            "model": r.label,
            "settings": r.settings,
            "perplexity": round(r.perplexity, 4),
            "cache_bytes_per_token_float32": r.cache_bytes_per_token,
            f"cache_bytes_at_{context}_tokens": r.cache_bytes_per_token * context,
            "on_frontier": r in frontier,
        }
        for r in rows
    ]


def healed_csv_rows(rows: list[LabRow], healed: dict[str, HealedRow]) -> list[dict]:
    """The healed view's points: the original and each healed conversion, with what healing cost."""
    points = healed_as_rows(rows, healed)
    frontier = pareto_frontier(points)
    return [
        {
            "model": r.label,
            "healed": r.key in healed,
            "perplexity": round(r.perplexity, 4),
            "cache_bytes_per_token_float32": r.cache_bytes_per_token,
            "on_frontier": r in frontier,
            "layerwise_steps": healed[r.key].layerwise_steps if r.key in healed else None,
            "end_to_end_steps": healed[r.key].end_to_end_steps if r.key in healed else None,
            "training_cpu_seconds": healed[r.key].cpu_seconds if r.key in healed else None,
        }
        for r in points
    ]
