"""Trade-off lab: one trained model converted to MHA, MQA and MLA, each conversion's KV cache against its perplexity
(from the stored table), and the same prompt answered by the original and a converted model."""

import streamlit as st

import explorer.shell  # noqa: F401  (first of ours: see explorer/shell.py)

from attn_core import AttentionConfig
from attn_core.pretrained import ModelNotInstalled, full_latent_rank
from explorer.charts import show_chart
from explorer.i18n import N_, _, fmt, format_bytes, language, n_, percent, sentences
from explorer.lab import axes_page, csv_export, figures, first_view, link, stored, tables, text
from explorer.lab import computed as cached
from explorer.labels import display_width
from explorer.link import bound, text_box
from explorer.model import trained_model
from explorer.probes import healing
from explorer.probes.lab import ANSWER_TOKENS, POINTS_BY_KEY, USER_TEXT_MAX_TOKENS, WINDOW, shared_prefix
from explorer.state import page_settings
from explorer.trained.computed import token_labels
from explorer.trained.text import token_chips
from explorer.verbatim import show_verbatim

page_settings("lab")

st.title(_("Trade-off lab"))
st.markdown(
    _(
        "A real trained model, **SmolLM2-135M-Instruct** (30 layers, 9 query heads sharing 3 KV heads of "
        "$d_h = 64$), with its attention converted — without any training — to other variants: **MHA** (each KV "
        "head repeated), **MQA** (one KV head, by mean-pooling as the GQA paper did, or fitted to activations) and "
        "**MLA** (DeepSeek's latent attention, with its absorbed decode and its $[c^{KV} \\mid k^R]$ cache). Every "
        "converted model runs through the same `attn_core` modules as the rest of the explorer. What does each cache "
        "saving cost? Further down, the cache's other axes on the same model and text: sliding windows with kept "
        "first tokens (sink tokens), local/global layers and 8/4/2-bit caches, then one trade-off across every axis "
        "at a context length you pick."
    )
)

try:
    table = stored.load_table()
except (OSError, ValueError):
    st.warning(
        _(
            "The lab's table ({file}) is missing or unreadable: run `python benchmarks/lab_table.py` to measure it.",
            file=stored.TABLE_PATH.name,
        )
    )
    st.stop()

rows = stored.table_rows(table)
healed = stored.healed_rows(stored.load_heal_table())  # {} until benchmarks/heal.py has run
by_key = {row.key: row for row in rows}
original = by_key["original"]
evaluation = table["evaluation"]
source = AttentionConfig(**original.attention)
mla_rope_dims = sorted({r.options["qk_rope_head_dim"] for r in rows if r.variant == "mla"})

context = bound(
    link.CONTEXT,
    lambda key: st.select_slider(
        _("Context length for the whole-model cache (tokens)"),
        options=link.CONTEXT.options,
        format_func=fmt,
        key=key,
        help=_("The model's context is {n} tokens.", n=8192),
    ),
)

# --- the Pareto chart -----------------------------------------------------------------------------------------------
st.subheader(_("Perplexity against KV cache"))
st.markdown(
    _(
        "**Perplexity** is $e$ to the mean negative log-likelihood of each next token: roughly how many equally "
        "likely tokens the model hesitates between at each step. **Lower is better**; the original model's is the "
        "floor a conversion aims at. **Cache sizes** are the trained model's own cache as it runs, in float32, all "
        "{layers} layers (a bfloat16 cache would be half): the same bytes the Trained model page measures. The "
        "sidebar's dtype shapes the seeded layers of the other pages.",
        layers=original.n_layers,
    )
)
label = text.label_shown
named = text.point_name  # the names drawn beside the chart's points: the sentences under it use them too
show_chart(
    figures.pareto_figure(rows, context_length=context, healed=healed),
    name="lab-pareto",
    rows=csv_export.pareto_rows(rows, context),
    caption=sentences(
        *text.pareto_findings(rows, healed),
        _(
            "Perplexity on {tokens} tokens of Python's own language reference (`pydoc_data.topics`), windows of "
            "{window}.",
            tokens=evaluation["tokens"],
            window=evaluation["window"],
        ),
    ),
)
rest = first_view.rest()
if rest.deferred:  # a new visit: the rest of the page follows its first chart (explorer.lab.first_view)
    st.stop()
