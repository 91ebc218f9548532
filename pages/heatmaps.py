"""Attention heatmaps: the post-softmax weights of every head of a real layer, the variants compared on one input,
the steps inside one head, and one decode step through the cache."""

import streamlit as st

from attn_core import VARIANT_NAMES, VARIANTS
from explorer import heatmaps as view
from explorer.charts import difference, show_chart
from explorer.params import shown
from explorer.state import bound, page_settings
from explorer.words import count

settings = page_settings()

st.title("Attention heatmaps")
st.markdown(
    "Each query token spreads one unit of attention over the keys it may see: row *i* of a head's heatmap is "
    "softmax(q·kᵀ/√d_k) for query *i*, and sums to 1. Heads that share keys (a **KV group**) sit side by side. "
    "Every number below comes from a forward pass of the real layer built from the sidebar's settings and seed, "
    "asked for its weights (`return_weights=True`)."
)

# --- the view's own controls (all in the link, so a shared link opens this exact view) ---------------------------
top = st.columns([3, 2, 4])
offered = tuple(v for v in VARIANTS if v in settings.variants)  # the sidebar's "Variants" choice, in the usual order
with top[0]:
    variant = bound(  # GQA unless the sidebar leaves it out; a link's variant outside the choice is reported
        view.VARIANT,
        lambda key: st.radio(
            "Variant opened up",
            offered,
            key=key,
            horizontal=True,
            format_func=str.upper,
            help=" · ".join(f"{v.upper()}: {VARIANT_NAMES[v]}" for v in offered),
        ),
        offered,
    )
with top[1]:
    input_kind = bound(
        view.INPUT,
        lambda key: st.radio(
            "Input",
            view.INPUT.options,
            key=key,
            horizontal=True,
            format_func={"random": "Random vectors", "text": "Your text"}.get,
        ),
    )
with top[2]:
    text, token_mode = view.DEFAULT_TEXT, "words"
    if input_kind == "text":
        text_col, mode_col = st.columns([3, 1])
        with text_col:
            text = bound(
                view.TEXT,
                lambda key: st.text_input(
                    f"Text (at most {view.MAX_TEXT_CHARS} characters, {view.MAX_TEXT_TOKENS} tokens)",
                    key=key,
                    max_chars=view.MAX_TEXT_CHARS,
                ),
            )
        with mode_col:
            token_mode = bound(view.TOKENS, lambda key: st.radio("Tokens", view.TOKENS.options, key=key))
    else:
        st.caption(
            "Random vectors: one seeded standard-normal vector per position (the sidebar's sequence length). "
            "With text, each distinct token gets one seeded vector, so a repeated word gets the same one."
        )

controls = st.columns(4)
with controls[0]:
    scale = bound(
        view.SCALE,
        lambda key: st.select_slider(
            "Input scale",
            view.SCALES,
            key=key,
            help="Each input vector is a standard normal vector times this. Larger inputs give larger scores, and the "
            "softmax turns them into sharper attention.",
        ),
    )
with controls[1]:
    causal = bound(
        view.CAUSAL,
        lambda key: st.toggle(
            "Causal", key=key, help="On: a query sees only itself and earlier tokens, as when generating text."
        ),
    )
with controls[2]:
    rope = bound(
        view.ROPE,
        lambda key: st.toggle(
            "RoPE",
            key=key,
            help="Rotary position embedding: rotates queries and keys by their position, so scores "
            "depend on how far apart two tokens are. Off: attention cannot tell positions apart.",
        ),
    )
with controls[3]:
    pool = bound(
        view.POOL,
        lambda key: st.radio(
            "Downsample by",
            view.POOL.options,
            key=key,
            horizontal=True,
            help="When a heatmap has more cells than the page sends, blocks of cells are shown as their mean or max.",
        ),
    )

inputs = view.make_input_spec(settings, kind=input_kind, text=text, tokens=token_mode, scale=scale)
for note in inputs.notes:
    st.info(note, icon=":material/content_cut:")
