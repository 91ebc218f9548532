"""The page's tables: what the decode step read from the cache, and how alike the variants' maps are."""

from __future__ import annotations

from attn_core import AttentionConfig
from attn_core.accounting import bytes_per_element
from explorer.probes.heatmaps import Comparison, Skipped


def cache_table(cache_shapes: dict, cfg: AttentionConfig, dtype: str) -> list[dict]:
    """What the decode step read from the cache, from the shapes measured on the real cache after the step."""
    size = bytes_per_element(dtype)
    if cfg.n_kv_heads == 1:
        grouped_reader = "every query head: the one KV head"
    elif cfg.group_size == 1:
        grouped_reader = "query head h reads KV head h, its own"
    else:
        grouped_reader = f"query head h reads KV head ⌊h / {cfg.group_size}⌋"
    readers = {
        "k": grouped_reader,
        "v": grouped_reader,
        "c_kv": "every head, through its absorbed query (W_UK) and output (W_UV)",
        "k_rope": "every head: one rotary key shared by all",
    }
    rows = []
    for name, shape in cache_shapes.items():
        batch, heads, held, width = shape
        rows.append(
            {
                "Cache tensor": name,
                "Shape [batch, heads, tokens, width]": f"[{batch}, {heads}, {held}, {width}]",
                "Numbers per token": heads * width,
                f"Bytes read per step in {dtype}": f"{held * heads * width * size:,}",
                "Read by": readers.get(name, ""),
            }
        )
    return rows


def similarity_table(results: dict[str, Comparison | Skipped], head: int) -> list[dict]:
    """The comparison's numbers, one row per variant, as shown (every row has every column, as text)."""
    table = []
    for variant, r in results.items():
        if isinstance(r, Skipped):
            row = dict.fromkeys(_SIMILARITY_COLUMNS, "—")
            row.update({"Variant": variant.upper(), "Output distance from MHA": "not computed: " + r.reason})
            table.append(row)
            continue
        values = [
            variant.upper(),
            str(r.group_size),
            f"{100 * r.output_distance:.1f} %",
            f"{100 * r.overlap_with_mha[head]:.1f} %",
            f"{100 * float(r.overlap_with_mha.mean()):.1f} %",
            _percent(r.within_group_overlap),
            _percent(r.between_group_overlap),
        ]
        table.append(dict(zip(_SIMILARITY_COLUMNS, values)))
    return [{name.replace("Chosen head", f"Head {head}"): value for name, value in row.items()} for row in table]


_SIMILARITY_COLUMNS = (
    "Variant",
    "Heads per KV group",
    "Output distance from MHA",
    "Chosen head: map overlap with MHA's",
    "Mean map overlap with MHA's",
    "Overlap, heads of one group",
    "Overlap, heads of different groups",
)


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"
