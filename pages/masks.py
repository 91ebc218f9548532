"""Masks and batches: padding in a batch of unequal lengths, the causal mask aligned to the end of a KV cache, and
cross-attention, each computed by the real layer on a few tokens."""

from collections.abc import Callable, Sequence
from dataclasses import replace

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

import explorer.shell  # noqa: F401  (first of ours: see explorer/shell.py)

from explorer.charts import show_chart
from explorer.glossary import variant_name
from explorer.i18n import _, language, n_
from explorer.link import bound
from explorer.masks import link, sections
from explorer.probes.masks import MAX_TOKENS, MaskLengths
from explorer.state import page_settings

settings = page_settings("masks")


def slider(label: str, low: int, high: int, help: str | None = None) -> Callable[[str], int]:
    """A link-bound length slider; a range of one value is shown as a fixed number (a slider needs two)."""

    def render(key: str) -> int:
        if low == high:
            return st.number_input(label, min_value=low, max_value=high, key=key, disabled=True, help=help)
        return st.slider(label, min_value=low, max_value=high, key=key, help=help)

    return render


def tokens(n: int) -> str:
    return n_("{n} token", "{n} tokens", n)


st.title(_("Masks and batches"))
st.markdown(
    _(
        "A mask decides which keys each query may attend to: blocked scores are set to $-\\infty$ before the "
        "softmax, so they get **exactly zero** weight and the rest still sums to one (below, $M_{ij}$ is $0$ where "
        "query $i$ may attend to key $j$ and $-\\infty$ where it may not):"
    )
)
st.latex(r"\operatorname{softmax}\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big)V")
st.markdown(
    _(
        "Three masks matter in practice: the **padding mask** of a batch whose sequences have different lengths, the "
        "**causal mask**, which with a KV cache is *aligned to the end* (new tokens see every cached key), and **no "
        "mask** at all in cross-attention. Everything below runs the real layer (float32, seeded weights) on at most "
        "{max_tokens} tokens per sequence: masks are about positions, so a few tokens show all of it; width, heads "
        "and seed come from the sidebar. The layer is built with just the head shown and the KV head it reads (each "
        "head's weights come from its own seeded stream, so it is that head of the whole layer), so a page stays "
        "quick at any width.",
        max_tokens=MAX_TOKENS,
    )
)

top = st.columns(2)
with top[0]:
    variant = bound(
        replace(link.VARIANT, default=settings.variants[0]),  # the sidebar's first chosen variant unless the link says
        lambda key: st.selectbox(
            _("Variant"),
            settings.variants,
            key=key,
            format_func=lambda v: _("{variant}: {name}", variant=v.upper(), name=variant_name(v)),
        ),
        settings.variants,
    )
with top[1]:
    head = bound(
        link.HEAD,
        lambda key: st.selectbox(
            _("Head"), tuple(range(settings.heads)), key=key, help=_("The query head whose weights are drawn.")
        ),
        tuple(range(settings.heads)),
    )

# --- view controls --------------------------------------------------------------------------------------------------
st.caption(_("Lengths of the sequences each section runs (tokens):"))
cols: Sequence[DeltaGenerator] = st.columns(3)
with cols[0]:
    long_len = bound(link.LONG, slider(_("Long sequence (tokens)"), link.LONG.low, link.LONG.high))
with cols[1]:
    short_len = bound(link.SHORT, slider(_("Short sequence (tokens)"), 1, long_len - 1), (1, long_len - 1))
with cols[2]:
    causal = bound(
        link.CAUSAL,
        lambda key: st.toggle(
            _("Causal as well"), key=key, help=_("Combine the padding mask with the causal mask, as a decoder does.")
        ),
    )

cols = st.columns(2)
with cols[0]:
    prefill = bound(link.PREFILL, slider(_("Cached tokens P (section 2)"), link.PREFILL.low, link.PREFILL.high))
with cols[1]:
    chunk = bound(link.CHUNK, slider(_("New chunk C (section 2)"), 1, MAX_TOKENS - prefill), (1, MAX_TOKENS - prefill))
cross_available = variant != "mla"
if cross_available:
    cols = st.columns(2)
    with cols[0]:
        query_len = bound(
            link.QUERIES, slider(_("Query sequence (section 3, tokens)"), link.QUERIES.low, link.QUERIES.high)
        )
    with cols[1]:
        memory_len = bound(
            link.MEMORY, slider(_("Key/value sequence (section 3, tokens)"), link.MEMORY.low, link.MEMORY.high)
        )
else:
    query_len, memory_len = link.QUERIES.default, link.MEMORY.default

lengths: MaskLengths = {
    "long_len": long_len,
    "short_len": short_len,
    "causal": causal,
    "prefill": prefill,
    "chunk": chunk,
    "query_len": query_len,
    "memory_len": memory_len,
}
cfg = settings.config(variant)
with st.spinner(_("Building the layer and running the three probes…")):
    result = sections.masks_result(cfg, settings.seed, head=head, **lengths)


def chart(section: str, name: str, caption: str) -> None:
    spec, rows = sections.section_chart(section, cfg, settings.seed, lengths, head, language())
    show_chart(spec, name=name, rows=rows, caption=caption)


