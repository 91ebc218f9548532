"""The KV cache page's words: a cache's name as shown, the textbook's names of its tensors, numbers as said, and the
core's preset notes marked for the catalog."""

from __future__ import annotations

from explorer.i18n import N_, _, fmt
from explorer.probes.kv_cache import DecodeTrace

# What the core's presets say they leave out (ModelPreset.not_modelled), for the catalog: the page shows
# _(preset.not_modelled), so a note not listed here stays in English (and tests/i18n says so).
PRESET_NOTES = (
    N_("Gemma 2 alternates 4096-token sliding-window layers with global ones and soft-caps logits at 50."),
    N_("YaRN context extension (rope scaling and its softmax mscale) is not applied here."),
)


def shown_name(name: str) -> str:
    """A cache's name as the page shows it: "GQA", or the pitfall "GQA repeated" in this run's language."""
    if name.endswith(" repeated"):
        return _("{variant} repeated", variant=name.removesuffix(" repeated"))
    return name


def cache_names(trace: DecodeTrace) -> tuple[str, str]:
    """How the textbook names the two cached tensors."""
    return ("c_kv", "k_rope") if trace.variant == "mla" else ("k", "v")


def parameter_text(count: float) -> str:
    """A model's parameter count as it is usually said: 124 M, 6.74 B, 671 B."""
    return f"{count / 1e9:.3g} B" if count >= 1e9 else f"{count / 1e6:.3g} M"


def sig(value: float, digits: int = 3) -> str:
    """value to `digits` significant digits (as :.3g writes it) in the run's language: 14.2, 0.0156, 2.25."""
    text = f"{value:.{digits}g}"
    if "e" in text:  # 10**digits or more (what is shown here is never that small)
        return fmt(round(float(text)))
    return fmt(float(text), len(text.split(".")[1]) if "." in text else 0)