if healed:
    st.markdown("**" + _("After healing, up close") + "**")
    show_chart(
        figures.healed_figure(rows, healed),
        name="lab-healed",
        rows=csv_export.healed_csv_rows(rows, healed),
        caption=sentences(*text.healed_findings(rows, healed, figures.HEALED_VIEW_TOP)),
    )
models_table = tables.models_table(rows, healed, context)
st.dataframe(
    models_table,
    hide_index=True,
    height="content",  # every row in view: the healed rows, the main result, came last inside an inner scroll
    # The seconds alone in the cells and their meaning here: "123 s to convert and evaluate" made the table 54 px
    # wider than a laptop's 938 px column.
    column_config={
        # each name whole ("MQA mean-pooled, healed" was cut): ~7 px a Latin letter in the grid's 14 px font (measured:
        # 6.7), twice that a Chinese character, and the cell's 8 px padding each side
        _("model"): st.column_config.TextColumn(
            width=7 * max(display_width(row[_("model")]) for row in models_table) + 16
        ),
        _("time"): st.column_config.TextColumn(
            help=_("Seconds to convert and evaluate; for a healed model, CPU seconds of healing (both stages).")
        ),
    },
)
st.caption(
    _(
        "Measured by `benchmarks/lab_table.py` on {date} (`{machine}`), float32. Evaluation: the first {eval_tokens} "
        "tokens of `pydoc_data.topics` (sha256 `{sha}…`; it changes between Python versions, so it is pinned by "
        "hash); calibration: the last {calibration_tokens} tokens of the same text (disjoint from evaluation). The "
        "page reads the stored table: evaluating every conversion takes minutes.",
        date=table["date"],
        machine=table["machine"],
        eval_tokens=evaluation["tokens"],
        sha=evaluation["text_sha256"][:12],
        calibration_tokens=table["calibration"]["tokens"],
    )
)

with st.expander(_("How each conversion works, and what it keeps")):
    st.markdown(
        _(
            "- **MHA**: every KV head copied for each query head that reads it: the same numbers, 3x the cache.\n"
            "- **MQA, mean-pooled**: the three KV heads' weights averaged (the GQA paper's conversion, which it "
            "followed with uptraining). Without it the heads' keys cancel and the model breaks.\n"
            "- **MQA, fitted**: RoPE turns each pair of key dimensions into a complex number multiplied by a rotation, "
            "so per frequency the shared key can be the leading complex principal direction of the three heads' keys "
            "(on calibration activations, weighted by the queries that read them), each query head absorbing its "
            "coefficient: positions stay exact. Values: principal components, with the output projection absorbing "
            "the map back.\n"
            "- **MLA**: DeepSeek's layer caches a latent $c^{KV}$ ($d_c$ numbers) and one rotary key $k^R$ "
            "($d_h^R$ numbers) shared by all heads. Here the fastest $d_h^R/2$ RoPE frequencies keep their rotation "
            "in $k^R$ (one complex direction per frequency for all three KV heads: what one shared key can hold); "
            "the slower frequencies **lose their rotation** and join the values in the joint latent (principal "
            "components of balanced keys and values, as TransMLA's BKV-PCA)."
        )
        + "".join(
            " "
            + _(
                "At $d_h^R = {d_r}$ a latent of $d_c = {d_c}$ holds those keys and values exactly, so the loss at "
                "that width is the shared rotary key and the unrotated slow frequencies alone.",
                d_r=dr,
                d_c=full_latent_rank(source, dr),
            )
            for dr in mla_rope_dims
        )
        + " "
        + _(
            "DeepSeek's latent RMSNorm would rescale each token's keys and values; the conversion sets its epsilon "
            "$\\epsilon$ so far above the latent's scale that it is a constant."
        )
    )
    kept_rows = tables.kept_table(rows)
    if kept_rows:
        st.dataframe(kept_rows, hide_index=True)
        st.caption(_("Fraction of the calibration activations' energy each reduction kept, averaged over layers."))

st.subheader(_("What the papers did that this lab does not"))
st.markdown(text.papers_note(healed))

axes_page.show_tradeoff()  # the other axes: windows, layer patterns, bits, against the conversions

# --- healing, live ---------------------------------------------------------------------------------------------------
HEAL_PHASES = {
    "converting": N_("Converting, and scoring the conversion before healing…"),
    "recording": N_("Recording the original model's attention on the training text…"),
    "measuring": N_("Scoring the healed model…"),
}
HEAL_STOPPED = {
    "owner": N_("The last heal of this conversion was stopped by the visitor who started it."),
    "left": N_("The last heal of this conversion stopped: the visitor who started it left the page."),
}


