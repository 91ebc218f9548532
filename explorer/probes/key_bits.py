"""The trained model's own keys, quantised as a quantised cache would hold them: per token against per channel (KIVI's
layout for keys), and the error each layout leaves in every channel. Numbers only, for the lesson's chart and text.

Keys have a few channels far larger than the rest (outlier channels). A per-token group spans every channel of one
token, so its scale follows the outlier and the small channels round to a few levels; a per-channel group spans
tokens of one channel, so each channel gets a scale of its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import torch

from attn_core.cache import GroupedKVCache
from attn_core.pretrained import PretrainedLM
from attn_core.quant import KEY_LAYOUTS, CacheBits, fake_quantize


@dataclass(frozen=True)
class KeyBits:
    """One layer's cached keys after `tokens` tokens of a text, read back after `bits`-bit quantisation in groups of
    `group_size` (no exact recent window), per layout."""

    layer: int
    bits: int
    group_size: int
    tokens: int
    key_rms: np.ndarray  # [G, D]: each channel's root-mean-square over tokens (how large the channel is)
    error_rms: dict[str, np.ndarray]  # layout -> [G, D]: each channel's root-mean-square error over tokens
    relative_error: dict[str, float]  # layout -> ‖K̂ − K‖ / ‖K‖ over the whole layer


def cached_keys(lm: PretrainedLM, ids: list[int], layer: int) -> torch.Tensor:
    """The keys layer `layer`'s cache holds after the prompt `ids`, as the model stores them (RoPE applied):
    [1, G, T, D]."""
    if not 0 <= layer < len(lm.decoder_layers):
        raise ValueError(f"layer={layer}: the model has layers 0 to {len(lm.decoder_layers) - 1}.")
    cache = lm.new_cache()
    with torch.inference_mode():
        lm.hidden_states(torch.tensor([ids]), cache)
    if lm.attention.variant == "mla":
        raise ValueError(f"layer={layer} caches no keys of its own (a latent cache): choose a grouped layer.")
    held = cast(GroupedKVCache, cache.layers[layer])  # a grouped model's layers cache their keys
    return held.k


def key_bits(lm: PretrainedLM, ids: list[int], layer: int, bits: int = 2, group_size: int = 32) -> KeyBits:
    """Quantise layer `layer`'s keys after `ids` per token and per channel (attn_core.quant's own rounding), and
    measure what each loses. len(ids) must be a multiple of group_size (whole per-channel groups)."""
    if not ids or len(ids) % group_size:
        raise ValueError(f"{len(ids)} tokens: give a whole number of groups of group_size={group_size} tokens.")
    keys = cached_keys(lm, ids, layer).float()
    errors, relative = {}, {}
    for layout in KEY_LAYOUTS:
        read_back = fake_quantize(keys, CacheBits(bits, group_size, 0, layout), layout)
        errors[layout] = (read_back - keys).pow(2).mean(dim=(0, 2)).sqrt().numpy()
        relative[layout] = float((read_back - keys).norm() / keys.norm())
    return KeyBits(
        layer=layer,
        bits=bits,
        group_size=group_size,
        tokens=len(ids),
        key_rms=keys.pow(2).mean(dim=(0, 2)).sqrt().numpy(),
        error_rms=errors,
        relative_error=relative,
    )
