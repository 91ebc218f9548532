"""The axes page's table: every layer kind of every model drawn, at the length the reader picks, in this run's
language."""

from __future__ import annotations

from explorer.i18n import _, fmt, format_bytes
from explorer.probes.axes import AxisCuts, ModelCurves

from .text import AXES, kind_label, kind_name, times


def kinds_columns(tokens: int) -> dict[str, dict]:
    """Headers -> column help, in table order (kinds_table uses the same headers): on a phone the pinned model and
    its bytes are in view without scrolling."""
    return {
        _("Model"): {"width": "medium", "pinned": True},
        _("Held"): {
            "help": _("What these layers' caches hold after {tokens} tokens, all of them.", tokens=tokens),
            "width": "small",
        },
        _("Read per step"): {
            "help": _("What the decoding step of token {tokens} reads from these layers' caches.", tokens=tokens),
            "width": "small",
        },
        _("Layer kind"): {},
        _("Layers"): {"help": _("How many of the model's layers are of this kind.")},
    }


def kinds_table(models: list[ModelCurves], tokens: int) -> list[dict]:
    headers = list(kinds_columns(tokens))
    rows = []
    for model in models:
        i = model.at(tokens)
        for kind in model.kinds:
            cells = [
                model.name,
                format_bytes(kind.held[i]),
                format_bytes(kind.read[i]),
                kind_label(kind.kind),
                fmt(kind.count),
            ]
            rows.append(dict(zip(headers, cells, strict=True)))
    return rows


def formulas_markdown(models: list[ModelCurves]) -> str:
    """Each layer kind's closed form for one layer, as the core states it (in its own notation and words: shown as
    code), one row per model and kind, as a Markdown table."""
    headers = (_("Model"), _("Layer kind"), _("Formula (one layer, as the core states it)"))
    lines = [
        "| " + " | ".join(headers) + " |",
        "| --- | --- | --- |",
    ]
    for model in models:
        for kind in model.kinds:
            formula = kind.formula.replace("|", "\\|")
            lines.append(f"| {model.name} | {kind_name(kind.kind)} | `{formula}` |")
    return "\n".join(lines)


def cuts_table(cuts: list[AxisCuts]) -> list[dict]:
    """The four axes' factors as rows (the picture's numbers, for a screen reader and the CSV)."""
    axes = ("layers", "tokens", "width", "bytes", "total")
    return [{_("Model"): cut.name} | {_(AXES[axis]): times(getattr(cut, axis)) for axis in axes} for cut in cuts]
