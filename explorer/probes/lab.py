"""The trade-off lab's torch work: the trained model converted to other attention variants, its perplexity over
windows of a text, its cache per token, and a greedy answer. The page caches these (explorer.lab.computed), the table
scripts (benchmarks/lab_table.py, benchmarks/heal.py) and the tests call them directly.

Texts: the evaluation text and the calibration text are two disjoint stretches of one text every Python carries,
pydoc_data.topics (the language reference behind help()), pinned by its hash since it changes between Python
versions: evaluation is its first EVAL_TOKENS tokens, calibration its last CALIBRATION_TOKENS.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import torch

from attn_core.pretrained import Calibration, Conversion, PretrainedLM, calibrate, convert_attention, with_window
from explorer.messages import N_

# sha256 of reference_text() under CPython 3.11's pydoc_data (the text the stored table was measured on)
REFERENCE_TEXT_SHA256 = "71f2ff5d99bdc1f9c48c5c2353ad138201c5ca1c377e0226857ef8fa89b8bcee"
EVAL_TOKENS = 4096
CALIBRATION_TOKENS = 1024
WINDOW = 512  # tokens per evaluation window (non-overlapping; the first token of each is context only)
USER_TEXT_MAX_TOKENS = 256  # live perplexity on the user's own text is capped: a few seconds per model here
ANSWER_TOKENS = 24


def reference_text() -> str:
    """Every topic of pydoc_data.topics in sorted order, separated by blank lines."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[name] for name in sorted(topics))


@lru_cache(maxsize=1)  # the server's one model
def reference_ids(lm: PretrainedLM) -> tuple[int, ...]:
    """reference_text()'s tokens (over 100,000), encoded once: every live heal and the calibration start from them."""
    return tuple(lm.encode(reference_text()))


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def split_tokens(lm: PretrainedLM, text: str | None = None) -> tuple[list[int], list[int]]:
    """(evaluation ids, calibration ids): the text's first EVAL_TOKENS and last CALIBRATION_TOKENS tokens."""
    ids = list(reference_ids(lm)) if text is None else lm.encode(text)
    if len(ids) < EVAL_TOKENS + CALIBRATION_TOKENS:
        raise ValueError(f"the reference text has {len(ids)} tokens; evaluation and calibration need more.")
    return ids[:EVAL_TOKENS], ids[-CALIBRATION_TOKENS:]


def lab_calibration(lm: PretrainedLM, calibration_ids: list[int]) -> Calibration:
    return calibrate(lm, lm.decode(calibration_ids), max_tokens=CALIBRATION_TOKENS, window=WINDOW)


@dataclass(frozen=True)
class LabPoint:
    """One model of the lab: the original, or a conversion with its options."""

    key: str
    label: str
    variant: str  # "original", or convert_attention's variant
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def needs_calibration(self) -> bool:
        return self.variant == "mla" or self.options.get("method") == "pca"


ORIGINAL = LabPoint("original", N_("original GQA (3 KV heads)"), "original")

# MLA points: (d_c, d_h^R). At d_h^R 32 a full-rank latent is 3 x (32 + 64) = 288 wide, so (288, 32) is exact in its
# latent and loses only rotation (see attn_core.pretrained.convert); the others trade latent width for cache.
MLA_POINTS = ((288, 32), (256, 32), (192, 32), (128, 32), (96, 32))
LAB_POINTS: tuple[LabPoint, ...] = (
    ORIGINAL,
    LabPoint("mha", N_("MHA (KV heads repeated)"), "mha"),
    LabPoint("mqa-mean", N_("MQA, mean-pooled KV heads"), "gqa", {"n_kv_heads": 1, "method": "mean"}),
    LabPoint("mqa-pca", N_("MQA, fitted to activations"), "gqa", {"n_kv_heads": 1, "method": "pca"}),
    *(
        LabPoint(f"mla-{dc}-{dr}", f"MLA d_c {dc} + d_h^R {dr}", "mla", {"kv_lora_rank": dc, "qk_rope_head_dim": dr})
        for dc, dr in MLA_POINTS
    ),
)
# The token axis's point the page heals live (every layer windowed, no kept first token: the one that breaks, with
# gpt-oss's learned sink logit per head to learn from the dense original), as benchmarks/window_heal.py heals it.
WINDOW_POINTS = (
    LabPoint(
        "w128-s0-every-learned-sinks",
        N_("window 128 in every layer, learned sinks"),
        "window",
        {"window": 128, "sink_tokens": 0, "learned_sinks": True},
    ),
)
POINTS_BY_KEY = {point.key: point for point in (*LAB_POINTS, *WINDOW_POINTS)}