def start_heal(key: str) -> None:
    """The heal button's callback: start (or join) the heal; what it returns is read from the store on the rerun."""
    cached.start_heal(key)


def stop_heal(key: str) -> None:
    cached.stop_heal(key)  # its thread ends at its next step; the fragment then shows it stopped


def heal_name(key: str) -> str:
    return label(by_key[key]) if key in by_key else _(POINTS_BY_KEY[key].label)


def heal_section(key: str, model_name: str, about: str | None = None) -> None:
    """Heal the chosen conversion (or the windowed model: `about` says what healing does to it): a button, then its
    progress and loss curve, live, for every session; while another point's heal holds the server, when it is free."""
    st.markdown("**" + _("Heal it live") + "**")
    st.markdown(
        about
        or _(
            "The conversions above (●) are untrained. Healing trains **only their attention projections** — embeddings, "
            "norms and MLPs stay the original's, frozen — so that each converted layer reproduces the original "
            "layer's attention output on the original's own activations (each layer on its own, Adam, relative "
            "squared error). Live here: {seconds} s of training on {tokens} tokens of the same reference text, "
            "disjoint from evaluation and calibration. The papers trained far more: the GQA paper 5 % of "
            "pre-training, MHA2MLA about 0.3 % of it, TransMLA billions of tokens, end to end; this is a minute on "
            "one core, layer by layer (the ★ points above also had a second, end-to-end stage).",
            seconds=f"{healing.LIVE_SECONDS:.0f}",
            tokens=healing.LIVE_TRAIN_TOKENS,
        )
    )
    progress = cached.heal_progress(key)
    if progress is not None and progress.phase in ("failed", "stopped"):
        heal_ended(progress)
    if progress is None or progress.phase in ("failed", "stopped"):
        if trained_model() is None:
            return
        running = cached.running_heal()
        if running is not None:  # another point's heal holds the server: redrawn until it is free
            st.fragment(run_every=1.0)(server_busy)()
            return
        st.button(
            # the training's budget, and what comes around it: "about 60 s" took 84 s in all
            _(
                "Heal {model} ({seconds} s of training, plus converting and scoring)",
                model=model_name,
                seconds=f"{healing.LIVE_SECONDS:.0f}",
            ),
            icon=":material/healing:",
            key=link.heal_button_key(key),
            on_click=start_heal,
            args=(key,),
        )
        return
    # Redrawn every second while it runs (a fragment: the rest of the page is not rerun); once done, once more.
    st.fragment(run_every=1.0 if progress.running else None)(heal_view)(key)


def heal_ended(progress: healing.HealProgress) -> None:
    """Why the last heal of this point ended without a result: a failure (the server's words beside the page's) or
    a stop."""
    if progress.phase == "stopped":
        why = HEAL_STOPPED.get(progress.stopped_by or "", HEAL_STOPPED["owner"])
        st.info(_(why), icon=":material/stop_circle:")
    elif progress.model_missing:
        st.warning(_("The trained model is not installed. The stored table above does not need it."))
    else:
        st.warning(
            _(
                "The last heal of this conversion stopped before it finished; press the button to heal it again. "
                "What the server reported:"
            )
        )
        show_verbatim(progress.error or "")  # the server's own words, for its keeper


def free_in(progress: healing.HealProgress) -> str:
    """When the server is free for another heal, as the heal's own estimate says."""
    left = progress.seconds_left()
    if left is None:  # still converting: its training and scoring come after
        return _("It trains for {budget} s once converted.", budget=f"{progress.budget_seconds:.0f}")
    return _("The server is free for another heal in about {seconds} s.", seconds=f"{max(left, 1.0):.0f}")


def server_busy() -> None:
    running = cached.running_heal()
    if running is None:
        st.rerun(scope="app")  # free now: the button comes back
    assert running is not None
    st.info(
        sentences(
            _("A heal of {model} is running on this server (one at a time).", model=heal_name(running.key)),
            free_in(running.progress),
        ),
        icon=":material/hourglass_top:",
    )


