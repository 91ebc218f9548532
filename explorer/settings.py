"""The shared settings: what every page is computed from, their valid values, and their form in a link.

Pure Python (no streamlit), so the parser can be tested on any input. A link is untrusted text: every value is
parsed, snapped to the nearest valid choice, and each change is reported as a sentence.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from attn_core import DTYPES, VARIANTS, AttentionConfig, kv_head_counts

from .i18n import _
from .kinds.registry import KINDS
from .params import shown

D_MODEL_CHOICES = (16, 32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 5120, 6144, 7168, 8192)
MAX_HEADS = 128
LATENT_CHOICES = (4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 4096)
ROPE_DIM_CHOICES = (2, 4, 8, 16, 32, 64, 128, 256)
SEQ_LEN_CHOICES = (
    1,
    2,
    4,
    8,
    12,
    16,
    24,
    32,
    48,
    64,
    96,
    128,
    192,
    256,
    384,
    512,
    768,
    1024,
    1536,
    2048,
    3072,
    4096,
    6144,
    8192,
)
BATCH_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128)
DTYPE_CHOICES = tuple(DTYPES)
MAX_SEED = 2**31 - 1
# The designs after MLA the pages can show beside the four variants (explorer/kinds/: each kind builds its layer from
# the layer settings and the knobs it reads), and the knobs' offered values.
DESIGNS = tuple(KINDS)
WINDOW_CHOICES = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
SINK_CHOICES = (0, 1, 2, 4, 8, 16)
TOPK_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
RATE_CHOICES = (2, 4, 8, 16, 32, 64, 128)
STATE_DIM_CHOICES = (8, 16, 32, 64, 128, 256)
BITS_CHOICES = (8, 4, 2)
CHUNK_CHOICES = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)  # Llama 4: 8,192

# Link names are part of the public interface: a link shared today must open the same view later.
LINK_NAMES = (
    "variant",
    "d_model",
    "heads",
    "groups",
    "latent",
    "rope_dim",
    "seq_len",
    "batch",
    "dtype",
    "seed",
    # the designs after MLA: a link without them opens with none chosen, as every link did before them
    "design",
    "window",
    "sinks",
    "topk",
    "rate",
    "state_dim",
    "bits",
    "chunk",
)
# What a link shows follows from its settings and from how seeded weights and inputs are drawn. When the drawing
# changes, LINK_VERSION goes up, so that an older link says its numbers differ instead of silently showing others.
# A link without `v` is read as this version (typed by hand, it asks for today's numbers). 1: links of before
# 2026-11-23. 2: each head's weights drawn from its own seeded stream.
LINK_VERSION = 2
VERSION_NAME = "v"


@dataclass(frozen=True)
class Settings:
    variants: tuple[str, ...] = VARIANTS
    d_model: int = 512
    heads: int = 8
    groups: int = 2
    latent: int = 128
    rope_dim: int = 32
    seq_len: int = 64
    batch: int = 1
    dtype: str = "bfloat16"
    seed: int = 0
    designs: tuple[str, ...] = ()
    window: int = 16
    sinks: int = 4
    topk: int = 16
    rate: int = 4
    state_dim: int = 64
    bits: int = 4
    chunk: int = 8

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    def config(self, variant: str) -> AttentionConfig:
        """The layer these settings describe, as the given variant (MLA: nope and value widths = head_dim)."""
        if variant == "gqa":
            return AttentionConfig("gqa", d_model=self.d_model, n_heads=self.heads, n_kv_heads=self.groups)
        if variant == "mla":
            return AttentionConfig(
                "mla",
                d_model=self.d_model,
                n_heads=self.heads,
                kv_lora_rank=self.latent,
                qk_rope_head_dim=self.rope_dim,
            )
        return AttentionConfig(variant, d_model=self.d_model, n_heads=self.heads)

    def configs(self) -> dict[str, AttentionConfig]:
        """One config per chosen variant, in the canonical order."""
        return {variant: self.config(variant) for variant in self.variants}

    def to_link(self) -> dict[str, str]:
        """The query parameters of a link to this view."""
        values = asdict(self)
        values["variant"] = ",".join(values.pop("variants"))
        values["design"] = ",".join(values.pop("designs"))
        return {name: str(values[name]) for name in LINK_NAMES} | {VERSION_NAME: str(LINK_VERSION)}

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# --- valid choices, which depend on each other ----------------------------------------------------------------------
def heads_choices(d_model: int) -> list[int]:
    """Head counts that divide d_model into an even head width (RoPE rotates pairs)."""
    return [h for h in range(1, min(MAX_HEADS, d_model) + 1) if d_model % h == 0 and (d_model // h) % 2 == 0]


def groups_choices(heads: int) -> list[int]:
    return kv_head_counts(heads)


def rope_dim_choices(head_dim: int) -> list[int]:
    return [r for r in ROPE_DIM_CHOICES if r <= head_dim] or [ROPE_DIM_CHOICES[0]]


def bits_choices(head_dim: int) -> list[int]:
    """Bits per cached number whose codes pack a head's numbers into whole bytes."""
    return [b for b in BITS_CHOICES if head_dim * b % 8 == 0]


