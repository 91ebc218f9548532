"""The numbers the lab's Pareto chart plots, as CSV rows."""

from __future__ import annotations

from .stored import LabRow, pareto_frontier


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
