"""A trained model: SmolLM2-135M's real attention on your text, and the model writing with its real KV cache."""

import streamlit as st

import explorer.shell  # noqa: F401  (first of ours: see explorer/shell.py)

from explorer.charts import shape_text, show_chart
from explorer.i18n import _, format_bytes, language
from explorer.link import bound, follow, text_box
from explorer.model import trained_model
from explorer.state import page_settings
from explorer.trained import computed as trained_computed
from explorer.trained import csv_export as trained_csv_export
from explorer.trained import figures as trained_figures
from explorer.trained import link as trained_link
from explorer.trained import text as trained_text
from explorer.verbatim import show_verbatim

page_settings("trained")

st.title(_("A trained model: SmolLM2-135M"))
lm = trained_model()
if lm is None:
    st.stop()
cfg = lm.config
st.markdown(
    _(
        "Seeded layers show only the causal triangle. This is a trained language model, **SmolLM2-135M-Instruct**, "
        "running through this explorer's own attention layers: {layers} layers, $d_\\text{{model}} = {d_model}$, "
        "**{heads} query heads sharing {kv_heads} KV heads** of head dimension $d_h = {head_dim}$ (grouped-query "
        "attention, GQA: {per_kv} query heads per KV head), RoPE θ = {theta}, a vocabulary of {vocab} byte-level "
        "tokens. Its layers' outputs equal HF transformers' to $10^{{-4}}$ (tested).",
        layers=cfg.n_layers,
        d_model=cfg.d_model,
        heads=cfg.n_heads,
        kv_heads=cfg.n_kv_heads,
        head_dim=cfg.head_dim,
        per_kv=cfg.n_heads // cfg.n_kv_heads,
        theta=int(cfg.rope_theta),
        vocab=cfg.vocab_size,
    )
)
st.caption(
    _("The sidebar's layer settings shape the seeded layers of the other pages; this page runs the model as trained.")
)

st.header(_("1 · Its attention on your text"))
OTHER = {"en": "zh", "zh": "en"}


def _use_other_example() -> None:
    st.session_state[trained_link.TEXT.key] = trained_link.DEFAULT_TEXTS[OTHER[language()]]


text = text_box(
    trained_link.text_param(),
    st.text_area,
    _("Text (English or Chinese; at most {n} characters)", n=trained_link.MAX_TEXT_CHARS),
    height=90,
)
columns = st.columns([5, 2], vertical_alignment="center")
if language() == "zh":
    columns[0].caption(
        _(
            "Why a Chinese sentence by default? To show how this model splits Chinese. SmolLM2 was trained mostly on "
            "English: most Chinese characters become two or three byte tokens, so the maps below are drawn between "
            "pieces of characters, and the model understands Chinese far less well. An English word is mostly one "
            "token, so the maps of an English sentence read word by word: compare with the English example."
        )
    )
    columns[1].button(_("Try the English sentence"), on_click=_use_other_example, width="stretch")
else:
    columns[0].caption(
        _(
            "SmolLM2 was trained mostly on English: an English word is mostly one token, so the maps below read word "
            "by word. Chinese works too, but most Chinese characters become two or three byte tokens, and the model "
            "understands Chinese far less well."
        )
    )
    columns[1].button(_("Try a Chinese sentence"), on_click=_use_other_example, width="stretch")
if not text.strip():
    st.info(_("The text is empty, so the default sentence is shown."))
    text = trained_link.default_text()
with st.spinner(_("Running SmolLM2-135M on the text…")):
    result = trained_computed.attention_on(text)
length = len(result.ids)
if result.total_tokens > length:
    st.markdown(
        _(
            "**{total} tokens** as the model splits them — the first {shown} of {total} are run:",
            total=result.total_tokens,
            shown=length,
        )
    )
else:
    st.markdown(_("**{total} tokens** as the model splits them:", total=result.total_tokens))
st.html(trained_text.token_chips(result.labels))
st.caption(
    _(
        "Byte-level BPE: a character the vocabulary lacks is split into its UTF-8 bytes, each token labelled with "
        "the character and the bytes it holds: [1-2/3] is bytes 1–2 of a 3-byte character. ␣ is a space, ↵ a new "
        "line; every digit is a token of its own."
    )
)

st.subheader(_("All {n} heads at once", n=cfg.n_layers * cfg.n_heads))
if length > trained_figures.OVERVIEW_SIDE:
    overview_caption = _(
        "Each small square is one head's {length}×{length} map (queries down, keys across, averaged to "
        "{side}×{side}); colour grows with √weight. Each frame holds the {group} heads that read one KV head.",
        length=length,
        side=trained_figures.OVERVIEW_SIDE,
        group=result.group_size,
    )
else:
    overview_caption = _(
        "Each small square is one head's {length}×{length} map (queries down, keys across); colour grows with "
        "√weight. Each frame holds the {group} heads that read one KV head.",
        length=length,
        group=result.group_size,
    )
show_chart(
    trained_figures.overview_figure(result),
    name="trained-all-heads",
    rows=lambda: trained_csv_export.overview_csv(result),
    caption=overview_caption,
)
for line in trained_text.findings(result):
    st.markdown(f"- {line}")
show_chart(
    trained_figures.shares_figure(result),
    name="trained-shares",
    rows=lambda: trained_csv_export.shares_csv(result),
    caption=_("Per head, the mean weight a query gives the first token (left) and the token just before it (right)."),
)

st.subheader(_("One head up close"))
pair = st.columns(2)
with pair[0]:
    layer = bound(
        trained_link.LAYER, lambda key: st.slider(_("Layer"), 0, cfg.n_layers - 1, key=key), (0, cfg.n_layers - 1)
    )
