"""The cache's four axes: published models' caches against context, measured by the core from their config.json,
the four axes' cuts at one length, and any config.json a reader pastes."""

import json
import math

import streamlit as st

import explorer.shell  # noqa: F401  (first of ours: see explorer/shell.py)

from attn_core import PUBLISHED, SOURCES, published_config
from explorer import served
from explorer.axes import computed, figures, tables, text
from explorer.axes import link as view_link
from explorer.charts import show_chart
from explorer.i18n import _, fmt, n_
from explorer.link import bound
from explorer.present import presenting
from explorer.probes import axes as measured
from explorer.share import link_drawn_by_fragment, shares_link
from explorer.state import page_settings
from explorer.uploader import upload_box
from explorer.verbatim import show_verbatim

link_drawn_by_fragment()  # the share box is drawn from "Your model", a fragment (below)
settings = page_settings("axes")

st.title(_("The cache's four axes"))
st.markdown(
    _(
        "A KV cache is **layers × tokens × width × bytes**. MHA, MQA, GQA and MLA cut the **width** one token leaves "
        "in a layer. The designs that shipped since cut the others: a **sliding window** or **sparse attention** "
        "keeps or reads fewer **tokens**, **compression** pools them, **linear attention** keeps a fixed state "
        "instead, hybrids mix **layers** of different kinds, and **quantization** shrinks the **bytes** per number. "
        "Every number below is measured by the core from the model's own `config.json`, on PyTorch's `meta` device."
    )
)

# the cache's storage on a row of its own: its two long options were cut at a third of the page's width (1024 px with
# the sidebar open, and presenter mode)
(left, middle), right = st.columns(2), st.container()
with left:
    tokens = bound(
        view_link.TOKENS,
        lambda key: st.select_slider(_("Context length T (tokens)"), measured.TOKEN_GRID, format_func=fmt, key=key),
    )
with middle:
    shown_measure = bound(
        view_link.MEASURE,
        lambda key: st.segmented_control(
            _("Show"),
            view_link.MEASURE.options,
            format_func=lambda option: _("Held") if option == "held" else _("Read per step"),
            key=key,
            required=True,
        ),
    )
with right:
    storage = served.storage_of(
        bound(
            view_link.STORAGE,
            lambda key: st.segmented_control(
                _("Cache stored"), view_link.STORAGE.options, format_func=served.storage_name, key=key, required=True
            ),
        )
    )
measure = str(shown_measure or view_link.MEASURE.default)
batch = settings.batch
# as served, each format fixes its own number types: the sidebar's dtype is the reference storage's
dtype = settings.dtype if storage == "reference" else "bfloat16"

# --- 1. published models ---------------------------------------------------------------------------------------------
st.header(_("Published models, cache against context"), divider="gray")
with st.spinner(_("Measuring every layer's cache on the `meta` device…")):
    models, missing = computed.cached_published(batch=batch, dtype=dtype, storage=storage)
figure, csv_rows = figures.context_figure(models, measure, tokens, projector=presenting())
captions: list[str | None] = []
if measure == "held":
    captions += text.plateau_sentences([p for m in models for p in measured.plateaus(m)])
found = measured.crossings(models, measure)
nearest = sorted(sorted(found, key=lambda c: abs(math.log(c.tokens / tokens)))[:4], key=lambda c: c.tokens)
captions += [text.crossing_sentence(c, measure) for c in nearest]
captions.append(text.more_crossings(len(found) - len(nearest)) if len(found) > len(nearest) else None)
by_name = {m.name: m for m in models}
captions += [
    text.successor_sentence(by_name[old], by_name[new], tokens)
    for old, new in text.SUCCESSORS
    if old in by_name and new in by_name
]
captions += [text.reading_sentence(m, tokens) for m in models]
captions.append(text.extremes_sentence(models, tokens, measure))
show_chart(
    figure,
    name="axes-published-models",
    rows=csv_rows,
    caption=_(
        "Each line is a whole model's cache ({sequences}, {dtype}), measured at every length drawn; dotted beyond the "
        "context the model was published for. Hover a line for its layer kinds; the dashed line marks T.",
        sequences=n_("{n} sequence", "{n} sequences", batch),
        dtype=dtype if storage == "reference" else served.storage_name(storage).lower(),
    ),
)
if storage == "served":
    st.markdown(
        _(
            "**As served**: each model's cache in the format its own serving code keeps it, scales included. A model "
            "served in bf16 keeps what HF's module holds. The formats, per layer kind:"
        )
    )
    st.markdown(served.formats_markdown(models))
    if settings.dtype != "bfloat16":
        st.caption(
            _("The sidebar's dtype ({dtype}) counts the caches as HF's modules hold them.", dtype=settings.dtype)
        )
