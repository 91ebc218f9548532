"""Peers: Gemma 3n's and Gemma 4's attention layers, built by attn_core.hf.build_layer from a small config and loaded
with HF's own module's weights (strict), against that module (Gemma3nTextAttention, Gemma4TextAttention): a prefill
longer than the window, then five cached decoding steps, with HF's DynamicCache and its shared_kv_states.

A pair is a layer that keeps a cache (HF's "store") and a later layer that reads it ("reuse"), driven as HF's model
drives them: the producer first, then the consumer with the producer's cache (ours) or shared_kv_states (HF's), both
under the additive mask HF's model builds for their layer type over the keys the producer's cache returns.
"""

from __future__ import annotations

import random

import pytest
import torch

pytest.importorskip("transformers")
from transformers import DynamicCache, Gemma3nTextConfig, Gemma4TextConfig
from transformers.models.gemma3n.modeling_gemma3n import Gemma3nRotaryEmbedding, Gemma3nTextAttention
from transformers.models.gemma4.modeling_gemma4 import Gemma4TextAttention, Gemma4TextRotaryEmbedding

from attn_core.hf import build_layer, describe_model, read_layer
from attn_core.kv_sharing import KeyValueCache

from .examples import randn

pytestmark = pytest.mark.slow

TOL = 2e-5
WINDOW = 5
PREFILL = 13  # longer than the window: the prefill's mask cuts, and the sliding cache evicts
DECODE_STEPS = 5
SMALL = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, sliding_window=WINDOW)
# layers 0-3 keep caches (2 the last sliding one, 3 the last full one); 4 reads 2's, 5 reads 3's
TYPES = ["sliding_attention", "full_attention"] * 3
SHARED = dict(num_hidden_layers=6, layer_types=TYPES, num_kv_shared_layers=2)


def gemma3n_config(**extra) -> Gemma3nTextConfig:
    config = Gemma3nTextConfig(
        **SMALL,
        **SHARED,
        attention_bias=True,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1000000.0},
        },
        **extra,
    )
    config._attn_implementation = "eager"
    return config


def gemma4_config(*, k_eq_v: bool) -> Gemma4TextConfig:
    config = Gemma4TextConfig(
        **SMALL,
        **SHARED,
        global_head_dim=32,
        num_global_key_value_heads=1,
        attention_k_eq_v=k_eq_v,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0},
        },
    )
    config._attn_implementation = "eager"
    return config