def heal_summary(progress: healing.HealProgress) -> str:
    """What a finished heal reached: perplexity before, after and the original's, its time and the gap closed."""
    shown = dict(
        before=f"{progress.perplexity_before:,.2f}",
        after=f"{progress.perplexity_after:,.2f}",
        original=f"{progress.perplexity_original:,.2f}",
        n=progress.eval_tokens,
        seconds=f"{progress.seconds:.0f}",
        # the same figures as the text above: the distinct training tokens, and the steps taken over them
        steps=len(progress.step_losses),
        window=WINDOW,
        tokens=progress.train_tokens,
    )
    gap = progress.gap_closed
    return sentences(
        _(
            "Perplexity on the first {n} evaluation tokens: **{before} converted → {after} healed** (the original: "
            "{original}), after {seconds} s of training: {steps} steps of {window} tokens from the {tokens} "
            "training tokens.",
            **shown,
        ),
        _("{seconds} s in all, converting and scoring included.", seconds=f"{progress.total_seconds:.0f}")
        if progress.total_seconds
        else "",
        "" if gap is None else _("{share} of the gap closed.", share=percent(gap)),
        _("Healed before on this server: kept on disk.") if progress.from_disk else "",
    )


def heal_view(key: str) -> None:
    progress = cached.heal_progress(key)
    assert progress is not None
    watching = f"_watching_heal_{key}"
    if progress.phase in HEAL_PHASES:
        st.info(_(HEAL_PHASES[progress.phase]), icon=":material/hourglass_top:")
    elif progress.phase == "training":
        st.progress(
            min(progress.seconds / progress.budget_seconds, 1.0),
            text=_(
                "Training: step {step}, {seconds} of {budget} s; error {loss}",
                step=len(progress.step_losses),
                # the last step ends past the budget: the bar says the budget, not a second over it
                seconds=f"{min(progress.seconds, progress.budget_seconds):.0f}",
                budget=f"{progress.budget_seconds:.0f}",
                loss=f"{progress.step_losses[-1]:.4f}",
            ),
        )
    if progress.running:
        heal_owner(key, progress)
    if progress.step_losses:
        show_chart(
            figures.heal_loss_figure(progress.step_losses, progress.first_loss, progress.seconds),
            name="lab-heal-loss",
            rows=[{"step": n, "mean_relative_error": loss} for n, loss in enumerate(progress.step_losses, 1)],
            caption=_(
                "Each point is one step: the converted layers' output error against the original's, averaged over "
                "the {layers} layers. Falling means the layers are learning what the conversion lost.",
                layers=original.n_layers,
            ),
        )
    if progress.running:
        st.session_state[watching] = True
        return
    if st.session_state.pop(watching, False):
        st.rerun(scope="app")  # it just finished: the answers below can use the healed model now
    st.success(heal_summary(progress), icon=":material/healing:")


def heal_owner(key: str, progress: healing.HealProgress) -> None:
    """While it runs: its owner's Stop button; anyone else's note that it is someone else's, and when it ends."""
    run = cached.running_heal()
    if run is not None and run.key == key and run.owner == cached.session_id():
        st.button(
            _("Stop the heal"),
            icon=":material/stop_circle:",
            key=f"lab_stop_heal_{key}",
            on_click=stop_heal,
            args=(key,),
        )
    else:
        st.caption(sentences(_("Started by another visitor, who alone can stop it."), free_in(progress)))


# --- one prompt, two models -----------------------------------------------------------------------------------------
st.subheader(_("One conversion: heal it, then ask it"))
choices = [r.key for r in rows if r.key != "original"]
key = bound(
    link.MODEL,
    lambda widget: st.selectbox(
        _("Converted model"),
        choices,
        key=widget,
        format_func=lambda k: _(
            "{model} (perplexity {perplexity})", model=label(by_key[k]), perplexity=f"{by_key[k].perplexity:,.2f}"
        ),
    ),
    tuple(choices),
)
heal_section(key, label(by_key[key]))

st.markdown("**" + _("The same prompt, answered by each") + "**")
prompt = text_box(link.PROMPT, st.text_input, _("Prompt"))
st.caption(
    _(
        "Greedy decoding, {n} new tokens, through each model's own cache. The first answer loads the model, "
        "calibrates and converts (up to a few minutes on a busy 2-core machine); later ones are quick.",
        n=ANSWER_TOKENS,
    )
)
if language() == "zh":
    # TRANSLATORS: shown on the Chinese page only, under the English default prompt.
    st.caption(
        _(
            "The prompt and the text below are in English by default: SmolLM2 was trained mostly on English, and a "
            "conversion's loss shows only where the original model is good. Chinese works too: the model's split of "
            "it is shown above the answers."
        )
    )


