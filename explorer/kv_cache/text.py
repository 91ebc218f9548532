"""The KV cache page's words: a cache's name as shown, a whole-model row's name and what it stores, the textbook's
names of its tensors, numbers as said, and the core's preset notes marked for the catalog."""

from __future__ import annotations

import itertools

from explorer.glossary import design_name
from explorer.i18n import N_, _, fmt, format_bytes, n_, sentences, sig
from explorer.kinds.kind import Design
from explorer.probes.kv_cache import DecodeTrace, DesignTrace, ModelRow

# What the core's presets say they leave out (ModelPreset.not_modelled), for the catalog: the page shows
# _(preset.not_modelled), so a note not listed here stays in English (and tests/i18n says so).
PRESET_NOTES = (
    N_("Gemma 2 alternates 4096-token sliding-window layers with global ones and soft-caps logits at 50."),
    N_("YaRN context extension (rope scaling and its softmax mscale) is not applied here."),
    N_(
        "q/k RMSNorm over all of a layer's heads (qk_norm_type per_layer) and RoPE on 64 of each head's 128 dims: "
        "neither changes the cache."
    ),
)


def shown_name(name: str) -> str:
    """A cache's name as the page shows it: "GQA", or the pitfall "GQA repeated" in this run's language."""
    if name.endswith(" repeated"):
        return _("{variant} repeated", variant=name.removesuffix(" repeated"))
    return name


def row_label(row: ModelRow) -> str:
    """A whole-model row's name in tables and legends (in this run's language)."""
    cfg = row.cfg
    if row.key == "published":
        return _("{model} as published ({variant})", model=row.model, variant=cfg.variant.upper())
    if row.key == "published_repeated":
        return _("{model}, repeated K/V cached (pitfall)", model=row.model)
    if row.key == "gqa":
        return n_("as GQA, {n} group", "as GQA, {n} groups", cfg.n_kv_heads)
    if row.key == "mla":
        return _(
            "as MLA, latent {latent} + rotary key {rope}", latent=str(cfg.kv_lora_rank), rope=str(cfg.qk_rope_head_dim)
        )
    return _("as {variant}", variant=row.key.upper())


def row_description(row: ModelRow) -> str:
    """What one token leaves in one layer of the row's cache, in a few words (in this run's language). Short: a table
    column that must fit a laptop's width; how many query heads read it is the column's help."""
    cfg = row.cfg
    if cfg.variant == "mla":
        return _("c_kv {latent} + k_rope {rope}", latent=str(cfg.kv_lora_rank), rope=str(cfg.qk_rope_head_dim))
    if row.repeated_heads:
        return n_(
            "K, V copied to {n} head × {width}",
            "K, V copied to {n} heads × {width}",
            cfg.n_heads,
            width=str(cfg.head_dim),
        )
    return _("K, V: {heads} × {width}", heads=n_("{n} head", "{n} heads", cfg.n_kv_heads), width=str(cfg.head_dim))


def cache_names(trace: DecodeTrace) -> tuple[str, str]:
    """How the textbook names the two cached tensors."""
    return ("c_kv", "k_rope") if trace.variant == "mla" else ("k", "v")


def parameter_text(count: float) -> str:
    """A model's parameter count as it is usually said: 124 M, 6.74 B, 671 B."""
    return f"{count / 1e9:.3g} B" if count >= 1e9 else f"{count / 1e6:.3g} M"


def design_finding(
    name: str, trace: DesignTrace, step: int, gqa: DecodeTrace | None, design: Design | None = None
) -> str:
    """What one design's cache did over the decode, read off its measured bytes: flat, stopping, growing (and why it
    falls back now and then, where its kind says: the design gives the numbers), or bounded by chunks; and at the step
    what it read, and its size against GQA's (when GQA is traced)."""
    held, last = trace.nbytes, len(trace.nbytes) - 1
    flat_from = next(i for i in range(last + 1) if all(v == held[last] for v in held[i:]))
    falls = [i for i in range(1, last + 1) if held[i] < held[i - 1]]
    if flat_from == 0:
        shape = _("holds {held} at every step, whatever the length", held=format_bytes(held[last]))
    elif flat_from < last:
        shape = _("stops growing at step {step}: {held}", step=flat_from, held=format_bytes(held[last]))
    elif falls and design is not None and design.kind.falls is not None:
        shape = _(
            "grows from {first} to {last}, falling back {when}: {why}",
            first=format_bytes(held[0]),
            last=format_bytes(held[last]),
            when=falling_steps(falls),
            why=_(design.kind.falls, **design.kind.falls_with(design)),
        )
    elif falls:  # a chunk dropped whole
        shape = _(
            "rises to {high} and drops back to {low} again and again: it never holds more than {high}",
            high=format_bytes(max(held)),
            low=format_bytes(min(held)),
        )
    else:
        shape = _(
            "grows from {first} to {last} ({per} a token on average)",
            first=format_bytes(held[0]),
            last=format_bytes(held[last]),
            per=format_bytes(round((held[last] - held[0]) / max(last, 1))),
        )
    values = {
        "name": design_name(name),
        "shape": shape,
        "step": step,
        "read": format_bytes(trace.read_nbytes[step]),
        "held": format_bytes(held[step]),
    }
    if trace.read_nbytes[step] > held[step]:
        # a window layer holds W - 1 tokens: its query also reads the key and value its own token brings
        return _(
            "**{name}** {shape}; at step {step} its query reads {read}: the {held} held and its own new token's key "
            "and value.",
            **values,
        )
    if gqa is None or not gqa.nbytes[step]:
        return _("**{name}** {shape}; at step {step} its query reads {read} of the {held} held.", **values)
    return _(
        "**{name}** {shape}; at step {step} its query reads {read} of the {held} held, {ratio}× GQA's cache then.",
        ratio=sig(held[step] / gqa.nbytes[step], 2),
        **values,
    )


def falling_steps(steps: list[int]) -> str:
    """When a cache fell back, as said: at one step, every n steps, or at each step listed."""
    if len(steps) == 1:
        return _("at step {step}", step=steps[0])
    gaps = {b - a for a, b in itertools.pairwise(steps)}
    if len(gaps) == 1:
        return _("every {n} steps", n=gaps.pop())
    return _("at steps {steps}", steps=_(", ").join(str(step) for step in steps))


def contexts_finding(held: dict[str, tuple[int, int]], contexts: tuple[int, int]) -> str:
    """Each design's bytes held at a short and a long context, and which hold the same at both (a state, a window)."""
    short, long = contexts
    each = [
        _("{name} {short} → {long}", name=design_name(name), short=format_bytes(a), long=format_bytes(b))
        for name, (a, b) in held.items()
    ]
    said = _(
        "Held after {short} and after {long} tokens (the core's closed forms, which the measured dots above sit "
        "on): {each}.",
        short=fmt(short),
        long=fmt(long),
        each=_(", ").join(each),
    )
    same = [design_name(name) for name, (a, b) in held.items() if a == b]
    if not same:
        return said
    return sentences(said, _("The same bytes at both: {names}.", names=_(", ").join(same)))
