"""Head → KV mapping: which key/value store each query head reads, for MHA, GQA, MQA and MLA, animated."""

import math

import streamlit as st

import explorer.shell  # noqa: F401  (first of ours: see explorer/shell.py)

from explorer.charts import show_chart
from explorer.glossary import design_name
from explorer.heatmaps import computed as heatmaps_computed
from explorer.heatmaps import link as heatmaps_link
from explorer.i18n import _, language, n_, sentences
from explorer.kinds.kind import Design
from explorer.kinds.registry import design
from explorer.lesson import keys as lesson_keys
from explorer.link import bound, link_query, page_link
from explorer.mapping import computed as mapping_computed
from explorer.mapping import figures as mapping_figures
from explorer.mapping import frames as mapping_frames
from explorer.mapping import fused as mapping_fused
from explorer.mapping import link as mapping_link
from explorer.mapping import reads as mapping_reads
from explorer.mapping import tables as mapping_tables
from explorer.probes.mapping import CONTEXT_TOKENS
from explorer.state import page_settings
from explorer.verbatim import show_verbatim

SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")

settings = page_settings("mapping")

st.title(_("Head → KV mapping"))
st.markdown(
    _(
        "Every query head scores the cached keys and mixes the cached values — but *whose* keys and values? "
        "In **MHA** each head has its own; in **GQA** the heads of a group share one K/V head "
        "(head $i$ reads group $\\lfloor i / (h / g) \\rfloor$ of $g$); in **MQA** all heads share one; in **MLA** "
        "every head rebuilds its own keys and values from one small latent $c^{KV}$ and shares a single rotary key "
        "$k^R$. The bottom row is drawn as wide as what is really cached per token: press **▶ Play** and watch it "
        "shrink."
    )
)

variant = bound(
    mapping_link.MAP_VARIANT,
    lambda key: st.radio(
        _("Show"), settings.variants, key=key, horizontal=True, format_func=mapping_frames.variant_label
    ),
    settings.variants,
)
with st.spinner(_("Reading which store each head reads off the layers…")):
    frames = mapping_computed.frames_for(settings)
keys = [frame.key for frame in frames]
active = keys.index(mapping_frames.frame_key(settings, variant))
frame = frames[active]
if variant == "gqa" and frame.key != f"gqa:{settings.groups}":
    st.info(
        _(
            "GQA with {groups} of {heads} is {variant}: that is the step shown.",
            groups=n_("{n} group", "{n} groups", settings.groups),
            heads=n_("{n} head", "{n} heads", settings.heads),
            variant=frame.key.upper(),
        )
    )

store_options = ("none", *frame.stores)
store = bound(
    mapping_link.MAP_STORE,
    lambda key: st.selectbox(
        _("Highlight the query heads that read"),
        store_options,
        key=key,
        format_func=lambda name: mapping_frames.store_label(name, html=False),
        help=_("Pick a KV head (or MLA's latent) to see which query heads read it."),
    ),
    store_options,
)
highlight = None if store == "none" else store

