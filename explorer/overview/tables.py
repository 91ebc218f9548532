"""The overview's table: one row per variant, numbers with units, in this run's language."""

from __future__ import annotations

from explorer.i18n import _, fmt, format_bytes, format_flops, n_
from explorer.probes.overview import VariantRow


def summary_table(rows: list[VariantRow]) -> list[dict]:
    """One display row per variant, numbers with units; the check mark says the measured cache equals the formula."""
    table = []
    for row in rows:
        agrees = row.cache_bytes_measured == row.cache_bytes_formula
        # The columns that carry the point come first, so a projector or a phone shows them without scrolling. No
        # name column: the names are under "What each variant trades", and the table fits a projector's width.
        table.append(
            {
                _("Variant"): row.variant.upper(),
                _("Agree"): "✓" if agrees else "✗",
                _("vs MHA"): f"{row.cache_ratio_to_mha:.3g}×",
                _("Cache, measured"): format_bytes(row.cache_bytes_measured),
                _("Cache, formula"): format_bytes(row.cache_bytes_formula),
                _("FLOPs per decoded token"): format_flops(row.decode_flops_per_token),
                _("Cache per token"): n_(
                    "{n} number = {size}",
                    "{n} numbers = {size}",
                    row.cache_elements_per_token,
                    size=format_bytes(row.cache_bytes_per_token),
                ),
                _("Parameters"): fmt(row.parameters),
            }
        )
    return table
