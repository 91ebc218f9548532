"""The lab's words for what the stored table keeps in English: each point's label, short name and settings, and the
names of what each reduction kept, in this run's language."""

from __future__ import annotations

from explorer.i18n import N_, _, format_bytes, percent, sentences
from explorer.probes.lab import POINTS_BY_KEY

from .stored import HealedRow, LabRow, healed_as_rows, pareto_frontier

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


def pareto_findings(rows: list[LabRow], healed: dict[str, HealedRow]) -> list[str]:
    """What the Pareto chart shows, in sentences: the frontier, the worst model, the best MLA conversion, what healing
    closed, and the models that share one cache size."""

    original = next(row for row in rows if row.key == "original")
    frontier = pareto_frontier(rows)
    worst = max(rows, key=lambda r: r.perplexity)
    mla_rows = [r for r in rows if r.variant == "mla"]
    best_mla = min(mla_rows, key=lambda r: r.perplexity) if mla_rows else None
    findings = [
        _(
            "On the frontier (no other model has a cache as small or smaller and a lower perplexity): {models}.",
            models=_(", ").join(point_name(r) for r in frontier),
        ),
        _(
            "Worst: {model} at perplexity {perplexity}, {ratio}x the original's {original}.",
            model=point_name(worst),
            perplexity=f"{worst.perplexity:,.2f}",
            ratio=f"{worst.perplexity / original.perplexity:,.2f}",
            original=f"{original.perplexity:.2f}",
        ),
    ]
    if best_mla is not None:
        findings.append(
            _(
                "Best MLA conversion: {model}, perplexity {perplexity} with {share} of the original's cache.",
                model=point_name(best_mla),
                perplexity=f"{best_mla.perplexity:.2f}",
                share=percent(best_mla.cache_bytes_per_token / original.cache_bytes_per_token),
            )
        )
    if healed:
        closed = sorted(healed.values(), key=lambda twin: twin.gap_closed)
        findings.append(
            _(
                "Healed (★, arrows): {count} conversions trained back for {least}–{most} CPU seconds each; they "
                "closed {low} to {high} of the gap to the original's perplexity.",
                count=len(closed),
                least=f"{min(t.cpu_seconds for t in closed):,.0f}",
                most=f"{max(t.cpu_seconds for t in closed):,.0f}",
                low=percent(closed[0].gap_closed),
                high=percent(closed[-1].gap_closed),
            )
        )
    return findings + _same_cache_findings(rows, healed)


def _same_cache_findings(rows: list[LabRow], healed: dict[str, HealedRow]) -> list[str]:
    """Models that share one cache size, compared in one sentence, best first (and their healed twins in another)."""
    findings = []
    for size in sorted({r.cache_bytes_per_token for r in rows}):
        same = sorted((r for r in rows if r.cache_bytes_per_token == size), key=lambda r: r.perplexity)
        if len(same) > 1:
            findings.append(
                _(
                    "At the same cache ({cache} per token): {models}.",
                    cache=format_bytes(size),
                    models=_(", ").join(
                        _("{model} {perplexity}", model=point_name(r), perplexity=f"{r.perplexity:,.2f}") for r in same
                    ),
                )
            )
            twins = sorted(((r, healed[r.key]) for r in same if r.key in healed), key=lambda pair: pair[1].perplexity)
            if len(twins) > 1:
                findings.append(
                    _(
                        "Healed, at that cache: {models}.",
                        models=_(", ").join(
                            _("{model} {perplexity}", model=point_name(r), perplexity=f"{twin.perplexity:,.2f}")
                            for r, twin in twins
                        ),
                    )
                )
    return findings


def closest_healed(rows: list[LabRow], healed: dict[str, HealedRow]) -> HealedRow:
    """The healed conversion nearest the original's perplexity."""
    by_key = {row.key: row for row in rows}
    return min((twin for twin in healed.values() if twin.key in by_key), key=lambda twin: twin.perplexity)


def best_healed_finding(rows: list[LabRow], healed: dict[str, HealedRow]) -> str:
    """The healed point nearest the original's perplexity, with its share of the original's cache."""
    original = next(row for row in rows if row.key == "original")
    by_key = {row.key: row for row in rows}
    best = closest_healed(rows, healed)
    return _(
        "Closest to the original once healed: {model} at perplexity {perplexity}, {ratio}x the original's, with {share} "
        "of its cache.",
        model=point_name(by_key[best.key]),
        perplexity=f"{best.perplexity:,.2f}",
        ratio=f"{best.perplexity / original.perplexity:,.2f}",
        share=percent(best.cache_bytes_per_token / original.cache_bytes_per_token),
    )


def healed_findings(rows: list[LabRow], healed: dict[str, HealedRow], top: float) -> list[str]:
    """What the healed view shows: its frontier, the point closest to the original, and the points drawn at its top
    edge (above `top` x the original's perplexity)."""
    points = healed_as_rows(rows, healed)
    original = next(row for row in points if row.key == "original")
    above = [row for row in points if row.perplexity > top * original.perplexity]
    findings = [
        _(
            "After healing, on the frontier: {models}.",
            models=_(", ").join(point_name(r) for r in pareto_frontier(points)),
        ),
        best_healed_finding(rows, healed),
    ]
    if above:
        findings.append(
            _(
                "Drawn at the top edge (▲), above {ratio}x the original's perplexity: {models}.",
                ratio=f"{top:g}",
                models=_(", ").join(point_name(r) for r in above),
            )
        )
    return findings


def papers_note(healed: dict[str, HealedRow]) -> str:
    """What the papers did after converting, and how far the healed points (if any) went in that direction."""
    papers = _(
        "The conversions here (●) are **training-free**. The methods they follow all recovered quality by training "
        "afterwards: the GQA paper (Ainslie et al., 2023) *uptrained* mean-pooled checkpoints with 5 % of the "
        "original pre-training compute; MHA2MLA (Ji et al., 2025) fine-tuned its partial-RoPE, low-rank models on a "
        "small fraction of the pre-training data; TransMLA (Meng et al., 2025) fine-tuned its converted models on "
        "billions of tokens. The figures above are the starting points those fine-tunes begin from, not what they "
        "end at. And DeepSeek-V2's claim that MLA matches or beats MHA is about **MLA trained from scratch**: "
        "converting a trained GQA model does not test it."
    )
    if not healed:
        return papers
    return sentences(
        papers,
        _(
            "The healed points (★) are a small step in their direction: only the attention projections trained, at "
            "most {minutes} minutes of one CPU core each on {tokens} tokens (the papers: billions), first each "
            "layer against the original's attention output, then the whole model against the original's next-token "
            "distribution.",
            minutes=f"{max(twin.cpu_seconds for twin in healed.values()) / 60:.0f}",
            tokens=f"{max(twin.text_tokens for twin in healed.values()):,}",
        ),
    )
