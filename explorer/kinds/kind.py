"""What every kind of layer offers the app: a Kind (its name, help, colour, the knobs it reads, how its layer is built
from the sidebar's settings and a seed, the torch questions the pages ask of it, and its bytes from the core), a
Design (one kind at given settings), and the shapes its answers share (DecodeReads, the columns a decode step reads).

Torch only, no language: names and help are marked with N_ and worded where shown; figures stay with the pages.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from attn_core import (
    AttentionConfig,
    AttentionOptions,
    CacheBits,
    CompressedConfig,
    DSAConfig,
    GatedDeltaNetConfig,
    KVSharingConfig,
    LightningConfig,
    Mamba2Config,
    as_dtype,
    bytes_per_element,
)

if TYPE_CHECKING:
    from explorer.settings import Settings

LayerConfig = (
    AttentionConfig
    | DSAConfig
    | CompressedConfig
    | GatedDeltaNetConfig
    | Mamba2Config
    | LightningConfig
    | KVSharingConfig
)
# Weights a kind's layer may have for a page to draw them from the seed within a rerun (~1 s for 16M here); a layer
# whose weights grow with heads x latent (DSA, V4 at the widest settings: billions) is not built past it
DESIGN_WEIGHT_BUDGET = 2**25
# A column's kind in a decode's reads: a token's own keys and values, a compressed entry pooling tokens, a state
TOKEN, ENTRY, STATE = "token", "entry", "state"


@dataclass(frozen=True)
class Kind:
    """One kind of layer as the app knows it. A module of explorer/kinds/ subclasses it and overrides what differs.

    key: its value in a link (`design=sliding`); name, help: marked with N_, worded where shown; color: its colour
    in every chart; knobs: the Settings fields it reads beside the layer shape (the sidebar shows them while it is
    chosen); maps: the heatmaps page draws its weights; decodes: the mapping page animates what its steps read.
    """

    key: str
    name: str
    help: str
    color: str
    knobs: tuple[str, ...]
    maps: bool = False
    decodes: bool = False
    # Why its bytes held fall back now and then while they grow (marked with N_, worded where shown with
    # falls_with's values); None where they never fall, or fall back whole (a chunk) and the numbers say it all
    falls: str | None = None

    # --- built from the settings ------------------------------------------------------------------------------------
    def design(self, settings: Settings) -> Design:
        """This kind at these settings (its config from the layer shape and its knobs)."""
        raise NotImplementedError

    def layer_class(self) -> Any:
        """The core's module for this kind (built as attn_core.hf builds the designs after MLA)."""
        raise NotImplementedError

    def build(
        self, design: Design, seed: int | None, device: torch.device | str | None, dtype: torch.dtype | None
    ) -> nn.Module:
        return built(self.layer_class(), design.config, seed, device, dtype)

    def new_cache(self, design: Design, layer: Any, batch: int) -> Any:
        return layer.new_cache(batch)

    def narrowed(self, design: Design, width: int) -> Design:
        """The design with its input narrowed to `width` numbers per token: the same heads, widths and cache."""
        return replace(design, config=replace(design.config, d_model=width))

    def falls_with(self, design: Design) -> dict[str, int]:
        """The numbers `falls` names, at this design's settings."""
        return {}

    # --- the pages' torch questions -----------------------------------------------------------------------------------
    def attention_map(self, layer: Any, x: torch.Tensor) -> Any:
        """What one forward pass of layer over x [1, L, d_model] attends to (the heatmaps page's design map)."""
        raise ValueError(f"{self.key}: this kind has no attention weights to map.")

    def decode_reads(self, design: Design, layer: Any, x: torch.Tensor, twin: Twin) -> DecodeReads:
        """x [1, N, d_model] decoded token by token through layer (float32, built from design): what each step read
        and what the cache held, with the bytes of twin's cache (a cache in the sidebar's dtype and batch)."""
        raise ValueError(f"{self.key}: the mapping page does not decode this kind.")

    # --- bytes, from the core --------------------------------------------------------------------------------------
    def formula_bytes(self, design: Design, tokens: int, batch: int, element: int, new_tokens: int) -> tuple[int, int]:
        """(held, read) by the core's closed forms: what the cache holds after `tokens` tokens, and what the last
        query of a call that brought `new_tokens` of them read (its own key included), `element` bytes a number."""
        raise NotImplementedError


