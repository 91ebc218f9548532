"""The lab's words for what the stored table keeps in English: each point's label, short name and settings, and the
names of what each reduction kept, in this run's language."""

from __future__ import annotations

from explorer.i18n import N_, _
from explorer.probes.lab import POINTS_BY_KEY

from .stored import LabRow

# The page's words for what the table stores in English: option values and the names of what each reduction kept.
METHOD_SHOWN = {"mean": N_("method=mean"), "pca": N_("method=pca")}
KEPT_SHOWN = {
    "shared key": N_("shared key"),
    "shared value": N_("shared value"),
    "rotary key": N_("rotary key"),
    "latent": N_("latent"),
}


def label_shown(row: LabRow) -> str:
    """The row's label in this run's language (the table stores it in English)."""
    if row.variant == "mla":
        return _(
            "MLA, latent {d_c} + rotary key {d_r}",
            d_c=str(row.options["kv_lora_rank"]),
            d_r=str(row.options["qk_rope_head_dim"]),
        )
    point = POINTS_BY_KEY.get(row.key)
    return _(point.label) if point is not None else row.label


# Short names drawn beside the chart's points (a projector has no hover).
POINT_NAMES = {
    "original": N_("GQA (original)"),
    "mha": "MHA",
    "mqa-mean": N_("MQA mean-pooled"),
    "mqa-pca": N_("MQA fitted"),
}


def point_name(row: LabRow) -> str:
    if row.variant == "mla":
        return f"MLA {row.options['kv_lora_rank']}+{row.options['qk_rope_head_dim']}"
    return _(POINT_NAMES[row.key]) if row.key in POINT_NAMES else row.label


def settings_shown(row: LabRow) -> str:
    """settings_text in this run's language: option names are symbols, a method's name is a word."""
    if not row.options:
        return _("original") if row.variant == "original" else row.variant
    parts = [
        _(METHOD_SHOWN[value]) if name == "method" and value in METHOD_SHOWN else f"{name}={value}"
        for name, value in row.options.items()
    ]
    return row.variant + " " + ", ".join(parts)


def kept_shown(name: str) -> str:
    return _(KEPT_SHOWN[name]) if name in KEPT_SHOWN else name
