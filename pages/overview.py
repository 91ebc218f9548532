"""Overview: the four variants side by side at the current settings, and where to go next."""

import streamlit as st

from explorer import overview as view
from explorer.charts import show_chart
from explorer.pages import PAGES
from explorer.state import page_link, page_settings
from explorer.words import count

settings = page_settings()

st.title("Attention Explorer")
st.markdown(
    "Every token a language model has read leaves **keys and values** behind in a *KV cache*, so that the next "
    "token can attend to it without recomputing. Four designs of attention differ in how much they leave: "
    "**MHA** keeps keys and values for every head, **MQA** one pair for all heads, **GQA** one pair per group of "
    "heads, and **MLA** one compressed latent per token from which all heads' keys and values are rebuilt. "
    "Move the settings in the sidebar; every number below comes from a forward pass of the real layer."
)

rows = view.variant_rows(settings)
for row in rows:
    for note in row.warnings:
        st.warning(f"{row.variant.upper()}: {note}")

st.subheader(
    f"One layer at d_model {settings.d_model}, {count(settings.heads, 'head')}, {count(settings.seq_len, 'token')}"
)
st.dataframe(view.summary_table(rows), hide_index=True, width="stretch")
st.caption(
    "Measured: the bytes of the cache tensors after the real layer prefilled the tokens (run on PyTorch's meta "
    "device, which computes shapes exactly without allocating memory). Formula: tokens × batch × "
    "(2·groups·head_dim, or d_c + d_h^R for MLA) × bytes per number. ✓ when they agree to the byte."
)

left, right = st.columns(2)
with left:
    show_chart(
        view.cache_bar_figure(rows, settings.seq_len, settings.batch, settings.dtype),
        name="overview-cache-bytes",
        rows=view.csv_rows(rows),
        caption="Notice how the cache shrinks with the number of KV heads; MLA's depends on d_c + d_h^R, not on heads.",
    )
with right:
    show_chart(
        view.flops_bar_figure(rows, settings.seq_len),
        name="overview-decode-flops",
        rows=view.csv_rows(rows),
        caption=view.flops_caption(rows, settings),
    )

st.subheader("What each variant trades")
for row in rows:
    st.markdown(f"**{row.variant.upper()}** — {view.TRADE_OFFS[row.variant]}")

st.subheader("Explore further")
for name, page in PAGES.items():
    if name != "overview":
        page_link(page.path, label=f"{page.title}: {page.teaser}", icon=page.icon)
