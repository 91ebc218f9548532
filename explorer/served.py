"""Caches as served, on the pages that show published models (axes, kv_cache): the storage choice's words, each
format's bytes and source under a chart, and the table of published claims beside what the core measures
(explorer/probes/claims.py), in this run's language."""

from __future__ import annotations

from attn_core import SERVED_AS_HELD, STORAGES, Storage
from explorer.axes.text import kind_name
from explorer.i18n import _, fmt, format_bytes, percent, sig
from explorer.messages import N_
from explorer.probes.axes import FormatRow, ModelCurves, published_curves
from explorer.probes.claims import Claim, published_claims
from explorer.work import cached_probe

cached_claims = cached_probe(published_claims, max_entries=1, takes_turns=False)
cached_curves = cached_probe(published_curves, max_entries=8, takes_turns=False)
TABLE_TOKENS = 131072  # the kv_cache page's table: a context every published model reaches

STORAGE_NAMES: dict[str, str] = {
    "reference": N_("As HF's modules hold it"),
    "served": N_("As served"),
}
FORMAT_NAMES: dict[str, str] = {
    "FlashMLA FP8 latent": N_("FlashMLA's FP8 latent"),
    "FP8 indexer key": N_("FP8 indexer key"),
    "fp8_ds_mla entry": N_("window key or compressed entry (fp8_ds_mla)"),
    "FP4 indexer key": N_("FP4 indexer key"),
    "compressor state": N_("compressor's waiting tokens"),
    "state and conv tail": N_("recurrent state and conv tail"),
    "every number, as HF holds it": N_("every number, as HF's module holds it"),
}
CLAIMS: dict[str, str] = {
    "v2_gqa_groups": N_("DeepSeek-V2: MLA caches as much as GQA with 2.25 groups"),
    "v2_saving": N_("DeepSeek-V2: 93.3% less KV cache than DeepSeek 67B (with its 6-bit cache)"),
    "kimi_saving": N_("Kimi Linear: up to 75% less KV cache (vs MLA on every layer, 1M tokens)"),
    "v4_vs_v32": N_("DeepSeek-V4-Flash: about 7% of DeepSeek-V3.2's KV cache at 1M tokens"),
    "v4_vs_gqa8": N_("DeepSeek-V4-Flash: about 2% of a bf16 GQA-8 cache (43 layers, 8 KV heads of 128) at 1M tokens"),
    "gemma3_local": N_("Gemma 3: 5 local (sliding) layers per global one"),
}


def storage_name(option: object) -> str:
    return _(STORAGE_NAMES.get(str(option), str(option)))


def storage_of(value: object) -> Storage:
    """A bound widget's value as a storage (the reference when the widget gives none)."""
    return "served" if value == "served" else STORAGES[0]


def _figure(value: float, unit: str) -> str:
    return percent(value / 100, 1) if unit == "percent" else _("{value}×", value=sig(value))


def claims_markdown(claims: list[Claim]) -> str:
    """The claims as a Markdown table of four columns (a phone's width): the claim and its source (as cited), the
    published figure, the measured one and its storage, and whether it reproduces within the claim's precision."""
    headers = (_("Claim"), _("Published"), _("Measured here"), _("Reproduces"))
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    for claim in claims:
        within = percent(claim.tolerance, 2 if claim.tolerance < 0.01 else 0)
        cells = (
            _("{claim} (`{source}`)", claim=_(CLAIMS[claim.key]), source=claim.source),
            _figure(claim.published, claim.unit),
            _("{figure}, {storage}", figure=_figure(claim.measured, claim.unit), storage=storage_name(claim.storage)),
            _("yes, within ±{share}", share=within) if claim.reproduces else _("no: not within ±{share}", share=within),
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_line(row: FormatRow, holders: list[str]) -> str:
    """One format and who keeps it: its name, its fields ("512 × FP8 E4M3 + 4 × fp32 + ...") and bytes a row (or a
    number), and its source."""
    fields = " + ".join(f"{fmt(count)} × {kind}" for count, kind in row.fields)
    values = {
        "holders": _(", ").join(holders),
        "name": _(FORMAT_NAMES.get(row.name, row.name)),
        "nbytes": fmt(row.nbytes),
        "source": f"`{row.source}`",
    }
    if len(row.fields) == 1 and row.fields[0][0] == 1:  # counted number by number
        return _("{holders}: {name}, `{kind}`, {nbytes} B a number; source: {source}", kind=row.fields[0][1], **values)
    return _("{holders}: {name}, `{fields}` = {nbytes} B a row; source: {source}", fields=fields, **values)


def formats_markdown(models: list[ModelCurves]) -> str:
    """Each served format once, with the models (and their layer kinds) that keep it: one bullet per format."""
    kinds: dict[tuple, dict[str, list[str]]] = {}
    rows: dict[tuple, FormatRow] = {}
    for model in models:
        for row in model.formats:
            key = (row.name, row.fields, row.nbytes, row.source)
            rows.setdefault(key, row)
            kinds.setdefault(key, {}).setdefault(model.name, []).append(kind_name(row.kind))
    lines = []
    for key, by_model in kinds.items():
        whole = rows[key].name == SERVED_AS_HELD.name  # a whole model as HF holds it: its kinds say nothing here
        holders = [
            f"**{name}**" if whole else _("**{model}** ({kinds})", model=name, kinds=_(", ").join(names))
            for name, names in by_model.items()
        ]
        lines.append(f"- {format_line(rows[key], holders)}")
    return "\n".join(lines)


def claims_caption() -> str:
    return _(
        "Every measured figure is computed now by the core from the models' configs on the `meta` device, in the "
        "storage the claim counts: DeepSeek-V2's with its 6-bit cache against DeepSeek 67B's bf16 one; Kimi "
        "Linear's and DeepSeek-V4's as served; the counts of layers as the configs give them. A claim reproduces "
        "when the measured figure is within the claim's own precision of the published one (93.3% to its last digit, "
        "'about 7%' within a tenth)."
    )


def models_columns(tokens: int) -> dict[str, dict]:
    """Headers -> column help for models_table (same order)."""
    return {
        _("Model"): {"width": "medium", "pinned": True},
        _("Held"): {"help": _("What every layer's cache holds after {tokens} tokens.", tokens=tokens)},
        _("Read per step"): {"help": _("What the decoding step of token {tokens} reads.", tokens=tokens)},
        _("Of HF's"): {"help": _("Held, as a share of what HF's modules hold in bf16.")},
    }


def models_table(models: list[ModelCurves], held_as_hf: list[ModelCurves], tokens: int) -> list[dict]:
    """A row per published model at `tokens`: held, read, and held against the same model as HF's modules hold it."""
    reference = {m.name: m for m in held_as_hf}
    headers, rows = list(models_columns(tokens)), []
    for model in models:
        i = model.at(tokens)
        base = reference[model.name].held[reference[model.name].at(tokens)]
        cells = [model.name, format_bytes(model.held[i]), format_bytes(model.read[i]), percent(model.held[i] / base)]
        rows.append(dict(zip(headers, cells, strict=True)))
    return rows
