"""One validated description of an attention layer, for all four variants."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Literal

Variant = Literal["mha", "mqa", "gqa", "mla"]
VARIANTS: tuple[Variant, ...] = ("mha", "mqa", "gqa", "mla")
VARIANT_NAMES = {
    "mha": "Multi-head attention",
    "mqa": "Multi-query attention",
    "gqa": "Grouped-query attention",
    "mla": "Multi-head latent attention",
}


@dataclass(frozen=True)
class AttentionConfig:
    """A layer's shape. Unset fields get the defaults of the published designs.

    MHA and MQA are GQA with ``n_kv_heads = n_heads`` and ``1``. The MLA fields follow DeepSeek's names:
    ``kv_lora_rank`` is the latent width d_c, ``qk_rope_head_dim`` the decoupled rotary width d_h^R.
    """

    variant: Variant
    d_model: int
    n_heads: int
    n_kv_heads: int | None = None
    head_dim: int | None = None
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    rope_interleave: bool = False
    rope: bool = True
    rope_theta: float = 10000.0
    bias: bool = False
    o_bias: bool | None = None
    norm_eps: float = 1e-6

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant={self.variant!r} is unknown: choose one of {', '.join(VARIANTS)}.")
        if self.o_bias is None:
            self._set("o_bias", self.bias)  # Llama: one switch for all four; Qwen2: biases on q, k, v only
        _require_positive("d_model", self.d_model)
        _require_positive("n_heads", self.n_heads)
        if self.head_dim is None:
            if self.d_model % self.n_heads:
                raise ValueError(
                    f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}: "
                    "pick a head count that divides d_model, or set head_dim explicitly."
                )
            self._set("head_dim", self.d_model // self.n_heads)
        _require_positive("head_dim", self.head_dim)
        if self.variant == "mla":
            self._resolve_latent_fields()
        else:
            self._resolve_kv_heads()
            if self.rope and self.head_dim % 2:
                raise ValueError(
                    f"head_dim={self.head_dim} is odd: rotary embedding rotates pairs, so it must be even."
                )

    def _set(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)

    def _resolve_kv_heads(self) -> None:
        implied = {"mha": self.n_heads, "mqa": 1}.get(self.variant)
        if self.n_kv_heads is None:
            if implied is None:
                raise ValueError("gqa needs n_kv_heads (the number of KV groups).")
            self._set("n_kv_heads", implied)
        _require_positive("n_kv_heads", self.n_kv_heads)
        if implied is not None and self.n_kv_heads != implied:
            raise ValueError(
                f"{self.variant} has n_kv_heads={implied} by definition, got {self.n_kv_heads}: use variant='gqa'."
            )
        if self.n_kv_heads > self.n_heads:
            raise ValueError(
                f"n_kv_heads={self.n_kv_heads} exceeds n_heads={self.n_heads}: a group needs a query head."
            )
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads={self.n_heads} is not divisible by n_kv_heads={self.n_kv_heads}.")
        for name in ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            if getattr(self, name) is not None:
                raise ValueError(f"{name} belongs to MLA; it has no meaning for variant={self.variant!r}.")

    def _resolve_latent_fields(self) -> None:
        if self.n_kv_heads not in (None, self.n_heads):
            raise ValueError("mla has no KV groups: leave n_kv_heads unset.")
        self._set("n_kv_heads", self.n_heads)
        # Defaults in DeepSeek-V2's proportions: d_c = 4 d_h, d_h^R = d_h / 2.
        defaults = {
            "qk_nope_head_dim": self.head_dim,
            "v_head_dim": self.head_dim,
            "kv_lora_rank": 4 * self.head_dim,
            "qk_rope_head_dim": max(2, self.head_dim // 2 - (self.head_dim // 2) % 2),
        }
        for name, value in defaults.items():
            if getattr(self, name) is None:
                self._set(name, value)
        for name in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            _require_positive(name, getattr(self, name))
        if self.q_lora_rank is not None:
            _require_positive("q_lora_rank", self.q_lora_rank)
        if self.qk_rope_head_dim % 2:
            raise ValueError(
                f"qk_rope_head_dim={self.qk_rope_head_dim} is odd: rotary embedding rotates pairs, so it must be even."
            )

    # --- derived sizes -------------------------------------------------------------------------------------------
    @property
    def group_size(self) -> int:
        """Query heads that share one KV head (1 for MHA and MLA)."""
        return self.n_heads // self.n_kv_heads

    @property
    def qk_head_dim(self) -> int:
        """Width of one head's query/key dot product."""
        if self.variant == "mla":
            return self.qk_nope_head_dim + self.qk_rope_head_dim
        return self.head_dim

    @property
    def value_head_dim(self) -> int:
        return self.v_head_dim if self.variant == "mla" else self.head_dim

    @property
    def cache_elements_per_token(self) -> int:
        """Numbers one token leaves in the cache of one layer: 2·g·d_h, or d_c + d_h^R for MLA."""
        if self.variant == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim
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

    def head_subset(self, heads: range) -> AttentionConfig:
        """The shape of a layer holding only query heads `heads` of this one and the KV heads they read (see
        kv_heads_read); every per-head width stays as it is."""
        kv_heads = self.kv_heads_read(heads)
        return replace(self, n_heads=len(heads), n_kv_heads=len(kv_heads), head_dim=self.head_dim)

    def warnings(self) -> list[str]:
        """Valid but questionable choices, as sentences for the user."""
        notes = []
        if self.variant == "mla":
            uncompressed = self.n_heads * (self.qk_nope_head_dim + self.v_head_dim)
            if self.kv_lora_rank >= uncompressed:
                notes.append(
                    f"kv_lora_rank={self.kv_lora_rank} is not smaller than the {uncompressed} per-head key and value "
                    "numbers it stands for: the latent compresses nothing."
                )
            if self.cache_elements_per_token >= 2 * self.n_heads * self.head_dim:
                notes.append("This MLA layer caches as much per token as MHA would.")
        return notes

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _require_positive(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive whole number, got {value!r}.")


def kv_head_counts(n_heads: int) -> list[int]:
    """The n_kv_heads a layer of n_heads query heads accepts: the divisors of n_heads, from 1 (MQA) to n_heads (MHA)."""
    return [g for g in range(1, n_heads + 1) if n_heads % g == 0]