else:
    st.caption(
        _(
            "As HF's modules hold them: every number in {dtype}. Choose “As served” for each model's cache in its "
            "serving format (FP8 latents, FP4 indexer keys, bf16 states), with each format's source.",
            dtype=dtype,
        )
    )
st.markdown("\n".join(f"- {sentence}" for sentence in captions if sentence))
if missing:
    st.info(
        _(
            "Not drawn yet: {models}. The core does not read their `model_type` yet; they appear here when it does. "
            "Its message:",
            models=_(", ").join(f"{m.name} (`{m.model_type}`)" for m in missing),
        ),
        icon=":material/hourglass_empty:",
    )
    show_verbatim(missing[0].message)

st.dataframe(
    tables.kinds_table(models, tokens),
    hide_index=True,
    width="stretch",
    column_config={
        header: st.column_config.TextColumn(**config) for header, config in tables.kinds_columns(tokens).items()
    },
)
with st.expander(_("Each layer kind's formula"), icon=":material/functions:"):
    st.markdown(tables.formulas_markdown(models))
st.caption(
    _(
        "Every layer kind of every model at {tokens} tokens: the bytes its layers hold and what one decoding step "
        "reads, both measured on the `meta` device; the core's closed form for one layer above (T tokens, B "
        "sequences, b bytes per number). Sources: {sources}.",
        tokens=tokens,
        sources=_("; ").join(f"{m.name}: `{SOURCES[m.name]}`" for m in models),
    )
)

# --- 2. the four axes ------------------------------------------------------------------------------------------------
st.header(_("Which design cuts which axis"), divider="gray")
# the four axes split caches as HF's modules hold them: a served format's bytes are not one number type's
held_as_hf = models if storage == "reference" else computed.cached_published(batch=batch, dtype=settings.dtype)[0]
cuts = [measured.axis_cuts(model, tokens, measure) for model in held_as_hf]
axes_chart, axes_csv = figures.axes_figure(cuts, tokens, measure)
show_chart(
    axes_chart,
    name="axes-four-axes",
    rows=axes_csv,
    caption=text.sentences_of(
        None
        if measure == "held"
        else _("Here what one decoding step reads, against MHA reading every token's keys and values on every layer."),
        _(
            "Each cell: how many times less the model keeps than MHA keeping every token of every layer in 16 bits, "
            "on one axis; the last column multiplies the four. The cache layers keep entries of tokens; the others "
            "hold a fixed state (linear attention, Mamba) or share another layer's cache. **Layers**: every layer as "
            "the mean cache layer ÷ the layers as they are (states, shared layers). **Tokens**: the cache layers "
            "keeping one entry per token ÷ what they hold (windows, pooled entries). **Width**: MHA's entry (a key "
            "and a value per query head) ÷ the cache layers' mean entry. **Bytes**: 16 bits ÷ the cache's bits "
            "({dtype}). Each design stays on its axis at every length. Below 1× (red) is more, not less.",
            dtype=dtype,
        ),
        text.axis_leaders(cuts, tokens),
        None if storage == "reference" else _("These cuts count the caches as HF's modules hold them."),
    ),
)

# --- published claims ------------------------------------------------------------------------------------------------
st.header(_("Published claims, measured"), divider="gray")
with st.spinner(_("Measuring the claims' models on the `meta` device…")):
    claims = served.cached_claims()
st.markdown(served.claims_markdown(claims))
st.caption(served.claims_caption())

# --- 3. your model ---------------------------------------------------------------------------------------------------
st.header(_("Your model"), divider="gray")
config_key, last_key, note_key = view_link.CONFIG.key, "_axes_last_config", "_axes_config_note"


