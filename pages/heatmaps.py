"""Attention heatmaps: the post-softmax weights of every head of a real layer, the variants compared on one input,
the steps inside one head, and one decode step through the cache."""

from dataclasses import replace
from typing import Literal

import streamlit as st

import explorer.shell  # noqa: F401  (first of ours: see explorer/shell.py)

from attn_core import VARIANTS
from explorer.charts import fixed_place, show_chart
from explorer.glossary import design_name, variant_name
from explorer.heatmaps import computed, figures, link, tables
from explorer.i18n import _, language, n_, sentences
from explorer.kinds.registry import design
from explorer.link import bound, text_box
from explorer.params import shown
from explorer.probes.heatmaps import MAX_TEXT_CHARS, MAX_TEXT_TOKENS
from explorer.state import page_settings
from explorer.verbatim import show_verbatim


def agreement(value: float) -> str:
    """How closely two computations agree, for a caption: exactly equal is worth saying as such."""
    # TRANSLATORS: completes "… gives the last row of the full pass {agreement}"
    return _("exactly (bit for bit)") if value == 0 else _("to within {error}", error=f"{value:.1e}")


def on_off(flag: bool) -> str:
    return _("on") if flag else _("off")


settings = page_settings("heatmaps")
lang = language()


st.title(_("Attention heatmaps"))
st.markdown(
    _(
        "Each query token spreads one unit of attention over the keys it may see: row $i$ of a head's heatmap is "
        "$\\mathrm{softmax}(q_i K^\\top / \\sqrt{d_k})$ for query $i$, and sums to 1. Heads that share keys (a "
        "**KV group**) sit side by side. Every number below comes from a forward pass of the real layer built from "
        "the sidebar's settings and seed, asked for its weights (`return_weights=True`)."
    )
)

# --- the view's own controls (all in the link, so a shared link opens this exact view) ---------------------------
top = st.columns([3, 2, 4])
offered = tuple(v for v in VARIANTS if v in settings.variants)  # the sidebar's "Variants" choice, in the usual order
with top[0]:
    variant = bound(  # GQA unless the sidebar leaves it out; a link's variant outside the choice is reported
        link.VARIANT,
        lambda key: st.radio(
            _("Variant opened up"),
            offered,
            key=key,
            horizontal=True,
            format_func=str.upper,
            help=" · ".join(_("{abbr}: {name}", abbr=v.upper(), name=variant_name(v)) for v in offered),
        ),
        offered,
    )
with top[1]:
    input_kind = bound(
        link.INPUT,
        lambda key: st.radio(
            _("Input"),
            link.INPUT.options,
            key=key,
            horizontal=True,
            format_func=lambda kind: _(link.INPUT_KINDS[kind]),
        ),
    )
with top[2]:
    text, token_mode = link.DEFAULT_TEXT, "words"
    if input_kind == "text":
        text_col, mode_col = st.columns([3, 1])
        with text_col:
            text = text_box(
                link.TEXT,
                st.text_input,
                _(
                    "Text (at most {chars} characters, {tokens} tokens)",
                    chars=MAX_TEXT_CHARS,
                    tokens=MAX_TEXT_TOKENS,
                ),
            )
        with mode_col:
            token_mode = bound(
                link.TOKENS,
                lambda key: st.radio(
                    _("Tokens"),
                    link.TOKENS.options,
                    key=key,
                    format_func=lambda mode: _(link.TOKEN_MODES[mode]),
                    help=_(
                        "Words: split at spaces, and every Chinese character is a token of its own (these seeded "
                        "layers have no tokenizer). Characters: every character, spaces included."
                    ),
                ),
            )
    else:
        st.caption(
            _(
                "Random vectors: one seeded standard-normal vector per position (the sidebar's sequence length). "
                "With text, each distinct token gets one seeded vector, so a repeated word gets the same one."
            )
        )

