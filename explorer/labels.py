"""Where a chart's point names go so that none covers another name or another point, at every size the chart is
drawn at: plain arithmetic on data coordinates, free of Streamlit and Plotly, so that any figure builder (the pages',
the lab's, a benchmark's) can place its names."""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Sequence

# Where Plotly sets a point's text: the text box's centre from the point, in half box widths and heights (y up)
TEXT_OFFSETS = {
    "top right": (1, 1),
    "top center": (0, 1),
    "top left": (-1, 1),
    "middle right": (1, 0),
    "bottom right": (1, -1),
    "bottom center": (0, -1),
    "bottom left": (-1, -1),
    "middle left": (-1, 0),
}
# The plots a chart of named points is drawn in (plot width and height in px, font px): a lesson's slide, a page in
# presenter mode at 1024 px, a page at 1400 px, and the narrowest that still names its points
DRAWN_AT = ((640, 260, 18), (800, 380, 24), (875, 350, 12), (440, 300, 12))
MARKER_PX = 14
PAD_PX = 3  # a name's room each side: names that merely touch read as one
AMBIGUOUS = 400  # px² a name costs for each point it sits nearer than its own


def _cost(
    index: int,
    position: str,
    others: list[int],
    placed: tuple[Sequence, list[dict], dict, list[str]],
    x_range: tuple[float, float],
    y_range: tuple[float, float],
) -> float:
    """How covered point index's name is at `position`, by the names of `others` where they are and by every
    other point, at every size; how far outside the plot; how near another point. placed: apart's points, their
    names' boxes by position and size, the points' markers by size, and the positions chosen so far."""
    points, boxes, markers, chosen = placed
    total = 0.0
    for size, box in boxes[index][position].items():
        width, height, font = size
        px, py = _to_px(points[index][0], points[index][1], x_range, y_range, width, height)
        around = [m for other, m in enumerate(markers[size]) if other != index]
        total += sum(_covered(box, boxes[other][chosen[other]][size]) for other in others)
        total += sum(_covered(box, m) for m in around)
        # a name nearer another point than its own reads as that point's
        near = _distance(box, (px, py))
        total += AMBIGUOUS * sum(_distance(box, _centre(m)) < near + MARKER_PX / 2 for m in around)
        # outside the plot (a little above is room)
        total += (box[2] - box[0]) * (box[3] - box[1]) - _covered(box, (-PAD_PX, 0, width + PAD_PX, height + font))
    return total


def apart(
    points: Sequence[tuple[float, float, str] | tuple[float, float, str, Sequence[str]]],
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    positions: Sequence[str] = tuple(TEXT_OFFSETS),
    sizes: Sequence[tuple[int, int, int]] = DRAWN_AT,
) -> list[str]:
    """A text position for each named point (x, y in data units of linear axes, or their log10 on log axes; its text;
    optionally the positions it may take, else `positions`, in order of preference), so that no name covers another
    name or another point wherever the chart is drawn (`sizes`: DRAWN_AT, or a phone's plot, placed on its own):
    each point in turn takes the first position that is clear at every size and nearer its own point than any
    other, or the least covered; then, while that helps,
    each name moves to where it is least covered by all the others (a name placed early may have taken the only
    room of a crowded neighbour). Names are measured roughly (a Latin letter 0.55 of the font's size, a Chinese
    character twice that, PAD_PX more each side), which is why several sizes are asked."""
    # Memoised: a page draws the same chart's names at every rerun (the lab's stored tables), and each placement
    # weighs every name against every other at four sizes.
    frozen = tuple((x, y, text, *(tuple(allowed) for allowed in rest)) for x, y, text, *rest in points)
    drawn = tuple((width, height, font) for width, height, font in sizes)
    return list(_apart(frozen, (x_range[0], x_range[1]), (y_range[0], y_range[1]), tuple(positions), drawn))


