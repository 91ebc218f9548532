"""KV cache: what each variant's cache holds token by token, what it costs for whole published models, and the pitfall
of caching repeated heads."""

import time
from dataclasses import replace

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

import explorer.shell  # noqa: F401  (first of ours: see explorer/shell.py)

from attn_core import PRESETS, bytes_per_element
from explorer import served
from explorer.charts import show_chart
from explorer.i18n import _, fmt, format_bytes, sentences, sig
from explorer.kinds.registry import chosen
from explorer.kv_cache import computed, figures, link, tables, text
from explorer.link import bound, page_link
from explorer.probes import FLOAT32_TOLERANCE
from explorer.probes.kv_cache import (
    MAX_PROMPT_LEN,
    MAX_STEPS,
    MAX_TRACE_BATCH,
    MAX_TRACE_PARAMETERS,
    MAX_TRACE_WORK,
    memory_budget,
    tokens_held,
)
from explorer.share import link_drawn_by_fragment, shares_link
from explorer.state import page_settings
from explorer.verbatim import show_verbatim

link_drawn_by_fragment()  # the share box is drawn by the step's fragment (the page's end)
settings = page_settings("kv_cache")

st.title(_("KV cache"))
st.markdown(
    _(
        "A language model writes one token at a time. Without a cache, every new token would recompute the keys and "
        "values of all the tokens before it; with one, each token's keys and values are computed once, stored, and "
        "read back at every later step. The cache changes the **cost**, never the **result** — and how big it grows "
        "is where MHA, MQA, GQA and MLA differ most."
    )
)
page_link(
    "pages/trained.py",
    label=_("A trained model writing, with its real cache: SmolLM2-135M (9 query heads, 3 KV heads)"),
    icon=":material/psychology:",
)

# --- 1. step by step ------------------------------------------------------------------------------------------------
st.header(_("Decode step by step"), divider="gray")
left, right = st.columns(2)  # the pitfall's toggle on a line of its own: a label in a third of a row was cut short
with left:
    prompt_len = bound(
        link.PROMPT, lambda key: st.slider(_("Prompt tokens (prefilled at once)"), 1, MAX_PROMPT_LEN, key=key)
    )
with right:
    steps = bound(link.STEPS, lambda key: st.slider(_("Tokens to generate (one at a time)"), 1, MAX_STEPS, key=key))
repeated = bound(
    link.REPEAT,
    lambda key: st.toggle(
        _("Also cache K/V after `repeat_interleave` (the naive GQA pitfall)"),
        key=key,
        help=_("Naive GQA code repeats each KV head for every query head of its group and then caches the copies."),
    ),
)


traces, skipped = computed.traces_for(settings, prompt_len, steps, repeated)
design_traces, designs_skipped = computed.design_traces_for(settings, prompt_len, steps)
designs = chosen(settings)  # the traced designs' settings: what their findings' numbers come from
skipped += designs_skipped
batch = computed.trace_batch(settings)
bounds = _(
    "Real layers at the sidebar's settings, float32 weights drawn from seed {seed}, fed {tokens} fixed random "
    "token vectors (batch {batch}). The layer computes in float32 so the comparison with a full recompute shows "
    "round-off only; a copy of everything it caches is kept in {dtype}, and the bytes shown are that copy's. This "
    "runs on the server's CPU at every new setting, so it is bounded: up to {prompt} prompt tokens, {steps} "
    "generated, {sequences} sequences, layers of up to {weights} M weights, and weights × tokens × batch up to "
    "{work} M multiply-adds a pass.",
    seed=str(settings.seed),
    tokens=prompt_len + steps,
    batch=batch,
    dtype=settings.dtype,
    prompt=MAX_PROMPT_LEN,
    steps=MAX_STEPS,
    sequences=MAX_TRACE_BATCH,
    weights=round(MAX_TRACE_PARAMETERS / 1e6),
    work=round(MAX_TRACE_WORK / 1e6),
)
st.caption(
    bounds
    if settings.batch <= batch
    else sentences(
        bounds,
        _("The sidebar's batch is {sidebar}; this decode runs {batch}.", sidebar=settings.batch, batch=batch),
    )
)
if skipped:
    st.info(
        _("Not traced at these settings:")
        + "\n\n"
        + "\n".join(f"- {note}" for note in skipped)
        + "\n\n"
        + _("The whole-model sections below run at any size (on the meta device)."),
        icon=":material/speed:",
    )