def nearest(value: int, choices: Iterable[int]) -> int:
    """The choice closest to value (ratio-wise, since sizes are spread geometrically); ties go to the smaller."""
    return min(choices, key=lambda c: (max(c, value) / max(min(c, value), 1), c))


# --- making any set of values valid ---------------------------------------------------------------------------------
def normalize(settings: Settings) -> tuple[Settings, list[str]]:
    """Move every setting that is invalid given the others to its nearest valid value, saying what moved and why."""
    notes: list[str] = []
    # In this order: each step's valid values depend on the settings the steps before it made valid
    for fix in (_fix_variants, _snap_layer_shape, _snap_sizes, _fix_dtype, _clamp_seed, _snap_design_knobs):
        settings = fix(settings, notes)
    return settings, notes


def _snap(settings: Settings, name: str, choices: Collection[int], reason: str, notes: list[str]) -> Settings:
    """settings with `name` moved to its nearest choice if it is not one, and a note of the move (with the reason)."""
    value = getattr(settings, name)
    if value in choices:
        return settings
    fixed = nearest(value, choices)
    notes.append(_("{name} {value} → {fixed}: {reason}.", name=name, value=str(value), fixed=str(fixed), reason=reason))
    changed: dict[str, Any] = {name: fixed}
    return replace(settings, **changed)


def _fix_variants(settings: Settings, notes: list[str]) -> Settings:
    """The known variants chosen, in their usual order; all four when none is."""
    variants = tuple(v for v in VARIANTS if v in settings.variants)
    if not variants:
        notes.append(_("No variant chosen: showing all four."))
    return replace(settings, variants=variants or VARIANTS)


def _snap_layer_shape(settings: Settings, notes: list[str]) -> Settings:
    """d_model, then the heads that divide it, the groups that divide them, the rotary width within a head and the
    latent width, each to an offered value."""
    settings = _snap(
        settings,
        "d_model",
        D_MODEL_CHOICES,
        _(
            "d_model is one of {low}…{high} in the offered steps",
            low=str(D_MODEL_CHOICES[0]),
            high=str(D_MODEL_CHOICES[-1]),
        ),
        notes,
    )
    settings = _snap(
        settings,
        "heads",
        heads_choices(settings.d_model),
        _(
            "heads must divide d_model={d_model} into an even head width (at most {most} heads)",
            d_model=str(settings.d_model),
            most=str(MAX_HEADS),
        ),
        notes,
    )
    settings = _snap(
        settings,
        "groups",
        groups_choices(settings.heads),
        _("KV groups must divide heads={heads}", heads=str(settings.heads)),
        notes,
    )
    settings = _snap(
        settings,
        "rope_dim",
        rope_dim_choices(settings.head_dim),
        _("the rotary width is even and at most head_dim={head_dim}", head_dim=str(settings.head_dim)),
        notes,
    )
    return _snap(settings, "latent", LATENT_CHOICES, _("the latent width is one of the offered steps"), notes)


def _snap_sizes(settings: Settings, notes: list[str]) -> Settings:
    settings = _snap(settings, "seq_len", SEQ_LEN_CHOICES, _("sequence lengths are offered in steps"), notes)
    return _snap(settings, "batch", BATCH_CHOICES, _("batch sizes are offered in steps"), notes)


def _fix_dtype(settings: Settings, notes: list[str]) -> Settings:
    if settings.dtype in DTYPE_CHOICES:
        return settings
    notes.append(
        _(
            "dtype {value} → bfloat16: choose one of {choices}.",
            value=shown(settings.dtype),
            choices=", ".join(DTYPE_CHOICES),
        )
    )
    return replace(settings, dtype="bfloat16")


def _clamp_seed(settings: Settings, notes: list[str]) -> Settings:
    if 0 <= settings.seed <= MAX_SEED:
        return settings
    fixed = min(max(settings.seed, 0), MAX_SEED)
    notes.append(
        _(
            "seed {value} → {fixed}: seeds run from 0 to {most}.",
            value=str(settings.seed),
            fixed=str(fixed),
            most=str(MAX_SEED),
        )
    )
    return replace(settings, seed=fixed)