# The figure, then the shapes, one under the other: side by side, a projector's 1024 px squeezed the table's notes to
# a word a line and clipped the figure's notes (issue #14 item 9).
left, right = st.container(), st.container()
with left:
    moved, unmoved = mapping_tables.separation(frames)
    width = mapping_computed.probe_width(settings.d_model)
    spec, rows = mapping_figures.mapping_chart(settings, active, highlight, language())
    show_chart(
        spec,
        name="head-kv-mapping",
        rows=rows,
        caption=sentences(
            _(
                "Colours mark groups: a line joins each query head to every store it reads. Notice the bottom row: "
                "GQA and MQA keep fewer K/V heads, MLA keeps a latent whose width does not grow with the heads."
            ),
            _("With {n} heads, the rows are drawn in labelled bundles of consecutive heads.", n=settings.heads)
            if settings.heads > mapping_frames.MAX_DRAWN
            else "",
        ),
    )
    if width == settings.d_model:
        method = _(
            "**Read off the module, not drawn from a formula.** For each step, layers built as set ($d_{{model}}$ "
            "{d_model}, seed {seed}): {tokens} were prefilled into the cache, each cached store was disturbed in "
            "turn, one token was decoded, and each head's output was caught on its way into o_proj.",
            d_model=settings.d_model,
            seed=settings.seed,
            tokens=n_("{n} token", "{n} tokens", CONTEXT_TOKENS),
        )
    else:
        method = _(
            "**Read off the module, not drawn from a formula.** For each step, layers with your heads, groups and "
            "per-head widths and seed {seed}, their input narrowed from {d_model} to {width} numbers per token (a "
            "{d_model}-wide layer takes seconds to build here; the input width does not change which store a head "
            "reads): {tokens} were prefilled into the cache, each cached store was disturbed in turn, one token was "
            "decoded, and each head's output was caught on its way into o_proj.",
            d_model=settings.d_model,
            width=width,
            seed=settings.seed,
            tokens=n_("{n} token", "{n} tokens", CONTEXT_TOKENS),
        )
    st.caption(
        sentences(
            method,
            _(
                "A line means that head's output moved: by at least {moved} of the outputs' scale, against at most "
                "{unmoved} for heads whose store was untouched.",
                moved=f"{moved:.2g}",
                unmoved=f"{unmoved:.1g}",
            )
            if unmoved is not None
            else _(
                "A line means that head's output moved: by at least {moved} of the outputs' scale.",
                moved=f"{moved:.2g}",
            ),
            _("It agrees with the rule above for every step ✓.")
            if all(mapping_tables.formula_agrees(f) for f in frames)
            else _("⚠ It does not agree with the rule above for every step."),
        )
    )
    st.caption(
        _(
            "▶ Play and the step slider run in your browser, through every step from MHA to MLA; the rest of this page "
            "(the Show choice, the highlight and the shapes) stays on **{variant}**. Choose another variant in Show "
            "to read its shapes.",
            variant=variant.upper(),
        )
    )
    if highlight:
        who = mapping_frames.readers(frame, highlight)
        st.markdown(
            n_(
                "**{store}** is read by query head **{heads}**.",
                "**{store}** is read by query heads **{heads}**.",
                len(who),
                store=mapping_frames.store_label(highlight, html=False),
                heads=mapping_frames.ranges_text(who),
            )
        )
    group = highlight.removeprefix("kv") if highlight and variant != "mla" else "all"
    page_link(
        "pages/heatmaps.py",
        label=_("Attention heatmaps of KV group {group} ({variant})", group=group, variant=variant.upper())
        if group != "all"
        else _("Attention heatmaps of every head ({variant})", variant=variant.upper()),
        icon=":material/grid_on:",
        query=link_query(settings, {heatmaps_link.VARIANT: variant, heatmaps_link.GROUP: group}),
    )

with right:
    cfg = settings.config(variant)
    st.subheader(_("Shapes along the path: {variant}", variant=variant.upper()))
    st.caption(
        _(
            "From a forward pass of the real layer on PyTorch's meta device (exact shapes, no memory): batch "
            "{batch}, a prefill of {tokens}, then one decoded token against {keys} keys. Shapes read [batch, heads, "
            "tokens, width].",
            batch=settings.batch,
            tokens=n_("{n} token", "{n} tokens", settings.seq_len),
            keys=settings.seq_len + 1,
        )
    )
    shapes = mapping_computed.shape_rows(cfg, batch=settings.batch, seq_len=settings.seq_len)
    if variant == "mla":
        naive, absorbed = st.tabs([_("Naive: up-project"), _("Absorbed weights")])
        naive.table(mapping_tables.shape_table(shapes, "naive"), border="horizontal", hide_index=True)
        absorbed.table(mapping_tables.shape_table(shapes, "absorbed"), border="horizontal", hide_index=True)
    else:
        st.table(mapping_tables.shape_table(shapes, "both"), border="horizontal", hide_index=True)

# --- the designs after MLA, along the token axis -------------------------------------------------------------------
st.subheader(_("After MLA: what each new token reads"))
offered_designs = tuple(d for d in mapping_reads.READ_DESIGNS if d in settings.designs)
if not offered_designs:
    st.info(
        _(
            "Choose a sliding window, DSA top-k, V4's compressed attention or a linear state under “Designs after MLA” "
            "in the sidebar to watch, token by token, which cached entries each new token reads: the window sliding, "
            "the kept first tokens staying, the top-k jumping, a compressed entry appearing every m tokens, one "
            "fixed state."
        ),
        icon=":material/tune:",
    )
