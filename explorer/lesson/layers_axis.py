"""Two steps of the second chapter on the layers axis, after linear attention: why MiniMax-M2 went back to full
attention (its authors' stated reasons, beside the cache that costs, against MiniMax-M1's lightning 7:1 hybrid), and
Gemma 3n's layers that read an earlier layer's keys and values (its cache measured with and without the sharing).

Every number is the core's (attn_core.describe_model, through the axes page's probe); the words are in after_mla.py.
explorer/lesson/after_mla_views.py puts VIEWS and NUMBERS beside its own."""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache

from attn_core import PUBLISHED, STATED_REASONS, describe_model
from explorer.axes import computed as axes_computed
from explorer.axes import figures as axes_figures
from explorer.axes import link as axes_link
from explorer.axes.text import extremes_sentence, kind_label
from explorer.charts import unit_axis
from explorer.grid import narrow
from explorer.i18n import _, format_bytes, percent, sig, speaking
from explorer.probes.axes import ModelCurves, model_curves

from .views import StepView

TOKENS = 131072  # as the chapter's other steps compare published models (after_mla_views.TOKENS)
FULL_AGAIN_MODEL, HYBRID_MODEL = "MiniMax-M2", "MiniMax-M1"
SHARED_MODEL = "Gemma 3n E4B"
KIND_COLORS = {"sliding": "#4a9a6b", "full": "#3b6ea8", "shared": "#c4573a"}


def _published(name: str) -> ModelCurves:
    """The axes page's own curves of a published model (cached there)."""
    drawn, _missing = axes_computed.cached_published()
    return next(model for model in drawn if model.name == name)


def _kinds(model: ModelCurves) -> dict:
    return {kind.kind: kind for kind in model.kinds}


def _axes_query(tokens: int) -> dict:
    return {axes_link.TOKENS: tokens, axes_link.MEASURE: "held"}


# --- MiniMax-M2: full attention again ------------------------------------------------------------------------------
def full_again_numbers(lang: str) -> dict[str, object]:
    with speaking(lang):
        m2, m1 = _published(FULL_AGAIN_MODEL), _published(HYBRID_MODEL)
        i, j = m2.at(TOKENS), m1.at(TOKENS)
        hybrid = _kinds(m1)
        reason = STATED_REASONS[FULL_AGAIN_MODEL]
        return {
            "model": m2.name,
            "hybrid": m1.name,
            "layers": m2.layers,
            "linear": hybrid["linear"].count,
            "full": hybrid["full"].count,
            "tokens": axes_figures.token_label(TOKENS),
            "m2_bytes": format_bytes(m2.held[i]),
            "m1_bytes": format_bytes(m1.held[j]),
            "ratio": sig(m2.held[i] / m1.held[j]),
            "linear_bytes": format_bytes(hybrid["linear"].held[j]),
            "source": reason.source,
        }


def full_again(lang: str) -> StepView:
    with speaking(lang):
        models = [_published(HYBRID_MODEL), _published(FULL_AGAIN_MODEL)]
        figure, csv = axes_figures.context_figure(models, "held", TOKENS, named_ends=False)
        caption = extremes_sentence(models, TOKENS, "held")
        return StepView(figure, csv, caption, "axes", _axes_query(TOKENS))


# --- Gemma 3n: layers that read an earlier layer's cache -------------------------------------------------------------
@cache
def unshared_curves() -> ModelCurves:
    """Gemma 3n E4B as published but with every layer keeping its own keys and values (num_kv_shared_layers 0)."""
    config = copy.deepcopy(PUBLISHED[SHARED_MODEL])
    config["text_config"]["num_kv_shared_layers"] = 0
    return model_curves(config, name=SHARED_MODEL)


def shared_tokens() -> int:
    """The length the step reads at: Gemma 3n's published context (32K), where the issue's figures are quoted."""
    context = _published(SHARED_MODEL).context
    return context if context is not None else TOKENS


def kv_sources() -> dict[str, int]:
    """The layer (counted from 0) each kind's consumers read, as the core says: {"sliding": 18, "full": 19}."""
    model = describe_model(PUBLISHED[SHARED_MODEL])
    sources = {source for source in model.kv_sources if source is not None}
    kinds = model.layer_kinds
    return {kinds[source]: source for source in sorted(sources)}


