"""The lab page's sections for the other axes (pages/lab.py calls them): one trade-off across every axis at the
reader's context and budget, the new axes' stored rows, the same passage continued by a windowed model and a 2-bit
cache, and a windowed model healed live (the lab's own heal machinery)."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from explorer.charts import show_chart
from explorer.i18n import _, fmt, format_bytes, percent, sentences
from explorer.lab import axes_computed, axes_figures, axes_points, axes_text, link
from explorer.link import bound
from explorer.model import trained_model
from explorer.probes import lab_axes
from explorer.probes.lab import WINDOW_POINTS
from explorer.trained.text import token_chips

NEW_AXES = ("window", "layers", "bits", "combined")


def show_tradeoff() -> None:
    """The chart, its computed caption, and the new axes' rows."""
    points = axes_points.load_points()
    st.subheader(_("Every axis at once: which cut hurts least?"))
    st.markdown(
        _(
            "A cache can shrink along several axes: **fewer KV heads**, a **latent** (MLA), a **window** that keeps "
            "only the latest tokens (with the very first ones kept as *sinks*, StreamingLLM's finding), **local and "
            "global layers** (a window in most layers, full attention in a few: Gemma 3 keeps one layer in six "
            "global, gpt-oss one in two), or **fewer bits** per cached number (KIVI: keys quantised per channel, "
            "values per token). Every design measured on this trained model is one point below. A window's saving "
            "grows with the context, so pick the context the cache is counted at, and a budget."
        )
    )
    contexts = tuple(c for c in link.AXES_CONTEXT.options if c in axes_points.contexts_of(points))
    left, right = st.columns(2)
    with left:
        context = bound(
            link.AXES_CONTEXT,
            lambda key: st.select_slider(
                _("Context the caches are counted at (tokens)"), options=contexts, format_func=fmt, key=key
            ),
            contexts,
        )
    with right:
        share = bound(
            link.AXES_BUDGET,
            lambda key: st.select_slider(
                _("Budget: share of the original's cache"),
                options=link.AXES_BUDGET.options,
                format_func=lambda p: f"{p} %",
                key=key,
            ),
        )
    budget = axes_points.within_budget(points, context, share / 100)
    numbers = axes_figures.frontier_numbers(axes_points.frontier(points, context), context)
    show_chart(
        axes_figures.axes_figure(points, context, numbers, budget.bytes_per_token, budget.share),
        name="lab-axes",
        rows=axes_figures.axes_csv_rows(points, context),
        # the chart's numbered frontier named in a paragraph of its own, right under it
        caption=sentences(*axes_text.frontier_findings(points, context, numbers))
        + "\n\n"
        + sentences(
            *axes_text.budget_findings(points, budget),
            axes_text.evaluation_note(points),
            _(
                "A window's perplexity is its loss on pieces of that length: at a longer context more of the tokens "
                "lie beyond its reach. Stars are healed designs; a triangle at the top is a design beyond ×{top}.",
                top=f"{axes_figures.TOP:g}",
            ),
        ),
    )
    st.dataframe(axes_rows(points, context), hide_index=True)
    st.caption(provenance())


def axes_rows(points: list[axes_points.AxisPoint], context: int) -> list[dict]:
    """The new axes' designs, as the lab's table shows its conversions: perplexity, against the original, cache."""
    line = axes_points.frontier(points, context)
    return [
        {
            _("design"): axes_text.point_name(p),
            _("axis"): axes_text.axis_name(p.axis),
            _("perplexity"): f"{p.perplexity:,.2f}",
            _("× original"): f"{p.times_original:,.2f}",
            _("cache / token at {n}", n=fmt(context)): format_bytes(p.bytes_per_token(context)),
            _("of the original's"): percent(axes_text.share_of_original(p, points, context), 1),
            _("frontier"): "●" if p in line else "",
            _("scored in pieces of"): fmt(p.piece),
        }
        for p in sorted(
            (p for p in points if p.axis in NEW_AXES),
            key=lambda p: (NEW_AXES.index(p.axis), p.bytes_per_token(context), p.times_original),
        )
    ]


