"""The grouped layer (MHA, MQA and GQA are its shapes) with a window of W tokens and n_s kept first tokens, or a
learned sink logit per head: Mistral's sliding window, StreamingLLM's kept tokens, gpt-oss's sinks
(attn_core.AttentionOptions on attn_core.GroupedQueryAttention). The sidebar's "sliding" design."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from attn_core import AttentionConfig, AttentionOptions, GroupedQueryAttention, WindowedKVCache, build_attention
from attn_core.hf import LayerShape, layer_shape_cache_bytes
from attn_core.options import read_tokens
from explorer.messages import N_
from explorer.probes import with_weights
from explorer.probes.mapping import narrowed

from .kind import DecodeReads, Design, Kind, Twin, blank_unread, given_weight, token_columns

if TYPE_CHECKING:
    from explorer.settings import Settings


@dataclass(frozen=True)
class BandMap:
    """A grouped layer's weights over one input: each head's band (a window), the kept first tokens' columns."""

    weights: np.ndarray  # [H, L, L]; NaN where a query did not read a key (later, out of its window, not a sink)
    sink: np.ndarray | None  # [H, L]: the weight each row gave the learned sink logit (gpt-oss); None without
    window: int | None
    sink_tokens: int


@torch.no_grad()
def band_map(layer: GroupedQueryAttention, x: torch.Tensor) -> BandMap:
    """x [1, L, d_model] through the layer's own forward pass, weights asked for."""
    _, weights = with_weights(layer(x, return_weights=True))  # [1, H, L, L]
    weights = weights[0].float()
    sums = weights.sum(dim=-1)  # [H, L]
    sink = None
    if layer.sinks is not None:
        sink = (1.0 - sums).numpy().astype(np.float32)  # the softmax's one slot with no value
    return BandMap(
        weights=blank_unread(weights),
        sink=sink,
        window=layer.options.window,
        sink_tokens=layer.options.sink_tokens,
    )


def _step_columns(cache: Any, t: int) -> tuple[list[int], list[int]]:
    """After the step of token t: the positions it was given, in order (its kept first tokens, then its window), and
    the positions the cache holds; every token so far, both, for a cache without a window."""
    if isinstance(cache, WindowedKVCache) and cache.returned_spans is not None:
        sinks, start = cache.returned_spans
        now = min(cache.seq_len, cache.sink_tokens)
        held = [*range(now), *range(t + 1 - (cache.held_tokens - now), t + 1)]
        return [*range(sinks), *range(start, t + 1)], held
    return list(range(t + 1)), list(range(t + 1))


@torch.no_grad()
def grouped_reads(layer: GroupedQueryAttention, x: torch.Tensor, twin: Twin) -> DecodeReads:
    """x [1, N, d_model] decoded token by token through the layer's windowed cache: each step reads the keys its
    cache returned (its kept first tokens, then its window), in position order when weights are asked for."""
    steps = x.shape[1]
    cache = layer.new_cache(1)
    read, held = np.zeros((steps, steps), bool), np.zeros((steps, steps), bool)
    for t in range(steps):
        _, weights = with_weights(layer(x[:, t : t + 1], cache=cache, return_weights=True))
        twin.call(x[:, t : t + 1])
        positions, held_positions = _step_columns(cache, t)
        read[t, [p for p, given in zip(positions, given_weight(weights), strict=True) if given]] = True
        held[t, held_positions] = True
    kinds, spans = token_columns(steps)
    return DecodeReads(kinds, spans, read, held, tuple(twin.held), tuple(twin.read), twin.dtype_name, twin.batch)


class Grouped(Kind):
    def design(self, settings: Settings) -> Design:
        s = settings
        return Design(
            self,
            AttentionConfig("gqa", d_model=s.d_model, n_heads=s.heads, n_kv_heads=s.groups),
            options=AttentionOptions(window=s.window, sink_tokens=s.sinks),
        )

    def layer_class(self) -> Any:
        return GroupedQueryAttention

    def build(
        self, design: Design, seed: int | None, device: torch.device | str | None, dtype: torch.dtype | None
    ) -> nn.Module:
        config = design.config
        assert isinstance(config, AttentionConfig)  # as design() makes it
        return build_attention(config, seed, device=device, dtype=dtype, options=design.options)

    def narrowed(self, design: Design, width: int) -> Design:
        config = design.config
        assert isinstance(config, AttentionConfig)
        return replace(design, config=narrowed(config, width))  # the variants' narrowing: same heads, widths

    def attention_map(self, layer: Any, x: torch.Tensor) -> BandMap:
        return band_map(layer, x)

    def decode_reads(self, design: Design, layer: Any, x: torch.Tensor, twin: Twin) -> DecodeReads:
        return grouped_reads(layer, x, twin)

    def formula_bytes(self, design: Design, tokens: int, batch: int, element: int, new_tokens: int) -> tuple[int, int]:
        """attn_core.hf's closed form of a grouped layer's cache (min(T, n_s) + min(T − min(T, n_s), W − 1) tokens
        held), and the sinks and window the last query reads (attn_core.options.read_tokens)."""
        config = design.config
        assert isinstance(config, AttentionConfig)
        options = design.options or AttentionOptions()
        held = layer_shape_cache_bytes(LayerShape(config, options), tokens, batch, element)
        per_token = batch * config.cache_elements_per_token * element
        return held, per_token * read_tokens(options, tokens)


SLIDING = Grouped(
    key="sliding",
    name=N_("Sliding window"),
    help=N_("GQA seeing the last W tokens and the first n_s (Mistral, StreamingLLM)."),
    color="#1b9aaa",
    knobs=("window", "sinks"),
    maps=True,
    decodes=True,
)
