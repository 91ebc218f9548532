"""GLM-5's sparse attention against HF transformers' GlmMoeDsaAttention: a full layer (its own indexer, interleaved
rotary pairs) and the shared layers after it, which reuse its top-k, driven as GlmMoeDsaModel drives them (one
DynamicCache, its causal mask, prev_topk_indices handed from layer to layer).

Fast tests check the caches' bytes against formulas written here, describe_model's reading of indexer_types, and bad
configs.
"""

from __future__ import annotations

import pytest
import torch

from attn_core import describe_model
from attn_core.dsa import DeepSeekSparseAttention, DSAConfig
from attn_core.glm_dsa import SharedTopKAttention, SharedTopKConfig, indexer_types, read_glm_moe_dsa
from attn_core.hf import build_layer

from .examples import randn

TOL = 2e-5

GLM_HF = dict(  # a small GLM-5: top-6 of the cached tokens, 8 indexer heads of 16; layer 0 full, 1-2 shared, 3 full
    model_type="glm_moe_dsa",
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
    num_hidden_layers=4,
    indexer_types=["full", "shared", "shared", "full"],
    max_position_embeddings=4096,
)


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


class GlmPeer:
    """HF's layers 0 (full) and 1 (shared) with the mask, positions, cache and top-k GlmMoeDsaModel gives them."""

    def __init__(self, **overrides):
        from transformers import DynamicCache, GlmMoeDsaConfig
        from transformers.models.glm_moe_dsa.modeling_glm_moe_dsa import (
            GlmMoeDsaAttention,
            GlmMoeDsaRotaryEmbedding,
        )

        fields = {k: v for k, v in (GLM_HF | overrides).items() if k != "model_type"}
        fields.setdefault("rope_parameters", {"rope_type": "default", "rope_theta": 10000.0})
        self.config = GlmMoeDsaConfig(**fields)
        self.config._attn_implementation = "eager"
        torch.manual_seed(0)
        self.full = GlmMoeDsaAttention(self.config, layer_idx=0).eval()
        self.shared = GlmMoeDsaAttention(self.config, layer_idx=1).eval()
        for module in (self.full, self.shared):  # norms away from their init, so one that failed to load would show
            for name, param in module.named_parameters():
                if "norm" in name:
                    param.copy_((1.0 if name.endswith("weight") else 0.0) + 0.3 * torch.randn(param.shape))
        self.rotary = GlmMoeDsaRotaryEmbedding(self.config)
        self.cache = DynamicCache(config=self.config)
        self.seen = 0

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        from transformers.masking_utils import create_causal_mask

        positions = torch.arange(self.seen, self.seen + x.shape[1])[None].expand(x.shape[0], -1)
        mask = create_causal_mask(
            config=self.config,
            inputs_embeds=x,
            attention_mask=None,
            past_key_values=self.cache,
            position_ids=positions,
            allow_is_causal_skip=False,
        )
        kwargs = dict(
            position_embeddings=self.rotary(x, positions),
            attention_mask=mask,
            past_key_values=self.cache,
            position_ids=positions,
        )
        full_out, _, topk = self.full(x, **kwargs)
        shared_out, _, _ = self.shared(x, prev_topk_indices=topk, **kwargs)
        self.seen += x.shape[1]
        return full_out, shared_out


def glm_pair(**overrides) -> tuple[DeepSeekSparseAttention, SharedTopKAttention, GlmPeer]:
    peer = GlmPeer(**overrides)
    hf = {**peer.config.to_dict(), "model_type": "glm_moe_dsa"}
    full, shared = build_layer(hf, 0).eval(), build_layer(hf, 1).eval()
    assert isinstance(full, DeepSeekSparseAttention)
    assert isinstance(shared, SharedTopKAttention)
    full.load_state_dict(peer.full.state_dict(), strict=True)
    shared.load_state_dict(peer.shared.state_dict(), strict=True)
    return full, shared, peer


def run_pieces(pieces: tuple[int, ...], batch: int = 2, **overrides) -> list[float]:
    full, shared, peer = glm_pair(**overrides)
    x = randn(batch, sum(pieces), 64)
    full_cache, shared_cache = full.new_cache(batch), shared.new_cache(batch)
    diffs, start = [], 0
    for size in pieces:
        piece = x[:, start : start + size]
        ours_full = full(piece, cache=full_cache)[0]
        ours_shared = shared(piece, cache=shared_cache, topk_from=full_cache)[0]
        theirs_full, theirs_shared = peer(piece)
        diffs += [max_diff(ours_full, theirs_full), max_diff(ours_shared, theirs_shared)]
        start += size
    return diffs


@pytest.mark.slow
def test_glm_state_dicts_load_strictly_and_a_shared_layer_has_no_indexer():
    full, shared, peer = glm_pair()
    assert not any(name.startswith("indexer.") for name in peer.shared.state_dict())
    assert any(name.startswith("indexer.") for name in full.state_dict())
    result = SharedTopKAttention(shared.shared_cfg).load_state_dict(peer.shared.state_dict(), strict=True)
    assert (result.missing_keys, result.unexpected_keys) == ([], [])


