"""Cross-layer KV sharing (attn_core.KVSharingAttention, Gemma 3n's num_kv_shared_layers): a consumer layer computes
no keys or values and holds nothing; it reads the cache of an earlier layer of its type, its producer, called
`consumer(x, cache=producer_cache)` after the producer ran on the same tokens. The sidebar's "shared" design is the
consumer (layer 1) with its producer (layer 0) beside it: both full-attention layers of the sidebar's shape, the
producer's weights from the seed, the consumer's from the next one (a later layer's weights are its own)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn
from torch.utils._python_dispatch import _disable_current_modes

from attn_core import BorrowedCache, KVSharingAttention, KVSharingConfig
from attn_core.hf import DESIGNS
from explorer.messages import N_
from explorer.probes import with_weights

from .kind import DecodeReads, Design, Kind, Twin, blank_unread, given_weight, token_columns

if TYPE_CHECKING:
    from explorer.settings import Settings

PRODUCER, CONSUMER = 0, 1  # the two layers' indices: the consumer's kv_source is the producer


def producer_config(consumer: KVSharingConfig) -> KVSharingConfig:
    """The layer whose cache the consumer reads: the same shape, with keys and values of its own that it stores."""
    return replace(consumer, kv_source=None, stores_kv=True)


class SharedPair(nn.Module):
    """The consumer layer (its parameters are this module's) and the producer it reads, kept outside the module's
    parameters: a page counts the consumer's weights and work, and the producer runs first on the same tokens.
    Its cache is the consumer's BorrowedCache of the producer's: 0 bytes held, the producer's read."""

    def __init__(self, consumer: KVSharingAttention, producer: KVSharingAttention) -> None:
        super().__init__()
        self.consumer = consumer
        self.source_layers = (producer,)  # a tuple: not a submodule, so not in parameters()

    @property
    def producer(self) -> KVSharingAttention:
        return self.source_layers[0]

    def new_cache(self, batch_size: int = 1) -> BorrowedCache:
        return BorrowedCache(self.producer.new_cache(batch_size))

    def cache_after(self, tokens: int, batch_size: int = 1) -> Any:
        return self.consumer.cache_after(tokens, batch_size)

    def feed(self, x: torch.Tensor, cache: BorrowedCache, *, return_weights: bool = False) -> torch.Tensor | None:
        """The producer's call on x with its own cache (the source of `cache`), out of any FLOP counter around this
        call: its work is its own layer's. Its weights [B, H, L, S] when asked for."""
        with _disable_current_modes():
            _, weights = self.producer(x, cache=cache.source, return_weights=return_weights)
        return weights

    def forward(
        self, x: torch.Tensor, *, cache: BorrowedCache | None = None, return_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, L, d_model] -> the consumer's out [B, L, d_model] and weights, after the producer's call; without a
        cache, through a fresh one (a prefill)."""
        cache = self.new_cache(x.shape[0]) if cache is None else cache
        self.feed(x, cache)
        return self.consumer(x, cache=cache, return_weights=return_weights)


@dataclass(frozen=True)
class SharedMap:
    """Both layers' weights over one input: the consumer's queries over the keys and values the producer cached."""

    producer: np.ndarray  # [H, L, L]; NaN on later keys
    consumer: np.ndarray  # [H, L, L]
    producer_layer: int
    consumer_layer: int


@torch.no_grad()
def shared_map(layer: SharedPair, x: torch.Tensor) -> SharedMap:
    """x [1, L, d_model] through the producer, then the consumer with the producer's cache, weights asked for."""
    cache = layer.new_cache(1)
    produced = layer.feed(x, cache, return_weights=True)
    _, consumed = with_weights(layer.consumer(x, cache=cache, return_weights=True))
    assert produced is not None
    return SharedMap(blank_unread(produced[0]), blank_unread(consumed[0]), PRODUCER, CONSUMER)


@torch.no_grad()
def shared_reads(layer: SharedPair, x: torch.Tensor, twin: Twin) -> DecodeReads:
    """The consumer decoded token by token: each step reads the producer's keys (every token so far); held stays
    empty, since the keys it reads are the producer's."""
    steps = x.shape[1]
    cache = layer.new_cache(1)
    read, held = np.zeros((steps, steps), bool), np.zeros((steps, steps), bool)
    for t in range(steps):
        _, weights = with_weights(layer(x[:, t : t + 1], cache=cache, return_weights=True))
        twin.call(x[:, t : t + 1])
        read[t, : t + 1] = given_weight(weights)
    kinds, spans = token_columns(steps)
    held_bytes, read_bytes = tuple(twin.held), tuple(twin.read)
    return DecodeReads(kinds, spans, read, held, held_bytes, read_bytes, twin.dtype_name, twin.batch, source=PRODUCER)


def _built(
    config: KVSharingConfig, seed: int | None, device: torch.device | str | None, dtype: torch.dtype | None
) -> KVSharingAttention:
    """One layer as Kind.build makes one: on the meta device without weights, else drawn from the seed."""
    target = torch.device(device) if device is not None else torch.get_default_device()
    if seed is None or target.type == "meta":
        return KVSharingAttention(config, device=target, dtype=dtype)
    layer = KVSharingAttention(config, device="meta", dtype=dtype).to_empty(device=target)
    layer.init_from_seed(seed)
    return layer


class Shared(Kind):
    def design(self, settings: Settings) -> Design:
        s = settings
        config = KVSharingConfig(
            d_model=s.d_model, n_heads=s.heads, n_kv_heads=s.groups, head_dim=s.head_dim, kv_source=PRODUCER
        )
        return Design(self, config)

    def layer_class(self) -> Any:
        return SharedPair

    def build(
        self, design: Design, seed: int | None, device: torch.device | str | None, dtype: torch.dtype | None
    ) -> nn.Module:
        config = design.config
        assert isinstance(config, KVSharingConfig)  # as design() makes it
        consumer = _built(config, None if seed is None else seed + 1, device, dtype)
        return SharedPair(consumer, _built(producer_config(config), seed, device, dtype))

    def attention_map(self, layer: Any, x: torch.Tensor) -> SharedMap:
        return shared_map(layer, x)

    def decode_reads(self, design: Design, layer: Any, x: torch.Tensor, twin: Twin) -> DecodeReads:
        return shared_reads(layer, x, twin)

    def formula_bytes(self, design: Design, tokens: int, batch: int, element: int, new_tokens: int) -> tuple[int, int]:
        """attn_core.kv_sharing's closed form: the consumer holds 0 bytes; its last query reads what its producer
        holds, a full layer's keys and values of every token."""
        config = design.config
        assert isinstance(config, KVSharingConfig)
        closed_form = DESIGNS[KVSharingConfig].cache_bytes
        return closed_form(config, tokens, batch, element), closed_form(producer_config(config), tokens, batch, element)


SHARED = Shared(
    key="shared",
    name=N_("Shared KV"),
    help=N_("A layer that reads an earlier layer's cache and holds none (Gemma 3n's KV sharing)."),
    color="#5a7d2a",
    knobs=(),
    maps=True,
    decodes=True,
)
