"""Trade-off lab: one trained model converted to MHA, MQA and MLA, each conversion's KV cache against its perplexity
(from the stored table), and the same prompt answered by the original and a converted model."""

import streamlit as st

from attn_core import AttentionConfig
from attn_core.pretrained import ModelNotInstalled
from attn_core.pretrained.convert import full_latent_rank
from explorer import lab
from explorer import lab_cache as cached
from explorer.charts import format_bytes, show_chart
from explorer.model import trained_model
from explorer.state import bound, page_settings

settings = page_settings()

st.title("Trade-off lab")
st.markdown(
    "A real trained model, **SmolLM2-135M-Instruct** (30 layers, 9 query heads sharing 3 KV heads of 64), with its "
    "attention converted — without any training — to other variants: **MHA** (each KV head repeated), **MQA** (one "
    "KV head, by mean-pooling as the GQA paper did, or fitted to activations) and **MLA** (DeepSeek's latent "
    "attention, with its absorbed decode and its `[c_kv | k_rope]` cache). Every converted model runs through the "
    "same `attn_core` modules as the rest of the explorer. What does each cache saving cost?"
)

try:
    table = lab.load_table()
except (OSError, ValueError):
    st.warning(
        f"The lab's table ({lab.TABLE_PATH.name}) is missing or unreadable: run `python benchmarks/lab_table.py` to "
        "measure it."
    )
    st.stop()

rows = lab.table_rows(table, settings.dtype)
by_key = {row.key: row for row in rows}
original = by_key["original"]
evaluation = table["evaluation"]
source = AttentionConfig(**original.attention)
mla_rope_dims = sorted({r.options["qk_rope_head_dim"] for r in rows if r.variant == "mla"})

context = bound(
    lab.CONTEXT,
    lambda key: st.select_slider(
        "Context length for the whole-model cache (tokens)",
        options=lab.CONTEXT.options,
        key=key,
        help="The model's context is 8,192 tokens. Cache sizes use the sidebar's dtype; perplexity was measured in "
        "float32.",
    ),
)

# --- the Pareto chart -----------------------------------------------------------------------------------------------
st.subheader("Perplexity against KV cache")
frontier = lab.pareto_frontier(rows)
worst = max(rows, key=lambda r: r.perplexity)
mla_rows = [r for r in rows if r.variant == "mla"]
best_mla = min(mla_rows, key=lambda r: r.perplexity) if mla_rows else None
findings = [
    f"On the frontier (no other model has both a smaller cache and a lower perplexity): "
    f"{', '.join(r.label for r in frontier)}.",
    f"Worst: {worst.label} at perplexity {worst.perplexity:,.1f}, "
    f"{worst.perplexity / original.perplexity:,.1f}x the original's {original.perplexity:.2f}.",
]
if best_mla is not None:
    findings.append(
        f"Best MLA conversion: {best_mla.label}, perplexity {best_mla.perplexity:.2f} with "
        f"{best_mla.cache_bytes_per_token / original.cache_bytes_per_token:.0%} of the original's cache."
    )
for mqa in (r for r in rows if r.variant == "gqa"):
    twin = next((r for r in mla_rows if r.cache_bytes_per_token == mqa.cache_bytes_per_token), None)
    if twin is not None:
        findings.append(
            f"At the same cache ({format_bytes(mqa.cache_bytes_per_token)} per token) {twin.label} reaches "
            f"{twin.perplexity:,.2f} where {mqa.label} reaches {mqa.perplexity:,.2f}."
        )
csv_rows = [
    {
        "model": r.label,
        "settings": r.settings,
        "perplexity": round(r.perplexity, 4),
        f"cache_bytes_per_token_{settings.dtype}": r.cache_bytes_per_token,
        f"cache_bytes_at_{context}_tokens": r.cache_bytes_per_token * context,
        "on_frontier": r in frontier,
    }
    for r in rows
]
show_chart(
    lab.pareto_figure(rows, context_length=context, dtype=settings.dtype),
    name="lab-pareto",
    rows=csv_rows,
    caption=" ".join(findings)
    + f" Perplexity on {evaluation['tokens']:,} tokens of Python's own language reference (pydoc_data.topics), "
    f"windows of {evaluation['window']}; cache in {settings.dtype}, all {original.n_layers} layers.",
)
st.dataframe(
    [
        {
            "model": r.label,
            "settings": r.settings,
            "perplexity": round(r.perplexity, 2),
            "× original": round(r.perplexity / original.perplexity, 2),
            "cache / token": format_bytes(r.cache_bytes_per_token),
            f"cache at {context:,} tokens": format_bytes(r.cache_bytes_per_token * context),
            "seconds (convert + evaluate)": round(r.seconds["convert"] + r.seconds["evaluate"], 1),
        }
        for r in rows
    ],
    hide_index=True,
)
st.caption(
    f"Measured by `benchmarks/lab_table.py` on {table['date']} ({table['machine']}), float32. Evaluation: the "
    f"{evaluation['which']} of pydoc_data.topics (sha256 {evaluation['text_sha256'][:12]}…; it changes between "
    f"Python versions, so it is pinned by hash); calibration: the {table['calibration']['which']}. "
    "The page reads the stored table: evaluating every conversion takes minutes."
)