def model_problem(error: Exception) -> None:
    if isinstance(error, ModelNotInstalled):
        st.warning(_("The trained model is not installed. The stored table above does not need it."))
    else:
        st.warning(_(str(error)))  # explorer.probes.lab's messages are in the catalog (N_)


def show_split(text: str, of: str) -> None:
    """What the model reads: the text split by its own tokenizer."""
    tokens = token_labels(text)
    st.markdown(n_("The model reads it as **{n} token**:", "The model reads it as **{n} tokens**:", len(tokens)))
    st.html(token_chips(tokens, of))


# A toggle, not a button: it lives in the link, so a shared link shows the answers its sender saw (cached, so a
# rerun costs nothing).
if bound(link.ANSWER, lambda widget: st.toggle(_("Answer with each model"), key=widget)):
    if not prompt.strip():
        st.warning(_("Write a prompt first."))
    elif trained_model() is not None:  # None: it has said why the model is absent and how to install it
        show_split(prompt.strip(), "prompt")
        try:
            with st.spinner(_("Answering with each model…")):
                first, second = cached.answers(key, prompt.strip())
        except (ModelNotInstalled, ValueError) as error:
            model_problem(error)
        else:
            titles, replies = [_("Original (GQA)"), label(by_key[key])], [first, second]
            if cached.healed(key) is not None:  # healed on this server: its answer beside the two
                titles.append(_("{model}, healed", model=named(by_key[key])))
                replies.append(cached.healed_answer(key, prompt.strip()))
            for column, title, reply in zip(st.columns(len(replies)), titles, replies, strict=True):
                with column:
                    st.markdown(f"**{title}**")
                    st.text(reply.text or _("(nothing but the end token)"))
                    st.html(token_chips(reply.tokens, "answer"))
                    st.caption(
                        _(
                            "Cache after answering: {cache} for {n} tokens (float32).",
                            cache=format_bytes(reply.cache_bytes),
                            n=reply.cache_tokens,
                        )
                    )
            shared = shared_prefix(first.tokens, second.tokens)
            # Per token: the two answers may differ in length, and the cache grows with it.
            per_token = [reply.cache_bytes / reply.cache_tokens for reply in (first, second)]
            st.caption(
                sentences(  # a count with its noun, then the ratio
                    n_("The answers share their first {n} token.", "The answers share their first {n} tokens.", shared)
                    if shared
                    else _("The answers differ from their first token."),
                    _(
                        "Per cached token the converted model keeps {converted}, the original {original}: {ratio}x.",
                        converted=format_bytes(per_token[1]),
                        original=format_bytes(per_token[0]),
                        ratio=f"{per_token[1] / per_token[0]:.2f}",
                    ),
                )
            )

# --- your own text --------------------------------------------------------------------------------------------------
st.subheader(_("Perplexity on your own text"))
user_text = text_box(link.TEXT, st.text_area, _("Text"))
st.caption(
    _(
        "Scored live on at most {n} tokens (longer text is cut): a short text gives a noisy perplexity, so compare "
        "the two models on the same text rather than against the table.",
        n=USER_TEXT_MAX_TOKENS,
    )
)
if bound(link.MEASURE, lambda widget: st.toggle(_("Measure both"), key=widget)):
    if not user_text.strip():
        st.warning(_("Write some text first."))
    elif trained_model() is not None:
        show_split(user_text, "text")
        try:
            with st.spinner(_("Measuring perplexity with both models…")):
                (ppl_a, n_a, cut), (ppl_b, _n, _cut) = cached.user_perplexities(key, user_text)
        except (ModelNotInstalled, ValueError) as error:
            model_problem(error)
        else:
            left, right = st.columns(2)
            left.metric(_("Original (GQA)"), f"{ppl_a:,.2f}")
            right.metric(label(by_key[key]), f"{ppl_b:,.2f}", delta=f"{ppl_b / ppl_a:,.2f}x", delta_color="off")
            if cut:
                st.caption(_("{n} tokens scored (cut to {cap}).", n=n_a, cap=USER_TEXT_MAX_TOKENS))
            else:
                st.caption(n_("{n} token scored.", "{n} tokens scored.", n_a))

# --- the other axes, live ---------------------------------------------------------------------------------------------
axes_page.show_side_by_side()
axes_page.show_window_heal(heal_section)
rest.drawn()
