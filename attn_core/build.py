"""Build a layer from its config, with weights that depend on the seed alone."""
from __future__ import annotations

import math

import torch
from torch import nn

from .config import AttentionConfig
from .grouped import GroupedQueryAttention
from .latent import MultiHeadLatentAttention, RMSNorm


def build_attention(
    cfg: AttentionConfig, seed: int | None = None, *, device: torch.device | str | None = None, dtype=None
) -> GroupedQueryAttention | MultiHeadLatentAttention:
    """A layer for cfg. With a seed, weights are drawn from a CPU generator seeded with it, so a seed gives the same
    weights on every machine (and so a shared link the same pictures). On the meta device no memory is allocated."""
    module_type = MultiHeadLatentAttention if cfg.variant == "mla" else GroupedQueryAttention
    target = torch.device(device) if device is not None else torch.get_default_device()
    if seed is None or target.type == "meta":
        return module_type(cfg, device=target, dtype=dtype)
    # Allocate without torch's default init, which the seeded init would overwrite (it costs as much again).
    layer = module_type(cfg, device="meta", dtype=dtype).to_empty(device=target)
    _init_from_seed(layer, seed)
    return layer


@torch.no_grad()
def _init_from_seed(layer: nn.Module, seed: int) -> None:
    generator = torch.Generator(device="cpu").manual_seed(seed)
    for module in layer.modules():  # construction order: stable for a given config
        if isinstance(module, nn.Linear):
            # torch's default Linear init, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), but from our generator.
            bound = 1.0 / math.sqrt(module.in_features)
            for param in (module.weight, module.bias):
                if param is None:
                    continue
                if param.dtype == torch.float32 and param.device.type == "cpu":
                    param.uniform_(-bound, bound, generator=generator)  # in place: no temporary to copy
                else:  # other dtypes and devices: draw in float32 on the CPU, so the numbers match the float32 layer's
                    param.copy_(torch.empty(param.shape).uniform_(-bound, bound, generator=generator))
        elif isinstance(module, RMSNorm):
            module.weight.fill_(1.0)