else:
    design_cols = st.columns([3, 1])
    with design_cols[0]:
        shown_design = bound(
            mapping_link.MAP_DESIGN,
            lambda key: st.radio(_("Design"), offered_designs, key=key, horizontal=True, format_func=design_name),
            offered_designs,
        )
    with design_cols[1]:
        tokens = bound(
            mapping_link.MAP_TOKENS,
            lambda key: st.selectbox(_("Tokens decoded"), mapping_link.MAP_TOKENS.options, key=key),
        )
    token_options = tuple(range(tokens))
    # ← and → move the token shown (as they move the lesson's steps), before its slider is drawn
    pressed = lesson_keys.arrow_key()
    token_key = mapping_link.MAP_TOKEN.key
    if pressed and token_key in st.session_state:
        moved = st.session_state[token_key] + (1 if pressed == "next" else -1)
        st.session_state[token_key] = min(max(moved, 0), tokens - 1)
    token = bound(
        mapping_link.MAP_TOKEN,
        lambda key: st.select_slider(
            _("Token shown (← →)"),
            token_options,
            key=key,
            help=_("The token whose reads the chart opens at; ▶ Play runs through every token in your browser."),
        ),
        token_options,
        say_moves=False,
    )
    chosen: Design | None = None
    blocked: str | None = None
    try:
        chosen = mapping_reads.probe_design(design(settings, shown_design), settings.d_model)
        blocked = heatmaps_computed.design_blocked(chosen)
    except ValueError as error:  # a configuration the core refuses, with its own sentence
        st.error(_("This layer cannot be built at these settings: change one in the sidebar. The core's reason:"))
        show_verbatim(str(error))
    if blocked:
        st.info(blocked, icon=":material/speed:")
    elif chosen is not None:
        with st.spinner(_("Decoding {n} tokens one at a time…", n=tokens)):
            spec, rows = mapping_reads.reads_chart(
                chosen, settings.seed, tokens, token, settings.dtype, settings.batch, language()
            )
            reads = mapping_reads.decode_reads(chosen, settings.seed, tokens, settings.dtype, settings.batch)
        show_chart(spec, name="design-reads", rows=rows, caption=mapping_reads.reads_caption(reads, shown_design))
        if chosen.config.d_model != settings.d_model:
            st.caption(
                _(
                    "Decoded through a layer like yours with its input narrowed from {d_model} to {width} numbers per "
                    "token (same heads and widths, the same cache entries; a {d_model}-wide layer takes seconds to "
                    "build here).",
                    d_model=settings.d_model,
                    width=chosen.config.d_model,
                )
            )
        lang_now, drawn = language(), chosen
        st.download_button(
            _("GIF for slides"),
            lambda: mapping_reads.reads_gif(drawn, settings.seed, tokens, settings.dtype, settings.batch, lang_now),
            file_name=f"after-mla-{shown_design}-{lang_now}.gif",
            mime="image/gif",
            on_click="ignore",
            icon=":material/animated_images:",
            help=_(
                "The animation as a GIF of {n} frames at 1024×768, drawn on the server at these settings and in "
                "this language.",
                n=tokens,
            ),
        )

