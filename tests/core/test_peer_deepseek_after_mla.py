"""DeepSeek after MLA: V3.2's sparse attention (DSA) against HF transformers' DeepseekV32Attention, with its cache
(DynamicCache -> DynamicIndexedLayer), its causal mask (masking_utils.create_causal_mask) and its rotary embedding,
driven as DeepseekV32Model drives them.

Fast tests check the caches' bytes against formulas written here, independently of attn_core, and bad configs.
"""

from __future__ import annotations

import math

import pytest
import torch

from attn_core import build_attention
from attn_core.compressed import CompressedAttention, CompressedConfig
from attn_core.dsa import DeepSeekSparseAttention, DSAConfig

from .examples import randn

TOL = 2e-5

DSA_HF = dict(  # a small DeepSeek-V3.2 layer: top-6 of the cached tokens, 8 indexer heads of width 16
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=4,
    q_lora_rank=20,
    kv_lora_rank=24,
    qk_nope_head_dim=16,
    qk_rope_head_dim=8,
    v_head_dim=12,
    index_n_heads=8,
    index_head_dim=16,
    index_topk=6,
    num_hidden_layers=2,
    rope_theta=10000.0,
)


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


# --- DSA: exact against DeepseekV32Attention ------------------------------------------------------------------------


class DSAPeer:
    """HF's DeepseekV32Attention with the mask, positions and cache DeepseekV32Model would give it."""

    def __init__(self, **overrides):
        from transformers import DeepseekV32Config, DynamicCache
        from transformers.models.deepseek_v32.modeling_deepseek_v32 import (
            DeepseekV32Attention,
            DeepseekV32RotaryEmbedding,
        )

        fields = DSA_HF | overrides
        theta = fields.pop("rope_theta")
        rope = {"rope_type": "default"} | fields.pop("rope_parameters", {}) | {"rope_theta": theta}
        self.config = DeepseekV32Config(**fields, rope_parameters=rope)
        self.config._attn_implementation = "eager"
        torch.manual_seed(0)
        self.module = DeepseekV32Attention(self.config, layer_idx=0).eval()  # the cache sizes masks by layer 0
        with torch.no_grad():  # norms away from their init, so a norm that failed to load would show
            for name, param in self.module.named_parameters():
                if "norm" in name:
                    param.copy_((1.0 if name.endswith("weight") else 0.0) + 0.3 * torch.randn(param.shape))
        self.rotary = DeepseekV32RotaryEmbedding(self.config)
        self.cache = DynamicCache(config=self.config)
        self.seen = 0

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        from transformers.masking_utils import create_causal_mask

        positions = torch.arange(self.seen, self.seen + x.shape[1])[None].expand(x.shape[0], -1)
        mask = create_causal_mask(
            config=self.config, inputs_embeds=x, attention_mask=None, past_key_values=self.cache, position_ids=positions
        )
        out, weights = self.module(
            x,
            position_embeddings=self.rotary(x, positions),
            attention_mask=mask,
            past_key_values=self.cache,
            position_ids=positions,
        )
        self.seen += x.shape[1]
        return out, weights


def dsa_pair(**overrides) -> tuple[DeepSeekSparseAttention, DSAPeer]:
    peer = DSAPeer(**overrides)
    ours = DeepSeekSparseAttention(DSAConfig.from_hf(peer.config.to_dict(), layer_idx=1)).eval()
    ours.load_state_dict(peer.module.state_dict(), strict=True)
    return ours, peer


DSA_SHAPES = {
    "small": {},
    "bias-wide-indexer": dict(attention_bias=True, index_head_dim=24, index_topk=9, index_n_heads=4),
}


@pytest.mark.slow
@pytest.mark.parametrize("shape", DSA_SHAPES)
def test_dsa_state_dict_loads_strictly(shape):
    ours, peer = dsa_pair(**DSA_SHAPES[shape])
    result = DeepSeekSparseAttention(ours.dsa_cfg).load_state_dict(peer.module.state_dict(), strict=True)
    assert (result.missing_keys, result.unexpected_keys) == ([], [])


