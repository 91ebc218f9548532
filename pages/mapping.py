"""Head → KV mapping: which key/value store each query head reads, for MHA, GQA, MQA and MLA, animated."""

import streamlit as st

from attn_core import VARIANT_NAMES
from explorer import mapping as view
from explorer.charts import show_chart
from explorer.probes.mapping import CONTEXT_TOKENS
from explorer.state import bound, link_query, page_link, page_settings
from explorer.words import count

settings = page_settings()

st.title("Head → KV mapping")
st.markdown(
    "Every query head scores the cached keys and mixes the cached values — but *whose* keys and values? "
    "In **MHA** each head has its own; in **GQA** the heads of a group share one K/V head "
    "(head *i* reads group ⌊*i* / (heads / groups)⌋); in **MQA** all heads share one; in **MLA** every head rebuilds "
    "its own keys and values from one small latent `c_kv` and shares a single rotary key `k_rope`. "
    "The bottom row is drawn as wide as what is really cached per token: press **▶ Play** and watch it shrink."
)

variant = bound(
    view.MAP_VARIANT,
    lambda key: st.radio(
        "Show",
        settings.variants,
        key=key,
        horizontal=True,
        format_func=lambda v: f"{v.upper()} · {VARIANT_NAMES[v]}",
    ),
    settings.variants,
)
frames = view.frames_for(settings)
keys = [frame.key for frame in frames]
active = keys.index(view.frame_key(settings, variant))
frame = frames[active]
if variant == "gqa" and frame.key != f"gqa:{settings.groups}":
    st.info(
        f"GQA with {count(settings.groups, 'group')} of {count(settings.heads, 'head')} is "
        f"{frame.key.upper()}: that is the step shown."
    )

store_options = ("none", *frame.stores)
store = bound(
    view.MAP_STORE,
    lambda key: st.selectbox(
        "Highlight the query heads that read",
        store_options,
        key=key,
        format_func=view.store_label,
        help="Pick a KV head (or MLA's latent) to see which query heads read it.",
    ),
    store_options,
)
highlight = None if store == "none" else store

left, right = st.columns([3, 2], gap="medium")
with left:
    moved, unmoved = view.separation(frames)
    width = view.probe_width(settings.d_model)
    built = (
        f"layers built as set (d_model {settings.d_model}, seed {settings.seed})"
        if width == settings.d_model
        else f"layers with your heads, groups and per-head widths and seed {settings.seed}, their input narrowed from "
        f"{settings.d_model} to {width} numbers per token (a {settings.d_model}-wide layer takes seconds to build here; "
        "the input width does not change which store a head reads)"
    )
    spec, rows = view.mapping_chart(settings, active, highlight)
    show_chart(
        spec,
        name="head-kv-mapping",
        rows=rows,
        caption=(
            "Colours mark groups: a line joins each query head to every store it reads. Notice the bottom row: GQA "
            "and MQA keep fewer K/V heads, MLA keeps a latent whose width does not grow with the heads."
            + (
                f" With {settings.heads} heads, the rows are drawn in labelled bundles of consecutive heads."
                if settings.heads > view.MAX_DRAWN
                else ""
            )
        ),
    )
    st.caption(
        f"**Read off the module, not drawn from a formula.** For each step, {built}: "
        f"{CONTEXT_TOKENS} tokens were prefilled into the cache, each cached store was disturbed in turn, one token "
        "was decoded, and each head's output was caught on its way into o_proj. A line means that head's output moved: "
        f"by at least {moved:.2g} of the outputs' scale"
        + (f", against at most {unmoved:.1g} for heads whose store was untouched." if unmoved is not None else ".")
        + (
            " It agrees with the rule above for every step ✓."
            if all(view.formula_agrees(f) for f in frames)
            else " ⚠ It does not agree with the rule above for every step."
        )
    )
    st.caption(
        f"▶ Play and the step slider run in your browser, through every step from MHA to MLA; the rest of this page "
        f"(the Show choice, the highlight and the shapes) stays on **{variant.upper()}**. Choose another variant in Show "
        "to read its shapes."
    )
    if highlight:
        who = view.readers(frame, highlight)
        st.markdown(
            f"**{view.store_label(highlight)}** is read by query head{'s' if len(who) > 1 else ''} **{view.ranges_text(who)}**."
        )
    group = highlight.removeprefix("kv") if highlight and variant != "mla" else "all"
    page_link(
        "pages/heatmaps.py",
        label=f"Attention heatmaps of {'KV group ' + group if group != 'all' else 'every head'} ({variant.upper()})",
        icon=":material/grid_on:",
        query=link_query(settings, hm_variant=variant, hm_group=group),
    )

