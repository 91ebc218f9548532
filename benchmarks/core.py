"""Speed and size of the attention core, each figure a ratio against a peer measured in the same run.

    python benchmarks/core.py            # the figures for the README (about a minute on 2 cores)
    python benchmarks/core.py --quick    # a short smoke run: fewer repeats, 1024 cached tokens instead of 4096

1. Grouped prefill vs HF transformers' LlamaAttention (eager and sdpa), same weights.   budget: <= 1.1x its time
2. MLA decode step with a 4096-token cache vs HF's DeepseekV3Attention with its cache.  budget: >= 5x faster
3. Our GQA cache and decode step vs the textbook way of repeating KV heads before caching them.
4. The grouped family's published layers (attn_core.hf.build_layer: Mistral's and Gemma 3's sliding layers, Qwen3's
   and Gemma 3's full ones with q/k norms, gpt-oss's sliding and full layers with sinks): prefill vs HF's own module
   at the same shapes and weights (budget: <= 1.1x its time), and a sliding layer's decode step at 32k cached tokens
   vs at 1k (budget: <= 1.2x; a full layer's shown beside it).

Implementations are timed in turns (one call of each per round, after warm-up), and each figure is the median of the
rounds, so a slow moment of the machine falls on all of them alike. Every comparison also checks that the outputs
agree: the script exits non-zero on a crash or a numerics mismatch, never because of a timing.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
import transformers
from transformers import (
    DeepseekV3Config,
    DynamicCache,
    Gemma3TextConfig,
    GptOssConfig,
    LlamaConfig,
    MistralConfig,
    Qwen3Config,
)
from transformers.models.deepseek_v3.modeling_deepseek_v3 import (
    DeepseekV3Attention,
    DeepseekV3RotaryEmbedding,
)
from transformers.models.gemma3.modeling_gemma3 import Gemma3Attention, Gemma3RotaryEmbedding
from transformers.models.gpt_oss.modeling_gpt_oss import GptOssAttention, GptOssRotaryEmbedding
from transformers.models.llama.modeling_llama import LlamaAttention, LlamaRotaryEmbedding
from transformers.models.mistral.modeling_mistral import MistralAttention, MistralRotaryEmbedding
from transformers.models.qwen3.modeling_qwen3 import Qwen3Attention, Qwen3RotaryEmbedding

from attn_core import AttentionConfig, build_attention, kv_cache_bytes, repeated_kv_cache_bytes
from attn_core.hf import build_layer

TOLERANCE = 2e-5  # max abs difference between implementations, float32
MISMATCHES: list[str] = []


# --- measuring ---------------------------------------------------------------------------------------------------------


def race(contenders: dict, *, rounds: int, warmup: int, statistic=statistics.median) -> dict:
    """Median (or another statistic of the rounds) seconds per call of each contender, called in turns: round r calls
    every contender once."""
    for _ in range(warmup):
        for fn in contenders.values():
            fn()
    times = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistic(samples) for name, samples in times.items()}


def check(what: str, ours: torch.Tensor, peer: torch.Tensor, tolerance: float = TOLERANCE) -> float:
    diff = (ours.double() - peer.double()).abs().max().item()
    if not diff <= tolerance:
        MISMATCHES.append(f"{what}: max abs diff {diff:.2e} > {tolerance:.0e}")
    return diff


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:9.2f} ms"


def mib(n: int) -> str:
    return f"{n / 2**20:8.2f} MiB"


def verdict(ok: bool) -> str:
    return "within budget" if ok else "MISSED"


def additive_causal_mask(q_len: int, k_len: int) -> torch.Tensor:
    blocked = torch.arange(k_len)[None, :] > torch.arange(k_len - q_len, k_len)[:, None]
    return torch.zeros(q_len, k_len).masked_fill(blocked, torch.finfo(torch.float32).min)[None, None]


# --- 1. grouped prefill vs LlamaAttention ------------------------------------------------------------------------------


def grouped_prefill(args) -> None:
    d_model, heads, groups, tokens = 1024, 16, 4, 1024
    print(
        f"\n1. Grouped prefill: d_model {d_model}, {heads} heads, {groups} KV groups (head_dim {d_model // heads}), "
        f"{tokens} tokens, batch 1, float32"
    )
    hf_config = LlamaConfig(
        hidden_size=d_model, num_attention_heads=heads, num_key_value_heads=groups, num_hidden_layers=1
    )
    torch.manual_seed(0)
    peer = LlamaAttention(hf_config, layer_idx=0).eval()
    ours = build_attention(AttentionConfig("gqa", d_model=d_model, n_heads=heads, n_kv_heads=groups)).eval()
    ours.load_state_dict(peer.state_dict())
    x = torch.randn(1, tokens, d_model)
    # HF's model computes rotary cos/sin and the mask once per forward for all layers: done here, outside the timing.
    # Ours computes its cos/sin inside the layer, within the timing.
    rotary = LlamaRotaryEmbedding(hf_config)(x, torch.arange(tokens)[None])
    mask = additive_causal_mask(tokens, tokens)

    def hf(implementation: str):
        # HF's sdpa path is causal by itself when no mask is given (as its model does for a plain causal prefill).
        def call():
            hf_config._attn_implementation = implementation
            return peer(x, position_embeddings=rotary, attention_mask=mask if implementation == "eager" else None)[0]

        return call

    contenders = {
        "ours": lambda: ours(x)[0],
        "HF LlamaAttention eager": hf("eager"),
        "HF LlamaAttention sdpa": hf("sdpa"),
    }
    diffs = {
        name: check(f"grouped prefill vs {name}", contenders["ours"](), fn())
        for name, fn in contenders.items()
        if name != "ours"
    }
    times = race(contenders, rounds=args.rounds, warmup=args.warmup)
    print(f"   {'':28s} {'median':>12s}   {'ours / it':>9s}   budget     {'max |diff|':>10s}")
    print(f"   {'ours (attn_core)':28s} {ms(times['ours'])}")
    for name in diffs:
        ratio = times["ours"] / times[name]
        print(
            f"   {name:28s} {ms(times[name])}   {ratio:8.2f}x   <= 1.1x   {diffs[name]:10.1e}   {verdict(ratio <= 1.1)}"
        )


# --- 2. MLA decode vs DeepseekV3Attention ------------------------------------------------------------------------------


def mla_decode(args) -> None:
    shape = dict(kv_lora_rank=512, q_lora_rank=768, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
    d_model, heads, cached = 2048, 16, args.cached
    print(
        f"\n2. MLA decode step with {cached} cached tokens: DeepSeek-like, smaller: d_model {d_model}, {heads} heads, "
        + ", ".join(f"{k} {v}" for k, v in shape.items())
        + ", rope_interleave, batch 1, float32"
    )
    hf_config = DeepseekV3Config(
        hidden_size=d_model,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        rope_interleave=True,
        rope_scaling=None,
        num_hidden_layers=1,
        **shape,
    )
    torch.manual_seed(0)
    peer = DeepseekV3Attention(hf_config, layer_idx=0).eval()
    ours = build_attention(AttentionConfig("mla", d_model=d_model, n_heads=heads, rope_interleave=True, **shape)).eval()
    ours.load_state_dict(peer.state_dict())
    rotary = DeepseekV3RotaryEmbedding(hf_config)

    prompt = torch.randn(1, cached, d_model)
    hf_config._attn_implementation = "sdpa"  # causal by itself without a mask; an eager prefill needs S x S memory
    hf_cache = DynamicCache(config=hf_config)
    hf_prefill = peer(
        prompt,
        position_embeddings=rotary(prompt, torch.arange(cached)[None]),
        attention_mask=None,
        past_key_values=hf_cache,
    )[0]
    our_cache = ours.new_cache(1)
    check("MLA prefill vs HF DeepseekV3Attention", ours(prompt, cache=our_cache)[0], hf_prefill)
    hf_bytes = sum(t.numel() * t.element_size() for t in (hf_cache.layers[0].keys, hf_cache.layers[0].values))
    print(
        f"   cache after the prompt: ours {mib(our_cache.nbytes)}, HF's DynamicCache {mib(hf_bytes)} "
        f"(both hold the compressed latent and rotary key; closed form {mib(kv_cache_bytes(ours.cfg, 1, cached))})"
    )

    steps = torch.randn(args.warmup + args.rounds, 1, 1, d_model)

    def stepper(run):
        """Calls run(token, position) on successive tokens: each call is one decode step."""
        position = iter(range(cached, cached + len(steps)))
        token = iter(steps)
        return lambda: run(next(token), next(position))

    def hf_step(implementation: str, cache: DynamicCache):
        def run(token, position):
            hf_config._attn_implementation = implementation  # a single new token needs no mask
            return peer(
                token,
                position_embeddings=rotary(token, torch.tensor([[position]])),
                attention_mask=None,
                past_key_values=cache,
            )[0]

        return run

    def our_step(cache, absorb=None):
        return lambda token, position: ours(token, cache=cache, absorb=absorb)[0]

    # Numerics first, on copies: every implementation decodes the same tokens from the same prompt.
    reference_cache = copy.deepcopy(our_cache)
    reference = [our_step(reference_cache)(steps[i], cached + i) for i in range(3)]
    for name, run in {
        "HF eager": hf_step("eager", copy.deepcopy(hf_cache)),
        "HF sdpa": hf_step("sdpa", copy.deepcopy(hf_cache)),
        "ours naive": our_step(copy.deepcopy(our_cache), absorb=False),
    }.items():
        for i in range(3):
            check(f"MLA decode step {i} ours vs {name}", reference[i], run(steps[i], cached + i))

    contenders = {
        "ours, absorbed (default)": stepper(our_step(copy.deepcopy(our_cache))),
        "ours, naive (absorb=False)": stepper(our_step(copy.deepcopy(our_cache), absorb=False)),
        "HF DeepseekV3Attention eager": stepper(hf_step("eager", copy.deepcopy(hf_cache))),
        "HF DeepseekV3Attention sdpa": stepper(hf_step("sdpa", copy.deepcopy(hf_cache))),
    }
    times = race(contenders, rounds=args.rounds, warmup=args.warmup)
    ours_time = times["ours, absorbed (default)"]
    print(
        f"   (median of {args.rounds} successive steps after {args.warmup} warm-up steps, each contender on its own "
        f"copy of the caches)"
    )
    print(f"   {'':30s} {'median':>12s}   {'it / ours':>9s}   budget")
    for name, seconds in times.items():
        ratio = seconds / ours_time
        if name.startswith("HF"):
            print(f"   {name:30s} {ms(seconds)}   {ratio:8.1f}x   >= 5x   {verdict(ratio >= 5)}")
        else:
            print(f"   {name:30s} {ms(seconds)}   {ratio:8.1f}x")


# --- 3. GQA cache vs repeating KV heads before caching -------------------------------------------------------------------


class RepeatedKVAttention:
    """GQA as textbook code writes it: K and V are repeated to every query head, then the copies are cached (and the
    cache grows by torch.cat at every step). Same weights as the layer it is given."""

    def __init__(self, layer):
        self.layer, self.k, self.v = layer, None, None
        cfg = layer.cfg
        self.heads, self.groups, self.head_dim, self.theta = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.rope_theta

    def rope(self, x: torch.Tensor, start: int) -> torch.Tensor:
        d = self.head_dim
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        angles = torch.outer(torch.arange(start, start + x.shape[2], dtype=torch.float32), inv_freq)
        cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()
        rotated_half = torch.cat((-x[..., d // 2 :], x[..., : d // 2]), dim=-1)
        return x * cos + rotated_half * sin

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        b, l, _ = x.shape
        start = 0 if self.k is None else self.k.shape[2]
        q = self.layer.q_proj(x).view(b, l, self.heads, self.head_dim).transpose(1, 2)
        k = self.layer.k_proj(x).view(b, l, self.groups, self.head_dim).transpose(1, 2)
        v = self.layer.v_proj(x).view(b, l, self.groups, self.head_dim).transpose(1, 2)
        q, k = self.rope(q, start), self.rope(k, start)
        repeats = self.heads // self.groups
        k, v = k.repeat_interleave(repeats, dim=1), v.repeat_interleave(repeats, dim=1)  # the pitfall
        self.k = k if self.k is None else torch.cat((self.k, k), dim=2)
        self.v = v if self.v is None else torch.cat((self.v, v), dim=2)
        scores = q @ self.k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if l > 1:
            scores = scores + additive_causal_mask(l, self.k.shape[2])
        out = torch.softmax(scores, dim=-1) @ self.v
        return self.layer.o_proj(out.transpose(1, 2).reshape(b, l, self.heads * self.head_dim))

    @property
    def nbytes(self) -> int:
        return self.k.numel() * self.k.element_size() + self.v.numel() * self.v.element_size()


def gqa_cache(args) -> None:
    d_model, heads, groups, cached = 1024, 16, 4, args.cached
    cfg = AttentionConfig("gqa", d_model=d_model, n_heads=heads, n_kv_heads=groups)
    print(
        f"\n3. GQA cache and decode step vs repeating KV heads before caching: d_model {d_model}, {heads} heads, "
        f"{groups} KV groups, {cached} cached tokens, batch 1, float32"
    )
    ours = build_attention(cfg, seed=0).eval()
    textbook = RepeatedKVAttention(ours)
    our_cache = ours.new_cache(1)
    prompt = torch.randn(1, cached, d_model)
    for start in range(0, cached, 1024):  # the prompt in chunks of 1024, so the textbook's scores stay small
        chunk = prompt[:, start : start + 1024]
        check("GQA prompt chunk ours vs textbook", ours(chunk, cache=our_cache)[0], textbook(chunk))
    steps = torch.randn(args.warmup + args.rounds + 1, 1, 1, d_model)
    check("GQA decode step ours vs textbook", ours(steps[-1], cache=our_cache)[0], textbook(steps[-1]))

    held = our_cache.seq_len
    if our_cache.nbytes != kv_cache_bytes(cfg, 1, held) or textbook.nbytes != repeated_kv_cache_bytes(cfg, 1, held):
        MISMATCHES.append("GQA cache bytes differ from the closed forms")
    print(
        f"   cache for {held} tokens:  ours {mib(our_cache.nbytes)} held ({mib(our_cache.capacity_nbytes)} "
        f"preallocated)   textbook {mib(textbook.nbytes)}   textbook / ours: {textbook.nbytes / our_cache.nbytes:.2f}x "
        f"(= heads per group)"
    )
    token = iter(steps)
    contenders = {"ours": lambda: ours(next(token), cache=our_cache)[0]}
    textbook_token = iter(steps)
    contenders["textbook (repeat, then cache)"] = lambda: textbook(next(textbook_token))
    times = race(contenders, rounds=args.rounds, warmup=args.warmup)
    print(
        f"   decode step:  ours {ms(times['ours'])}   textbook {ms(times['textbook (repeat, then cache)'])}   "
        f"textbook / ours: {times['textbook (repeat, then cache)'] / times['ours']:.2f}x"
    )


# --- 4. the grouped family's published layers vs HF's modules ----------------------------------------------------------


def family_peers(window: int) -> dict[str, tuple]:
    """name -> (HF config, HF attention class, rotary embedding, layer index, window or None, layer_type), one layer
    of each published kind at one shape: d_model 1024, 16 heads, 4 KV heads of 64."""
    shape = dict(hidden_size=1024, num_attention_heads=16, num_key_value_heads=4, head_dim=64)
    mistral = MistralConfig(**shape, num_hidden_layers=1, sliding_window=window)
    qwen3 = Qwen3Config(**shape, num_hidden_layers=1)
    gemma3 = Gemma3TextConfig(
        **shape,
        num_hidden_layers=2,
        query_pre_attn_scalar=64,
        sliding_window=window,
        layer_types=["sliding_attention", "full_attention"],
    )
    gpt_oss = GptOssConfig(**shape, num_hidden_layers=2, sliding_window=window)
    return {
        "Mistral sliding": (mistral, MistralAttention, MistralRotaryEmbedding(mistral), 0, window, None),
        "Qwen3 full, q/k norms": (qwen3, Qwen3Attention, Qwen3RotaryEmbedding(qwen3), 0, None, None),
        "Gemma 3 sliding": (gemma3, Gemma3Attention, Gemma3RotaryEmbedding(gemma3), 0, window, "sliding_attention"),
        "Gemma 3 full": (gemma3, Gemma3Attention, Gemma3RotaryEmbedding(gemma3), 1, None, "full_attention"),
        "gpt-oss sliding, sinks": (gpt_oss, GptOssAttention, GptOssRotaryEmbedding(gpt_oss), 0, window, None),
        "gpt-oss full, sinks": (gpt_oss, GptOssAttention, GptOssRotaryEmbedding(gpt_oss), 1, None, None),
    }


def additive_window_mask(tokens: int, window: int | None) -> torch.Tensor:
    """[1, 1, L, L]: what HF's model passes a sliding (or full) layer for a prompt: causal, and within the window."""
    distance = torch.arange(tokens)[:, None] - torch.arange(tokens)[None, :]
    allowed = (distance >= 0) & (distance < (window or tokens))
    return torch.zeros(tokens, tokens).masked_fill(~allowed, torch.finfo(torch.float32).min)[None, None]


