"""The core on a GPU: every published layer's decoding step and prefill, timed, with the bytes a step reads and the
fraction of the card's bandwidth that makes; HF transformers' module beside ours where the benchmark wires one.

    python benchmarks/gpu.py                 # on a CUDA machine: the prepared run (<= 5 minutes), JSON to stdout
    python benchmarks/gpu.py --out gpu.json  # the same, written to a file
    python benchmarks/gpu.py --cpu           # the small CPU mode (a few seconds; what a machine without a GPU runs)

GPU run, bfloat16, every kind of layer of every model in attn_core.published (its first layer of that kind, seeded):
decoding step at B=1 and 32 after 4k, 32k and 128k cached tokens (V4's layers also B=32 at 4k), prefill of 8k and
32k tokens at B=1. A step's bytes are the layer's weights plus what its cache's accounting says the step reads
(read_nbytes, from the core's meta-device cache_after: nothing estimated here); bandwidth is bytes / median time.
Caches are filled with random numbers at the right shapes (the meta cache's tensors made real), not by prefilling:
a decoding step's cost does not depend on the numbers. HF's LlamaAttention / Qwen3Attention run beside Llama 3 8B's,
SmolLM2-135M's and Qwen3-8B's layers with the same weights (a prefill also compares the outputs) and caches of the
same size; other peers are not wired yet ("hf_ms": null).
Every case stops at the run's time budget: what did not fit is listed as skipped, never guessed.

Without CUDA the CPU mode runs the same code on the published models' layers made small (benchmarks/published_small.py)
at tens of tokens, and says that the GPU figures need a GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from torch import nn

from attn_core.hf import build_layer, read_layer, stands_alone
from attn_core.published import PUBLISHED, published_config

# Cards' memory bandwidth, bytes/s (vendors' figures), found by a substring of torch.cuda.get_device_name().
CARD_BANDWIDTH = {"H200": 4.8e12, "H100": 3.35e12, "A100": 2.0e12, "L40S": 0.864e12}
# HF's module for the layers whose peer the benchmark wires: transformers' model module name, and its class prefix.
HF_PEERS = {"Llama 3 8B": ("llama", "Llama"), "SmolLM2-135M": ("llama", "Llama"), "Qwen3-8B": ("qwen3", "Qwen3")}


@dataclasses.dataclass(frozen=True)
class Plan:
    decode: tuple[tuple[int, int], ...]  # (batch, cached tokens)
    v4_decode: tuple[tuple[int, int], ...]  # extra cases for DeepSeek-V4's layers
    prefill: tuple[int, ...]  # prompt tokens at B=1
    steps: int
    budget_s: float
    dtype: torch.dtype


GPU_PLAN = Plan(
    decode=tuple((b, t) for b in (1, 32) for t in (4096, 32768, 131072)),
    v4_decode=((32, 4096),),
    prefill=(8192, 32768),
    steps=10,
    budget_s=280.0,
    dtype=torch.bfloat16,
)
CPU_PLAN = Plan(
    decode=((1, 32), (2, 64)), v4_decode=((2, 160),), prefill=(48,), steps=3, budget_s=60.0, dtype=torch.float32
)


def layer_cases(small: bool) -> list[tuple[str, str, int, dict[str, Any]]]:
    """(model, kind, layer index, config): the first layer of each kind of every published model."""
    if small:
        from benchmarks.published_small import LAYER_KINDS, small_config

        return [(name, kind, index, small_config(name)) for name, kind, index in LAYER_KINDS]
    cases = []
    for name in PUBLISHED:
        hf, seen = published_config(name), set()
        count = hf.get("num_hidden_layers") or hf["text_config"]["num_hidden_layers"]
        for index in range(count):
            kind, config = read_layer(hf, index)
            if kind not in seen and stands_alone(config):
                seen.add(kind)
                cases.append((name, kind, index, hf))
    return cases


def made_real(value: Any, device: torch.device, seen: set[int] | None = None) -> Any:
    """A meta-device cache (cache_after's) with every tensor replaced, in place, by random numbers of its shape and
    dtype on `device` (integers: zeros); recurses into attributes, dicts and lists."""
    seen = set() if seen is None else seen
    if isinstance(value, torch.Tensor):
        if value.device.type != "meta":
            return value
        if value.is_floating_point():
            return torch.randn(value.shape, device=device, dtype=value.dtype)  # drawn where it is used: GBs
        return torch.zeros(value.shape, dtype=value.dtype, device=device)
    if id(value) in seen or isinstance(value, (int, float, str, bool, type(None), torch.dtype, torch.device)):
        return value
    seen.add(id(value))
    if isinstance(value, dict):
        for key in value:
            value[key] = made_real(value[key], device, seen)
    elif isinstance(value, list):
        value[:] = [made_real(item, device, seen) for item in value]
    elif hasattr(value, "__dict__"):
        for key, item in vars(value).items():
            setattr(value, key, made_real(item, device, seen))
    return value


def timed(call, steps: int, device: torch.device) -> float:
    """Median seconds of `steps` calls after two warm-up calls."""
    samples = []
    for index in range(steps + 2):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        call()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if index >= 2:
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def weight_bytes(layer: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in layer.parameters())


def hf_peer(name: str, hf: dict[str, Any], ours: nn.Module, device: torch.device, dtype: torch.dtype):
    """HF's attention module for model `name` (HF_PEERS) with our layer's weights (strict), and its rotary
    embedding."""
    import importlib

    import transformers

    module, prefix = HF_PEERS[name]
    modeling = importlib.import_module(f"transformers.models.{module}.modeling_{module}")
    config = getattr(transformers, f"{prefix}Config")(**{k: v for k, v in hf.items() if k != "model_type"})
    config._attn_implementation = "sdpa"
    peer = getattr(modeling, f"{prefix}Attention")(config, layer_idx=0).to(device=device, dtype=dtype).eval()
    peer.load_state_dict(ours.state_dict(), strict=True)
    return peer, getattr(modeling, f"{prefix}RotaryEmbedding")(config).to(device)


def decode_case(
    case, layer: nn.Module, batch: int, tokens: int, plan: Plan, device: torch.device, card: float | None
) -> dict:
    name, kind, index, hf = case
    cache = layer.cache_after(tokens, batch_size=batch)
    read = cache.read_nbytes
    cache = made_real(cache, device)
    width = layer.cfg.d_model
    token = torch.randn(batch, 1, width, generator=torch.Generator().manual_seed(1)).to(device, plan.dtype)
    with torch.no_grad():
        seconds = timed(lambda: layer(token, cache=cache), plan.steps, device)
    step_bytes = weight_bytes(layer) + read
    row = {"model": name, "kind": kind, "layer": index, "batch": batch, "cached_tokens": tokens, "ms": seconds * 1e3}
    row |= {"weight_bytes": weight_bytes(layer), "cache_read_bytes": read, "bytes_per_s": step_bytes / seconds}
    row |= {"fraction_of_card": None if card is None else step_bytes / seconds / card, "hf_ms": None}
    if name in HF_PEERS:
        row["hf_ms"] = hf_decode_ms(name, hf, layer, batch, tokens, token, plan, device)
    return row


def hf_decode_ms(
    name: str, hf, layer, batch: int, tokens: int, token: torch.Tensor, plan: Plan, device: torch.device
) -> float:
    from transformers import DynamicCache

    peer, rotary = hf_peer(name, hf, layer, device, plan.dtype)
    cfg = layer.cfg
    shape = (batch, cfg.n_kv_heads, tokens, cfg.head_dim)
    hf_cache = DynamicCache(config=peer.config)
    keys = torch.randn(shape, device=device, dtype=plan.dtype)
    hf_cache.update(keys, torch.randn_like(keys), 0)
    del keys
    position = torch.tensor([[tokens]], device=device)
    with torch.no_grad():
        embeddings = rotary(token, position)
        step = lambda: peer(token, position_embeddings=embeddings, attention_mask=None, past_key_values=hf_cache)  # noqa: E731
        return timed(step, plan.steps, device) * 1e3


def prefill_case(case, layer: nn.Module, tokens: int, plan: Plan, device: torch.device) -> dict:
    name, kind, index, hf = case
    x = torch.randn(1, tokens, layer.cfg.d_model, generator=torch.Generator().manual_seed(2)).to(device, plan.dtype)
    with torch.no_grad():
        seconds = timed(lambda: layer(x, cache=layer.new_cache(1)), max(2, plan.steps // 3), device)
        row = {"model": name, "kind": kind, "layer": index, "prompt_tokens": tokens, "ms": seconds * 1e3, "hf_ms": None}
        if name in HF_PEERS:
            peer, rotary = hf_peer(name, hf, layer, device, plan.dtype)
            embeddings = rotary(x, torch.arange(tokens, device=device)[None])
            # HF's module alone is not causal without a mask: is_causal through SDPA's own path (no mask tensor)
            call = lambda: peer(x, position_embeddings=embeddings, attention_mask=None, is_causal=True)  # noqa: E731
            row["hf_ms"] = timed(call, max(2, plan.steps // 3), device) * 1e3
            ours, theirs = layer(x)[0].float(), call()[0].float()
            row["hf_max_abs_diff"] = (ours - theirs).abs().max().item()  # same weights: the dtype's rounding only
    return row


def card_bandwidth(device: torch.device) -> tuple[str, float | None]:
    if device.type != "cuda":
        return "cpu", None
    name = torch.cuda.get_device_name(device)
    return name, next((bw for key, bw in CARD_BANDWIDTH.items() if key in name), None)


def run(plan: Plan, device: torch.device, small: bool) -> dict:
    card, bandwidth = card_bandwidth(device)
    deadline = time.monotonic() + plan.budget_s
    report: dict[str, Any] = {"device": card, "card_bytes_per_s": bandwidth, "dtype": str(plan.dtype)}
    report |= {"torch": torch.__version__, "date": time.strftime("%Y-%m-%d", time.gmtime())}
    report |= {"decode": [], "prefill": [], "skipped": [], "failed": []}
    torch.manual_seed(0)
    for case in layer_cases(small):
        name, kind = case[0], case[1]
        layer = build_layer(case[3], case[2], seed=0, device=device, dtype=plan.dtype).eval()
        jobs = [("decode", b, t) for b, t in plan.decode]
        jobs += [("decode", b, t) for b, t in plan.v4_decode if name.startswith("DeepSeek-V4")]
        jobs += [("prefill", 1, t) for t in plan.prefill]
        for what, batch, tokens in jobs:
            label = f"{name}:{kind} {what} B={batch} T={tokens}"
            if time.monotonic() > deadline:
                report["skipped"].append(label)
                continue
            try:
                if what == "decode":
                    report["decode"].append(decode_case(case, layer, batch, tokens, plan, device, bandwidth))
                else:
                    report["prefill"].append(prefill_case(case, layer, tokens, plan, device))
            except (RuntimeError, ValueError) as error:  # out of memory included: said, and the run goes on
                report["failed"].append({"case": label, "error": str(error).splitlines()[0][:300]})
            finally:
                if device.type == "cuda":
                    torch.cuda.empty_cache()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="the small CPU mode, even where CUDA is available")
    parser.add_argument("--out", type=Path, help="write the JSON here instead of stdout")
    args = parser.parse_args(argv)
    on_gpu = torch.cuda.is_available() and not args.cpu
    if not on_gpu:
        print("No CUDA device (or --cpu): the small CPU mode. The GPU figures need a GPU.", file=sys.stderr)
    report = run(GPU_PLAN if on_gpu else CPU_PLAN, torch.device("cuda" if on_gpu else "cpu"), small=not on_gpu)
    report["mode"] = "gpu" if on_gpu else "cpu (small layers; the GPU figures need a GPU)"
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        print(text)
    return 1 if report["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