if variant != "mla":
    st.subheader(_("One weight for q, k and v"))
    st.markdown(
        _(
            "Many checkpoints store the three projections as **one fused weight**, so a single matrix product gives "
            "every head's query, key and value. GPT-2's `c_attn` (and Phi-3's `qkv_proj`) **stack** them: all "
            "queries, then all keys, then all values. Falcon's and BLOOM's `query_key_value` **group** them: each KV "
            "group's query heads, then that group's key and value — one slice of the weight is one group. Either "
            "way, splitting it is a reordering of rows, so such a checkpoint loads into this layer and gives the "
            "same numbers (`attn_core.fused`; the tests hold it to HF's GPT-2 and Falcon attention with the same "
            "weights)."
        )
    )
    fused = mapping_computed.fused_result(cfg, settings.seed, settings.batch, settings.seq_len)
    spec, rows = mapping_fused.fused_chart(cfg, settings.seed, settings.batch, settings.seq_len, language())
    show_chart(
        spec,
        name="fused-qkv-layouts",
        rows=rows,
        caption=_(
            "Each block is one head's rows ($d_h$ of them), coloured by KV group as above: plain = query, hatched = "
            "key, dotted = value; the label names the head (q3 = query head 3, k1 = key head 1, v1 = value head 1). "
            "Notice the grouped layout puts each group's queries right before the key and value they read."
        ),
    )
    checked = (
        _(
            "Checked on a layer built from seed {seed} (input narrowed to {width}, as above): every block of the fused "
            "product equals the separate projection's head {agreement} (largest value {scale}, float32). Shapes at "
            "your settings, from the real layer on the meta device:",
            seed=settings.seed,
            width=fused.input_width,
            agreement=mapping_fused.fused_agreement(fused),
            scale=f"{fused.output_scale:.3g}",
        )
        if fused.input_width != settings.d_model
        else _(
            "Checked on a layer built from seed {seed}: every block of the fused product equals the separate "
            "projection's head {agreement} (largest value {scale}, float32). Shapes at your settings, from the real "
            "layer on the meta device:",
            seed=settings.seed,
            agreement=mapping_fused.fused_agreement(fused),
            scale=f"{fused.output_scale:.3g}",
        )
    )
    st.caption(checked)
    st.table(mapping_fused.fused_shape_table(fused, cfg), border="horizontal", hide_index=True)

if variant == "mla":
    st.subheader(_("MLA's two ways to the same numbers"))
    st.markdown(
        _(
            "**Naive**: up-project every cached latent to per-head keys and values ($c^{KV} W^{UK}$, "
            "$c^{KV} W^{UV}$), then attend as MHA — the whole cache is expanded again at every step. **Absorbed**: "
            "fold $W^{UK}$ into the query and $W^{UV}$ into the output, and attend in latent space, where all heads "
            "share one key/value head as in MQA:"
        )
    )
    st.latex(  # two lines: one would run off a phone's width
        r"\begin{aligned} q_{t,h}\, k_{s,h}^{\top} &= q_{t,h}\,\big(c^{KV}_s W^{UK}_h\big)^{\top} \\"
        r" &= \big(q_{t,h}\, W^{UK\top}_h\big)\, c^{KV\top}_s \end{aligned}"
    )
    with st.spinner(_("Timing MLA's two ways of decoding…")):
        ways = mapping_computed.mla_ways(cfg, settings.seed)
    diff, cost = st.columns([1, 3])
    diff.metric(
        _("Largest |naive − absorbed|"),
        f"{ways.max_abs_diff:.2g}",
        help=_(
            "Over the decoded token's outputs, which reach {scale} in magnitude (float32).",
            scale=f"{ways.output_scale:.3g}",
        ),
    )
    cost.table(mapping_tables.mla_cost_rows(cfg, ways, settings.seq_len), border="horizontal", hide_index=True)
    closing = _(
        "(shorter when the naive step would pass {budget} FLOPs). The naive way's cost grows with the cache, since it "
        "up-projects every cached token at every step; the absorbed way reads the latent as it is.",
        budget=f"10{str(round(math.log10(mapping_computed.NAIVE_FLOP_BUDGET))).translate(SUPERSCRIPTS)}",
    )
    timing = (
        _(
            "Both ways decode the same token from the same cache. FLOPs: the closed form, 2 per multiply-add. Time: "
            "the fastest of {repeats} decode steps each way (taking turns) of your layer, batch 1, float32, on this "
            "server, after {cached} cached tokens — a fixed length, so moving the length slider does not re-time",
            repeats=ways.repeats,
            cached=ways.context_len,
        )
        if ways.input_width == settings.d_model
        else _(
            "Both ways decode the same token from the same cache. FLOPs: the closed form, 2 per multiply-add. Time: "
            "the fastest of {repeats} decode steps each way (taking turns) of a layer like yours with its input "
            "narrowed to {width} (as above; the projections from x, the same work both ways, are cheaper than in "
            "yours), batch 1, float32, on this server, after {cached} cached tokens — a fixed length, so moving the "
            "length slider does not re-time",
            repeats=ways.repeats,
            width=ways.input_width,
            cached=ways.context_len,
        )
    )
    st.caption(sentences(timing, closing))
