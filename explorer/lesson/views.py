"""Each lesson step's one chart, built by the same cached probes and figure builders as the page it comes from, at
the settings chosen for that step, with the link that opens that page at exactly those settings.

No math here: heatmaps, mapping, kv_cache, trained and lab compute; this module picks their settings and arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import cast

import streamlit as st

from attn_core import PRESETS
from explorer.heatmaps import computed as heatmaps_computed
from explorer.heatmaps import figures as heatmaps_figures
from explorer.heatmaps import link as heatmaps_link
from explorer.i18n import _, difference, format_bytes, language, sentences, sig, speaking
from explorer.kv_cache import computed as kv_cache_computed
from explorer.kv_cache import figures as kv_cache_figures
from explorer.kv_cache import gif as kv_cache_gif
from explorer.kv_cache import link as kv_cache_link
from explorer.kv_cache import tables as kv_cache_tables
from explorer.lab import csv_export as lab_csv_export
from explorer.lab import figures as lab_figures
from explorer.lab import link as lab_link
from explorer.lab import stored as lab_stored
from explorer.lab import text as lab_text
from explorer.lesson import keys
from explorer.mapping import computed as mapping_computed
from explorer.mapping import figures as mapping_figures
from explorer.mapping import frames as mapping_frames
from explorer.mapping import gif as mapping_gif
from explorer.mapping import link as mapping_link
from explorer.model import trained_model
from explorer.params import Choice, Param
from explorer.present import MIN_TEXT_PX, SLIDE_FONT_SCALE, presenting
from explorer.probes.heatmaps import InputSpec, tokenize
from explorer.probes.kv_cache import DecodeTrace, memory_budget
from explorer.settings import Settings
from explorer.trained import computed as trained_computed
from explorer.trained import csv_export as trained_csv_export
from explorer.trained import figures as trained_figures
from explorer.trained import link as trained_link

# The sentence the heatmap steps attend over, in the page's language (a Chinese character is a token of its own). The
# Chinese translates the English token for token, and its tokens take the English ones' vectors: one example, the
# same numbers in both languages (the repeated "eat" / 吃 included).
SENTENCES = {"en": "cats eat fish, dogs eat meat", "zh": "猫吃鱼狗吃肉"}
SCALE = "2"  # heatmaps' input scale: sharp enough that the softmax visibly picks
POOL = "mean"

# The steps' settings: small layers that draw at once and read on a projector.
ONE_HEAD = Settings(variants=("mha",), d_model=64, heads=4, groups=4, latent=16, rope_dim=8, seq_len=8, seed=0)
MANY_HEADS = Settings(variants=("mha",), d_model=128, heads=8, groups=8, latent=32, rope_dim=8, seq_len=8, seed=0)
# One layer from the cache to the shared rotary key (steps 3-9): its d_h, and so MHA's cache per token, never changes
# between steps.
LAYER = Settings(d_model=512, heads=8, groups=2, latent=128, rope_dim=32, seq_len=64, batch=1, dtype="float16")
DECODE = replace(LAYER, variants=("mha",))
SHARING = LAYER
PITFALL = replace(LAYER, variants=("mha", "gqa"))
LATENT_HEAD = Settings(variants=("mla",), d_model=128, heads=4, groups=4, latent=32, rope_dim=8, seq_len=8, seed=0)
PROMPT_TOKENS, DECODED_TOKENS = 8, 24  # the decode steps' trace: a short prompt, then one token at a time
NOTES_MODEL, NOTES_LATENT, NOTES_ROPE = kv_cache_link.NOTES_MODEL, 512, 128  # the course notes': 8192 vs 640 numbers
GPU_GIB, GPUS = 80, 1

# A step's own control, in the link: GQA's group count over the step's 8 heads.
GROUPS = Choice("ls_groups", (1, 2, 4, 8), 2)

# A slide's chart (presenter mode, 1024x768): the height the step's title, its few sentences and its question leave,
# less a step's own control above the chart; in a shorter window, less what it lacks (the rest of the slide keeps its
# size), down to the least a chart reads at: step 5's under its control (its rows' names on one line, its play slider
# with no current value over it, its heads' boxes 15 px tall: each name inside its box at MIN_TEXT_PX, _names_fitted)
# at a 1024x680 window, its question still on the screen.
SLIDE_CHART_HEIGHT = 430
CONTROL_HEIGHT = 50  # px a step's control takes on a slide (pages/lesson.py: its label, with its value, beside it)
LEAST_SLIDE_CHART = 310


def _full_slide_height(key: str) -> int:
    """How tall step `key`'s chart is drawn on a slide in a window of SLIDE_SCREEN_PX."""
    return SLIDE_CHART_HEIGHT - (CONTROL_HEIGHT if key == "gqa" else 0)