@pytest.mark.slow
def test_glm_full_and_shared_layers_match_hf_over_a_prefill_past_top_k_and_five_steps():
    diffs = run_pieces((20, 1, 1, 1, 1, 1))
    assert max(diffs) <= TOL, diffs


@pytest.mark.slow
def test_glm_prompt_shorter_than_top_k_then_chunks_and_steps_match_hf():
    diffs = run_pieces((4, 7, 1, 5, 1, 1), batch=1)
    assert max(diffs) <= TOL, diffs


@pytest.mark.slow
def test_glm_wider_indexer_with_bias_and_yarn_matches_hf():
    yarn = {
        "rope_type": "yarn",
        "rope_theta": 10000.0,
        "factor": 4.0,
        "original_max_position_embeddings": 1024,
        "mscale_all_dim": 1.0,
        "mscale": 1.0,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
    }
    diffs = run_pieces(
        (15, 1, 1, 1, 1, 1), attention_bias=True, index_head_dim=24, index_topk=9, index_n_heads=4, rope_parameters=yarn
    )
    assert max(diffs) <= TOL, diffs


@pytest.mark.slow
def test_glm_shared_layer_reads_exactly_the_full_layers_picks():
    full, shared, _peer = glm_pair()
    x = randn(1, 17, 64)
    full_cache, shared_cache = full.new_cache(1), shared.new_cache(1)
    full(x[:, :16], cache=full_cache)
    shared(x[:, :16], cache=shared_cache, topk_from=full_cache)
    full_weights = full(x[:, 16:], cache=full_cache, return_weights=True)[1]
    shared_weights = shared(x[:, 16:], cache=shared_cache, topk_from=full_cache, return_weights=True)[1]
    assert full_weights is not None
    assert shared_weights is not None
    assert torch.equal(full_weights > 0, shared_weights > 0)
    assert int((shared_weights[0, 0, 0] > 0).sum()) == 6


# --- caches, describe_model, bad input --------------------------------------------------------------------------------


def shared_bytes(tokens: int, batch: int, element_bytes: int) -> int:
    """A shared layer holds MLA's latent alone (24 + 8 per token) and reads the full layer's min(T, 6) picks."""
    return batch * tokens * (24 + 8) * element_bytes


def shared_read_bytes(tokens: int, batch: int, element_bytes: int) -> int:
    return batch * min(tokens, 6) * (24 + 8) * element_bytes


def full_bytes(tokens: int, batch: int, element_bytes: int) -> int:
    """A full layer adds one indexer key of 16 per token."""
    return batch * tokens * (24 + 8 + 16) * element_bytes


@pytest.mark.parametrize("tokens", [0, 1, 6, 7, 4096, 1 << 20])
def test_describe_model_counts_shared_layers_without_indexer_keys(tokens):
    kinds = {k.kind: k for k in describe_model(GLM_HF).kinds(tokens=tokens, batch=2, dtype="bfloat16")}
    assert (kinds["sparse"].count, kinds["shared_sparse"].count) == (2, 2)
    assert kinds["shared_sparse"].nbytes == 2 * shared_bytes(tokens, 2, 2)
    assert kinds["shared_sparse"].read_nbytes == 2 * shared_read_bytes(tokens, 2, 2)
    assert kinds["sparse"].nbytes == 2 * full_bytes(tokens, 2, 2)
    assert describe_model(GLM_HF).formula_bytes(tokens=tokens, batch=2) == describe_model(GLM_HF).cache_bytes(
        tokens=tokens, batch=2
    )


def test_describe_model_says_which_full_layer_each_shared_one_reads():
    hf = GLM_HF | dict(num_hidden_layers=6, indexer_types=["full", "shared", "full", "full", "shared", "shared"])
    model = describe_model(hf)
    assert model.layer_kinds == ["sparse", "shared_sparse", "sparse", "sparse", "shared_sparse", "shared_sparse"]
    assert model.reads_from == {1: 0, 4: 3, 5: 3}


@pytest.mark.parametrize("tokens", [3, 6, 11])
def test_real_shared_cache_holds_and_reads_the_formulas_bytes(tokens):
    full, shared = build_layer(GLM_HF, 0, seed=1), build_layer(GLM_HF, 2, seed=1)
    full_cache, shared_cache = full.new_cache(2), shared.new_cache(2)
    x = randn(2, tokens + 1, 64)
    full(x[:, :tokens], cache=full_cache)
    shared(x[:, :tokens], cache=shared_cache, topk_from=full_cache)
    assert (shared_cache.nbytes, shared_cache.read_nbytes) == (
        shared_bytes(tokens, 2, 4),
        shared_read_bytes(tokens, 2, 4),
    )
    full(x[:, tokens:], cache=full_cache)
    shared(x[:, tokens:], cache=shared_cache, topk_from=full_cache)
    assert shared_cache.nbytes == shared_bytes(tokens + 1, 2, 4)
    assert shared_cache.read_nbytes == shared_read_bytes(tokens + 1, 2, 4)
    assert shared_cache.shapes() == {"c_kv": (2, 1, tokens + 1, 24), "k_rope": (2, 1, tokens + 1, 8)}


