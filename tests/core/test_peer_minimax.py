"""MiniMax-Text-01 / M1 against HF transformers' own modules: MiniMaxLightningAttention (the decayed linear state)
and MiniMaxAttention (the softmax layer after every seven), same weights (HF's state_dict, buffers included, loaded
strictly), each driven with the MiniMaxCache its model uses: a prompt over several lightning blocks, then five
decoding steps (and a prompt in pieces, which HF's module continues token by token).

Fast tests check the state's bytes against a formula written here (the same at 4k tokens as at 128k), the reading of
layer_types and attn_type_list, and bad configs.
"""

from __future__ import annotations

import pytest
import torch

from attn_core import describe_model
from attn_core.hf import LayerShape, build_layer, read_layer
from attn_core.lightning import LightningAttention, LightningConfig, minimax_layer_types

from .examples import randn

LINEAR_TOL = 1e-4
SOFTMAX_TOL = 2e-5

MINIMAX_HF = dict(  # a small MiniMax: 4 heads of 16, blocks of 16 tokens; layers full, linear, linear, full, linear
    model_type="minimax",
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    num_hidden_layers=5,
    block_size=16,
    layer_types=["full_attention", "linear_attention", "linear_attention", "full_attention", "linear_attention"],
    max_position_embeddings=4096,
)
PROMPT = 3 * 16 + 5  # three blocks and a partial one
STEPS = 5


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


class MiniMaxPeer:
    """One HF MiniMax layer with the MiniMaxCache, rotary embedding and causal mask its model gives it."""

    def __init__(self, layer_idx: int, **overrides):
        from transformers import MiniMaxConfig
        from transformers.models.minimax.modeling_minimax import (
            MiniMaxAttention,
            MiniMaxCache,
            MiniMaxLightningAttention,
            MiniMaxRotaryEmbedding,
        )

        fields = {k: v for k, v in (MINIMAX_HF | overrides).items() if k != "model_type"}
        self.config = MiniMaxConfig(**fields)
        self.config._attn_implementation = "eager"
        torch.manual_seed(0)
        self.linear = self.config.layer_types[layer_idx] == "linear_attention"
        self.module = (MiniMaxLightningAttention if self.linear else MiniMaxAttention)(self.config, layer_idx).eval()
        for name, param in self.module.named_parameters():  # the norm's scale away from 1, so a lost one would show
            if "norm" in name:
                param.copy_(1.0 + 0.3 * torch.randn(param.shape))
        self.rotary = MiniMaxRotaryEmbedding(self.config)
        self.cache = MiniMaxCache()
        self.seen = 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        from .test_peers_hf import additive_causal_mask

        positions = torch.arange(self.seen, self.seen + x.shape[1])[None]
        # a lightning layer takes no mask (its model passes None without padding); a softmax layer the causal one
        mask = None if self.linear else additive_causal_mask(x.shape[1], self.seen + x.shape[1])
        out = self.module(
            x, position_embeddings=self.rotary(x, positions), attention_mask=mask, past_key_values=self.cache
        )
        self.seen += x.shape[1]
        return out[0]


def minimax_pair(layer_idx: int, **overrides):
    peer = MiniMaxPeer(layer_idx, **overrides)
    ours = build_layer({**peer.config.to_dict(), "model_type": "minimax"}, layer_idx).eval()
    ours.load_state_dict(peer.module.state_dict(), strict=True)
    return ours, peer