controls = st.columns(4)
with controls[0]:
    scale = bound(
        link.SCALE,
        lambda key: st.select_slider(
            _("Input scale"),
            link.SCALES,
            key=key,
            help=_(
                "Each input vector is a standard normal vector times this. Larger inputs give larger scores, and the "
                "softmax turns them into sharper attention."
            ),
        ),
    )
with controls[1]:
    causal = bound(
        link.CAUSAL,
        lambda key: st.toggle(
            _("Causal"), key=key, help=_("On: a query sees only itself and earlier tokens, as when generating text.")
        ),
    )
with controls[2]:
    rope = bound(
        link.ROPE,
        lambda key: st.toggle(
            "RoPE",
            key=key,
            help=_(
                "Rotary position embedding: rotates queries and keys by their position, so scores depend on how far "
                "apart two tokens are. Off: attention cannot tell positions apart."
            ),
        ),
    )
with controls[3]:
    pool = bound(
        link.POOL,
        lambda key: st.radio(
            _("Downsample by"),
            link.POOL.options,
            key=key,
            horizontal=True,
            format_func=lambda how: _(link.POOLS[how]),
            help=_(
                "When a heatmap has more cells than the page sends, blocks of cells are shown as their mean or max."
            ),
        ),
    )

inputs = computed.make_input_spec(settings, kind=input_kind, text=text, tokens=token_mode, scale=scale)
spec = inputs.spec
tokens = spec.labels() if spec.tokens is not None else None
length = spec.length
cfg = computed.layer_config(settings, variant, rope)
computed_on = fixed_place()
for note in inputs.notes:
    computed_on.info(note, icon=":material/content_cut:")
if input_kind == "text":  # the split, as the layer reads it (a token in code spans: nothing in it acts as markdown)
    computed_on.caption(
        n_("Split into {n} token:", "Split into {n} tokens:", len(inputs.split))
        + " "
        + " ".join(f"`{token.replace('`', 'ˋ')}`" if token.strip() else "`␣`" for token in inputs.split)
    )

if length == inputs.wanted:
    window_text = n_("{n} token", "{n} tokens", length)
else:
    window_text = _("the first {n} of {wanted} tokens", n=length, wanted=inputs.wanted)
computed_on.caption(
    _(
        "Computed on {window}, batch 1, in float32 (the sidebar's batch and cache dtype size the cache, not the "
        "weights). Input scale {scale}, causal mask {causal}, RoPE {rope}.",
        window=window_text,
        scale=scale,
        causal=on_off(causal),
        rope=on_off(rope),
    )
)
if length < inputs.wanted:
    layer_text = _(
        "A layer of $d_{{model}}$ = {d_model} with {heads} is computed on a window of {window} here, so the page stays "
        "interactive on this server.",
        d_model=settings.d_model,
        heads=n_("{n} head", "{n} heads", settings.heads),
        window=n_("{n} token", "{n} tokens", length),
    )
    if causal:
        mask_text = _(
            "With the causal mask on, these rows are exactly the first rows of the full pass: a query never sees a "
            "later key."
        )
    else:
        mask_text = _(
            "With the causal mask off, a full pass would also let these queries see the keys beyond the window."
        )
    computed_on.info(sentences(layer_text, mask_text), icon=":material/crop:")

# --- 1. every head -----------------------------------------------------------------------------------------------
st.header(_("1 · Every head, grouped by shared keys"))
group_size = cfg.group_size
group_options = ("all", *range(cfg.n_kv_heads))


def group_name(group: int | Literal["all"]) -> str:
    if group == "all":
        return _("all heads")
    if group_size == 1:
        return _("head {head}", head=group)
    return _(
        "KV group {group}: heads {first}–{last}",
        group=group,
        first=group * group_size,
        last=(group + 1) * group_size - 1,
    )


pick = st.columns([2, 2, 3])
with pick[0]:
    group = bound(
        link.GROUP,
        lambda key: st.selectbox(_("Heads shown"), group_options, key=key, format_func=group_name),
        group_options,
    )
