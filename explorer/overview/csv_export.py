"""The overview's plotted numbers as CSV rows."""

from __future__ import annotations

from explorer.probes.overview import VariantRow


def csv_rows(rows: list[VariantRow]) -> list[dict]:
    """The plotted numbers in plain columns for the CSV download."""
    keys = (
        "variant",
        "parameters",
        "cache_elements_per_token",
        "cache_bytes_per_token",
        "cache_bytes_measured",
        "cache_bytes_formula",
        "cache_ratio_to_mha",
        "decode_flops_per_token",
    )
    return [{key: getattr(row, key) for key in keys} for row in rows]
