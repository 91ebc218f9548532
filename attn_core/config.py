"""One validated description of an attention layer, for all four variants."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Generic, Literal, NamedTuple, TypeVar

Variant = Literal["mha", "mqa", "gqa", "mla"]
VARIANTS: tuple[Variant, ...] = ("mha", "mqa", "gqa", "mla")


@dataclass(frozen=True)
class LatentCompressesNothing:
    """MLA's latent d_c (kv_lora_rank) is not smaller than the per-head key and value numbers per token it stands for
    (uncompressed = h (d_nope + d_v))."""

    kv_lora_rank: int
    uncompressed: int


@dataclass(frozen=True)
class CachesAsMuchAsMHA:
    """This MLA layer caches no fewer numbers per token (d_c + d_h^R) than MHA of its heads would (2 h d_h)."""

    cached_per_token: int
    mha_cached_per_token: int


# A valid but questionable choice, as values: an app words them in its reader's language.
ConfigWarning = LatentCompressesNothing | CachesAsMuchAsMHA


# The variant a config describes, as a type: build_attention's overloads read it to name the layer's class.
V = TypeVar("V", bound=Variant, covariant=True)
GroupedVariant = Literal["mha", "mqa", "gqa"]


class LatentWidths(NamedTuple):
    """An MLA layer's widths, resolved: the latent d_c, a head's non-rotary and rotary query/key widths, its value."""

    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True, init=False)
class AttentionConfig(Generic[V]):
    """A layer's shape. Unset fields get the defaults of the published designs.

    MHA and MQA are GQA with ``n_kv_heads = n_heads`` and ``1``. The MLA fields follow DeepSeek's names:
    ``kv_lora_rank`` is the latent width d_c, ``qk_rope_head_dim`` the decoupled rotary width d_h^R. They are None
    for the grouped variants and resolved for MLA; ``latent_widths`` gives them typed as resolved.

    The constructor takes None for "the published default"; the fields hold the resolved values, so n_kv_heads,
    head_dim and o_bias are never None.
    """

    variant: V
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    kv_lora_rank: int | None
    q_lora_rank: int | None
    qk_nope_head_dim: int | None
    qk_rope_head_dim: int | None
    v_head_dim: int | None
    rope_interleave: bool
    rope: bool
    rope_theta: float
    bias: bool
    o_bias: bool
    norm_eps: float

    def __init__(
        self,
        variant: V,
        d_model: int,
        n_heads: int,
        n_kv_heads: int | None = None,
        head_dim: int | None = None,
        kv_lora_rank: int | None = None,
        q_lora_rank: int | None = None,
        qk_nope_head_dim: int | None = None,
        qk_rope_head_dim: int | None = None,
        v_head_dim: int | None = None,
        rope_interleave: bool = False,
        rope: bool = True,
        rope_theta: float = 10000.0,
        bias: bool = False,
        o_bias: bool | None = None,
        norm_eps: float = 1e-6,
    ) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"variant={variant!r} is unknown: choose one of {', '.join(VARIANTS)}.")
        _require_positive("d_model", d_model)
        _require_positive("n_heads", n_heads)
        head_dim = _resolve_head_dim(d_model, n_heads, head_dim)
        widths: dict[str, int | None] = {
            "kv_lora_rank": kv_lora_rank,
            "qk_nope_head_dim": qk_nope_head_dim,
            "qk_rope_head_dim": qk_rope_head_dim,
            "v_head_dim": v_head_dim,
        }
        if variant == "mla":
            if n_kv_heads not in (None, n_heads):
                raise ValueError("mla has no KV groups: leave n_kv_heads unset.")
            n_kv_heads = n_heads
            widths = dict(_resolve_latent_widths(head_dim, q_lora_rank, **widths)._asdict())
        else:
            n_kv_heads = _resolve_kv_heads(variant, n_heads, n_kv_heads)
            _refuse_latent_fields(variant, {**widths, "q_lora_rank": q_lora_rank})
            if rope and head_dim % 2:
                raise ValueError(f"head_dim={head_dim} is odd: rotary embedding rotates pairs, so it must be even.")
        self._set_fields(
            variant=variant,
            d_model=d_model,
            n_heads=n_heads,
            n_kv_heads=n_kv_heads,
            head_dim=head_dim,
            q_lora_rank=q_lora_rank,
            **widths,
            rope_interleave=rope_interleave,
            rope=rope,
            rope_theta=rope_theta,
            bias=bias,
            o_bias=bias if o_bias is None else o_bias,  # Llama: one switch for all four; Qwen2: q, k, v only
            norm_eps=norm_eps,
        )

    def _set_fields(self, **resolved: object) -> None:
        """Every field from its resolved value, in the fields' order (the dataclass is frozen: no plain assignment)."""
        for f in fields(self):
            object.__setattr__(self, f.name, resolved[f.name])

    @property
    def latent_widths(self) -> LatentWidths:
        """The MLA widths, resolved (a ValueError for the grouped variants, which have none)."""
        kv_lora_rank, nope, rope, value = (
            self.kv_lora_rank,
            self.qk_nope_head_dim,
            self.qk_rope_head_dim,
            self.v_head_dim,
        )
        if kv_lora_rank is None or nope is None or rope is None or value is None:  # set exactly when variant is mla
            raise ValueError(f"variant={self.variant!r} has no latent: its widths belong to MLA.")
        return LatentWidths(kv_lora_rank, nope, rope, value)

    # --- derived sizes -------------------------------------------------------------------------------------------
    @property
    def group_size(self) -> int:
        """Query heads that share one KV head (1 for MHA and MLA)."""
        return self.n_heads // self.n_kv_heads

    @property
    def qk_head_dim(self) -> int:
        """Width of one head's query/key dot product."""
        if self.variant == "mla":
            widths = self.latent_widths
            return widths.qk_nope_head_dim + widths.qk_rope_head_dim
        return self.head_dim

    @property
    def value_head_dim(self) -> int:
        return self.latent_widths.v_head_dim if self.variant == "mla" else self.head_dim

    @property
    def cache_elements_per_token(self) -> int:
        """Numbers one token leaves in the cache of one layer: 2·g·d_h, or d_c + d_h^R for MLA."""
        if self.variant == "mla":
            widths = self.latent_widths
            return widths.kv_lora_rank + widths.qk_rope_head_dim
        return 2 * self.n_kv_heads * self.head_dim

    # --- a layer of some of the heads ---------------------------------------------------------------------------
    def kv_heads_read(self, heads: range) -> range:
        """The KV heads that query heads `heads` read (MLA: each head's own up-projection, so the same range).

        heads must be consecutive heads that cover whole KV groups or lie within one group: then a smaller layer of
        the same variant groups them the way this one does.
        """
        if not isinstance(heads, range) or heads.step != 1 or not heads or heads.start < 0 or heads.stop > self.n_heads:
            raise ValueError(
                f"heads={heads!r}: give a non-empty range of consecutive heads within 0..{self.n_heads - 1}."
            )
        if self.variant == "mla":
            return heads
        size = self.group_size
        if heads.start % size == 0 and len(heads) % size == 0:
            return range(heads.start // size, heads.stop // size)
        if heads.start // size == (heads.stop - 1) // size:
            return range(heads.start // size, heads.start // size + 1)
        raise ValueError(
            f"heads {heads.start}–{heads.stop - 1} split a KV group of {size} heads: give whole groups, or heads "
            "within one group."
        )

    def head_subset(self, heads: range) -> AttentionConfig[V]:
        """The shape of a layer holding only query heads `heads` of this one and the KV heads they read (see
        kv_heads_read); every per-head width stays as it is."""
        kv_heads = self.kv_heads_read(heads)
        return replace(self, n_heads=len(heads), n_kv_heads=len(kv_heads), head_dim=self.head_dim)

    def warnings(self) -> list[ConfigWarning]:
        """Valid but questionable choices (none for the grouped variants)."""
        notes: list[ConfigWarning] = []
        if self.variant == "mla":
            widths = self.latent_widths
            uncompressed = self.n_heads * (widths.qk_nope_head_dim + widths.v_head_dim)
            if widths.kv_lora_rank >= uncompressed:
                notes.append(LatentCompressesNothing(widths.kv_lora_rank, uncompressed))
            mha_cached = 2 * self.n_heads * self.head_dim
            if self.cache_elements_per_token >= mha_cached:
                notes.append(CachesAsMuchAsMHA(self.cache_elements_per_token, mha_cached))
        return notes

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _resolve_head_dim(d_model: int, n_heads: int, head_dim: int | None) -> int:
    """The head width given, or d_model split evenly over the heads."""
    if head_dim is None:
        if d_model % n_heads:
            raise ValueError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}: "
                "pick a head count that divides d_model, or set head_dim explicitly."
            )
        head_dim = d_model // n_heads
    _require_positive("head_dim", head_dim)
    return head_dim