pages = computed.head_pages(settings.heads, group_size, group)
heads = pages[0]
if len(pages) > 1:
    starts = tuple(page.start for page in pages)
    with pick[1]:
        first = bound(
            link.FIRST_HEAD,
            lambda key: st.selectbox(
                _("{n} heads: page", n=sum(map(len, pages))),
                starts,
                key=key,
                format_func=lambda h: computed.heads_text(pages[starts.index(h)]),
            ),
            starts,
        )
    heads = pages[starts.index(first)]
with pick[2]:
    head = bound(
        link.HEAD,
        lambda key: st.selectbox(
            _("Head opened up"),
            tuple(heads),
            key=key,
            format_func=lambda h: _("head {head}", head=h),
            help=_(
                "One of the heads shown: opened up step by step (section 3), compared across variants (2) and "
                "outlined in the decode step (4)."
            ),
        ),
        tuple(heads),
        say_moves=False,
    )  # follows the page shown

if group_size == 1:
    grouped = _("With as many KV groups as heads, every head keeps its own keys: this GQA is MHA.")
elif group_size <= 8:
    grouped = _("Each row of panels is one KV group: its {n} heads read the same keys and values.", n=group_size)
else:
    grouped = _(
        "Each KV group's {n} heads read the same keys and values; they fill rows of 8 panels in order.", n=group_size
    )
sharing = {
    "mha": lambda: _("Every head has its own keys: each is a group of one."),
    "mqa": lambda: _("All heads read one shared key and value head: their maps differ only through their queries."),
    "gqa": lambda: grouped,
    "mla": lambda: _(
        "Every head's key is rebuilt from the one latent vector $c^{KV}$ all heads share, plus a rotary key $k^R$ "
        "that is shared too: heads differ through their own up-projections ($W^{UK}$, $W^{UV}$)."
    ),
}[variant]()
# TRANSLATORS: the variant's abbreviation and name on first mention, then a sentence on how its heads share keys
st.markdown(_("**{abbr}** ({name}). {sharing}", abbr=variant.upper(), name=variant_name(variant), sharing=sharing))

try:
    with st.spinner(
        _(
            "Running the {variant} layer on {tokens}…",
            variant=variant.upper(),
            tokens=n_("{n} token", "{n} tokens", length),
        )
    ):
        chart = figures.heads_chart(cfg, settings.seed, spec, causal, heads, pool, lang)
except ValueError as error:  # a configuration the core refuses, with its own sentence
    st.error(_("This layer cannot be built at these settings: change one in the sidebar. The core's reason:"))
    show_verbatim(str(error))  # the library's own words (English), for whoever reports it
    st.stop()
pooling = chart.pooling
shown_notes = fixed_place()
if len(heads) < settings.heads:
    shown_notes.caption(
        _(
            "Showing {shown} of {total} ({limit} at most at once, whole KV groups where they fit): pick a group or a "
            "page above to see the others. Only the shown heads are computed: the layer is built with just them and "
            "the KV heads they read, each head drawn from its own seeded stream, so they are the full layer's heads.",
            shown=computed.heads_text(heads),
            total=settings.heads,
            limit=computed.MAX_PANELS,
        )
    )
if pooling.pooled:
    shown_notes.info(
        _(
            "{n} × {n} weights per head are more cells than the page sends: each cell shows the **{pooling}** of the "
            "real weights (the hover says so). The weights are computed in full; their rows sum to 1 before pooling.",
            n=length,
            pooling=pooling.describe(),
        ),
        icon=":material/grid_view:",
    )
if causal:
    check = _(
        "Rows sum to 1 within {error}; above the diagonal every weight is {upper}.",
        error=f"{chart.facts.row_sum_error:.1e}",
        upper=f"{chart.facts.upper_max:g}",
    )
    lesson = _("Notice the first row: with the causal mask the first token can only attend to itself.")
else:
    check = _("Rows sum to 1 within {error}.", error=f"{chart.facts.row_sum_error:.1e}")
    lesson = _("Without the mask every query sees every key, the future included.")
