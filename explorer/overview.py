"""The overview page's side: the four variants at the shared settings (it has no parameters of its own), from the
cached probe (explorer.probes.overview) to the words, the table, the two bar charts and their CSV rows."""

from __future__ import annotations

from collections.abc import Sequence

from attn_core import AttentionConfig, CachesAsMuchAsMHA, LatentCompressesNothing, decode_flops_per_token
from explorer.charts import FLOP_UNITS, VARIANT_COLORS, in_two_lines, unit_axis
from explorer.glossary import design_name
from explorer.i18n import N_, _, fmt, format_bytes, format_flops, n_, sentences
from explorer.kinds.registry import KINDS, chosen
from explorer.probes.overview import DesignRow, VariantRow, compare_designs, compare_variants
from explorer.settings import Settings
from explorer.work import cached_probe

# On the meta device: nothing to queue behind other sessions' probes.
_variant_rows = cached_probe(compare_variants, max_entries=256, takes_turns=False)


def variant_rows(settings: Settings) -> list[VariantRow]:
    """The probe's rows for these settings, cached by what they depend on: the layers run on the meta device, which
    holds no weights, so the seed does not enter (a new seed redraws nothing here)."""
    return _variant_rows(settings.configs(), batch=settings.batch, seq_len=settings.seq_len, dtype=settings.dtype)


_design_rows = cached_probe(compare_designs, max_entries=256, takes_turns=False)


def design_rows(settings: Settings) -> list[DesignRow]:
    """The designs after MLA chosen in the sidebar, at these settings (on the meta device: the seed does not enter)."""
    if not settings.designs:
        return []
    return _design_rows(
        chosen(settings),
        settings.config("mha"),
        batch=settings.batch,
        seq_len=settings.seq_len,
        dtype=settings.dtype,
    )


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


def summary_table(rows: list[VariantRow]) -> list[dict]:
    """One display row per variant, numbers with units; the check mark says the measured cache equals the formula."""
    table = []
    for row in rows:
        agrees = row.cache_bytes_measured == row.cache_bytes_formula
        # The columns that carry the point come first, so a projector or a phone shows them without scrolling. No
        # name column: the names are under "What each variant trades", and the table fits a projector's width.
        table.append(
            {
                _("Variant"): row.variant.upper(),
                _("Agree"): "✓" if agrees else "✗",
                _("vs MHA"): f"{row.cache_ratio_to_mha:.3g}×",
                _("Cache, measured"): format_bytes(row.cache_bytes_measured),
                _("Cache, formula"): format_bytes(row.cache_bytes_formula),
                _("FLOPs per decoded token"): format_flops(row.decode_flops_per_token),
                _("Cache per token"): n_(
                    "{n} number = {size}",
                    "{n} numbers = {size}",
                    row.cache_elements_per_token,
                    size=format_bytes(row.cache_bytes_per_token),
                ),
                _("Parameters"): fmt(row.parameters),
            }
        )
    return table


def _bars_of(rows: list[VariantRow], extra: Sequence[DesignRow]) -> list[tuple[str, str]]:
    """(name, colour) of each bar: the variants, then the designs after MLA."""
    return [(row.variant.upper(), VARIANT_COLORS[row.variant]) for row in rows] + [
        (design_name(row.design), KINDS[row.design].color) for row in extra
    ]


def cache_bar_figure(
    rows: list[VariantRow], seq_len: int, batch: int, dtype: str, extra: Sequence[DesignRow] = ()
) -> dict:
    values = [row.cache_bytes_measured for row in rows] + [row.cache_bytes_measured for row in extra]
    ratios = [row.cache_ratio_to_mha for row in rows] + [row.cache_ratio_to_mha for row in extra]
    return _variant_bars(
        _bars_of(rows, extra),
        values,
        labels=[f"{format_bytes(v)}<br>{r:.3g}× MHA" for v, r in zip(values, ratios, strict=True)],
        unit=_("bytes"),
        title=_(
            "KV cache of one layer: {tokens} × batch {batch} in {dtype}",
            tokens=n_("{n} token", "{n} tokens", seq_len),
            batch=batch,
            dtype=dtype,
        ),
        axis_title=_("cache held"),
    )


