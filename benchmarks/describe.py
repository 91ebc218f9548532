"""How long the core takes to size caches without holding them: describe_model(...).cache_bytes at a million tokens
for every published model, and each state layer's meta-device cache_after(1M tokens, batch 8). Both run on every
rerun of /axes and the kv_cache page; they were timed asserts in the tests (< 1 s for all models, < 0.5 s a layer),
which a loaded machine fails without a fault: here they are printed.

    python benchmarks/describe.py        budget: all published models together well under 1 s; a state layer < 0.5 s
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from attn_core import PUBLISHED, describe_model
from benchmarks.published_small import LAYER_KINDS, small_layer

TOKENS = 1 << 20


def main() -> None:
    torch.set_num_threads(1)
    print(
        f"{platform.processor() or platform.machine()}, torch {torch.__version__}, one thread; CPU time, {TOKENS:,} tokens, bf16"
    )
    # The first call in a process pays one-time imports (V4's meta-device torch.cat brings in torch._dynamo, ~1.7 s):
    # a page's first visit sees it, every later rerun sees the second column.
    totals = [0.0, 0.0]
    print(f"  {'describe_model.cache_bytes':28s} {'first':>9s} {'again':>9s}")
    for name, config in PUBLISHED.items():
        spent = []
        for _ in totals:
            began = time.process_time()
            held = describe_model(config).cache_bytes(tokens=TOKENS, batch=1, dtype="bfloat16")
            spent.append(time.process_time() - began)
        totals = [t + s for t, s in zip(totals, spent, strict=True)]
        print(f"  {name:28s} {spent[0] * 1e3:6.1f} ms {spent[1] * 1e3:6.1f} ms   {held / 2**30:8.2f} GiB")
    print(
        f"  {'every published model':28s} {totals[0] * 1e3:6.1f} ms {totals[1] * 1e3:6.1f} ms   (budget: again, < 1 s)"
    )
    print("cache_after(1,000,000 tokens, batch 8) on the meta device, per kind of layer (budget 500 ms each)")
    for name, kind, index in LAYER_KINDS:
        layer = small_layer(name, index)
        began = time.process_time()
        layer.cache_after(1_000_000, batch_size=8)
        print(f"  {name + ': ' + kind:48s} {(time.process_time() - began) * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
