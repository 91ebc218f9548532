"""Peers: HF transformers' own modules for the Mamba-2 hybrids, run on the CPU in float32 with their torch fallbacks:
NemotronHMamba2Mixer and NemotronHAttention (Nemotron-H, Nemotron 3 Nano), GraniteMoeHybridMambaLayer and
GraniteMoeHybridAttention (Granite 4.0-H). Same weights (HF's state_dict loaded strictly), same numbers: a prompt
longer than two chunks of the scan, then five decoding steps through each side's own cache.

Our layers come from attn_core.hf.build_layer reading the config's to_dict(), as an app would read a config.json.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")
from transformers import DynamicCache, GraniteMoeHybridConfig, NemotronHConfig
from transformers.models.granitemoehybrid.modeling_granitemoehybrid import (
    GraniteMoeHybridAttention,
    GraniteMoeHybridMambaLayer,
    GraniteMoeHybridRotaryEmbedding,
)
from transformers.models.nemotron_h.modeling_nemotron_h import NemotronHAttention, NemotronHMamba2Mixer

from attn_core import published_config
from attn_core.hf import build_layer, describe_model

from .examples import randn
from .test_peers_hf import additive_causal_mask, max_diff

pytestmark = pytest.mark.slow

LINEAR_TOL = 1e-4
SOFTMAX_TOL = 2e-5
CHUNK = 16  # the scan's chunk in these configs: PROMPT spans three, the last one padded
PROMPT = 2 * CHUNK + 7
STEPS = 5


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


def nemotron_config(**overrides) -> NemotronHConfig:
    shape = dict(
        hidden_size=64,
        hybrid_override_pattern="M*EM",
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        mamba_num_heads=8,
        mamba_head_dim=12,
        ssm_state_size=10,
        n_groups=2,
        conv_kernel=4,
        chunk_size=CHUNK,
    )
    hf_config = NemotronHConfig(**(shape | overrides))
    hf_config._attn_implementation = "eager"
    return hf_config


def granite_config(**overrides) -> GraniteMoeHybridConfig:
    shape = dict(
        hidden_size=48,
        num_hidden_layers=2,
        layer_types=["mamba", "attention"],
        num_attention_heads=4,
        num_key_value_heads=2,
        attention_multiplier=0.3,
        attention_bias=True,
        mamba_n_heads=6,
        mamba_n_groups=1,
        mamba_d_state=14,
        mamba_d_conv=3,
        mamba_chunk_size=CHUNK,
        time_step_limit=(0.0, 4.0),
    )
    hf_config = GraniteMoeHybridConfig(**(shape | overrides))
    hf_config._attn_implementation = "eager"
    return hf_config


def config_dict(hf_config) -> dict:
    # NemotronHConfig.to_dict() leaves num_hidden_layers out (a property of layers_block_type); config.json has it
    return hf_config.to_dict() | {"num_hidden_layers": len(hf_config.layer_types)}


def _randomise_mixer(module, *, dt_shift: float = 0.0) -> None:
    """A_log, D, dt_bias, the norm's weight and the conv's bias drawn away from HF's constants, so one that failed to
    load, or a formula that ignored it, would show."""
    generator = torch.Generator().manual_seed(1)
    draw = lambda p: torch.randn(p.shape, generator=generator)  # noqa: E731
    module.A_log.copy_(torch.rand(module.A_log.shape, generator=generator) * 2.5)
    module.D.copy_(draw(module.D))
    module.dt_bias.copy_(draw(module.dt_bias) + dt_shift)
    module.norm.weight.copy_(1 + 0.3 * draw(module.norm.weight))
    if module.conv1d.bias is not None:
        module.conv1d.bias.copy_(0.3 * draw(module.conv1d.bias))


class Peer:
    """An HF module with the cache its model would give it, driven as its decoder block drives it."""

    def __init__(self, module, hf_config, drive):
        self.module, self.config, self.drive = module.eval(), hf_config, drive
        self.cache = DynamicCache(config=hf_config)
        self.seen = 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        out = self.drive(self, x)
        self.seen += x.shape[1]
        return out


def mixer_drive(peer: Peer, x):
    return peer.module(x, cache_params=peer.cache)


def attention_drive(peer: Peer, x):
    mask = additive_causal_mask(x.shape[1], peer.seen + x.shape[1])
    kwargs = {}
    if getattr(peer.config, "position_embedding_type", None) == "rope":
        positions = torch.arange(peer.seen, peer.seen + x.shape[1])[None].expand(x.shape[0], -1)
        kwargs["position_embeddings"] = GraniteMoeHybridRotaryEmbedding(peer.config)(x, positions)
    return peer.module(x, attention_mask=mask, past_key_values=peer.cache, **kwargs)[0]


def pair(hf_config, module_class, layer_idx, drive, dt_shift=0.0):
    torch.manual_seed(0)
    module = module_class(hf_config, layer_idx=layer_idx)
    if drive is mixer_drive:
        _randomise_mixer(module, dt_shift=dt_shift)
    ours = build_layer(config_dict(hf_config), layer_idx)
    ours.load_state_dict(module.state_dict(), strict=True)
    return ours.eval(), Peer(module, hf_config, drive)


MIXERS = {
    "nemotron-mamba2-two-groups": lambda: pair(nemotron_config(), NemotronHMamba2Mixer, 0, mixer_drive),
    "nemotron-mamba2-one-group-kernel-2-biases": lambda: pair(
        nemotron_config(n_groups=1, conv_kernel=2, use_bias=True), NemotronHMamba2Mixer, 3, mixer_drive
    ),
    "nemotron-mamba2-no-conv-bias-per-head-groups": lambda: pair(
        nemotron_config(n_groups=8, use_conv_bias=False), NemotronHMamba2Mixer, 0, mixer_drive
    ),
    # dt_bias near -9: softplus below time_step_min (1e-3) for many tokens, where HF's scan clamps the step size
    "nemotron-mamba2-clamped-steps": lambda: pair(nemotron_config(), NemotronHMamba2Mixer, 0, mixer_drive, -9.0),
    # dt_bias near +4: steps above time_step_limit's 4.0, clamped from above
    "granite-mamba2": lambda: pair(granite_config(), GraniteMoeHybridMambaLayer, 0, mixer_drive, 4.0),
}
ATTENTION = {
    "nemotron-attention-no-rope": lambda: pair(nemotron_config(), NemotronHAttention, 1, attention_drive),
    "nemotron-attention-mqa-bias-ignored": lambda: pair(
        nemotron_config(num_key_value_heads=1, attention_bias=True), NemotronHAttention, 1, attention_drive
    ),
    "granite-attention-multiplier-bias-nope": lambda: pair(
        granite_config(), GraniteMoeHybridAttention, 1, attention_drive
    ),
    "granite-attention-rope": lambda: pair(
        granite_config(position_embedding_type="rope", rope_parameters={"rope_type": "default", "rope_theta": 5e4}),
        GraniteMoeHybridAttention,
        1,
        attention_drive,
    ),
}
PEERS = {
    **{name: (make, LINEAR_TOL) for name, make in MIXERS.items()},
    **{name: (make, SOFTMAX_TOL) for name, make in ATTENTION.items()},
}


@pytest.mark.parametrize("peer", PEERS)
def test_prefill_of_three_chunks_then_five_cached_steps_match_hf(peer):
    make, tol = PEERS[peer]
    ours, theirs = make()
    x = randn(2, PROMPT + STEPS, ours.cfg.d_model)
    cache = ours.new_cache(2)
    diffs = [max_diff(ours(x[:, :PROMPT], cache=cache)[0], theirs(x[:, :PROMPT]))]
    for t in range(PROMPT, PROMPT + STEPS):
        diffs.append(max_diff(ours(x[:, t : t + 1], cache=cache)[0], theirs(x[:, t : t + 1])))
    assert max(diffs) <= tol, diffs


@pytest.mark.parametrize("peer", PEERS)
def test_prompt_in_pieces_then_steps_match_hf(peer):
    # the second piece starts from a state and a conv tail: the chunked scan with an initial state
    make, tol = PEERS[peer]
    ours, theirs = make()
    x = randn(1, CHUNK + 30 + 3, ours.cfg.d_model, seed=1)
    cache, diffs, start = ours.new_cache(1), [], 0
    for size in (CHUNK + 5, 25, 1, 1, 1):
        piece = x[:, start : start + size]
        diffs.append(max_diff(ours(piece, cache=cache)[0], theirs(piece)))
        start += size
    assert max(diffs) <= tol, diffs


@pytest.mark.parametrize("peer", MIXERS)
def test_ssm_state_and_conv_tail_are_what_hf_caches(peer):
    # HF keeps the last K convolution inputs; the oldest is never read again, so ours keeps K - 1
    ours, theirs = MIXERS[peer]()
    x = randn(2, PROMPT, ours.cfg.d_model)
    cache = ours.new_cache(2)
    ours(x, cache=cache)
    theirs(x)
    layer = theirs.cache.layers[theirs.module.layer_idx]
    assert cache.state.dtype == layer.recurrent_states[0].dtype == torch.float32
    assert cache.state.shape == layer.recurrent_states[0].shape  # [B, H, P, N]
    assert max_diff(cache.state, layer.recurrent_states[0]) <= LINEAR_TOL
    assert max_diff(cache.conv, layer.conv_states[0][..., 1:]) == 0


@pytest.mark.parametrize("peer", MIXERS)
def test_prefill_without_a_cache_matches_hf(peer):
    ours, theirs = MIXERS[peer]()
    x = randn(2, PROMPT, ours.cfg.d_model, seed=2)
    assert max_diff(ours(x)[0], theirs.module(x)) <= LINEAR_TOL


def test_the_clamped_peer_does_clamp():
    # the clamped-steps case means something only if HF's step sizes fall below time_step_min there
    _, theirs = MIXERS["nemotron-mamba2-clamped-steps"]()
    module = theirs.module
    x = randn(1, PROMPT, module.hidden_size)
    dt = module.in_proj(x)[..., -module.num_heads :]
    steps = torch.nn.functional.softplus(dt + module.dt_bias)
    assert (steps < module.time_step_limit[0]).float().mean() > 0.5


KINDS = {"linear_attention": "mamba", "full_attention": "full", "moe": "moe", "mlp": "mlp"}


@pytest.mark.parametrize("config_class", [NemotronHConfig, GraniteMoeHybridConfig])
def test_layer_kinds_follow_the_config_class_layer_types(config_class):
    hf_config = config_class()
    assert describe_model(config_dict(hf_config)).layer_kinds == [KINDS[t] for t in hf_config.layer_types]


def test_a_config_json_naming_no_layers_gets_the_config_class_default_layout():
    layers = NemotronHConfig().layer_types
    bare = {"model_type": "nemotron_h", "hidden_size": 64, "num_attention_heads": 8, "num_hidden_layers": len(layers)}
    assert describe_model(bare).layer_kinds == [KINDS[t] for t in layers]


def test_a_published_pattern_gives_the_config_class_layer_types():
    published = published_config("Nemotron 3 Nano 30B-A3B")
    hf_config = NemotronHConfig(hybrid_override_pattern=published["hybrid_override_pattern"])
    assert describe_model(published).layer_kinds == [KINDS[t] for t in hf_config.layer_types]
