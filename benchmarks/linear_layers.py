"""Speed of the linear-attention hybrids' layers (attn_core.linear, attn_core.gated), as ratios against HF
transformers' own modules measured in the same run.

    python benchmarks/linear_layers.py            # the figures (a few minutes on 2 cores)
    python benchmarks/linear_layers.py --quick    # a smoke run: fewer repeats, 8k tokens instead of 32k

1. Prefill vs HF's module at the same shapes and weights: Qwen3NextGatedDeltaNet, KimiLinearDeltaAttention (both with
   their torch fallbacks, as on any machine without FLA's kernels) and Qwen3NextAttention.   budget: <= 1.1x its time
2. A decoding step of each linear layer after 1k and after 32k tokens (the state is the same size: the step should
   cost the same), beside HF's step after 1k tokens.                                          budget: flat (<= 1.2x)

The shapes keep the published models' head widths (d_k = d_v = 128; Qwen3-Next's 2 value heads per key head, its
D = 256 and rotary quarter) with fewer heads, so a run fits a loaded 2-core machine. Timing and numerics checks are
benchmarks/core.py's (race: contenders in turns, medians; check: outputs compared before anything is timed).
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
import transformers
from transformers import DynamicCache, KimiLinearConfig, Qwen3NextConfig
from transformers.models.kimi_linear.modeling_kimi_linear import KimiLinearDeltaAttention
from transformers.models.qwen3_next.modeling_qwen3_next import (
    Qwen3NextAttention,
    Qwen3NextGatedDeltaNet,
    Qwen3NextRotaryEmbedding,
)

from attn_core.gated import GatedAttention, GatedAttentionConfig
from attn_core.linear import GatedDeltaNet, GatedDeltaNetConfig, KimiDeltaAttention, KimiDeltaConfig
from benchmarks import core
from benchmarks.core import additive_causal_mask, check, cpu_name, ms, race, verdict

STEPS_PER_SAMPLE = 16
LINEAR_TOLERANCE = 1e-4  # the budget for linear layers (float32); softmax attention keeps core.TOLERANCE


def qwen3_next_config() -> Qwen3NextConfig:
    config = Qwen3NextConfig(
        hidden_size=1024,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=256,
        linear_num_key_heads=4,
        linear_num_value_heads=8,
        linear_key_head_dim=128,
        linear_value_head_dim=128,
    )
    config._attn_implementation = "eager"
    return config


def kimi_config() -> KimiLinearConfig:
    return KimiLinearConfig(
        hidden_size=1024,
        num_hidden_layers=1,
        linear_attn_config={"kda_layers": [1], "full_attn_layers": [], "num_heads": 8, "head_dim": 128},
    )


def linear_pairs() -> dict[str, tuple[torch.nn.Module, torch.nn.Module]]:
    """name -> (ours, HF's), same weights."""
    torch.manual_seed(0)
    qwen = qwen3_next_config()
    hf_gdn = Qwen3NextGatedDeltaNet(qwen, layer_idx=0).eval()
    gdn = GatedDeltaNet(GatedDeltaNetConfig.from_hf(qwen.to_dict(), 0)).eval()
    gdn.load_state_dict(hf_gdn.state_dict(), strict=True)
    kimi = kimi_config()
    hf_kda = KimiLinearDeltaAttention(kimi, layer_idx=0).eval()
    kda = KimiDeltaAttention(KimiDeltaConfig.from_hf(kimi.to_dict(), 0)).eval()
    kda.init_from_seed(0)  # HF's __init__ leaves the forget gate's A_log and dt_bias uninitialised
    hf_kda.load_state_dict(kda.state_dict(), strict=True)
    return {"Gated DeltaNet (Qwen3-Next)": (gdn, hf_gdn), "KDA (Kimi Linear)": (kda, hf_kda)}


def describe(name: str, layer: torch.nn.Module) -> str:
    return f"{name}: " + ", ".join(f"{k} {v}" for k, v in vars(layer.cfg).items())


def prefill(args, pairs) -> None:
    tokens = args.prefill
    print(f"\n1. Prefill of {tokens} tokens, batch 1, float32: ours / HF's module (budget <= 1.1x)")
    print(f"   {'':44s} {'ours':>12s} {'HF':>12s}   {'ours / HF':>9s}   {'max |diff|':>10s}")
    x = torch.randn(1, tokens, 1024)
    for name, (ours, hf) in pairs.items():
        diff = check(f"{name} prefill", ours(x)[0], hf(x), LINEAR_TOLERANCE)
        contenders = {"ours": lambda ours=ours: ours(x)[0], "hf": lambda hf=hf: hf(x)}
        times = race(contenders, rounds=args.rounds, warmup=args.warmup)
        report(name, times, diff)

    qwen = qwen3_next_config()
    torch.manual_seed(0)
    hf_attn = Qwen3NextAttention(qwen, layer_idx=3).eval()
    attn = GatedAttention(GatedAttentionConfig.from_hf(qwen.to_dict(), 3)).eval()
    attn.load_state_dict(hf_attn.state_dict(), strict=True)
    # HF's model computes rotary cos/sin and the mask once per forward for all layers: done here, outside the timing
    rotary = Qwen3NextRotaryEmbedding(qwen)(x, torch.arange(tokens)[None])
    mask = additive_causal_mask(tokens, tokens)

    def hf_call(implementation: str):
        def call():
            qwen._attn_implementation = implementation  # sdpa is causal by itself without a mask, as HF's model runs it
            return hf_attn(x, position_embeddings=rotary, attention_mask=mask if implementation == "eager" else None)[0]

        return call

    for implementation in ("eager", "sdpa"):
        diff = check(f"gated attention prefill vs {implementation}", attn(x)[0], hf_call(implementation)())
        times = race(
            {"ours": lambda: attn(x)[0], "hf": hf_call(implementation)}, rounds=args.rounds, warmup=args.warmup
        )
        report(f"Gated attention (Qwen3-Next) vs HF {implementation}", times, diff)


def report(name: str, times: dict[str, float], diff: float) -> None:
    ratio = times["ours"] / times["hf"]
    print(
        f"   {name:44s} {ms(times['ours'])} {ms(times['hf'])}   {ratio:8.2f}x   {diff:10.1e}   {verdict(ratio <= 1.1)}"
    )


def decode(args, pairs) -> None:
    short, long = 1024, args.long
    print(
        f"\n2. One decoding step after {short} and after {long} tokens, batch 1 (budget: flat, <= 1.2x; median of "
        f"samples of {STEPS_PER_SAMPLE} successive steps)"
    )
    print(
        f"   {'':28s} {'after ' + str(short):>12s} {'after ' + str(long):>12s}   {'long/short':>10s}   "
        f"{'HF after ' + str(short):>12s}   {'state held':>10s}"
    )
    # A sample is STEPS_PER_SAMPLE successive steps (a step is ~2 ms: alone, a busy machine's scheduling would decide it)
    steps = torch.randn((args.warmup + args.rounds) * STEPS_PER_SAMPLE, 1, 1, 1024)
    prompt = torch.randn(1, long, 1024)
    for name, (ours, hf) in pairs.items():
        caches = {}
        for tokens in (short, long):
            cache = ours.new_cache(1)
            for start in range(0, tokens, 4096):  # a long prompt in pieces: each continues from the state
                ours(prompt[:, start : min(tokens, start + 4096)], cache=cache)
            caches[tokens] = cache
        hf_cache = DynamicCache(config=hf_config_of(hf))
        hf(prompt[:, :short], cache_params=hf_cache)
        # numerics: the same next token from the same 1k prompt
        check(
            f"{name} decode step",
            ours(steps[0], cache=copy.deepcopy(caches[short]))[0],
            hf(steps[0], cache_params=copy.deepcopy(hf_cache)),
            LINEAR_TOLERANCE,
        )

        def stepper(run):
            token = iter(steps)

            def sample():
                for _ in range(STEPS_PER_SAMPLE):
                    run(next(token))

            return sample

        contenders = {
            "short": stepper(lambda t, ours=ours, c=caches[short]: ours(t, cache=c)[0]),
            "long": stepper(lambda t, ours=ours, c=caches[long]: ours(t, cache=c)[0]),
            "hf": stepper(lambda t, hf=hf, c=hf_cache: hf(t, cache_params=c)),
        }
        times = {
            name: seconds / STEPS_PER_SAMPLE
            for name, seconds in race(contenders, rounds=args.rounds, warmup=args.warmup).items()
        }
        ratio = times["long"] / times["short"]
        held = caches[long].nbytes
        assert held == caches[short].nbytes, "the state must not grow with the length"
        print(
            f"   {name:28s} {ms(times['short'])} {ms(times['long'])}   {ratio:9.2f}x   {ms(times['hf'])}   "
            f"{held / 2**20:7.2f} MiB   {verdict(ratio <= 1.2)}"
        )


def hf_config_of(module: torch.nn.Module):
    return qwen3_next_config() if isinstance(module, Qwen3NextGatedDeltaNet) else kimi_config()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, 8k tokens for the long decode")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads (default: all cores)")
    args = parser.parse_args()
    args.rounds, args.warmup, args.long, args.prefill = (5, 1, 8192, 512) if args.quick else (15, 2, 32768, 1024)
    torch.set_num_threads(args.threads)
    print("Linear-attention layers benchmark" + (" (quick mode: figures indicative only)" if args.quick else ""))
    print(
        f"machine: {cpu_name()}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start; "
        f"python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}; "
        f"torch threads {torch.get_num_threads()}; medians of {args.rounds} rounds after {args.warmup} warm-up"
    )
    with torch.inference_mode():
        pairs = linear_pairs()
        for name, (ours, _) in pairs.items():
            print("   " + describe(name, ours))
        prefill(args, pairs)
        decode(args, pairs)
    print(f"\nload average {os.getloadavg()[0]:.2f} at end")
    if core.MISMATCHES:
        print("\nNUMERICS MISMATCH:\n  " + "\n  ".join(core.MISMATCHES))
        return 1
    print(f"numerics: linear layers agree with HF's to {LINEAR_TOLERANCE:.0e}, softmax to {core.TOLERANCE:.0e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
