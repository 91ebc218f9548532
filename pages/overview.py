"""Overview: the four variants side by side at the current settings, and where to go next."""

import streamlit as st

import explorer.shell  # noqa: F401  (first of ours: see explorer/shell.py)

from explorer import overview as view
from explorer.charts import show_chart
from explorer.glossary import variant_name
from explorer.i18n import _, n_
from explorer.link import page_link
from explorer.pages import PAGES
from explorer.state import page_settings

settings = page_settings("overview")

st.title(_("Attention Explorer"))
st.markdown(
    _(
        "Every token a language model has read leaves **keys and values** behind in a *KV cache*, so that the next "
        "token can attend to it without recomputing. Four designs of attention differ in how much they leave: "
        "**MHA** keeps keys and values for every head, **MQA** one pair for all heads, **GQA** one pair per group "
        "of heads, and **MLA** one compressed latent per token from which all heads' keys and values are rebuilt. "
        "Move the settings in the sidebar; every number below comes from a forward pass of the real layer."
    )
)

rows = view.variant_rows(settings)
after_mla = view.design_rows(settings)
for row in rows:
    for note in view.config_warnings(row):
        st.warning(_("{variant}: {note}", variant=row.variant.upper(), note=note))

st.subheader(
    _(
        "One layer at $d_{{model}}$ = {d_model}, {heads}, {tokens}",
        d_model=settings.d_model,
        heads=n_("{n} head", "{n} heads", settings.heads),
        tokens=n_("{n} token", "{n} tokens", settings.seq_len),
    )
)
st.dataframe(view.summary_table(rows), hide_index=True, width="stretch")
st.caption(
    _(
        "Measured: the bytes of the cache tensors after the real layer prefilled the tokens (run on PyTorch's meta "
        "device, which computes shapes exactly without allocating memory). Formula: tokens × batch × "
        "($2 \\cdot g \\cdot d_h$, or $d_c + d_h^R$ for MLA) × bytes per number. ✓ when they agree to the byte."
    )
)

left, right = st.columns(2)
with left:
    show_chart(
        view.cache_bar_figure(rows, settings.seq_len, settings.batch, settings.dtype, after_mla),
        name="overview-cache-bytes",
        rows=view.chart_csv_rows(rows, after_mla),
        caption=_(
            "Notice how the cache shrinks with the number of KV heads; MLA's depends on $d_c + d_h^R$, not on heads."
        ),
    )
with right:
    show_chart(
        view.flops_bar_figure(rows, settings.seq_len, after_mla),
        name="overview-decode-flops",
        rows=view.chart_csv_rows(rows, after_mla),
        caption=view.flops_caption(rows, settings),
    )

if after_mla:
    st.subheader(_("The designs after MLA beside them"))
    st.dataframe(view.design_table(after_mla), hide_index=True, width="stretch")
    st.caption(view.design_caption(after_mla, settings.seq_len, dtype=settings.dtype, batch=settings.batch))

st.subheader(_("What each variant trades"))
for row in rows:
    st.markdown(
        _(
            "**{variant}** ({name}) — {trade_off}",
            variant=row.variant.upper(),
            name=variant_name(row.variant),
            trade_off=_(view.TRADE_OFFS[row.variant]),
        )
    )

st.subheader(_("Explore further"))
for name, page in PAGES.items():
    if name != "overview":
        page_link(page.path, label=_("{title}: {teaser}", title=_(page.title), teaser=_(page.teaser)), icon=page.icon)