def flops_bar_figure(rows: list[VariantRow], seq_len: int, extra: Sequence[DesignRow] = ()) -> dict:
    values = [row.decode_flops_per_token for row in rows] + [row.decode_flops_per_token for row in extra]
    return _variant_bars(
        _bars_of(rows, extra),
        values,
        labels=[format_flops(v) for v in values],
        unit="FLOPs",
        title=n_(
            "Work to decode one token against {n} cached token",
            "Work to decode one token against {n} cached tokens",
            seq_len,
        ),
        axis_title=_("work (2 FLOP per multiply-add)"),
        units=FLOP_UNITS,
    )


# How far the value axis reaches past the longest bar: its label is drawn beside the bar, and at 1024 px a chart's
# plot is ~200 px wide, so the longest bar takes ~3/5 of it and its ~65 px label the rest.
LABEL_ROOM = 1.7
VALUE_LABEL_PX = 12
# A bar's row as designs join the four variants: at a projector's doubled font (the chart only 1.35x as tall) a
# two-line label needs more than a row of 36 px gave it (with ten bars each label touched the next row's)
ROW_PX = 52


def _variant_bars(
    bars: list[tuple[str, str]],
    values: list,
    *,
    labels: list[str],
    unit: str,
    title: str,
    axis_title: str,
    units: Sequence[tuple[str, float]] | None = None,
) -> dict:
    """One horizontal bar per (name, colour) in `bars` (MHA on top), labelled beside its end, with room for the labels.
    The value axis is ticked in one unit of `units` (bytes in KiB/MiB/GiB by default), never Plotly's SI letters.

    Horizontal: a label beside a bar has the whole row's height and never meets its neighbours' labels. Above
    vertical bars at 1024 px (~45 px a bar) Plotly shrank the labels to ~6 px to fit their bars, and at a size that
    can be read they ran into each other (issue #28 item 9).

    Built as the dict go.Figure(...).to_dict() gives (show_chart sends it as it is): validating two bar figures into
    Plotly's object tree cost a share of every rerun, before the first chart could leave the server.
    """
    bar = {
        "type": "bar",
        "orientation": "h",
        "y": [name for name, _color in bars],
        "x": values,
        "marker": {"color": [color for _name, color in bars]},
        "text": labels,
        "textposition": "outside",
        "constraintext": "none",  # the label keeps its size: the axis leaves it room (LABEL_ROOM)
        "cliponaxis": False,
        "textfont": {"size": VALUE_LABEL_PX},
        "hovertemplate": f"%{{y}}: %{{x:,}} {unit}<extra></extra>",
    }
    reach = max(values) * LABEL_ROOM
    axis = unit_axis(reach, *([units] if units else []), ticks=3)  # three: ~200 px wide
    # The axis ends where the labels need it to, not at the next round tick (that left the bars a third of the plot)
    shown = [i for i, value in enumerate(axis["tickvals"]) if value <= reach]
    axis = {
        "tickvals": [axis["tickvals"][i] for i in shown],
        "ticktext": [axis["ticktext"][i] for i in shown],
        "range": [0.0, float(reach)],
    }
    layout = {
        # Seated just above the plot, below the always-visible toolbar: these charts are narrow, their titles long.
        "title": {"text": title, "yref": "paper", "y": 1, "yanchor": "bottom", "pad": {"b": 12}},
        # the designs' longer names narrow the plot: on a projector's half column its title ran past the chart's edge
        "xaxis": {"title": {"text": in_two_lines(axis_title) if len(bars) > len(VARIANT_COLORS) else axis_title}}
        | {"showgrid": True}
        | axis,
        "yaxis": {"autorange": "reversed"},  # the first variant (MHA) on top, as the table lists them
        "margin": {"t": 80, "b": 40, "l": 50, "r": 20},
        "height": 380 + ROW_PX * max(len(bars) - 4, 0),
    }
    return {"data": [bar], "layout": layout}


def csv_rows(rows: list[VariantRow]) -> list[dict]:
    """The plotted numbers in plain columns for the CSV download."""
    keys = (
        "variant",
        "parameters",
        "cache_elements_per_token",
        "cache_bytes_per_token",
        "cache_bytes_measured",
        "cache_bytes_formula",
        "cache_ratio_to_mha",
        "decode_flops_per_token",
    )
    return [{key: getattr(row, key) for key in keys} for row in rows]


