"""Llama 4's chunked layer and Gemma 3n's shared layer on the heatmaps page (explorer/kinds/chunked.py, shared.py):
the chunk's blocks against a mask written here, a consumer layer's weights against the core's consumer fed by its
producer's cache and against a full layer holding the same weights, and the page sending both through AppTest."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from attn_core import KVSharingAttention
from explorer.kinds import chunked, registry, shared
from explorer.settings import Settings
from tests.app.helpers import chart_specs, no_exception, open_script

PAGE = Path(__file__).resolve().parents[2] / "pages" / "heatmaps.py"
SMALL = Settings(d_model=64, heads=4, groups=2, designs=("chunked", "shared"), chunk=4)
LENGTH = 14


def inputs(length: int = LENGTH, d_model: int = 64, seed: int = 0) -> torch.Tensor:
    return torch.randn(1, length, d_model, generator=torch.Generator().manual_seed(seed)) * 2


def chunk_blocks(length: int, chunk: int) -> np.ndarray:
    """[L, L]: query i reads key j when j <= i and both lie in the same chunk of `chunk` positions."""
    i, j = np.arange(length)[:, None], np.arange(length)[None]
    return (j <= i) & (i // chunk == j // chunk)


@pytest.mark.parametrize("chunk", [1, 4, 5, 32])
def test_a_chunked_layers_map_is_its_chunk_blocks(chunk):
    design = registry.design(replace(SMALL, chunk=chunk), "chunked")
    result = chunked.chunk_map(design.build(seed=3), inputs())
    assert result.chunk == chunk
    for head in range(SMALL.heads):
        assert np.array_equal(~np.isnan(result.weights[head]), chunk_blocks(LENGTH, chunk))
    np.testing.assert_allclose(np.nansum(result.weights, axis=-1), 1.0, atol=1e-5)


def test_a_consumer_layers_map_is_its_forward_fed_by_the_producers_cache():
    """The layers built here from the core alone, with the seeds the kind draws them from (the producer's, the next
    one for the consumer): the producer prefilled through its cache, the consumer called with it."""
    design = registry.design(SMALL, "shared")
    x = inputs()
    result = shared.shared_map(design.build(seed=5), x)
    producer = KVSharingAttention(shared.producer_config(design.config))  # type: ignore[arg-type]
    consumer = KVSharingAttention(design.config)  # type: ignore[arg-type]
    producer.init_from_seed(5)
    consumer.init_from_seed(6)
    with torch.no_grad():
        cache = producer.new_cache(1)
        _, produced = producer(x, cache=cache, return_weights=True)
        _, consumed = consumer(x, cache=cache, return_weights=True)
    np.testing.assert_array_equal(np.nan_to_num(result.producer, nan=0.0), produced[0].numpy())
    np.testing.assert_array_equal(np.nan_to_num(result.consumer, nan=0.0), consumed[0].numpy())
    assert (result.producer_layer, result.consumer_layer) == (0, 1)


def test_a_consumer_reads_what_a_full_layer_with_the_producers_keys_and_its_own_queries_computes():
    """A layer with keys of its own (not reading any cache) given the producer's k_proj and k_norm and the consumer's
    q_proj, q_norm and o_proj: the same weights and output as the consumer, through the other path of the core."""
    design = registry.design(SMALL, "shared")
    pair = design.build(seed=7)
    x = inputs(seed=1)
    whole = KVSharingAttention(shared.producer_config(design.config))  # type: ignore[arg-type]
    state = {**pair.producer.state_dict(), **pair.consumer.state_dict()}  # the consumer's q, q_norm, o over
    whole.load_state_dict(state, strict=True)
    with torch.no_grad():
        expected_out, expected = whole(x, return_weights=True)
        out, weights = pair(x, return_weights=True)
    torch.testing.assert_close(weights, expected, atol=1e-6, rtol=0)
    torch.testing.assert_close(out, expected_out, atol=1e-5, rtol=0)
    assert sum(p.numel() for p in pair.parameters()) == sum(p.numel() for p in pair.consumer.parameters())


def open_page(**params):
    at = open_script(PAGE, {"d_model": "64", "heads": "4", "groups": "2", "seq_len": "32", **params})
    no_exception(at)
    return at


def test_the_page_draws_a_chunked_layers_blocks():
    at = open_page(design="chunked,shared", hm_design="chunked", chunk="8")
    z = np.asarray(chart_specs(at)[-1]["data"][0]["z"], dtype=np.float64)
    assert np.array_equal(~np.isnan(z), chunk_blocks(32, 8))
    assert any("4 blocks along the diagonal" in caption.value for caption in at.caption)


def test_the_page_draws_a_consumers_map_beside_its_producers():
    at = open_page(design="chunked,shared", hm_design="shared")
    producer, consumer = (np.asarray(trace["z"], dtype=np.float64) for trace in chart_specs(at)[-1]["data"][:2])
    assert np.array_equal(np.isnan(producer), np.isnan(consumer))  # the same keys: the producer's cache
    assert np.array_equal(~np.isnan(consumer), np.tri(32, dtype=bool))
    assert not np.allclose(np.nan_to_num(producer), np.nan_to_num(consumer))  # read with its own queries
    assert any("Both read the same keys" in caption.value for caption in at.caption)
