"""The overview's probe (explorer.probes.overview), cached by what its rows depend on."""

from __future__ import annotations

from explorer.probes.overview import VariantRow, compare_variants
from explorer.settings import Settings
from explorer.work import cached_probe

# On the meta device: nothing to queue behind other sessions' probes.
_variant_rows = cached_probe(compare_variants, max_entries=256, takes_turns=False)


def variant_rows(settings: Settings) -> list[VariantRow]:
    """The probe's rows for these settings, cached by what they depend on: the layers run on the meta device, which
    holds no weights, so the seed does not enter (a new seed redraws nothing here)."""
    return _variant_rows(settings.configs(), batch=settings.batch, seq_len=settings.seq_len, dtype=settings.dtype)
