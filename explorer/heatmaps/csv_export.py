"""A chart's numbers for its CSV download, written only when someone clicks it."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

import numpy as np

from .panels import Panel


@dataclass(frozen=True)
class PanelNumbers:
    """What a chart's CSV holds, kept as arrays: the CSV text is written only when someone downloads it."""

    names: tuple[str, ...]
    labels: tuple[list, ...]
    matrices: tuple[np.ndarray, ...]

    def csv_text(self) -> str:
        """One line per heatmap row, one column per heatmap column (every line has every column: panels differ in
        width). Values with 7 significant digits (float32's precision); masked cells are left empty."""
        width = max(z.shape[1] for z in self.matrices)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(("matrix", "row", *(f"c{j}" for j in range(width))))
        for name, labels, z in zip(self.names, self.labels, self.matrices, strict=True):
            padding = ("",) * (width - z.shape[1])
            for label, line in zip(labels, z.tolist(), strict=True):
                cells = [f"{v:.7g}" if v == v else "" for v in line]  # v != v: NaN, a masked cell
                writer.writerow((name, label, *cells, *padding))
        return out.getvalue()


def panel_csv(panels: list[Panel]) -> PanelNumbers:
    """The panels' numbers for the chart's CSV download."""
    return PanelNumbers(tuple(p.csv_name for p in panels), tuple(p.y for p in panels), tuple(p.z for p in panels))
