"""Prefill speed of the designs issue 44 added, each layer as a ratio of our time to HF transformers' own module at
the same shapes and weights, measured side by side in one run (our layer built by attn_core.hf.build_layer, its
state_dict loaded strictly from HF's; HF driven as its model drives it, with the test suite's peers).

    python benchmarks/new_designs.py            # the figures (a few minutes on 2 loaded cores)
    python benchmarks/new_designs.py --quick    # a smoke run: fewer repeats, 256 tokens

Each line: a prefill of TOKENS tokens, batch 1, float32, into a fresh cache on both sides; HF eager attention (its
modules' own path for these designs on a CPU). Budget: <= 1.1x HF's time. Outputs are checked as the peer tests do
(2e-5 softmax layers, 1e-4 state layers); the exactness figures themselves are the peer tests' (tests/core/test_peer_*).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
import transformers
from transformers import Gemma3nTextConfig, Gemma4TextConfig
from transformers.models.gemma3n.modeling_gemma3n import Gemma3nRotaryEmbedding, Gemma3nTextAttention
from transformers.models.gemma4.modeling_gemma4 import Gemma4TextAttention, Gemma4TextRotaryEmbedding

from benchmarks import core, mamba_layers
from benchmarks.core import check, cpu_name, ms, race
from tests.core import test_peer_glm_dsa as glm
from tests.core import test_peer_kv_sharing as sharing
from tests.core import test_peer_llama4_smollm3 as llama
from tests.core import test_peer_minimax as minimax

SOFTMAX_TOL, STATE_TOL = 2e-5, 1e-4
# One size for every softmax design: 16 query heads of 64 sharing 4 KV heads, d_model 1024 (Llama 3.2 1B's heads)
WIDE = dict(hidden_size=1024, num_attention_heads=16, num_key_value_heads=4, head_dim=64)
Pair = tuple[Callable[[], object], Callable[[], object], Callable[[], tuple[torch.Tensor, torch.Tensor]]]


def x_of(tokens: int, width: int = 1024) -> torch.Tensor:
    return torch.randn(1, tokens, width, generator=torch.Generator().manual_seed(0))


def _fresh(peer) -> None:
    """A peer as its model starts a sequence: an empty cache, position 0."""
    kind = type(peer.cache)
    peer.cache = kind() if kind.__name__ == "MiniMaxCache" else kind(config=peer.config)
    peer.seen = 0
    if isinstance(peer, sharing.Peer):
        peer.shared = {}  # the K/V its producer passed its consumers


def single(ours, peer, x: torch.Tensor) -> Pair:
    """One layer against one HF module: ours into a new cache, HF's into a fresh one."""

    def hf():
        _fresh(peer)
        return peer(x)

    def mine():
        return ours(x, cache=ours.new_cache(1))[0]

    return mine, hf, lambda: (mine(), hf())


def llama4_chunked(tokens: int) -> Pair:
    ours, peer = llama.llama4(0, **WIDE, attention_chunk_size=256, num_hidden_layers=4)
    return single(ours, peer, x_of(tokens))


def smollm3_nope(tokens: int) -> Pair:
    ours, peer = llama.smollm3(3, **WIDE, num_hidden_layers=4)
    return single(ours, peer, x_of(tokens))


def _shared_pair(config, attention, rotary, tokens: int) -> Pair:
    """A full layer (3) and the layer that reads its cache (5), ours and HF's, one prefill through both."""
    config._attn_implementation = "eager"
    producer, consumer, peer = sharing._pair(sharing.Peer(attention, rotary(config), config, 3, 5))
    x = x_of(tokens)
    xc = torch.randn(x.shape, generator=torch.Generator().manual_seed(1))

    def mine():
        cache = producer.new_cache(1)
        return producer(x, cache=cache)[0], consumer(xc, cache=cache)[0]

    def hf():
        _fresh(peer)
        return peer(x, xc)

    return mine, hf, lambda: (torch.cat(mine(), 1), torch.cat(hf(), 1))


def gemma3n_shared(tokens: int) -> Pair:
    config = Gemma3nTextConfig(**WIDE, **sharing.SHARED, sliding_window=512, attention_bias=False)
    return _shared_pair(config, Gemma3nTextAttention, Gemma3nRotaryEmbedding, tokens)


def gemma4_k_eq_v(tokens: int) -> Pair:
    config = Gemma4TextConfig(
        **WIDE,
        **sharing.SHARED,
        sliding_window=512,
        global_head_dim=128,
        num_global_key_value_heads=2,
        attention_k_eq_v=True,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0},
        },
    )
    return _shared_pair(config, Gemma4TextAttention, Gemma4TextRotaryEmbedding, tokens)