show_chart(
    chart.spec,
    name="heatmaps-heads",
    rows=chart.csv.csv_text,
    caption=sentences(
        _(
            "Darker = more attention, from query (row) to key (column); colour follows the square root of the weight "
            "so small weights stay visible."
        ),
        check,
        lesson,
    ),
)

# --- 2. the variants compared ------------------------------------------------------------------------------------
st.header(_("2 · The variants on the same input"))
st.markdown(
    _(
        "To compare designs rather than random weights, every variant here is **made from one MHA layer** (built "
        "from the seed): GQA and MQA average the key and value heads of each group — how Ainslie et al. (2023) turn "
        "an MHA checkpoint into GQA before further training — and MLA keeps the best rank-$d_c$ approximation of the "
        "joint key–value weights (a truncated SVD). Queries and the output projection stay MHA's, so head {head} "
        "means the same query in every panel. With random, untrained weights the heads share nothing to begin with, "
        "so averaging them loses more than it would in a trained model; the average of $r$ unrelated key heads is "
        "also about $1/\\sqrt{{r}}$ as long, so its scores are smaller and its maps flatter — one reason converted "
        "models are trained further.",
        head=head,
    )
)
blocked = computed.comparison_blocked(settings.d_model, length)
with fixed_place():  # blocked, or a chart and its table
    if blocked:
        st.info(blocked, icon=":material/speed:")
    else:
        configs = tuple((v, computed.layer_config(settings, v, rope)) for v in settings.variants)
        with st.spinner(_("Making the variants from one MHA layer…")):
            compared, table = figures.compare_chart(configs, settings.seed, spec, causal, head, pool, lang)
        if rope and "mla" in settings.variants:
            st.caption(
                _(
                    "RoPE is on: MHA's keys carry position in every dimension, but MLA's decoupled rotary key $k^R$ is "
                    "shared by all heads and cannot be filled from MHA's per-head keys, so the converted MLA attends "
                    "without position — part of its distance is that."
                )
            )
        if compared is not None:
            caption = _(
                "Head {head} with the same query weights in each variant: what changes is only the keys it reads.",
                head=head,
            )
            if compared.pooling.pooled:
                caption = sentences(caption, _("Cells are the {pooling}.", pooling=compared.pooling.describe()))
            show_chart(compared.spec, name="heatmaps-compare", rows=compared.csv.csv_text, caption=caption)
        st.table(table, hide_index=True)
        st.caption(
            _(
                "Output distance: $\\lVert o - o_{\\mathrm{MHA}} \\rVert \\,/\\, \\lVert o_{\\mathrm{MHA}} \\rVert$ over "
                "the window. Map overlap: 1 − total-variation distance between two attention rows, averaged over rows "
                "(100 % = identical maps, the share of attention placed on the same keys). Heads of one group read the "
                "same keys, so only their queries can make their maps differ."
            )
        )

# --- 3. inside one head ------------------------------------------------------------------------------------------
st.header(_("3 · Inside head {head}", head=head))
# two short lines rather than one long one: a phone's width clipped the one-line formula
st.latex(
    r"\begin{aligned} \mathrm{Attention}(Q,K,V) &= \mathrm{softmax}(S)\,V, \\ S &= \frac{QK^\top}{\sqrt{d_k}} + M "
    r"\end{aligned}"
)
inside = figures.steps_chart(cfg, settings.seed, spec, causal, heads, head, pool, lang)
kv = inside.facts.kv_head
if variant == "mla":
    where = _(
        "$Q = [q^C; q^R]$ of head {head}; $K = [k^C; k^R]$: $k^C$ up-projected from the latent vector $c^{{KV}}$ for "
        "head {head}, $k^R$ the shared rotary key; $d_k = d_h + d_h^R = {nope} + {rope} = {total}$.",
        head=head,
        nope=cfg.qk_nope_head_dim,
        rope=cfg.qk_rope_head_dim,
        total=cfg.qk_head_dim,
    )
elif variant == "mha" or group_size == 1:
    where = _("$Q$, $K$, $V$ are head {head}'s own; $d_k = {d_k}$.", head=head, d_k=cfg.head_dim)