spec = inputs.spec
tokens = spec.labels() if spec.tokens is not None else None
length = spec.length
cfg = view.layer_config(settings, variant, rope)

window_text = count(length, "token") if length == inputs.wanted else f"the first {length:,} of {inputs.wanted:,} tokens"
st.caption(
    f"Computed on {window_text}, batch 1, in float32 (the sidebar's batch and cache dtype size the cache, not the "
    f"weights). Input scale {scale}, causal mask {'on' if causal else 'off'}, RoPE {'on' if rope else 'off'}."
)
if length < inputs.wanted:
    st.info(
        f"A layer of d_model {settings.d_model:,} with {count(settings.heads, 'head')} is computed on a window of "
        f"{count(length, 'token')} here, so the page stays interactive on this server. "
        + (
            "With the causal mask on, these rows are exactly the first rows of the full pass: a query never sees a "
            "later key."
            if causal
            else "With the causal mask off, a full pass would also let these queries see the keys beyond the window."
        ),
        icon=":material/crop:",
    )

# --- 1. every head -----------------------------------------------------------------------------------------------
st.header("1 · Every head, grouped by shared keys")
group_size = cfg.group_size
group_options = ("all", *range(cfg.n_kv_heads))


def group_name(group) -> str:
    if group == "all":
        return "all heads"
    if group_size == 1:
        return f"head {group}"
    return f"KV group {group}: heads {group * group_size}–{(group + 1) * group_size - 1}"


pick = st.columns([2, 2, 3])
with pick[0]:
    group = bound(
        view.GROUP,
        lambda key: st.selectbox("Heads shown", group_options, key=key, format_func=group_name),
        group_options,
    )
pages = view.head_pages(settings.heads, group_size, group)
heads = pages[0]
if len(pages) > 1:
    starts = tuple(page.start for page in pages)
    with pick[1]:
        first = bound(
            view.FIRST_HEAD,
            lambda key: st.selectbox(
                f"{sum(map(len, pages))} heads: page",
                starts,
                key=key,
                format_func=lambda h: view.heads_text(pages[starts.index(h)]),
            ),
            starts,
        )
    heads = pages[starts.index(first)]
with pick[2]:
    head = bound(
        view.HEAD,
        lambda key: st.selectbox(
            "Head opened up",
            tuple(heads),
            key=key,
            help="One of the heads shown: opened up step by step (section 3), compared across variants (2) and outlined "
            "in the decode step (4).",
        ),
        tuple(heads),
        say_moves=False,
    )  # follows the page shown

if group_size == 1:
    grouped = "With as many KV groups as heads, every head keeps its own keys: this GQA is MHA."
elif group_size <= 8:
    grouped = f"Each row of panels is one KV group: its {group_size} heads read the same keys and values."
else:
    grouped = f"Each KV group's {group_size} heads read the same keys and values; they fill rows of 8 panels in order."
sharing = {
    "mha": "Every head has its own keys: each is a group of one.",
    "mqa": "All heads read one shared key and value head: their maps differ only through their queries.",
    "gqa": grouped,
    "mla": "Every head's key is rebuilt from the one latent c_kv all heads share, plus a rotary key that is shared "
    "too: heads differ through their own up-projections.",
}[variant]
st.markdown(f"**{variant.upper()}** ({VARIANT_NAMES[variant]}). {sharing}")

try:
    with st.spinner(f"Running the {variant.upper()} layer on {count(length, 'token')}…"):
        chart = view.heads_chart(cfg, settings.seed, spec, causal, heads, pool)
except ValueError as error:  # a configuration the core refuses, with its own sentence
    st.error(f"This layer cannot be built: {error}")
    st.stop()
