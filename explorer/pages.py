"""The app's pages, in menu order: one table that app.py navigates and the overview links to."""

from __future__ import annotations

from typing import NamedTuple

from .i18n import N_


class PageEntry(NamedTuple):
    path: str
    title: str  # marked for the catalog; translate where shown
    icon: str
    teaser: str
    uses: tuple[str, ...] = ()  # the sidebar settings this page reads (Settings field names); the rest do nothing here


# The sidebar settings, in the sidebar's order.
LAYER = ("variants", "d_model", "heads", "groups", "latent", "rope_dim")  # the layer each variant is built as
ALL_SETTINGS = (*LAYER, "seq_len", "batch", "dtype", "seed")
# The designs after MLA and their knobs: drawn only on a page that reads them (so not in the cue of ALL_SETTINGS)
DESIGN_SETTINGS = ("designs", "window", "sinks", "topk", "rate", "state_dim", "bits", "chunk")


# A page's key is its URL path and equals its file's stem: a freshly started server resolves the first link it is
# given by file name, before app.py has registered these pages (a mismatch shows "Page not found").
# (Streamlit's pages/ folder quirk: see ARCHITECTURE.md and explorer/shell.py.)
PAGES: dict[str, PageEntry] = {
    "overview": PageEntry(
        "pages/overview.py",
        N_("Overview"),
        ":material/dashboard:",
        N_("The four variants side by side."),
        (*LAYER, "seq_len", "batch", "dtype", *DESIGN_SETTINGS),
    ),
    "mapping": PageEntry(
        "pages/mapping.py",
        N_("Head → KV mapping"),
        ":material/account_tree:",
        N_("Which key/value store each query head reads, animated from MHA to MLA."),
        (*ALL_SETTINGS, *DESIGN_SETTINGS),
    ),
    "kv_cache": PageEntry(
        "pages/kv_cache.py",
        N_("KV cache"),
        ":material/memory:",
        N_("Decode token by token, then scale the cache to published models."),
        (*LAYER, "batch", "dtype", "seed", *DESIGN_SETTINGS),
    ),
    "heatmaps": PageEntry(
        "pages/heatmaps.py",
        N_("Attention heatmaps"),
        ":material/grid_on:",
        N_("Every head's weights, grouped by shared keys; inside one head; one decode step."),
        (*LAYER, "seq_len", "dtype", "seed", *DESIGN_SETTINGS),
    ),
    "axes": PageEntry(
        "pages/axes.py",
        N_("The cache's four axes"),
        ":material/stacked_line_chart:",
        N_("Windows, sparse reading, compression, linear state and bytes: published models' caches, and yours."),
        ("batch", "dtype"),
    ),
    "trained": PageEntry(
        "pages/trained.py",
        N_("Trained model"),
        ":material/psychology:",
        N_("SmolLM2-135M's real attention on your text, and its real cache while it writes."),
        (),
    ),
    "masks": PageEntry(
        "pages/masks.py",
        N_("Masks and batches"),
        ":material/filter_alt:",
        N_("Padding in a batch, the causal mask aligned to a cache, and cross-attention."),
        (*LAYER, "seed"),
    ),
    "lesson": PageEntry(
        "pages/lesson.py",
        N_("Lesson"),
        ":material/school:",
        N_(
            "The course notes' path from attention to MLA and on to the designs after it, a step at a time, for a class."
        ),
    ),
    "lab": PageEntry(
        "pages/lab.py",
        N_("Trade-off lab"),
        ":material/science:",
        N_("A trained model converted to MHA, MQA and MLA: what each cache saving costs in perplexity."),
    ),
}
