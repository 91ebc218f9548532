"""Build a layer from its config, with weights that depend on the seed alone, or only some of its heads."""

from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Literal, NamedTuple, overload

import torch
from torch import nn

from .cache import GroupedKVCache, LatentKVCache, WindowedKVCache
from .chunked import ChunkedKVCache
from .config import AttentionConfig, GroupedVariant, Variant
from .contract import AttentionLayer
from .grouped import GroupedQueryAttention
from .latent import MultiHeadLatentAttention, RMSNorm, UnitOffsetRMSNorm
from .options import AttentionOptions


@overload
def build_attention(
    cfg: AttentionConfig[Literal["mla"]],
    seed: int | None = None,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
    heads: range | None = None,
    options: AttentionOptions | None = None,
) -> MultiHeadLatentAttention: ...
@overload
def build_attention(
    cfg: AttentionConfig[GroupedVariant],
    seed: int | None = None,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
    heads: range | None = None,
    options: AttentionOptions | None = None,
) -> GroupedQueryAttention: ...
@overload
def build_attention(
    cfg: AttentionConfig[Variant],
    seed: int | None = None,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
    heads: range | None = None,
    options: AttentionOptions | None = None,
) -> GroupedQueryAttention | MultiHeadLatentAttention: ...
def build_attention(
    cfg: AttentionConfig[Variant],
    seed: int | None = None,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
    heads: range | None = None,
    options: AttentionOptions | None = None,
) -> GroupedQueryAttention | MultiHeadLatentAttention:
    """A layer for cfg. With a seed, weights are drawn from CPU generators keyed by the seed, so a seed gives the same
    weights on every machine (and so a shared link the same pictures). On the meta device no memory is allocated.

    heads: build only these query heads (consecutive; whole KV groups or within one group) and the KV heads they read,
    as a layer of shape cfg.head_subset(heads). Each head's weights come from its own stream (see
    _init_from_seed), so head i of that layer is head heads[i] of the full layer, number for number; its output is
    those heads' share of the full layer's output (o_proj's columns for them, plus o_proj's bias). A probe that shows
    a few heads of a wide layer draws and multiplies only those.

    options: what a published model adds (attn_core.options: a window, sinks, q/k norms, a scale, RoPE scaling);
    None for none.
    """
    module_type = MultiHeadLatentAttention if cfg.variant == "mla" else GroupedQueryAttention
    heads = range(cfg.n_heads) if heads is None else heads
    shape = cfg.head_subset(heads)
    target = torch.device(device) if device is not None else torch.get_default_device()
    if seed is None or target.type == "meta":
        return module_type(shape, options=options, device=target, dtype=dtype)
    # Allocate without torch's default init, which the seeded init would overwrite (it costs as much again).
    layer = module_type(shape, options=options, device="meta", dtype=dtype).to_empty(device=target)
    _init_from_seed(layer, cfg, seed, heads)
    return layer


if TYPE_CHECKING:  # mypy checks here that both layer classes meet the contract

    def _meet_the_contract(
        grouped: GroupedQueryAttention, latent: MultiHeadLatentAttention
    ) -> tuple[AttentionLayer[GroupedKVCache | WindowedKVCache | ChunkedKVCache], AttentionLayer[LatentKVCache]]:
        return grouped, latent