@pytest.mark.slow
@pytest.mark.parametrize("shape", DSA_SHAPES)
def test_dsa_prefill_longer_than_topk_then_five_decode_steps_match_hf(shape):
    ours, peer = dsa_pair(**DSA_SHAPES[shape])
    x = randn(2, 25, ours.cfg.d_model)
    cache = ours.new_cache(2)
    diffs = []
    for start, end in ((0, 20), (20, 21), (21, 22), (22, 23), (23, 24), (24, 25)):
        diffs.append(max_diff(ours(x[:, start:end], cache=cache)[0], peer(x[:, start:end])[0]))
    assert max(diffs) <= TOL, diffs


def random_shape(seed: int, choices: dict[str, list]) -> dict:
    """One value per field, drawn from a generator seeded here: the same configs on every run."""
    generator = torch.Generator().manual_seed(seed)
    return {k: v[int(torch.randint(len(v), (1,), generator=generator))] for k, v in choices.items()}


DSA_RANDOM = dict(
    num_attention_heads=[1, 2, 4],
    q_lora_rank=[8, 12, 20],
    kv_lora_rank=[8, 16, 24],
    qk_nope_head_dim=[4, 8, 16],
    qk_rope_head_dim=[2, 4, 8],
    v_head_dim=[4, 12],
    index_n_heads=[2, 4, 8],
    index_head_dim=[8, 16],
    index_topk=[1, 3, 7],
    attention_bias=[False, True],
)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_dsa_random_small_configs_match_hf_over_prefill_and_five_steps(seed):
    shape = random_shape(seed, DSA_RANDOM)
    ours, peer = dsa_pair(**shape, num_key_value_heads=shape["num_attention_heads"])  # HF's MLA: one per head
    x = randn(2, 20, ours.cfg.d_model)
    cache = ours.new_cache(2)
    diffs = [max_diff(ours(x[:, :15], cache=cache)[0], peer(x[:, :15])[0])]
    diffs += [max_diff(ours(x[:, t : t + 1], cache=cache)[0], peer(x[:, t : t + 1])[0]) for t in range(15, 20)]
    assert max(diffs) <= TOL, diffs


@pytest.mark.slow
def test_dsa_weights_are_hfs_zero_outside_each_querys_top_k():
    ours, peer = dsa_pair()
    x = randn(1, 17, ours.cfg.d_model)
    cache = ours.new_cache(1)
    ours(x[:, :16], cache=cache)
    peer(x[:, :16])
    weights, hf_weights = ours(x[:, 16:], cache=cache, return_weights=True)[1], peer(x[:, 16:])[1]
    assert weights is not None
    assert max_diff(weights, hf_weights) <= TOL
    assert ((weights > 0).sum(-1) == ours.dsa_cfg.index_topk).all()


@pytest.mark.slow
def test_dsa_prompt_then_a_chunk_then_tokens_match_hf():
    ours, peer = dsa_pair()
    x = randn(1, 24, ours.cfg.d_model)
    cache, diffs, start = ours.new_cache(1), [], 0
    for size in (9, 7, 1, 5, 1, 1):
        chunk = x[:, start : start + size]
        diffs.append(max_diff(ours(chunk, cache=cache)[0], peer(chunk)[0]))
        start += size
    assert max(diffs) <= TOL, diffs


@pytest.mark.slow
def test_dsa_without_a_cache_matches_hfs_prefill():
    ours, peer = dsa_pair()
    x = randn(2, 19, ours.cfg.d_model)
    assert max_diff(ours(x)[0], peer(x)[0]) <= TOL


@pytest.mark.slow
def test_dsa_cache_holds_what_hfs_indexed_cache_holds():
    ours, peer = dsa_pair()
    x = randn(2, 13, ours.cfg.d_model)
    cache = ours.new_cache(2)
    ours(x, cache=cache)
    peer(x)
    layer = peer.cache.layers[0]
    assert max_diff(cache.c_kv, layer.keys) <= TOL
    assert max_diff(cache.k_rope, layer.values) <= TOL
    assert max_diff(cache.index_k[:, 0], layer.indexer_keys) <= TOL


# --- DSA: cache, reading, config ---------------------------------------------------------------------------------------


def dsa_config(**overrides) -> DSAConfig:
    return DSAConfig.from_hf(DSA_HF | overrides, layer_idx=0)


def dsa_bytes(tokens: int, batch: int, element_bytes: int) -> int:
    """Held: per token, the latent (kv_lora_rank 24 + qk_rope_head_dim 8) and one indexer key (16)."""
    return batch * tokens * (24 + 8 + 16) * element_bytes


