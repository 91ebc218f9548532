"""DeepSeek after MLA: V3.2's sparse attention (DSA) against HF transformers' DeepseekV32Attention, with its cache
(DynamicCache -> DynamicIndexedLayer), its causal mask (masking_utils.create_causal_mask) and its rotary embedding,
driven as DeepseekV32Model drives them.

Fast tests check the caches' bytes against formulas written here, independently of attn_core, and bad configs.
"""

from __future__ import annotations

import pytest
import torch

from attn_core import build_attention
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
        self.config = DeepseekV32Config(**fields, rope_parameters={"rope_type": "default", "rope_theta": theta})
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
    """Read by the last query: every indexer key once more than top-6 are cached, then the 6 latents it chose."""
    if tokens <= 6:
        return batch * tokens * (24 + 8) * element_bytes
    return batch * (tokens * 16 + 6 * (24 + 8)) * element_bytes


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


def test_dsa_yarn_config_sizes_caches_but_refuses_to_compute():
    yarn = {
        "type": "yarn",
        "factor": 40,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096,
    }
    cfg = dsa_config(rope_scaling=yarn)
    assert cfg.rope_type == "yarn"
    assert DeepSeekSparseAttention(cfg, device="meta").cache_after(100).nbytes == dsa_bytes(100, 1, 4)
    layer = DeepSeekSparseAttention(cfg)
    with pytest.raises(ValueError, match="rope_scaling"):
        layer(randn(1, 3, 64))