def step_slider(key: str) -> int:
    st.session_state[key] = min(max(st.session_state[key], 0), steps)  # steps may have just shrunk
    return st.slider(_("Step (0 = right after the prefill)"), 0, steps, key=key)


# ▶ Play steps through the decode on the server: the step slider, the printed shapes, the table and both charts
# move together, and the link follows (a browser-side animation could move only the chart's markers).
PLAYING, PLAYED_AT = "_kv_playing", "_kv_played_at"
PLAY_SECONDS = 0.8  # one step a tick: time to read the shapes as they change


def play() -> None:
    step_key = link.STEP.key
    if st.session_state.get(step_key, steps) >= steps:
        st.session_state[step_key] = 0  # from the start again
    st.session_state[PLAYING] = True
    st.session_state[PLAYED_AT] = None  # the click's own run shows the start step; the ticks count from there


def pause() -> None:
    st.session_state[PLAYING] = False


def in_place(place: DeltaGenerator) -> None:
    with place:
        step_section()


def step_section() -> None:
    """Everything that shows one step. A fragment: while playing, it alone reruns every PLAY_SECONDS, one step on."""
    advance_play()
    step = bound(link.STEP, step_slider, (0, steps))
    step_shapes(step)
    recompute_chart(step)
    cache_size_chart(step)
    pitfall_notes(step)
    designs_section(step)


def advance_play() -> None:
    """While playing, one step on per tick; at the last step, stop, and let the whole page drop the timer."""
    step_key = link.STEP.key
    if not st.session_state.get(PLAYING):
        return
    if st.session_state.get(PLAYED_AT) is None:  # a slow server's click run must not skip the start step
        st.session_state[PLAYED_AT] = time.monotonic()
        return
    if time.monotonic() - st.session_state[PLAYED_AT] >= 0.8 * PLAY_SECONDS:
        st.session_state[PLAYED_AT] = time.monotonic()
        st.session_state[step_key] = min(st.session_state.get(step_key, 0) + 1, steps)
        if st.session_state[step_key] >= steps:
            st.session_state[PLAYING] = False
            st.rerun(scope="app")


def step_shapes(step: int) -> None:
    """What each cache holds after the step: a decode loop's log, and the table."""
    st.markdown(
        _(
            "What each cache holds after step {step}, printed as a decode loop would log it "
            "(shapes are **[batch, heads stored, tokens, width]**):",
            step=step,
        )
    )
    show_verbatim(tables.step_log(traces, step))
    st.dataframe(
        tables.step_table(traces, step),
        hide_index=True,
        width="stretch",
        column_config={
            _("Cache"): st.column_config.TextColumn(width=120),  # "MQA repeated" in full
            _("max |Δ|"): st.column_config.TextColumn(
                help=_("Largest difference from a full recompute without cache.")
            ),
        },
    )


def recompute_chart(step: int) -> None:
    """Each cache's difference from a full recompute, step by step, against the float32 budget."""
    worst = max(max(trace.max_abs_diff) for trace in traces.values())
    show_chart(
        figures.diff_figure(traces, step),
        name="kv-cache-recompute-difference",
        rows=tables.cache_size_rows(traces),
        caption=_(
            "Every step stays far below {tolerance} (largest here: {worst}, outputs up to {scale}): the cache changes "
            "the cost, not the result. The reference is one pass over the whole sequence without a cache; with causal "
            "attention its row $t$ is what recomputing the prefix up to $t$ gives. MLA decodes with absorbed weights, "
            "its reference up-projects: they agree too. Exact zeros are drawn at {floor}.",
            tolerance=f"{FLOAT32_TOLERANCE:.0e}",
            worst=f"{worst:.1e}",
            scale=sig(max(t.out_scale for t in traces.values()), 2),
            floor=f"{figures.DIFF_FLOOR:g}",
        ),
    )