def dsa_read_bytes(tokens: int, batch: int, element_bytes: int) -> int:
    """Read by the last query: every indexer key at any length (DeepSeek's reference runs the indexer even when no more
    than top-6 are cached), then the min(T, 6) latents it chose."""
    return batch * (tokens * 16 + min(tokens, 6) * (24 + 8)) * element_bytes


@pytest.mark.parametrize("tokens", [0, 1, 6, 7, 100, 1 << 20])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dsa_cache_after_holds_the_formulas_bytes_on_the_meta_device(tokens, dtype):
    layer = DeepSeekSparseAttention(dsa_config(), device="meta", dtype=dtype)
    cache = layer.cache_after(tokens, batch_size=3)
    size = torch.finfo(dtype).bits // 8
    assert cache.nbytes == dsa_bytes(tokens, 3, size)
    assert cache.read_nbytes == dsa_read_bytes(tokens, 3, size)
    assert cache.shapes() == {"c_kv": (3, 1, tokens, 24), "k_rope": (3, 1, tokens, 8), "index_k": (3, 1, tokens, 16)}


@pytest.mark.parametrize("tokens", [3, 6, 11])
def test_dsa_real_cache_holds_and_reads_the_formulas_bytes(tokens):
    layer = DeepSeekSparseAttention(dsa_config())
    layer.init_from_seed(0)
    cache = layer.new_cache(2)
    layer(randn(2, tokens, 64), cache=cache)
    assert (cache.nbytes, cache.read_nbytes) == (dsa_bytes(tokens, 2, 4), dsa_read_bytes(tokens, 2, 4))
    layer(randn(2, 1, 64), cache=cache)
    assert (cache.nbytes, cache.read_nbytes) == (dsa_bytes(tokens + 1, 2, 4), dsa_read_bytes(tokens + 1, 2, 4))


def test_dsa_cache_bytes_formula_is_the_independent_one():
    from attn_core.dsa import cache_bytes_formula

    for tokens in (0, 5, 4096, 1 << 20):
        assert cache_bytes_formula(dsa_config(), tokens, 2, 2) == dsa_bytes(tokens, 2, 2)


def test_dsa_same_seed_same_weights_and_its_mla_part_is_build_attentions():
    first, second = DeepSeekSparseAttention(dsa_config()), DeepSeekSparseAttention(dsa_config())
    first.init_from_seed(7)
    second.init_from_seed(7)
    for (name, a), b in zip(first.state_dict().items(), second.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    mla = build_attention(first.dsa_cfg.latent, seed=7)
    for name, value in mla.state_dict().items():
        assert torch.equal(first.state_dict()[name], value), name


def test_dsa_decoding_reads_only_the_chosen_latents():
    # Entries the indexer did not choose can be anything: a decoding step's output does not change.
    layer = DeepSeekSparseAttention(dsa_config())
    layer.init_from_seed(1)
    cache = layer.new_cache(1)
    layer(randn(1, 30, 64), cache=cache)
    x = randn(1, 1, 64)
    probe = layer.new_cache(1)
    probe.append(cache.c_kv.clone(), cache.k_rope.clone())
    probe.append_index_keys(cache.index_k.clone())
    out, weights = layer(x, cache=probe, return_weights=True)
    assert weights is not None
    assert int((weights[0, 0, 0] == 0).sum()) == 31 - 6  # 31 keys: the 30 cached and the new one
    unchosen = (weights[0, 0, 0, :30] == 0).nonzero().flatten()
    scrambled = layer.new_cache(1)
    latent = cache.latent.clone()
    latent[:, :, unchosen] = 1e6
    scrambled.append(latent[..., :24], latent[..., 24:])
    scrambled.append_index_keys(cache.index_k.clone())
    assert torch.equal(layer(x, cache=scrambled)[0], out)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("index_topk", 0),
        ("index_n_heads", -1),
        ("index_head_dim", 4),  # narrower than qk_rope_head_dim (8)
        ("qk_rope_head_dim", 7),
        ("q_lora_rank", None),  # HF's V3.2 layer always has a low-rank query: the indexer reads its residual
        ("attention_bias", "yes"),
    ],
)
def test_dsa_bad_config_raises_value_error_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        dsa_config(**{field: value})