def family_prefill(args) -> None:
    tokens, window = (512, 128) if args.quick else (2048, 512)
    print(
        f"\n4a. Published layers' prefill vs HF's module: d_model 1024, 16 heads, 4 KV heads of 64, window {window}, "
        f"{tokens} tokens, batch 1, float32 (ours: attn_core.hf.build_layer from the HF config's to_dict())"
    )
    x = torch.randn(1, tokens, 1024)
    print(f"   {'layer':26s} {'ours':>12s}   {'HF':>20s} {'':12s}   {'ours / HF':>9s}   budget     max |diff|")
    for name, (config, attention, rotary, idx, layer_window, layer_type) in family_peers(window).items():
        torch.manual_seed(0)
        peer = attention(config, layer_idx=idx).eval()
        with torch.no_grad():  # biases, norms and sinks away from their initial values
            for param_name, param in peer.named_parameters():
                if param_name.endswith("bias") or "norm" in param_name or param_name == "sinks":
                    param.add_(0.1 * torch.randn(param.shape))
        ours = build_layer(config.to_dict(), idx).eval()
        ours.load_state_dict(peer.state_dict(), strict=True)
        positions = torch.arange(tokens)[None]
        cos_sin = rotary(x, positions) if layer_type is None else rotary(x, positions, layer_type)
        mask = additive_window_mask(tokens, layer_window)

        def hf(implementation: str, peer=peer, cos_sin=cos_sin, mask=mask, config=config, layer_window=layer_window):
            # sdpa is causal by itself without a mask, as HF's model calls a full layer on a plain prompt
            given = None if implementation == "sdpa" and layer_window is None else mask

            def call():
                config._attn_implementation = implementation
                return peer(x, position_embeddings=cos_sin, attention_mask=given)[0]

            return call

        implementations = ["eager"] if attention is GptOssAttention else ["eager", "sdpa"]  # gpt-oss: no sdpa in HF
        contenders = {"ours": lambda ours=ours: ours(x)[0]} | {f"HF {impl}": hf(impl) for impl in implementations}
        diffs = {
            n: check(f"{name} prefill vs {n}", contenders["ours"](), fn())
            for n, fn in contenders.items()
            if n != "ours"
        }
        times = race(contenders, rounds=args.rounds, warmup=args.warmup)
        for hf_name in diffs:
            ratio = times["ours"] / times[hf_name]
            print(
                f"   {name:26s} {ms(times['ours'])}   {attention.__name__ + ' ' + hf_name[3:]:>20s} "
                f"{ms(times[hf_name])}   {ratio:8.2f}x   <= 1.1x   {diffs[hf_name]:10.1e}   {verdict(ratio <= 1.1)}"
            )