def cache_size_chart(step: int) -> None:
    """Bytes held, formula and preallocated as tokens arrive, marked at the step."""
    st.header(_("Cache size as tokens arrive"), divider="gray")
    show_chart(
        figures.cache_size_figure(traces, step),
        name="kv-cache-bytes-per-step",
        rows=tables.cache_size_rows(traces),
        caption=_(
            "Bytes held (dots, measured) grow by one token's worth per step and sit exactly on the closed form (the "
            "wide pale line beneath): $B \\times T \\times 2 g d_h$ numbers for $g$ KV heads of width $d_h$, or "
            "$B \\times T \\times (d_c + d_h^R)$ for MLA, times the bytes per number. The dashed step line is what "
            "is preallocated: the buffer doubles when full, so it runs ahead of what is held. Repeated-head caches "
            "(open rings) land on MHA's line. ▶ Play moves through the steps; click a legend entry to hide a cache."
        ),
    )


def designs_section(step: int) -> None:
    """The designs after MLA chosen in the sidebar: held and read bytes step by step, measured and by formula."""
    if not design_traces:
        if not settings.designs:
            st.caption(
                _(
                    "Choose designs after MLA in the sidebar (a sliding window, DSA's top-k, V4's compressed entries, "
                    "a linear state, a quantised cache) to follow their caches here too."
                )
            )
        return
    st.header(_("The designs after MLA, step by step"), divider="gray")
    show_chart(
        figures.design_size_figure(design_traces, traces, step),
        name="kv-cache-designs-held-read",
        rows=tables.design_size_rows(design_traces),
        caption=sentences(
            *(
                text.design_finding(name, trace, step, traces.get("GQA"), designs[name])
                for name, trace in design_traces.items()
            ),
            _(
                "Solid: bytes held after the step; dashed rings: bytes the step's query read from the cache (its own "
                "key included). Each sits on its closed form (the wide pale line), measured from the layer's own "
                "cache after each real decoding step. The variants' held bytes are the dotted lines."
            ),
            text.contexts_finding(computed.held_at_contexts(settings), computed.CONTEXTS),
        ),
    )
    st.dataframe(
        tables.design_step_table(design_traces, step),
        hide_index=True,
        width="stretch",
        column_config={
            _("max |Δ|"): st.column_config.TextColumn(
                help=_("Largest difference from one pass over the whole sequence without a cache (float32).")
            ),
        },
    )
    st.caption(
        _(
            "The same prompt and steps as above, through each design's real layer at the sidebar's settings (seed "
            "{seed}), computing in float32; the bytes are those of a twin layer in {dtype} fed the same calls on the "
            "meta device (same code and shapes, no memory). A linear state is float32 whatever the dtype. "
            "A quantised cache's max |Δ| is its rounding, not round-off; DSA's can jump where its top-k choice "
            "differs from the full pass's (with k at least the tokens, it is round-off again).",
            seed=str(settings.seed),
            dtype=settings.dtype,
        )
    )


def pitfall_notes(step: int) -> None:
    """With the pitfall on, what each repeated cache wastes at the step; else, how to turn it on."""
    if repeated:
        pitfalls = {name: trace for name, trace in traces.items() if name.endswith("repeated")}
        if not pitfalls:
            st.info(_("No variant shown here shares KV heads (MHA and MLA have nothing to repeat): choose GQA or MQA."))
        for name, trace in pitfalls.items():
            honest = traces.get(name.removesuffix(" repeated"))
            if honest is None:
                continue
            wasted = trace.nbytes[step] - honest.nbytes[step]
            st.warning(
                _(
                    "**{name}**: at step {step} the repeated cache holds {held} where {needed} is all the layer needs "
                    "— {wasted} wasted, {ratio}× the memory, as large as MHA's. Its outputs are the same (max |Δ| vs "
                    "full recompute {diff}): the copies add nothing. Cache the KV heads as projected and let attention "
                    "share them.",
                    name=text.shown_name(name),
                    step=step,
                    held=format_bytes(trace.nbytes[step]),
                    needed=format_bytes(honest.nbytes[step]),
                    wasted=format_bytes(wasted),
                    ratio=sig(trace.nbytes[step] / honest.nbytes[step]),
                    diff=f"{max(trace.max_abs_diff):.1e}",
                ),
                icon=":material/content_copy:",
            )
    else:
        st.caption(
            _("Switch on the pitfall above to see what caching the repeated heads costs, measured the same way.")
        )