def test_dsa_config_missing_a_field_names_it():
    hf = dict(DSA_HF)
    del hf["kv_lora_rank"]
    with pytest.raises(ValueError, match="kv_lora_rank"):
        DSAConfig.from_hf(hf, layer_idx=0)


def test_dsa_layer_idx_out_of_range_names_num_hidden_layers():
    with pytest.raises(ValueError, match="num_hidden_layers"):
        DSAConfig.from_hf(DSA_HF, layer_idx=2)


@pytest.mark.parametrize("tokens", [-1, 1 << 41, 2.5])
def test_dsa_cache_after_refuses_absurd_token_counts(tokens):
    layer = DeepSeekSparseAttention(dsa_config(), device="meta")
    with pytest.raises(ValueError, match="tokens"):
        layer.cache_after(tokens)


DEEPSEEK_YARN = {  # DeepSeek-V3.2's published rope_scaling (context 163,840 = 40 x 4,096)
    "type": "yarn",
    "factor": 40,
    "beta_fast": 32,
    "beta_slow": 1,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
    "original_max_position_embeddings": 4096,
}


def test_dsa_yarn_config_reads_the_scaling_and_mla_s_score_scale():
    cfg = dsa_config(rope_scaling=DEEPSEEK_YARN, max_position_embeddings=163840)
    assert (cfg.rope_scaling.kind, cfg.rope_scaling.factor) == ("yarn", 40)
    # HF's yarn_get_mscale(40, 1.0)² on 1/sqrt(16 + 8)
    assert cfg.softmax_scale == pytest.approx((0.1 * math.log(40) + 1.0) ** 2 / math.sqrt(24))
    assert DeepSeekSparseAttention(cfg, device="meta").cache_after(100).nbytes == dsa_bytes(100, 1, 4)


@pytest.mark.slow
def test_dsa_with_yarn_matches_hf_over_prefill_and_five_steps():
    ours, peer = dsa_pair(
        rope_parameters={k: v for k, v in DEEPSEEK_YARN.items() if k != "type"} | {"rope_type": "yarn"}
    )
    assert ours.dsa_cfg.rope_scaling.kind == "yarn"
    x = randn(2, 25, 64)
    cache = ours.new_cache(2)
    diffs = [max_diff(ours(x[:, :20], cache=cache)[0], peer(x[:, :20])[0])]
    diffs += [max_diff(ours(x[:, t : t + 1], cache=cache)[0], peer(x[:, t : t + 1])[0]) for t in range(20, 25)]
    assert max(diffs) <= TOL, diffs


# --- V4: exact against DeepseekV4Attention ----------------------------------------------------------------------------

V4_HF = dict(  # a small DeepSeek-V4: window 6, CSA one entry per 4 tokens (top-3), HCA one per 5
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=1,
    head_dim=32,
    q_lora_rank=20,
    partial_rotary_factor=8 / 32,
    o_groups=2,
    o_lora_rank=12,
    sliding_window=6,
    index_n_heads=8,
    index_head_dim=16,
    index_topk=3,
    compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 5},
    layer_types=["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"],
    num_hidden_layers=3,
    rope_theta=10000.0,
    compress_rope_theta=50000.0,
)
V4_KINDS = {"sliding": 0, "csa": 1, "hca": 2}  # kind -> its layer in V4_HF