def glm5_shared(tokens: int) -> Pair:
    """GLM-5's full DSA layer and the shared layer reading its top-k, one prefill through both."""
    full, shared, peer = glm.glm_pair(
        hidden_size=1024,
        num_attention_heads=16,
        num_key_value_heads=16,
        q_lora_rank=384,
        kv_lora_rank=256,
        qk_nope_head_dim=64,
        qk_rope_head_dim=32,
        v_head_dim=64,
        index_n_heads=16,
        index_head_dim=64,
        index_topk=256,
    )
    x = x_of(tokens)

    def mine():
        full_cache, shared_cache = full.new_cache(1), shared.new_cache(1)
        return full(x, cache=full_cache)[0], shared(x, cache=shared_cache, topk_from=full_cache)[0]

    def hf():
        _fresh(peer)
        return peer(x)

    return mine, hf, lambda: (torch.cat(mine(), 1), torch.cat(hf(), 1))


def minimax_lightning(tokens: int) -> Pair:
    ours, peer = minimax.minimax_pair(1, hidden_size=1024, num_attention_heads=16, head_dim=64, block_size=256)
    return single(ours, peer, x_of(tokens))


def nemotron_mamba2(tokens: int) -> Pair:
    ours, hf, _config = mamba_layers.pair()
    x = x_of(tokens)
    mine = lambda: ours(x)[0]  # noqa: E731
    theirs = lambda: hf(x)  # noqa: E731
    return mine, theirs, lambda: (mine(), theirs())


DESIGNS: dict[str, tuple[str, Callable[[int], Pair], float]] = {
    "llama4-chunked": ("Llama 4 chunked layer (chunk 256, q/k norm) vs Llama4TextAttention", llama4_chunked, SOFTMAX_TOL),
    "smollm3-nope": ("SmolLM3 NoPE layer vs SmolLM3Attention", smollm3_nope, SOFTMAX_TOL),
    "gemma3n-shared": ("Gemma 3n full layer + the layer reading it vs Gemma3nTextAttention x2", gemma3n_shared, SOFTMAX_TOL),
    "gemma4-k-eq-v": ("Gemma 4 K=V global layer (2 KV heads of 128) + the layer reading it vs Gemma4TextAttention x2",
                      gemma4_k_eq_v, SOFTMAX_TOL),
    "glm5-shared": ("GLM-5 full DSA layer + shared layer (top-256) vs GlmMoeDsaAttention x2", glm5_shared, SOFTMAX_TOL),
    "minimax-lightning": ("MiniMax lightning layer (block 256) vs MiniMaxLightningAttention", minimax_lightning,
                          STATE_TOL),
    "nemotron-mamba2": ("Nemotron-H Mamba-2 mixer (32 heads of 64, state 128) vs NemotronHMamba2Mixer",
                        nemotron_mamba2, STATE_TOL),
}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats and 256 tokens")
    parser.add_argument("--only", nargs="*", choices=list(DESIGNS), help="these designs only")
    args = parser.parse_args()
    tokens, rounds, warmup = (256, 3, 1) if args.quick else (1024, 5, 1)
    print("New designs' prefill against HF" + (" (quick mode: figures indicative only)" if args.quick else ""))
    print(
        f"{cpu_name()}, {torch.get_num_threads()} torch thread(s), torch {torch.__version__}, transformers "
        f"{transformers.__version__}, Python {platform.python_version()}; {tokens} tokens, batch 1, float32, "
        f"medians of {rounds} interleaved runs"
    )
    print("\n| design's layer | ours | HF | ours / HF | max abs diff |\n| --- | --- | --- | --- | --- |")
    with torch.no_grad():
        for key in args.only or DESIGNS:
            what, make, tolerance = DESIGNS[key]
            mine, hf, both = make(tokens)
            ours_out, hf_out = both()
            diff = check(key, ours_out, hf_out, tolerance)
            times = race({"ours": mine, "hf": hf}, rounds=rounds, warmup=warmup)
            ratio = times["ours"] / times["hf"]
            print(f"| {what} | {ms(times['ours']).strip()} | {ms(times['hf']).strip()} | {ratio:.2f}x | {diff:.1e} |")
    print(f"\nload average {os.getloadavg()[0]:.2f} at end")
    if core.MISMATCHES:
        print("\nNUMERICS MISMATCH:\n  " + "\n  ".join(core.MISMATCHES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