elif cfg.n_kv_heads == 1:
    where = _("$K$ and $V$ are the one KV head every query head shares; $d_k = {d_k}$.", d_k=cfg.head_dim)
else:
    where = _(
        "$K$ and $V$ belong to KV head {kv}, which heads {first}–{last} share; $d_k = {d_k}$.",
        kv=kv,
        first=kv * group_size,
        last=(kv + 1) * group_size - 1,
        d_k=cfg.head_dim,
    )
if rope:
    taken = _("The numbers the layer attended with, taken from its own projections after RoPE.")
else:
    taken = _("The numbers the layer attended with, taken from its own projections.")
mask = _(
    "$M$ is 0 where a query may look and $-\\infty$ where it may not; softmax turns each row into weights that sum to 1."
)
st.markdown(sentences(taken, where, mask))
caption = _(
    "Follow ① to ⑤. ④ equals the layer's own weights for head {head} {agreement}. Scaling by $1/\\sqrt{{d_k}}$ keeps "
    "scores from growing with the head width, which would make the softmax nearly one-hot.",
    head=head,
    agreement=agreement(inside.facts.weights_error),
)
scales = _(
    "① and ② have colour scales of their own (② and ③ share one): scaling took the largest score from ±{raw} to "
    "±{scaled}.",
    raw=f"{inside.facts.score_bound:.3g}",
    scaled=f"{inside.facts.scaled_bound:.3g}",
)
caption = sentences(caption, scales)
if inside.pooling.pooled:
    caption = sentences(caption, _("Square matrices show the {pooling}.", pooling=inside.pooling.describe()))
show_chart(inside.spec, name="heatmaps-inside-head", rows=inside.csv.csv_text, caption=caption)
if len(heads) > 1 and len(heads) == settings.heads:
    outputs_of = _("all {n} heads", n=settings.heads)
else:
    outputs_of = computed.heads_text(heads)
st.caption(
    _(
        "The outputs of {heads} (each head's ⑤) side by side are what the output projection $W^O$ received in the "
        "layer's forward pass, {agreement} (their largest value is {largest}); $W^O$ mixes them into the layer's "
        "output.",
        heads=outputs_of,
        agreement=agreement(inside.facts.output_rebuild_error),
        largest=f"{inside.facts.output_scale:.3g}",
    )
)

# --- 4. one decode step ------------------------------------------------------------------------------------------
st.header(_("4 · One step of generation"))
last = f" {shown(tokens[-1])}" if tokens else ""
step = figures.decode_chart(cfg, settings.seed, spec, causal, heads, head, pool, lang)
cached = n_("{n} token", "{n} tokens", step.facts.cached_before)
if variant == "mla":
    stored = _(
        "Generating reads the cache: what a prefill stores for the first {cached} (their latent vectors $c^{{KV}}$ and "
        "shared rotary keys $k^R$) went into a fresh cache, then the last token (position {position}{token}) ran alone "
        "through the layer as one decode step, asking for its weights.",
        cached=cached,
        position=length - 1,
        token=last,
    )
else:
    stored = _(
        "Generating reads the cache: what a prefill stores for the first {cached} (their keys after RoPE and values) "
        "went into a fresh cache, then the last token (position {position}{token}) ran alone through the layer as one "
        "decode step, asking for its weights.",
        cached=cached,
        position=length - 1,
        token=last,
    )
st.markdown(sentences(stored, _("Its row is what one step of generation attends to — itself and everything cached.")))
caption = _(
    "One row per head shown (head {head} outlined). The step through the cache gives the last row of the full pass "
    "{agreement}: caching changes the cost, not the result.",
    head=head,
    agreement=agreement(step.facts.decode_error),
)
if step.pooling.pooled:
    caption = sentences(caption, _("Cells are the {pooling}.", pooling=step.pooling.describe()))