class V4Peer:
    """HF's DeepseekV4Attention for one layer kind, with the sliding-window mask (masking_utils), the position
    embeddings dict and position_ids DeepseekV4Model passes, and its cache (DynamicCache -> HCA/CSA cache layers)."""

    def __init__(self, kind: str, **overrides):
        from transformers import DeepseekV4Config, DynamicCache
        from transformers.models.deepseek_v4.modeling_deepseek_v4 import (
            DeepseekV4Attention,
            DeepseekV4RotaryEmbedding,
        )

        # the layer alone: one layer of that kind, so that the cache sizes the mask by it (as in a full model)
        fields = V4_HF | overrides | {"layer_types": [V4_HF["layer_types"][V4_KINDS[kind]]], "num_hidden_layers": 1}
        self.config = DeepseekV4Config(**fields, n_routed_experts=4, num_experts_per_tok=2, vocab_size=32)
        self.config._attn_implementation = "eager"
        torch.manual_seed(0)
        self.module = DeepseekV4Attention(self.config, layer_idx=0).eval()
        with torch.no_grad():  # HF leaves sinks and position_bias uninitialised outside a model: random, norms not 1
            for name, param in self.module.named_parameters():
                if "norm" in name:
                    param.copy_(1 + 0.3 * torch.randn(param.shape))
                elif name.endswith(("sinks", "position_bias")):
                    param.copy_(torch.randn(param.shape))
        self.rotary = DeepseekV4RotaryEmbedding(self.config)
        self.cache = DynamicCache(config=self.config)
        self.seen = 0

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        from transformers.masking_utils import create_sliding_window_causal_mask

        positions = torch.arange(self.seen, self.seen + x.shape[1])[None].expand(x.shape[0], -1)
        mask = create_sliding_window_causal_mask(
            config=self.config, inputs_embeds=x, attention_mask=None, past_key_values=self.cache, position_ids=positions
        )
        embeddings = {kind: self.rotary(x, positions, layer_type=kind) for kind in ("main", "compress")}
        out, weights = self.module(
            x, position_embeddings=embeddings, position_ids=positions, attention_mask=mask, past_key_values=self.cache
        )
        self.seen += x.shape[1]
        return out, weights


def v4_pair(kind: str, **overrides) -> tuple[CompressedAttention, V4Peer]:
    peer = V4Peer(kind, **overrides)
    ours = CompressedAttention(CompressedConfig.from_hf(peer.config.to_dict(), layer_idx=0)).eval()
    ours.load_state_dict(peer.module.state_dict(), strict=True)
    return ours, peer


@pytest.mark.slow
@pytest.mark.parametrize("kind", V4_KINDS)
def test_v4_state_dict_loads_strictly(kind):
    ours, peer = v4_pair(kind)
    result = CompressedAttention(ours.cfg).load_state_dict(peer.module.state_dict(), strict=True)
    assert (result.missing_keys, result.unexpected_keys) == ([], [])


@pytest.mark.slow
@pytest.mark.parametrize("kind", V4_KINDS)
def test_v4_prefill_longer_than_window_rate_and_topk_then_five_decode_steps_match_hf(kind):
    # 31 tokens: past the window (6), 7 CSA entries (> top-3) and 6 HCA ones, with tokens left waiting
    ours, peer = v4_pair(kind)
    x = randn(2, 36, 64)
    cache, diffs = ours.new_cache(2), []
    for start, end in ((0, 31), (31, 32), (32, 33), (33, 34), (34, 35), (35, 36)):
        diffs.append(max_diff(ours(x[:, start:end], cache=cache)[0], peer(x[:, start:end])[0]))
    assert max(diffs) <= TOL, diffs


V4_RANDOM = dict(
    num_attention_heads=[1, 2, 4],
    head_dim=[16, 32],
    q_lora_rank=[8, 20],
    partial_rotary_factor=[0.25, 0.5],
    o_groups=[1, 2],
    o_lora_rank=[4, 12],
    sliding_window=[2, 5, 9],
    index_n_heads=[2, 4],
    index_head_dim=[16, 24],
    index_topk=[1, 2, 5],
    csa_rate=[2, 3, 4],
    hca_rate=[3, 6, 8],
)


@pytest.mark.slow
@pytest.mark.parametrize("kind", V4_KINDS)
@pytest.mark.parametrize("seed", range(3))
def test_v4_random_small_configs_match_hf_over_prefill_and_five_steps(kind, seed):
    shape = random_shape(seed, V4_RANDOM)
    rates = {
        "compressed_sparse_attention": shape.pop("csa_rate"),
        "heavily_compressed_attention": shape.pop("hca_rate"),
    }
    ours, peer = v4_pair(kind, **shape, compress_rates=rates)
    x = randn(2, 32, 64)
    cache = ours.new_cache(2)
    diffs = [max_diff(ours(x[:, :27], cache=cache)[0], peer(x[:, :27])[0])]
    diffs += [max_diff(ours(x[:, t : t + 1], cache=cache)[0], peer(x[:, t : t + 1])[0]) for t in range(27, 32)]
    assert max(diffs) <= TOL, diffs


