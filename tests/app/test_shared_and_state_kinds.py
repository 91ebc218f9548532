"""GLM-5's shared top-k and the two state kinds (Mamba-2's mixer, MiniMax's lightning attention) as the app shows
them (explorer/kinds/shared_topk.py, mamba2.py, lightning.py): a state's bytes are the same at 4k and 128k tokens and
equal a formula written here from the config's fields; a shared layer reads exactly the keys the full layer's
indexer ranks highest. (The bytes every page shows equal the core's for every kind: tests/app/test_one_number.py.)"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from attn_core import DeepSeekSparseAttention
from explorer.kinds.registry import KINDS, design
from explorer.mapping.reads import decode_reads, reads_caption
from explorer.probes.heatmaps import InputSpec, make_inputs
from explorer.settings import Settings

SMALL = Settings(d_model=64, heads=4, groups=2, latent=16, rope_dim=8, topk=8, state_dim=32)
SHORT, LONG = 4096, 131072


def state_formula(settings: Settings, name: str, batch: int, element: int) -> int:
    """Written from the fields: Mamba-2 keeps a float32 P x N state per head and the convolution's last K − 1 inputs
    of x, B and C (H·P + 2·G·N channels); lightning a D x D state per head in the layer's dtype."""
    config = design(settings, name).config
    if name == "mamba2":
        heads, width, size, groups = config.n_heads, config.head_dim, config.state_size, config.n_groups
        conv_tail = (config.conv_kernel - 1) * (heads * width + 2 * groups * size) * element
        return batch * (heads * width * size * 4 + conv_tail)
    return batch * config.n_heads * config.head_dim**2 * element


@pytest.mark.parametrize("name", ["mamba2", "lightning"])
@pytest.mark.parametrize(("settings", "dtype", "batch"), [(SMALL, "bfloat16", 1), (Settings(), "float32", 4)])
def test_a_state_holds_the_same_bytes_at_4k_and_128k_tokens_as_its_formula(name, settings, dtype, batch):
    chosen = replace(settings, dtype=dtype, batch=batch)
    element = torch.finfo(getattr(torch, dtype)).bits // 8
    expected = state_formula(chosen, name, batch, element)
    layer = design(chosen, name).build(device="meta", dtype=getattr(torch, dtype))
    for tokens in (SHORT, LONG):
        cache = layer.cache_after(tokens, batch)
        assert (cache.nbytes, cache.read_nbytes) == (expected, expected), tokens
        assert design(chosen, name).formula_bytes(tokens, batch, dtype, new_tokens=1) == (expected, expected)


@pytest.mark.parametrize("name", ["mamba2", "lightning"])
def test_the_mapping_page_draws_a_state_as_one_matrix_per_head(name):
    reads = decode_reads(design(SMALL, name), 0, 6, "bfloat16", 1)
    assert reads.read.shape == (6, SMALL.heads)
    assert reads.read.all()
    assert reads.held.all()
    rows, columns = reads.state_shape
    assert (rows, columns) == ((SMALL.head_dim, SMALL.state_dim) if name == "mamba2" else (SMALL.head_dim,) * 2)
    assert len(set(reads.held_bytes)) == 1


def test_the_state_kinds_read_no_weights_and_the_shared_one_maps():
    assert {name for name in ("shared_topk", "mamba2", "lightning") if KINDS[name].maps} == {"shared_topk"}
    assert all(KINDS[name].decodes for name in ("shared_topk", "mamba2", "lightning"))


def indexer_top_k(settings: Settings, seed: int, x: torch.Tensor) -> np.ndarray:
    """[L, L] bool: each query's k best keys by a full DSA layer's own indexer scores (built from the seed the kind
    builds its full layer from, GLM's interleaved indexer RoPE), every earlier key where it has no more than k."""
    config = replace(KINDS["dsa"].design(settings).config, index_rope_interleave=True)
    full = DeepSeekSparseAttention(config, device="meta").to_empty(device="cpu")
    full.init_from_seed(seed)
    with torch.no_grad():
        scores = full.index_scores(x)[0]  # [L, S]
    k = min(settings.topk, scores.shape[-1])
    best = np.zeros(scores.shape, bool)
    np.put_along_axis(best, scores.topk(k, dim=-1).indices.numpy(), True, axis=1)
    return best & np.tril(np.ones(scores.shape, bool))


def test_the_shared_layer_s_map_reads_the_full_layer_s_top_k():
    chosen = design(SMALL, "shared_topk")
    x = make_inputs(InputSpec(d_model=SMALL.d_model, seed=1, n_tokens=24))
    result = chosen.kind.attention_map(chosen.build(5), x)
    assert np.array_equal(result.shared_read, indexer_top_k(SMALL, 5, x))
    assert np.array_equal(result.picked, result.shared_read)
    assert result.shared_read.sum(axis=1).max() == SMALL.topk  # past k tokens, k keys a query
    assert not np.allclose(result.full_weights, result.shared_weights, equal_nan=True)  # weights of its own


def test_the_shared_layer_s_decode_reads_the_full_layer_s_picks_and_the_caption_says_so():
    reads = decode_reads(design(SMALL, "shared_topk"), 0, 14, "bfloat16", 1)
    x = make_inputs(InputSpec(d_model=SMALL.d_model, seed=0, n_tokens=14))
    for t in range(14):  # each step's query ranks every key so far: the last row of a prefill's scores
        assert np.array_equal(reads.read[t, : t + 1], indexer_top_k(SMALL, 0, x[:, : t + 1])[-1]), t
    assert np.array_equal(reads.read, reads.source_read)
    assert int(reads.read[-1].sum()) == SMALL.topk
    assert "picks at 14 of 14 steps" in reads_caption(reads, "shared_topk")


def test_a_shared_layer_holds_the_latent_alone_and_reads_k_entries():
    """(d_c + d_h^R) numbers a token held; the k picked read once past k tokens: less than DSA's, which also keeps
    the indexer's keys and reads all of them."""
    tokens, element = 100, 2
    held, read = design(SMALL, "shared_topk").formula_bytes(tokens, 1, "bfloat16", new_tokens=1)
    assert held == (SMALL.latent + SMALL.rope_dim) * tokens * element
    assert read == (SMALL.latent + SMALL.rope_dim) * SMALL.topk * element
    dsa_held, dsa_read = design(SMALL, "dsa").formula_bytes(tokens, 1, "bfloat16", new_tokens=1)
    assert (held, read) < (dsa_held, dsa_read)


def test_the_kv_cache_page_says_which_designs_hold_the_same_at_4k_and_128k():
    from explorer import i18n
    from explorer.kv_cache.computed import CONTEXTS, held_at_contexts
    from explorer.kv_cache.text import contexts_finding

    settings = replace(SMALL, designs=("dsa", "shared_topk", "mamba2", "lightning"), dtype="float16", batch=2)
    held = held_at_contexts(settings)
    for name in settings.designs:  # the core's own caches, measured on the meta device
        layer = design(settings, name).build(device="meta", dtype=torch.float16)
        assert held[name] == tuple(layer.cache_after(tokens, 2).nbytes for tokens in CONTEXTS), name
    assert held["mamba2"][0] == held["mamba2"][1] == state_formula(settings, "mamba2", 2, 2)
    with i18n.speaking("en"):
        said = contexts_finding(held, CONTEXTS)
    assert "The same bytes at both: Mamba-2 state, Lightning state." in said
    assert "131,072" in said
