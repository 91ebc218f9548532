"""The lab's tables: every stored model with its perplexity and cache (healed twins last), and what each reduction
kept, in this run's language."""

from __future__ import annotations

from explorer.i18n import _, format_bytes, percent

from .stored import HealedRow, LabRow
from .text import kept_shown, label_shown, point_name, settings_shown


def models_table(rows: list[LabRow], healed: dict[str, HealedRow], context: int) -> list[dict]:
    """One row per stored model, then one per healed twin. The chart's short names (the table fits a projector's
    width); what a reader came for first, so a phone shows it without scrolling; the recipe last."""

    original = next(row for row in rows if row.key == "original")
    by_key = {row.key: row for row in rows}

    def costs(perplexity: float, cache_bytes_per_token: int) -> dict[str, str]:
        return {
            _("perplexity"): f"{perplexity:,.2f}",
            _("× original"): f"{perplexity / original.perplexity:,.2f}",
            _("cache / token"): format_bytes(cache_bytes_per_token),
            _("cache at {n} tokens", n=context): format_bytes(cache_bytes_per_token * context),
        }

    converted = [
        {_("model"): point_name(row)}
        | costs(row.perplexity, row.cache_bytes_per_token)
        | {
            _("time"): _("{seconds} s", seconds=f"{row.seconds['convert'] + row.seconds['evaluate']:,.0f}"),
            _("settings"): settings_shown(row),
        }
        for row in rows
    ]
    twins = [
        {_("model"): _("{model}, healed", model=point_name(by_key[key]))}
        | costs(twin.perplexity, twin.cache_bytes_per_token)
        | {
            _("time"): _("{seconds} s", seconds=f"{twin.cpu_seconds:,.0f}"),
            _("settings"): _(
                # the model's name says "healed": the table fits a laptop's column without saying it again
                "{layerwise} layer-wise + {end_to_end} end-to-end steps, {distinct} tokens",
                layerwise=twin.layerwise_steps,
                end_to_end=twin.end_to_end_steps,
                distinct=twin.text_tokens,
            ),
        }
        for key, twin in healed.items()
        if key in by_key
    ]
    return converted + twins


def kept_table(rows: list[LabRow]) -> list[dict]:
    """Each reduction's kept energy by what it keeps (MQA: shared key and value; MLA: rotary key and latent): a dash
    where a model has none, rather than an empty cell. Exact models have no row."""
    names = list(dict.fromkeys(name for row in rows for name in row.kept))
    return [
        {_("model"): label_shown(row)}
        | {
            _("energy kept: {name}", name=kept_shown(name)): percent(row.kept[name], 2) if name in row.kept else "—"
            for name in names
        }
        for row in rows
        if row.kept
    ]