with st.expander("How each conversion works, and what it keeps"):
    st.markdown(
        "- **MHA**: every KV head copied for each query head that reads it: the same numbers, 3x the cache.\n"
        "- **MQA, mean-pooled**: the three KV heads' weights averaged (the GQA paper's conversion, which it followed "
        "with uptraining). Without it the heads' keys cancel and the model breaks.\n"
        "- **MQA, fitted**: RoPE turns each pair of key dims into a complex number multiplied by a rotation, so "
        "per frequency the shared key can be the leading complex principal direction of the three heads' keys "
        "(on calibration activations, weighted by the queries that read them), each query head absorbing its "
        "coefficient: positions stay exact. Values: principal components, with the output projection absorbing "
        "the map back.\n"
        "- **MLA**: DeepSeek's layer caches a latent `c_kv` (d_c numbers) and one rotary key `k_rope` (d_h^R "
        "numbers) shared by all heads. Here the fastest d_h^R/2 RoPE frequencies keep their rotation in `k_rope` "
        "(one complex direction per frequency for all three KV heads: what one shared key can hold); the slower "
        "frequencies **lose their rotation** and join the values in the joint latent (principal components of "
        "balanced keys and values, as TransMLA's BKV-PCA). "
        + " ".join(
            f"At d_h^R {dr} a latent of {full_latent_rank(source, dr)} holds those keys and values exactly, so the "
            "loss at that width is the shared rotary key and the unrotated slow frequencies alone."
            for dr in mla_rope_dims
        )
        + " DeepSeek's latent RMSNorm would rescale each token's keys and values; the conversion sets its epsilon so "
        "far above the latent's scale that it is a constant."
    )
    kept_rows = [
        {"model": r.label, **{f"energy kept: {name}": round(value, 4) for name, value in r.kept.items()}}
        for r in rows
        if r.kept
    ]
    if kept_rows:
        st.dataframe(kept_rows, hide_index=True)
        st.caption("Fraction of the calibration activations' energy each reduction kept, averaged over layers.")

st.subheader("What the papers did that this lab does not")
st.markdown(
    "Every conversion here is **training-free**. The methods it follows all recovered quality by training afterwards: "
    "the GQA paper (Ainslie et al., 2023) *uptrained* mean-pooled checkpoints with 5 % of the original pre-training "
    "compute; MHA2MLA (Ji et al., 2025) fine-tuned its partial-RoPE, low-rank models on a small fraction of the "
    "pre-training data; TransMLA (Meng et al., 2025) fine-tuned its converted models on billions of tokens. The "
    "figures above are the starting points those fine-tunes begin from, not what they end at. And DeepSeek-V2's "
    "claim that MLA matches or beats MHA is about **MLA trained from scratch**: converting a trained GQA model does "
    "not test it."
)

# --- one prompt, two models -----------------------------------------------------------------------------------------
st.subheader("The same prompt, two models")
choices = [r.key for r in rows if r.key != "original"]
key = bound(
    lab.MODEL,
    lambda widget: st.selectbox(
        "Converted model",
        choices,
        key=widget,
        format_func=lambda k: f"{by_key[k].label} (perplexity {by_key[k].perplexity:,.2f})",
    ),
    tuple(choices),
)
prompt = bound(lab.PROMPT, lambda widget: st.text_input("Prompt", max_chars=300, key=widget))
st.caption(
    f"Greedy decoding, {lab.ANSWER_TOKENS} new tokens, through each model's own cache. The first answer loads the "
    "model, calibrates and converts (up to a few minutes on a busy 2-core machine); later ones are quick."
)


def model_problem(error: Exception) -> None:
    if isinstance(error, ModelNotInstalled):
        st.warning(f"{error} The stored table above does not need it.")
    else:
        st.warning(str(error))


# A toggle, not a button: it lives in the link, so a shared link shows the answers its sender saw (cached, so a
# rerun costs nothing).
if bound(lab.ANSWER, lambda widget: st.toggle("Answer with both", key=widget)):
    if not prompt.strip():
        st.warning("Write a prompt first.")
    elif trained_model() is not None:  # None: it has said why the model is absent and how to install it
        try:
            first, second = cached.answers(key, prompt.strip())
        except (ModelNotInstalled, ValueError) as error:
            model_problem(error)
        else:
            for column, title, reply in zip(
                st.columns(2), ("Original (GQA)", by_key[key].label), (first, second), strict=True
            ):
                with column:
                    st.markdown(f"**{title}**")
                    st.text(reply.text or "(nothing but the end token)")
                    st.caption(
                        f"Tokens: {' | '.join(repr(t) for t in reply.tokens)}. Cache after answering: "
                        f"{format_bytes(reply.cache_bytes)} for {reply.cache_tokens} tokens (float32)."
                    )
            shared = lab.shared_prefix(first.tokens, second.tokens)
            ratio = second.cache_bytes / first.cache_bytes if first.cache_bytes else float("nan")
            st.caption(
                f"The answers share their first {shared} token(s); the converted model's cache is {ratio:.2f}x the "
                "original's for its answer."
            )

# --- your own text --------------------------------------------------------------------------------------------------
st.subheader("Perplexity on your own text")
user_text = bound(lab.TEXT, lambda widget: st.text_area("Text", max_chars=4000, key=widget))
st.caption(
    f"Scored live on at most {lab.USER_TEXT_MAX_TOKENS} tokens (longer text is cut): a short text gives a noisy "
    "perplexity, so compare the two models on the same text rather than against the table."
)
if bound(lab.MEASURE, lambda widget: st.toggle("Measure both", key=widget)):
    if not user_text.strip():
        st.warning("Write some text first.")
    elif trained_model() is not None:
        try:
            (ppl_a, n_a, cut), (ppl_b, _, _) = cached.user_perplexities(key, user_text)
        except (ModelNotInstalled, ValueError) as error:
            model_problem(error)
        else:
            left, right = st.columns(2)
            left.metric("Original (GQA)", f"{ppl_a:,.2f}")
            right.metric(by_key[key].label, f"{ppl_b:,.2f}", delta=f"{ppl_b / ppl_a:,.2f}x", delta_color="off")
            st.caption(f"{n_a} tokens scored" + (f" (cut to {lab.USER_TEXT_MAX_TOKENS})." if cut else "."))