def provenance() -> str:
    """Where the new axes' rows come from: each stored table's script, date, machine and inputs."""
    tables = (
        (axes_points.WINDOW_TABLE_PATH, "benchmarks/window_sinks.py"),
        (axes_points.WINDOW_HEAL_TABLE_PATH, "benchmarks/window_heal.py"),
        (axes_points.CACHE_BITS_TABLE_PATH, "benchmarks/cache_bits.py"),
    )
    said = []
    for path, script in tables:
        table = axes_points._read(path)
        if table is None:
            continue
        said.append(
            _(
                "`{file}`: measured by `{script}` on {date} (`{machine}`), text sha256 `{text}…`, model file sha256 "
                "`{model}…`.",
                file=path.name,
                script=script,
                date=table["date"],
                machine=table["machine"],
                text=table["evaluation"]["text_sha256"][:12],
                model=table["model"]["gguf_sha256"][:12],
            )
        )
    return sentences(*said)


def show_side_by_side() -> None:
    """The same passage continued by the original, a window without and with a sink, and a 2-bit cache."""
    st.subheader(_("What a broken cache writes"))
    st.markdown(
        _(
            "The same passage of Python's reference ({tokens} tokens, three windows of 128), continued token by token "
            "through each model's own cache, greedy. By the time they write, the windowed models' caches have "
            "dropped the passage's start (the one with a sink keeps its first token); the 2-bit cache holds every "
            "token, each key and value rounded to one of 4 levels.",
            tokens=lab_axes.PASSAGE_TOKENS,
        )
    )
    topic = bound(
        link.PASSAGE,
        lambda key: st.selectbox(
            _("Passage (a topic of `pydoc_data.topics`)"),
            lab_axes.PASSAGES,
            key=key,
            format_func=lambda t: f"'{t}'",
        ),
    )
    if not bound(link.CONTINUE, lambda key: st.toggle(_("Continue it with each model"), key=key)):
        return
    if trained_model() is None:  # it has said why the model is absent and how to install it
        return
    with st.spinner(_("Continuing the passage with each model…")):
        tokens, length = axes_computed.passage_end(topic)
        replies = axes_computed.continuations(topic)
    st.markdown(_("The passage ends (its last {n} of {total} tokens):", n=len(tokens), total=length))
    st.html(token_chips(tokens, "passage"))
    reference = replies["original"].tokens
    items = list(replies.items())
    # two rows of two, so a phone stacks them in the same order as a laptop reads them
    columns = [column for _row in range(0, len(items), 2) for column in st.columns(2)]
    for column, (key, reply) in zip(columns, items, strict=False):
        with column:
            st.markdown(f"**{_(lab_axes.SIDE_BY_SIDE_NAMES[key])}**")
            st.html(token_chips(reply.tokens, f"continuation-{key}"))
            agree = lab_axes.agreeing_prefix(reference, reply.tokens)
            st.caption(
                sentences(
                    ""
                    if key == "original"
                    else _(
                        "Writes the original's first {n} of {total} tokens, then departs.",
                        n=agree,
                        total=len(reference),
                    )
                    if agree < len(reference)
                    else _("Writes what the original writes."),
                    _(
                        "Cache after writing: {cache} for {n} tokens.",
                        cache=format_bytes(reply.cache_bytes),
                        n=reply.cache_tokens,
                    ),
                )
            )


def show_window_heal(heal_section: Callable[[str, str, str], None]) -> None:
    """The windowed model healed live, by the page's own heal section (its button, progress and loss)."""
    point = WINDOW_POINTS[0]
    st.subheader(_("Heal a window live"))
    about = _(
        "Every layer windowed to 128 tokens, without a kept first token, loses the most: heads that parked their "
        "attention on the first token now find it gone. Healing trains its attention projections, and a learned "
        "sink logit per head (gpt-oss's: one more softmax entry a head can put weight on), to reproduce the "
        "original's dense attention layer by layer, as the conversions above heal. Scored before and after on "
        "the first 512 evaluation tokens, four times the window. The stored ★ in the chart above trained for 10 "
        "minutes, end to end as well, and was scored on pieces of 2,048."
    )
    heal_section(point.key, _(point.label), about)
