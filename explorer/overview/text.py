"""The overview's words: what each variant trades, its configuration's warnings, and what to notice in the FLOPs chart,
worked out from the rows shown."""

from __future__ import annotations

from attn_core import AttentionConfig, CachesAsMuchAsMHA, LatentCompressesNothing, decode_flops_per_token
from explorer.i18n import N_, _, format_flops, sentences
from explorer.probes.overview import VariantRow
from explorer.settings import Settings

# Marked here, translated where shown: _(TRADE_OFFS[variant]).
TRADE_OFFS = {
    "mha": N_(
        "Every query head has its own keys and values: the most expressive, and the largest cache. The baseline."
    ),
    "mqa": N_(
        "All query heads share one key/value head: the cache shrinks by the head count, at some loss of quality."
    ),
    "gqa": N_("Query heads share keys and values in groups: between MHA and MQA, and what most open models use today."),
    "mla": N_(
        "Keys and values are rebuilt from one small latent per token, plus a shared rotary key: a cache near MQA's "
        "with quality reported at or above MHA's, paid for with extra up-projection work (absorbed into the weights "
        "at decode)."
    ),
}


def listing(items: list[str]) -> str:
    """Items of a list in one sentence: "MQA, GQA" / "MQA、GQA"."""
    # TRANSLATORS: the separator between the items of a short list (Chinese uses the enumeration comma).
    return _(", ").join(items)


def config_warnings(row: VariantRow) -> list[str]:
    """The variant's questionable choices (attn_core's AttentionConfig.warnings()) as sentences in this run's
    language."""
    notes = []
    for warning in row.warnings:
        match warning:
            case LatentCompressesNothing():
                notes.append(
                    _(
                        "$d_c$ = {latent} is not smaller than the {numbers} per-head key and value numbers it stands "
                        "for: the latent compresses nothing.",
                        latent=warning.kv_lora_rank,
                        numbers=warning.uncompressed,
                    )
                )
            case CachesAsMuchAsMHA():
                notes.append(_("This MLA layer caches as much per token as MHA would."))
    return notes


def flops_caption(rows: list[VariantRow], settings: Settings) -> str:
    """What to notice in the FLOPs chart, worked out from the rows shown (against MHA at the same width and heads,
    whether or not MHA is shown): which variants cut cache and work together, and which pay for a smaller cache
    with more arithmetic, by how much."""
    mha = AttentionConfig("mha", d_model=settings.d_model, n_heads=settings.heads)
    mha_flops = decode_flops_per_token(mha, settings.seq_len)
    cheaper, same = [], []
    parts = [_("MHA here: {flops} per decoded token.", flops=format_flops(mha_flops))]
    dearer = []
    for row in rows:
        if row.variant == "mha":
            continue
        ratio, cache = row.decode_flops_per_token / mha_flops, row.cache_ratio_to_mha
        name = row.variant.upper()
        if ratio > 1.005 and cache < 1:
            dearer.append(
                _(
                    "{name} pays for its smaller cache ({cache}× MHA's) in arithmetic: {ratio}× MHA's work.",
                    name=name,
                    cache=f"{cache:.3g}",
                    ratio=f"{ratio:.3g}",
                )
            )
        elif ratio > 1.005:
            dearer.append(
                _(
                    "{name} costs more on both counts here: {ratio}× MHA's work and {cache}× its cache.",
                    name=name,
                    ratio=f"{ratio:.3g}",
                    cache=f"{cache:.3g}",
                )
            )
        elif ratio < 0.995:
            cheaper.append(f"{name} ({ratio:.3g}×)")
        else:
            same.append(name)
    if cheaper:
        parts.append(_("Less work per token than MHA, as well as a smaller cache: {names}.", names=listing(cheaper)))
    if same:
        parts.append(_("The same work as MHA: {names}.", names=listing(same)))
    parts += dearer
    return sentences(*parts)