def test_same_seed_gives_a_shared_layer_the_full_layers_mla_weights():
    full, shared = build_layer(GLM_HF, 0, seed=3), build_layer(GLM_HF, 1, seed=3)
    for name, value in shared.state_dict().items():
        assert torch.equal(full.state_dict()[name], value), name


def test_glm_reader_defaults_are_glm5s_and_the_indexer_rotates_interleaved():
    glm5 = {"model_type": "glm_moe_dsa", "hidden_size": 6144, "num_attention_heads": 64, "num_hidden_layers": 78}
    kind, config = read_glm_moe_dsa(glm5, 5)
    assert kind == "sparse"
    assert isinstance(config, DSAConfig)
    assert (config.index_n_heads, config.index_head_dim, config.index_topk) == (32, 128, 2048)
    assert (config.kv_lora_rank, config.qk_rope_head_dim, config.v_head_dim) == (512, 64, 256)
    assert config.index_rope_interleave


@pytest.mark.parametrize(
    "fields",
    [{}, {"index_topk_freq": 2}, {"index_topk_freq": 3, "index_skip_topk_offset": 1}, {"index_topk_pattern": "FSSFS"}],
)
def test_indexer_types_default_as_transformers_config_fills_them(fields):
    transformers = pytest.importorskip("transformers")
    expected = transformers.GlmMoeDsaConfig(num_hidden_layers=5, **fields).indexer_types
    assert indexer_types({"num_hidden_layers": 5, **fields}) == expected


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        (dict(indexer_types=["full", "shared"]), "indexer_types"),  # 2 entries for 4 layers
        (dict(indexer_types=["full", "shared", "sparse", "full"]), "indexer_types"),
        (dict(indexer_types=["shared", "full", "full", "full"]), "indexer_types"),  # no full layer before layer 0
        (dict(indexer_types="full"), "indexer_types"),
        (dict(indexer_types=None, index_topk_pattern="FSXF"), "index_topk_pattern"),
        (dict(index_topk=0), "index_topk"),
        (dict(index_head_dim=4), "index_head_dim"),  # narrower than qk_rope_head_dim
    ],
)
def test_bad_glm_config_raises_value_error_naming_the_field(overrides, field):
    with pytest.raises(ValueError, match=field):
        describe_model(GLM_HF | overrides)


def test_shared_layer_without_the_full_layers_cache_says_so():
    full, shared = build_layer(GLM_HF, 0, seed=0), build_layer(GLM_HF, 1, seed=0)
    x = randn(1, 9, 64)
    with pytest.raises(ValueError, match="topk_from"):
        shared(x, cache=shared.new_cache(1))
    with pytest.raises(ValueError, match="full layer"):  # the full layer has not seen these tokens
        shared(x, cache=shared.new_cache(1), topk_from=full.new_cache(1))


def test_shared_config_refuses_a_negative_source():
    config = read_glm_moe_dsa(GLM_HF, 0)[1]
    assert isinstance(config, DSAConfig)
    with pytest.raises(ValueError, match="reads_layer"):
        SharedTopKConfig(config, reads_layer=-1)


def test_glm_config_class_layers_read_as_full_and_shared_cached_layers():
    from attn_core import CachedLayer, KVCache

    transformers = pytest.importorskip("transformers")
    hf_config = transformers.GlmMoeDsaConfig(num_hidden_layers=6, index_topk_freq=2)
    model = describe_model(hf_config.to_dict())
    kinds = {"full": "sparse", "shared": "shared_sparse"}
    assert model.layer_kinds == [kinds[t] for t in hf_config.indexer_types]
    for kind in ("sparse", "shared_sparse"):
        layer = build_layer(hf_config.to_dict(), model.layer_kinds.index(kind), device="meta")
        assert isinstance(layer, CachedLayer)
        cache = layer.cache_after(300)
        assert isinstance(cache, KVCache)
        assert cache.seq_len == 300


def test_published_glm5_holds_latent_and_indexer_keys_on_all_78_layers():
    from attn_core import PUBLISHED

    model = describe_model(PUBLISHED["GLM-5"])
    assert model.layer_kinds == ["sparse"] * 78  # indexer_types unconfirmed: transformers' schedule, all full
    assert model.reads_from == {}
    assert model.cache_bytes(tokens=131072) == 78 * (512 + 64 + 128) * 131072 * 2
    # a step reads every indexer key and the 2048 picked latents
    assert model.read_bytes(tokens=131072) == 78 * (128 * 131072 + (512 + 64) * 2048) * 2