with right:
    cfg = settings.config(variant)
    st.subheader(f"Shapes along the path: {variant.upper()}")
    st.caption(
        f"From a forward pass of the real layer on PyTorch's meta device (exact shapes, no memory): batch "
        f"{settings.batch}, a prefill of {count(settings.seq_len, 'token')}, then one decoded token against "
        f"{settings.seq_len + 1:,} keys. Shapes read [batch, heads, tokens, width]."
    )
    rows = view.shape_rows(cfg, settings.batch, settings.seq_len)
    if variant == "mla":
        naive, absorbed = st.tabs(["Naive: up-project", "Absorbed weights"])
        naive.table(view.shape_table(rows, "naive"), border="horizontal", hide_index=True)
        absorbed.table(view.shape_table(rows, "absorbed"), border="horizontal", hide_index=True)
    else:
        st.table(view.shape_table(rows, "both"), border="horizontal", hide_index=True)

if variant != "mla":
    st.subheader("One weight for q, k and v")
    st.markdown(
        "Many checkpoints store the three projections as **one fused weight**, so a single matrix product gives every "
        "head's query, key and value. GPT-2's `c_attn` (and Phi-3's `qkv_proj`) **stack** them: all queries, then "
        "all keys, then all values. Falcon's and BLOOM's `query_key_value` **group** them: each KV group's query "
        "heads, then that group's key and value — one slice of the weight is one group. Either way, splitting it "
        "is a reordering of rows, so such a checkpoint loads into this layer and gives the same numbers "
        "(`attn_core.fused`; the tests hold it to HF's GPT-2 and Falcon attention with the same weights)."
    )
    fused = view.fused_result(cfg, settings.seed, settings.batch, settings.seq_len)
    spec, rows = view.fused_chart(cfg, settings.seed, settings.batch, settings.seq_len)
    show_chart(
        spec,
        name="fused-qkv-layouts",
        rows=rows,
        caption="Each block is one head's rows (head_dim of them), coloured by KV group as above: plain = query, "
        "hatched = key, dotted = value. Notice the grouped layout puts each group's queries right before the key and "
        "value they read.",
    )
    st.caption(
        f"Checked on a layer built from seed {settings.seed}"
        + (f" (input narrowed to {fused.input_width}, as above)" if fused.input_width != settings.d_model else "")
        + f": every block of the fused product equals the separate projection's head {view.fused_agreement(fused)} (largest value "
        f"{fused.output_scale:.3g}, float32). Shapes at your settings, from the real layer on the meta device:"
    )
    st.table(view.fused_shape_table(fused, cfg), border="horizontal", hide_index=True)

if variant == "mla":
    st.subheader("MLA's two ways to the same numbers")
    st.markdown(
        "**Naive**: up-project every cached latent to per-head keys and values (`c_kv · W_uk`, `c_kv · W_uv`), then "
        "attend as MHA — the whole cache is expanded again at every step. **Absorbed**: fold `W_uk` into the query and "
        "`W_uv` into the output, and attend in latent space, where all heads share one key/value head as in MQA."
    )
    ways = view.mla_ways(cfg, settings.seed)
    diff, cost = st.columns([1, 3])
    diff.metric(
        "Largest |naive − absorbed|",
        f"{ways.max_abs_diff:.2g}",
        help=f"Over the decoded token's outputs, which reach {ways.output_scale:.3g} in magnitude (float32).",
    )
    cost.table(view.mla_cost_rows(cfg, ways, settings.seq_len), border="horizontal", hide_index=True)
    timed_layer = (
        "your layer"
        if ways.input_width == settings.d_model
        else f"a layer like yours with its input narrowed to {ways.input_width} (as above; the projections from x, "
        "the same work both ways, are cheaper than in yours)"
    )
    st.caption(
        f"Both ways decode the same token from the same cache. FLOPs: the closed form, 2 per multiply-add. Time: the fastest "
        f"of {ways.repeats} decode steps each way (taking turns) of {timed_layer}, batch 1, float32, on this server, after "
        f"{ways.context_len:,} cached tokens — a fixed length, so moving the length slider does not re-time "
        f"(shorter when the naive step would pass {view.NAIVE_FLOP_BUDGET:.0e} FLOPs). The naive way's cost grows with "
        "the cache, since it up-projects every cached token at every step; the absorbed way reads the latent as it is."
    )