class Peer:
    """HF's modules of a producer and a consumer layer, their rotary embedding, one DynamicCache and the
    shared_kv_states dict their model passes from layer to layer."""

    def __init__(self, attention_class, rotary, config, producer: int, consumer: int):
        self.config, self.rotary, self.producer, self.consumer = config, rotary, producer, consumer
        self.layer_type = config.layer_types[producer]
        self.window = WINDOW if self.layer_type == "sliding_attention" else None
        self.modules = {i: attention_class(config, layer_idx=i).eval() for i in (producer, consumer)}
        self.cache = DynamicCache(config=config)
        self.shared: dict = {}
        self.seen = 0

    def mask(self, new: int) -> torch.Tensor:
        """[1, 1, L, S] additive over the keys the producer's cache returns: those it held, and the new ones."""
        layer = self.cache.layers[self.producer]
        held = layer.keys.shape[-2] if layer.is_initialized else 0
        queries = torch.arange(self.seen, self.seen + new)[:, None]
        keys = torch.arange(self.seen - held, self.seen + new)[None, :]
        allowed = keys <= queries
        if self.window is not None:
            allowed &= queries - keys < self.window
        return torch.zeros(allowed.shape).masked_fill(~allowed, torch.finfo(torch.float32).min)[None, None]

    def __call__(self, x: torch.Tensor, x_consumer: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, length, _ = x.shape
        positions = torch.arange(self.seen, self.seen + length)[None].expand(b, -1)
        rotary = self.rotary(x, positions, self.layer_type)
        mask = self.mask(length)
        common = dict(position_embeddings=rotary, attention_mask=mask, shared_kv_states=self.shared)
        out = self.modules[self.producer](x, past_key_values=self.cache, **common)[0]
        out_consumer = self.modules[self.consumer](x_consumer, past_key_values=self.cache, **common)[0]
        self.seen += length
        return out, out_consumer


@torch.no_grad()
def _perturb(module) -> None:
    """Norm scales and biases away from their initial values, so one that failed to load would show."""
    for name, param in module.named_parameters():
        if "norm" in name:
            param.copy_(1.0 + 0.3 * torch.randn(param.shape))
        elif name.endswith("bias"):
            param.copy_(0.5 * torch.randn(param.shape))


def _pair(peer: Peer):
    torch.manual_seed(peer.producer)
    ours = {}
    for i, module in peer.modules.items():
        _perturb(module)
        ours[i] = build_layer(peer.config.to_dict(), i).eval()
        ours[i].load_state_dict(module.state_dict(), strict=True)
    return ours[peer.producer], ours[peer.consumer], peer


def gemma3n(producer: int, consumer: int):
    config = gemma3n_config()
    return _pair(Peer(Gemma3nTextAttention, Gemma3nRotaryEmbedding(config), config, producer, consumer))


def gemma4(producer: int, consumer: int, *, k_eq_v: bool):
    config = gemma4_config(k_eq_v=k_eq_v)
    return _pair(Peer(Gemma4TextAttention, Gemma4TextRotaryEmbedding(config), config, producer, consumer))


PEERS = {
    "gemma3n-sliding-shared": lambda: gemma3n(2, 4),
    "gemma3n-full-shared": lambda: gemma3n(3, 5),
    "gemma4-sliding-shared": lambda: gemma4(2, 4, k_eq_v=True),
    "gemma4-global-k-eq-v-shared": lambda: gemma4(3, 5, k_eq_v=True),
    "gemma4-global-proportional-rope-shared": lambda: gemma4(3, 5, k_eq_v=False),
}


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


def max_diff(a, b) -> float:
    return (a - b).abs().max().item()


@pytest.mark.parametrize("peer", PEERS)
def test_producer_and_consumer_match_hf_over_a_prefill_and_five_cached_steps(peer):
    producer, consumer, theirs = PEERS[peer]()
    x = randn(2, PREFILL + DECODE_STEPS, 64)
    x_consumer = randn(2, PREFILL + DECODE_STEPS, 64, seed=3)
    cache = producer.new_cache(2)
    diffs = []
    for chunk in [slice(0, PREFILL)] + [slice(t, t + 1) for t in range(PREFILL, PREFILL + DECODE_STEPS)]:
        ours = producer(x[:, chunk], cache=cache)[0], consumer(x_consumer[:, chunk], cache=cache)[0]
        hf = theirs(x[:, chunk], x_consumer[:, chunk])
        diffs.append(max(max_diff(ours[0], hf[0]), max_diff(ours[1], hf[1])))
    assert max(diffs) <= TOL, diffs


@pytest.mark.parametrize("peer", PEERS)
def test_prefill_without_a_cache_matches_hf(peer):
    producer, _, theirs = PEERS[peer]()
    x = randn(2, PREFILL, 64, seed=1)
    assert max_diff(producer(x)[0], theirs(x, x)[0]) <= TOL


def _held(cache) -> tuple[int, list[torch.Tensor]]:
    tensors = [cache.v] if isinstance(cache, KeyValueCache) else [cache.k, cache.v]
    return cache.nbytes, [t.clone() for t in tensors]


@pytest.mark.parametrize("peer", PEERS)
def test_a_consumer_leaves_the_cache_it_reads_as_it_was(peer):
    producer, consumer, _ = PEERS[peer]()
    x = randn(1, PREFILL + 2, 64, seed=2)
    cache = producer.new_cache(1)
    for chunk in (slice(0, PREFILL), slice(PREFILL, PREFILL + 1), slice(PREFILL + 1, PREFILL + 2)):
        producer(x[:, chunk], cache=cache)
        nbytes, before = _held(cache)
        consumer(x[:, chunk], cache=cache)
        after_nbytes, after = _held(cache)
        assert after_nbytes == nbytes
        assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))


def test_a_k_eq_v_layer_caches_one_tensor_half_a_kv_cache():
    producer, _, theirs = PEERS["gemma4-global-k-eq-v-shared"]()
    x = randn(1, PREFILL, 64, seed=4)
    cache = producer.new_cache(1)
    producer(x, cache=cache)
    theirs(x, x)
    assert isinstance(cache, KeyValueCache)
    assert list(cache.shapes()) == ["kv"]
    hf_layer = theirs.cache.layers[theirs.producer]
    assert cache.nbytes * 2 == hf_layer.keys.nbytes + hf_layer.values.nbytes
    assert max_diff(cache.v, hf_layer.values) <= TOL  # what it holds is HF's value


def test_the_reader_names_each_consumers_source_as_hfs_kv_sharing_modes():
    config = gemma4_config(k_eq_v=True)
    model = describe_model(config.to_dict())
    assert config.kv_sharing_modes == [None, None, "store", "store", "reuse", "reuse"]
    assert model.kv_sources == [None, None, None, None, 2, 3]
    assert model.layer_kinds == ["sliding", "full", "sliding", "full", "shared", "shared"]
    assert read_layer(config.to_dict(), 3)[1].head_dim == config.get_text_config().per_layer_config[3].head_dim