def tenth_percentile(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10)[0]


def family_decode(args) -> None:
    window, short, long, chunk = 1024, 1024, 32768, 2048
    print(
        f"\n4b. Decode step at {long} vs {short} cached tokens: the same shapes, window {window} (Gemma 3's local "
        f"layers); the caches filled through the layer in chunks of {chunk}; 10th percentile of {40 * args.rounds} steps "
        "each (on a shared machine the slower steps time the other work)"
    )
    peers = family_peers(window)
    print(f"   {'layer':26s} {'at ' + str(short):>12s} {'at ' + str(long):>12s}   {'ratio':>7s}   budget   cache held")
    for name in ("Gemma 3 sliding", "gpt-oss sliding, sinks", "Gemma 3 full"):
        config, _, _, idx, layer_window, _ = peers[name]
        layer = build_layer(config.to_dict(), idx, seed=0).eval()
        caches = {}
        for length in (short, long):
            cache = layer.new_cache(1)
            for start in range(0, length, chunk):
                layer(torch.randn(1, min(chunk, length - start), 1024), cache=cache)
            caches[length] = cache
        # a step takes milliseconds: many more rounds than the prefills, of which a low percentile is the layer's own
        rounds = 40 * args.rounds
        steps = torch.randn(args.warmup + rounds, 1, 1, 1024)

        def stepper(cache, layer=layer, steps=steps):
            token = iter(steps)
            return lambda: layer(next(token), cache=cache)[0]

        times = race(
            {length: stepper(cache) for length, cache in caches.items()},
            rounds=rounds,
            warmup=args.warmup,
            statistic=tenth_percentile,
        )
        ratio = times[long] / times[short]
        budget = f"<= 1.2x   {verdict(ratio <= 1.2)}" if layer_window is not None else "(grows with the cache)"
        print(
            f"   {name:26s} {ms(times[short])} {ms(times[long])}   {ratio:6.2f}x   {budget}   "
            f"{mib(caches[long].nbytes).strip()} at {long}"
        )


