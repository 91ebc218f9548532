"""The page's tables: what the decode step read from the cache, and how alike the variants' maps are."""

from __future__ import annotations

from attn_core import AttentionConfig, bytes_per_element
from explorer.i18n import N_, _, fmt
from explorer.probes.heatmaps import Comparison, Skipped

# The cached tensors' readers (MLA's two; the grouped layers' k and v are worded from the layer's groups).
LATENT_READERS = {
    "c_kv": N_("every head, through its absorbed query (Wᵁᴷ) and output (Wᵁⱽ)"),
    "k_rope": N_("every head: one rotary key shared by all"),
}


def cache_table(cache_shapes: dict[str, tuple[int, ...]], cfg: AttentionConfig, dtype: str) -> list[dict]:
    """What the decode step read from the cache, from the shapes measured on the real cache after the step."""
    size = bytes_per_element(dtype)
    if cfg.n_kv_heads == 1:
        grouped_reader = _("every query head: the one KV head")
    elif cfg.group_size == 1:
        grouped_reader = _("query head h reads KV head h, its own")
    else:
        grouped_reader = _("query head h reads KV head ⌊h / {size}⌋", size=cfg.group_size)
    readers = {"k": grouped_reader, "v": grouped_reader} | {name: _(text) for name, text in LATENT_READERS.items()}
    rows = []
    for name, shape in cache_shapes.items():
        batch, heads, held, width = shape
        rows.append(
            {
                _("Cache tensor"): name,
                _("Shape [batch, heads, tokens, width]"): f"[{batch}, {heads}, {held}, {width}]",
                _("Numbers per token"): heads * width,
                _("Bytes read per step in {dtype}", dtype=dtype): fmt(held * heads * width * size),
                _("Read by"): readers.get(name, ""),
            }
        )
    return rows


def similarity_table(results: dict[str, Comparison | Skipped], head: int) -> list[dict]:
    """The comparison's numbers, one row per variant, as shown (every row has every column, as text)."""
    columns = [_(name, head=head) if "{head}" in name else _(name) for name in _SIMILARITY_COLUMNS]
    table = []
    for variant, r in results.items():
        if isinstance(r, Skipped):
            row = dict.fromkeys(columns, "—")
            row[columns[0]] = variant.upper()
            row[columns[2]] = _(
                "not computed: making MLA from MHA takes the singular vectors of a {rows} × {cols} matrix, too slow "
                "here above d_model {limit}",
                rows=2 * r.d_model,
                cols=r.d_model,
                limit=r.limit,
            )
            table.append(row)
            continue
        values = [
            variant.upper(),
            fmt(r.group_size),
            _percent(r.output_distance),
            _percent(float(r.overlap_with_mha[head])),
            _percent(float(r.overlap_with_mha.mean())),
            _percent(r.within_group_overlap),
            _percent(r.between_group_overlap),
        ]
        table.append(dict(zip(columns, values, strict=True)))
    return table


_SIMILARITY_COLUMNS = (
    N_("Variant"),
    N_("Heads per KV group"),
    N_("Output distance from MHA"),
    N_("Head {head}: map overlap with MHA's"),
    N_("Mean map overlap with MHA's"),
    N_("Overlap, heads of one group"),
    N_("Overlap, heads of different groups"),
)


def _percent(value: float | None) -> str:
    return "—" if value is None else _("{share} %", share=fmt(100 * value, 1))