def design_table(rows: list[DesignRow]) -> list[dict]:
    """One display row per design after MLA: its cache at the settings' tokens, what the next step reads, its FLOPs;
    ✓ when the measured held and read bytes equal the closed forms."""
    return [
        {
            _("Design"): design_name(row.design),
            _("Agree"): "✓"
            if (row.cache_bytes_measured, row.read_bytes_measured) == (row.cache_bytes_formula, row.read_bytes_formula)
            else "✗",
            _("vs MHA"): f"{row.cache_ratio_to_mha:.3g}×",
            _("Cache, measured"): format_bytes(row.cache_bytes_measured),
            _("Read per step"): format_bytes(row.read_bytes_measured),
            _("FLOPs per decoded token"): format_flops(row.decode_flops_per_token),
            _("Cache per token"): format_bytes(round(row.cache_bytes_per_token)),
            _("Parameters"): fmt(row.parameters),
        }
        for row in rows
    ]


def design_caption(rows: list[DesignRow], seq_len: int, *, dtype: str, batch: int) -> str:
    """What the designs' numbers say at these settings, worked out from them: the smallest cache, and the design whose
    step reads least of what it holds; and the dtype and batch its bytes are counted in (the sidebar's)."""
    smallest = min(rows, key=lambda row: row.cache_bytes_measured)
    parts = [
        _(
            "At {tokens}, the smallest cache here is {name}'s: {ratio}× MHA's.",
            tokens=n_("{n} token", "{n} tokens", seq_len),
            name=design_name(smallest.design),
            ratio=f"{smallest.cache_ratio_to_mha:.3g}",
        )
    ]
    partial = [row for row in rows if row.read_bytes_measured < row.cache_bytes_measured]
    if partial:
        least = min(partial, key=lambda row: row.read_bytes_measured / row.cache_bytes_measured)
        parts.append(
            _(
                "{name}'s decoding step reads {read} of the {held} it holds ({share}).",
                name=design_name(least.design),
                read=format_bytes(least.read_bytes_measured),
                held=format_bytes(least.cache_bytes_measured),
                share=f"{least.read_bytes_measured / least.cache_bytes_measured:.0%}",
            )
        )
    sliding = next((row for row in rows if row.design == "sliding"), None)
    if sliding is not None and sliding.read_bytes_measured > sliding.cache_bytes_measured:
        parts.append(
            _(
                "The sliding window holds its kept first tokens and the last W − 1 ({held}); its next step reads those "
                "and its own new token ({read}), as the core's and HF's caches count them.",
                held=format_bytes(sliding.cache_bytes_measured),
                read=format_bytes(sliding.read_bytes_measured),
            )
        )
    parts += (
        _(
            "Measured on the meta device from each design's real layer: the cache after a prefill of the tokens, then "
            "one decoding step, whose bytes read and matrix products (counted by PyTorch's `FlopCounterMode`, 2 FLOPs a "
            "multiply-add) are shown. ✓ when held and read equal their closed forms to the byte."
        ),
        # the same words as the mapping page's decode: the table named no dtype beside the mapping page's bytes
        _(
            "Bytes of a {dtype} cache of batch {batch}, the sidebar's settings, as every page counts them.",
            dtype=dtype,
            batch=batch,
        ),
    )
    return sentences(*parts)


def chart_csv_rows(rows: list[VariantRow], extra: list[DesignRow]) -> list[dict]:
    """The bar charts' numbers as CSV rows: the variants' (csv_rows), then the designs' in the same columns, with the
    bytes a decoding step reads (a variant's step reads all it holds: left blank there, as it is not measured)."""
    if not extra:
        return csv_rows(rows)
    blank = {"read_bytes_measured": "", "read_bytes_formula": ""}
    designs_rows = [
        {
            "variant": row.design,
            "parameters": row.parameters,
            "cache_elements_per_token": "",
            "cache_bytes_per_token": row.cache_bytes_per_token,
            "cache_bytes_measured": row.cache_bytes_measured,
            "cache_bytes_formula": row.cache_bytes_formula,
            "cache_ratio_to_mha": row.cache_ratio_to_mha,
            "decode_flops_per_token": row.decode_flops_per_token,
            "read_bytes_measured": row.read_bytes_measured,
            "read_bytes_formula": row.read_bytes_formula,
        }
        for row in extra
    ]
    return [row | blank for row in csv_rows(rows)] + designs_rows
