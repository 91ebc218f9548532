"""One number per fact: the bytes a design after MLA holds and reads are the same on every page that shows them (the
overview's table, the mapping page's decode, the KV cache page's trace) at the same sidebar settings, in the
sidebar's dtype and batch, and equal what the core's own caches measure (cache_after on the meta device; the quantised
cache's closed form, attn_core.quant)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from attn_core import as_dtype, bytes_per_element
from attn_core.quant import cache_bytes_formula
from explorer import i18n
from explorer.kinds.registry import KINDS, design
from explorer.mapping.reads import decode_reads
from explorer.overview import design_caption
from explorer.probes.kv_cache import design_trace
from explorer.probes.overview import compare_designs
from explorer.settings import DESIGNS, Settings

SMALL = Settings(
    d_model=64, heads=4, groups=2, latent=16, rope_dim=8, designs=DESIGNS, window=8, sinks=2, topk=8, rate=4, bits=4
)
# The sidebar's defaults with every design: where the overview said 9.50 KiB and the mapping page 19.00 KiB
DEFAULT = Settings(designs=DESIGNS)
CASES = [
    pytest.param(SMALL, 20, id="small-bfloat16"),
    pytest.param(replace(SMALL, dtype="float16", batch=2), 20, id="small-float16-batch2"),
    pytest.param(replace(SMALL, dtype="float32", batch=3), 13, id="small-float32-batch3"),
    pytest.param(DEFAULT, 48, id="defaults"),
]
PROMPT = 5


def core_bytes(settings: Settings, name: str, tokens: int) -> tuple[int, int]:
    """(held after `tokens` tokens, read by the query at position tokens - 1) as the core measures them."""
    chosen = design(settings, name)
    batch, dtype = settings.batch, as_dtype(settings.dtype)
    if chosen.bits is not None:  # a quantised cache: the core's closed form, and the new token read exact
        cfg, e = chosen.config, bytes_per_element(dtype)
        held = cache_bytes_formula(tokens, batch, cfg.n_kv_heads, cfg.head_dim, e, chosen.bits)
        before = cache_bytes_formula(tokens - 1, batch, cfg.n_kv_heads, cfg.head_dim, e, chosen.bits)
        return held, before + 2 * batch * cfg.n_kv_heads * cfg.head_dim * e
    with torch.inference_mode():
        cache = chosen.build(device="meta", dtype=dtype).cache_after(tokens, batch_size=batch)
    return cache.nbytes, cache.read_nbytes


@pytest.mark.parametrize(("settings", "tokens"), CASES)
def test_the_overview_shows_the_core_s_bytes(settings, tokens):
    rows = compare_designs(
        {name: design(settings, name) for name in DESIGNS},
        settings.config("mha"),
        batch=settings.batch,
        seq_len=tokens,
        dtype=settings.dtype,
    )
    for row in rows:
        held, _ = core_bytes(settings, row.design, tokens)
        _, read = core_bytes(settings, row.design, tokens + 1)  # the next decoding step's
        assert (row.cache_bytes_measured, row.read_bytes_measured) == (held, read), row.design


@pytest.mark.parametrize(("settings", "tokens"), CASES)
@pytest.mark.parametrize("name", [name for name, kind in KINDS.items() if kind.decodes])
def test_the_mapping_page_shows_the_core_s_bytes(settings, tokens, name):
    reads = decode_reads(design(settings, name), settings.seed, tokens, settings.dtype, settings.batch)
    assert (reads.dtype, reads.batch) == (settings.dtype, settings.batch)
    for step in (0, tokens // 2, tokens - 1):
        assert (reads.held_bytes[step], reads.read_bytes[step]) == core_bytes(settings, name, step + 1), step


@pytest.mark.parametrize(("settings", "tokens"), CASES[:3])
@pytest.mark.parametrize("name", DESIGNS)
def test_the_kv_cache_page_shows_the_core_s_bytes(settings, tokens, name):
    trace = design_trace(
        design(settings, name),
        prompt_len=PROMPT,
        steps=tokens - PROMPT,
        batch=settings.batch,
        seed=settings.seed,
        storage_dtype=settings.dtype,
    )
    assert trace.storage_dtype == settings.dtype
    for step in (1, tokens - PROMPT):  # decoding steps (index 0 is the prefill)
        seen = trace.tokens_seen[step]
        assert (trace.nbytes[step], trace.read_nbytes[step]) == core_bytes(settings, name, seen), step


def test_the_defaults_hold_the_issue_s_figures():
    """Sliding window at the sidebar's defaults (GQA, 2 KV heads of 64, W = 16, n_s = 4, bfloat16, 64 tokens): the
    4 kept tokens and W - 1 = 15 latest, 2 · 2 · 64 · 2 B each = 9,728 B (9.50 KiB) on every page."""
    assert core_bytes(DEFAULT, "sliding", 64)[0] == (4 + 15) * 2 * 2 * 64 * 2 == 9728
    reads = decode_reads(design(DEFAULT, "sliding"), DEFAULT.seed, 48, DEFAULT.dtype, DEFAULT.batch)
    assert reads.held_bytes[-1] == 9728


def test_the_overview_says_why_a_sliding_layer_reads_one_token_more_than_it_holds():
    """Held 9.50 KiB (4 kept + W - 1 = 15 tokens), read 10.00 KiB (with the step's own token): said beside the table."""
    rows = compare_designs(
        {"sliding": design(DEFAULT, "sliding")}, DEFAULT.config("mha"), batch=1, seq_len=64, dtype="bfloat16"
    )
    with i18n.speaking("en"):
        caption = design_caption(rows, 64, dtype="bfloat16", batch=1)
    assert "the last W − 1 (9.50 KiB)" in caption
    assert "Bytes of a bfloat16 cache of batch 1" in caption  # the dtype named, as the mapping page names it
    assert "its own new token (10.00 KiB)" in caption
