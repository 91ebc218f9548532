"""DeepSeek after MLA: attn_core's V3.2 (DSA) and V4 layers against HF transformers' modules, ratios from one run.

    python benchmarks/deepseek_layers.py            # the figures (a few minutes on 2 cores; ~3 GB at the peak)
    python benchmarks/deepseek_layers.py --quick    # a smoke run: fewer rounds, 8k cached tokens instead of 32k

1. Prefill vs HF's module, same weights: DSA (longer than index_topk) and each V4 kind.     goal: <= 1.1x its time
2. DSA decoding step at 32k cached tokens: ours (the top-k latents gathered) vs the same layer reading every cached
   token (its MLA without the indexer: plain absorbed MLA) and vs HF's DeepseekV32Attention (which up-projects
   every cached latent, scores all and masks).                                                   goal: >= 4x faster

Timed in turns (benchmarks/core.py's race: medians of rounds, one call of each per round); every comparison with HF
also checks the outputs agree (exit code 1 on a mismatch, never on a timing). The 32k-token caches are filled by the
layers' own compress/indexer-key code (no attention needed to fill them) and copied into HF's DynamicCache.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
from core import MISMATCHES, TOLERANCE, check, cpu_name, ms, race
from transformers import DeepseekV4Config, DeepseekV32Config, DynamicCache
from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask
from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4Attention, DeepseekV4RotaryEmbedding
from transformers.models.deepseek_v32.modeling_deepseek_v32 import DeepseekV32Attention, DeepseekV32RotaryEmbedding

from attn_core.compressed import CompressedAttention, CompressedConfig
from attn_core.dsa import DeepSeekSparseAttention, DSAConfig
from attn_core.latent import MultiHeadLatentAttention

# V3.2's attention widths (DeepSeek-V3.2-Exp's config.json); d_model and heads are set per measurement.
V32_WIDTHS = dict(
    q_lora_rank=1536,
    kv_lora_rank=512,
    qk_nope_head_dim=128,
    qk_rope_head_dim=64,
    v_head_dim=128,
    index_n_heads=64,
    index_head_dim=128,
    index_topk=2048,
)


def v32_pair(d_model: int, heads: int, **overrides) -> tuple[DeepSeekSparseAttention, DeepseekV32Attention, object]:
    hf_config = DeepseekV32Config(
        hidden_size=d_model,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        num_hidden_layers=1,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        **(V32_WIDTHS | overrides),
    )
    hf_config._attn_implementation = "eager"
    torch.manual_seed(0)
    peer = DeepseekV32Attention(hf_config, layer_idx=0).eval()
    ours = DeepSeekSparseAttention(DSAConfig.from_hf(hf_config.to_dict(), 0)).eval()
    ours.load_state_dict(peer.state_dict(), strict=True)
    return ours, peer, hf_config


def dsa_prefill(args) -> None:
    d_model, heads, length, topk = 1024, 16, args.prefill, args.prefill // 4
    print(
        f"\n1a. DSA prefill of {length} tokens (index_topk {topk}): V3.2's widths, d_model {d_model}, {heads} heads, "
        "batch 1, float32"
    )
    ours, peer, hf_config = v32_pair(d_model, heads, index_topk=topk)
    rotary = DeepseekV32RotaryEmbedding(hf_config)
    x = torch.randn(1, length, d_model)
    positions = torch.arange(length)[None]

    def hf():
        mask = create_causal_mask(config=hf_config, inputs_embeds=x, attention_mask=None, past_key_values=None)
        return peer(x, position_embeddings=rotary(x, positions), attention_mask=mask, position_ids=positions)[0]

    check("DSA prefill vs HF", ours(x)[0], hf())
    times = race({"ours": lambda: ours(x), "hf": hf}, rounds=args.rounds, warmup=args.warmup)
    ratio = times["ours"] / times["hf"]
    print(f"   ours {ms(times['ours'])}   HF {ms(times['hf'])}   ours/HF {ratio:.2f}x  (goal <= 1.1x)")


def v4_prefill(args) -> None:
    length = args.prefill
    shape = dict(
        hidden_size=1024,
        num_attention_heads=16,
        head_dim=512,
        q_lora_rank=512,
        partial_rotary_factor=64 / 512,
        o_groups=4,
        o_lora_rank=256,
        sliding_window=128,
        index_n_heads=64,
        index_head_dim=128,
        index_topk=length // 8,
    )
    print(
        f"\n1b. V4 prefill of {length} tokens: V4-Flash's head widths (head_dim 512, rope 64, window 128, indexer "
        f"64 x 128, CSA m=4 top-{length // 8}, HCA m=128), d_model 1024, 16 heads, batch 1, float32"
    )
    x = torch.randn(1, length, shape["hidden_size"])
    positions = torch.arange(length)[None]
    for layer_type in ("sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"):
        hf_config = DeepseekV4Config(
            **shape, layer_types=[layer_type], num_hidden_layers=1, n_routed_experts=4, num_experts_per_tok=2
        )
        hf_config._attn_implementation = "eager"
        torch.manual_seed(0)
        peer = DeepseekV4Attention(hf_config, layer_idx=0).eval()
        with torch.no_grad():  # left uninitialised outside a model
            for name, param in peer.named_parameters():
                if name.endswith(("sinks", "position_bias")):
                    param.copy_(torch.randn(param.shape))
        ours = CompressedAttention(CompressedConfig.from_hf(hf_config.to_dict(), 0)).eval()
        ours.load_state_dict(peer.state_dict(), strict=True)
        rotary = DeepseekV4RotaryEmbedding(hf_config)

        def hf(peer=peer, hf_config=hf_config, rotary=rotary):
            mask = create_sliding_window_causal_mask(
                config=hf_config, inputs_embeds=x, attention_mask=None, past_key_values=None
            )
            embeddings = {kind: rotary(x, positions, layer_type=kind) for kind in ("main", "compress")}
            return peer(x, position_embeddings=embeddings, position_ids=positions, attention_mask=mask)[0]

        check(f"V4 {layer_type} prefill vs HF", ours(x)[0], hf())
        times = race({"ours": lambda ours=ours: ours(x), "hf": hf}, rounds=args.rounds, warmup=args.warmup)
        ratio = times["ours"] / times["hf"]
        print(
            f"   {ours.cfg.kind:8s} ours {ms(times['ours'])}   HF {ms(times['hf'])}   ours/HF {ratio:.2f}x  "
            "(goal <= 1.1x)"
        )


def filled_caches(ours: DeepSeekSparseAttention, cached: int, hf_config) -> tuple[object, object]:
    """Our cache and HF's after `cached` tokens, filled by the layer's own compress() and indexer.keys()."""
    ours_cache, hf_cache = ours.new_cache(1), DynamicCache(config=hf_config)
    for start in range(0, cached, 4096):
        x = torch.randn(1, min(4096, cached - start), ours.cfg.d_model)
        c_kv, k_rope = ours.compress(x, start)
        cos, sin = ours._rotary(start, x.shape[1], x)
        index_keys = ours.indexer.keys(x, cos, sin)
        ours_cache.append(c_kv, k_rope)
        ours_cache.append_index_keys(index_keys)
        hf_cache.update(c_kv, k_rope, 0)
        hf_cache.update_indexer(index_keys[:, 0], 0)
    return ours_cache, hf_cache


def dsa_decode(args) -> None:
    for heads, d_model, batch, with_hf in args.decode_shapes:
        dsa_decode_shape(args, heads, d_model, batch, with_hf)


def dsa_decode_shape(args, heads: int, d_model: int, batch: int, with_hf: bool) -> None:
    cached = args.cached
    print(
        f"\n2. DSA decoding step with {cached} cached tokens (top-2048): V3.2's widths, d_model {d_model}, "
        f"{heads} heads, batch {batch}, float32"
    )
    ours, peer, hf_config = v32_pair(d_model, heads)
    # the same layer's MLA and weights without the indexer: it reads every cached token (absorbed MLA). Not DSA with a
    # top-k past the length: its decoding step runs the indexer at any length, as DeepSeek's reference does
    dense = MultiHeadLatentAttention(ours.dsa_cfg.latent, options=ours.dsa_cfg.options).eval()
    dense.load_state_dict({k: v for k, v in ours.state_dict().items() if not k.startswith("indexer.")})
    rotary = DeepseekV32RotaryEmbedding(hf_config)
    caches = [filled_caches(ours, cached, hf_config) for _ in range(batch)]
    ours_cache, hf_cache = caches[0]
    if batch > 1:  # distinct sequences side by side
        ours_cache = ours.new_cache(batch)
        ours_cache.append(torch.cat([c.c_kv for c, _ in caches]), torch.cat([c.k_rope for c, _ in caches]))
        ours_cache.append_index_keys(torch.cat([c.index_k for c, _ in caches]))
    token = torch.randn(batch, 1, d_model)

    def step(layer):
        # one step, then forget it: every round decodes the same token after the same cache (dense appends no
        # indexer key, so each buffer goes back to its own length)
        lengths = {name: buffer.seq_len for name, buffer in ours_cache.buffers.items()}
        out = layer(token, cache=ours_cache)[0]
        for name, buffer in ours_cache.buffers.items():
            buffer.seq_len = lengths[name]
        return out

    def hf():
        position = torch.tensor([[cached]])
        out = peer(
            token[:1],
            position_embeddings=rotary(token[:1], position),
            attention_mask=torch.zeros(1, 1, 1, cached + 1),  # what create_causal_mask gives one new token
            past_key_values=hf_cache,
            position_ids=position,
        )[0]
        layer = hf_cache.layers[0]
        layer.keys, layer.values = layer.keys[:, :, :-1], layer.values[:, :, :-1]
        layer.indexer_keys = layer.indexer_keys[:, :-1]
        return out

    sparse_out = step(ours)
    print(f"   read per step: {ours_cache.read_nbytes / 2**20:.1f} MiB of the {ours_cache.nbytes / 2**20:.1f} MiB held")
    contenders = {"ours": lambda: step(ours), "dense": lambda: step(dense)}
    if with_hf:
        check("DSA decode step vs HF", sparse_out[:1], hf())
        contenders["hf"] = hf
    times = race(contenders, rounds=args.rounds, warmup=args.warmup)
    line = (
        f"   ours {ms(times['ours'])}   dense {ms(times['dense'])}   dense/ours {times['dense'] / times['ours']:.1f}x"
    )
    if with_hf:
        line += f"   HF {ms(times['hf'])}   HF/ours {times['hf'] / times['ours']:.1f}x"
    print(line + "  (goal >= 4x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    args.rounds, args.warmup, args.cached, args.prefill = (3, 1, 8192, 512) if args.quick else (9, 2, 32768, 1024)
    # (heads, d_model, batch, compare with HF): V3.2's 128 heads, where HF's up-projection of 32k latents would need
    # ~8 GB a step, and 16 heads with HF
    args.decode_shapes = [(128, 2048, 1, False), (128, 2048, 4, False), (16, 2048, 1, True)]
    torch.set_num_threads(args.threads)
    print(f"DeepSeek layers benchmark{' (quick)' if args.quick else ''}: {cpu_name()}, torch {torch.__version__}, ")
    print(f"{torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.2f} at start")
    with torch.inference_mode():
        dsa_prefill(args)
        v4_prefill(args)
        dsa_decode(args)
    print(f"\nload average {os.getloadavg()[0]:.2f} at end")
    if MISMATCHES:
        print("\nNUMERICS MISMATCH:\n  " + "\n  ".join(MISMATCHES))
        return 1
    print(f"numerics: every compared pair agrees to {TOLERANCE:.0e} (max abs diff, float32)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