def start_from() -> None:
    """A published model's config, written into the box to read or change."""
    name = st.session_state.get("axes_start")
    if name:
        st.session_state[config_key] = json.dumps(published_config(name), indent=1)


def keep_typed() -> None:
    """A paste longer than any config.json is refused whole (the box keeps what it had), not cut into broken JSON."""
    typed = st.session_state[config_key]
    if len(typed) > measured.MAX_CONFIG_CHARS:
        st.session_state[config_key] = st.session_state.get(last_key, "")
        st.session_state[note_key] = len(typed)


def read_upload() -> None:
    upload = st.session_state.get("axes_upload")
    if upload is None:
        return
    raw = upload.getvalue()
    if len(raw) > 4 * measured.MAX_CONFIG_CHARS:
        st.session_state[note_key] = len(raw)
        return
    st.session_state[config_key] = raw.decode("utf-8", errors="replace")


def config_box() -> str:
    """The box a config.json is pasted, uploaded or started from a published model in; what it holds."""
    left, right = st.columns(2)
    with left:
        st.selectbox(
            _("Start from a published model"),
            list(PUBLISHED),
            index=None,
            placeholder=_("(paste your own)"),
            key="axes_start",
            on_change=start_from,
        )
    with right:
        upload_box(_("Or upload a `config.json`"), key="axes_upload", on_change=read_upload)
    pasted = bound(
        view_link.CONFIG,
        lambda key: st.text_area(
            _("Your `config.json`"),
            key=key,
            height=220,
            on_change=keep_typed,
            placeholder='{"model_type": "llama", "hidden_size": 4096, …}',
        ),
    )
    st.session_state[last_key] = pasted
    if (refused := st.session_state.pop(note_key, None)) is not None:
        st.error(
            _(
                "That text had {chars} characters: a `config.json` has a few thousand, and at most {limit} are read. "
                "Nothing was read from it.",
                chars=refused,
                limit=measured.MAX_CONFIG_CHARS,
            ),
            icon=":material/block:",
        )
    return pasted


def your_model(pasted: str) -> None:
    """What the core measured of the pasted config: its layers, its cache against context and its kinds' table."""
    result = computed.cached_custom(pasted, batch=batch, dtype=dtype, storage=storage)
    if result.problem is not None:
        if result.problem.kind == "empty":
            st.info(text.problem_text(result.problem), icon=":material/upload_file:")
        else:
            st.error(text.problem_text(result.problem), icon=":material/error:")
            if text.shows_message(result.problem):
                st.caption(text.problem_source(result.problem))
                show_verbatim(result.problem.message)  # the parser's or the core's own words (English)
    elif result.curves is not None:
        mine = result.curves
        st.markdown(
            _(
                "**{model}**: {layers}, of {kinds}.",
                model=f"`{mine.model_type}`"
                if mine.name == mine.model_type
                else _("{name} (`{model_type}`)", name=mine.name, model_type=mine.model_type),
                layers=n_("{n} layer", "{n} layers", mine.layers),
                kinds=_(", ").join(
                    _("{count} {kind}", count=kind.count, kind=text.kind_name(kind.kind)) for kind in mine.kinds
                ),
            )
        )
        my_figure, my_csv = figures.context_figure([mine], measure, tokens, by_kind=True, projector=presenting())
        show_chart(
            my_figure,
            name="axes-your-model",
            rows=my_csv,
            caption=text.sentences_of(
                _(
                    "Your model's cache ({sequences}, {dtype}) and each kind of its layers, measured as the published "
                    "models' are.",
                    sequences=n_("{n} sequence", "{n} sequences", batch),
                    dtype=dtype if storage == "reference" else served.storage_name(storage).lower(),
                ),
                *text.plateau_sentences(measured.plateaus(mine)),
                text.reading_sentence(mine, tokens),
            ),
        )
        st.dataframe(
            tables.kinds_table([mine], tokens),
            hide_index=True,
            width="stretch",
            column_config={
                header: st.column_config.TextColumn(**config) for header, config in tables.kinds_columns(tokens).items()
            },
        )
        st.markdown(tables.formulas_markdown([mine]))


def your_model_section() -> None:
    your_model(config_box())


# A paste, an upload or a published start reruns this section alone: the sidebar and the sections above did not change.
st.fragment(key="axes_your_model")(shares_link(your_model_section))()