if traces:
    playing = bool(st.session_state.get(PLAYING))
    st.button(
        _("❚❚ Pause") if playing else _("▶ Play the steps"),
        on_click=pause if playing else play,
        key="kv_play",
        help=_(
            "Steps through the decode one token at a time: the slider, the shapes, the table and the charts move "
            "together."
        ),
    )
    step_place = st.container()  # the step's section: drawn here by its fragment, which runs at the page's end
else:
    designs_section(steps)  # no variant traced at these settings: the designs at the last step


# --- 3 and 4. whole models ------------------------------------------------------------------------------------------
st.header(_("Published models, and what if they kept their cache another way"), divider="gray")
cols = st.columns([2, 1, 1, 1])
with cols[0]:
    model = bound(link.MODEL, lambda key: st.selectbox(_("Model"), link.MODEL.options, key=key))
preset = PRESETS[model]
group_options = link.group_options(preset.attention.n_heads)
groups_key = link.GROUPS.key
if groups_key in st.session_state and st.session_state[groups_key] not in group_options:
    st.session_state[groups_key] = link.preferred_groups(model)  # another model: start from its own KV heads
with cols[1]:
    groups = bound(  # starts from the model's own choice (its KV heads, or the divisor of its heads nearest 8)
        replace(link.GROUPS, default=link.preferred_groups(model)),
        lambda key: st.select_slider(_("What-if GQA groups $g$"), group_options, key=key),
        group_options,
    )
with cols[2]:
    latent = bound(link.LATENT, lambda key: st.select_slider(_("What-if MLA $d_c$"), link.LATENT.options, key=key))
with cols[3]:
    rope_dim = bound(link.ROPE, lambda key: st.select_slider(_("What-if MLA $d_h^R$"), link.ROPE.options, key=key))


def notes_example() -> None:
    st.session_state[link.MODEL.key] = link.NOTES_MODEL
    st.session_state[link.LATENT.key] = 512
    st.session_state[link.ROPE.key] = 128


st.button(
    _("Try it: {model} re-expressed as MLA with $d_c = 512$ and $d_h^R = 128$", model=link.NOTES_MODEL),
    on_click=notes_example,
    icon=":material/school:",
    key="kv_example",
)

attention = preset.attention
st.caption(
    _(
        "**{model}**: {layers} layers, $d_{{\\text{{model}}}}$ {width}, {heads} query heads of {head_dim}, {context}-token "
        "context, {parameters} parameters. Source: `{source}`.",
        model=model,
        layers=preset.n_layers,
        width=str(attention.d_model),
        heads=attention.n_heads,
        head_dim=str(attention.head_dim),
        context=preset.context_len,
        parameters=text.parameter_text(preset.total_params),
        source=preset.source,
    )
)
if preset.sliding_window is not None:
    st.info(
        _(
            "{model} attends within a sliding window of {window} tokens, so each layer keeps a rolling cache of the "
            "last {held} tokens (the next token computes its own key and value): past that, the cache stops growing. "
            "The numbers below are the core's windowed cache's, measured on the meta device, as on the cache's four "
            "axes page.",
            model=model,
            window=preset.sliding_window,
            held=tokens_held(preset, preset.context_len),
        ),
        icon=":material/swap_horiz:",
    )
if preset.not_modelled:
    st.caption(_("Not modelled here: {what}", what=_(preset.not_modelled)))  # the core's notes: text.PRESET_NOTES

with st.spinner(_("Running the model's attention layer on the meta device…")):
    rows = computed.cached_model_rows(model, groups, latent, rope_dim, settings.dtype, settings.batch, repeated)
