"""The overview's bar charts are built as figure dicts by hand: they are exactly what Plotly itself would make."""
from __future__ import annotations

import plotly.graph_objects as go

from attn_core.probe.overview import compare_variants
from explorer import overview as view
from explorer.settings import Settings


def test_the_bar_figure_dicts_are_what_plotly_validates_them_into():
    settings = Settings(seq_len=96, batch=2)
    rows = compare_variants(settings.configs(), batch=settings.batch, seq_len=settings.seq_len, dtype=settings.dtype)
    for spec in (view.cache_bar_figure(rows, settings.seq_len, settings.batch, settings.dtype),
                 view.flops_bar_figure(rows, settings.seq_len)):
        assert go.Figure(spec).to_dict() == spec