PEERS = {  # name -> (layer, config overrides, tolerance)
    "lightning-layer-1": (1, {}, LINEAR_TOL),
    "lightning-last-layer": (4, {}, LINEAR_TOL),  # the slowest decay
    "lightning-8-heads-block-32": (2, dict(num_attention_heads=8, head_dim=8, block_size=32), LINEAR_TOL),
    "softmax-gqa": (0, {}, SOFTMAX_TOL),
    "softmax-mha-theta": (3, dict(num_key_value_heads=4, rope_parameters={"rope_type": "default", "rope_theta": 1e7}),
                          SOFTMAX_TOL),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", PEERS)
def test_minimax_layers_match_hf_over_a_prefill_and_five_steps(name):
    layer_idx, overrides, tol = PEERS[name]
    ours, peer = minimax_pair(layer_idx, **overrides)
    x = randn(2, PROMPT + STEPS, 64)
    cache = ours.new_cache(2)
    diffs = [max_diff(ours(x[:, :PROMPT], cache=cache)[0], peer(x[:, :PROMPT]))]
    for t in range(PROMPT, PROMPT + STEPS):
        diffs.append(max_diff(ours(x[:, t : t + 1], cache=cache)[0], peer(x[:, t : t + 1])))
    assert max(diffs) <= tol, diffs


@pytest.mark.slow
@pytest.mark.parametrize("name", PEERS)
def test_minimax_prompt_in_pieces_then_steps_match_hf(name):
    layer_idx, overrides, tol = PEERS[name]
    ours, peer = minimax_pair(layer_idx, **overrides)
    x = randn(1, 40, 64, seed=1)
    cache, diffs, start = ours.new_cache(1), [], 0
    for size in (21, 13, 1, 4, 1):
        piece = x[:, start : start + size]
        diffs.append(max_diff(ours(piece, cache=cache)[0], peer(piece)))
        start += size
    assert max(diffs) <= tol, diffs


@pytest.mark.slow
def test_lightning_state_is_the_one_hf_caches():
    ours, peer = minimax_pair(1)
    x = randn(2, PROMPT, 64)
    cache = ours.new_cache(2)
    ours(x, cache=cache)
    peer(x)
    assert cache.state is not None
    assert max_diff(cache.state, peer.cache.linear_cache[1]) <= LINEAR_TOL


@pytest.mark.slow
def test_lightning_without_a_cache_matches_hfs_prefill():
    ours, peer = minimax_pair(2)
    x = randn(2, PROMPT, 64, seed=2)
    assert max_diff(ours(x)[0], peer(x)) <= LINEAR_TOL


# --- the state, describe_model, config reading, bad input -------------------------------------------------------------


def state_bytes(batch: int, element_bytes: int, heads: int = 4, head_dim: int = 16) -> int:
    """A lightning layer holds one [head_dim, head_dim] state per head, whatever the length."""
    return batch * heads * head_dim * head_dim * element_bytes


def gqa_bytes(tokens: int, batch: int, element_bytes: int) -> int:
    """A softmax layer: keys and values of 2 KV heads of 16 per token."""
    return 2 * 2 * 16 * tokens * batch * element_bytes


@pytest.mark.parametrize("tokens", [4096, 131072])
def test_describe_model_lightning_state_holds_the_same_bytes_at_4k_and_128k(tokens):
    kinds = {k.kind: k for k in describe_model(MINIMAX_HF).kinds(tokens=tokens, batch=3, dtype="bfloat16")}
    assert (kinds["linear"].count, kinds["full"].count) == (3, 2)
    assert kinds["linear"].nbytes == 3 * state_bytes(3, 2)
    assert kinds["linear"].read_nbytes == 3 * state_bytes(3, 2)
    assert kinds["full"].nbytes == 2 * gqa_bytes(tokens, 3, 2)


def test_describe_model_state_is_in_the_models_dtype_as_hf_keeps_it():
    for dtype, size in (("float32", 4), ("bfloat16", 2)):
        model = describe_model(MINIMAX_HF)
        linear = next(k for k in model.kinds(tokens=100, dtype=dtype) if k.kind == "linear")
        assert linear.nbytes == 3 * state_bytes(1, size)
        assert model.formula_bytes(tokens=100, dtype=dtype) == model.cache_bytes(tokens=100, dtype=dtype)


def test_real_state_cache_holds_the_formulas_bytes_and_no_more_as_tokens_arrive():
    layer = build_layer(MINIMAX_HF, 1, seed=0)
    cache = layer.new_cache(2)
    assert cache.nbytes == 0
    layer(randn(2, 30, 64), cache=cache)
    held = cache.nbytes
    for _ in range(3):
        layer(randn(2, 1, 64), cache=cache)
    assert held == cache.nbytes == cache.read_nbytes == state_bytes(2, 4)
    assert cache.seq_len == 33
    assert cache.shapes() == {"state": (2, 4, 16, 16)}


def test_lightning_state_is_the_decayed_sum_of_key_value_products():
    # S_T = sum_t exp(-s (T - t)) k_t^T v_t per head, written out here from the layer's own q, k, v
    layer = build_layer(MINIMAX_HF, 2, seed=4)
    assert isinstance(layer, LightningAttention)
    x = randn(1, 37, 64)
    cache = layer.new_cache(1)
    layer(x, cache=cache)
    qkv = torch.nn.functional.silu(layer.qkv_proj(x)).view(1, 37, 4, 48).double()
    k, v = qkv[..., 16:32].transpose(1, 2), qkv[..., 32:].transpose(1, 2)  # [1, H, T, D]
    slope = layer.slope_rate.double()  # [H, 1, 1]
    age = torch.arange(36, -1, -1, dtype=torch.float64)  # T - 1 - t
    weights = torch.exp(-slope * age[None, :, None])  # [H, T, 1]
    expected = (k * weights).transpose(-1, -2) @ v
    assert cache.state is not None
    assert max_diff(cache.state.double(), expected) <= 1e-5


def test_slopes_follow_minimax_formula():
    config = LightningConfig.from_hf(MINIMAX_HF, 2)
    layer = LightningAttention(config)
    base = 2 ** (-8 / 4)
    factor = 1 - 2 / (5 - 1 + 1e-5) + 1e-5
    expected = torch.tensor([base**h * factor for h in range(1, 5)])
    assert torch.allclose(layer.slope_rate.flatten().double(), expected.double(), rtol=1e-6)


def test_attn_type_list_reads_as_layer_types():
    # MiniMax's own config.json: 0 lightning, 1 softmax
    hf = {k: v for k, v in MINIMAX_HF.items() if k != "layer_types"} | {
        "model_type": "minimax_m1",
        "attn_type_list": [1, 0, 0, 1, 0],
    }
    assert minimax_layer_types(hf) == MINIMAX_HF["layer_types"]
    assert describe_model(hf).layer_kinds == ["full", "linear", "linear", "full", "linear"]
    assert isinstance(read_layer(hf, 0)[1], LayerShape)


def test_layer_types_default_as_minimax_config_fills_them():
    transformers = pytest.importorskip("transformers")
    hf = {k: v for k, v in MINIMAX_HF.items() if k != "layer_types"}
    assert list(minimax_layer_types(hf)) == transformers.MiniMaxConfig(num_hidden_layers=5).layer_types


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        (dict(layer_types=None, attn_type_list=[1, 0, 0]), "attn_type_list"),  # 3 entries for 5 layers
        (dict(layer_types=None, attn_type_list=[1, 0, 2, 1, 0]), "attn_type_list"),
        (dict(layer_types=None, attn_type_list=[True, 0, 0, 1, 0]), "attn_type_list"),
        (dict(layer_types=None, attn_type_list="10010"), "attn_type_list"),
        (dict(layer_types=["full_attention", "lightning"] + ["full_attention"] * 3), "layer_types"),
        (dict(layer_types=["full_attention"] * 4), "layer_types"),
        (dict(block_size=0), "block_size"),
        (dict(hidden_act="swish"), "hidden_act"),
        (dict(head_dim=-1), "head_dim"),
    ],
)
def test_bad_minimax_config_raises_value_error_naming_the_field(overrides, field):
    with pytest.raises(ValueError, match=field):
        describe_model(MINIMAX_HF | overrides)