st.dataframe(
    tables.model_table(rows, model),
    hide_index=True,
    width="stretch",
    column_config={
        header: st.column_config.TextColumn(**config) for header, config in tables.model_columns(rows, model).items()
    },
)
st.caption(
    _(
        "Each row is one real attention layer run on PyTorch's meta device (exact shapes and bytes, no memory used) "
        "over the model's context in {dtype}, then × {layers} layers. What-ifs keep the width, the heads and $d_h$ "
        'and change only what is cached. "As GQA groups" is numbers per token ÷ $2 d_h$: the GQA group count that '
        "would cache as much.",
        dtype=settings.dtype,
        layers=preset.n_layers,
    )
)

by_key = {row.key: row for row in rows}
mla, mha, published = by_key["mla"], by_key["mha"], by_key["published"]
mla_saving = mha.elements_per_token_layer / mla.elements_per_token_layer
if attention.variant == "mla":
    st.success(
        _(
            "**The DeepSeek-V2 paper's claim, measured:** {model}'s MLA caches {numbers} numbers per token per layer "
            "($d_c$ {latent} + $d_h^R$ {rope}) — as much as GQA with only {groups} groups of $d_h$ {head_dim}, while "
            "MHA with its {heads} heads would cache {mha}: {ratio}× more.",
            model=model,
            numbers=published.elements_per_token_layer,
            latent=str(attention.kv_lora_rank),
            rope=str(attention.qk_rope_head_dim),
            groups=sig(published.gqa_equivalent_groups),
            head_dim=str(attention.head_dim),
            heads=attention.n_heads,
            mha=mha.elements_per_token_layer,
            ratio=sig(mha.elements_per_token_layer / published.elements_per_token_layer),
        ),
        icon=":material/verified:",
    )
st.markdown(
    _(
        "As MHA, {model} would keep **{mha}** numbers per token per layer ($2 \\times$ {heads} heads $\\times$ "
        "{head_dim}); as MLA with $d_c$ {latent} + $d_h^R$ {rope}, **{mla}**: **{ratio}×** fewer, the cache of GQA "
        "with {groups} groups.",
        model=model,
        mha=mha.elements_per_token_layer,
        heads=attention.n_heads,
        head_dim=str(attention.head_dim),
        latent=str(latent),
        rope=str(rope_dim),
        mla=mla.elements_per_token_layer,
        ratio=sig(mla_saving),
        groups=sig(mla.gqa_equivalent_groups),
    )
)

st.subheader(_("Will it fit? A whole model's cache against a memory budget"))
left, right = st.columns(2)
with left:
    gpu_gib = bound(
        link.GPU_GIB, lambda key: st.select_slider(_("Memory per GPU (GiB)"), link.GPU_GIB.options, key=key)
    )
with right:
    gpus = bound(link.GPUS, lambda key: st.select_slider(_("GPUs"), link.GPUS.options, key=key))
budget = memory_budget(preset, gpu_gib=gpu_gib, gpus=gpus, dtype=settings.dtype)
metrics = st.columns(3)
metrics[0].metric(_("Memory"), format_bytes(budget.memory), help=f"{fmt(gpus)} × {fmt(gpu_gib)} GiB")
metrics[1].metric(
    _("Weights ({dtype})", dtype=settings.dtype),
    format_bytes(budget.weights),
    help=_(
        "{parameters} parameters × {size} bytes, in the cache's dtype",
        parameters=text.parameter_text(preset.total_params),
        size=bytes_per_element(settings.dtype),
    ),
)
metrics[2].metric(_("Left for the KV cache"), format_bytes(max(budget.left, 0)))
if budget.left <= 0:
    st.warning(
        _(
            "{model}'s weights alone ({weights}) do not fit in {memory}: add GPUs or memory to leave room for a cache.",
            model=model,
            weights=format_bytes(budget.weights),
            memory=format_bytes(budget.memory),
        ),
    )