@dataclass(frozen=True)
class Design:
    """One kind at given settings: its layer's config, and what the layer takes beside it (a grouped layer's window
    and sinks; a quantised cache's bits)."""

    kind: Kind
    config: LayerConfig
    options: AttentionOptions | None = None
    bits: CacheBits | None = None

    @property
    def name(self) -> str:
        return self.kind.key

    def build(
        self, seed: int | None = None, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> nn.Module:
        """The layer; with a seed, its weights drawn from it (attn_core's seeded init). On the meta device nothing is
        allocated."""
        return self.kind.build(self, seed, device, dtype)

    def new_cache(self, layer: Any, batch: int) -> Any:
        """An empty cache of this design for layer (quantised as `bits` says)."""
        return self.kind.new_cache(self, layer, batch)

    def narrowed(self, width: int) -> Design:
        return self if width == self.config.d_model else self.kind.narrowed(self, width)

    def formula_bytes(self, tokens: int, batch: int, dtype: torch.dtype | str, *, new_tokens: int) -> tuple[int, int]:
        return self.kind.formula_bytes(self, tokens, batch, bytes_per_element(as_dtype(dtype)), new_tokens)


def built(
    layer_class: Any, config: Any, seed: int | None, device: torch.device | str | None, dtype: torch.dtype | None
) -> nn.Module:
    """layer_class(config) on device; with a seed (and off the meta device), its weights drawn from it."""
    target = torch.device(device) if device is not None else torch.get_default_device()
    if seed is None or target.type == "meta":
        return layer_class(config, device=target, dtype=dtype)
    layer = layer_class(config, device="meta", dtype=dtype).to_empty(device=target)
    layer.init_from_seed(seed)
    return layer


def weight_count(layer: nn.Module) -> int:
    """The layer's weights (build it on the meta device: nothing is drawn)."""
    return sum(p.numel() for p in layer.parameters())


class Twin:
    """The calls a real float32 layer gets, made again through its twin on the meta device in a storage dtype: the
    twin's cache is the one a layer in that dtype holds (same code, same shapes, no memory), so its bytes are the ones
    shown, in the dtype the sidebar names."""

    def __init__(self, design: Design, batch: int, dtype: torch.dtype | str) -> None:
        self.dtype, self.batch = as_dtype(dtype), batch
        self.layer = design.build(device="meta", dtype=self.dtype)
        self.cache = design.new_cache(self.layer, batch)
        self.held: list[int] = []
        self.read: list[int] = []

    @property
    def dtype_name(self) -> str:
        return str(self.dtype).removeprefix("torch.")

    def call(self, x: torch.Tensor) -> None:
        """x [B, L, d_model] (any device; one sequence stands for each of the twin's batch) through the twin with
        its cache; its bytes recorded."""
        self.layer(x.to(device="meta", dtype=self.dtype).expand(self.batch, -1, -1), cache=self.cache)
        self.held.append(self.cache.nbytes)
        self.read.append(self.cache.read_nbytes)


# --- a decode's reads, shared by the kinds that decode -------------------------------------------------------------
@dataclass(frozen=True)
class DecodeReads:
    """N decoding steps of one design's layer.

        read[t, c]: step t's token (at position t) read column c; held[t, c]: the cache holds column c after step t.
        spans[c]: the first and last token column c stands for (a token: itself; an entry: the tokens it pools; the state:
        every token so far, 0 .. N - 1). The bytes are a cache's in `dtype` (a Twin's), as the other pages count them; a layer
    that reads another's cache (source) holds no column and 0 bytes.
    """

    kinds: tuple[str, ...]  # per column: TOKEN, ENTRY or STATE
    spans: tuple[tuple[int, int], ...]
    read: np.ndarray  # [N, C] bool
    held: np.ndarray  # [N, C] bool
    held_bytes: tuple[int, ...]  # cache.nbytes after each step
    read_bytes: tuple[int, ...]  # cache.read_nbytes of each step
    dtype: str  # of the bytes, without "torch."
    batch: int  # sequences the bytes count
    # a state per head (one STATE column each): its matrix's rows and columns, as the cache holds it
    state_shape: tuple[int, int] | None = None
    # [N, C] bool: what the layer whose picks this one reads chose at each step (GLM-5's shared top-k)
    source_read: np.ndarray | None = None
    source: int | None = None  # the layer whose cache the steps read, where it is not this one's (KV sharing)

    @property
    def steps(self) -> int:
        return self.read.shape[0]


def token_columns(steps: int) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
    return (TOKEN,) * steps, tuple((t, t) for t in range(steps))


def given_weight(weights: torch.Tensor) -> np.ndarray:
    """weights [1, H, 1, S] -> [S] bool: the keys some head gave weight (a key not read has weight 0 exactly)."""
    return (weights[0, :, 0] != 0).any(dim=0).numpy()


def blank_unread(weights: torch.Tensor) -> np.ndarray:
    """weights [..] -> float32 numpy, NaN where a weight is exactly 0: a masked or unchosen key's softmax weight is
    0 exactly (its logit was -inf), a read key's never is in float32 at these sizes."""
    array = weights.detach().float().numpy()
    return np.where(array == 0.0, np.nan, array).astype(np.float32)
