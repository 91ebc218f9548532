"""The trade-off lab's table: perplexity of the trained model and of each conversion (explorer.lab.LAB_POINTS) on
the evaluation text, with each model's KV cache per token, written to assets/lab_table.json for the lab page.

    python benchmarks/lab_table.py            # a few minutes on 2 cores; --threads to change torch's threads

The JSON carries the inputs' hashes (evaluation text, model file), the date, the machine, the token counts, seconds
per conversion and evaluation, and per-window NLL sums (tests/lab recomputes one window of one point and compares).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from attn_core.pretrained import gguf_path, load_pretrained
from explorer import lab


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {torch.get_num_threads()} torch thread(s), torch {torch.__version__}, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a busy 2-core box)")
    parser.add_argument("--out", type=Path, default=lab.TABLE_PATH)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    text = lab.reference_text()
    text_hash = lab.text_sha256(text)
    if text_hash != lab.REFERENCE_TEXT_SHA256:
        print(f"note: this Python's pydoc_data text differs from the pinned one ({text_hash[:12]}…)", file=sys.stderr)
    lm = load_pretrained()
    eval_ids, calibration_ids = lab.split_tokens(lm, text)
    started = time.perf_counter()
    calibration = lab.lab_calibration(lm, calibration_ids)
    calibration_seconds = time.perf_counter() - started
    print(f"calibration: {calibration.tokens} tokens, {calibration_seconds:.1f} s", flush=True)

    rows = []
    for point in lab.LAB_POINTS:
        started = time.perf_counter()
        conversion = lab.point_conversion(lm, point, calibration)
        model = lm if conversion is None else conversion.model
        convert_seconds = time.perf_counter() - started
        started = time.perf_counter()
        windows = lab.window_nll_sums(model, eval_ids)
        eval_seconds = time.perf_counter() - started
        row = {
            "key": point.key,
            "label": point.label,
            "variant": point.variant,
            "options": point.options,
            "attention": model.attention.as_dict(),
            "cache_bytes_per_token": lab.cache_bytes_per_token(model),
            "cache_bytes_per_token_per_layer": model.kv_cache_bytes_per_token(),
            "perplexity": lab.perplexity_of(windows),
            "window_nll_sums": windows,
            "kept": conversion.report.mean_kept() if conversion is not None else {},
            "seconds": {"convert": round(convert_seconds, 2), "evaluate": round(eval_seconds, 2)},
        }
        rows.append(row)
        print(
            f"{point.key:>14}: perplexity {row['perplexity']:10.2f}  cache {row['cache_bytes_per_token'] / 1024:7.2f} "
            f"KiB/token  convert {convert_seconds:5.1f} s  evaluate {eval_seconds:5.1f} s",
            flush=True,
        )

    table = {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "dtype": "float32",
        "evaluation": {
            "source": "pydoc_data.topics, every topic in sorted order (Python's language reference)",
            "text_sha256": text_hash,
            "tokens": len(eval_ids),
            "window": lab.WINDOW,
            "which": f"first {lab.EVAL_TOKENS} tokens",
        },
        "calibration": {
            "tokens": calibration.tokens,
            "which": f"last {lab.CALIBRATION_TOKENS} tokens of the same text (disjoint from evaluation)",
            "seconds": round(calibration_seconds, 2),
        },
        "model": {"name": lm.config.name, "gguf_sha256": file_sha256(gguf_path())},
        "rows": rows,
    }
    args.out.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
