"""How every chart reaches the page: Plotly's toolbar kept visible (PNG export), a caption saying what to notice,
and the chart's numbers as a CSV download, so a teacher can take both away."""
from __future__ import annotations

import csv
import io
from collections.abc import Sequence

import plotly.graph_objects as go
import streamlit as st

PLOTLY_CONFIG = {
    "displayModeBar": True,  # always shown, not only on hover: the camera icon saves a PNG
    "displaylogo": False,
    "toImageButtonOptions": {"format": "png", "scale": 2},
}


def csv_text(rows: Sequence[dict]) -> str:
    """rows (dicts with the same keys) as CSV text."""
    if not rows:
        return ""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def show_chart(fig: go.Figure, *, name: str, rows: Sequence[dict] | str, caption: str) -> None:
    """Draw fig with its caption and a CSV download of rows (the numbers it plots; or their CSV text, when a cached
    chart already wrote it). name keys the widgets."""
    to_image = dict(PLOTLY_CONFIG["toImageButtonOptions"], filename=name)
    st.plotly_chart(fig, config=PLOTLY_CONFIG | {"toImageButtonOptions": to_image}, key=f"chart_{name}")
    left, right = st.columns([6, 1], vertical_alignment="center")
    left.caption(caption)
    right.download_button(
        "CSV", rows if isinstance(rows, str) else csv_text(rows), file_name=f"{name}.csv", mime="text/csv", key=f"csv_{name}", on_click="ignore",
        help="The numbers this chart plots", width="stretch",
    )


def format_bytes(n: float) -> str:
    """Bytes in binary units, as memory is sold and reported (KiB, MiB, GiB)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
