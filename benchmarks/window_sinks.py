"""StreamingLLM's attention sinks on trained weights: the lab's evaluation text under sliding windows of 64/128/256/512
tokens with 0/1/4 kept first tokens, in every layer and in Gemma 3's (5:1) and gpt-oss's (1:1) local/global
patterns, written to assets/window_table.json beside the lab's other stored tables.

    python benchmarks/window_sinks.py                          # every row; about a minute a row on a busy 2-core box
    python benchmarks/window_sinks.py --keys w128-s0-every,w128-s1-every --out /tmp/part.json
    python benchmarks/window_sinks.py --merge /tmp/a.json /tmp/b.json      # rows of several runs into --out
    python benchmarks/window_sinks.py --keys w128-s1-gemma3-b4 --reuse-original --out /tmp/more.json
    python benchmarks/window_sinks.py --piece 512 --keys w128-s0-every,w128-s1-every --out /tmp/short.json

A key ending in -b4 is a window with sinks over a 4-bit cache (with_window(with_cache_bits(lm, 4, residual=0), ...):
the global layers keep KIVI's 4-bit codes, keys per channel; the windowed layers hold their window exactly).

The evaluation text is the lab's (explorer.probes.lab: the first 4,096 tokens of pydoc_data.topics), scored in
pieces of PIECE = 2,048 tokens (not the lab's 512: a window of 512 would never cut a 512-token piece, and the longer
the piece, the more of its tokens lie past the window). The original is measured on the same pieces; each row keeps
its per-piece NLL sums (a test can recompute one), its cache at the lab's contexts and how long it took. --piece 512
scores the lab's own pieces instead (as the issue's prototype did), for the README's comparison, not for the table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from attn_core.pretrained import (
    PATTERNS,
    PretrainedLM,
    gguf_path,
    global_layers,
    load_pretrained,
    with_cache_bits,
    with_window,
)
from benchmarks.lab_table import file_sha256, machine
from explorer import lab

TABLE_PATH = lab.TABLE_PATH.with_name("window_table.json")
PIECE = 2048
WINDOWS = (64, 128, 256, 512)
SINKS = (0, 1, 4)
CONTEXTS = (512, 1024, 2048, 4096, 8192, 32768)  # cache figures stored for these contexts (the lab's and 32k)


def row_key(window: int, sinks: int, pattern: str) -> str:
    return f"w{window}-s{sinks}-{pattern}"


ROWS: dict[str, dict[str, Any]] = {
    row_key(w, s, p): {"window": w, "sink_tokens": s, "pattern": p} for p in PATTERNS for w in WINDOWS for s in SINKS
}
# a window with sinks and a quantised cache: the token axis and the bits axis together (global layers quantised)
CACHE_BITS = {"bits": 4, "group_size": 32, "residual": 0, "keys": "channel"}
ROWS |= {
    row_key(128, 1, p) + "-b4": {"window": 128, "sink_tokens": 1, "pattern": p, "cache_bits": CACHE_BITS}
    for p in ("gemma3", "gpt-oss")
}


def measure(model: PretrainedLM, eval_ids: list[int], piece: int = PIECE) -> dict[str, Any]:
    started = time.perf_counter()
    sums = lab.window_nll_sums(model, eval_ids, window=piece)
    return {
        "perplexity": lab.perplexity_of(sums),
        "window_nll_sums": sums,
        "cache_nbytes": {str(t): model.cache_nbytes(t) for t in CONTEXTS},
        "seconds": {"evaluate": round(time.perf_counter() - started, 2)},
    }


def header(lm: PretrainedLM, eval_ids: list[int], text_hash: str, piece: int = PIECE) -> dict[str, Any]:
    return {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "dtype": "float32",
        "evaluation": {
            "source": "pydoc_data.topics, every topic in sorted order (Python's language reference)",
            "text_sha256": text_hash,
            "tokens": len(eval_ids),
            "window": piece,
            "which": f"first {lab.EVAL_TOKENS} tokens, scored in non-overlapping pieces of {piece}",
        },
        "model": {"name": lm.config.name, "gguf_sha256": file_sha256(gguf_path())},
        "contexts": list(CONTEXTS),
    }


def merged(paths: list[Path]) -> dict[str, Any]:
    """One table from several runs on the same inputs (the first run's header; rows in ROWS' order)."""
    tables = [json.loads(path.read_text(encoding="utf-8")) for path in paths]
    first = tables[0]
    for other in tables[1:]:
        if other["evaluation"] != first["evaluation"] or other["model"] != first["model"]:
            raise SystemExit("these runs measured different inputs: not merged")
    rows = {row["key"]: row for table in tables for row in table["rows"]}
    order = ["original", *ROWS]
    return {**first, "rows": [rows[key] for key in order if key in rows]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", default=",".join(ROWS), help="row keys, comma-separated (the original always)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a busy 2-core box)")
    parser.add_argument("--out", type=Path, default=TABLE_PATH)
    parser.add_argument("--piece", type=int, default=PIECE, help="tokens per scored piece (the stored table's: 2048)")
    parser.add_argument("--merge", type=Path, nargs="+", help="merge these runs' tables into --out and stop")
    parser.add_argument(
        "--reuse-original", action="store_true", help="the original's row from the stored table, when its inputs match"
    )
    args = parser.parse_args()
    if args.merge:
        table = merged(args.merge)
        args.out.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out} ({len(table['rows'])} rows)")
        return
    torch.set_num_threads(args.threads)
    text = lab.reference_text()
    text_hash = lab.text_sha256(text)
    if text_hash != lab.REFERENCE_TEXT_SHA256:
        print(f"note: this Python's pydoc_data text differs from the pinned one ({text_hash[:12]}…)", file=sys.stderr)
    lm = load_pretrained()
    eval_ids, _ = lab.split_tokens(lm, text)
    table = header(lm, eval_ids, text_hash, args.piece)
    stored = json.loads(TABLE_PATH.read_text(encoding="utf-8")) if TABLE_PATH.exists() else None
    if (
        args.reuse_original
        and stored
        and (stored["evaluation"], stored["model"])
        == (
            table["evaluation"],
            table["model"],
        )
    ):
        original = next(row for row in stored["rows"] if row["key"] == "original")
    else:
        original = {"key": "original", "window": None, "sink_tokens": 0, "pattern": None}
        original |= measure(lm, eval_ids, args.piece)
    original["times_original"] = 1.0
    rows = [original]
    print(f"{'original':>16}: perplexity {original['perplexity']:8.2f}", flush=True)

    def write() -> None:
        args.out.write_text(json.dumps({**table, "rows": rows}, indent=1) + "\n", encoding="utf-8")

    write()
    for key in args.keys.split(","):
        spec = ROWS[key]
        layers = global_layers(spec["pattern"], lm.config.n_layers)
        source = with_cache_bits(lm, **spec["cache_bits"]) if "cache_bits" in spec else lm
        model = with_window(source, spec["window"], spec["sink_tokens"], layers)
        row = {"key": key, **spec, "global_layers": list(layers), **measure(model, eval_ids, args.piece)}
        row["times_original"] = row["perplexity"] / original["perplexity"]
        rows.append(row)
        write()  # after every row: a run stopped early keeps what it measured
        share = row["cache_nbytes"]["8192"] / original["cache_nbytes"]["8192"]
        print(
            f"{key:>16}: perplexity {row['perplexity']:8.2f} = {row['times_original']:5.2f}x the original;"
            f" cache at 8k {share:6.1%} of the original's; {row['seconds']['evaluate']:.0f} s",
            flush=True,
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
