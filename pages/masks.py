"""Masks and batches: padding in a batch of unequal lengths, the causal mask aligned to the end of a KV cache, and
cross-attention, each computed by the real layer on a few tokens."""

from dataclasses import replace

import streamlit as st

from attn_core import VARIANT_NAMES
from explorer import masks as view
from explorer.charts import show_chart
from explorer.probes.masks import MAX_TOKENS
from explorer.state import bound, page_settings
from explorer.words import count

settings = page_settings()


def slider(label: str, low: int, high: int, help: str | None = None):
    """A link-bound length slider; a range of one value is shown as a fixed number (a slider needs two)."""

    def render(key):
        if low == high:
            return st.number_input(label, min_value=low, max_value=high, key=key, disabled=True, help=help)
        return st.slider(label, min_value=low, max_value=high, key=key, help=help)

    return render


st.title("Masks and batches")
st.markdown(
    "A mask decides which keys each query may attend to: blocked scores are set to −∞ before the softmax, so they "
    "get **exactly zero** weight and the rest still sums to one. Three masks matter in practice: the **padding "
    "mask** of a batch whose sequences have different lengths, the **causal mask**, which with a KV cache is "
    "*aligned to the end* (new tokens see every cached key), and **no mask** at all in cross-attention. "
    f"Everything below runs the real layer (float32, seeded weights) on at most {MAX_TOKENS} tokens per sequence: "
    "masks are about positions, so a few tokens show all of it; width, heads and seed come from the sidebar. The "
    "layer is built with just the head shown and the KV head it reads (each head's weights come from its own seeded "
    "stream, so it is that head of the whole layer), so a page stays quick at any width."
)

top = st.columns(2)
with top[0]:
    variant = bound(
        replace(view.VARIANT, default=settings.variants[0]),  # the sidebar's first chosen variant unless the link says
        lambda key: st.selectbox(
            "Variant", settings.variants, key=key, format_func=lambda v: f"{v.upper()}: {VARIANT_NAMES[v]}"
        ),
        settings.variants,
    )
with top[1]:
    head = bound(
        view.HEAD,
        lambda key: st.selectbox(
            "Head", tuple(range(settings.heads)), key=key, help="The query head whose weights are drawn."
        ),
        tuple(range(settings.heads)),
    )

# --- view controls --------------------------------------------------------------------------------------------------
st.caption("Lengths of the sequences each section runs (tokens):")
cols = st.columns(3)
with cols[0]:
    long_len = bound(view.LONG, slider("Long sequence (tokens)", view.LONG.low, view.LONG.high))
with cols[1]:
    short_len = bound(view.SHORT, slider("Short sequence (tokens)", 1, long_len - 1), (1, long_len - 1))
with cols[2]:
    causal = bound(
        view.CAUSAL,
        lambda key: st.toggle(
            "Causal as well", key=key, help="Combine the padding mask with the causal mask, as a decoder does."
        ),
    )

cols = st.columns(2)
with cols[0]:
    prefill = bound(view.PREFILL, slider("Cached tokens P (section 2)", view.PREFILL.low, view.PREFILL.high))
with cols[1]:
    chunk = bound(view.CHUNK, slider("New chunk C (section 2)", 1, MAX_TOKENS - prefill), (1, MAX_TOKENS - prefill))
cross_available = variant != "mla"
if cross_available:
    cols = st.columns(2)
    with cols[0]:
        query_len = bound(
            view.QUERIES, slider("Query sequence (section 3, tokens)", view.QUERIES.low, view.QUERIES.high)
        )
    with cols[1]:
        memory_len = bound(
            view.MEMORY, slider("Key/value sequence (section 3, tokens)", view.MEMORY.low, view.MEMORY.high)
        )
else:
    query_len, memory_len = view.QUERIES.default, view.MEMORY.default

lengths = (long_len, short_len, causal, prefill, chunk, query_len, memory_len)
cfg = settings.config(variant)
result = view.masks_result(cfg, settings.seed, head, *lengths)


