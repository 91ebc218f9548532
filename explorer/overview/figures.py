"""The overview's two bar charts, as plain dicts: the cache of one layer and the work to decode one token, a bar per
variant."""

from __future__ import annotations

from collections.abc import Sequence

from explorer.charts import FLOP_UNITS, VARIANT_COLORS, unit_axis
from explorer.i18n import _, format_bytes, format_flops, n_
from explorer.probes.overview import VariantRow


def cache_bar_figure(rows: list[VariantRow], seq_len: int, batch: int, dtype: str) -> dict:
    values = [row.cache_bytes_measured for row in rows]
    return _variant_bars(
        rows,
        values,
        labels=[f"{format_bytes(v)}<br>{row.cache_ratio_to_mha:.3g}× MHA" for v, row in zip(values, rows, strict=True)],
        unit=_("bytes"),
        title=_(
            "KV cache of one layer: {tokens} × batch {batch} in {dtype}",
            tokens=n_("{n} token", "{n} tokens", seq_len),
            batch=batch,
            dtype=dtype,
        ),
        axis_title=_("cache held"),
    )


def flops_bar_figure(rows: list[VariantRow], seq_len: int) -> dict:
    values = [row.decode_flops_per_token for row in rows]
    return _variant_bars(
        rows,
        values,
        labels=[format_flops(v) for v in values],
        unit="FLOPs",
        title=n_(
            "Work to decode one token against {n} cached token",
            "Work to decode one token against {n} cached tokens",
            seq_len,
        ),
        axis_title=_("work (2 FLOP per multiply-add)"),
        units=FLOP_UNITS,
    )


# How far the value axis reaches past the longest bar: its label is drawn beside the bar, and at 1024 px a chart's
# plot is ~200 px wide, so the longest bar takes ~3/5 of it and its ~65 px label the rest.
LABEL_ROOM = 1.7
VALUE_LABEL_PX = 12


def _variant_bars(
    rows: list[VariantRow],
    values: list,
    *,
    labels: list[str],
    unit: str,
    title: str,
    axis_title: str,
    units: Sequence[tuple[str, float]] | None = None,
) -> dict:
    """One horizontal bar per variant in its colour (MHA on top), labelled beside its end, with room for the labels.
    The value axis is ticked in one unit of `units` (bytes in KiB/MiB/GiB by default), never Plotly's SI letters.

    Horizontal: a label beside a bar has the whole row's height and never meets its neighbours' labels. Above
    vertical bars at 1024 px (~45 px a bar) Plotly shrank the labels to ~6 px to fit their bars, and at a size that
    can be read they ran into each other (issue #28 item 9).

    Built as the dict go.Figure(...).to_dict() gives (show_chart sends it as it is): validating two bar figures into
    Plotly's object tree cost a share of every rerun, before the first chart could leave the server.
    """
    bar = {
        "type": "bar",
        "orientation": "h",
        "y": [row.variant.upper() for row in rows],
        "x": values,
        "marker": {"color": [VARIANT_COLORS[row.variant] for row in rows]},
        "text": labels,
        "textposition": "outside",
        "constraintext": "none",  # the label keeps its size: the axis leaves it room (LABEL_ROOM)
        "cliponaxis": False,
        "textfont": {"size": VALUE_LABEL_PX},
        "hovertemplate": f"%{{y}}: %{{x:,}} {unit}<extra></extra>",
    }
    reach = max(values) * LABEL_ROOM
    axis = unit_axis(reach, *([units] if units else []), ticks=3)  # three: ~200 px wide
    # The axis ends where the labels need it to, not at the next round tick (that left the bars a third of the plot)
    shown = [i for i, value in enumerate(axis["tickvals"]) if value <= reach]
    axis = {
        "tickvals": [axis["tickvals"][i] for i in shown],
        "ticktext": [axis["ticktext"][i] for i in shown],
        "range": [0.0, float(reach)],
    }
    layout = {
        # Seated just above the plot, below the always-visible toolbar: these charts are narrow, their titles long.
        "title": {"text": title, "yref": "paper", "y": 1, "yanchor": "bottom", "pad": {"b": 12}},
        "xaxis": {"title": {"text": axis_title}, "showgrid": True} | axis,
        "yaxis": {"autorange": "reversed"},  # the first variant (MHA) on top, as the table lists them
        "margin": {"t": 80, "b": 40, "l": 50, "r": 20},
        "height": 380,
    }
    return {"data": [bar], "layout": layout}
