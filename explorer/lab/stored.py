"""The lab's stored tables, as rows: every conversion measured by benchmarks/lab_table.py (assets/lab_table.json) and
the points benchmarks/heal.py healed (assets/heal_table.json), and the Pareto frontier of cache against perplexity."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

TABLE_PATH = Path(__file__).resolve().parents[2] / "assets" / "lab_table.json"
HEAL_TABLE_PATH = TABLE_PATH.with_name("heal_table.json")  # written by benchmarks/heal.py


def load_table(path: Path = TABLE_PATH) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class LabRow:
    """One model of the stored table: a conversion (or the original) and what it was measured to cost."""

    key: str
    label: str
    variant: str  # "original", "mha", "gqa" or "mla"
    options: dict[str, Any]  # convert_attention's options
    attention: dict[str, Any]  # the converted layers' AttentionConfig fields
    settings: str  # variant and options, as text
    cache_bytes_per_token: int  # whole model, float32: the model's own cache as it runs
    perplexity: float
    seconds: dict[str, float]  # "convert" and "evaluate"
    n_layers: int
    kept: dict[str, float]  # share of energy each approximation kept (empty when exact)


def table_rows(table: dict) -> list[LabRow]:
    """One row per model, cache bytes in float32 as the table stores them (the dtype the model runs and caches in:
    the same bytes the trained page measures)."""
    return [
        LabRow(
            key=row["key"],
            label=row["label"],
            variant=row["variant"],
            options=row.get("options") or {},
            attention=row["attention"],
            settings=settings_text(row["variant"], row.get("options") or {}),
            cache_bytes_per_token=row["cache_bytes_per_token"],
            perplexity=row["perplexity"],
            seconds=row["seconds"],
            n_layers=row["cache_bytes_per_token"] // row["cache_bytes_per_token_per_layer"],
            kept=row.get("kept") or {},
        )
        for row in table["rows"]
    ]


@dataclass(frozen=True)
class HealedRow:
    """A lab point after benchmarks/heal.py healed it: the same cache, a new perplexity, and what healing cost."""

    key: str
    cache_bytes_per_token: int
    perplexity_before: float
    perplexity: float
    gap_closed: float  # share of the log-perplexity gap to the original
    layerwise_steps: int  # heal(): each layer to the original's attention output
    end_to_end_steps: int  # heal_end_to_end(): the whole model to the original's next-token distribution
    tokens: int  # tokens fed over all steps
    text_tokens: int  # distinct training tokens
    cpu_seconds: float  # of training, all its threads together: the same on a busy machine as on an idle one


def load_heal_table(path: Path = HEAL_TABLE_PATH) -> dict | None:
    """The stored healing table, or None where it was never measured."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def healed_rows(table: dict | None) -> dict[str, HealedRow]:
    if not table:
        return {}
    return {
        row["key"]: HealedRow(
            key=row["key"],
            cache_bytes_per_token=row["cache_bytes_per_token"],
            perplexity_before=row["perplexity_before"],
            perplexity=row["perplexity_after"],
            gap_closed=row["gap_closed"],
            layerwise_steps=row["recipe"]["stages"]["layerwise"]["steps"],
            end_to_end_steps=row["recipe"]["stages"].get("end_to_end", {}).get("steps", 0),
            tokens=row["recipe"]["tokens_seen"],
            text_tokens=row["recipe"]["text_tokens"],
            cpu_seconds=row["seconds"]["train_cpu"],
        )
        for row in table["rows"]
    }


def settings_text(variant: str, options: dict[str, Any]) -> str:
    if not options:
        return variant
    return variant + " " + ", ".join(f"{name}={value}" for name, value in options.items())


def pareto_frontier(rows: list[LabRow]) -> list[LabRow]:
    """The rows for which no other row has a cache as small or smaller and a lower perplexity, by growing cache
    (of two rows with the same cache, only the lower perplexity is on it)."""
    frontier: list[LabRow] = []
    for row in sorted(rows, key=lambda r: (r.cache_bytes_per_token, r.perplexity)):
        if not frontier or row.perplexity < frontier[-1].perplexity:
            frontier.append(row)
    return frontier


def healed_as_rows(rows: list[LabRow], healed: dict[str, HealedRow]) -> list[LabRow]:
    """The original and each healed conversion as rows of their own (a healed row is its conversion at its healed
    perplexity), so the frontier and the findings of what healing reached are computed as the conversions' are."""
    return [
        replace(row, perplexity=healed[row.key].perplexity) if row.key in healed else row
        for row in rows
        if row.key in healed or row.key == "original"
    ]
