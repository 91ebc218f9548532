"""DeepSeek-V3.2's sparse attention (attn_core.DeepSeekSparseAttention): MLA (d_c, d_h^R) whose queries read the top
k tokens a lightning indexer scores. The indexer has one head per query head, each head_dim wide, and queries are
compressed to d_c (q_lora_rank), fixed here and said in a page's caption."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from attn_core import DeepSeekSparseAttention, DSAConfig
from attn_core.hf import DESIGNS
from explorer.messages import N_
from explorer.probes import with_weights

from .kind import DecodeReads, Design, Kind, Twin, blank_unread, given_weight, token_columns

if TYPE_CHECKING:
    from explorer.settings import Settings


@dataclass(frozen=True)
class SparseMap:
    """DSA over one input: the indexer's scores of every earlier key, and the weights of the keys each query chose."""

    index_scores: np.ndarray  # [L, L]; NaN on later keys (the indexer's -inf)
    weights: np.ndarray  # [H, L, L]; NaN outside each query's top-k (and on later keys)
    chosen: np.ndarray  # [L, L] bool: the keys each query read
    top_k: int


@torch.no_grad()
def sparse_map(layer: DeepSeekSparseAttention, x: torch.Tensor) -> SparseMap:
    scores = layer.index_scores(x)[0]  # [L, S]
    _, weights = with_weights(layer(x, return_weights=True))  # [1, H, L, S], 0 outside each query's top-k
    shown = scores.float().numpy()
    return SparseMap(
        index_scores=np.where(np.isfinite(shown), shown, np.nan).astype(np.float32),
        weights=blank_unread(weights[0]),
        chosen=(weights[0] != 0).any(dim=0).numpy(),
        top_k=layer.dsa_cfg.index_topk,
    )


@torch.no_grad()
def sparse_reads(layer: DeepSeekSparseAttention, x: torch.Tensor, twin: Twin) -> DecodeReads:
    """DSA decoded token by token: its cache holds every token; each step reads the latents its indexer chose."""
    steps = x.shape[1]
    cache = layer.new_cache(1)
    read, held = np.zeros((steps, steps), bool), np.zeros((steps, steps), bool)
    for t in range(steps):
        _, weights = with_weights(layer(x[:, t : t + 1], cache=cache, return_weights=True))
        twin.call(x[:, t : t + 1])
        read[t, : t + 1] = given_weight(weights)
        held[t, : cache.c_kv.shape[2]] = True
    kinds, spans = token_columns(steps)
    return DecodeReads(kinds, spans, read, held, tuple(twin.held), tuple(twin.read), twin.dtype_name, twin.batch)


class Sparse(Kind):
    def design(self, settings: Settings) -> Design:
        s = settings
        return Design(
            self,
            DSAConfig(
                d_model=s.d_model,
                n_heads=s.heads,
                q_lora_rank=s.latent,
                kv_lora_rank=s.latent,
                qk_nope_head_dim=s.head_dim,
                qk_rope_head_dim=s.rope_dim,
                v_head_dim=s.head_dim,
                index_n_heads=s.heads,
                index_head_dim=s.head_dim,
                index_topk=s.topk,
            ),
        )

    def layer_class(self) -> Any:
        return DeepSeekSparseAttention

    def attention_map(self, layer: Any, x: torch.Tensor) -> SparseMap:
        return sparse_map(layer, x)

    def decode_reads(self, design: Design, layer: Any, x: torch.Tensor, twin: Twin) -> DecodeReads:
        return sparse_reads(layer, x, twin)

    def formula_bytes(self, design: Design, tokens: int, batch: int, element: int, new_tokens: int) -> tuple[int, int]:
        """attn_core.dsa's closed form (every token's latent and indexer key held) and DSAConfig.read_elements (the
        top k latents read past k tokens, with every indexer key scored)."""
        config = design.config
        assert isinstance(config, DSAConfig)
        held = DESIGNS[DSAConfig].cache_bytes(config, tokens, batch, element)
        return held, config.read_elements(tokens) * batch * element


DSA = Sparse(
    key="dsa",
    name=N_("DSA top-k"),
    help=N_("MLA whose queries read the top-k tokens a lightning indexer picks (DeepSeek-V3.2)."),
    color="#b5179e",
    knobs=("topk",),
    maps=True,
    decodes=True,
)