with pair[1]:
    head = bound(trained_link.HEAD, lambda key: st.slider(_("Head"), 0, cfg.n_heads - 1, key=key), (0, cfg.n_heads - 1))
show_chart(
    trained_figures.head_figure(result, layer, head),
    name="trained-head",
    rows=lambda: trained_csv_export.head_csv(result, layer, head),
    caption=_(
        "Layer {layer}, head {head}: first-token share {first}, previous-token share {previous}. Colour grows with "
        "the square root of the weight, so small weights show beside the sink.",
        layer=layer,
        head=head,
        first=f"{result.first_token_share[layer, head]:.2f}",
        previous=f"{result.previous_token_share[layer, head]:.2f}",
    ),
)
query = bound(
    trained_link.QUERY,
    lambda key: st.slider(
        _("Query token"), 0, length - 1, key=key, help=_("The token whose attention is drawn below.")
    ),
    (0, length - 1),
    say_moves=False,
)
show_chart(
    trained_figures.group_rows_figure(result, layer, head, query),
    name="trained-group-rows",
    rows=lambda: trained_csv_export.group_rows_csv(result, layer, head, query),
    caption=_(
        "The heads that share KV head {kv} score the same keys with different queries: compare where each puts its "
        "weight.",
        kv=head // result.group_size,
    ),
)

st.header(_("2 · The model writing, with its real KV cache"))
prompt = text_box(trained_link.prompt_param(), st.text_input, _("Your message to the model"))
if not prompt.strip():
    st.info(_("The message is empty, so the default question is asked."))
    prompt = trained_link.default_prompt()
message_tokens = trained_computed.token_labels(prompt)
st.markdown(_("Your message is **{n} tokens** as the model splits them:", n=len(message_tokens)))
st.html(trained_text.token_chips(message_tokens, of="prompt"))
if language() != "zh":
    st.caption(
        _(
            "SmolLM2-135M is a small model (135 million parameters, about 1/50 of a 7B model): it answers simple "
            "questions fluently but often gets facts wrong. The cache does not care: its size depends only on how "
            "many tokens it holds."
        )
    )
else:
    # TRANSLATORS: shown on the Chinese page only, under the Chinese default question.
    st.caption(
        _(
            "SmolLM2-135M is small and was trained mostly on English: its Chinese answers are often garbled. The "
            "cache does not care: its size depends only on how many tokens it holds. Try the question in English."
        )
    )
with st.spinner(_("SmolLM2-135M is writing, one token at a time…")):
    trace = trained_computed.writing_of(prompt)
generated = len(trace.steps)
follow(trained_link.STEP, prompt, generated)  # a new answer opens at its last step, whatever step the last one showed
step = bound(
    trained_link.STEP,
    lambda key: st.slider(_("Step (tokens written)"), 1, generated, key=key) if generated > 1 else 1,
    (1, generated),
    say_moves=False,
)
now = trace.steps[step - 1]
cache_sentence = dict(
    prompt_tokens=len(trace.prompt_ids),
    step=step,
    layers=trace.n_layers,
    shape=shape_text(now.layer_k_shape),
    measured=format_bytes(now.cache_bytes),
    formula=format_bytes(now.formula_bytes),
    kv_heads=trace.n_kv_heads,
    head_dim=cfg.head_dim,
    tokens=now.cached_tokens,
)
if now.cache_bytes == now.formula_bytes:
    st.markdown(
        _(
            "Prompt: {prompt_tokens} tokens through the model's chat template. After step {step} (the model has "
            "chosen {step} tokens; the last one enters the cache at the next step), every one of the {layers} layers "
            "holds K and V of shape **{shape}** each: {measured} measured from the cache tensors, {formula} by the "
            "formula $2 \\times L \\times g \\times d_h \\times T \\times 4 = 2 \\times {layers} \\times {kv_heads} "
            "\\times {head_dim} \\times {tokens} \\times 4$ bytes (K and V, $L$ layers, $g$ KV heads, head dimension "
            "$d_h$, $T$ tokens, 4 bytes a float32) — they agree ✓.",
            **cache_sentence,
        )
    )
else:
    st.markdown(
        _(
            "Prompt: {prompt_tokens} tokens through the model's chat template. After step {step} (the model has "
            "chosen {step} tokens; the last one enters the cache at the next step), every one of the {layers} layers "
            "holds K and V of shape **{shape}** each: {measured} measured from the cache tensors, {formula} by the "
            "formula $2 \\times L \\times g \\times d_h \\times T \\times 4 = 2 \\times {layers} \\times {kv_heads} "
            "\\times {head_dim} \\times {tokens} \\times 4$ bytes (K and V, $L$ layers, $g$ KV heads, head dimension "
            "$d_h$, $T$ tokens, 4 bytes a float32) — **they differ**.",
            **cache_sentence,
        )
    )
show_verbatim(now.text)
if step == generated and not trace.ended:  # a class asks why the answer stops mid-sentence
    st.caption(
        _(
            "The answer is cut here, after {n} tokens: the most this page lets the model write. It had not finished.",
            n=generated,
        )
    )
elif step == generated:
    st.caption(_("The model ended its answer here: its next token was its end-of-text token."))
show_chart(
    trained_figures.cache_growth_figure(trace, step),
    name="trained-cache-growth",
    rows=lambda: trained_csv_export.writing_csv(trace),
    caption=_(
        "Per token the trained model keeps {per_token}; as MHA it would keep {mha}× that, as MQA {mqa}× less. What "
        "converting the model costs in quality: the Trade-off lab.",
        per_token=format_bytes(trace.per_token_bytes["gqa"]),
        mha=f"{trace.per_token_bytes['mha'] / trace.per_token_bytes['gqa']:.0f}",
        mqa=f"{trace.per_token_bytes['gqa'] / trace.per_token_bytes['mqa']:.0f}",
    ),
)