pooling = chart.pooling
if len(heads) < settings.heads:
    st.caption(
        f"Showing {view.heads_text(heads)} of {settings.heads} ({view.MAX_PANELS} at most at once, whole KV groups where "
        "they fit): pick a group or a page above to see the others. Only the shown heads are computed: the layer is "
        "built with just them and the KV heads they read, each head drawn from its own seeded stream, so they are the "
        "full layer's heads."
    )
if pooling.pooled:
    st.info(
        f"{length:,} × {length:,} weights per head are more cells than the page sends: each cell shows the "
        f"**{pooling.describe()}** of the real weights (the hover says so). The weights are computed in full; "
        "their rows sum to 1 before pooling.",
        icon=":material/grid_view:",
    )
check = f"Rows sum to 1 within {chart.facts['row_sum_error']:.1e}"
if causal:
    check += f"; above the diagonal every weight is {chart.facts['upper_max']:g}"
show_chart(
    chart.spec,
    name="heatmaps-heads",
    rows=chart.csv.csv_text,
    caption=f"Darker = more attention, from query (row) to key (column); colour follows the square root of the weight so small weights stay visible. {check}. "
    + (
        "Notice the first row: with the causal mask the first token can only attend to itself."
        if causal
        else "Without the mask every query sees every key, the future included."
    ),
)

# --- 2. the variants compared ------------------------------------------------------------------------------------
st.header("2 · The variants on the same input")
st.markdown(
    "To compare designs rather than random weights, every variant here is **made from one MHA layer** (built from "
    "the seed): GQA and MQA average the key and value heads of each group — how Ainslie et al. (2023) turn an MHA "
    "checkpoint into GQA before further training — and MLA keeps the best rank-d_c approximation of the joint "
    "key–value weights (a truncated SVD). Queries and the output projection stay MHA's, so head "
    f"{head} means the same query in every panel. With random, untrained weights the heads share nothing to begin "
    "with, so averaging them loses more than it would in a trained model; the average of r unrelated key heads is "
    "also about 1/√r as long, so its scores are smaller and its maps flatter — one reason converted models are "
    "trained further."
)
blocked = view.comparison_blocked(settings.d_model, length)
if blocked:
    st.info(blocked, icon=":material/speed:")
else:
    configs = tuple((v, view.layer_config(settings, v, rope)) for v in settings.variants)
    with st.spinner("Making the variants from one MHA layer…"):
        chart, table = view.compare_chart(configs, settings.seed, spec, causal, head, pool)
    if rope and "mla" in settings.variants:
        st.caption(
            "RoPE is on: MHA's keys carry position in every dimension, but MLA's decoupled rotary key is shared by all "
            "heads and cannot be filled from MHA's per-head keys, so the converted MLA attends without position — "
            "part of its distance is that."
        )
    if chart is not None:
        show_chart(
            chart.spec,
            name="heatmaps-compare",
            rows=chart.csv.csv_text,
            caption=f"Head {head} with the same query weights in each variant: what changes is only the keys it reads. "
            + (f"Cells are the {chart.pooling.describe()}." if chart.pooling.pooled else ""),
        )
    st.table(table, hide_index=True)
    st.caption(
        "Output distance: ‖out − out_MHA‖ / ‖out_MHA‖ over the window. Map overlap: 1 − total-variation distance "
        "between two attention rows, averaged over rows (100 % = identical maps, the share of attention placed on the "
        "same keys). Heads of one group read the same keys, so only their queries can make their maps differ."
    )

# --- 3. inside one head ------------------------------------------------------------------------------------------
st.header(f"3 · Inside head {head}")
st.latex(r"\mathrm{Attention}(Q,K,V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V")
chart = view.steps_chart(cfg, settings.seed, spec, causal, heads, head, pool)
kv = chart.facts["kv_head"]
if variant == "mla":
    where = (
        f"Q = [q_nope; q_rope] of head {head}; K = [k_nope up-projected from the latent for head {head}; the "
        f"shared rotary key]; d_k = {cfg.qk_nope_head_dim} + {cfg.qk_rope_head_dim} = {cfg.qk_head_dim}."
    )
