"""Speed of the Mamba-2 mixer (attn_core.mamba) as ratios against HF transformers' NemotronHMamba2Mixer (its torch
path, as on any machine without mamba_ssm's kernels) measured in the same run.

    python benchmarks/mamba_layers.py            # the figures (about a minute on 2 cores)
    python benchmarks/mamba_layers.py --quick    # a smoke run: fewer repeats, 4k tokens instead of 32k

1. Prefill of 1024 tokens vs HF's mixer at the same shapes and weights.                      budget: <= 1.1x its time
2. A decoding step after 1k and after 32k tokens (the state is the same size: the step should cost the same), beside
   HF's step after 1k tokens.                                                                  budget: flat (<= 1.2x)

The shape keeps Nemotron 3 Nano's head width (64), state size (128), 8 groups and chunk (128) with fewer heads and a
narrower model, so a run fits a loaded 2-core machine. Timing and numerics checks are benchmarks/core.py's.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
import transformers
from transformers import DynamicCache, NemotronHConfig
from transformers.models.nemotron_h.modeling_nemotron_h import NemotronHMamba2Mixer

from attn_core.hf import build_layer
from benchmarks import core
from benchmarks.core import check, cpu_name, ms, race, verdict

LINEAR_TOLERANCE = 1e-4
STEPS_PER_SAMPLE = 16


def nemotron_config() -> NemotronHConfig:
    return NemotronHConfig(
        hidden_size=1024,
        hybrid_override_pattern="M",
        mamba_num_heads=32,
        mamba_head_dim=64,
        ssm_state_size=128,
        n_groups=8,
        conv_kernel=4,
        chunk_size=128,
    )


def pair() -> tuple[torch.nn.Module, torch.nn.Module, NemotronHConfig]:
    config = nemotron_config()
    torch.manual_seed(0)
    hf = NemotronHMamba2Mixer(config, layer_idx=0).eval()
    with torch.no_grad():  # dt_bias as HF's _init_weights draws it (dt in [1e-3, 0.1]): slow decays, so the state
        # carried between chunks matters (with __init__'s dt_bias of 1 it has decayed to 0 within a few tokens)
        dt = torch.empty(hf.num_heads).uniform_(-6.9, -2.3).exp()
        hf.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))
    ours = build_layer(config.to_dict() | {"num_hidden_layers": 1}, 0).eval()
    ours.load_state_dict(hf.state_dict(), strict=True)
    return ours, hf, config


def prefill(args, ours, hf) -> None:
    tokens = 1024
    print(f"\n1. Prefill of {tokens} tokens, batch 1, float32: ours / HF's mixer (budget <= 1.1x)")
    x = torch.randn(1, tokens, ours.cfg.d_model, generator=torch.Generator().manual_seed(0))
    diff = check("mamba2 prefill", ours(x)[0], hf(x), LINEAR_TOLERANCE)
    times = race({"ours": lambda: ours(x), "hf": lambda: hf(x)}, rounds=args.rounds, warmup=args.warmup)
    ratio = times["ours"] / times["hf"]
    print(f"   Mamba-2 mixer: {ms(times['ours'])} vs {ms(times['hf'])}   {ratio:.2f}x   max |diff| {diff:.1e}")
    print(f"   {verdict(ratio <= 1.1)}")


def decode(args, ours, hf, config) -> None:
    long = 4096 if args.quick else 32768
    print(f"\n2. A decoding step after 1024 and {long} tokens, batch 1 ({STEPS_PER_SAMPLE} steps per sample)")
    generator = torch.Generator().manual_seed(1)
    steps = torch.randn(1, STEPS_PER_SAMPLE, ours.cfg.d_model, generator=generator)
    caches = {}
    for tokens in (1024, long):
        cache = ours.new_cache(1)
        ours(torch.randn(1, tokens, ours.cfg.d_model, generator=generator), cache=cache)
        caches[tokens] = cache
    hf_cache = DynamicCache(config=config)
    hf(torch.randn(1, 1024, ours.cfg.d_model, generator=generator), cache_params=hf_cache)

    def ours_steps(cache):
        state, conv = cache.state.clone(), cache.conv.clone()

        def sample():
            cache.state.copy_(state)
            cache.conv.copy_(conv)
            for t in range(STEPS_PER_SAMPLE):
                ours(steps[:, t : t + 1], cache=cache)

        return sample

    layer = hf_cache.layers[0]
    hf_state, hf_conv = layer.recurrent_states[0].clone(), layer.conv_states[0].clone()

    def hf_steps():
        layer.recurrent_states[0].copy_(hf_state)
        layer.conv_states[0].copy_(hf_conv)
        for t in range(STEPS_PER_SAMPLE):
            hf(steps[:, t : t + 1], cache_params=hf_cache)

    contenders = {"ours 1k": ours_steps(caches[1024]), "ours long": ours_steps(caches[long]), "hf 1k": hf_steps}
    times = {name: t / STEPS_PER_SAMPLE for name, t in race(contenders, rounds=args.rounds, warmup=1).items()}
    flat = times["ours long"] / times["ours 1k"]
    print(f"   ours after 1k {ms(times['ours 1k'])}, after {long} {ms(times['ours long'])}: {flat:.2f}x")
    print(f"   HF's step after 1k {ms(times['hf 1k'])} (ours / HF {times['ours 1k'] / times['hf 1k']:.2f}x)")
    print(f"   {verdict(flat <= 1.2)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats and 4k cached tokens")
    args = parser.parse_args()
    args.rounds, args.warmup = (3, 1) if args.quick else (15, 2)
    print("Mamba-2 mixer benchmark" + (" (quick mode: figures indicative only)" if args.quick else ""))
    print(
        f"{cpu_name()}, {torch.get_num_threads()} torch thread(s), torch {torch.__version__}, transformers "
        f"{transformers.__version__}, Python {platform.python_version()}"
    )
    ours, hf, config = pair()
    with torch.no_grad():
        prefill(args, ours, hf)
        decode(args, ours, hf, config)
    print(f"\nload average {os.getloadavg()[0]:.2f} at end")
    if core.MISMATCHES:
        print("\nNUMERICS MISMATCH:\n  " + "\n  ".join(core.MISMATCHES))
        return 1
    print(f"numerics: the mixer agrees with HF's to {LINEAR_TOLERANCE:.0e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