@pytest.mark.slow
@pytest.mark.parametrize("kind", V4_KINDS)
def test_v4_weights_match_hfs_over_window_and_entries(kind):
    ours, peer = v4_pair(kind)
    x = randn(1, 30, 64)
    cache = ours.new_cache(1)
    for start, end in ((0, 27), (27, 28), (28, 30)):
        weights, hf_weights = ours(x[:, start:end], cache=cache, return_weights=True)[1], peer(x[:, start:end])[1]
        assert weights is not None
        assert weights.shape == hf_weights.shape
        assert max_diff(weights, hf_weights) <= TOL


@pytest.mark.slow
@pytest.mark.parametrize("kind", V4_KINDS)
def test_v4_prompt_then_chunks_then_tokens_match_hf(kind):
    ours, peer = v4_pair(kind)
    x = randn(1, 30, 64)
    cache, diffs, start = ours.new_cache(1), [], 0
    for size in (3, 9, 1, 6, 1, 7, 1, 2):
        chunk = x[:, start : start + size]
        diffs.append(max_diff(ours(chunk, cache=cache)[0], peer(chunk)[0]))
        start += size
    assert max(diffs) <= TOL, diffs


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["csa", "hca"])
def test_v4_cache_holds_hfs_window_entries_and_waiting_tokens(kind):
    ours, peer = v4_pair(kind)
    x = randn(2, 23, 64)
    cache = ours.new_cache(2)
    ours(x, cache=cache)
    peer(x)
    layer = peer.cache.layers[0]
    assert max_diff(cache.window, layer.keys) <= TOL
    for name, state in cache.states.items():
        assert max_diff(state.entries[:, 0], layer.compressed_kv[name]) <= TOL
        assert max_diff(state.waiting_kv, layer.buffer_kv[name]) <= TOL
        assert max_diff(state.waiting_gate, layer.buffer_gate[name]) <= TOL


# --- V4: cache, reading, config ----------------------------------------------------------------------------------------