def chart(section: str, name: str, caption: str) -> None:
    spec, rows = view.section_chart(section, cfg, settings.seed, lengths, head)
    show_chart(spec, name=name, rows=rows, caption=caption)


padding = result.padding
st.header("1. A batch of two sequences of unequal length")
st.markdown(
    f"The short sequence ({count(short_len, 'token')}) is **right-padded** to {long_len} so both fit one tensor "
    f"[2, {long_len}, {settings.d_model}]. `key_padding_mask` [2, {long_len}] says which keys are real (✓) and which "
    "are padding (·):"
)
st.dataframe(view.mask_table(padding.key_padding_mask), hide_index=True)
padded_columns = f"column {short_len}" if long_len - short_len == 1 else f"columns {short_len}…{long_len - 1}"
chart(
    "padding",
    "masks-padding",
    f"Notice the padded key {padded_columns}: blocked in every row, so their weight is exactly "
    f"0 (largest here: {padding.padded_key_weight_max:.1g}). Rows from {short_len} on are padded queries: "
    "computed, then thrown away.",
)
st.markdown(
    f"**Check: the short sequence's real rows equal running it alone** (without padding, {count(short_len, 'token')}):\n\n"
    f"- {view.check_line(f'head {head}: attention weights', padding.rows_weights_diff)}\n"
    f"- {view.check_line(f'head {head}: its output through o_proj', padding.rows_output_diff)}"
)

# --- 2. causal mask aligned to the end ----------------------------------------------------------------------------
chunk_result = result.chunk
total = prefill + chunk
st.header("2. The causal mask, aligned to the end")
st.markdown(
    f"Prefill {count(prefill, 'token')} into the KV cache, then feed a chunk of {count(chunk, 'new one')}. The chunk's queries are the "
    f"**last** {chunk} of {total} positions, so its mask is {chunk} × {total}: each new token sees every cached key "
    "and the new keys up to itself — the bottom rows of the full pass's square mask."
)
chart(
    "causal",
    "masks-causal",
    f"Notice the chunk's mask (right) is the last {chunk} rows of the square one (left): the diagonal is "
    f"shifted right by the {count(prefill, 'cached token')}, not starting at key 0.",
)
chart(
    "chunk",
    "masks-chunk-weights",
    f"Notice the chunk's weights (right) repeat the full pass's rows {prefill}…{total - 1}: the cache changes "
    "how keys are stored, not what a query sees.",
)
st.markdown(
    f"**Check: the chunk through the cache ({count(chunk_result.cached_tokens, 'token')} cached after it) equals the last "
    f"{chunk} rows of one full pass**"
    + (" (MLA attends to its cache with absorbed weights, in latent space)" if variant == "mla" else "")
    + f":\n\n- {view.check_line(f'head {head}: attention weights', chunk_result.rows_weights_diff)}\n"
    f"- {view.check_line(f'head {head}: its output through o_proj', chunk_result.rows_output_diff)}"
)

# --- 3. cross-attention -------------------------------------------------------------------------------------------
st.header("3. Cross-attention: queries from one sequence, keys from another")
if not cross_available:
    st.info(
        "MLA is self-attention only here: its keys and values are compressed from the same tokens that ask the "
        "queries. Pick MHA, MQA or GQA above (and in the sidebar) to see cross-attention.",
        icon="ℹ️",
    )
else:
    cross = result.cross
    st.markdown(
        f"`layer(queries, kv_input=memory)`: {query_len} queries attend to {memory_len} keys/values projected from "
        "another sequence (as a decoder reads an encoder). No causal mask — there is no order between two "
        "sequences — and no RoPE, since their positions are not comparable."
    )
    chart(
        "cross",
        "masks-cross",
        f"Notice the rectangle is full: every one of the {query_len} queries weighs all {memory_len} keys "
        "(each row sums to 1), whatever the two lengths.",
    )
