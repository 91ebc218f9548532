"""The trade-off across every axis in words, in this run's language: each axis's and each design's name, and what the
drawn points say at a context and a budget (computed from the points, never written by hand)."""

from __future__ import annotations

from explorer.i18n import N_, _, fmt, format_bytes, percent, sentences

from .axes_points import AxisPoint, Budget, frontier, original_point
from .text import POINT_NAMES

AXIS_NAMES = {
    "heads": N_("fewer KV heads"),
    "latent": N_("latent (MLA)"),
    "window": N_("window and sinks"),
    "layers": N_("local/global layers"),
    "bits": N_("fewer bits"),
    "combined": N_("two axes together"),
}
PATTERN_NAMES = {"gemma3": N_("Gemma 3's 5:1"), "gpt-oss": N_("gpt-oss's 1:1")}


def axis_name(axis: str) -> str:
    return _(AXIS_NAMES[axis])


def _window(spec: dict) -> str:
    sinks = spec.get("sink_tokens", 0)
    if spec.get("learned_sinks"):
        return _("window {w}, learned sinks", w=spec["window"])
    if sinks == 0:
        return _("window {w}", w=spec["window"])
    return (
        _("window {w} + {n} sinks", w=spec["window"], n=sinks)
        if sinks > 1
        else _("window {w} + 1 sink", w=spec["window"])
    )


def _bits(spec: dict) -> str:
    if spec["keys"] == "channel":
        return _("{bits}-bit, keys per channel", bits=spec["bits"])
    return _("{bits}-bit, keys per token", bits=spec["bits"])


def _lab_name(key: str, spec: dict) -> str:
    if spec.get("variant") == "mla":
        return f"MLA {spec['kv_lora_rank']}+{spec['qk_rope_head_dim']}"
    return _(POINT_NAMES[key]) if key in POINT_NAMES else key


def _both(first: str, second: str) -> str:
    """Two parts of one design's name ("Gemma 3's 5:1, window 512"): a Chinese comma between them in Chinese, where a
    list of names is joined by the enumeration comma."""
    return _("{first}, {second}", first=first, second=second)


def point_name(point: AxisPoint) -> str:
    """A design's short name: what it cuts and how far (the chart draws it beside the frontier's points)."""
    spec = point.spec
    if point.axis in ("heads", "latent"):
        name = _lab_name(point.key.removesuffix("+healed"), spec)
    elif point.axis == "bits":
        name = _bits(spec)
    elif "source" in spec:  # a lab point's quantised cache ("mla-128-32-healed")
        source = spec["source"].removesuffix("-healed")
        if source.startswith("mla-"):
            _variant, d_c, d_r = source.split("-")
            source = _lab_name(source, {"variant": "mla", "kv_lora_rank": d_c, "qk_rope_head_dim": d_r})
        else:
            source = _lab_name(source, {})
        if point.healed:
            return _("{model}, healed, {bits}", model=source, bits=_bits(spec))
        return _both(source, _bits(spec))
    else:
        name = _window(spec)
        pattern = PATTERN_NAMES.get(spec["pattern"])
        if pattern is not None:
            name = _both(_(pattern), name)
        if "bits" in spec:
            name = _both(name, _bits(spec))
    return _("{model}, healed", model=name) if point.healed else name


def _times(point: AxisPoint) -> str:
    return f"×{point.times_original:,.2f}"


def _bytes(point: AxisPoint, context: int) -> str:
    return format_bytes(point.bytes_per_token(context))


def frontier_findings(points: list[AxisPoint], context: int, numbers: list[int]) -> list[str]:
    """The frontier at this context, named from its smallest cache to the original, each design by its number on
    the chart (`numbers`, one per frontier design; designs on one spot share one)."""
    line = frontier(points, context)
    groups: dict[int, list[str]] = {}
    for number, p in zip(numbers, line, strict=True):
        groups.setdefault(number, []).append(f"{point_name(p)} {_times(p)}")
    steps = _("; ").join(
        _("**{number}**: {designs}", number=number, designs=_(", ").join(named)) for number, named in groups.items()
    )
    return [
        _(
            "At {context} tokens the frontier (no design both smaller and less hurt) runs through {n} designs, "
            "smallest cache first, numbered as on the chart: {steps}.",
            context=fmt(context),
            n=len(line),
            steps=steps,
        )
    ]


def budget_findings(points: list[AxisPoint], budget: Budget) -> list[str]:
    """At this budget, which cut hurts least, and the best of every other axis that fits."""
    context = budget.context
    head = _(
        "Within {share} of the original's cache ({bytes} per token at {context} tokens)",
        share=percent(budget.share),
        bytes=format_bytes(budget.bytes_per_token),
        context=fmt(context),
    )
    if budget.best is None:
        return [_("{budget}, no stored design fits.", budget=head)]
    best = budget.best
    out = [
        _(
            "{budget}, the cut that hurts least is {model}: {times} the original's perplexity, {bytes} per token "
            "({axis}).",
            budget=head,
            model=point_name(best),
            times=_times(best),
            bytes=_bytes(best, context),
            axis=axis_name(best.axis),
        )
    ]
    others = [p for axis, p in budget.best_by_axis.items() if axis != best.axis]
    if others:
        # each worded first: the catalog's extractor does not see a message inside another message's arguments
        bests = [
            _("{axis}: {model} {times}", axis=axis_name(p.axis), model=point_name(p), times=_times(p))
            for p in sorted(others, key=lambda p: p.times_original)
        ]
        out.append(_("The best of each other axis there: {list}.", list=_("; ").join(bests)))
    missing = [axis_name(axis) for axis in AXIS_NAMES if axis not in budget.best_by_axis]
    if missing:
        out.append(_("Nothing of {axes} fits.", axes=_(", ").join(missing)))
    return out


def evaluation_note(points: list[AxisPoint]) -> str:
    """How each point was scored: the pieces' lengths, and the original's perplexity on each."""
    by_piece = {p.piece: p.original_perplexity for p in points}
    return sentences(
        _(
            "Each point's perplexity is divided by the original's on the same pieces of the same text (the first "
            "4,096 tokens of `pydoc_data.topics`)."
        ),
        *(
            _(
                "Windows and layer patterns are scored in pieces of {piece} tokens (a window has to cut the piece to "
                "matter), the original {ppl} there.",
                piece=fmt(piece),
                ppl=f"{ppl:,.2f}",
            )
            if piece > min(by_piece)
            else _(
                "The other axes in the lab's windows of {piece} tokens, the original {ppl} there.",
                piece=fmt(piece),
                ppl=f"{ppl:,.2f}",
            )
            for piece, ppl in sorted(by_piece.items(), reverse=True)
        ),
    )


def share_of_original(point: AxisPoint, points: list[AxisPoint], context: int) -> float:
    return point.bytes_per_token(context) / original_point(points).bytes_per_token(context)