def slide_height(key: str) -> int:
    """How tall step `key`'s chart is drawn on a slide, in the window the page reported (explorer.lesson.keys)."""
    full = _full_slide_height(key)
    short = max(keys.SLIDE_SCREEN_PX - (keys.screen_height() or keys.SLIDE_SCREEN_PX), 0)
    return max(full - short, min(full, LEAST_SLIDE_CHART))


def _slide(key: str) -> int | None:
    """The height step `key`'s chart is drawn at when its figure is laid out for it (a grid of panels), in presenter
    mode; None elsewhere."""
    return slide_height(key) if presenting() else None


@dataclass
class Animation:
    """A GIF of the step's animation, drawn on demand (a download's click) in the language it was asked in."""

    file_name: str
    make: Callable[[], bytes]
    frames: int  # how many frames the animation has


@dataclass
class StepView:
    """One step's chart and where to explore it: the page's key and the link's query."""

    spec: dict | None  # None: the chart could not be made here (a message says why)
    rows: Sequence[dict] | Callable[[], str]
    caption: str
    page: str
    query: dict[Param, object]  # the page's own view values, by its Params; the settings go into the link too
    settings: Settings = field(default_factory=Settings)  # the sidebar settings the chart was made at
    animation: Animation | None = None


def sentence() -> str:
    return SENTENCES[language()]


def _text_input(settings: Settings) -> InputSpec:
    spec = heatmaps_computed.make_input_spec(settings, kind="text", text=sentence(), tokens="words", scale=SCALE).spec
    meanings = tokenize(SENTENCES["en"], "words")[: spec.length]
    return replace(spec, meanings=tuple(meanings))


def _heatmaps_view(variant: str) -> dict[Param, object]:
    """The heatmaps page showing a step's chart: its variant on the step's sentence."""
    return {
        heatmaps_link.VARIANT: variant,
        heatmaps_link.INPUT: "text",
        heatmaps_link.TEXT: sentence(),
        heatmaps_link.TOKENS: "words",
        heatmaps_link.SCALE: SCALE,
        heatmaps_link.CAUSAL: True,
        heatmaps_link.ROPE: True,
        heatmaps_link.POOL: POOL,
    }


def _first_heads(settings: Settings, variant: str) -> range:
    cfg = heatmaps_computed.layer_config(settings, variant, True)
    return heatmaps_computed.head_pages(settings.heads, cfg.group_size, "all")[0]


# --- the steps' charts ----------------------------------------------------------------------------------------------
def inside_one_head(lang: str) -> StepView:
    settings, variant, head = ONE_HEAD, "mha", 0
    cfg = heatmaps_computed.layer_config(settings, variant, True)
    chart = heatmaps_figures.steps_chart(
        cfg,
        settings.seed,
        _text_input(settings),
        True,
        _first_heads(settings, variant),
        head,
        POOL,
        lang,
        _slide("sdpa"),
    )
    return StepView(
        chart.spec,
        chart.csv.csv_text,
        _(
            "Follow ① to ⑤ for head {head}: its scores, scaled by $1/\\sqrt{{d_k}}$ with $d_k = {d_k}$, masked, "
            "turned into weights, and the weighted sum of the values. ④ equals the layer's own weights {agreement}.",
            head=head,
            d_k=cfg.head_dim,
            agreement=difference(chart.facts.weights_error),
        ),
        "heatmaps",
        _heatmaps_view(variant) | {heatmaps_link.HEAD: head},
        settings,
    )


