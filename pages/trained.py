"""A trained model: SmolLM2-135M's real attention on your text, and the model writing with its real KV cache."""

import streamlit as st

from explorer import trained as view
from explorer.charts import format_bytes, shape_text, show_chart
from explorer.model import trained_model
from explorer.state import bound, page_settings

page_settings()

st.title("A trained model: SmolLM2-135M")
lm = trained_model()
if lm is None:
    st.stop()
cfg = lm.config
st.markdown(
    f"Seeded layers show only the causal triangle. This is a trained language model, **SmolLM2-135M-Instruct**, "
    f"running through this explorer's own attention layers: {cfg.n_layers} layers, d_model {cfg.d_model}, "
    f"**{cfg.n_heads} query heads sharing {cfg.n_kv_heads} KV heads** of {cfg.head_dim} (grouped-query attention, "
    f"{cfg.n_heads // cfg.n_kv_heads} query heads per KV head), RoPE θ = {cfg.rope_theta:,.0f}, a vocabulary of "
    f"{cfg.vocab_size:,} byte-level tokens. Its layers' outputs equal HF transformers' to 1e-4 (tested)."
)
st.caption(
    "The sidebar's layer settings shape the seeded layers of the other pages; this page runs the model as trained."
)

st.header("1 · Its attention on your text")
text = bound(
    view.TEXT,
    lambda key: st.text_area(
        f"Text (English or Chinese; at most {view.MAX_TEXT_CHARS:,} characters)",
        key=key,
        max_chars=view.MAX_TEXT_CHARS,
        height=90,
    ),
)
if not text.strip():
    st.info("The text is empty, so the default sentence is shown.")
    text = view.DEFAULT_TEXT
result = view.attention_on(text)
length = len(result.ids)
cut = f" — the first {length} of {result.total_tokens} are run" if result.total_tokens > length else ""
st.markdown(f"**{result.total_tokens} tokens** as the model splits them{cut}:")
st.html(view.token_chips(result.labels))
st.caption(
    "Byte-level BPE: a character the vocabulary lacks is split into its UTF-8 bytes, shown as 好[1-2/3] and 好[3/3] "
    "(bytes 1–2 and 3 of a 3-byte character). ␣ is a space, ↵ a new line; every digit is a token of its own."
)

st.subheader(f"All {cfg.n_layers * cfg.n_heads} heads at once")
show_chart(
    view.overview_figure(result),
    name="trained-all-heads",
    rows=lambda: view.overview_csv(result),
    caption=(
        f"Each small square is one head's {length}×{length} map (queries down, keys across"
        + (f", averaged to {view.OVERVIEW_SIDE}×{view.OVERVIEW_SIDE}" if length > view.OVERVIEW_SIDE else "")
        + f"); colour grows with √weight. Each frame holds the {result.group_size} heads that read one KV head."
    ),
)
for line in view.findings(result):
    st.markdown(f"- {line}")
show_chart(
    view.shares_figure(result),
    name="trained-shares",
    rows=lambda: view.shares_csv(result),
    caption="Per head, the mean weight a query gives the first token (left) and the token just before it (right).",
)

st.subheader("One head up close")
columns = st.columns(2)
with columns[0]:
    layer = bound(view.LAYER, lambda key: st.slider("Layer", 0, cfg.n_layers - 1, key=key), (0, cfg.n_layers - 1))
with columns[1]:
    head = bound(view.HEAD, lambda key: st.slider("Head", 0, cfg.n_heads - 1, key=key), (0, cfg.n_heads - 1))
show_chart(
    view.head_figure(result, layer, head),
    name="trained-head",
    rows=lambda: view.head_csv(result, layer, head),
    caption=(
        f"Layer {layer}, head {head}: first-token share {result.first_token_share[layer, head]:.2f}, previous-token "
        f"share {result.previous_token_share[layer, head]:.2f}."
        " Colour grows with the square root of the weight, so small weights show beside the sink."
    ),
)
query = bound(
    view.QUERY,
    lambda key: st.slider("Query token", 0, length - 1, key=key, help="The token whose attention is drawn below."),
    (0, length - 1),
    say_moves=False,
)
show_chart(
    view.group_rows_figure(result, layer, head, query),
    name="trained-group-rows",
    rows=lambda: view.group_rows_csv(result, layer, head, query),
    caption=(
        f"The heads that share KV head {head // result.group_size} score the same keys with different queries: "
        "compare where each puts its weight."
    ),
)

st.header("2 · The model writing, with its real KV cache")
prompt = bound(view.PROMPT, lambda key: st.text_input("Your message to the model", key=key, max_chars=300))
if not prompt.strip():
    st.info("The message is empty, so the default question is asked.")
    prompt = view.DEFAULT_PROMPT
trace = view.writing_of(prompt)
generated = len(trace.steps)
step = bound(
    view.STEP,
    lambda key: st.slider("Step (tokens written)", 1, generated, key=key) if generated > 1 else 1,
    (1, generated),
    say_moves=False,
)
now = trace.steps[step - 1]
st.markdown(
    f"Prompt: {len(trace.prompt_ids)} tokens through the model's chat template. After step {step} (the model has "
    f"chosen {step} tokens; the last one enters the cache at the next step), every one of the "
    f"{trace.n_layers} layers holds K and V of shape **{shape_text(now.layer_k_shape)}** each: "
    f"{format_bytes(now.cache_bytes)} measured from the cache tensors, {format_bytes(now.formula_bytes)} by the "
    f"formula (layers × 2 × KV heads × head_dim × tokens × 4 bytes) — "
    + ("they agree ✓." if now.cache_bytes == now.formula_bytes else "**they differ**.")
)
st.code(now.text or " ", language=None, wrap_lines=True)
show_chart(
    view.cache_growth_figure(trace, step),
    name="trained-cache-growth",
    rows=lambda: view.writing_csv(trace),
    caption=(
        f"Per token the trained model keeps {format_bytes(trace.per_token_bytes['gqa'])}; as MHA it would keep "
        f"{trace.per_token_bytes['mha'] / trace.per_token_bytes['gqa']:.0f}× that, as MQA "
        f"{trace.per_token_bytes['gqa'] / trace.per_token_bytes['mqa']:.0f}× less. What converting the model costs in "
        "quality: the Trade-off lab."
    ),
)
