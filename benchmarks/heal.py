"""Healing the lab's conversions (attn_core.pretrained.heal): perplexity before and after, the share of the
log-perplexity gap to the original closed, training seconds; and healing's training throughput against a plain
end-to-end loop on the same tokens, measured side by side in one run. Written to assets/heal_table.json (rows of
points already there and not measured again are kept).

    python benchmarks/heal.py                       # every conversion that loses something: 600 CPU s each
    python benchmarks/heal.py --points mla-96-32 --cpu-seconds 120 --out /tmp/heal.json

Texts: evaluation and calibration are the lab's (explorer.probes.lab: the first 4,096 and the last 1,024 tokens of
pydoc_data.topics); training takes the --train-tokens tokens right after the evaluation tokens, disjoint from both.
"Before" perplexities are the stored lab table's (the same computation on the same inputs) when its hashes match.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from attn_core.pretrained import TRAINED, HealReport, PretrainedLM, gguf_path, heal, heal_end_to_end, load_pretrained
from benchmarks.lab_table import file_sha256, machine
from explorer import lab

TABLE_PATH = lab.TABLE_PATH.with_name("heal_table.json")
# every lab conversion but MHA, which is exact (healing leaves it as it is)
DEFAULT_POINTS = ",".join(point.key for point in lab.LAB_POINTS if point.key not in ("original", "mha"))


def gap_closed(before: float, after: float, original: float) -> float:
    """Share of the log-perplexity gap to the original that healing closed."""
    return (math.log(before) - math.log(after)) / (math.log(before) - math.log(original))


def end_to_end_tokens_per_second(student: PretrainedLM, windows: list[list[int]], lr: float) -> float:
    """The plain loop healing replaces: the whole student forward on a window, next-token cross-entropy, backward
    through every layer, one Adam step on the attention projections (everything else frozen, as in heal)."""
    parameters = []
    for layer in student.decoder_layers:
        for name in TRAINED[type(layer.self_attn)]:
            module = getattr(layer.self_attn, name, None)
            if isinstance(module, nn.Linear):
                module.weight = nn.Parameter(module.weight.detach().clone())
                parameters.append(module.weight)
    optimizer = torch.optim.Adam(parameters, lr=lr)
    started, tokens = time.perf_counter(), 0
    for chunk in windows:
        ids = torch.tensor([chunk])
        optimizer.zero_grad(set_to_none=True)
        logits, _ = student(ids)
        F.cross_entropy(logits[0, :-1], ids[0, 1:]).backward()
        optimizer.step()
        tokens += len(chunk)
    return tokens / (time.perf_counter() - started)


PROBE_STEPS = 6  # steps timed to turn --cpu-seconds into a number of steps
CHECKED_STEPS = 3  # the first steps' losses stored for tests/lab to reproduce


class StepClock:
    """on_step for heal(): this process's CPU time (all its threads) at the end of every step."""

    def __init__(self) -> None:
        self.stamps: list[float] = []

    def __call__(self, _step: int, _losses: list[float], _seconds: float) -> None:
        self.stamps.append(time.process_time())

    def per_step(self) -> float:
        return (self.stamps[-1] - self.stamps[0]) / (len(self.stamps) - 1)


def stage_summary(report: HealReport, clock: StepClock, lr: float) -> dict[str, Any]:
    """One stage of a heal as the table keeps it: its steps, tokens, lr, seconds and CPU seconds (every step's, the
    first one's estimated from the rest, since its start is not stamped), first and last mean loss."""
    return {
        "steps": report.steps,
        "tokens": report.tokens,
        "lr": lr,
        "seconds": round(report.seconds, 2),
        "cpu_seconds": round(clock.per_step() * report.steps, 2) if report.steps > 1 else None,
        "mean_loss_first_last": [report.mean_losses[0], report.mean_losses[-1]],
    }