def checks(weights_diff: float, output_diff: float) -> str:
    """The two check lines of a section, as a markdown list."""
    weights = sections.check_line(_("head {head}: attention weights", head=head), weights_diff)
    output = sections.check_line(_("head {head}: its output through $W^O$", head=head), output_diff)
    return f"- {weights}\n- {output}"


padding = result.padding
st.header(_("1. A batch of two sequences of unequal length"))
st.markdown(
    _(
        "The short sequence ({tokens}) is **right-padded** to {long} so both fit one tensor "
        "[2, {long}, {d_model}]. `key_padding_mask` [2, {long}] says which keys are real (✓) and which are padding "
        "(·):",
        tokens=tokens(short_len),
        long=long_len,
        d_model=settings.d_model,
    )
)
st.dataframe(sections.mask_table(padding.key_padding_mask), hide_index=True)
largest = f"{padding.padded_key_weight_max:.1g}"
chart(
    "padding",
    "masks-padding",
    _(
        "Notice the padded key column {first}: blocked in every row, so its weight is exactly 0 (largest here: "
        "{largest}). Rows from {first} on are padded queries: computed, then thrown away.",
        first=short_len,
        largest=largest,
    )
    if long_len - short_len == 1
    else _(
        "Notice the padded key columns {first}…{last}: blocked in every row, so their weight is exactly 0 (largest "
        "here: {largest}). Rows from {first} on are padded queries: computed, then thrown away.",
        first=short_len,
        last=long_len - 1,
        largest=largest,
    ),
)
st.markdown(
    _(
        "**Check: the short sequence's real rows equal running it alone** (without padding, {tokens}):",
        tokens=tokens(short_len),
    )
    + "\n\n"
    + checks(padding.rows_weights_diff, padding.rows_output_diff)
)

# --- 2. causal mask aligned to the end ----------------------------------------------------------------------------
chunk_result = result.chunk
total = prefill + chunk
st.header(_("2. The causal mask, aligned to the end"))
st.markdown(
    _(
        "Prefill {prefill} into the KV cache, then feed a chunk of {chunk}. The chunk's queries are the **last** "
        "{rows} of {total} positions, so its mask is {rows} × {total}: each new token sees every cached key and the "
        "new keys up to itself — the bottom rows of the full pass's square mask.",
        prefill=tokens(prefill),
        chunk=n_("{n} new one", "{n} new ones", chunk),
        rows=chunk,
        total=total,
    )
)
chart(
    "causal",
    "masks-causal",
    n_(
        "Notice the chunk's mask (right) is the last {rows} rows of the square one (left): the diagonal is shifted "
        "right by the {n} cached token, not starting at key 0.",
        "Notice the chunk's mask (right) is the last {rows} rows of the square one (left): the diagonal is shifted "
        "right by the {n} cached tokens, not starting at key 0.",
        prefill,
        rows=chunk,
    ),
)
chart(
    "chunk",
    "masks-chunk-weights",
    _(
        "Notice the chunk's weights (right) repeat the full pass's rows {first}…{last}: the cache changes how keys "
        "are stored, not what a query sees.",
        first=prefill,
        last=total - 1,
    ),
)
st.markdown(
    (
        _(
            "**Check: the chunk through the cache ({cached} cached after it) equals the last {rows} rows of one full "
            "pass** (MLA attends to its cache with absorbed weights, in latent space):",
            cached=tokens(chunk_result.cached_tokens),
            rows=chunk,
        )
        if variant == "mla"
        else _(
            "**Check: the chunk through the cache ({cached} cached after it) equals the last {rows} rows of one full "
            "pass**:",
            cached=tokens(chunk_result.cached_tokens),
            rows=chunk,
        )
    )
    + "\n\n"
    + checks(chunk_result.rows_weights_diff, chunk_result.rows_output_diff)
)

# --- 3. cross-attention -------------------------------------------------------------------------------------------
st.header(_("3. Cross-attention: queries from one sequence, keys from another"))
if not cross_available:
    st.info(
        _(
            "MLA is self-attention only here: its keys and values are compressed from the same tokens that ask the "
            "queries. Pick MHA, MQA or GQA above (and in the sidebar) to see cross-attention."
        ),
        icon="ℹ️",
    )
else:
    cross = result.cross
    st.markdown(
        _(
            "`layer(queries, kv_input=memory)`: {queries} attend to {keys} projected from another sequence (as a "
            "decoder reads an encoder). No causal mask — there is no order between two sequences — and no RoPE, "
            "since their positions are not comparable.",
            queries=n_("{n} query", "{n} queries", query_len),
            keys=n_("{n} key/value", "{n} keys/values", memory_len),
        )
    )
    chart(
        "cross",
        "masks-cross",
        n_(
            "Notice the rectangle is full: the {n} query weighs all {keys} keys (each row sums to 1), whatever the "
            "two lengths.",
            "Notice the rectangle is full: every one of the {n} queries weighs all {keys} keys (each row sums to 1), "
            "whatever the two lengths.",
            query_len,
            keys=memory_len,
        ),
    )