# MLA's own fields, in the order a grouped variant refuses them
LATENT_FIELDS = ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def _refuse_latent_fields(variant: str, values: dict[str, int | None]) -> None:
    """A grouped variant given any of MLA's fields: a ValueError naming the first one set."""
    for name in LATENT_FIELDS:
        if values[name] is not None:
            raise ValueError(f"{name} belongs to MLA; it has no meaning for variant={variant!r}.")


def _resolve_kv_heads(variant: str, n_heads: int, n_kv_heads: int | None) -> int:
    implied = {"mha": n_heads, "mqa": 1}.get(variant)
    if n_kv_heads is None:
        if implied is None:
            raise ValueError("gqa needs n_kv_heads (the number of KV groups).")
        n_kv_heads = implied
    _require_positive("n_kv_heads", n_kv_heads)
    if implied is not None and n_kv_heads != implied:
        raise ValueError(f"{variant} has n_kv_heads={implied} by definition, got {n_kv_heads}: use variant='gqa'.")
    if n_kv_heads > n_heads:
        raise ValueError(f"n_kv_heads={n_kv_heads} exceeds n_heads={n_heads}: a group needs a query head.")
    if n_heads % n_kv_heads:
        raise ValueError(f"n_heads={n_heads} is not divisible by n_kv_heads={n_kv_heads}.")
    return n_kv_heads