def seeded_generator(key: str) -> torch.Generator:
    """A CPU generator determined by key alone. hashlib, not hash(): Python salts hash() per process, and a link must
    give the same numbers in every session."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return torch.Generator(device="cpu").manual_seed(int.from_bytes(digest[:8], "little") & (2**63 - 1))


class HeadBlocks(NamedTuple):
    """How a projection's weight splits into per-head blocks: `width` rows (dim 0) or columns (dim 1) per head, one
    block per query head or per KV head."""

    dim: int
    width: int
    per: str  # "query" or "kv"


def head_blocks(cfg: AttentionConfig) -> dict[str, HeadBlocks]:
    """The projections of cfg's layer that hold one block per head; the others (MLA's compressions) are shared."""
    if cfg.variant == "mla":
        query_rows, widths = HeadBlocks(0, cfg.qk_head_dim, "query"), cfg.latent_widths
        return {
            "q_proj": query_rows,
            "q_b_proj": query_rows,
            "kv_b_proj": HeadBlocks(0, widths.qk_nope_head_dim + widths.v_head_dim, "query"),
            "o_proj": HeadBlocks(1, widths.v_head_dim, "query"),
        }
    return {
        "q_proj": HeadBlocks(0, cfg.head_dim, "query"),
        "k_proj": HeadBlocks(0, cfg.head_dim, "kv"),
        "v_proj": HeadBlocks(0, cfg.head_dim, "kv"),
        "o_proj": HeadBlocks(1, cfg.head_dim, "query"),
    }


SINK_INIT_STD = 0.02  # gpt-oss's initializer_range


@torch.no_grad()
def _init_from_seed(layer: nn.Module, cfg: AttentionConfig, seed: int, heads: range) -> None:
    """torch's default Linear init, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with the full layer's fan-in, drawn from one
    generator per (seed, parameter, head): a head's block does not depend on how many heads the layer has, or which
    others are built. Parameters shared by all heads get one stream each.

    Norm scales start as HF's do: 1 (0 for Gemma's 1 + weight). gpt-oss's sink logits as HF's _init_weights draws
    them, N(0, 0.02²), all n_heads from one stream, this layer's heads taken from it."""
    blocks = head_blocks(cfg)
    units = {"query": heads, "kv": cfg.kv_heads_read(heads)}
    all_units = {"query": cfg.n_heads, "kv": cfg.n_kv_heads}
    sinks = getattr(layer, "sinks", None)
    if sinks is not None:
        drawn = torch.empty(cfg.n_heads).normal_(0.0, SINK_INIT_STD, generator=seeded_generator(f"{seed}/sinks"))
        sinks.copy_(drawn[heads.start : heads.stop])
    for name, module in layer.named_modules():
        if isinstance(module, RMSNorm):
            module.weight.fill_(0.0 if isinstance(module, UnitOffsetRMSNorm) else 1.0)
        if not isinstance(module, nn.Linear):
            continue
        split = blocks.get(name)
        fan_in = split.width * all_units[split.per] if split and split.dim == 1 else module.in_features
        bound = 1.0 / math.sqrt(fan_in)
        for kind, param in (("weight", module.weight), ("bias", module.bias)):
            if param is None:
                continue
            key = f"{seed}/{name}.{kind}"
            if split is None or split.dim >= param.dim():  # shared, or o_proj's bias (one per output, not per head)
                _draw_uniform(param, key, bound)
                continue
            per_head = param.split(split.width, dim=split.dim)  # views
            scratch = torch.empty(per_head[0].shape)  # one buffer for blocks drawn out of place: fresh memory is slow
            for block, unit in zip(per_head, units[split.per], strict=True):
                _draw_uniform(block, f"{key}/{unit}", bound, scratch)


@torch.no_grad()
def seed_dense_weights(layer: nn.Module, seed: int) -> None:
    """Every nn.Linear's and nn.Conv1d's weight and bias in layer: U(-1/sqrt(fan_in), +), torch's default bound (fan_in
    the weight's numbers per output: in_features, a depthwise conv's K), from seeded_generator(f"{seed}/{name}") by
    parameter name. The seeded init of the designs after MLA, whose parameters are not split per head."""
    for name, module in layer.named_modules():
        if isinstance(module, nn.Linear | nn.Conv1d):
            bound = 1.0 / math.sqrt(math.prod(module.weight.shape[1:]))
            for kind in ("weight", "bias"):
                param = getattr(module, kind)
                if param is not None:
                    _draw_uniform(param, f"{seed}/{name}.{kind}", bound)


def _draw_uniform(target: torch.Tensor, key: str, bound: float, scratch: torch.Tensor | None = None) -> None:
    """Fill target with U(-bound, bound) from key's stream, in target's row-major order, computed in float32 on the
    CPU so that every dtype and device gets the float32 layer's numbers (rounded)."""
    generator = seeded_generator(key)
    if target.dtype == torch.float32 and target.device.type == "cpu" and target.is_contiguous():
        target.uniform_(-bound, bound, generator=generator)  # in place: no temporary to copy
    else:  # a column block, another dtype or device
        scratch = torch.empty(target.shape) if scratch is None else scratch
        target.copy_(scratch.uniform_(-bound, bound, generator=generator))
