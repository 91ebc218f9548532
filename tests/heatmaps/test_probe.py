"""explorer.probes.heatmaps: the numbers behind the heatmaps page, each held against an independent reference."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from attn_core import AttentionConfig, build_attention
from explorer.probes import heatmaps as probe

SEED = 3
VARIANT_CONFIGS = {
    "mha": AttentionConfig("mha", d_model=64, n_heads=4),
    "mqa": AttentionConfig("mqa", d_model=64, n_heads=4),
    "gqa": AttentionConfig("gqa", d_model=64, n_heads=4, n_kv_heads=2),
    "mla": AttentionConfig("mla", d_model=64, n_heads=4, kv_lora_rank=32, qk_rope_head_dim=8),
}
SPEC = probe.InputSpec(d_model=64, seed=SEED, scale=2.0, n_tokens=12)


def reference_weights(cfg, spec, causal):
    """The layer's own return_weights, built and run here independently of the probe."""
    layer = build_attention(cfg, seed=SEED)
    with torch.no_grad():
        _, weights = layer(probe.make_inputs(spec), return_weights=True, causal=causal)
    return weights[0].numpy()


@pytest.mark.parametrize("variant", list(VARIANT_CONFIGS))
@pytest.mark.parametrize("rope", [True, False])
def test_weights_are_the_layers_return_weights_and_rows_sum_to_one(variant, rope):
    cfg = replace(VARIANT_CONFIGS[variant], rope=rope)
    result = probe.explore_variant(cfg, SEED, SPEC, causal=True)
    np.testing.assert_array_equal(result.weights, reference_weights(cfg, SPEC, causal=True))
    np.testing.assert_allclose(result.weights.sum(-1), 1.0, atol=1e-6)


@pytest.mark.parametrize("variant", list(VARIANT_CONFIGS))
def test_causal_upper_triangle_is_zero_and_noncausal_is_not(variant):
    cfg = VARIANT_CONFIGS[variant]
    upper = np.triu(np.ones((SPEC.length, SPEC.length), dtype=bool), k=1)
    causal = probe.explore_variant(cfg, SEED, SPEC, causal=True).weights
    full = probe.explore_variant(cfg, SEED, SPEC, causal=False).weights
    assert np.all(causal[:, upper] == 0)
    assert np.all(full[:, upper] > 0)


@pytest.mark.parametrize("variant", list(VARIANT_CONFIGS))
@pytest.mark.parametrize("causal", [True, False])
def test_steps_inside_one_head_give_the_layers_weights_and_output(variant, causal):
    """softmax(Q·Kᵀ/√d_k + M) from the layer's own q, k, v equals its return_weights, head by head, and the heads'
    outputs through o_proj equal the layer's output."""
    cfg = VARIANT_CONFIGS[variant]
    result = probe.explore_variant(cfg, SEED, SPEC, causal=causal)
    expected = reference_weights(cfg, SPEC, causal)
    for head in range(cfg.n_heads):
        kv = result.kv_head[head]
        steps = probe.head_steps(
            torch.from_numpy(result.q[head]),
            torch.from_numpy(result.k[kv]),
            torch.from_numpy(result.v[kv]),
            result.scale,
            causal,
        )
        np.testing.assert_allclose(steps.scaled, steps.scores / math.sqrt(result.q.shape[-1]), rtol=1e-6)
        np.testing.assert_allclose(steps.weights, expected[head], atol=1e-6)
        np.testing.assert_allclose(steps.out, steps.weights @ result.v[kv], atol=1e-5)
        if causal:
            assert np.isneginf(steps.masked[np.triu_indices(SPEC.length, k=1)]).all()
    assert result.output_rebuild_error <= 1e-5 * max(1.0, result.output_scale)


def test_grouped_heads_read_the_kv_head_of_their_group():
    result = probe.explore_variant(VARIANT_CONFIGS["gqa"], SEED, SPEC, causal=True)
    assert result.kv_head == [0, 0, 1, 1]
    assert result.k.shape[0] == 2  # two KV heads stored, never the four copies