def _resolve_latent_widths(
    head_dim: int,
    q_lora_rank: int | None,
    *,
    kv_lora_rank: int | None,
    qk_nope_head_dim: int | None,
    qk_rope_head_dim: int | None,
    v_head_dim: int | None,
) -> LatentWidths:
    # Defaults in DeepSeek-V2's proportions: d_c = 4 d_h, d_h^R = d_h / 2.
    widths = LatentWidths(
        kv_lora_rank=4 * head_dim if kv_lora_rank is None else kv_lora_rank,
        qk_nope_head_dim=head_dim if qk_nope_head_dim is None else qk_nope_head_dim,
        qk_rope_head_dim=max(2, head_dim // 2 - (head_dim // 2) % 2) if qk_rope_head_dim is None else qk_rope_head_dim,
        v_head_dim=head_dim if v_head_dim is None else v_head_dim,
    )
    for name, value in widths._asdict().items():
        _require_positive(name, value)
    if q_lora_rank is not None:
        _require_positive("q_lora_rank", q_lora_rank)
    if widths.qk_rope_head_dim % 2:
        raise ValueError(
            f"qk_rope_head_dim={widths.qk_rope_head_dim} is odd: rotary embedding rotates pairs, so it must be even."
        )
    return widths


def _require_positive(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive whole number, got {value!r}.")


def kv_head_counts(n_heads: int) -> list[int]:
    """The n_kv_heads a layer of n_heads query heads accepts: the divisors of n_heads, from 1 (MQA) to n_heads (MHA)."""
    return [g for g in range(1, n_heads + 1) if n_heads % g == 0]