elif variant == "mha" or group_size == 1:
    where = f"Q, K, V are head {head}'s own; d_k = {cfg.head_dim}."
elif cfg.n_kv_heads == 1:
    where = f"K and V are the one KV head every query head shares; d_k = {cfg.head_dim}."
else:
    where = (
        f"K and V belong to KV head {kv}, which heads {kv * group_size}–{(kv + 1) * group_size - 1} share; "
        f"d_k = {cfg.head_dim}."
    )
st.markdown(
    f"The numbers the layer attended with, taken from its own projections{' after RoPE' if rope else ''}. {where} "
    "M is 0 where a query may look and −∞ where it may not; softmax turns each row into weights that sum to 1."
)
show_chart(
    chart.spec,
    name="heatmaps-inside-head",
    rows=chart.csv.csv_text,
    caption=f"Follow ① to ⑤. ④ equals the layer's own weights for head {head} {difference(chart.facts['weights_error'])}. "
    "Scaling by 1/√d_k keeps scores from growing with the head width, which would make the softmax nearly one-hot. "
    + (f"Square matrices show the {chart.pooling.describe()}." if chart.pooling.pooled else ""),
)
st.caption(
    f"The outputs of {'all ' + count(settings.heads, 'head') if len(heads) > 1 and len(heads) == settings.heads else view.heads_text(heads)}"
    f" (each head's ⑤) side by side are what o_proj received in the layer's forward "
    f"pass, {difference(chart.facts['output_rebuild_error'])} (their largest value is "
    f"{chart.facts['output_scale']:.3g}); o_proj mixes them into the layer's output."
)

# --- 4. one decode step ------------------------------------------------------------------------------------------
st.header("4 · One step of generation")
last = f" {shown(tokens[-1])}" if tokens else ""
chart = view.decode_chart(cfg, settings.seed, spec, causal, heads, head, pool)
st.markdown(
    f"Generating reads the cache: what a prefill stores for the first {count(chart.facts['cached_before'], 'token')} "
    f"({'their latent c_kv and shared rotary key' if variant == 'mla' else 'their keys after RoPE and values'}) went "
    f"into a fresh cache, then the last token (position {length - 1}{last}) ran alone through the layer as one decode "
    "step, asking for its weights. Its row is what one step of generation attends to — itself and everything cached."
)
show_chart(
    chart.spec,
    name="heatmaps-decode-step",
    rows=chart.csv.csv_text,
    caption=f"One row per head shown (head {head} outlined). The step through the cache gives the last row of the full "
    f"pass {difference(chart.facts['decode_error'])}: caching changes the cost, not the result."
    + (f" Cells are the {chart.pooling.describe()}." if chart.pooling.pooled else ""),
)
st.table(view.cache_table(chart.facts["cache_shapes"], cfg, settings.dtype), hide_index=True)
if variant != "mla" and len(heads) < settings.heads:
    kv_read = cfg.kv_heads_read(heads)
    st.caption(
        f"Measured on the layer of {view.heads_text(heads)}: its cache holds the {count(len(kv_read), 'KV head')} "
        f"they read. The full layer's cache holds all {count(cfg.n_kv_heads, 'KV head')}: "
        f"{cfg.cache_elements_per_token:,} numbers per token."
    )
if variant == "mla":
    st.caption(
        "MLA's decode step attends in latent space: each head's query is moved into the latent by W_UK (absorbed "
        "into the query), so every head reads the same c_kv and k_rope — one wide shared KV head, like MQA."
    )
else:
    st.caption(
        f"Each cached KV head is read by {count(group_size, 'query head')}: "
        f"{count(cfg.n_kv_heads, 'key and value head')} serve{'s' if cfg.n_kv_heads == 1 else ''} "
        f"{count(settings.heads, 'query head')}."
    )