def test_heads_of_one_mqa_layer_differ_only_through_their_queries():
    """All heads read the one key: give head 1 head 0's query weights and its map becomes head 0's exactly."""
    cfg = VARIANT_CONFIGS["mqa"]
    layer = build_attention(cfg, seed=SEED)
    x = probe.make_inputs(SPEC)
    with torch.no_grad():
        _, before = layer(x, return_weights=True)
        rows = slice(0, cfg.head_dim)
        layer.q_proj.weight[cfg.head_dim : 2 * cfg.head_dim] = layer.q_proj.weight[rows]
        _, after = layer(x, return_weights=True)
    assert not torch.allclose(before[0, 0], before[0, 1])
    torch.testing.assert_close(after[0, 1], after[0, 0], rtol=0, atol=0)
    torch.testing.assert_close(after[0, 2:], before[0, 2:], rtol=0, atol=0)  # the other heads are untouched
    parts = probe.head_tensors(layer, x)
    assert parts.k.shape[0] == 1
    assert parts.kv_head == [0] * cfg.n_heads


@pytest.mark.parametrize("variant", list(VARIANT_CONFIGS))
def test_decode_step_through_the_cache_gives_the_last_row_of_the_full_pass(variant):
    cfg = VARIANT_CONFIGS[variant]
    result = probe.explore_variant(cfg, SEED, SPEC, causal=True)
    decode = result.decode
    assert decode.cached_before == SPEC.length - 1
    np.testing.assert_allclose(decode.row, result.weights[:, -1], atol=1e-6)
    assert decode.cache_elements_per_token == cfg.cache_elements_per_token


WIDE = {  # eight heads, so a page of heads is a real part of the layer
    "mha": AttentionConfig("mha", d_model=64, n_heads=8),
    "mqa": AttentionConfig("mqa", d_model=64, n_heads=8),
    "gqa": AttentionConfig("gqa", d_model=64, n_heads=8, n_kv_heads=4),
    "mla": AttentionConfig("mla", d_model=64, n_heads=8, kv_lora_rank=32, qk_rope_head_dim=4),
}


