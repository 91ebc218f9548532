"""Every stored design of the lab as one point of one trade-off: perplexity (against the original's on the same
pieces) and cache bytes per token at a context, whatever axis the design cuts. Read from the stored tables:
assets/lab_table.json and heal_table.json (fewer KV heads, a latent), window_table.json and window_heal_table.json
(a window with sinks, local/global layers), cache_bits_table.json (fewer bits), and the combinations in the last two.

The token axis is scored in pieces of 2,048 tokens (window_table.json: a window must cut the piece to matter), the
others in the lab's windows of 512, so each point's perplexity is shown as a multiple of the original's on its own
pieces (11.71 on 2,048, 14.70 on 512): both are stored and both are named on the page."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .stored import TABLE_PATH, healed_rows, load_heal_table, load_table, table_rows

WINDOW_TABLE_PATH = TABLE_PATH.with_name("window_table.json")  # benchmarks/window_sinks.py
WINDOW_HEAL_TABLE_PATH = TABLE_PATH.with_name("window_heal_table.json")  # benchmarks/window_heal.py
CACHE_BITS_TABLE_PATH = TABLE_PATH.with_name("cache_bits_table.json")  # benchmarks/cache_bits.py --out

# The axes, in the legend's order: which dimension of the cache a design cuts.
AXES = ("heads", "latent", "window", "layers", "bits", "combined")


@dataclass(frozen=True)
class AxisPoint:
    """One design: what it is, how it was scored, and what its whole cache holds at each stored context."""

    key: str  # unique over every table (a healed design's key ends in "+healed")
    axis: str  # one of AXES
    perplexity: float
    original_perplexity: float  # the original's on the same pieces
    piece: int  # evaluation pieces' length in tokens
    cache_nbytes: dict[int, int]  # whole model, float32, after that many tokens
    table: str  # the stored table's file name
    healed: bool = False
    spec: dict[str, Any] = field(default_factory=dict)  # what to show: window, sink_tokens, pattern, bits, keys, ...

    @property
    def times_original(self) -> float:
        return self.perplexity / self.original_perplexity

    def bytes_per_token(self, context: int) -> float:
        return self.cache_nbytes[context] / context


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def _contexts(table: dict) -> list[int]:
    return [int(c) for c in table["contexts"]]


def load_points() -> list[AxisPoint]:
    """Every stored design as a point (the tables not measured yet give none)."""
    return axis_points(
        load_table(),
        load_heal_table(),
        _read(WINDOW_TABLE_PATH),
        _read(WINDOW_HEAL_TABLE_PATH),
        _read(CACHE_BITS_TABLE_PATH),
    )


def _lab_points(lab_table: dict, heal_table: dict | None, contexts: list[int]) -> list[AxisPoint]:
    """The lab table's rows (heads and latent), and their healed twins: a cache of per token times tokens."""
    rows = table_rows(lab_table)
    original = next(row for row in rows if row.key == "original")
    lab_piece = lab_table["evaluation"]["window"]

    def linear(per_token: int) -> dict[int, int]:
        return {c: per_token * c for c in contexts}

    points = [
        AxisPoint(
            row.key,
            "heads" if row.variant in ("original", "mha", "gqa") else "latent",
            row.perplexity,
            original.perplexity,
            lab_piece,
            linear(row.cache_bytes_per_token),
            TABLE_PATH.name,
            spec={"variant": row.variant, **row.options},
        )
        for row in rows
    ]
    by_key = {row.key: row for row in rows}
    for key, twin in healed_rows(heal_table).items():
        if key in by_key:
            points.append(
                AxisPoint(
                    key + "+healed",
                    "latent" if by_key[key].variant == "mla" else "heads",
                    twin.perplexity,
                    original.perplexity,
                    lab_piece,
                    linear(twin.cache_bytes_per_token),
                    "heal_table.json",
                    healed=True,
                    spec={"variant": by_key[key].variant, **by_key[key].options},
                )
            )
    return points