show_chart(step.spec, name="heatmaps-decode-step", rows=step.csv.csv_text, caption=caption)
st.table(tables.cache_table(step.facts.cache_shapes, cfg, settings.dtype), hide_index=True)
if variant != "mla" and len(heads) < settings.heads:
    kv_read = cfg.kv_heads_read(heads)
    st.caption(
        _(
            "Measured on the layer of {heads}: its cache holds the {read} they read. The full layer's cache holds all "
            "{all}: {numbers} numbers per token.",
            heads=computed.heads_text(heads),
            read=n_("{n} KV head", "{n} KV heads", len(kv_read)),
            all=n_("{n} KV head", "{n} KV heads", cfg.n_kv_heads),
            numbers=cfg.cache_elements_per_token,
        )
    )
if variant == "mla":
    st.caption(
        _(
            "MLA's decode step attends in latent space: each head's query is moved into the latent space by $W^{UK}$ "
            "(absorbed into the query), so every head reads the same $c^{KV}$ and $k^R$ — one wide shared KV head, "
            "like MQA."
        )
    )
else:
    st.caption(
        n_(
            "Each cached KV head is read by {readers}: {kv} serves {queries}.",
            "Each cached KV head is read by {readers}: {kv} serve {queries}.",
            cfg.n_kv_heads,
            readers=n_("{n} query head", "{n} query heads", group_size),
            kv=n_("{n} key and value head", "{n} key and value heads", cfg.n_kv_heads),
            queries=n_("{n} query head", "{n} query heads", settings.heads),
        )
    )

# --- 5. the designs after MLA ------------------------------------------------------------------------------------
st.header(_("5 · The designs after MLA"))
offered_designs = tuple(d for d in computed.MAPPED_DESIGNS if d in settings.designs)
if not offered_designs:
    st.info(
        _(
            "Choose a sliding window, DSA top-k or V4's compressed attention under “Designs after MLA” in the sidebar "
            "to see what their layers attend to: the band of a window, the tokens that stay, the top-k each query "
            "reads, and entries that pool many tokens.",
        ),
        icon=":material/tune:",
    )
