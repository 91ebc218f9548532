"""DeepSeek-V4's heavily compressed attention (attn_core.CompressedAttention, kind "hca"): one cached entry per m
tokens, plus a window of W. Queries are compressed to d_c (q_lora_rank) and the output goes through g groups of rank
d_c, fixed here and said in a page's caption."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from attn_core import CompressedAttention, CompressedConfig
from attn_core.hf import DESIGNS
from explorer.messages import N_
from explorer.probes import with_weights

from .kind import ENTRY, DecodeReads, Design, Kind, Twin, blank_unread, given_weight, token_columns

if TYPE_CHECKING:
    from explorer.settings import Settings


@dataclass(frozen=True)
class CompressedMap:
    """A V4 layer over one input: the weights on the window's keys (columns 0 .. L-1, the tokens) then on the
    compressed entries (columns L .., entry e pooling tokens spans[e][0] .. spans[e][1])."""

    weights: np.ndarray  # [H, L, L + E]; NaN where a query did not read a key or an entry
    sink: np.ndarray  # [H, L]: the weight each row gave the layer's sink logit
    spans: tuple[tuple[int, int], ...]  # first and last token each entry pools
    kind: str
    window: int
    rate: int
    top_k: int


def entry_spans(kind: str, rate: int, entries: int) -> tuple[tuple[int, int], ...]:
    """The tokens each compressed entry pools: HCA's entry e the m tokens e·m .. e·m + m - 1; CSA's entry e those and
    the previous window's m (overlapping windows, stride m), from token 0 for the first."""
    back = rate if kind == "csa" else 0
    return tuple((max(0, e * rate - back), (e + 1) * rate - 1) for e in range(entries))


@torch.no_grad()
def compressed_map(layer: CompressedAttention, x: torch.Tensor) -> CompressedMap:
    cfg = layer.cfg
    length = x.shape[1]
    _, weights = with_weights(layer(x, return_weights=True))  # [1, H, L, L + E]
    weights = weights[0].float()
    entries = weights.shape[-1] - length
    return CompressedMap(
        weights=blank_unread(weights),
        sink=(1.0 - weights.sum(dim=-1)).numpy().astype(np.float32),
        spans=entry_spans(cfg.kind, cfg.compress_rate, entries),
        kind=cfg.kind,
        window=cfg.sliding_window,
        rate=cfg.compress_rate,
        top_k=cfg.index_topk,
    )


@torch.no_grad()
def compressed_reads(layer: CompressedAttention, x: torch.Tensor, twin: Twin) -> DecodeReads:
    """A V4 layer decoded token by token: each step reads its window's keys (held, then its own) and the finished
    entries it was given (all of them for HCA, the indexer's top-k for CSA); columns: tokens, then every entry the
    N tokens finish."""
    cfg = layer.cfg
    steps = x.shape[1]
    rate = cfg.compress_rate
    n_entries = steps // rate if rate else 0
    cache = layer.new_cache(1)
    columns = steps + n_entries
    read, held = np.zeros((steps, columns), bool), np.zeros((steps, columns), bool)
    for t in range(steps):
        window_before = cache.window.shape[2]
        _, weights = with_weights(layer(x[:, t : t + 1], cache=cache, return_weights=True))
        twin.call(x[:, t : t + 1])
        given = given_weight(weights)  # [held before + 1 + E]
        window = window_before + 1
        read[t, t + 1 - window : t + 1] = given[:window]
        entries = given[window:]
        read[t, steps : steps + entries.shape[0]] = entries
        held[t, t + 1 - cache.window.shape[2] : t + 1] = True
        if "compressor" in cache.states:
            held[t, steps : steps + cache.states["compressor"].count] = True
    kinds, spans = token_columns(steps)
    return DecodeReads(
        kinds + (ENTRY,) * n_entries,
        spans + entry_spans(cfg.kind, rate, n_entries),
        read,
        held,
        tuple(twin.held),
        tuple(twin.read),
        twin.dtype_name,
        twin.batch,
    )


class Compressed(Kind):
    def design(self, settings: Settings) -> Design:
        s = settings
        return Design(
            self,
            CompressedConfig(
                kind="hca",
                d_model=s.d_model,
                n_heads=s.heads,
                head_dim=s.head_dim,
                q_lora_rank=s.latent,
                qk_rope_head_dim=s.rope_dim,
                o_groups=s.groups,
                o_lora_rank=s.latent,
                sliding_window=s.window,
                compress_rate=s.rate,
            ),
        )

    def layer_class(self) -> Any:
        return CompressedAttention

    def attention_map(self, layer: Any, x: torch.Tensor) -> CompressedMap:
        return compressed_map(layer, x)

    def decode_reads(self, design: Design, layer: Any, x: torch.Tensor, twin: Twin) -> DecodeReads:
        return compressed_reads(layer, x, twin)

    def formula_bytes(self, design: Design, tokens: int, batch: int, element: int, new_tokens: int) -> tuple[int, int]:
        """attn_core.compressed's closed form (W − 1 window keys, one entry per m tokens, the m − 1 waiting) and
        CompressedConfig.read_elements (the window with the query's own key, and every finished entry)."""
        config = design.config
        assert isinstance(config, CompressedConfig)
        held = DESIGNS[CompressedConfig].cache_bytes(config, tokens, batch, element)
        return held, config.read_elements(tokens) * batch * element

    def falls_with(self, design: Design) -> dict[str, int]:
        config = design.config
        assert isinstance(config, CompressedConfig)
        return {"rate": config.compress_rate}


COMPRESSED = Compressed(
    key="compressed",
    name=N_("Compressed (V4)"),
    help=N_("One cached entry per m tokens, plus a window of W (DeepSeek-V4's compressed attention)."),
    color="#8d6e63",
    knobs=("window", "rate"),
    maps=True,
    decodes=True,
    # attn_core.compressed: tokens of an unfinished window wait as their projections and gate logits
    falls=N_(
        "the tokens of an unfinished group of {rate} wait in the cache, a projection and a gate logit each, until "
        "the group is full and pooled into one entry"
    ),
)
