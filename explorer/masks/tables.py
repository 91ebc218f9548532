"""The page's tables, CSV rows and check lines."""

from __future__ import annotations

import numpy as np

from explorer.i18n import _
from explorer.probes import FLOAT32_TOLERANCE


def csv_rows(panels: list[dict]) -> list[dict]:
    """Every cell of every panel: panel, query position, key position, value (column names are the CSV's
    identifiers, the same in both languages; the panel's title is in the page's)."""
    rows = []
    for panel in panels:
        z = np.asarray(panel["z"])
        for i, y in enumerate(panel["y"]):
            for j, x in enumerate(panel["x"]):
                rows.append({"panel": panel["title"], "query": y, "key": x, "value": float(z[i, j])})
    return rows


def mask_table(key_padding_mask: np.ndarray) -> dict[str, list[str]]:
    """key_padding_mask [2, S] as columns for st.dataframe: which keys are real and which padding as ranges first (the
    point, seen without scrolling on a phone, where a dozen key columns do not fit), then key by key, ✓ real, · pad."""

    def span(positions: np.ndarray) -> str:
        if not len(positions):
            return "—"
        first, last = int(positions[0]), int(positions[-1])
        return str(first) if first == last else f"{first}…{last}"

    table = {
        _("sequence"): [_("long"), _("short")],
        _("real keys"): [span(np.flatnonzero(row)) for row in key_padding_mask],
        _("padded keys"): [span(np.flatnonzero(~row)) for row in key_padding_mask],
    }
    for j in range(key_padding_mask.shape[1]):
        table[str(j)] = ["✓" if flag else "·" for flag in key_padding_mask[:, j]]
    return table


def check_line(name: str, value: float, tolerance: float = FLOAT32_TOLERANCE) -> str:
    """One line of a check: ✓ or ✗, what was compared, the largest difference and the tolerance."""
    return _(
        "{mark} {name}: max |difference| = {value} (tolerance {tolerance}, float32)",
        mark="✓" if value <= tolerance else "✗",
        name=name,
        value=f"{value:.2e}",
        tolerance=f"{tolerance:.0e}",
    )