what_if = {"groups": groups, "latent": latent, "rope_dim": rope_dim}
figure, csv_rows = figures.scale_figure(model, rows, what_if, batch=settings.batch, dtype=settings.dtype, budget=budget)
show_chart(
    figure,
    name="kv-cache-whole-model",
    rows=csv_rows,
    caption=sentences(
        _(
            "Layers × batch ({batch}, from the sidebar) × tokens: the cache grows linearly with each, until the "
            "{window}-token window.",
            batch=settings.batch,
            window=preset.sliding_window,
        )
        if preset.sliding_window
        else _(
            "Layers × batch ({batch}, from the sidebar) × tokens: the cache grows linearly with each.",
            batch=settings.batch,
        ),
        _(
            "The bytes are on a log scale, so that caches a hundred times apart both show: each way of caching sits a "
            "constant ratio from the others. Where a line crosses the red budget (×), that way of caching runs out of "
            "memory; lines leaving the top ran out long before. Lines: closed form; diamonds: measured on the meta device "
            "at the full context."
        ),
    ),
)
if budget.left > 0:
    users, users_csv = figures.users_figure(model, rows, budget=budget, dtype=settings.dtype)
    show_chart(
        users,
        name="kv-cache-sequences-that-fit",
        rows=users_csv,
        caption=_(
            "Concurrent users: how many sequences' caches fit beside the weights, for each length (log scale). The "
            "gap between two lines is the ratio of their caches per token: the sharing of KV heads, or the latent, "
            "multiplies the users one GPU can serve."
        ),
    )
st.dataframe(
    tables.fit_table(model, rows, batch=settings.batch, budget=budget),
    hide_index=True,
    width="stretch",
    column_config={
        header: st.column_config.TextColumn(**config)
        for header, config in tables.fit_columns(model, settings.batch).items()
    },
)
st.caption(
    _(
        "Answers from the measured bytes per token: how long each of the sidebar's batch of sequences can grow, and "
        "how many users with a full context can be served at once. Activations and other runtime buffers also need "
        "room, so real servers fit somewhat fewer."
    )
)

st.subheader(_("Published models, as HF's modules hold their caches and as served"))
storage = served.storage_of(
    bound(
        link.STORAGE,
        lambda key: st.segmented_control(
            _("Cache stored"), link.STORAGE.options, format_func=served.storage_name, key=key, required=True
        ),
    )
)
with st.spinner(_("Measuring every layer's cache on the `meta` device…")):
    at_length = (served.TABLE_TOKENS,)
    as_hf, _missing = served.cached_curves(tokens=at_length, dtype="bfloat16")
    published_models = as_hf if storage == "reference" else served.cached_curves(tokens=at_length, storage=storage)[0]
st.dataframe(
    served.models_table(published_models, as_hf, served.TABLE_TOKENS),
    hide_index=True,
    width="stretch",
    column_config={
        header: st.column_config.TextColumn(**config)
        for header, config in served.models_columns(served.TABLE_TOKENS).items()
    },
)
st.caption(
    _(
        "Every published model's whole cache for one sequence of {tokens} tokens, measured by the core from its "
        "`config.json` on the `meta` device, in bf16 as HF's modules hold it or in the formats its serving code "
        "keeps. The formats, their bytes a row (scales included) and their sources:",
        tokens=served.TABLE_TOKENS,
    )
)
st.markdown(served.formats_markdown(published_models))
st.markdown("#### " + _("Published claims, measured"))
with st.spinner(_("Measuring the claims' models on the `meta` device…")):
    claims = served.cached_claims()
st.markdown(served.claims_markdown(claims))
st.caption(served.claims_caption())

# The step's fragment runs last, in its place above, so that the share box it draws holds every parameter the page
# wrote: the page redrawing the box after a fragment had drawn it left a new visit blank ("Cannot set a node at a
# delta path", tests/browser/test_fragment_pages.py), and a fragment rerun may write to the box only where the full
# run saw it write (its ▶ Play and step slider raised StreamlitInvalidLayoutContextError).
if traces:
    st.fragment(run_every=PLAY_SECONDS if playing else None, key="kv_step")(shares_link(lambda: in_place(step_place)))()
else:
    shares_link(lambda: None)()