def _snap_design_knobs(settings: Settings, notes: list[str]) -> Settings:
    """The designs known, in their usual order; each knob to an offered value (the bits to ones a head packs)."""
    settings = replace(settings, designs=tuple(d for d in DESIGNS if d in settings.designs))
    for name, choices in (
        ("window", WINDOW_CHOICES),
        ("sinks", SINK_CHOICES),
        ("topk", TOPK_CHOICES),
        ("rate", RATE_CHOICES),
        ("state_dim", STATE_DIM_CHOICES),
        ("chunk", CHUNK_CHOICES),
    ):
        settings = _snap(settings, name, choices, _("{name} is offered in steps", name=name), notes)
    return _snap(
        settings,
        "bits",
        bits_choices(settings.head_dim),
        _("the codes of a head of {head_dim} numbers pack into whole bytes", head_dim=str(settings.head_dim)),
        notes,
    )


def from_link(params: Mapping[str, str | list[str]]) -> tuple[Settings, list[str]]:
    """Settings from a link's query parameters, whatever they hold; unreadable values fall back to the defaults.

    Names that are not shared settings are left alone (pages read their own); only ours are judged here.
    """
    defaults = Settings()
    values = defaults.as_dict()
    notes: list[str] = []
    for name in LINK_NAMES:
        if name not in params:
            continue
        raw = params[name]
        if isinstance(raw, (list, tuple)):
            if len(raw) > 1:  # a link edited by hand, or two links pasted together: say which value won
                notes.append(
                    _(
                        "{name} appears {times} times in the link, so its last value is the one read.",
                        name=name,
                        times=len(raw),
                    )
                )
            raw = raw[-1] if raw else ""
        text = str(raw).strip()
        if name in ("variant", "design"):
            values[f"{name}s"] = _read_names(name, text, notes)
        elif name == "dtype":
            values["dtype"] = text.lower()
        else:
            values[name] = _read_number(name, text, values[name], notes)
    settings, fixes = normalize(Settings(**values))
    return settings, notes + fixes


def _read_names(name: str, text: str, notes: list[str]) -> tuple[str, ...]:
    """A link's variants or designs: comma-separated, in any case and order; unknown ones are reported."""
    known = VARIANTS if name == "variant" else DESIGNS
    chosen = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = [part for part in chosen if part not in known]
    if unknown and name == "variant":
        notes.append(
            _(
                "variant: ignored {unknown} (choose among {choices}).",
                unknown=", ".join(shown(u) for u in unknown),
                choices=", ".join(VARIANTS),
            )
        )
    elif unknown:
        notes.append(
            _(
                "design: ignored {unknown} (choose among {choices}).",
                unknown=", ".join(shown(u) for u in unknown),
                choices=", ".join(f"`{d}`" for d in DESIGNS),  # link values, as written in a link
            )
        )
    return tuple(v for v in known if v in chosen)


def _read_number(name: str, text: str, default: int, notes: list[str]) -> int:
    """A whole-number setting from a link; the default, with a note, when it is not one or not a size or count."""
    try:
        number = int(text)
    except ValueError:
        notes.append(
            _(
                "{name}: {value} is not a whole number, so the default {default} is used.",
                name=name,
                value=shown(text),
                default=str(default),
            )
        )
        return default
    # A count below zero, or a size below one, is garbled, not out of range: snapped, d_model=-5 gave a
    # 16-wide layer. A seed may be any number, and zero kept first tokens is a choice.
    least = 0 if name == "sinks" else 1
    if number < least and name != "seed":
        notes.append(
            _(
                "{name}: {value} is not a size or count here (it is at least {least}), so the default "
                "{default} is used.",
                name=name,
                value=shown(text),
                least=str(least),
                default=str(default),
            )
        )
        return default
    return number


def version_note(params: Mapping[str, str | list[str]]) -> str | None:
    """What to tell the reader of a link made by another version of the explorer, or None (same version, or a link
    that carries no version: a teacher typing `?heads=16` gets today's numbers, and that is no older link)."""
    if not any(name in params for name in LINK_NAMES):
        return None
    raw = params.get(VERSION_NAME)
    if isinstance(raw, (list, tuple)):
        raw = raw[-1] if raw else None
    if raw is None:
        return None
    try:
        version = int(str(raw).strip())
    except ValueError:
        return _(
            "{name}: {value} is not a link version, so the link is read as made by this version.",
            name=VERSION_NAME,
            value=shown(str(raw)),
        )
    if version == LINK_VERSION:
        return None
    if version < LINK_VERSION:
        message = _(
            "This link was made by an earlier version of the explorer (link version {version}; this is {current}), "
            "which draws the seeded weights differently: the settings are as linked, but the numbers are not the "
            "ones its sender saw."
        )
    else:
        message = _(
            "This link was made by a newer version of the explorer (link version {version}; this is {current}), "
            "which draws the seeded weights differently: the settings are as linked, but the numbers are not the "
            "ones its sender saw."
        )
    return message.format(version=version, current=LINK_VERSION)
