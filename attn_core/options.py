"""What published models add to a grouped (or latent) layer beyond its shape: the tokens it keeps and reads (a sliding
window, kept first tokens, a learned sink logit per head), per-head q/k norms, a score scale of its own and a RoPE
scaling. AttentionConfig stays the four variants' shape; these ride beside it, so every layer built without them is
the layer it always was."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .chunked import QueryTemperature, chunk_tokens
from .config import AttentionConfig
from .rope import PLAIN, RopeScaling

QkNorm = Literal["rms", "rms_unit_offset", "l2"]
QK_NORMS: tuple[QkNorm, ...] = ("rms", "rms_unit_offset", "l2")
SinkPositions = Literal["original", "cache"]
SINK_POSITIONS: tuple[SinkPositions, ...] = ("original", "cache")


@dataclass(frozen=True)
class AttentionOptions:
    """Options of a grouped layer (MHA/MQA/GQA); MLA takes scale and rope_scaling only.

    window: a query at position p sees keys p - window + 1 .. p (HF's sliding_window: Mistral, Gemma 3's local layers,
      gpt-oss's sliding layers); the cache then holds at most window - 1 tokens (+ sink_tokens), as HF's
      DynamicSlidingWindowLayer does. None: every earlier key.
    sink_tokens: the first tokens, seen by every query besides its window (StreamingLLM's attention sinks).
    sink_positions: where the kept first tokens sit for RoPE once the window has moved past them. "original": at
      their own positions, so a query at p sees sink i at distance p - i, farther than any key it was trained near.
      "cache": StreamingLLM's positions inside the cache (the sinks, then the window numbered on from them): the
      window keys keep their distances to the query, and sink i is at distance sink_tokens + window - 1 - i, as if
      just before the window. Computed by scoring the sinks with the query rotated to position
      sink_tokens + window - 1, which is what renumbering every key gives, since RoPE scores depend on distances only.
    learned_sinks: gpt-oss's per-head sink logit (parameter ``sinks`` [H]): one more softmax entry with no value, so a
      head can put weight on nothing.
    qk_norm: RMSNorm over each query and key head before RoPE (``q_norm``, ``k_norm`` [D], eps cfg.norm_eps): "rms"
      scales by weight (Qwen3), "rms_unit_offset" by 1 + weight (Gemma 3).
    scale: the score scale; None is 1/sqrt(d_k) (Gemma 3: query_pre_attn_scalar ** -0.5; DeepSeek-V3: YaRN's mscale²).
    rope_scaling: the frequencies' context extension (linear, llama3, yarn).
    chunk: chunked local attention (Llama 4's attention_chunk_size): positions are cut into chunks of this many tokens
      and a query sees the keys of its own chunk up to itself; the cache holds the latest token's chunk only
      (attn_core.chunked). Not with a window.
    qk_norm "l2": Llama 4's Llama4TextL2Norm, an RMSNorm without weights (no parameters), on RoPE layers.
    temperature: Llama 4's attention temperature tuning on NoPE layers (attn_core.chunked.QueryTemperature): the query
      at position p scaled by 1 + attn_scale · log(1 + floor((p + 1) / floor_scale)).
    """

    window: int | None = None
    sink_tokens: int = 0
    sink_positions: SinkPositions = "original"
    learned_sinks: bool = False
    qk_norm: QkNorm | None = None
    scale: float | None = None
    rope_scaling: RopeScaling = field(default=PLAIN)
    chunk: int | None = None
    temperature: QueryTemperature | None = None

    def __post_init__(self) -> None:
        if self.window is not None and (
            not isinstance(self.window, int) or isinstance(self.window, bool) or self.window <= 0
        ):
            raise ValueError(f"window must be a positive whole number of tokens (or None), got {self.window!r}.")
        if not isinstance(self.sink_tokens, int) or isinstance(self.sink_tokens, bool) or self.sink_tokens < 0:
            raise ValueError(f"sink_tokens must be a whole number >= 0, got {self.sink_tokens!r}.")
        if self.sink_tokens and self.window is None:
            raise ValueError("sink_tokens keeps the first tokens beside a window: set window too.")
        if self.sink_positions not in SINK_POSITIONS:
            raise ValueError(f"sink_positions={self.sink_positions!r}: choose one of {', '.join(SINK_POSITIONS)}.")
        if self.qk_norm is not None and self.qk_norm not in QK_NORMS:
            raise ValueError(f"qk_norm={self.qk_norm!r}: choose one of {', '.join(QK_NORMS)}, or None.")
        if self.scale is not None and (
            not isinstance(self.scale, int | float) or isinstance(self.scale, bool) or not self.scale > 0
        ):
            raise ValueError(f"scale must be a positive number (or None for 1/sqrt(d_k)), got {self.scale!r}.")
        if not isinstance(self.rope_scaling, RopeScaling):
            raise ValueError("rope_scaling must be an attn_core.rope.RopeScaling.")
        if self.chunk is not None and (
            not isinstance(self.chunk, int) or isinstance(self.chunk, bool) or self.chunk <= 0
        ):
            raise ValueError(f"chunk must be a positive whole number of tokens (or None), got {self.chunk!r}.")
        if self.chunk is not None and self.window is not None:
            raise ValueError("chunk and window are two ways to bound what a query sees: set one of them.")
        if self.temperature is not None and not isinstance(self.temperature, QueryTemperature):
            raise ValueError("temperature must be an attn_core.chunked.QueryTemperature (or None).")

    @property
    def windowed(self) -> bool:
        return self.window is not None

    def sink_query_position(self) -> int | None:
        """The position a query is rotated to for scoring the kept first tokens when it has moved past
        sink_tokens + window - 1 (StreamingLLM's positions inside the cache); None when sinks keep their own."""
        if self.window is None or not self.sink_tokens or self.sink_positions == "original":
            return None
        return self.sink_tokens + self.window - 1

    def check_for(self, cfg: AttentionConfig) -> None:
        """A ValueError naming the first option cfg's variant has no use for (MLA: all but scale and rope_scaling)."""
        if cfg.variant != "mla":
            return
        for name in ("window", "sink_tokens", "sink_positions", "learned_sinks", "qk_norm", "chunk", "temperature"):
            if getattr(self, name) != getattr(NO_OPTIONS, name):
                raise ValueError(f"{name} is an option of the grouped variants; mla takes scale and rope_scaling only.")

    def score_scale(self, cfg: AttentionConfig) -> float:
        return cfg.qk_head_dim**-0.5 if self.scale is None else float(self.scale)


NO_OPTIONS = AttentionOptions()


def held_tokens(options: AttentionOptions, tokens: int) -> int:
    """Tokens a cache with these options holds after `tokens` tokens: all of them, or the sinks and the window - 1
    latest (what the next query needs besides itself)."""
    if options.chunk is not None:
        return chunk_tokens(options.chunk, tokens)
    if options.window is None:
        return tokens
    sinks = min(tokens, options.sink_tokens)
    return sinks + min(tokens - sinks, options.window - 1)


def read_tokens(options: AttentionOptions, tokens: int) -> int:
    """Cached tokens the query at position tokens - 1 reads (itself included): all, or its sinks and window."""
    if options.chunk is not None:
        return chunk_tokens(options.chunk, tokens)
    if options.window is None:
        return tokens
    sinks = min(tokens, options.sink_tokens)
    return sinks + min(tokens - sinks, options.window)
