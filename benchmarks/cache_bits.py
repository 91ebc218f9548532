"""Quantised KV caches on the trained model (KIVI; attn_core.pretrained.with_cache_bits): perplexity on the lab's
evaluation text at 8, 4 and 2 bits, keys per channel and per token, against the original; and issue 36's goals.

    python benchmarks/cache_bits.py                      # 20 evaluations: 32 minutes at load average 15 on 2 cores
    python benchmarks/cache_bits.py --residuals 0 --mla ""   # every token quantised as soon as it can be
    python benchmarks/cache_bits.py --json /tmp/bits.json
    python benchmarks/cache_bits.py --residuals 0 --mla "" --healed mla-128-32 --out assets/cache_bits_table.json

--out writes the lab's stored table (assets/cache_bits_table.json): every row with its per-window NLL sums, its cache
at the lab's contexts and the inputs' hashes, as assets/window_table.json does. --healed heals a lab point with the
recipe assets/heal_table.json stored for it (its steps, not its CPU seconds: the same weights on any machine) and
measures it with a 4-bit cache, keys per channel: the best of two axes together.

Each residual (the newest tokens kept exact; default: KIVI's 128, and 0) gets its table and the goals.

Text: the lab's (explorer.probes.lab): the first 4,096 tokens of pydoc_data.topics in non-overlapping windows of 512,
each token predicted as a decoding step through the quantised cache would predict it (every token older than the
exact window read back from its codes). The MLA rows convert with the lab's calibration (the text's last 1,024 tokens).
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
    Calibration,
    PretrainedLM,
    QuantizedCacheLM,
    gguf_path,
    heal,
    heal_end_to_end,
    load_pretrained,
    with_cache_bits,
)
from benchmarks.lab_table import file_sha256, machine
from explorer import lab

BITS = (8, 4, 2)
KEYS = ("channel", "token")
CONTEXTS = (512, 1024, 2048, 4096, 8192, 32768)  # as assets/window_table.json
HEAL_TABLE = lab.TABLE_PATH.with_name("heal_table.json")
COMBINED_BITS = 4  # the healed point's cache: KIVI's 4 bits, keys per channel


def row_key(bits: int, keys: str, residual: int, source: str = "original") -> str:
    return f"{'' if source == 'original' else source + '-'}b{bits}-{keys}-r{residual}"


def healed_with_stored_recipe(lm: PretrainedLM, key: str, calibration: Calibration) -> tuple[PretrainedLM, dict]:
    """The lab point `key` converted and healed as assets/heal_table.json's row says (its stages' steps and rates, the
    same training tokens, checked by their hash): (the healed model, that row)."""
    stored = {row["key"]: row for row in json.loads(HEAL_TABLE.read_text(encoding="utf-8"))["rows"]}[key]
    recipe = stored["recipe"]
    ids = lm.encode(lab.reference_text())
    train_text = lm.decode(ids[lab.EVAL_TOKENS : lab.EVAL_TOKENS + recipe["text_tokens"]])
    if lab.text_sha256(train_text) != recipe["train_text_sha256"]:
        raise SystemExit(f"{key}: the training text differs from the stored recipe's")
    student = lab.convert_point(lm, lab.POINTS_BY_KEY[key], calibration)
    common = {"schedule": recipe["schedule"], "window": recipe["window"], "seed": recipe["seed"]}
    stages = recipe["stages"]
    heal(student, lm, train_text, steps=stages["layerwise"]["steps"], lr=stages["layerwise"]["lr"], **common)
    if "end_to_end" in stages:
        end = stages["end_to_end"]
        heal_end_to_end(student, lm, train_text, steps=end["steps"], lr=end["lr"], **common)
    return student, stored


def measure(model: PretrainedLM, ids: list[int]) -> tuple[float, float]:
    """(perplexity, seconds) on the evaluation windows."""
    started = time.perf_counter()
    perplexity = lab.perplexity_of(lab.window_nll_sums(model, ids))
    return perplexity, time.perf_counter() - started


def goals(original: float, rows: dict[tuple[int, str], float]) -> list[tuple[str, bool]]:
    """Issue 36's goals for the quantised cache, each with whether it holds."""
    ratio = {key: value / original for key, value in rows.items()}
    return [
        (
            f"8-bit within 0.5 % of the original (channel {ratio[8, 'channel'] - 1:+.2%}, "
            f"token {ratio[8, 'token'] - 1:+.2%})",
            max(ratio[8, "channel"], ratio[8, "token"]) <= 1.005,
        ),
        (f"4-bit, keys per channel, within 3 % ({ratio[4, 'channel'] - 1:+.2%})", ratio[4, "channel"] <= 1.03),
        (
            f"keys per channel better than per token at 4 bits ({rows[4, 'channel']:.3f} vs {rows[4, 'token']:.3f})",
            rows[4, "channel"] < rows[4, "token"],
        ),
        (
            f"keys per channel better than per token at 2 bits ({rows[2, 'channel']:.3f} vs {rows[2, 'token']:.3f})",
            rows[2, "channel"] < rows[2, "token"],
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a busy 2-core box)")
    parser.add_argument("--group-size", type=int, default=32)
    parser.add_argument("--residuals", default="128,0", help="newest tokens kept exact, one table each")
    parser.add_argument("--mla", default="192,32", help="d_c,d_h^R of an MLA conversion to quantise too ('' for none)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--bits", default="8,4,2", help="bit widths to measure ('' for none: --healed alone)")
    parser.add_argument("--merge", type=Path, nargs="+", help="merge these runs' tables into --out and stop")
    parser.add_argument("--healed", default="", help="a lab point to heal with its stored recipe, then quantise")
    parser.add_argument("--out", type=Path, help="write the lab's stored table here (assets/cache_bits_table.json)")
    args = parser.parse_args()
    if args.merge:
        tables = [json.loads(path.read_text(encoding="utf-8")) for path in args.merge]
        if any((t["evaluation"], t["model"]) != (tables[0]["evaluation"], tables[0]["model"]) for t in tables):
            raise SystemExit("these runs measured different inputs: not merged")
        rows = {row["key"]: row for table in tables for row in table["rows"]}
        args.out.write_text(json.dumps({**tables[0], "rows": list(rows.values())}, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out} ({len(rows)} rows)")
        return
    torch.set_num_threads(args.threads)
    bit_widths = tuple(int(b) for b in args.bits.split(",") if b)

    lm = load_pretrained()
    text = lab.reference_text()
    eval_ids, calibration_ids = lab.split_tokens(lm, text)
    started = time.perf_counter()
    original_sums = lab.window_nll_sums(lm, eval_ids)
    original, seconds = lab.perplexity_of(original_sums), time.perf_counter() - started
    per_token = lab.cache_bytes_per_token(lm)
    print(f"{len(eval_ids)} tokens in windows of {lab.WINDOW}, original perplexity {original:.3f} ({seconds:.0f} s)")
    out: list[dict[str, Any]] = [{"model": "original", "perplexity": original, "bytes_per_token": per_token}]
    checks: list[tuple[str, bool]] = []
    mla = None

    stored: list[dict[str, Any]] = [
        {
            "key": "original",
            "source": "original",
            "bits": None,
            "perplexity": original,
            "window_nll_sums": original_sums,
            "bytes_per_token": per_token,
            "cache_nbytes": {str(t): lm.cache_nbytes(t) for t in CONTEXTS},
            "seconds": {"evaluate": round(seconds, 2)},
            "times_original": 1.0,
        }
    ]

    def row(name: str, model: PretrainedLM, reference: float, residual: int, key: str = "", **fields: Any) -> float:
        started = time.perf_counter()
        sums = lab.window_nll_sums(model, eval_ids)
        perplexity, seconds = lab.perplexity_of(sums), time.perf_counter() - started
        if isinstance(model, QuantizedCacheLM):
            long_run = model.kv_cache_bytes_per_token() * model.config.n_layers
            at_window = model.cache_nbytes(lab.WINDOW) / lab.WINDOW
        else:
            long_run = at_window = lab.cache_bytes_per_token(model)
        print(
            f"{name:<28} {perplexity:10.3f} {perplexity / reference - 1:+11.2%} {long_run:8d} {at_window:11.1f} "
            f"{seconds:6.1f}",
            flush=True,
        )
        out.append(
            {
                "model": name,
                "residual": residual,
                "perplexity": perplexity,
                "bytes_per_token": long_run,
                "bytes_per_token_at_512": at_window,
            }
        )
        if key:
            stored.append(
                {
                    "key": key,
                    **fields,
                    "residual": residual,
                    "group_size": args.group_size,
                    "perplexity": perplexity,
                    "window_nll_sums": sums,
                    "bytes_per_token": long_run,
                    "cache_nbytes": {str(t): model.cache_nbytes(t) for t in CONTEXTS},
                    "seconds": {"evaluate": round(seconds, 2)},
                    "times_original": perplexity / original,
                }
            )
            write()
        return perplexity

    def write() -> None:
        """The stored table as measured so far (after every row: a run stopped early keeps what it measured)."""
        if args.out is None:
            return
        header = {
            "date": datetime.date.today().isoformat(),
            "machine": machine(),
            "dtype": "float32",
            "evaluation": {
                "source": "pydoc_data.topics, every topic in sorted order (Python's language reference)",
                "text_sha256": lab.text_sha256(text),
                "tokens": len(eval_ids),
                "window": lab.WINDOW,
                "which": f"first {lab.EVAL_TOKENS} tokens, scored in non-overlapping windows of {lab.WINDOW}, each "
                "token read back from the quantised cache as a decoding step would",
            },
            "model": {"name": lm.config.name, "gguf_sha256": model_hash},
            "recipe": {"group_size": args.group_size, "values": "per token", "bits": list(BITS), "keys": list(KEYS)},
            "contexts": list(CONTEXTS),
        }
        args.out.write_text(json.dumps({**header, "rows": stored}, indent=1) + "\n", encoding="utf-8")

    model_hash = file_sha256(gguf_path())
    write()

    for residual in (int(r) for r in args.residuals.split(",")):
        print(f"\ngroup {args.group_size}, residual {residual} (B/token: long run; @512: held at 512 tokens / 512)")
        print(f"{'model':<28} {'perplexity':>10} {'vs original':>11} {'B/token':>8} {'B/token@512':>11} {'s':>6}")
        print(f"{'original (float32 cache)':<28} {original:10.3f} {'':>11} {per_token:8d} {per_token:11d}")
        rows = {}
        for bits in bit_widths:
            for keys in KEYS:
                model = with_cache_bits(lm, bits=bits, group_size=args.group_size, residual=residual, keys=keys)
                rows[bits, keys] = row(
                    f"{bits}-bit, keys per {keys}",
                    model,
                    original,
                    residual,
                    row_key(bits, keys, residual),
                    source="original",
                    bits=bits,
                    keys=keys,
                )
        if args.mla:
            d_c, d_r = (int(n) for n in args.mla.split(","))
            name = f"MLA {d_c}+{d_r}"
            if mla is None:
                calibration = lab.lab_calibration(lm, calibration_ids)
                mla = lab.convert_point(lm, lab.POINTS_BY_KEY[f"mla-{d_c}-{d_r}"], calibration)
                mla_ppl = row(f"{name} (float32 cache)", mla, original, residual)
            for bits in BITS:
                model = with_cache_bits(mla, bits=bits, group_size=args.group_size, residual=residual)
                row(f"{name}, {bits}-bit latent", model, mla_ppl, residual)
            print("(MLA rows with bits: change against the float MLA; the float MLA: against the original)")
        if args.healed:
            calibration = lab.lab_calibration(lm, calibration_ids)
            started = time.perf_counter()
            healed, recipe_row = healed_with_stored_recipe(lm, args.healed, calibration)
            heal_seconds = time.perf_counter() - started
            recipe = {"heal_table_row": args.healed, **recipe_row["recipe"], "seconds_here": round(heal_seconds, 2)}
            healed_ppl = row(
                f"{args.healed} healed (float32)",
                healed,
                original,
                residual,
                f"{args.healed}-healed",
                source=f"{args.healed}-healed",
                bits=None,
                stored_perplexity_after=recipe_row["perplexity_after"],
                heal_recipe=recipe,
            )
            print(f"  (heal_table.json stored {recipe_row['perplexity_after']:.4f} for it)")
            model = with_cache_bits(healed, bits=COMBINED_BITS, group_size=args.group_size, residual=residual)
            row(
                f"{args.healed} healed, {COMBINED_BITS}-bit",
                model,
                healed_ppl,
                residual,
                row_key(COMBINED_BITS, "channel", residual, f"{args.healed}-healed"),
                source=f"{args.healed}-healed",
                bits=COMBINED_BITS,
                keys="channel",
                heal_recipe=recipe,
            )
        if set(bit_widths) != set(BITS):
            continue  # the goals need every width
        print(f"issue 36's goals at residual {residual}:")
        for text, holds in goals(original, rows):
            print(f"  [{'met' if holds else 'NOT met'}] {text}")
            checks.append((f"residual {residual}: {text}", holds))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "date": datetime.date.today().isoformat(),
                    "machine": machine(),
                    "tokens": len(eval_ids),
                    "window": lab.WINDOW,
                    "group_size": args.group_size,
                    "rows": out,
                    "goals": [{"goal": text, "met": holds} for text, holds in checks],
                },
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