def test_minimax_config_class_defaults_read_as_lightning_and_softmax_cached_layers():
    from attn_core import CachedLayer, KVCache

    transformers = pytest.importorskip("transformers")
    hf_config = transformers.MiniMaxConfig()
    model = describe_model(hf_config.to_dict())
    kinds = {"linear_attention": "linear", "full_attention": "full"}
    assert model.layer_kinds == [kinds[t] for t in hf_config.layer_types]
    for kind in ("linear", "full"):
        layer = build_layer(hf_config.to_dict(), model.layer_kinds.index(kind), device="meta")
        assert isinstance(layer, CachedLayer)
        cache = layer.cache_after(300)
        assert isinstance(cache, KVCache)
        assert cache.seq_len == 300


# --- the published MiniMax models -------------------------------------------------------------------------------------


@pytest.mark.parametrize("tokens", [4096, 131072])
def test_published_minimax_m1_holds_70_fixed_states_beside_10_growing_gqa_caches(tokens):
    from attn_core import PUBLISHED

    kinds = {k.kind: k for k in describe_model(PUBLISHED["MiniMax-M1"]).kinds(tokens=tokens, dtype="bfloat16")}
    assert kinds["linear"].count == 70
    assert kinds["linear"].nbytes == 70 * 64 * 128 * 128 * 2  # 140 MiB at any length
    assert kinds["full"].count == 10
    assert kinds["full"].nbytes == 10 * 2 * 8 * 128 * tokens * 2


def test_published_minimax_m2_is_full_gqa_on_all_62_layers():
    from attn_core import PRESETS, PUBLISHED, STATED_REASONS, kv_cache_bytes

    model = describe_model(PUBLISHED["MiniMax-M2"])
    assert model.layer_kinds == ["full"] * 62
    assert model.cache_bytes(tokens=131072) == 62 * 2 * 8 * 128 * 131072 * 2  # 31 GiB
    preset = PRESETS["MiniMax-M2"]
    per_layer = kv_cache_bytes(preset.attention, seq_len=131072, batch=1, dtype=torch.bfloat16)
    assert preset.n_layers * per_layer == model.cache_bytes(tokens=131072)
    assert STATED_REASONS["MiniMax-M2"].source


def test_minimax_m2_config_with_a_lightning_layer_names_attn_type_list():
    from attn_core import PUBLISHED

    with pytest.raises(ValueError, match="attn_type_list"):
        describe_model(PUBLISHED["MiniMax-M2"] | {"attn_type_list": [0] + [1] * 61})


def test_meta_layers_hold_decay_buffers_of_the_real_shapes_without_computing_them():
    config = LightningConfig.from_hf(MINIMAX_HF, 1)
    real, meta = LightningAttention(config), LightningAttention(config, device="meta")
    assert {n: b.shape for n, b in meta.named_buffers()} == {n: b.shape for n, b in real.named_buffers()}
    assert all(b.is_meta for b in meta.buffers())