def test_a_config_json_with_global_fields_reads_as_hfs_to_dict():
    """Gemma 4's config.json says global_head_dim and num_global_key_value_heads; transformers' to_dict() says
    per_layer_config instead: both read to the same layers."""
    config = gemma4_config(k_eq_v=True)
    as_published = {key: value for key, value in config.to_dict().items() if key != "per_layer_config"} | {
        "global_head_dim": 32,
        "num_global_key_value_heads": 1,
    }
    for i in range(6):
        assert read_layer(as_published, i) == read_layer(config.to_dict(), i)


@pytest.mark.parametrize("peer", PEERS)
def test_a_consumer_has_no_key_or_value_weights(peer):
    _, consumer, _ = PEERS[peer]()
    assert {name.split(".")[0] for name in consumer.state_dict()} == {"q_proj", "q_norm", "o_proj"}


# --- whole stacks of random small configs, every layer in order as HF's model runs them ------------------------------
def random_config(family: str, seed: int):
    """A small config of `family` drawn from `seed`: heads, widths, window, layer types and shared layers at random
    (drawn again until HF's kv_sharing_modes accepts them)."""
    pick = random.Random(f"{family}/{seed}").choice

    while True:
        layers = pick([4, 5, 7])
        types = [pick(["sliding_attention", "full_attention"]) for _ in range(layers)]
        kv_heads, group = pick([1, 2]), pick([1, 2, 3])
        common = dict(
            hidden_size=48,
            num_attention_heads=kv_heads * group,
            num_key_value_heads=kv_heads,
            head_dim=pick([8, 16]),
            sliding_window=pick([3, 4, 6]),
            num_hidden_layers=layers,
            layer_types=types,
            num_kv_shared_layers=pick([1, 2, 3]),
            attention_bias=pick([False, True]),
        )
        if family == "gemma3n":
            config = Gemma3nTextConfig(**common)
        else:
            config = Gemma4TextConfig(
                **common,
                global_head_dim=pick([8, 16, 32]),
                num_global_key_value_heads=pick([1, kv_heads]),
                attention_k_eq_v=pick([False, True]),
                rope_parameters={
                    "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                    "full_attention": {
                        "rope_type": "proportional",
                        "partial_rotary_factor": pick([0.25, 0.5, 1.0]),
                        "rope_theta": 1000000.0,
                    },
                },
            )
        try:
            modes = config.kv_sharing_modes
        except ValueError:
            continue
        config._attn_implementation = "eager"
        return config, modes


def _additive(allowed: torch.Tensor) -> torch.Tensor:
    return torch.zeros(allowed.shape).masked_fill(~allowed, torch.finfo(torch.float32).min)[None, None]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("family", ["gemma3n", "gemma4"])
def test_every_layer_of_a_random_stack_matches_hf(family, seed):
    config, modes = random_config(family, seed)
    attention_class = Gemma3nTextAttention if family == "gemma3n" else Gemma4TextAttention
    rotary = (Gemma3nRotaryEmbedding if family == "gemma3n" else Gemma4TextRotaryEmbedding)(config)
    torch.manual_seed(seed)
    theirs, ours = [], []
    for i in range(config.num_hidden_layers):
        module = attention_class(config, layer_idx=i).eval()
        _perturb(module)
        theirs.append(module)
        ours.append(build_layer(config.to_dict(), i).eval())
        ours[i].load_state_dict(module.state_dict(), strict=True)
    hf_cache, shared, type_mask = DynamicCache(config=config), {}, {}
    caches = [None if layer.cfg.kv_source is not None else layer.new_cache(1) for layer in ours]
    x = randn(config.num_hidden_layers, PREFILL + DECODE_STEPS, 48, seed=seed)
    seen, diffs = 0, []
    for length in [PREFILL] + [1] * DECODE_STEPS:
        positions = torch.arange(seen, seen + length)[None]
        for i, layer_type in enumerate(config.layer_types):
            if modes[i] != "reuse":  # the mask over the keys this layer's cache returns (a shared layer: its source's)
                held = hf_cache.layers[i].keys.shape[-2] if hf_cache.layers[i].is_initialized else 0
                queries, keys = positions[0][:, None], torch.arange(seen - held, seen + length)[None]
                allowed = keys <= queries
                if layer_type == "sliding_attention":
                    allowed &= queries - keys < config.sliding_window
                mask = type_mask[layer_type] = _additive(allowed)
            else:
                mask = type_mask[layer_type]
            chunk = x[i : i + 1, seen : seen + length]
            hf = theirs[i](
                chunk,
                position_embeddings=rotary(chunk, positions, layer_type),
                attention_mask=mask,
                past_key_values=hf_cache,
                shared_kv_states=shared,
            )[0]
            source = ours[i].cfg.kv_source
            diffs.append(max_diff(ours[i](chunk, cache=caches[i if source is None else source])[0], hf))
        seen += length
    assert max(diffs) <= TOL, diffs
