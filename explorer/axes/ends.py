"""Each line of a chart of caches named at its right end, so that no line is told apart by colour alone: the names
stacked in a column past the lines' ends, spread so that none covers another, each joined to its line by a thin
leader in the line's colour. Plain arithmetic on the log axes' exponents, free of Streamlit."""

from __future__ import annotations

import math

LABEL_PX = 17  # a name's line height at the chart's 12 px font, with room to spare
PLOT_PX = 400  # the plot's height the names are spread for (the chart's 540 px less its title, axis and legend)
LEADER_BEND = 1.15  # x the last length: the leader runs flat to here from the line's end, then to its name
LABEL_AT = 1.7  # x the last length: where the names start


def spread(levels: list[float], gap: float, low: float, high: float) -> list[float]:
    """Positions as near `levels` as may be, in the same order, at least `gap` apart and inside [low, high] (when
    they fit): sorted, pushed up where two crowd, then pushed down from the top."""
    order = sorted(range(len(levels)), key=levels.__getitem__)
    placed = [levels[i] for i in order]
    for k in range(len(placed)):
        placed[k] = max(placed[k], low + k * gap, placed[k - 1] + gap if k else low)
    for k in reversed(range(len(placed))):
        ceiling = high - (len(placed) - 1 - k) * gap
        placed[k] = min(placed[k], ceiling, placed[k + 1] - gap if k + 1 < len(placed) else ceiling)
    out = [0.0] * len(levels)
    for k, i in enumerate(order):
        out[i] = placed[k]
    return out


def end_traces(ends: list[tuple[str, str, int, float]], y_range: tuple[float, float]) -> list[dict]:
    """Each (name, colour, last x, last y) as a leader and its name past the end, in the line's legend group (so
    that hiding the line hides them). y_range: the y axis's range as log10 exponents."""
    shown = [(name, color, x, y) for name, color, x, y in ends if y > 0]
    gap = LABEL_PX / PLOT_PX * (y_range[1] - y_range[0])
    levels = spread([math.log10(y) for *_rest, y in shown], gap, y_range[0] + gap / 2, y_range[1] - gap / 2)
    traces = []
    for (name, color, x, y), level in zip(shown, levels, strict=True):
        common = {"type": "scatter", "legendgroup": name, "showlegend": False, "hoverinfo": "skip"}
        traces.append(
            common
            | {
                "mode": "lines",
                "x": [x, x * LEADER_BEND, x * LABEL_AT],
                "y": [y, y, 10**level],
                "line": {"color": color, "width": 1},
            }
        )
        traces.append(
            common
            | {
                "mode": "lines+text",  # on a phone, names left out, it draws nothing
                "x": [x * LABEL_AT],
                "y": [10**level],
                "text": [name],
                "textposition": "middle right",
                "textfont": {"color": color},
                "cliponaxis": False,
            }
        )
    return traces
