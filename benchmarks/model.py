"""The trained model (SmolLM2-135M through attn_core) against HF transformers' LlamaForCausalLM with the same weights,
measured side by side in one run, as ratios (budgets from the design: forward with every map <= 1.0x, greedy decoding
<= 0.8x HF generate with its cache), plus load time from the converted cache.

    python benchmarks/model.py [--threads 1] [--repeats 7] [--new-tokens 32]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from attn_core.pretrained import gguf_path, load_pretrained

PROSE = (
    "Attention lets every token look at the tokens before it. In grouped-query attention, several query heads share "
    "one key and value head, which shrinks the cache that a model keeps while it writes. "
)


def median_seconds(run, repeats: int) -> tuple[float, float, float]:
    run()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), max(times)


def paired(ours, theirs, repeats: int) -> tuple[list[float], list[float]]:
    """Alternate the two so that load on a shared machine falls on both alike."""
    ours(), theirs()
    a, b = [], []
    for _ in range(repeats):
        for fn, out in ((ours, a), (theirs, b)):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return a, b


def line(what: str, a: list[float], b: list[float], peer: str, budget: str) -> None:
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{what:<44} ours {ma * 1e3:8.1f} ms   {peer} {mb * 1e3:8.1f} ms   ratio {ma / mb:5.2f}x   budget {budget}")


def load_time() -> float:
    """In a fresh process with torch imported (as a running server has it): load_pretrained() from the converted
    cache, the time a page's first use of the model pays."""
    code = (
        "import time, torch, attn_core.pretrained as p; t = time.perf_counter(); p.load_pretrained(); "
        "print(time.perf_counter() - t)"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--new-tokens", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from transformers import LlamaForCausalLM

    lm = load_pretrained()
    path = gguf_path()
    hf = LlamaForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    )
    hf = hf.eval().requires_grad_(False)
    print(f"torch {torch.__version__}, {args.threads} thread(s), medians of {args.repeats}, float32")
    print(f"load from the converted cache in a fresh process: {load_time():.2f} s (budget 2 s)")

    ids = torch.tensor([lm.encode(PROSE * 6)[:128]])
    with torch.inference_mode():
        ours_maps, theirs_maps = paired(
            lambda: lm(ids, return_attention=True), lambda: hf(ids, output_attentions=True), args.repeats
        )
    line("forward, 128 tokens, every attention map", ours_maps, theirs_maps, "HF eager", "<= 1.0x")

    short = lm.chat_ids([{"role": "user", "content": "Explain attention in one paragraph."}])
    long = lm.chat_ids([{"role": "user", "content": "Summarise this text.\n" + PROSE * 22}])
    for prompt in (short, long):
        greedy_row(lm, hf, prompt, args.new_tokens, args.repeats)


def greedy_row(lm, hf, prompt: list[int], n: int, repeats: int) -> None:
    """Greedy decoding of exactly n tokens (EOS ignored by both) after prompt."""
    hf_kwargs = {"max_new_tokens": n, "min_new_tokens": n, "do_sample": False}
    with torch.inference_mode():
        expected = hf.generate(torch.tensor([prompt]), **hf_kwargs)[0, len(prompt) :].tolist()
    ours_tokens = lm.generate(prompt, max_new_tokens=n, stop_at_eos=False)
    same = ours_tokens == expected[: len(ours_tokens)]

    def ours_generate() -> None:
        lm.generate(prompt, max_new_tokens=n, stop_at_eos=False)

    def hf_generate() -> None:
        with torch.inference_mode():
            hf.generate(torch.tensor([prompt]), **hf_kwargs)

    a, b = paired(ours_generate, hf_generate, repeats)
    line(f"greedy, {len(prompt)}-token prompt + {n}", a, b, "HF generate", "<= 0.8x")
    print(f"   same tokens as HF: {same}")


if __name__ == "__main__":
    main()
