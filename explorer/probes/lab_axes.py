"""The lab's other axes, live: the trained model with a window (without and with a kept first token) and with a 2-bit
cache, each continuing the same passage token by token through its own cache, so a class sees what a broken cache
writes. The passage is longer than the window, so the windowed models' caches have dropped its start by the time they
write."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attn_core.pretrained import PretrainedLM, with_cache_bits, with_window
from explorer.messages import N_

# Passages: pydoc_data topics longer than PASSAGE_TOKENS (Python's own reference: text the model predicts well).
PASSAGES = ("for", "exceptions", "class", "with")
PASSAGE_TOKENS = 384  # the prompt: three windows of 128
CONTINUATION_TOKENS = 24

# The side-by-side models: how each is made from the trained model (the lab's stored rows use the same arguments).
SIDE_BY_SIDE: dict[str, dict[str, Any]] = {
    "original": {},
    "w128-s0-every": {"window": 128, "sink_tokens": 0},
    "w128-s1-every": {"window": 128, "sink_tokens": 1},
    "b2-token-r0": {"bits": 2, "group_size": 32, "residual": 0, "keys": "token"},
}
SIDE_BY_SIDE_NAMES = {
    "original": N_("original"),
    "w128-s0-every": N_("window 128, no sink"),
    "w128-s1-every": N_("window 128 + 1 sink"),
    "b2-token-r0": N_("2-bit cache, keys per token"),
}


def side_by_side_model(lm: PretrainedLM, key: str) -> PretrainedLM:
    """The trained model as SIDE_BY_SIDE[key] makes it (sharing lm's weights)."""
    spec = SIDE_BY_SIDE[key]
    if "window" in spec:
        return with_window(lm, **spec)
    if "bits" in spec:
        return with_cache_bits(lm, **spec)
    return lm


def passage_ids(lm: PretrainedLM, topic: str) -> list[int]:
    """The first PASSAGE_TOKENS tokens of a pydoc_data topic."""
    from pydoc_data.topics import topics

    if topic not in PASSAGES:
        raise ValueError(f"topic={topic!r}: choose one of {', '.join(PASSAGES)}.")
    return lm.encode(topics[topic])[:PASSAGE_TOKENS]


@dataclass(frozen=True)
class Continuation:
    tokens: list[str]
    cache_bytes: int  # what the model's cache held after writing
    cache_tokens: int  # tokens it had processed


def continuation(model: PretrainedLM, ids: list[int], new_tokens: int = CONTINUATION_TOKENS) -> Continuation:
    """The greedy continuation of ids through the model's own cache (a fixed count: the end token does not stop it,
    so every model writes as many tokens)."""
    cache = model.new_cache()
    new_ids = model.generate(ids, max_new_tokens=new_tokens, cache=cache, stop_at_eos=False)
    return Continuation(model.token_strings(new_ids), cache.nbytes, cache.seq_len)


def agreeing_prefix(reference: list[str], other: list[str]) -> int:
    """How many tokens `other` writes as `reference` does before it first departs."""
    for index, (a, b) in enumerate(zip(reference, other, strict=False)):
        if a != b:
            return index
    return min(len(reference), len(other))