def steps_for_cpu_seconds(budget: float, time_steps: Callable[[StepClock], None]) -> int:
    """How many steps fit in `budget` CPU seconds, from PROBE_STEPS steps timed on a fresh conversion (the first
    step's start is not timed, so the rate comes from the steps after it)."""
    clock = StepClock()
    time_steps(clock)
    return max(1, int(budget // clock.per_step()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", default=DEFAULT_POINTS, help="lab point keys, comma-separated")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument(
        "--cpu-seconds",
        type=float,
        default=600.0,
        help="training budget per point in CPU seconds, turned into a fixed number of steps by timing a few first "
        "(the same on a busy machine as on an idle one)",
    )
    budget.add_argument("--steps", type=int, default=None, help="a fixed number of layer-wise steps instead")
    parser.add_argument(
        "--end-to-end-share",
        type=float,
        default=0.5,
        help="with --cpu-seconds: the share of the budget for the second stage (heal_end_to_end), 0 for none",
    )
    parser.add_argument("--end-to-end-steps", type=int, default=0, help="with --steps: the second stage's steps")
    parser.add_argument("--end-to-end-lr", type=float, default=1e-4)
    parser.add_argument("--train-tokens", type=int, default=16384)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--schedule", default="cosine")
    parser.add_argument("--window", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--throughput-steps", type=int, default=4, help="steps of each loop timed side by side")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (one: several points side by side)")
    parser.add_argument("--out", type=Path, default=TABLE_PATH)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    text = lab.reference_text()
    text_hash = lab.text_sha256(text)
    lm = load_pretrained()
    ids = lm.encode(text)
    eval_ids, calibration_ids = lab.split_tokens(lm, text)
    train_ids = ids[lab.EVAL_TOKENS : lab.EVAL_TOKENS + args.train_tokens]
    if lab.EVAL_TOKENS + args.train_tokens > len(ids) - lab.CALIBRATION_TOKENS:
        raise SystemExit("--train-tokens reaches into the calibration tokens")
    train_text = lm.decode(train_ids)
    calibration = lab.lab_calibration(lm, calibration_ids)
    stored = lab.load_table() if lab.TABLE_PATH.exists() else None
    if stored is not None and stored["evaluation"]["text_sha256"] != text_hash:
        stored = None
    stored_rows = {row["key"]: row for row in stored["rows"]} if stored is not None else {}
    if "original" in stored_rows:
        original = stored_rows["original"]["perplexity"]
    else:
        original = lab.perplexity_of(lab.window_nll_sums(lm, eval_ids))
    table = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {"rows": []}
    rows = {row["key"]: row for row in table["rows"]}
    load = os.getloadavg()

    throughput = table.get("throughput")
    measured_throughput = False

    def write() -> None:
        """The table as measured so far: written after every point, so a long run stopped early keeps its rows."""
        table.update(
            {
                "machine": machine(),
                "load_average_at_start": [round(x, 2) for x in load],
                "dtype": "float32",
                "evaluation": {"text_sha256": text_hash, "tokens": len(eval_ids), "which": f"first {lab.EVAL_TOKENS}"},
                "model": {"name": lm.config.name, "gguf_sha256": model_hash},
                "rows": [rows[key] for key in sorted(rows, key=list(lab.POINTS_BY_KEY).index)],
            }
        )
        if throughput is not None:
            table["throughput"] = throughput
        args.out.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")

    model_hash = file_sha256(gguf_path())
    for key in args.points.split(","):
        point = lab.POINTS_BY_KEY[key]
        started = time.perf_counter()
        student = lab.convert_point(lm, point, calibration)
        convert_seconds = time.perf_counter() - started
        if key in stored_rows:
            before, before_from = stored_rows[key]["perplexity"], "lab_table.json"
        else:
            before, before_from = lab.perplexity_of(lab.window_nll_sums(student, eval_ids)), "measured"
        steps, end_to_end_steps = args.steps, args.end_to_end_steps
        if args.steps is None:

            def time_steps(clock: StepClock, point: lab.LabPoint = point, stage: Callable[..., object] = heal) -> None:
                fresh = lab.convert_point(lm, point, calibration)
                stage(
                    fresh,
                    lm,
                    train_text,
                    steps=PROBE_STEPS,
                    max_tokens=PROBE_STEPS * args.window,
                    window=args.window,
                    seed=args.seed,
                    on_step=clock,
                )

            share = args.end_to_end_share
            steps = steps_for_cpu_seconds(args.cpu_seconds * (1 - share), time_steps)
            end_to_end_steps = (
                steps_for_cpu_seconds(args.cpu_seconds * share, partial(time_steps, stage=heal_end_to_end))
                if share > 0
                else 0
            )

        def run_stage(
            stage: Callable[..., HealReport], steps: int, lr: float, student: PretrainedLM = student
        ) -> tuple[HealReport, dict[str, Any]]:
            clock = StepClock()
            report = stage(
                student,
                lm,
                train_text,
                steps=steps,
                lr=lr,
                schedule=args.schedule,
                window=args.window,
                seed=args.seed,
                on_step=clock,
            )
            return report, stage_summary(report, clock, lr)

        report, first = run_stage(heal, steps, args.lr)
        stages = {"layerwise": first}
        after_layerwise = None
        if end_to_end_steps:
            after_layerwise = lab.perplexity_of(lab.window_nll_sums(student, eval_ids))
            stages["end_to_end"] = run_stage(heal_end_to_end, end_to_end_steps, args.end_to_end_lr)[1]
        started = time.perf_counter()
        after = lab.perplexity_of(lab.window_nll_sums(student, eval_ids))
        eval_seconds = time.perf_counter() - started
        losses = report.losses
        rows[key] = {
            "key": key,
            "label": point.label,
            "variant": point.variant,
            "options": point.options,
            "cache_bytes_per_token": lab.cache_bytes_per_token(student),
            "perplexity_original": original,
            "perplexity_before": before,
            "perplexity_before_from": before_from,
            "perplexity_after_layerwise": after_layerwise,
            "perplexity_after": after,
            "gap_closed": gap_closed(before, after, original),
            "times_original_after": after / original,
            "recipe": {
                **report.recipe,
                "steps_taken": sum(stage["steps"] for stage in stages.values()),
                "tokens_seen": sum(stage["tokens"] for stage in stages.values()),
                "stages": stages,
                "text_tokens": report.text_tokens,
                "which": f"tokens {lab.EVAL_TOKENS}..{lab.EVAL_TOKENS + len(train_ids) - 1} of the reference text",
                "train_text_sha256": lab.text_sha256(train_text),
                "cpu_seconds_budget": args.cpu_seconds if args.steps is None else None,
                "threads": args.threads,
            },
            "losses_first_steps": report.losses[:CHECKED_STEPS],
            "mean_loss_first_last": [sum(losses[0]) / len(losses[0]), sum(losses[-1]) / len(losses[-1])],
            "layer_loss_initial": report.initial_losses,
            "layer_loss_last": losses[-1],
            "frozen_layers": report.frozen_layers,
            "seconds": {
                "convert": round(convert_seconds, 2),
                "capture": round(report.capture_seconds, 2),
                "train": round(sum(stage["seconds"] for stage in stages.values()), 2),
                "train_cpu": round(sum(stage["cpu_seconds"] or 0.0 for stage in stages.values()), 2),
                "evaluate": round(eval_seconds, 2),
            },
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes"),
            "load_average_after": [round(x, 2) for x in os.getloadavg()],  # 1, 5 and 15 minutes, as the row is done
            "machine": machine(),
        }
        print(
            f"{key:>12}: perplexity {before:9.2f} -> {after:7.2f} (original {original:.2f}, "
            f"{100 * rows[key]['gap_closed']:5.1f} % of the log gap closed)  {report.steps} steps, "
            f"{report.tokens} tokens, then {end_to_end_steps} end to end; train {rows[key]['seconds']['train']:5.0f} s "
            f"({rows[key]['seconds']['train_cpu']:5.0f} CPU s), capture {report.capture_seconds:4.1f} s",
            flush=True,
        )
        write()
        if not measured_throughput and args.throughput_steps > 0:
            measured_throughput = True
            # side by side on the same windows: a few steps of heal, then a few of the end-to-end loop
            windows = [
                train_ids[i : i + args.window] for i in range(0, args.throughput_steps * args.window, args.window)
            ]
            fresh = lab.convert_point(lm, point, calibration)
            timed = heal(
                fresh,
                lm,
                lm.decode(list(itertools.chain.from_iterable(windows))),
                steps=len(windows),
                window=args.window,
                seed=args.seed,
            )
            layerwise = timed.tokens / timed.seconds
            fresh = lab.convert_point(lm, point, calibration)
            plain = end_to_end_tokens_per_second(fresh, windows, args.lr)
            throughput = {
                "point": key,
                "window": args.window,
                "steps": len(windows),
                "layerwise_tokens_per_second": layerwise,
                "end_to_end_tokens_per_second": plain,
                "ratio": layerwise / plain,
                "layerwise_capture_seconds": timed.capture_seconds,
            }
            print(
                f"throughput ({key}, {len(windows)} windows of {args.window}): layer-wise {layerwise:.0f} tokens/s "
                f"(+ {timed.capture_seconds:.1f} s recording the teacher), end-to-end {plain:.0f} tokens/s: "
                f"{layerwise / plain:.2f}x",
                flush=True,
            )

    write()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