else:
    design_cols = st.columns([3, 2])
    with design_cols[0]:
        shown_design = bound(
            link.DESIGN,
            lambda key: st.radio(_("Design"), offered_designs, key=key, horizontal=True, format_func=design_name),
            offered_designs,
        )
    try:
        chosen = design(settings, shown_design)
    except ValueError as error:  # a configuration the core refuses, with its own sentence
        st.error(_("This layer cannot be built at these settings: change one in the sidebar. The core's reason:"))
        show_verbatim(str(error))
        st.stop()
    sink_kind = "kept"
    if shown_design == "sliding":
        with design_cols[1]:
            sink_kind = bound(
                link.SINK,
                lambda key: st.radio(
                    _("Sinks"),
                    link.SINK.options,
                    key=key,
                    horizontal=True,
                    format_func=lambda kind: _(link.SINK_KINDS[kind]),
                    help=_(
                        "Kept first tokens: the sidebar's n_s tokens stay in every query's view (StreamingLLM). "
                        "Learned: one more softmax slot per head with a trained logit and no value (gpt-oss), so a "
                        "head can put weight on nothing."
                    ),
                ),
            )
        if sink_kind == "learned" and chosen.options is not None:
            chosen = replace(chosen, options=replace(chosen.options, sink_tokens=0, learned_sinks=True))
    design_spec = spec.truncated(computed.DESIGN_MAX_TOKENS)
    if blocked_design := computed.design_blocked(chosen):
        st.info(blocked_design, icon=":material/speed:")
        st.stop()
    try:
        with st.spinner(_("Running the {design} layer…", design=design_name(shown_design))):
            design_chart = figures.design_chart(chosen, settings.seed, design_spec, head, lang)
    except ValueError as error:  # a configuration the core refuses, with its own sentence
        st.error(_("This layer cannot be built at these settings: change one in the sidebar. The core's reason:"))
        show_verbatim(str(error))
        st.stop()
    facts = design_chart.facts
    on = _(
        "Head {head}, on the first {n} of the input above (the same vectors), causal, with RoPE, in float32.",
        head=head,
        n=n_("{n} token", "{n} tokens", facts.tokens),
    )
    if shown_design == "sliding":
        window = chosen.options.window if chosen.options is not None else None
        kept = chosen.options.sink_tokens if chosen.options is not None else 0
        said = _(
            "A GQA layer whose queries see their last {window}: the band along the diagonal. The busiest query "
            "reads {most} keys, the last one {last}, however long the text grows; the cache keeps what the next "
            "query needs.",
            window=n_("{n} token", "{n} tokens", window or 0),
            most=facts.read_most,
            last=facts.read_last,
        )
        if facts.sink_mean is not None:
            sinks_said = _(
                "The last column is the learned sink: the weight the head's sink logit took, a softmax slot with no "
                "value — {mean} of each row on average here.",
                mean=f"{facts.sink_mean:.2f}",
            )
        elif kept:
            sinks_said = _(
                "The first {n} columns stay to the last row: kept first tokens (StreamingLLM's attention sinks), "
                "read by every query beside its window.",
                n=kept,
            )
        else:
            sinks_said = _("No kept first tokens: set n_s in the sidebar to keep some.")
        caption = sentences(on, said, sinks_said)
    elif shown_design == "dsa":
        caption = sentences(
            on,
            _(
                "Left: the lightning indexer's score of every earlier key for each query (a few cheap heads, ReLU, "
                "weighted). Right: the weights of DSA's MLA: each query reads only its top {k} keys by those scores, "
                "the rest are blank; a query with at most {k} earlier tokens reads them all. The busiest query reads "
                "{most}. The cache still keeps every token: what shrinks is the reading.",
                k=settings.topk,
                most=facts.read_most,
            ),
        )
    elif shown_design == "shared_topk":
        caption = sentences(
            on,
            _(
                "GLM-5's shared layers run no indexer. Left: the full DSA layer before it, whose indexer picks each "
                "query's top {k} keys (the rest blank). Right: the shared layer, with weights of its own, reading the "
                "keys that layer picked: the same cells in {same} of {n} rows. Its cache keeps each token's latent "
                "and no indexer key.",
                k=settings.topk,
                same=facts.same_rows,
                n=facts.tokens,
            ),
        )
    elif shown_design == "chunked":
        caption = sentences(
            on,
            _(
                "Llama 4's chunked local attention: positions are cut into chunks of {c}, and each query reads its "
                "own chunk up to itself, so the map is {chunks} blocks along the diagonal, blank across every edge. "
                "A query that starts a chunk reads 1 key, the busiest {most}; the cache keeps the latest chunk only.",
                c=n_("{n} token", "{n} tokens", settings.chunk),
                chunks=facts.chunks,
                most=facts.read_most,
            ),
        )
    elif shown_design == "shared":
        same = (
            _("Both read the same keys: the right panel's blanks are the left one's.")
            if facts.same_keys
            else _("The two layers read different keys here.")
        )
        caption = sentences(
            on,
            _(
                "Gemma 3n's KV sharing: left, layer 0 with a cache of its own; right, layer 1, which computes no keys "
                "or values and reads layer 0's cache with its own queries, so its weights differ while the keys "
                "are the same, and it holds 0 bytes. Its last query reads {last} keys.",
                last=facts.read_last,
            ),
            same,
        )
    else:
        caption = sentences(
            on,
            _(
                "DeepSeek-V4's heavily compressed attention: the band is its window over the latest tokens; the "
                "columns after the tokens are compressed entries, each pooling the {m} tokens its label names "
                "(⟨0–{last}⟩: tokens 0 to {last}), read once finished — a new one every {m} tokens, {entries} here. "
                "The last column is the sink's weight.",
                m=settings.rate,
                last=settings.rate - 1,
                entries=facts.entries,
            ),
        )
    show_chart(design_chart.spec, name="heatmaps-design", rows=design_chart.csv.csv_text, caption=caption)
