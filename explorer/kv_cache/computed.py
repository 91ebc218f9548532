"""The KV cache page's probes (explorer.probes.kv_cache), cached by the settings they depend on: the decode traces a
rerun that only moves the step reads back, and the whole-model rows."""

from __future__ import annotations

import streamlit as st

from attn_core import AttentionConfig
from explorer.glossary import design_name
from explorer.i18n import _
from explorer.kinds.registry import chosen
from explorer.probes.kv_cache import (
    MAX_TRACE_BATCH,
    DecodeTrace,
    DesignTrace,
    ModelRow,
    TraceTooHeavy,
    check_trace_bounds,
    check_trace_bounds_tokens,
    check_work_bounds,
    decode_trace,
    design_parameters,
    design_trace,
    model_rows,
)
from explorer.settings import Settings
from explorer.work import cached_probe

from .text import shown_name


def trace_batch(settings: Settings) -> int:
    return min(settings.batch, MAX_TRACE_BATCH)


# A short and a long context: what each chosen design holds at both, a state the same
CONTEXTS = (4096, 131072)


def held_at_contexts(settings: Settings) -> dict[str, tuple[int, int]]:
    """design name -> bytes its cache holds after CONTEXTS tokens, by the core's closed forms (Design.formula_bytes)
    in the sidebar's dtype and the traces' batch."""
    batch = trace_batch(settings)
    return {
        name: (
            design.formula_bytes(CONTEXTS[0], batch, settings.dtype, new_tokens=CONTEXTS[0])[0],
            design.formula_bytes(CONTEXTS[1], batch, settings.dtype, new_tokens=CONTEXTS[1])[0],
        )
        for name, design in chosen(settings).items()
    }


def trace_plan(settings: Settings, *, repeated: bool) -> list[tuple[str, AttentionConfig, bool]]:
    """(name, config, repeated_heads) of every cache the decode section follows: each variant, plus the pitfall of
    each grouped variant whose query heads share KV heads (group size > 1) when asked."""
    plan = []
    for variant, cfg in settings.configs().items():
        plan.append((variant.upper(), cfg, False))
    if repeated:
        for variant, cfg in settings.configs().items():
            if variant != "mla" and cfg.group_size > 1:
                plan.append((f"{variant.upper()} repeated", cfg, True))
    return plan


def too_heavy(cfg: AttentionConfig, settings: Settings, prompt_len: int, steps: int) -> str | None:
    """Why this layer is not traced step by step (a sentence in this run's language), or None."""
    try:
        check_trace_bounds(cfg, prompt_len=prompt_len, steps=steps, batch=trace_batch(settings))
    except TraceTooHeavy as reason:
        return _(reason.message, **reason.values)
    return None


cached_trace = cached_probe(decode_trace, max_entries=128)  # the spinner is traces_for's, in the reader's language


def traces_for(
    settings: Settings, prompt_len: int, steps: int, repeated: bool
) -> tuple[dict[str, DecodeTrace], list[str]]:
    """name -> trace for every cache that can be traced, and a sentence for each one skipped as too heavy. Names are
    the plan's ("GQA repeated"): shown through shown_name()."""
    traces, skipped = {}, []
    with st.spinner(_("Decoding token by token through the real layers…")):
        for name, cfg, is_repeated in trace_plan(settings, repeated=repeated):
            reason = too_heavy(cfg, settings, prompt_len, steps)
            if reason:
                skipped.append(_("{cache}: {reason}", cache=shown_name(name), reason=reason))
                continue
            traces[name] = cached_trace(
                cfg,
                prompt_len=prompt_len,
                steps=steps,
                batch=trace_batch(settings),
                seed=settings.seed,
                storage_dtype=settings.dtype,
                repeated_heads=is_repeated,
            )
    return traces, skipped


cached_design_trace = cached_probe(design_trace, max_entries=128)


def design_traces_for(settings: Settings, prompt_len: int, steps: int) -> tuple[dict[str, DesignTrace], list[str]]:
    """design name -> trace for each chosen design after MLA that can be traced, and a sentence for each skipped."""
    traces, skipped = {}, []
    batch = trace_batch(settings)
    with st.spinner(_("Decoding token by token through the designs after MLA…")):
        for name, design in chosen(settings).items():
            try:
                check_trace_bounds_tokens(prompt_len, steps, batch)
                check_work_bounds(design_parameters(design), tokens=prompt_len + steps, batch=batch)
            except TraceTooHeavy as reason:
                skipped.append(
                    _("{cache}: {reason}", cache=design_name(name), reason=_(reason.message, **reason.values))
                )
                continue
            traces[name] = cached_design_trace(
                design,
                prompt_len=prompt_len,
                steps=steps,
                batch=batch,
                seed=settings.seed,
                storage_dtype=settings.dtype,
            )
    return traces, skipped


@st.cache_data(max_entries=128, show_spinner=False)  # the page shows a spinner in the reader's language
def cached_model_rows(
    preset_name: str, groups: int, latent: int, rope_dim: int, dtype: str, batch: int, repeated: bool
) -> list[ModelRow]:
    """Numbers only: the rows' names and descriptions are worded where shown (text.row_label, row_description)."""
    return model_rows(
        preset_name, groups=groups, latent=latent, rope_dim=rope_dim, dtype=dtype, batch=batch, repeated_heads=repeated
    )