def every_head(lang: str) -> StepView:
    settings, variant = MANY_HEADS, "mha"
    cfg = heatmaps_computed.layer_config(settings, variant, True)
    chart = heatmaps_figures.heads_chart(
        cfg, settings.seed, _text_input(settings), True, _first_heads(settings, variant), POOL, lang, _slide("heads")
    )
    return StepView(
        chart.spec,
        chart.csv.csv_text,
        _(
            "{n} heads of one layer on the same sentence, each with its own queries, keys and values: rows sum to 1 "
            "{agreement}, and every head spreads its attention differently.",
            n=settings.heads,
            agreement=difference(chart.facts.row_sum_error),
        ),
        "heatmaps",
        _heatmaps_view(variant),
        settings,
    )


def _traces(settings: Settings, repeated: bool) -> dict[str, DecodeTrace]:
    traces, _skipped = kv_cache_computed.traces_for(settings, PROMPT_TOKENS, DECODED_TOKENS, repeated)
    return traces


def _cache_animation(settings: Settings, repeated: bool, lang: str, name: str) -> Animation:
    traces = _traces(settings, repeated)
    return Animation(
        f"{name}-{lang}.gif",
        lambda: cache_gif(settings, repeated, lang),
        frames=len(next(iter(traces.values())).nbytes),
    )


@st.cache_data(max_entries=16, show_spinner=False)
def cache_gif(settings: Settings, repeated: bool, lang: str) -> bytes:
    """The cache growing token by token, as a GIF with its words in `lang` (a download's data is made when clicked,
    outside the run that knew the language)."""
    with speaking(lang):
        return kv_cache_gif.cache_gif(_traces(settings, repeated))


@st.cache_data(max_entries=16, show_spinner=False)
def morph_gif(settings: Settings, lang: str) -> bytes:
    """The head -> KV morph, as a GIF with its words in `lang`."""
    with speaking(lang):
        return mapping_gif.morph_gif(mapping_computed.frames_for(settings), settings)


def _kv_view() -> dict[Param, object]:
    """The KV cache page at the steps' decode."""
    return {
        kv_cache_link.PROMPT: PROMPT_TOKENS,
        kv_cache_link.STEPS: DECODED_TOKENS,
        kv_cache_link.STEP: DECODED_TOKENS,
    }