# --- main --------------------------------------------------------------------------------------------------------------


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats and 1024 cached tokens")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads (default: all cores)")
    parser.add_argument(
        "--sections", default="1234", help="which sections to run, e.g. 4 for the published layers alone (default: all)"
    )
    args = parser.parse_args()
    args.rounds, args.warmup, args.cached = (5, 2, 1024) if args.quick else (25, 3, 4096)

    torch.set_num_threads(args.threads)
    print("Attention core benchmark" + (" (quick mode: figures indicative only)" if args.quick else ""))
    print(
        f"machine: {cpu_name()}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}; "
        f"load average {os.getloadavg()[0]:.2f} at start"
    )
    print(
        f"versions: python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}"
    )
    print(
        f"torch threads: {torch.get_num_threads()}; medians of {args.rounds} rounds after {args.warmup} warm-up rounds; "
        "torch.inference_mode"
    )
    if os.getloadavg()[0] > 0.5 * (os.cpu_count() or 1):
        print("WARNING: the machine is busy with other work; timings (more than ratios) will be off. Rerun when idle.")
    with torch.inference_mode():
        sections = {
            "1": [grouped_prefill],
            "2": [mla_decode],
            "3": [gqa_cache],
            "4": [family_prefill, family_decode],
        }
        for section in args.sections:
            for run in sections[section]:
                run(args)
    print(f"\nload average {os.getloadavg()[0]:.2f} at end")
    if MISMATCHES:
        print("\nNUMERICS MISMATCH:\n  " + "\n  ".join(MISMATCHES))
        return 1
    print(f"numerics: every compared pair agrees to {TOLERANCE:.0e} (max abs diff, float32)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