def point_conversion(lm: PretrainedLM, point: LabPoint, calibration: Calibration | None) -> Conversion | None:
    """The conversion of lm that point names, with what it kept (None for the original model)."""
    if point.variant in ("original", "window"):
        return None
    options = dict(point.options)
    if point.needs_calibration:
        options["calibration"] = calibration
    return convert_attention(lm, point.variant, **options)


def convert_point(lm: PretrainedLM, point: LabPoint, calibration: Calibration | None) -> PretrainedLM:
    """The model that point names: lm itself, its conversion, or lm with windowed layers."""
    if point.variant == "window":
        return with_window(lm, **point.options)
    conversion = point_conversion(lm, point, calibration)
    return lm if conversion is None else conversion.model


@torch.inference_mode()
def window_nll_sums(model: PretrainedLM, ids: list[int], window: int = WINDOW) -> list[tuple[float, int]]:
    """(sum of NLL in nats, tokens scored) per non-overlapping window: their totals give the perplexity, and any one
    window can be recomputed alone to check a stored figure."""
    sums = []
    for start in range(0, len(ids), window):
        chunk = ids[start : start + window]
        if len(chunk) >= 2:
            losses = model.token_nll(chunk, window)
            sums.append((float(losses.double().sum()), len(losses)))
    return sums


def perplexity_of(window_sums: list[tuple[float, int]]) -> float:
    return math.exp(sum(s for s, _n in window_sums) / sum(n for _s, n in window_sums))


def cache_bytes_per_token(model: PretrainedLM, dtype: torch.dtype | str = torch.float32) -> int:
    """The whole model's cache per token: per-layer bytes times layers."""
    return model.kv_cache_bytes_per_token(dtype) * model.config.n_layers


@dataclass(frozen=True)
class Answer:
    tokens: list[str]
    text: str
    cache_bytes: int  # what the model's cache held after answering
    cache_tokens: int


def answer(model: PretrainedLM, prompt: str, max_new_tokens: int = ANSWER_TOKENS) -> Answer:
    """A greedy, cached answer to a chat prompt: the new tokens (as strings), the text, and the cache it left."""
    ids = model.chat_ids([{"role": "user", "content": prompt}])
    cache = model.new_cache()
    new_ids = model.generate(ids, max_new_tokens=max_new_tokens, cache=cache)
    return Answer(model.token_strings(new_ids), model.decode(new_ids, skip_special=True), cache.nbytes, cache.seq_len)


def shared_prefix(first: list[str], second: list[str]) -> int:
    """How many tokens two answers share before they first differ."""
    for index, (a, b) in enumerate(zip(first, second, strict=False)):
        if a != b:
            return index
    return min(len(first), len(second))


TOO_SHORT = N_("Write at least two tokens (a few words) to measure a perplexity.")


def user_text_perplexity(model: PretrainedLM, text: str) -> tuple[float, int, bool]:
    """(perplexity, tokens scored, whether the text was cut to USER_TEXT_MAX_TOKENS)."""
    ids = model.encode(text)
    if len(ids) < 2:
        raise ValueError(TOO_SHORT)  # the page shows it through _()
    cut = len(ids) > USER_TEXT_MAX_TOKENS
    ids = ids[:USER_TEXT_MAX_TOKENS]
    losses = model.token_nll(ids, USER_TEXT_MAX_TOKENS)
    return math.exp(float(losses.double().mean())), len(losses), cut