def shared_numbers(lang: str) -> dict[str, object]:
    with speaking(lang):
        shared, unshared, tokens = _published(SHARED_MODEL), unshared_curves(), shared_tokens()
        i = shared.at(tokens)
        kinds, own = _kinds(shared), _kinds(unshared)
        sources = kv_sources()
        held, whole = shared.held[i], unshared.held[i]
        return {
            "model": shared.name,
            "layers": shared.layers,
            "shared": kinds["shared"].count,
            "sliding_source": sources["sliding"],
            "full_source": sources["full"],
            "tokens": axes_figures.token_label(tokens),
            "held": format_bytes(held),
            "unshared": format_bytes(whole),
            "saved": percent(1 - held / whole),
            "full_shared": own["full"].count - kinds["full"].count,
            "per_full": format_bytes(own["full"].held[i] // own["full"].count),
        }


def _bar_traces(models: list[tuple[str, ModelCurves]], tokens: int) -> list[dict]:
    """One trace per layer kind that holds bytes, stacked: each bar a model's cache at `tokens`, its hover the kind's
    layer count (the shared layers hold none: the bar's label says so)."""
    order = list(dict.fromkeys(kind.kind for _name, model in models for kind in model.kinds))
    data = []
    for kind in order:
        found = [(name, _kinds(model).get(kind), model.at(tokens)) for name, model in models]
        if not any(k and k.held[i] for _name, k, i in found):
            continue
        data.append(
            {
                "type": "bar",
                "x": [name for name, _k, _i in found],
                "y": [k.held[i] if k else 0 for _name, k, i in found],
                "customdata": [k.count if k else 0 for _name, k, _i in found],
                "name": _("{kind} layers", kind=kind_label(kind)),
                "marker": {"color": KIND_COLORS.get(kind, "#6b6b6b")},
                "hovertemplate": _(
                    "{kind} × {count}: {bytes} bytes", kind=kind_label(kind), count="%{customdata}", bytes="%{y:,}"
                )
                + "<extra></extra>",
            }
        )
    return data


def sharing_figure(shared: ModelCurves, unshared: ModelCurves, tokens: int) -> tuple[dict, list[dict]]:
    """The cache at `tokens` as published and with no layer sharing, stacked by layer kind, each bar's total written
    on it and the shared layers' count under the first."""
    count = _kinds(shared)["shared"].count
    bars = [
        (_("as published") + "<br>" + _("{count} shared layers: 0 B", count=count), shared),
        (_("every layer its own K/V"), unshared),
    ]
    totals = [model.held[model.at(tokens)] for _name, model in bars]
    annotations = [
        {"x": name, "y": total, "text": format_bytes(total), "showarrow": False, "yanchor": "bottom"}
        for (name, _model), total in zip(bars, totals, strict=True)
    ]
    layout = {
        "title": {"text": _("{model}'s cache at {tokens} tokens", model=shared.name, tokens=f"{tokens:,}")},
        "barmode": "stack",
        "xaxis": {"title": {"text": ""}},
        "yaxis": {"title": {"text": _("bytes (batch {batch})", batch=shared.batch)}} | unit_axis(1.12 * max(totals)),
        "annotations": annotations,
        "height": 460,
        "margin": {"t": 60, "b": 80, "l": 100, "r": 20},
        "legend": {"orientation": "h", "y": -0.2, "x": 0, "yanchor": "top"},
        "hovermode": "closest",
    }
    phone = layout | {"height": 560, "legend": {"orientation": "h", "y": -0.2, "x": 0, "yanchor": "top"}}
    csv = [
        {
            "bar": label,
            "kind": kind.kind,
            "layers": kind.count,
            "tokens": tokens,
            "held_bytes": kind.held[model.at(tokens)],
        }
        for label, model in (("as published", shared), ("every layer its own K/V", unshared))
        for kind in model.kinds
    ]
    return {"data": _bar_traces(bars, tokens), "layout": layout, "narrow": narrow(phone)}, csv


def shared_layers(lang: str) -> StepView:
    with speaking(lang):
        shared, unshared, tokens = _published(SHARED_MODEL), unshared_curves(), shared_tokens()
        figure, csv = sharing_figure(shared, unshared, tokens)
        i = shared.at(tokens)
        caption = _(
            "Measured by the core on PyTorch's meta device (exact shapes, no memory): {model} holds {held} at {tokens} "
            "tokens in 16 bits; the same config with num_kv_shared_layers = 0 holds {unshared}. Its {shared} shared layers read "
            "layer {sliding_source} (window) and layer {full_source} (full), counted from 0.",
            model=shared.name,
            held=format_bytes(shared.held[i]),
            tokens=f"{tokens:,}",
            unshared=format_bytes(unshared.held[i]),
            shared=_kinds(shared)["shared"].count,
            sliding_source=kv_sources()["sliding"],
            full_source=kv_sources()["full"],
        )
        return StepView(figure, csv, caption, "axes", _axes_query(tokens))


VIEWS: dict[str, Callable[..., StepView | None]] = {"full_again": full_again, "shared_kv": shared_layers}
NUMBERS: dict[str, Callable[[str], dict[str, object]]] = {
    "full_again": full_again_numbers,
    "shared_kv": shared_numbers,
}