def v4_bytes(kind: str, tokens: int, batch: int, element_bytes: int) -> int:
    """Held after tokens tokens, by hand: the last 5 window keys of width 32; per compressor its entries, the tokens
    of the unfinished window (projection and gate logits; two halves each for CSA) and for CSA the last finished
    window's first half (4 tokens, projection and gate). The CSA indexer does the same at width 16."""
    numbers = min(tokens, 5) * 32
    if kind == "hca":
        numbers += (tokens // 5) * 32 + (tokens % 5) * (32 + 32)
    if kind == "csa":
        for width in (32, 16):
            numbers += (tokens // 4) * width + (tokens % 4) * (2 * width + 2 * width)
            numbers += 4 * width * 2 if tokens >= 4 else 0
    return numbers * batch * element_bytes


def v4_read_bytes(kind: str, tokens: int, batch: int, element_bytes: int) -> int:
    """Read by the last query: up to 6 window keys; HCA every entry; CSA all entries while there are at most 3,
    else the indexer's keys (width 16) and the 3 entries it chose."""
    numbers = min(tokens, 6) * 32
    entries = tokens // (5 if kind == "hca" else 4)
    if kind == "hca" or (kind == "csa" and entries <= 3):
        numbers += entries * 32
    elif kind == "csa":
        numbers += entries * 16 + 3 * 32
    return numbers * batch * element_bytes


@pytest.mark.parametrize("kind", V4_KINDS)
@pytest.mark.parametrize("tokens", [0, 1, 3, 4, 5, 6, 7, 13, 100, 1 << 20])
def test_v4_cache_after_holds_the_formulas_bytes_on_the_meta_device(kind, tokens):
    layer = CompressedAttention(CompressedConfig.from_hf(V4_HF, V4_KINDS[kind]), device="meta", dtype=torch.bfloat16)
    cache = layer.cache_after(tokens, batch_size=3)
    assert cache.window.device.type == "meta"
    assert cache.nbytes == v4_bytes(kind, tokens, 3, 2)
    assert cache.read_nbytes == v4_read_bytes(kind, tokens, 3, 2)
    assert cache.seq_len == tokens


@pytest.mark.parametrize("kind", V4_KINDS)
def test_v4_real_cache_holds_and_reads_the_formulas_bytes_as_it_decodes(kind):
    layer = CompressedAttention(CompressedConfig.from_hf(V4_HF, V4_KINDS[kind]))
    layer.init_from_seed(0)
    cache = layer.new_cache(2)
    layer(randn(2, 9, 64), cache=cache)
    for tokens in range(10, 24):
        layer(randn(2, 1, 64), cache=cache)
        assert (cache.nbytes, cache.read_nbytes) == (v4_bytes(kind, tokens, 2, 4), v4_read_bytes(kind, tokens, 2, 4))


@pytest.mark.parametrize("kind", V4_KINDS)
def test_v4_cache_bytes_formula_is_the_independent_one(kind):
    from attn_core.compressed import cache_bytes_formula

    cfg = CompressedConfig.from_hf(V4_HF, V4_KINDS[kind])
    for tokens in (0, 2, 4, 9, 4099, 1 << 20):
        assert cache_bytes_formula(cfg, tokens, 2, 2) == v4_bytes(kind, tokens, 2, 2)


def test_v4_same_seed_same_weights():
    cfg = CompressedConfig.from_hf(V4_HF, V4_KINDS["csa"])
    first, second = CompressedAttention(cfg), CompressedAttention(cfg)
    first.init_from_seed(3)
    second.init_from_seed(3)
    for (name, a), b in zip(first.state_dict().items(), second.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    assert not torch.equal(first.q_a_proj.weight, CompressedAttention(cfg).q_a_proj.weight)


def test_v4_published_style_config_reads_compress_ratios_and_legacy_keys():
    # DeepSeek-V4's config.json ships per-layer compress_ratios, compress_rate_*, qk_rope_head_dim and rope_scaling
    published = {k: v for k, v in V4_HF.items() if k not in ("layer_types", "compress_rates", "partial_rotary_factor")}
    yarn = {"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536}
    published |= dict(compress_ratios=[0, 4, 128], compress_rate_hca=128, qk_rope_head_dim=8, rope_scaling=yarn)
    configs = [CompressedConfig.from_hf(published, i) for i in range(3)]
    assert [(c.kind, c.compress_rate, c.qk_rope_head_dim) for c in configs] == [
        ("sliding", 0, 8),
        ("csa", 4, 8),
        ("hca", 128, 8),
    ]
    # YaRN is for the compressed layers only, with cos/sin unscaled (attention_factor 1), as DeepseekV4Config sets it
    assert configs[0].rope_scaling.kind == "default"
    assert [(c.compress_rope_scaling.kind, c.compress_rope_scaling.attention_factor) for c in configs[1:]] == [
        ("yarn", 1.0),
        ("yarn", 1.0),
    ]


V4_YARN = {"rope_type": "yarn", "factor": 16, "original_max_position_embeddings": 64, "beta_fast": 32, "beta_slow": 1}


@pytest.mark.slow
@pytest.mark.parametrize("kind", V4_KINDS)
def test_v4_with_yarn_matches_hf_over_prefill_and_five_steps(kind):
    ours, peer = v4_pair(kind, rope_parameters=V4_YARN, max_position_embeddings=1024)
    assert ours.cfg.compress_rope_scaling.kind == "yarn"
    x = randn(2, 36, 64)
    cache = ours.new_cache(2)
    diffs = [max_diff(ours(x[:, :31], cache=cache)[0], peer(x[:, :31])[0])]
    diffs += [max_diff(ours(x[:, t : t + 1], cache=cache)[0], peer(x[:, t : t + 1])[0]) for t in range(31, 36)]
    assert max(diffs) <= TOL, diffs


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sliding_window", 0),
        ("o_groups", 3),  # does not divide 4 heads x 32
        ("index_topk", -2),
        ("head_dim", None),
        ("partial_rotary_factor", 2.0),  # more rotary channels than a head has: qk_rope_head_dim
        ("layer_types", ["sliding_attention", "full_attention", "x"]),
        ("compress_rates", {"compressed_sparse_attention": 0}),
    ],
)
def test_v4_bad_config_raises_value_error_naming_the_field(field, value):
    name = "qk_rope_head_dim" if field == "partial_rotary_factor" else field
    with pytest.raises(ValueError, match=name):
        CompressedConfig.from_hf(V4_HF | {field: value}, layer_idx=1)


def test_v4_cache_after_refuses_negative_tokens():
    layer = CompressedAttention(CompressedConfig.from_hf(V4_HF, 1), device="meta")
    with pytest.raises(ValueError, match="tokens"):
        layer.cache_after(-5)