def _window_points(window_table: dict, window_heal_table: dict | None, contexts: list[int]) -> list[AxisPoint]:
    """The window table's rows (windows, local and global layers, with bits: combined), and their healed twins."""
    points: list[AxisPoint] = []
    piece = window_table["evaluation"]["window"]
    window_original = next(row for row in window_table["rows"] if row["key"] == "original")
    stored = {row["key"]: row for row in window_table["rows"]}
    for row in window_table["rows"]:
        if row["key"] == "original":
            continue
        spec = {name: row[name] for name in ("window", "sink_tokens", "pattern")}
        if "cache_bits" in row:
            spec |= {"bits": row["cache_bits"]["bits"], "keys": row["cache_bits"]["keys"]}
        axis = "combined" if "cache_bits" in row else "window" if row["pattern"] == "every" else "layers"
        points.append(
            AxisPoint(
                row["key"],
                axis,
                row["perplexity"],
                window_original["perplexity"],
                piece,
                {c: row["cache_nbytes"][str(c)] for c in contexts},
                WINDOW_TABLE_PATH.name,
                spec=spec,
            )
        )
    for row in (window_heal_table or {}).get("rows", []):
        # learned sinks are a logit per head, in the weights: the cache is the unhealed window's
        twin_of = f"w{row['window']}-s{row['sink_tokens']}-{row['pattern']}"
        if twin_of in stored and row["perplexity_original"] == window_original["perplexity"]:
            points.append(
                AxisPoint(
                    row["key"] + "+healed",
                    "window" if row["pattern"] == "every" else "layers",
                    row["perplexity_after"],
                    window_original["perplexity"],
                    piece,
                    {c: stored[twin_of]["cache_nbytes"][str(c)] for c in contexts},
                    WINDOW_HEAL_TABLE_PATH.name,
                    healed=True,
                    spec={name: row[name] for name in ("window", "sink_tokens", "pattern", "learned_sinks")},
                )
            )
    return points


def _bits_points(bits_table: dict, contexts: list[int]) -> list[AxisPoint]:
    """The cache-bits table's quantised rows (of the original: bits; of a conversion: combined)."""
    points: list[AxisPoint] = []
    piece = bits_table["evaluation"]["window"]
    bits_original = next(row for row in bits_table["rows"] if row["key"] == "original")
    for row in bits_table["rows"]:
        if row["key"] == "original" or row.get("bits") is None:
            continue  # the original is the lab table's; a healed source's float row is heal_table.json's
        combined = row["source"] != "original"
        points.append(
            AxisPoint(
                row["key"],
                "combined" if combined else "bits",
                row["perplexity"],
                bits_original["perplexity"],
                piece,
                {c: row["cache_nbytes"][str(c)] for c in contexts},
                CACHE_BITS_TABLE_PATH.name,
                healed=row["source"].endswith("-healed"),
                spec={"source": row["source"], "bits": row["bits"], "keys": row["keys"]},
            )
        )
    return points


def axis_points(
    lab_table: dict,
    heal_table: dict | None,
    window_table: dict | None,
    window_heal_table: dict | None,
    bits_table: dict | None,
) -> list[AxisPoint]:
    """The points of the stored tables at the contexts every table with contexts stores (a lab-table row's cache is
    per token times tokens: it grows with the context). The original appears once, as the lab table's."""
    contexts = sorted(
        set.intersection(*(set(_contexts(t)) for t in (window_table, bits_table) if t is not None))
        if window_table or bits_table
        else {512, 1024, 2048, 4096, 8192}
    )
    points = _lab_points(lab_table, heal_table, contexts)
    if window_table is not None:
        points += _window_points(window_table, window_heal_table, contexts)
    if bits_table is not None:
        points += _bits_points(bits_table, contexts)
    return points


def contexts_of(points: list[AxisPoint]) -> list[int]:
    """The contexts every point's cache is stored at."""
    return sorted(set.intersection(*(set(p.cache_nbytes) for p in points)))


def frontier(points: list[AxisPoint], context: int) -> list[AxisPoint]:
    """The points no other point beats on both counts at this context (a cache as small or smaller and a lower
    perplexity against the original), by growing cache."""
    line: list[AxisPoint] = []
    for point in sorted(points, key=lambda p: (p.bytes_per_token(context), p.times_original)):
        if not line or point.times_original < line[-1].times_original:
            line.append(point)
    return line


def original_point(points: list[AxisPoint]) -> AxisPoint:
    return next(p for p in points if p.key == "original")


@dataclass(frozen=True)
class Budget:
    """What a cache budget allows at a context: the least-hurt design within it, and each axis's best."""

    context: int
    share: float  # of the original's cache
    bytes_per_token: float
    best: AxisPoint | None  # None: no stored design fits
    best_by_axis: dict[str, AxisPoint]  # only the axes with a design that fits


def within_budget(points: list[AxisPoint], context: int, share: float) -> Budget:
    """The designs whose whole cache at `context` tokens is at most `share` of the original's: the least-hurt one
    (lowest perplexity against the original; of equals, the smaller cache) and each axis's."""
    limit = share * original_point(points).bytes_per_token(context)
    fits = sorted(
        (p for p in points if p.bytes_per_token(context) <= limit),
        key=lambda p: (p.times_original, p.bytes_per_token(context)),
    )
    by_axis: dict[str, AxisPoint] = {}
    for point in fits:
        by_axis.setdefault(point.axis, point)
    return Budget(context, share, limit, fits[0] if fits else None, by_axis)