@pytest.mark.parametrize("variant", list(WIDE))
@pytest.mark.parametrize("heads", [range(2, 6), range(6, 7)])
def test_some_heads_computed_alone_are_those_heads_of_the_full_layer(variant, heads):
    """A page of heads is computed on a layer of just those heads: its weights, steps and decode row are the full
    layer's for those heads (the full layer built and run independently here)."""
    cfg = WIDE[variant]
    expected = reference_weights(cfg, SPEC, causal=True)[heads.start : heads.stop]
    result = probe.explore_variant(cfg, SEED, SPEC, causal=True, heads=heads)
    assert result.heads == list(heads)
    assert result.kv_head == [h // cfg.group_size for h in heads]
    np.testing.assert_allclose(result.weights, expected, atol=1e-6)
    np.testing.assert_allclose(result.decode.row, expected[:, -1], atol=1e-6)
    for head, weights in zip(heads, expected, strict=True):
        np.testing.assert_allclose(probe.steps_of_head(result, head, causal=True).weights, weights, atol=1e-6)
    assert result.output_rebuild_error <= 1e-5 * max(1.0, result.output_scale)


def test_inputs_are_seeded_and_a_window_is_the_start_of_a_longer_sequence():
    long = probe.make_inputs(replace(SPEC, n_tokens=40))
    torch.testing.assert_close(probe.make_inputs(SPEC), long[:, : SPEC.length], rtol=0, atol=0)
    torch.testing.assert_close(probe.make_inputs(SPEC), probe.make_inputs(SPEC), rtol=0, atol=0)
    assert not torch.equal(probe.make_inputs(replace(SPEC, seed=SEED + 1)), probe.make_inputs(SPEC))


def test_chinese_text_is_split_by_characters_and_mixed_text_at_both():
    """Issue #15 item 4: Chinese has no spaces between words, and the seeded layers no tokenizer: a Chinese character
    is a word of its own, so typed Chinese is not one token; Latin words in the same text stay whole."""
    assert probe.tokenize("注意力机制", "words") == ["注", "意", "力", "机", "制"]
    assert probe.tokenize("我爱 attention 机制。", "words") == ["我", "爱", "attention", "机", "制", "。"]
    assert probe.tokenize("KV缓存，很小", "words") == ["KV", "缓", "存", "，", "很", "小"]
    assert probe.tokenize("注意 力", "chars") == ["注", "意", " ", "力"]


def test_text_tokens_get_one_seeded_vector_each():
    tokens = tuple(probe.tokenize("the cat saw the dog", "words"))
    assert tokens == ("the", "cat", "saw", "the", "dog")
    assert probe.tokenize("ab c", "chars") == ["a", "b", " ", "c"]
    x = probe.make_inputs(probe.InputSpec(d_model=32, seed=SEED, scale=1.0, tokens=tokens))[0]
    torch.testing.assert_close(x[0], x[3], rtol=0, atol=0)  # "the" twice: the same vector
    assert not torch.equal(x[0], x[1])
    # the vector is a function of (seed, token) through sha256, so it is the same in every process
    torch.testing.assert_close(x[1], probe.seeded_vector(f"token|{SEED}|cat", 32), rtol=0, atol=0)


def test_token_window_keeps_every_pass_within_its_budgets():
    assert probe.token_window(8, 512, 64, 64) == 64  # default settings: every token
    largest = probe.token_window(16, 8192, 64, 8192)  # a page of 16 of 128 heads at d_model 8192
    assert largest == 128
    assert 16 * largest**2 <= probe.WINDOW_CELL_BUDGET
    assert 4 * largest * 8192 * 16 * 64 <= probe.WINDOW_WORK_BUDGET
    assert probe.token_window(1, 16, 16, 1) == 1
    for heads, d_model in [(2, 64), (8, 512), (16, 4096), (16, 1024)]:
        window = probe.token_window(heads, d_model, 64, 8192)
        assert heads * window**2 <= probe.WINDOW_CELL_BUDGET
        assert window <= probe.MAX_WINDOW_TOKENS


@pytest.mark.parametrize("how", ["mean", "max"])
def test_pool_blocks_matches_a_loop_over_blocks(how):
    rng = np.random.default_rng(0)
    matrix = rng.random((10, 7)).astype(np.float32)
    matrix[0, 5:] = np.nan  # masked cells are skipped
    pooled = probe.pool_blocks(matrix, 4, 3, how)
    assert pooled.shape == (3, 3)
    reduce = np.nanmean if how == "mean" else np.nanmax
    for i in range(3):
        for j in range(3):
            block = matrix[4 * i : 4 * i + 4, 3 * j : 3 * j + 3]
            np.testing.assert_allclose(pooled[i, j], reduce(block), rtol=1e-6)
    np.testing.assert_array_equal(probe.pool_blocks(matrix, 1, 1, how), matrix)


def test_mean_pooling_of_attention_keeps_rows_summing_to_one_per_block():
    weights = probe.explore_variant(VARIANT_CONFIGS["gqa"], SEED, replace(SPEC, n_tokens=16), causal=True).weights
    pooled = probe.pool_blocks(weights[0], 4, 4, "mean")
    # each pooled row is the mean of 4 rows of 4-key blocks: summing it and scaling back by the block width gives 1
    np.testing.assert_allclose(pooled.sum(-1) * 4, 1.0, atol=1e-6)


def test_gqa_made_from_mha_averages_key_and_value_heads_and_keeps_queries():
    mha = build_attention(AttentionConfig("mha", d_model=64, n_heads=4), seed=SEED)
    gqa = probe.pooled_from_mha(mha, VARIANT_CONFIGS["gqa"])
    per_head = mha.k_proj.weight.reshape(4, 16, 64)
    torch.testing.assert_close(gqa.k_proj.weight[:16], (per_head[0] + per_head[1]) / 2)
    torch.testing.assert_close(gqa.v_proj.weight[16:], mha.v_proj.weight.reshape(4, 16, 64)[2:].mean(0))
    assert gqa.q_proj.weight.data_ptr() == mha.q_proj.weight.data_ptr()  # shared, not copied
    # one head per group is MHA itself
    same = probe.pooled_from_mha(mha, AttentionConfig("gqa", d_model=64, n_heads=4, n_kv_heads=4))
    x = probe.make_inputs(SPEC)
    with torch.no_grad():
        torch.testing.assert_close(same(x)[0], mha(x)[0], rtol=0, atol=0)


def test_mla_made_from_mha_rebuilds_mhas_keys_at_full_rank_up_to_the_latent_norm():
    """With d_c >= d_model the SVD keeps everything: each up-projected key is MHA's key times the one per-token factor
    the latent's RMSNorm applies, and queries are MHA's scaled to MLA's wider dot product."""
    mha = build_attention(AttentionConfig("mha", d_model=32, n_heads=2, rope=False), seed=SEED)
    cfg = AttentionConfig("mla", d_model=32, n_heads=2, kv_lora_rank=32, qk_rope_head_dim=4, rope=False)
    mla = probe.latent_from_mha(mha, cfg, input_rms=2.0)
    x = probe.make_inputs(probe.InputSpec(d_model=32, seed=SEED, scale=2.0, n_tokens=6))
    with torch.no_grad():
        c_kv, k_rope = mla.compress(x, 0)
        keys, values = mla.up_project(c_kv, k_rope)
        latent = mla.kv_a_proj_with_mqa(x)[..., :32]
        factor = 2.0 / torch.sqrt(latent.pow(2).mean(-1) + cfg.norm_eps)  # gain / per-token RMS
        mha_k, mha_v = mha.project_kv(x)
        torch.testing.assert_close(keys[..., :16], mha_k * factor[:, None, :, None], atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(values, mha_v * factor[:, None, :, None], atol=1e-5, rtol=1e-4)
        assert torch.all(k_rope == 0)
        q_nope, q_rope = mla.queries(x, 0)
        mha_q = mha.q_proj(x).reshape(1, 6, 2, 16).transpose(1, 2)
        torch.testing.assert_close(q_nope, mha_q * math.sqrt(20 / 16))
        assert torch.all(q_rope == 0)


def test_comparison_measures_against_mha_and_overlap_by_definition():
    configs = {v: VARIANT_CONFIGS[v] for v in ("mha", "mqa", "gqa", "mla")}
    results = probe.compare_from_mha(configs, SEED, SPEC, causal=True)
    assert results["mha"].output_distance == 0
    np.testing.assert_allclose(results["mha"].overlap_with_mha, 1.0)
    assert results["mha"].within_group_overlap is None
    assert results["mqa"].between_group_overlap is None
    for variant in ("mqa", "gqa", "mla"):
        assert results[variant].output_distance > 0
    # within-group overlap of MQA, brute force: mean over head pairs and rows of 1 - TV(p, q)
    weights = results["mqa"].weights
    pairs = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    brute = np.mean([1 - 0.5 * np.abs(weights[a] - weights[b]).sum(-1).mean() for a, b in pairs])
    assert results["mqa"].within_group_overlap == pytest.approx(brute, abs=1e-5)
    gqa = results["gqa"].weights
    between = np.mean([1 - 0.5 * np.abs(gqa[a] - gqa[b]).sum(-1).mean() for a, b in [(0, 2), (0, 3), (1, 2), (1, 3)]])
    assert results["gqa"].between_group_overlap == pytest.approx(between, abs=1e-5)


def test_comparison_skips_mla_where_its_singular_vectors_would_be_too_slow():
    big = AttentionConfig("mla", d_model=2048, n_heads=16, kv_lora_rank=64)
    results = probe.compare_from_mha(
        {"mla": big}, SEED, probe.InputSpec(d_model=2048, seed=SEED, n_tokens=2), causal=True
    )
    skipped = results["mla"]
    assert isinstance(skipped, probe.Skipped)
    assert "singular vectors" in skipped.reason


@pytest.mark.parametrize("rank", [1, 8, 40, 63])
def test_joint_kv_basis_gives_the_best_rank_d_c_approximation(rank):
    """Eckart–Young: the best rank-r approximation of [W_K; W_V] leaves exactly the energy of the discarded singular
    values; the basis (eigenvectors of the Gram matrix) must reach it, and be orthonormal."""
    mha = build_attention(AttentionConfig("mha", d_model=64, n_heads=4), seed=SEED)
    joint = torch.cat((mha.k_proj.weight, mha.v_proj.weight)).detach().double()
    basis = probe.joint_kv_basis(mha).detach().double()
    torch.testing.assert_close(basis.T @ basis, torch.eye(64, dtype=torch.float64), atol=1e-5, rtol=0)
    top = basis[:, :rank]
    residual = (joint - joint @ top @ top.T).norm()
    optimum = torch.linalg.svdvals(joint)[rank:].pow(2).sum().sqrt()
    assert float(residual) == pytest.approx(float(optimum), rel=1e-5)


def test_mla_conversion_with_a_cached_basis_is_the_same_layer():
    mha = build_attention(AttentionConfig("mha", d_model=64, n_heads=4), seed=SEED)
    cfg = VARIANT_CONFIGS["mla"]
    fresh = probe.latent_from_mha(mha, cfg, input_rms=2.0)
    cached = probe.latent_from_mha(mha, cfg, input_rms=2.0, basis=probe.joint_kv_basis(mha).detach().numpy())
    for name, value in fresh.state_dict().items():
        torch.testing.assert_close(cached.state_dict()[name], value, rtol=0, atol=0)


def test_projections_computed_once_give_the_same_numbers_and_are_undone():
    layer = build_attention(VARIANT_CONFIGS["gqa"], seed=SEED)
    x = probe.make_inputs(SPEC)
    with torch.no_grad():
        expected = layer.q_proj(x)
        with probe.projections_computed_once(layer) as calls:
            first = layer.q_proj(x)
            again = layer.q_proj(x.clone())  # an equal input, another tensor
            other = layer.q_proj(x[:, :3])
        assert again is first
        assert len(calls[layer.q_proj]) == 2
        torch.testing.assert_close(first, expected, rtol=0, atol=0)
        torch.testing.assert_close(other, expected[:, :3])
        assert all("forward" not in module.__dict__ for module in layer.modules())  # Linear.forward is back


@pytest.mark.parametrize("variant", list(VARIANT_CONFIGS))
def test_prefilled_cache_holds_what_a_prefill_forward_pass_stores(variant):
    cfg = VARIANT_CONFIGS[variant]
    layer = build_attention(cfg, seed=SEED)
    x = probe.make_inputs(SPEC)
    with torch.no_grad():
        reference = layer.new_cache(1)
        layer(x[:, :-1], cache=reference)
        cache = probe.prefilled_cache(layer, x, probe.head_tensors(layer, x))
    assert cache.seq_len == reference.seq_len == SPEC.length - 1
    for name, buffer in reference.buffers.items():
        torch.testing.assert_close(cache.buffers[name].view(), buffer.view(), atol=1e-5, rtol=1e-5)


def test_comparison_reads_the_basis_from_the_callers_cache():
    configs = {v: VARIANT_CONFIGS[v] for v in ("mha", "mla")}
    asked = []

    def cached_basis(mha):
        asked.append(mha.cfg.d_model)
        return probe.joint_kv_basis(mha).numpy()

    own = probe.compare_from_mha(configs, SEED, SPEC, causal=True)
    via_cache = probe.compare_from_mha(configs, SEED, SPEC, causal=True, basis_of=cached_basis)
    assert asked == [64]
    np.testing.assert_array_equal(via_cache["mla"].weights, own["mla"].weights)


@pytest.mark.parametrize(("heads", "group_size"), [(8, 1), (8, 2), (8, 4), (8, 8), (64, 1), (64, 16)])
def test_group_overlaps_match_the_pairwise_definition(heads, group_size):
    """Pair by pair (few heads) or through sorted values (many), the result is what visiting every pair gives."""
    generator = torch.Generator().manual_seed(heads + group_size)
    weights = torch.softmax(torch.randn(heads, 5, 7, generator=generator) * 3, dim=-1)

    def brute(pairs):
        if not pairs:
            return None
        return float(np.mean([1 - 0.5 * (weights[a] - weights[b]).abs().sum(-1).mean() for a, b in pairs]))

    pairs = [(a, b) for a in range(heads) for b in range(a + 1, heads)]
    same = [(a, b) for a, b in pairs if a // group_size == b // group_size]
    different = [(a, b) for a, b in pairs if a // group_size != b // group_size]
    within, between = probe.group_overlaps(weights, group_size)
    for got, expected in ((within, brute(same)), (between, brute(different))):
        assert (got is None) == (expected is None)
        if expected is not None:
            assert got == pytest.approx(expected, abs=1e-6)