def cache_grows(lang: str) -> StepView:
    settings = DECODE
    traces = _traces(settings, False)
    trace = traces["MHA"]
    return StepView(
        kv_cache_figures.cache_size_figure(traces, DECODED_TOKENS, preallocated=False),
        kv_cache_tables.cache_size_rows(traces),
        _(
            "Measured from the real cache: each decoded token adds {per_token} to this one layer's cache ($2 \\cdot h "
            "\\cdot d_h$ = 2 × {heads} × {head_dim} numbers in {dtype}); after {tokens} tokens it holds {total}. The "
            "outputs equal a full recompute {agreement}.",
            per_token=format_bytes(trace.nbytes[-1] // trace.tokens_held[-1]),
            heads=settings.heads,
            head_dim=settings.head_dim,
            dtype=settings.dtype,
            tokens=trace.tokens_held[-1],
            total=format_bytes(trace.nbytes[-1]),
            agreement=difference(max(trace.max_abs_diff)),
        ),
        "kv_cache",
        _kv_view(),
        settings,
        _cache_animation(settings, False, lang, "kv-cache-growing"),
    )


def _names_fitted(spec: dict) -> dict:
    """The head -> KV chart as a short slide draws it: the text that takes the layout's font (its boxes' names, its
    play buttons and slider's steps) at MIN_TEXT_PX as drawn, not the slide's 18 px (at a 1024x680 window step 5's
    names ran over their boxes). The layout's, not the traces': a phone's presenter mode draws the chart with its own
    layout and the traces' fonts unscaled (explorer.charts), as the usual page does. A copy: figures are cached."""
    return spec | {"layout": spec["layout"] | {"font": {"size": MIN_TEXT_PX / SLIDE_FONT_SCALE}}}


def _morph_view(settings: Settings, variant: str, highlight: str | None, lang: str, caption: str, key: str) -> StepView:
    frames = mapping_computed.frames_for(settings)
    keys = [frame.key for frame in frames]
    active = keys.index(mapping_frames.frame_key(settings, variant))
    spec, rows = mapping_figures.mapping_chart(settings, active, highlight, lang)
    if presenting() and slide_height(key) < _full_slide_height(key):
        spec = _names_fitted(spec)
    query: dict[Param, object] = {mapping_link.MAP_VARIANT: variant}
    if highlight:
        query[mapping_link.MAP_STORE] = highlight
    return StepView(
        spec,
        rows,
        caption,
        "mapping",
        query,
        settings,
        Animation(f"head-kv-morph-{lang}.gif", lambda: morph_gif(settings, lang), len(frames)),
    )


def one_kv_head(lang: str) -> StepView:
    return _morph_view(
        SHARING,
        "mqa",
        None,
        lang,
        _(
            "All {n} query heads read the one K/V head: the cache row is 1/{n} of MHA's dashed box. ▶ Play runs the "
            "whole path from MHA to MLA.",
            n=SHARING.heads,
        ),
        "mqa",
    )


def groups_of_heads(lang: str, groups: int) -> StepView:
    settings = replace(SHARING, groups=groups)
    variant = {1: "mqa", settings.heads: "mha"}.get(groups, "gqa")  # what GQA is at this count
    return _morph_view(
        settings,
        "gqa",
        "kv0" if variant == "gqa" else None,  # the heads of one group
        lang,
        _(
            "GQA with {g} of {h} heads: each K/V head serves {r} query heads, and the cache is {share} of MHA's. "
            "The highlight shows the heads that read KV head 0.",
            g=groups,
            h=settings.heads,
            r=settings.heads // groups,
            share=str(Fraction(groups, settings.heads)),  # ¼, not 2/8
        )
        if variant == "gqa"
        else _(
            "With {g} of {h} groups GQA is {variant}: move the groups to see the steps between.",
            g=groups,
            h=settings.heads,
            variant=variant.upper(),
        ),
        "gqa",
    )


def shared_rotary_key(lang: str) -> StepView:
    settings = SHARING
    return _morph_view(
        settings,
        "mla",
        "k_rope",
        lang,
        _(
            "Every head reads the one rotary key $k^R$ ({rope} numbers per token) beside the latent $c^{{KV}}$ "
            "({latent}): per-head rotary keys would cost {per_head} numbers per token instead.",
            rope=settings.rope_dim,
            latent=settings.latent,
            per_head=settings.heads * settings.rope_dim,
        ),
        "rope",
    )


def real_model(lang: str) -> StepView | None:
    with speaking(lang):
        lm = trained_model()  # None after saying how to install it
        if lm is None:
            return None
        prompt = trained_link.DEFAULT_PROMPTS["en"]  # the model writes English best; the chart shows no words of it
        trace = trained_computed.writing_of(prompt)
        step = len(trace.steps)
        return StepView(
            trained_figures.cache_growth_figure(trace, step),
            lambda: trained_csv_export.writing_csv(trace),
            _(
                "{layers} layers, {heads} query heads sharing {kv} KV heads: after {tokens} tokens the model's cache "
                "holds {measured} (measured), {ratio}× less than MHA would.",
                layers=trace.n_layers,
                heads=trace.n_heads,
                kv=trace.n_kv_heads,
                tokens=trace.steps[-1].cached_tokens,
                measured=format_bytes(trace.steps[-1].cache_bytes),
                ratio=f"{trace.per_token_bytes['mha'] / trace.per_token_bytes['gqa']:.0f}",
            ),
            "trained",
            {trained_link.PROMPT: prompt, trained_link.STEP: step},
        )


def repeated_heads(lang: str) -> StepView:
    settings = PITFALL
    traces = _traces(settings, True)
    honest, copies = traces["GQA"], traces["GQA repeated"]
    return StepView(
        kv_cache_figures.cache_size_figure(traces, DECODED_TOKENS, preallocated=False),
        kv_cache_tables.cache_size_rows(traces),
        _(
            "GQA with {g} KV heads needs {needed}; caching the heads after `repeat_interleave` holds {held}, MHA's "
            "size (the open rings on MHA's line), for the same outputs.",
            g=settings.groups,
            needed=format_bytes(honest.nbytes[-1]),
            held=format_bytes(copies.nbytes[-1]),
        ),
        "kv_cache",
        _kv_view() | {kv_cache_link.REPEAT: True},
        settings,
        _cache_animation(settings, True, lang, "kv-cache-repeated-heads"),
    )


def joint_compression(lang: str) -> StepView:
    with speaking(lang):
        model, dtype, batch = NOTES_MODEL, "float16", 1
        preset = PRESETS[model]
        groups = kv_cache_link.preferred_groups(model)
        rows = kv_cache_computed.cached_model_rows(model, groups, NOTES_LATENT, NOTES_ROPE, dtype, batch, False)
        budget = memory_budget(preset, gpu_gib=GPU_GIB, gpus=GPUS, dtype=dtype)
        what_if = {"groups": groups, "latent": NOTES_LATENT, "rope_dim": NOTES_ROPE}
        by_key = {row.key: row for row in rows}
        # a model published as MHA: its "as MHA" line lay under the published one, a legend entry with nothing to see
        same = by_key["published"].cfg.variant == "mha"
        shown = [row for row in rows if not (same and row.key == "mha")]
        figure, csv_rows = kv_cache_figures.scale_figure(model, shown, what_if, batch=batch, dtype=dtype, budget=budget)
        mha, mla = by_key["mha"], by_key["mla"]
        settings = replace(Settings(), dtype=dtype, batch=batch)
        return StepView(
            figure,
            csv_rows,
            _(
                "{model} as MHA keeps {mha} numbers per token per layer; as MLA with $d_c$ = {latent} and $d_h^R$ = "
                "{rope}, {mla}: {ratio}× fewer (log scale).",
                model=model,
                mha=mha.elements_per_token_layer,
                latent=NOTES_LATENT,
                rope=NOTES_ROPE,
                mla=mla.elements_per_token_layer,
                ratio=sig(mha.elements_per_token_layer / mla.elements_per_token_layer),
            ),
            "kv_cache",
            {
                kv_cache_link.MODEL: model,
                kv_cache_link.GROUPS: groups,
                kv_cache_link.LATENT: NOTES_LATENT,
                kv_cache_link.ROPE: NOTES_ROPE,
                kv_cache_link.GPU_GIB: GPU_GIB,
                kv_cache_link.GPUS: GPUS,
            },
            settings,
        )


def absorbed_decode(lang: str) -> StepView:
    settings, variant, head = LATENT_HEAD, "mla", 0
    cfg = heatmaps_computed.layer_config(settings, variant, True)
    # no head outlined: nothing on this step would explain the outline
    chart = heatmaps_figures.decode_chart(
        cfg, settings.seed, _text_input(settings), True, _first_heads(settings, variant), None, POOL, lang, titled=True
    )
    # The comparison the step promises, on the chart itself: a slide folds the caption away. A phone's layout too (made
    # with room for it): presenter mode on a phone showed the heads' weights and no comparison.
    title = {
        "text": _(
            "Absorbed decode: each head's weights; the full up-projected pass gives the same {agreement}",
            agreement=difference(chart.facts.decode_error),
        )
    }
    spec = chart.spec | {"layout": chart.spec["layout"] | {"title": title}}
    spec["narrow"] = spec["narrow"] | {"layout": spec["narrow"]["layout"] | {"title": title}}
    return StepView(
        spec,
        chart.csv.csv_text,
        _(
            "The last token decoded alone with absorbed weights, against the cache of $c^{{KV}}$ and $k^R$, gives the "
            "weights of the full up-projected pass {agreement}.",
            agreement=difference(chart.facts.decode_error),
        ),
        "heatmaps",
        _heatmaps_view(variant) | {heatmaps_link.HEAD: head},
        settings,
    )


def choosing(lang: str) -> StepView | None:
    with speaking(lang):
        if (tables := _lab_tables()) is None:
            _warn_lab_table_missing()
            return None
        rows, healed = tables
        frontier = lab_stored.pareto_frontier(rows)
        caption = _(
            "Measured on SmolLM2-135M converted without training: on the frontier, {models}.",
            models=_(", ").join(lab_text.point_name(r) for r in frontier),
        )
        if healed:
            caption = sentences(caption, lab_text.best_healed_finding(rows, healed))
        return StepView(
            # the whole-model cache at the lab's default context, on hover only: the chart is per token
            lab_figures.pareto_figure(rows, context_length=cast(int, lab_link.CONTEXT.default), healed=healed),
            [
                {
                    "model": r.label,
                    "settings": r.settings,
                    "perplexity": round(r.perplexity, 4),
                    "cache_bytes_per_token_float32": r.cache_bytes_per_token,
                    "on_frontier": r in frontier,
                    "healed_perplexity": round(healed[r.key].perplexity, 4) if r.key in healed else None,
                }
                for r in rows
            ],
            caption,
            "lab",
            {},
            replace(Settings(), dtype="float32"),
        )


def _lab_tables() -> tuple[list, dict] | None:
    """The lab's stored conversions and their healed twins; None where the lab's table is missing or unreadable."""
    try:
        table = lab_stored.load_table()
    except (OSError, ValueError):
        return None
    return lab_stored.table_rows(table), lab_stored.healed_rows(lab_stored.load_heal_table())


def _warn_lab_table_missing() -> None:
    st.warning(
        _(
            "The lab's table ({file}) is missing or unreadable: run `python benchmarks/lab_table.py` to measure it.",
            file=lab_stored.TABLE_PATH.name,
        )
    )


def healed_up_close(lang: str) -> StepView | None:
    with speaking(lang):
        if (tables := _lab_tables()) is None:
            _warn_lab_table_missing()
            return None
        rows, healed = tables
        if not healed:
            st.warning(_("No conversion has been healed yet: run `python benchmarks/heal.py` to measure them."))
            return None
        figure = lab_figures.healed_figure(rows, healed)
        # titled with what it shows, as the steps' other charts are (the lab's page heads it with its own words)
        title = {"text": _("After healing, up close: perplexity against KV cache per token")}
        return StepView(
            figure | {"layout": figure["layout"] | {"title": title}},
            lab_csv_export.healed_csv_rows(rows, healed),
            sentences(*lab_text.healed_findings(rows, healed, lab_figures.HEALED_VIEW_TOP)),
            "lab",
            {},
            replace(Settings(), dtype="float32"),
        )


def healing_numbers(lang: str) -> dict[str, object]:
    """What the healing step's answer quotes, read off the same stored tables as its chart (which warns if they are
    missing)."""
    with speaking(lang):
        tables = _lab_tables()
        if tables is None or not tables[1]:
            return {"closest": "", "before": "—"}
        rows, healed = tables
        before = {row.key: row for row in rows}[lab_text.closest_healed(rows, healed).key]
        return {"closest": lab_text.best_healed_finding(rows, healed), "before": f"{before.perplexity:,.2f}"}


# Each step's view by its key (explorer.lesson.steps): called with the language (its words are in it), and the
# step's control if it has one.
def notes_example(lang: str) -> dict[str, object]:
    """The numbers the MLA step's text and answer quote, read off the same measured caches as its chart."""
    with speaking(lang):
        model, attention = NOTES_MODEL, PRESETS[NOTES_MODEL].attention
        groups = kv_cache_link.preferred_groups(model)
        rows = kv_cache_computed.cached_model_rows(model, groups, NOTES_LATENT, NOTES_ROPE, "float16", 1, False)
        by_key = {row.key: row for row in rows}
        mha, mla = by_key["mha"].elements_per_token_layer, by_key["mla"].elements_per_token_layer
        return {
            "model": model,
            "heads": attention.n_heads,
            "head_dim": attention.head_dim,
            "latent": NOTES_LATENT,
            "rope": NOTES_ROPE,
            "mha": mha,
            "mla": mla,
            "ratio": sig(mha / mla),
            "groups": sig(by_key["mla"].gqa_equivalent_groups),
        }


# The numbers a step's text, question and answer quote ({placeholders}), for the steps that quote any.
STEP_NUMBERS: dict[str, Callable[[str], dict[str, object]]] = {"mla": notes_example, "healed": healing_numbers}


STEP_VIEWS: dict[str, Callable[..., StepView | None]] = {
    "sdpa": inside_one_head,
    "heads": every_head,
    "cache": cache_grows,
    "mqa": one_kv_head,
    "gqa": groups_of_heads,
    "trained": real_model,
    "pitfall": repeated_heads,
    "mla": joint_compression,
    "rope": shared_rotary_key,
    "absorb": absorbed_decode,
    "choose": choosing,
    "healed": healed_up_close,
}