@functools.lru_cache(maxsize=256)
def _apart(
    points: tuple[tuple, ...],
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    positions: tuple[str, ...],
    sizes: tuple[tuple[int, int, int], ...],
) -> tuple[str, ...]:
    options = [list(allowed[0]) if allowed else list(positions) for _x, _y, _text, *allowed in points]
    boxes = [
        {position: _boxes(point, position, x_range, y_range, sizes) for position in allowed}
        for point, allowed in zip(points, options, strict=True)
    ]
    markers = {
        size: [_around(_to_px(x, y, x_range, y_range, size[0], size[1]), MARKER_PX) for x, y, *_rest in points]
        for size in sizes
    }

    def cost(index: int, position: str, others: list[int]) -> float:
        return _cost(index, position, others, (points, boxes, markers, chosen), x_range, y_range)

    def best(index: int, others: list[int]) -> tuple[float, str]:
        found: tuple[float, str] | None = None
        for position in options[index]:
            here = cost(index, position, others)
            if found is None or here < found[0]:
                found = (here, position)
            if here == 0:
                break
        assert found is not None
        return found

    # a point without a name (one only to keep names off) keeps its first position and covers nothing
    named = [index for index, (_x, _y, text, *_allowed) in enumerate(points) if text]
    chosen: list[str] = [allowed[0] for allowed in options]
    for index in named:
        chosen[index] = best(index, [other for other in named if other < index])[1]
    for _round in range(4):  # a few rounds settle a chart's few names; each move strictly lowers a cost
        moved = False
        for index in named:
            others = [other for other in named if other != index]
            here, position = best(index, others)
            if here < cost(index, chosen[index], others):
                chosen[index], moved = position, True
        if not moved:
            break
    return tuple(chosen)


def kept_names(
    points: Sequence[tuple[float, float, str]],
    positions: Sequence[str],
    x_range: tuple[float, float],
    y_range: tuple[float, float],
) -> list[bool]:
    """Which names to draw at the positions apart() chose: each in turn unless, at some size the chart is drawn at,
    it covers a name already kept (two points nearly on one spot leave no room for both names)."""
    kept: list[dict] = []
    out = []
    for point, position in zip(points, positions, strict=True):
        boxes = _boxes(point, position, x_range, y_range, DRAWN_AT)
        clear = all(_covered(boxes[size], other[size]) == 0 for other in kept for size in boxes)
        if clear:
            kept.append(boxes)
        out.append(clear)
    return out


def _boxes(
    point: tuple,
    position: str,
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    sizes: Sequence[tuple[int, int, int]],
) -> dict[tuple[int, int, int], tuple[float, float, float, float]]:
    """Where a point's name is drawn at `position`, at every size, with PAD_PX room each side (px, y up)."""
    x, y, text, *_rest = point
    ox, oy = TEXT_OFFSETS[position]
    out = {}
    for width, height, font in sizes:
        px, py = _to_px(x, y, x_range, y_range, width, height)
        w, h, gap = display_width(text) * 0.55 * font, 1.25 * font, MARKER_PX / 2 + 2
        cx, cy = px + ox * (w / 2 + gap), py + oy * (h / 2 + gap)
        out[(width, height, font)] = (
            cx - w / 2 - PAD_PX,
            cy - h / 2 - PAD_PX,
            cx + w / 2 + PAD_PX,
            cy + h / 2 + PAD_PX,
        )
    return out


def _to_px(
    x: float, y: float, x_range: tuple[float, float], y_range: tuple[float, float], width: int, height: int
) -> tuple[float, float]:
    return (x - x_range[0]) / (x_range[1] - x_range[0]) * width, (y - y_range[0]) / (y_range[1] - y_range[0]) * height


def _centre(box: tuple[float, ...]) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def _distance(box: tuple[float, ...], point: tuple[float, float]) -> float:
    """How far point is from the nearest edge of box (0 inside it)."""
    dx = max(box[0] - point[0], 0.0, point[0] - box[2])
    dy = max(box[1] - point[1], 0.0, point[1] - box[3])
    return math.hypot(dx, dy)


def _around(point: tuple[float, float], size: float) -> tuple[float, ...]:
    x, y = point
    return (x - size / 2, y - size / 2, x + size / 2, y + size / 2)


def _covered(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def is_wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F")


def display_width(text: str) -> int:
    """Display width in Latin letters: a Chinese character takes two."""
    return sum(2 if is_wide(ch) else 1 for ch in text)


# --- names at the right ends of a chart's lines ---------------------------------------------------------------------
# Each line of a chart of caches named at its right end, so that no line is told apart by colour alone: the names
# stacked in a column past the lines' ends, spread so that none covers another, each joined to its line by a thin
# leader in the line's colour (arithmetic on the log axes' exponents).
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


def end_traces(
    ends: list[tuple[str, str, int, float]],
    y_range: tuple[float, float],
    *,
    plot_px: float = PLOT_PX,
    label_px: float = LABEL_PX,
    font: float | None = None,
) -> list[dict]:
    """Each (name, colour, last x, last y) as a leader and its name past the end, in the line's legend group (so
    that hiding the line hides them). y_range: the y axis's range as log10 exponents. The names are spread label_px
    apart on a plot plot_px tall, as drawn; font: their size in the figure, when not the chart's."""
    shown = [(name, color, x, y) for name, color, x, y in ends if y > 0]
    gap = label_px / plot_px * (y_range[1] - y_range[0])
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
                "textfont": {"color": color} | ({"size": font} if font else {}),
                "cliponaxis": False,
            }
        )
    return traces
